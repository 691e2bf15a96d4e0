"""An attempt's identity survives a failover: a claim lost with its transaction (the primary died
before the standby had it) is made again with the same attempt number, and TIRELESS_ATTEMPT_ID
tells the two apart; the claim token it is derived from reaches the agent nowhere."""

from __future__ import annotations

import uuid

from tests.conftest import Database
from tests.helpers import enqueue_jobs
from tireless import JobStore
from tireless.runner.attempt import command_environment, job_json


def test_a_claim_made_again_with_the_same_number_has_another_attempt_id(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    with db.connect(autocommit=False) as conn:
        lost = JobStore(conn).claim_next("runner-1", ["cc"])
        conn.rollback()  # the claim never reached the database that stayed
    again = store.claim_next("runner-2", ["cc"])
    assert lost is not None
    assert again is not None
    assert (lost.id, lost.attempts) == (again.id, again.attempts) == (lost.id, 1)
    assert lost.claim_token != again.claim_token
    seen = [command_environment(job) for job in (lost, again)]
    assert [env["TIRELESS_ATTEMPT"] for env in seen] == ["1", "1"]
    ids = [env["TIRELESS_ATTEMPT_ID"] for env in seen]
    assert ids[0] != ids[1]
    assert [uuid.UUID(attempt_id).version for attempt_id in ids] == [5, 5]
    assert ids == [lost.attempt_id, again.attempt_id]  # the same wherever it is derived


def test_the_claim_token_is_in_nothing_the_agent_sees(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = store.claim_next("runner-1", ["cc"])
    assert job is not None
    assert job.claim_token is not None
    token = job.claim_token
    spellings = {str(token), token.hex, str(token).upper(), token.hex.upper()}
    seen = [*command_environment(job).values(), job_json(job).decode()]
    assert [value for value in seen if any(s in value for s in spellings)] == []
