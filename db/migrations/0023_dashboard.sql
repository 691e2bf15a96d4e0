-- The dashboard over time: queue depth, throughput, wait and run times per lane and kind, the workers seen, and the runs of an issue, all folded from the history at read time.
-- depends: 0022_finish_and_claim

-- Where the work goes: nothing here is written by the claim or finish paths. tireless.roll_up_history()
-- (0010) already reads the events written since its last call, through the BRIN index on the id;
-- it now also folds them into the tables below (tireless.fold_history). A page reads a bounded number
-- of folded rows (at most one per bucket, lane, kind and bin of the window), however long the history.
-- Why not in the trigger: every claim and every finish runs it (issue 13 measures it); folding at
-- read time costs those paths nothing, and a dashboard refreshing every 15 seconds folds a few
-- hundred events per read.

-- Buckets are whole minutes (kept 3 hours: the 1-hour window) and whole hours (kept 8 days: the 24-hour and
-- 7-day windows), binned from a UTC origin so that every session's time zone sees the same buckets.
CREATE TABLE tireless.activity_count (
    grain         interval NOT NULL,
    bucket        timestamptz NOT NULL,
    lane          text NOT NULL,
    kind          tireless.job_kind NOT NULL,
    pending_delta bigint NOT NULL,
    claimed_delta bigint NOT NULL,
    delivered     bigint NOT NULL,
    failed        bigint NOT NULL,
    cancelled     bigint NOT NULL,
    PRIMARY KEY (grain, bucket, lane, kind),
    CONSTRAINT activity_grain_is_minute_or_hour CHECK (grain IN (interval '1 minute', interval '1 hour'))
);
COMMENT ON TABLE tireless.activity_count IS
    'Per bucket (a minute or an hour), lane and kind: how the pending and claimed jobs changed (jobs that entered '
    'the state minus jobs that left it) and how many jobs ended in each terminal state. Private: read tireless.queue_activity.';
COMMENT ON CONSTRAINT activity_grain_is_minute_or_hour ON tireless.activity_count IS 'Two grains: minutes and hours.';

CREATE TABLE tireless.duration_count (
    grain   interval NOT NULL,
    bucket  timestamptz NOT NULL,
    lane    text NOT NULL,
    kind    tireless.job_kind NOT NULL,
    measure text NOT NULL,
    bin     smallint NOT NULL,
    jobs    bigint NOT NULL,
    PRIMARY KEY (grain, bucket, lane, kind, measure, bin),
    CONSTRAINT duration_measure_is_wait_or_run CHECK (measure IN ('wait', 'run')),
    CONSTRAINT duration_grain_is_minute_or_hour CHECK (grain IN (interval '1 minute', interval '1 hour'))
);
COMMENT ON TABLE tireless.duration_count IS
    'A histogram per bucket, lane and kind: how many jobs waited (created to first claim, counted in the bucket '
    'of the claim) or ran (claim to finish, in the bucket of the finish) for a duration in each bin '
    '(tireless.duration_bin). Private: read tireless.job_durations.';
COMMENT ON CONSTRAINT duration_measure_is_wait_or_run ON tireless.duration_count IS 'wait: created to first claim; run: claim to finish.';
COMMENT ON CONSTRAINT duration_grain_is_minute_or_hour ON tireless.duration_count IS 'Two grains: minutes and hours.';

CREATE TABLE tireless.failure_count (
    grain  interval NOT NULL,
    bucket timestamptz NOT NULL,
    lane   text NOT NULL,
    error  text NOT NULL,
    jobs   bigint NOT NULL,
    latest bigint NOT NULL,
    PRIMARY KEY (grain, bucket, lane, error),
    CONSTRAINT failure_grain_is_minute_or_hour CHECK (grain IN (interval '1 minute', interval '1 hour'))
);
COMMENT ON TABLE tireless.failure_count IS
    'Per bucket and lane, how many jobs failed with each error (the first line of the note of the event that '
    'failed them) and the newest such job. Private: read tireless.failure_groups.';
COMMENT ON CONSTRAINT failure_grain_is_minute_or_hour ON tireless.failure_count IS 'Two grains: minutes and hours.';

CREATE TABLE tireless.worker_seen (
    worker     text PRIMARY KEY,
    lanes      text[] NOT NULL,
    first_seen timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL
);
COMMENT ON TABLE tireless.worker_seen IS
    'Every worker the history names (claims, finishes, give-backs) in the last 8 days: the lanes it claimed from and '
    'when it was first and last named. Private: read tireless.workers.';

CREATE TABLE tireless.issue_run (
    forge  text NOT NULL,
    owner  text NOT NULL,
    repo   text NOT NULL,
    number integer NOT NULL,
    job_id bigint NOT NULL,
    PRIMARY KEY (forge, owner, repo, number, job_id)
);
COMMENT ON TABLE tireless.issue_run IS
    'Which jobs each issue has had, so a job page can link the runs before and after it. Kept by the rollup, not '
    'by an index on tireless.job: every change of state writes each index of that table (state is in the '
    'predicates of its partial indexes, so no update is HOT), and this costs the claim and finish paths nothing. '
    'Private: read tireless.issue_runs.';

CREATE FUNCTION tireless.duration_bin(seconds float8) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ceil(4 * ln(greatest(seconds, 0.01)) / ln(2))::smallint;
COMMENT ON FUNCTION tireless.duration_bin(float8) IS
    'The histogram bin of a duration in seconds: bins grow by a factor of 2^(1/4) (19%); bin b holds the '
    'durations up to tireless.bin_bound(b). Everything under 10 ms is in the first bin.';

CREATE FUNCTION tireless.bin_bound(bin smallint) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN make_interval(secs => round(power(2, bin / 4.0)::numeric, 3)::float8);
COMMENT ON FUNCTION tireless.bin_bound(smallint) IS 'The longest duration of a histogram bin (see tireless.duration_bin).';

CREATE FUNCTION tireless.activity_grain(span interval) RETURNS interval
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF span IS NULL OR span <= interval '0' OR span > interval '8 days' THEN
        RAISE EXCEPTION 'span must be more than 0 and at most 8 days, got %', coalesce(span::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    RETURN CASE WHEN span <= interval '2 hours' THEN interval '1 minute' ELSE interval '1 hour' END;
END;
$$;
COMMENT ON FUNCTION tireless.activity_grain(interval) IS
    'The bucket of a window: a minute up to 2 hours, else an hour; TL005 for a window that is not positive or longer than 8 days.';

CREATE FUNCTION tireless.fold_history(after_id bigint, upto_id bigint) RETURNS void
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH moved AS (
        SELECT e.at, e.worker, e.from_state, e.to_state, split_part(coalesce(e.note, ''), E'\n', 1) AS error, j.id AS job_id, j.forge, j.owner, j.repo, j.number,
               j.lane, j.kind,
               CASE WHEN e.to_state = 'claimed' AND e.attempt = 1
                    THEN extract(epoch FROM e.at - j.created_at)::float8 END AS waited,
               extract(epoch FROM e.at - claim.at)::float8 AS ran
          FROM tireless.job_event e
          JOIN tireless.job j ON j.id = e.job_id
          -- A finish from claimed: the event before it is the claim (its job's key, the primary key).
          LEFT JOIN LATERAL (SELECT p.at FROM tireless.job_event p
                              WHERE e.from_state = 'claimed' AND tireless.is_terminal(e.to_state)
                                AND p.job_id = e.job_id AND p.id < e.id
                              ORDER BY p.id DESC LIMIT 1) AS claim ON true
         WHERE e.id > fold_history.after_id AND e.id <= fold_history.upto_id
    ), bucketed AS (
        SELECT g.grain, date_bin(g.grain, m.at, timestamptz '2000-01-01 00:00:00+00') AS bucket, m.lane, m.kind,
               m.from_state, m.to_state, m.waited, m.ran, m.error, m.job_id
          FROM moved m
          JOIN (VALUES (interval '1 minute', interval '3 hours'), (interval '1 hour', interval '8 days')) AS g (grain, kept)
            ON m.at >= now() - g.kept
    ), flows AS (
        INSERT INTO tireless.activity_count AS a
               (grain, bucket, lane, kind, pending_delta, claimed_delta, delivered, failed, cancelled)
        SELECT b.grain, b.bucket, b.lane, b.kind,
               count(*) FILTER (WHERE b.to_state = 'pending') - count(*) FILTER (WHERE b.from_state = 'pending'),
               count(*) FILTER (WHERE b.to_state = 'claimed') - count(*) FILTER (WHERE b.from_state = 'claimed'),
               count(*) FILTER (WHERE b.to_state = 'delivered'),
               count(*) FILTER (WHERE b.to_state = 'failed'),
               count(*) FILTER (WHERE b.to_state = 'cancelled')
          FROM bucketed b
         GROUP BY b.grain, b.bucket, b.lane, b.kind
        ON CONFLICT (grain, bucket, lane, kind) DO UPDATE
           SET pending_delta = a.pending_delta + excluded.pending_delta,
               claimed_delta = a.claimed_delta + excluded.claimed_delta,
               delivered = a.delivered + excluded.delivered,
               failed = a.failed + excluded.failed,
               cancelled = a.cancelled + excluded.cancelled
    ), durations AS (
        INSERT INTO tireless.duration_count AS d (grain, bucket, lane, kind, measure, bin, jobs)
        SELECT b.grain, b.bucket, b.lane, b.kind, x.measure, tireless.duration_bin(x.seconds), count(*)
          FROM bucketed b
         CROSS JOIN LATERAL (VALUES ('wait', b.waited), ('run', b.ran)) AS x (measure, seconds)
         WHERE x.seconds IS NOT NULL
         GROUP BY b.grain, b.bucket, b.lane, b.kind, x.measure, tireless.duration_bin(x.seconds)
        ON CONFLICT (grain, bucket, lane, kind, measure, bin) DO UPDATE SET jobs = d.jobs + excluded.jobs
    ), failures AS (
        INSERT INTO tireless.failure_count AS f (grain, bucket, lane, error, jobs, latest)
        SELECT b.grain, b.bucket, b.lane, b.error, count(*), max(b.job_id)
          FROM bucketed b
         WHERE b.to_state = 'failed'
         GROUP BY b.grain, b.bucket, b.lane, b.error
        ON CONFLICT (grain, bucket, lane, error) DO UPDATE
           SET jobs = f.jobs + excluded.jobs, latest = greatest(f.latest, excluded.latest)
    ), seen AS (
        INSERT INTO tireless.worker_seen AS w (worker, lanes, first_seen, last_seen)
        SELECT m.worker, coalesce(array_agg(DISTINCT m.lane) FILTER (WHERE m.to_state = 'claimed'), '{}'),
               min(m.at), max(m.at)
          FROM moved m
         WHERE m.worker IS NOT NULL AND m.at >= now() - interval '8 days'
         GROUP BY m.worker
        ON CONFLICT (worker) DO UPDATE
           SET lanes = ARRAY(SELECT DISTINCT l FROM unnest(w.lanes || excluded.lanes) AS l ORDER BY l),
               first_seen = least(w.first_seen, excluded.first_seen),
               last_seen = greatest(w.last_seen, excluded.last_seen)
    ), runs AS (
        INSERT INTO tireless.issue_run (forge, owner, repo, number, job_id)
        SELECT m.forge, m.owner, m.repo, m.number, m.job_id FROM moved m WHERE m.from_state IS NULL
        ON CONFLICT DO NOTHING
    )
    SELECT count(*) FROM moved;
    DELETE FROM tireless.activity_count a
     WHERE a.bucket < now() - CASE WHEN a.grain = interval '1 minute' THEN interval '3 hours' ELSE interval '8 days' END;
    DELETE FROM tireless.duration_count d
     WHERE d.bucket < now() - CASE WHEN d.grain = interval '1 minute' THEN interval '3 hours' ELSE interval '8 days' END;
    DELETE FROM tireless.failure_count f
     WHERE f.bucket < now() - CASE WHEN f.grain = interval '1 minute' THEN interval '3 hours' ELSE interval '8 days' END;
    DELETE FROM tireless.worker_seen w WHERE w.last_seen < now() - interval '8 days';
END;
COMMENT ON FUNCTION tireless.fold_history(bigint, bigint) IS
    'Folds the events with after_id < id <= upto_id into activity_count, duration_count, failure_count, worker_seen and issue_run, '
    'and drops the buckets past their keeping time. Called by tireless.roll_up_history (and once by migration 0023).';

-- roll_up_history as in 0019 (its table lock), and it folds the same range of events for the dashboard (the
-- one added statement is marked). Its position, its horizon and its lock are unchanged.
CREATE OR REPLACE FUNCTION tireless.roll_up_history() RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    state     tireless.history_rollup;
    newest    bigint;
    horizon   xid8;
    oldest    xid8;
    target    bigint;
    counted   bigint;
BEGIN
    -- One rollup at a time; a second caller leaves it to the first. A table lock, not a row lock:
    -- it takes no transaction id, so the horizons below are not held back by this transaction
    -- itself. EXCLUSIVE conflicts with itself, not with the ACCESS SHARE of a reader (the most a
    -- login other than the owner may take on the table), so no one else can hold it.
    BEGIN
        LOCK TABLE tireless.history_rollup IN EXCLUSIVE MODE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        RETURN 0;
    END;
    SELECT r.* INTO state FROM tireless.history_rollup r;
    -- Each statement takes a new snapshot: every event id up to newest was drawn by a transaction
    -- that already had its transaction id, so one older than horizon.
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END INTO newest FROM tireless.job_event_id_seq s;
    horizon := pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot());
    oldest := pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot());
    IF oldest >= horizon THEN
        -- Every transaction that could hold an event up to newest has ended: count them all now.
        target := newest;
        state.waiting_to := NULL;
        state.waiting_until := NULL;
    ELSIF state.waiting_to IS NOT NULL AND oldest >= state.waiting_until THEN
        target := state.waiting_to;
        state.waiting_to := newest;
        state.waiting_until := horizon;
    ELSE
        -- A transaction older than the stop is still open: count nothing yet, keep the stop.
        target := state.counted_to;
        IF state.waiting_to IS NULL THEN
            state.waiting_to := newest;
            state.waiting_until := horizon;
        END IF;
    END IF;

    WITH finished AS (
        SELECT date_trunc('hour', e.at) AS hour, j.lane, e.to_state AS outcome
          FROM tireless.job_event e
          JOIN tireless.job j ON j.id = e.job_id
         WHERE e.id > state.counted_to AND e.id <= target AND tireless.is_terminal(e.to_state)
    ), per_lane AS (
        INSERT INTO tireless.finished_count AS c (lane, outcome, jobs)
        SELECT f.lane, f.outcome, count(*) FROM finished f GROUP BY f.lane, f.outcome
        ON CONFLICT (lane, outcome) DO UPDATE SET jobs = c.jobs + excluded.jobs
    ), per_hour AS (
        INSERT INTO tireless.finished_hourly AS h (hour, lane, outcome, jobs)
        SELECT f.hour, f.lane, f.outcome, count(*) FROM finished f GROUP BY f.hour, f.lane, f.outcome
        ON CONFLICT (hour, lane, outcome) DO UPDATE SET jobs = h.jobs + excluded.jobs
    )
    SELECT count(*) INTO counted FROM finished;
    IF target > state.counted_to THEN
        PERFORM tireless.fold_history(state.counted_to, target);  -- 0023: the dashboard's roll-ups
    END IF;

    DELETE FROM tireless.finished_hourly h WHERE h.hour < now() - interval '8 days';
    UPDATE tireless.history_rollup r
       SET counted_to = greatest(state.counted_to, target),
           waiting_to = state.waiting_to, waiting_until = state.waiting_until;
    RETURN counted;
END;
$$;
COMMENT ON FUNCTION tireless.roll_up_history() IS
    'Counts the finished jobs of the history written since the last call into tireless.finished_jobs and '
    'tireless.finished_jobs_by_hour, and folds the same events into the dashboard''s roll-ups (tireless.fold_history); '
    'returns how many finished jobs it added. Reads only new events; an event of a '
    'transaction still open is counted by a later call. Returns 0 at once while another call is rolling up (it holds the '
    'table lock of tireless.history_rollup, which only the schema''s owner can take).';

CREATE FUNCTION tireless.queue_activity(span interval)
    RETURNS TABLE (bucket timestamptz, lane text, pending bigint, claimed bigint,
                   delivered bigint, failed bigint, cancelled bigint)
    LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT tireless.roll_up_history();
    WITH frame AS (
        SELECT tireless.activity_grain(queue_activity.span) AS grain,
               date_bin(tireless.activity_grain(queue_activity.span), now(),
                        timestamptz '2000-01-01 00:00:00+00') AS last
    ), counted AS (
        SELECT a.bucket, a.lane, sum(a.pending_delta) AS pending_delta, sum(a.claimed_delta) AS claimed_delta,
               sum(a.delivered) AS delivered, sum(a.failed) AS failed, sum(a.cancelled) AS cancelled
          FROM tireless.activity_count a
          JOIN frame f ON a.grain = f.grain AND a.bucket > f.last - queue_activity.span
         GROUP BY a.bucket, a.lane
    ), live AS (
        SELECT j.lane, count(*) FILTER (WHERE j.state = 'pending') AS pending,
               count(*) FILTER (WHERE j.state = 'claimed') AS claimed
          FROM tireless.job j
         WHERE j.state IN ('pending', 'claimed')
         GROUP BY j.lane
    ), lanes AS (
        SELECT c.lane FROM counted c UNION SELECT v.lane FROM live v
    ), grid AS (
        SELECT s.bucket, l.lane, coalesce(c.pending_delta, 0) AS pending_delta,
               coalesce(c.claimed_delta, 0) AS claimed_delta, coalesce(c.delivered, 0) AS delivered,
               coalesce(c.failed, 0) AS failed, coalesce(c.cancelled, 0) AS cancelled
          FROM frame f
         CROSS JOIN generate_series(f.last - queue_activity.span + f.grain, f.last, f.grain) AS s (bucket)
         CROSS JOIN lanes l
          LEFT JOIN counted c ON (c.bucket, c.lane) = (s.bucket, l.lane)
    )
    -- The depth at a bucket's end: the live jobs now, less what every later bucket added.
    SELECT g.bucket, g.lane,
           greatest(0, coalesce(v.pending, 0) - coalesce(sum(g.pending_delta) OVER later, 0))::bigint,
           greatest(0, coalesce(v.claimed, 0) - coalesce(sum(g.claimed_delta) OVER later, 0))::bigint,
           g.delivered::bigint, g.failed::bigint, g.cancelled::bigint
      FROM grid g
      LEFT JOIN live v ON v.lane = g.lane
    WINDOW later AS (PARTITION BY g.lane ORDER BY g.bucket DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
     ORDER BY g.lane, g.bucket;
END;
COMMENT ON FUNCTION tireless.queue_activity(interval) IS
    'Each lane over the last span (at most 8 days) in buckets of a minute (span up to 2 hours) or an hour: its '
    'pending and claimed jobs at the end of each bucket and the jobs that ended delivered, failed or cancelled in it. '
    'Rolls the history up first (tireless.roll_up_history) and reads only the folded buckets and the live jobs. '
    'A job re-routed to another lane while pending counts in the lane it had when the rollup read its event.';

CREATE FUNCTION tireless.job_durations(span interval)
    RETURNS TABLE (lane text, kind text, measure text, jobs bigint, p50 interval, p95 interval)
    LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT tireless.roll_up_history();
    WITH frame AS (
        SELECT tireless.activity_grain(job_durations.span) AS grain,
               date_bin(tireless.activity_grain(job_durations.span), now(),
                        timestamptz '2000-01-01 00:00:00+00') AS last
    ), bins AS (
        SELECT d.lane, d.kind, d.measure, d.bin, sum(d.jobs) AS jobs
          FROM tireless.duration_count d
          JOIN frame f ON d.grain = f.grain AND d.bucket > f.last - job_durations.span
         GROUP BY d.lane, d.kind, d.measure, d.bin
    ), running AS (
        SELECT b.lane, b.kind, b.measure, b.bin,
               sum(b.jobs) OVER (PARTITION BY b.lane, b.kind, b.measure ORDER BY b.bin) AS upto,
               sum(b.jobs) OVER (PARTITION BY b.lane, b.kind, b.measure) AS total
          FROM bins b
    )
    -- As percentile_disc: the bin of the ceil(p * n)-th shortest duration.
    SELECT r.lane, r.kind::text, r.measure, max(r.total)::bigint,
           tireless.bin_bound(min(r.bin) FILTER (WHERE r.upto >= ceil(0.5::float8 * r.total::float8))),
           tireless.bin_bound(min(r.bin) FILTER (WHERE r.upto >= ceil(0.95::float8 * r.total::float8)))
      FROM running r
     GROUP BY r.lane, r.kind, r.measure
     ORDER BY r.lane, r.kind, r.measure;
END;
COMMENT ON FUNCTION tireless.job_durations(interval) IS
    'Per lane, kind and measure (wait: created to first claim; run: claim to finish) over the last span (at most '
    '8 days): how many jobs, and the median and 95th percentile as the upper bound of their histogram bin '
    '(within 19%). Rolls the history up first and reads only the folded histograms.';

CREATE FUNCTION tireless.failure_groups(span interval)
    RETURNS TABLE (error text, jobs bigint, latest bigint, lanes text[])
    LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT tireless.roll_up_history();
    WITH frame AS (
        SELECT tireless.activity_grain(failure_groups.span) AS grain,
               date_bin(tireless.activity_grain(failure_groups.span), now(),
                        timestamptz '2000-01-01 00:00:00+00') AS last
    )
    SELECT f.error, sum(f.jobs)::bigint, max(f.latest), array_agg(DISTINCT f.lane ORDER BY f.lane)
      FROM tireless.failure_count f
      JOIN frame ON f.grain = frame.grain AND f.bucket > frame.last - failure_groups.span
     GROUP BY f.error
     ORDER BY sum(f.jobs) DESC, f.error;
END;
COMMENT ON FUNCTION tireless.failure_groups(interval) IS
    'The failures of the last span (at most 8 days) grouped by their error (the first line of the note that failed the '
    'job): how many jobs, the newest, the lanes; most frequent first. Rolls the history up first and reads only the folded counts.';

CREATE VIEW tireless.workers AS
WITH held AS (
    SELECT j.claimed_by AS worker, j.id AS job_id, j.lane, j.claim_expires_at, j.updated_at,
           (SELECT e.at FROM tireless.job_event e WHERE e.job_id = j.id ORDER BY e.id DESC LIMIT 1) AS held_since
      FROM tireless.job j
     WHERE j.state = 'claimed'
), holding AS (
    SELECT DISTINCT ON (h.worker) h.worker, h.job_id, h.lane, h.held_since, h.claim_expires_at,
           CASE WHEN h.updated_at > h.held_since THEN h.updated_at END AS last_heartbeat,
           count(*) OVER (PARTITION BY h.worker) AS jobs_held,
           bool_or(h.claim_expires_at < now()) OVER (PARTITION BY h.worker) AS past_lease
      FROM held h
     ORDER BY h.worker, h.held_since DESC
)
SELECT coalesce(w.worker, h.worker) AS worker,
       ARRAY(SELECT DISTINCT l FROM unnest(coalesce(w.lanes, '{}') || h.lane) AS l WHERE l IS NOT NULL ORDER BY l) AS lanes,
       h.job_id, coalesce(h.jobs_held, 0) AS jobs_held, h.held_since, h.last_heartbeat, h.claim_expires_at AS lease_ends,
       greatest(w.last_seen, h.held_since, h.last_heartbeat) AS last_seen, w.first_seen,
       CASE WHEN h.past_lease THEN 'stopped heartbeating' WHEN h.job_id IS NOT NULL THEN 'working' ELSE 'idle' END AS status
  FROM (SELECT * FROM tireless.worker_seen s WHERE s.last_seen >= now() - interval '24 hours') AS w
  FULL JOIN holding h ON h.worker = w.worker;
COMMENT ON VIEW tireless.workers IS
    'Every worker named by the history in the last 24 hours or holding a job now: the lanes it claimed from, the job '
    'it holds (the newest of jobs_held) since when, its last heartbeat (null until the first after the claim), when '
    'its lease ends, and its status: working, stopped heartbeating (a lease it holds ran out) or idle. As of the last '
    'tireless.roll_up_history() for the workers that hold nothing.';

CREATE FUNCTION tireless.issue_runs(job_id bigint)
    RETURNS TABLE (id bigint, state text, kind text, created_at timestamptz, note text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT j.id, j.state::text, j.kind::text, j.created_at, j.note
      FROM tireless.job me
      JOIN tireless.issue_run r ON (r.forge, r.owner, r.repo, r.number) = (me.forge, me.owner, me.repo, me.number)
      JOIN tireless.job j ON j.id = r.job_id
     WHERE me.id = issue_runs.job_id
    UNION
    SELECT me.id, me.state::text, me.kind::text, me.created_at, me.note FROM tireless.job me WHERE me.id = issue_runs.job_id
     ORDER BY 1;
END;
COMMENT ON FUNCTION tireless.issue_runs(bigint) IS
    'Every job the issue of job_id has had (a re-run, or a new request after one ended), in order, that the rollup '
    'has seen, and job_id itself; empty for an unknown job.';

CREATE FUNCTION tireless.worker_ran(job_id bigint, worker text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT EXISTS (SELECT FROM tireless.job_event e WHERE e.job_id = worker_ran.job_id AND e.worker = worker_ran.worker);
END;
COMMENT ON FUNCTION tireless.worker_ran(bigint, text) IS
    'True when the history of job_id names worker (it claimed, finished or gave back the job); reads that job''s events only.';

-- The history already counted before this migration: fold what the windows can still show, and every job's run.
DO $$
BEGIN
    PERFORM tireless.fold_history(0, r.counted_to) FROM tireless.history_rollup r;
END;
$$;
INSERT INTO tireless.issue_run (forge, owner, repo, number, job_id)
SELECT j.forge, j.owner, j.repo, j.number, j.id FROM tireless.job j
ON CONFLICT DO NOTHING;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.queue_activity(interval), tireless.job_durations(interval), tireless.failure_groups(interval),
    tireless.issue_runs(bigint), tireless.worker_ran(bigint, text), tireless.duration_bin(float8), tireless.bin_bound(smallint),
    tireless.activity_grain(interval)
    TO tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.workers TO tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.activity_count, tireless.duration_count, tireless.failure_count, tireless.worker_seen, tireless.issue_run
    TO tireless_admin;
