"""One vocabulary (invariant 8) and a catalog that explains and protects itself: the enums of
the schema are Python's enums, every function and rule carries a comment, every function a role
may call runs as its owner with a pinned search_path, and every SQLSTATE the SQL raises has its
Python class."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import insert_job
from tireless.errors import ERROR_CLASSES, SQLSTATE_TO_ERROR, TirelessError
from tireless.models import (
    TERMINAL_STATES,
    ForgeKind,
    Heartbeat,
    JobKind,
    JobState,
    PullAction,
)

PINNED_SEARCH_PATH = "search_path=pg_catalog, pg_temp"
IN_TIRELESS = "p.pronamespace = 'tireless'::regnamespace"


@pytest.fixture
def conn(db: Database) -> Iterator[psycopg.Connection[Any]]:
    with db.connect() as connection:
        yield connection


def column(conn: psycopg.Connection[Any], query: str) -> list[Any]:
    return [row[0] for row in conn.execute(query)]


def enum_labels(conn: psycopg.Connection[Any], type_name: str) -> list[str]:
    rows = conn.execute(
        "SELECT enumlabel FROM pg_enum WHERE enumtypid = %s::regtype ORDER BY enumsortorder",
        [type_name],
    )
    return [label for (label,) in rows]


def test_job_state_is_one_vocabulary_in_sql_and_python(conn: psycopg.Connection[Any]) -> None:
    assert set(enum_labels(conn, "tireless.job_state")) == {state.value for state in JobState}


def test_job_kind_is_one_vocabulary_and_its_order_is_routing_precedence(
    conn: psycopg.Connection[Any],
) -> None:
    assert enum_labels(conn, "tireless.job_kind") == [kind.value for kind in JobKind]


def test_forge_kind_is_one_vocabulary_in_sql_and_python(conn: psycopg.Connection[Any]) -> None:
    assert enum_labels(conn, "tireless.forge_kind") == [kind.value for kind in ForgeKind]


def test_pull_action_answers_only_the_words_of_the_python_enum(
    conn: psycopg.Connection[Any],
) -> None:
    """pull_write's actions are literals in its body: exactly the PullAction values."""
    body = column(
        conn,
        "SELECT prosrc FROM pg_proc WHERE oid ="
        " 'tireless.pull_write(tireless.forge_write)'::regprocedure",
    )[0]
    answered = set(re.findall(r"(?:THEN|ELSE) '(\w+)'", body))
    assert answered == {action.value for action in PullAction}


def test_heartbeat_answers_only_the_words_of_the_python_enum(
    conn: psycopg.Connection[Any],
) -> None:
    """heartbeat's answers are literals in its body and in its watchdog's (watch_attempt, whose
    stops it records and returns): each is a Heartbeat value, and each value is answered somewhere."""
    bodies = column(
        conn,
        "SELECT pg_get_functiondef(p.oid) FROM pg_proc p"
        " WHERE p.pronamespace = 'tireless'::regnamespace"
        " AND p.proname IN ('heartbeat', 'watch_attempt')",
    )
    assert len(bodies) == 2
    answered = set(re.findall(r"(?:RETURN|THEN|ELSE|:=) '(\w+)'", "\n".join(bodies)))
    assert answered == {answer.value for answer in Heartbeat}


def test_terminal_states_are_one_set_in_python_and_in_is_terminal(
    conn: psycopg.Connection[Any],
) -> None:
    terminal = column(
        conn,
        "SELECT s FROM unnest(enum_range(NULL::tireless.job_state)) AS s WHERE tireless.is_terminal(s)",
    )
    assert set(terminal) == TERMINAL_STATES
    assert {state for state in JobState if state.is_terminal} == TERMINAL_STATES


def test_terminal_states_are_exactly_those_that_make_room_for_a_new_job(
    conn: psycopg.Connection[Any],
) -> None:
    """The complement of one_live_job_per_issue's predicate, found by trying: for each state, a
    second pending job for an issue whose job is in that state is accepted or refused."""
    refused_by: dict[JobState, str | None] = {}
    for number, state in enumerate(JobState, start=1):
        insert_job(conn, number, state.value)
        try:
            insert_job(conn, number, "pending")
        except psycopg.errors.UniqueViolation as refused:
            refused_by[state] = refused.diag.constraint_name
        else:
            refused_by[state] = None
    assert {state for state, index in refused_by.items() if index is None} == TERMINAL_STATES
    assert {index for index in refused_by.values() if index} == {"one_live_job_per_issue"}


def test_every_function_has_a_comment(conn: psycopg.Connection[Any]) -> None:
    functions = conn.execute(
        f"SELECT p.oid::regprocedure::text, obj_description(p.oid, 'pg_proc') FROM pg_proc p WHERE {IN_TIRELESS}"
    ).fetchall()
    assert len(functions) > 20
    assert [name for name, comment in functions if not comment] == []


def test_every_rule_on_a_tireless_table_has_a_comment(conn: psycopg.Connection[Any]) -> None:
    """Every check, foreign key, unique and exclusion constraint; a primary key is an identity,
    not a rule."""
    silent = column(
        conn,
        """SELECT c.conrelid::regclass::text || '.' || c.conname FROM pg_constraint c
            WHERE c.connamespace = 'tireless'::regnamespace AND c.contype <> 'p'
              AND obj_description(c.oid, 'pg_constraint') IS NULL""",
    )
    assert silent == []


def test_every_function_a_role_may_call_runs_as_its_owner(conn: psycopg.Connection[Any]) -> None:
    """SECURITY DEFINER, so the roles reach the private tables only through the API; the only
    exceptions are IMMUTABLE helpers (is_terminal, is_lane_name), which read no table at all."""
    granted = conn.execute(
        f"""SELECT DISTINCT p.oid::regprocedure::text, p.prosecdef, p.provolatile
              FROM pg_proc p, aclexplode(p.proacl) a
             WHERE {IN_TIRELESS} AND a.privilege_type = 'EXECUTE'
               AND pg_get_userbyid(a.grantee) LIKE 'tireless\\_%'"""
    ).fetchall()
    assert "tireless.claim_next(text,text[],interval)" in {name for name, _, _ in granted}
    exposed = [name for name, definer, volatility in granted if not definer and volatility != "i"]
    assert exposed == []


def test_every_security_definer_function_pins_its_search_path(
    conn: psycopg.Connection[Any],
) -> None:
    definers = conn.execute(
        f"SELECT p.oid::regprocedure::text, p.proconfig FROM pg_proc p WHERE {IN_TIRELESS} AND p.prosecdef"
    ).fetchall()
    assert definers
    assert [name for name, config in definers if PINNED_SEARCH_PATH not in (config or [])] == []


def test_no_tireless_function_is_executable_by_public(conn: psycopg.Connection[Any]) -> None:
    public = column(
        conn,
        f"""SELECT p.oid::regprocedure::text
              FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
             WHERE {IN_TIRELESS} AND a.grantee = 0 AND a.privilege_type = 'EXECUTE'""",
    )
    assert public == []


def sqlstates_raised_by_the_sql() -> set[str]:
    """The SQLSTATEs the SQL files of db/ and the migrations (their DO blocks) raise."""
    db = files("tireless") / "db"
    sources = [*db.iterdir(), *(db / "migrations").iterdir()]
    text = "\n".join(
        p.read_text() for p in sources if p.name.endswith(".sql") and p.name != "schema.sql"
    )
    return set(re.findall(r"ERRCODE\s*=\s*'([0-9A-Z]{5})'", text))


def test_every_sqlstate_the_sql_raises_has_its_python_class() -> None:
    raised = sqlstates_raised_by_the_sql()
    assert "TL001" in raised
    assert raised - SQLSTATE_TO_ERROR.keys() == set()
    ours = {code for code in SQLSTATE_TO_ERROR if code.startswith("TL")}
    assert ours == {code for code in raised if code.startswith("TL")}, "a TL class nothing raises"


def test_each_error_class_has_its_own_code() -> None:
    codes = [cls.sqlstate for cls in ERROR_CLASSES]
    assert len(set(codes)) == len(codes) == len(SQLSTATE_TO_ERROR)
    assert all(re.fullmatch(r"[0-9A-Z]{5}", code) for code in codes)
    assert set(TirelessError.__subclasses__()) == set(ERROR_CLASSES)


def test_terminal_job_is_final_refuses_exactly_the_states_is_terminal_names(
    conn: psycopg.Connection[Any],
) -> None:
    """terminal_job_is_final tests one comparison, `OLD.state > 'claimed'`, instead of calling
    tireless.is_terminal (bench/results.md): in job_state's order the states after claimed are
    exactly the terminal ones, so the trigger refuses the changes is_terminal names."""
    terminal = column(
        conn,
        "SELECT s::text FROM unnest(enum_range(NULL::tireless.job_state)) AS s"
        " WHERE tireless.is_terminal(s)",
    )
    after_claimed = column(
        conn,
        "SELECT s::text FROM unnest(enum_range(NULL::tireless.job_state)) AS s WHERE s > 'claimed'",
    )
    assert after_claimed == terminal == sorted(TERMINAL_STATES, key=list(JobState).index)
    trigger = column(
        conn,
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger"
        " WHERE tgrelid = 'tireless.job'::regclass AND tgname = 'terminal_job_is_final'",
    )[0]
    assert "WHEN ((old.state > 'claimed'::tireless.job_state))" in trigger


def test_the_rules_of_a_job_row_use_is_terminal_and_is_lane_name(
    conn: psycopg.Connection[Any],
) -> None:
    """tireless.job_rules_hold, which the constraint job_rules_hold calls, asks tireless.is_terminal
    and tireless.is_lane_name instead of spelling out the states and the pattern again."""
    body = column(
        conn, "SELECT prosrc FROM pg_proc WHERE oid = 'tireless.job_rules_hold'::regproc"
    )[0]
    assert "tireless.is_terminal(job.state)" in body
    assert "tireless.is_lane_name(job.lane)" in body
    assert not re.search(r"'(delivered|failed|cancelled)'", body)
    check = column(
        conn,
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = 'tireless.job'::regclass AND conname = 'job_rules_hold'",
    )
    assert check == ["CHECK (tireless.job_rules_hold(job.*))"]


def test_the_history_trigger_sees_every_change_of_state_and_no_role_can_go_around_it(
    conn: psycopg.Connection[Any],
) -> None:
    """Every writer of a job's state goes through the history trigger: it fires for each row
    inserted and each UPDATE of state, it is enabled, and no tireless role owns the tables (only
    an owner can disable a trigger) or may write them directly (tests/sql/test_roles.py)."""
    triggers = conn.execute(
        """SELECT t.tgname, t.tgenabled, pg_get_triggerdef(t.oid) FROM pg_trigger t
            WHERE t.tgrelid = 'tireless.job'::regclass AND NOT t.tgisinternal
              AND t.tgfoid = 'tireless.record_job_event()'::regprocedure ORDER BY t.tgname"""
    ).fetchall()
    assert [(name, enabled) for name, enabled, _ in triggers] == [
        ("job_created_event", "O"),
        ("job_state_changed_event", "O"),
    ]
    assert "AFTER INSERT ON tireless.job FOR EACH ROW" in triggers[0][2]
    assert "AFTER UPDATE OF state ON tireless.job FOR EACH ROW" in triggers[1][2]
    owners = column(
        conn,
        """SELECT DISTINCT pg_get_userbyid(c.relowner) FROM pg_class c
            WHERE c.oid IN ('tireless.job'::regclass, 'tireless.job_event'::regclass)""",
    )
    assert [owner for owner in owners if owner.startswith("tireless_")] == []


def test_finish_and_claim_claims_with_claim_next_s_own_first_statement(
    conn: psycopg.Connection[Any],
) -> None:
    """finish_and_claim carries a copy of claim_next's first statement (one lane where one
    repository has work, docs/performance.md): the copy must stay the statement it copies."""

    def claim_statement(function: str) -> str:
        source = column(conn, f"SELECT prosrc FROM pg_proc WHERE oid = '{function}'::regprocedure")
        start = source[0].index("WITH sole_turn AS (")
        end = source[0].index("RETURNING j.*;", start)
        return " ".join(source[0][start:end].split())

    original = claim_statement("tireless.claim_next(text, text[], interval)")
    copy = claim_statement(
        "tireless.finish_and_claim(bigint, text, text, text[], interval, uuid, text)"
    )
    assert "claim_next.lanes[1]" in original
    assert copy == original.replace("claim_next.", "finish_and_claim.")
