"""The forge side of the conversation on a pull request, both API families against the stand-in:
comments since a time (every page, pull requests' too, edits), reviews with their states
normalised (GitHub's 304), a review's inline comments, a login's permission, a commit's checks
from statuses and check runs, a reaction on a comment. Pages of 2 (max_page_size) make every
listing page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta

import httpx
import pytest

from dev.standin import MIRROR_LOGIN, PERSON, Flavour, StandinForge, conversation
from tireless.forge import client_for
from tireless.forge.client import BadResponse, ForgeClient, WriteRefused
from tireless.forge.gitea import REVIEW_STATES as GITEA_REVIEW_STATES
from tireless.forge.validate import note, review

TOKEN = "tok-conversation-5b2e"
OWNER, REPO = "acme", "widgets"
BRANCH = "tireless/1"


@pytest.fixture(params=["gitea", "github"])
def forge(request: pytest.FixtureRequest) -> Iterator[StandinForge]:
    with StandinForge(request.param, token=TOKEN, max_page_size=2) as standin:
        standin.create_issue(OWNER, REPO, "Add a flag", ["tireless"])  # issue 1
        standin.open_pull(OWNER, REPO, BRANCH, "main", "Add a flag", author=MIRROR_LOGIN)  # 2
        yield standin


@pytest.fixture
def github() -> Iterator[StandinForge]:
    with StandinForge("github", token=TOKEN, max_page_size=2) as standin:
        standin.open_pull(OWNER, REPO, BRANCH, "main", "Add a flag", author=MIRROR_LOGIN)  # 1
        yield standin


def client(forge: StandinForge) -> ForgeClient:
    return client_for(forge.flavour, forge.url, TOKEN, timeout=5.0)


def api(forge: StandinForge, path: str) -> str:
    return ("/api/v1" if forge.flavour == "gitea" else "") + f"/repos/{OWNER}/{REPO}/{path}"


def test_comments_since_reads_every_page_of_issues_and_pull_requests(forge: StandinForge) -> None:
    made = [
        forge.add_comment_as(OWNER, REPO, number, author, f"{author} on #{number}")
        for number, author in [(1, "bob"), (2, "carol"), (1, PERSON), (2, "bob"), (2, "dave")]
    ]
    with closing(client(forge)) as reader:
        notes = reader.comments_since(OWNER, REPO, None)
    assert sorted(n.id for n in notes) == sorted(made)
    # Gitea names a pull request's comment by pull_request_url, GitHub by issue_url.
    assert {(n.number, n.author, n.body) for n in notes} == {
        (1, "bob", "bob on #1"),
        (2, "carol", "carol on #2"),
        (1, PERSON, f"{PERSON} on #1"),
        (2, "bob", "bob on #2"),
        (2, "dave", "dave on #2"),
    }
    assert [(n.updated_at, n.id) for n in notes] == sorted((n.updated_at, n.id) for n in notes)
    pages = [r for r in forge.requests if r.path == api(forge, "issues/comments")]
    assert len(pages) >= 3  # 5 comments, 2 a page


def test_comments_since_lists_what_changed_at_or_after_it_and_an_edit_moves_a_comment(
    forge: StandinForge,
) -> None:
    old = forge.add_comment_as(OWNER, REPO, 1, "bob", "/tireless implement")
    with closing(client(forge)) as reader:
        (first,) = [n for n in reader.comments_since(OWNER, REPO, None) if n.id == old]
        since = first.updated_at + timedelta(seconds=1)
        assert all(n.updated_at >= since for n in reader.comments_since(OWNER, REPO, since))
        assert old not in [n.id for n in reader.comments_since(OWNER, REPO, since)]
        forge.edit_comment(OWNER, REPO, old, "/tireless plan")
        (edited,) = [n for n in reader.comments_since(OWNER, REPO, since) if n.id == old]
    assert (edited.body, edited.created_at) == ("/tireless plan", first.created_at)
    assert edited.updated_at >= since


def test_a_comment_moves_its_issue_on(forge: StandinForge) -> None:
    with closing(client(forge)) as reader:
        before = reader.get_issue(OWNER, REPO, 1)
        forge.add_comment_as(OWNER, REPO, 1, "bob", "hello")
        after = reader.get_issue(OWNER, REPO, 1)
    assert before is not None
    assert after is not None
    assert after.updated_at > before.updated_at


def test_reviews_are_read_every_page_with_their_states_normalised(forge: StandinForge) -> None:
    for author, state in [
        ("carol", "changes_requested"),
        ("dave", "approved"),
        ("erin", "commented"),
        ("frank", "dismissed"),
        ("grace", "pending"),  # another's pending review: shown to its author only
        (MIRROR_LOGIN, "pending"),
        ("heidi", "review_requested"),  # Gitea: REQUEST_REVIEW; GitHub lists no request
    ]:
        forge.submit_review(OWNER, REPO, 2, author, state, f"{state} by {author}")
    with closing(client(forge)) as reader:
        reviews = reader.pull_reviews(OWNER, REPO, 2)
    shown = [(r.author, r.state) for r in reviews.reviews]
    expected = [
        ("carol", "changes_requested"),
        ("dave", "approved"),
        ("erin", "commented"),
        ("frank", "dismissed"),  # Gitea: REQUEST_CHANGES with dismissed: true
        (MIRROR_LOGIN, "pending"),
    ]
    if forge.flavour == "gitea":
        expected.append(("heidi", "pending"))
    assert shown == expected
    assert reviews.reviews[0].body == "changes_requested by carol"
    assert reviews.reviews[0].submitted_at is not None
    assert not reviews.not_modified
    if forge.flavour == "gitea":
        assert reviews.etag is None  # Gitea sends no ETag
    else:
        assert reviews.reviews[4].submitted_at is None  # GitHub: none while pending
        assert reviews.etag is None  # three pages: page 1's ETag does not answer for the rest
    pages = [r for r in forge.requests if r.path == api(forge, "pulls/2/reviews")]
    assert len(pages) == 3


def test_a_review_gives_its_inline_comments_and_the_head_it_reviewed(
    forge: StandinForge,
) -> None:
    forge.seed_git(OWNER, REPO, {"README.md": "hello\n"})
    head = forge.seed_git(OWNER, REPO, {"app.py": "print(1)\n"}, branch=BRANCH)
    with closing(client(forge)) as reader:
        before = reader.get_issue(OWNER, REPO, 2)
        ident = forge.submit_review(
            OWNER,
            REPO,
            2,
            "carol",
            "changes_requested",
            "Please rename",
            comments=[("app.py", 1, "call it main"), ("README.md", 3, "and say so"), ("x", 5, "")],
        )
        after = reader.get_issue(OWNER, REPO, 2)
        (made,) = reader.pull_reviews(OWNER, REPO, 2).reviews
        inline = reader.review_comments(OWNER, REPO, 2, ident)
    assert (made.id, made.commit) == (ident, head)
    assert [(c.path, c.line, c.body) for c in inline] == [
        ("app.py", 1, "call it main"),
        ("README.md", 3, "and say so"),
        ("x", 5, ""),
    ]
    assert before is not None
    assert after is not None
    assert after.updated_at > before.updated_at  # a review moves the pull request on


def test_github_answers_unchanged_reviews_with_304_at_no_rate_limit(github: StandinForge) -> None:
    github.submit_review(OWNER, REPO, 1, "carol", "changes_requested", "Please rename")
    with closing(client(github)) as reader:
        first = reader.pull_reviews(OWNER, REPO, 1)
        assert first.etag is not None
        left = github.rate_remaining
        again = reader.pull_reviews(OWNER, REPO, 1, etag=first.etag)
        assert (again.reviews, again.etag, again.not_modified) == ((), first.etag, True)
        assert github.rate_remaining == left  # a 304 costs nothing
        github.submit_review(OWNER, REPO, 1, "dave", "approved")
        changed = reader.pull_reviews(OWNER, REPO, 1, etag=first.etag)
    assert not changed.not_modified
    assert [r.state for r in changed.reviews] == ["changes_requested", "approved"]
    assert changed.etag not in (None, first.etag)


@pytest.mark.parametrize(
    ("flavour", "role", "expected"),
    [
        ("gitea", "admin", "admin"),
        ("gitea", "write", "write"),
        ("gitea", "read", "read"),
        ("github", "admin", "admin"),
        ("github", "maintain", "write"),  # GitHub's permission maps maintain to write
        ("github", "write", "write"),
        ("github", "triage", "read"),
        ("github", "read", "read"),
    ],
)
def test_a_collaborators_permission_is_normalised(
    flavour: Flavour, role: str, expected: str
) -> None:
    with StandinForge(flavour, token=TOKEN) as forge:
        forge.create_repo(OWNER, REPO)
        forge.set_permission(OWNER, REPO, "carol", role)
        with closing(client(forge)) as reader:
            assert reader.permission(OWNER, REPO, "Carol") == expected


def test_the_owner_a_stranger_and_no_user_have_their_permission(forge: StandinForge) -> None:
    forge.add_comment_as(OWNER, REPO, 1, "mallory", "/tireless implement")  # a known user
    with closing(client(forge)) as reader:
        assert reader.permission(OWNER, REPO, OWNER) == "admin"  # Gitea says "owner"
        assert reader.permission(OWNER, REPO, "mallory") == "none"  # GitHub: 404
        assert reader.permission(OWNER, REPO, "nobody-at-all") == "none"  # 404 on both


def test_a_token_that_may_not_ask_is_refused_not_answered_none(forge: StandinForge) -> None:
    forge.set_permission(OWNER, REPO, "carol", "write")
    forge.set_permission(OWNER, REPO, MIRROR_LOGIN, "read")
    with closing(client(forge)) as reader:
        with pytest.raises(WriteRefused) as refused:
            reader.permission(OWNER, REPO, "carol")
        assert refused.value.status == 403
        assert reader.comments_since(OWNER, REPO, None) == []  # the forge is not stopped


def test_checks_from_commit_statuses_keep_the_latest_of_each_context(forge: StandinForge) -> None:
    sha = "a1" * 20
    forge.set_status(OWNER, REPO, sha, "ci/tests", "success", "all passed")
    forge.set_status(OWNER, REPO, sha, "ci/tests", "failure", "3 failed", "http://ci/1")
    forge.set_status(OWNER, REPO, sha, "ci/lint", "success")
    forge.set_status(OWNER, REPO, sha, "ci/build", "pending", "building")
    forge.set_status(OWNER, REPO, sha, "ci/docs", "error", "no docs")
    if forge.flavour == "gitea":  # warning passed with remarks; skipped ran nothing
        forge.set_status(OWNER, REPO, sha, "ci/style", "warning", "2 warnings")
        forge.set_status(OWNER, REPO, sha, "ci/e2e", "skipped")
    with closing(client(forge)) as reader:
        checks = {c.name: c for c in reader.checks(OWNER, REPO, sha)}
    states = {name: c.state for name, c in checks.items()}
    expected = {"ci/tests": "failed", "ci/lint": "passed", "ci/build": "pending"}
    expected |= {"ci/docs": "failed"}
    if forge.flavour == "gitea":
        expected |= {"ci/style": "passed", "ci/e2e": "passed"}
    assert states == expected
    assert (checks["ci/tests"].summary, checks["ci/tests"].url) == ("3 failed", "http://ci/1")
    assert (checks["ci/lint"].summary, checks["ci/lint"].url) == ("", None)
    pages = [r for r in forge.requests if r.path.endswith(f"/commits/{sha}/status")]
    assert len(pages) >= 2  # the combined status pages too


def test_a_commit_without_checks_has_none_and_a_branch_is_its_head(forge: StandinForge) -> None:
    forge.seed_git(OWNER, REPO, {"README.md": "hello\n"})
    head = forge.seed_git(OWNER, REPO, {"app.py": "print(1)\n"}, branch=BRANCH)
    with closing(client(forge)) as reader:
        assert reader.checks(OWNER, REPO, "b2" * 20) == []  # Gitea: `statuses` null
        forge.set_status(OWNER, REPO, head, "ci/tests", "failure", "1 failed")
        (by_branch,) = reader.checks(OWNER, REPO, BRANCH)  # tireless%2F1 in the path
    assert (by_branch.name, by_branch.state) == ("ci/tests", "failed")


def test_github_check_runs_pass_fail_or_wait_by_their_conclusion(github: StandinForge) -> None:
    sha = "c3" * 20
    runs = {
        "passed": ["success", "neutral", "skipped"],
        "failed": [
            "failure",
            "timed_out",
            "startup_failure",
            "cancelled",
            "action_required",
            "stale",
        ],
    }
    for state, conclusions in runs.items():
        for conclusion in conclusions:
            github.set_check_run(OWNER, REPO, sha, f"{state}-{conclusion}", "completed", conclusion)
    github.set_check_run(OWNER, REPO, sha, "queued", "queued")
    github.set_check_run(OWNER, REPO, sha, "running", "in_progress")
    github.set_check_run(OWNER, REPO, sha, "rerun", "completed", "failure", "Tests", "1 failed")
    github.set_check_run(
        OWNER, REPO, sha, "rerun", "completed", "success", "Tests", "all passed", "http://ci/9"
    )
    github.set_status(OWNER, REPO, sha, "legacy/ci", "failure", "broken")
    with closing(client(github)) as reader:
        checks = {c.name: c for c in reader.checks(OWNER, REPO, sha)}
    for state, conclusions in runs.items():
        for conclusion in conclusions:
            assert checks[f"{state}-{conclusion}"].state == state, conclusion
    assert (checks["queued"].state, checks["running"].state) == ("pending", "pending")
    rerun = checks["rerun"]  # the latest run of a name
    assert (rerun.state, rerun.summary, rerun.url) == (
        "passed",
        "Tests\n\nall passed",
        "http://ci/9",
    )
    assert checks["legacy/ci"].state == "failed"  # a commit status beside the runs
    assert len(checks) == 13
    pages = [r for r in github.requests if r.path.endswith("/check-runs")]
    assert len(pages) == 6  # 12 runs, 2 a page


def test_a_reaction_added_twice_is_there_once(forge: StandinForge) -> None:
    asked = forge.add_comment_as(OWNER, REPO, 2, "carol", "/tireless revise rename it")
    with closing(client(forge)) as reader:
        reader.add_reaction(OWNER, REPO, asked, "+1")
        reader.add_reaction(OWNER, REPO, asked, "+1")
    assert forge.reactions_of(OWNER, REPO, asked) == [(MIRROR_LOGIN, "+1")]
    url = api(forge, f"issues/comments/{asked}/reactions")
    with httpx.Client(base_url=forge.url, headers={"Authorization": f"token {TOKEN}"}) as http:
        assert http.post(url, json={"content": "+1"}).status_code == 200  # there already
        assert http.post(url, json={"content": "eyes"}).status_code == 201


def test_an_unknown_reaction_is_refused_in_each_forges_words(forge: StandinForge) -> None:
    asked = forge.add_comment_as(OWNER, REPO, 1, "carol", "/tireless stop")
    with closing(client(forge)) as reader, pytest.raises(WriteRefused) as refused:
        reader.add_reaction(OWNER, REPO, asked, "thumbsup")
    # Gitea: ErrForbiddenIssueReaction (routers/api/v1/repo/issue_reaction.go); GitHub: 422.
    assert refused.value.status == (403 if forge.flavour == "gitea" else 422)
    assert forge.reactions_of(OWNER, REPO, asked) == []


def test_a_review_or_comment_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(BadResponse, match="not a review state"):
        review({"id": 1, "state": "LGTM", "body": ""}, "GET reviews", GITEA_REVIEW_STATES)
    with pytest.raises(BadResponse, match="ends in a number"):
        note({"id": 2, "issue_url": "", "pull_request_url": "", "body": "x"}, "GET comments")
    with pytest.raises(BadResponse, match="created_at"):
        note({"id": 3, "issue_url": "http://f/a/b/issues/4", "body": "x"}, "GET comments")


def test_the_stand_ins_accounts_are_the_forges() -> None:
    assert (conversation.ACCOUNT, conversation.PERSON) == (MIRROR_LOGIN, PERSON)
