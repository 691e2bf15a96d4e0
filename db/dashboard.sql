-- What psql users, the dashboard and `tireless status` read: the views and the statistics.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE VIEW tireless.lane_status AS
WITH live AS (
    SELECT j.lane,
           count(*) FILTER (WHERE j.state = 'pending') AS pending,
           count(*) FILTER (WHERE j.state = 'pending' AND j.available_at <= now() AND j.waiting_on IS NULL) AS ready,
           count(*) FILTER (WHERE j.state = 'claimed') AS claimed,
           count(*) FILTER (WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS past_lease,
           now() - min(j.created_at) FILTER (WHERE j.state = 'pending') AS oldest_pending_age,
           count(*) FILTER (WHERE j.state = 'pending' AND j.waiting_on IS NOT NULL) AS waiting
      FROM tireless.job j
     WHERE j.state IN ('pending', 'claimed')
     GROUP BY j.lane
)
SELECT coalesce(l.name, live.lane) AS lane,
       l.capacity,
       coalesce(l.paused, false) AS paused,
       CASE WHEN l.tripped_until > now() THEN 'open'
            WHEN l.consecutive_failures >= p.breaker_threshold THEN 'half-open'
            ELSE 'closed' END AS breaker,
       coalesce(l.consecutive_failures, 0) AS consecutive_failures,
       l.tripped_until,
       coalesce(live.pending, 0) AS pending,
       coalesce(live.ready, 0) AS ready,
       coalesce(live.claimed, 0) AS claimed,
       coalesce(live.past_lease, 0) AS past_lease,
       live.oldest_pending_age,
       l.max_run, l.stall_after,
       coalesce(live.waiting, 0) AS waiting,
       l.egress,
       l.memory_limit, l.cpu_limit, l.pids_limit, l.disk_limit
  FROM tireless.lane l
  FULL JOIN live ON live.lane = l.name
 CROSS JOIN tireless.policy p;
COMMENT ON VIEW tireless.lane_status IS
    'One row per lane that has settings or live jobs: capacity, paused, circuit breaker (closed, open while tripped, '
    'half-open after the cool-down until a success), its pending, ready, claimed and past-lease jobs, its time '
    'limits (max_run, stall_after; null: none), its pending jobs waiting for a dependency (waiting; never ready), '
    'its egress allowlist (null: none, the host''s network; empty: no egress), and its limits on one attempt '
    '(memory_limit and disk_limit in bytes, cpu_limit in CPUs, pids_limit in processes; null: none).';
REVOKE ALL ON tireless.lane_status FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.lane_status TO tireless_runner, tireless_poller, tireless_admin;

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
REVOKE ALL ON tireless.queue_stats FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.queue_stats TO tireless_runner, tireless_poller, tireless_admin;

-- Which login holds each claim, beside the worker name. A new column goes at the end, so that
-- CREATE OR REPLACE VIEW keeps the view's earlier columns as they were.
CREATE OR REPLACE VIEW tireless.active_claims AS
SELECT j.id, j.forge, j.owner, j.repo, j.number, j.kind, j.lane, j.claimed_by, j.attempts,
       j.claim_expires_at, j.claim_expires_at - now() AS time_left, j.updated_at, j.claimed_login
  FROM tireless.job j
 WHERE j.state = 'claimed'
 ORDER BY j.claim_expires_at;
COMMENT ON VIEW tireless.active_claims IS
    'Claimed jobs with the time left on their lease (negative: past its lease, waiting for the sweeper), '
    'and the login that claimed each.';
REVOKE ALL ON tireless.active_claims FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.active_claims TO tireless_runner, tireless_poller, tireless_admin;

-- A delivery's columns come last (CREATE OR REPLACE VIEW only adds columns at the end); a read that
-- names none of them does not join (the delivery is unique per job).
CREATE OR REPLACE VIEW tireless.job_list AS
SELECT j.id, j.forge, j.owner, j.repo, j.number, j.title, j.kind, j.lane, j.state, j.parent_id,
       j.claimed_by, j.claim_expires_at, j.attempts, j.available_at, j.note, j.created_at, j.updated_at,
       (j.state = 'claimed' AND j.claim_expires_at < now()) AS past_lease,
       d.branch, d.head, d.pull_number, d.pull_url,
       CASE WHEN j.state = 'pending' THEN j.waiting_on END AS waiting_on,
       tireless.note_cause(j.note) AS cause
  FROM tireless.job j
  LEFT JOIN tireless.delivery d ON d.job_id = j.id;
COMMENT ON VIEW tireless.job_list IS
    'Every job as an operator sees it, without its claim token (a fencing secret of the holder); past_lease: '
    'claimed and its lease has run out; for a job delivered by tireless.deliver, the branch and head it pushed and '
    'its pull request once the mirror recorded it (tireless.deliveries has the rest); waiting_on: the open '
    'dependencies a pending job waits for (#3, owner/repo#7; null: none, tireless.job_waits says more); cause: the '
    'cause its note gives (tireless.note_cause: the agent''s last error line, not a banner before it). Readable by every role.';
REVOKE ALL ON tireless.job_list FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.job_list TO tireless_runner, tireless_poller, tireless_admin;

-- The dashboard's reads: what the roll-up counted, plus the history written since (the
-- tireless.history_moves after counted_to), so a read writes nothing and works on a hot standby.
CREATE OR REPLACE VIEW tireless.finished_jobs AS
SELECT f.lane, f.outcome::text AS outcome, sum(f.jobs)::bigint AS jobs
  FROM (SELECT c.lane, c.outcome, c.jobs FROM tireless.finished_count c
        UNION ALL
        SELECT m.lane, m.to_state, 1
          FROM tireless.history_moves((SELECT r.counted_to FROM tireless.history_rollup r), NULL) m
         WHERE tireless.is_terminal(m.to_state)) AS f
 GROUP BY f.lane, f.outcome;
COMMENT ON VIEW tireless.finished_jobs IS
    'Jobs finished per lane and outcome since the store began (a counter): the rolled-up counts and the history '
    'written since the last tireless.roll_up_history().';
REVOKE ALL ON tireless.finished_jobs FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.finished_jobs TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE VIEW tireless.finished_jobs_by_hour AS
SELECT h.hour, h.lane, h.outcome::text AS outcome, sum(h.jobs)::bigint AS jobs
  FROM (SELECT c.hour, c.lane, c.outcome, c.jobs FROM tireless.finished_hourly c
        UNION ALL
        SELECT date_trunc('hour', m.at), m.lane, m.to_state, 1
          FROM tireless.history_moves((SELECT r.counted_to FROM tireless.history_rollup r), NULL) m
         WHERE tireless.is_terminal(m.to_state) AND m.at >= now() - interval '8 days') AS h
 GROUP BY h.hour, h.lane, h.outcome;
COMMENT ON VIEW tireless.finished_jobs_by_hour IS
    'Jobs finished per hour, lane and outcome over the last 8 days: the rolled-up counts and the history written '
    'since the last tireless.roll_up_history().';
REVOKE ALL ON tireless.finished_jobs_by_hour FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.finished_jobs_by_hour TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE VIEW tireless.lane_summary AS
SELECT coalesce(s.lane, q.lane) AS lane,
       coalesce(s.pending, 0) AS pending, coalesce(s.ready, 0) AS ready,
       coalesce(s.claimed, 0) AS claimed, coalesce(s.past_lease, 0) AS past_lease,
       coalesce(q.delivered, 0) AS delivered, coalesce(q.failed, 0) AS failed,
       coalesce(q.cancelled, 0) AS cancelled,
       extract(epoch FROM s.oldest_pending_age)::float8 AS oldest_pending_seconds,
       coalesce(s.breaker, 'closed') AS breaker, coalesce(s.paused, false) AS paused,
       s.capacity, s.tripped_until,
       coalesce(s.consecutive_failures, 0) AS consecutive_failures,
       b.runs_today,
       coalesce(b.agent_seconds_today, 0)::float8 AS agent_seconds_today,
       b.runs_per_day, b.agent_seconds_per_day, b.budget_resets_at,
       s.max_run, s.stall_after,
       coalesce(s.waiting, 0) AS waiting,
       s.egress,
       s.memory_limit, s.cpu_limit, s.pids_limit, s.disk_limit
  FROM tireless.lane_status s
  FULL JOIN (SELECT st.lane,
                    sum(st.jobs) FILTER (WHERE st.state = 'delivered')::bigint AS delivered,
                    sum(st.jobs) FILTER (WHERE st.state = 'failed')::bigint AS failed,
                    sum(st.jobs) FILTER (WHERE st.state = 'cancelled')::bigint AS cancelled
               FROM tireless.queue_stats st GROUP BY st.lane) q ON q.lane = s.lane
  LEFT JOIN tireless.lane_budget b ON b.lane = coalesce(s.lane, q.lane);
COMMENT ON VIEW tireless.lane_summary IS
    'One row per lane that has live jobs, settings or jobs finished in the last 24 hours: lane_status (live jobs, '
    'the oldest pending job''s age in seconds, breaker, its failures in a row, paused, capacity) beside '
    'queue_stats''s delivered, failed and cancelled counts, and today''s spend (UTC: runs_today, counted under a budget of runs, '
    'agent_seconds_today) against the lane''s daily budgets, with budget_resets_at (the next midnight UTC) while a '
    'budget is spent, its time limits (max_run, stall_after), and its pending jobs waiting for a dependency '
    '(waiting), its egress allowlist (egress; null: the host''s network, empty: no egress), and its limits on one '
    'attempt (memory_limit, cpu_limit, pids_limit, disk_limit; null: none). What `tireless '
    'status`, `tireless lane show` and the dashboard''s overview show.';
REVOKE ALL ON tireless.lane_summary FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.lane_summary TO tireless_runner, tireless_poller, tireless_admin;

-- What psql users, `tireless show` and the dashboard read of an attempt.
CREATE OR REPLACE VIEW tireless.job_progress AS
SELECT a.job_id, a.attempt, a.started_at, a.progress_at, a.step, a.stop, a.stop_note,
       a.report IS NOT NULL AS reported
  FROM tireless.job_attempt a;
COMMENT ON VIEW tireless.job_progress IS
    'Each job''s newest attempt as the watchdog sees it: when it was claimed, its last progress and step, the '
    'watchdog''s stop and note, and whether the agent attached a report. No row before the attempt''s first '
    'heartbeat under a limit, progress report or report.';
REVOKE ALL ON tireless.job_progress FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.job_progress TO tireless_runner, tireless_poller, tireless_admin;

-- What psql users, `tireless show`, `tireless jobs --json` and the dashboard read of a delivery.
CREATE OR REPLACE VIEW tireless.deliveries AS
SELECT d.job_id, d.forge, d.owner, d.repo, d.number, d.delivered_at, d.branch IS NOT NULL AS changed,
       d.branch, d.head, d.base_branch, d.base, d.draft, d.pull_number, d.pull_url, d.pull_known_at,
       w.queued_at AS pull_queued_at, w.written_at AS pull_written_at, coalesce(w.failures, 0) AS pull_failures,
       w.last_error AS pull_error, w.last_error_at AS pull_error_at
  FROM tireless.delivery d
  LEFT JOIN tireless.forge_write w ON w.kind = 'pull' AND w.job_id = d.job_id;
COMMENT ON VIEW tireless.deliveries IS
    'What each job delivered through tireless.deliver: changed (false: delivered with no change), the branch and '
    'head pushed, the base branch and commit, draft, the pull request once the mirror recorded it (number, URL, '
    'when), and the mirror''s write of it: when it was queued and written (pull_written_at null and '
    'pull_queued_at null: the repository was not tracked, nothing is mirrored), its failures in a row and last error.';
REVOKE ALL ON tireless.deliveries FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.deliveries TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE VIEW tireless.checkpoints AS
SELECT c.job_id, c.attempt, c.ref, c.commit, c.recorded_at FROM tireless.checkpoint c;
COMMENT ON VIEW tireless.checkpoints IS
    'Each job''s last checkpoint (tireless.record_checkpoint): the attempt that made it, the ref and commit pushed, '
    'and when; a later attempt of the job starts from it.';
REVOKE ALL ON tireless.checkpoints FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.checkpoints TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.duration_bin(seconds float8) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ceil(4 * ln(greatest(seconds, 0.01)) / ln(2))::smallint;
COMMENT ON FUNCTION tireless.duration_bin(float8) IS
    'The histogram bin of a duration in seconds: bins grow by a factor of 2^(1/4) (19%); bin b holds the '
    'durations up to tireless.bin_bound(b). Everything under 10 ms is in the first bin.';
REVOKE ALL ON FUNCTION tireless.duration_bin(double precision) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.duration_bin(double precision) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.bin_bound(bin smallint) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN make_interval(secs => round(power(2, bin / 4.0)::numeric, 3)::float8);
COMMENT ON FUNCTION tireless.bin_bound(smallint) IS 'The longest duration of a histogram bin (see tireless.duration_bin).';
REVOKE ALL ON FUNCTION tireless.bin_bound(smallint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.bin_bound(smallint) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.activity_grain(span interval) RETURNS interval
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
REVOKE ALL ON FUNCTION tireless.activity_grain(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.activity_grain(interval) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.queue_activity(span interval)
    RETURNS TABLE (bucket timestamptz, lane text, pending bigint, claimed bigint,
                   delivered bigint, failed bigint, cancelled bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH frame AS (
        SELECT tireless.activity_grain(queue_activity.span) AS grain,
               date_bin(tireless.activity_grain(queue_activity.span), now(),
                        timestamptz '2000-01-01 00:00:00+00') AS last
    ), counted AS (
        SELECT a.bucket, a.lane, sum(a.pending_delta) AS pending_delta, sum(a.claimed_delta) AS claimed_delta,
               sum(a.delivered) AS delivered, sum(a.failed) AS failed, sum(a.cancelled) AS cancelled
          FROM (SELECT a.bucket, a.lane, a.pending_delta, a.claimed_delta, a.delivered, a.failed, a.cancelled
                  FROM tireless.activity_count a
                  JOIN frame f ON a.grain = f.grain AND a.bucket > f.last - queue_activity.span
                UNION ALL
                SELECT date_bin(f.grain, m.at, timestamptz '2000-01-01 00:00:00+00'), m.lane,
                       (m.to_state = 'pending')::int - coalesce(m.from_state = 'pending', false)::int,
                       (m.to_state = 'claimed')::int - coalesce(m.from_state = 'claimed', false)::int,
                       (m.to_state = 'delivered')::int, (m.to_state = 'failed')::int, (m.to_state = 'cancelled')::int
                  FROM frame f
                 CROSS JOIN tireless.history_moves((SELECT r.counted_to FROM tireless.history_rollup r), NULL) m
                 WHERE date_bin(f.grain, m.at, timestamptz '2000-01-01 00:00:00+00') > f.last - queue_activity.span) AS a
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
    'Reads the folded buckets, the history written since the last tireless.roll_up_history() and the live jobs; '
    'writes nothing (a hot standby answers it). '
    'A job re-routed to another lane while pending counts in the lane it had when the rollup read its event.';
REVOKE ALL ON FUNCTION tireless.queue_activity(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.queue_activity(interval) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.job_durations(span interval)
    RETURNS TABLE (lane text, kind text, measure text, jobs bigint, p50 interval, p95 interval)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH frame AS (
        SELECT tireless.activity_grain(job_durations.span) AS grain,
               date_bin(tireless.activity_grain(job_durations.span), now(),
                        timestamptz '2000-01-01 00:00:00+00') AS last
    ), bins AS (
        SELECT d.lane, d.kind, d.measure, d.bin, sum(d.jobs) AS jobs
          FROM (SELECT d.lane, d.kind, d.measure, d.bin, d.jobs
                  FROM tireless.duration_count d
                  JOIN frame f ON d.grain = f.grain AND d.bucket > f.last - job_durations.span
                UNION ALL
                SELECT m.lane, m.kind, x.measure, tireless.duration_bin(x.seconds), 1
                  FROM frame f
                 CROSS JOIN tireless.history_moves((SELECT r.counted_to FROM tireless.history_rollup r), NULL) m
                 CROSS JOIN LATERAL (VALUES ('wait', m.waited), ('run', m.ran)) AS x (measure, seconds)
                 WHERE x.seconds IS NOT NULL
                   AND date_bin(f.grain, m.at, timestamptz '2000-01-01 00:00:00+00') > f.last - job_durations.span) AS d
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
    '(within 19%). Reads the folded histograms and the history written since the last tireless.roll_up_history(); '
    'writes nothing.';
REVOKE ALL ON FUNCTION tireless.job_durations(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_durations(interval) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.failure_groups(span interval)
    RETURNS TABLE (error text, jobs bigint, latest bigint, lanes text[])
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH frame AS (
        SELECT tireless.activity_grain(failure_groups.span) AS grain,
               date_bin(tireless.activity_grain(failure_groups.span), now(),
                        timestamptz '2000-01-01 00:00:00+00') AS last
    )
    SELECT f.error, sum(f.jobs)::bigint, max(f.latest), array_agg(DISTINCT f.lane ORDER BY f.lane)
      FROM (SELECT c.error, c.jobs, c.latest, c.lane
              FROM tireless.failure_count c
              JOIN frame ON c.grain = frame.grain AND c.bucket > frame.last - failure_groups.span
            UNION ALL
            SELECT m.error, 1, m.job_id, m.lane
              FROM frame CROSS JOIN tireless.history_moves((SELECT r.counted_to FROM tireless.history_rollup r), NULL) m
             WHERE m.to_state = 'failed'
               AND date_bin(frame.grain, m.at, timestamptz '2000-01-01 00:00:00+00') > frame.last - failure_groups.span) AS f
     GROUP BY f.error
     ORDER BY sum(f.jobs) DESC, f.error;
END;
COMMENT ON FUNCTION tireless.failure_groups(interval) IS
    'The failures of the last span (at most 8 days) grouped by their error (the cause the note that failed the job gives, '
    'tireless.note_cause): how many jobs, the newest, the lanes; most frequent first. Reads the folded counts and the history written '
    'since the last tireless.roll_up_history(); writes nothing.';
REVOKE ALL ON FUNCTION tireless.failure_groups(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.failure_groups(interval) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE VIEW tireless.workers AS
WITH seen AS (
    SELECT s.worker, l.lane, s.first_seen, s.last_seen
      FROM tireless.worker_seen s LEFT JOIN LATERAL unnest(s.lanes) AS l (lane) ON true
    UNION ALL
    SELECT m.worker, CASE WHEN m.to_state = 'claimed' THEN m.lane END, m.at, m.at
      FROM tireless.history_moves((SELECT r.counted_to FROM tireless.history_rollup r), NULL) m
     WHERE m.worker IS NOT NULL
    UNION ALL
    -- A worker's own record: it is seen from its start to its last beat, serving its lanes.
    SELECT r.worker, l.lane, r.started_at, greatest(r.beat_at, r.stopped_at)
      FROM tireless.worker_state r LEFT JOIN LATERAL unnest(r.lanes) AS l (lane) ON true
), recent AS (
    SELECT s.worker, coalesce(array_agg(DISTINCT s.lane ORDER BY s.lane) FILTER (WHERE s.lane IS NOT NULL), '{}') AS lanes,
           min(s.first_seen) AS first_seen, max(s.last_seen) AS last_seen
      FROM seen s
     GROUP BY s.worker
    HAVING max(s.last_seen) >= now() - interval '24 hours'
), held AS (
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
       CASE WHEN h.past_lease THEN 'stopped heartbeating' WHEN h.job_id IS NOT NULL THEN 'working' ELSE 'idle' END AS status,
       CASE WHEN r.stopped_at IS NOT NULL AND h.job_id IS NULL THEN 'stopped'
            WHEN h.past_lease OR (r.stopped_at IS NULL AND r.expires_at < now()) THEN 'lost'
            WHEN h.job_id IS NOT NULL THEN 'live'
            WHEN r.worker IS NOT NULL AND r.stopped_at IS NULL THEN 'idle'
            ELSE 'unknown' END AS presence,
       r.started_at, r.beat_at, r.expires_at AS beat_expires_at, r.stopped_at, r.stopped_how
  FROM recent w
  FULL JOIN holding h ON h.worker = w.worker
  LEFT JOIN tireless.worker_state r ON r.worker = coalesce(w.worker, h.worker);
COMMENT ON VIEW tireless.workers IS
    'Every worker named by the history or by its own record in the last 24 hours, or holding a job now: the lanes it '
    'serves and claimed from, the job it holds (the newest of jobs_held) since when, its last heartbeat (null until '
    'the first after the claim), when its lease ends, and its status: working, stopped heartbeating (a lease it '
    'holds ran out) or idle. Then its presence, from its own record (tireless.worker_state: tireless.worker_started, '
    'worker_beat, worker_stopped): live (it holds a job), idle (it beats and holds none), stopped (it said so, '
    'stopped_how), lost (its beat lapsed, or a lease it holds ran out, with no word of stopping: killed, or its '
    'host gone) or unknown (no record: a runner older than the record); when it started, its last beat and until '
    'when that holds, when and how it stopped. Reads the rolled-up tireless.worker_seen and the history written '
    'since the last tireless.roll_up_history().';
REVOKE ALL ON tireless.workers FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.workers TO tireless_runner, tireless_poller, tireless_admin;

-- What each worker ended: the jobs finished in the span, each by the worker of its last event.
CREATE OR REPLACE FUNCTION tireless.worker_outcomes(span interval)
    RETURNS TABLE (worker text, delivered bigint, failed bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.worker, count(*) FILTER (WHERE j.state = 'delivered'), count(*) FILTER (WHERE j.state = 'failed')
      FROM tireless.job j
      CROSS JOIN LATERAL (SELECT l.worker FROM tireless.job_event l WHERE l.job_id = j.id ORDER BY l.id DESC LIMIT 1) AS e
     WHERE j.state IN ('delivered', 'failed') AND j.updated_at >= now() - worker_outcomes.span AND e.worker IS NOT NULL
     GROUP BY e.worker;
END;
COMMENT ON FUNCTION tireless.worker_outcomes(interval) IS
    'Per worker, the jobs it delivered and the jobs it failed (its last attempt ended them failed, or its lease ran '
    'out on their last attempt) among the jobs that ended in the last span: reads those jobs and the last event of '
    'each, never the whole history. The workers page shows it.';
REVOKE ALL ON FUNCTION tireless.worker_outcomes(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.worker_outcomes(interval) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.issue_runs(job_id bigint)
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
    SELECT j.id, j.state::text, j.kind::text, j.created_at, j.note
      FROM tireless.job me
      JOIN (SELECT m.* FROM tireless.history_moves((SELECT r.counted_to FROM tireless.history_rollup r), NULL) m
             WHERE m.from_state IS NULL) AS t
        ON (t.forge, t.owner, t.repo, t.number) = (me.forge, me.owner, me.repo, me.number)
      JOIN tireless.job j ON j.id = t.job_id
     WHERE me.id = issue_runs.job_id
    UNION
    SELECT me.id, me.state::text, me.kind::text, me.created_at, me.note FROM tireless.job me WHERE me.id = issue_runs.job_id
     ORDER BY 1;
END;
COMMENT ON FUNCTION tireless.issue_runs(bigint) IS
    'Every job the issue of job_id has had (a re-run, or a new request after one ended), in order: those the rollup '
    'folded into tireless.issue_run and those created since, and job_id itself; empty for an unknown job.';
REVOKE ALL ON FUNCTION tireless.issue_runs(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.issue_runs(bigint) TO tireless_runner, tireless_poller, tireless_admin;

-- Each attempt of a job from its history: the claim, and the event that ended it.
CREATE OR REPLACE FUNCTION tireless.job_attempts(job_id bigint)
    RETURNS TABLE (attempt integer, worker text, started_at timestamptz, ended_at timestamptz, ran interval,
                   ended_as text, cause text, output text, pull_number integer, pull_url text, exit_status integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT c.attempt, c.worker, c.at, e.at, e.at - c.at, e.to_state::text, tireless.note_cause(e.note), e.note,
           CASE WHEN e.to_state = 'delivered' THEN d.pull_number END,
           CASE WHEN e.to_state = 'delivered' THEN d.pull_url END, x.exit_status
      FROM tireless.job_event c
      LEFT JOIN LATERAL (SELECT n.at, n.to_state, n.note FROM tireless.job_event n
                          WHERE n.job_id = c.job_id AND n.id > c.id
                          ORDER BY n.id LIMIT 1) AS e ON true
      LEFT JOIN tireless.delivery d ON d.job_id = c.job_id
      LEFT JOIN tireless.attempt_exit x ON (x.job_id, x.attempt) = (c.job_id, c.attempt)
     WHERE c.job_id = job_attempts.job_id AND c.to_state = 'claimed'
     ORDER BY c.id;
END;
COMMENT ON FUNCTION tireless.job_attempts(bigint) IS
    'A job''s attempts in order, from its history: who claimed each and when, when it ended and how long it ran '
    '(null while it runs), the state it ended in (pending: released for a retry, given back or swept), its stop '
    'reason (the cause its end note gives, tireless.note_cause), that note whole (a failed COMMAND''s: the tail of '
    'its output, masked and bounded by the runner), the pull request of the attempt that delivered, and COMMAND''s '
    'exit status as the runner recorded it (tireless.record_exit; null: not recorded). Empty for an unknown job.';
REVOKE ALL ON FUNCTION tireless.job_attempts(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_attempts(bigint) TO tireless_runner, tireless_poller, tireless_admin;

-- What the overview flags: a part of the fleet that missed its rounds, seen in the store alone.
CREATE OR REPLACE FUNCTION tireless.missed_rounds(grace interval DEFAULT '1 minute')
    RETURNS TABLE (part text, due_since timestamptz, items bigint, detail text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT 'poller', min(d.due), count(*), format('%s repositories due to be polled and not polled', count(*))
      FROM (SELECT greatest(r.next_poll_at, r.backoff_until, r.forge_limited_until) AS due
              FROM tireless.repo_status r WHERE r.registered) AS d
     WHERE d.due < now() - missed_rounds.grace
    HAVING count(*) > 0
    UNION ALL
    SELECT 'sweeper', min(j.claim_expires_at), count(*), format('%s claims past their lease and not swept', count(*))
      FROM tireless.job j
     WHERE j.state = 'claimed' AND j.claim_expires_at < now() - missed_rounds.grace
    HAVING count(*) > 0
    UNION ALL
    SELECT 'workers', min(j.available_at), count(*), format('%s ready jobs not claimed', count(*))
      FROM tireless.job j
      LEFT JOIN tireless.lane l ON l.name = j.lane
     WHERE j.state = 'pending' AND j.waiting_on IS NULL AND j.available_at < now() - missed_rounds.grace
       AND NOT coalesce(l.paused, false) AND coalesce(l.tripped_until < now(), true)
    HAVING count(*) > 0;
END;
COMMENT ON FUNCTION tireless.missed_rounds(interval) IS
    'The parts of the fleet that missed their rounds by more than grace, one row each: the poller (tracked '
    'repositories of a registered forge past their next poll, backoff and rate limit), the sweeper (claims past '
    'their lease), the workers (ready jobs of a lane neither paused nor tripped, left unclaimed); since when the '
    'oldest was due, how many, and a sentence. No row: every part kept its rounds. The overview shows them.';
REVOKE ALL ON FUNCTION tireless.missed_rounds(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.missed_rounds(interval) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.worker_ran(job_id bigint, worker text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT EXISTS (SELECT FROM tireless.job_event e WHERE e.job_id = worker_ran.job_id AND e.worker = worker_ran.worker);
END;
COMMENT ON FUNCTION tireless.worker_ran(bigint, text) IS
    'True when the history of job_id names worker (it claimed, finished or gave back the job); reads that job''s events only.';
REVOKE ALL ON FUNCTION tireless.worker_ran(bigint, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.worker_ran(bigint, text) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.replication_warning() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    -- A logical subscriber or a base backup streams too, but is no standby a failover promotes.
    WITH standbys AS (
        SELECT count(*) AS streaming, bool_or(r.sync_state IN ('sync', 'quorum')) AS one_synchronous
          FROM pg_stat_replication r
         WHERE r.state IS DISTINCT FROM 'backup'
           AND r.pid NOT IN (SELECT s.active_pid FROM pg_replication_slots s
                              WHERE s.slot_type = 'logical' AND s.active_pid IS NOT NULL)
    )
    SELECT format('this primary streams to %s standby(s) without synchronous commit (%s): a failover to one '
                  'of them can lose finishes the workers were told had committed, and run those jobs again',
                  s.streaming,
                  CASE WHEN current_setting('synchronous_standby_names') = '' THEN 'synchronous_standby_names is empty'
                       WHEN current_setting('synchronous_commit') IN ('off', 'local')
                           THEN format('synchronous_commit is %s', current_setting('synchronous_commit'))
                       ELSE format('none is synchronous yet, synchronous_standby_names is %L',
                                   current_setting('synchronous_standby_names')) END)
      FROM standbys s
     WHERE NOT pg_is_in_recovery() AND s.streaming > 0
       AND (current_setting('synchronous_standby_names') = ''
            OR current_setting('synchronous_commit') IN ('off', 'local')
            OR s.one_synchronous IS FALSE);
END;
COMMENT ON FUNCTION tireless.replication_warning() IS
    'Why a failover could lose acknowledged work, or null: on a primary with a streaming standby, when '
    'synchronous_standby_names is empty, synchronous_commit (as this session has it) is off or local, or no standby '
    'is sync or quorum in pg_stat_replication (checked only when the owner may read its sync_state: '
    'pg_read_all_stats). Null on a standby and on a primary without one; tireless status and the dashboard show it.';
REVOKE ALL ON FUNCTION tireless.replication_warning() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.replication_warning() TO tireless_runner, tireless_poller, tireless_admin;
