-- Lanes: the wake-up notice, capacity, pause and resume, the circuit breaker, time limits; and each
-- worker's own record of its start, beats and stop.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.lane_hands_out_work(paused boolean, tripped_until timestamptz) RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    SELECT NOT paused AND (tripped_until IS NULL OR tripped_until <= now());
$$;
COMMENT ON FUNCTION tireless.lane_hands_out_work(boolean, timestamptz) IS
    'True when a lane with these settings hands out work now: not paused, and its circuit breaker not tripped.';
REVOKE ALL ON FUNCTION tireless.lane_hands_out_work(boolean, timestamp with time zone) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- Wake-up: runners LISTEN on channel tireless_work; the payload is the lane.
CREATE OR REPLACE FUNCTION tireless.announce_work(lane text) RETURNS void
    LANGUAGE sql VOLATILE
AS $$
    SELECT pg_notify('tireless_work', announce_work.lane);
$$;
COMMENT ON FUNCTION tireless.announce_work(text) IS
    'NOTIFY tireless_work with the lane as payload: work may be claimable there now. Sent at commit.';
REVOKE ALL ON FUNCTION tireless.announce_work(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The circuit breaker counts consecutive failed or expired attempts per lane.
CREATE OR REPLACE FUNCTION tireless.record_lane_outcome(lane text, succeeded boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF succeeded THEN
        -- Written only when there is something to reset, so deliveries do not contend on the lane row.
        UPDATE tireless.lane l SET consecutive_failures = 0, tripped_until = NULL
         WHERE l.name = record_lane_outcome.lane
           AND (l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL);
        RETURN;
    END IF;
    INSERT INTO tireless.lane AS l (name, consecutive_failures, tripped_until)
    SELECT record_lane_outcome.lane, 1,
           CASE WHEN p.breaker_threshold <= 1 THEN now() + p.breaker_cooldown END
      FROM tireless.policy p
    ON CONFLICT (name) DO UPDATE
       SET consecutive_failures = l.consecutive_failures + 1,
           tripped_until = CASE
               WHEN l.consecutive_failures + 1 >= (SELECT p.breaker_threshold FROM tireless.policy p)
               THEN now() + (SELECT p.breaker_cooldown FROM tireless.policy p)
               ELSE l.tripped_until END;
END;
$$;
COMMENT ON FUNCTION tireless.record_lane_outcome(text, boolean) IS
    'Circuit breaker bookkeeping: a success closes the lane''s breaker; a failure counts, and the '
    'threshold-th consecutive one trips the lane for the cool-down.';
REVOKE ALL ON FUNCTION tireless.record_lane_outcome(text, boolean) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_lane_capacity(lane text, capacity integer) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    IF set_lane_capacity.capacity < 0 THEN
        RAISE EXCEPTION 'capacity must be null (unlimited) or at least 0, got %', set_lane_capacity.capacity
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.ensure_lane(set_lane_capacity.lane);
    UPDATE tireless.lane l SET capacity = set_lane_capacity.capacity
     WHERE l.name = set_lane_capacity.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_capacity(text, integer) IS
    'At most capacity claimed jobs in the lane at once (null: unlimited; 0 holds the lane''s work back). Returns the lane.';
REVOKE ALL ON FUNCTION tireless.set_lane_capacity(text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_lane_capacity(text, integer) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.pause_lane(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(pause_lane.lane);
    UPDATE tireless.lane l SET paused = true WHERE l.name = pause_lane.lane RETURNING l.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.pause_lane(text) IS
    'claim_next hands out nothing from the lane until resume_lane; claims already held run on. Returns the lane.';
REVOKE ALL ON FUNCTION tireless.pause_lane(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.pause_lane(text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.resume_lane(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(resume_lane.lane);
    UPDATE tireless.lane l SET paused = false WHERE l.name = resume_lane.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.resume_lane(text) IS 'Undoes pause_lane and wakes the lane''s runners. Returns the lane.';
REVOKE ALL ON FUNCTION tireless.resume_lane(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.resume_lane(text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.reset_lane_breaker(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(reset_lane_breaker.lane);
    UPDATE tireless.lane l SET consecutive_failures = 0, tripped_until = NULL
     WHERE l.name = reset_lane_breaker.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.reset_lane_breaker(text) IS
    'Closes the lane''s circuit breaker and forgets its failures, then wakes its runners. Returns the lane.';
REVOKE ALL ON FUNCTION tireless.reset_lane_breaker(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.reset_lane_breaker(text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.next_ready_at(lanes text[]) RETURNS timestamptz
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT min(j.available_at) FROM tireless.job j
     WHERE j.state = 'pending' AND j.lane = ANY (next_ready_at.lanes) AND j.available_at > now() AND j.waiting_on IS NULL;
END;
COMMENT ON FUNCTION tireless.next_ready_at(text[]) IS
    'When the earliest backed-off pending job in the lanes becomes claimable (null: none is waiting out a '
    'backoff): an idle runner sleeps until then at most, since the end of a backoff sends no notification. A job '
    'waiting for a dependency is left out: its release sends the lane''s notification.';
REVOKE ALL ON FUNCTION tireless.next_ready_at(text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.next_ready_at(text[]) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.set_lane_max_run(lane text, max_run interval) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.check_run_limit('max_run', set_lane_max_run.max_run);
    PERFORM tireless.ensure_lane(set_lane_max_run.lane);
    UPDATE tireless.lane l SET max_run = set_lane_max_run.max_run
     WHERE l.name = set_lane_max_run.lane RETURNING l.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_max_run(text, interval) IS
    '(admin) The time limit of every attempt in the lane (null: none): past it, the holder''s heartbeat answers '
    'timeout and the attempt ends as a failure, note "timed out after 2h". Applies to running attempts too. Returns the lane.';
REVOKE ALL ON FUNCTION tireless.set_lane_max_run(text, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_lane_max_run(text, interval) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_lane_stall_after(lane text, stall_after interval) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.check_run_limit('stall_after', set_lane_stall_after.stall_after);
    PERFORM tireless.ensure_lane(set_lane_stall_after.lane);
    UPDATE tireless.lane l SET stall_after = set_lane_stall_after.stall_after
     WHERE l.name = set_lane_stall_after.lane RETURNING l.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_stall_after(text, interval) IS
    '(admin) The progress watchdog of the lane (null: none): an attempt without progress for this long gets '
    'stalled from its heartbeat and ends as a failure, note "no progress for 30m (last: ran the tests)". Returns the lane.';
REVOKE ALL ON FUNCTION tireless.set_lane_stall_after(text, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_lane_stall_after(text, interval) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.lane_problem(lanes text[]) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    WITH known AS (
        SELECT j.lane FROM tireless.job j
        UNION SELECT l.name FROM tireless.lane l
        UNION SELECT kp.default_lane FROM tireless.kind_policy kp
    ), unknown AS (
        SELECT asked FROM unnest(lane_problem.lanes) AS asked
         WHERE asked NOT IN (SELECT k.lane FROM known k)
    )
    SELECT format('no job or lane is named %s; the lanes with jobs are %s',
                  string_agg(DISTINCT quote_literal(u.asked), ', '),
                  coalesce((SELECT string_agg(DISTINCT j.lane, ', ' ORDER BY j.lane) FROM tireless.job j),
                           'none yet'))
      FROM unknown u
    HAVING count(*) > 0;
$$;
COMMENT ON FUNCTION tireless.lane_problem(text[]) IS
    'What is wrong with a worker''s lanes: null when each has a job, a setting (tireless.lane) or is a kind''s default lane; else a sentence naming the unknown ones (a typo, most likely) and the lanes that have jobs. A worker says it at start; it may still wait on a lane that gets its first job later.';
REVOKE ALL ON FUNCTION tireless.lane_problem(text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.lane_problem(text[]) TO tireless_runner, tireless_admin;

-- Each worker's own record (tireless.worker_state): it says when it starts, beats while it runs and
-- says when it stops, so the workers page tells a live or idle worker from one that stopped and
-- from one that was lost (its beat lapsed with no word: killed, or its host gone).
CREATE OR REPLACE FUNCTION tireless.worker_started(worker text, lanes text[], lease interval) RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_worker(worker_started.worker);
    PERFORM tireless.check_lease(worker_started.lease);
    IF worker_started.lanes IS NULL OR cardinality(worker_started.lanes) = 0 THEN
        RAISE EXCEPTION 'lanes must name at least one lane, got %', coalesce(worker_started.lanes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.check_lane(l) FROM unnest(worker_started.lanes) AS l;
    INSERT INTO tireless.worker_state AS s (worker, lanes, started_at, beat_at, expires_at)
    VALUES (worker_started.worker, ARRAY(SELECT DISTINCT l FROM unnest(worker_started.lanes) AS l ORDER BY l),
            now(), now(), now() + worker_started.lease)
    ON CONFLICT ON CONSTRAINT worker_state_pkey DO UPDATE
       SET lanes = excluded.lanes, started_at = now(), beat_at = now(), expires_at = excluded.expires_at,
           stopped_at = NULL, stopped_how = NULL;
    RETURN now();
END;
$$;
COMMENT ON FUNCTION tireless.worker_started(text, text[], interval) IS
    'A worker process says it started, serving lanes: its record (tireless.worker_state) starts again, alive for '
    'lease (its beats renew it, tireless.worker_beat). Returns when. TL005 for a bad worker name, lease or lane.';
REVOKE ALL ON FUNCTION tireless.worker_started(text, text[], interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.worker_started(text, text[], interval) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.worker_beat(worker text, lease interval) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_worker(worker_beat.worker);
    PERFORM tireless.check_lease(worker_beat.lease);
    UPDATE tireless.worker_state s SET beat_at = now(), expires_at = now() + worker_beat.lease
     WHERE s.worker = worker_beat.worker AND s.stopped_at IS NULL;
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION tireless.worker_beat(text, interval) IS
    'A running worker''s beat: alive for lease more. False when it has no record, or one that says it stopped (a '
    'store restored from a backup, or another process of the same name): it says it started again '
    '(tireless.worker_started). TL005 for a bad worker name or lease.';
REVOKE ALL ON FUNCTION tireless.worker_beat(text, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.worker_beat(text, interval) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.worker_stopped(worker text, how text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_worker(worker_stopped.worker);
    IF worker_stopped.how IS NULL OR btrim(worker_stopped.how) = '' THEN
        RAISE EXCEPTION 'how must say how the worker stopped, got %', coalesce(quote_literal(worker_stopped.how), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.worker_state s SET stopped_at = now(), stopped_how = left(btrim(worker_stopped.how), 200)
     WHERE s.worker = worker_stopped.worker AND s.stopped_at IS NULL;
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION tireless.worker_stopped(text, text) IS
    'A worker says it stopped, and how (stopped by SIGINT, drained, --once): its record says stopped from now on. '
    'False when it has no record that runs. TL005 for a bad worker name or a blank how.';
REVOKE ALL ON FUNCTION tireless.worker_stopped(text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.worker_stopped(text, text) TO tireless_runner;
