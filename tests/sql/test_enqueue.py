"""enqueue: a job for each open issue of a tracked repository that asks for work and has no live
job, exactly once however often and however concurrently it is polled; a malformed batch changes
nothing and says which element and which field is wrong. refresh_lane re-routes a queued job."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.conftest import Database
from tests.helpers import (
    FORGE,
    OWNER,
    REGISTER_FORGE,
    REPO,
    TEST_REPO,
    WORK,
    issue,
    job_count,
    jobs,
    tracked,
    wait_until_blocked,
)
from tireless import DiscoveredIssue, JobKind, JobState, JobStore
from tireless.errors import MalformedIssue

ENQUEUE = "SELECT tireless.enqueue(issues => %(issues)s)"


def enqueue_sql(conn: psycopg.Connection[Any], issues: Any) -> int:
    row = conn.execute(ENQUEUE, {"issues": issues}).fetchone()
    assert row is not None
    created: int = row[0]
    return created


@pytest.mark.parametrize(
    "polled",
    [
        issue(1, "tireless"),
        issue(1, "tireless/implement"),
        issue(1, "tireless/plan", "tireless/agent:oc"),
        issue(1, "bug"),
        issue(1, state="closed"),
        issue(1, repo="untracked"),
    ],
    ids=["opt-in-only", "mode-only", "mode-and-agent-only", "no-label", "closed", "untracked"],
)
def test_an_issue_that_expresses_no_work_gets_no_job(
    store: JobStore, db: Database, polled: DiscoveredIssue
) -> None:
    assert tracked(store).enqueue([polled]) == 0
    assert job_count(db) == 0


def test_a_repeated_poll_creates_nothing(store: JobStore, db: Database) -> None:
    poll = [issue(n) for n in range(1, 4)]
    assert tracked(store).enqueue(poll) == 3
    before = jobs(db)
    assert store.enqueue(poll) == 0
    assert store.enqueue(list(reversed(poll))) == 0
    assert jobs(db) == before


def test_an_issue_listed_twice_in_one_batch_counts_once_and_its_last_listing_wins(
    store: JobStore, db: Database
) -> None:
    batch = [issue(1), issue(2), issue(1, "tireless", "tireless/plan")]
    assert tracked(store).enqueue(batch) == 2
    assert [(job.number, job.kind) for job in jobs(db)] == [
        (1, JobKind.PLAN),
        (2, JobKind.IMPLEMENT),
    ]


def test_a_job_gets_its_kind_lane_labels_title_and_parent(store: JobStore, db: Database) -> None:
    assert tracked(store).enqueue([issue(1, "tireless", "tireless/plan")]) == 1
    (parent,) = jobs(db)
    labels = ("tireless", "tireless/implement", "tireless/agent:oc", "bug")
    child = issue(2, *labels, title="Add the widget", parent_id=parent.id)
    assert store.enqueue([child]) == 1
    job = jobs(db)[1]
    assert (job.forge, job.owner, job.repo, job.number) == (FORGE, OWNER, REPO, 2)
    assert (job.kind, job.lane, job.labels) == (JobKind.IMPLEMENT, "oc", labels)
    assert (job.title, job.parent_id) == ("Add the widget", parent.id)
    assert (job.state, job.attempts, job.claimed_by, job.claim_expires_at) == (
        JobState.PENDING,
        0,
        None,
        None,
    )
    assert (parent.kind, parent.lane, parent.title, parent.parent_id) == (
        JobKind.PLAN,
        "cc",
        None,
        None,
    )


def test_two_pollers_enqueueing_one_batch_at_once_create_each_job_once(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    batch = Jsonb([issue(n).as_json() for n in range(1, 21)])
    with (
        db.connect(autocommit=False) as a,
        db.connect() as b,
        ThreadPoolExecutor(max_workers=1) as thread,
    ):
        created_by_a = enqueue_sql(a, batch)  # A's transaction stays open: its rows are uncommitted
        second = thread.submit(enqueue_sql, b, batch)
        wait_until_blocked(db, b.info.backend_pid, a.info.backend_pid, "B to wait for A")
        assert not second.done()
        a.commit()
        created_by_b = second.result(timeout=30)
    assert (created_by_a, created_by_b) == (20, 0)
    assert sorted(job.number for job in jobs(db)) == list(range(1, 21))


def test_after_delivery_the_same_poll_makes_nothing_and_a_new_request_makes_a_new_job(
    store: JobStore, db: Database
) -> None:
    """The work rule: a delivered job is not run again while its issue keeps asking; closing
    and reopening it asks again, and the old job stays as it was."""
    assert tracked(store).enqueue([issue(1)]) == 1
    claimed = store.claim_next("runner-1", ["cc"])
    assert claimed is not None
    delivered = store.transition(claimed.id, "delivered", worker="runner-1", note="merged")
    assert store.enqueue([issue(1)]) == 0
    assert store.enqueue([issue(1, state="closed")]) == 0
    assert store.enqueue([issue(1)]) == 1
    old, new = jobs(db)
    assert old == delivered
    assert (new.number, new.state, new.attempts) == (1, JobState.PENDING, 0)
    assert new.id > old.id
    assert store.enqueue([issue(1)]) == 0


class Absent:
    """The field is left out of the element."""

    def __repr__(self) -> str:
        return "absent"


ABSENT = Absent()
GOOD = issue(7).as_json()
# (field, a wrong value): each case replaces (or leaves out) one field of a well-formed element.
MALFORMED_FIELDS: list[tuple[str, Any]] = [
    ("forge", ABSENT),
    ("forge", None),
    ("forge", ""),
    ("forge", 1),
    ("forge", "f" * 101),
    ("owner", ABSENT),
    ("owner", ""),
    ("owner", "o" * 201),
    ("repo", None),
    ("repo", ["widgets"]),
    ("repo", "r" * 201),
    ("number", ABSENT),
    ("number", None),
    ("number", 0),
    ("number", -1),
    ("number", 1.5),
    ("number", "3"),
    ("number", 2**31),
    ("state", ABSENT),
    ("state", "merged"),
    ("state", "OPEN"),
    ("labels", ABSENT),
    ("labels", "tireless"),
    ("labels", {"0": "tireless"}),
    ("labels", ["tireless", 1]),
    ("labels", ["tireless", ""]),
    ("labels", ["tireless", None]),
    ("labels", ["tireless", "l" * 201]),
    ("labels", ["tireless", "tireless/implement", *(f"label-{n}" for n in range(99))]),
    ("title", "t" * 1001),
    ("title", 5),
    ("url", 5),
    ("url", "ftp://forge.test/acme/widgets/issues/7"),
    ("url", "forge.test/issues/7"),
    ("url", "https://forge.test/a b"),
    ("url", "https://forge.test/" + "u" * 2000),
    ("updated_at", 1714564800),
    ("updated_at", "yesterday"),
    ("updated_at", "2026-05-01T12:00:00"),
    ("updated_at", "2026-05-01"),
    ("updated_at", "2026-13-01T12:00:00Z"),
    ("updated_at", "2026-02-30T12:00:00Z"),
    ("updated_at", "2026-05-01T24:00:00Z"),
    ("updated_at", "0000-05-01T12:00:00Z"),
    ("updated_at", "2026-05-01T12:00:00+16:00"),
    ("parent_id", 0),
    ("parent_id", -1),
    ("parent_id", 1.5),
    ("parent_id", "1"),
    ("parent_id", 999_999),
]


@pytest.mark.parametrize(
    "updated_at",
    [
        "2026-05-01T12:00:00Z",
        "2026-05-01T14:00:00+02:00",
        "2026-05-01T14:00:00.123456+0200",
        "2024-02-29T23:59:59-05:30",
        None,
    ],
)
def test_the_timestamps_forges_write_are_taken(
    store: JobStore, db: Database, updated_at: str | None
) -> None:
    element = issue(1, url="https://forge.test/acme/widgets/issues/1").as_json()
    assert tracked(store).enqueue([element | {"updated_at": updated_at}]) == 1
    stored = db.scalar(
        "SELECT updated_at = %(given)s::timestamptz IS NOT false FROM tireless.issue",
        {"given": updated_at},
    )
    assert stored


def test_a_malformed_element_fails_the_batch_naming_its_index_and_field(
    store: JobStore, db: Database
) -> None:
    """Through JobStore with dict elements; the error is MalformedIssue over SQLSTATE TL006."""
    tracked(store)
    for field, value in MALFORMED_FIELDS:
        case = f"{field} = {value!r:.40}"
        bad = {key: val for key, val in GOOD.items() if key != field}
        if value is not ABSENT:
            bad[field] = value
        batch = [issue(1).as_json(), issue(2).as_json(), bad, issue(3).as_json()]
        with pytest.raises(MalformedIssue) as refused:
            store.enqueue(batch)
        assert isinstance(refused.value.__cause__, psycopg.Error), case
        assert refused.value.__cause__.sqlstate == "TL006", case
        message = str(refused.value)
        assert message.startswith("malformed issue at index 2: "), (case, message)
        assert f'"{field}"' in message, (case, message)
    assert job_count(db) == 0
    assert store.enqueue([issue(1).as_json(), issue(2).as_json(), GOOD, issue(3).as_json()]) == 4


@pytest.mark.parametrize(
    "issues",
    [
        {"forge": "gitea"},
        "not a batch",
        42,
        None,
    ],
    ids=["object", "string", "number", "null"],
)
def test_a_batch_that_is_not_an_array_is_malformed(db: Database, issues: Any) -> None:
    with db.connect() as conn, pytest.raises(psycopg.Error) as refused:
        enqueue_sql(conn, None if issues is None else Jsonb(issues))
    assert refused.value.sqlstate == "TL006"
    assert "issues must be a JSON array" in str(refused.value)


@pytest.mark.parametrize("element", ["gitea/acme/widgets#1", 1, None, [GOOD]])
def test_an_element_that_is_not_an_object_is_malformed(
    store: JobStore, db: Database, element: Any
) -> None:
    tracked(store)
    with db.connect() as conn, pytest.raises(psycopg.Error) as refused:
        enqueue_sql(conn, Jsonb([GOOD, element]))
    assert refused.value.sqlstate == "TL006"
    assert str(refused.value).startswith("malformed issue at index 1: must be a JSON object")
    assert job_count(db) == 0


def test_a_batch_of_more_than_50000_issues_is_malformed(db: Database) -> None:
    with db.connect() as conn, pytest.raises(psycopg.Error) as refused:
        enqueue_sql(conn, Jsonb([GOOD] * 50_001))
    assert refused.value.sqlstate == "TL006"
    assert "at most 50000 issues, got 50001" in str(refused.value)


def test_refresh_lane_reroutes_a_queued_job_and_returns_its_lane(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    labels = [*WORK, "tireless/agent:oc"]
    assert store.refresh_lane(FORGE, OWNER, REPO, 1, labels) == "oc"
    (job,) = jobs(db)
    assert (job.lane, job.labels, job.state) == ("oc", tuple(labels), JobState.PENDING)
    assert store.claim_next("runner-1", ["cc"]) is None
    claimed = store.claim_next("runner-2", ["oc"])
    assert claimed is not None
    assert claimed.id == job.id


def test_refresh_lane_returns_null_when_the_issue_has_no_pending_job(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    claimed = store.claim_next("runner-1", ["cc"])
    assert claimed is not None
    agent = [*WORK, "tireless/agent:oc"]
    assert store.refresh_lane(FORGE, OWNER, REPO, 1, agent) is None  # claimed
    assert store.refresh_lane(FORGE, OWNER, REPO, 2, agent) is None  # no job at all
    (job,) = jobs(db)
    assert (job.lane, job.labels, job.state) == ("cc", WORK, JobState.CLAIMED)


def test_enqueue_and_list_returns_exactly_the_jobs_this_call_created(db: Database) -> None:
    """Not every job of the batch's issues made in the same transaction: a job enqueued a moment
    before, in that transaction, is not this call's."""
    batch = [issue(1), issue(2), issue(3, state="closed")]
    with db.connect() as conn, conn.transaction():
        conn.execute(REGISTER_FORGE)
        conn.execute("SELECT tireless.track_repo(forge => %s, owner => %s, repo => %s)", TEST_REPO)
        assert enqueue_sql(conn, Jsonb([issue(1).as_json()])) == 1
        listed = conn.execute(
            "SELECT number FROM tireless.enqueue_and_list(issues => %(issues)s)",
            {"issues": Jsonb([i.as_json() for i in batch])},
        ).fetchall()
    assert listed == [(2,)]
    assert job_count(db) == 2
