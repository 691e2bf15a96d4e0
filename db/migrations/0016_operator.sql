-- operator: rerun keeps what was asked, an admin's cancel, forge retry, prune's preview, the timed wake-up.
-- depends: 0015_lean_rules

-- rerun gains `kind` (null: keep what the issue last asked). One function, no overload: the old
-- signature goes, and callers that name four arguments call the new one unchanged.
DROP FUNCTION tireless.rerun(text, text, text, integer);
CREATE FUNCTION tireless.rerun(forge text, owner text, repo text, number integer, kind text DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    live bigint;
    seen tireless.issue;
    seen_before boolean;
    last tireless.job;
    run_before boolean;
    asked text[];
    job_kind text;
    job tireless.job;
BEGIN
    IF rerun.number IS NULL OR rerun.number < 1 THEN
        RAISE EXCEPTION 'number must be a positive issue number, got %', coalesce(rerun.number::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF rerun.kind IS NOT NULL THEN
        PERFORM tireless.parse_kind(rerun.kind);
    END IF;
    PERFORM tireless.check_tracked(rerun.forge, rerun.owner, rerun.repo);
    PERFORM tireless.lock_repo_issues(rerun.forge, rerun.owner, rerun.repo);
    SELECT j.id INTO live FROM tireless.job j
     WHERE (j.forge, j.owner, j.repo, j.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number)
       AND j.state IN ('pending', 'claimed');
    IF FOUND THEN
        RAISE EXCEPTION 'issue %/%/%#% already has live job %', rerun.forge, rerun.owner, rerun.repo, rerun.number, live
            USING ERRCODE = '23505', CONSTRAINT = 'one_live_job_per_issue',
                  HINT = 'A rerun waits until the live job has ended.';
    END IF;
    SELECT * INTO seen FROM tireless.issue s
     WHERE (s.forge, s.owner, s.repo, s.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number);
    seen_before := FOUND;
    SELECT * INTO last FROM tireless.job j
     WHERE (j.forge, j.owner, j.repo, j.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number)
     ORDER BY j.id DESC LIMIT 1;
    run_before := FOUND;
    IF NOT (seen_before OR run_before) THEN
        RAISE EXCEPTION 'the store has never seen issue %/%/%#%', rerun.forge, rerun.owner, rerun.repo, rerun.number
            USING ERRCODE = 'TL005',
                  HINT = 'Check the number; a new issue is read by the next poll (tireless poll --once), and its '
                         'labels then ask for work.';
    END IF;
    -- What the issue last asked: its last job's kind and labels (the agent override among them), which
    -- the mirror's withdrawal does not change; an issue shown but never run: the labels last seen.
    asked := coalesce(last.labels, seen.labels, '{}');
    job_kind := coalesce(rerun.kind, last.kind::text, tireless.job_kind_for(seen.labels), 'implement');
    INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, note)
    VALUES (rerun.forge, rerun.owner, rerun.repo, rerun.number, coalesce(seen.title, last.title), asked,
            job_kind::tireless.job_kind, tireless.lane_for(job_kind, asked),
            format('rerun by %s', session_user))
    RETURNING * INTO job;
    -- The issue's current request has had its job: a poll that shows it unchanged makes no other.
    UPDATE tireless.issue s SET answered = true, changed_at = now()
     WHERE (s.forge, s.owner, s.repo, s.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number)
       AND NOT s.answered;
    PERFORM tireless.announce_work(job.lane);
    RETURN job.id;
END;
$$;
COMMENT ON FUNCTION tireless.rerun(text, text, text, integer, text) IS
    '(admin) A new pending job for an issue of a tracked repository that has no live job, whatever its labels say '
    'now: the kind and agent of its last job (the mirror may have taken its mode label off since), else of the '
    'labels last seen; kind, when given, replaces the kind. Returns its id. TL008 when the repository is not '
    'tracked; 23505 (one_live_job_per_issue) when a live job exists; TL005 for an unknown kind or an issue the '
    'store has never seen.';

CREATE FUNCTION tireless.request_cancel(job_id bigint, note text DEFAULT NULL) RETURNS tireless.job
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
    -- A pending job ends at once; a claimed one keeps its holder, who learns of the request from
    -- heartbeat (as for a withdrawn issue) and ends it cancelled, or the sweeper does at its lease's end.
    UPDATE tireless.job j
       SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
           cancel_requested_at = CASE WHEN j.state = 'claimed' THEN coalesce(j.cancel_requested_at, now()) END,
           note = why,
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO job;
    RETURN job;
END;
$$;
COMMENT ON FUNCTION tireless.request_cancel(bigint, text) IS
    '(admin) Cancels a job: a pending job ends cancelled at once, with the note; a claimed job gets a cancel request '
    '(the note says who asked), which its holder learns from heartbeat as for a withdrawn issue. TL001 for an '
    'unknown job, TL003 for a finished one.';

CREATE FUNCTION tireless.check_forge(name text) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM tireless.forge f WHERE f.name = check_forge.name) THEN
        RAISE EXCEPTION 'forge % is not registered', coalesce(quote_literal(left(check_forge.name, 120)), 'null')
            USING ERRCODE = 'TL008',
                  HINT = format('Register it first: tireless forge add %s --kind gitea|forgejo|github --url URL '
                                '(see tireless forge list).', left(check_forge.name, 120));
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_forge(text) IS
    'Raises TL008, with the command that registers it, unless the forge is registered (what `tireless track` checks '
    'first: track_repo itself accepts a forge registered later).';

CREATE FUNCTION tireless.retry_forge(name text) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    made_due integer;
BEGIN
    PERFORM tireless.check_forge(retry_forge.name);
    UPDATE tireless.forge f SET limited_until = NULL, last_error = NULL WHERE f.name = retry_forge.name;
    UPDATE tireless.repo_poll rp SET next_poll_at = least(rp.next_poll_at, now()), backoff_until = NULL
     WHERE rp.forge = retry_forge.name;
    GET DIAGNOSTICS made_due = ROW_COUNT;
    RETURN made_due;
END;
$$;
COMMENT ON FUNCTION tireless.retry_forge(text) IS
    '(admin) Clears a forge''s stop (a rate limit or refused credentials, as record_forge_trouble set it) and makes '
    'each of its repositories due now, backoff ended: the next poll round reads them. Returns how many repositories '
    'that is. TL008 for a forge that is not registered.';

CREATE FUNCTION tireless.prune_preview(older_than interval)
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

CREATE FUNCTION tireless.next_ready_at(lanes text[]) RETURNS timestamptz
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT min(j.available_at) FROM tireless.job j
     WHERE j.state = 'pending' AND j.lane = ANY (next_ready_at.lanes) AND j.available_at > now();
END;
COMMENT ON FUNCTION tireless.next_ready_at(text[]) IS
    'When the earliest backed-off pending job in the lanes becomes claimable (null: none is waiting out a '
    'backoff): an idle runner sleeps until then at most, since the end of a backoff sends no notification.';

-- The dashboard's overview lists the lanes `tireless status` lists: lane_summary, with the failures in a row.
CREATE OR REPLACE VIEW tireless.lane_summary AS
SELECT coalesce(s.lane, q.lane) AS lane,
       coalesce(s.pending, 0) AS pending, coalesce(s.ready, 0) AS ready,
       coalesce(s.claimed, 0) AS claimed, coalesce(s.past_lease, 0) AS past_lease,
       coalesce(q.delivered, 0) AS delivered, coalesce(q.failed, 0) AS failed,
       coalesce(q.cancelled, 0) AS cancelled,
       extract(epoch FROM s.oldest_pending_age)::float8 AS oldest_pending_seconds,
       coalesce(s.breaker, 'closed') AS breaker, coalesce(s.paused, false) AS paused,
       s.capacity, s.tripped_until,
       coalesce(s.consecutive_failures, 0) AS consecutive_failures
  FROM tireless.lane_status s
  FULL JOIN (SELECT st.lane,
                    sum(st.jobs) FILTER (WHERE st.state = 'delivered')::bigint AS delivered,
                    sum(st.jobs) FILTER (WHERE st.state = 'failed')::bigint AS failed,
                    sum(st.jobs) FILTER (WHERE st.state = 'cancelled')::bigint AS cancelled
               FROM tireless.queue_stats st GROUP BY st.lane) q ON q.lane = s.lane;
COMMENT ON VIEW tireless.lane_summary IS
    'One row per lane that has live jobs, settings or jobs finished in the last 24 hours: lane_status (live jobs, '
    'the oldest pending job''s age in seconds, breaker, its failures in a row, paused, capacity) beside '
    'queue_stats''s delivered, failed and cancelled counts. What `tireless status` and the dashboard''s overview show.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tireless.rerun(text, text, text, integer, text),
    tireless.request_cancel(bigint, text),
    tireless.check_forge(text),
    tireless.retry_forge(text),
    tireless.prune_preview(interval)
    TO tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.next_ready_at(text[]) TO tireless_runner;
