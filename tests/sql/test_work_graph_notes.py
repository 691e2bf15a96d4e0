"""The work graph's notes in the store (issue 35): a dependency cycle is queued once on each issue
in it (not again while it stands, again once broken and made again) and none of its jobs runs;
the mirror's queue of those comments and of a plan's checklist edits keeps the poll lease,
backs off a failure, and says in psql what it told."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests import outbox
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, TEST_REPO, issue, rows
from tireless import JobStore
from tireless.errors import InvalidArgument, NotHolder

CYCLE = (
    "None of the jobs of these issues runs until a person breaks the cycle: edit the `Depends on`"
    " line of one of their bodies, or remove one of the forge's own relations between them (Gitea"
    " and Forgejo: the issue's dependencies; GitHub: blocked by, or a sub-issue)."
)


@pytest.fixture
def polled(store: JobStore) -> JobStore:
    """The test repository tracked on a registered forge, its poll lease held by p1."""
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    (repo,) = store.claim_repos_to_poll("p1")
    assert repo.repo == REPO
    return store


def reports(db: Database) -> list[tuple[object, ...]]:
    return rows(
        db,
        "SELECT number, cycle, written_at IS NOT NULL, broken_at IS NOT NULL"
        " FROM tireless.cycle_reports ORDER BY queued_at, number, cycle",
    )


def test_a_cycle_is_queued_once_on_each_issue_and_none_of_its_jobs_runs(
    polled: JobStore, db: Database
) -> None:
    cycle = [issue(3, body="Depends on #4"), issue(4, body="Depends on #3")]
    polled.enqueue(cycle)
    assert reports(db) == [
        (3, "#3 → #4 → #3", False, False),
        (4, "#4 → #3 → #4", False, False),
    ]
    assert polled.claim_next("w1", ["cc"]) is None
    for _ in range(2):  # the same cycle seen again, poll after poll: nothing new
        polled.enqueue(cycle)
    assert len(reports(db)) == 2
    assert db.scalar("SELECT max(id) FROM tireless.cycle_report") == 2, "no id spent on a repeat"

    due = outbox.due(polled, "cycle", FORGE, OWNER, REPO, "p1")
    assert [(d.number, d.marker) for d in due] == [
        (3, f"<!-- tireless:cycle:{due[0].report_id} -->"),
        (4, f"<!-- tireless:cycle:{due[1].report_id} -->"),
    ]
    assert due[0].body == (
        f"tireless: this issue is on a dependency cycle: #3 → #4 → #3\n\n{CYCLE}\n\n{due[0].marker}"
    )
    with pytest.raises(NotHolder):
        outbox.due(polled, "cycle", FORGE, OWNER, REPO, "p2")
    until = outbox.record(
        polled, "cycle", FORGE, OWNER, REPO, "p1", due[0].report_id, error="HTTP 500"
    )
    assert until is not None
    assert until > datetime.now(UTC)
    assert outbox.record(polled, "cycle", FORGE, OWNER, REPO, "p1", due[1].report_id) is None
    assert outbox.due(polled, "cycle", FORGE, OWNER, REPO, "p1") == [], "#3 backed off, #4 written"
    assert rows(db, "SELECT failures, last_error FROM tireless.cycle_reports WHERE number = 3") == [
        (1, "HTTP 500")
    ]
    with pytest.raises(InvalidArgument):
        outbox.record(polled, "cycle", FORGE, OWNER, REPO, "p1", 999)
    assert polled.claim_next("w1", ["cc"]) is None


def test_a_broken_cycle_made_again_is_reported_again(polled: JobStore, db: Database) -> None:
    polled.enqueue([issue(3, body="Depends on #4"), issue(4, body="Depends on #3")])
    polled.enqueue([issue(4, body="Nothing to wait for.")])  # a person breaks it
    assert reports(db) == [
        (3, "#3 → #4 → #3", False, True),
        (4, "#4 → #3 → #4", False, True),
    ]
    assert outbox.due(polled, "cycle", FORGE, OWNER, REPO, "p1") == [], "broken before it was told"
    polled.enqueue([issue(4, body="Depends on #3")])  # and makes it again
    assert [r for r in reports(db) if not r[3]] == [
        (3, "#3 → #4 → #3", False, False),
        (4, "#4 → #3 → #4", False, False),
    ]
    assert len(outbox.due(polled, "cycle", FORGE, OWNER, REPO, "p1")) == 2
    assert polled.claim_next("w1", ["cc"]) is None


def test_no_cycle_is_queued_while_comments_are_off(polled: JobStore, db: Database) -> None:
    polled.set_mirror_comments(False)
    polled.enqueue([issue(3, body="Depends on #4"), issue(4, body="Depends on #3")])
    assert reports(db) == []
    assert rows(db, "SELECT note FROM tireless.job_list WHERE number = 3") == [
        ("waiting on #4 (a cycle: #3 → #4 → #3; break it on the forge)",)
    ]


def test_a_checklist_edit_is_recorded_or_backed_off_under_the_lease(
    polled: JobStore, db: Database
) -> None:
    polled.enqueue([issue(1, "tireless", "tireless/plan")])
    job = polled.claim_next("w1", ["cc"])
    assert job is not None
    polled.attach_plan(
        job.id, "w1", [{"title": "Frame", "body": ""}, {"title": "Paint", "body": ""}]
    )
    polled.transition(job.id, "delivered", "w1", "planned")
    with db.connect() as conn:  # the mirror read the end (mirror_writes queues the comment)
        conn.execute(
            "WITH c AS (INSERT INTO tireless.mirror_comment (job_id, forge, owner, repo, number)"
            " VALUES (%(id)s, %(f)s, %(o)s, %(r)s, 1) RETURNING *)"
            " INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)"
            " SELECT 'comment', forge, owner, repo, number, job_id FROM c",
            {"id": job.id, "f": FORGE, "o": OWNER, "r": REPO},
        )
    assert outbox.due(polled, "comment", FORGE, OWNER, REPO, "p1") == [], "waits for its children"
    for task, number in ((0, 2), (1, 3)):
        outbox.record(
            polled, "task", FORGE, OWNER, REPO, "p1", job.id, task, result={"number": number}
        )
    (comment,) = outbox.due(polled, "comment", FORGE, OWNER, REPO, "p1")
    assert comment.checklist == "Tasks:\n- [ ] #2 Frame — open\n- [ ] #3 Paint — open"
    assert comment.body.endswith(f"\n\n{comment.checklist}\n\n{comment.marker}")
    outbox.record(
        polled, "comment", FORGE, OWNER, REPO, "p1", job.id, result={"checklist": comment.checklist}
    )
    assert outbox.due(polled, "checklist", FORGE, OWNER, REPO, "p1") == [], "unchanged: no edit"

    polled.enqueue([issue(2, "tireless", "tireless/implement", title="Frame")])
    (edit,) = outbox.due(polled, "checklist", FORGE, OWNER, REPO, "p1")
    assert edit.checklist == "Tasks:\n- [ ] #2 Frame — pending\n- [ ] #3 Paint — open"
    assert edit.body == comment.body.replace(comment.checklist, edit.checklist)
    with pytest.raises(NotHolder):
        outbox.record(
            polled,
            "checklist",
            FORGE,
            OWNER,
            REPO,
            "p2",
            job.id,
            result={"checklist": edit.checklist},
        )
    outbox.record(polled, "checklist", FORGE, OWNER, REPO, "p1", job.id, error="HTTP 500")
    assert outbox.due(polled, "checklist", FORGE, OWNER, REPO, "p1") == [], "backed off"
    with db.connect() as conn:
        conn.execute("UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'checklist'")
    (again,) = outbox.due(polled, "checklist", FORGE, OWNER, REPO, "p1")
    outbox.record(
        polled, "checklist", FORGE, OWNER, REPO, "p1", job.id, result={"checklist": again.checklist}
    )
    assert outbox.due(polled, "checklist", FORGE, OWNER, REPO, "p1") == []
    assert rows(
        db,
        "SELECT child_number, done, status, shown FROM tireless.job_checklist(%(id)s)",
        {"id": job.id},
    ) == [(2, False, "pending", True), (3, False, "open", True)]

    polled.enqueue([issue(3, "bug", title="Paint", state="closed")])
    (done,) = outbox.due(polled, "checklist", FORGE, OWNER, REPO, "p1")
    assert done.checklist == "Tasks:\n- [ ] #2 Frame — pending\n- [x] #3 Paint — closed"


def test_a_discoverys_comment_lists_its_proposals_and_waits_for_them_only_so_long(
    polled: JobStore, db: Database
) -> None:
    polled.enqueue([issue(1, "tireless", "tireless/discover")])
    job = polled.claim_next("w1", ["cc"])
    assert job is not None
    polled.attach_plan(
        job.id, "w1", [{"title": "Idea", "body": ""}, {"title": "Other", "body": ""}]
    )
    polled.transition(job.id, "delivered", "w1", "found two")
    with db.connect() as conn:
        conn.execute(
            "WITH c AS (INSERT INTO tireless.mirror_comment (job_id, forge, owner, repo, number)"
            " VALUES (%(id)s, %(f)s, %(o)s, %(r)s, 1) RETURNING *)"
            " INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)"
            " SELECT 'comment', forge, owner, repo, number, job_id FROM c",
            {"id": job.id, "f": FORGE, "o": OWNER, "r": REPO},
        )
    outbox.record(polled, "task", FORGE, OWNER, REPO, "p1", job.id, 0, result={"number": 2})
    for _ in range(2):
        outbox.record(polled, "task", FORGE, OWNER, REPO, "p1", job.id, 1, error="HTTP 422")
    assert outbox.due(polled, "comment", FORGE, OWNER, REPO, "p1") == [], "two failures: it waits"
    outbox.record(polled, "task", FORGE, OWNER, REPO, "p1", job.id, 1, error="HTTP 422")
    (comment,) = outbox.due(polled, "comment", FORGE, OWNER, REPO, "p1")
    assert comment.checklist == (
        "Proposals:\n"
        "- [ ] #2 Idea — proposed: add the opt-in label to run it\n"
        "- [ ] Other — not opened yet"
    )
