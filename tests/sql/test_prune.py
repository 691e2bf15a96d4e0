"""prune: old terminal jobs go with their history, nothing live and no live job's ancestor goes,
only an admin may prune, history stays append-only for everyone else, and claims never wait on it."""

from __future__ import annotations

import json
import re
import threading
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs, rows, tireless_cli
from tests.support.roles import GROUPS, Login
from tireless import JobStore
from tireless.errors import InvalidArgument, PermissionDenied

NINETY_DAYS = timedelta(days=90)


def age(db: Database, job_ids: list[int], days: int) -> None:
    """Make terminal jobs look last changed `days` ago (a terminal row refuses UPDATE: the
    superuser's replica mode passes over the triggers)."""
    with db.connect() as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "UPDATE tireless.job SET updated_at = now() - make_interval(days => %(days)s)"
            " WHERE id = ANY (%(ids)s)",
            {"days": days, "ids": job_ids},
        )


def finished(store: JobStore, count: int, state: str = "delivered") -> list[int]:
    """`count` jobs claimed and moved to `state` by w1; their ids."""
    ids = []
    for _ in range(count):
        job = claimed(store, "w1")
        store.transition(job.id, state, "w1")
        ids.append(job.id)
    return ids


def set_parent(db: Database, child: int, parent: int) -> None:
    with db.connect() as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "UPDATE tireless.job SET parent_id = %(parent)s WHERE id = %(child)s",
            {"parent": parent, "child": child},
        )


def surviving(db: Database) -> set[int]:
    return {job_id for (job_id,) in rows(db, "SELECT id FROM tireless.job")}


def test_prune_deletes_old_terminal_jobs_with_their_history_and_nothing_else(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 11)
    old_delivered = finished(store, 2)
    old_failed = finished(store, 1, "failed")
    old_cancelled = finished(store, 1, "cancelled")
    recent = finished(store, 1)
    held = claimed(store, "w1").id  # live: claimed
    parent_of_live, grandparent = finished(store, 2)
    chain_parent, chain_child = finished(
        store, 2
    )  # both old: the child goes first, then its parent
    pending = db.scalar("SELECT id FROM tireless.job WHERE state = 'pending'")
    assert pending is not None
    set_parent(db, pending, parent_of_live)
    set_parent(db, parent_of_live, grandparent)
    set_parent(db, chain_child, chain_parent)
    old = [*old_delivered, *old_failed, *old_cancelled, parent_of_live, grandparent]
    age(db, [*old, chain_parent, chain_child, held], 100)
    age(db, recent, 10)

    assert store.prune(NINETY_DAYS) == 6
    gone = {*old_delivered, *old_failed, *old_cancelled, chain_parent, chain_child}
    assert surviving(db).isdisjoint(gone)
    assert {recent[0], held, pending, parent_of_live, grandparent} <= surviving(db)
    assert (
        rows(
            db,
            "SELECT job_id FROM tireless.job_event WHERE job_id = ANY (%(ids)s)",
            {"ids": list(gone)},
        )
        == []
    )
    assert db.scalar("SELECT count(*) FROM tireless.job_event") == sum(
        db.scalar("SELECT count(*) FROM tireless.job_event WHERE job_id = %(id)s", {"id": job_id})
        for job_id in surviving(db)
    )
    assert store.prune(NINETY_DAYS) == 0, "a second prune finds nothing"


def test_prune_in_bounded_calls_deletes_leaves_before_their_parents(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 5)
    ids = finished(store, 5)
    for child, parent in zip(ids[1:], ids, strict=False):
        set_parent(db, child, parent)  # a chain: 1 <- 2 <- 3 <- 4 <- 5
    age(db, ids, 100)
    assert [store.prune(NINETY_DAYS, max_jobs=2) for _ in range(4)] == [2, 2, 1, 0]
    assert surviving(db) == set()


def test_prune_refuses_a_negative_age(store: JobStore) -> None:
    with pytest.raises(InvalidArgument, match="older_than must be an interval of 0 or more"):
        store.prune(timedelta(days=-1))


@pytest.mark.parametrize("group", ["tireless_runner", "tireless_poller"])
def test_only_an_admin_may_prune(
    db: Database,
    store: JobStore,
    login: Login,
    group: str,
) -> None:
    enqueue_jobs(store, 1)
    age(db, finished(store, 1), 100)
    with JobStore(login(group)) as other, pytest.raises(PermissionDenied):
        other.prune(NINETY_DAYS)
    with JobStore(login("tireless_admin")) as admin:
        assert admin.prune(NINETY_DAYS) == 1


@pytest.mark.parametrize("group", GROUPS)
def test_no_role_deletes_history_directly_even_with_prunes_setting(
    db: Database,
    store: JobStore,
    login: Login,
    group: str,
) -> None:
    enqueue_jobs(store, 1)
    finished(store, 1)
    with psycopg.connect(login(group), autocommit=True) as conn:
        conn.execute("SET tireless.pruning = 'on'")
        for statement in ("DELETE FROM tireless.job_event", "DELETE FROM tireless.job"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    assert db.scalar("SELECT count(*) FROM tireless.job_event") == 3


def test_history_stays_append_only_for_the_owner_outside_prune(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    finished(store, 1)  # the other job stays pending, with its history
    with db.connect() as conn:
        for statement in (
            "DELETE FROM tireless.job_event",
            "UPDATE tireless.job_event SET note = 'rewritten'",
            "TRUNCATE tireless.job_event",
        ):
            with pytest.raises(psycopg.Error) as refused:
                conn.execute(statement)
            assert refused.value.sqlstate == "TL007"
        with conn.transaction():  # prune's mark is gone once prune returns
            conn.execute("SELECT tireless.prune(older_than => '0')")
            with pytest.raises(psycopg.Error) as refused, conn.transaction():
                conn.execute("DELETE FROM tireless.job_event")
            assert refused.value.sqlstate == "TL007"


def blocked(db: Database, pid: int) -> list[int]:
    found: list[int] = db.scalar("SELECT pg_blocking_pids(%(pid)s)", {"pid": pid})
    return found


def test_claimers_never_wait_on_a_prune_in_progress(db: Database, store: JobStore) -> None:
    """The worst case: a prune that has deleted 3000 jobs and holds every lock it took until it
    commits. Four claimers claim, release and deliver meanwhile, with a 2 s lock_timeout, and
    pg_blocking_pids never shows one waiting on the prune (they may wait on each other briefly:
    a release counts a failure on the lane's row)."""
    enqueue_jobs(store, 3000)
    with db.connect() as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "UPDATE tireless.job SET state = 'delivered', updated_at = now() - interval '100 days'"
        )
    enqueue_jobs(store, 40, first=3001)
    db.scalar("SELECT 1 FROM tireless.set_policy(backoff_base => '0', backoff_cap => '0')")
    pruner = db.connect(autocommit=False)
    assert pruner.execute("SELECT tireless.prune(older_than => '90 days')").fetchone() == (3000,)
    errors: list[BaseException] = []
    seen_blocked: list[list[int]] = []
    claimers = [db.connect(lock_timeout="2s") for _ in range(4)]

    def claim_loop(conn: psycopg.Connection[Any], worker: str) -> None:
        try:
            own = JobStore(conn)
            while (job := own.claim_next(worker, ["cc"])) is not None:
                if job.attempts == 1:
                    own.transition(job.id, "pending", worker, token=job.claim_token)
                else:
                    own.transition(job.id, "delivered", worker, token=job.claim_token)
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=claim_loop, args=(conn, f"c{i}")) for i, conn in enumerate(claimers)
    ]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        seen_blocked += [
            b
            for conn in claimers
            if pruner.info.backend_pid in (b := blocked(db, conn.info.backend_pid))
        ]
    for thread in threads:
        thread.join()
    pruner.commit()
    pruner.close()
    for conn in claimers:
        conn.close()
    assert errors == []
    assert seen_blocked == []
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'delivered'") == 40
    assert db.scalar("SELECT count(*) FROM tireless.job") == 40


def test_the_prune_command_dry_runs_then_deletes(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 3)
    age(db, finished(store, 3), 100)
    dry = tireless_cli(db.url, "prune", "--older-than", "90d", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    said = json.loads(dry.stdout)
    assert (said["pruned"], said["dry_run"]) == (3, True)
    assert said["oldest"] <= said["newest"]
    assert db.scalar("SELECT count(*) FROM tireless.job") == 3
    done = tireless_cli(db.url, "prune", "--older-than", "90d")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deleted 3 finished job(s) unchanged for 90d, last changed from")
    assert done.stdout.strip().endswith(", with their history")
    assert db.scalar("SELECT count(*) FROM tireless.job") == 0


def test_prune_says_what_it_would_delete_and_needs_yes_past_max(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 4)
    age(db, finished(store, 3), 40)
    store.transition(claimed(store).id, "delivered", "w1")  # recent: stays
    asked = tireless_cli(db.url, "prune", "--older-than", "30d", "--max", "2")
    assert asked.returncode == 2
    assert re.match(
        r"would delete 3 finished job\(s\) unchanged for 30d, last changed from \S+ \S+ to \S+ \S+$",
        asked.stdout,
    )
    assert "more than --max 2: add --yes" in asked.stderr
    assert db.scalar("SELECT count(*) FROM tireless.job") == 4
    done = tireless_cli(db.url, "prune", "--older-than", "30d", "--max", "2", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deleted 3 finished job(s) unchanged for 30d")
    assert db.scalar("SELECT count(*) FROM tireless.job") == 1


def test_prune_preview_counts_what_prune_deletes(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 3)
    done = finished(store, 2)
    age(db, done, 100)
    set_parent(db, 3, done[0])  # a live child keeps its parent
    preview = db.scalar("SELECT jobs FROM tireless.prune_preview(interval '90 days')")
    assert preview == 1
    assert store.prune(timedelta(days=90)) == preview
