"""`tireless forge check`, against the test database and the stand-in forge: a line
per capability, exit 1 when something tireless needs is missing and the line naming the scope or
permission the forge asked for, nothing written without --write, and what --write makes cleaned
up again."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from dev.standin import Flavour, StandinForge
from tests.conftest import Database
from tests.helpers import cli_json
from tests.helpers import tireless_cli as cli
from tests.support.roles import Login

TOKEN = "tok-check-4f1a9e0c"
ENV = {"TIRELESS_TOKEN_FORGE": TOKEN}
GITEA_FULL = ("write:issue", "write:repository", "read:user", "read:organization")
"""The least a Gitea/Forgejo token needs for everything `forge check --write --deliver` tries."""
GITHUB_FULL = ("issues:write", "pull_requests:write", "contents:write")
"""The same for a GitHub fine-grained token (metadata:read every such token has)."""


@contextmanager
def registered(
    db: Database, flavour: Flavour, *, scopes: Iterable[str] | None = None, **options: Any
) -> Iterator[StandinForge]:
    """A stand-in forge registered as `forge`, with acme/widgets tracked and a git history."""
    with StandinForge(flavour, token=TOKEN, scopes=scopes, **options) as standin:
        standin.seed_git("acme", "widgets", {"README.md": "hello\n"})
        standin.create_issue("acme", "widgets", "an issue", ["tireless"])
        cli_json(db.url, "forge", "add", "forge", "--kind", flavour, "--url", standin.url)
        cli_json(db.url, "track", "forge", "acme", "widgets")
        yield standin


def lines_of(output: str) -> dict[str, str]:
    """{capability: its line} of the text output (the last line is the verdict)."""
    found = {}
    for line in output.splitlines()[:-1]:
        capability = line[6:].partition(": ")[0]
        found[capability] = line
    return found


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_a_full_token_passes_every_check_with_a_line_each_and_writes_nothing(
    db: Database, flavour: Flavour
) -> None:
    with registered(db, flavour) as forge:
        result = cli(db.url, "forge", "check", "forge", "--deliver", **ENV)
        assert result.returncode == 0, result.stdout + result.stderr
        lines = lines_of(result.stdout)
        needed = [
            "api", "token", "identity", "list issues acme/widgets", "read labels acme/widgets",
            "read comments acme/widgets", "git read acme/widgets",
            "git push scratch ref acme/widgets", "delete scratch ref acme/widgets",
            "read pull requests acme/widgets", "pull request permission acme/widgets",
        ]  # fmt: skip
        refs = all_refs(forge)
        for capability in needed:
            assert lines[capability].startswith("ok    "), lines[capability]
        assert "account tireless-bot" in lines["identity"]
        if flavour == "github":  # a classic token: its scopes are in X-OAuth-Scopes
            assert lines["scopes"] == "ok    scopes: a classic token with the scopes: repo"
        assert "main at " in lines["git read acme/widgets"]
        assert lines["webhook secret"].startswith("warn  ")  # optional: exit 0 all the same
        assert "TIRELESS_WEBHOOK_SECRET_FORGE" in lines["webhook secret"]
        assert (
            result.stdout.splitlines()[-1]
            == "forge forge: everything tireless needs works (1 warning)"
        )
        assert forge.writes() == []
        assert {r.method for r in forge.requests} == {"GET"}
        # git: a push of a scratch ref of tireless's own, deleted again; nothing else changed
        assert "refs/tireless/check/" in lines["git push scratch ref acme/widgets"]
        assert any(r.path.endswith("/git-receive-pack") for r in forge.git_requests)
        assert (
            all_refs(forge)
            == refs
            == [f"{forge.branch_head('acme', 'widgets', 'main')} refs/heads/main"]
        )


def all_refs(forge: StandinForge) -> list[str]:
    """Every ref of the stand-in's acme/widgets and its commit."""
    listed = subprocess.run(
        ["git", f"--git-dir={forge.git.path('acme', 'widgets')}", "for-each-ref",
         "--format=%(objectname) %(refname)"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return listed.splitlines()


@pytest.mark.parametrize(
    ("flavour", "scopes", "fix"),
    [
        ("gitea", ("read:issue", "read:repository", "read:user"), "the scope write:repository"),
        ("github", ("issues:read", "pull_requests:read", "contents:read"),
         "the permission contents=write"),
    ],
)  # fmt: skip
def test_a_read_only_token_fails_deliver_at_the_push_naming_the_fix(
    db: Database, flavour: Flavour, scopes: tuple[str, ...], fix: str
) -> None:
    with registered(db, flavour, scopes=scopes) as forge:
        refs = all_refs(forge)
        result = cli(db.url, "forge", "check", "forge", "--deliver", **ENV)
        assert all_refs(forge) == refs
    assert result.returncode == 1, result.stdout
    lines = lines_of(result.stdout)
    assert lines["git read acme/widgets"].startswith("ok    ")
    pushed = lines["git push scratch ref acme/widgets"]
    assert pushed.startswith("FAIL  git push scratch ref acme/widgets: ")
    assert "403" in pushed
    assert f"-- fix: give the token {fix}" in pushed
    assert "delete scratch ref acme/widgets" not in lines


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_an_account_that_may_not_write_the_repository_fails_the_pull_request_permission(
    db: Database, flavour: Flavour
) -> None:
    with registered(db, flavour) as forge:
        forge.repo_permissions = {"admin": False, "push": False, "pull": True}
        result = cli(db.url, "forge", "check", "forge", "--deliver", **ENV)
    assert result.returncode == 1, result.stdout
    assert lines_of(result.stdout)["pull request permission acme/widgets"] == (
        "FAIL  pull request permission acme/widgets: the token's account may not write"
        " acme/widgets (its permissions: pull): it can push no branch to open a pull request"
        " from -- fix: give the account write access to acme/widgets (a collaborator with"
        " write, or a team that has it)"
    )


def test_a_gitea_repository_with_pull_requests_off_fails_naming_its_settings(
    db: Database,
) -> None:
    with registered(db, "gitea") as forge:
        forge.has_pull_requests = False
        result = cli(db.url, "forge", "check", "forge", "--deliver", **ENV)
    assert result.returncode == 1, result.stdout
    line = lines_of(result.stdout)["pull request permission acme/widgets"]
    assert line.startswith("FAIL  pull request permission acme/widgets: the repository has pull")
    assert line.endswith(f"-- fix: turn them on in the repository's settings ({forge.url}"
                         "/acme/widgets/settings)")  # fmt: skip


def test_a_refused_token_exits_1_and_names_its_variable(db: Database) -> None:
    with registered(db, "gitea"):
        result = cli(db.url, "forge", "check", "forge", TIRELESS_TOKEN_FORGE="wrong")
    assert result.returncode == 1
    token = lines_of(result.stdout)["token"]
    assert token.startswith("FAIL  token: the forge refused the token in TIRELESS_TOKEN_FORGE")
    assert "HTTP 401" in token
    assert "wrong" not in result.stdout + result.stderr


def test_no_token_at_all_is_a_failure_naming_the_variable(db: Database) -> None:
    with registered(db, "github"):
        result = cli(db.url, "forge", "check", "forge")
    assert result.returncode == 1
    assert lines_of(result.stdout)["token"].startswith(
        "FAIL  token: TIRELESS_TOKEN_FORGE is not set"
    )


def test_json_gives_the_same_findings(db: Database) -> None:
    with registered(db, "gitea"):
        text = cli(db.url, "forge", "check", "forge", **ENV).stdout
        result = cli(db.url, "forge", "check", "forge", "--json", **ENV)
    assert result.returncode == 0, result.stderr
    findings = json.loads(result.stdout)
    assert [set(f) for f in findings] == [{"capability", "ok", "required", "detail", "fix"}] * len(
        findings
    )
    assert [f["capability"] for f in findings] == list(lines_of(text))
    issues = next(f for f in findings if f["capability"] == "list issues acme/widgets")
    assert (issues["ok"], issues["required"], issues["fix"]) == (True, True, None)


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_write_makes_a_label_an_issue_and_a_comment_and_cleans_them_up(
    db: Database, flavour: Flavour
) -> None:
    with registered(db, flavour) as forge:
        result = cli(db.url, "forge", "check", "forge", "--write", "--deliver", **ENV)
        assert result.returncode == 0, result.stdout + result.stderr
        lines = lines_of(result.stdout)
        for capability in (
            "create label", "open issue", "label an issue", "unlabel an issue", "comment",
            "close issue", "delete label", "git push", "open pull request",
            "close pull request", "delete branch",
        ):  # fmt: skip
            assert lines[f"{capability} acme/widgets"].startswith("ok    "), lines
        scratch = [i for i in forge.issues_of("acme", "widgets") if i.number != 1]
        issue, pull = sorted(scratch, key=lambda i: i.pull_request)
        assert issue.title.startswith("tireless forge check: a scratch issue")
        assert (issue.state, issue.labels) == ("closed", [])
        assert forge.comments_of("acme", "widgets", issue.number) == [
            "tireless forge check: a comment."
        ]
        assert (pull.pull_request, pull.state) == (True, "closed")
        assert not [n for n in forge.repo_labels("acme", "widgets") if "check" in n]
        assert list(forge.branches("acme", "widgets")) == ["main"]


@pytest.mark.parametrize(
    ("scopes", "named", "exit_code"),
    [
        (("read:issue", "write:repository", "read:user", "read:organization"), "write:issue", 1),
        (("write:repository", "read:user", "read:organization"), "read:issue", 1),
        (
            ("write:issue", "read:repository", "read:user", "read:organization"),
            "write:repository",
            1,
        ),
        (("write:issue", "read:user", "read:organization"), "read:repository", 1),
        (("write:issue", "write:repository", "read:organization"), "read:user", 0),
        (("write:issue", "write:repository", "read:user"), "read:organization", 0),
    ],
)
def test_a_gitea_token_missing_a_scope_is_told_that_scope(
    db: Database, scopes: tuple[str, ...], named: str, exit_code: int
) -> None:
    with registered(db, "gitea", scopes=scopes):
        result = cli(db.url, "forge", "check", "forge", "--write", "--deliver", **ENV)
    assert result.returncode == exit_code, result.stdout
    refused = [line for line in result.stdout.splitlines() if line[:4] in ("FAIL", "warn")]
    assert any(f"give the token the scope {named}" in line for line in refused), result.stdout
    category = named.partition(":")[2]  # no read:issue, no write:issue either
    assert all("webhook" in line or f":{category}" in line for line in refused), refused


@pytest.mark.parametrize(
    ("scopes", "named"),
    [
        (("issues:read", "pull_requests:write", "contents:write"), "issues=write"),
        (("pull_requests:write", "contents:write"), "issues=read"),
        (("issues:write", "pull_requests:read", "contents:write"), "pull_requests=write"),
        (("issues:write", "contents:write"), "pull_requests=read"),
        (("issues:write", "pull_requests:write", "contents:read"), "contents=write"),
        (("issues:write", "pull_requests:write"), "contents=read"),
    ],
)
def test_a_github_fine_grained_token_missing_a_permission_is_told_that_permission(
    db: Database, scopes: tuple[str, ...], named: str
) -> None:
    with registered(db, "github", scopes=scopes):
        result = cli(db.url, "forge", "check", "forge", "--write", "--deliver", **ENV)
    assert result.returncode == 1, result.stdout
    refused = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert refused, result.stdout
    assert any(f"permission {named}" in line for line in refused), result.stdout
    category = named.partition("=")[0]  # no issues=read, no issues=write either
    assert all(f"permission {category}=" in line for line in refused), refused


def test_a_github_classic_token_without_the_repo_scope_is_told_to_add_it(db: Database) -> None:
    with registered(db, "github") as forge:
        forge.oauth_scopes = "read:user, gist"
        result = cli(db.url, "forge", "check", "forge", **ENV)
    assert result.returncode == 1, result.stdout
    assert lines_of(result.stdout)["scopes"] == (
        "FAIL  scopes: a classic token with the scopes: gist, read:user"
        " -- fix: give it the scope repo (public_repo: public ones only)"
    )


def test_a_github_app_installation_token_passes_without_an_account(db: Database) -> None:
    with registered(db, "github", scopes=GITHUB_FULL, installation=True):
        result = cli(db.url, "forge", "check", "forge", "--write", "--deliver", **ENV)
    assert result.returncode == 0, result.stdout
    assert "a GitHub App installation token" in lines_of(result.stdout)["identity"]


def test_the_least_documented_scopes_pass(db: Database) -> None:
    with registered(db, "gitea", scopes=GITEA_FULL):
        gitea = cli(db.url, "forge", "check", "forge", "--write", "--deliver", **ENV)
    assert gitea.returncode == 0, gitea.stdout
    warned = [line for line in gitea.stdout.splitlines() if line.startswith("warn")]
    assert [line.partition(":")[0] for line in warned] == ["warn  webhook secret"]


def test_an_unknown_forge_or_a_bad_repo_is_a_usage_error(db: Database) -> None:
    unknown = cli(db.url, "forge", "check", "nowhere")
    assert unknown.returncode == 2
    assert "no forge named 'nowhere'" in unknown.stderr
    with registered(db, "gitea"):
        bad = cli(db.url, "forge", "check", "forge", "--repo", "acme", **ENV)
    assert bad.returncode == 2
    assert "--repo takes OWNER/REPO, got 'acme'" in bad.stderr


def test_no_tracked_repository_and_no_repo_fails_saying_what_to_track(db: Database) -> None:
    with StandinForge("gitea", token=TOKEN) as standin:
        cli_json(db.url, "forge", "add", "forge", "--kind", "gitea", "--url", standin.url)
        result = cli(db.url, "forge", "check", "forge", **ENV)
        other = cli(db.url, "forge", "check", "forge", "--repo", "acme/missing", **ENV)
    assert result.returncode == 1
    assert "tireless track forge OWNER REPO" in lines_of(result.stdout)["repositories"]
    assert other.returncode == 1
    assert "no such repository, or the token cannot see it" in other.stdout


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_an_admin_login_tries_git_at_the_stores_clone_url_and_names_its_token_page(
    db: Database,
    login: Login,
    flavour: Flavour,
) -> None:
    """As tireless_admin, the role the forge commands run as: the clone URL git is tried at, and
    the web root the fixes name, are the store's (tireless.forge_clone_url, forge_web_root)."""
    admin = login("tireless_admin")
    with registered(db, flavour) as forge:
        kind_and_url = {"kind": flavour, "base_url": forge.url}
        clone_url = db.scalar(
            "SELECT tireless.forge_clone_url(%(kind)s, %(base_url)s, 'acme', 'widgets')",
            kind_and_url,
        )
        web_root = db.scalar("SELECT tireless.forge_web_root(%(kind)s, %(base_url)s)", kind_and_url)
        found = cli(admin, "forge", "check", "forge", "--deliver", "--json", **ENV)
        refused = cli(admin, "forge", "check", "forge", "--json", TIRELESS_TOKEN_FORGE="wrong")
    assert found.returncode == 0, found.stdout + found.stderr
    git_read = next(
        f for f in json.loads(found.stdout) if f["capability"] == "git read acme/widgets"
    )
    assert git_read["ok"], git_read
    assert git_read["detail"].startswith(f"{clone_url}: main at ")
    assert refused.returncode == 1, refused.stderr
    token = next(f for f in json.loads(refused.stdout) if f["capability"] == "token")
    page = (
        "/user/settings/applications" if flavour == "gitea" else "/settings/personal-access-tokens"
    )
    assert token["fix"].endswith(f"make one at {web_root}{page}")
