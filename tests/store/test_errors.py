"""Every refusal, through SQL and through the adapter: its own SQLSTATE and exception class, a
message that names the bad value, and a database left exactly as it was."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, LiteralString

import psycopg
import pytest
from psycopg import sql

from tests.conftest import Database
from tests.helpers import enqueue_jobs, issue
from tireless import JobStore
from tireless.errors import (
    ERROR_CLASSES,
    DuplicateLiveJob,
    IllegalTransition,
    InvalidArgument,
    InvariantViolated,
    JobIsTerminal,
    MalformedIssue,
    NotHolder,
    TirelessError,
    UnknownJob,
    UnknownRepository,
    translated_errors,
)

UNKNOWN = 987654321


@dataclass(frozen=True)
class Refusal:
    name: str
    sql: LiteralString  # placeholders %(pending)s, %(claimed)s, %(delivered)s, %(unknown)s
    call: Callable[[JobStore, dict[str, int]], object] | None  # None: the typed API cannot say it
    error: type[TirelessError]
    names: str  # in the message; formatted with the same ids


def claim(worker: Any = "w1", lanes: Any = ("cc",), lease: Any = timedelta(minutes=1)) -> Any:
    return lambda store, ids: store.claim_next(worker, lanes, lease)


REFUSALS = [
    Refusal(
        "unknown job: transition",
        "SELECT tireless.transition(job_id => %(unknown)s, to_state => 'delivered', worker => 'w1')",
        lambda store, ids: store.transition(ids["unknown"], "delivered", "w1"),
        UnknownJob,
        "no job with id {unknown}",
    ),
    Refusal(
        "unknown job: renew",
        "SELECT tireless.renew_claim(job_id => %(unknown)s, worker => 'w1')",
        lambda store, ids: store.renew_claim(ids["unknown"], "w1"),
        UnknownJob,
        "no job with id {unknown}",
    ),
    Refusal(
        "pending to delivered",
        "SELECT tireless.transition(job_id => %(pending)s, to_state => 'delivered')",
        lambda store, ids: store.transition(ids["pending"], "delivered"),
        IllegalTransition,
        "job {pending} is pending: it can be cancelled, not moved to delivered",
    ),
    Refusal(
        "claimed to claimed",
        "SELECT tireless.transition(job_id => %(claimed)s, to_state => 'claimed', worker => 'w1')",
        lambda store, ids: store.transition(ids["claimed"], "claimed", "w1"),
        IllegalTransition,
        "job {claimed} cannot be moved to claimed",
    ),
    Refusal(
        "terminal",
        "SELECT tireless.transition(job_id => %(delivered)s, to_state => 'failed')",
        lambda store, ids: store.transition(ids["delivered"], "failed"),
        JobIsTerminal,
        "job {delivered} is delivered and never changes again",
    ),
    Refusal(
        "not the holder",
        "SELECT tireless.transition(job_id => %(claimed)s, to_state => 'delivered', worker => 'w2')",
        lambda store, ids: store.transition(ids["claimed"], "delivered", "w2"),
        NotHolder,
        "worker 'w2' does not hold job {claimed}",
    ),
    Refusal(
        "null worker",
        "SELECT * FROM tireless.claim_next(worker => NULL, lanes => '{cc}')",
        claim(worker=None),
        InvalidArgument,
        "got null",
    ),
    Refusal(
        "empty worker",
        "SELECT * FROM tireless.claim_next(worker => '', lanes => '{cc}')",
        claim(worker=""),
        InvalidArgument,
        "got ''",
    ),
    Refusal(
        "blank worker",
        "SELECT * FROM tireless.claim_next(worker => '   ', lanes => '{cc}')",
        claim(worker="   "),
        InvalidArgument,
        "got '   '",
    ),
    Refusal(
        "201-character worker",
        "SELECT * FROM tireless.claim_next(worker => repeat('w', 201), lanes => '{cc}')",
        claim(worker="w" * 201),
        InvalidArgument,
        "got '" + "w" * 201 + "'",
    ),
    Refusal(
        "lease 0",
        "SELECT * FROM tireless.claim_next(worker => 'w1', lanes => '{cc}', lease => '0')",
        claim(lease=timedelta(0)),
        InvalidArgument,
        "got 00:00:00",
    ),
    Refusal(
        "negative lease",
        "SELECT * FROM tireless.claim_next(worker => 'w1', lanes => '{cc}', lease => '-1 days')",
        claim(lease=timedelta(days=-1)),
        InvalidArgument,
        "got -1 days",
    ),
    Refusal(
        "lease of 2 days",
        "SELECT * FROM tireless.claim_next(worker => 'w1', lanes => '{cc}', lease => '2 days')",
        claim(lease=timedelta(days=2)),
        InvalidArgument,
        "got 2 days",
    ),
    Refusal(
        "renew with lease 0",
        "SELECT tireless.renew_claim(job_id => %(claimed)s, worker => 'w1', lease => '0')",
        lambda store, ids: store.renew_claim(ids["claimed"], "w1", timedelta(0)),
        InvalidArgument,
        "got 00:00:00",
    ),
    Refusal(
        "null lanes",
        "SELECT * FROM tireless.claim_next(worker => 'w1', lanes => NULL)",
        None,
        InvalidArgument,
        "lanes must be an array of at most 100 lane names, got null",
    ),
    Refusal(
        "a null lane",
        "SELECT * FROM tireless.claim_next(worker => 'w1', lanes => ARRAY[NULL]::text[])",
        claim(lanes=[None]),
        InvalidArgument,
        "got null",
    ),
    Refusal(
        "malformed lane name",
        "SELECT * FROM tireless.claim_next(worker => 'w1', lanes => '{cc,\"a b\"}')",
        claim(lanes=["cc", "a b"]),
        InvalidArgument,
        "got 'a b'",
    ),
    Refusal(
        "unknown state",
        "SELECT tireless.transition(job_id => %(claimed)s, to_state => 'done', worker => 'w1')",
        lambda store, ids: store.transition(ids["claimed"], "done", "w1"),
        InvalidArgument,
        "unknown job state 'done'",
    ),
    Refusal(
        "unknown kind",
        "SELECT tireless.lane_for(kind => 'chore', labels => '{}')",
        lambda store, ids: store.lane_for("chore", []),
        InvalidArgument,
        "unknown job kind 'chore'",
    ),
    Refusal(
        "empty owner",
        "SELECT tireless.track_repo(forge => 'gitea', owner => '', repo => 'gadgets')",
        lambda store, ids: store.track_repo("gitea", "", "gadgets"),
        InvalidArgument,
        "owner must be 1 to 200 characters, got ''",
    ),
    Refusal(
        "unknown job: heartbeat",
        "SELECT tireless.heartbeat(job_id => %(unknown)s, worker => 'w1')",
        lambda store, ids: store.heartbeat(ids["unknown"], "w1"),
        UnknownJob,
        "no job with id {unknown}",
    ),
    Refusal(
        "rerun of an untracked repository",
        "SELECT tireless.rerun(forge => 'gitea', owner => 'acme', repo => 'gadgets', number => 1)",
        lambda store, ids: store.rerun("gitea", "acme", "gadgets", 1),
        UnknownRepository,
        "repository gitea/acme/gadgets is not tracked",
    ),
    Refusal(
        "rerun with a live job",
        "SELECT tireless.rerun(forge => 'gitea', owner => 'acme', repo => 'widgets', number => 3)",
        lambda store, ids: store.rerun("gitea", "acme", "widgets", 3),
        DuplicateLiveJob,
        "issue gitea/acme/widgets#3 already has live job {pending}",
    ),
    Refusal(
        "rerun of issue 0",
        "SELECT tireless.rerun(forge => 'gitea', owner => 'acme', repo => 'widgets', number => 0)",
        lambda store, ids: store.rerun("gitea", "acme", "widgets", 0),
        InvalidArgument,
        "number must be a positive issue number, got 0",
    ),
    Refusal(
        "unknown forge kind",
        "SELECT tireless.add_forge(name => 'lab', kind => 'gitlab', base_url => 'https://lab.test')",
        lambda store, ids: store.add_forge("lab", "gitlab", "https://lab.test"),
        InvalidArgument,
        "unknown forge kind 'gitlab'",
    ),
    Refusal(
        "trouble of an unregistered forge",
        "SELECT tireless.record_forge_trouble(name => 'lab', error => 'x', until => now())",
        lambda store, ids: store.record_forge_trouble("lab", "x", datetime.now(UTC)),
        UnknownRepository,
        "forge 'lab' is not registered",
    ),
    Refusal(
        "record_poll without the lease",
        "SELECT * FROM tireless.record_poll(forge => 'gitea', owner => 'acme', repo => 'widgets',"
        " poller => 'p1', issues => '[]', cursor => NULL, etag => NULL, full_listing => true)",
        lambda store, ids: store.record_poll(
            "gitea", "acme", "widgets", "p1", [], None, None, True
        ),
        NotHolder,
        "poller 'p1' does not hold the poll lease of gitea/acme/widgets",
    ),
    Refusal(
        "record_poll of an untracked repository",
        "SELECT * FROM tireless.record_poll(forge => 'gitea', owner => 'acme', repo => 'gadgets',"
        " poller => 'p1', issues => '[]', cursor => NULL, etag => NULL, full_listing => true)",
        lambda store, ids: store.record_poll(
            "gitea", "acme", "gadgets", "p1", [], None, None, True
        ),
        UnknownRepository,
        "repository gitea/acme/gadgets is not tracked",
    ),
    Refusal(
        "poll failure without the lease",
        "SELECT tireless.record_poll_failure(forge => 'gitea', owner => 'acme', repo => 'widgets',"
        " poller => 'p1', error => 'HTTP 500')",
        lambda store, ids: store.record_poll_failure("gitea", "acme", "widgets", "p1", "HTTP 500"),
        NotHolder,
        "poller 'p1' does not hold the poll lease of gitea/acme/widgets",
    ),
    Refusal(
        "a bad updated_at",
        """SELECT tireless.enqueue(issues => '[
             {"forge": "gitea", "owner": "acme", "repo": "widgets", "number": 10, "state": "open",
              "labels": [], "updated_at": "2026-02-30T00:00:00Z"}]')""",
        None,
        MalformedIssue,
        'malformed issue at index 0: "updated_at" must be an ISO 8601 timestamp with a time zone,'
        ' got "2026-02-30T00:00:00Z"',
    ),
    Refusal(
        "malformed issue",
        """SELECT tireless.enqueue(issues => '[
             {"forge": "gitea", "owner": "acme", "repo": "widgets", "number": 10, "state": "open",
              "labels": ["tireless", "tireless/implement"]},
             {"forge": "gitea", "owner": "acme", "repo": "widgets", "number": 0, "state": "open",
              "labels": ["tireless", "tireless/implement"]}]')""",
        lambda store, ids: store.enqueue([issue(10), issue(0)]),
        MalformedIssue,
        'malformed issue at index 1: "number" must be an integer from 1 to 2147483647, got 0',
    ),
]

PATHS = [
    pytest.param(path, refusal, id=f"{path}: {refusal.name}")
    for refusal in REFUSALS
    for path in ("sql", "adapter")
    if path == "sql" or refusal.call is not None
]


@pytest.fixture
def ids(db: Database, store: JobStore) -> dict[str, int]:
    """One job in each state the refusals need, by name, and an id no job has."""
    enqueue_jobs(store, 3)
    claimed, delivered = (store.claim_next("w1", ["cc"]) for _ in range(2))
    assert claimed is not None
    assert delivered is not None
    store.transition(delivered.id, "delivered", "w1")
    pending = db.scalar("SELECT id FROM tireless.job WHERE state = 'pending'")
    return {
        "pending": pending,
        "claimed": claimed.id,
        "delivered": delivered.id,
        "unknown": UNKNOWN,
    }


def snapshot(db: Database) -> list[Any]:
    with db.connect() as conn:
        return [
            conn.execute(
                f"SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t), '[]') FROM {table} t"
            ).fetchone()
            for table in (
                "tireless.job",
                "tireless.job_event",
                "tireless.tracked_repo",
                "tireless.lane",
                "tireless.issue",
                "tireless.forge",
                "tireless.repo_poll",
            )
        ]


@pytest.mark.parametrize(("path", "refusal"), PATHS)
def test_a_refusal_has_its_code_names_the_bad_value_and_changes_nothing(
    db: Database, store: JobStore, ids: dict[str, int], path: str, refusal: Refusal
) -> None:
    before = snapshot(db)
    if refusal.call is None or path == "sql":
        with db.connect() as conn, pytest.raises(psycopg.Error) as raised:
            conn.execute(refusal.sql, ids)
        sqlstate, message = raised.value.sqlstate, raised.value.diag.message_primary
    else:
        with pytest.raises(TirelessError) as translated:
            refusal.call(store, ids)
        assert type(translated.value) is refusal.error
        assert isinstance(translated.value.__cause__, psycopg.Error), "the database refused it"
        sqlstate, message = translated.value.sqlstate, str(translated.value)
    assert sqlstate == refusal.error.sqlstate
    assert refusal.names.format(**ids) in (message or "")
    assert snapshot(db) == before


@pytest.mark.parametrize("error", ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_translated_errors_raises_the_class_of_each_code(
    db: Database, error: type[TirelessError]
) -> None:
    rule = "one_live_job_per_issue" if error is DuplicateLiveJob else "a_named_rule"
    raise_it = sql.SQL(
        "DO $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = {}, CONSTRAINT = {},"
        " DETAIL = 'the detail', HINT = 'the hint'; END $$"
    ).format(sql.Literal(error.sqlstate), sql.Literal(rule))
    with db.connect() as conn, pytest.raises(TirelessError) as raised, translated_errors():
        conn.execute(raise_it)
    assert type(raised.value) is error
    assert str(raised.value) == "refused"
    assert raised.value.constraint == rule
    assert (raised.value.sqlstate, raised.value.detail, raised.value.hint) == (
        error.sqlstate,
        "the detail",
        "the hint",
    )


@pytest.mark.parametrize("code", ["23505", "23503", "23502"])
def test_an_integrity_violation_of_another_rule_is_invariant_violated_with_its_own_code(
    db: Database, code: str
) -> None:
    """Only one_live_job_per_issue makes a 23505 a DuplicateLiveJob."""
    raise_it = sql.SQL(
        "DO $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = {}, CONSTRAINT = 'other_rule'; END $$"
    ).format(sql.Literal(code))
    with db.connect() as conn, pytest.raises(InvariantViolated) as raised, translated_errors():
        conn.execute(raise_it)
    assert (raised.value.sqlstate, raised.value.constraint) == (code, "other_rule")


def test_translated_errors_lets_an_unknown_sqlstate_through(db: Database) -> None:
    with db.connect() as conn, pytest.raises(psycopg.errors.DivisionByZero), translated_errors():
        conn.execute("SELECT 1 / 0")
