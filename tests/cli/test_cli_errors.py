"""Bad input at the command line: each gives one line `tireless: ...` (a database error's SQLSTATE
first, then its DETAIL and HINT lines) and its documented exit code, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs, tireless_cli
from tests.support.roles import Login
from tireless import JobStore


@dataclass(frozen=True)
class BadInput:
    name: str
    args: tuple[str, ...]
    code: int
    first_line: str  # the start of stderr's first line
    more: tuple[str, ...] = ()  # the lines after it, exactly
    env: tuple[tuple[str, str], ...] = ()
    role: str | None = None  # run as a login member of this group
    hold_job_lock: bool = False  # another session holds job 1's row lock meanwhile


CASES = [
    BadInput(
        "malformed --database for work",
        ("--database", "postgresql://[oops", "work", "--worker", "w", "--lane", "cc", "--", "true"),
        2,
        "tireless: bad --database or DATABASE_URL: ",
    ),
    BadInput(
        "malformed --database for status",
        ("--database", "not a conninfo", "status"),
        2,
        "tireless: bad --database or DATABASE_URL: ",
    ),
    BadInput(
        "negative limit",
        ("jobs", "--limit", "-1"),
        2,
        "tireless jobs: argument --limit: not a count of 0 or more: '-1'",
    ),
    BadInput("unknown job", ("show", "987654321"), 1, "tireless: TL001: no job with id 987654321"),
    BadInput(
        "unknown job to move",
        ("transition", "987654321", "delivered", "--worker", "w1"),
        1,
        "tireless: TL001: no job with id 987654321",
    ),
    BadInput(
        "not the holder, with DETAIL and HINT",
        ("transition", "1", "delivered", "--worker", "intruder"),
        1,
        "tireless: TL004: worker 'intruder' does not hold job 1",
        (
            "DETAIL: The job is claimed by 'w1'.",
            "HINT: The lease was lost: stop the work and leave the job to the store.",
        ),
    ),
    BadInput(
        "wrong role",
        ("jobs",),
        1,
        "tireless: 42501: permission denied for table job",
        (
            "HINT: tireless jobs and show read tireless.job, which only tireless_admin may read;"
            " other roles read tireless.job_list in psql, or the dashboard",
        ),
        role="tireless_runner",
    ),
    BadInput(
        "wrong role to prune",
        ("prune", "--older-than", "90d"),
        1,
        "tireless: 42501: permission denied for function prune",
        role="tireless_runner",
    ),
    BadInput(
        "lock timeout",
        ("transition", "1", "delivered", "--worker", "w1"),
        1,
        "tireless: 55P03: canceling statement due to lock timeout",
        env=(("PGOPTIONS", "-c lock_timeout=200ms"),),
        hold_job_lock=True,
    ),
    BadInput(
        "cancelled statement",
        ("transition", "1", "delivered", "--worker", "w1"),
        1,
        "tireless: 57014: canceling statement due to statement timeout",
        env=(("PGOPTIONS", "-c statement_timeout=200ms"),),
        hold_job_lock=True,
    ),
    BadInput("unknown file", ("enqueue", "/nonexistent/issues.json"), 2, "tireless: [Errno 2]"),
    BadInput(
        "a drain signal that is not one",
        ("work", "--worker", "w", "--lane", "cc", "--drain-on", "SIGNOPE", "--", "true"),
        2,
        "tireless work: argument --drain-on: not a signal to drain on: 'SIGNOPE'",
    ),
]


@contextmanager
def job_lock_held(db: Database, hold: bool) -> Iterator[None]:
    """While the block runs, another session holds job 1's row lock (when `hold`)."""
    if not hold:
        yield
        return
    with db.connect(autocommit=False) as conn:
        conn.execute("SELECT 1 FROM tireless.job WHERE id = 1 FOR UPDATE")
        yield
        conn.rollback()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_gives_one_line_and_its_exit_code_never_a_traceback(
    db: Database,
    store: JobStore,
    login: Login,
    case: BadInput,
) -> None:
    enqueue_jobs(store, 1)
    claimed(store, "w1")
    url = db.url if case.role is None else login(case.role)
    with job_lock_held(db, case.hold_job_lock):
        result = tireless_cli(url, *case.args, **dict(case.env))
    assert "Traceback" not in result.stderr
    lines = result.stderr.rstrip("\n").splitlines()
    assert lines[0].startswith(case.first_line), result.stderr
    assert tuple(lines[1:]) == case.more, result.stderr
    assert result.returncode == case.code, result.stderr
