"""What tireless adds around a real agent CLI (issue 46's Measure): for each profile, the time from
the claim to the CLI's first model request (the workspace, the home and config, the sandbox, the
CLI's own start), and from the model's last answer to the pull request (the CLI's end, the commit
and push, the delivery, then the mirror's round that opens the pull request), medians of --runs
jobs, against the same job run by a shell COMMAND that makes one model request itself, in the
same run.

    python bench/agents.py [--runs 5] [--profiles claude-code,opencode,codex,aider,gemini]

A private PostgreSQL, the gitea-flavoured stand-in forge and the scripted model stand-in on
127.0.0.1; one lane per variant, each with no egress but its upstream gateway, whose model is the
stand-in. Each job is one `tireless work --once --deliver --sandbox bwrap` process (as `nobody`
when the bench runs as root), then the poll round that opens its pull request. The variants take
turns, the first rotating. The claim and the delivery are the job's history's times (the
database's clock), the model's request and answer the stand-in's (the same host's clock), the
pull request the end of the round. A CLI not installed at its pin (dev.agents) is skipped, saying
why. Figures are medians (min, max) in seconds; no figure is a pass or a fail. Prints a Markdown
report.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import psycopg

from dev.agents import installed
from dev.embedded import embedded_postgres
from dev.model_standin import Final, ModelStandin, Script, Write
from dev.standin import StandinForge
from tireless.forge import token_variable
from tireless.forge.poll import client_factory, poll_round
from tireless.migrate import migrate
from tireless.store import JobStore

FORGE, OWNER, REPO = "gitea", "acme", "widgets"
TOKEN = "tok-bench-agents-7a1d"
SHELL = "shell"
UPSTREAMS = {SHELL: "anthropic", "claude-code": "anthropic", "opencode": "anthropic",
             "codex": "openai", "aider": "openai", "gemini": "gemini"}  # fmt: skip
HEADERS = {"anthropic": "x-api-key", "gemini": "x-goog-api-key"}
ASK = (
    'curl -s -o /dev/null -H "x-api-key: x" -H "content-type: application/json" -d'
    ' \'{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}\''
    ' "$TIRELESS_UPSTREAM_ANTHROPIC_URL/v1/messages" && echo blue > NOTES.md'
)
HOUR = timedelta(hours=1)
EVENT = "SELECT extract(epoch FROM at) FROM tireless.job_event WHERE job_id = %s AND to_state = %s"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Bench:
    def __init__(self, conninfo: str, forge: StandinForge, model: ModelStandin, root: Path) -> None:
        self.conninfo, self.forge, self.model, self.root = conninfo, forge, model, root
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.store = JobStore(self.conn)
        self.clients = client_factory(timeout=10.0)
        self.secret = root / "model-key"
        self.secret.write_text("sk-bench-agents-0123456789\n")
        self.environment = os.environ | {
            "DATABASE_URL": conninfo, token_variable(FORGE): TOKEN, "CLAUDE_CODE_MAX_RETRIES": "0",
        }  # fmt: skip
        self.offset = time.time() - time.monotonic()  # the stand-in's clock to the wall's

    def round(self) -> None:
        self.store.poll_soon(FORGE, OWNER, REPO)
        reports = poll_round(self.store, "bench-poller", clients=self.clients, next_poll_in=HOUR)
        if [(r.error, r.mirror_error) for r in reports] != [(None, None)]:
            raise RuntimeError(f"the round: {reports}")

    def job(self, variant: str, program: str | None) -> tuple[float, float]:
        """One job of `variant`: (claim → first model request, last answer → pull request)."""
        number = self.forge.create_issue(
            OWNER,
            REPO,
            f"Paint it ({variant})",
            ["tireless", "tireless/implement", f"tireless/agent:{variant}"],
        )
        self.round()
        job_id = self.conn.execute(
            "SELECT id FROM tireless.job WHERE number = %s", [number]
        ).fetchone()[0]  # type: ignore[index]
        upstream = UPSTREAMS[variant]
        url = self.model.url + "/v1" if upstream == "openai" else self.model.url
        header = (
            []
            if upstream not in HEADERS
            else ["--upstream-header", f"{upstream}={HEADERS[upstream]}"]
        )
        agent = ["--", "sh", "-c", ASK] if variant == SHELL else [
            "--agent", variant, "--agent-bin", str(program)]  # fmt: skip
        user = ["--agent-user", "nobody"] if os.geteuid() == 0 else []
        asked = len(self.model.received)
        done = subprocess.run(
            [sys.executable, "-m", "tireless", "work", "--once", "--worker", "w", "--lane", variant,
             "--deliver", "--state-dir", str(self.root / "state"), "--sandbox", "bwrap", *user,
             "--upstream", f"{upstream}={url}", "--upstream-secret", f"{upstream}={self.secret}",
             *header, *agent],
            cwd=self.root, env=self.environment, capture_output=True, text=True,
        )  # fmt: skip
        state = self.conn.execute("SELECT state::text FROM tireless.job WHERE id = %s", [job_id])
        if done.returncode != 0 or state.fetchone() != ("delivered",):
            raise RuntimeError(f"{variant}: exit {done.returncode}: {done.stderr[-3000:]}")
        self.round()  # the mirror opens the pull request
        opened = time.time()
        if not any(p.head == f"tireless/{number}" for p in self.forge.pulls_of(OWNER, REPO)):
            raise RuntimeError(f"{variant}: no pull request")
        requests = [r for r in self.model.received[asked:] if r.api is not None]
        answers = [g for g in self.model.given if g.at >= requests[0].at]
        (claimed,) = self.conn.execute(EVENT, [job_id, "claimed"]).fetchone()  # type: ignore[misc]
        first = requests[0].at + self.offset
        last = answers[-1].at + self.offset
        return first - float(claimed), opened - last


def stats(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}, {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="jobs of each variant")
    parser.add_argument("--profiles", default="claude-code,opencode,codex,aider,gemini")
    options = parser.parse_args()
    variants: dict[str, str | None] = {SHELL: None}
    skipped = []
    for profile in options.profiles.split(","):
        program, said = installed(profile)
        if program is None:
            skipped.append(f"{profile}: {said}")
        else:
            variants[profile] = program
    versions = {p: installed(p)[1] for p in variants if p != SHELL}
    began = time.perf_counter()
    script = Script([Write("NOTES.md", "blue\n"), Final("Painted it.")])
    with (
        tempfile.TemporaryDirectory(dir="/var/tmp") as scratch,
        embedded_postgres(fsync=True) as server,
        StandinForge("gitea", token=TOKEN) as forge,
        ModelStandin(script) as model,
    ):
        Path(scratch).chmod(0o755)
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
        conninfo = server.conninfo("bench")
        migrate(conninfo)
        os.environ[token_variable(FORGE)] = TOKEN
        forge.create_repo(OWNER, REPO)
        forge.seed_git(OWNER, REPO, {"README.md": "widgets\n"})
        bench = Bench(conninfo, forge, model, Path(scratch))
        bench.store.add_forge(FORGE, "gitea", forge.url)
        bench.store.track_repo(FORGE, OWNER, REPO)
        for variant in variants:
            bench.store.set_lane_network(variant, [])
        figures: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
        order = list(variants)
        for run in range(options.runs):
            for variant in order[run % len(order) :] + order[: run % len(order)]:
                figures[variant].append(bench.job(variant, variants[variant]))
                log(f"run {run + 1}: {variant}: {figures[variant][-1]}")
        bench.conn.close()
    lines = [
        "## Agents: what tireless adds around a real CLI (bench/agents.py)",
        "",
        f"{options.runs} jobs per variant; seconds, median (min, max).",
        "",
        "| variant | version | claim → first model request | last answer → pull request |",
        "|---|---|---|---|",
    ]
    for variant, values in figures.items():
        version = versions.get(variant, "sh + curl")
        lines.append(
            f"| {variant} | {version} | {stats([v[0] for v in values])}"
            f" | {stats([v[1] for v in values])} |"
        )
    lines += [f"\nskipped: {s}" for s in skipped]
    lines.append(f"\nThe whole run took {time.perf_counter() - began:.0f} s.")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
