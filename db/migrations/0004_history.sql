-- Job history: an append-only tireless.job_event row for every change of state, written by one trigger.
-- depends: 0003_policy

CREATE TABLE tireless.job_event (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     bigint             NOT NULL REFERENCES tireless.job (id),
    at         timestamptz        NOT NULL DEFAULT now(),
    from_state tireless.job_state,
    to_state   tireless.job_state NOT NULL,
    worker     text,
    attempt    integer            NOT NULL,
    note       text,
    CONSTRAINT event_changes_state CHECK (from_state IS DISTINCT FROM to_state)
);
CREATE INDEX job_events_in_order ON tireless.job_event (job_id, id);
COMMENT ON TABLE tireless.job_event IS
    'Append-only history: one row per change of a job''s state (from_state is null when the job is created). '
    'worker is the holder the change concerns; attempt is the job''s attempt count after the change.';
COMMENT ON INDEX tireless.job_events_in_order IS 'A job''s history, in order.';
COMMENT ON CONSTRAINT event_changes_state ON tireless.job_event IS 'Every event is a change of state.';
COMMENT ON CONSTRAINT job_event_job_id_fkey ON tireless.job_event IS 'Every event belongs to a job that exists.';

CREATE FUNCTION tireless.record_job_event() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    -- OLD is null for an INSERT: the creation event has no from_state.
    -- clock_timestamp(), not now(): written under the row lock, so one job's events are in time order
    -- even when a transaction that started earlier changes the job later.
    INSERT INTO tireless.job_event (job_id, at, from_state, to_state, worker, attempt, note)
    VALUES (NEW.id, clock_timestamp(), OLD.state, NEW.state, coalesce(NEW.claimed_by, OLD.claimed_by), NEW.attempts, NEW.note);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.record_job_event() IS
    'Trigger: appends the change of state of a job to tireless.job_event.';

CREATE TRIGGER job_created_event
    AFTER INSERT ON tireless.job
    FOR EACH ROW EXECUTE FUNCTION tireless.record_job_event();
COMMENT ON TRIGGER job_created_event ON tireless.job IS 'History: every job starts with an event.';

CREATE TRIGGER job_state_changed_event
    AFTER UPDATE OF state ON tireless.job
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION tireless.record_job_event();
COMMENT ON TRIGGER job_state_changed_event ON tireless.job IS 'History: every change of state is an event.';

CREATE FUNCTION tireless.refuse_history_rewrite() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'tireless.job_event is append-only: % refused', TG_OP
        USING ERRCODE = 'TL007';
END;
$$;
COMMENT ON FUNCTION tireless.refuse_history_rewrite() IS
    'Trigger: refuses UPDATE, DELETE and TRUNCATE of tireless.job_event (SQLSTATE TL007).';

CREATE TRIGGER history_is_append_only
    BEFORE UPDATE OR DELETE ON tireless.job_event
    FOR EACH ROW EXECUTE FUNCTION tireless.refuse_history_rewrite();
COMMENT ON TRIGGER history_is_append_only ON tireless.job_event IS 'History is never rewritten.';
CREATE TRIGGER history_is_never_truncated
    BEFORE TRUNCATE ON tireless.job_event
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.refuse_history_rewrite();
COMMENT ON TRIGGER history_is_never_truncated ON tireless.job_event IS 'History is never emptied.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
GRANT SELECT ON tireless.job_event TO tireless_admin;
