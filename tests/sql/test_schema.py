"""The table refuses impossible rows itself: even the superuser, writing past the API, cannot
store a job that breaks a named constraint, a second live job for an issue, a change to a
terminal job, the loss of a live job, or a rewrite of history."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import errors

from tests.conftest import Database
from tests.helpers import insert_job
from tireless.models import TERMINAL_STATES

CLAIM = "claimed_by = 'runner-1', claim_expires_at = now() + interval '10 minutes', claim_token = gen_random_uuid()"

# (constraint, the error it raises, a statement that breaks only it; %(id)s is a pending job)
BAD_ROWS: list[tuple[str, type[psycopg.Error], str]] = [
    (
        "pending_holds_no_claim",
        errors.CheckViolation,
        "UPDATE tireless.job SET claimed_by = 'runner-1' WHERE id = %(id)s",
    ),
    (
        "claimed_holds_claim",
        errors.CheckViolation,
        "UPDATE tireless.job SET state = 'claimed', attempts = 1 WHERE id = %(id)s",
    ),
    (
        "terminal_holds_no_claim",
        errors.CheckViolation,
        "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, claimed_by)"
        " VALUES ('gitea', 'acme', 'widgets', 2, 'implement', 'cc', 'delivered', 'runner-1')",
    ),
    (
        "claimed_job_counts_an_attempt",
        errors.CheckViolation,
        f"UPDATE tireless.job SET state = 'claimed', {CLAIM}, attempts = 0 WHERE id = %(id)s",
    ),
    (
        "issue_number_positive",
        errors.CheckViolation,
        "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)"
        " VALUES ('gitea', 'acme', 'widgets', 0, 'implement', 'cc')",
    ),
    (
        "attempts_not_negative",
        errors.CheckViolation,
        "UPDATE tireless.job SET attempts = -1 WHERE id = %(id)s",
    ),
    (
        "lane_is_a_name",
        errors.CheckViolation,
        "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)"
        " VALUES ('gitea', 'acme', 'widgets', 2, 'implement', 'two words')",
    ),
    (
        "given_back_within_attempts",
        errors.CheckViolation,
        "UPDATE tireless.job SET given_back = attempts + 1 WHERE id = %(id)s",
    ),
    (
        "not_its_own_parent",
        errors.CheckViolation,
        "UPDATE tireless.job SET parent_id = id WHERE id = %(id)s",
    ),
    (
        "pending_holds_no_cancel_request",
        errors.CheckViolation,
        "UPDATE tireless.job SET cancel_requested_at = now() WHERE id = %(id)s",
    ),
    (
        "parent_is_a_job",
        errors.ForeignKeyViolation,
        "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, parent_id)"
        " VALUES ('gitea', 'acme', 'widgets', 2, 'implement', 'cc', %(id)s + 1000)",
    ),
]


@pytest.fixture
def conn(db: Database) -> Iterator[psycopg.Connection[Any]]:
    with db.connect() as connection:
        yield connection


def job_row(conn: psycopg.Connection[Any], job_id: int) -> tuple[Any, ...] | None:
    return conn.execute("SELECT * FROM tireless.job WHERE id = %s", [job_id]).fetchone()


def job_count(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM tireless.job").fetchone()
    assert row is not None
    count: int = row[0]
    return count


@pytest.mark.parametrize(
    ("constraint", "error", "statement"), BAD_ROWS, ids=[case[0] for case in BAD_ROWS]
)
def test_each_named_constraint_refuses_its_bad_row(
    conn: psycopg.Connection[Any], constraint: str, error: type[psycopg.Error], statement: str
) -> None:
    job_id = insert_job(conn, 1)  # a well-formed pending job: the baseline the table accepts
    before = job_row(conn, job_id)
    with pytest.raises(error) as refused:
        conn.execute(statement, {"id": job_id})
    assert refused.value.diag.constraint_name == constraint
    assert job_row(conn, job_id) == before
    assert job_count(conn) == 1


def rule_names(conn: psycopg.Connection[Any]) -> set[str]:
    """The names of the rules a job row keeps: its check and foreign key constraints, where the
    constraint job_rules_hold stands for the rules its function names (0015_lean_rules)."""
    constraints = {
        name
        for (name,) in conn.execute(
            """SELECT conname FROM pg_constraint
                WHERE conrelid = 'tireless.job'::regclass AND contype IN ('c', 'f')"""
        )
    }
    row = conn.execute("SELECT prosrc FROM pg_proc WHERE oid = 'tireless.job_rules_hold'::regproc")
    body = row.fetchone()
    assert body is not None
    return (constraints - {"job_rules_hold"}) | set(re.findall(r"THEN '(\w+)'", body[0]))


def test_the_table_of_bad_rows_covers_every_rule_of_the_job_table(
    conn: psycopg.Connection[Any],
) -> None:
    assert rule_names(conn) == {case[0] for case in BAD_ROWS}


def test_a_row_that_breaks_two_rules_is_refused_by_the_first_by_name(
    conn: psycopg.Connection[Any],
) -> None:
    """PostgreSQL tests a table's constraints in the order of their names; the rules that
    job_rules_hold gathers keep that order, so a row that breaks two is refused as before."""
    job_id = insert_job(conn, 1)
    with pytest.raises(errors.CheckViolation) as refused:
        conn.execute(
            "UPDATE tireless.job SET state = 'claimed', attempts = -1 WHERE id = %s", [job_id]
        )
    assert refused.value.diag.constraint_name == "attempts_not_negative"
    with pytest.raises(errors.CheckViolation) as refused:
        conn.execute(
            "UPDATE tireless.job SET parent_id = id, cancel_requested_at = now() WHERE id = %s",
            [job_id],
        )
    assert refused.value.diag.constraint_name == "not_its_own_parent"


@pytest.mark.parametrize("live", ["pending", "claimed"])
@pytest.mark.parametrize("second", ["pending", "claimed"])
def test_one_live_job_per_issue_refuses_a_second_live_job(
    conn: psycopg.Connection[Any], live: str, second: str
) -> None:
    insert_job(conn, 1, live)
    with pytest.raises(errors.UniqueViolation) as refused:
        insert_job(conn, 1, second)
    assert refused.value.diag.constraint_name == "one_live_job_per_issue"
    insert_job(conn, 2, second)  # another issue is another key
    assert job_count(conn) == 2


@pytest.mark.parametrize("ended", sorted(TERMINAL_STATES))
def test_one_live_job_per_issue_accepts_a_new_job_once_the_old_one_is_terminal(
    conn: psycopg.Connection[Any], ended: str
) -> None:
    old = insert_job(conn, 1)
    conn.execute("UPDATE tireless.job SET state = %s WHERE id = %s", [ended, old])
    new = insert_job(conn, 1)
    assert new != old
    with pytest.raises(errors.UniqueViolation):
        insert_job(conn, 1)  # the new job is live again: one at a time


@pytest.mark.parametrize("ended", sorted(TERMINAL_STATES))
def test_terminal_job_is_final_refuses_any_update(
    conn: psycopg.Connection[Any], ended: str
) -> None:
    job_id = insert_job(conn, 1, ended)
    before = job_row(conn, job_id)
    for change in ["state = 'pending'", "note = 'rewritten'", "attempts = attempts + 1"]:
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(f"UPDATE tireless.job SET {change} WHERE id = %s", [job_id])
        assert refused.value.sqlstate == "TL003", change
        assert f"job {job_id} is {ended}" in str(refused.value)
    assert job_row(conn, job_id) == before


@pytest.mark.parametrize("live", ["pending", "claimed"])
def test_live_job_is_never_deleted(conn: psycopg.Connection[Any], live: str) -> None:
    job_id = insert_job(conn, 1, live)
    with pytest.raises(psycopg.Error) as refused:
        conn.execute("DELETE FROM tireless.job WHERE id = %s", [job_id])
    assert refused.value.sqlstate == "TL002"
    assert job_row(conn, job_id) is not None


def test_job_event_is_append_only(conn: psycopg.Connection[Any]) -> None:
    job_id = insert_job(conn, 1)
    conn.execute("UPDATE tireless.job SET state = 'cancelled' WHERE id = %s", [job_id])
    history = conn.execute("SELECT to_state, * FROM tireless.job_event ORDER BY id").fetchall()
    assert [row[0] for row in history] == ["pending", "cancelled"]  # the trigger wrote both
    for statement in [
        "UPDATE tireless.job_event SET note = 'rewritten'",
        "DELETE FROM tireless.job_event",
        "TRUNCATE tireless.job_event",
    ]:
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(statement)
        assert refused.value.sqlstate == "TL007", statement
        assert f"{statement.split()[0]} refused" in str(refused.value)
    after = conn.execute("SELECT to_state, * FROM tireless.job_event ORDER BY id").fetchall()
    assert after == history


def test_the_history_has_one_index_its_key_job_then_id(conn: psycopg.Connection[Any]) -> None:
    """One index entry per event (bench/results.md): the key (job_id, id) is also the order a job's
    history is read in and what prune deletes by."""
    indexes = conn.execute(
        "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index"
        " WHERE indrelid = 'tireless.job_event'::regclass"
    ).fetchall()
    # A BRIN index (0010_web, the rollup's range of ids) writes no entry per event: allowed.
    entries = [(n, "(job_id, id)" in d) for n, d in indexes if " USING brin " not in d]
    assert entries == [("tireless.job_event_pkey", True)]
    assert [n for n, d in indexes if " USING brin " in d] == ["tireless.job_events_by_id"]
