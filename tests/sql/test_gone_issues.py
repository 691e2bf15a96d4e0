"""Gone issues and archived repositories (issue 36): record_issue_gone (and record_poll's deleted
numbers, record_issue_moved) ends an issue's jobs and marks it gone, so the mirror's due
functions list nothing for it and its backlog counts none of it, until a listing shows it again;
record_repo_archived makes them list nothing for the repository for a day, then one write is
tried again, and a write that succeeds clears it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests import outbox
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, TEST_REPO, issue, rows
from tireless import JobStore
from tireless.errors import InvalidArgument, NotHolder, UnknownRepository


@pytest.fixture
def polled(store: JobStore) -> JobStore:
    """The test repository tracked, issue #1 read by a poll (its job made), the lease held."""
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    store.claim_repos_to_poll("p1")
    store.record_poll(*TEST_REPO, "p1", [issue(1)], None, None, full_listing=True)
    store.claim_repos_to_poll("p1")
    return store


def gone(db: Database, number: int = 1) -> tuple[Any, ...]:
    (row,) = rows(
        db,
        "SELECT gone_at IS NOT NULL, gone_note, state FROM tireless.issue WHERE number = %(n)s",
        {"n": number},
    )
    return row


def job_notes(db: Database) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT number, state::text, note FROM tireless.job ORDER BY id")


def backlog(store: JobStore) -> int:
    (status,) = store.repo_status()
    return status.mirror_backlog


def test_a_gone_issue_needs_the_lease_a_tracked_repository_and_a_note(
    polled: JobStore, db: Database
) -> None:
    with pytest.raises(NotHolder):
        polled.record_issue_gone(*TEST_REPO, "p2", 1, "issue deleted")
    with pytest.raises(NotHolder):
        polled.record_repo_archived(*TEST_REPO, "p2")
    with pytest.raises(UnknownRepository):
        polled.record_issue_gone(FORGE, OWNER, "elsewhere", "p1", 1, "issue deleted")
    with pytest.raises(UnknownRepository):
        polled.record_repo_archived(FORGE, OWNER, "elsewhere", "p1")
    for number, note in ((0, "issue deleted"), (1, " "), (1, None)):
        with pytest.raises(InvalidArgument):
            polled.record_issue_gone(*TEST_REPO, "p1", number, note)  # type: ignore[arg-type]
    assert gone(db) == (False, None, "open")
    assert job_notes(db) == [(1, "pending", None)]


def test_a_gone_issue_ends_its_jobs_and_the_mirror_lists_nothing_for_it(
    polled: JobStore, db: Database
) -> None:
    assert [w.number for w in polled.mirror_writes(*TEST_REPO, "p1")] == [1]
    assert backlog(polled) == 1
    assert polled.record_issue_gone(*TEST_REPO, "p1", 1, "issue deleted") == 1
    assert gone(db) == (True, "issue deleted", "closed")
    assert job_notes(db) == [(1, "cancelled", "issue deleted")]
    # The cancel queued a label write and an outcome comment: neither is due nor counted.
    assert polled.mirror_writes(*TEST_REPO, "p1") == []
    assert outbox.due(polled, "comment", *TEST_REPO, "p1") == []
    assert db.scalar("SELECT count(*) FROM tireless.mirror_comment WHERE written_at IS NULL") == 1
    assert backlog(polled) == 0
    # Said again (another round found it gone too): nothing more to end, the first time kept.
    first = db.scalar("SELECT gone_at FROM tireless.issue WHERE number = 1")
    assert polled.record_issue_gone(*TEST_REPO, "p1", 1, "issue deleted") == 0
    assert db.scalar("SELECT gone_at FROM tireless.issue WHERE number = 1") == first


def test_a_moved_issue_is_gone_with_the_note_naming_where_it_went(
    polled: JobStore, db: Database
) -> None:
    assert polled.record_issue_moved(*TEST_REPO, "p1", 1, "issue moved to acme/other#4") == 1
    assert gone(db) == (True, "issue moved to acme/other#4", "closed")
    assert job_notes(db) == [(1, "cancelled", "issue moved to acme/other#4")]
    assert polled.mirror_writes(*TEST_REPO, "p1") == []


def test_a_polls_deleted_numbers_mark_the_issue_gone(polled: JobStore, db: Database) -> None:
    outcome = polled.record_poll(*TEST_REPO, "p1", [], None, None, full_listing=True, deleted=[1])
    assert outcome.cancelled == 1
    assert gone(db) == (True, "issue deleted", "closed")
    polled.claim_repos_to_poll("p1")
    assert polled.mirror_writes(*TEST_REPO, "p1") == []


def test_an_issue_listed_again_is_back_and_the_mirror_writes_to_it_again(
    polled: JobStore, db: Database
) -> None:
    polled.record_issue_gone(*TEST_REPO, "p1", 1, "issue deleted")
    assert polled.mirror_writes(*TEST_REPO, "p1") == []
    # Listed again unchanged (it was only hidden, or transferred back): it is back.
    outcome = polled.record_poll(*TEST_REPO, "p1", [issue(1)], None, None, full_listing=True)
    assert outcome.created == 1  # it still asks for work: a new job for its request
    assert gone(db) == (False, None, "open")
    polled.claim_repos_to_poll("p1")
    assert [(w.number, str(w.state)) for w in polled.mirror_writes(*TEST_REPO, "p1")] == [
        (1, "pending")
    ]
    assert len(outbox.due(polled, "comment", *TEST_REPO, "p1")) == 1  # the cancelled job's


def test_an_archived_repository_gets_no_write_for_a_day_then_one_is_tried_again(
    polled: JobStore, db: Database
) -> None:
    until = polled.record_repo_archived(*TEST_REPO, "p1")
    archived_at = db.scalar("SELECT archived_at FROM tireless.mirror_repo")
    assert until == archived_at + timedelta(days=1)
    assert polled.mirror_writes(*TEST_REPO, "p1") == []
    assert backlog(polled) == 1  # still to write, once the repository takes writes again
    with db.connect() as conn:  # a day passes
        conn.execute("UPDATE tireless.mirror_repo SET archived_at = now() - interval '25 hours'")
    (write,) = polled.mirror_writes(*TEST_REPO, "p1")
    polled.record_mirror_write(*TEST_REPO, "p1", write)
    assert db.scalar("SELECT archived_at FROM tireless.mirror_repo") is None
    assert backlog(polled) == 0
