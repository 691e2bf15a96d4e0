-- Limits (issue 47): what one agent may take of its host (a lane's memory, CPUs, processes and disk), and what each attempt used.
-- depends: 0042_github_apps

-- Null: no limit. Set by tireless.set_lane_limits (db/limits.sql), the only writer.
ALTER TABLE tireless.lane
    ADD COLUMN memory_limit bigint,
    ADD COLUMN cpu_limit numeric(7, 2),
    ADD COLUMN pids_limit integer,
    ADD COLUMN disk_limit bigint,
    ADD CONSTRAINT memory_limit_in_range CHECK (memory_limit BETWEEN 16777216 AND 1125899906842624),
    ADD CONSTRAINT cpu_limit_in_range CHECK (cpu_limit BETWEEN 0.01 AND 4096),
    ADD CONSTRAINT pids_limit_in_range CHECK (pids_limit BETWEEN 8 AND 4194304),
    ADD CONSTRAINT disk_limit_in_range CHECK (disk_limit BETWEEN 1048576 AND 1125899906842624);
COMMENT ON COLUMN tireless.lane.memory_limit IS 'The most memory (bytes) one attempt''s processes may use together; null: no limit.';
COMMENT ON COLUMN tireless.lane.cpu_limit IS 'The most CPUs one attempt''s processes may use together (1.5: one and a half); null: no limit.';
COMMENT ON COLUMN tireless.lane.pids_limit IS 'The most processes (and threads) one attempt may have alive at once; null: no limit.';
COMMENT ON COLUMN tireless.lane.disk_limit IS 'The most bytes one attempt may write in its workspace, and in its sandbox''s /tmp; null: no limit.';
COMMENT ON CONSTRAINT memory_limit_in_range ON tireless.lane IS 'A memory limit is 16 MiB to 1 PiB.';
COMMENT ON CONSTRAINT cpu_limit_in_range ON tireless.lane IS 'A CPU limit is 0.01 to 4096 CPUs.';
COMMENT ON CONSTRAINT pids_limit_in_range ON tireless.lane IS 'A process limit is 8 to 4194304 (the sandbox needs a few of its own).';
COMMENT ON CONSTRAINT disk_limit_in_range ON tireless.lane IS 'A disk limit is 1 MiB to 1 PiB.';

CREATE TABLE tireless.attempt_usage (
    job_id          bigint      NOT NULL REFERENCES tireless.job (id) ON DELETE CASCADE,
    attempt         integer     NOT NULL,
    lane            text        NOT NULL,
    peak_memory     bigint,
    cpu_seconds     float8,
    peak_processes  integer,
    workspace_bytes bigint,
    limit_reached   text,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, attempt),
    CONSTRAINT attempt_usage_not_negative CHECK (peak_memory >= 0 AND cpu_seconds >= 0 AND peak_processes >= 0 AND workspace_bytes >= 0),
    CONSTRAINT attempt_usage_limit_known CHECK (limit_reached IN ('memory', 'pids', 'disk'))
);
COMMENT ON TABLE tireless.attempt_usage IS
    'What each attempt''s processes used of the host, as the runner holding it measured it (tireless.record_attempt_usage) '
    'once COMMAND ended: peak memory and CPU seconds of its control group, the most processes alive at once, the '
    'workspace''s final size, and the limit it reached (if one stopped it). Null: not measured on that host. '
    'Private: read tireless.job_usage.';
COMMENT ON CONSTRAINT attempt_usage_job_id_fkey ON tireless.attempt_usage IS 'Usage belongs to its job and goes with it (prune).';
COMMENT ON CONSTRAINT attempt_usage_not_negative ON tireless.attempt_usage IS 'Usage is never negative.';
COMMENT ON CONSTRAINT attempt_usage_limit_known ON tireless.attempt_usage IS 'The limit reached is memory, pids or disk (a CPU limit slows, never stops).';
REVOKE ALL ON tireless.attempt_usage FROM PUBLIC;
