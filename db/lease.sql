-- Holding a claim: renew, heartbeat (with the watchdog and time limits), progress, the report, give
-- back, and the sweeper that returns expired claims (checkpoints and pushes are in delivery.sql).
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

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
       AND (renew_claim.token IS NULL OR j.claim_token = renew_claim.token)
       AND tireless.acts_for_login(j.claimed_login);
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
    'Extends the lease to now() + lease while worker (and token, when given) holds the claim and the caller is the '
    'login that claimed (or an admin); false when the claim was lost or is another login''s. TL001 for an unknown job.';
REVOKE ALL ON FUNCTION tireless.renew_claim(bigint, text, interval, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.renew_claim(bigint, text, interval, uuid) TO tireless_runner;

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
    -- One sweeper per lane at a time, by its slot's row of tireless.sweep_slot (FOR NO KEY UPDATE
    -- SKIP LOCKED): a lane another sweeper holds is left for the next sweep, so two sweepers never
    -- wait on each other, not even on the lane row the circuit breaker counts in. A row only the
    -- tireless functions can lock, not an advisory key any login could take: no outside login stops a sweep.
    SELECT coalesce(array_agg(s.lane), '{}') INTO sweep_lanes
      FROM (SELECT DISTINCT j.lane FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS s;
    IF cardinality(sweep_lanes) = 0 THEN
        RETURN 0;
    END IF;
    sweep_lanes := ARRAY(
        WITH held AS (
            SELECT k.slot FROM tireless.sweep_slot k
             WHERE k.slot IN (SELECT hashtext(l) & 63 FROM unnest(sweep_lanes) AS l)
             ORDER BY k.slot
               FOR NO KEY UPDATE SKIP LOCKED)
        SELECT l FROM unnest(sweep_lanes) AS l WHERE hashtext(l) & 63 IN (SELECT h.slot FROM held h));
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
                           THEN format('%s; lease of %s expired at %s', coalesce(j.cancel_note, 'issue withdrew its request'),
                                       j.claimed_by, j.claim_expires_at)
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
    'attempt its budget counts is spent (give-backs are not counted), or cancels it, with the stop''s note, when it '
    'was asked to stop (no failure counted); clears the claim, keeps the attempt count, and returns how many jobs it moved. '
    'Never waits on another sweeper: a job whose row is locked, or a lane another sweeper holds (its '
    'tireless.sweep_slot row), is left for the next sweep. Locks only rows no login outside the tireless roles can lock.';
REVOKE ALL ON FUNCTION tireless.expire_stale_claims() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.expire_stale_claims() TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval DEFAULT '10 minutes', token uuid DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    requested timestamptz;
    held_lane text;
    held_attempt integer;
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
       AND tireless.acts_for_login(j.claimed_login)
    RETURNING j.cancel_requested_at, j.lane, j.attempts INTO requested, held_lane, held_attempt;
    IF FOUND THEN
        IF requested IS NOT NULL THEN
            RETURN 'cancel';
        END IF;
        RETURN tireless.watch_attempt(heartbeat.job_id, held_attempt, held_lane);
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = heartbeat.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(heartbeat.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN 'lost';
END;
$$;
COMMENT ON FUNCTION tireless.heartbeat(bigint, text, interval, uuid) IS
    'Renews like renew_claim and answers held, lost (worker, or token when given, no longer holds the claim, or the '
    'caller is not the login that claimed nor an admin), '
    'cancel (the job was asked to stop: its issue withdrew its request, an admin cancelled it), timeout (the attempt ran past its lane''s max_run) or stalled (no '
    'progress for its lane''s stall_after). On cancel, timeout and stalled the lease is still extended, so the holder '
    'can stop its agent: then transition to cancelled, or end_stopped_attempt. A runner treats an answer it does '
    'not know as cancel. TL001 for an unknown job.';
REVOKE ALL ON FUNCTION tireless.heartbeat(bigint, text, interval, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.heartbeat(bigint, text, interval, uuid) TO tireless_runner;

-- Invariant 5 with the login: another login presenting the holder's name (and token) is not the holder.
CREATE OR REPLACE FUNCTION tireless.check_holder(job tireless.job, worker text, token uuid) RETURNS void
    LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF job.state = 'claimed' AND job.claimed_by = check_holder.worker
       AND (check_holder.token IS NULL OR check_holder.token = job.claim_token)
       AND tireless.acts_for_login(job.claimed_login) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'worker % does not hold job %', coalesce(quote_literal(left(check_holder.worker, 220)), 'null'), job.id
        USING ERRCODE = 'TL004',
              DETAIL = CASE
                  WHEN job.state <> 'claimed' THEN format('The job is %s now.', job.state)
                  WHEN job.claimed_by IS DISTINCT FROM check_holder.worker THEN format('The job is claimed by %L.', job.claimed_by)
                  WHEN check_holder.token IS NOT NULL AND check_holder.token <> job.claim_token
                      THEN 'The claim was lost and the job claimed again.'
                  ELSE format('The job was claimed by the login %I, not by %I.', job.claimed_login, session_user) END,
              HINT = CASE WHEN job.state = 'claimed' AND job.claimed_by = check_holder.worker
                               AND (check_holder.token IS NULL OR check_holder.token = job.claim_token)
                          THEN 'Only the login that claimed a job (or an admin) may act for its holder.'
                          ELSE 'The lease was lost: stop the work and leave the job to the store.' END;
END;
$$;
COMMENT ON FUNCTION tireless.check_holder(tireless.job, text, uuid) IS
    'Raises TL004 unless worker (and token, when given) holds the job''s current claim and the caller is the login '
    'that claimed it (or an admin); DETAIL says where the job is now, or which login claimed it.';
REVOKE ALL ON FUNCTION tireless.check_holder(tireless.job, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.give_back(job_id bigint, worker text, note text DEFAULT NULL, token uuid DEFAULT NULL)
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
    -- Sent again because its answer was lost: the first one committed; the job as it is now answers.
    IF give_back.token IS NOT NULL AND job.ended_claim_token = give_back.token THEN
        RETURN job;
    END IF;
    PERFORM tireless.check_holder(job, give_back.worker, give_back.token);
    IF job.cancel_requested_at IS NOT NULL THEN
        -- A cancel request stands (0007_work_rule): the job ends cancelled instead of running again.
        UPDATE tireless.job j
           SET state = 'cancelled', claimed_by = NULL, claim_expires_at = NULL, claim_token = NULL,
               ended_claim_token = give_back.token,
               note = coalesce(job.cancel_note, 'issue withdrew its request') || coalesce('; given back: ' || give_back.note, ''),
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
           ended_claim_token = give_back.token,
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
    '(attempts keeps the claim; given_back counts it). The note starts with "given back". A job asked to stop ends '
    'cancelled instead, with the stop''s note. TL004 unless worker (and token, when given) holds the claim and the caller '
    'is the login that claimed it (or an admin). Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';
REVOKE ALL ON FUNCTION tireless.give_back(bigint, text, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.give_back(bigint, text, text, uuid) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.check_run_limit(name text, span interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF span <= interval '0' OR span > interval '30 days' THEN
        RAISE EXCEPTION '% must be null (no limit) or more than 0 and at most 30 days, got %', name, span
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_run_limit(text, interval) IS
    'Raises TL005 (naming the setting) unless the limit is null or 0 < limit <= 30 days.';
REVOKE ALL ON FUNCTION tireless.check_run_limit(text, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The attempt row of a claimed job, made (or started again) for its current attempt.
CREATE OR REPLACE FUNCTION tireless.current_attempt(job_id bigint, attempt integer) RETURNS tireless.job_attempt
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    result tireless.job_attempt;
    claimed timestamptz;
BEGIN
    SELECT * INTO result FROM tireless.job_attempt a WHERE a.job_id = current_attempt.job_id;
    IF FOUND AND result.attempt = current_attempt.attempt THEN
        RETURN result;
    END IF;
    -- The job is claimed, so its newest event is its claim.
    SELECT e.at INTO claimed FROM tireless.job_event e
     WHERE e.job_id = current_attempt.job_id ORDER BY e.id DESC LIMIT 1;
    INSERT INTO tireless.job_attempt AS a (job_id, attempt, started_at, progress_at)
    VALUES (current_attempt.job_id, current_attempt.attempt, coalesce(claimed, now()), coalesce(claimed, now()))
    ON CONFLICT ON CONSTRAINT job_attempt_pkey DO UPDATE
       SET attempt = excluded.attempt, started_at = excluded.started_at, progress_at = excluded.progress_at,
           step = NULL, stop = NULL, stop_note = NULL, report = NULL, report_cut = false
    RETURNING a.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.current_attempt(bigint, integer) IS
    'The job_attempt row of the job''s attempt number attempt, made (started at the claim in the history) when '
    'the job has none or one of an older attempt. Called with the job''s row locked by its holder.';
REVOKE ALL ON FUNCTION tireless.current_attempt(bigint, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The watchdog: what heartbeat answers a holder whose job has no cancel request.
CREATE OR REPLACE FUNCTION tireless.watch_attempt(job_id bigint, attempt integer, lane text) RETURNS text
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    limits record;
    current tireless.job_attempt;
BEGIN
    SELECT l.max_run, l.stall_after INTO limits FROM tireless.lane l WHERE l.name = watch_attempt.lane;
    IF limits.max_run IS NULL AND limits.stall_after IS NULL THEN
        -- No limit (the common case): only a stop already made stands.
        RETURN coalesce((SELECT a.stop FROM tireless.job_attempt a
                          WHERE a.job_id = watch_attempt.job_id AND a.attempt = watch_attempt.attempt), 'held');
    END IF;
    current := tireless.current_attempt(watch_attempt.job_id, watch_attempt.attempt);
    IF current.stop IS NOT NULL THEN
        RETURN current.stop;  -- a stop stands once made, as a cancel request does
    END IF;
    IF now() - current.started_at >= limits.max_run THEN
        current.stop := 'timeout';
        current.stop_note := 'timed out after ' || tireless.short_duration(limits.max_run);
    ELSIF now() - current.progress_at >= limits.stall_after THEN
        current.stop := 'stalled';
        current.stop_note := 'no progress for ' || tireless.short_duration(limits.stall_after)
                             || coalesce(' (last: ' || current.step || ')', '');
    ELSE
        RETURN 'held';
    END IF;
    UPDATE tireless.job_attempt a SET stop = current.stop, stop_note = current.stop_note
     WHERE a.job_id = watch_attempt.job_id;
    RETURN current.stop;
END;
$$;
COMMENT ON FUNCTION tireless.watch_attempt(bigint, integer, text) IS
    'The watchdog''s answer for a held attempt: held, timeout (claimed longer ago than the lane''s max_run) or '
    'stalled (no progress for the lane''s stall_after). A stop is recorded with its note and stands until the attempt ends.';
REVOKE ALL ON FUNCTION tireless.watch_attempt(bigint, integer, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- When the watchdog may next stop a claimed attempt, so that its holder heartbeats then rather than up
-- to a third of a lease later: the attempt's start (its claim, before its first watch) plus the lane's
-- max_run, or its last progress plus stall_after, whichever comes first.
CREATE OR REPLACE FUNCTION tireless.watchdog_due_at(job_id bigint) RETURNS timestamptz
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT least(coalesce(a.started_at, claim.at) + l.max_run, coalesce(a.progress_at, claim.at) + l.stall_after)
      FROM tireless.job j
      JOIN tireless.lane l ON l.name = j.lane AND (l.max_run IS NOT NULL OR l.stall_after IS NOT NULL)
      -- The job is claimed, so its newest event is its claim (as current_attempt reads it).
      CROSS JOIN LATERAL (SELECT e.at FROM tireless.job_event e WHERE e.job_id = j.id ORDER BY e.id DESC LIMIT 1) AS claim
      LEFT JOIN tireless.job_attempt a ON a.job_id = j.id AND a.attempt = j.attempts
     WHERE j.id = watchdog_due_at.job_id AND j.state = 'claimed';
$$;
COMMENT ON FUNCTION tireless.watchdog_due_at(bigint) IS
    'When the watchdog may next stop the claimed job''s attempt: its start plus its lane''s max_run, or its last '
    'progress plus stall_after, whichever is first (a heartbeat then answers timeout or stalled, unless progress came '
    'since). Null when the job is not claimed or its lane has neither limit. The runner heartbeats at that time.';
REVOKE ALL ON FUNCTION tireless.watchdog_due_at(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.watchdog_due_at(bigint) TO tireless_runner;

-- The holder's lock on its claimed job, or TL001/TL004.
CREATE OR REPLACE FUNCTION tireless.held_job(job_id bigint, worker text, token uuid) RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    job tireless.job;
BEGIN
    SELECT * INTO job FROM tireless.job j WHERE j.id = held_job.job_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(held_job.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    PERFORM tireless.check_holder(job, held_job.worker, held_job.token);
    RETURN job;
END;
$$;
COMMENT ON FUNCTION tireless.held_job(bigint, text, uuid) IS
    'The job, locked (FOR NO KEY UPDATE), when worker (and token, when given) holds its claim; TL001 for an unknown '
    'job, TL004 (tireless.check_holder) otherwise.';
REVOKE ALL ON FUNCTION tireless.held_job(bigint, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.report_progress(job_id bigint, worker text, step text DEFAULT NULL, token uuid DEFAULT NULL)
    RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job := tireless.held_job(report_progress.job_id, report_progress.worker, report_progress.token);
    result timestamptz;
BEGIN
    PERFORM tireless.current_attempt(job.id, job.attempts);
    UPDATE tireless.job_attempt a
       SET progress_at = now(),
           step = coalesce(left(nullif(btrim(report_progress.step), ''), 500), a.step)
     WHERE a.job_id = job.id
    RETURNING a.progress_at INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.report_progress(bigint, text, text, uuid) IS
    'The holder says its attempt progresses (the stall watchdog counts from now): step, when given, becomes the '
    'attempt''s current step (its first 500 characters); without one the last step stays. Returns the time recorded. '
    'TL001 for an unknown job, TL004 when worker (or token) does not hold it.';
REVOKE ALL ON FUNCTION tireless.report_progress(bigint, text, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.report_progress(bigint, text, text, uuid) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.attach_report(job_id bigint, worker text, report text, token uuid DEFAULT NULL)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job := tireless.held_job(attach_report.job_id, attach_report.worker, attach_report.token);
    cut boolean := coalesce(length(attach_report.report) > 60000, false);
BEGIN
    PERFORM tireless.current_attempt(job.id, job.attempts);
    UPDATE tireless.job_attempt a
       SET report = nullif(left(attach_report.report, 60000), ''), report_cut = cut
     WHERE a.job_id = job.id;
    RETURN cut;
END;
$$;
COMMENT ON FUNCTION tireless.attach_report(bigint, text, text, uuid) IS
    'The holder attaches its agent''s outcome summary (markdown) to the attempt before finishing it; the mirror '
    'posts it as the outcome comment instead of the note. Kept up to 60000 characters: true when it was cut. '
    'TL001 for an unknown job, TL004 when worker (or token) does not hold it.';
REVOKE ALL ON FUNCTION tireless.attach_report(bigint, text, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.attach_report(bigint, text, text, uuid) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.record_exit(job_id bigint, worker text, exit_status integer, token uuid DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job := tireless.held_job(record_exit.job_id, record_exit.worker, record_exit.token);
BEGIN
    IF record_exit.exit_status IS NULL THEN
        RAISE EXCEPTION 'exit_status must be a number, got null' USING ERRCODE = 'TL005';
    END IF;
    INSERT INTO tireless.attempt_exit AS x (job_id, attempt, exit_status)
    VALUES (job.id, job.attempts, record_exit.exit_status)
    ON CONFLICT ON CONSTRAINT attempt_exit_pkey DO UPDATE SET exit_status = excluded.exit_status, recorded_at = now();
END;
$$;
COMMENT ON FUNCTION tireless.record_exit(bigint, text, integer, uuid) IS
    'The holder records how COMMAND ended in its attempt (its exit status; negative: the signal that ended it), '
    'before it finishes the attempt; recorded again, the last one stands. TL001 for an unknown job, TL004 when '
    'worker (or token) does not hold it, TL005 for a null status.';
REVOKE ALL ON FUNCTION tireless.record_exit(bigint, text, integer, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_exit(bigint, text, integer, uuid) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.end_stopped_attempt(job_id bigint, worker text, token uuid DEFAULT NULL)
    RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    note text;
BEGIN
    -- Sent again because its answer was lost: the first one committed (transition's rule).
    IF end_stopped_attempt.token IS NOT NULL THEN
        SELECT * INTO job FROM tireless.job j
         WHERE j.id = end_stopped_attempt.job_id AND j.ended_claim_token = end_stopped_attempt.token;
        IF FOUND THEN
            RETURN job;
        END IF;
    END IF;
    job := tireless.held_job(end_stopped_attempt.job_id, end_stopped_attempt.worker, end_stopped_attempt.token);
    SELECT a.stop_note INTO note FROM tireless.job_attempt a
     WHERE a.job_id = job.id AND a.attempt = job.attempts AND a.stop IS NOT NULL;
    IF note IS NULL THEN
        RAISE EXCEPTION 'job %''s attempt % was not stopped by the watchdog', job.id, job.attempts
            USING ERRCODE = 'TL002', HINT = 'Only an attempt whose heartbeat answered timeout or stalled ends this way.';
    END IF;
    -- A failure like any other: back to pending with backoff, failed when the attempts are spent,
    -- counted by the lane's circuit breaker.
    RETURN tireless.transition(job.id, 'pending', end_stopped_attempt.worker, note, end_stopped_attempt.token);
END;
$$;
COMMENT ON FUNCTION tireless.end_stopped_attempt(bigint, text, uuid) IS
    'The holder ends an attempt the watchdog stopped (heartbeat answered timeout or stalled) as a failure, with the '
    'watchdog''s note (timed out after 2h; no progress for 30m (last: ran the tests)): as transition to pending '
    'does (backoff, the attempt budget, the breaker). TL002 when the watchdog did not stop it; TL001, TL004 as transition.'
    ' Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';
REVOKE ALL ON FUNCTION tireless.end_stopped_attempt(bigint, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.end_stopped_attempt(bigint, text, uuid) TO tireless_runner;

-- Inlined into the statements that call it (one SQL expression), so a holder calling from its own
-- login pays one comparison: the admin test runs only for another login.
CREATE OR REPLACE FUNCTION tireless.acts_for_login(claimed_login text) RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    SELECT acts_for_login.claimed_login = session_user
           OR acts_for_login.claimed_login IS NULL
           OR tireless.may_cancel_pending()
$$;
COMMENT ON FUNCTION tireless.acts_for_login(text) IS
    'True when the caller may act for a claim made by claimed_login: it is that login (session_user), the claim '
    'predates logins (null), or the caller''s effective role is an admin (as tireless.may_cancel_pending judges).';
REVOKE ALL ON FUNCTION tireless.acts_for_login(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
