"""The outbox of forge writes (issue 45): every kind of write is listed by
`tireless.forge_writes_due` and backed off by the one backoff when `record_forge_write` records a
failure (15 s doubling per failure in a row, jittered to between half and all of it), time moved
with the due function's `now`; a write that lands is never listed again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, TEST_REPO, issue, rows
from tests.outbox import key, listed
from tireless import JobStore
from tireless.errors import InvalidArgument
from tireless.models import ForgeWrite, WriteKind

POLLER = "p1"
HEAD, BASE = "a" * 40, "b" * 40
PLAN = ("tireless", "tireless/plan")


@pytest.fixture
def queued(store: JobStore) -> JobStore:
    """A store with one write of each kind due in the test repository, its lease held by p1."""
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    store.enqueue([issue(1), issue(2, *PLAN), issue(3, *PLAN), issue(4)])
    store.enqueue([issue(10, body="Depends on #11"), issue(11, body="Depends on #10")])  # a cycle
    store.enqueue([issue(30, "tireless", "tireless/implment")])  # a label that names nothing
    jobs = {}
    for _ in range(4):
        job = store.claim_next("w1", ["cc"])
        assert job is not None
        jobs[job.number] = job
    store.deliver(jobs[1].id, "w1", "tireless/1", HEAD, "main", BASE, jobs[1].claim_token)
    store.deliver(jobs[4].id, "w1", token=jobs[4].claim_token)  # no change: no pull request
    for number in (2, 3):
        store.attach_plan(jobs[number].id, "w1", [{"title": "Frame", "body": ""}])
        store.transition(jobs[number].id, "delivered", "w1", "planned", jobs[number].claim_token)
    store.claim_repos_to_poll(POLLER)
    store.mirror_writes(FORGE, OWNER, REPO, POLLER)  # the outcome comments
    # Plan 3's child opened, its comment written with its checklist; the child gets a job.
    (task,) = [w for w in due(store, WriteKind.TASK) if key(w)[1] == jobs[3].id]
    store.record_forge_write(FORGE, OWNER, REPO, POLLER, task.id, result={"number": 20})
    (comment,) = [w for w in due(store, WriteKind.COMMENT) if key(w)[1] == jobs[3].id]
    checklist = {"checklist": getattr(comment.write, "checklist", None)}
    store.record_forge_write(FORGE, OWNER, REPO, POLLER, comment.id, result=checklist)
    store.enqueue([issue(20)])
    # A refused command: its reply is owed.
    store.conversation_to_read(FORGE, OWNER, REPO, POLLER)
    refusal = {"source": "comment", "id": 7001, "number": 1, "author": "mallory",
               "permission": "none", "created_at": datetime.now(UTC).isoformat(),
               "body": "/tireless implement"}  # fmt: skip
    store.record_conversation(FORGE, OWNER, REPO, POLLER, "tireless-bot", [refusal])
    return store


def due(store: JobStore, kind: WriteKind, now: datetime | None = None) -> list[ForgeWrite]:
    return listed(store, kind.value, FORGE, OWNER, REPO, POLLER, 100, now)


@pytest.mark.parametrize("kind", list(WriteKind))
def test_each_kind_of_write_is_retried_with_the_one_backoff(
    queued: JobStore, db: Database, kind: WriteKind
) -> None:
    first, *_ = due(queued, kind)
    assert first.kind is kind
    backoffs = []
    for failures in range(3):
        now = datetime.now(UTC)
        until = queued.record_forge_write(
            FORGE, OWNER, REPO, POLLER, first.id, f"HTTP 50{failures}"
        )
        assert until is not None
        backoff = (until - now).total_seconds()
        # 15 s doubling per failure in a row, jittered to between half and all of it.
        assert 15 * 2**failures / 2 - 1 <= backoff <= 15 * 2**failures + 1, (failures, backoff)
        backoffs.append(backoff)
        assert first.id not in [w.id for w in due(queued, kind)], "backing off"
        assert first.id not in [w.id for w in due(queued, kind, until - timedelta(seconds=1))]
        assert first.id in [w.id for w in due(queued, kind, until)], "due again once it passed"
    assert rows(
        db,
        "SELECT failures, last_error FROM tireless.forge_write WHERE id = %(id)s",
        {"id": first.id},
    ) == [(3, "HTTP 502")]
    results: dict[WriteKind, dict[str, Any]] = {
        WriteKind.PULL: {"pull_number": 12, "pull_url": "https://gitea.example.com/pulls/12"},
        WriteKind.TASK: {"number": 30},
        WriteKind.CHECKLIST: {"checklist": getattr(first.write, "checklist", None)},
    }
    landed = queued.record_forge_write(
        FORGE, OWNER, REPO, POLLER, first.id, result=results.get(kind)
    )
    assert landed is None
    ahead = datetime.now(UTC) + timedelta(days=1)
    assert first.id not in [w.id for w in due(queued, kind, ahead)], "landed: never again"
    assert rows(
        db,
        "SELECT failures, last_error FROM tireless.forge_write WHERE id = %(id)s",
        {"id": first.id},
    ) == [(0, None)]


def test_the_due_writes_are_asked_for_by_kind_in_the_order_given(queued: JobStore) -> None:
    both = queued.forge_writes_due(FORGE, OWNER, REPO, POLLER, [WriteKind.REPLY, WriteKind.CYCLE])
    assert [w.kind for w in both] == [WriteKind.REPLY, WriteKind.CYCLE, WriteKind.CYCLE]
    for kinds in ([], ["label"]):
        with pytest.raises(InvalidArgument):
            queued.forge_writes_due(FORGE, OWNER, REPO, POLLER, kinds)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        queued.record_forge_write(FORGE, OWNER, REPO, POLLER, both[0].id, "  ")
    with pytest.raises(InvalidArgument):
        queued.record_forge_write(FORGE, OWNER, REPO, POLLER, 0)
