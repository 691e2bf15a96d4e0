"""Delivery through `tireless work --deliver` against the stand-in forge on 127.0.0.1, which serves
git through git's own http-backend: an implement job's agent edits its workspace, and tireless, not
the agent, pushes the issue's branch; the mirror opens one pull request. The token never reaches
the agent, nothing the agent planted in its repository runs, and the branch is never forced over
someone else's commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import rows, tireless_cli, wait_until, wait_until_sql
from tests.support.forge import OWNER, TOKEN, Setup, comments, one_round
from tireless import JobStore
from tireless.forge import token_variable
from tireless.models import ATTEMPT_NAMESPACE

REPO = "widgets"
FORGE = "gitea"
IMPLEMENT = ["tireless", "tireless/implement"]


@pytest.fixture
def setup(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    monkeypatch.setenv(token_variable(FORGE), TOKEN)
    with StandinForge("gitea", token=TOKEN) as forge:
        store.add_forge(FORGE, "gitea", forge.url)
        setup = Setup(db, store, forge, FORGE)
        setup.track(REPO)
        forge.seed_git(OWNER, REPO, {"README.md": "widgets\n", "paint.txt": "red\n"})
        yield setup


def asked(setup: Setup, title: str = "Paint the widgets blue") -> int:
    number = setup.forge.create_issue(OWNER, REPO, title, IMPLEMENT)
    one_round(setup)  # the poll makes the job
    return number


def work(setup: Setup, tmp_path: Path, script: str, *args: str) -> str:
    """One job run by `tireless work --once --deliver` with `script` as its agent (sh, in its
    workspace, `args` as $1...); the worker's log."""
    result = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
        "--state-dir", str(tmp_path / "state"), "--", "sh", "-c", script, "agent", *args,
        **{token_variable(FORGE): TOKEN},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_an_implement_job_ends_as_one_pull_request_that_tireless_pushed(
    setup: Setup, tmp_path: Path
) -> None:
    number = asked(setup)
    work(setup, tmp_path, 'echo blue > paint.txt; echo "# Paint" > NOTES.md; echo done')
    assert setup.jobs(REPO)[number] == ("delivered", None)
    branch = f"tireless/{number}"
    assert setup.forge.file_at(OWNER, REPO, branch, "paint.txt") == "blue\n"
    assert setup.forge.file_at(OWNER, REPO, branch, "NOTES.md") == "# Paint\n", "new files too"
    one_round(setup)
    (pull,) = setup.forge.pulls_of(OWNER, REPO)
    assert (pull.head, pull.base, pull.state) == (branch, "main", "open")
    assert f"Closes #{number}" in pull.body
    (comment,) = comments(setup, number)
    assert f"#{pull.number}" in comment
    shown = json.loads(
        tireless_cli(setup.db.url, "show", "1", "--json").stdout  # the job's delivery
    )["delivery"]
    assert (shown["branch"], shown["pull_number"]) == (branch, pull.number)


def test_the_token_reaches_no_file_environment_or_git_config_of_the_agent(
    setup: Setup, tmp_path: Path
) -> None:
    number = asked(setup)
    work(  # the agent learns what to look for (reversed: its own command line must not hold it)
        setup, tmp_path,
        't=$(printf %s "$1" | rev); [ -n "$t" ] || exit 2\n'
        'found=""\n'
        'grep -rqF -- "$t" . && found="$found workspace"\n'
        'for p in /proc/$$ /proc/1 /proc/$PPID; do  # (not /proc/self: that is grep)\n'
        '  for f in environ cmdline; do grep -qaF -- "$t" $p/$f 2>/dev/null && found="$found $p/$f"; done\n'
        'done\n'
        'git config --list --show-origin | grep -qiF -e "$t" -e extraheader -e authorization'
        ' && found="$found git-config"\n'
        'git remote -v | grep -qF "@" && found="$found remote-url"\n'
        'env | grep -qF -- "$t" && found="$found env"\n'
        'if [ -n "$found" ]; then echo "found the token in:$found"; exit 1; fi\n'
        "echo searched > searched.txt",
        TOKEN[::-1],
    )  # fmt: skip
    assert setup.jobs(REPO)[number] == ("delivered", None)
    assert setup.forge.file_at(OWNER, REPO, f"tireless/{number}", "searched.txt") == "searched\n"


def test_what_the_agent_planted_in_its_repository_runs_nothing_when_tireless_pushes(
    setup: Setup, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    number = asked(setup)
    work(
        setup, tmp_path,
        f'plant="touch {marker}"\n'
        'printf "#!/bin/sh\\n%s\\n" "$plant" > .git/hooks/pre-push\n'
        "cp .git/hooks/pre-push .git/hooks/post-commit; chmod +x .git/hooks/*\n"
        'git config core.fsmonitor "$plant"\n'
        'git config core.sshCommand "$plant"\n'
        'git config credential.helper "!$plant"\n'
        'git config filter.evil.clean "$plant"\n'
        'printf "[core]\\n\\thooksPath = /nowhere\\n" > ../included; git config include.path ../included\n'
        'echo "* filter=evil" > .gitattributes\n'
        f"mkdir -p {tmp_path}/elsewhere; echo {tmp_path}/elsewhere >> .git/objects/info/alternates\n"
        "echo blue > paint.txt",
    )  # fmt: skip
    assert setup.jobs(REPO)[number] == ("delivered", None)
    assert not marker.exists(), "a hook, a filter or a config of the agent's ran"
    assert setup.forge.file_at(OWNER, REPO, f"tireless/{number}", "paint.txt") == "blue\n"


def test_no_change_delivers_with_no_branch_and_no_pull_request(
    setup: Setup, tmp_path: Path
) -> None:
    number = asked(setup)
    work(setup, tmp_path, "echo looked and found nothing to do")
    assert setup.jobs(REPO)[number] == ("delivered", "no change")
    assert f"tireless/{number}" not in setup.forge.branches(OWNER, REPO)
    one_round(setup)
    assert setup.forge.pulls_of(OWNER, REPO) == []


def test_a_change_to_a_workflow_file_is_refused_and_nothing_is_pushed(
    setup: Setup, tmp_path: Path
) -> None:
    setup.db.scalar("SELECT tireless.set_kind_policy(kind => 'implement', max_attempts => 1)")
    number = asked(setup)
    work(setup, tmp_path, "mkdir -p .github/workflows; echo 'on: push' > .github/workflows/ci.yml")
    state, note = setup.jobs(REPO)[number]
    assert state == "failed"
    assert ".github/workflows/ci.yml" in str(note)
    assert f"tireless/{number}" not in setup.forge.branches(OWNER, REPO)


def test_a_re_request_starts_from_the_pull_request_and_updates_it(
    setup: Setup, store: JobStore, tmp_path: Path
) -> None:
    number = asked(setup)
    work(setup, tmp_path, "echo blue > paint.txt")
    one_round(setup)
    (first,) = setup.forge.pulls_of(OWNER, REPO)
    store.rerun(FORGE, OWNER, REPO, number)
    # The second attempt starts from the pull request's head: it sees the first one's work.
    work(setup, tmp_path, 'grep -q blue paint.txt || exit 1; echo "and shiny" >> paint.txt')
    assert setup.jobs(REPO)[number] == ("delivered", None)
    branch = f"tireless/{number}"
    assert setup.forge.file_at(OWNER, REPO, branch, "paint.txt") == "blue\nand shiny\n"
    one_round(setup)
    assert [p.number for p in setup.forge.pulls_of(OWNER, REPO)] == [first.number]
    assert len(setup.forge.pull_creates(OWNER, REPO)) == 1


def test_someone_elses_commit_on_the_branch_is_never_overwritten(
    setup: Setup, store: JobStore, tmp_path: Path
) -> None:
    setup.db.scalar("SELECT tireless.set_kind_policy(kind => 'implement', max_attempts => 1)")
    number = asked(setup)
    work(setup, tmp_path, "echo blue > paint.txt")
    branch = f"tireless/{number}"
    theirs = setup.forge.seed_git(OWNER, REPO, {"theirs.txt": "mine\n"}, branch=branch)
    store.rerun(FORGE, OWNER, REPO, number)
    work(setup, tmp_path, "echo green > paint.txt")
    state, note = setup.jobs(REPO)[number]
    assert state == "failed"
    assert theirs[:7] in str(note)
    assert setup.forge.branch_head(OWNER, REPO, branch) == theirs


def test_an_attempt_killed_after_its_checkpoint_resumes_from_it(
    setup: Setup, tmp_path: Path
) -> None:
    number = asked(setup)
    first = subprocess.Popen(
        [sys.executable, "-m", "tireless", "work", "--worker", "runner-1", "--lane", "cc",
         "--deliver", "--state-dir", str(tmp_path / "state"), "--", "sh", "-c",
         "echo step1 > work.txt; echo ::checkpoint::; sleep 60"],
        env=os.environ | {"DATABASE_URL": setup.db.url, token_variable(FORGE): TOKEN},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(
            lambda: setup.db.scalar("SELECT count(*) FROM tireless.checkpoint") == 1,
            "the first attempt's checkpoint to be recorded",
        )
    finally:
        first.kill()  # SIGKILL: the worker says nothing; its sandbox dies with it
        first.wait()
    with setup.db.connect() as conn:  # the attempt's own ref, named by its attempt id
        job_id, ref, token = conn.execute(
            "SELECT j.id, c.ref, j.claim_token FROM tireless.checkpoint c JOIN tireless.job j"
            " ON j.id = c.job_id"
        ).fetchone() or (None, None, None)
    assert ref == f"refs/tireless/checkpoints/{job_id}-{uuid.uuid5(ATTEMPT_NAMESPACE, str(token))}"
    with setup.db.connect() as sweeper:  # the lease runs out, and the sweeper returns the job
        sweeper.execute("UPDATE tireless.job SET claim_expires_at = now() - interval '1 second'")
        assert sweeper.execute("SELECT tireless.expire_stale_claims()").fetchone() == (1,)
        sweeper.execute("UPDATE tireless.job SET available_at = now()")  # its backoff, spent
    workspaces = tmp_path / "state" / "workspaces"
    assert len(list(workspaces.iterdir())) == 1, "the killed run's workspace is left"
    work(setup, tmp_path, "grep -qx step1 work.txt || exit 1; echo step2 >> work.txt")
    assert list(workspaces.iterdir()) == [], "runner-1 removed it when it started again"
    assert setup.jobs(REPO)[number] == ("delivered", None)
    assert setup.forge.file_at(OWNER, REPO, f"tireless/{number}", "work.txt") == "step1\nstep2\n"


def test_a_runner_without_the_forges_token_says_so_at_start_and_releases_its_jobs(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    number = asked(setup)
    monkeypatch.delenv(token_variable(FORGE))  # the poller had it; the runner has not
    result = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
        "--state-dir", str(tmp_path / "state"), "--", "true",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"no token for forge {FORGE} (set {token_variable(FORGE)}" in result.stderr
    state, note = setup.jobs(REPO)[number]
    assert state == "pending"
    assert f"this runner has no token for forge '{FORGE}'" in str(note)


def test_the_repositorys_policy_refuses_a_protected_path_and_may_allow_a_workflow_change(
    setup: Setup, store: JobStore, tmp_path: Path
) -> None:
    setup.db.scalar("SELECT tireless.set_kind_policy(kind => 'implement', max_attempts => 1)")
    store.set_repo_delivery(FORGE, OWNER, REPO, protected=["secrets/"], allow_ci=True)
    number = asked(setup)
    work(setup, tmp_path, "mkdir secrets; echo hunter2 > secrets/key.txt; echo blue > paint.txt")
    state, note = setup.jobs(REPO)[number]
    assert state == "failed"
    assert "secrets/key.txt" in str(note)
    assert f"tireless/{number}" not in setup.forge.branches(OWNER, REPO)
    store.rerun(FORGE, OWNER, REPO, number)
    work(setup, tmp_path, "mkdir -p .github/workflows; echo 'on: push' > .github/workflows/ci.yml")
    assert setup.jobs(REPO)[number] == ("delivered", None)
    pushed = setup.forge.file_at(OWNER, REPO, f"tireless/{number}", ".github/workflows/ci.yml")
    assert pushed == "on: push\n"


def test_a_push_whose_runner_died_before_delivering_is_pushed_over_by_the_next_attempt(
    setup: Setup, store: JobStore, tmp_path: Path
) -> None:
    number = asked(setup)
    first = store.claim_next("runner-0", ["cc"])
    assert first is not None
    branch = store.job_brief(first.id).branch
    assert branch is not None
    # What runner-0 did before it died: recorded its push, then pushed; no delivery recorded it.
    orphan = setup.forge.seed_git(OWNER, REPO, {"half.txt": "half done\n"}, branch=branch)
    assert store.record_push(first.id, "runner-0", branch, orphan, first.claim_token) == [orphan]
    with setup.db.connect() as sweeper:  # its lease runs out, and the sweeper returns the job
        sweeper.execute("UPDATE tireless.job SET claim_expires_at = now() - interval '1 second'")
        assert sweeper.execute("SELECT tireless.expire_stale_claims()").fetchone() == (1,)
        sweeper.execute("UPDATE tireless.job SET available_at = now()")
    work(setup, tmp_path, "echo blue > paint.txt")
    assert setup.jobs(REPO)[number] == ("delivered", None)
    assert setup.forge.file_at(OWNER, REPO, branch, "paint.txt") == "blue\n"


def test_a_delivering_worker_delivers_each_job_and_claims_the_next_in_one_transaction(
    setup: Setup, tmp_path: Path
) -> None:
    """`tireless work --deliver` that goes on: the delivery of what it pushed and the claim of its
    next job are one call of tireless.deliver_and_claim, one transaction."""
    first, second = asked(setup, "Paint the widgets blue"), asked(setup, "Paint the gadgets blue")
    with setup.db.connect() as conn:  # count the calls of the store's functions from now on
        conn.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_functions = ''pl''',"
            " current_database()); END $$"
        )
    ids = dict(rows(setup.db, "SELECT number, id FROM tireless.job"))
    # The worker stops when the queue is empty, by draining itself: its agent sends the drain
    # signal on the last job (no sandbox: a contained agent can neither see nor signal its worker).
    script = (
        f'echo blue > paint.txt; [ "$TIRELESS_JOB_ID" = {ids[second]} ] && kill -USR1 $PPID; true'
    )
    result = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--deliver",
        "--drain-on", "SIGUSR1", "--sandbox", "none", "--state-dir", str(tmp_path / "state"),
        "--", "sh", "-c", script, **{token_variable(FORGE): TOKEN},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert setup.jobs(REPO) == {first: ("delivered", None), second: ("delivered", None)}
    transactions = rows(
        setup.db,
        "SELECT 'delivered', xmin::text FROM tireless.job_event"
        " WHERE job_id = %(first)s AND to_state = 'delivered'"
        " UNION ALL SELECT 'its delivery', xmin::text FROM tireless.delivery WHERE job_id = %(first)s"
        " UNION ALL SELECT 'the next claimed', xmin::text FROM tireless.job_event"
        " WHERE job_id = %(second)s AND to_state = 'claimed'",
        {"first": ids[first], "second": ids[second]},
    )
    assert [what for what, _ in transactions] == ["delivered", "its delivery", "the next claimed"]
    assert len({xmin for _, xmin in transactions}) == 1, transactions
    # The worker's connections are gone, so their counts are in: one deliver_and_claim (the last
    # job, drained, is delivered alone, with tireless.deliver).
    wait_until_sql(
        setup.db.conninfo,
        "(SELECT calls FROM pg_stat_user_functions"
        "  WHERE schemaname = 'tireless' AND funcname = 'deliver_and_claim') = 1",
    )


def test_the_pull_request_follows_the_push_at_once_while_poll_every_waits(
    setup: Setup, tmp_path: Path
) -> None:
    """`poll --every 10m` would not read the repository again for ten minutes; the delivery makes
    it due and wakes the poller (NOTIFY tireless_poll), so the pull request opens at once."""
    number = asked(setup)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {
        token_variable(FORGE): TOKEN
    }
    command = [
        sys.executable,
        "-m",
        "tireless",
        "--database",
        setup.db.url,
        "poll",
        "--every",
        "10m",
    ]
    read = "SELECT count(*) FROM tireless.repo_poll WHERE last_success_at > now() - interval '1 minute'"
    rounds = "SELECT last_success_at FROM tireless.repo_poll"
    with subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL) as poller:
        try:
            wait_until(lambda: setup.db.scalar(read) == 1, "the poller's first round")
            first = setup.db.scalar(rounds)
            work(setup, tmp_path, "echo blue > paint.txt")
            wait_until(lambda: setup.forge.pulls_of(OWNER, REPO), "the pull request", timeout=20)
            assert setup.db.scalar(rounds) > first, "a round of its own, not the first one's"
        finally:
            poller.kill()
    (pull,) = setup.forge.pulls_of(OWNER, REPO)
    assert pull.head == f"tireless/{number}"
