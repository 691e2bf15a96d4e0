-- The agent's network (issue 38): a lane's egress allowlist, and what each attempt's agent reached through the runner's proxy and gateways or was refused.
-- depends: 0036_gone_issues

-- Null: no list, the agent keeps the host's network (the behaviour before issue 38). Empty: no egress.
-- The entries are checked by tireless.set_lane_network (db/network.sql), the only writer.
ALTER TABLE tireless.lane
    ADD COLUMN egress text[],
    ADD CONSTRAINT egress_at_most_100_entries CHECK (cardinality(egress) <= 100);
COMMENT ON COLUMN tireless.lane.egress IS
    'The hosts the lane''s agents may reach (HOST[:PORT] entries: a DNS name, *.suffix, or an IP literal), through '
    'the runner''s proxy from a network namespace of their own. Null: no list, the host''s network; empty: no egress.';
COMMENT ON CONSTRAINT egress_at_most_100_entries ON tireless.lane IS 'An egress allowlist has at most 100 entries.';

CREATE TABLE tireless.network_use (
    job_id      bigint      NOT NULL,
    attempt     integer     NOT NULL,
    lane        text        NOT NULL,
    host        text        NOT NULL,
    port        integer     NOT NULL,
    allowed     boolean     NOT NULL,
    requests    bigint      NOT NULL,
    bytes_in    bigint      NOT NULL,
    bytes_out   bigint      NOT NULL,
    reason      text,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT network_use_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT network_use_attempt_positive CHECK (attempt > 0),
    CONSTRAINT network_use_host_bounded CHECK (length(host) BETWEEN 1 AND 255),
    CONSTRAINT network_use_port_in_range CHECK (port BETWEEN 0 AND 65535),
    CONSTRAINT network_use_counts_not_negative CHECK (requests >= 0 AND bytes_in >= 0 AND bytes_out >= 0),
    CONSTRAINT refusal_says_why CHECK (allowed = (reason IS NULL)),
    CONSTRAINT network_use_reason_bounded CHECK (length(reason) BETWEEN 1 AND 500)
);
-- One row per host, port and outcome of an attempt; record_job_network adds duplicates up first.
CREATE UNIQUE INDEX network_use_per_attempt
    ON tireless.network_use (job_id, attempt, host, port, allowed, coalesce(reason, ''));
COMMENT ON TABLE tireless.network_use IS
    'What an attempt''s agent reached through the runner''s proxy and upstream gateways (allowed: requests and bytes '
    'per host and port) and what it was refused (host, port, reason and how often; never the payload), as its holder '
    'last recorded it (tireless.record_job_network). Private: read tireless.job_network and tireless.lane_egress.';
COMMENT ON COLUMN tireless.network_use.job_id IS 'The job whose attempt it was.';
COMMENT ON COLUMN tireless.network_use.attempt IS 'The attempt (the job''s attempts when it was recorded).';
COMMENT ON COLUMN tireless.network_use.lane IS 'The job''s lane during the attempt: what /metrics sums by.';
COMMENT ON COLUMN tireless.network_use.host IS 'The host the agent asked for (a name or an IP literal), its first 255 characters.';
COMMENT ON COLUMN tireless.network_use.port IS 'The port it asked for (0 when a refused request named none that could be read).';
COMMENT ON COLUMN tireless.network_use.allowed IS 'True: reached (the counts are its traffic); false: refused (requests counts the refusals).';
COMMENT ON COLUMN tireless.network_use.requests IS 'Connections or requests made (allowed), or refused (not allowed).';
COMMENT ON COLUMN tireless.network_use.bytes_in IS 'Bytes the host sent the agent.';
COMMENT ON COLUMN tireless.network_use.bytes_out IS 'Bytes the agent sent the host.';
COMMENT ON COLUMN tireless.network_use.reason IS 'Why it was refused (not listed, a private address, ...); null when allowed.';
COMMENT ON COLUMN tireless.network_use.recorded_at IS 'When the holder recorded it.';
COMMENT ON CONSTRAINT network_use_of_a_job ON tireless.network_use IS 'Network use belongs to its job and goes with it (prune).';
COMMENT ON CONSTRAINT network_use_attempt_positive ON tireless.network_use IS 'An attempt is counted from 1.';
COMMENT ON CONSTRAINT network_use_host_bounded ON tireless.network_use IS 'A host is 1 to 255 characters.';
COMMENT ON CONSTRAINT network_use_port_in_range ON tireless.network_use IS 'A port is 0 to 65535.';
COMMENT ON CONSTRAINT network_use_counts_not_negative ON tireless.network_use IS 'Requests and bytes are not negative.';
COMMENT ON CONSTRAINT refusal_says_why ON tireless.network_use IS 'A refusal has its reason; an allowed host has none.';
COMMENT ON CONSTRAINT network_use_reason_bounded ON tireless.network_use IS 'A reason is 1 to 500 characters.';
COMMENT ON INDEX tireless.network_use_per_attempt IS 'One row per host, port and outcome (allowed, or refused for a reason) of an attempt.';
REVOKE ALL ON tireless.network_use FROM PUBLIC;
