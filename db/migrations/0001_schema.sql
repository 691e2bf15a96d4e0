-- The tireless schema: tracked repositories, jobs, and the constraints that make impossible rows impossible.
-- depends:

CREATE SCHEMA tireless;
COMMENT ON SCHEMA tireless IS
    'tireless: the job store for issue-driven coding agents. The functions are the API; the tables are private.';

-- The vocabulary lives in enum types: pg_enum is the one list the Python enums are tested against.
CREATE TYPE tireless.job_state AS ENUM ('pending', 'claimed', 'delivered', 'failed', 'cancelled');
COMMENT ON TYPE tireless.job_state IS
    'Where a job is: pending (waiting), claimed (held under a lease), or terminal (delivered, failed, cancelled).';

-- Declaration order is routing precedence: discover, then plan, then implement.
CREATE TYPE tireless.job_kind AS ENUM ('discover', 'plan', 'implement');
COMMENT ON TYPE tireless.job_kind IS
    'What an agent is asked to do. The order of the values is the precedence when an issue carries several mode labels.';

CREATE FUNCTION tireless.is_terminal(state tireless.job_state) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN state IN ('delivered', 'failed', 'cancelled');
COMMENT ON FUNCTION tireless.is_terminal(tireless.job_state) IS
    'True for the states a job never leaves: delivered, failed, cancelled.';

CREATE FUNCTION tireless.is_lane_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$';
COMMENT ON FUNCTION tireless.is_lane_name(text) IS
    'True when a text can name a lane: 1 to 63 letters, digits, dot, dash or underscore, starting with a letter or digit.';

CREATE TABLE tireless.tracked_repo (
    forge      text        NOT NULL,
    owner      text        NOT NULL,
    repo       text        NOT NULL,
    tracked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (forge, owner, repo)
);
COMMENT ON TABLE tireless.tracked_repo IS
    'Repositories the poller reads. Private: use track_repo, untrack_repo and tracked_repos.';

CREATE TABLE tireless.job (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    forge            text                NOT NULL,
    owner            text                NOT NULL,
    repo             text                NOT NULL,
    number           integer             NOT NULL,
    title            text,
    labels           text[]              NOT NULL DEFAULT '{}',
    kind             tireless.job_kind   NOT NULL,
    lane             text                NOT NULL,
    state            tireless.job_state  NOT NULL DEFAULT 'pending',
    parent_id        bigint,
    claimed_by       text,
    claim_expires_at timestamptz,
    claim_token      uuid,
    attempts         integer             NOT NULL DEFAULT 0,
    available_at     timestamptz         NOT NULL DEFAULT now(),
    note             text,
    created_at       timestamptz         NOT NULL DEFAULT now(),
    updated_at       timestamptz         NOT NULL DEFAULT now(),

    CONSTRAINT issue_number_positive CHECK (number > 0),
    CONSTRAINT attempts_not_negative CHECK (attempts >= 0),
    CONSTRAINT lane_is_a_name CHECK (tireless.is_lane_name(lane)),
    CONSTRAINT parent_is_a_job FOREIGN KEY (parent_id) REFERENCES tireless.job (id),
    CONSTRAINT not_its_own_parent CHECK (parent_id <> id),
    CONSTRAINT pending_holds_no_claim CHECK (
        state <> 'pending'
        OR (claimed_by IS NULL AND claim_expires_at IS NULL AND claim_token IS NULL)),
    CONSTRAINT claimed_holds_claim CHECK (
        state <> 'claimed'
        OR (claimed_by IS NOT NULL AND claim_expires_at IS NOT NULL AND claim_token IS NOT NULL)),
    CONSTRAINT terminal_holds_no_claim CHECK (
        NOT tireless.is_terminal(state)
        OR (claimed_by IS NULL AND claim_expires_at IS NULL AND claim_token IS NULL)),
    CONSTRAINT claimed_job_counts_an_attempt CHECK (state <> 'claimed' OR attempts > 0)
) WITH (fillfactor = 80);
-- fillfactor 80: every claim, renewal and finish rewrites the row; free room on the page keeps
-- the new version next to the old one.
ALTER TABLE tireless.job SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

COMMENT ON TABLE tireless.job IS
    'One run of an agent on one issue. Private: the functions of schema tireless are the API.';
COMMENT ON COLUMN tireless.job.claim_token IS
    'Fencing token: a fresh uuid per claim. A holder that presents an old token cannot renew or finish the new attempt.';
COMMENT ON COLUMN tireless.job.available_at IS
    'A pending job is not claimed before this time (backoff after a failed attempt).';
COMMENT ON COLUMN tireless.job.note IS
    'Why the job is where it is: the note of the last transition, or why the store moved it.';
COMMENT ON CONSTRAINT issue_number_positive ON tireless.job IS 'Issue numbers start at 1.';
COMMENT ON CONSTRAINT attempts_not_negative ON tireless.job IS 'Attempts count claims; never negative.';
COMMENT ON CONSTRAINT lane_is_a_name ON tireless.job IS 'A lane is a short name (see tireless.is_lane_name).';
COMMENT ON CONSTRAINT parent_is_a_job ON tireless.job IS 'A child job (an implementation planned by a plan) names an existing job.';
COMMENT ON CONSTRAINT not_its_own_parent ON tireless.job IS 'A job is never its own parent.';
COMMENT ON CONSTRAINT pending_holds_no_claim ON tireless.job IS
    'A pending job has no holder, no lease and no token: a half-done release fails here instead of stranding the job.';
COMMENT ON CONSTRAINT claimed_holds_claim ON tireless.job IS
    'A claimed job has a holder, a lease and a token.';
COMMENT ON CONSTRAINT terminal_holds_no_claim ON tireless.job IS
    'A delivered, failed or cancelled job holds no claim.';
COMMENT ON CONSTRAINT claimed_job_counts_an_attempt ON tireless.job IS
    'The attempt is counted at claim, so a claimed job has at least one.';

-- Invariant 1: at most one non-terminal job per issue key.
CREATE UNIQUE INDEX one_live_job_per_issue ON tireless.job (forge, owner, repo, number)
    WHERE state IN ('pending', 'claimed');
COMMENT ON INDEX tireless.one_live_job_per_issue IS
    'At most one pending or claimed job per issue; a new job is possible once the old one is terminal.';

-- claim_next reads pending jobs of a lane, oldest first.
CREATE INDEX pending_jobs_in_claim_order ON tireless.job (lane, id) WHERE state = 'pending';
COMMENT ON INDEX tireless.pending_jobs_in_claim_order IS 'claim_next: pending jobs of a lane, oldest first.';

-- expire_stale_claims reads claimed jobs whose lease has passed; capacity counts claims per lane.
CREATE INDEX claimed_jobs_by_expiry ON tireless.job (claim_expires_at, lane) WHERE state = 'claimed';
COMMENT ON INDEX tireless.claimed_jobs_by_expiry IS 'expire_stale_claims and lane capacity: claimed jobs by lease end.';

CREATE INDEX jobs_by_parent ON tireless.job (parent_id) WHERE parent_id IS NOT NULL;
COMMENT ON INDEX tireless.jobs_by_parent IS 'The children of a job; also keeps the parent foreign key cheap.';

-- Invariant 2: a terminal job never changes again.
CREATE FUNCTION tireless.refuse_change_to_terminal_job() RETURNS trigger
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
CREATE TRIGGER terminal_job_is_final
    BEFORE UPDATE ON tireless.job
    FOR EACH ROW WHEN (tireless.is_terminal(OLD.state))
    EXECUTE FUNCTION tireless.refuse_change_to_terminal_job();
COMMENT ON TRIGGER terminal_job_is_final ON tireless.job IS 'Invariant 2: a terminal job never changes again.';

-- Never lose a job: a pending or claimed job is never deleted.
CREATE FUNCTION tireless.refuse_delete_of_live_job() RETURNS trigger
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
CREATE TRIGGER live_job_is_never_deleted
    BEFORE DELETE ON tireless.job
    FOR EACH ROW WHEN (NOT tireless.is_terminal(OLD.state))
    EXECUTE FUNCTION tireless.refuse_delete_of_live_job();
COMMENT ON TRIGGER live_job_is_never_deleted ON tireless.job IS 'A live job is never lost by a DELETE.';
