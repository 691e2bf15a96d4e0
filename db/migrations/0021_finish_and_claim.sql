-- The runner's cycle in one transaction: finish_and_claim finishes the caller's claim and claims its next job.
-- depends: 0015_lean_rules

-- A runner that finishes a job and then claims the next paid two transactions, two round trips and,
-- with durable commits, two WAL flushes per job; this is one of each. It is composed of the two
-- functions it stands for, not a copy of them: every rule transition and claim_next keep (the
-- holder's test, the refusals and their SQLSTATEs, lanes, capacities, the breaker, pauses) is
-- theirs, so a rule added to either holds here too. A refused finish raises, and the raise undoes
-- the whole call: nothing is claimed. The finish comes first, so the claim sees what it changed (a
-- failure that trips the breaker, a slot it freed in a lane with a capacity).
CREATE FUNCTION tireless.finish_and_claim(
    job_id bigint, to_state text, worker text, lanes text[], lease interval DEFAULT '10 minutes',
    claim_token uuid DEFAULT NULL, note text DEFAULT NULL
) RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.transition(job_id => finish_and_claim.job_id, to_state => finish_and_claim.to_state,
                                worker => finish_and_claim.worker, note => finish_and_claim.note,
                                token => finish_and_claim.claim_token);
    RETURN QUERY SELECT * FROM tireless.claim_next(worker => finish_and_claim.worker, lanes => finish_and_claim.lanes,
                                                   lease => finish_and_claim.lease);
END;
$$;
COMMENT ON FUNCTION tireless.finish_and_claim(bigint, text, text, text[], interval, uuid, text) IS
    'The runner''s cycle in one transaction: finishes the claim on job_id exactly as tireless.transition(job_id, '
    'to_state, worker, note, token => claim_token) would (its refusals, with their SQLSTATEs: nothing is claimed '
    'when the finish is refused), then claims the next job in lanes for worker exactly as tireless.claim_next '
    'would, and returns it (no row when nothing is claimable).';

REVOKE ALL ON FUNCTION tireless.finish_and_claim(bigint, text, text, text[], interval, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.finish_and_claim(bigint, text, text, text[], interval, uuid, text) TO tireless_runner;
