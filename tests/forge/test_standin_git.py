"""The stand-in forge serves real git at the clone URL the store computes for it: clone, fetch and
push through git's own http-backend with the token as each forge takes it, a 401 with a Basic
challenge without it, and a push to a protected branch refused by git in the forge's words."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.support.git import basic, commit, git

TOKEN = "tok-git-5e2b7c"
USERS = {"gitea": "tireless-bot", "github": "x-access-token"}
"""The Basic username each forge's documentation shows with a token as the password."""


@pytest.fixture(params=["gitea", "github"])
def forge(request: pytest.FixtureRequest) -> Iterator[StandinForge]:
    with StandinForge(request.param, token=TOKEN) as standin:
        standin.seed_git("acme", "widgets", {"README.md": "hello\n"}, commits=2)
        yield standin


def clone(forge: StandinForge, into: Path, auth: str | None) -> subprocess.CompletedProcess[str]:
    return git("clone", "--quiet", forge.clone_url("acme", "widgets"), str(into), auth=auth)


def test_clone_fetch_and_push_work_with_the_token(forge: StandinForge, tmp_path: Path) -> None:
    auth = basic(USERS[forge.flavour], TOKEN)
    work = tmp_path / "work"
    assert clone(forge, work, auth).returncode == 0
    assert (work / "README.md").read_text() == "hello\ncommit 2\n"
    assert git("rev-parse", "HEAD", cwd=work).stdout.strip() == forge.branch_head(
        "acme", "widgets", "main"
    )
    head = commit(work, "fix.txt", "fixed\n")
    pushed = git("push", "--quiet", "origin", "HEAD:refs/heads/tireless/7", cwd=work, auth=auth)
    assert pushed.returncode == 0, pushed.stderr
    assert forge.branch_head("acme", "widgets", "tireless/7") == head
    assert forge.file_at("acme", "widgets", "tireless/7", "fix.txt") == "fixed\n"
    assert [c.subject for c in forge.commits_of("acme", "widgets", "tireless/7")] == [
        "add fix.txt",
        "seed 2",
        "seed 1",
    ]
    moved = forge.seed_git("acme", "widgets", {"NEWS": "more\n"})
    fetched = git("fetch", "--quiet", "origin", cwd=work, auth=auth)
    assert fetched.returncode == 0, fetched.stderr
    assert git("rev-parse", "origin/main", cwd=work).stdout.strip() == moved
    assert all(r.authorized for r in forge.git_requests)
    assert forge.writes() == []  # git is not counted among the API's writes


def test_a_wrong_or_missing_token_gets_401_with_a_basic_challenge(
    forge: StandinForge, tmp_path: Path
) -> None:
    realm = "Gitea" if forge.flavour == "gitea" else "GitHub"
    refs = forge.clone_url("acme", "widgets") + "/info/refs?service=git-upload-pack"
    for headers in ({}, {"Authorization": basic(USERS[forge.flavour], "wrong")}):
        answer = httpx.get(refs, headers=headers)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == f'Basic realm="{realm}"'
    anonymous = clone(forge, tmp_path / "anonymous", None)
    assert anonymous.returncode != 0
    assert "could not read Username" in anonymous.stderr  # the challenge made git ask
    askpass = tmp_path / "askpass"
    askpass.write_text("#!/bin/sh\necho wrong\n")
    askpass.chmod(0o700)
    url = forge.clone_url("acme", "widgets")
    wrong = git("clone", url, str(tmp_path / "wrong"), env={"GIT_ASKPASS": str(askpass)})
    assert wrong.returncode != 0
    assert "Authentication failed" in wrong.stderr
    assert not any(r.authorized for r in forge.git_requests)


def test_a_push_with_a_wrong_token_changes_nothing(forge: StandinForge, tmp_path: Path) -> None:
    work = tmp_path / "work"
    assert clone(forge, work, basic(USERS[forge.flavour], TOKEN)).returncode == 0
    before = forge.branch_head("acme", "widgets", "main")
    commit(work, "fix.txt", "fixed\n")
    pushed = git("push", "origin", "HEAD:main", cwd=work, auth=basic("x-access-token", "wrong"))
    assert pushed.returncode != 0
    assert "could not read Username" in pushed.stderr  # refused: git would ask for others
    assert forge.branch_head("acme", "widgets", "main") == before
    last = forge.git_requests[-1]
    assert (last.query, last.authorized) == ({"service": "git-receive-pack"}, False)


def test_git_answers_the_challenge_with_its_askpass_program(
    forge: StandinForge, tmp_path: Path
) -> None:
    askpass = tmp_path / "askpass"
    user = USERS[forge.flavour]
    askpass.write_text(f'#!/bin/sh\ncase "$1" in Username*) echo {user};; *) echo {TOKEN};; esac\n')
    askpass.chmod(0o700)
    work = tmp_path / "work"
    cloned = git(
        "clone",
        "--quiet",
        forge.clone_url("acme", "widgets"),
        str(work),
        env={"GIT_ASKPASS": str(askpass)},
    )
    assert cloned.returncode == 0, cloned.stderr
    assert [r.authorized for r in forge.git_requests][:2] == [False, True]  # challenged, answered
    assert TOKEN not in (work / ".git" / "config").read_text()  # no token left behind


@pytest.mark.parametrize("password", ["", "x-oauth-basic"])
def test_gitea_takes_the_token_as_the_username_too(tmp_path: Path, password: str) -> None:
    # services/auth/basic.go: an empty password or "x-oauth-basic" makes the username the token.
    with StandinForge("gitea", token=TOKEN) as forge:
        forge.seed_git("acme", "widgets", {"README.md": "hello\n"})
        assert clone(forge, tmp_path / "work", basic(TOKEN, password)).returncode == 0


def test_a_push_to_a_protected_branch_is_refused_in_the_forges_words(
    forge: StandinForge, tmp_path: Path
) -> None:
    auth = basic(USERS[forge.flavour], TOKEN)
    work = tmp_path / "work"
    assert clone(forge, work, auth).returncode == 0
    forge.protect_branch("acme", "widgets", "main")
    before = forge.branch_head("acme", "widgets", "main")
    head = commit(work, "fix.txt", "fixed\n")
    refused = git("push", "origin", "HEAD:main", cwd=work, auth=auth)
    assert refused.returncode != 0
    if forge.flavour == "gitea":
        assert "remote: Gitea: Not allowed to push to protected branch main" in refused.stderr
    else:
        assert "remote: error: GH006: Protected branch update failed for refs/heads/main." in (
            refused.stderr
        )
    assert "[remote rejected] HEAD -> main (pre-receive hook declined)" in refused.stderr
    assert forge.branch_head("acme", "widgets", "main") == before
    elsewhere = git("push", "--quiet", "origin", "HEAD:refs/heads/tireless/7", cwd=work, auth=auth)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert forge.branch_head("acme", "widgets", "tireless/7") == head
    forge.unprotect_branch("acme", "widgets", "main")
    assert git("push", "--quiet", "origin", "HEAD:main", cwd=work, auth=auth).returncode == 0
    assert forge.branch_head("acme", "widgets", "main") == head


def test_a_repository_the_forge_does_not_have_is_not_found(forge: StandinForge) -> None:
    answer = httpx.get(
        forge.clone_url("acme", "nothing") + "/info/refs?service=git-upload-pack",
        headers={"Authorization": basic(USERS[forge.flavour], TOKEN)},
    )
    assert answer.status_code == 404


def test_git_is_served_at_the_clone_url_the_store_computes(
    db: Database, forge: StandinForge
) -> None:
    with db.connect() as conn:
        row = conn.execute(
            "SELECT tireless.forge_clone_url(%s::tireless.forge_kind, %s, 'acme', 'widgets')",
            (forge.flavour, forge.url),
        ).fetchone()
    assert row is not None
    assert row[0] == forge.clone_url("acme", "widgets")
    answer = httpx.get(
        f"{row[0]}/info/refs?service=git-upload-pack",
        headers={"Authorization": basic(USERS[forge.flavour], TOKEN)},
    )
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/x-git-upload-pack-advertisement"
