-- The job table's own rules: a terminal job never changes again, a live job is never deleted,
-- and the table's check rules in one function.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- Invariant 2: a terminal job never changes again.
CREATE OR REPLACE FUNCTION tireless.refuse_change_to_terminal_job() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'job % is % and never changes again', OLD.id, OLD.state
        USING ERRCODE = 'TL003',
              HINT = 'To run the issue again, enqueue it: that makes a new job and keeps this one as history.';
END;
$$;
COMMENT ON FUNCTION tireless.refuse_change_to_terminal_job() IS
    'Trigger: refuses any UPDATE of a delivered, failed or cancelled job (SQLSTATE TL003).';
REVOKE ALL ON FUNCTION tireless.refuse_change_to_terminal_job() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER terminal_job_is_final
    BEFORE UPDATE ON tireless.job
    FOR EACH ROW WHEN (OLD.state > 'claimed')
    EXECUTE FUNCTION tireless.refuse_change_to_terminal_job();
COMMENT ON TRIGGER terminal_job_is_final ON tireless.job IS 'Invariant 2: a terminal job never changes again.';

-- Never lose a job: a pending or claimed job is never deleted.
CREATE OR REPLACE FUNCTION tireless.refuse_delete_of_live_job() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'job % is % and cannot be deleted', OLD.id, OLD.state
        USING ERRCODE = 'TL002',
              HINT = 'Cancel it with tireless.transition(job_id => ..., to_state => ''cancelled'').';
END;
$$;
COMMENT ON FUNCTION tireless.refuse_delete_of_live_job() IS
    'Trigger: refuses to DELETE a pending or claimed job (SQLSTATE TL002); cancel it instead.';
REVOKE ALL ON FUNCTION tireless.refuse_delete_of_live_job() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER live_job_is_never_deleted
    BEFORE DELETE ON tireless.job
    FOR EACH ROW WHEN (NOT tireless.is_terminal(OLD.state))
    EXECUTE FUNCTION tireless.refuse_delete_of_live_job();
COMMENT ON TRIGGER live_job_is_never_deleted ON tireless.job IS 'A live job is never lost by a DELETE.';

-- Where the time went (bench/where-the-time-goes.md): PostgreSQL parses every CHECK constraint of a
-- table from its stored text and plans it again in each statement that writes the table, before it
-- tests the first row. tireless.job had ten; their parsing and planning was a sixth of a claim and
-- deliver cycle. Nine of them are now the branches of one function, which PostgreSQL compiles once
-- per session; the constraint that calls it is a single call to parse. Each rule keeps its name:
-- a row that breaks one is refused with SQLSTATE 23514 (check_violation) and the rule's name as the
-- constraint name, as before, and the rules are tested in the order PostgreSQL tested the
-- constraints (by name), so a row that breaks two is refused by the same rule as before.
-- pending_holds_no_claim stays a constraint of its own: DESIGN.md names it (invariant 3).
CREATE OR REPLACE FUNCTION tireless.job_rules_hold(job tireless.job) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    -- One expression, not one test each: PL/pgSQL prepares each expression again in every
    -- transaction, and every claim and every finish is a transaction of its own.
    broken CONSTANT text := CASE
        WHEN job.attempts < 0 THEN 'attempts_not_negative'  -- attempts count claims
        WHEN job.state = 'claimed'
             AND (job.claimed_by IS NULL OR job.claim_expires_at IS NULL OR job.claim_token IS NULL)
            THEN 'claimed_holds_claim'                       -- a claimed job has a holder, a lease and a token
        WHEN job.state = 'claimed' AND job.attempts <= 0
            THEN 'claimed_job_counts_an_attempt'             -- the attempt is counted at claim
        WHEN job.given_back < 0 OR job.given_back > job.attempts
            THEN 'given_back_within_attempts'                -- only a claimed attempt can be given back
        WHEN job.number <= 0 THEN 'issue_number_positive'
        WHEN NOT tireless.is_lane_name(job.lane) THEN 'lane_is_a_name'
        WHEN job.parent_id = job.id THEN 'not_its_own_parent'
        WHEN job.state = 'pending' AND job.cancel_requested_at IS NOT NULL
            THEN 'pending_holds_no_cancel_request'           -- a cancel-requested claim never goes back to pending
        WHEN tireless.is_terminal(job.state)
             AND (job.claimed_by IS NOT NULL OR job.claim_expires_at IS NOT NULL OR job.claim_token IS NOT NULL)
            THEN 'terminal_holds_no_claim'
    END;
BEGIN
    IF broken IS NULL THEN
        RETURN true;
    END IF;
    RAISE EXCEPTION 'new row for relation "job" violates check constraint "%"', broken
        USING ERRCODE = 'check_violation', CONSTRAINT = broken, SCHEMA = 'tireless', TABLE = 'job',
              DETAIL = format('Failing row: job %s, state %s.', coalesce(job.id::text, 'new'), job.state);
END;
$$;
COMMENT ON FUNCTION tireless.job_rules_hold(tireless.job) IS
    'The rules every job row keeps, each by its name: attempts_not_negative, claimed_holds_claim, '
    'claimed_job_counts_an_attempt, given_back_within_attempts, issue_number_positive, lane_is_a_name, '
    'not_its_own_parent, pending_holds_no_cancel_request, terminal_holds_no_claim. True when the row keeps them; '
    'else raises check_violation (23514) naming the rule it breaks. Called by the constraint job_rules_hold.';
REVOKE ALL ON FUNCTION tireless.job_rules_hold(tireless.job) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER jobs_are_never_truncated
    BEFORE TRUNCATE ON tireless.job
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.keep_history_with_its_job();
COMMENT ON TRIGGER jobs_are_never_truncated ON tireless.job IS
    'Every event belongs to a job: tireless.job is never emptied under its history.';

-- A note's cause, as every list shows it (the jobs list, the Failures page and its groups): the note
-- without the store's wrapper of a spent job, then the agent's last error line, else the first line
-- that says anything. A failed COMMAND's note is the tail of its output, whose first line is often a
-- banner and whose cause comes last.
CREATE OR REPLACE FUNCTION tireless.note_cause(note text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
    WITH lines AS (
        SELECT btrim(l.line, E' \t\r') AS line, l.n
          FROM regexp_split_to_table(
                   regexp_replace(coalesce(note_cause.note, ''), '^attempts exhausted \(\d+ of \d+\); last: ', ''),
                   E'\n') WITH ORDINALITY AS l (line, n)
    ), meaningful AS (
        SELECT l.line, l.n FROM lines l WHERE l.line ~ '[[:alnum:]]'
    )
    SELECT coalesce(
        (SELECT m.line FROM meaningful m
          WHERE m.line ~* '(error|fail|fatal|exception|denied|refused|forbidden|cannot|can''t|could not|unable|not found|no such|invalid|missing|exceed|expired|timed? ?out|stalled|panic|abort|killed|out of memory|limit)'
          ORDER BY m.n DESC LIMIT 1),
        (SELECT m.line FROM meaningful m ORDER BY m.n LIMIT 1),
        '');
END;
COMMENT ON FUNCTION tireless.note_cause(text) IS
    'The cause a note gives, on one line: without the wrapper of a job whose attempts are spent ("attempts '
    'exhausted (3 of 3); last: "), the last line that reads as an error (error, fail, denied, refused, not '
    'found, timed out, limit, ...), else the first line with a letter or digit; empty for an empty or null note. '
    'The jobs list (tireless.job_list.cause), the Failures page and its groups (tireless.failure_groups) show it.';
REVOKE ALL ON FUNCTION tireless.note_cause(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.note_cause(text) TO tireless_runner, tireless_poller, tireless_admin;
