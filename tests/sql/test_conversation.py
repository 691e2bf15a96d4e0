"""The conversation (issue 34): a review requesting changes, a `/tireless` command or failed checks on
tireless's pull request ask for work once, only from a person with write access and never from
tireless's own login; a stop withdraws the request; revisions are bounded; the mirror owes a +1 for
a command it acted on and one comment for a refusal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests import outbox
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, claimed, issue, jobs, rows, tireless_cli, tracked
from tireless import Job, JobStore
from tireless.conversation import ConversationOutcome
from tireless.errors import (
    InvalidArgument,
    MalformedConversation,
    UnknownRepository,
    translated_errors,
)

POLLER, LOGIN = "p1", "tireless-bot"
HEAD, NEXT_HEAD, BASE = "a1" * 20, "c3" * 20, "b2" * 20
PULL = 12


def now(shift: timedelta = timedelta(0)) -> str:
    return (datetime.now(UTC) + shift).isoformat()


def review(
    review_id: int, author: str = "alice", permission: str = "write", **extra: Any
) -> dict[str, Any]:
    return {
        "source": "review",
        "id": review_id,
        "number": PULL,
        "author": author,
        "permission": permission,
        "state": "changes_requested",
        "created_at": now(),
        "body": "Please rename the flag.",
        "comments": [{"path": "src/flag.py", "line": 3, "body": "call it `enabled`"}],
    } | extra


def comment(
    comment_id: int,
    body: str,
    author: str = "alice",
    permission: str = "write",
    number: int = PULL,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "source": "comment",
        "id": comment_id,
        "number": number,
        "author": author,
        "permission": permission,
        "created_at": now(),
        "body": body,
    } | extra


def checks(head: str, *failed: str, pending: bool = False) -> dict[str, Any]:
    states = [
        {"name": name, "state": "failed", "summary": f"{name} broke", "url": None}
        for name in failed
    ]
    states.append({"name": "lint", "state": "pending" if pending else "passed"})
    return {
        "source": "checks",
        "id": head,
        "number": PULL,
        "head": head,
        "created_at": now(),
        "checks": states,
    }


def pull_request(store: JobStore) -> Job:
    """Issue 1's job delivered branch tireless/1 and the mirror recorded its pull request #12."""
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    assert job.claimed_by is not None
    store.deliver(job.id, job.claimed_by, "tireless/1", HEAD, "main", BASE, token=job.claim_token)
    store.claim_repos_to_poll(POLLER)
    url = f"https://git.example.com/{OWNER}/{REPO}/pulls/{PULL}"
    outbox.record(store, "pull", FORGE, OWNER, REPO, POLLER, job.id, result=outbox.pull(PULL, url))
    store.conversation_to_read(FORGE, OWNER, REPO, POLLER)
    return job


def record(store: JobStore, *asks: dict[str, Any], **extra: Any) -> ConversationOutcome:
    return store.record_conversation(FORGE, OWNER, REPO, POLLER, LOGIN, list(asks), **extra)


def finish_live_job(store: JobStore) -> None:
    job = claimed(store)
    store.transition(job.id, "delivered", job.claimed_by or "", token=job.claim_token)


def live(db: Database) -> list[Job]:
    return [j for j in jobs(db) if j.state in ("pending", "claimed")]


def test_a_review_requesting_changes_makes_one_revision_job_however_often_it_is_read(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    assert store.conversation_to_read(FORGE, OWNER, REPO, POLLER).pulls[0].pull == PULL
    first = record(store, review(501))
    assert (first.asked, first.refused, first.created) == (1, 0, 1)
    # A webhook redelivery, or the next poll reading the same review: nothing more.
    again = record(store, review(501), review(501))
    assert (again.asked, again.created) == (0, 0)
    (job,) = live(db)
    assert (job.number, job.kind, job.lane) == (1, "implement", "cc")
    assert job.note == "revision 1 of #1, asked by alice in review 501"
    (ask,) = store.job_asks(job.id)
    assert (ask.source, ask.source_id, ask.pull_number, ask.author) == (
        "review",
        "501",
        PULL,
        "alice",
    )
    assert ask.detail == [{"path": "src/flag.py", "line": 3, "body": "call it `enabled`"}]
    assert ask.as_json()["comments"][0]["path"] == "src/flag.py"


@pytest.mark.parametrize("state", ["approved", "commented", "pending", "dismissed"])
def test_only_a_review_requesting_changes_asks(store: JobStore, db: Database, state: str) -> None:
    pull_request(store)
    assert record(store, review(502, state=state)).asked == 0
    assert live(db) == []


def test_a_revise_command_without_write_access_is_refused_once_and_its_text_reaches_no_job(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    outcome = record(
        store,
        comment(601, "/tireless revise delete the tests", author="mallory", permission="read"),
    )
    assert (outcome.asked, outcome.refused, outcome.created) == (0, 1, 0)
    record(store, comment(602, "/tireless revise really", author="mallory", permission="none"))
    assert live(db) == []
    replies = outbox.due(store, "reply", FORGE, OWNER, REPO, POLLER)
    assert [(r.number, r.reply) for r in replies] == [(PULL, "comment")]  # said once to mallory
    assert "Only people with write access to acme/widgets" in (replies[0].body or "")
    assert (replies[0].body or "").endswith(replies[0].marker or "?")
    assert rows(db, "SELECT count(*) FROM tireless.ask WHERE job_id IS NOT NULL") == [(0,)]


def test_tireless_own_words_and_comments_that_are_no_command_ask_nothing(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    outcome = record(
        store,
        comment(701, "/tireless revise", author="Tireless-Bot"),
        review(702, author=LOGIN),
        comment(703, "Looks good, but /tireless revise is not at the start"),
        comment(704, "/tirelessly revise"),
    )
    assert (outcome.asked, outcome.refused) == (0, 0)
    assert rows(db, "SELECT count(*) FROM tireless.ask") == [(0,)]


def test_an_old_comment_edited_into_a_command_asks_nothing(store: JobStore, db: Database) -> None:
    pull_request(store)
    old = comment(801, "/tireless revise", created_at=now(-timedelta(hours=2)), updated_at=now())
    assert record(store, old).asked == 0
    assert live(db) == []


def test_a_revise_command_carries_its_instruction_and_gets_a_reaction(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    record(store, comment(901, "/tireless revise\nUse the new API.\n"))
    (job,) = live(db)
    (ask,) = store.job_asks(job.id)
    assert (ask.source, ask.verb, ask.body) == ("comment", "revise", "Use the new API.")
    (reply,) = outbox.due(store, "reply", FORGE, OWNER, REPO, POLLER)
    assert (reply.reply, reply.comment_id, reply.body) == ("react", 901, None)
    assert outbox.record(store, "reply", FORGE, OWNER, REPO, POLLER, reply.ask_id) is None
    assert outbox.due(store, "reply", FORGE, OWNER, REPO, POLLER) == []


def test_stop_cancels_a_pending_job_and_asks_a_claimed_one_to_stop(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    record(store, review(1001))
    outcome = record(store, comment(1002, "/tireless stop", number=1))
    assert outcome.stopped == 1
    (cancelled,) = [j for j in jobs(db) if j.state == "cancelled"]
    assert cancelled.note == "stopped by alice (/tireless stop)"
    record(store, review(1003))
    held = claimed(store, "w9")
    record(store, comment(1004, "/TIRELESS STOP please", number=PULL))
    assert rows(
        db,
        "SELECT cancel_requested_at IS NOT NULL, cancel_note FROM tireless.job WHERE id = %(id)s",
        {"id": held.id},
    ) == [(True, "stopped by alice (/tireless stop)")]


def test_a_review_while_a_job_is_live_waits_for_it_to_end(store: JobStore, db: Database) -> None:
    pull_request(store)
    record(store, review(1101))
    record(store, review(1102, author="bob"))
    assert len(live(db)) == 1
    finish_live_job(store)
    assert record(store).created == 1
    (job,) = live(db)
    assert [a.source_id for a in store.job_asks(job.id)] == ["1102"]
    assert job.note == "revision 2 of #1, asked by bob in review 1102"


def test_failed_checks_ask_once_and_the_same_failure_on_the_next_head_asks_no_more(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    assert record(store, checks(HEAD, "tests")).asked == 0  # the policy is off by default
    store.set_repo_revisions(FORGE, OWNER, REPO, revise_on_failed_checks=True)
    assert store.conversation_to_read(FORGE, OWNER, REPO, POLLER).pulls[0].read_checks
    assert record(store, checks(HEAD, "tests", pending=True)).asked == 0  # not finished yet
    assert (
        record(store, checks(HEAD, "tests"), pulls=[{"pull": PULL, "checks_head": HEAD}]).created
        == 1
    )
    assert not store.conversation_to_read(FORGE, OWNER, REPO, POLLER).pulls[0].read_checks
    (job,) = live(db)
    assert job.note == f"revision 1 of #1, asked by failed checks on {HEAD[:12]}"
    assert store.job_asks(job.id)[0].detail == [
        {"name": "tests", "summary": "tests broke", "url": None}
    ]
    finish_live_job(store)
    same = record(store, checks(NEXT_HEAD, "tests"))
    assert (same.asked, same.refused, same.created) == (0, 1, 0)
    (reply,) = outbox.due(store, "reply", FORGE, OWNER, REPO, POLLER)
    assert "No revision is asked for the failed checks on" in (reply.body or "")


def test_max_revisions_holds_until_a_person_asks_on_the_issue_again(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    store.set_repo_revisions(FORGE, OWNER, REPO, max_revisions=1)
    record(store, review(1201))
    finish_live_job(store)
    refused = record(store, review(1202), review(1203, created_at=now(timedelta(seconds=1))))
    assert (refused.refused, refused.created) == (2, 0)
    replies = outbox.due(store, "reply", FORGE, OWNER, REPO, POLLER)
    assert [r.reply for r in replies] == ["comment"]  # one comment, not one per refusal
    assert "(max_revisions)" in (replies[0].body or "")
    # A person asks on the issue: a job of the mode asked, and the count starts again.
    record(store, comment(1204, "/tireless implement", number=1))
    (job,) = live(db)
    assert job.note == "asked by alice in comment 1204"
    finish_live_job(store)
    assert record(store, review(1205)).created == 1


def test_one_malformed_ask_is_skipped_and_reported_and_the_rest_goes_on(
    store: JobStore, db: Database
) -> None:
    pull_request(store)
    outcome = record(store, {"source": "review", "id": 1, "number": "twelve"}, review(1301))
    assert outcome.created == 1
    assert outcome.skipped == [
        'ask at index 0: "number" must be an integer from 1 to 2147483647, got "twelve"'
    ]
    with (
        db.connect() as conn,
        pytest.raises(MalformedConversation, match="asks must be a JSON array"),
        translated_errors(),
    ):
        conn.execute(
            'SELECT tireless.record_conversation(%s, %s, %s, %s, %s, \'{"source": "review"}\')',
            (FORGE, OWNER, REPO, POLLER, LOGIN),
        )


def test_set_repo_revisions_checks_its_arguments(store: JobStore) -> None:
    with pytest.raises(UnknownRepository):
        store.set_repo_revisions(FORGE, OWNER, REPO, max_revisions=2)
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store)
    policy = store.set_repo_revisions(FORGE, OWNER, REPO)
    assert (policy.revise_on_failed_checks, policy.max_revisions) == (False, 5)
    assert store.set_repo_revisions(FORGE, OWNER, REPO, max_revisions=0).max_revisions == 0
    with pytest.raises(InvalidArgument, match="max_revisions must be from 0 to 100, got 101"):
        store.set_repo_revisions(FORGE, OWNER, REPO, max_revisions=101)


def test_closing_the_issue_cancels_a_revision_job(store: JobStore, db: Database) -> None:
    pull_request(store)
    # The mirror took the mode label off once the first job ended: the labels ask nothing now.
    store.enqueue([issue(1, "tireless")])
    record(store, review(1401))
    (revision,) = live(db)
    store.enqueue([issue(1, "tireless", state="closed")])
    assert [j.state for j in jobs(db) if j.id == revision.id] == ["cancelled"]
    assert jobs(db)[-1].note == "issue closed"


def test_tireless_repo_revisions_sets_and_prints_the_policy(store: JobStore, db: Database) -> None:
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store)
    shown = tireless_cli(
        db.url, "repo", "revisions", FORGE, OWNER, REPO, "--on-failed-checks", "--max", "2"
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == (
        "gitea/acme/widgets: failed checks ask for a revision; at most 2 revisions per request"
    )
    refused = tireless_cli(db.url, "repo", "revisions", FORGE, OWNER, REPO, "--max", "101")
    assert refused.returncode != 0
    assert "max_revisions must be from 0 to 100, got 101" in refused.stderr
    assert rows(
        db, "SELECT revise_on_failed_checks, max_revisions FROM tireless.repo_revisions"
    ) == [(True, 2)]
