"""The agent's brief and report through the SQL functions: enqueue keeps an issue's body (cut and
flagged past the limit; kept when a later listing leaves it out), job_brief gives the issue's URL,
the forge's API root and the clone URL, and attach_report makes the outcome comment."""

from __future__ import annotations

import pytest

from tests.conftest import Database
from tests.helpers import claimed, issue, rows, tracked
from tireless import JobBrief, JobStore
from tireless.errors import MalformedIssue, NotHolder, UnknownJob

URL = "https://git.example.com/acme/widgets/issues/1"


def brief_of_issue_1(store: JobStore, db: Database) -> JobBrief:
    job_id = db.scalar("SELECT id FROM tireless.job WHERE number = 1")
    return store.job_brief(job_id)


def test_the_brief_carries_the_urls_and_the_body_of_the_last_poll(
    store: JobStore, db: Database
) -> None:
    store.add_forge("gitea", "gitea", "https://git.example.com/")
    tracked(store).enqueue([issue(1, url=URL, body="Fix the widget.\n\nSteps: ...")])
    assert brief_of_issue_1(store, db) == JobBrief(
        issue_url=URL,
        api_url="https://git.example.com/api/v1",
        clone_url="https://git.example.com/acme/widgets.git",
        body="Fix the widget.\n\nSteps: ...",
        body_cut=False,
        branch="tireless/1",  # never pushed: no head, no pull request, no checkpoint
    )
    store.enqueue([issue(1, url=URL, body="Fix the widget, both of them.")])
    assert brief_of_issue_1(store, db).body == "Fix the widget, both of them."
    store.enqueue([issue(1, url=URL)])  # a listing without "body" (the mirror's read-back)
    assert brief_of_issue_1(store, db).body == "Fix the widget, both of them."


@pytest.mark.parametrize(
    ("base_url", "api_url", "clone_url"),
    [
        ("https://api.github.com", "https://api.github.com", "https://github.com/acme/widgets.git"),
        (
            "https://ghe.example.com/api/v3",
            "https://ghe.example.com/api/v3",
            "https://ghe.example.com/acme/widgets.git",
        ),
    ],
)
def test_a_github_forge_clones_from_its_web_root(
    store: JobStore, db: Database, base_url: str, api_url: str, clone_url: str
) -> None:
    store.add_forge("gitea", "github", base_url)  # the test repository's forge is named gitea
    tracked(store).enqueue([issue(1)])
    brief = brief_of_issue_1(store, db)
    assert (brief.api_url, brief.clone_url, brief.body) == (api_url, clone_url, None)


def test_a_long_body_is_cut_at_the_limit_and_flagged(store: JobStore, db: Database) -> None:
    limit = db.scalar("SELECT tireless.issue_body_limit()")
    assert limit == 65536
    tracked(store).enqueue([issue(1, body="é" * (limit + 1))])
    brief = brief_of_issue_1(store, db)
    assert (brief.body, brief.body_cut) == ("é" * limit, True)
    store.enqueue([issue(1, body="short again")])
    assert brief_of_issue_1(store, db).body_cut is False


def test_a_body_that_is_not_text_refuses_the_batch(store: JobStore, db: Database) -> None:
    with pytest.raises(MalformedIssue, match='index 1: "body" must be a string or null'):
        tracked(store).enqueue([issue(1).as_json(), issue(2).as_json() | {"body": 7}])
    assert db.scalar("SELECT count(*) FROM tireless.job") == 0


def test_the_brief_of_an_unknown_job_is_refused(store: JobStore) -> None:
    with pytest.raises(UnknownJob):
        store.job_brief(12345)


def comment(db: Database, job_id: int) -> str:
    (row,) = rows(
        db,
        "SELECT tireless.finished_job_comment(j) FROM tireless.job j WHERE j.id = %(id)s",
        {"id": job_id},
    )
    text: str = row[0]
    return text


def test_the_report_of_the_last_attempt_is_the_comment_instead_of_the_note(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store, "host1-3")
    assert (
        store.attach_report(job.id, "host1-3", "## Done\n\nMerged as #12.", job.claim_token)
        is False
    )
    store.transition(job.id, "delivered", "host1-3", "the tail of the output", job.claim_token)
    assert comment(db, job.id) == "tireless: delivered after 1 attempt\n\n## Done\n\nMerged as #12."
    assert db.scalar("SELECT note FROM tireless.job") == "the tail of the output"


def test_a_report_of_an_earlier_attempt_is_not_the_comment(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    store.attach_report(job.id, "w1", "first try went nowhere")
    store.transition(job.id, "pending", "w1", "exit 1")
    db.scalar("UPDATE tireless.job SET available_at = now() RETURNING 1")
    again = claimed(store, "w2")
    store.transition(again.id, "failed", "w2", "gave up")
    assert comment(db, job.id) == "tireless: failed after 2 attempts\n\n```\nw2: gave up\n```"


def test_a_long_report_is_cut_and_says_so(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    assert store.attach_report(job.id, "w1", "r" * 60001) is True
    store.transition(job.id, "delivered", "w1")
    assert comment(db, job.id).endswith("r" * 60000 + "\n\n(report cut at 60000 characters)")


def test_only_the_holder_attaches_a_report(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    with pytest.raises(NotHolder):
        store.attach_report(job.id, "w2", "not mine")
    assert db.scalar("SELECT count(*) FROM tireless.job_attempt") == 0


def test_a_report_is_posted_with_no_mention_tag_image_or_control_character(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    report = "Done, @alice.\x1b]52;c;x\x07 <img src=x onerror=alert(1)> ![t](http://t.example/p.png) [PR](http://f/1)\u202e"
    store.attach_report(job.id, "w1", report)
    store.transition(job.id, "delivered", "w1")
    body = comment(db, job.id).split("\n\n", 1)[1]
    assert "@\u200dalice" in body
    assert "<img" not in body
    assert "<\u200bimg" in body
    assert "![" not in body
    assert "[PR](http://f/1)" in body
    assert not any(c in body for c in "\x1b\x07\u202e")
