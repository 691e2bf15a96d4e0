"""Every event belongs to a job, without a foreign key: only the history trigger writes events, no
role but the owner may write the history, and a job leaves only with its events (prune)."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs, rows
from tireless import JobStore

ORPHANS = (
    "SELECT count(*) FROM tireless.job_event e"
    " WHERE NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = e.job_id)"
)


def test_every_event_belongs_to_a_job_through_claims_finishes_and_prune(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 6)
    job = claimed(store)
    for to in ("delivered", "failed", "pending"):
        next_job = store.finish_and_claim(job.id, to, "w1", ["cc"], token=job.claim_token)
        assert next_job is not None
        job = next_job
    store.transition(job.id, "delivered", "w1", token=job.claim_token)
    events = db.scalar("SELECT count(*) FROM tireless.job_event")
    assert store.prune(timedelta(0)) == 3
    assert db.scalar("SELECT count(*) FROM tireless.job_event") < events, "their history went too"
    assert db.scalar(ORPHANS) == 0
    assert db.scalar("SELECT count(*) FROM tireless.job") == 3


@pytest.mark.parametrize(
    "statement",
    ["DELETE FROM tireless.job WHERE state = 'delivered'", "TRUNCATE tireless.job CASCADE"],
)
def test_a_job_never_leaves_without_its_history_even_for_the_owner(
    db: Database, store: JobStore, statement: str
) -> None:
    enqueue_jobs(store, 2)
    job = claimed(store)
    store.transition(job.id, "delivered", "w1")
    before = rows(db, "SELECT id, state::text FROM tireless.job ORDER BY id")
    with db.connect() as conn, pytest.raises(psycopg.errors.ForeignKeyViolation) as refused:
        conn.execute(statement)
    assert refused.value.diag.constraint_name == "history_belongs_to_a_job"
    assert rows(db, "SELECT id, state::text FROM tireless.job ORDER BY id") == before
    assert db.scalar(ORPHANS) == 0


def test_no_role_may_write_the_history(db: Database) -> None:
    granted = rows(
        db,
        "SELECT r.rolname, p.privilege FROM pg_roles r,"
        " unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS p(privilege)"
        " WHERE NOT r.rolsuper AND NOT starts_with(r.rolname, 'pg_')"  # not the predefined roles
        "   AND r.oid <> (SELECT relowner FROM pg_class WHERE oid = 'tireless.job_event'::regclass)"
        "   AND has_table_privilege(r.oid, 'tireless.job_event', p.privilege)",
    )
    assert granted == []
    public = rows(
        db,
        "SELECT privilege_type FROM information_schema.role_table_grants"
        " WHERE table_schema = 'tireless' AND table_name = 'job_event' AND grantee = 'PUBLIC'",
    )
    assert public == []


def test_only_the_history_trigger_writes_events(db: Database) -> None:
    writers = rows(
        db,
        "SELECT p.oid::regprocedure::text FROM pg_proc p"
        " WHERE p.pronamespace = 'tireless'::regnamespace"
        "   AND p.prosrc ~* 'insert\\s+into\\s+tireless\\.job_event'",
    )
    assert writers == [("tireless.record_job_event()",)]
