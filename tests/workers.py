"""Process bodies for the fault and soak tests: runners that claim, renew, release, deliver, fail
or abandon at random, a sweeper, a roll-up of the history and a poller. Each reports a Tally through a queue, so the test can
say how many events the history must hold. Started with the "spawn" method: nothing is shared."""

from __future__ import annotations

import multiprocessing
import queue
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any, TypeVar

import psycopg

from tests.helpers import issue
from tireless import Job, JobStore
from tireless.errors import IllegalTransition, JobIsTerminal, NotHolder

SPAWN = multiprocessing.get_context("spawn")
T = TypeVar("T")

# What a runner does with the claim it holds, and how often.
ACTIONS = {
    "renew": 30,
    "stale_renew": 5,
    "deliver": 20,
    "fail": 10,
    "release": 20,
    "abandon": 15,
}

Tally = Counter[str]

# Settings for tests that exercise retries: no backoff, and a breaker that never trips.
NO_BACKOFF = (
    "SELECT 1 FROM tireless.set_policy(backoff_base => '0', backoff_cap => '0',"
    " breaker_threshold => 1000000)"
)
LIVE_JOBS = (
    "SELECT 1 FROM tireless.job WHERE lane = ANY (%s) AND state IN ('pending', 'claimed') LIMIT 1"
)


def start(target: Callable[..., None], *args: Any) -> SpawnProcess:
    process = SPAWN.Process(target=target, args=args, daemon=True)
    process.start()
    return process


def new_queue() -> Queue[Tally]:
    return SPAWN.Queue()


def reports(out: Queue[T], processes: Sequence[SpawnProcess], timeout: float) -> list[T]:
    """What the processes report, one report each. A process that dies without reporting fails
    the test at once instead of leaving it waiting out the timeout."""
    got: list[T] = []
    deadline = time.monotonic() + timeout
    while len(got) < len(processes):
        try:
            got.append(out.get(timeout=1))
        except queue.Empty:
            crashed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            assert not crashed, f"a worker process died with exit code {crashed[0]}"
            assert time.monotonic() < deadline, "the worker processes did not report in time"
    return got


def tallies(out: Queue[Tally], processes: Sequence[SpawnProcess], timeout: float) -> Tally:
    """The sum of the tallies the processes report, one each (see `reports`)."""
    return sum(reports(out, processes, timeout), Counter())


def all_exit_0(processes: Sequence[SpawnProcess]) -> None:
    """Wait (bounded) for the processes; each must have exited 0."""
    for process in processes:
        process.join(30)
        assert process.exitcode == 0


def runner(
    conninfo: str,
    worker: str,
    lanes: list[str],
    operations: int,
    seed: int,
    lease: float,
    out: Queue[Tally],
) -> None:
    """`operations` calls of the API as one runner; reports what succeeded and what was refused."""
    rng = random.Random(seed)
    tally: Tally = Counter()
    held: Job | None = None
    names, weights = list(ACTIONS), list(ACTIONS.values())
    with JobStore(conninfo) as store, psycopg.connect(conninfo, autocommit=True) as watch:
        for _ in range(operations):
            tally["operations"] += 1
            if held is None:
                held = store.claim_next(worker, lanes, timedelta(seconds=lease))
                if held is None:
                    tally["empty"] += 1
                    if not watch.execute(LIVE_JOBS, [lanes]).fetchone():
                        break  # every job is finished: nothing will come back
                    store.wait_for_work(lanes, timeout=0.1)
                else:
                    tally["claims"] += 1
                continue
            action = rng.choices(names, weights)[0]
            tally[action + "_tried"] += 1
            if action == "abandon":
                held = None
            elif action in ("renew", "stale_renew"):
                token = held.claim_token if action == "renew" else uuid.uuid4()
                renewed = store.renew_claim(held.id, worker, timedelta(seconds=lease), token=token)
                assert not (renewed and action == "stale_renew"), "a made-up token renewed a claim"
                tally[action if renewed else "lost"] += 1
                held = held if renewed else None
            else:
                to = {"deliver": "delivered", "fail": "failed", "release": "pending"}[action]
                try:
                    store.transition(
                        held.id, to, worker, note=f"{action} by {worker}", token=held.claim_token
                    )
                    tally["transitions"] += 1
                except (NotHolder, IllegalTransition, JobIsTerminal):
                    tally["lost"] += 1
                held = None
    out.put(tally)


def sweeper(conninfo: str, stop: Event, out: Queue[Tally]) -> None:
    """Returns expired claims until told to stop."""
    tally: Tally = Counter()
    with JobStore(conninfo) as store:
        while not stop.is_set():
            tally["swept"] += store.expire_stale_claims()
            tally["sweeps"] += 1
            stop.wait(0.05)
    out.put(tally)


def roller(conninfo: str, stop: Event, out: Queue[Tally]) -> None:
    """Rolls the history up for the dashboard, as fast as it can, until told to stop."""
    tally: Tally = Counter()
    with JobStore(conninfo) as store:
        while not stop.is_set():
            tally["rolled"] += store.roll_up_history()
            tally["rollups"] += 1
    out.put(tally)


def poller(conninfo: str, issues: int, stop: Event, out: Queue[Tally]) -> None:
    """Polls the same issues again and again: each gets a new job once its last one is terminal."""
    tally: Tally = Counter()
    batch = [issue(n) for n in range(1, issues + 1)]
    with JobStore(conninfo) as store:
        while not stop.is_set():
            tally["created"] += store.enqueue(batch)
            tally["polls"] += 1
            stop.wait(0.1)
    out.put(tally)


def hold_a_claim(conninfo: str, worker: str, out: Queue[Tally]) -> None:
    """Claims one job, says which, and then holds it until the process is killed."""
    with JobStore(conninfo) as store:
        job = store.claim_next(worker, ["cc"])
        out.put(Counter({"job": job.id if job else 0}))
        threading.Event().wait()
