-- Runners that survive deploys and a store that lasts: give_back, refusals by holder first, prune, bounded statistics.
-- depends: 0007_work_rule

-- A job given back by a runner that is stopping keeps its attempt (attempts counts every claim, so
-- the history stays true) and counts the give-back here; the budget (max_attempts) and the backoff
-- read attempts - given_back, the attempts that were really spent.
ALTER TABLE tireless.job
    ADD COLUMN given_back integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT given_back_within_attempts CHECK (given_back >= 0 AND given_back <= attempts);
COMMENT ON COLUMN tireless.job.given_back IS
    'How many of the job''s attempts ended in give_back (a runner stopping, not a failure): '
    'they stay in attempts and in the history but are not counted against max_attempts.';
COMMENT ON CONSTRAINT given_back_within_attempts ON tireless.job IS
    'Only a claimed attempt can be given back: 0 <= given_back <= attempts.';

-- prune deletes old terminal jobs by age; queue_stats reads only the recent ones.
CREATE INDEX terminal_jobs_by_change ON tireless.job (updated_at)
    WHERE state IN ('delivered', 'failed', 'cancelled');
COMMENT ON INDEX tireless.terminal_jobs_by_change IS
    'Terminal jobs by their last change: what prune deletes, and the recent window queue_stats counts.';

CREATE FUNCTION tireless.attempts_spent(job tireless.job) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN job.attempts - job.given_back;
COMMENT ON FUNCTION tireless.attempts_spent(tireless.job) IS
    'The attempts a job has used of its budget: its claims, less those given back by a stopping runner.';

-- Invariant 5, answered the same way whatever the job's state now is: a worker that presents its
-- name (and token) and does not hold the job learns "not the holder", not which moves the job's
-- new state allows.
CREATE FUNCTION tireless.check_holder(job tireless.job, worker text, token uuid) RETURNS void
    LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF job.state = 'claimed' AND job.claimed_by = check_holder.worker
       AND (check_holder.token IS NULL OR check_holder.token = job.claim_token) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'worker % does not hold job %', coalesce(quote_literal(left(check_holder.worker, 220)), 'null'), job.id
        USING ERRCODE = 'TL004',
              DETAIL = CASE
                  WHEN job.state <> 'claimed' THEN format('The job is %s now.', job.state)
                  WHEN job.claimed_by IS DISTINCT FROM check_holder.worker THEN format('The job is claimed by %L.', job.claimed_by)
                  ELSE 'The claim was lost and the job claimed again.' END,
              HINT = 'The lease was lost: stop the work and leave the job to the store.';
END;
$$;
COMMENT ON FUNCTION tireless.check_holder(tireless.job, text, uuid) IS
    'Raises TL004 unless worker (and token, when given) holds the job''s current claim; DETAIL says where the job is now.';

-- Cancelling a pending job is an admin's power, judged on the caller's effective role: the role a
-- SET ROLE chose (the "role" setting, which a SECURITY DEFINER call does not change), else the
-- session's user. An admin who does SET ROLE tireless_runner has given the power up.
CREATE OR REPLACE FUNCTION tireless.may_cancel_pending() RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    SELECT pg_has_role(caller.name, 'tireless_admin', 'MEMBER') OR pg_has_role(caller.name, n.nspowner, 'MEMBER')
      FROM pg_namespace n,
           (SELECT CASE WHEN current_setting('role') = 'none' THEN session_user
                        ELSE current_setting('role')::name END AS name) AS caller
     WHERE n.nspname = 'tireless';
$$;
COMMENT ON FUNCTION tireless.may_cancel_pending() IS
    'True when the caller''s effective role (after SET ROLE) may cancel a pending job: a member of tireless_admin '
    'or of the schema''s owner.';

CREATE OR REPLACE FUNCTION tireless.transition(
    job_id bigint, to_state text, worker text DEFAULT NULL, note text DEFAULT NULL, token uuid DEFAULT NULL
) RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    target tireless.job_state := tireless.parse_state(transition.to_state);
    job tireless.job;
    budget integer;
    final_state tireless.job_state;
    final_note text := transition.note;
    result tireless.job;
    lane_capped boolean;
    breaker_dirty boolean;
BEGIN
    IF length(transition.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(transition.note) USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO job FROM tireless.job j WHERE j.id = transition.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(transition.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    -- Invariant 5: a claimed job answers only to its holder, and a worker that is given speaks as a
    -- holder: not holding the job is its answer whatever the job's state, before any rule of states.
    IF transition.worker IS NOT NULL OR job.state = 'claimed' THEN
        PERFORM tireless.check_holder(job, transition.worker, transition.token);
    END IF;
    IF tireless.is_terminal(job.state) THEN
        RAISE EXCEPTION 'job % is % and never changes again; refused to move it to %', job.id, job.state, target
            USING ERRCODE = 'TL003', HINT = 'To run the issue again, enqueue it: that makes a new job.';
    END IF;
    IF target = 'claimed' THEN
        RAISE EXCEPTION 'job % cannot be moved to claimed by transition', job.id
            USING ERRCODE = 'TL002', HINT = 'A job is claimed only through tireless.claim_next.';
    END IF;

    IF job.state = 'pending' THEN
        IF target <> 'cancelled' THEN
            RAISE EXCEPTION 'job % is pending: it can be cancelled, not moved to %', job.id, target
                USING ERRCODE = 'TL002';
        END IF;
        IF NOT tireless.may_cancel_pending() THEN
            RAISE EXCEPTION 'only tireless_admin may cancel pending job %; % may not', job.id,
                CASE WHEN current_setting('role') = 'none' THEN session_user::text ELSE current_setting('role') END
                USING ERRCODE = '42501';
        END IF;
        final_state := 'cancelled';
    ELSE
        final_state := target;
        IF target = 'pending' AND job.cancel_requested_at IS NOT NULL THEN
            -- A cancel request stands (0007_work_rule): released, the job ends cancelled, not retried.
            final_state := 'cancelled';
            final_note := 'issue withdrew its request' || coalesce('; released: ' || transition.note, '');
        ELSIF target = 'pending' THEN
            SELECT kp.max_attempts INTO budget FROM tireless.kind_policy kp WHERE kp.kind = job.kind;
            IF tireless.attempts_spent(job) >= budget THEN
                final_state := 'failed';
                final_note := format('attempts exhausted (%s of %s); last: %s',
                                     tireless.attempts_spent(job), budget, coalesce(transition.note, 'released'));
            END IF;
        END IF;
    END IF;

    UPDATE tireless.job j
       SET state = final_state,
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           available_at = CASE WHEN final_state = 'pending' THEN now() + tireless.retry_delay(tireless.attempts_spent(j))
                               ELSE j.available_at END,
           note = final_note,
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO result;

    IF job.state = 'claimed' THEN
        -- Most lanes have no settings row: then there is no breaker to close and no slot to announce.
        SELECT l.capacity IS NOT NULL, l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL
          INTO lane_capped, breaker_dirty
          FROM tireless.lane l WHERE l.name = job.lane;
        IF final_state IN ('pending', 'failed') THEN
            PERFORM tireless.record_lane_outcome(job.lane, false);
        ELSIF final_state = 'delivered' AND breaker_dirty THEN
            PERFORM tireless.record_lane_outcome(job.lane, true);
        END IF;
    END IF;
    -- Wake runners when the job is claimable again at once, or when it freed a slot in a lane with a capacity.
    IF (final_state = 'pending' AND result.available_at <= now()) OR lane_capped THEN
        PERFORM tireless.announce_work(job.lane);
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.transition(bigint, text, text, text, uuid) IS
    'Moves a job along its state machine and returns it. A worker that is given must hold the claim (and the '
    'token, when given), whatever the job''s state now is: else TL004. Leaving claimed (to pending, delivered, '
    'failed, cancelled) needs the holder; a release after the last attempt the budget counts fails the job, and a '
    'release of a job whose issue withdrew its request cancels it. '
    'A pending job can only be cancelled (by tireless_admin). Entering claimed, or leaving a terminal state, is refused.';

CREATE OR REPLACE FUNCTION tireless.expire_stale_claims() RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    moved integer := 0;
    expired record;
    failed_lanes text[] := '{}';
    failed_lane text;
    sweep_lanes text[];
BEGIN
    -- One sweeper per lane at a time (a non-blocking advisory lock): a lane another sweeper holds
    -- is left for the next sweep, so two sweepers never wait on each other, not even on the lane
    -- row the circuit breaker counts in.
    SELECT coalesce(array_agg(s.lane), '{}') INTO sweep_lanes
      FROM (SELECT DISTINCT j.lane FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS s
     WHERE pg_try_advisory_xact_lock(hashtext('tireless.expire_stale_claims'), hashtext(s.lane));
    -- SKIP LOCKED: a job whose row another transaction holds is left as well; no job moves twice.
    -- A cancel-requested claim is cancelled, not retried: no failure for the breaker, no attempt spent.
    FOR expired IN
        WITH stale AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now() AND j.lane = ANY (sweep_lanes)
             ORDER BY j.claim_expires_at
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                            WHEN tireless.attempts_spent(j) >= kp.max_attempts THEN 'failed'
                            ELSE 'pending' END::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               available_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR tireless.attempts_spent(j) >= kp.max_attempts THEN j.available_at
                                   ELSE now() + tireless.retry_delay(tireless.attempts_spent(j)) END,
               note = CASE WHEN j.cancel_requested_at IS NOT NULL
                           THEN format('issue withdrew its request; lease of %s expired at %s', j.claimed_by, j.claim_expires_at)
                           WHEN tireless.attempts_spent(j) >= kp.max_attempts
                           THEN format('attempts exhausted (%s of %s); last: lease of %s expired at %s',
                                       tireless.attempts_spent(j), kp.max_attempts, j.claimed_by, j.claim_expires_at)
                           ELSE format('lease of %s expired at %s', j.claimed_by, j.claim_expires_at) END,
               updated_at = now()
          FROM stale, tireless.kind_policy kp
         WHERE j.id = stale.id AND kp.kind = j.kind
        RETURNING j.lane, j.state, j.available_at
    LOOP
        moved := moved + 1;
        IF expired.state <> 'cancelled' THEN
            failed_lanes := failed_lanes || expired.lane;
        END IF;
        -- As in transition: the job is claimable at once, or its claim freed a slot in a capped lane.
        IF (expired.state = 'pending' AND expired.available_at <= now())
           OR EXISTS (SELECT FROM tireless.lane l WHERE l.name = expired.lane AND l.capacity IS NOT NULL) THEN
            PERFORM tireless.announce_work(expired.lane);
        END IF;
    END LOOP;
    -- Lane rows are written in name order, the order claim_next locks capped lanes in, so a sweep
    -- and a claim that both touch several lanes never deadlock on them.
    FOR failed_lane IN SELECT l FROM unnest(failed_lanes) AS l ORDER BY l LOOP
        PERFORM tireless.record_lane_outcome(failed_lane, false);
    END LOOP;
    RETURN moved;
END;
$$;
COMMENT ON FUNCTION tireless.expire_stale_claims() IS
    'Returns every claimed job whose lease has passed to pending (after its backoff), fails it when the last '
    'attempt its budget counts is spent (give-backs are not counted), or cancels it when its issue withdrew its '
    'request (no failure counted); clears the claim, keeps the attempt count, and returns how many jobs it moved. '
    'Never waits on another sweeper: a job whose row is locked, or a lane another sweeper holds, is left for the '
    'next sweep.';

CREATE FUNCTION tireless.give_back(job_id bigint, worker text, note text DEFAULT NULL, token uuid DEFAULT NULL)
    RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    result tireless.job;
BEGIN
    PERFORM tireless.check_worker(give_back.worker);
    IF length(give_back.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(give_back.note) USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO job FROM tireless.job j WHERE j.id = give_back.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(give_back.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    PERFORM tireless.check_holder(job, give_back.worker, give_back.token);
    IF job.cancel_requested_at IS NOT NULL THEN
        -- A cancel request stands (0007_work_rule): the job ends cancelled instead of running again.
        UPDATE tireless.job j
           SET state = 'cancelled', claimed_by = NULL, claim_expires_at = NULL, claim_token = NULL,
               note = 'issue withdrew its request' || coalesce('; given back: ' || give_back.note, ''),
               updated_at = now()
         WHERE j.id = job.id
        RETURNING j.* INTO result;
        RETURN result;
    END IF;
    -- Not a failure: no backoff, no count for the circuit breaker, no attempt spent of the budget.
    UPDATE tireless.job j
       SET state = 'pending',
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           given_back = j.given_back + 1,
           available_at = now(),
           note = 'given back' || coalesce(': ' || give_back.note, ''),
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO result;
    PERFORM tireless.announce_work(job.lane);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.give_back(bigint, text, text, uuid) IS
    'The holder returns the job because the runner is stopping (SIGTERM, a deploy), not because the job failed: '
    'pending and claimable at once, no backoff, no failure for the circuit breaker, not counted against max_attempts '
    '(attempts keeps the claim; given_back counts it). The note starts with "given back". A job whose issue withdrew '
    'its request ends cancelled instead. TL004 unless worker (and token, when given) holds the claim.';

-- History is append-only; prune alone deletes it, with the jobs it belongs to. prune marks its own
-- transaction (a transaction-local setting it clears again before it returns); no tireless role
-- holds DELETE on job_event or job, so only prune, running as the schema's owner, gets this far.
CREATE OR REPLACE FUNCTION tireless.refuse_history_rewrite() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('tireless.pruning', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'tireless.job_event is append-only: % refused', TG_OP
        USING ERRCODE = 'TL007', HINT = 'History leaves only with its job, through tireless.prune.';
END;
$$;
COMMENT ON FUNCTION tireless.refuse_history_rewrite() IS
    'Trigger: refuses UPDATE, DELETE and TRUNCATE of tireless.job_event (SQLSTATE TL007), except the DELETEs of '
    'tireless.prune.';

CREATE FUNCTION tireless.prune(older_than interval, max_jobs integer DEFAULT NULL) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cutoff timestamptz;
    batch bigint[];
    deleted bigint := 0;
    batch_size CONSTANT integer := 1000;
BEGIN
    IF prune.older_than IS NULL OR prune.older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be an interval of 0 or more, got %', coalesce(prune.older_than::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'prune(older_than => ''90 days'') deletes terminal jobs unchanged for 90 days.';
    END IF;
    IF prune.max_jobs IS NOT NULL AND prune.max_jobs <= 0 THEN
        RAISE EXCEPTION 'max_jobs must be positive or null, got %', prune.max_jobs USING ERRCODE = 'TL005';
    END IF;
    cutoff := now() - prune.older_than;
    PERFORM set_config('tireless.pruning', 'on', true);
    LOOP
        -- Leaves first: a job that another job names as parent waits until that child is gone, so
        -- a live job's parent (and its parent) is never deleted. Only terminal rows are locked,
        -- rows no claim, renewal or finish ever touches; SKIP LOCKED passes over a parent that a
        -- new child's foreign key check holds.
        SELECT array_agg(b.id) INTO batch
          FROM (SELECT j.id FROM tireless.job j
                 WHERE j.state IN ('delivered', 'failed', 'cancelled') AND j.updated_at < cutoff
                   AND NOT EXISTS (SELECT FROM tireless.job c WHERE c.parent_id = j.id)
                 ORDER BY j.updated_at
                 LIMIT least(batch_size, prune.max_jobs - deleted)
                   FOR UPDATE SKIP LOCKED) AS b;
        EXIT WHEN batch IS NULL;
        DELETE FROM tireless.job_event e WHERE e.job_id = ANY (batch);
        DELETE FROM tireless.job j WHERE j.id = ANY (batch);
        deleted := deleted + cardinality(batch);
    END LOOP;
    PERFORM set_config('tireless.pruning', 'off', true);
    RETURN deleted;
END;
$$;
COMMENT ON FUNCTION tireless.prune(interval, integer) IS
    '(admin) Deletes terminal jobs last changed before now() - older_than, with their history, in batches of 1000; '
    'never a live job, never a job that a remaining job names as parent. max_jobs (null: no limit) bounds one call, '
    'so a caller can keep each transaction short. Returns how many jobs it deleted.';

-- Statistics that do not grow with the history: live jobs, and terminal jobs of the last 24 hours.
CREATE OR REPLACE VIEW tireless.queue_stats AS
SELECT j.lane, j.state, count(*) AS jobs, min(j.created_at) AS oldest, max(j.updated_at) AS latest_change
  FROM tireless.job j
 WHERE j.state IN ('pending', 'claimed')
 GROUP BY j.lane, j.state
UNION ALL
SELECT j.lane, j.state, count(*) AS jobs, min(j.created_at) AS oldest, max(j.updated_at) AS latest_change
  FROM tireless.job j
 WHERE j.state IN ('delivered', 'failed', 'cancelled') AND j.updated_at > now() - interval '24 hours'
 GROUP BY j.lane, j.state;
COMMENT ON VIEW tireless.queue_stats IS
    'How many jobs each lane holds in each live state, and how many reached each terminal state in the last 24 hours '
    '(reads the live jobs and that window only, never the whole history).';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.give_back(bigint, text, text, uuid) TO tireless_runner;
GRANT EXECUTE ON FUNCTION tireless.prune(interval, integer) TO tireless_admin;
