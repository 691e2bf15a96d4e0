-- The mirror: each issue shows its newest job's state on the forge, read from the job history; the poller applies it.
-- depends: 0010_web

-- What each issue should look like is read from tireless.job_event, the history every change of
-- state already appends in its own transaction: the hot path (claim, transition) writes nothing
-- more for the mirror. The mirror keeps its own bookkeeping here, written only by its functions,
-- which the poller calls for the repositories it holds (docs/decisions-mirror.md says why).

ALTER TABLE tireless.policy ADD COLUMN mirror_comments boolean NOT NULL DEFAULT true;
COMMENT ON COLUMN tireless.policy.mirror_comments IS
    'Whether the mirror comments on an issue when its job ends (one comment per finished job). set_mirror_comments changes it.';

CREATE TABLE tireless.mirror_repo (
    forge        text   NOT NULL,
    owner        text   NOT NULL,
    repo         text   NOT NULL,
    event_cursor bigint NOT NULL DEFAULT 0,
    scanned_to   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (forge, owner, repo),
    CONSTRAINT mirror_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT cursor_not_past_the_scan CHECK (event_cursor <= scanned_to)
);
COMMENT ON TABLE tireless.mirror_repo IS
    'Per tracked repository, how far the mirror has read the job history. Private: mirror_writes keeps it.';
COMMENT ON COLUMN tireless.mirror_repo.event_cursor IS
    'Every job_event up to this id has been turned into mirror_issue rows; the scan starts after it. It moves only '
    'past events older than the settle time, so a change that commits late is still read.';
COMMENT ON COLUMN tireless.mirror_repo.scanned_to IS 'The newest job_event id the last scan read (the backlog counts changes after it).';
COMMENT ON CONSTRAINT mirror_of_a_tracked_repo ON tireless.mirror_repo IS 'Mirror state belongs to a tracked repository and goes with it.';
COMMENT ON CONSTRAINT cursor_not_past_the_scan ON tireless.mirror_repo IS 'The cursor never passes what was scanned.';

CREATE TABLE tireless.mirror_issue (
    forge          text               NOT NULL,
    owner          text               NOT NULL,
    repo           text               NOT NULL,
    number         integer            NOT NULL,
    job_id         bigint             NOT NULL,
    state          tireless.job_state NOT NULL,
    applied_job_id bigint,
    applied_state  tireless.job_state,
    applied_at     timestamptz,
    failures       integer            NOT NULL DEFAULT 0,
    next_try_at    timestamptz        NOT NULL DEFAULT now(),
    last_error     text,
    last_error_at  timestamptz,
    PRIMARY KEY (forge, owner, repo, number),
    CONSTRAINT mirror_issue_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT applied_job_and_state_together CHECK ((applied_job_id IS NULL) = (applied_state IS NULL)),
    CONSTRAINT mirror_failures_not_negative CHECK (failures >= 0)
);
CREATE INDEX mirror_writes_due ON tireless.mirror_issue (forge, owner, repo, next_try_at)
    WHERE (applied_job_id, applied_state) IS DISTINCT FROM (job_id, state);
COMMENT ON TABLE tireless.mirror_issue IS
    'Per issue with jobs: the job and state it should show (its newest job), the job and state the forge last '
    'confirmed, and the retries of a failing write. A newer wanted state replaces an older one, so only the latest '
    'is ever applied. Private: mirror_writes, record_mirror_write and record_mirror_failure keep it.';
COMMENT ON COLUMN tireless.mirror_issue.job_id IS 'The issue''s newest job: the one the forge should show.';
COMMENT ON COLUMN tireless.mirror_issue.applied_job_id IS 'The job whose state the forge last confirmed showing (null: none yet).';
COMMENT ON COLUMN tireless.mirror_issue.next_try_at IS 'A failed write is not tried again before this time.';
COMMENT ON INDEX tireless.mirror_writes_due IS 'The writes still to apply, per repository, by when they are due.';
COMMENT ON CONSTRAINT mirror_issue_of_a_tracked_repo ON tireless.mirror_issue IS 'Mirror state belongs to a tracked repository and goes with it.';
COMMENT ON CONSTRAINT applied_job_and_state_together ON tireless.mirror_issue IS 'What was applied is a job and its state, or nothing.';
COMMENT ON CONSTRAINT mirror_failures_not_negative ON tireless.mirror_issue IS 'Failures in a row are not negative.';

-- Upgrading comments on no old issue: the history so far counts as read, and only the live jobs
-- are queued, so their issues get their state label.
INSERT INTO tireless.mirror_repo (forge, owner, repo, event_cursor, scanned_to)
SELECT t.forge, t.owner, t.repo, e.newest, e.newest
  FROM tireless.tracked_repo t, (SELECT coalesce(max(id), 0) AS newest FROM tireless.job_event) AS e;
INSERT INTO tireless.mirror_issue (forge, owner, repo, number, job_id, state)
SELECT j.forge, j.owner, j.repo, j.number, j.id, j.state
  FROM tireless.job j
  JOIN tireless.tracked_repo t ON (t.forge, t.owner, t.repo) = (j.forge, j.owner, j.repo)
 WHERE j.state IN ('pending', 'claimed');

CREATE FUNCTION tireless.mirror_labels(OUT prefix text, OUT mode_labels text[], OUT state_labels text[])
    LANGUAGE sql STABLE
AS $$
    SELECT p.label_prefix,
           ARRAY(SELECT p.label_prefix || '/' || k::text FROM unnest(enum_range(NULL::tireless.job_kind)) AS k),
           ARRAY(SELECT p.label_prefix || '/state:' || s::text FROM unnest(enum_range(NULL::tireless.job_state)) AS s)
      FROM tireless.policy p;
$$;
COMMENT ON FUNCTION tireless.mirror_labels() IS
    'The label prefix, its mode labels (<prefix>/discover, ...) and its state labels (<prefix>/state:pending, ...).';

CREATE FUNCTION tireless.finished_job_comment(job tireless.job) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT format('tireless: %s after %s attempt%s', job.state, job.attempts, CASE WHEN job.attempts = 1 THEN '' ELSE 's' END)
           || coalesce(' (' || holder.worker || ')', '')
           || coalesce(': ' || CASE WHEN length(note.text) > 500 THEN left(note.text, 499) || '…' ELSE note.text END, '')
      FROM (SELECT nullif(regexp_replace(btrim(job.note), '\s+', ' ', 'g'), '') AS text) AS note
      LEFT JOIN LATERAL (SELECT e.worker FROM tireless.job_event e
                          WHERE e.job_id = job.id AND e.worker IS NOT NULL
                          ORDER BY e.id DESC LIMIT 1) AS holder ON true;
$$;
COMMENT ON FUNCTION tireless.finished_job_comment(tireless.job) IS
    'The comment a finished job leaves on its issue: outcome, attempts, the last holder and the note on one line, '
    'trimmed to 500 characters (tireless: delivered after 2 attempts (host1-3): merged as #12).';

CREATE FUNCTION tireless.mirror_writes(
    forge text, owner text, repo text, poller text, max_writes integer DEFAULT 100, settle interval DEFAULT '2 minutes'
) RETURNS TABLE (number integer, job_id bigint, state text, state_label text, drop_labels text[], comment text,
                 comment_marker text)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    mirror tireless.mirror_repo;
    labels record;
    newest bigint;
    settled bigint;
    tracked_since timestamptz;
BEGIN
    IF mirror_writes.max_writes IS NULL OR mirror_writes.max_writes NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_writes must be from 1 to 10000, got %', coalesce(mirror_writes.max_writes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF mirror_writes.settle IS NULL OR mirror_writes.settle < interval '0' OR mirror_writes.settle > interval '1 day' THEN
        RAISE EXCEPTION 'settle must be from 0 to 1 day, got %', coalesce(mirror_writes.settle::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, mirror_writes.poller);
    INSERT INTO tireless.mirror_repo (forge, owner, repo)
    VALUES (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
    ON CONFLICT DO NOTHING;
    SELECT * INTO mirror FROM tireless.mirror_repo m
     WHERE (m.forge, m.owner, m.repo) = (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
       FOR UPDATE;
    SELECT t.tracked_at INTO tracked_since FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (mirror.forge, mirror.owner, mirror.repo);

    -- Every issue whose jobs changed since the cursor now wants its newest job's current state; an
    -- older wanted state is replaced (job ids of one issue grow: a new job starts after the last ended).
    WITH touched AS (
        SELECT j.number, max(j.id) AS job_id
          FROM tireless.job_event e
          JOIN tireless.job j ON j.id = e.job_id
         WHERE e.id > mirror.event_cursor
           AND (j.forge, j.owner, j.repo) = (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
           -- A repository tracked again does not mirror what happened before: no comment on old issues.
           AND e.at >= tracked_since
         GROUP BY j.number
    )
    INSERT INTO tireless.mirror_issue AS mi (forge, owner, repo, number, job_id, state)
    SELECT mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, t.number, j.id, j.state
      FROM touched t
      JOIN tireless.job j ON j.id = t.job_id
    ON CONFLICT ON CONSTRAINT mirror_issue_pkey DO UPDATE
       SET job_id = excluded.job_id, state = excluded.state, failures = 0, next_try_at = now()
     WHERE excluded.job_id > mi.job_id OR (excluded.job_id = mi.job_id AND excluded.state <> mi.state);

    -- The cursor passes only events older than the settle time: a transaction that commits later
    -- than an event with a greater id is still read by the next scan. Reading an event again is harmless.
    SELECT max(e.id), max(e.id) FILTER (WHERE e.at < now() - mirror_writes.settle) INTO newest, settled
      FROM tireless.job_event e WHERE e.id > mirror.event_cursor;
    UPDATE tireless.mirror_repo m
       SET event_cursor = greatest(m.event_cursor, coalesce(settled, m.event_cursor)),
           scanned_to = greatest(m.scanned_to, coalesce(newest, m.scanned_to))
     WHERE (m.forge, m.owner, m.repo) = (mirror.forge, mirror.owner, mirror.repo);

    -- A job pruned before the forge showed it leaves nothing to show.
    UPDATE tireless.mirror_issue mi SET applied_job_id = mi.job_id, applied_state = mi.state, applied_at = now()
     WHERE (mi.forge, mi.owner, mi.repo) = (mirror.forge, mirror.owner, mirror.repo)
       AND (mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state)
       AND NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = mi.job_id);

    SELECT * INTO labels FROM tireless.mirror_labels();
    RETURN QUERY
    SELECT mi.number, mi.job_id, mi.state::text,
           labels.prefix || '/state:' || mi.state::text,
           ARRAY(SELECT l FROM unnest(labels.state_labels) AS l WHERE l <> labels.prefix || '/state:' || mi.state::text)
           || CASE WHEN tireless.is_terminal(mi.state) THEN labels.mode_labels ELSE '{}' END,
           CASE WHEN tireless.is_terminal(mi.state) AND p.mirror_comments
                THEN tireless.finished_job_comment(j) || E'\n\n' || format('<!-- tireless:job:%s -->', j.id) END,
           format('<!-- tireless:job:%s -->', j.id)
      FROM tireless.mirror_issue mi
      JOIN tireless.job j ON j.id = mi.job_id
     CROSS JOIN tireless.policy p
     WHERE (mi.forge, mi.owner, mi.repo) = (mirror.forge, mirror.owner, mirror.repo)
       AND (mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state)
       AND mi.next_try_at <= now()
     ORDER BY mi.next_try_at, mi.number
     LIMIT mirror_writes.max_writes;
END;
$$;
COMMENT ON FUNCTION tireless.mirror_writes(text, text, text, text, integer, interval) IS
    'For a poller holding the repository''s poll lease: reads the job history since the repository''s cursor '
    '(each changed issue now wants its newest job''s state, replacing any older wanted state) and returns the '
    'writes due (at most max_writes): per issue its job and state, the state label to show, the labels to take off '
    '(the other state labels, and the mode labels once the job ended) and, for a finished job when the policy '
    'comments, the comment with its marker. The cursor passes only events older than settle. TL004 without the lease.';

CREATE FUNCTION tireless.mirror_issue_row(forge text, owner text, repo text, number integer, job_id bigint, state text)
    RETURNS tireless.mirror_issue
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    queued tireless.mirror_issue;
BEGIN
    PERFORM tireless.parse_state(mirror_issue_row.state);
    SELECT * INTO queued FROM tireless.mirror_issue mi
     WHERE (mi.forge, mi.owner, mi.repo, mi.number)
           = (mirror_issue_row.forge, mirror_issue_row.owner, mirror_issue_row.repo, mirror_issue_row.number)
       FOR UPDATE;
    IF NOT FOUND OR queued.job_id < mirror_issue_row.job_id THEN
        RAISE EXCEPTION 'issue %/%/%#% has no mirror write for job %', mirror_issue_row.forge, mirror_issue_row.owner,
            mirror_issue_row.repo, mirror_issue_row.number, coalesce(mirror_issue_row.job_id::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'Record the writes mirror_writes returned.';
    END IF;
    RETURN queued;
END;
$$;
COMMENT ON FUNCTION tireless.mirror_issue_row(text, text, text, integer, bigint, text) IS
    'The issue''s mirror row, locked; TL005 when mirror_writes never queued a write for that job.';

CREATE FUNCTION tireless.record_mirror_write(
    forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb DEFAULT NULL
) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    queued tireless.mirror_issue;
    withdrawn boolean;
BEGIN
    PERFORM tireless.held_poll(record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo,
                               record_mirror_write.poller);
    queued := tireless.mirror_issue_row(record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo,
                                     record_mirror_write.number, record_mirror_write.job_id, record_mirror_write.state);
    IF record_mirror_write.issue IS NOT NULL THEN
        PERFORM tireless.check_issue_batch(jsonb_build_array(record_mirror_write.issue));
        IF (record_mirror_write.issue ->> 'forge', record_mirror_write.issue ->> 'owner', record_mirror_write.issue ->> 'repo',
            (record_mirror_write.issue ->> 'number')::integer)
           IS DISTINCT FROM (record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo, record_mirror_write.number) THEN
            RAISE EXCEPTION 'malformed issue: it is not %/%/%#%', record_mirror_write.forge, record_mirror_write.owner,
                record_mirror_write.repo, record_mirror_write.number USING ERRCODE = 'TL006';
        END IF;
    END IF;
    -- What the forge confirmed (an older job or state than wanted leaves the newer one due).
    UPDATE tireless.mirror_issue mi
       SET applied_job_id = record_mirror_write.job_id, applied_state = record_mirror_write.state::tireless.job_state,
           applied_at = now(), failures = 0, next_try_at = now(), last_error = NULL, last_error_at = NULL
     WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (queued.forge, queued.owner, queued.repo, queued.number);

    -- A finished job's mode labels are off the issue: its request is withdrawn. The store records it
    -- now, so the next poll sees no change (no job), and a human who adds a mode label again asks again.
    withdrawn := tireless.is_terminal(record_mirror_write.state::tireless.job_state)
                 AND NOT EXISTS (SELECT FROM tireless.job j
                                  WHERE (j.forge, j.owner, j.repo, j.number) = (queued.forge, queued.owner, queued.repo, queued.number)
                                    AND j.state IN ('pending', 'claimed'));
    IF withdrawn THEN
        PERFORM tireless.lock_repo_issues(queued.forge, queued.owner, queued.repo);
        UPDATE tireless.issue s
           SET labels = ARRAY(SELECT l FROM unnest(s.labels) AS l WHERE NOT l = ANY ((tireless.mirror_labels()).mode_labels)),
               asks_since = NULL, answered = false, changed_at = now()
         WHERE (s.forge, s.owner, s.repo, s.number) = (queued.forge, queued.owner, queued.repo, queued.number);
        -- The issue as the forge shows it after the writes: judged by the work rule like a poll.
        IF record_mirror_write.issue IS NOT NULL THEN
            PERFORM tireless.apply_work_rule(jsonb_build_array(record_mirror_write.issue));
        END IF;
    END IF;
    RETURN withdrawn;
END;
$$;
COMMENT ON FUNCTION tireless.record_mirror_write(text, text, text, text, integer, bigint, text, jsonb) IS
    'The forge confirmed the issue shows job_id in state: recorded as applied, its error cleared. For a finished job '
    'with no live successor the request is recorded as withdrawn (mode labels off, no longer asking) and issue, '
    'the forge''s issue after the writes (enqueue''s format), is judged by the work rule as a poll would; returns '
    'whether it recorded a withdrawal. TL004 without the poll lease, TL005 for a write never queued.';

CREATE FUNCTION tireless.record_mirror_failure(
    forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text
) RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    queued tireless.mirror_issue;
    until timestamptz;
BEGIN
    IF record_mirror_failure.error IS NULL OR btrim(record_mirror_failure.error) = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', coalesce(quote_literal(record_mirror_failure.error), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_mirror_failure.forge, record_mirror_failure.owner, record_mirror_failure.repo,
                               record_mirror_failure.poller);
    queued := tireless.mirror_issue_row(record_mirror_failure.forge, record_mirror_failure.owner, record_mirror_failure.repo,
                                     record_mirror_failure.number, record_mirror_failure.job_id, record_mirror_failure.state);
    -- 15 s doubling per failure in a row, capped at an hour, jittered to between half and all of it.
    until := now() + least(interval '1 hour', interval '15 seconds' * (2::float8 ^ least(queued.failures, 20)))
                     * (0.5 + random() / 2);
    UPDATE tireless.mirror_issue mi
       SET failures = mi.failures + 1, next_try_at = until,
           last_error = left(btrim(record_mirror_failure.error), 2000), last_error_at = now()
     WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (queued.forge, queued.owner, queued.repo, queued.number);
    RETURN until;
END;
$$;
COMMENT ON FUNCTION tireless.record_mirror_failure(text, text, text, text, integer, bigint, text, text) IS
    'A mirror write to one issue failed: counts it, records the error (trimmed to 2000 characters) and backs that '
    'issue off exponentially with jitter; returns when it is tried again. Other issues and the polls go on. TL004 '
    'without the poll lease, TL005 for a write never queued.';

CREATE FUNCTION tireless.set_mirror_comments(enabled boolean) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF set_mirror_comments.enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must be true or false, got null' USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.policy p SET mirror_comments = set_mirror_comments.enabled;
    RETURN set_mirror_comments.enabled;
END;
$$;
COMMENT ON FUNCTION tireless.set_mirror_comments(boolean) IS
    '(admin) Turns the mirror''s comment on finished jobs on or off (the state labels stay); returns the setting.';

-- repo_status gains the mirror's backlog and its last error (columns added at the end).
CREATE OR REPLACE VIEW tireless.repo_status AS
SELECT rp.forge, rp.owner, rp.repo,
       f.kind::text AS forge_kind,
       f.name IS NOT NULL AS registered,
       rp.last_poll_at, rp.last_success_at, rp.last_error, rp.last_error_at, rp.consecutive_failures,
       rp.next_poll_at, rp.backoff_until, rp.polled_by, rp.cursor,
       f.limited_until AS forge_limited_until, f.last_error AS forge_error,
       coalesce(live.pending, 0) AS pending, coalesce(live.claimed, 0) AS claimed,
       coalesce(queued.writes, 0) + coalesce(unread.issues, 0) AS mirror_backlog,
       queued.last_error AS mirror_error, queued.last_error_at AS mirror_error_at
  FROM tireless.repo_poll rp
  LEFT JOIN tireless.forge f ON f.name = rp.forge
  LEFT JOIN tireless.mirror_repo m ON (m.forge, m.owner, m.repo) = (rp.forge, rp.owner, rp.repo)
  LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE j.state = 'pending') AS pending,
             count(*) FILTER (WHERE j.state = 'claimed') AS claimed
        FROM tireless.job j
       WHERE (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo) AND j.state IN ('pending', 'claimed')
  ) AS live ON true
  LEFT JOIN LATERAL (
      SELECT count(*) AS writes,
             (array_agg(mi.last_error ORDER BY mi.last_error_at DESC) FILTER (WHERE mi.last_error IS NOT NULL))[1] AS last_error,
             max(mi.last_error_at) AS last_error_at
        FROM tireless.mirror_issue mi
       WHERE (mi.forge, mi.owner, mi.repo) = (rp.forge, rp.owner, rp.repo)
         AND (mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state)
  ) AS queued ON true
  LEFT JOIN LATERAL (
      -- Changes the mirror has not read yet, on issues with no write already queued.
      SELECT count(DISTINCT j.number) AS issues
        FROM tireless.job_event e
        JOIN tireless.job j ON j.id = e.job_id
       WHERE e.id > coalesce(m.scanned_to, 0)
         AND (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo)
         AND e.at >= (SELECT t.tracked_at FROM tireless.tracked_repo t
                       WHERE (t.forge, t.owner, t.repo) = (rp.forge, rp.owner, rp.repo))
         AND NOT EXISTS (SELECT FROM tireless.mirror_issue mi
                          WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (j.forge, j.owner, j.repo, j.number)
                            AND (mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state))
  ) AS unread ON true;
COMMENT ON VIEW tireless.repo_status IS
    'One row per tracked repository: its forge (registered or not, stopped until when and why), its last poll, '
    'last good read and last error, failures in a row, next poll, backoff, holder and cursor, its live jobs, and '
    'the mirror: how many issues still wait for a forge write (mirror_backlog) and the newest error of those.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tireless.mirror_writes(text, text, text, text, integer, interval),
    tireless.record_mirror_write(text, text, text, text, integer, bigint, text, jsonb),
    tireless.record_mirror_failure(text, text, text, text, integer, bigint, text, text)
    TO tireless_poller;
GRANT EXECUTE ON FUNCTION tireless.set_mirror_comments(boolean) TO tireless_admin;
GRANT SELECT ON tireless.mirror_repo, tireless.mirror_issue TO tireless_admin;
GRANT SELECT ON tireless.repo_status TO tireless_runner, tireless_poller, tireless_admin;
