"""record_poll leaves an odd issue out and keeps it in tireless.issue_skip (issue 36): the rest of
the batch is recorded; what cannot be keyed still refuses the whole batch, and a malformed `odd`
argument is refused naming it, changing nothing."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import rows
from tireless import JobStore
from tireless.errors import InvalidArgument, MalformedIssue

POLLER = "poller-1"


def issue(number: Any, labels: list[str], **extra: Any) -> dict[str, Any]:
    return {"forge": "gitea", "owner": "acme", "repo": "widgets", "number": number,
            "state": "open", "labels": labels, "title": f"issue {number}"} | extra  # fmt: skip


@pytest.fixture
def polled(store: JobStore) -> JobStore:
    store.add_forge("gitea", "gitea", "https://gitea.invalid")
    store.track_repo("gitea", "acme", "widgets")
    (target,) = store.claim_repos_to_poll(POLLER)
    assert target.repo == "widgets"
    return store


def record(store: JobStore, issues: list[Any], **options: Any) -> Any:
    return store.record_poll(
        "gitea", "acme", "widgets", POLLER, issues, None, None, False, **options
    )


def skips(db: Database) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT number, problem FROM tireless.issue_skip ORDER BY number")


def test_a_refused_issue_is_left_out_and_the_rest_recorded(db: Database, polled: JobStore) -> None:
    plan = ["tireless", "tireless/plan"]
    outcome = record(
        polled,
        [
            issue(1, plan),
            issue(2, [*plan, *(f"l{n}" for n in range(99))]),
            issue(3, [*plan, "x" * 201]),
        ],
        odd=[(4, "its title holds NUL or an unpaired surrogate")],
    )
    assert (outcome.created, outcome.skipped) == (1, 3)
    assert [number for number, _ in skips(db)] == [2, 3, 4]
    assert "101 labels" in skips(db)[0][1]
    assert rows(db, "SELECT number FROM tireless.issue ORDER BY number") == [(1,)]


def test_what_cannot_be_keyed_still_refuses_the_batch(db: Database, polled: JobStore) -> None:
    with pytest.raises(MalformedIssue, match="index 1"):
        record(polled, [issue(1, ["tireless"]), issue("two", ["tireless"])])
    with pytest.raises(MalformedIssue, match="index 0"):
        record(polled, [issue(1, ["x" * 300], repo="gadgets")])
    assert skips(db) == []
    assert rows(db, "SELECT count(*) FROM tireless.issue") == [(0,)]


@pytest.mark.parametrize(
    "odd",
    [
        [{"number": 0, "problem": "x"}],
        [{"number": "1", "problem": "x"}],
        [{"number": 1.5, "problem": "x"}],
        [{"number": 1, "problem": ""}],
        [{"number": 1, "problem": "x" * 501}],
        [{"number": 1}],
        [7],
        {"number": 1, "problem": "x"},
    ],
)
def test_a_malformed_odd_argument_is_refused_naming_it(
    db: Database, polled: JobStore, odd: Any
) -> None:
    with db.connect() as conn, pytest.raises(psycopg.Error, match="odd must be an array") as error:
        conn.execute(
            "SELECT tireless.record_poll('gitea', 'acme', 'widgets', %s, '[]', NULL, NULL, false,"
            " odd => %s::jsonb)",
            (POLLER, json.dumps(odd)),
        )
    assert error.value.sqlstate == InvalidArgument.sqlstate
    assert skips(db) == []


def test_a_skip_goes_once_the_issue_is_recorded_or_no_longer_listed(
    db: Database, polled: JobStore
) -> None:
    record(polled, [issue(1, ["x" * 201]), issue(2, ["x" * 201])])
    polled.claim_repos_to_poll(POLLER)
    record(polled, [issue(1, ["tireless"])])
    assert [number for number, _ in skips(db)] == [2]  # an incremental read: 2 was not listed
    polled.claim_repos_to_poll(POLLER)
    polled.record_poll("gitea", "acme", "widgets", POLLER, [], None, None, True)
    assert skips(db) == []
    (status,) = polled.repo_status()
    assert status.skipped_issues == 0
    assert status.skipped_issue is None
