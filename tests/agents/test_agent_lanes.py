"""A lane names its agent CLI (`tireless lane agent`, tireless.set_lane_agent): the store checks the
profile (TL012 naming an unknown one, nothing changed), `tireless agents` lists the profiles with
what each lacks, and a worker given no COMMAND runs the lane's CLI: a plan job's Claude Code writes
its plan file through its own write tool, and the mirror opens the children."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from dev.model_standin import Final, ModelStandin, Script, Write
from dev.standin import issues_of
from tests.agents.conftest import FORGE, agent_user, cli
from tests.conftest import Database
from tests.helpers import tireless_cli
from tests.support.forge import OWNER, PLAN, REPO, TOKEN, Setup, one_round
from tireless import JobStore
from tireless.errors import UnknownAgent
from tireless.forge import token_variable
from tireless.runner.agents import CHOICES

TASKS = [
    {"title": "Build the frame", "body": "The frame first."},
    {"title": "Paint it", "body": "Blue.", "depends_on": [0]},
]


def test_a_lane_names_a_known_profile_only_and_tireless_agents_says_what_it_lacks(
    store: JobStore, db: Database
) -> None:
    assert db.scalar("SELECT tireless.agent_profiles()") == list(CHOICES), "SQL and Python agree"
    assert store.set_lane_agent("oc", "opencode") == "opencode"
    assert store.lane_agent("oc") == "opencode"
    with pytest.raises(
        UnknownAgent, match="unknown agent profile 'open-code' for lane 'oc'"
    ) as refused:
        store.set_lane_agent("oc", "open-code")
    assert refused.value.detail is not None
    assert "claude-code" in refused.value.detail
    assert store.lane_agent("oc") == "opencode", "nothing changed"
    done = tireless_cli(db.url, "lane", "agent", "oc", "claud")
    assert done.returncode == 1
    assert "TL012" in done.stderr
    with db.connect() as conn, pytest.raises(psycopg.errors.CheckViolation):  # its own rule
        conn.execute("UPDATE tireless.lane SET agent = 'No Such' WHERE name = 'oc'")
    assert tireless_cli(db.url, "lane", "agent", "oc", "none").returncode == 0
    assert store.lane_agent("oc") is None
    assert tireless_cli(db.url, "lane", "agent", "cc", "claude-code").returncode == 0

    program, version = cli("claude-code")
    listed = json.loads(
        tireless_cli(
            db.url, "agents", "--json", "--lane", "cc", "--agent-bin", f"claude-code={program}"
        ).stdout
    )
    by_name = {row["profile"]: row for row in listed}
    assert list(by_name) == list(CHOICES[1:])
    claude = by_name["claude-code"]
    assert claude["found"] is True
    assert version in claude["version"]
    assert claude["lanes"] == ["cc"]
    assert claude["lacks"] == [
        "an upstream: --upstream anthropic=URL",
        "lane cc: an egress allowlist (tireless lane allow-net cc --none), without which it gets"
        " no upstream",
    ]
    store.set_lane_network("cc", [])
    listed = json.loads(
        tireless_cli(
            db.url, "agents", "--json", "--lane", "cc", "--upstream", "anthropic=https://a.example",
            "--agent-bin", f"claude-code={program}",
        ).stdout
    )  # fmt: skip
    assert {row["profile"]: row for row in listed}["claude-code"]["lacks"] == []
    assert store.lane_agents() == {"cc": "claude-code"}
    every = json.loads(tireless_cli(db.url, "agents", "--json").stdout)  # the lanes naming one
    assert {row["profile"]: row["lanes"] for row in every}["claude-code"] == ["cc"]


def test_a_plan_job_of_a_lane_naming_claude_code_writes_its_plan_through_the_cli(
    setup: Setup, model: ModelStandin, shared_dir: Path
) -> None:
    program, _ = cli("claude-code")
    secret = shared_dir / "model-key"
    secret.write_text("sk-test-plan-0123456789\n")
    setup.store.set_lane_network("cc", [])
    setup.store.set_lane_agent("cc", "claude-code")
    number = setup.forge.create_issue(OWNER, REPO, "Plan the widget", PLAN)
    one_round(setup)
    model.script = Script(
        [Write(find=r"(/\S+/plan\.json)", content=json.dumps(TASKS)), Final("Planned two tasks.")]
    )
    done = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
        "--state-dir", str(shared_dir / "state"), "--sandbox", "bwrap", *agent_user(),
        "--agent-bin", f"claude-code={program}", "--upstream", f"anthropic={model.url}",
        "--upstream-secret", f"anthropic={secret}", "--upstream-header", "anthropic=x-api-key",
        **{token_variable(FORGE): TOKEN, "CLAUDE_CODE_MAX_RETRIES": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "agent claude-code" not in done.stderr, "no --agent: the lane's profile ran"
    assert setup.jobs(REPO)[number][0] == "delivered", done.stderr
    assert [g.tool for g in model.given if g.kind == "tool"] == ["Write"]
    one_round(setup)  # the mirror opens one issue per task
    titles = [issue.title for issue in issues_of(setup.forge, OWNER, REPO)]
    assert titles == ["Plan the widget", "Build the frame", "Paint it"]
