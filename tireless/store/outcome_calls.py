"""The statements of outcomes per agent, each beside its parameters and the shape of its rows, as
tireless.store.calls has those of the job's: the poller's record of its pull requests' fates, and
the figures per lane and repository over a window."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from psycopg.rows import class_row, tuple_row
from psycopg.types.json import Jsonb

from tireless.outcomes import PullFate, PullOutcomes
from tireless.store.calls import Call, _rows, _value

RECORD_PULL_OUTCOMES = (
    "SELECT tireless.record_pull_outcomes(forge => %(forge)s, owner => %(owner)s,"
    " repo => %(repo)s, poller => %(poller)s, pulls => %(pulls)s)"
)


def record_pull_outcomes(
    forge: str, owner: str, repo: str, poller: str, fates: Sequence[PullFate]
) -> Call[tuple[int], int]:
    params = {
        "forge": forge,
        "owner": owner,
        "repo": repo,
        "poller": poller,
        "pulls": Jsonb([fate.row() for fate in fates]),
    }
    return Call(RECORD_PULL_OUTCOMES, params, tuple_row, _value)


PULL_OUTCOMES = "SELECT * FROM tireless.pull_outcomes(since => %(since)s, at => %(at)s)"


def pull_outcomes(
    since: timedelta | None, at: datetime | None
) -> Call[PullOutcomes, list[PullOutcomes]]:
    return Call(PULL_OUTCOMES, {"since": since, "at": at}, class_row(PullOutcomes), _rows)
