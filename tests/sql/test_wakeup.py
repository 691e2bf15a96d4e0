"""Wake-up: whenever work becomes claimable the store NOTIFYs channel tireless_work with the lane
as payload, and a runner sleeps in wait_for_work (or a listen block) until its lanes have work."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tests.conftest import Database
from tests.helpers import claimed, end_lease, enqueue_jobs, issue, tracked, wait_until
from tireless import JobStore

AGENT_OC = ("tireless", "tireless/implement", "tireless/agent:oc")
NOTHING = 0.2  # seconds a waiter is given to show that no notification comes
SOON = 10.0  # seconds a waiter may wait for one that does come (it returns as soon as it does)


def wait_in_thread(store: JobStore, lanes: list[str], timeout: float) -> Callable[[], str | None]:
    """Start wait_for_work in a thread; the returned function joins it and gives its result."""
    outcome: list[str | None] = []
    thread = threading.Thread(target=lambda: outcome.append(store.wait_for_work(lanes, timeout)))
    thread.start()

    def result() -> str | None:
        thread.join(timeout=timeout + 10)
        assert not thread.is_alive()
        return outcome[0]

    return result


def until_listening(db: Database) -> None:
    """Return once another session's LISTEN tireless_work has completed (bounded wait)."""
    listening = (
        "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = current_database()"
        " AND state = 'idle' AND query = 'LISTEN tireless_work'"
    )
    wait_until(lambda: db.scalar(listening) is True, "the listener to complete its LISTEN")


def test_an_enqueue_wakes_a_listener_of_its_lane_in_another_connection(
    db: Database, store: JobStore
) -> None:
    woken = wait_in_thread(store, ["cc"], SOON)
    until_listening(db)
    enqueue_jobs(store, 1)
    assert woken() == "cc"


def test_an_enqueue_in_another_lane_does_not_wake_a_listener(db: Database, store: JobStore) -> None:
    woken = wait_in_thread(store, ["cc"], 1.0)
    until_listening(db)
    with store.listen(["oc"]) as oc_runner:
        enqueue_jobs(store, 1, *AGENT_OC)
        assert oc_runner.wait(SOON) == "oc"
    assert woken() is None


def test_wait_for_work_returns_none_on_timeout(store: JobStore) -> None:
    assert store.wait_for_work(["cc"], NOTHING) is None


def test_the_channel_is_tireless_work_and_the_payload_the_lane(
    db: Database, store: JobStore
) -> None:
    with db.connect() as listener:
        listener.execute("LISTEN tireless_work")
        enqueue_jobs(store, 1, *AGENT_OC)
        notify = next(listener.notifies(timeout=SOON))
    assert (notify.channel, notify.payload) == ("tireless_work", "oc")


def test_work_announced_between_listen_and_wait_is_not_missed(store: JobStore) -> None:
    with store.listen(["cc"]) as runner:
        assert store.claim_next("w1", ["cc"]) is None
        enqueue_jobs(store, 1)  # lands after the empty claim, before the wait
        assert runner.wait(SOON) == "cc"
        assert store.claim_next("w1", ["cc"]) is not None


def test_the_wake_up_is_sent_when_the_enqueue_commits(db: Database, store: JobStore) -> None:
    with store.listen(["cc"]) as runner, db.connect() as conn:
        tracked_store = tracked(JobStore(conn))
        with conn.transaction():
            tracked_store.enqueue([issue(1)])
            assert runner.wait(NOTHING) is None
        assert runner.wait(SOON) == "cc"


def test_a_release_with_no_backoff_wakes_the_lane_and_one_in_backoff_does_not(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    with store.listen(["cc"]) as runner:
        first = claimed(store)
        store.transition(first.id, "pending", "w1")
        assert runner.wait(NOTHING) is None
        db.scalar("SELECT tireless.set_policy(backoff_base => '0', backoff_cap => '0')")
        second = claimed(store)
        store.transition(second.id, "pending", "w1")
        assert runner.wait(SOON) == "cc"


def test_an_expiry_wakes_the_lane(db: Database, store: JobStore) -> None:
    db.scalar("SELECT tireless.set_policy(backoff_base => '0', backoff_cap => '0')")
    enqueue_jobs(store, 1)
    job = claimed(store)
    end_lease(db, job.id)
    with store.listen(["cc"]) as runner:
        assert store.expire_stale_claims() == 1
        assert runner.wait(SOON) == "cc"


def test_a_delivery_in_a_full_lane_wakes_it(store: JobStore) -> None:
    enqueue_jobs(store, 2)
    store.set_lane_capacity("cc", 1)
    job = claimed(store)
    with store.listen(["cc"]) as runner:
        store.transition(job.id, "delivered", "w1")
        assert runner.wait(SOON) == "cc"


def test_an_expiry_in_a_full_lane_wakes_it_even_while_the_job_backs_off(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    store.set_lane_capacity("cc", 1)
    job = claimed(store)
    end_lease(db, job.id)
    with store.listen(["cc"]) as runner:
        assert store.expire_stale_claims() == 1
        assert runner.wait(SOON) == "cc"
        other = claimed(store, "w2")
        assert other.id != job.id


def test_resuming_a_lane_wakes_it_and_pausing_does_not(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    with store.listen(["cc"]) as runner:
        store.pause_lane("cc")
        assert runner.wait(NOTHING) is None
        store.resume_lane("cc")
        assert runner.wait(SOON) == "cc"


def test_resetting_a_breaker_wakes_the_lane(db: Database, store: JobStore) -> None:
    db.scalar("SELECT tireless.set_policy(breaker_threshold => 1)")
    enqueue_jobs(store, 2)
    job = claimed(store)
    store.transition(job.id, "failed", "w1")
    with store.listen(["cc"]) as runner:
        assert store.claim_next("w1", ["cc"]) is None  # tripped
        store.reset_lane_breaker("cc")
        assert runner.wait(SOON) == "cc"
        assert store.claim_next("w1", ["cc"]) is not None
