"""`tireless work` hands a plan job TIRELESS_PLAN_FILE (and a discover job
TIRELESS_PROPOSALS_FILE), reads what COMMAND wrote there as it reads the report, and gives it to
the store: a good plan is attached and the job delivered; a bad one fails the attempt with a note
naming the task and the field; a symbolic link there is not followed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.helpers import issue, rows, tireless_cli, tracked
from tests.support.work import agent, state_of, work_args
from tireless import JobStore

pytestmark = pytest.mark.usefixtures("in_the_tests_directory")

GOOD = [{"title": "Build it", "body": "b"}, {"title": "Test it", "body": "", "depends_on": [0]}]


def run(store: JobStore, db: Database, tmp_path: Path, labels: tuple[str, ...], body: str) -> int:
    tracked(store).enqueue([issue(1, *labels)])
    result = tireless_cli(db.url, *work_args("--once", "--"), *agent(tmp_path, body))
    assert result.returncode == 0, result.stderr
    job_id: int = db.scalar("SELECT id FROM tireless.job")
    return job_id


def test_a_plan_job_attaches_its_plan_and_is_delivered(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    (tmp_path / "plan.json").write_text(json.dumps(GOOD))
    job_id = run(
        store, db, tmp_path, ("tireless", "tireless/plan"),
        'cat > "$OUT/stdin"\n[ -z "$TIRELESS_PROPOSALS_FILE" ] || exit 3\n'
        'cp "$OUT/plan.json" "$TIRELESS_PLAN_FILE"',
    )  # fmt: skip
    assert state_of(db, job_id) == "delivered"
    tasks = rows(db, "SELECT task, title FROM tireless.job_tasks(%(j)s)", {"j": job_id})
    assert tasks == [(0, "Build it"), (1, "Test it")]
    stdin = json.loads((tmp_path / "stdin").read_text())
    assert stdin["plan_file"].endswith("/plan.json")
    assert stdin["proposals_file"] is None


def test_a_bad_plan_fails_the_attempt_naming_the_task(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    bad = [*GOOD, {"title": "", "body": "x"}]
    (tmp_path / "plan.json").write_text(json.dumps(bad))
    job_id = run(
        store, db, tmp_path, ("tireless", "tireless/discover"),
        'cp "$OUT/plan.json" "$TIRELESS_PROPOSALS_FILE"',
    )  # fmt: skip
    assert state_of(db, job_id) == "pending"
    note = db.scalar("SELECT note FROM tireless.job")
    assert note == 'malformed proposals: task 2: "title" must be 1 to 200 characters'
    assert rows(db, "SELECT count(*) FROM tireless.plan_task") == [(0,)]


def test_a_plan_file_that_is_not_json_or_a_link_is_refused(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    job_id = run(
        store, db, tmp_path, ("tireless", "tireless/plan"), 'echo "[{" > "$TIRELESS_PLAN_FILE"'
    )
    assert state_of(db, job_id) == "pending"
    assert db.scalar("SELECT note FROM tireless.job").startswith("TIRELESS_PLAN_FILE is not JSON")
    (tmp_path / "secret.json").write_text(json.dumps(GOOD))
    with db.connect() as conn:
        conn.execute("UPDATE tireless.job SET available_at = now()")
    result = tireless_cli(
        db.url, *work_args("--once", "--"),
        *agent(tmp_path, 'ln -s "$OUT/secret.json" "$TIRELESS_PLAN_FILE"'),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert state_of(db, job_id) == "delivered"  # the link was not followed: no plan
    assert rows(db, "SELECT count(*) FROM tireless.plan_task") == [(0,)]
