"""A worker's own record (tireless.worker_state, issue 50): started, beaten and stopped by the
worker, read by tireless.workers as live, idle, stopped or lost; bad input is refused with TL005
naming the value, changing nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs, rows
from tireless import JobStore
from tireless.errors import InvalidArgument

LEASE = timedelta(minutes=1)


def presence(db: Database) -> dict[str, tuple[str, str | None]]:
    found = rows(db, "SELECT worker, presence, stopped_how FROM tireless.workers")
    return {worker: (state, how) for worker, state, how in found}


def test_a_worker_is_idle_live_stopped_and_lost_by_its_own_record(
    store: JobStore, db: Database
) -> None:
    assert not store.worker_beat("w1", LEASE), "no record yet: it says it started"
    for name in ("w1", "w2", "w3"):
        store.worker_started(name, ["cc", "cc", "oc"], LEASE)
    assert rows(db, "SELECT lanes FROM tireless.worker_state WHERE worker = 'w1'") == [
        (["cc", "oc"],)
    ]
    enqueue_jobs(store, 1)
    assert store.claim_next("w2", ["cc"]) is not None
    assert store.worker_beat("w1", LEASE)
    assert store.worker_stopped("w3", "SIGINT")
    assert not store.worker_beat("w3", LEASE), "a stopped record is not beaten"
    assert not store.worker_stopped("w3", "SIGTERM"), "said once"
    with db.connect() as conn:
        conn.execute("UPDATE tireless.worker_state SET expires_at = now() WHERE worker = 'w1'")
    assert presence(db) == {"w1": ("lost", None), "w2": ("live", None), "w3": ("stopped", "SIGINT")}
    store.worker_started("w3", ["cc"], LEASE)  # a new process of the same name
    assert presence(db)["w3"] == ("idle", None)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda s: s.worker_started(" ", ["cc"], LEASE), "' '"),
        (lambda s: s.worker_started("w1", [], LEASE), "{}"),
        (lambda s: s.worker_started("w1", ["c c"], LEASE), "'c c'"),
        (lambda s: s.worker_started("w1", ["cc"], timedelta(0)), "00:00:00"),
        (lambda s: s.worker_beat("w1", timedelta(days=2)), "2 days"),
        (lambda s: s.worker_stopped("w1", " "), "' '"),
    ],
    ids=["blank worker", "no lane", "bad lane", "no lease", "lease past a day", "blank how"],
)
def test_bad_input_is_refused_naming_it_and_changes_nothing(
    store: JobStore, db: Database, call: Callable[[JobStore], object], named: str
) -> None:
    store.worker_started("w1", ["cc"], LEASE)
    before = rows(db, "SELECT s::text FROM tireless.worker_state s")
    with pytest.raises(InvalidArgument) as refused:
        call(store)
    assert named in str(refused.value)
    assert rows(db, "SELECT s::text FROM tireless.worker_state s") == before


def test_prune_deletes_the_records_of_workers_gone_before_its_cutoff(
    store: JobStore, db: Database
) -> None:
    for name in ("stopped", "lost", "running"):
        store.worker_started(name, ["cc"], LEASE)
    store.worker_stopped("stopped", "SIGTERM")
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.worker_state SET beat_at = beat_at - interval '2 days',"
            " expires_at = expires_at - interval '2 days',"
            " stopped_at = stopped_at - interval '2 days' WHERE worker <> 'running'"
        )
        conn.execute("SELECT tireless.prune(older_than => '1 day')")
    assert rows(db, "SELECT worker FROM tireless.worker_state") == [("running",)]
