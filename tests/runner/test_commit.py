"""The commit tireless makes of the agent's work, as a reviewer reads it on the stand-in forge
(tireless.runner.message, tireless.runner.identity): by the forge's account of the token (its
noreply address on GitHub, its own address on Gitea) or `--git-identity`; its subject the issue's
`Fix #N: <title>` or the agent's own; its body the report; trailers for the job and the attempt.
The title and the report are the agent's and the issue's: what lands in the commit is cleaned."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dev.standin import MIRROR_LOGIN, StandinForge
from tests.conftest import Database
from tests.helpers import tireless_cli
from tests.support.forge import OWNER, TOKEN, Setup, one_round
from tireless import JobStore
from tireless.forge import token_variable
from tireless.git import BOT, Identity
from tireless.models import Forge, ForgeKind
from tireless.runner.identity import Identities, account_identity
from tireless.runner.message import BODY_LIMIT, CommitMessage, one_line, paragraphs

REPO = "widgets"
FORGE = "shop"
REPORT = 'printf "Painted the widgets blue.\\n\\nattempt %s\\n" "$TIRELESS_ATTEMPT_ID" > "$TIRELESS_REPORT_FILE"'


@pytest.fixture(params=["gitea", "github"])
def setup(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    monkeypatch.setenv(token_variable(FORGE), TOKEN)
    with StandinForge(request.param, token=TOKEN) as forge:
        store.add_forge(FORGE, request.param, forge.url)
        setup = Setup(db, store, forge, FORGE)
        setup.track(REPO)
        forge.seed_git(OWNER, REPO, {"README.md": "widgets\n", "paint.txt": "red\n"})
        yield setup


def run_job(setup: Setup, tmp_path: Path, script: str, title: str, *flags: str) -> int:
    """An implement issue titled `title`, its job run by `work --once --deliver` with `script`;
    the issue's number."""
    number = setup.forge.create_issue(OWNER, REPO, title, ["tireless", "tireless/implement"])
    one_round(setup)
    result = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
        "--state-dir", str(tmp_path / "state"), *flags, "--", "sh", "-c", script,
        **{token_variable(FORGE): TOKEN},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert setup.jobs(REPO)[number] == ("delivered", None), result.stdout + result.stderr
    return number


def head_commit(setup: Setup, number: int) -> tuple[str, str, str]:
    """The branch's head commit on the forge: its author, its committer, its whole message."""
    shown = subprocess.run(
        ["git", f"--git-dir={setup.forge.git.path(OWNER, REPO)}", "log", "-1",
         "--format=%an <%ae>%x00%cn <%ce>%x00%B", f"refs/heads/tireless/{number}"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    author, committer, message = shown.split("\x00")
    return author, committer, message


def test_the_commit_is_by_the_forges_account_says_the_issue_and_carries_the_report(
    setup: Setup, tmp_path: Path
) -> None:
    number = run_job(setup, tmp_path, f"echo blue > paint.txt; {REPORT}", "Paint the widgets blue")
    author, committer, message = head_commit(setup, number)
    if setup.forge.flavour == "github":  # <id>+<login>@users.noreply.<host>, GET /user's id 2
        assert author == f"{MIRROR_LOGIN} <2+{MIRROR_LOGIN}@users.noreply.127.0.0.1>"
    else:  # Gitea's GET /user answers its own account's address
        assert author == f"{MIRROR_LOGIN} <{MIRROR_LOGIN}@forge.example>"
    assert committer == author
    subject, blank, *body = message.rstrip("\n").split("\n")
    assert (subject, blank) == (f"Fix #{number}: Paint the widgets blue", "")
    attempt_id = body[2].removeprefix("attempt ")
    assert body == [
        "Painted the widgets blue.",
        "",
        f"attempt {attempt_id}",
        "",
        "Tireless-Job: 1",
        f"Tireless-Attempt: {attempt_id}",
    ]
    trailers = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True
    ).stdout
    assert trailers == f"Tireless-Job: 1\nTireless-Attempt: {attempt_id}\n"


def test_git_identity_names_the_author_and_the_agents_own_subject_stands(
    setup: Setup, tmp_path: Path
) -> None:
    script = (
        "git -c user.name=agent -c user.email=agent@example commit -qm 'Paint it blue' --allow-empty || exit 7;"
        " echo blue > paint.txt"
    )
    number = run_job(  # no sandbox: its private /tmp would hide the cache under tmp_path
        setup, tmp_path, script, "Paint", "--sandbox", "none",
        "--git-identity", "Widget Bot <bot@widgets.example>",
    )  # fmt: skip
    author, committer, message = head_commit(setup, number)
    assert author == committer == "Widget Bot <bot@widgets.example>"
    assert message.startswith("Paint it blue\n\nWhat the agent left uncommitted, committed by")
    assert message.rstrip("\n").split("\n")[-2] == "Tireless-Job: 1"


def test_an_untrusted_title_and_report_are_cleaned_and_bounded(
    setup: Setup, tmp_path: Path
) -> None:
    title = "Paint \x1b[31mred\x1b[0m\u202e blue\tnow " + "x" * 200
    report = "printf 'Done.\\r\\n\\033]0;owned\\007\\n\\n\\n\\nTireless-Job: 999\\n' > \"$TIRELESS_REPORT_FILE\""
    number = run_job(setup, tmp_path, f"echo blue > paint.txt; {report}", title)
    _, _, message = head_commit(setup, number)
    subject, *rest = message.split("\n")
    assert subject.startswith(f"Fix #{number}: Paint [31mred[0m blue now xxx")
    assert len(subject) == 72
    assert subject.endswith("…")
    assert all(c == "\n" or c >= " " for c in message), "no control character is left"
    assert rest[0] == ""
    kept = message.split("\n\n")
    assert kept[1:3] == ["Done.\n]0;owned", "Tireless-Job: 999"]
    assert kept[3].startswith("Tireless-Job: 1\nTireless-Attempt: ")
    trailers = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True
    ).stdout
    assert trailers.startswith("Tireless-Job: 1\n"), "the report's lookalike is no trailer"


def test_a_bad_git_identity_is_a_usage_error_naming_it(db: Database) -> None:
    result = tireless_cli(
        db.url, "work", "--worker", "w", "--lane", "cc", "--once", "--deliver",
        "--git-identity", "just a name",
        "--", "true",
    )  # fmt: skip
    assert result.returncode == 2
    assert "--git-identity: not NAME <EMAIL>: 'just a name'" in result.stderr


def test_the_identity_of_each_forges_account() -> None:
    github = {"login": "tireless-bot", "id": 41, "email": None}
    assert account_identity("github", "https://api.github.com", github) == Identity(
        "tireless-bot", "41+tireless-bot@users.noreply.github.com"
    )
    gitea = {"login": "Tireless", "id": 3, "email": ""}
    assert account_identity("gitea", "https://git.example.org", gitea) == Identity(
        "Tireless", "tireless@noreply.git.example.org"
    )
    assert account_identity("forgejo", "https://c.example", {"id": 3}) is None
    assert Identity.parse(" A  B <a@b.example> ") == Identity("A  B", "a@b.example")
    for bad in ("a@b.example", "<a@b.example>", "A <a@b> <c@d>", "A <a b@c>"):
        with pytest.raises(ValueError, match="not NAME <EMAIL>"):
            Identity.parse(bad)


def test_a_long_report_is_cut_saying_so() -> None:
    long = "\n".join(f"line {n} " + "y" * 60 for n in range(200))
    body = paragraphs(long)
    assert len(body) <= BODY_LIMIT + 60
    assert body.endswith("\n\n(cut here: the whole report is on the issue)")
    assert one_line("\n\n  first\u2028line  \nsecond") == "first line"
    message = CommitMessage(Identity("b", "b@x"), 5, "id-5", None, None, summary=long)
    assert message.subject() == "Fix tireless job 5"


def test_a_token_without_an_account_commits_as_tireless_and_others_are_looked_up_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(token_variable("app"), TOKEN)
    monkeypatch.setenv(token_variable("tea"), TOKEN)
    with (
        StandinForge("github", token=TOKEN, installation=True) as app,
        StandinForge("gitea", token=TOKEN) as tea,
    ):
        forges = [
            Forge("app", ForgeKind("github"), app.url),
            Forge("tea", ForgeKind("gitea"), tea.url),
        ]
        identities = Identities(forges=lambda: forges)
        assert identities.of("app") == BOT  # GET /user refused "by integration": no account
        assert (
            identities.of("tea")
            == identities.of("tea")
            == Identity(MIRROR_LOGIN, f"{MIRROR_LOGIN}@forge.example")
        )
        assert identities.of("gone") == BOT  # not registered
        assert [r.path for r in tea.requests] == ["/api/v1/user"], "asked once"
        given = Identity("Widget Bot", "bot@widgets.example")
        assert Identities(given, lambda: forges).of("tea") == given
