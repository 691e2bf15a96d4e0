"""An agent profile's attempt (tireless.runner.agents.AgentRun) without running its CLI: the prompt
built from the brief (title, body, the review and the failed checks, the plan file) goes on stdin,
never on the command line; the home is the attempt's own and fresh; the CLI reaches the lane's
upstream by the gateway's URL with a placeholder key, and gets no upstream the job lacks."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

from tests.helpers import claimed, enqueue_jobs
from tireless import JobStore
from tireless.models import JobAsk, JobBrief, JobKind
from tireless.runner.agents import PLACEHOLDER_KEY, PROFILES, AgentRun
from tireless.runner.brief import AgentFiles

BRIEF = JobBrief(
    "https://forge.example/acme/widgets/issues/1", None, None, "Make them blue.", False
)
NOW = datetime(2026, 12, 7, tzinfo=UTC)
ASKS = [
    JobAsk(1, "review", "51", 3, "revise", "carol", "Say how it is tested.",
           [{"path": "notes.md", "line": 3, "body": "Which test?"}], NOW, "open"),
    JobAsk(2, "checks", "abc", 3, "revise", None, "",
           [{"name": "unit", "summary": "2 failed", "url": "https://ci.example/1"}], NOW, "open"),
]  # fmt: skip
GATEWAY = {"TIRELESS_UPSTREAM_ANTHROPIC_URL": "http://127.0.0.1:4000"}


def test_a_revision_s_prompt_goes_on_stdin_and_the_home_is_the_attempt_s_own(
    store: JobStore,
) -> None:
    enqueue_jobs(store, 1)
    job = dataclasses.replace(claimed(store), title="Paint the widgets blue")
    with AgentFiles(job.id, BRIEF, ASKS, job.kind.value) as files:
        run = AgentRun(
            PROFILES["claude-code"], "/opt/claude", ["--model", "x"], job, files, GATEWAY
        )
        run.prepare(None)
        prompt = run.stdin().decode()
        assert prompt.startswith("# Paint the widgets blue\n")
        for said in ("Make them blue.", "Say how it is tested.", "### notes.md:3", "Which test?",
                     "- unit: 2 failed (https://ci.example/1)", "do not push"):  # fmt: skip
            assert said in prompt, said
        assert run.command() == [
            "/opt/claude", "-p", "--output-format", "stream-json", "--verbose",
            "--include-hook-events", "--dangerously-skip-permissions", "--model", "x",
        ]  # fmt: skip
        env = run.environment()
        assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4000"
        assert env["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY
        assert env["HOME"] == str(files.body_file.parent / "home")
        assert env["CLAUDE_CONFIG_DIR"] == env["HOME"] + "/.claude"
        assert env["DISABLE_TELEMETRY"] == env["DISABLE_AUTOUPDATER"] == "1"
        made = sorted(str(p.relative_to(run.home)) for p in run.home.rglob("*"))
        assert made == [".claude", ".claude/settings.json"], "fresh: its own config, no more"


def test_a_plan_job_s_prompt_names_its_plan_file_and_opencode_s_config_its_gateway(
    store: JobStore,
) -> None:
    enqueue_jobs(store, 1)
    job = dataclasses.replace(claimed(store), kind=JobKind.PLAN)
    with AgentFiles(job.id, BRIEF, (), "plan") as files:
        run = AgentRun(PROFILES["opencode"], "/opt/opencode", [], job, files, GATEWAY)
        run.prepare(None)
        assert str(files.tasks_file) in run.stdin().decode()
        assert "TIRELESS_PLAN_FILE" in run.stdin().decode()
        config = json.loads((run.home / ".config/opencode/opencode.json").read_text())
        assert config["provider"]["anthropic"]["options"] == {
            "baseURL": "http://127.0.0.1:4000/v1", "apiKey": PLACEHOLDER_KEY,
        }  # fmt: skip
        assert config["autoupdate"] is False
        assert run.environment()["OPENCODE_CONFIG"] == str(
            run.home / ".config/opencode/opencode.json"
        )
    with AgentFiles(job.id, BRIEF, (), "plan") as files:
        bare = AgentRun(PROFILES["codex"], "/opt/codex", [], job, files, {})
        bare.prepare(None)
        assert bare.upstream is None, "no upstream offered: none taken"
        assert "OPENAI_API_KEY" not in bare.environment()
        assert bare.command()[-1] == "-", "the prompt from stdin, last"
        note = bare.note(1)
        assert note is not None
        assert "--upstream openai=URL" in note
