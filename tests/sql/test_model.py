"""Model-based: hypothesis drives the SQL API and a small Python model of the state machine side
by side, and after every step the rows must be what the model says (state, holder, token,
attempts, failure by budget). Each example works in a lane of its own, so one database serves all."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.conftest import Database
from tests.helpers import end_lease, issue, tracked
from tests.invariants import assert_invariants
from tests.workers import NO_BACKOFF
from tireless import JobStore
from tireless.errors import TirelessError

BUDGET = 2  # max_attempts of kind implement in this test: small, so examples reach it
WORKERS = ("w1", "w2")
TOKENS = ("right", "stale", "made-up", "none")
EXAMPLES = itertools.count(1)


@dataclass
class ModelJob:
    number: int
    state: str = "pending"
    holder: str | None = None
    token: uuid.UUID | None = None
    stale: uuid.UUID | None = None  # the token of the job's previous claim
    attempts: int = 0
    exhausted: bool = False

    def release(self) -> None:
        """Back to pending after a failed attempt, or failed when the budget is spent."""
        self.state = "failed" if self.attempts >= BUDGET else "pending"
        self.exhausted = self.state == "failed"
        self.holder, self.stale, self.token = None, self.token, None


def test_the_store_behaves_like_its_model(db: Database, store: JobStore) -> None:
    tracked(store)
    db.scalar(NO_BACKOFF)
    db.scalar(
        "SELECT 1 FROM tireless.set_kind_policy(kind => 'implement', max_attempts => %(n)s)",
        {"n": BUDGET},
    )

    class StoreAndModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            example = next(EXAMPLES)
            self.lane = f"model{example}"
            self.numbers = range(example * 10, example * 10 + 4)
            self.jobs: dict[int, ModelJob] = {}
            self.answered: set[int] = set()  # issues whose current request has had its job

        def pick(self, index: int) -> tuple[int, ModelJob]:
            job_id = sorted(self.jobs)[index % len(self.jobs)]
            return job_id, self.jobs[job_id]

        def token(self, job: ModelJob, which: str) -> uuid.UUID | None:
            return {"right": job.token, "stale": job.stale, "made-up": uuid.uuid4(), "none": None}[
                which
            ]

        @rule(numbers=st.lists(st.integers(0, 3), min_size=1, max_size=3))
        def enqueue(self, numbers: list[int]) -> None:
            wanted = {self.numbers[n] for n in numbers}
            live = {j.number for j in self.jobs.values() if j.state in ("pending", "claimed")}
            labels = ("tireless", "tireless/implement", f"tireless/agent:{self.lane}")
            created = store.enqueue([issue(n, *labels) for n in sorted(wanted)])
            expected = wanted - live - self.answered
            assert created == len(expected)
            with db.connect() as conn:
                rows = conn.execute(
                    "SELECT id, number FROM tireless.job WHERE lane = %s AND id <> ALL (%s) ORDER BY id",
                    [self.lane, list(self.jobs)],
                ).fetchall()
            assert sorted(number for _, number in rows) == sorted(expected)
            self.jobs.update({job_id: ModelJob(number) for job_id, number in rows})
            self.answered |= expected

        @rule(numbers=st.lists(st.integers(0, 3), min_size=1, max_size=3))
        def withdraw(self, numbers: list[int]) -> None:
            """Issues without a live job are shown closed: their next request is a new one."""
            live = {j.number for j in self.jobs.values() if j.state in ("pending", "claimed")}
            closing = {self.numbers[n] for n in numbers} - live
            assert store.enqueue([issue(n, state="closed") for n in sorted(closing)]) == 0
            self.answered -= closing

        @rule(worker=st.sampled_from(WORKERS))
        def claim(self, worker: str) -> None:
            got = store.claim_next(worker, [self.lane])
            pending = sorted(i for i, j in self.jobs.items() if j.state == "pending")
            assert (got.id if got else None) == (pending[0] if pending else None)
            if got is not None:
                job = self.jobs[got.id]
                job.state, job.holder, job.token, job.attempts = (
                    "claimed",
                    worker,
                    got.claim_token,
                    job.attempts + 1,
                )

        @precondition(lambda self: self.jobs)
        @rule(
            index=st.integers(0, 50), worker=st.sampled_from(WORKERS), which=st.sampled_from(TOKENS)
        )
        def renew(self, index: int, worker: str, which: str) -> None:
            job_id, job = self.pick(index)
            token = self.token(job, which)
            holds = (
                job.state == "claimed"
                and job.holder == worker
                and (token is None or token == job.token)
            )
            assert store.renew_claim(job_id, worker, timedelta(minutes=5), token=token) == holds

        @precondition(lambda self: self.jobs)
        @rule(
            index=st.integers(0, 50),
            to=st.sampled_from(["pending", "delivered", "failed", "cancelled", "claimed"]),
            worker=st.sampled_from([*WORKERS, None]),
            which=st.sampled_from(TOKENS),
        )
        def transition(self, index: int, to: str, worker: str | None, which: str) -> None:
            job_id, job = self.pick(index)
            token = self.token(job, which)
            holds = job.state == "claimed" and worker == job.holder and token in (None, job.token)
            if (worker is not None or job.state == "claimed") and not holds:
                expected = "TL004"  # a worker speaks as a holder, whatever the job's state
            elif job.state in ("delivered", "failed", "cancelled"):
                expected = "TL003"
            elif to == "claimed" or (job.state == "pending" and to != "cancelled"):
                expected = "TL002"
            else:
                expected = ""
            outcome = ""
            try:
                store.transition(job_id, to, worker, token=token)
            except TirelessError as refusal:
                outcome = refusal.sqlstate
            assert outcome == expected
            if outcome:
                return
            if to == "pending":
                job.release()
            else:
                job.state, job.holder, job.stale, job.token = to, None, job.token, None

        def claimed(self) -> list[int]:
            return sorted(i for i, j in self.jobs.items() if j.state == "claimed")

        @precondition(lambda self: self.claimed())
        @rule(index=st.integers(0, 50), to=st.sampled_from(["pending", "delivered", "failed"]))
        def holder_finishes(self, index: int, to: str) -> None:
            job_id = self.claimed()[index % len(self.claimed())]
            job = self.jobs[job_id]
            assert (
                store.transition(job_id, to, job.holder, token=job.token).attempts == job.attempts
            )
            if to == "pending":
                job.release()
            else:
                job.state, job.holder, job.stale, job.token = to, None, job.token, None

        @precondition(lambda self: self.claimed())
        @rule(index=st.integers(0, 50))
        def lease_expires(self, index: int) -> None:
            job_id = self.claimed()[index % len(self.claimed())]
            end_lease(db, job_id)
            assert store.expire_stale_claims() == 1
            self.jobs[job_id].release()

        @invariant()
        def rows_match_the_model(self) -> None:
            with db.connect() as conn:
                rows = conn.execute(
                    "SELECT id, state::text, claimed_by, claim_token, attempts,"
                    " coalesce(note LIKE 'attempts exhausted%%', false)"
                    " FROM tireless.job WHERE lane = %s ORDER BY id",
                    [self.lane],
                ).fetchall()
            model = [
                (i, j.state, j.holder, j.token, j.attempts, j.exhausted)
                for i, j in sorted(self.jobs.items())
            ]
            assert rows == model

    run_state_machine_as_test(
        StoreAndModel,
        settings=settings(
            max_examples=20,
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )
    assert_invariants(db.conninfo)
