-- The state machine: transition, an admin's cancel, the announcement of a stop, and prune (the
-- holder's delivery with what it pushed, deliver, is in delivery.sql).
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

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
REVOKE ALL ON FUNCTION tireless.may_cancel_pending() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A stop keeps its own note (0030_stop_notes): the note a holder's finish leaves on a job that was
-- asked to stop is chosen here, not by the runner.
CREATE OR REPLACE FUNCTION tireless.stop_finish_note(
    to_state text, note text, cancel_requested_at timestamptz, cancel_note text
) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT CASE
        WHEN stop_finish_note.cancel_requested_at IS NULL THEN stop_finish_note.note
        WHEN stop_finish_note.to_state = 'cancelled'
            THEN coalesce(stop_finish_note.cancel_note, stop_finish_note.note, 'issue withdrew its request')
        WHEN stop_finish_note.to_state = 'delivered'
            THEN concat_ws('; ', stop_finish_note.note,
                           format('the cancel requested at %s (%s) came after the work was done',
                                  to_char(stop_finish_note.cancel_requested_at AT TIME ZONE 'UTC', 'HH24:MI:SS"Z"'),
                                  coalesce(stop_finish_note.cancel_note, 'issue withdrew its request')))
        ELSE stop_finish_note.note END;
$$;
COMMENT ON FUNCTION tireless.stop_finish_note(text, text, timestamptz, text) IS
    'The note a holder''s finish leaves on a job: its own note, unless the job was asked to stop '
    '(cancel_requested_at): then ended cancelled, the stop''s note (cancel_note); delivered anyway, the holder''s '
    'note and "the cancel requested at 12:00:03Z (cancelled by alice) came after the work was done".';
REVOKE ALL ON FUNCTION tireless.stop_finish_note(text, text, timestamp with time zone, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A stop reaches its holder at once: the runner LISTENs on tireless_stop while its agent works, and
-- heartbeats when its job's id comes, instead of at its next renewal. Whoever asks a claimed job to
-- stop (request_cancel, the work rule, the poll, the conversation) sets cancel_requested_at: this
-- trigger is the one place that announces it.
CREATE OR REPLACE FUNCTION tireless.announce_stop() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_notify('tireless_stop', NEW.id::text);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.announce_stop() IS
    'Trigger: NOTIFY tireless_stop with the job''s id as payload when a claimed job is asked to stop. Sent at commit.';
REVOKE ALL ON FUNCTION tireless.announce_stop() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER stop_reaches_its_holder
    AFTER UPDATE OF cancel_requested_at ON tireless.job
    FOR EACH ROW WHEN (OLD.cancel_requested_at IS NULL AND NEW.cancel_requested_at IS NOT NULL)
    EXECUTE FUNCTION tireless.announce_stop();
COMMENT ON TRIGGER stop_reaches_its_holder ON tireless.job IS
    'A claimed job asked to stop (cancel_requested_at set) is announced on tireless_stop, so its holder hears it at once.';

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
                   ended_claim_token = transition.token,
                   note = CASE WHEN j.cancel_requested_at IS NULL THEN transition.note
                               ELSE tireless.stop_finish_note(transition.to_state, transition.note,
                                                              j.cancel_requested_at, j.cancel_note) END,
                   updated_at = now()
             WHERE j.id = transition.job_id
               AND j.state = 'claimed'
               AND j.claimed_by = transition.worker
               AND (transition.token IS NULL OR j.claim_token = transition.token)
               AND tireless.acts_for_login(j.claimed_login)
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
    -- The holder's own finish sent again because its answer was lost (a failover, a cut connection):
    -- the first one committed, so the job as it is now is the answer, and nothing moves again.
    IF transition.worker IS NOT NULL AND transition.token IS NOT NULL AND job.ended_claim_token = transition.token THEN
        RETURN job;
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
            final_note := coalesce(job.cancel_note, 'issue withdrew its request')
                          || coalesce('; released: ' || transition.note, '');
        ELSIF target = 'pending' THEN
            SELECT kp.max_attempts INTO budget FROM tireless.kind_policy kp WHERE kp.kind = job.kind;
            IF tireless.attempts_spent(job) >= budget THEN
                final_state := 'failed';
                final_note := format('attempts exhausted (%s of %s); last: %s',
                                     tireless.attempts_spent(job), budget, coalesce(transition.note, 'released'));
            END IF;
        ELSIF job.cancel_requested_at IS NOT NULL THEN
            final_note := tireless.stop_finish_note(target::text, transition.note, job.cancel_requested_at, job.cancel_note);
        END IF;
    END IF;

    UPDATE tireless.job j
       SET state = final_state,
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           ended_claim_token = CASE WHEN j.state = 'claimed' THEN transition.token ELSE j.ended_claim_token END,
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
    'token, when given) from the login that claimed (or an admin), whatever the job''s state now is: else TL004. Leaving claimed (to pending, delivered, '
    'failed, cancelled) needs the holder; a release after the last attempt the budget counts fails the job, and a '
    'release of a job asked to stop cancels it. A job asked to stop ends cancelled with the stop''s note (cancel_note), '
    'whatever note the holder gives, or delivered with a note saying the stop came after the work was done. '
    'A pending job can only be cancelled (by tireless_admin). Entering claimed, or leaving a terminal state, is refused.'
    ' Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';
REVOKE ALL ON FUNCTION tireless.transition(bigint, text, text, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.transition(bigint, text, text, text, uuid) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.prune(older_than interval, max_jobs integer DEFAULT NULL) RETURNS bigint
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
    -- The records of workers that stopped, or were lost, before the cutoff go too (one per name).
    DELETE FROM tireless.worker_state s
     WHERE greatest(s.beat_at, s.stopped_at) < cutoff AND (s.stopped_at IS NOT NULL OR s.expires_at < now());
    RETURN deleted;
END;
$$;
COMMENT ON FUNCTION tireless.prune(interval, integer) IS
    '(admin) Deletes terminal jobs last changed before now() - older_than, with their history, in batches of 1000; '
    'never a live job, never a job that a remaining job names as parent. max_jobs (null: no limit) bounds one call, '
    'so a caller can keep each transaction short. Also deletes the records of workers that stopped or were lost '
    'before then (tireless.worker_state). Returns how many jobs it deleted.';
REVOKE ALL ON FUNCTION tireless.prune(interval, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.prune(interval, integer) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.request_cancel(job_id bigint, note text DEFAULT NULL) RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    why text := coalesce(request_cancel.note, format('cancelled by %s', session_user));
BEGIN
    IF length(request_cancel.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(request_cancel.note)
            USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO job FROM tireless.job j WHERE j.id = request_cancel.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(request_cancel.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    IF tireless.is_terminal(job.state) THEN
        RAISE EXCEPTION 'job % is % and never changes again; nothing to cancel', job.id, job.state
            USING ERRCODE = 'TL003', HINT = 'Only a pending or claimed job can be cancelled.';
    END IF;
    -- A pending job ends at once; a claimed one keeps its holder, who hears of the request at once
    -- (tireless_stop) and ends it cancelled with this note, or the sweeper does at its lease's end.
    -- A request stands once made: a second one keeps the first's time and note.
    UPDATE tireless.job j
       SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
           cancel_requested_at = CASE WHEN j.state = 'claimed' THEN coalesce(j.cancel_requested_at, now()) END,
           cancel_note = CASE WHEN j.state = 'claimed' THEN coalesce(j.cancel_note, why) END,
           note = why,
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO job;
    RETURN job;
END;
$$;
COMMENT ON FUNCTION tireless.request_cancel(bigint, text) IS
    '(admin) Cancels a job: a pending job ends cancelled at once, with the note; a claimed job gets a cancel request '
    'whose note (default "cancelled by <login>") it ends with, which its holder hears at once (tireless_stop) and '
    'heartbeat answers. TL001 for an unknown job, TL003 for a finished one.';
REVOKE ALL ON FUNCTION tireless.request_cancel(bigint, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.request_cancel(bigint, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.prune_preview(older_than interval)
    RETURNS TABLE (jobs bigint, oldest timestamptz, newest timestamptz)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF prune_preview.older_than IS NULL OR prune_preview.older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be an interval of 0 or more, got %', coalesce(prune_preview.older_than::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    -- prune's rule: a terminal job unchanged since the cutoff goes, unless a job that stays (live, or
    -- newer) descends from it.
    RETURN QUERY
    WITH RECURSIVE kept_ancestor AS (
        SELECT j.parent_id AS id FROM tireless.job j
         WHERE j.parent_id IS NOT NULL
           AND NOT (j.state IN ('delivered', 'failed', 'cancelled') AND j.updated_at < now() - prune_preview.older_than)
        UNION
        SELECT p.parent_id FROM kept_ancestor k JOIN tireless.job p ON p.id = k.id WHERE p.parent_id IS NOT NULL
    )
    SELECT count(*), min(j.updated_at), max(j.updated_at)
      FROM tireless.job j
     WHERE j.state IN ('delivered', 'failed', 'cancelled') AND j.updated_at < now() - prune_preview.older_than
       AND j.id NOT IN (SELECT k.id FROM kept_ancestor k);
END;
$$;
COMMENT ON FUNCTION tireless.prune_preview(interval) IS
    '(admin) What prune(older_than) would delete now: how many jobs, and the oldest and newest last change among '
    'them. Deletes nothing.';
REVOKE ALL ON FUNCTION tireless.prune_preview(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.prune_preview(interval) TO tireless_admin;
