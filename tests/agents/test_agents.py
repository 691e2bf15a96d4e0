"""The real agent CLIs through `tireless work --agent PROFILE --deliver`, under bubblewrap as the
agent user with the lane's allowlist (nothing but the upstream gateway), against the scripted model
stand-in: each CLI edits its workspace with its own tools and the edit arrives as one pull request
with the CLI's final message as the report; the key is nowhere the agent can look; what else it
tried is recorded; a model error ends the attempt with a note naming it; the next attempt starts
with a fresh home. One job, two attempts, per profile: every assertion reads that one run."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from dev.model_standin import Fail, Final, ModelStandin, Script, Shell, Step, Write
from tests.agents.conftest import FORGE, agent_user, cli
from tests.helpers import make_available, tireless_cli
from tests.support.forge import OWNER, REPO, TOKEN, Setup, comments, one_round
from tireless.forge import token_variable

IMPLEMENT = ["tireless", "tireless/implement"]
UPSTREAM = {
    "claude-code": "anthropic",
    "opencode": "anthropic",
    "codex": "openai",
    "aider": "openai",
    "gemini": "gemini",
}
"""The upstream each profile is tested through (its API the stand-in speaks)."""
HEADERS = {"anthropic": "x-api-key", "gemini": "x-goog-api-key"}
"""The header each upstream takes its key in (the gateway's --upstream-header)."""
RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "0"}
"""The worker's environment, which the CLI inherits: a model error is not retried within the
attempt (tireless retries the attempt)."""
REPORT = "Painted the widgets blue and wrote NOTES.md."
MARK = ".first-attempt-was-here"

# The probe the CLI writes and its shell tool runs in the second attempt: the reversed key (so the probe's own
# command line does not hold it) looked for in the environment and argv of every process it can
# see, its home and the workspace; whether the first attempt's mark is in its home; the key it
# was given; a host it may not reach (registry.npmjs.org), refused and recorded.
PROBE = (
    't=$(printf %s "{reversed}" | rev); found=""\n'
    'for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do grep -qaF -- "$t" "$f" 2>/dev/null'
    ' && found="$found $f"; done\n'
    'grep -rlF -- "$t" "$HOME" . 2>/dev/null | grep -v "^./.git/" | while read -r f; do'
    ' found="$found $f"; done\n'
    'test -e "$HOME/{mark}" && found="$found stale-home"\n'
    "curl -s -m 5 -o /dev/null https://registry.npmjs.org/ || true\n"
    'echo "found:$found" > probe.txt'
)


def run_work(
    setup: Setup, shared: Path, model: ModelStandin, profile: str, program: str, secret: Path
) -> str:
    upstream = UPSTREAM[profile]
    url = model.url + "/v1" if upstream == "openai" else model.url
    header = ["--upstream-header", f"{upstream}={HEADERS[upstream]}"] if upstream in HEADERS else []
    done = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
        "--state-dir", str(shared / "state"), "--sandbox", "bwrap", *agent_user(),
        "--agent", profile, "--agent-bin", program,
        "--upstream", f"{upstream}={url}", "--upstream-secret", f"{upstream}={secret}", *header,
        **{token_variable(FORGE): TOKEN}, **RETRIES,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.parametrize("profile", ["claude-code", "opencode", "codex", "aider", "gemini"])
def test_a_real_cli_edits_through_its_own_tools_and_its_work_becomes_one_pull_request(
    setup: Setup, model: ModelStandin, shared_dir: Path, profile: str
) -> None:
    program, version = cli(profile)
    key = f"sk-test-{uuid.uuid4().hex}"
    secret = shared_dir / "model-key"
    secret.write_text(key + "\n")
    setup.store.set_lane_network("cc", [])  # nothing but the upstream
    number = setup.forge.create_issue(OWNER, REPO, "Paint the widgets blue", IMPLEMENT)
    one_round(setup)
    (job_id,) = [r[0] for r in setup.db.connect().execute("SELECT id FROM tireless.job")]

    # The first attempt: the CLI marks its home, then the model answers 401 (aider runs no shell
    # command unasked, so its probe is the hosts it tried itself).
    shell = profile != "aider"
    model.script = Script([Shell(f"touch $HOME/{MARK}"), Fail(401)] if shell else [Fail(401)])
    first = run_work(setup, shared_dir, model, profile, program, secret)
    state, note = setup.jobs(REPO)[number]
    assert state == "pending", first
    assert note is not None
    assert "401" in note, note
    assert note.startswith(profile), note
    assert any(g.kind == "tool" for g in model.given) or not shell, "its shell tool ran first"

    # The second attempt, in a fresh home: the probe, the edit, the final message.
    make_available(setup.db, job_id)
    # The probe goes in a file first: Gemini CLI's shell tool refuses a command substitution.
    script = PROBE.format(reversed=key[::-1], mark=MARK)
    probe: list[Step] = [Write("probe.sh", script + "\n"), Shell("sh probe.sh")] if shell else []
    model.script = Script(
        [*probe, Write("NOTES.md", "# Paint\nThe widgets are blue.\n"), Final(REPORT)]
    )
    second = run_work(setup, shared_dir, model, profile, program, secret)
    assert setup.jobs(REPO)[number] == ("delivered", None), second
    branch = f"tireless/{number}"
    assert (
        setup.forge.file_at(OWNER, REPO, branch, "NOTES.md") == "# Paint\nThe widgets are blue.\n"
    )
    if shell:
        assert setup.forge.file_at(OWNER, REPO, branch, "probe.txt") == "found:\n", (
            "the key (or the first attempt's home) was found where the agent looks"
        )
    if profile == "claude-code":  # its hook asked for a checkpoint after each edit
        assert setup.db.scalar("SELECT count(*) FROM tireless.checkpoint") >= 1
    one_round(setup)  # the mirror opens the pull request and posts the outcome
    (pull,) = setup.forge.pulls_of(OWNER, REPO)
    assert pull.head == branch
    assert REPORT in pull.body
    assert any(REPORT in comment for comment in comments(setup, number))

    # The key went to the model only through the gateway; the CLI sent the placeholder.
    requests = model.model_requests()
    assert requests, "the CLI reached the model through the gateway"
    sent = [
        r.headers.get("x-api-key")
        or r.headers.get("x-goog-api-key")
        or r.headers.get("authorization", "")
        for r in requests
    ]
    assert all(key in value for value in sent), "the gateway put the real key on every request"
    assert key not in first + second, "masked in the worker's log"

    # What it tried besides the gateway is recorded, refused.
    network = setup.store.job_network(job_id)
    refused = {(row.host, row.port) for row in network if not row.allowed}
    tried = ("registry.npmjs.org", 443) if shell else ("raw.githubusercontent.com", 443)
    assert tried in refused, network
    print(f"{profile} {version}: first attempt's note: {note!r}; hosts refused: {sorted(refused)}")
