-- The cause in front (issue 50): each attempt's exit status, recorded by the runner holding it once COMMAND ended, for the job page's attempts (tireless.job_attempts).
-- depends: 0040_applied_delivery_limits

CREATE TABLE tireless.attempt_exit (
    job_id      bigint      NOT NULL REFERENCES tireless.job (id) ON DELETE CASCADE,
    attempt     integer     NOT NULL,
    exit_status integer     NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, attempt)
);
COMMENT ON TABLE tireless.attempt_exit IS
    'The exit status of COMMAND in each attempt of a job, as the runner holding it recorded it (tireless.record_exit) '
    'before finishing the attempt; a negative status is the signal that ended it. Private: tireless.job_attempts reads it.';
COMMENT ON CONSTRAINT attempt_exit_job_id_fkey ON tireless.attempt_exit IS
    'An exit status belongs to a job and goes with it (prune).';
