-- The hot path made lean, every guarantee kept: claim_next's common case and a holder's finish are one statement each, argument checks are conditions instead of calls, and the history has one index.
-- depends: 0008_runners

-- What a cycle (claim_next, then transition to delivered) cost before, per statement, and after:
-- bench/results.md, "Where the time goes". The history trigger stays the one writer of job_event:
-- every change of state passes through tireless.record_job_event, whoever makes it (a function, or
-- the schema's owner by hand), so no function can forget it and no role can go around it.

-- The history's one index: its key is (job_id, id), which is also the order a job's history is read
-- in, and what prune deletes by. It replaces the key on id alone and the index on (job_id, id), so
-- each event costs one index entry instead of two. id stays an identity (GENERATED ALWAYS), so it
-- still numbers the events in the order they were written.
ALTER TABLE tireless.job_event DROP CONSTRAINT job_event_pkey;
DROP INDEX tireless.job_events_in_order;
ALTER TABLE tireless.job_event ADD CONSTRAINT job_event_pkey PRIMARY KEY (job_id, id);
COMMENT ON CONSTRAINT job_event_pkey ON tireless.job_event IS
    'An event is identified by its job and its identity id; a job''s history, in order, is a range of this key.';

-- Rules every UPDATE of a job checks, written as plain expressions: a function in a CHECK or in a
-- trigger's WHEN is inlined again by every statement that writes the table (its text parsed, its
-- body planned), which cost more than the rule itself. Same names, same meaning;
-- tests/test_catalog.py proves the state list and the pattern are tireless.is_terminal's and
-- tireless.is_lane_name's.
ALTER TABLE tireless.job
    DROP CONSTRAINT lane_is_a_name,
    ADD CONSTRAINT lane_is_a_name CHECK (lane ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    DROP CONSTRAINT terminal_holds_no_claim,
    ADD CONSTRAINT terminal_holds_no_claim CHECK (
        state NOT IN ('delivered', 'failed', 'cancelled')
        OR (claimed_by IS NULL AND claim_expires_at IS NULL AND claim_token IS NULL));
COMMENT ON CONSTRAINT lane_is_a_name ON tireless.job IS 'A lane is a short name (the pattern of tireless.is_lane_name).';
COMMENT ON CONSTRAINT terminal_holds_no_claim ON tireless.job IS
    'A delivered, failed or cancelled job holds no claim.';

DROP TRIGGER terminal_job_is_final ON tireless.job;
CREATE TRIGGER terminal_job_is_final
    BEFORE UPDATE ON tireless.job
    FOR EACH ROW WHEN (OLD.state IN ('delivered', 'failed', 'cancelled'))
    EXECUTE FUNCTION tireless.refuse_change_to_terminal_job();
COMMENT ON TRIGGER terminal_job_is_final ON tireless.job IS 'Invariant 2: a terminal job never changes again.';

-- The argument rules as expressions: a function on the hot path tests them inline (no call, no
-- statement) and calls the check, which raises the error naming the value, only when they fail.
CREATE FUNCTION tireless.is_worker_name(worker text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN worker IS NOT NULL AND btrim(worker) <> '' AND length(worker) <= 200;
COMMENT ON FUNCTION tireless.is_worker_name(text) IS
    'True when a text can name a worker: not blank, at most 200 characters (false for null).';

CREATE FUNCTION tireless.is_lease(lease interval) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN lease IS NOT NULL AND lease > interval '0' AND lease <= interval '1 day';
COMMENT ON FUNCTION tireless.is_lease(interval) IS 'True when 0 < lease <= 1 day (false for null).';

CREATE OR REPLACE FUNCTION tireless.check_worker(worker text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF NOT tireless.is_worker_name(worker) THEN
        RAISE EXCEPTION 'worker must be a name of 1 to 200 characters, got %', coalesce(quote_literal(left(worker, 220)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_worker(text) IS
    'Raises TL005 unless worker is a non-blank name of at most 200 characters (tireless.is_worker_name).';

CREATE OR REPLACE FUNCTION tireless.check_lease(lease interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF NOT tireless.is_lease(lease) THEN
        RAISE EXCEPTION 'lease must be more than 0 and at most 1 day, got %', coalesce(lease::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'A long run keeps its lease by renewing it.';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_lease(interval) IS 'Raises TL005 unless 0 < lease <= 1 day (tireless.is_lease).';

CREATE OR REPLACE FUNCTION tireless.claim_next(worker text, lanes text[], lease interval DEFAULT '10 minutes')
    RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    malformed boolean;
    open_lanes text[];
    any_capped boolean;
    capped record;
    next_lane text;
BEGIN
    IF NOT (tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)) THEN
        PERFORM tireless.check_worker(claim_next.worker);
        PERFORM tireless.check_lease(claim_next.lease);
    END IF;
    IF claim_next.lanes IS NULL OR cardinality(claim_next.lanes) > 100 THEN
        RAISE EXCEPTION 'lanes must be an array of at most 100 lane names, got %', coalesce(left(claim_next.lanes::text, 100), 'null')
            USING ERRCODE = 'TL005';
    END IF;

    -- The common case in one statement: one lane that hands out work without a count (no settings
    -- row, or one that is unlimited, not paused and not tripped). The lane test is a one-time
    -- filter of the statement, so a lane that has settings costs no scan here.
    IF cardinality(claim_next.lanes) = 1 AND tireless.is_lane_name(claim_next.lanes[1]) THEN
        -- Invariant 4: one row transition; the row lock (SKIP LOCKED) and the write share the statement.
        RETURN QUERY
        WITH candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_next.lanes[1]]) AND j.available_at <= now()
               AND NOT EXISTS (SELECT FROM tireless.lane l
                                WHERE l.name = claim_next.lanes[1]
                                  AND (l.capacity IS NOT NULL OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until)))
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_next.worker,
               claim_expires_at = now() + claim_next.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
          FROM candidate
         WHERE j.id = candidate.id
        RETURNING j.*;
        -- Nothing claimed: the lane is empty, paused or tripped (the general path would find nothing
        -- either), or it has a capacity, which only the general path counts.
        IF FOUND OR NOT EXISTS (SELECT FROM tireless.lane l WHERE l.name = claim_next.lanes[1] AND l.capacity IS NOT NULL) THEN
            RETURN;
        END IF;
    END IF;

    -- One look at the lanes: is a name malformed, which lanes are open without a lock (no settings
    -- row, or unlimited, not paused and not tripped), and does any have a capacity.
    SELECT bool_or(r.name IS NULL OR NOT tireless.is_lane_name(r.name)),
           coalesce(array_agg(DISTINCT r.name) FILTER (
               WHERE l.name IS NULL
                  OR (l.capacity IS NULL AND tireless.lane_hands_out_work(l.paused, l.tripped_until))), '{}'),
           bool_or(l.capacity IS NOT NULL)
      INTO malformed, open_lanes, any_capped
      FROM unnest(claim_next.lanes) AS r(name)
      LEFT JOIN tireless.lane l ON l.name = r.name;
    IF malformed THEN
        PERFORM tireless.check_lane(r.name) FROM unnest(claim_next.lanes) AS r(name);
    END IF;

    -- A lane with a capacity is counted under its row lock, so concurrent claimers take its free
    -- slots one at a time and never hold more claims than the capacity.
    IF any_capped THEN
        FOR capped IN
            SELECT l.name, l.capacity FROM tireless.lane l
             WHERE l.name = ANY (claim_next.lanes)
               AND l.capacity IS NOT NULL AND tireless.lane_hands_out_work(l.paused, l.tripped_until)
             ORDER BY l.name
               FOR UPDATE
        LOOP
            IF (SELECT count(*) FROM tireless.job j WHERE j.state = 'claimed' AND j.lane = capped.name) < capped.capacity THEN
                open_lanes := open_lanes || capped.name;
            END IF;
        END LOOP;
    END IF;

    IF cardinality(open_lanes) = 0 THEN
        RETURN;
    END IF;

    -- One lane at a time, the lane whose oldest ready job is oldest first: each lane is an ordered
    -- scan of its own part of pending_jobs_in_claim_order, so neither finished jobs nor a backlog in
    -- another lane cost anything (bench/results.md). Written lane = ANY (ARRAY[lane]) ... ORDER BY
    -- j.lane, j.id on purpose: with lane = x and ORDER BY j.id the planner walks the primary key
    -- through every older job, finished or not, expecting a match at any moment.
    IF cardinality(open_lanes) > 1 THEN
        open_lanes := ARRAY(
            SELECT l.name FROM unnest(open_lanes) AS l(name)
             ORDER BY (SELECT j.id FROM tireless.job j
                        WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[l.name]) AND j.available_at <= now()
                        ORDER BY j.lane, j.id LIMIT 1) NULLS LAST);
    END IF;
    FOREACH next_lane IN ARRAY open_lanes LOOP
        -- Invariant 4: one row transition; the row lock (SKIP LOCKED) and the write share the statement.
        RETURN QUERY
        WITH candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[next_lane]) AND j.available_at <= now()
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_next.worker,
               claim_expires_at = now() + claim_next.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
          FROM candidate
         WHERE j.id = candidate.id
        RETURNING j.*;
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
END;
$$;
COMMENT ON FUNCTION tireless.claim_next(text, text[], interval) IS
    'Claims the oldest claimable pending job in the given lanes for worker: state claimed, a lease of lease, a fresh '
    'claim_token, attempts + 1. Skips paused, tripped and full lanes and jobs still in backoff. Zero rows when '
    'nothing is claimable; a lane nobody has configured simply holds no work.';

CREATE OR REPLACE FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval DEFAULT '10 minutes', token uuid DEFAULT NULL)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT (tireless.is_worker_name(renew_claim.worker) AND tireless.is_lease(renew_claim.lease)) THEN
        PERFORM tireless.check_worker(renew_claim.worker);
        PERFORM tireless.check_lease(renew_claim.lease);
    END IF;
    UPDATE tireless.job j
       SET claim_expires_at = now() + renew_claim.lease, updated_at = now()
     WHERE j.id = renew_claim.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = renew_claim.worker
       AND (renew_claim.token IS NULL OR j.claim_token = renew_claim.token);
    IF FOUND THEN
        RETURN true;
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = renew_claim.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(renew_claim.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN false;
END;
$$;
COMMENT ON FUNCTION tireless.renew_claim(bigint, text, interval, uuid) IS
    'Extends the lease to now() + lease while worker (and token, when given) holds the claim; false when the '
    'claim was lost. TL001 for an unknown job.';

CREATE OR REPLACE FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval DEFAULT '10 minutes', token uuid DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    requested timestamptz;
BEGIN
    IF NOT (tireless.is_worker_name(heartbeat.worker) AND tireless.is_lease(heartbeat.lease)) THEN
        PERFORM tireless.check_worker(heartbeat.worker);
        PERFORM tireless.check_lease(heartbeat.lease);
    END IF;
    UPDATE tireless.job j
       SET claim_expires_at = now() + heartbeat.lease, updated_at = now()
     WHERE j.id = heartbeat.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = heartbeat.worker
       AND (heartbeat.token IS NULL OR j.claim_token = heartbeat.token)
    RETURNING j.cancel_requested_at INTO requested;
    IF FOUND THEN
        RETURN CASE WHEN requested IS NULL THEN 'held' ELSE 'cancel' END;
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = heartbeat.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(heartbeat.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN 'lost';
END;
$$;
COMMENT ON FUNCTION tireless.heartbeat(bigint, text, interval, uuid) IS
    'Renews like renew_claim and answers held, lost (worker, or token when given, no longer holds the claim) or '
    'cancel (the issue withdrew its request: the lease is still extended, so the holder can stop its agent and '
    'transition the job to cancelled). TL001 for an unknown job.';

CREATE OR REPLACE FUNCTION tireless.transition(
    job_id bigint, to_state text, worker text DEFAULT NULL, note text DEFAULT NULL, token uuid DEFAULT NULL
) RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    target tireless.job_state;
    job tireless.job;
    budget integer;
    final_state tireless.job_state;
    final_note text := transition.note;
    result tireless.job;
    lane_capped boolean;
    breaker_dirty boolean;
BEGIN
    -- The names of the holder's moves need no look-up; any other name is parsed (TL005 if unknown).
    IF transition.to_state IN ('delivered', 'failed', 'cancelled') THEN
        target := transition.to_state::tireless.job_state;
    ELSE
        target := tireless.parse_state(transition.to_state);
    END IF;
    IF length(transition.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(transition.note) USING ERRCODE = 'TL005';
    END IF;

    -- The holder ends its claim (delivered, failed, cancelled): one guarded UPDATE, the row lock and
    -- the holder's test in the same statement. When it changes nothing (not the holder, or any other
    -- move), the analysis below decides, under the row lock, which refusal or move it is.
    IF transition.worker IS NOT NULL AND target IN ('delivered', 'failed', 'cancelled') THEN
        UPDATE tireless.job j
           SET state = target,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               note = transition.note,
               updated_at = now()
         WHERE j.id = transition.job_id
           AND j.state = 'claimed'
           AND j.claimed_by = transition.worker
           AND (transition.token IS NULL OR j.claim_token = transition.token)
        RETURNING j.* INTO result;
        IF FOUND THEN
            -- Most lanes have no settings row: then there is no breaker to close and no slot to announce.
            SELECT l.capacity IS NOT NULL, l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL
              INTO lane_capped, breaker_dirty
              FROM tireless.lane l WHERE l.name = result.lane;
            IF result.state = 'failed' THEN
                PERFORM tireless.record_lane_outcome(result.lane, false);
            ELSIF result.state = 'delivered' AND breaker_dirty THEN
                PERFORM tireless.record_lane_outcome(result.lane, true);
            END IF;
            IF lane_capped THEN
                PERFORM tireless.announce_work(result.lane);
            END IF;
            RETURN result;
        END IF;
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

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
