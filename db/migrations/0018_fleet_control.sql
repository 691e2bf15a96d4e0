-- Fleet control: a time limit and a progress watchdog per lane, the agent's brief (its issue's URL, the forge's API root, the clone URL, the issue's body) and the agent's report.
-- depends: 0017_webhook_replay

-- 1. Limits per lane, set by the admin. Null: no limit (every lane has none until set).
ALTER TABLE tireless.lane
    ADD COLUMN max_run interval,
    ADD COLUMN stall_after interval,
    ADD CONSTRAINT max_run_is_positive CHECK (max_run > interval '0'),
    ADD CONSTRAINT stall_after_is_positive CHECK (stall_after > interval '0');
COMMENT ON COLUMN tireless.lane.max_run IS
    'An attempt claimed longer ago than this is stopped: its heartbeat answers timeout. Null: no limit.';
COMMENT ON COLUMN tireless.lane.stall_after IS
    'An attempt without progress for this long is stopped: its heartbeat answers stalled. Null: no watchdog.';
COMMENT ON CONSTRAINT max_run_is_positive ON tireless.lane IS 'A time limit is null (none) or more than 0.';
COMMENT ON CONSTRAINT stall_after_is_positive ON tireless.lane IS 'A stall limit is null (none) or more than 0.';

-- 2. The current (or last) attempt of each job: when it began, its last progress and step, the
-- watchdog's stop once made, and the agent's report. One row per job, for its newest attempt: a new
-- claim (attempts moves on) starts the row again.
CREATE TABLE tireless.job_attempt (
    job_id      bigint      PRIMARY KEY REFERENCES tireless.job (id) ON DELETE CASCADE,
    attempt     integer     NOT NULL,
    started_at  timestamptz NOT NULL,
    progress_at timestamptz NOT NULL,
    step        text,
    stop        text,
    stop_note   text,
    report      text,
    report_cut  boolean     NOT NULL DEFAULT false,
    CONSTRAINT stop_is_timeout_or_stalled CHECK (stop IN ('timeout', 'stalled')),
    CONSTRAINT stop_has_its_note CHECK ((stop IS NULL) = (stop_note IS NULL)),
    CONSTRAINT step_is_short CHECK (length(step) <= 500),
    CONSTRAINT report_within_limit CHECK (length(report) <= 60000)
);
COMMENT ON TABLE tireless.job_attempt IS
    'Each job''s newest attempt: when it was claimed, its last progress (and the step COMMAND last named), the '
    'watchdog''s stop once made (it stands until the attempt ends), and the report the agent left. Private: '
    'heartbeat, report_progress, attach_report and end_stopped_attempt keep it.';
COMMENT ON COLUMN tireless.job_attempt.attempt IS 'The job''s attempts count when this attempt was claimed: the row belongs to that attempt only.';
COMMENT ON COLUMN tireless.job_attempt.started_at IS 'When the attempt was claimed (its claim in the history); max_run counts from here.';
COMMENT ON COLUMN tireless.job_attempt.progress_at IS 'The attempt''s last progress (started_at until the first); stall_after counts from here.';
COMMENT ON COLUMN tireless.job_attempt.step IS 'The step COMMAND last reported (a ::progress:: line), at most 500 characters.';
COMMENT ON COLUMN tireless.job_attempt.stop IS 'timeout or stalled once the watchdog stopped the attempt; heartbeat answers it from then on.';
COMMENT ON COLUMN tireless.job_attempt.report IS 'The outcome summary the agent wrote (markdown, at most 60000 characters); the mirror posts it.';
COMMENT ON CONSTRAINT job_attempt_job_id_fkey ON tireless.job_attempt IS
    'An attempt row belongs to a job and goes with it (prune).';
COMMENT ON CONSTRAINT stop_is_timeout_or_stalled ON tireless.job_attempt IS 'The watchdog stops an attempt for one of two reasons.';
COMMENT ON CONSTRAINT stop_has_its_note ON tireless.job_attempt IS 'A stop carries the note the attempt ends with.';
COMMENT ON CONSTRAINT step_is_short ON tireless.job_attempt IS 'A step is a line of at most 500 characters.';
COMMENT ON CONSTRAINT report_within_limit ON tireless.job_attempt IS 'A report is at most 60000 characters (a forge comment holds 65536).';

-- 3. The issue's body as last polled, for the agent.
ALTER TABLE tireless.issue
    ADD COLUMN body text,
    ADD COLUMN body_cut boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT body_within_limit CHECK (length(body) <= 65536);
COMMENT ON COLUMN tireless.issue.body IS
    'The issue''s body as last shown, its first 65536 characters (tireless.issue_body_limit()); null when never given.';
COMMENT ON COLUMN tireless.issue.body_cut IS 'True when the body shown was longer than the limit and was cut.';
COMMENT ON CONSTRAINT body_within_limit ON tireless.issue IS 'A body is kept up to tireless.issue_body_limit() characters.';

CREATE FUNCTION tireless.issue_body_limit() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 65536;
COMMENT ON FUNCTION tireless.issue_body_limit() IS
    'How many characters of an issue''s body the store keeps (GitHub''s own limit on a body); a longer one is cut and flagged.';

-- Durations as people write them in notes: 2h, 30m, 1h30m, 45s, 1d, 250ms.
CREATE FUNCTION tireless.short_duration(span interval) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN s.total = 0 THEN round(extract(epoch FROM span) * 1000)::bigint || 'ms'
                ELSE concat(nullif(s.total / 86400, 0) || 'd', nullif(s.total % 86400 / 3600, 0) || 'h',
                            nullif(s.total % 3600 / 60, 0) || 'm', nullif(s.total % 60, 0) || 's') END
      FROM (SELECT floor(extract(epoch FROM span))::bigint AS total) AS s;
$$;
COMMENT ON FUNCTION tireless.short_duration(interval) IS
    'An interval written short, as the watchdog''s notes show it: 2h, 30m, 1h30m, 45s, 1d, 250ms (whole seconds above one second).';

CREATE FUNCTION tireless.check_run_limit(name text, span interval) RETURNS void
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

CREATE FUNCTION tireless.set_lane_max_run(lane text, max_run interval) RETURNS tireless.lane
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

CREATE FUNCTION tireless.set_lane_stall_after(lane text, stall_after interval) RETURNS tireless.lane
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

-- The attempt row of a claimed job, made (or started again) for its current attempt.
CREATE FUNCTION tireless.current_attempt(job_id bigint, attempt integer) RETURNS tireless.job_attempt
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

-- The watchdog: what heartbeat answers a holder whose job has no cancel request.
CREATE FUNCTION tireless.watch_attempt(job_id bigint, attempt integer, lane text) RETURNS text
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
    'Renews like renew_claim and answers held, lost (worker, or token when given, no longer holds the claim), '
    'cancel (the issue withdrew its request), timeout (the attempt ran past its lane''s max_run) or stalled (no '
    'progress for its lane''s stall_after). On cancel, timeout and stalled the lease is still extended, so the holder '
    'can stop its agent: then transition to cancelled, or end_stopped_attempt. A runner treats an answer it does '
    'not know as cancel. TL001 for an unknown job.';

-- The holder's lock on its claimed job, or TL001/TL004.
CREATE FUNCTION tireless.held_job(job_id bigint, worker text, token uuid) RETURNS tireless.job
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

CREATE FUNCTION tireless.report_progress(job_id bigint, worker text, step text DEFAULT NULL, token uuid DEFAULT NULL)
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

CREATE FUNCTION tireless.attach_report(job_id bigint, worker text, report text, token uuid DEFAULT NULL)
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

CREATE FUNCTION tireless.end_stopped_attempt(job_id bigint, worker text, token uuid DEFAULT NULL)
    RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job := tireless.held_job(end_stopped_attempt.job_id, end_stopped_attempt.worker, end_stopped_attempt.token);
    note text;
BEGIN
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
    'does (backoff, the attempt budget, the breaker). TL002 when the watchdog did not stop it; TL001, TL004 as transition.';

-- What psql users, `tireless show` and the dashboard read of an attempt.
CREATE VIEW tireless.job_progress AS
SELECT a.job_id, a.attempt, a.started_at, a.progress_at, a.step, a.stop, a.stop_note,
       a.report IS NOT NULL AS reported
  FROM tireless.job_attempt a;
COMMENT ON VIEW tireless.job_progress IS
    'Each job''s newest attempt as the watchdog sees it: when it was claimed, its last progress and step, the '
    'watchdog''s stop and note, and whether the agent attached a report. No row before the attempt''s first '
    'heartbeat under a limit, progress report or report.';

-- 4. The agent's brief: where its issue is, where to clone from, and what the issue says.
CREATE FUNCTION tireless.forge_api_url(kind tireless.forge_kind, base_url text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN kind = 'github' THEN base_url ELSE base_url || '/api/v1' END;
COMMENT ON FUNCTION tireless.forge_api_url(tireless.forge_kind, text) IS
    'A registered forge''s API root: base_url for GitHub (it is the API root), base_url/api/v1 for Gitea and Forgejo.';

CREATE FUNCTION tireless.forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN kind = 'github' AND base_url = 'https://api.github.com' THEN 'https://github.com'
                WHEN kind = 'github' THEN regexp_replace(base_url, '/api/v3$', '')
                ELSE base_url END
           || '/' || owner || '/' || repo || '.git';
COMMENT ON FUNCTION tireless.forge_clone_url(tireless.forge_kind, text, text, text) IS
    'A repository''s HTTPS clone URL: the forge''s web root (GitHub: github.com for api.github.com, HOST for '
    'HOST/api/v3), then /owner/repo.git.';

CREATE FUNCTION tireless.job_brief(job_id bigint)
    RETURNS TABLE (issue_url text, api_url text, clone_url text, body text, body_cut boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT i.url, tireless.forge_api_url(f.kind, f.base_url), tireless.forge_clone_url(f.kind, f.base_url, j.owner, j.repo),
           i.body, coalesce(i.body_cut, false)
      FROM tireless.job j
      LEFT JOIN tireless.issue i ON (i.forge, i.owner, i.repo, i.number) = (j.forge, j.owner, j.repo, j.number)
      LEFT JOIN tireless.forge f ON f.name = j.forge
     WHERE j.id = job_brief.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(job_brief.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.job_brief(bigint) IS
    'What an agent needs besides the job row: the issue''s web URL, the forge''s API root, the repository''s clone '
    'URL (null when the forge is not registered), and the issue''s body as last polled (its first 65536 characters, '
    'body_cut when cut). No token: the agent gets none. TL001 for an unknown job.';

-- 5. The outcome comment: the agent's report when its last attempt left one, else the note.
CREATE OR REPLACE FUNCTION tireless.finished_job_comment(job tireless.job) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT format('tireless: %s after %s attempt%s', job.state, job.attempts, CASE WHEN job.attempts = 1 THEN '' ELSE 's' END)
           || coalesce(' (' || holder.worker || ')', '')
           || CASE WHEN report.text IS NOT NULL
                   THEN E'\n\n' || report.text || CASE WHEN report.cut THEN E'\n\n(report cut at 60000 characters)' ELSE '' END
                   ELSE coalesce(': ' || CASE WHEN length(note.text) > 500 THEN left(note.text, 499) || '…' ELSE note.text END, '')
              END
      FROM (SELECT nullif(regexp_replace(btrim(job.note), '\s+', ' ', 'g'), '') AS text) AS note
      LEFT JOIN LATERAL (SELECT e.worker FROM tireless.job_event e
                          WHERE e.job_id = job.id AND e.worker IS NOT NULL
                          ORDER BY e.id DESC LIMIT 1) AS holder ON true
      LEFT JOIN LATERAL (SELECT a.report AS text, a.report_cut AS cut FROM tireless.job_attempt a
                          WHERE a.job_id = job.id AND a.attempt = job.attempts) AS report ON true;
$$;
COMMENT ON FUNCTION tireless.finished_job_comment(tireless.job) IS
    'The comment a finished job leaves on its issue: outcome, attempts and the last holder, then the report its last '
    'attempt attached (tireless.attach_report) when there is one, else the note on the same line trimmed to 500 '
    'characters (tireless: delivered after 2 attempts (host1-3): merged as #12).';

-- 6. enqueue and record_poll accept an optional "body" (a string or null).
CREATE OR REPLACE FUNCTION tireless.issue_problem(issue jsonb) RETURNS text
    LANGUAGE sql STABLE
AS $$
    -- The label limits are labels_problem's (at most 100 labels of 1 to 200 characters), checked
    -- here on the JSON array with jsonpath, which keeps this one expression.
    SELECT CASE
        WHEN jsonb_typeof(issue) IS DISTINCT FROM 'object' THEN
            format('must be a JSON object, got %s', left(issue::text, 100))
        WHEN jsonb_typeof(issue -> 'forge') IS DISTINCT FROM 'string' OR length(issue ->> 'forge') NOT BETWEEN 1 AND 100 THEN
            format('"forge" must be a string of 1 to 100 characters, got %s', left(coalesce(issue -> 'forge', 'null')::text, 120))
        WHEN jsonb_typeof(issue -> 'owner') IS DISTINCT FROM 'string' OR length(issue ->> 'owner') NOT BETWEEN 1 AND 200 THEN
            format('"owner" must be a string of 1 to 200 characters, got %s', left(coalesce(issue -> 'owner', 'null')::text, 220))
        WHEN jsonb_typeof(issue -> 'repo') IS DISTINCT FROM 'string' OR length(issue ->> 'repo') NOT BETWEEN 1 AND 200 THEN
            format('"repo" must be a string of 1 to 200 characters, got %s', left(coalesce(issue -> 'repo', 'null')::text, 220))
        WHEN jsonb_typeof(issue -> 'number') IS DISTINCT FROM 'number'
             OR (issue -> 'number')::numeric NOT BETWEEN 1 AND 2147483647
             OR (issue -> 'number')::numeric <> trunc((issue -> 'number')::numeric) THEN
            format('"number" must be an integer from 1 to 2147483647, got %s', left(coalesce(issue -> 'number', 'null')::text, 100))
        WHEN jsonb_typeof(issue -> 'state') IS DISTINCT FROM 'string' OR issue ->> 'state' NOT IN ('open', 'closed') THEN
            format('"state" must be "open" or "closed", got %s', left(coalesce(issue -> 'state', 'null')::text, 100))
        WHEN jsonb_typeof(issue -> 'labels') IS DISTINCT FROM 'array' THEN
            format('"labels" must be an array of strings, got %s', left(coalesce(issue -> 'labels', 'null')::text, 100))
        WHEN jsonb_path_exists(issue, '$.labels[*] ? (@.type() != "string")') THEN
            format('"labels" must hold strings, got %s',
                   left(jsonb_path_query_first(issue, '$.labels[*] ? (@.type() != "string")')::text, 100))
        WHEN jsonb_array_length(issue -> 'labels') > 100 THEN
            format('"labels" holds %s labels, at most 100 are allowed', jsonb_array_length(issue -> 'labels'))
        WHEN jsonb_path_exists(issue, '$.labels[*] ? (!(@ like_regex "^.{1,200}$" flag "s"))') THEN
            format('"labels" must hold labels of 1 to 200 characters, got %s',
                   quote_literal(left(jsonb_path_query_first(issue, '$.labels[*] ? (!(@ like_regex "^.{1,200}$" flag "s"))') #>> '{}', 220)))
        WHEN jsonb_typeof(issue -> 'title') NOT IN ('string', 'null') OR length(issue ->> 'title') > 1000 THEN
            format('"title" must be a string of at most 1000 characters, got %s', left((issue -> 'title')::text, 100))
        WHEN jsonb_typeof(issue -> 'url') NOT IN ('string', 'null')
             OR (jsonb_typeof(issue -> 'url') = 'string'
                 AND (length(issue ->> 'url') > 2000 OR issue ->> 'url' !~ '^https?://[^[:space:][:cntrl:]]+$')) THEN
            format('"url" must be an http:// or https:// URL of at most 2000 characters, got %s', left((issue -> 'url')::text, 100))
        WHEN jsonb_typeof(issue -> 'updated_at') NOT IN ('string', 'null')
             OR (jsonb_typeof(issue -> 'updated_at') = 'string' AND NOT tireless.is_forge_timestamp(issue ->> 'updated_at')) THEN
            format('"updated_at" must be an ISO 8601 timestamp with a time zone, got %s', left((issue -> 'updated_at')::text, 100))
        WHEN jsonb_typeof(issue -> 'parent_id') NOT IN ('number', 'null')
             OR (jsonb_typeof(issue -> 'parent_id') = 'number'
                 AND ((issue -> 'parent_id')::numeric NOT BETWEEN 1 AND 9223372036854775807
                      OR (issue -> 'parent_id')::numeric <> trunc((issue -> 'parent_id')::numeric))) THEN
            format('"parent_id" must be a job id, got %s', left((issue -> 'parent_id')::text, 100))
        WHEN jsonb_typeof(issue -> 'body') NOT IN ('string', 'null') THEN
            format('"body" must be a string or null, got %s', left((issue -> 'body')::text, 100))
    END;
$$;
COMMENT ON FUNCTION tireless.issue_problem(jsonb) IS
    'Why one element of an enqueue batch is malformed, or null when it is well formed.';

CREATE OR REPLACE FUNCTION tireless.apply_work_rule(
    issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer
)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    woken text[];
BEGIN
    -- Repositories in key order, so two batches that share several never deadlock on their locks.
    PERFORM tireless.lock_repo_issues(r.forge, r.owner, r.repo)
       FROM (SELECT DISTINCT e.issue ->> 'forge' AS forge, e.issue ->> 'owner' AS owner, e.issue ->> 'repo' AS repo
               FROM jsonb_array_elements(apply_work_rule.issues) AS e(issue)
              ORDER BY 1, 2, 3) AS r;

    -- A new statement, so a new snapshot: it sees what the writers the locks waited for committed.
    WITH incoming AS (
        -- An issue listed twice in one batch counts once: its last listing wins.
        SELECT DISTINCT ON (forge, owner, repo, number)
               e.issue ->> 'forge' AS forge,
               e.issue ->> 'owner' AS owner,
               e.issue ->> 'repo' AS repo,
               (e.issue ->> 'number')::integer AS number,
               e.issue ->> 'state' AS state,
               ARRAY(SELECT jsonb_array_elements_text(e.issue -> 'labels')) AS labels,
               e.issue ->> 'title' AS title,
               e.issue ->> 'url' AS url,
               (e.issue ->> 'updated_at')::timestamptz AS updated_at,
               (e.issue ->> 'parent_id')::bigint AS parent_id,
               -- The body is kept up to tireless.issue_body_limit() characters, flagged when cut; an
               -- issue given without "body" (the mirror's read-back) keeps the body last shown.
               e.issue ? 'body' AS has_body,
               left(e.issue ->> 'body', tireless.issue_body_limit()) AS body,
               coalesce(length(e.issue ->> 'body') > tireless.issue_body_limit(), false) AS body_cut
          FROM jsonb_array_elements(apply_work_rule.issues) WITH ORDINALITY AS e(issue, position)
         ORDER BY forge, owner, repo, number, e.position DESC
    ), shown AS MATERIALIZED (
        -- Issues of untracked repositories are ignored.
        SELECT i.*, s.number IS NOT NULL AS known, s.asks_since, coalesce(s.answered, false) AS answered,
               s.body AS shown_body, s.body_cut AS shown_body_cut,
               s.number IS NULL
               OR (s.state, s.labels, s.title, s.url, s.updated_at)
                  IS DISTINCT FROM (i.state, i.labels, i.title, i.url, i.updated_at)
               OR (i.has_body AND (s.body, s.body_cut) IS DISTINCT FROM (i.body, i.body_cut)) AS changed
          FROM incoming i
          JOIN tireless.tracked_repo t ON (t.forge, t.owner, t.repo) = (i.forge, i.owner, i.repo)
          LEFT JOIN tireless.issue s ON (s.forge, s.owner, s.repo, s.number) = (i.forge, i.owner, i.repo, i.number)
    ), judged AS MATERIALIZED (
        -- Only an issue shown changed, or one whose request still waits for its job, is judged:
        -- an issue shown as it was before costs the join above and nothing more.
        SELECT sh.*, k.kind, live.id AS live_id
          FROM shown sh
         CROSS JOIN LATERAL (SELECT CASE WHEN sh.state = 'open' THEN tireless.job_kind_for(sh.labels) END) AS k(kind)
          LEFT JOIN LATERAL (SELECT j.id FROM tireless.job j
                              WHERE (j.forge, j.owner, j.repo, j.number) = (sh.forge, sh.owner, sh.repo, sh.number)
                                AND j.state IN ('pending', 'claimed')) AS live ON true
         WHERE sh.changed OR (sh.asks_since IS NOT NULL AND NOT sh.answered)
    ), decided AS MATERIALIZED (
        SELECT jd.*,
               jd.kind IS NOT NULL AND jd.asks_since IS NULL AS rising,
               jd.kind IS NULL AND jd.asks_since IS NOT NULL AS withdrawn,
               -- Rule 1: a job per request, made while no job is live.
               jd.kind IS NOT NULL AND jd.live_id IS NULL AND (jd.asks_since IS NULL OR NOT jd.answered) AS makes_job,
               CASE WHEN jd.kind IS NOT NULL THEN tireless.lane_for(jd.kind, jd.labels) END AS lane
          FROM judged jd
    ), saved AS (
        INSERT INTO tireless.issue AS s (forge, owner, repo, number, state, labels, title, url, updated_at, asks_since, answered,
                                         body, body_cut)
        SELECT d.forge, d.owner, d.repo, d.number, d.state, d.labels, d.title, d.url, d.updated_at,
               CASE WHEN d.rising THEN now() WHEN d.kind IS NOT NULL THEN d.asks_since END,
               d.makes_job OR (d.answered AND NOT d.rising),
               CASE WHEN d.has_body THEN d.body ELSE d.shown_body END,
               CASE WHEN d.has_body THEN d.body_cut ELSE coalesce(d.shown_body_cut, false) END
          FROM decided d
         WHERE d.changed OR d.makes_job OR d.rising OR d.withdrawn
        ON CONFLICT (forge, owner, repo, number) DO UPDATE
           SET state = excluded.state, labels = excluded.labels, title = excluded.title, url = excluded.url,
               updated_at = excluded.updated_at, asks_since = excluded.asks_since, answered = excluded.answered,
               body = excluded.body, body_cut = excluded.body_cut, changed_at = now()
    ), ended AS (
        -- Rule 2: a pending job is cancelled; a claimed one gets a cancel request (it stands once made).
        UPDATE tireless.job j
           SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
               note = CASE WHEN j.state <> 'pending' THEN j.note
                           WHEN d.state = 'closed' THEN 'issue closed'
                           ELSE 'issue no longer asks for work' END,
               cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
               updated_at = now()
          FROM decided d
         WHERE d.withdrawn AND j.id = d.live_id
           AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL))
        RETURNING j.id
    ), moved AS (
        -- Rule 3: relabelling re-routes a pending job; a claimed one is left as it is.
        UPDATE tireless.job j
           SET kind = d.kind::tireless.job_kind, lane = d.lane, labels = d.labels, updated_at = now()
          FROM decided d
         WHERE d.changed AND d.kind IS NOT NULL AND j.id = d.live_id AND j.state = 'pending'
           AND (j.kind::text, j.lane) IS DISTINCT FROM (d.kind, d.lane)
        RETURNING j.lane
    ), made AS (
        INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, parent_id)
        SELECT d.forge, d.owner, d.repo, d.number, d.title, d.labels, d.kind::tireless.job_kind, d.lane, d.parent_id
          FROM decided d
         WHERE d.makes_job
         ORDER BY d.forge, d.owner, d.repo, d.number
        ON CONFLICT (forge, owner, repo, number) WHERE state IN ('pending', 'claimed') DO NOTHING
        RETURNING lane
    )
    SELECT (SELECT count(*) FROM made), (SELECT count(*) FROM ended), (SELECT count(*) FROM moved),
           (SELECT count(*) FROM shown),
           ARRAY(SELECT m.lane FROM made m UNION SELECT m.lane FROM moved m)
      INTO apply_work_rule.created, apply_work_rule.cancelled, apply_work_rule.rerouted, apply_work_rule.seen, woken;

    PERFORM tireless.announce_work(l) FROM unnest(woken) AS l;
END;
$$;
COMMENT ON FUNCTION tireless.apply_work_rule(jsonb) IS
    'The work rule on a checked batch of issues of tracked repositories: a pending job for an issue that asks for '
    'work and whose request has had none; withdrawal cancels a pending job or requests the cancel of a claimed one; '
    'relabelling re-routes a pending job. An issue shown as it was before writes nothing. Returns what it did.';


REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tireless.report_progress(bigint, text, text, uuid),
    tireless.attach_report(bigint, text, text, uuid),
    tireless.end_stopped_attempt(bigint, text, uuid),
    tireless.job_brief(bigint)
    TO tireless_runner;
GRANT EXECUTE ON FUNCTION
    tireless.set_lane_max_run(text, interval),
    tireless.set_lane_stall_after(text, interval)
    TO tireless_admin;
GRANT SELECT ON tireless.job_attempt TO tireless_admin;
GRANT SELECT ON tireless.job_progress TO tireless_runner, tireless_poller, tireless_admin;
