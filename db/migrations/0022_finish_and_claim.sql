-- The runner's cycle in one transaction: finish_and_claim finishes the caller's claim and claims its next job.
-- depends: 0021_mirror_requests

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

-- Every event belongs to a job, kept without the history's foreign key. The key's check was a
-- query per event, two per cycle (bench/where-the-time-goes.md: 23 µs of a 432 µs cycle); what it
-- guarded is guarded here at no cost to the cycle:
-- - an event is only ever written by the history trigger (tireless.record_job_event), for the job
--   row it was fired by, which exists and is locked by the writing transaction; no role but the
--   schema's owner may write job_event (tests/test_history.py checks the privileges, and that no
--   other function writes it);
-- - a job leaves only with its events: deleting a job whose history remains is refused (prune
--   deletes a job's events first, in the same transaction), and tireless.job is never truncated.
ALTER TABLE tireless.job_event DROP CONSTRAINT job_event_job_id_fkey;

CREATE FUNCTION tireless.keep_history_with_its_job() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    orphaned bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT e.job_id INTO orphaned FROM gone_jobs g JOIN tireless.job_event e ON e.job_id = g.id LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
    END IF;
    RAISE EXCEPTION 'every event belongs to a job: % of tireless.job refused%', TG_OP,
        coalesce(format(' (job %s still has its history)', orphaned), '')
        USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'history_belongs_to_a_job',
              SCHEMA = 'tireless', TABLE = 'job',
              HINT = 'A job leaves only with its history, through tireless.prune.';
END;
$$;
COMMENT ON FUNCTION tireless.keep_history_with_its_job() IS
    'Trigger: refuses a DELETE of jobs whose history remains, and any TRUNCATE of tireless.job (23503, '
    'history_belongs_to_a_job): every event belongs to a job.';

CREATE TRIGGER history_belongs_to_a_job
    AFTER DELETE ON tireless.job
    REFERENCING OLD TABLE AS gone_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.keep_history_with_its_job();
COMMENT ON TRIGGER history_belongs_to_a_job ON tireless.job IS
    'Every event belongs to a job: a job leaves only once its history is gone (tireless.prune).';
CREATE TRIGGER jobs_are_never_truncated
    BEFORE TRUNCATE ON tireless.job
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.keep_history_with_its_job();
COMMENT ON TRIGGER jobs_are_never_truncated ON tireless.job IS
    'Every event belongs to a job: tireless.job is never emptied under its history.';

REVOKE ALL ON FUNCTION tireless.keep_history_with_its_job() FROM PUBLIC;
