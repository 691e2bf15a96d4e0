"""The ledger through `tireless work` (issue 48), with the real sandbox (bwrap, a lane with no
egress but its upstream), the real gateway and the scripted model stand-in: an attempt's usage is
in the store as it goes, exact per model and kind, and stays there when the worker is SIGKILLed;
a spent budget per job refuses the agent's next request in the vendor's shape and fails the job
with the note; a spent daily budget gives the job back, claimed again once the day allows."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
import uuid
import zlib
from pathlib import Path

import pytest

from dev.model_standin import ModelStandin, Script, Usage
from tests.conftest import Database
from tests.helpers import enqueue_jobs, rows, tireless_cli, wait_until
from tests.support.work import clean_environment, run_worker, skip_unless_available, work_args
from tireless import JobStore
from tireless.models import SpendBudget
from tireless.runner.sandbox import relay_python

pytestmark = pytest.mark.usefixtures("in_the_tests_directory")

# The agent: `ROUNDS` of one Anthropic stream, one Chat Completions stream (usage not asked for)
# and one Responses answer, each answer's status and the text it ends with written to $OUT; a
# refused request (400) ends it with exit 3. Then it sleeps when told to (the SIGKILL test).
AGENT = r"""
import json, os, sys, time, urllib.error, urllib.request
out, rounds, linger = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "linger"
planted = sys.argv[4] if len(sys.argv) > 4 else "nothing"
base = os.environ["TIRELESS_UPSTREAM_MODEL_URL"]
calls = [
    ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 50, "stream": True,
                      "messages": [{"role": "user", "content": f"hi, the token is {planted}"}]}),
    ("/v1/chat/completions", {"model": "gpt-5", "stream": True,
                              "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/responses", {"model": "gpt-5", "input": "hi"}),
]
log = []
for _ in range(rounds):
    for path, body in calls:
        request = urllib.request.Request(base + path, json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                log.append([answer.status, answer.read().decode()[-200:]])
        except urllib.error.HTTPError as error:
            log.append([error.code, error.read().decode()])
            open(os.path.join(out, "log.json"), "w").write(json.dumps(log))
            sys.exit(3)
open(os.path.join(out, "log.json"), "w").write(json.dumps(log))
if linger:
    time.sleep(120)
"""
USAGE = Usage(input_tokens=300, output_tokens=40, cache_read_input_tokens=100,
              cache_creation_input_tokens=20)  # fmt: skip


def worker_options(public_dir: Path, model: ModelStandin) -> list[str]:
    secret = public_dir / "model-key"
    if not secret.exists():
        secret.write_text(f"sk-test-{uuid.uuid4().hex}\n")
    agent = ["--agent-user", "nobody"] if os.geteuid() == 0 else []
    return [
        *agent, "--sandbox", "bwrap", "--upstream", f"model={model.url}",
        "--upstream-header", "model=x-api-key", "--upstream-secret", f"model={secret}",
    ]  # fmt: skip


def command(public_dir: Path, rounds: int, linger: bool = False, *more: str) -> list[str]:
    python = relay_python(pwd.getpwnam("nobody") if os.geteuid() == 0 else None)
    linger_word = "linger" if linger else "-"
    return [python, "-I", "-c", AGENT, str(public_dir), str(rounds), linger_word, *more]


def totals(store: JobStore, job_id: int) -> dict[str, tuple[int, ...]]:
    return {
        u.model: (
            u.requests,
            u.unread,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
        )
        for u in store.job_model_usage(job_id)
    }


@pytest.fixture
def sandboxed(store: JobStore) -> JobStore:
    skip_unless_available("bwrap")
    store.set_lane_network("cc", [])
    return store


def test_usage_and_the_transcript_are_recorded_as_the_attempt_goes_and_a_sigkill_keeps_them(
    sandboxed: JobStore, db: Database, public_dir: Path
) -> None:
    """The agent puts a secret of the worker's (a variable it masks) into its prompt: the
    transcript, masked as all output is, holds neither it nor the model's key."""
    store = sandboxed
    enqueue_jobs(store, 1)
    planted = f"planted-{uuid.uuid4().hex}"
    with ModelStandin(Script(usage=USAGE)) as model:
        env = clean_environment() | {"DATABASE_URL": db.url, "TIRELESS_PLANTED_TOKEN": planted}
        options = worker_options(public_dir, model)
        key = (public_dir / "model-key").read_text().strip()
        worker = subprocess.Popen(
            [sys.executable, "-m", "tireless", *work_args("--once", *options, "--"),
             *command(public_dir, 2, True, planted)],
            env=env, cwd=public_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            job_id = db.scalar("SELECT id FROM tireless.job")
            # Anthropic counts its cache apart; OpenAI's input includes the cached tokens.
            expected = {
                "claude-sonnet-4-5": (2, 0, 600, 80, 200, 40),
                "gpt-5": (4, 0, 800, 160, 400, 0),
            }
            wait_until((public_dir / "log.json").exists, "the agent's requests", timeout=60)
            wait_until(lambda: totals(store, job_id) == expected, "the usage's next batch")
            wait_until(
                lambda: db.scalar("SELECT count(*) FROM tireless.model_exchange") == 6,
                "the transcript's batch, which follows the usage's",
            )
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=30)
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.communicate()
    assert totals(store, job_id) == expected, "what was recorded stays"
    assert db.scalar("SELECT state::text FROM tireless.job") == "claimed"
    assert model.model_requests()[0].headers["x-api-key"] == key, "the gateway added the key"
    wait_until(
        lambda: db.scalar("SELECT count(*) FROM tireless.model_exchange") == 6, "the transcript"
    )
    shown = tireless_cli(db.url, "show", str(job_id), "--transcript")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert text.count("── attempt 1, exchange") == 6
    assert "▸ user (text): hi, the token is ***" in text
    assert "◂ assistant (text): Scripted work" in text
    assert "300 in, 40 out, 100 cache read, 20 cache write" in text, "each turn's tokens"
    stored = b"".join(
        zlib.decompress(part)
        for row in rows(db, "SELECT request, answer FROM tireless.model_exchange")
        for part in row
    )
    for secret in (planted, key):
        assert secret not in text
        assert secret.encode() not in stored


def test_a_spent_budget_per_job_refuses_the_request_and_fails_the_job_with_its_note(
    sandboxed: JobStore, db: Database, public_dir: Path
) -> None:
    store = sandboxed
    enqueue_jobs(store, 1)
    store.set_lane_budget("cc", None, None, SpendBudget(tokens_per_job=1000))
    with ModelStandin(Script(usage=USAGE)) as model:
        done = run_worker(
            clean_environment() | {"DATABASE_URL": db.url}, public_dir,
            *worker_options(public_dir, model), command=command(public_dir, 5),
        )  # fmt: skip
        forwarded = len(model.model_requests())
    assert done.returncode == 0, done.stderr
    log = json.loads((public_dir / "log.json").read_text())
    status, refusal = log[-1]
    # 460 tokens an Anthropic answer, 340 an OpenAI one: the third request passes 1,000.
    note = "token budget spent: 1,140 of 1,000 tokens for the job (lane cc)"
    assert status == 400
    assert f"tireless: {note}" in refusal
    assert '"invalid_request_error"' in refusal, "Anthropic's error for an Anthropic request"
    assert forwarded == len(log) - 1 == 3, "the refused request never reached the model"
    assert db.scalar("SELECT state::text FROM tireless.job") == "failed"
    assert db.scalar("SELECT note FROM tireless.job") == note


def test_a_spent_daily_budget_gives_the_job_back_until_the_day_allows(
    sandboxed: JobStore, db: Database, public_dir: Path
) -> None:
    store = sandboxed
    enqueue_jobs(store, 1)
    store.set_lane_budget("cc", None, None, SpendBudget(tokens_per_day=500))
    with ModelStandin(Script(usage=USAGE)) as model:
        options = worker_options(public_dir, model)
        env = clean_environment() | {"DATABASE_URL": db.url}
        done = run_worker(env, public_dir, *options, command=command(public_dir, 1))
        assert done.returncode == 0, done.stderr
        note = "token budget spent: 800 of 500 tokens today (lane cc)"
        assert db.scalar("SELECT state::text FROM tireless.job") == "pending"
        assert db.scalar("SELECT note FROM tireless.job") == f"given back: {note}"
        assert store.claim_next("other", ["cc"]) is None, "the day's budget is spent"
        with db.connect() as conn:  # the day passes
            conn.execute("UPDATE tireless.model_usage SET spend_day = spend_day - 1")
    again = store.claim_next("other", ["cc"])
    assert again is not None, "claimed again once the day allows"
    assert again.attempts == 2
