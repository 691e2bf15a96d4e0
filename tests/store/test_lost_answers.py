"""A call whose answer was lost (the connection cut once the server had answered: a failover, a
network cut) is sent again with the claim's token, and the store answers one that committed as
done: a job is finished once, its next job is not stranded, and a renewal is tried again soon."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from dev.embedded import SUPERUSER
from tests.answer_cutter import AnswerCutter, answer_cutter
from tests.conftest import Database
from tests.helpers import enqueue_jobs, history, rows, wait_until
from tireless import JobStore
from tireless.models import JobState
from tireless.store.lease import LeaseLost, ShuttingDown


@pytest.fixture
def cutter(db: Database) -> Iterator[AnswerCutter]:
    with answer_cutter(db.server.socket_dir, db.server.port) as relay:
        yield relay


@contextmanager
def through(cutter: AnswerCutter, db: Database) -> Iterator[JobStore]:
    """A store whose connections go through the relay."""
    dsn = cutter.conninfo(str(conninfo_to_dict(db.conninfo)["dbname"]), SUPERUSER)
    options = {"autocommit": True, "prepare_threshold": None}
    with (
        ConnectionPool(dsn, min_size=1, max_size=4, kwargs=options) as pool,
        JobStore(pool) as store,
    ):
        yield store


def moves(db: Database, job_id: int, to_state: str) -> int:
    return sum(event[1] == to_state for event in history(db, job_id))


def test_a_delivery_whose_answer_was_lost_is_sent_again_and_delivers_once(
    db: Database, store: JobStore, cutter: AnswerCutter
) -> None:
    enqueue_jobs(store, 1)
    with through(cutter, db) as relayed:
        held = relayed.lease("w1", ["cc"])
        with held as job:
            cutter.cut_answer_to("tireless.transition(")
    assert job is not None
    assert cutter.cuts == 1, "the finish's answer was lost"
    assert held.finished is not None
    assert held.finished.state is JobState.DELIVERED
    assert cutter.sent("tireless.transition(") == 2, "sent again after the cut"
    assert moves(db, job.id, "delivered") == 1


def test_a_finish_and_claim_sent_again_answers_the_job_it_claimed(
    db: Database, store: JobStore, cutter: AnswerCutter
) -> None:
    enqueue_jobs(store, 3)
    with through(cutter, db) as relayed:
        held = relayed.lease("w1", ["cc"], then_claim=lambda: True)
        with held as job:
            cutter.cut_answer_to("tireless.finish_and_claim(")
    assert job is not None
    assert cutter.cuts == 1
    assert held.next is not None, "the job the lost answer named"
    claims = rows(db, "SELECT id, claim_token FROM tireless.job WHERE state = 'claimed'")
    assert claims == [(held.next.id, held.next.claim_token)], "one job claimed, and it is held"
    assert moves(db, job.id, "delivered") == 1


def test_a_give_back_whose_answer_was_lost_gives_the_job_back_once(
    db: Database, store: JobStore, cutter: AnswerCutter
) -> None:
    enqueue_jobs(store, 1)
    with through(cutter, db) as relayed:
        held = relayed.lease("w1", ["cc"])
        with held as job:
            assert job is not None
            cutter.cut_answer_to("tireless.give_back(")
            raise ShuttingDown("deploy")
    assert cutter.cuts == 1
    assert held.given_back
    assert held.finished is not None
    assert held.finished.state is JobState.PENDING
    assert rows(db, "SELECT given_back, note FROM tireless.job") == [(1, "given back: deploy")]


def test_a_renewal_whose_answer_was_lost_is_tried_again_within_seconds_not_a_third_of_the_lease(
    db: Database, store: JobStore, cutter: AnswerCutter
) -> None:
    enqueue_jobs(store, 1)
    with through(cutter, db) as relayed:
        cutter.cut_answer_to("tireless.heartbeat(")  # the first renewal, sent as the lease starts
        with relayed.lease("w1", ["cc"], timedelta(seconds=60)) as job:
            # The next renewal is due 20 s on; a renewal that failed is tried again in ~0.2 s.
            wait_until(lambda: cutter.sent("tireless.heartbeat(") >= 2, "a renewal sent again", 10)
            assert cutter.cuts == 1
    assert job is not None
    assert moves(db, job.id, "delivered") == 1


def forget_job(db: Database, job_id: int) -> None:
    """Take the job out of the store past its guards, as a failover to a standby that never
    received it does."""
    with db.connect() as conn:
        conn.execute("SET session_replication_role = replica")  # no trigger refuses the delete
        conn.execute("DELETE FROM tireless.job_attempt WHERE job_id = %(id)s", {"id": job_id})
        conn.execute("DELETE FROM tireless.job WHERE id = %(id)s", {"id": job_id})


def hold_while_it_goes(db: Database, store: JobStore, lease: timedelta, renewed: bool) -> None:
    """Hold a job while it is taken out of the store; with `renewed`, until a renewal finds it gone
    (else the finish is the first to)."""
    lost: list[int] = []
    with store.lease("w1", ["cc"], lease, on_lost=lambda job: lost.append(job.id)) as job:
        assert job is not None
        forget_job(db, job.id)
        if renewed:
            wait_until(lambda: lost == [job.id], "the renewal finds the job gone", 10)


def test_a_job_gone_from_the_store_ends_its_lease_as_lost_not_as_an_error(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    with pytest.raises(LeaseLost):
        hold_while_it_goes(db, store, timedelta(seconds=3), renewed=True)
    with pytest.raises(LeaseLost):
        hold_while_it_goes(db, store, timedelta(minutes=10), renewed=False)
