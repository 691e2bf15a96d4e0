"""`tireless forge`, `tireless poll`, `tireless rerun`, and the poll state in `tireless repos`
and `tireless status`, against the test database and the stand-in forge; and
the forge's token never showing anywhere it could leak."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import cli_json, rows, wait_until
from tests.helpers import tireless_cli as cli
from tests.support.poll_cli import PLAN, TOKEN, TOKEN_ENV
from tireless import JobStore


@pytest.fixture
def forge(db: Database) -> Iterator[StandinForge]:
    with StandinForge("gitea", token=TOKEN) as standin:
        standin.create_repo("acme", "widgets")
        standin.create_repo("acme", "gadgets")
        cli_json(db.url, "forge", "add", "gitea", "--kind", "gitea", "--url", standin.url)
        cli_json(db.url, "track", "gitea", "acme", "widgets")
        cli_json(db.url, "track", "gitea", "acme", "gadgets")
        yield standin


def test_poll_every_reads_a_repository_a_webhook_made_due_at_once(
    db: Database, forge: StandinForge, store: JobStore
) -> None:
    """`poll --every 300s` would wait five minutes for its next round; poll_soon (what a signed
    webhook calls) wakes it through tireless_poll, so a labelled issue is a job within seconds.
    SIGTERM still ends it at once."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | TOKEN_ENV
    command = [sys.executable, "-m", "tireless", "--database", db.url, "poll", "--every", "300s"]
    read = "SELECT count(*) FROM tireless.repo_poll WHERE last_success_at IS NOT NULL"
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as poller:
        try:
            wait_until(lambda: db.scalar(read) == 2, "the first round to read both repositories")
            forge.create_issue("acme", "widgets", "a plan", PLAN)
            asked = time.monotonic()
            assert store.poll_soon("gitea", "acme", "widgets") is True
            wait_until(
                lambda: db.scalar("SELECT count(*) FROM tireless.job") == 1, "the job", timeout=60
            )
            made = time.monotonic() - asked
            assert made < 5.0, f"the job came {made:.2f}s after poll_soon"
            asked = time.monotonic()
            poller.send_signal(signal.SIGTERM)
            assert poller.wait(timeout=30) == 0
            ended = time.monotonic() - asked
            assert ended < 5.0, f"the poller ended {ended:.2f}s after SIGTERM"
        finally:
            poller.kill()


def test_forge_add_list_remove(db: Database) -> None:
    url = "https://git.example.com"
    added = cli_json(db.url, "forge", "add", "code.acme", "--kind", "forgejo", "--url", url)
    assert added == {"name": "code.acme", "changed": True}
    again = cli_json(db.url, "forge", "add", "code.acme", "--kind", "forgejo", "--url", url)
    assert again["changed"] is False
    assert cli_json(db.url, "forge", "list") == [
        {"name": "code.acme", "kind": "forgejo", "base_url": url}
    ]
    text = cli(db.url, "forge", "list").stdout
    assert "TIRELESS_TOKEN_CODE_ACME" in text
    assert cli_json(db.url, "forge", "remove", "code.acme")["changed"] is True
    assert cli_json(db.url, "forge", "remove", "code.acme")["changed"] is False
    refused = cli(db.url, "forge", "add", "x", "--kind", "gitea", "--url", "ftp://nowhere")
    assert refused.returncode == 1
    assert refused.stderr.startswith("tireless: ")


def test_poll_once_exits_0_when_every_read_was_clean_and_logs_what_it_did(
    db: Database, forge: StandinForge
) -> None:
    for n in range(3):
        forge.create_issue("acme", "widgets", f"issue {n}", PLAN)
    result = cli(db.url, "poll", "--once", **TOKEN_ENV)
    assert result.returncode == 0, result.stderr
    assert "gitea/acme/widgets: 3 new jobs, 3 issues read in 1 page" in result.stdout
    assert "gitea/acme/gadgets" not in result.stdout  # nothing happened there: no line
    assert "polled 2 repositories, 0 failed" in result.stdout
    repos = {r["repo"]: r for r in cli_json(db.url, "repos")}
    assert repos["widgets"]["last_error"] is None
    assert repos["widgets"]["last_success_at"] is not None
    assert repos["widgets"]["pending"] == 3


def test_poll_once_exits_1_when_a_repository_failed_and_repos_and_status_show_it(
    db: Database, forge: StandinForge
) -> None:
    forge.create_issue("acme", "gadgets", "fine", PLAN)
    forge.fault("html", times=None, repo=("acme", "widgets"))
    result = cli(db.url, "poll", "--once", "--json", **TOKEN_ENV)
    assert result.returncode == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    by_repo = {line["repo"]: line for line in lines}
    assert "expected JSON, got text/html" in by_repo["widgets"]["error"]
    assert by_repo["gadgets"]["created"] == 1
    repos = {r["repo"]: r for r in cli_json(db.url, "repos")}
    assert "expected JSON, got text/html" in repos["widgets"]["last_error"]
    assert repos["gadgets"]["last_error"] is None
    text = cli(db.url, "repos").stdout
    assert "gitea/acme/widgets" in text
    assert "expected JSON" in text
    status = cli(db.url, "status").stdout
    assert "repositories with errors:" in status
    assert "gitea/acme/widgets" in status
    assert "gitea/acme/gadgets" not in status


def test_rerun_makes_a_new_job_for_an_issue_without_a_live_one(
    db: Database, forge: StandinForge
) -> None:
    number = forge.create_issue("acme", "widgets", "once more", PLAN)
    assert cli(db.url, "poll", "--once", **TOKEN_ENV).returncode == 0
    (first,) = rows(db, "SELECT id FROM tireless.job")
    cli_json(db.url, "transition", str(first[0]), "cancelled", "--note", "by hand")
    rerun = cli_json(db.url, "rerun", "gitea", "acme", "widgets", str(number))
    assert rerun["job"] != first[0]
    assert rows(
        db, "SELECT state::text FROM tireless.job WHERE id = %(id)s", {"id": rerun["job"]}
    ) == [("pending",)]
    refused = cli(db.url, "rerun", "gitea", "acme", "widgets", str(number))
    assert refused.returncode == 1
    assert "23505" in refused.stderr
    # A poll that shows the issue as before does not undo the rerun, nor add to it.
    assert cli(db.url, "poll", "--once", **TOKEN_ENV).returncode == 0
    assert len(rows(db, "SELECT id FROM tireless.job WHERE state = 'pending'")) == 1


def test_the_token_never_shows_in_output_errors_the_database_or_an_agents_environment(
    db: Database, forge: StandinForge, tmp_path: Path
) -> None:
    forge.create_issue("acme", "widgets", "work", PLAN)
    forge.fault("401", times=None, repo=("acme", "gadgets"))
    seen = []
    for json_flag in ((), ("--json",)):
        result = cli(db.url, "poll", "--once", *json_flag, **TOKEN_ENV)
        seen += [result.stdout, result.stderr]
    forge.clear_faults()
    with db.connect() as conn:  # the gadgets failure stopped the forge: let it be asked again
        conn.execute("UPDATE tireless.forge SET limited_until = NULL")
        conn.execute("UPDATE tireless.repo_poll SET backoff_until = NULL, next_poll_at = now()")
    seen.append(cli(db.url, "poll", "--once", "--timeout", "1ms", **TOKEN_ENV).stdout)
    shows: list[tuple[str, ...]] = [("repos", "--json"), ("repos",), ("status",), ("forge", "list")]
    for show in shows:
        result = cli(db.url, *show, **TOKEN_ENV)
        seen += [result.stdout, result.stderr]
    dump = rows(
        db,
        "SELECT string_agg(t::text, ' ') FROM ("
        " SELECT to_jsonb(j)::text AS t FROM tireless.job j UNION ALL"
        " SELECT to_jsonb(e)::text FROM tireless.job_event e UNION ALL"
        " SELECT to_jsonb(i)::text FROM tireless.issue i UNION ALL"
        " SELECT to_jsonb(p)::text FROM tireless.repo_poll p UNION ALL"
        " SELECT to_jsonb(f)::text FROM tireless.forge f) AS everything",
    )[0][0]
    assert "refused our credentials" in dump  # the failure is recorded, without the token
    seen.append(dump)
    environment = tmp_path / "agent-environment"
    agent = [
        sys.executable,
        "-c",
        f"import os; open({str(environment)!r}, 'w').write(repr(dict(os.environ)))",
    ]
    worked = cli(  # no sandbox: the agent writes where the test reads
        db.url, "work", "--worker", "w1", "--lane", "cc", "--once", "--sandbox", "none", "--",
        *agent, **TOKEN_ENV,
    )  # fmt: skip
    assert worked.returncode == 0, worked.stderr
    seen += [worked.stdout, worked.stderr, environment.read_text()]
    assert "TIRELESS_NUMBER" in seen[-1]  # the agent ran and wrote its environment
    for text in seen:
        assert TOKEN not in text


def test_a_leaked_token_is_masked_in_the_note_and_in_the_comment_on_the_forge(
    db: Database, forge: StandinForge
) -> None:
    number = forge.create_issue("acme", "widgets", "work", PLAN)
    assert cli(db.url, "poll", "--once", **TOKEN_ENV).returncode == 0
    with db.connect() as conn:  # one attempt: the failed run ends the job, and the mirror comments
        conn.execute("SELECT tireless.set_kind_policy(kind => 'plan', max_attempts => 1)")
    # An agent that learnt the token prints it and fails.
    agent = ["sh", "-c", 'echo "the token is $1"; exit 1', "agent", TOKEN]
    worked = cli(
        db.url, "work", "--worker", "w1", "--lane", "cc", "--once", "--", *agent, **TOKEN_ENV
    )
    assert worked.returncode == 0, worked.stderr
    assert rows(db, "SELECT state::text, note FROM tireless.job") == [
        ("failed", "attempts exhausted (1 of 1); last: the token is ***")
    ]
    assert cli(db.url, "poll", "--once", **TOKEN_ENV).returncode == 0
    (comment,) = forge.comments_of("acme", "widgets", number)
    assert "the token is ***" in comment
    assert TOKEN not in comment + worked.stdout + worked.stderr
