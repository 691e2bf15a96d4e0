"""The agent never holds or reaches the worker's secrets: a real COMMAND run by `tireless work`
looks where an agent would (its parent's and every ancestor's /proc environment and command line,
the files the worker reads, its own environment) and finds none; and every secret the worker
knows is masked in the note it stores and in what it logs."""

from __future__ import annotations

import os
import pwd
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from psycopg.conninfo import make_conninfo

from tests.conftest import Database
from tests.helpers import enqueue_jobs, rows
from tests.support.work import clean_environment, run_worker
from tireless import JobStore
from tireless.masking import Masker, OutputMasker

# Looks everywhere an agent could: $PPID and each ancestor's environment block and command line
# (up to pid 1), every file named after the dump's path, and its own environment.
SNOOPING_AGENT = r"""
dump="$1"; shift
{
  echo "uid $(id -u)"
  pid=$PPID
  while [ "$pid" -gt 1 ]; do
    echo "== pid $pid"
    cat "/proc/$pid/environ" "/proc/$pid/cmdline" 2>&1
    pid=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$pid/status")
  done
  for file in "$@"; do echo "== $file"; cat "$file" 2>&1; done
  echo "== env"
  env
} > "$dump" 2>&1
"""


NO_SANDBOX = ("--sandbox", "none")
"""The worker's own defences, tested where the agent can see its ancestors' /proc (a sandbox's
PID namespace hides them: tests/runner/test_containment.py)."""


def secret(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex}"


def snooping_agent(public_dir: Path, *files: Path) -> tuple[list[str], Path]:
    script = public_dir / "agent.sh"
    script.write_text(SNOOPING_AGENT)
    script.chmod(0o755)
    dump = public_dir / "dump"
    return ["sh", str(script), str(dump), *map(str, files)], dump


def test_an_agent_user_reaches_no_secret_in_the_documented_setup(
    store: JobStore, db: Database, tmp_path: Path, public_dir: Path
) -> None:
    """docs/runners.md: the worker (root) reads its secrets from files only it can read, and
    runs COMMAND as another Unix user (--agent-user)."""
    if os.geteuid() != 0:
        pytest.skip("--agent-user needs the worker to run as root")
    enqueue_jobs(store, 1)
    values = {kind: secret(kind) for kind in ("dbpassword", "pgpass", "token", "webhook")}
    files = {
        "database-url": make_conninfo(db.conninfo, password=values["dbpassword"]),
        "pgpass": f"*:*:*:*:{values['pgpass']}\n",
        "gitea-token": values["token"],
        "gitea-webhook": values["webhook"],
    }
    for name, content in files.items():
        (tmp_path / name).write_text(content)
        (tmp_path / name).chmod(0o600)
    env = clean_environment() | {
        "DATABASE_URL_FILE": str(tmp_path / "database-url"),
        "PGPASSFILE": str(tmp_path / "pgpass"),
        "TIRELESS_TOKEN_GITEA_FILE": str(tmp_path / "gitea-token"),
        "TIRELESS_WEBHOOK_SECRET_GITEA_FILE": str(tmp_path / "gitea-webhook"),
    }
    command, dump = snooping_agent(public_dir, *(tmp_path / name for name in files))
    # The agent user on its own: in a sandbox the agent would not see its ancestors at all.
    done = run_worker(env, public_dir, "--agent-user", "nobody", *NO_SANDBOX, command=command)
    assert done.returncode == 0, done.stderr
    found = dump.read_bytes()
    assert f"uid {pwd.getpwnam('nobody').pw_uid}\n".encode() in found
    assert b"== pid " in found, "the agent walked its ancestors"
    for value in values.values():
        assert value.encode() not in found
    assert b"TIRELESS_TOKEN" not in found.split(b"== env")[1]
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_secrets_given_in_the_environment_leave_the_workers_environment_block(
    store: JobStore, db: Database, public_dir: Path
) -> None:
    """Started with its secrets in the environment (and a password on its command line), the
    worker executes itself again without them: its /proc environment and command line hold none."""
    enqueue_jobs(store, 1)
    values = {kind: secret(kind) for kind in ("dbpassword", "pgpassword", "token", "webhook")}
    env = clean_environment() | {
        "PGPASSWORD": values["pgpassword"],
        "TIRELESS_TOKEN_GITEA": values["token"],
        "TIRELESS_WEBHOOK_SECRET_GITEA": values["webhook"],
    }
    url = make_conninfo(db.conninfo, password=values["dbpassword"])
    command, dump = snooping_agent(public_dir)
    done = run_worker(env, public_dir, "--database", url, *NO_SANDBOX, command=command)
    assert done.returncode == 0, done.stderr
    found = dump.read_bytes()
    assert b"PATH=" in found.split(b"== env")[0], "the agent read its ancestors' environment"
    for value in values.values():
        assert value.encode() not in found
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_every_secret_the_worker_knows_is_masked_in_the_note_and_the_log(
    store: JobStore, db: Database, tmp_path: Path, public_dir: Path
) -> None:
    enqueue_jobs(store, 1)
    values = {kind: secret(kind) for kind in ("token", "webhook", "pgpass")}
    password = secret("db@pass")  # a URL writes it percent-encoded
    url = make_conninfo(db.conninfo, password=password)
    (tmp_path / "database-url").write_text(url)
    (tmp_path / "webhook").write_text(values["webhook"] + "\n")
    (tmp_path / "pgpass").write_text(f"*:*:*:*:{values['pgpass']}\n")
    env = clean_environment() | {
        "DATABASE_URL_FILE": str(tmp_path / "database-url"),
        "TIRELESS_TOKEN_GITEA": values["token"],
        "TIRELESS_WEBHOOK_SECRET_GITEA_FILE": str(tmp_path / "webhook"),
        "PGPASSFILE": str(tmp_path / "pgpass"),
    }
    # An agent that learnt every secret prints them and fails: they would go into the note.
    leaked = [*values.values(), password, url, f"postgresql://postgres:{quote(password)}@db/x"]
    script = public_dir / "leak.sh"
    script.write_text("".join(f"echo 'leak {value}'\n" for value in leaked) + "exit 1\n")
    done = run_worker(env, public_dir, command=["sh", str(script)])
    assert done.returncode == 0, done.stderr
    note = db.scalar("SELECT note FROM tireless.job")
    assert note.splitlines() == ["leak ***"] * 5 + ["leak postgresql://postgres:***@db/x"]
    for value in [*values.values(), password, quote(password)]:
        assert value not in note
        assert value.encode() not in done.stdout
        assert value.encode() not in done.stderr
    assert b"leak ***" in done.stdout


def test_a_secret_split_between_chunks_of_output_is_masked() -> None:
    masker = Masker(["s3cret-token", "pw"])  # too short to mask: "pw"
    output = b"start s3cret-token middle s3cret-token end pw"
    for size in (1, 3, 7, len(output)):
        stream = OutputMasker(masker)
        chunks = [output[i : i + size] for i in range(0, len(output), size)]
        masked = b"".join(stream.feed(chunk) for chunk in chunks) + stream.end()
        assert masked == b"start *** middle *** end pw", size
    lines = OutputMasker(masker)
    assert lines.feed(b"a line\n") == b"a line\n", "a complete line goes out at once"
    first = lines.feed(b"the next s3cr")
    assert first + lines.feed(b"et-token\n") == b"the next ***\n"


def test_an_unknown_agent_user_is_a_usage_error(db: Database, public_dir: Path) -> None:
    done = run_worker(
        clean_environment() | {"DATABASE_URL": db.url},
        public_dir,
        "--agent-user",
        "no-such-user-here",
        command=["true"],
    )
    assert done.returncode == 2
    assert (
        done.stderr.decode().strip() == "tireless: --agent-user: no Unix user 'no-such-user-here'"
    )


def test_the_report_is_masked_and_a_link_in_its_place_is_not_followed(
    store: JobStore, db: Database, tmp_path: Path, public_dir: Path
) -> None:
    enqueue_jobs(store, 2)
    token = secret("token")
    (tmp_path / "database-url").write_text(db.url)
    env = clean_environment() | {
        "DATABASE_URL_FILE": str(tmp_path / "database-url"),
        "TIRELESS_TOKEN_GITEA": token,
    }
    reporting = public_dir / "report.sh"
    reporting.write_text(f'printf "report with {token}" > "$TIRELESS_REPORT_FILE"\n')
    assert run_worker(env, public_dir, command=["sh", str(reporting)]).returncode == 0
    # The report file the mirror would post, a link to the worker's credentials.
    linking = public_dir / "link.sh"
    linking.write_text(f'ln -s "{tmp_path / "database-url"}" "$TIRELESS_REPORT_FILE"\n')
    assert run_worker(env, public_dir, command=["sh", str(linking)]).returncode == 0
    assert rows(db, "SELECT report FROM tireless.job_attempt WHERE report IS NOT NULL") == [
        ("report with ***",)
    ]
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'delivered'") == 2
