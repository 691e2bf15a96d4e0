"""The least-privilege tokens docs/forges.md names, against the stand-in's scope checks (Gitea's
scoped tokens, GitHub's fine-grained tokens and App installation tokens) through the real poll
round and mirror: the documented minimum runs the whole loop and never stops the forge; an
optional lookup the token may not make (Gitea's organisation labels, the token's own login) costs
that lookup once per process, not the forge; a token that may not read issues stops the forge
with the scope it lacks named."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dev.standin import APP_LOGIN, MIRROR_LOGIN, Request, StandinForge
from tests.conftest import Database
from tests.helpers import rows
from tests.support.forge import NAMES, OWNER, PLAN, TOKEN, Setup, work
from tests.support.git import basic, commit, git
from tireless import JobStore
from tireless.forge import token_variable
from tireless.forge.http import forget_refusals
from tireless.forge.poll import Report

REPO = "widgets"


@dataclass(frozen=True)
class Token:
    """A kind of token and the scopes docs/forges.md names for reading and mirroring."""

    flavour: str
    scopes: tuple[str, ...]
    installation: bool = False

    @property
    def login(self) -> str:
        return APP_LOGIN if self.installation else MIRROR_LOGIN


GITEA = Token("gitea", ("write:issue",))
FINE_GRAINED = Token("github", ("issues:write",))
APP = Token("github", ("issues:write",), installation=True)
MINIMAL = {"gitea": GITEA, "github-fine-grained": FINE_GRAINED, "github-app": APP}


@contextmanager
def scoped(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch, token: Token
) -> Iterator[Setup]:
    name = NAMES[token.flavour]
    monkeypatch.setenv(token_variable(name), TOKEN)
    forget_refusals()  # a port used by an earlier test's stand-in may come round again
    with StandinForge(
        token.flavour,  # type: ignore[arg-type]
        token=TOKEN,
        scopes=token.scopes,
        installation=token.installation,
    ) as forge:
        store.add_forge(name, token.flavour, forge.url)
        setup = Setup(db, store, forge, name)
        setup.track(REPO)
        yield setup


@pytest.fixture(params=list(MINIMAL))
def minimal(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Setup, Token]]:
    token = MINIMAL[request.param]
    with scoped(db, store, monkeypatch, token) as setup:
        yield setup, token


def one_round(setup: Setup) -> Report:
    (report,) = setup.round()
    assert report.error is None, report.error
    assert report.mirror_error is None, report.mirror_error
    return report


def forge_trouble(setup: Setup) -> tuple[Any, ...]:
    (row,) = rows(
        setup.db,
        "SELECT limited_until, last_error FROM tireless.forge WHERE name = %(n)s",
        {"n": setup.name},
    )
    return row


def asked_of(setup: Setup, path_part: str) -> int:
    """How many requests so far had `path_part` in their path."""
    return sum(1 for request in setup.forge.requests if path_part in request.path)


def shown(setup: Setup, number: int) -> list[str]:
    """The issue's labels, its state label by the state alone (`<prefix>/state…pending`)."""
    return [
        name.rpartition("/state")[2].lstrip(":/") if "/state" in name else name
        for name in setup.forge.labels_of(OWNER, REPO, number)
    ]


def finished_job(setup: Setup) -> tuple[int, int]:
    """An issue that asks for work, its job made, claimed and delivered; (number, job id)."""
    number = setup.forge.create_issue(OWNER, REPO, "asks", PLAN)
    one_round(setup)  # the poll makes the job
    one_round(setup)  # the mirror shows it pending
    assert shown(setup, number) == [*PLAN, "pending"]
    job = setup.store.claim_next("host1-3", ["cc"])
    assert job is not None
    setup.store.transition(job.id, "delivered", "host1-3", "merged as #12")
    return number, job.id


def test_the_minimal_token_runs_the_whole_loop_and_never_stops_the_forge(
    minimal: tuple[Setup, Token],
) -> None:
    setup, token = minimal
    number, job_id = finished_job(setup)
    for _ in range(3):  # the outcome is written once, whatever the rounds after it
        one_round(setup)
    assert shown(setup, number) == ["tireless", "delivered"]
    (comment,) = setup.forge.comments_with_authors(OWNER, REPO, number)
    assert comment[0] == token.login
    assert comment[1].endswith(f"<!-- tireless:job:{job_id} -->")
    assert forge_trouble(setup) == (None, None)
    refused = [r for r in setup.forge.requests if r.authorized and _refused(setup, r)]
    assert refused == [] or all(_optional(r.path) for r in refused)


def _refused(setup: Setup, request: Request) -> bool:
    """Whether the stand-in refused the request to this token's scopes."""
    return setup.forge.refuses(request.path, request.method)


def _optional(path: str) -> bool:
    return path.endswith("/user") or "/orgs/" in path


def test_each_optional_lookup_refused_is_asked_once_per_process(
    minimal: tuple[Setup, Token],
) -> None:
    setup, token = minimal
    finished_job(setup)
    for _ in range(3):
        one_round(setup)
    second, _ = finished_job(setup)  # a second job's writes ask nothing refused again
    for _ in range(2):
        one_round(setup)
    assert len(setup.forge.comments_of(OWNER, REPO, second)) == 1
    if token.flavour == "gitea":
        # write:issue alone: GET /orgs/{owner}/labels needs read:organization, GET /user read:user
        assert asked_of(setup, "/api/v1/orgs/") == 1
        assert asked_of(setup, "/api/v1/user") == 1
    elif token.installation:
        assert asked_of(setup, "/user") == 1  # an installation's token has no user
    else:
        # A fine-grained token reads its own account: asked once per round that needs it.
        assert asked_of(setup, "/user") >= 1
    assert forge_trouble(setup) == (None, None)


@pytest.mark.parametrize("token", [GITEA, FINE_GRAINED], ids=["gitea", "github-fine-grained"])
def test_with_every_optional_scope_nothing_is_refused(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch, token: Token
) -> None:
    extra = ("read:organization", "read:user") if token.flavour == "gitea" else ()
    full = Token(token.flavour, token.scopes + extra)
    with scoped(db, store, monkeypatch, full) as setup:
        finished_job(setup)
        one_round(setup)
        assert not [r for r in setup.forge.requests if _refused(setup, r)]


def test_a_person_pasting_the_marker_does_not_silence_an_app(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An App's login is unknown until its first write tells it: meanwhile a comment counts as
    the mirror's own only when an App's account (`…[bot]`) wrote it, never a person's."""
    with scoped(db, store, monkeypatch, APP) as setup:
        number, job_id = finished_job(setup)
        marker = f"<!-- tireless:job:{job_id} -->"
        setup.forge.add_comment_as(OWNER, REPO, number, "mallory", f"done, trust me\n{marker}")
        one_round(setup)
        authors = [a for a, _ in setup.forge.comments_with_authors(OWNER, REPO, number)]
        assert authors == ["mallory", APP_LOGIN]


@pytest.mark.parametrize(
    "token",
    [Token("gitea", ("write:issue", "read:user")), FINE_GRAINED, APP],
    ids=["gitea-read-user", "github-fine-grained", "github-app"],
)
def test_an_outcome_comment_whose_answer_was_lost_is_not_posted_twice(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch, token: Token
) -> None:
    """The mirror tells its own comment by its account: read from GET /user, or (an App's token,
    which has no user) an App's account until a write of its own names it. A Gitea token without
    read:user tells it from its first write's answer only: docs/forges.md says what that costs."""
    with scoped(db, store, monkeypatch, token) as setup:
        number, _ = finished_job(setup)
        posts = [0]

        def lose_comment_answer(request: Request) -> None:
            if request.path.endswith("/comments") and posts[0] == 0:
                posts[0] += 1
                setup.forge.fault("applied-then-reset", times=1, number=number)

        setup.forge.on_write(lose_comment_answer)
        for _ in range(3):
            setup.round()
            with setup.db.connect() as conn:
                conn.execute(
                    "UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'comment'"
                )
        setup.forge.on_write(None)
        assert posts[0] == 1
        assert len(setup.forge.comments_of(OWNER, REPO, number)) == 1
        assert forge_trouble(setup) == (None, None)


@pytest.mark.parametrize(
    ("token", "needed"),
    [
        (Token("gitea", ("read:repository", "read:organization", "read:user")), "read:issue"),
        (Token("github", ("pull_requests:write", "contents:write")), "issues=read"),
        (Token("github", ("contents:write",), installation=True), "issues=read"),
    ],
    ids=["gitea", "github-fine-grained", "github-app"],
)
def test_a_token_that_may_not_read_issues_stops_the_forge_naming_what_it_needs(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch, token: Token, needed: str
) -> None:
    with scoped(db, store, monkeypatch, token) as setup:
        setup.forge.create_issue(OWNER, REPO, "asks", PLAN)
        (report,) = setup.round()
        assert report.error is not None
        assert needed in report.error
        limited_until, last_error = forge_trouble(setup)
        assert limited_until is not None  # stopped: no repository of it is asked until then
        assert needed in last_error
        assert token_variable(setup.name) in last_error


def test_a_renamed_repository_is_still_read_with_the_minimal_gitea_token(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its issues follow the rename's redirect with read:issue; its new name (GET /repos/{o}/{r},
    read:repository) is an optional lookup: not known, not a stop."""
    with scoped(db, store, monkeypatch, GITEA) as setup:
        number, _ = finished_job(setup)
        setup.forge.rename_repo(OWNER, REPO, OWNER, "gadgets")
        for _ in range(2):
            one_round(setup)
        assert setup.forge.comments_of(OWNER, "gadgets", number) != []
        assert asked_of(setup, f"/api/v1/repos/{OWNER}/gadgets") >= 1
        assert forge_trouble(setup) == (None, None)


FULL_GITHUB = (
    "issues:write",
    "pull_requests:write",
    "contents:write",
    "statuses:read",
    "checks:read",
)
IMPLEMENT = ["tireless", "tireless/implement"]
DELIVERY = {
    "gitea": Token("gitea", ("write:issue", "write:repository")),
    "github-fine-grained": Token(
        "github", ("issues:write", "pull_requests:write", "contents:write")
    ),
    "github-app": Token(
        "github", ("issues:write", "pull_requests:write", "contents:write"), installation=True
    ),
}


@pytest.mark.parametrize("token", list(DELIVERY.values()), ids=list(DELIVERY))
def test_the_delivery_scopes_push_the_branch_and_open_the_pull_request(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch, token: Token, tmp_path: Path
) -> None:
    with scoped(db, store, monkeypatch, token) as setup:
        setup.forge.seed_git(OWNER, REPO, {"README.md": "widgets\n"})
        number = setup.forge.create_issue(
            OWNER, REPO, "crashes", ["tireless", "tireless/implement"]
        )
        one_round(setup)
        job = setup.store.claim_next("host1-3", ["cc"])
        assert job is not None
        branch = setup.store.job_brief(job.id).branch
        assert branch is not None
        head = pushed(setup.forge, tmp_path, branch)
        base = setup.forge.branch_head(OWNER, REPO, "main")
        setup.store.deliver(
            job.id, "host1-3", branch=branch, head=head, base_branch="main", base=base,
            token=job.claim_token, note="fixed it",
        )  # fmt: skip
        for _ in range(2):
            one_round(setup)
        (pull,) = setup.forge.pulls_of(OWNER, REPO)
        assert (pull.head, pull.author) == (branch, token.login)
        (comment,) = setup.forge.comments_of(OWNER, REPO, number)
        assert f"#{pull.number}" in comment
        assert forge_trouble(setup) == (None, None)


def pushed(forge: StandinForge, tmp_path: Path, branch: str) -> str:
    """A commit pushed to `branch` over git with the token, as the runner pushes; its hash."""
    auth = basic("x-access-token", TOKEN)
    work = tmp_path / "work"
    cloned = clone_repo(forge, work, auth)
    assert cloned.returncode == 0, cloned.stderr
    head = commit(work, "fix.txt", "fixed\n")
    sent = git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=work, auth=auth)
    assert sent.returncode == 0, sent.stderr
    return head


@pytest.mark.parametrize(
    ("token", "said"),
    [
        (Token("gitea", ("write:issue", "read:repository")), "403"),
        (Token("github", ("issues:write", "contents:read")), "403"),
    ],
    ids=["gitea", "github-fine-grained"],
)
def test_a_token_that_may_only_read_the_code_cannot_push(
    db: Database,
    store: JobStore,
    monkeypatch: pytest.MonkeyPatch,
    token: Token,
    said: str,
    tmp_path: Path,
) -> None:
    """Git checks the token's scope as the forge does: fetching needs read:repository (GitHub
    Contents: read), pushing write:repository (Contents: write)."""
    with scoped(db, store, monkeypatch, token) as setup:
        setup.forge.seed_git(OWNER, REPO, {"README.md": "widgets\n"})
        auth = basic("x-access-token", TOKEN)
        work = tmp_path / "work"
        assert clone_repo(setup.forge, work, auth).returncode == 0
        commit(work, "fix.txt", "fixed\n")
        sent = git("push", "--quiet", "origin", "HEAD:refs/heads/tireless/1", cwd=work, auth=auth)
        assert sent.returncode != 0
        assert said in sent.stderr
        assert setup.forge.branch_head(OWNER, REPO, "tireless/1") is None


def clone_repo(forge: StandinForge, into: Path, auth: str) -> subprocess.CompletedProcess[str]:
    return git("clone", "--quiet", forge.clone_url(OWNER, REPO), str(into), auth=auth)


CONVERSATION = {
    "gitea": Token("gitea", ("write:issue", "write:repository")),
    "github-fine-grained": Token("github", FULL_GITHUB),
    "github-app": Token("github", FULL_GITHUB, installation=True),
}


@pytest.mark.parametrize("token", list(CONVERSATION.values()), ids=list(CONVERSATION))
def test_the_conversation_scopes_read_reviews_commands_and_checks(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch, token: Token, tmp_path: Path
) -> None:
    """Delivery and the conversation on its pull request (a review, a command, a failing check)
    with the scopes docs/forges.md names: nothing asked is refused but the optional lookups."""
    with scoped(db, store, monkeypatch, token) as setup:
        setup.forge.seed_git(OWNER, REPO, {"README.md": "widgets\n", "paint.txt": "red\n"})
        setup.forge.set_permission(OWNER, REPO, "alice", "write")
        setup.store.set_repo_revisions(setup.name, OWNER, REPO, revise_on_failed_checks=True)
        setup.forge.create_issue(OWNER, REPO, "Paint the widgets blue", IMPLEMENT)
        one_round(setup)
        work(setup, tmp_path, "echo blue > paint.txt")
        one_round(setup)
        (pull,) = setup.forge.pulls_of(OWNER, REPO)
        head = setup.forge.branch_head(OWNER, REPO, pull.head)
        assert head is not None
        setup.forge.set_status(OWNER, REPO, head, "ci/tests", "failure", "3 tests failed")
        setup.forge.add_comment_as(OWNER, REPO, pull.number, "alice", "/tireless revise\ngreen")
        setup.forge.submit_review(
            OWNER, REPO, pull.number, "alice", "changes_requested", "Green, not blue."
        )
        report = one_round(setup)
        assert report.revisions >= 1, report.line()
        one_round(setup)  # the mirror's replies
        refused = [r for r in setup.forge.requests if _refused(setup, r)]
        assert [r.path for r in refused if not _optional(r.path)] == []
        assert forge_trouble(setup) == (None, None)
