"""A real hot standby for the tests: a private primary, migrated, and a streaming standby made
from it by `pg_basebackup -R` (dev/replicas.py), both from the same private binaries
as the session's cluster, each in its own directory on its own port of 127.0.0.1. The system
cluster is never touched."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from dev.replicas import CATCH_UP_SECONDS, DBNAME, ReplicaPair
from tests.conftest import Database


@dataclass(frozen=True)
class Replicated:
    """A migrated primary and its hot standby, database `tireless` on each."""

    primary: Database
    standby: Database
    pair: ReplicaPair

    def caught_up(self, timeout: float = CATCH_UP_SECONDS) -> None:
        """Return once the standby has replayed the primary's WAL as it is now: what the primary
        committed before this call is visible on the standby after it."""
        self.pair.caught_up(timeout)


@contextmanager
def replicated() -> Iterator[Replicated]:
    """A primary migrated before the copy, and its standby accepting reads; both stopped and
    deleted on exit."""
    with ReplicaPair() as pair:
        primary, standby = pair.primary, pair.active_standby
        yield Replicated(
            Database(primary.conninfo(DBNAME), primary.url(DBNAME), primary),
            Database(standby.conninfo(DBNAME), standby.url(DBNAME), standby),
            pair,
        )


@pytest.fixture(scope="module")
def hot_standby() -> Iterator[Replicated]:
    """One primary and hot standby per test module (about two seconds to make)."""
    with replicated() as pair:
        yield pair
