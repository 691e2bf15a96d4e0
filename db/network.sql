-- The agent's network: a lane's egress allowlist, and what each attempt reached or was refused.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- An entry is HOST[:PORT]: a DNS name, a wildcard *.suffix of one or more labels, an IPv4 literal,
-- or an IPv6 literal (in brackets when a port follows). The runner's proxy reads the same forms
-- (tireless/runner/egress.py, parse_allowlist).
CREATE OR REPLACE FUNCTION tireless.egress_entry(entry text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    parts text[];
    host text;
    port text;
    address inet;
BEGIN
    IF egress_entry.entry ~ '^\[' THEN
        parts := regexp_match(egress_entry.entry, '^\[([0-9A-Fa-f:.]+)\](?::([0-9]+))?$');
        IF parts IS NULL OR parts[1] !~ ':' THEN
            RETURN NULL;  -- brackets hold an IPv6 literal only
        END IF;
    ELSIF egress_entry.entry ~ ':.*:' THEN
        parts := ARRAY[egress_entry.entry, NULL];  -- an IPv6 literal without brackets takes no port
    ELSE
        parts := regexp_match(egress_entry.entry, '^([^:]+)(?::([0-9]+))?$');
        IF parts IS NULL THEN
            RETURN NULL;
        END IF;
    END IF;
    host := parts[1];
    port := parts[2];
    IF port IS NOT NULL AND (port !~ '^[1-9][0-9]{0,4}$' OR port::integer > 65535) THEN
        RETURN NULL;
    END IF;
    IF host ~ ':' THEN
        IF host !~ '^[0-9A-Fa-f:.]+$' THEN
            RETURN NULL;
        END IF;
        BEGIN
            address := host::inet;
        EXCEPTION WHEN invalid_text_representation THEN
            RETURN NULL;
        END;
        RETURN '[' || host(address) || ']' || coalesce(':' || port, '');
    END IF;
    IF host ~ '^[0-9.]+$' THEN
        IF host !~ '^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$' THEN
            RETURN NULL;
        END IF;
        RETURN host || coalesce(':' || port, '');
    END IF;
    -- A DNS name: labels of letters, digits and inner dashes, its last one not all digits.
    IF length(host) > 253
       OR host !~ '^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$'
       OR host ~ '(^|\.)[0-9]+$' THEN
        RETURN NULL;
    END IF;
    RETURN lower(host) || coalesce(':' || port, '');
END;
$$;
COMMENT ON FUNCTION tireless.egress_entry(text) IS
    'An egress allowlist entry as stored (a name lower-cased, an IPv6 literal in brackets and compressed), or null '
    'when it is not HOST[:PORT]: a DNS name, *.suffix, an IPv4 literal or an IPv6 literal ([..] when a port '
    'follows), PORT 1 to 65535.';
REVOKE ALL ON FUNCTION tireless.egress_entry(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_lane_network(lane text, hosts text[]) RETURNS text[]
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    stored text[];
    item text;
    entry text;
BEGIN
    PERFORM tireless.check_lane(set_lane_network.lane);
    IF set_lane_network.hosts IS NOT NULL THEN
        IF cardinality(set_lane_network.hosts) > 100 THEN
            RAISE EXCEPTION 'lane % may list at most 100 hosts, got %', quote_literal(set_lane_network.lane),
                cardinality(set_lane_network.hosts)
                USING ERRCODE = 'TL005', HINT = 'A wildcard (*.example.org) covers a domain''s hosts in one entry.';
        END IF;
        stored := '{}';
        FOREACH item IN ARRAY set_lane_network.hosts LOOP
            entry := tireless.egress_entry(item);
            IF entry IS NULL THEN
                RAISE EXCEPTION 'egress entry % of lane % is not HOST[:PORT]',
                    coalesce(quote_literal(left(item, 300)), 'null'), quote_literal(set_lane_network.lane)
                    USING ERRCODE = 'TL005',
                          HINT = 'A host is a DNS name (example.org), a wildcard (*.example.org) or an IP literal '
                                 '(192.0.2.1, [2001:db8::1]); a port is 1 to 65535.';
            END IF;
            IF NOT entry = ANY (stored) THEN
                stored := stored || entry;
            END IF;
        END LOOP;
    END IF;
    PERFORM tireless.ensure_lane(set_lane_network.lane);
    UPDATE tireless.lane l SET egress = stored WHERE l.name = set_lane_network.lane RETURNING l.egress INTO stored;
    RETURN stored;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_network(text, text[]) IS
    '(admin) The hosts the lane''s agents may reach, HOST[:PORT] entries (a DNS name, *.suffix, an IP literal; '
    'no port: 80 and 443), at most 100; an empty list: no egress at all; null: no list, the host''s network (as '
    'before). Returns the list as stored (names lower-cased, repeats dropped). TL005 naming the entry and the lane '
    'for a bad one, and for a bad lane name. Runners read it at each claim (tireless.lane_network).';
REVOKE ALL ON FUNCTION tireless.set_lane_network(text, text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_lane_network(text, text[]) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.lane_network(lane text) RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_lane(lane_network.lane);
    RETURN (SELECT l.egress FROM tireless.lane l WHERE l.name = lane_network.lane);
END;
$$;
COMMENT ON FUNCTION tireless.lane_network(text) IS
    'The lane''s egress allowlist (tireless.set_lane_network): null when it has none (the agent keeps the host''s '
    'network), empty for no egress at all. TL005 for a bad lane name.';
REVOKE ALL ON FUNCTION tireless.lane_network(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.lane_network(text) TO tireless_runner, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_job_network(job_id bigint, worker text, token uuid, hosts jsonb)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    item jsonb;
    ordinal bigint;
    stored integer;
BEGIN
    IF jsonb_typeof(record_job_network.hosts) IS DISTINCT FROM 'array' OR jsonb_array_length(record_job_network.hosts) > 10000 THEN
        RAISE EXCEPTION 'hosts must be a JSON array of at most 10000 rows, got %',
            coalesce(left(record_job_network.hosts::text, 200), 'null') USING ERRCODE = 'TL005';
    END IF;
    FOR item, ordinal IN SELECT e, o FROM jsonb_array_elements(record_job_network.hosts) WITH ORDINALITY AS x(e, o) LOOP
        IF NOT coalesce(jsonb_typeof(item) = 'object'
                AND jsonb_typeof(item -> 'host') = 'string' AND (item ->> 'host') <> ''
                AND (item ->> 'port') ~ '^[0-9]{1,5}$' AND (item ->> 'port')::integer <= 65535
                AND jsonb_typeof(item -> 'allowed') = 'boolean'
                AND (item ->> 'requests') ~ '^[0-9]{1,18}$'
                AND (item ->> 'bytes_in') ~ '^[0-9]{1,18}$' AND (item ->> 'bytes_out') ~ '^[0-9]{1,18}$'
                AND CASE WHEN item -> 'allowed' = 'true'::jsonb THEN coalesce(jsonb_typeof(item -> 'reason'), 'null') = 'null'
                         ELSE jsonb_typeof(item -> 'reason') = 'string' AND (item ->> 'reason') <> '' END, false) THEN
            RAISE EXCEPTION 'hosts[%] is not {host, port, allowed, requests, bytes_in, bytes_out, reason}: %',
                ordinal - 1, left(item::text, 300)
                USING ERRCODE = 'TL005',
                      HINT = 'host a non-empty string, port 0 to 65535, counts not negative; a reason when and only when not allowed.';
        END IF;
    END LOOP;
    job := tireless.held_job(record_job_network.job_id, record_job_network.worker, record_job_network.token);
    DELETE FROM tireless.network_use n WHERE n.job_id = job.id AND n.attempt = job.attempts;
    INSERT INTO tireless.network_use (job_id, attempt, lane, host, port, allowed, requests, bytes_in, bytes_out, reason)
    -- The host and the reason come from what the agent asked for: cut, never refused for their length,
    -- so that an agent cannot keep its refusals out of the record with one long name.
    SELECT job.id, job.attempts, job.lane, left(r.host, 255), r.port, r.allowed, sum(r.requests), sum(r.bytes_in),
           sum(r.bytes_out), left(r.reason, 500)
      FROM jsonb_to_recordset(record_job_network.hosts)
           AS r(host text, port integer, allowed boolean, requests bigint, bytes_in bigint, bytes_out bigint, reason text)
     GROUP BY left(r.host, 255), r.port, r.allowed, left(r.reason, 500);
    GET DIAGNOSTICS stored = ROW_COUNT;
    RETURN stored;
END;
$$;
COMMENT ON FUNCTION tireless.record_job_network(bigint, text, uuid, jsonb) IS
    'The holder records what its attempt''s agent reached and was refused: a JSON array of {host, port, allowed, '
    'requests, bytes_in, bytes_out, reason} (a reason when and only when refused; never a payload; host and reason '
    'cut to 255 and 500 characters), rows of one host, port and outcome added up. Replaces what the attempt recorded before, so the holder may record as it goes and at '
    'the end. Returns how many rows it keeps. TL005 naming a malformed row; TL001 for an unknown job, TL004 when '
    'worker (or token, or the login) does not hold it.';
REVOKE ALL ON FUNCTION tireless.record_job_network(bigint, text, uuid, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_job_network(bigint, text, uuid, jsonb) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.job_network(job_id bigint)
    RETURNS TABLE (attempt integer, host text, port integer, allowed boolean, requests bigint, bytes_in bigint,
                   bytes_out bigint, reason text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT n.attempt, n.host, n.port, n.allowed, n.requests, n.bytes_in, n.bytes_out, n.reason
      FROM tireless.network_use n
     WHERE n.job_id = job_network.job_id
     ORDER BY n.attempt, n.allowed DESC, n.host, n.port, n.reason;
END;
COMMENT ON FUNCTION tireless.job_network(bigint) IS
    'What each attempt of the job reached (allowed: requests, bytes in and out per host and port) and was refused '
    '(host, port, reason, how often), as its holder recorded it: what `tireless show` and the dashboard''s job page '
    'show. No row for a job whose lane had no allowlist and no upstream, or an unknown job.';
REVOKE ALL ON FUNCTION tireless.job_network(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_network(bigint) TO tireless_runner, tireless_poller, tireless_admin;

-- /metrics reads this at each scrape: one pass over network_use, which prune keeps as short as the jobs.
CREATE OR REPLACE VIEW tireless.lane_egress AS
SELECT n.lane,
       coalesce(sum(n.requests) FILTER (WHERE NOT n.allowed), 0)::bigint AS refusals,
       sum(n.bytes_in)::bigint AS bytes_in,
       sum(n.bytes_out)::bigint AS bytes_out
  FROM tireless.network_use n
 GROUP BY n.lane;
COMMENT ON VIEW tireless.lane_egress IS
    'Per lane, over the jobs the store keeps: the requests its agents were refused, and the bytes they received '
    '(bytes_in) and sent (bytes_out) through the runner''s proxy and gateways. /metrics exports them as counters.';
REVOKE ALL ON tireless.lane_egress FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.lane_egress TO tireless_runner, tireless_poller, tireless_admin;
