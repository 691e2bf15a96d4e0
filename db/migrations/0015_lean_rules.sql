-- The hot path, second pass: the rules of a job row checked by one call instead of nine expressions
-- every statement parses again, and claim_next and transition without a statement they did not need.
-- depends: 0014_lane_summary

-- Where the time went (bench/where-the-time-goes.md): PostgreSQL parses every CHECK constraint of a
-- table from its stored text and plans it again in each statement that writes the table, before it
-- tests the first row. tireless.job had ten; their parsing and planning was a sixth of a claim and
-- deliver cycle. Nine of them are now the branches of one function, which PostgreSQL compiles once
-- per session; the constraint that calls it is a single call to parse. Each rule keeps its name:
-- a row that breaks one is refused with SQLSTATE 23514 (check_violation) and the rule's name as the
-- constraint name, as before, and the rules are tested in the order PostgreSQL tested the
-- constraints (by name), so a row that breaks two is refused by the same rule as before.
-- pending_holds_no_claim stays a constraint of its own: DESIGN.md names it (invariant 3).
CREATE FUNCTION tireless.job_rules_hold(job tireless.job) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    -- One expression, not one test each: PL/pgSQL prepares each expression again in every
    -- transaction, and every claim and every finish is a transaction of its own.
    broken CONSTANT text := CASE
        WHEN job.attempts < 0 THEN 'attempts_not_negative'  -- attempts count claims
        WHEN job.state = 'claimed'
             AND (job.claimed_by IS NULL OR job.claim_expires_at IS NULL OR job.claim_token IS NULL)
            THEN 'claimed_holds_claim'                       -- a claimed job has a holder, a lease and a token
        WHEN job.state = 'claimed' AND job.attempts <= 0
            THEN 'claimed_job_counts_an_attempt'             -- the attempt is counted at claim
        WHEN job.given_back < 0 OR job.given_back > job.attempts
            THEN 'given_back_within_attempts'                -- only a claimed attempt can be given back
        WHEN job.number <= 0 THEN 'issue_number_positive'
        WHEN NOT tireless.is_lane_name(job.lane) THEN 'lane_is_a_name'
        WHEN job.parent_id = job.id THEN 'not_its_own_parent'
        WHEN job.state = 'pending' AND job.cancel_requested_at IS NOT NULL
            THEN 'pending_holds_no_cancel_request'           -- a cancel-requested claim never goes back to pending
        WHEN tireless.is_terminal(job.state)
             AND (job.claimed_by IS NOT NULL OR job.claim_expires_at IS NOT NULL OR job.claim_token IS NOT NULL)
            THEN 'terminal_holds_no_claim'
    END;
BEGIN
    IF broken IS NULL THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'new row for relation "job" violates check constraint "%"', broken
        USING ERRCODE = 'check_violation', CONSTRAINT = broken, SCHEMA = 'tireless', TABLE = 'job',
              DETAIL = format('Failing row: job %s, state %s.', coalesce(job.id::text, 'new'), job.state);
END;
$$;
COMMENT ON FUNCTION tireless.job_rules_hold(tireless.job) IS
    'The rules every job row keeps, each by its name: attempts_not_negative, claimed_holds_claim, '
    'claimed_job_counts_an_attempt, given_back_within_attempts, issue_number_positive, lane_is_a_name, '
    'not_its_own_parent, pending_holds_no_cancel_request, terminal_holds_no_claim. True when the row keeps them; '
    'else raises check_violation (23514) naming the rule it breaks. Called by the constraint job_rules_hold.';

ALTER TABLE tireless.job
    DROP CONSTRAINT attempts_not_negative,
    DROP CONSTRAINT claimed_holds_claim,
    DROP CONSTRAINT claimed_job_counts_an_attempt,
    DROP CONSTRAINT given_back_within_attempts,
    DROP CONSTRAINT issue_number_positive,
    DROP CONSTRAINT lane_is_a_name,
    DROP CONSTRAINT not_its_own_parent,
    DROP CONSTRAINT pending_holds_no_cancel_request,
    DROP CONSTRAINT terminal_holds_no_claim,
    ADD CONSTRAINT job_rules_hold CHECK (tireless.job_rules_hold(job));
COMMENT ON CONSTRAINT job_rules_hold ON tireless.job IS
    'Every row keeps the nine rules of tireless.job_rules_hold; a row that breaks one is refused under that rule''s name.';

-- Invariant 2's trigger tests one comparison instead of a list: the terminal states are the states
-- after claimed in job_state's order (pending, claimed, delivered, failed, cancelled), which
-- tests/test_catalog.py proves is tireless.is_terminal's set. The trigger's condition is parsed in
-- every statement that updates a job, like a constraint.
DROP TRIGGER terminal_job_is_final ON tireless.job;
CREATE TRIGGER terminal_job_is_final
    BEFORE UPDATE ON tireless.job
    FOR EACH ROW WHEN (OLD.state > 'claimed')
    EXECUTE FUNCTION tireless.refuse_change_to_terminal_job();
COMMENT ON TRIGGER terminal_job_is_final ON tireless.job IS 'Invariant 2: a terminal job never changes again.';

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
    -- The common case, one test and one statement: a well-formed call for one lane that hands out
    -- work without a count (no settings row, or one that is unlimited, not paused and not tripped).
    -- The lane test is a one-time filter of the statement, so a lane that has settings costs no scan
    -- here. One test, not one per argument: PL/pgSQL prepares each expression again in every
    -- transaction, and every claim is a transaction of its own.
    IF tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)
       AND cardinality(claim_next.lanes) = 1 AND tireless.is_lane_name(claim_next.lanes[1]) THEN
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
        -- either), or it has a capacity, which only the general path counts. Two tests, not one
        -- condition: FOUND alone is a plain expression, the look at the lane a statement of its own.
        IF FOUND THEN
            RETURN;
        END IF;
        IF NOT EXISTS (SELECT FROM tireless.lane l WHERE l.name = claim_next.lanes[1] AND l.capacity IS NOT NULL) THEN
            RETURN;
        END IF;
    ELSE
        IF NOT (tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)) THEN
            PERFORM tireless.check_worker(claim_next.worker);
            PERFORM tireless.check_lease(claim_next.lease);
        END IF;
        IF claim_next.lanes IS NULL OR cardinality(claim_next.lanes) > 100 THEN
            RAISE EXCEPTION 'lanes must be an array of at most 100 lane names, got %', coalesce(left(claim_next.lanes::text, 100), 'null')
                USING ERRCODE = 'TL005';
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
    ended record;
BEGIN
    -- The holder ends its claim (delivered, failed, cancelled): one test, then one statement that
    -- takes the row lock, tests the holder and reads the lane's settings. One test, not one per
    -- argument: PL/pgSQL prepares each expression again in every transaction, and every finish is a
    -- transaction of its own. When the statement changes nothing (not the holder), or the call is
    -- any other move, the analysis below decides, under the row lock, which refusal or move it is.
    IF transition.worker IS NOT NULL AND transition.to_state IN ('delivered', 'failed', 'cancelled')
       AND (transition.note IS NULL OR length(transition.note) <= 10000) THEN
        WITH moved AS (
            UPDATE tireless.job j
               SET state = transition.to_state::tireless.job_state,
                   claimed_by = NULL,
                   claim_expires_at = NULL,
                   claim_token = NULL,
                   note = transition.note,
                   updated_at = now()
             WHERE j.id = transition.job_id
               AND j.state = 'claimed'
               AND j.claimed_by = transition.worker
               AND (transition.token IS NULL OR j.claim_token = transition.token)
            RETURNING j
        )
        -- Whether the lane must hear of it: a failure counts against its breaker, a delivery closes
        -- a breaker that counted failures, and a lane with a capacity announces the freed slot. Most
        -- lanes have no settings row, so a delivery there needs nothing more.
        SELECT m.j AS job,
               (m.j).state = 'failed' OR l.capacity IS NOT NULL
               OR ((m.j).state = 'delivered' AND (l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL)) AS lane_hears
          INTO ended
          FROM moved m LEFT JOIN tireless.lane l ON l.name = (m.j).lane;
        IF FOUND THEN
            IF ended.lane_hears THEN
                result := ended.job;
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
            END IF;
            RETURN ended.job;
        END IF;
    END IF;

    -- The names of the holder's moves need no look-up; any other name is parsed (TL005 if unknown).
    IF transition.to_state IN ('delivered', 'failed', 'cancelled') THEN
        target := transition.to_state::tireless.job_state;
    ELSE
        target := tireless.parse_state(transition.to_state);
    END IF;
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

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
