-- Limits: what one agent may take of its host (a lane's memory, CPUs, processes and disk, set by an
-- admin and read by the runner at each claim), and what each attempt used (recorded by its holder).
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- A size is a number of bytes, or a number and a unit K, M, G, T (each 1024 times the last), with an
-- optional i and B: 512M, 512MiB, 1.5G, 1GiB, 1048576. The runner reads the stored bytes only.
CREATE OR REPLACE FUNCTION tireless.size_bytes(size text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    parts text[] := regexp_match(size_bytes.size, '^\s*([0-9]{1,16}(?:\.[0-9]{1,6})?)\s*(?:([KMGTkmgt])(?:i?[Bb])?|[Bb])?\s*$');
BEGIN
    IF parts IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN floor(parts[1]::numeric * 1024 ^ coalesce(strpos('KMGT', upper(parts[2])), 0))::bigint;
EXCEPTION WHEN numeric_value_out_of_range THEN
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.size_bytes(text) IS
    'The bytes a size names (a number of bytes, or a number with K, M, G or T, each 1024 times the last, an '
    'optional i and B: 512M, 512MiB, 1.5G), or null when it is not a size.';
REVOKE ALL ON FUNCTION tireless.size_bytes(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.size_limit(lane text, what text, size text, smallest text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    bytes bigint;
BEGIN
    IF size_limit.size IS NULL OR lower(size_limit.size) = 'none' THEN
        RETURN NULL;
    END IF;
    bytes := tireless.size_bytes(size_limit.size);
    IF bytes IS NULL OR bytes NOT BETWEEN tireless.size_bytes(size_limit.smallest) AND 1125899906842624 THEN
        RAISE EXCEPTION '% limit of lane % must be a size from % to 1 PiB (512M, 2GiB) or none, got %',
            size_limit.what, quote_literal(size_limit.lane), size_limit.smallest, quote_literal(left(size_limit.size, 80))
            USING ERRCODE = 'TL005';
    END IF;
    RETURN bytes;
END;
$$;
COMMENT ON FUNCTION tireless.size_limit(text, text, text, text) IS
    'The bytes of a lane''s size limit as tireless.set_lane_limits takes it (what: memory or disk), null for null or '
    'none; TL005 naming the value unless it is a size from smallest (a size, 16 MiB) to 1 PiB.';
REVOKE ALL ON FUNCTION tireless.size_limit(text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.lane_limits(lane text) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found jsonb;
BEGIN
    PERFORM tireless.check_lane(lane_limits.lane);
    SELECT jsonb_build_object('memory', l.memory_limit, 'cpus', l.cpu_limit, 'pids', l.pids_limit, 'disk', l.disk_limit)
      INTO found FROM tireless.lane l WHERE l.name = lane_limits.lane;
    RETURN coalesce(found, '{"memory": null, "cpus": null, "pids": null, "disk": null}'::jsonb);
END;
$$;
COMMENT ON FUNCTION tireless.lane_limits(text) IS
    'The lane''s limits on one attempt (tireless.set_lane_limits): {memory: bytes, cpus: CPUs, pids: processes, '
    'disk: bytes}, each null when it has none. TL005 for a bad lane name. Runners read it at start and at each claim.';
REVOKE ALL ON FUNCTION tireless.lane_limits(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.lane_limits(text) TO tireless_runner, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_lane_limits(
    lane text, memory text DEFAULT NULL, cpus text DEFAULT NULL, pids text DEFAULT NULL, disk text DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    memory_bytes bigint;
    disk_bytes bigint;
    cpu_count numeric;
    pid_count integer;
BEGIN
    PERFORM tireless.check_lane(set_lane_limits.lane);
    memory_bytes := tireless.size_limit(set_lane_limits.lane, 'memory', set_lane_limits.memory, '16 MiB');
    disk_bytes := tireless.size_limit(set_lane_limits.lane, 'disk', set_lane_limits.disk, '1 MiB');
    IF set_lane_limits.cpus IS NOT NULL AND lower(set_lane_limits.cpus) <> 'none' THEN
        IF set_lane_limits.cpus ~ '^\s*[0-9]{1,4}(\.[0-9]{1,2})?\s*$' THEN
            cpu_count := trim(set_lane_limits.cpus)::numeric;
        END IF;
        IF cpu_count IS NULL OR cpu_count NOT BETWEEN 0.01 AND 4096 THEN
            RAISE EXCEPTION 'CPU limit of lane % must be a number of CPUs from 0.01 to 4096 (1, 1.5) or none, got %',
                quote_literal(set_lane_limits.lane), quote_literal(left(set_lane_limits.cpus, 80))
                USING ERRCODE = 'TL005';
        END IF;
    END IF;
    IF set_lane_limits.pids IS NOT NULL AND lower(set_lane_limits.pids) <> 'none' THEN
        IF set_lane_limits.pids ~ '^\s*[0-9]{1,7}\s*$' THEN
            pid_count := trim(set_lane_limits.pids)::integer;
        END IF;
        IF pid_count IS NULL OR pid_count NOT BETWEEN 8 AND 4194304 THEN
            RAISE EXCEPTION 'process limit of lane % must be a count from 8 to 4194304 or none, got %',
                quote_literal(set_lane_limits.lane), quote_literal(left(set_lane_limits.pids, 80))
                USING ERRCODE = 'TL005', HINT = 'The sandbox needs a few processes of its own before COMMAND starts.';
        END IF;
    END IF;
    PERFORM tireless.ensure_lane(set_lane_limits.lane);
    UPDATE tireless.lane l
       SET memory_limit = CASE WHEN set_lane_limits.memory IS NULL THEN l.memory_limit ELSE memory_bytes END,
           disk_limit = CASE WHEN set_lane_limits.disk IS NULL THEN l.disk_limit ELSE disk_bytes END,
           cpu_limit = CASE WHEN set_lane_limits.cpus IS NULL THEN l.cpu_limit ELSE cpu_count END,
           pids_limit = CASE WHEN set_lane_limits.pids IS NULL THEN l.pids_limit ELSE pid_count END
     WHERE l.name = set_lane_limits.lane;
    RETURN tireless.lane_limits(set_lane_limits.lane);
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_limits(text, text, text, text, text) IS
    '(admin) The lane''s limits on one attempt: memory and disk sizes (512M, 2GiB: K, M, G, T are powers of 1024), '
    'cpus a number of CPUs (1.5), pids a count of processes; each null keeps the lane''s, none clears it. Returns '
    'them as tireless.lane_limits does. TL005 naming the value for a bad one, and nothing changes. Runners enforce '
    'them on the whole process tree of each attempt (a control group of its own), or do not serve the lane.';
REVOKE ALL ON FUNCTION tireless.set_lane_limits(text, text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_lane_limits(text, text, text, text, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_attempt_usage(
    job_id bigint, worker text, peak_memory bigint, cpu_seconds float8, peak_processes integer,
    workspace_bytes bigint, limit_reached text DEFAULT NULL, token uuid DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job := tireless.held_job(record_attempt_usage.job_id, record_attempt_usage.worker, record_attempt_usage.token);
BEGIN
    IF record_attempt_usage.peak_memory < 0 OR record_attempt_usage.cpu_seconds < 0
       OR record_attempt_usage.peak_processes < 0 OR record_attempt_usage.workspace_bytes < 0
       OR record_attempt_usage.cpu_seconds = 'NaN' THEN
        RAISE EXCEPTION 'usage of job % must not be negative, got memory %, CPU seconds %, processes %, workspace %',
            job.id, record_attempt_usage.peak_memory, record_attempt_usage.cpu_seconds,
            record_attempt_usage.peak_processes, record_attempt_usage.workspace_bytes USING ERRCODE = 'TL005';
    END IF;
    IF record_attempt_usage.limit_reached NOT IN ('memory', 'pids', 'disk') THEN
        RAISE EXCEPTION 'limit_reached must be memory, pids, disk or null, got %',
            quote_literal(left(record_attempt_usage.limit_reached, 80)) USING ERRCODE = 'TL005';
    END IF;
    INSERT INTO tireless.attempt_usage AS u
           (job_id, attempt, lane, peak_memory, cpu_seconds, peak_processes, workspace_bytes, limit_reached)
    VALUES (job.id, job.attempts, job.lane, record_attempt_usage.peak_memory, record_attempt_usage.cpu_seconds,
            record_attempt_usage.peak_processes, record_attempt_usage.workspace_bytes, record_attempt_usage.limit_reached)
    ON CONFLICT ON CONSTRAINT attempt_usage_pkey DO UPDATE
       SET peak_memory = excluded.peak_memory, cpu_seconds = excluded.cpu_seconds,
           peak_processes = excluded.peak_processes, workspace_bytes = excluded.workspace_bytes,
           limit_reached = excluded.limit_reached, recorded_at = now();
END;
$$;
COMMENT ON FUNCTION tireless.record_attempt_usage(bigint, text, bigint, float8, integer, bigint, text, uuid) IS
    'The holder records what its attempt used once COMMAND ended: peak memory (bytes), CPU seconds, the most '
    'processes alive at once, the workspace''s final size (bytes), each null when not measured, and the limit that '
    'stopped it (memory, pids, disk; null: none); recorded again, the last one stands. TL001 for an unknown job, '
    'TL004 when worker (or token) does not hold it, TL005 for a negative figure or an unknown limit.';
REVOKE ALL ON FUNCTION tireless.record_attempt_usage(bigint, text, bigint, float8, integer, bigint, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_attempt_usage(bigint, text, bigint, float8, integer, bigint, text, uuid) TO tireless_runner;

CREATE OR REPLACE VIEW tireless.job_usage AS
SELECT u.job_id, u.attempt, u.lane, u.peak_memory, u.cpu_seconds, u.peak_processes, u.workspace_bytes,
       u.limit_reached, u.recorded_at
  FROM tireless.attempt_usage u;
COMMENT ON VIEW tireless.job_usage IS
    'What each attempt used of its host (tireless.record_attempt_usage): peak memory and workspace size in bytes, '
    'CPU seconds, the most processes alive at once (null: not measured), and the limit that stopped it, if one did. '
    'What `tireless show`, `tireless jobs --json`, the job page and /metrics read.';
REVOKE ALL ON tireless.job_usage FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.job_usage TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE VIEW tireless.lane_usage AS
SELECT u.lane, count(*) AS attempts,
       coalesce(sum(u.cpu_seconds), 0)::float8 AS cpu_seconds,
       max(u.peak_memory) AS peak_memory,
       max(u.peak_processes) AS peak_processes,
       count(*) FILTER (WHERE u.limit_reached = 'memory') AS memory_stops,
       count(*) FILTER (WHERE u.limit_reached = 'pids') AS pids_stops,
       count(*) FILTER (WHERE u.limit_reached = 'disk') AS disk_stops
  FROM tireless.attempt_usage u
 GROUP BY u.lane;
COMMENT ON VIEW tireless.lane_usage IS
    'Per lane, over the jobs the store keeps: its measured attempts, the CPU seconds they used, the largest peak '
    'memory and process count of one, and how many each limit stopped (memory_stops, pids_stops, disk_stops). '
    '/metrics exports them.';
REVOKE ALL ON tireless.lane_usage FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.lane_usage TO tireless_runner, tireless_poller, tireless_admin;
