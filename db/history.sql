-- The history: one append-only event per change of state, and its roll-up for the dashboard.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.record_job_event() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    -- OLD is null for an INSERT: the creation event has no from_state.
    -- clock_timestamp(), not now(): written under the row lock, so one job's events are in time order
    -- even when a transaction that started earlier changes the job later.
    INSERT INTO tireless.job_event (job_id, at, from_state, to_state, worker, attempt, note, login)
    VALUES (NEW.id, clock_timestamp(), OLD.state, NEW.state, coalesce(NEW.claimed_by, OLD.claimed_by), NEW.attempts, NEW.note,
            session_user);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.record_job_event() IS
    'Trigger: appends the change of state of a job to tireless.job_event, with the login that made it.';
REVOKE ALL ON FUNCTION tireless.record_job_event() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER job_created_event
    AFTER INSERT ON tireless.job
    FOR EACH ROW EXECUTE FUNCTION tireless.record_job_event();
COMMENT ON TRIGGER job_created_event ON tireless.job IS 'History: every job starts with an event.';

CREATE OR REPLACE TRIGGER job_state_changed_event
    AFTER UPDATE OF state ON tireless.job
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION tireless.record_job_event();
COMMENT ON TRIGGER job_state_changed_event ON tireless.job IS 'History: every change of state is an event.';

-- History is append-only; prune alone deletes it, with the jobs it belongs to. prune marks its own
-- transaction (a transaction-local setting it clears again before it returns); no tireless role
-- holds DELETE on job_event or job, so only prune, running as the schema's owner, gets this far.
CREATE OR REPLACE FUNCTION tireless.refuse_history_rewrite() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('tireless.pruning', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'tireless.job_event is append-only: % refused', TG_OP
        USING ERRCODE = 'TL007', HINT = 'History leaves only with its job, through tireless.prune.';
END;
$$;
COMMENT ON FUNCTION tireless.refuse_history_rewrite() IS
    'Trigger: refuses UPDATE, DELETE and TRUNCATE of tireless.job_event (SQLSTATE TL007), except the DELETEs of '
    'tireless.prune.';
REVOKE ALL ON FUNCTION tireless.refuse_history_rewrite() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER history_is_append_only
    BEFORE UPDATE OR DELETE ON tireless.job_event
    FOR EACH ROW EXECUTE FUNCTION tireless.refuse_history_rewrite();
COMMENT ON TRIGGER history_is_append_only ON tireless.job_event IS 'History is never rewritten.';

CREATE OR REPLACE TRIGGER history_is_never_truncated
    BEFORE TRUNCATE ON tireless.job_event
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.refuse_history_rewrite();
COMMENT ON TRIGGER history_is_never_truncated ON tireless.job_event IS 'History is never emptied.';

CREATE OR REPLACE FUNCTION tireless.job_history(job_id bigint)
    RETURNS TABLE (event_id bigint, at timestamptz, from_state text, to_state text, worker text,
                   attempt integer, note text, lasted interval)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.id, e.at, e.from_state::text, e.to_state::text, e.worker, e.attempt, e.note,
           lead(e.at) OVER (ORDER BY e.id) - e.at
      FROM tireless.job_event e
     WHERE e.job_id = job_history.job_id
     ORDER BY e.id;
END;
COMMENT ON FUNCTION tireless.job_history(bigint) IS
    'A job''s timeline: its events in order, each with how long the job stayed in the state it entered '
    '(lasted; null for the state it is in now). Empty for an unknown job.';
REVOKE ALL ON FUNCTION tireless.job_history(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_history(bigint) TO tireless_runner, tireless_poller, tireless_admin;

-- roll_up_history also folds the same range of events for the dashboard (fold_history), under its
-- table lock.
CREATE OR REPLACE FUNCTION tireless.roll_up_history() RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    state     tireless.history_rollup;
    newest    bigint;
    mine      xid8;
    oldest    xid8;
    target    bigint;
    counted   bigint;
BEGIN
    -- A hot standby or a read-only transaction cannot write: the roll-up is left to a writer (the
    -- sweeper, the poller), and the readers add the history not rolled up yet themselves.
    IF pg_catalog.current_setting('transaction_read_only') = 'on' THEN
        RETURN 0;
    END IF;
    -- One rollup at a time; a second caller leaves it to the first. A table lock, not a row lock:
    -- it takes no transaction id, so the one taken below is drawn after newest is read. EXCLUSIVE conflicts with itself, not with the ACCESS SHARE of a reader (the most a
    -- login other than the owner may take on the table), so no one else can hold it.
    BEGIN
        LOCK TABLE tireless.history_rollup IN EXCLUSIVE MODE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        RETURN 0;
    END;
    SELECT r.* INTO state FROM tireless.history_rollup r;
    -- A caller's transaction that already has its transaction id may be older than a transaction
    -- that drew an event id below newest: its id proves nothing, so it counts nothing.
    IF pg_catalog.pg_current_xact_id_if_assigned() IS NOT NULL THEN
        RETURN 0;
    END IF;
    -- Every event id up to newest was drawn by a transaction that already had its transaction id
    -- (the event is written after its job's row), so by one older than the id this transaction
    -- takes next (mine). Not the snapshot's xmax: a transaction whose id is at or past xmax (none
    -- newer has ended yet) is running but in no snapshot's xmin, and its event would be skipped.
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END INTO newest FROM tireless.job_event_id_seq s;
    mine := pg_catalog.pg_current_xact_id();
    -- A new statement, a new snapshot: its xmin counts this transaction's own id, so it equals mine
    -- exactly when every transaction older than mine has ended.
    oldest := pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot());
    IF oldest >= mine THEN
        -- Every transaction that could hold an event up to newest has ended: count them all now.
        target := newest;
        state.waiting_to := NULL;
        state.waiting_until := NULL;
    ELSIF state.waiting_to IS NOT NULL AND oldest >= state.waiting_until THEN
        target := state.waiting_to;
        state.waiting_to := newest;
        state.waiting_until := mine;
    ELSE
        -- A transaction older than the stop is still open: count nothing yet, keep the stop.
        target := state.counted_to;
        IF state.waiting_to IS NULL THEN
            state.waiting_to := newest;
            state.waiting_until := mine;
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
    'transaction still open is counted by a later call: it moves up to an event id only once every transaction older '
    'than its own (whose id it takes after reading the newest event id) has ended. Counts nothing and returns 0 in a '
    'transaction that already had its transaction id. Returns 0 at once while another call is rolling up (it holds the '
    'table lock of tireless.history_rollup, which only the schema''s owner can take), and does nothing and returns 0 in a '
    'read-only transaction or on a hot standby. Called by the sweeper and the poller, never by a read.';
REVOKE ALL ON FUNCTION tireless.roll_up_history() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.roll_up_history() TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.history_top() RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END FROM tireless.job_event_id_seq s;
$$;
COMMENT ON FUNCTION tireless.history_top() IS
    'The newest job_event id drawn so far (0 before the first), read from the sequence without scanning the history.';
REVOKE ALL ON FUNCTION tireless.history_top() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.keep_history_with_its_job() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    orphaned bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT e.job_id INTO orphaned FROM gone_jobs g JOIN tireless.job_event e ON e.job_id = g.id LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
    END IF;
    RAISE EXCEPTION 'every event belongs to a job: % of tireless.job refused%', TG_OP,
        coalesce(format(' (job %s still has its history)', orphaned), '')
        USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'history_belongs_to_a_job',
              SCHEMA = 'tireless', TABLE = 'job',
              HINT = 'A job leaves only with its history, through tireless.prune.';
END;
$$;
COMMENT ON FUNCTION tireless.keep_history_with_its_job() IS
    'Trigger: refuses a DELETE of jobs whose history remains, and any TRUNCATE of tireless.job (23503, '
    'history_belongs_to_a_job): every event belongs to a job.';
REVOKE ALL ON FUNCTION tireless.keep_history_with_its_job() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER history_belongs_to_a_job
    AFTER DELETE ON tireless.job
    REFERENCING OLD TABLE AS gone_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.keep_history_with_its_job();
COMMENT ON TRIGGER history_belongs_to_a_job ON tireless.job IS
    'Every event belongs to a job: a job leaves only once its history is gone (tireless.prune).';

-- What the roll-up folds and what a read adds of the history not rolled up yet: one definition.
CREATE OR REPLACE FUNCTION tireless.history_moves(after_id bigint, upto_id bigint)
    RETURNS TABLE (at timestamptz, worker text, from_state tireless.job_state, to_state tireless.job_state, error text,
                   job_id bigint, forge text, owner text, repo text, number integer, lane text, kind tireless.job_kind,
                   waited float8, ran float8)
    LANGUAGE sql STABLE SECURITY DEFINER
    ROWS 100  -- the history since the last roll-up: a sweeper's pass apart, not the default 1000
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.at, e.worker, e.from_state, e.to_state, tireless.note_cause(e.note), j.id, j.forge, j.owner,
           j.repo, j.number, j.lane, j.kind,
           CASE WHEN e.to_state = 'claimed' AND e.attempt = 1
                THEN extract(epoch FROM e.at - j.created_at)::float8 END,
           extract(epoch FROM e.at - claim.at)::float8
      FROM tireless.job_event e
      JOIN tireless.job j ON j.id = e.job_id
      -- A finish from claimed: the event before it is the claim (its job's key, the primary key).
      LEFT JOIN LATERAL (SELECT p.at FROM tireless.job_event p
                          WHERE e.from_state = 'claimed' AND tireless.is_terminal(e.to_state)
                            AND p.job_id = e.job_id AND p.id < e.id
                          ORDER BY p.id DESC LIMIT 1) AS claim ON true
     WHERE e.id > history_moves.after_id AND (history_moves.upto_id IS NULL OR e.id <= history_moves.upto_id);
END;
COMMENT ON FUNCTION tireless.history_moves(bigint, bigint) IS
    'The events with after_id < id <= upto_id (null: no upper bound) as the roll-up folds them: each with its job''s '
    'issue, lane and kind, the cause its note gives (error: tireless.note_cause), the wait (created to first claim) of a first claim '
    'and the run (claim to finish) of a finish. tireless.fold_history folds them; the dashboard''s reads add those '
    'after tireless.history_rollup.counted_to, the history not rolled up yet.';
REVOKE ALL ON FUNCTION tireless.history_moves(bigint, bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.history_moves(bigint, bigint) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.fold_history(after_id bigint, upto_id bigint) RETURNS void
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    WITH moved AS (
        SELECT m.* FROM tireless.history_moves(fold_history.after_id, fold_history.upto_id) m
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
REVOKE ALL ON FUNCTION tireless.fold_history(bigint, bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
