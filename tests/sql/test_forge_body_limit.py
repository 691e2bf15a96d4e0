"""Every body the mirror writes fits in tireless.forge_body_limit() (GitHub's 65536 characters,
one limit for every forge): a report is cut to fit and says so, with no code fence left open; a
plan's checklist is cut with "… and N more"; the marker line stays last."""

from __future__ import annotations

import re

import pytest

from tests import outbox
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, TEST_REPO, claimed, issue, rows, tracked
from tireless import JobStore

LIMIT = 65536
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)


def comment_of(db: Database, job_id: int) -> str:
    (row,) = rows(
        db, "SELECT tireless.finished_job_comment(j) FROM tireless.job j WHERE j.id = %(id)s",
        {"id": job_id},
    )  # fmt: skip
    text: str = row[0]
    return text


def test_the_limit_is_githubs(db: Database) -> None:
    assert db.scalar("SELECT tireless.forge_body_limit()") == LIMIT


def test_a_huge_report_with_backticks_is_cut_to_fit_and_its_fence_closed(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    # Each "<" and "@" gets an invisible character when made safe: 60000 kept become 100000.
    report = "## Done\n\n```text\n" + "<@`x" * 50000
    assert store.attach_report(job.id, "w1", report) is True  # the store keeps 60000
    store.transition(job.id, "delivered", "w1", "done")
    comment = comment_of(db, job.id)
    marker = db.scalar("SELECT tireless.comment_marker(%(id)s)", {"id": job.id})
    assert len(comment) + len(f"\n\n{marker}") <= LIMIT
    assert len(comment) > LIMIT - 200, "cut no shorter than it must be"
    assert comment.startswith(
        "tireless: delivered after 1 attempt\n\n## Done\n\n```text\n<\u200b@\u200d`x"
    )
    kept, cut = comment.split("\n```\n\n… cut: ")
    assert len(FENCE.findall(kept + "\n```")) == 2, "the opened fence is closed, once"
    said = re.fullmatch(
        r"(\d+) more characters do not fit in a forge's body \(65536 at most\)\.\n\n"
        r"\(report cut at 60000 characters\)",
        cut,
    )
    assert said is not None
    stored = report[:60000]
    safe = len(stored) + stored.count("<") + stored.count("@")  # an invisible character after each
    shown = kept.removeprefix("tireless: delivered after 1 attempt\n\n")
    assert len(shown) + int(said[1]) == safe, (
        "the count is of the text as it would have been posted"
    )


def test_a_report_that_fits_is_whole(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    store.attach_report(job.id, "w1", "```\nopen fence, all of it fits")
    store.transition(job.id, "failed", "w1", "exit 1")
    assert comment_of(db, job.id) == (
        "tireless: failed after 1 attempt\n\n```\nopen fence, all of it fits"
    )


@pytest.mark.parametrize(
    ("body", "closing"),
    [
        ("```py\ncode", "```"),
        ("```\ncode\n```\n", None),
        ("  ~~~~\ncode\n~~~\n", "  ~~~~"),  # three tildes do not close four
        ("````\n```\nstill code", "````"),
        ("``` not `a fence`\ntext", None),  # a backtick after a backtick fence: inline code
        ("    ```\nindented code, no fence", None),
        ("~~~\n```\n~~~~ \nafter", None),
    ],
)
def test_closing_fence_closes_what_commonmark_leaves_open(
    db: Database, body: str, closing: str | None
) -> None:
    assert db.scalar("SELECT tireless.closing_fence(%(b)s)", {"b": body}) == closing


def test_fit_report_is_empty_with_no_room_to_say_it_was_cut(db: Database) -> None:
    assert db.scalar("SELECT tireless.fit_report(%(r)s, 20)", {"r": "r" * 21}) == ""
    assert db.scalar("SELECT tireless.fit_report(%(r)s, 20)", {"r": "@" * 10}) == "@\u200d" * 10


def test_a_long_checklist_is_cut_and_the_body_still_ends_with_its_marker(
    store: JobStore, db: Database
) -> None:
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    store.claim_repos_to_poll("p1")
    store.enqueue([issue(1, "tireless", "tireless/plan")])
    job = store.claim_next("w1", ["cc"])
    assert job is not None
    tasks = [{"title": f"Task {i} " + "t" * 190, "body": ""} for i in range(50)]
    store.attach_plan(job.id, "w1", tasks)
    store.attach_report(job.id, "w1", "<@" * 30000)
    store.transition(job.id, "delivered", "w1", "planned")
    with db.connect() as conn:  # the mirror read the end (mirror_writes queues the comment)
        conn.execute(
            "WITH c AS (INSERT INTO tireless.mirror_comment (job_id, forge, owner, repo, number)"
            " VALUES (%(id)s, %(f)s, %(o)s, %(r)s, 1) RETURNING *)"
            " INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)"
            " SELECT 'comment', forge, owner, repo, number, job_id FROM c",
            {"id": job.id, "f": FORGE, "o": OWNER, "r": REPO},
        )
    for task in range(50):
        outbox.record(
            store, "task", FORGE, OWNER, REPO, "p1", job.id, task, result={"number": 100 + task}
        )
    store.enqueue([issue(100 + task, title=f"Task {task}") for task in range(50)])
    with db.connect() as conn:  # each child waits on a hundred issues: a 2000-character line
        conn.execute(
            "UPDATE tireless.job SET waiting_on = ARRAY(SELECT 'acme/gadgets#' || g"
            " FROM generate_series(10000, 10099) AS g) WHERE number >= 100"
        )
    (comment,) = outbox.due(store, "comment", FORGE, OWNER, REPO, "p1")
    assert comment.checklist is not None
    assert len(comment.checklist) <= LIMIT - 8192
    shown = comment.checklist.count("\n- [ ] ")
    assert 0 < shown < 50
    assert comment.checklist.endswith(f"\n… and {50 - shown} more")
    assert len(comment.body) <= LIMIT
    assert comment.body.endswith(f"\n\n{comment.checklist}\n\n{comment.marker}")
    assert "… cut: " in comment.body, "the report gave up the room"


def test_a_job_that_never_ran_still_says_its_note(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(1)])
    store.enqueue([issue(1, state="closed")])  # withdrawn before any claim: no attempt at all
    (job_id,) = rows(db, "SELECT id FROM tireless.job")[0]
    assert (
        comment_of(db, job_id) == "tireless: cancelled after 0 attempts\n\n```\nissue closed\n```"
    )
