"""The demo's real agent (`make run`): where Claude Code or OpenCode is installed, or installable
at agents.json's pin (dev.agents), one lane of the demo (`real`, `tireless lane agent real
PROFILE`, no egress but its model's gateway) runs it against the scripted model stand-in
(dev.model_standin): an issue labelled `tireless/agent:real` gets a worker of its own
(`tireless work --once`, the lane's profile, the model behind `--upstream`), the CLI writes the
file with its own write tool, and the story says which CLI and version made which pull request.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from dev.agents import installed
from dev.model_standin import Final, ModelStandin, Script, Write
from dev.standin import StandinForge
from tireless.store import JobStore

LANE = "real"
WORKER = "runner-cli"
UPSTREAM = "anthropic"  # both profiles reach the stand-in's Messages API
NOTE = "docs/real-agent.md"
REPORT = "Wrote docs/real-agent.md with my own write tool."
PULL_OF = (
    "SELECT d.pull_number FROM tireless.deliveries d JOIN tireless.job j ON j.id = d.job_id"
    " WHERE j.owner = %(owner)s AND j.repo = %(repo)s AND j.number = %(number)s"
)


class RealAgent:
    """The scene (dev.demo.Scene's methods): `open` makes the lane and the issue, `act` starts
    the lane's worker once, `done` when its job is settled, `story` which CLI made which pull
    request."""

    def __init__(
        self, number: int, profile: str, program: str, version: str, model: ModelStandin
    ) -> None:
        self.number = number
        self.profile, self.program, self.version = profile, program, version
        self.model = model
        self.worker: subprocess.Popen[bytes] | None = None
        self.finished = False

    @classmethod
    def open(
        cls, store: JobStore, forge: StandinForge, owner: str, repo: str, state: Path
    ) -> RealAgent | str:
        """The scene, or why there is none (no CLI installed or installable here)."""
        why = []
        for profile in ("claude-code", "opencode"):
            program, said = installed(profile)
            if program is not None:
                break
            why.append(f"{profile}: {said}")
        else:
            return "no real agent in this run (" + "; ".join(why) + ")"
        store.set_lane_agent(LANE, profile)
        store.set_lane_network(LANE, [])  # its model through the gateway, nothing else
        model = ModelStandin(
            Script([Write(NOTE, f"# Written by {profile} {said}\n"), Final(REPORT)])
        ).start()
        labels = ["tireless", "tireless/implement", f"tireless/agent:{LANE}"]
        number = forge.create_issue(owner, repo, "Let a real agent write a note", labels)
        state.mkdir(parents=True, exist_ok=True)
        (state / "model-key").write_text("sk-demo-not-a-real-key\n")
        (state / "model-key").chmod(0o600)
        return cls(number, profile, program, said, model)

    def command(self, state: Path) -> list[str]:
        return [
            sys.executable, "-m", "tireless", "work", "--worker", WORKER, "--lane", LANE,
            "--once", "--poll", "1s", "--deliver", "--state-dir", str(state.resolve()),
            "--agent-bin", f"{self.profile}={self.program}",
            "--upstream", f"{UPSTREAM}={self.model.url}", "--upstream-header",
            f"{UPSTREAM}=x-api-key", "--upstream-secret", f"{UPSTREAM}={state.resolve() / 'model-key'}",
        ]  # fmt: skip

    def start(self, env: dict[str, str], state: Path, log: Path) -> str:
        with log.open("wb") as out:
            self.worker = subprocess.Popen(
                self.command(state), env=env | {"CLAUDE_CODE_MAX_RETRIES": "1"}, stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        return f"{WORKER} runs {self.profile} {self.version} on #{self.number} (lane {LANE})"

    def finish(self) -> None:
        """Its worker stopped (it ends by itself after its one job), the model stand-in too."""
        if self.finished:
            return
        self.finished = True
        if self.worker is not None and self.worker.poll() is None:
            self.worker.terminate()
            self.worker.wait(timeout=30)
        self.model.stop()

    def story(self, conn: psycopg.Connection[Any], owner: str, repo: str) -> str:
        self.finish()
        row = conn.execute(
            PULL_OF, {"owner": owner, "repo": repo, "number": self.number}
        ).fetchone()
        asked = len(self.model.model_requests())
        if row is None or row[0] is None:
            return (
                f"#{self.number}: {self.profile} {self.version} made no pull request (see its log)"
            )
        return (
            f"#{self.number}: {self.profile} {self.version} ({self.program}) wrote {NOTE} with its"
            f" own tools against the model stand-in ({asked} model request(s), through the"
            f" gateway): PR #{row[0]}"
        )
