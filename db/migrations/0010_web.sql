-- The dashboard's reads, open to every role: jobs without their claim token, a job's timeline, and finished jobs counted from history by an incremental rollup.
-- depends: 0009_hot_path

CREATE VIEW tireless.job_list AS
SELECT j.id, j.forge, j.owner, j.repo, j.number, j.title, j.kind, j.lane, j.state, j.parent_id,
       j.claimed_by, j.claim_expires_at, j.attempts, j.available_at, j.note, j.created_at, j.updated_at,
       (j.state = 'claimed' AND j.claim_expires_at < now()) AS past_lease
  FROM tireless.job j;
COMMENT ON VIEW tireless.job_list IS
    'Every job as an operator sees it, without its claim token (a fencing secret of the holder); past_lease: '
    'claimed and its lease has run out. Readable by every role.';

CREATE FUNCTION tireless.job_history(job_id bigint)
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

-- Finished jobs as counters: the rollup adds the terminal events it has not counted yet, so a scrape
-- reads only the history written since the last one, and the claim and finish paths write nothing more.
-- The history's key is (job_id, id) (0009): a range of ids needs an index of its own. A BRIN index
-- costs the hot path nothing: an event lands in the table's last, unsummarised block range, where
-- an insert writes no index entry; VACUUM summarises each range once it is full.
CREATE INDEX job_events_by_id ON tireless.job_event USING brin (id);
COMMENT ON INDEX tireless.job_events_by_id IS
    'roll_up_history: the events written since the last rollup, a range of ids (BRIN: nothing to write per event).';
CREATE TABLE tireless.finished_count (
    lane    text               NOT NULL,
    outcome tireless.job_state NOT NULL,
    jobs    bigint             NOT NULL,
    PRIMARY KEY (lane, outcome),
    CONSTRAINT finished_count_is_terminal CHECK (tireless.is_terminal(outcome))
);
COMMENT ON TABLE tireless.finished_count IS
    'How many jobs of each lane ended in each terminal state, as far as the rollup has counted. Private: read tireless.finished_jobs.';
COMMENT ON CONSTRAINT finished_count_is_terminal ON tireless.finished_count IS 'Only terminal states are outcomes.';

CREATE TABLE tireless.finished_hourly (
    hour    timestamptz        NOT NULL,
    lane    text               NOT NULL,
    outcome tireless.job_state NOT NULL,
    jobs    bigint             NOT NULL,
    PRIMARY KEY (hour, lane, outcome),
    CONSTRAINT finished_hourly_is_terminal CHECK (tireless.is_terminal(outcome))
);
COMMENT ON TABLE tireless.finished_hourly IS
    'Finished jobs per hour (the hour of the finishing event), lane and outcome; the rollup keeps 8 days. '
    'Private: read tireless.finished_jobs_by_hour.';
COMMENT ON CONSTRAINT finished_hourly_is_terminal ON tireless.finished_hourly IS 'Only terminal states are outcomes.';

CREATE TABLE tireless.history_rollup (
    singleton     boolean PRIMARY KEY DEFAULT true,
    counted_to    bigint  NOT NULL DEFAULT 0,
    waiting_to    bigint,
    waiting_until xid8,
    CONSTRAINT history_rollup_is_one_row CHECK (singleton),
    CONSTRAINT waiting_is_whole CHECK ((waiting_to IS NULL) = (waiting_until IS NULL))
);
COMMENT ON TABLE tireless.history_rollup IS
    'Where the rollup stands: every job_event with id <= counted_to is counted. waiting_to is the next stop, '
    'safe once every transaction older than waiting_until has ended (none of them can still add an event at or below it).';
COMMENT ON CONSTRAINT history_rollup_is_one_row ON tireless.history_rollup IS 'The rollup has one position.';
COMMENT ON CONSTRAINT waiting_is_whole ON tireless.history_rollup IS 'A waiting stop has both its id and its transaction horizon.';
INSERT INTO tireless.history_rollup DEFAULT VALUES;

CREATE FUNCTION tireless.roll_up_history() RETURNS bigint
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
    -- One rollup at a time; a second caller leaves it to the first. An advisory lock takes no
    -- transaction id, so the horizons below are not held back by this transaction itself.
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('tireless.roll_up_history')) THEN
        RETURN 0;
    END IF;
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

    DELETE FROM tireless.finished_hourly h WHERE h.hour < now() - interval '8 days';
    UPDATE tireless.history_rollup r
       SET counted_to = greatest(state.counted_to, target),
           waiting_to = state.waiting_to, waiting_until = state.waiting_until;
    RETURN counted;
END;
$$;
COMMENT ON FUNCTION tireless.roll_up_history() IS
    'Counts the finished jobs of the history written since the last call into tireless.finished_jobs and '
    'tireless.finished_jobs_by_hour; returns how many it added. Reads only new events; an event of a '
    'transaction still open is counted by a later call. Returns 0 at once while another call is rolling up.';

CREATE VIEW tireless.finished_jobs AS
SELECT c.lane, c.outcome::text AS outcome, c.jobs FROM tireless.finished_count c;
COMMENT ON VIEW tireless.finished_jobs IS
    'Jobs finished per lane and outcome since the store began (a counter), as of the last tireless.roll_up_history().';

CREATE VIEW tireless.finished_jobs_by_hour AS
SELECT h.hour, h.lane, h.outcome::text AS outcome, h.jobs FROM tireless.finished_hourly h;
COMMENT ON VIEW tireless.finished_jobs_by_hour IS
    'Jobs finished per hour, lane and outcome over the last 8 days, as of the last tireless.roll_up_history().';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.job_history(bigint), tireless.roll_up_history()
    TO tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.job_list, tireless.finished_jobs, tireless.finished_jobs_by_hour
    TO tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.finished_count, tireless.finished_hourly, tireless.history_rollup TO tireless_admin;
