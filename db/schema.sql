-- The schema as `tireless migrate` leaves it (db/migrations, then the SQL files of db/):
-- pg_dump --schema-only of a freshly migrated database, normalised. Do not edit: `make schema`
-- regenerates it (tests/schema_dump.py), and a test fails when a change to db/ left it behind.
-- Dumped with PostgreSQL 15 (another major version prints some things differently).

--
-- PostgreSQL database dump
--

--
-- Name: tireless; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA tireless;

--
-- Name: SCHEMA tireless; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON SCHEMA tireless IS 'tireless: the job store for issue-driven coding agents. The functions are the API; the tables are private.';

--
-- Name: forge_kind; Type: TYPE; Schema: tireless; Owner: -
--

CREATE TYPE tireless.forge_kind AS ENUM (
    'gitea',
    'forgejo',
    'github'
);

--
-- Name: TYPE forge_kind; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TYPE tireless.forge_kind IS 'The API family a forge speaks: gitea, forgejo (Gitea''s API) or github.';

--
-- Name: job_kind; Type: TYPE; Schema: tireless; Owner: -
--

CREATE TYPE tireless.job_kind AS ENUM (
    'discover',
    'plan',
    'implement'
);

--
-- Name: TYPE job_kind; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TYPE tireless.job_kind IS 'What an agent is asked to do. The order of the values is the precedence when an issue carries several mode labels.';

--
-- Name: job_state; Type: TYPE; Schema: tireless; Owner: -
--

CREATE TYPE tireless.job_state AS ENUM (
    'pending',
    'claimed',
    'delivered',
    'failed',
    'cancelled'
);

--
-- Name: TYPE job_state; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TYPE tireless.job_state IS 'Where a job is: pending (waiting), claimed (held under a lease), or terminal (delivered, failed, cancelled).';

--
-- Name: activity_grain(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.activity_grain(span interval) RETURNS interval
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF span IS NULL OR span <= interval '0' OR span > interval '8 days' THEN
        RAISE EXCEPTION 'span must be more than 0 and at most 8 days, got %', coalesce(span::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    RETURN CASE WHEN span <= interval '2 hours' THEN interval '1 minute' ELSE interval '1 hour' END;
END;
$$;

--
-- Name: FUNCTION activity_grain(span interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.activity_grain(span interval) IS 'The bucket of a window: a minute up to 2 hours, else an hour; TL005 for a window that is not positive or longer than 8 days.';

--
-- Name: acts_for_login(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.acts_for_login(claimed_login text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT acts_for_login.claimed_login = session_user
           OR acts_for_login.claimed_login IS NULL
           OR tireless.may_cancel_pending()
$$;

--
-- Name: FUNCTION acts_for_login(claimed_login text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.acts_for_login(claimed_login text) IS 'True when the caller may act for a claim made by claimed_login: it is that login (session_user), the claim predates logins (null), or the caller''s effective role is an admin (as tireless.may_cancel_pending judges).';

--
-- Name: add_forge(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.add_forge(name text, kind text, base_url text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    url text := rtrim(add_forge.base_url, '/');
    longest text;
BEGIN
    IF add_forge.name IS NULL OR add_forge.name !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$' THEN
        RAISE EXCEPTION 'forge name must be 1 to 100 letters, digits, ".", "-" or "_", got %',
            coalesce(quote_literal(left(add_forge.name, 120)), 'null') USING ERRCODE = 'TL005';
    END IF;
    IF add_forge.kind IS NULL OR NOT add_forge.kind = ANY (enum_range(NULL::tireless.forge_kind)::text[]) THEN
        RAISE EXCEPTION 'unknown forge kind %', coalesce(quote_literal(left(add_forge.kind, 80)), 'null')
            USING ERRCODE = 'TL005', DETAIL = format('The kinds are %s.', array_to_string(enum_range(NULL::tireless.forge_kind), ', '));
    END IF;
    IF url IS NULL OR length(url) > 2000 OR url !~ '^https?://[^/?#[:space:][:cntrl:]]+(/[^?#[:space:][:cntrl:]]*)?$' THEN
        RAISE EXCEPTION 'base_url must be an http:// or https:// URL without query or fragment, got %',
            coalesce(quote_literal(left(add_forge.base_url, 200)), 'null') USING ERRCODE = 'TL005';
    END IF;
    SELECT tireless.longest_label(p.label_prefix) INTO longest FROM tireless.policy p;
    IF length(longest) > tireless.label_name_limit(add_forge.kind::tireless.forge_kind) THEN
        RAISE EXCEPTION 'a % forge takes label names of at most % characters, and the label prefix makes % (% characters)',
            add_forge.kind, tireless.label_name_limit(add_forge.kind::tireless.forge_kind), quote_literal(longest), length(longest)
            USING ERRCODE = 'TL005', HINT = 'Shorten the prefix first: tireless.set_policy(label_prefix => ...).';
    END IF;
    INSERT INTO tireless.forge AS f (name, kind, base_url)
    VALUES (add_forge.name, add_forge.kind::tireless.forge_kind, url)
    ON CONFLICT ON CONSTRAINT forge_pkey DO UPDATE
       SET kind = excluded.kind, base_url = excluded.base_url
     WHERE (f.kind, f.base_url) IS DISTINCT FROM (excluded.kind, excluded.base_url);
    RETURN FOUND;
END;
$_$;

--
-- Name: FUNCTION add_forge(name text, kind text, base_url text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.add_forge(name text, kind text, base_url text) IS 'Registers a forge (kind gitea, forgejo or github; base_url http(s)://, a trailing slash dropped) or changes its entry; true when it created or changed it, false when it was already so. TL005 for a bad argument, and when the policy''s label_prefix makes a label longer than a forge of that kind takes (50 characters on GitHub).';

--
-- Name: agent_profiles(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.agent_profiles() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ARRAY['command'::text, 'claude-code'::text, 'codex'::text, 'opencode'::text, 'gemini'::text, 'aider'::text];

--
-- Name: FUNCTION agent_profiles(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.agent_profiles() IS 'The agent CLI profiles tireless work knows (tireless.runner.agents.CHOICES): command (the worker''s COMMAND), claude-code, codex, opencode, gemini, aider.';

--
-- Name: is_lane_name(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_lane_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'::text);

--
-- Name: FUNCTION is_lane_name(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_lane_name(name text) IS 'True when a text can name a lane: 1 to 63 letters, digits, dot, dash or underscore, starting with a letter or digit.';

--
-- Name: lane; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.lane (
    name text NOT NULL,
    capacity integer,
    paused boolean DEFAULT false NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    tripped_until timestamp with time zone,
    max_run interval,
    stall_after interval,
    runs_per_day integer,
    agent_time_per_day interval,
    egress text[],
    memory_limit bigint,
    cpu_limit numeric(7,2),
    pids_limit integer,
    disk_limit bigint,
    tokens_per_day bigint,
    cost_per_day numeric,
    tokens_per_job bigint,
    cost_per_job numeric,
    tokens_per_attempt bigint,
    cost_per_attempt numeric,
    tokens_per_issue bigint,
    cost_per_issue numeric,
    limited boolean GENERATED ALWAYS AS (((capacity IS NOT NULL) OR (runs_per_day IS NOT NULL) OR (agent_time_per_day IS NOT NULL) OR (tokens_per_day IS NOT NULL) OR (cost_per_day IS NOT NULL))) STORED,
    agent text,
    CONSTRAINT agent_is_a_profile_name CHECK ((agent ~ '^[a-z][a-z0-9-]{0,39}$'::text)),
    CONSTRAINT agent_time_per_day_positive CHECK ((agent_time_per_day > '00:00:00'::interval)),
    CONSTRAINT capacity_not_negative CHECK ((capacity >= 0)),
    CONSTRAINT cpu_limit_in_range CHECK (((cpu_limit >= 0.01) AND (cpu_limit <= (4096)::numeric))),
    CONSTRAINT disk_limit_in_range CHECK (((disk_limit >= 1048576) AND (disk_limit <= '1125899906842624'::bigint))),
    CONSTRAINT egress_at_most_100_entries CHECK ((cardinality(egress) <= 100)),
    CONSTRAINT failures_not_negative CHECK ((consecutive_failures >= 0)),
    CONSTRAINT lane_name_is_a_name CHECK (tireless.is_lane_name(name)),
    CONSTRAINT lane_token_budgets_not_negative CHECK (((tokens_per_day >= 0) AND (cost_per_day >= (0)::numeric) AND (tokens_per_job >= 0) AND (cost_per_job >= (0)::numeric) AND (tokens_per_attempt >= 0) AND (cost_per_attempt >= (0)::numeric) AND (tokens_per_issue >= 0) AND (cost_per_issue >= (0)::numeric))),
    CONSTRAINT max_run_is_positive CHECK ((max_run > '00:00:00'::interval)),
    CONSTRAINT memory_limit_in_range CHECK (((memory_limit >= 16777216) AND (memory_limit <= '1125899906842624'::bigint))),
    CONSTRAINT pids_limit_in_range CHECK (((pids_limit >= 8) AND (pids_limit <= 4194304))),
    CONSTRAINT runs_per_day_not_negative CHECK ((runs_per_day >= 0)),
    CONSTRAINT stall_after_is_positive CHECK ((stall_after > '00:00:00'::interval))
);

--
-- Name: TABLE lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.lane IS 'Lanes that have settings or breaker state. A lane with no row is open and unlimited.';

--
-- Name: COLUMN lane.capacity; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.capacity IS 'At most this many claimed jobs in the lane at once; null: unlimited.';

--
-- Name: COLUMN lane.tripped_until; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.tripped_until IS 'Circuit breaker: while in the future, claim_next hands out nothing from the lane.';

--
-- Name: COLUMN lane.max_run; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.max_run IS 'An attempt claimed longer ago than this is stopped: its heartbeat answers timeout. Null: no limit.';

--
-- Name: COLUMN lane.stall_after; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.stall_after IS 'An attempt without progress for this long is stopped: its heartbeat answers stalled. Null: no watchdog.';

--
-- Name: COLUMN lane.runs_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.runs_per_day IS 'At most this many claims in the lane per UTC day; null: no budget.';

--
-- Name: COLUMN lane.agent_time_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.agent_time_per_day IS 'No claim once the lane''s attempts ended today held their claims this long in all; null: no budget.';

--
-- Name: COLUMN lane.egress; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.egress IS 'The hosts the lane''s agents may reach (HOST[:PORT] entries: a DNS name, *.suffix, or an IP literal), through the runner''s proxy from a network namespace of their own. Null: no list, the host''s network; empty: no egress.';

--
-- Name: COLUMN lane.memory_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.memory_limit IS 'The most memory (bytes) one attempt''s processes may use together; null: no limit.';

--
-- Name: COLUMN lane.cpu_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.cpu_limit IS 'The most CPUs one attempt''s processes may use together (1.5: one and a half); null: no limit.';

--
-- Name: COLUMN lane.pids_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.pids_limit IS 'The most processes (and threads) one attempt may have alive at once; null: no limit.';

--
-- Name: COLUMN lane.disk_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.disk_limit IS 'The most bytes one attempt may write in its workspace, and in its sandbox''s /tmp; null: no limit.';

--
-- Name: COLUMN lane.tokens_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.tokens_per_day IS 'No claim once the lane''s agents used this many tokens today (UTC); null: no budget.';

--
-- Name: COLUMN lane.cost_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.cost_per_day IS 'No claim once the lane''s agents spent this many USD today (UTC); null: no budget.';

--
-- Name: COLUMN lane.tokens_per_job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.tokens_per_job IS 'A job of the lane fails once its attempts used this many tokens; null: no budget.';

--
-- Name: COLUMN lane.cost_per_job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.cost_per_job IS 'A job of the lane fails once its attempts spent this many USD; null: no budget.';

--
-- Name: COLUMN lane.tokens_per_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.tokens_per_attempt IS 'An attempt of the lane''s jobs fails once it used this many tokens; null: no budget.';

--
-- Name: COLUMN lane.cost_per_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.cost_per_attempt IS 'An attempt of the lane''s jobs fails once it spent this many USD; null: no budget.';

--
-- Name: COLUMN lane.tokens_per_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.tokens_per_issue IS 'A job of the lane fails once the jobs of its issue used this many tokens; null: no budget.';

--
-- Name: COLUMN lane.cost_per_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.cost_per_issue IS 'A job of the lane fails once the jobs of its issue spent this many USD; null: no budget.';

--
-- Name: COLUMN lane.limited; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.limited IS 'The lane has a capacity or a daily budget: claim_next counts it under the lane''s row lock.';

--
-- Name: COLUMN lane.agent; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane.agent IS 'The agent CLI profile the lane''s jobs run (tireless.agent_profiles: claude-code, codex, opencode, gemini, aider, command). Null: the worker''s own --agent, or its COMMAND.';

--
-- Name: CONSTRAINT agent_is_a_profile_name ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT agent_is_a_profile_name ON tireless.lane IS 'A lane''s agent is a profile name: lower-case letters, digits and dashes, at most 40.';

--
-- Name: CONSTRAINT agent_time_per_day_positive ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT agent_time_per_day_positive ON tireless.lane IS 'A budget of agent time is null (none) or more than 0.';

--
-- Name: CONSTRAINT capacity_not_negative ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT capacity_not_negative ON tireless.lane IS 'Capacity is null (unlimited) or not negative.';

--
-- Name: CONSTRAINT cpu_limit_in_range ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT cpu_limit_in_range ON tireless.lane IS 'A CPU limit is 0.01 to 4096 CPUs.';

--
-- Name: CONSTRAINT disk_limit_in_range ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT disk_limit_in_range ON tireless.lane IS 'A disk limit is 1 MiB to 1 PiB.';

--
-- Name: CONSTRAINT egress_at_most_100_entries ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT egress_at_most_100_entries ON tireless.lane IS 'An egress allowlist has at most 100 entries.';

--
-- Name: CONSTRAINT failures_not_negative ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT failures_not_negative ON tireless.lane IS 'A count of failures is not negative.';

--
-- Name: CONSTRAINT lane_name_is_a_name ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT lane_name_is_a_name ON tireless.lane IS 'A lane is a short name (see tireless.is_lane_name).';

--
-- Name: CONSTRAINT lane_token_budgets_not_negative ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT lane_token_budgets_not_negative ON tireless.lane IS 'A budget of tokens or cost is null (none) or 0 or more.';

--
-- Name: CONSTRAINT max_run_is_positive ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT max_run_is_positive ON tireless.lane IS 'A time limit is null (none) or more than 0.';

--
-- Name: CONSTRAINT memory_limit_in_range ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT memory_limit_in_range ON tireless.lane IS 'A memory limit is 16 MiB to 1 PiB.';

--
-- Name: CONSTRAINT pids_limit_in_range ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pids_limit_in_range ON tireless.lane IS 'A process limit is 8 to 4194304 (the sandbox needs a few of its own).';

--
-- Name: CONSTRAINT runs_per_day_not_negative ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT runs_per_day_not_negative ON tireless.lane IS 'A budget of runs is null (none) or 0 or more.';

--
-- Name: CONSTRAINT stall_after_is_positive ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT stall_after_is_positive ON tireless.lane IS 'A stall limit is null (none) or more than 0.';

--
-- Name: repo_limit; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.repo_limit (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    capacity integer,
    runs_per_day integer,
    agent_time_per_day interval,
    tokens_per_day bigint,
    cost_per_day numeric,
    tokens_per_job bigint,
    cost_per_job numeric,
    tokens_per_attempt bigint,
    cost_per_attempt numeric,
    tokens_per_issue bigint,
    cost_per_issue numeric,
    CONSTRAINT repo_agent_time_per_day_positive CHECK ((agent_time_per_day > '00:00:00'::interval)),
    CONSTRAINT repo_capacity_not_negative CHECK ((capacity >= 0)),
    CONSTRAINT repo_runs_per_day_not_negative CHECK ((runs_per_day >= 0)),
    CONSTRAINT repo_token_budgets_not_negative CHECK (((tokens_per_day >= 0) AND (cost_per_day >= (0)::numeric) AND (tokens_per_job >= 0) AND (cost_per_job >= (0)::numeric) AND (tokens_per_attempt >= 0) AND (cost_per_attempt >= (0)::numeric) AND (tokens_per_issue >= 0) AND (cost_per_issue >= (0)::numeric))),
    CONSTRAINT some_limit_is_set CHECK ((num_nonnulls(capacity, runs_per_day, agent_time_per_day, tokens_per_day, cost_per_day, tokens_per_job, cost_per_job, tokens_per_attempt, cost_per_attempt, tokens_per_issue, cost_per_issue) > 0))
);

--
-- Name: TABLE repo_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.repo_limit IS 'A repository''s capacity and daily budgets, all lanes together. Private: set_repo_capacity and set_repo_budget keep it; read tireless.repo_shares.';

--
-- Name: COLUMN repo_limit.capacity; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.capacity IS 'At most this many claimed jobs of the repository at once; null: unlimited.';

--
-- Name: COLUMN repo_limit.runs_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.runs_per_day IS 'At most this many claims of the repository''s jobs per UTC day; null: no budget.';

--
-- Name: COLUMN repo_limit.agent_time_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.agent_time_per_day IS 'No claim once the repository''s attempts ended today held their claims this long in all; null: no budget.';

--
-- Name: COLUMN repo_limit.tokens_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.tokens_per_day IS 'No claim once the repository''s agents used this many tokens today (UTC); null: no budget.';

--
-- Name: COLUMN repo_limit.cost_per_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.cost_per_day IS 'No claim once the repository''s agents spent this many USD today (UTC); null: no budget.';

--
-- Name: COLUMN repo_limit.tokens_per_job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.tokens_per_job IS 'A job of the repository fails once its attempts used this many tokens; null: no budget.';

--
-- Name: COLUMN repo_limit.cost_per_job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.cost_per_job IS 'A job of the repository fails once its attempts spent this many USD; null: no budget.';

--
-- Name: COLUMN repo_limit.tokens_per_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.tokens_per_attempt IS 'An attempt of the repository''s jobs fails once it used this many tokens; null: no budget.';

--
-- Name: COLUMN repo_limit.cost_per_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.cost_per_attempt IS 'An attempt of the repository''s jobs fails once it spent this many USD; null: no budget.';

--
-- Name: COLUMN repo_limit.tokens_per_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.tokens_per_issue IS 'A job of the repository fails once the jobs of its issue used this many tokens; null: no budget.';

--
-- Name: COLUMN repo_limit.cost_per_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_limit.cost_per_issue IS 'A job of the repository fails once the jobs of its issue spent this many USD; null: no budget.';

--
-- Name: CONSTRAINT repo_agent_time_per_day_positive ON repo_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT repo_agent_time_per_day_positive ON tireless.repo_limit IS 'A budget of agent time is null (none) or more than 0.';

--
-- Name: CONSTRAINT repo_capacity_not_negative ON repo_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT repo_capacity_not_negative ON tireless.repo_limit IS 'A capacity is null (none) or 0 or more.';

--
-- Name: CONSTRAINT repo_runs_per_day_not_negative ON repo_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT repo_runs_per_day_not_negative ON tireless.repo_limit IS 'A budget of runs is null (none) or 0 or more.';

--
-- Name: CONSTRAINT repo_token_budgets_not_negative ON repo_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT repo_token_budgets_not_negative ON tireless.repo_limit IS 'A budget of tokens or cost is null (none) or 0 or more.';

--
-- Name: CONSTRAINT some_limit_is_set ON repo_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT some_limit_is_set ON tireless.repo_limit IS 'A repository without any limit has no row (claim_next treats it as any other).';

--
-- Name: agent_time_budgeted(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.agent_time_budgeted() RETURNS boolean
    LANGUAGE sql STABLE
    RETURN ((EXISTS (SELECT FROM tireless.lane l WHERE (l.agent_time_per_day IS NOT NULL))) OR (EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.agent_time_per_day IS NOT NULL))));

--
-- Name: FUNCTION agent_time_budgeted(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.agent_time_budgeted() IS 'True when some lane or repository has a daily budget of agent time.';

--
-- Name: job; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.job (
    id bigint NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    title text,
    labels text[] DEFAULT '{}'::text[] NOT NULL,
    kind tireless.job_kind NOT NULL,
    lane text NOT NULL,
    state tireless.job_state DEFAULT 'pending'::tireless.job_state NOT NULL,
    parent_id bigint,
    claimed_by text,
    claim_expires_at timestamp with time zone,
    claim_token uuid,
    attempts integer DEFAULT 0 NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    note text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    cancel_requested_at timestamp with time zone,
    given_back integer DEFAULT 0 NOT NULL,
    claimed_login text,
    cancel_note text,
    waiting_on text[],
    ended_claim_token uuid,
    CONSTRAINT pending_holds_no_claim CHECK (((state <> 'pending'::tireless.job_state) OR ((claimed_by IS NULL) AND (claim_expires_at IS NULL) AND (claim_token IS NULL))))
)
WITH (fillfactor='80', autovacuum_vacuum_scale_factor='0.02', autovacuum_analyze_scale_factor='0.02');

--
-- Name: TABLE job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.job IS 'One run of an agent on one issue. Private: the functions of schema tireless are the API.';

--
-- Name: COLUMN job.claim_token; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.claim_token IS 'Fencing token: a fresh uuid per claim. A holder that presents an old token cannot renew or finish the new attempt.';

--
-- Name: COLUMN job.available_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.available_at IS 'A pending job is not claimed before this time (backoff after a failed attempt).';

--
-- Name: COLUMN job.note; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.note IS 'Why the job is where it is: the note of the last transition, or why the store moved it.';

--
-- Name: COLUMN job.cancel_requested_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.cancel_requested_at IS 'When the issue withdrew its request while the job was claimed; null unless it did. The job then ends cancelled.';

--
-- Name: COLUMN job.given_back; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.given_back IS 'How many of the job''s attempts ended in give_back (a runner stopping, not a failure): they stay in attempts and in the history but are not counted against max_attempts.';

--
-- Name: COLUMN job.claimed_login; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.claimed_login IS 'The database login (session_user) that made the job''s latest claim; kept after the claim ends, like attempts. While the job is claimed only that login (or an admin) may renew, heartbeat, give back or finish it. Null: claimed before 0019_holder_login, or never claimed.';

--
-- Name: COLUMN job.cancel_note; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.cancel_note IS 'Why a claimed job was asked to stop, set with cancel_requested_at by whoever asked (request_cancel, the work rule, the poll): the note the job ends cancelled with, or that its delivery records as come too late. Null without a request.';

--
-- Name: COLUMN job.waiting_on; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.waiting_on IS 'For a pending job: the open dependencies of its issue that it waits for (#3, owner/repo#7), not claimable until the last one closes; null when it waits for nothing. Kept by dependencies.sql.';

--
-- Name: COLUMN job.ended_claim_token; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job.ended_claim_token IS 'The token of the last claim its holder ended presenting that token (a delivery, a failure, a release, a give-back, a cancel); kept when the job is claimed again, untouched by an expiry. A finish or give-back sent again with this token (its answer was lost) is answered with the job as it is now, not refused: the first one committed.';

--
-- Name: CONSTRAINT pending_holds_no_claim ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pending_holds_no_claim ON tireless.job IS 'A pending job has no holder, no lease and no token: a half-done release fails here instead of stranding the job.';

--
-- Name: allowance_of(tireless.job); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.allowance_of(job tireless.job) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    lane_row tireless.lane;
    repo_row tireless.repo_limit;
    spent record;
    note text;
BEGIN
    SELECT * INTO lane_row FROM tireless.lane l WHERE l.name = job.lane;
    SELECT * INTO repo_row FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (job.forge, job.owner, job.repo);
    IF num_nonnulls(lane_row.tokens_per_issue, lane_row.cost_per_issue, repo_row.tokens_per_issue, repo_row.cost_per_issue) > 0 THEN
        spent := tireless.issue_spend(job.forge, job.owner, job.repo, job.number);
        note := tireless.scope_spent(spent.tokens, spent.cost, lane_row.tokens_per_issue, lane_row.cost_per_issue,
                                     repo_row.tokens_per_issue, repo_row.cost_per_issue, 'issue', job);
        IF note IS NOT NULL THEN
            RETURN jsonb_build_object('budgeted', true, 'spent', 'issue', 'note', note);
        END IF;
    END IF;
    IF num_nonnulls(lane_row.tokens_per_job, lane_row.cost_per_job, repo_row.tokens_per_job, repo_row.cost_per_job) > 0 THEN
        spent := tireless.spend_of(job.id, NULL, NULL, NULL, NULL);
        note := tireless.scope_spent(spent.tokens, spent.cost, lane_row.tokens_per_job, lane_row.cost_per_job,
                                     repo_row.tokens_per_job, repo_row.cost_per_job, 'job', job);
        IF note IS NOT NULL THEN
            RETURN jsonb_build_object('budgeted', true, 'spent', 'job', 'note', note);
        END IF;
    END IF;
    IF num_nonnulls(lane_row.tokens_per_attempt, lane_row.cost_per_attempt, repo_row.tokens_per_attempt,
                    repo_row.cost_per_attempt) > 0 THEN
        spent := tireless.attempt_spend(job.id, job.attempts);
        note := tireless.scope_spent(spent.tokens, spent.cost, lane_row.tokens_per_attempt, lane_row.cost_per_attempt,
                                     repo_row.tokens_per_attempt, repo_row.cost_per_attempt, 'attempt', job);
        IF note IS NOT NULL THEN
            RETURN jsonb_build_object('budgeted', true, 'spent', 'attempt', 'note', note);
        END IF;
    END IF;
    note := coalesce(tireless.lane_usage_spent(job.lane), tireless.repo_usage_spent(job.forge, job.owner, job.repo));
    IF note IS NOT NULL THEN
        RETURN jsonb_build_object('budgeted', true, 'spent', 'day', 'note', note);
    END IF;
    RETURN jsonb_build_object(
        'budgeted', num_nonnulls(lane_row.tokens_per_job, lane_row.cost_per_job, lane_row.tokens_per_day,
                                 lane_row.cost_per_day, lane_row.tokens_per_attempt, lane_row.cost_per_attempt,
                                 lane_row.tokens_per_issue, lane_row.cost_per_issue, repo_row.tokens_per_job,
                                 repo_row.cost_per_job, repo_row.tokens_per_day, repo_row.cost_per_day,
                                 repo_row.tokens_per_attempt, repo_row.cost_per_attempt, repo_row.tokens_per_issue,
                                 repo_row.cost_per_issue) > 0,
        'spent', NULL, 'note', NULL);
END;
$$;

--
-- Name: FUNCTION allowance_of(job tireless.job); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.allowance_of(job tireless.job) IS 'Whether the job may spend more: {budgeted (a budget of tokens or cost applies to it), spent (null; issue, job or attempt: its lane''s or repository''s budget per issue, per job or per attempt is reached, the widest first; day: a daily one is), note (the spent budget''s)}.';

--
-- Name: announce_poll(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.announce_poll(forge text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT pg_notify('tireless_poll', announce_poll.forge);
$$;

--
-- Name: FUNCTION announce_poll(forge text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.announce_poll(forge text) IS 'NOTIFY tireless_poll with the forge as payload: a repository of it is due now. Sent at commit.';

--
-- Name: announce_stop(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.announce_stop() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('tireless_stop', NEW.id::text);
    RETURN NULL;
END;
$$;

--
-- Name: FUNCTION announce_stop(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.announce_stop() IS 'Trigger: NOTIFY tireless_stop with the job''s id as payload when a claimed job is asked to stop. Sent at commit.';

--
-- Name: announce_work(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.announce_work(lane text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT pg_notify('tireless_work', announce_work.lane);
$$;

--
-- Name: FUNCTION announce_work(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.announce_work(lane text) IS 'NOTIFY tireless_work with the lane as payload: work may be claimable there now. Sent at commit.';

--
-- Name: answer_waiting_asks(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.answer_waiting_asks(forge text, owner text, repo text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    waiting record;
    made tireless.job;
    created integer := 0;
BEGIN
    FOR waiting IN
        SELECT a.number,
               (array_agg(a.verb ORDER BY a.id DESC) FILTER (WHERE a.verb IN ('implement', 'plan', 'discover')))[1] AS mode,
               (array_agg(a ORDER BY a.id DESC))[1] AS newest
          FROM tireless.ask a
         WHERE (a.forge, a.owner, a.repo) = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo)
           AND a.outcome = 'waiting'
           AND EXISTS (SELECT FROM tireless.issue i
                        WHERE (i.forge, i.owner, i.repo, i.number) = (a.forge, a.owner, a.repo, a.number) AND i.state = 'open')
           AND NOT EXISTS (SELECT FROM tireless.job j
                            WHERE (j.forge, j.owner, j.repo, j.number) = (a.forge, a.owner, a.repo, a.number)
                              AND j.state IN ('pending', 'claimed'))
         GROUP BY a.number
         ORDER BY a.number
    LOOP
        INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, note)
        SELECT answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number, i.title,
               coalesce(i.labels, '{}'), coalesce(waiting.mode, 'implement')::tireless.job_kind,
               tireless.lane_for(coalesce(waiting.mode, 'implement'), coalesce(i.labels, '{}')),
               CASE WHEN waiting.mode IS NOT NULL
                    THEN format('asked by %s in comment %s', (waiting.newest).author, (waiting.newest).source_id)
                    ELSE format('revision %s of #%s, asked %s',
                                tireless.revisions_since_asked(answer_waiting_asks.forge, answer_waiting_asks.owner,
                                                               answer_waiting_asks.repo, waiting.number) + 1,
                                waiting.number,
                                CASE (waiting.newest).source
                                    WHEN 'checks' THEN format('by failed checks on %s', left((waiting.newest).source_id, 12))
                                    ELSE format('by %s in %s %s', (waiting.newest).author, (waiting.newest).source,
                                                (waiting.newest).source_id) END) END
          FROM tireless.issue i
         WHERE (i.forge, i.owner, i.repo, i.number)
               = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number)
        RETURNING * INTO made;
        IF waiting.mode IS NOT NULL THEN
            -- The command answered the issue's request: its mode label, if it carries one, asks no second job.
            UPDATE tireless.issue i SET answered = true, changed_at = now()
             WHERE (i.forge, i.owner, i.repo, i.number)
                   = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number)
               AND i.asks_since IS NOT NULL AND NOT i.answered;
        END IF;
        UPDATE tireless.ask a SET outcome = 'answered', job_id = made.id
         WHERE (a.forge, a.owner, a.repo, a.number)
               = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number)
           AND a.outcome = 'waiting';
        PERFORM tireless.announce_work(made.lane);
        created := created + 1;
    END LOOP;
    RETURN created;
END;
$$;

--
-- Name: FUNCTION answer_waiting_asks(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.answer_waiting_asks(forge text, owner text, repo text) IS 'Rule 1 for the conversation: a pending job for each open issue the store has read whose asks wait and that has no live job, answering all of them: of the kind a command on the issue asked for, else an implement revision (note: "revision 2 of #14, asked by alice in review 123"); its lane from the issue''s labels. Returns how many.';

--
-- Name: apply_work_rule(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.apply_work_rule(issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    woken text[];
    touched jsonb;
BEGIN
    -- Repositories in key order, so two batches that share several never deadlock on their locks.
    PERFORM tireless.lock_repo_issues(r.forge, r.owner, r.repo)
       FROM (SELECT DISTINCT e.issue ->> 'forge' AS forge, e.issue ->> 'owner' AS owner, e.issue ->> 'repo' AS repo
               FROM jsonb_array_elements(apply_work_rule.issues) AS e(issue)
              ORDER BY 1, 2, 3) AS r;

    -- A new statement, so a new snapshot: it sees what the writers the locks waited for committed.
    WITH incoming AS (
        -- An issue listed twice in one batch counts once: its last listing wins.
        SELECT DISTINCT ON (forge, owner, repo, number)
               e.issue ->> 'forge' AS forge,
               e.issue ->> 'owner' AS owner,
               e.issue ->> 'repo' AS repo,
               (e.issue ->> 'number')::integer AS number,
               e.issue ->> 'state' AS state,
               ARRAY(SELECT jsonb_array_elements_text(e.issue -> 'labels')) AS labels,
               e.issue ->> 'title' AS title,
               e.issue ->> 'url' AS url,
               (e.issue ->> 'updated_at')::timestamptz AS updated_at,
               (e.issue ->> 'parent_id')::bigint AS parent_id,
               -- The body is kept up to tireless.issue_body_limit() characters, flagged when cut; an
               -- issue given without "body" (the mirror's read-back) keeps the body last shown.
               e.issue ? 'body' AS has_body,
               left(e.issue ->> 'body', tireless.issue_body_limit()) AS body,
               coalesce(length(e.issue ->> 'body') > tireless.issue_body_limit(), false) AS body_cut
          FROM jsonb_array_elements(apply_work_rule.issues) WITH ORDINALITY AS e(issue, position)
         ORDER BY forge, owner, repo, number, e.position DESC
    ), shown AS MATERIALIZED (
        -- Issues of untracked repositories are ignored.
        SELECT i.*, s.number IS NOT NULL AS known, s.asks_since, coalesce(s.answered, false) AS answered,
               s.body AS shown_body, s.body_cut AS shown_body_cut,
               -- An issue gone (record_issue_gone) and listed again is back: saved, its gone_at cleared.
               s.number IS NULL OR s.gone_at IS NOT NULL
               OR (s.state, s.labels, s.title, s.url, s.updated_at)
                  IS DISTINCT FROM (i.state, i.labels, i.title, i.url, i.updated_at)
               OR (i.has_body AND (s.body, s.body_cut) IS DISTINCT FROM (i.body, i.body_cut)) AS changed
          FROM incoming i
          JOIN tireless.tracked_repo t ON (t.forge, t.owner, t.repo) = (i.forge, i.owner, i.repo)
          LEFT JOIN tireless.issue s ON (s.forge, s.owner, s.repo, s.number) = (i.forge, i.owner, i.repo, i.number)
    ), judged AS MATERIALIZED (
        -- Only an issue shown changed, or one whose request still waits for its job, is judged:
        -- an issue shown as it was before costs the join above and nothing more.
        SELECT sh.*, k.kind, live.id AS live_id
          FROM shown sh
         CROSS JOIN LATERAL (SELECT CASE WHEN sh.state = 'open' THEN tireless.job_kind_for(sh.labels) END) AS k(kind)
          LEFT JOIN LATERAL (SELECT j.id FROM tireless.job j
                              WHERE (j.forge, j.owner, j.repo, j.number) = (sh.forge, sh.owner, sh.repo, sh.number)
                                AND j.state IN ('pending', 'claimed')) AS live ON true
         WHERE sh.changed OR (sh.asks_since IS NOT NULL AND NOT sh.answered)
    ), decided AS MATERIALIZED (
        SELECT jd.*,
               jd.kind IS NOT NULL AND jd.asks_since IS NULL AS rising,
               -- Closing ends the live job whatever asked for it: labels, a review, a command.
               (jd.kind IS NULL AND jd.asks_since IS NOT NULL) OR (jd.state = 'closed' AND jd.live_id IS NOT NULL) AS withdrawn,
               -- Rule 1: a job per request, made while no job is live.
               jd.kind IS NOT NULL AND jd.live_id IS NULL AND (jd.asks_since IS NULL OR NOT jd.answered) AS makes_job,
               CASE WHEN jd.kind IS NOT NULL THEN tireless.lane_for(jd.kind, jd.labels) END AS lane
          FROM judged jd
    ), saved AS (
        INSERT INTO tireless.issue AS s (forge, owner, repo, number, state, labels, title, url, updated_at, asks_since, answered,
                                         body, body_cut)
        SELECT d.forge, d.owner, d.repo, d.number, d.state, d.labels, d.title, d.url, d.updated_at,
               CASE WHEN d.rising THEN now() WHEN d.kind IS NOT NULL THEN d.asks_since END,
               d.makes_job OR (d.answered AND NOT d.rising),
               CASE WHEN d.has_body THEN d.body ELSE d.shown_body END,
               CASE WHEN d.has_body THEN d.body_cut ELSE coalesce(d.shown_body_cut, false) END
          FROM decided d
         WHERE d.changed OR d.makes_job OR d.rising OR d.withdrawn
        ON CONFLICT (forge, owner, repo, number) DO UPDATE
           SET state = excluded.state, labels = excluded.labels, title = excluded.title, url = excluded.url,
               updated_at = excluded.updated_at, asks_since = excluded.asks_since, answered = excluded.answered,
               body = excluded.body, body_cut = excluded.body_cut, changed_at = now(), gone_at = NULL, gone_note = NULL
    ), ended AS (
        -- Rule 2: a pending job is cancelled; a claimed one gets a cancel request (it stands once made).
        UPDATE tireless.job j
           SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
               note = CASE WHEN j.state <> 'pending' THEN j.note
                           WHEN d.state = 'closed' THEN 'issue closed'
                           ELSE 'issue no longer asks for work' END,
               cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
               cancel_note = CASE WHEN j.state <> 'claimed' THEN NULL
                                  WHEN d.state = 'closed' THEN 'issue closed'
                                  ELSE 'issue no longer asks for work' END,
               updated_at = now()
          FROM decided d
         WHERE d.withdrawn AND j.id = d.live_id
           AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL))
        RETURNING j.id
    ), moved AS (
        -- Rule 3: relabelling re-routes a pending job; a claimed one is left as it is.
        UPDATE tireless.job j
           SET kind = d.kind::tireless.job_kind, lane = d.lane, labels = d.labels, updated_at = now()
          FROM decided d
         WHERE d.changed AND d.kind IS NOT NULL AND j.id = d.live_id AND j.state = 'pending'
           AND (j.kind::text, j.lane) IS DISTINCT FROM (d.kind, d.lane)
        RETURNING j.lane
    ), made AS (
        INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, parent_id)
        SELECT d.forge, d.owner, d.repo, d.number, d.title, d.labels, d.kind::tireless.job_kind, d.lane,
               -- A plan's child (plans.sql) records the plan's job as its parent.
               coalesce(d.parent_id, (SELECT t.job_id FROM tireless.plan_task t
                                       WHERE (t.forge, t.owner, t.repo, t.child_number) = (d.forge, d.owner, d.repo, d.number)))
          FROM decided d
         WHERE d.makes_job
         ORDER BY d.forge, d.owner, d.repo, d.number
        ON CONFLICT (forge, owner, repo, number) WHERE state IN ('pending', 'claimed') DO NOTHING
        RETURNING lane
    )
    SELECT (SELECT count(*) FROM made), (SELECT count(*) FROM ended), (SELECT count(*) FROM moved),
           (SELECT count(*) FROM shown),
           ARRAY(SELECT m.lane FROM made m UNION SELECT m.lane FROM moved m),
           -- What dependencies.sql settles next: the issues judged (a body shown changed is read again).
           (SELECT coalesce(jsonb_agg(jsonb_build_object('forge', jd.forge, 'owner', jd.owner, 'repo', jd.repo,
                                                         'number', jd.number, 'body', jd.changed AND jd.has_body)), '[]')
              FROM judged jd)
      INTO apply_work_rule.created, apply_work_rule.cancelled, apply_work_rule.rerouted, apply_work_rule.seen, woken, touched;

    -- The forge's own relations the batch carries ("depends_on", read this round) replace those
    -- stored; an issue whose relations changed is settled below even when the issue was not.
    touched := touched || tireless.record_forge_dependencies(apply_work_rule.issues);
    -- Dependencies gate claims: the jobs of these issues, and of the issues that depend on them,
    -- wait or are released (a new statement: it sees the issues and jobs written above).
    PERFORM tireless.settle_dependencies(touched);
    -- A label under the prefix that names nothing is told once per issue and label (labels.sql).
    PERFORM tireless.report_unknown_labels(touched);
    PERFORM tireless.announce_work(l) FROM unnest(woken) AS l;
END;
$$;

--
-- Name: FUNCTION apply_work_rule(issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.apply_work_rule(issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer) IS 'The work rule on a checked batch of issues of tracked repositories: a pending job for an issue that asks for work and whose request has had none; withdrawal cancels a pending job or requests the cancel of a claimed one (note, and cancel_note: issue closed, or issue no longer asks for work); relabelling re-routes a pending job; an issue''s "depends_on" replaces its forge relations (record_forge_dependencies); the pending jobs of the issues judged, of those whose forge relations changed and of their dependents wait for their open dependencies or are released (settle_dependencies); a label of an issue judged that names nothing is reported once (report_unknown_labels). An issue shown as it was before writes nothing. Returns what it did.';

--
-- Name: arm_agent_time_count(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.arm_agent_time_count() RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    armed boolean := (SELECT t.tgenabled = 'A' FROM pg_catalog.pg_trigger t
                       WHERE t.tgrelid = 'tireless.job'::regclass AND t.tgname = 'ended_attempts_count_agent_time');
    wanted boolean := tireless.agent_time_budgeted();
BEGIN
    IF wanted AND NOT armed THEN
        ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER ended_attempts_count_agent_time;
    ELSIF armed AND NOT wanted THEN
        ALTER TABLE tireless.job DISABLE TRIGGER ended_attempts_count_agent_time;
    END IF;
END;
$$;

--
-- Name: FUNCTION arm_agent_time_count(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.arm_agent_time_count() IS 'Enables the trigger ended_attempts_count_agent_time when some budget of agent time exists, disables it when none does. Run under tireless.lock_jobs_for_a_budget.';

--
-- Name: ask_problem(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.ask_problem(ask jsonb) RETURNS text
    LANGUAGE sql STABLE
    AS $_$
    SELECT CASE
        WHEN jsonb_typeof(ask) IS DISTINCT FROM 'object' THEN
            format('must be a JSON object, got %s', left(ask::text, 100))
        WHEN ask ->> 'source' IS NULL OR ask ->> 'source' NOT IN ('review', 'comment', 'checks') THEN
            format('"source" must be "review", "comment" or "checks", got %s', left(coalesce(ask -> 'source', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'id') NOT IN ('string', 'number') OR length(ask ->> 'id') NOT BETWEEN 1 AND 100 THEN
            format('"id" must be a string or number of 1 to 100 characters, got %s', left(coalesce(ask -> 'id', 'null')::text, 120))
        WHEN jsonb_typeof(ask -> 'number') IS DISTINCT FROM 'number'
             OR (ask -> 'number')::numeric NOT BETWEEN 1 AND 2147483647
             OR (ask -> 'number')::numeric <> trunc((ask -> 'number')::numeric) THEN
            format('"number" must be an integer from 1 to 2147483647, got %s', left(coalesce(ask -> 'number', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'author') NOT IN ('string', 'null') OR length(ask ->> 'author') > 200 THEN
            format('"author" must be a login of at most 200 characters, got %s', left((ask -> 'author')::text, 100))
        WHEN jsonb_typeof(ask -> 'permission') NOT IN ('string', 'null')
             OR ask ->> 'permission' NOT IN ('admin', 'write', 'read', 'none') THEN
            format('"permission" must be "admin", "write", "read" or "none", got %s', left((ask -> 'permission')::text, 100))
        WHEN jsonb_typeof(ask -> 'created_at') IS DISTINCT FROM 'string' OR NOT tireless.is_forge_timestamp(ask ->> 'created_at') THEN
            format('"created_at" must be an ISO 8601 timestamp with a time zone, got %s', left(coalesce(ask -> 'created_at', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'body') NOT IN ('string', 'null') THEN
            format('"body" must be a string or null, got %s', left((ask -> 'body')::text, 100))
        WHEN ask ->> 'source' = 'review' AND jsonb_typeof(ask -> 'state') IS DISTINCT FROM 'string' THEN
            format('"state" of a review must be a string, got %s', left(coalesce(ask -> 'state', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'comments') NOT IN ('array', 'null')
             OR jsonb_path_exists(ask, '$.comments[*] ? (@.type() != "object" || @.path.type() != "string" || @.body.type() != "string")') THEN
            format('"comments" must be a list of {path, line, body}, got %s', left((ask -> 'comments')::text, 100))
        WHEN ask ->> 'source' = 'checks' AND NOT tireless.is_commit_id(ask ->> 'head') THEN
            format('"head" of checks must be a commit id, got %s', left(coalesce(ask -> 'head', 'null')::text, 100))
        WHEN ask ->> 'source' = 'checks'
             AND (jsonb_typeof(ask -> 'checks') IS DISTINCT FROM 'array'
                  OR jsonb_path_exists(ask, '$.checks[*] ? (@.type() != "object" || @.name.type() != "string" || !(@.state == "passed" || @.state == "failed" || @.state == "pending"))')) THEN
            format('"checks" must be a list of {name, state: passed|failed|pending, summary?, url?}, got %s',
                   left(coalesce(ask -> 'checks', 'null')::text, 100))
    END;
$_$;

--
-- Name: FUNCTION ask_problem(ask jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.ask_problem(ask jsonb) IS 'Why one element of a record_conversation batch is malformed, or null when it is well formed.';

--
-- Name: ask; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.ask (
    id bigint NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    source text NOT NULL,
    source_id text NOT NULL,
    pull_number integer,
    verb text NOT NULL,
    author text,
    body text DEFAULT ''::text NOT NULL,
    detail jsonb DEFAULT '[]'::jsonb NOT NULL,
    asked_at timestamp with time zone NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome text NOT NULL,
    refusal text,
    job_id bigint,
    reply text,
    replied_at timestamp with time zone,
    CONSTRAINT a_refusal_says_why CHECK (((outcome = 'refused'::text) = (refusal IS NOT NULL))),
    CONSTRAINT ask_body_bounded CHECK ((length(body) <= 65536)),
    CONSTRAINT ask_detail_is_a_list CHECK ((jsonb_typeof(detail) = 'array'::text)),
    CONSTRAINT ask_numbers_positive CHECK (((number > 0) AND (pull_number > 0))),
    CONSTRAINT ask_outcome_known CHECK ((outcome = ANY (ARRAY['waiting'::text, 'answered'::text, 'refused'::text, 'withdrawn'::text, 'done'::text]))),
    CONSTRAINT ask_reply_known CHECK ((reply = ANY (ARRAY['react'::text, 'comment'::text]))),
    CONSTRAINT ask_source_id_bounded CHECK (((length(source_id) >= 1) AND (length(source_id) <= 100))),
    CONSTRAINT ask_source_known CHECK ((source = ANY (ARRAY['review'::text, 'comment'::text, 'checks'::text]))),
    CONSTRAINT ask_verb_known CHECK ((verb = ANY (ARRAY['revise'::text, 'stop'::text, 'implement'::text, 'plan'::text, 'discover'::text])))
);

--
-- Name: TABLE ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.ask IS 'Each request made in the conversation (a review requesting changes, a `/tireless` command, a failing set of checks), once per forge item, whatever became of it: waiting for the issue''s live job to end, answered by a job, refused (and why), withdrawn by a stop, or done (a stop that was carried out). Private: record_conversation writes it; job_asks hands an answering job''s asks to the runner.';

--
-- Name: COLUMN ask.number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.number IS 'The issue the ask is about (a pull request''s issue, for an ask made on the pull request).';

--
-- Name: COLUMN ask.source; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.source IS 'review, comment (a `/tireless` command) or checks (the failed checks of one head).';

--
-- Name: COLUMN ask.source_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.source_id IS 'The forge''s id of the review or comment, or the head commit whose checks failed.';

--
-- Name: COLUMN ask.pull_number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.pull_number IS 'The pull request the ask was made on; null: made on the issue.';

--
-- Name: COLUMN ask.verb; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.verb IS 'What it asks: revise, stop, or implement, plan, discover (on the issue).';

--
-- Name: COLUMN ask.body; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.body IS 'The review''s text, or the instruction after the command (at most 65536 characters).';

--
-- Name: COLUMN ask.detail; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.detail IS 'A review''s inline comments [{path, line, body}], or the failed checks [{name, summary, url}].';

--
-- Name: COLUMN ask.asked_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.asked_at IS 'When it was made on the forge (a review''s submission, a comment''s creation, the read of the checks).';

--
-- Name: COLUMN ask.refusal; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.refusal IS 'Why it asks nothing: no write access, the revision limit, the same failure as the head before.';

--
-- Name: COLUMN ask.job_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.job_id IS 'The job that answers it (or, for a stop, the job it stopped).';

--
-- Name: COLUMN ask.reply; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.reply IS 'What the mirror owes on the forge: react (a +1 on the command) or comment (a refusal said once).';

--
-- Name: COLUMN ask.replied_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.ask.replied_at IS 'When the forge confirmed the reply; null: still owed (when reply is set).';

--
-- Name: CONSTRAINT a_refusal_says_why ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT a_refusal_says_why ON tireless.ask IS 'A refused ask says why; no other ask has a refusal.';

--
-- Name: CONSTRAINT ask_body_bounded ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_body_bounded ON tireless.ask IS 'An ask keeps at most 65536 characters of text, as an issue''s body.';

--
-- Name: CONSTRAINT ask_detail_is_a_list ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_detail_is_a_list ON tireless.ask IS 'The detail is a JSON array.';

--
-- Name: CONSTRAINT ask_numbers_positive ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_numbers_positive ON tireless.ask IS 'Issue and pull request numbers are positive.';

--
-- Name: CONSTRAINT ask_outcome_known ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_outcome_known ON tireless.ask IS 'An ask is waiting, answered, refused, withdrawn or done.';

--
-- Name: CONSTRAINT ask_reply_known ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_reply_known ON tireless.ask IS 'A reply is a reaction or a comment.';

--
-- Name: CONSTRAINT ask_source_id_bounded ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_source_id_bounded ON tireless.ask IS 'A source id is 1 to 100 characters.';

--
-- Name: CONSTRAINT ask_source_known ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_source_known ON tireless.ask IS 'An ask comes from a review, a comment or the checks.';

--
-- Name: CONSTRAINT ask_verb_known ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_verb_known ON tireless.ask IS 'An ask is revise, stop, implement, plan or discover.';

--
-- Name: ask_reply_text(tireless.ask); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.ask_reply_text(ask tireless.ask) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT tireless.safe_comment_text(CASE
        WHEN ask.refusal LIKE '% has no write access %' THEN
            format('Only people with write access to %s/%s can ask tireless for work: `/tireless %s` by %s asks nothing.',
                   ask.owner, ask.repo, ask.verb, coalesce(ask.author, 'an unknown account'))
        WHEN ask.refusal LIKE '%(max_revisions)' THEN
            format('No revision of #%s is asked: %s. Nothing more is asked until a person with write access asks again '
                   'on the issue (its mode label, or `/tireless implement` there).', ask.number, ask.refusal)
        ELSE
            format('No revision is asked for the failed checks on %s (%s): %s. A review or `/tireless revise` still '
                   'asks for one.', left(ask.source_id, 12),
                   -- The checks' names, cut to 4000 characters: the reply fits in tireless.forge_body_limit().
                   (SELECT CASE WHEN length(n.names) > 4000 THEN left(n.names, 3999) || '…' ELSE n.names END
                      FROM (SELECT string_agg(c ->> 'name', ', ' ORDER BY c ->> 'name') AS names
                              FROM jsonb_array_elements(ask.detail) AS c) AS n),
                   ask.refusal)
    END) || E'\n\n' || format('<!-- tireless:ask:%s -->', ask.id);
$$;

--
-- Name: FUNCTION ask_reply_text(ask tireless.ask); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.ask_reply_text(ask tireless.ask) IS 'The comment that answers a refused ask, made safe to post (safe_comment_text), ending with its marker line; the failed checks'' names cut to 4000 characters, so that it fits in tireless.forge_body_limit().';

--
-- Name: attach_plan(bigint, text, jsonb, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.attach_plan(job_id bigint, worker text, plan jsonb, token uuid DEFAULT NULL::uuid) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job := tireless.held_job(attach_plan.job_id, attach_plan.worker, attach_plan.token);
    problem text;
    attached integer;
BEGIN
    IF job.kind::text NOT IN ('plan', 'discover') THEN
        RAISE EXCEPTION 'job % is a % job; only a plan or discover job hands back tasks', job.id, job.kind
            USING ERRCODE = 'TL005';
    END IF;
    problem := tireless.plan_problem(attach_plan.plan);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'malformed %: %', CASE WHEN job.kind::text = 'plan' THEN 'plan' ELSE 'proposals' END, problem
            USING ERRCODE = 'TL011',
                  HINT = 'A list of at most 50 tasks {title, body, lane?, depends_on: [index or "#N"]}, without a cycle.';
    END IF;
    -- The attempt's tasks replace those of an earlier attempt (none of which was opened: the job is live).
    DELETE FROM tireless.plan_task t WHERE t.job_id = job.id AND t.child_number IS NULL;
    INSERT INTO tireless.plan_task (job_id, task, forge, owner, repo, attempt, proposal, title, body, lane, depends_on)
    SELECT job.id, e.position - 1, job.forge, job.owner, job.repo, job.attempts, job.kind::text = 'discover',
           e.t ->> 'title', e.t ->> 'body', nullif(e.t ->> 'lane', ''), coalesce(e.t -> 'depends_on', '[]')
      FROM jsonb_array_elements(attach_plan.plan) WITH ORDINALITY AS e(t, position);
    GET DIAGNOSTICS attached = ROW_COUNT;
    -- Each task's issue is a write of the outbox (tireless.forge_write), due once the job is delivered.
    INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id, task)
    SELECT 'task', t.forge, t.owner, t.repo, job.number, t.job_id, t.task
      FROM tireless.plan_task t
     WHERE t.job_id = job.id AND t.child_number IS NULL
       AND EXISTS (SELECT FROM tireless.tracked_repo r WHERE (r.forge, r.owner, r.repo) = (t.forge, t.owner, t.repo))
     ORDER BY t.task
    ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING;
    RETURN attached;
END;
$$;

--
-- Name: FUNCTION attach_plan(job_id bigint, worker text, plan jsonb, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.attach_plan(job_id bigint, worker text, plan jsonb, token uuid) IS 'The holder of a plan (or discover) job attaches the tasks its agent wrote, before delivering it; they replace those of an earlier attempt, and once the job is delivered the mirror opens an issue for each (a write of the outbox, tireless.forge_write). Returns how many. TL011 naming the task and the field for a malformed plan (tireless.plan_problem): the runner then fails the attempt with that note; TL005 for a job of another kind, TL001 for an unknown job, TL004 when worker (or token) does not hold it.';

--
-- Name: attach_report(bigint, text, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.attach_report(job_id bigint, worker text, report text, token uuid DEFAULT NULL::uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job := tireless.held_job(attach_report.job_id, attach_report.worker, attach_report.token);
    cut boolean := coalesce(length(attach_report.report) > 60000, false);
BEGIN
    PERFORM tireless.current_attempt(job.id, job.attempts);
    UPDATE tireless.job_attempt a
       SET report = nullif(left(attach_report.report, 60000), ''), report_cut = cut
     WHERE a.job_id = job.id;
    RETURN cut;
END;
$$;

--
-- Name: FUNCTION attach_report(job_id bigint, worker text, report text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.attach_report(job_id bigint, worker text, report text, token uuid) IS 'The holder attaches its agent''s outcome summary (markdown) to the attempt before finishing it; the mirror posts it as the outcome comment instead of the note. Kept up to 60000 characters: true when it was cut. TL001 for an unknown job, TL004 when worker (or token) does not hold it.';

--
-- Name: model_price; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.model_price (
    model text NOT NULL,
    input numeric NOT NULL,
    output numeric NOT NULL,
    cache_read numeric,
    cache_write numeric,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT model_price_not_negative CHECK (((input >= (0)::numeric) AND (output >= (0)::numeric) AND (COALESCE(cache_read, (0)::numeric) >= (0)::numeric) AND (COALESCE(cache_write, (0)::numeric) >= (0)::numeric)))
);

--
-- Name: TABLE model_price; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.model_price IS 'USD per million tokens of a model (a name, or a prefix* that prices every model it starts): none is built in. A cache price left null is the input price. Written by tireless.set_model_price.';

--
-- Name: CONSTRAINT model_price_not_negative ON model_price; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_price_not_negative ON tireless.model_price IS 'A price is never negative.';

--
-- Name: price_of(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.price_of(model text) RETURNS tireless.model_price
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT p.model,
     p.input,
     p.output,
     p.cache_read,
     p.cache_write,
     p.set_at
    FROM tireless.model_price p
   WHERE ((p.model = price_of.model) OR (("right"(p.model, 1) = '*'::text) AND starts_with(price_of.model, "left"(p.model, '-1'::integer))))
   ORDER BY (p.model = price_of.model) DESC, (length(p.model)) DESC
  LIMIT 1;
END;

--
-- Name: FUNCTION price_of(model text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.price_of(model text) IS 'The price of a model: its own row of tireless.model_price, else the longest prefix* that starts its name; a row of nulls when it has none (unpriced).';

--
-- Name: usage_cost(text, bigint, bigint, bigint, bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.usage_cost(model text, input bigint, output bigint, cache_read bigint, cache_write bigint) RETURNS numeric
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT ((((((usage_cost.input)::numeric * p.input) + ((usage_cost.output)::numeric * p.output)) + ((usage_cost.cache_read)::numeric * COALESCE(p.cache_read, p.input))) + ((usage_cost.cache_write)::numeric * COALESCE(p.cache_write, p.input))) / (1000000)::numeric)
    FROM tireless.price_of(usage_cost.model) p(model, input, output, cache_read, cache_write, set_at);
END;

--
-- Name: FUNCTION usage_cost(model text, input bigint, output bigint, cache_read bigint, cache_write bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.usage_cost(model text, input bigint, output bigint, cache_read bigint, cache_write bigint) IS 'What tokens of a model cost in USD at its price (tireless.price_of; a cache price left null is the input price); null when the model is unpriced.';

--
-- Name: model_usage; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.model_usage (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    model text NOT NULL,
    spend_day date NOT NULL,
    lane text NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    requests bigint DEFAULT 0 NOT NULL,
    unread bigint DEFAULT 0 NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    cache_write_tokens bigint DEFAULT 0 NOT NULL,
    CONSTRAINT model_usage_attempt_positive CHECK ((attempt > 0)),
    CONSTRAINT model_usage_counts_not_negative CHECK (((requests >= 0) AND (unread >= 0) AND (unread <= requests) AND (input_tokens >= 0) AND (output_tokens >= 0) AND (cache_read_tokens >= 0) AND (cache_write_tokens >= 0))),
    CONSTRAINT model_usage_model_bounded CHECK (((length(model) >= 1) AND (length(model) <= 200)))
);

--
-- Name: TABLE model_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.model_usage IS 'What each attempt''s agent asked of each model through the runner''s gateway, per UTC day (the daily budgets): requests, the answers among them whose usage could not be read (unread: their tokens are unknown, never zero), and input, output, cache-read and cache-write tokens, added up by tireless.record_usage as the attempt goes. Private: read tireless.job_model_usage, tireless.usage_by_day and tireless.agent_usage.';

--
-- Name: COLUMN model_usage.unread; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.model_usage.unread IS 'Answers counted in requests whose usage the gateway could not read: their tokens are unknown.';

--
-- Name: CONSTRAINT model_usage_attempt_positive ON model_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_usage_attempt_positive ON tireless.model_usage IS 'Attempts count from 1.';

--
-- Name: CONSTRAINT model_usage_counts_not_negative ON model_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_usage_counts_not_negative ON tireless.model_usage IS 'Counts are never negative, and unread answers are among the requests.';

--
-- Name: CONSTRAINT model_usage_model_bounded ON model_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_usage_model_bounded ON tireless.model_usage IS 'A model name is 1 to 200 characters.';

--
-- Name: attempt_spend(bigint, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.attempt_spend(job_id bigint, attempt integer, OUT tokens bigint, OUT cost numeric) RETURNS record
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT (COALESCE(sum((((u.input_tokens + u.output_tokens) + u.cache_read_tokens) + u.cache_write_tokens)), (0)::numeric))::bigint AS "coalesce",
     COALESCE(sum(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)), (0)::numeric) AS "coalesce"
    FROM tireless.model_usage u
   WHERE ((u.job_id = attempt_spend.job_id) AND (u.attempt = attempt_spend.attempt));
END;

--
-- Name: FUNCTION attempt_spend(job_id bigint, attempt integer, OUT tokens bigint, OUT cost numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.attempt_spend(job_id bigint, attempt integer, OUT tokens bigint, OUT cost numeric) IS 'Tokens (every kind) and USD (priced models only) spent by one attempt of a job.';

--
-- Name: attempts_spent(tireless.job); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.attempts_spent(job tireless.job) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((job).attempts - (job).given_back);

--
-- Name: FUNCTION attempts_spent(job tireless.job); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.attempts_spent(job tireless.job) IS 'The attempts a job has used of its budget: its claims, less those given back by a stopping runner.';

--
-- Name: bin_bound(smallint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.bin_bound(bin smallint) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN make_interval(secs => (round(power((2)::numeric, ((bin)::numeric / 4.0)), 3))::double precision);

--
-- Name: FUNCTION bin_bound(bin smallint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.bin_bound(bin smallint) IS 'The longest duration of a histogram bin (see tireless.duration_bin).';

--
-- Name: body_dependencies(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.body_dependencies(body text, owner text, repo text, number integer) RETURNS TABLE(depends_on_owner text, depends_on_repo text, depends_on_number integer)
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT DISTINCT d.o, d.r, d.n
      FROM regexp_matches(coalesce(body_dependencies.body, ''),
                          '^[ \t>*-]*depends[ \t]+on[ \t:]+([^\n]*)$', 'gin') AS line(m)
     CROSS JOIN LATERAL regexp_matches(line.m[1],
                          '(?:^|[^A-Za-z0-9_./#-])(?:([A-Za-z0-9_.-]{1,200})/([A-Za-z0-9_.-]{1,200}))?#([0-9]{1,9})(?![0-9])', 'g')
                        AS ref(m)
     CROSS JOIN LATERAL (SELECT coalesce(ref.m[1], body_dependencies.owner), coalesce(ref.m[2], body_dependencies.repo),
                                ref.m[3]::integer) AS d(o, r, n)
     WHERE d.n > 0
       AND (d.o, d.r, d.n) IS DISTINCT FROM (body_dependencies.owner, body_dependencies.repo, body_dependencies.number)
     ORDER BY d.o, d.r, d.n
     LIMIT 100;
$_$;

--
-- Name: FUNCTION body_dependencies(body text, owner text, repo text, number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.body_dependencies(body text, owner text, repo text, number integer) IS 'The issues a body says issue number of owner/repo depends on: each `Depends on #N` or `Depends on owner/repo#N` (any case, several per line and per body; the same forge), not the issue itself, at most 100.';

--
-- Name: budget_spent(bigint, interval, integer, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.budget_spent(runs bigint, agent_time interval, runs_per_day integer, agent_time_per_day interval) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (COALESCE((runs >= runs_per_day), false) OR COALESCE((agent_time >= agent_time_per_day), false));

--
-- Name: FUNCTION budget_spent(runs bigint, agent_time interval, runs_per_day integer, agent_time_per_day interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.budget_spent(runs bigint, agent_time interval, runs_per_day integer, agent_time_per_day interval) IS 'True when today''s runs or agent time reached its budget (a null budget is never spent).';

--
-- Name: check_budget(integer, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_budget(runs_per_day integer, agent_time_per_day interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF check_budget.runs_per_day < 0 THEN
        RAISE EXCEPTION 'runs_per_day must be null (no budget) or at least 0, got %', check_budget.runs_per_day
            USING ERRCODE = 'TL005';
    END IF;
    IF check_budget.agent_time_per_day <= interval '0' OR check_budget.agent_time_per_day > interval '1000 days' THEN
        RAISE EXCEPTION 'agent_time_per_day must be null (no budget) or more than 0 and at most 1000 days, got %',
            check_budget.agent_time_per_day
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_budget(runs_per_day integer, agent_time_per_day interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_budget(runs_per_day integer, agent_time_per_day interval) IS 'Raises TL005 (naming the setting) unless runs_per_day is null or >= 0 and agent_time_per_day null or in (0, 1000 days].';

--
-- Name: check_commit_id(text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_commit_id(what text, id text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF id IS NULL OR NOT tireless.is_commit_id(id) THEN
        RAISE EXCEPTION '% must be a full commit id, got %', what, coalesce(quote_literal(left(id, 100)), 'null')
            USING ERRCODE = 'TL009', HINT = 'A commit id is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits: git rev-parse HEAD.';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_commit_id(what text, id text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_commit_id(what text, id text) IS 'Raises TL009 naming the argument (what) and its value unless id is a full commit id (tireless.is_commit_id).';

--
-- Name: check_forge(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_forge(name text) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM tireless.forge f WHERE f.name = check_forge.name) THEN
        RAISE EXCEPTION 'forge % is not registered', coalesce(quote_literal(left(check_forge.name, 120)), 'null')
            USING ERRCODE = 'TL008',
                  HINT = format('Register it first: tireless forge add %s --kind gitea|forgejo|github --url URL '
                                '(see tireless forge list).', left(check_forge.name, 120));
    END IF;
END;
$$;

--
-- Name: FUNCTION check_forge(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_forge(name text) IS 'Raises TL008, with the command that registers it, unless the forge is registered (track_repo, retry_forge).';

--
-- Name: check_holder(tireless.job, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_holder(job tireless.job, worker text, token uuid) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    IF job.state = 'claimed' AND job.claimed_by = check_holder.worker
       AND (check_holder.token IS NULL OR check_holder.token = job.claim_token)
       AND tireless.acts_for_login(job.claimed_login) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'worker % does not hold job %', coalesce(quote_literal(left(check_holder.worker, 220)), 'null'), job.id
        USING ERRCODE = 'TL004',
              DETAIL = CASE
                  WHEN job.state <> 'claimed' THEN format('The job is %s now.', job.state)
                  WHEN job.claimed_by IS DISTINCT FROM check_holder.worker THEN format('The job is claimed by %L.', job.claimed_by)
                  WHEN check_holder.token IS NOT NULL AND check_holder.token <> job.claim_token
                      THEN 'The claim was lost and the job claimed again.'
                  ELSE format('The job was claimed by the login %I, not by %I.', job.claimed_login, session_user) END,
              HINT = CASE WHEN job.state = 'claimed' AND job.claimed_by = check_holder.worker
                               AND (check_holder.token IS NULL OR check_holder.token = job.claim_token)
                          THEN 'Only the login that claimed a job (or an admin) may act for its holder.'
                          ELSE 'The lease was lost: stop the work and leave the job to the store.' END;
END;
$$;

--
-- Name: FUNCTION check_holder(job tireless.job, worker text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_holder(job tireless.job, worker text, token uuid) IS 'Raises TL004 unless worker (and token, when given) holds the job''s current claim and the caller is the login that claimed it (or an admin); DETAIL says where the job is now, or which login claimed it.';

--
-- Name: check_issue_batch(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_issue_batch(issues jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    bad record;
    repositories bigint;
BEGIN
    IF jsonb_typeof(check_issue_batch.issues) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'issues must be a JSON array, got %', left(coalesce(check_issue_batch.issues::text, 'null'), 100)
            USING ERRCODE = 'TL006';
    END IF;
    IF jsonb_array_length(check_issue_batch.issues) > 50000 THEN
        RAISE EXCEPTION 'a batch holds at most 50000 issues, got %', jsonb_array_length(check_issue_batch.issues)
            USING ERRCODE = 'TL006', HINT = 'Split the poll into several calls.';
    END IF;
    -- A batch locks each repository it names until it commits: a bounded set, so one call cannot hold
    -- every repository of the store at once. The poller sends one repository per call.
    SELECT count(*) INTO repositories
      FROM (SELECT DISTINCT e.issue -> 'forge', e.issue -> 'owner', e.issue -> 'repo'
              FROM jsonb_array_elements(check_issue_batch.issues) AS e(issue)) AS r;
    IF repositories > 1000 THEN
        RAISE EXCEPTION 'a batch names at most 1000 repositories, got %', repositories
            USING ERRCODE = 'TL006', HINT = 'Split the batch by repository into several calls.';
    END IF;
    SELECT e.position - 1 AS position, p.problem INTO bad
      FROM jsonb_array_elements(check_issue_batch.issues) WITH ORDINALITY AS e(issue, position)
     CROSS JOIN LATERAL (SELECT tireless.issue_problem(e.issue)) AS p(problem)
     WHERE p.problem IS NOT NULL
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: %', bad.position, bad.problem USING ERRCODE = 'TL006';
    END IF;
    SELECT e.position - 1 AS position, (e.issue ->> 'parent_id') AS parent_id INTO bad
      FROM jsonb_array_elements(check_issue_batch.issues) WITH ORDINALITY AS e(issue, position)
     WHERE jsonb_typeof(e.issue -> 'parent_id') = 'number'
       AND NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = (e.issue ->> 'parent_id')::bigint)
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: "parent_id" % is not a job', bad.position, bad.parent_id
            USING ERRCODE = 'TL006';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_issue_batch(issues jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_issue_batch(issues jsonb) IS 'Raises TL006 naming the first malformed element (and the field) unless the batch is a JSON array of at most 50000 well-formed issues of at most 1000 repositories whose parent_ids name jobs. enqueue and record_poll check before they write.';

--
-- Name: check_label_prefix(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_label_prefix(prefix text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    refused record;
BEGIN
    SELECT f.name, f.kind, tireless.label_name_limit(f.kind) AS limit_, tireless.longest_label(check_label_prefix.prefix) AS label
      INTO refused
      FROM tireless.forge f
     WHERE length(tireless.longest_label(check_label_prefix.prefix)) > tireless.label_name_limit(f.kind)
     ORDER BY f.name
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'label_prefix % is too long for forge % (%): its label % has % characters, % takes at most %',
            quote_literal(check_label_prefix.prefix), quote_literal(refused.name), refused.kind, quote_literal(refused.label),
            length(refused.label), refused.kind, refused.limit_
            USING ERRCODE = 'TL005',
                  HINT = format('Use a label_prefix of at most %s characters.', refused.limit_ - length(refused.label) + length(check_label_prefix.prefix));
    END IF;
END;
$$;

--
-- Name: FUNCTION check_label_prefix(prefix text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_label_prefix(prefix text) IS 'Raises TL005 unless every label the mirror writes with that prefix fits the label-name limit of each registered forge: set_policy checks before it changes anything.';

--
-- Name: check_lane(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_lane(lane text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF lane IS NULL OR NOT tireless.is_lane_name(lane) THEN
        RAISE EXCEPTION 'lane must be 1 to 63 letters, digits, ".", "-" or "_", got %', coalesce(quote_literal(left(lane, 80)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_lane(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_lane(lane text) IS 'Raises TL005 unless lane is a lane name.';

--
-- Name: check_lease(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_lease(lease interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF NOT tireless.is_lease(lease) THEN
        RAISE EXCEPTION 'lease must be more than 0 and at most 1 day, got %', coalesce(lease::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'A long run keeps its lease by renewing it.';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_lease(lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_lease(lease interval) IS 'Raises TL005 unless 0 < lease <= 1 day (tireless.is_lease).';

--
-- Name: check_path_globs(text, text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_path_globs(what text, globs text[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
DECLARE
    glob text;
BEGIN
    IF array_ndims(globs) > 1 THEN
        RAISE EXCEPTION '% must be a list of globs, got an array of % dimensions', what, array_ndims(globs)
            USING ERRCODE = 'TL005';
    END IF;
    IF cardinality(globs) > 100 THEN
        RAISE EXCEPTION '% must be at most 100 globs, got %', what, cardinality(globs) USING ERRCODE = 'TL005';
    END IF;
    FOREACH glob IN ARRAY coalesce(globs, '{}') LOOP
        IF glob IS NULL OR glob !~ '^[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254}$' THEN
            RAISE EXCEPTION '% glob must be 1 to 255 characters, no control character, not starting with /, got %',
                what, coalesce(quote_literal(left(glob, 300)), 'null')
                USING ERRCODE = 'TL005',
                      HINT = 'A glob matches a path of the repository (no leading /): * matches / too, '
                             'and a glob ending in / matches everything under it (.github/, docs/*.md).';
        END IF;
    END LOOP;
END;
$_$;

--
-- Name: FUNCTION check_path_globs(what text, globs text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_path_globs(what text, globs text[]) IS 'Raises TL005 naming the setting (what) and the glob unless globs is null or a list of at most 100 path globs, each 1 to 255 characters, no control character, not starting with /.';

--
-- Name: check_ref_name(text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_ref_name(what text, name text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF name IS NULL OR NOT tireless.is_ref_name(name) THEN
        RAISE EXCEPTION '% must be a git ref name, got %', what, coalesce(quote_literal(left(name, 300)), 'null')
            USING ERRCODE = 'TL009',
                  HINT = 'A ref name as git check-ref-format allows, at most 255 characters, without blanks, '
                         'control characters, `, <, > or ".';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_ref_name(what text, name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_ref_name(what text, name text) IS 'Raises TL009 naming the argument (what) and its value unless name is a ref name (tireless.is_ref_name).';

--
-- Name: check_repo(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_repo(forge text, owner text, repo text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF forge IS NULL OR length(forge) NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'forge must be 1 to 100 characters, got %', coalesce(quote_literal(left(forge, 120)), 'null') USING ERRCODE = 'TL005';
    END IF;
    IF owner IS NULL OR length(owner) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'owner must be 1 to 200 characters, got %', coalesce(quote_literal(left(owner, 220)), 'null') USING ERRCODE = 'TL005';
    END IF;
    IF repo IS NULL OR length(repo) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'repo must be 1 to 200 characters, got %', coalesce(quote_literal(left(repo, 220)), 'null') USING ERRCODE = 'TL005';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_repo(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_repo(forge text, owner text, repo text) IS 'Raises TL005 unless forge (1-100 characters), owner and repo (1-200 each) are given.';

--
-- Name: check_run_limit(text, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_run_limit(name text, span interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF span <= interval '0' OR span > interval '30 days' THEN
        RAISE EXCEPTION '% must be null (no limit) or more than 0 and at most 30 days, got %', name, span
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_run_limit(name text, span interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_run_limit(name text, span interval) IS 'Raises TL005 (naming the setting) unless the limit is null or 0 < limit <= 30 days.';

--
-- Name: check_spend_budget(bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_spend_budget(tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
    what text;
    amount numeric;
BEGIN
    FOR what, amount IN VALUES ('tokens_per_day', check_spend_budget.tokens_per_day::numeric),
                               ('cost_per_day', check_spend_budget.cost_per_day),
                               ('tokens_per_job', check_spend_budget.tokens_per_job::numeric),
                               ('cost_per_job', check_spend_budget.cost_per_job),
                               ('tokens_per_attempt', check_spend_budget.tokens_per_attempt::numeric),
                               ('cost_per_attempt', check_spend_budget.cost_per_attempt),
                               ('tokens_per_issue', check_spend_budget.tokens_per_issue::numeric),
                               ('cost_per_issue', check_spend_budget.cost_per_issue) LOOP
        IF amount < 0 OR amount > 1e15 THEN
            RAISE EXCEPTION '% must be null (no budget) or from 0 to 1e15, got %', what, amount USING ERRCODE = 'TL005';
        END IF;
    END LOOP;
END;
$$;

--
-- Name: FUNCTION check_spend_budget(tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_spend_budget(tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) IS 'Raises TL005 (naming the setting) unless each budget of tokens or cost (USD), per day, job, attempt and issue, is null or from 0 to 1e15.';

--
-- Name: check_tracked(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_tracked(forge text, owner text, repo text) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    PERFORM tireless.check_repo(check_tracked.forge, check_tracked.owner, check_tracked.repo);
    IF NOT EXISTS (SELECT FROM tireless.tracked_repo t
                    WHERE (t.forge, t.owner, t.repo) = (check_tracked.forge, check_tracked.owner, check_tracked.repo)) THEN
        RAISE EXCEPTION 'repository %/%/% is not tracked', check_tracked.forge, check_tracked.owner, check_tracked.repo
            USING ERRCODE = 'TL008', HINT = 'Track it first with tireless.track_repo.';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_tracked(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_tracked(forge text, owner text, repo text) IS 'Raises TL005 for a malformed repository key and TL008 unless the repository is tracked.';

--
-- Name: check_worker(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_worker(worker text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF NOT tireless.is_worker_name(worker) THEN
        RAISE EXCEPTION 'worker must be a name of 1 to 200 characters, got %', coalesce(quote_literal(left(worker, 220)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_worker(worker text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_worker(worker text) IS 'Raises TL005 unless worker is a non-blank name of at most 200 characters (tireless.is_worker_name).';

--
-- Name: forge_write; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.forge_write (
    id bigint NOT NULL,
    kind text NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    job_id bigint,
    task integer,
    report_id bigint,
    ask_id bigint,
    queued_at timestamp with time zone DEFAULT now() NOT NULL,
    written_at timestamp with time zone,
    failures integer DEFAULT 0 NOT NULL,
    next_try_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    last_error_at timestamp with time zone,
    label_id bigint,
    CONSTRAINT forge_write_failures_not_negative CHECK ((failures >= 0)),
    CONSTRAINT forge_write_kind_known CHECK ((kind = ANY (ARRAY['pull'::text, 'task'::text, 'comment'::text, 'cycle'::text, 'checklist'::text, 'reply'::text, 'unknown_label'::text]))),
    CONSTRAINT forge_write_names_its_target CHECK (
CASE kind
    WHEN 'task'::text THEN ((job_id IS NOT NULL) AND (task IS NOT NULL) AND (report_id IS NULL) AND (ask_id IS NULL) AND (label_id IS NULL))
    WHEN 'cycle'::text THEN ((report_id IS NOT NULL) AND (job_id IS NULL) AND (task IS NULL) AND (ask_id IS NULL) AND (label_id IS NULL))
    WHEN 'reply'::text THEN ((ask_id IS NOT NULL) AND (job_id IS NULL) AND (task IS NULL) AND (report_id IS NULL) AND (label_id IS NULL))
    WHEN 'unknown_label'::text THEN ((label_id IS NOT NULL) AND (job_id IS NULL) AND (task IS NULL) AND (report_id IS NULL) AND (ask_id IS NULL))
    ELSE ((job_id IS NOT NULL) AND (task IS NULL) AND (report_id IS NULL) AND (ask_id IS NULL) AND (label_id IS NULL))
END)
);

--
-- Name: TABLE forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.forge_write IS 'The outbox of the mirror''s forge writes other than labels: one row per write queued (kind pull: a delivery''s pull request, job_id; task: a plan task''s child issue, job_id and task; comment: a finished job''s outcome comment, job_id; cycle: the comment of a dependency cycle, report_id; checklist: the edits of an outcome comment''s checklist of children, job_id, standing while the checklist written has an unchecked child; reply: the conversation''s reply to an ask, ask_id; unknown_label: the comment that names a label meaning nothing, label_id), on issue number. What is written is rendered from the store when it is due (tireless.forge_writes_due); written_at is when it landed (tireless.record_forge_write), failures, next_try_at and last_error its retries (tireless.forge_write_backoff).';

--
-- Name: COLUMN forge_write.label_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.forge_write.label_id IS 'The label report a write of kind unknown_label posts (tireless.label_report).';

--
-- Name: CONSTRAINT forge_write_failures_not_negative ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_failures_not_negative ON tireless.forge_write IS 'The failures in a row of a write are counted from 0.';

--
-- Name: CONSTRAINT forge_write_kind_known ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_kind_known ON tireless.forge_write IS 'A write is one of the seven kinds the mirror makes (tireless.forge_writes_due dispatches by it).';

--
-- Name: CONSTRAINT forge_write_names_its_target ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_names_its_target ON tireless.forge_write IS 'Each kind names what it writes and nothing else: a job (pull, comment, checklist), a job and its task (task), a cycle report (cycle), an ask (reply) or a label report (unknown_label).';

--
-- Name: checklist_write(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.checklist_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('job_id', c.job_id, 'number', c.number,
                              'body', tireless.finished_job_comment(j) || E'\n\n' || fresh.checklist || E'\n\n'
                                      || tireless.comment_marker(j.id),
                              'marker', tireless.comment_marker(j.id), 'checklist', fresh.checklist)
      FROM tireless.mirror_comment c
      JOIN tireless.job j ON j.id = c.job_id
     CROSS JOIN tireless.policy p
     CROSS JOIN LATERAL (SELECT tireless.children_checklist(j) AS checklist) AS fresh
     WHERE c.job_id = w.job_id
       -- A checklist with every child checked is final.
       AND c.checklist IS NOT NULL AND strpos(c.checklist, '- [ ] ') > 0
       AND c.written_at IS NOT NULL AND p.mirror_comments
       AND fresh.checklist IS NOT NULL AND fresh.checklist <> c.checklist;
$$;

--
-- Name: FUNCTION checklist_write(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.checklist_write(w tireless.forge_write) IS 'What a checklist write (kind checklist) edits, as tireless.forge_writes_due lists it, when the outcome comment''s checklist of children (tireless.children_checklist) differs from the one last written, while the written one still has an unchecked child: {job_id, number, body (the whole new body ending with the marker line, at most tireless.forge_body_limit() characters, as comment_write''s), marker, checklist (the new one)}. An unchanged checklist is null (not due), so it costs the forge no request.';

--
-- Name: checklist_written(tireless.forge_write, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.checklist_written(w tireless.forge_write, result jsonb) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    shown text := checklist_written.result ->> 'checklist';
BEGIN
    IF shown IS NULL OR btrim(shown) = '' THEN
        RAISE EXCEPTION 'checklist must be the text written, got %', coalesce(quote_literal(shown), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.mirror_comment c SET checklist = shown, checklist_written_at = now() WHERE c.job_id = w.job_id;
    RETURN strpos(shown, '- [ ] ') > 0;
END;
$$;

--
-- Name: FUNCTION checklist_written(w tireless.forge_write, result jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.checklist_written(w tireless.forge_write, result jsonb) IS 'The forge shows the outcome comment of write w with result.checklist: recorded as the one written, so it is listed again only when the children change; returns whether the write stands (a child is still unchecked). TL005 without the checklist.';

--
-- Name: plan_task; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.plan_task (
    job_id bigint NOT NULL,
    task integer NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    attempt integer NOT NULL,
    proposal boolean NOT NULL,
    title text NOT NULL,
    body text DEFAULT ''::text NOT NULL,
    lane text,
    depends_on jsonb DEFAULT '[]'::jsonb NOT NULL,
    child_number integer,
    opened_at timestamp with time zone,
    CONSTRAINT an_opened_child_has_its_time CHECK (((child_number IS NULL) = (opened_at IS NULL))),
    CONSTRAINT plan_task_body_bounded CHECK ((length(body) <= 60000)),
    CONSTRAINT plan_task_child_positive CHECK ((child_number > 0)),
    CONSTRAINT plan_task_depends_on_is_a_list CHECK ((jsonb_typeof(depends_on) = 'array'::text)),
    CONSTRAINT plan_task_index_bounded CHECK (((task >= 0) AND (task <= 49))),
    CONSTRAINT plan_task_title_bounded CHECK (((length(title) >= 1) AND (length(title) <= 200)))
);

--
-- Name: TABLE plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.plan_task IS 'The tasks of a plan job''s plan file (children) or a discover job''s proposals file (proposals), as the last attempt that attached one handed them over (attach_plan), and the issue the mirror opened for each once the job was delivered (plan_tasks_due, record_plan_task). Private.';

--
-- Name: COLUMN plan_task.job_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.job_id IS 'The plan (or discover) job whose attempt handed the task back: the parent of the child''s job.';

--
-- Name: COLUMN plan_task.task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.task IS 'The task''s index in the file, from 0 (depends_on counts the same way).';

--
-- Name: COLUMN plan_task.forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.forge IS 'The job''s forge (the child is opened in the job''s repository).';

--
-- Name: COLUMN plan_task.owner; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.owner IS 'The job''s repository owner.';

--
-- Name: COLUMN plan_task.repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.repo IS 'The job''s repository.';

--
-- Name: COLUMN plan_task.attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.attempt IS 'The attempt that attached it: only the delivering attempt''s tasks are opened.';

--
-- Name: COLUMN plan_task.proposal; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.proposal IS 'true: a discover job''s proposal (opened without the opt-in label); false: a plan''s child.';

--
-- Name: COLUMN plan_task.title; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.title IS 'The task''s title as the agent wrote it (1 to 200 characters).';

--
-- Name: COLUMN plan_task.body; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.body IS 'The task''s body as the agent wrote it (at most 60000 characters).';

--
-- Name: COLUMN plan_task.lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.lane IS 'The lane its agent label names; null: no agent label.';

--
-- Name: COLUMN plan_task.depends_on; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.depends_on IS 'The tasks (indexes) and issues ("#N") it depends on, in the file''s order.';

--
-- Name: COLUMN plan_task.child_number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.child_number IS 'The issue the mirror opened (or found by its marker) for the task; null until then.';

--
-- Name: COLUMN plan_task.opened_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.plan_task.opened_at IS 'When the mirror recorded the child issue.';

--
-- Name: CONSTRAINT an_opened_child_has_its_time ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT an_opened_child_has_its_time ON tireless.plan_task IS 'A recorded child has the time it was recorded, and only then.';

--
-- Name: CONSTRAINT plan_task_body_bounded ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT plan_task_body_bounded ON tireless.plan_task IS 'A task''s body is at most 60000 characters (an issue body holds 65536: room for the links and the marker).';

--
-- Name: CONSTRAINT plan_task_child_positive ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT plan_task_child_positive ON tireless.plan_task IS 'An issue number is positive.';

--
-- Name: CONSTRAINT plan_task_depends_on_is_a_list ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT plan_task_depends_on_is_a_list ON tireless.plan_task IS 'depends_on is a JSON list.';

--
-- Name: CONSTRAINT plan_task_index_bounded ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT plan_task_index_bounded ON tireless.plan_task IS 'A plan has at most 50 tasks, indexed from 0.';

--
-- Name: CONSTRAINT plan_task_title_bounded ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT plan_task_title_bounded ON tireless.plan_task IS 'A task''s title is 1 to 200 characters (an issue title).';

--
-- Name: child_status(tireless.plan_task); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.child_status(task tireless.plan_task, OUT done boolean, OUT status text, OUT title text) RETURNS record
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(newest.state = 'delivered' OR s.state = 'closed', false),
           CASE WHEN task.child_number IS NULL THEN 'not opened yet'
                WHEN newest.state = 'delivered' THEN 'delivered'
                WHEN s.state = 'closed' THEN 'closed'
                WHEN newest.state = 'pending' AND newest.waiting_on IS NOT NULL
                     THEN 'waiting on ' || array_to_string(newest.waiting_on, ', ')
                WHEN newest.state IS NOT NULL THEN newest.state::text
                WHEN task.proposal THEN 'proposed: add the opt-in label to run it'
                ELSE 'open' END,
           left(tireless.safe_report_text(regexp_replace(btrim(coalesce(s.title, task.title)), '\s+', ' ', 'g')), 200)
      FROM (SELECT) AS one
      LEFT JOIN tireless.issue s
             ON (s.forge, s.owner, s.repo, s.number) = (task.forge, task.owner, task.repo, task.child_number)
      LEFT JOIN LATERAL (SELECT j.state, j.waiting_on FROM tireless.job j
                          WHERE (j.forge, j.owner, j.repo, j.number) = (task.forge, task.owner, task.repo, task.child_number)
                          ORDER BY j.id DESC LIMIT 1) AS newest ON true;
$$;

--
-- Name: FUNCTION child_status(task tireless.plan_task, OUT done boolean, OUT status text, OUT title text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.child_status(task tireless.plan_task, OUT done boolean, OUT status text, OUT title text) IS 'The state of a plan''s task as its parent''s checklist says it: done (the child''s newest job delivered, or its issue closed), the words (delivered, closed, waiting on #N, pending, claimed, failed, cancelled; open or proposed with no job yet; not opened yet) and the child''s title (the issue''s as last read, else the task''s; blanks folded, made safe by safe_report_text, cut to 200 characters).';

--
-- Name: children_checklist(tireless.job); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.children_checklist(job tireless.job) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    -- At most the body's limit less 8192 characters (the outcome line, some of the report, the marker
    -- line): the lines that fit, in order, then how many more there are.
    SELECT CASE WHEN job.kind::text = 'discover' THEN 'Proposals:' ELSE 'Tasks:' END
           || coalesce(E'\n' || string_agg(l.line, E'\n' ORDER BY l.task)
                                 FILTER (WHERE l.total <= l.room OR l.upto <= l.room - 20), '')
           || coalesce(E'\n… and ' || nullif(count(*) FILTER (WHERE l.total > l.room AND l.upto > l.room - 20), 0)
                       || ' more', '')
      FROM (SELECT t.task, line.text AS line,
                   sum(length(line.text) + 1) OVER (ORDER BY t.task) AS upto,
                   sum(length(line.text) + 1) OVER () AS total,
                   tireless.forge_body_limit() - 8192 - length('Proposals:') AS room
              FROM tireless.plan_task t
             CROSS JOIN LATERAL tireless.child_status(t) AS s
             CROSS JOIN LATERAL (SELECT '- [' || CASE WHEN s.done THEN 'x' ELSE ' ' END || '] '
                                        || coalesce('#' || t.child_number || ' ', '') || s.title || ' — ' || s.status) AS line(text)
             WHERE t.job_id = job.id AND t.attempt = job.attempts AND job.state = 'delivered') AS l
    HAVING count(*) > 0;
$$;

--
-- Name: FUNCTION children_checklist(job tireless.job); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.children_checklist(job tireless.job) IS 'The checklist of the children a delivered plan job (or the proposals a discover job) opened, in the file''s order, as its outcome comment shows it: `- [x] #13 Title — delivered`, `- [ ] #12 Title — waiting on #11` (tireless.child_status); at most tireless.forge_body_limit() less 8192 characters, the lines past that said as "… and 3 more"; null when the job opened none.';

--
-- Name: claim_in_turn(text, text, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.claim_in_turn(worker text, lane text, lease interval) RETURNS SETOF tireless.job
    LANGUAGE plpgsql
    AS $$
DECLARE
    turn tireless.lane_repo;
    after_at timestamptz := '-infinity';
    after_id bigint := 0;
    next_job bigint;
BEGIN
    LOOP
        SELECT * INTO turn FROM tireless.lane_repo r
         WHERE r.lane = claim_in_turn.lane AND r.has_work AND (r.last_claimed_at, r.id) > (after_at, after_id)
         ORDER BY r.last_claimed_at, r.id
         LIMIT 1
           FOR UPDATE SKIP LOCKED;
        EXIT WHEN NOT FOUND;
        IF NOT turn.limited OR tireless.repo_has_room(turn.forge, turn.owner, turn.repo) THEN
            SELECT j.id INTO next_job FROM tireless.job j
             WHERE j.state = 'pending' AND j.available_at <= now() AND j.waiting_on IS NULL
               AND (j.lane, j.forge, j.owner, j.repo) >= (turn.lane, turn.forge, turn.owner, turn.repo)
               AND (j.lane, j.forge, j.owner, j.repo) <= (turn.lane, turn.forge, turn.owner, turn.repo)
             ORDER BY j.lane, j.forge, j.owner, j.repo, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED;
            EXIT WHEN FOUND;
        END IF;
        -- Nothing claimable here (in backoff, locked, or no room): a repository with no pending job left
        -- in the lane that waits for nothing leaves the walk until one becomes pending, or is released
        -- from its wait, again (changed_jobs_take_turns).
        UPDATE tireless.lane_repo r SET has_work = false
         WHERE r.id = turn.id
           AND NOT EXISTS (SELECT FROM tireless.job j
                            WHERE j.state = 'pending' AND j.waiting_on IS NULL AND j.lane = turn.lane
                              AND (j.forge, j.owner, j.repo) = (turn.forge, turn.owner, turn.repo));
        after_at := turn.last_claimed_at;
        after_id := turn.id;
        turn := NULL;
    END LOOP;
    IF next_job IS NULL THEN
        -- Every repository with work is taken by another claimer at this moment (several runners, few
        -- repositories): the lane's oldest ready job of a repository without limits, as before turns,
        -- rather than nothing. A limited lane never gets here: its claims take turns under its row lock.
        IF EXISTS (SELECT FROM tireless.lane l WHERE l.name = claim_in_turn.lane AND l.limited) THEN
            RETURN;
        END IF;
        SELECT j.id INTO next_job FROM tireless.job j
         WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_in_turn.lane]) AND j.available_at <= now() AND j.waiting_on IS NULL
           AND NOT EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (j.forge, j.owner, j.repo))
         ORDER BY j.lane, j.id
         LIMIT 1
           FOR UPDATE OF j SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        -- Its turn is counted when no other claimer holds it (that one moves it to the back anyway).
        SELECT r.* INTO turn FROM tireless.lane_repo r JOIN tireless.job j USING (lane, forge, owner, repo)
         WHERE j.id = next_job
           FOR UPDATE OF r SKIP LOCKED;
    END IF;
    -- Invariant 4: the job's row lock (SKIP LOCKED above) is held until the claim commits.
    RETURN QUERY
    WITH claimed AS (
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_in_turn.worker,
               claimed_login = session_user,  -- one login, one runner (0019_holder_login)
               claim_expires_at = now() + claim_in_turn.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
         WHERE j.id = next_job
        RETURNING j.*
    ), counted AS (
        UPDATE tireless.lane_repo r
           SET last_claimed_at = clock_timestamp(),
               runs = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.runs + 1 ELSE 1 END,
               agent_time = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.agent_time ELSE interval '0' END,
               spend_day = (now() AT TIME ZONE 'UTC')::date
         WHERE r.id = turn.id
    )
    SELECT * FROM claimed;
END;
$$;

--
-- Name: FUNCTION claim_in_turn(worker text, lane text, lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.claim_in_turn(worker text, lane text, lease interval) IS 'claim_next in one lane: the oldest ready pending job of the repository whose last claim in the lane is oldest (round-robin), skipping repositories that are locked by another claimer, at their capacity or out of budget; moves that repository to the back and counts the run. Zero rows when nothing is claimable.';

--
-- Name: claim_next(text, text[], interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.claim_next(worker text, lanes text[], lease interval DEFAULT '00:10:00'::interval) RETURNS SETOF tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    malformed boolean;
    open_lanes text[];
    any_capped boolean;
    capped record;
    spent record;
    next_lane text;
BEGIN
    -- The common case: a well-formed call for one lane that hands out work without a count (no
    -- settings row, or one that is unlimited, not paused and not tripped). One test, not one per
    -- argument: PL/pgSQL prepares each expression again in every transaction, and every claim is a
    -- transaction of its own.
    IF tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)
       AND cardinality(claim_next.lanes) = 1 AND tireless.is_lane_name(claim_next.lanes[1]) THEN
        -- A lane where one repository has work has no turns to take: its oldest ready job, in one
        -- statement, as before 0024, and no write of the turn (a lane with a budget of runs, or a
        -- repository with a limit, is counted on the general path). sole_turn is that repository,
        -- or no row when the lane's turns with work are several, or one that is limited; then the
        -- statement claims nothing (a one-time filter: no job is read) and the walk below decides.
        RETURN QUERY
        WITH sole_turn AS (
            SELECT min(t.forge) AS forge, min(t.owner) AS owner, min(t.repo) AS repo
              FROM (SELECT r.forge, r.owner, r.repo, r.limited FROM tireless.lane_repo r
                     WHERE r.lane = claim_next.lanes[1] AND r.has_work
                     LIMIT 2) t
            HAVING count(*) = 1 AND NOT bool_or(t.limited)
        ), candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_next.lanes[1]]) AND j.available_at <= now() AND j.waiting_on IS NULL
               AND EXISTS (SELECT FROM sole_turn)
               AND (j.forge, j.owner, j.repo) = (SELECT s.forge, s.owner, s.repo FROM sole_turn s)
               AND NOT EXISTS (SELECT FROM tireless.lane l
                                WHERE l.name = claim_next.lanes[1]
                                  AND (l.limited OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until)))
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_next.worker,
               claimed_login = session_user,
               claim_expires_at = now() + claim_next.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
          FROM candidate
         WHERE j.id = candidate.id
        RETURNING j.*;
        IF FOUND THEN
            RETURN;
        END IF;
        -- Several repositories, or nothing ready in the one: their turns (claim_in_turn).
        IF NOT EXISTS (SELECT FROM tireless.lane l
                        WHERE l.name = claim_next.lanes[1]
                          AND (l.limited OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until))) THEN
            RETURN QUERY SELECT * FROM tireless.claim_in_turn(claim_next.worker, claim_next.lanes[1], claim_next.lease);
            RETURN;
        END IF;
        -- Paused or tripped: nothing. Limited: the general path counts it.
        IF NOT EXISTS (SELECT FROM tireless.lane l WHERE l.name = claim_next.lanes[1] AND l.limited) THEN
            RETURN;
        END IF;
    ELSE
        IF NOT (tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)) THEN
            PERFORM tireless.check_worker(claim_next.worker);
            PERFORM tireless.check_lease(claim_next.lease);
        END IF;
        IF claim_next.lanes IS NULL OR cardinality(claim_next.lanes) > 100 THEN
            RAISE EXCEPTION 'lanes must be an array of at most 100 lane names, got %', coalesce(left(claim_next.lanes::text, 100), 'null')
                USING ERRCODE = 'TL005';
        END IF;
    END IF;

    -- One look at the lanes: is a name malformed, which lanes are open without a lock (no settings
    -- row, or unlimited, not paused and not tripped), and does any have a capacity or a budget.
    SELECT bool_or(r.name IS NULL OR NOT tireless.is_lane_name(r.name)),
           coalesce(array_agg(DISTINCT r.name) FILTER (
               WHERE l.name IS NULL
                  OR (NOT l.limited AND tireless.lane_hands_out_work(l.paused, l.tripped_until))), '{}'),
           bool_or(l.limited)
      INTO malformed, open_lanes, any_capped
      FROM unnest(claim_next.lanes) AS r(name)
      LEFT JOIN tireless.lane l ON l.name = r.name;
    IF malformed THEN
        PERFORM tireless.check_lane(r.name) FROM unnest(claim_next.lanes) AS r(name);
    END IF;

    -- A lane with a capacity or a budget is counted under its row lock, so concurrent claimers take
    -- its free slots one at a time and never hold more claims than the capacity or the budget allows.
    IF any_capped THEN
        FOR capped IN
            SELECT l.name, l.capacity, l.runs_per_day, l.agent_time_per_day FROM tireless.lane l
             WHERE l.name = ANY (claim_next.lanes)
               AND l.limited AND tireless.lane_hands_out_work(l.paused, l.tripped_until)
             ORDER BY l.name
               FOR UPDATE
        LOOP
            IF capped.capacity IS NOT NULL
               AND (SELECT count(*) FROM tireless.job j WHERE j.state = 'claimed' AND j.lane = capped.name) >= capped.capacity THEN
                CONTINUE;
            END IF;
            spent := tireless.lane_spend(capped.name);
            IF NOT tireless.budget_spent(spent.runs, spent.agent_time, capped.runs_per_day, capped.agent_time_per_day)
               AND tireless.lane_usage_spent(capped.name) IS NULL THEN
                open_lanes := open_lanes || capped.name;
            END IF;
        END LOOP;
    END IF;

    IF cardinality(open_lanes) = 0 THEN
        RETURN;
    END IF;

    -- One lane at a time, the lane whose oldest ready job is oldest first: each lane is an ordered
    -- scan of its own part of pending_jobs_in_claim_order, so neither finished jobs nor a backlog in
    -- another lane cost anything (bench/results.md). Written lane = ANY (ARRAY[lane]) ... ORDER BY
    -- j.lane, j.id on purpose: with lane = x and ORDER BY j.id the planner walks the primary key
    -- through every older job, finished or not, expecting a match at any moment.
    IF cardinality(open_lanes) > 1 THEN
        open_lanes := ARRAY(
            SELECT l.name FROM unnest(open_lanes) AS l(name)
             ORDER BY (SELECT j.id FROM tireless.job j
                        WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[l.name]) AND j.available_at <= now() AND j.waiting_on IS NULL
                        ORDER BY j.lane, j.id LIMIT 1) NULLS LAST);
    END IF;
    FOREACH next_lane IN ARRAY open_lanes LOOP
        RETURN QUERY SELECT * FROM tireless.claim_in_turn(claim_next.worker, next_lane, claim_next.lease);
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
END;
$$;

--
-- Name: FUNCTION claim_next(worker text, lanes text[], lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.claim_next(worker text, lanes text[], lease interval) IS 'Claims a claimable pending job in the given lanes for worker: state claimed, a lease of lease, a fresh claim_token, attempts + 1. The lane whose oldest ready job is oldest first; within a lane, the oldest ready job of the repository that has waited longest since its last claim (round-robin between repositories; a lane where one repository has work takes its oldest ready job without a turn). Skips paused, tripped and full lanes, lanes and repositories at their capacity or out of today''s budget, and jobs still in backoff. Zero rows when nothing is claimable; a lane nobody has configured simply holds no work.';

--
-- Name: claim_repos_to_poll(text, interval, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.claim_repos_to_poll(poller text, lease interval DEFAULT '00:05:00'::interval, max_repos integer DEFAULT 100) RETURNS TABLE(forge text, owner text, repo text, kind text, base_url text, cursor timestamp with time zone, etag text, full_listing boolean, live_numbers integer[], opt_in text, waiting_numbers integer[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_worker(claim_repos_to_poll.poller);
    PERFORM tireless.check_lease(claim_repos_to_poll.lease);
    IF claim_repos_to_poll.max_repos IS NULL OR claim_repos_to_poll.max_repos NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_repos must be from 1 to 10000, got %', coalesce(claim_repos_to_poll.max_repos::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    RETURN QUERY
    WITH due AS (
        SELECT rp.forge, rp.owner, rp.repo
          FROM tireless.repo_poll rp
          JOIN tireless.forge f ON f.name = rp.forge
         WHERE rp.next_poll_at <= now()
           AND (rp.backoff_until IS NULL OR rp.backoff_until <= now())
           AND (rp.poll_lease_until IS NULL OR rp.poll_lease_until <= now())
           AND (f.limited_until IS NULL OR f.limited_until <= now())
         ORDER BY rp.next_poll_at, rp.forge, rp.owner, rp.repo
         LIMIT claim_repos_to_poll.max_repos
           FOR UPDATE OF rp SKIP LOCKED
    )
    UPDATE tireless.repo_poll rp
       SET polled_by = claim_repos_to_poll.poller, poll_lease_until = now() + claim_repos_to_poll.lease,
           poll_again = false
      FROM due, tireless.forge f
     WHERE (rp.forge, rp.owner, rp.repo) = (due.forge, due.owner, due.repo) AND f.name = rp.forge
    RETURNING rp.forge, rp.owner, rp.repo, f.kind::text, f.base_url, rp.cursor, rp.etag,
              rp.last_success_at IS NULL OR rp.reads_since_full >= 9,
              -- A full listing fetches on its own each live job's issue it did not show, and each
              -- issue of this repository a waiting job (of any repository of the forge) depends on
              -- that the store has never read (a closed one is in no listing of open issues): read
              -- once, then known.
              ARRAY(SELECT j.number FROM tireless.job j
                     WHERE (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo)
                       AND j.state IN ('pending', 'claimed')
                    UNION
                    SELECT d.depends_on_number FROM tireless.issue_dependency d
                      JOIN tireless.job j
                        ON (j.forge, j.owner, j.repo, j.number) = (d.forge, d.owner, d.repo, d.number)
                     WHERE (d.forge, d.depends_on_owner, d.depends_on_repo) = (rp.forge, rp.owner, rp.repo)
                       AND j.state = 'pending' AND j.waiting_on IS NOT NULL
                       AND NOT EXISTS (SELECT FROM tireless.issue s
                                        WHERE (s.forge, s.owner, s.repo, s.number)
                                              = (d.forge, d.depends_on_owner, d.depends_on_repo, d.depends_on_number))
                     ORDER BY 1),
              -- The opt-in label: the poller reads the forge's relations of the issues carrying it.
              (SELECT p.label_prefix FROM tireless.policy p),
              -- A full listing reads the forge's relations of the issues of the repository's waiting
              -- jobs again: a change of them need not move the issue's updated_at (GitHub), and
              -- Gitea sends no webhook for one.
              ARRAY(SELECT j.number FROM tireless.job j
                     WHERE (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo)
                       AND j.state = 'pending' AND j.waiting_on IS NOT NULL
                     ORDER BY 1);
END;
$$;

--
-- Name: FUNCTION claim_repos_to_poll(poller text, lease interval, max_repos integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.claim_repos_to_poll(poller text, lease interval, max_repos integer) IS 'Leases to poller (for lease) up to max_repos due repositories of registered forges that are not stopped: next poll time reached, not backing off, lease free or expired; FOR UPDATE SKIP LOCKED, so two pollers never get the same one. Returns each with its forge kind and URL, cursor, ETag and whether to list it in full (the first read and every tenth), the issue numbers of its live jobs and of the issues of the repository waiting jobs depend on that the store has never read, the opt-in label (the policy''s label_prefix: the poller reads the forge''s dependency relations of the changed issues carrying it) and the issue numbers of its waiting jobs (whose relations a full listing reads again).';

--
-- Name: closing_fence(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.closing_fence(body text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $_$
DECLARE
    fence text[];
    indent text;
    marks text;
BEGIN
    -- CommonMark's fenced code blocks: a line of at most 3 spaces then 3 or more backticks (no backtick
    -- after them) or tildes opens one; a line of the same character, at least as many, and blanks
    -- closes it. The closing line keeps the opener's indent, so it closes it inside a list item too.
    FOR fence IN SELECT m.parts FROM regexp_matches(closing_fence.body, '^( {0,3})(`{3,}|~{3,})(.*)$', 'gn')
                                     WITH ORDINALITY AS m(parts, n) ORDER BY m.n LOOP
        IF marks IS NULL THEN
            IF NOT (left(fence[2], 1) = '`' AND strpos(fence[3], '`') > 0) THEN
                indent := fence[1];
                marks := fence[2];
            END IF;
        ELSIF left(fence[2], 1) = left(marks, 1) AND length(fence[2]) >= length(marks) AND fence[3] ~ '^[ \t\r]*$' THEN
            marks := NULL;
        END IF;
    END LOOP;
    RETURN indent || marks;
END;
$_$;

--
-- Name: FUNCTION closing_fence(body text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.closing_fence(body text) IS 'The line that closes the fenced code block markdown body leaves open at its end (the opener''s indent and fence); null when none is open. A body cut short is closed with it, so nothing after it renders as code.';

--
-- Name: command_in(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.command_in(body text, OUT verb text, OUT instruction text) RETURNS record
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    -- The first line that is not blank must be the command; the instruction is the rest of that
    -- line and every line after it.
    SELECT lower(m[1]), btrim(m[2], E' \t\r\n')
      FROM regexp_match(coalesce(command_in.body, ''),
                        '^[ \t\r\n]*/tireless[ \t]+(revise|stop|implement|plan|discover)(?![[:alnum:]_-])(.*)$', 'i') AS m;
$_$;

--
-- Name: FUNCTION command_in(body text, OUT verb text, OUT instruction text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.command_in(body text, OUT verb text, OUT instruction text) IS 'The `/tireless` command a comment starts with (revise, stop, implement, plan or discover, any case) and the instruction after it (the rest of its text, trimmed); nulls when the comment is no command.';

--
-- Name: comment_marker(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.comment_marker(job_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:job:%s -->'::text, job_id);

--
-- Name: FUNCTION comment_marker(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.comment_marker(job_id bigint) IS 'The hidden last line of a job''s outcome comment; the mirror counts it only in a comment written by its own forge account.';

--
-- Name: comment_write(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.comment_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('job_id', c.job_id, 'number', c.number,
                              'body', tireless.finished_job_comment(j) || coalesce(E'\n\n' || children.checklist, '')
                                      || E'\n\n' || tireless.comment_marker(j.id),
                              'marker', tireless.comment_marker(j.id), 'checklist', children.checklist)
      FROM tireless.mirror_comment c
      JOIN tireless.job j ON j.id = c.job_id
     CROSS JOIN LATERAL (SELECT tireless.children_checklist(j) AS checklist) AS children
     WHERE c.job_id = w.job_id AND c.written_at IS NULL
       -- A delivery's comment names its pull request: it waits for the pull request's write, unless
       -- that failed three times in a row or was queued an hour ago (then it names the branch only).
       AND NOT EXISTS (SELECT FROM tireless.forge_write p
                        WHERE p.kind = 'pull' AND p.job_id = c.job_id AND p.written_at IS NULL
                          AND p.failures < 3 AND p.queued_at > now() - interval '1 hour')
       -- A plan's comment lists its children: it waits for them to be opened, unless opening one
       -- failed three times in a row or the job was delivered an hour ago (then it says which are not).
       AND NOT (j.state = 'delivered' AND j.updated_at > now() - interval '1 hour'
                AND EXISTS (SELECT FROM tireless.plan_task t
                             WHERE t.job_id = c.job_id AND t.attempt = j.attempts AND t.child_number IS NULL)
                AND NOT EXISTS (SELECT FROM tireless.plan_task t
                                  JOIN tireless.forge_write o ON o.kind = 'task' AND (o.job_id, o.task) = (t.job_id, t.task)
                                 WHERE t.job_id = c.job_id AND t.attempt = j.attempts AND t.child_number IS NULL
                                   AND o.failures >= 3));
$$;

--
-- Name: FUNCTION comment_write(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.comment_write(w tireless.forge_write) IS 'What an outcome comment write (kind comment) posts, as tireless.forge_writes_due lists it: {job_id, number, body, marker, checklist}: the body ends with its marker line (at most tireless.forge_body_limit() characters: finished_job_comment cuts the report to fit) and holds the checklist of the children the job opened (tireless.children_checklist; null when none) before the marker. Null (not due) while a delivered job''s comment waits for its pull request''s write so that it names it, unless that write failed three times in a row or was queued an hour ago, or a delivered plan''s (or discovery''s) waits for its children to be opened so that it lists them, unless opening one failed three times in a row or the job was delivered an hour ago.';

--
-- Name: comment_written(tireless.forge_write, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.comment_written(w tireless.forge_write, result jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    shown text := comment_written.result ->> 'checklist';
BEGIN
    -- The checklist the posted comment holds (as comment_write gave it): later edits start from it.
    UPDATE tireless.mirror_comment c
       SET written_at = coalesce(c.written_at, now()),
           checklist = coalesce(shown, c.checklist),
           checklist_written_at = CASE WHEN shown IS NOT NULL THEN now() ELSE c.checklist_written_at END
     WHERE c.job_id = w.job_id;
    -- While a child is unchecked, the checklist is edited as the children change (tireless.checklist_write).
    IF strpos(shown, '- [ ] ') > 0 THEN
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)
        VALUES ('checklist', w.forge, w.owner, w.repo, w.number, w.job_id)
        ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING;
    END IF;
END;
$$;

--
-- Name: FUNCTION comment_written(w tireless.forge_write, result jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.comment_written(w tireless.forge_write, result jsonb) IS 'The forge shows the outcome comment of write w: recorded as written, with result''s checklist (the one comment_write gave), which tireless.checklist_write compares with the current one; a checklist with an unchecked child queues the checklist''s standing write.';

--
-- Name: conversation_to_read(text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.conversation_to_read(forge text, owner text, repo text, poller text, OUT comments_cursor timestamp with time zone, OUT comments_etag text, OUT pulls jsonb, OUT waiting boolean) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    checks_wanted boolean;
BEGIN
    PERFORM tireless.held_poll(conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo,
                               conversation_to_read.poller);
    -- A repository read for the first time starts from now: commands written before ask nothing.
    INSERT INTO tireless.conversation_read (forge, owner, repo)
    VALUES (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo)
    ON CONFLICT DO NOTHING;
    SELECT r.comments_cursor, r.comments_etag INTO conversation_to_read.comments_cursor, conversation_to_read.comments_etag
      FROM tireless.conversation_read r
     WHERE (r.forge, r.owner, r.repo) = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo);
    SELECT coalesce(rr.revise_on_failed_checks, false) INTO checks_wanted
      FROM (SELECT) AS one
      LEFT JOIN tireless.repo_revisions rr
        ON (rr.forge, rr.owner, rr.repo) = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo);
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'number', p.number, 'pull', p.pull_number, 'head', p.head, 'reviews_etag', pr.reviews_etag,
               'read_to', pr.read_to,
               'read_checks', checks_wanted AND p.head IS DISTINCT FROM pr.checks_head,
               'seen_reviews', ARRAY(SELECT a.source_id::bigint FROM tireless.ask a
                                      WHERE (a.forge, a.owner, a.repo, a.pull_number)
                                            = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo, p.pull_number)
                                        AND a.source = 'review' ORDER BY a.id))
               ORDER BY p.number), '[]')
      INTO conversation_to_read.pulls
      FROM tireless.open_pulls(conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo) AS p
      LEFT JOIN tireless.pull_read pr
        ON (pr.forge, pr.owner, pr.repo, pr.pull_number)
           = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo, p.pull_number);
    conversation_to_read.waiting := EXISTS (
        SELECT FROM tireless.ask a
         WHERE (a.forge, a.owner, a.repo) = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo)
           AND a.outcome = 'waiting');
END;
$$;

--
-- Name: FUNCTION conversation_to_read(forge text, owner text, repo text, poller text, OUT comments_cursor timestamp with time zone, OUT comments_etag text, OUT pulls jsonb, OUT waiting boolean); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.conversation_to_read(forge text, owner text, repo text, poller text, OUT comments_cursor timestamp with time zone, OUT comments_etag text, OUT pulls jsonb, OUT waiting boolean) IS 'For a poller holding the repository''s poll lease, what to read of its conversation: the comments written or edited since comments_cursor (with the listing''s ETag), and each open issue''s pull request (number, pull, head, reviews_etag, read_to: the updated_at it was last read at, read_checks: whether its head''s checks are still to read, the policy asking for them; seen_reviews: the ids of its reviews already judged), and whether asks wait for a job (then record_conversation makes it once the issue''s live job has ended, even with nothing new read). TL004 without the lease, TL008 for an untracked repository.';

--
-- Name: count_agent_time(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.count_agent_time() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT FROM tireless.lane l WHERE l.name = OLD.lane AND l.agent_time_per_day IS NOT NULL)
       OR EXISTS (SELECT FROM tireless.repo_limit l
                   WHERE (l.forge, l.owner, l.repo) = (OLD.forge, OLD.owner, OLD.repo)
                     AND l.agent_time_per_day IS NOT NULL) THEN
        UPDATE tireless.lane_repo r
           SET agent_time = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.agent_time ELSE interval '0' END
                            -- The attempt began at the job's newest claim in its history.
                            + coalesce((SELECT now() - e.at FROM tireless.job_event e
                                         WHERE e.job_id = OLD.id AND e.to_state = 'claimed'
                                         ORDER BY e.id DESC LIMIT 1), interval '0'),
               runs = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.runs ELSE 0 END,
               spend_day = (now() AT TIME ZONE 'UTC')::date
         WHERE (r.lane, r.forge, r.owner, r.repo) = (OLD.lane, OLD.forge, OLD.owner, OLD.repo);
    END IF;
    RETURN NULL;
END;
$$;

--
-- Name: FUNCTION count_agent_time(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.count_agent_time() IS 'Trigger of tireless.job (per ended attempt, enabled only while a budget of agent time exists): when the attempt''s lane or repository has a budget of agent time, adds how long it held its claim to the lane and repository''s agent time of today (UTC).';

--
-- Name: job_attempt; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.job_attempt (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    started_at timestamp with time zone NOT NULL,
    progress_at timestamp with time zone NOT NULL,
    step text,
    stop text,
    stop_note text,
    report text,
    report_cut boolean DEFAULT false NOT NULL,
    CONSTRAINT report_within_limit CHECK ((length(report) <= 60000)),
    CONSTRAINT step_is_short CHECK ((length(step) <= 500)),
    CONSTRAINT stop_has_its_note CHECK (((stop IS NULL) = (stop_note IS NULL))),
    CONSTRAINT stop_is_timeout_or_stalled CHECK ((stop = ANY (ARRAY['timeout'::text, 'stalled'::text])))
);

--
-- Name: TABLE job_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.job_attempt IS 'Each job''s newest attempt: when it was claimed, its last progress (and the step COMMAND last named), the watchdog''s stop once made (it stands until the attempt ends), and the report the agent left. Private: heartbeat, report_progress, attach_report and end_stopped_attempt keep it.';

--
-- Name: COLUMN job_attempt.attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job_attempt.attempt IS 'The job''s attempts count when this attempt was claimed: the row belongs to that attempt only.';

--
-- Name: COLUMN job_attempt.started_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job_attempt.started_at IS 'When the attempt was claimed (its claim in the history); max_run counts from here.';

--
-- Name: COLUMN job_attempt.progress_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job_attempt.progress_at IS 'The attempt''s last progress (started_at until the first); stall_after counts from here.';

--
-- Name: COLUMN job_attempt.step; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job_attempt.step IS 'The step COMMAND last reported (a ::progress:: line), at most 500 characters.';

--
-- Name: COLUMN job_attempt.stop; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job_attempt.stop IS 'timeout or stalled once the watchdog stopped the attempt; heartbeat answers it from then on.';

--
-- Name: COLUMN job_attempt.report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job_attempt.report IS 'The outcome summary the agent wrote (markdown, at most 60000 characters); the mirror posts it.';

--
-- Name: CONSTRAINT report_within_limit ON job_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT report_within_limit ON tireless.job_attempt IS 'A report is at most 60000 characters (a forge comment holds 65536).';

--
-- Name: CONSTRAINT step_is_short ON job_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT step_is_short ON tireless.job_attempt IS 'A step is a line of at most 500 characters.';

--
-- Name: CONSTRAINT stop_has_its_note ON job_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT stop_has_its_note ON tireless.job_attempt IS 'A stop carries the note the attempt ends with.';

--
-- Name: CONSTRAINT stop_is_timeout_or_stalled ON job_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT stop_is_timeout_or_stalled ON tireless.job_attempt IS 'The watchdog stops an attempt for one of two reasons.';

--
-- Name: current_attempt(bigint, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.current_attempt(job_id bigint, attempt integer) RETURNS tireless.job_attempt
    LANGUAGE plpgsql
    AS $$
DECLARE
    result tireless.job_attempt;
    claimed timestamptz;
BEGIN
    SELECT * INTO result FROM tireless.job_attempt a WHERE a.job_id = current_attempt.job_id;
    IF FOUND AND result.attempt = current_attempt.attempt THEN
        RETURN result;
    END IF;
    -- The job is claimed, so its newest event is its claim.
    SELECT e.at INTO claimed FROM tireless.job_event e
     WHERE e.job_id = current_attempt.job_id ORDER BY e.id DESC LIMIT 1;
    INSERT INTO tireless.job_attempt AS a (job_id, attempt, started_at, progress_at)
    VALUES (current_attempt.job_id, current_attempt.attempt, coalesce(claimed, now()), coalesce(claimed, now()))
    ON CONFLICT ON CONSTRAINT job_attempt_pkey DO UPDATE
       SET attempt = excluded.attempt, started_at = excluded.started_at, progress_at = excluded.progress_at,
           step = NULL, stop = NULL, stop_note = NULL, report = NULL, report_cut = false
    RETURNING a.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION current_attempt(job_id bigint, attempt integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.current_attempt(job_id bigint, attempt integer) IS 'The job_attempt row of the job''s attempt number attempt, made (started at the claim in the history) when the job has none or one of an older attempt. Called with the job''s row locked by its holder.';

--
-- Name: cycle_marker(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.cycle_marker(report_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:cycle:%s -->'::text, report_id);

--
-- Name: FUNCTION cycle_marker(report_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.cycle_marker(report_id bigint) IS 'The hidden last line of the comment that reports a dependency cycle on an issue (tireless.cycle_report); the mirror counts it only in a comment written by its own forge account.';

--
-- Name: cycle_report; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.cycle_report (
    id bigint NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    cycle text NOT NULL,
    job_id bigint,
    queued_at timestamp with time zone DEFAULT now() NOT NULL,
    broken_at timestamp with time zone,
    written_at timestamp with time zone,
    CONSTRAINT cycle_report_bounded CHECK (((length(cycle) >= 1) AND (length(cycle) <= 4000)))
);

--
-- Name: TABLE cycle_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.cycle_report IS 'Per issue with a pending job on a dependency cycle, and per distinct cycle: the comment that says so on the issue, written once (written_at), and the retries of a failing post. Private: settle_dependencies queues, cycle_reports_due and record_cycle_report keep it; tireless.cycle_reports shows it.';

--
-- Name: COLUMN cycle_report.id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.cycle_report.id IS 'The report; its comment ends with the marker <!-- tireless:cycle:<id> -->.';

--
-- Name: COLUMN cycle_report.number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.cycle_report.number IS 'The issue the comment goes on (one of the cycle).';

--
-- Name: COLUMN cycle_report.cycle; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.cycle_report.cycle IS 'The cycle as the issue''s job note names it: #3 → #4 → #3.';

--
-- Name: COLUMN cycle_report.job_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.cycle_report.job_id IS 'The pending job that was found waiting on the cycle (null once pruned).';

--
-- Name: COLUMN cycle_report.queued_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.cycle_report.queued_at IS 'When the cycle was found.';

--
-- Name: COLUMN cycle_report.broken_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.cycle_report.broken_at IS 'When the issue''s pending job was judged on no cycle or another one: a comment not yet written is dropped, and the same cycle made again is reported again.';

--
-- Name: COLUMN cycle_report.written_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.cycle_report.written_at IS 'When the forge confirmed the comment (null: still to write).';

--
-- Name: CONSTRAINT cycle_report_bounded ON cycle_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT cycle_report_bounded ON tireless.cycle_report IS 'A cycle is named in at most 4000 characters (20 steps).';

--
-- Name: cycle_report_text(tireless.cycle_report); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.cycle_report_text(report tireless.cycle_report) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    -- The cycle is made of issue references (#3, owner/repo#7), made safe all the same.
    SELECT 'tireless: this issue is on a dependency cycle: '
           || tireless.safe_comment_text(regexp_replace(btrim(report.cycle), '\s+', ' ', 'g'))
           || E'\n\n'
           || 'None of the jobs of these issues runs until a person breaks the cycle: edit the `Depends on` line '
           || 'of one of their bodies, or remove one of the forge''s own relations between them (Gitea and '
           || 'Forgejo: the issue''s dependencies; GitHub: blocked by, or a sub-issue).'
           || E'\n\n' || tireless.cycle_marker(report.id);
$$;

--
-- Name: FUNCTION cycle_report_text(report tireless.cycle_report); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.cycle_report_text(report tireless.cycle_report) IS 'The comment that reports a dependency cycle on one of its issues: the cycle (`#3 → #4 → #3`, made safe by safe_comment_text), that none of its jobs runs until a person breaks it and how (a `Depends on` line, or the forge''s relation), and the marker line (tireless.cycle_marker).';

--
-- Name: cycle_write(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.cycle_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('report_id', r.id, 'number', r.number, 'body', tireless.cycle_report_text(r),
                              'marker', tireless.cycle_marker(r.id))
      FROM tireless.cycle_report r
     CROSS JOIN tireless.policy p
     WHERE r.id = w.report_id AND r.written_at IS NULL AND r.broken_at IS NULL AND p.mirror_comments;
$$;

--
-- Name: FUNCTION cycle_write(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.cycle_write(w tireless.forge_write) IS 'What a cycle write (kind cycle) posts, as tireless.forge_writes_due lists it: {report_id, number, body (tireless.cycle_report_text, ending with its marker line), marker}; null (not due) once the cycle is broken, or while comments are off (set_mirror_comments).';

--
-- Name: cycle_written(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.cycle_written(w tireless.forge_write) RETURNS void
    LANGUAGE sql
    BEGIN ATOMIC
 UPDATE tireless.cycle_report r SET written_at = COALESCE(r.written_at, now())
   WHERE (r.id = (cycle_written.w).report_id);
END;

--
-- Name: FUNCTION cycle_written(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.cycle_written(w tireless.forge_write) IS 'The forge shows the comment of the cycle report of write w: recorded as written.';

--
-- Name: deliver(bigint, text, text, text, text, text, uuid, text, boolean); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.deliver(job_id bigint, worker text, branch text DEFAULT NULL::text, head text DEFAULT NULL::text, base_branch text DEFAULT NULL::text, base text DEFAULT NULL::text, token uuid DEFAULT NULL::uuid, note text DEFAULT NULL::text, draft boolean DEFAULT false) RETURNS tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    changed CONSTANT boolean := num_nonnulls(deliver.branch, deliver.head, deliver.base_branch, deliver.base) > 0;
    result tireless.job;
BEGIN
    -- Malformed values first: refused before any lock, naming the value.
    IF changed THEN
        PERFORM tireless.check_ref_name('branch', deliver.branch);
        PERFORM tireless.check_commit_id('head', deliver.head);
        PERFORM tireless.check_ref_name('base_branch', deliver.base_branch);
        PERFORM tireless.check_commit_id('base', deliver.base);
        IF deliver.branch = deliver.base_branch THEN
            RAISE EXCEPTION 'branch % is the base branch; a pull request goes from its branch to another',
                quote_literal(deliver.branch) USING ERRCODE = 'TL009';
        END IF;
        IF deliver.head = deliver.base THEN
            RAISE EXCEPTION 'head % is the base commit: nothing was committed', deliver.head
                USING ERRCODE = 'TL009', HINT = 'Deliver with no change: no branch, head, base_branch or base.';
        END IF;
    END IF;
    -- Sent again because its answer was lost: the first one committed, its delivery is recorded.
    IF deliver.token IS NOT NULL THEN
        SELECT * INTO result FROM tireless.job j WHERE j.id = deliver.job_id AND j.ended_claim_token = deliver.token;
        IF FOUND THEN
            RETURN result;
        END IF;
    END IF;
    result := tireless.transition(deliver.job_id, 'delivered', deliver.worker,
                                  CASE WHEN changed THEN deliver.note ELSE coalesce(deliver.note, 'no change') END,
                                  deliver.token);
    INSERT INTO tireless.delivery (job_id, forge, owner, repo, number, branch, head, base_branch, base, draft)
    VALUES (result.id, result.forge, result.owner, result.repo, result.number, deliver.branch, deliver.head,
            deliver.base_branch, deliver.base, changed AND coalesce(deliver.draft, false));
    IF changed THEN
        -- The mirror opens or updates the pull request; an untracked repository is not mirrored.
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)
        SELECT 'pull', t.forge, t.owner, t.repo, result.number, result.id FROM tireless.tracked_repo t
         WHERE (t.forge, t.owner, t.repo) = (result.forge, result.owner, result.repo);
        IF FOUND THEN
            -- The pull request follows the push at once: the repository is due now and the pollers
            -- are woken at commit (poll_soon: NOTIFY tireless_poll), as a webhook does; a backoff
            -- holds. Never a wait: while a poller's transaction holds the repository's row (its
            -- round is under way), the delivery wakes nothing, and that round or the next writes it.
            PERFORM FROM tireless.repo_poll rp
             WHERE (rp.forge, rp.owner, rp.repo) = (result.forge, result.owner, result.repo)
               FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                PERFORM tireless.poll_soon(result.forge, result.owner, result.repo);
            END IF;
        END IF;
    END IF;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION deliver(job_id bigint, worker text, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.deliver(job_id bigint, worker text, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean) IS 'The holder delivers the job with what it pushed, in one transaction: exactly transition(job_id, ''delivered'', worker, note, token) (its refusals: TL004 unless worker, token and login hold the claim, TL003 for a finished job, TL001, TL005), then the delivery recorded (branch, head, base_branch, base, draft) and, for a tracked repository, the pull request queued for the mirror (a write of the outbox, tireless.forge_write) and the repository made due now, the pollers woken (poll_soon), so the pull request follows the push at once (never waiting for a poller that holds the repository: then its round writes it). Without branch, head, base_branch and base: delivered with no change (note ''no change'' unless given), no pull request. TL009 for a malformed branch or commit, a branch that is its own base, or a head that is its base; nothing changes. Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';

--
-- Name: deliver_and_claim(bigint, text, text[], interval, text, text, text, text, uuid, text, boolean); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.deliver_and_claim(job_id bigint, worker text, lanes text[], lease interval DEFAULT '00:10:00'::interval, branch text DEFAULT NULL::text, head text DEFAULT NULL::text, base_branch text DEFAULT NULL::text, base text DEFAULT NULL::text, token uuid DEFAULT NULL::uuid, note text DEFAULT NULL::text, draft boolean DEFAULT false) RETURNS SETOF tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    ended tireless.job;
BEGIN
    -- Sent again because its answer was lost (a failover, a cut connection): the first one committed.
    SELECT * INTO ended FROM tireless.job j
     WHERE deliver_and_claim.token IS NOT NULL
       AND j.id = deliver_and_claim.job_id AND j.ended_claim_token = deliver_and_claim.token;
    -- deliver's refusals either way (a malformed branch or commit first); sent again, it changes nothing.
    PERFORM tireless.deliver(job_id => deliver_and_claim.job_id, worker => deliver_and_claim.worker,
                             branch => deliver_and_claim.branch, head => deliver_and_claim.head,
                             base_branch => deliver_and_claim.base_branch, base => deliver_and_claim.base,
                             token => deliver_and_claim.token, note => deliver_and_claim.note,
                             draft => deliver_and_claim.draft);
    IF ended.id IS NOT NULL THEN
        -- Its answer was the job it claimed for this worker in the same transaction (the same now()),
        -- if that claim stands (finish_and_claim's rule).
        RETURN QUERY SELECT * FROM tireless.job j
                      WHERE j.state = 'claimed' AND j.claimed_by = deliver_and_claim.worker
                        AND j.updated_at = ended.updated_at AND j.id <> ended.id
                        AND tireless.acts_for_login(j.claimed_login);
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM tireless.claim_next(worker => deliver_and_claim.worker, lanes => deliver_and_claim.lanes,
                                                   lease => deliver_and_claim.lease);
END;
$$;

--
-- Name: FUNCTION deliver_and_claim(job_id bigint, worker text, lanes text[], lease interval, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.deliver_and_claim(job_id bigint, worker text, lanes text[], lease interval, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean) IS 'The delivering runner''s cycle in one transaction: delivers job_id with what was pushed exactly as tireless.deliver(job_id, worker, branch, head, base_branch, base, token, note, draft) would (its refusals, with their SQLSTATEs: nothing is claimed when the delivery is refused), then claims the next job in lanes for worker exactly as tireless.claim_next would, and returns it (no row when nothing is claimable). Sent again with the token of a claim its holder already ended (the answer was lost): the job that delivery claimed for worker, if it still holds it, and nothing else changes.';

--
-- Name: delivery_of_a_delivered_job(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.delivery_of_a_delivered_job() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    job record;
    broken text;
BEGIN
    SELECT j.state, j.forge, j.owner, j.repo, j.number INTO job FROM tireless.job j WHERE j.id = NEW.job_id;
    broken := CASE
        WHEN job.state IS DISTINCT FROM 'delivered' THEN 'delivery_of_a_delivered_job'
        WHEN (job.forge, job.owner, job.repo, job.number) IS DISTINCT FROM (NEW.forge, NEW.owner, NEW.repo, NEW.number)
            THEN 'delivery_names_its_job_s_issue'
    END;
    IF broken IS NULL THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'new row for relation "delivery" violates check constraint "%"', broken
        USING ERRCODE = 'check_violation', CONSTRAINT = broken, SCHEMA = 'tireless', TABLE = 'delivery',
              DETAIL = format('Job %s is %s, of %s/%s/%s#%s.', NEW.job_id, coalesce(job.state::text, 'not a job'),
                              job.forge, job.owner, job.repo, job.number);
END;
$$;

--
-- Name: FUNCTION delivery_of_a_delivered_job(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.delivery_of_a_delivered_job() IS 'Trigger of tireless.delivery: a delivery belongs to a delivered job (delivery_of_a_delivered_job) and names that job''s issue (delivery_names_its_job_s_issue); else check_violation (23514) naming the rule. A delivered job never changes again, so the rule holds for good once the row is in.';

--
-- Name: repo_delivery; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.repo_delivery (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    protected text[] DEFAULT '{}'::text[] NOT NULL,
    allowed text[] DEFAULT '{}'::text[] NOT NULL,
    allow_ci boolean DEFAULT false NOT NULL,
    max_files integer,
    max_bytes bigint,
    CONSTRAINT allowed_globs_are_path_globs CHECK (((COALESCE(array_ndims(allowed), 1) = 1) AND ((cardinality(allowed) = 0) OR (array_to_string(allowed, '
'::text, ''::text) ~ '^[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254}(\n[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254})*$'::text)))),
    CONSTRAINT at_most_100_allowed_globs CHECK ((cardinality(allowed) <= 100)),
    CONSTRAINT at_most_100_protected_globs CHECK ((cardinality(protected) <= 100)),
    CONSTRAINT delivery_max_bytes_positive CHECK ((max_bytes > 0)),
    CONSTRAINT delivery_max_files_positive CHECK ((max_files > 0)),
    CONSTRAINT protected_globs_are_path_globs CHECK (((COALESCE(array_ndims(protected), 1) = 1) AND ((cardinality(protected) = 0) OR (array_to_string(protected, '
'::text, ''::text) ~ '^[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254}(\n[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254})*$'::text))))
);

--
-- Name: TABLE repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.repo_delivery IS 'A repository''s delivery policy, over the runner''s defaults: the globs of paths a change may not touch, those it may touch all the same, whether it may change the forge''s CI definitions, and its limits. Private: set_repo_delivery keeps it; job_brief hands it to the runner.';

--
-- Name: COLUMN repo_delivery.protected; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_delivery.protected IS 'Globs of paths a change may not touch (fnmatch on the whole path, * matching / too; a glob ending in / matches everything under it).';

--
-- Name: COLUMN repo_delivery.allowed; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_delivery.allowed IS 'Globs of paths a change may touch all the same, even when protected or a CI definition.';

--
-- Name: COLUMN repo_delivery.allow_ci; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_delivery.allow_ci IS 'Whether a change may touch the forge''s CI definitions (.github/workflows/, .gitea/workflows/, .forgejo/workflows/): a CI file can read the repository''s secrets.';

--
-- Name: COLUMN repo_delivery.max_files; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_delivery.max_files IS 'At most this many files added, modified or deleted; null: the runner''s default.';

--
-- Name: COLUMN repo_delivery.max_bytes; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_delivery.max_bytes IS 'At most this many bytes of the files added or modified; null: the runner''s default.';

--
-- Name: CONSTRAINT allowed_globs_are_path_globs ON repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT allowed_globs_are_path_globs ON tireless.repo_delivery IS 'An allowed glob is 1 to 255 characters, no control character, not starting with /; a list of them has one dimension and no null.';

--
-- Name: CONSTRAINT at_most_100_allowed_globs ON repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT at_most_100_allowed_globs ON tireless.repo_delivery IS 'A repository allows at most 100 globs.';

--
-- Name: CONSTRAINT at_most_100_protected_globs ON repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT at_most_100_protected_globs ON tireless.repo_delivery IS 'A repository protects at most 100 globs.';

--
-- Name: CONSTRAINT delivery_max_bytes_positive ON repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT delivery_max_bytes_positive ON tireless.repo_delivery IS 'A limit of bytes is null (the runner''s default) or positive.';

--
-- Name: CONSTRAINT delivery_max_files_positive ON repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT delivery_max_files_positive ON tireless.repo_delivery IS 'A limit of files is null (the runner''s default) or positive.';

--
-- Name: CONSTRAINT protected_globs_are_path_globs ON repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT protected_globs_are_path_globs ON tireless.repo_delivery IS 'A protected glob is 1 to 255 characters, no control character, not starting with / (a path in a repository never does); a list of them has one dimension and no null.';

--
-- Name: delivery_policy(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.delivery_policy(forge text, owner text, repo text) RETURNS tireless.repo_delivery
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT delivery_policy.forge, delivery_policy.owner, delivery_policy.repo,
           coalesce(d.protected, '{}'), coalesce(d.allowed, '{}'), coalesce(d.allow_ci, false),
           coalesce(d.max_files, 1000), coalesce(d.max_bytes, 50 * 1024 * 1024::bigint)
      FROM (VALUES (true)) AS always
      LEFT JOIN tireless.repo_delivery d
        ON (d.forge, d.owner, d.repo) = (delivery_policy.forge, delivery_policy.owner, delivery_policy.repo);
$$;

--
-- Name: FUNCTION delivery_policy(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.delivery_policy(forge text, owner text, repo text) IS 'The delivery policy that applies to the repository''s changes, the defaults filled in: its protected and allowed globs (none by default), allow_ci (false), max_files (1000 files changed) and max_bytes (52428800, 50 MiB, added or modified) where set_repo_delivery set none. The runner checks a change against exactly this (job_brief). A repository with no policy set, tracked or not, gets the defaults.';

--
-- Name: dependency_cycle(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.dependency_cycle(forge text, owner text, repo text, number integer) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    WITH RECURSIVE edge AS (
        SELECT d.owner, d.repo, d.number, d.depends_on_owner, d.depends_on_repo, d.depends_on_number
          FROM tireless.issue_dependency d
          LEFT JOIN tireless.issue s
                 ON (s.forge, s.owner, s.repo, s.number) = (d.forge, d.depends_on_owner, d.depends_on_repo, d.depends_on_number)
         WHERE d.forge = dependency_cycle.forge AND s.state IS DISTINCT FROM 'closed'
    ), walk (owner, repo, number, path, seen) AS (
        SELECT e.depends_on_owner, e.depends_on_repo, e.depends_on_number,
               ARRAY[tireless.issue_ref(dependency_cycle.owner, dependency_cycle.repo,
                                        e.depends_on_owner, e.depends_on_repo, e.depends_on_number)],
               ARRAY[e.depends_on_owner || '/' || e.depends_on_repo || '#' || e.depends_on_number]
          FROM edge e
         WHERE (e.owner, e.repo, e.number) = (dependency_cycle.owner, dependency_cycle.repo, dependency_cycle.number)
        UNION ALL
        SELECT e.depends_on_owner, e.depends_on_repo, e.depends_on_number,
               w.path || tireless.issue_ref(dependency_cycle.owner, dependency_cycle.repo,
                                            e.depends_on_owner, e.depends_on_repo, e.depends_on_number),
               w.seen || (e.depends_on_owner || '/' || e.depends_on_repo || '#' || e.depends_on_number)
          FROM walk w
          JOIN edge e ON (e.owner, e.repo, e.number) = (w.owner, w.repo, w.number)
         WHERE (w.owner, w.repo, w.number) <> (dependency_cycle.owner, dependency_cycle.repo, dependency_cycle.number)
           AND (e.depends_on_owner || '/' || e.depends_on_repo || '#' || e.depends_on_number) <> ALL (w.seen)
           AND cardinality(w.path) < 20
    )
    SELECT '#' || dependency_cycle.number || ' → ' || array_to_string(w.path, ' → ')
      FROM walk w
     WHERE (w.owner, w.repo, w.number) = (dependency_cycle.owner, dependency_cycle.repo, dependency_cycle.number)
     LIMIT 1;
$$;

--
-- Name: FUNCTION dependency_cycle(forge text, owner text, repo text, number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.dependency_cycle(forge text, owner text, repo text, number integer) IS 'The cycle of open dependencies the issue is on, as `#3 → #4 → #3` (the shortest, at most 20 steps); null when it is on none.';

--
-- Name: depends_on_problem(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.depends_on_problem(depends_on jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE
        WHEN jsonb_typeof(depends_on) IS DISTINCT FROM 'array' THEN
            format('"depends_on" must be an array of issues {owner, repo, number}, got %s',
                   left(coalesce(depends_on, 'null')::text, 100))
        WHEN jsonb_array_length(depends_on) > 100 THEN
            format('"depends_on" holds %s issues, at most 100 are allowed', jsonb_array_length(depends_on))
        ELSE (SELECT format('"depends_on" must hold issues {owner: 1 to 200 characters, repo: 1 to 200 characters, '
                            'number: 1 to 2147483647}, got %s', left(d.entry::text, 100))
                FROM jsonb_array_elements(depends_on) AS d(entry)
               -- A CASE, so the number is cast only once it is known to be one.
               WHERE CASE WHEN jsonb_typeof(d.entry) IS DISTINCT FROM 'object'
                            OR jsonb_typeof(d.entry -> 'owner') IS DISTINCT FROM 'string'
                            OR jsonb_typeof(d.entry -> 'repo') IS DISTINCT FROM 'string'
                            OR jsonb_typeof(d.entry -> 'number') IS DISTINCT FROM 'number' THEN true
                          ELSE length(d.entry ->> 'owner') NOT BETWEEN 1 AND 200
                            OR length(d.entry ->> 'repo') NOT BETWEEN 1 AND 200
                            OR (d.entry -> 'number')::numeric NOT BETWEEN 1 AND 2147483647
                            OR (d.entry -> 'number')::numeric <> trunc((d.entry -> 'number')::numeric) END
               LIMIT 1)
    END;
$$;

--
-- Name: FUNCTION depends_on_problem(depends_on jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.depends_on_problem(depends_on jsonb) IS 'Why an issue''s "depends_on" (the forge''s relations: an array of at most 100 {owner, repo, number} of the same forge) is malformed, or null when it is well formed.';

--
-- Name: duration_bin(double precision); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.duration_bin(seconds double precision) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (ceil((((4)::double precision * ln(GREATEST(seconds, (0.01)::double precision))) / ln((2)::double precision))))::smallint;

--
-- Name: FUNCTION duration_bin(seconds double precision); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.duration_bin(seconds double precision) IS 'The histogram bin of a duration in seconds: bins grow by a factor of 2^(1/4) (19%); bin b holds the durations up to tireless.bin_bound(b). Everything under 10 ms is in the first bin.';

--
-- Name: egress_entry(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.egress_entry(entry text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
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
$_$;

--
-- Name: FUNCTION egress_entry(entry text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.egress_entry(entry text) IS 'An egress allowlist entry as stored (a name lower-cased, an IPv6 literal in brackets and compressed), or null when it is not HOST[:PORT]: a DNS name, *.suffix, an IPv4 literal or an IPv6 literal ([..] when a port follows), PORT 1 to 65535.';

--
-- Name: end_stopped_attempt(bigint, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.end_stopped_attempt(job_id bigint, worker text, token uuid DEFAULT NULL::uuid) RETURNS tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job;
    note text;
BEGIN
    -- Sent again because its answer was lost: the first one committed (transition's rule).
    IF end_stopped_attempt.token IS NOT NULL THEN
        SELECT * INTO job FROM tireless.job j
         WHERE j.id = end_stopped_attempt.job_id AND j.ended_claim_token = end_stopped_attempt.token;
        IF FOUND THEN
            RETURN job;
        END IF;
    END IF;
    job := tireless.held_job(end_stopped_attempt.job_id, end_stopped_attempt.worker, end_stopped_attempt.token);
    SELECT a.stop_note INTO note FROM tireless.job_attempt a
     WHERE a.job_id = job.id AND a.attempt = job.attempts AND a.stop IS NOT NULL;
    IF note IS NULL THEN
        RAISE EXCEPTION 'job %''s attempt % was not stopped by the watchdog', job.id, job.attempts
            USING ERRCODE = 'TL002', HINT = 'Only an attempt whose heartbeat answered timeout or stalled ends this way.';
    END IF;
    -- A failure like any other: back to pending with backoff, failed when the attempts are spent,
    -- counted by the lane's circuit breaker.
    RETURN tireless.transition(job.id, 'pending', end_stopped_attempt.worker, note, end_stopped_attempt.token);
END;
$$;

--
-- Name: FUNCTION end_stopped_attempt(job_id bigint, worker text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.end_stopped_attempt(job_id bigint, worker text, token uuid) IS 'The holder ends an attempt the watchdog stopped (heartbeat answered timeout or stalled) as a failure, with the watchdog''s note (timed out after 2h; no progress for 30m (last: ran the tests)): as transition to pending does (backoff, the attempt budget, the breaker). TL002 when the watchdog did not stop it; TL001, TL004 as transition. Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';

--
-- Name: enqueue(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.enqueue(issues jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    outcome record;
BEGIN
    -- Validate everything before writing anything: a batch is all or nothing.
    PERFORM tireless.check_issue_batch(enqueue.issues);
    SELECT * INTO outcome FROM tireless.apply_work_rule(enqueue.issues);
    RETURN outcome.created;
END;
$$;

--
-- Name: FUNCTION enqueue(issues jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.enqueue(issues jsonb) IS 'Takes a JSON array of issues {forge, owner, repo, number, state, labels, title?, url?, updated_at?, parent_id?, body?, depends_on?: [{owner, repo, number}] (the forge''s own relations, replacing those stored)} and applies the work rule to those of tracked repositories: a pending job per request for work, a pending job cancelled (or a claimed one asked to stop) when its issue withdraws the request, a pending job re-routed when relabelled. Returns how many jobs it created; a repeated poll creates nothing and writes nothing. Validates the whole batch first (TL006).';

--
-- Name: enqueue_and_list(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.enqueue_and_list(issues jsonb) RETURNS SETOF tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    known bigint[];
BEGIN
    -- Validate first: a malformed batch is refused by its TL006 before anything reads it.
    PERFORM tireless.check_issue_batch(enqueue_and_list.issues);
    -- In key order, as enqueue takes them, so the two never deadlock.
    PERFORM tireless.lock_repo_issues(r.forge, r.owner, r.repo)
       FROM (SELECT DISTINCT e.issue ->> 'forge' AS forge, e.issue ->> 'owner' AS owner, e.issue ->> 'repo' AS repo
               FROM jsonb_array_elements(enqueue_and_list.issues) AS e(issue)
              ORDER BY 1, 2, 3) AS r;
    SELECT coalesce(array_agg(j.id), '{}') INTO known
      FROM tireless.job j
     WHERE (j.forge, j.owner, j.repo, j.number) IN
           (SELECT e.issue ->> 'forge', e.issue ->> 'owner', e.issue ->> 'repo', (e.issue ->> 'number')::integer
              FROM jsonb_array_elements(enqueue_and_list.issues) AS e(issue));
    PERFORM tireless.enqueue(enqueue_and_list.issues);
    RETURN QUERY
        SELECT j.* FROM tireless.job j
         WHERE (j.forge, j.owner, j.repo, j.number) IN
               (SELECT e.issue ->> 'forge', e.issue ->> 'owner', e.issue ->> 'repo', (e.issue ->> 'number')::integer
                  FROM jsonb_array_elements(enqueue_and_list.issues) AS e(issue))
           AND j.id <> ALL (known)
         ORDER BY j.id;
END;
$$;

--
-- Name: FUNCTION enqueue_and_list(issues jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.enqueue_and_list(issues jsonb) IS 'enqueue, returning the jobs it created (oldest first) instead of their count: what `tireless enqueue` shows. For tireless_admin, who reads tireless.job; a poller calls enqueue.';

--
-- Name: ensure_lane(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.ensure_lane(lane text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM tireless.check_lane(ensure_lane.lane);
    INSERT INTO tireless.lane (name) VALUES (ensure_lane.lane) ON CONFLICT (name) DO NOTHING;
END;
$$;

--
-- Name: FUNCTION ensure_lane(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.ensure_lane(lane text) IS 'Gives a lane its settings row (open, unlimited) if it has none; TL005 for a bad name.';

--
-- Name: expire_stale_claims(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.expire_stale_claims() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    moved integer := 0;
    expired record;
    failed_lanes text[] := '{}';
    failed_lane text;
    sweep_lanes text[];
BEGIN
    -- One sweeper per lane at a time, by its slot's row of tireless.sweep_slot (FOR NO KEY UPDATE
    -- SKIP LOCKED): a lane another sweeper holds is left for the next sweep, so two sweepers never
    -- wait on each other, not even on the lane row the circuit breaker counts in. A row only the
    -- tireless functions can lock, not an advisory key any login could take: no outside login stops a sweep.
    SELECT coalesce(array_agg(s.lane), '{}') INTO sweep_lanes
      FROM (SELECT DISTINCT j.lane FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS s;
    IF cardinality(sweep_lanes) = 0 THEN
        RETURN 0;
    END IF;
    sweep_lanes := ARRAY(
        WITH held AS (
            SELECT k.slot FROM tireless.sweep_slot k
             WHERE k.slot IN (SELECT hashtext(l) & 63 FROM unnest(sweep_lanes) AS l)
             ORDER BY k.slot
               FOR NO KEY UPDATE SKIP LOCKED)
        SELECT l FROM unnest(sweep_lanes) AS l WHERE hashtext(l) & 63 IN (SELECT h.slot FROM held h));
    -- SKIP LOCKED: a job whose row another transaction holds is left as well; no job moves twice.
    -- A cancel-requested claim is cancelled, not retried: no failure for the breaker, no attempt spent.
    FOR expired IN
        WITH stale AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now() AND j.lane = ANY (sweep_lanes)
             ORDER BY j.claim_expires_at
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                            WHEN tireless.attempts_spent(j) >= kp.max_attempts THEN 'failed'
                            ELSE 'pending' END::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               available_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR tireless.attempts_spent(j) >= kp.max_attempts THEN j.available_at
                                   ELSE now() + tireless.retry_delay(tireless.attempts_spent(j)) END,
               note = CASE WHEN j.cancel_requested_at IS NOT NULL
                           THEN format('%s; lease of %s expired at %s', coalesce(j.cancel_note, 'issue withdrew its request'),
                                       j.claimed_by, j.claim_expires_at)
                           WHEN tireless.attempts_spent(j) >= kp.max_attempts
                           THEN format('attempts exhausted (%s of %s); last: lease of %s expired at %s',
                                       tireless.attempts_spent(j), kp.max_attempts, j.claimed_by, j.claim_expires_at)
                           ELSE format('lease of %s expired at %s', j.claimed_by, j.claim_expires_at) END,
               updated_at = now()
          FROM stale, tireless.kind_policy kp
         WHERE j.id = stale.id AND kp.kind = j.kind
        RETURNING j.lane, j.state, j.available_at
    LOOP
        moved := moved + 1;
        IF expired.state <> 'cancelled' THEN
            failed_lanes := failed_lanes || expired.lane;
        END IF;
        -- As in transition: the job is claimable at once, or its claim freed a slot in a capped lane.
        IF (expired.state = 'pending' AND expired.available_at <= now())
           OR EXISTS (SELECT FROM tireless.lane l WHERE l.name = expired.lane AND l.capacity IS NOT NULL) THEN
            PERFORM tireless.announce_work(expired.lane);
        END IF;
    END LOOP;
    -- Lane rows are written in name order, the order claim_next locks capped lanes in, so a sweep
    -- and a claim that both touch several lanes never deadlock on them.
    FOR failed_lane IN SELECT l FROM unnest(failed_lanes) AS l ORDER BY l LOOP
        PERFORM tireless.record_lane_outcome(failed_lane, false);
    END LOOP;
    RETURN moved;
END;
$$;

--
-- Name: FUNCTION expire_stale_claims(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.expire_stale_claims() IS 'Returns every claimed job whose lease has passed to pending (after its backoff), fails it when the last attempt its budget counts is spent (give-backs are not counted), or cancels it, with the stop''s note, when it was asked to stop (no failure counted); clears the claim, keeps the attempt count, and returns how many jobs it moved. Never waits on another sweeper: a job whose row is locked, or a lane another sweeper holds (its tireless.sweep_slot row), is left for the next sweep. Locks only rows no login outside the tireless roles can lock.';

--
-- Name: is_terminal(tireless.job_state); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_terminal(state tireless.job_state) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (state = ANY (ARRAY['delivered'::tireless.job_state, 'failed'::tireless.job_state, 'cancelled'::tireless.job_state]));

--
-- Name: FUNCTION is_terminal(state tireless.job_state); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_terminal(state tireless.job_state) IS 'True for the states a job never leaves: delivered, failed, cancelled.';

--
-- Name: note_cause(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.note_cause(note text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    BEGIN ATOMIC
 WITH lines AS (
          SELECT btrim(l.line, '
'::text) AS line,
             l.n
            FROM regexp_split_to_table(regexp_replace(COALESCE(note_cause.note, ''::text), '^attempts exhausted \(\d+ of \d+\); last: '::text, ''::text), '
'::text) WITH ORDINALITY l(line, n)
         ), meaningful AS (
          SELECT l.line,
             l.n
            FROM lines l
           WHERE (l.line ~ '[[:alnum:]]'::text)
         )
  SELECT COALESCE(( SELECT m.line
            FROM meaningful m
           WHERE (m.line ~* '(error|fail|fatal|exception|denied|refused|forbidden|cannot|can''t|could not|unable|not found|no such|invalid|missing|exceed|expired|timed? ?out|stalled|panic|abort|killed|out of memory|limit)'::text)
           ORDER BY m.n DESC
          LIMIT 1), ( SELECT m.line
            FROM meaningful m
           ORDER BY m.n
          LIMIT 1), ''::text) AS "coalesce";
END;

--
-- Name: FUNCTION note_cause(note text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.note_cause(note text) IS 'The cause a note gives, on one line: without the wrapper of a job whose attempts are spent ("attempts exhausted (3 of 3); last: "), the last line that reads as an error (error, fail, denied, refused, not found, timed out, limit, ...), else the first line with a letter or digit; empty for an empty or null note. The jobs list (tireless.job_list.cause), the Failures page and its groups (tireless.failure_groups) show it.';

--
-- Name: job_event; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.job_event (
    id bigint NOT NULL,
    job_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    from_state tireless.job_state,
    to_state tireless.job_state NOT NULL,
    worker text,
    attempt integer NOT NULL,
    note text,
    login text,
    CONSTRAINT event_changes_state CHECK ((from_state IS DISTINCT FROM to_state))
);

--
-- Name: TABLE job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.job_event IS 'Append-only history: one row per change of a job''s state (from_state is null when the job is created). worker is the holder the change concerns; attempt is the job''s attempt count after the change.';

--
-- Name: COLUMN job_event.login; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.job_event.login IS 'The database login (session_user) whose call made the change, beside worker, the holder the change concerns. Null for events written before 0019_holder_login.';

--
-- Name: CONSTRAINT event_changes_state ON job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT event_changes_state ON tireless.job_event IS 'Every event is a change of state.';

--
-- Name: history_moves(bigint, bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.history_moves(after_id bigint, upto_id bigint) RETURNS TABLE(at timestamp with time zone, worker text, from_state tireless.job_state, to_state tireless.job_state, error text, job_id bigint, forge text, owner text, repo text, number integer, lane text, kind tireless.job_kind, waited double precision, ran double precision)
    LANGUAGE sql STABLE SECURITY DEFINER ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT e.at,
     e.worker,
     e.from_state,
     e.to_state,
     tireless.note_cause(e.note) AS note_cause,
     j.id,
     j.forge,
     j.owner,
     j.repo,
     j.number,
     j.lane,
     j.kind,
         CASE
             WHEN ((e.to_state = 'claimed'::tireless.job_state) AND (e.attempt = 1)) THEN (EXTRACT(epoch FROM (e.at - j.created_at)))::double precision
             ELSE NULL::double precision
         END AS "case",
     (EXTRACT(epoch FROM (e.at - claim.at)))::double precision AS "extract"
    FROM ((tireless.job_event e
      JOIN tireless.job j ON ((j.id = e.job_id)))
      LEFT JOIN LATERAL ( SELECT p.at
            FROM tireless.job_event p
           WHERE ((e.from_state = 'claimed'::tireless.job_state) AND tireless.is_terminal(e.to_state) AND (p.job_id = e.job_id) AND (p.id < e.id))
           ORDER BY p.id DESC
          LIMIT 1) claim ON (true))
   WHERE ((e.id > history_moves.after_id) AND ((history_moves.upto_id IS NULL) OR (e.id <= history_moves.upto_id)));
END;

--
-- Name: FUNCTION history_moves(after_id bigint, upto_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.history_moves(after_id bigint, upto_id bigint) IS 'The events with after_id < id <= upto_id (null: no upper bound) as the roll-up folds them: each with its job''s issue, lane and kind, the cause its note gives (error: tireless.note_cause), the wait (created to first claim) of a first claim and the run (claim to finish) of a finish. tireless.fold_history folds them; the dashboard''s reads add those after tireless.history_rollup.counted_to, the history not rolled up yet.';

--
-- Name: failure_count; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.failure_count (
    grain interval NOT NULL,
    bucket timestamp with time zone NOT NULL,
    lane text NOT NULL,
    error text NOT NULL,
    jobs bigint NOT NULL,
    latest bigint NOT NULL,
    CONSTRAINT failure_grain_is_minute_or_hour CHECK ((grain = ANY (ARRAY['00:01:00'::interval, '01:00:00'::interval])))
);

--
-- Name: TABLE failure_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.failure_count IS 'Per bucket and lane, how many jobs failed with each error (the first line of the note of the event that failed them) and the newest such job. Private: read tireless.failure_groups.';

--
-- Name: CONSTRAINT failure_grain_is_minute_or_hour ON failure_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT failure_grain_is_minute_or_hour ON tireless.failure_count IS 'Two grains: minutes and hours.';

--
-- Name: history_rollup; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.history_rollup (
    singleton boolean DEFAULT true NOT NULL,
    counted_to bigint DEFAULT 0 NOT NULL,
    waiting_to bigint,
    waiting_until xid8,
    CONSTRAINT history_rollup_is_one_row CHECK (singleton),
    CONSTRAINT waiting_is_whole CHECK (((waiting_to IS NULL) = (waiting_until IS NULL)))
);

--
-- Name: TABLE history_rollup; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.history_rollup IS 'Where the rollup stands: every job_event with id <= counted_to is counted. waiting_to is the next stop, safe once every transaction older than waiting_until has ended (none of them can still add an event at or below it).';

--
-- Name: CONSTRAINT history_rollup_is_one_row ON history_rollup; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT history_rollup_is_one_row ON tireless.history_rollup IS 'The rollup has one position.';

--
-- Name: CONSTRAINT waiting_is_whole ON history_rollup; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT waiting_is_whole ON tireless.history_rollup IS 'A waiting stop has both its id and its transaction horizon.';

--
-- Name: failure_groups(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.failure_groups(span interval) RETURNS TABLE(error text, jobs bigint, latest bigint, lanes text[])
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH frame AS (
          SELECT tireless.activity_grain(failure_groups.span) AS grain,
             date_bin(tireless.activity_grain(failure_groups.span), now(), '2000-01-01 00:00:00+00'::timestamp with time zone) AS last
         )
  SELECT f.error,
     (sum(f.jobs))::bigint AS sum,
     max(f.latest) AS max,
     array_agg(DISTINCT f.lane ORDER BY f.lane) AS array_agg
    FROM ( SELECT c.error,
             c.jobs,
             c.latest,
             c.lane
            FROM (tireless.failure_count c
              JOIN frame ON (((c.grain = frame.grain) AND (c.bucket > (frame.last - failure_groups.span)))))
         UNION ALL
          SELECT m.error,
             1,
             m.job_id,
             m.lane
            FROM (frame
              CROSS JOIN tireless.history_moves(( SELECT r.counted_to
                    FROM tireless.history_rollup r), NULL::bigint) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran))
           WHERE ((m.to_state = 'failed'::tireless.job_state) AND (date_bin(frame.grain, m.at, '2000-01-01 00:00:00+00'::timestamp with time zone) > (frame.last - failure_groups.span)))) f
   GROUP BY f.error
   ORDER BY (sum(f.jobs)) DESC, f.error;
END;

--
-- Name: FUNCTION failure_groups(span interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.failure_groups(span interval) IS 'The failures of the last span (at most 8 days) grouped by their error (the cause the note that failed the job gives, tireless.note_cause): how many jobs, the newest, the lanes; most frequent first. Reads the folded counts and the history written since the last tireless.roll_up_history(); writes nothing.';

--
-- Name: finish_and_claim(bigint, text, text, text[], interval, uuid, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.finish_and_claim(job_id bigint, to_state text, worker text, lanes text[], lease interval DEFAULT '00:10:00'::interval, claim_token uuid DEFAULT NULL::uuid, note text DEFAULT NULL::text) RETURNS SETOF tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    finished boolean := false;
    ended tireless.job;
BEGIN
    -- The finish: transition's holder statement, in the one case where the lane needs to hear nothing
    -- (a delivery or the holder's cancel, in a lane without a capacity and without failures counted
    -- by its breaker). Anything else, or no change (not the holder, a refusal), is transition's.
    IF finish_and_claim.worker IS NOT NULL AND finish_and_claim.to_state IN ('delivered', 'cancelled')
       AND (finish_and_claim.note IS NULL OR length(finish_and_claim.note) <= 10000) THEN
        UPDATE tireless.job j
           SET state = finish_and_claim.to_state::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               ended_claim_token = finish_and_claim.claim_token,
               note = CASE WHEN j.cancel_requested_at IS NULL THEN finish_and_claim.note
                           ELSE tireless.stop_finish_note(finish_and_claim.to_state, finish_and_claim.note,
                                                          j.cancel_requested_at, j.cancel_note) END,
               updated_at = now()
         WHERE j.id = finish_and_claim.job_id
           AND j.state = 'claimed'
           AND j.claimed_by = finish_and_claim.worker
           AND (finish_and_claim.claim_token IS NULL OR j.claim_token = finish_and_claim.claim_token)
           AND tireless.acts_for_login(j.claimed_login)
           AND NOT EXISTS (SELECT FROM tireless.lane l
                            WHERE l.name = j.lane
                              AND (l.capacity IS NOT NULL OR l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL));
        finished := FOUND;
    END IF;
    IF NOT finished AND finish_and_claim.claim_token IS NOT NULL THEN
        -- Sent again because its answer was lost: the first one committed. Its answer was the job
        -- it claimed for this worker in the same transaction (the same now()), if that claim stands.
        SELECT * INTO ended FROM tireless.job j
         WHERE j.id = finish_and_claim.job_id AND j.ended_claim_token = finish_and_claim.claim_token;
        IF FOUND THEN
            RETURN QUERY SELECT * FROM tireless.job j
                          WHERE j.state = 'claimed' AND j.claimed_by = finish_and_claim.worker
                            AND j.updated_at = ended.updated_at AND j.id <> ended.id
                            AND tireless.acts_for_login(j.claimed_login);
            RETURN;
        END IF;
    END IF;
    IF NOT finished THEN
        PERFORM tireless.transition(job_id => finish_and_claim.job_id, to_state => finish_and_claim.to_state,
                                    worker => finish_and_claim.worker, note => finish_and_claim.note,
                                    token => finish_and_claim.claim_token);
    END IF;
    -- The claim: claim_next's first statement (a copy, tests/test_catalog.py keeps the two the same), for
    -- one lane where one repository has work; anything else is claim_next's.
    IF tireless.is_worker_name(finish_and_claim.worker) AND tireless.is_lease(finish_and_claim.lease)
       AND cardinality(finish_and_claim.lanes) = 1 AND tireless.is_lane_name(finish_and_claim.lanes[1]) THEN
        RETURN QUERY
        WITH sole_turn AS (
            SELECT min(t.forge) AS forge, min(t.owner) AS owner, min(t.repo) AS repo
              FROM (SELECT r.forge, r.owner, r.repo, r.limited FROM tireless.lane_repo r
                     WHERE r.lane = finish_and_claim.lanes[1] AND r.has_work
                     LIMIT 2) t
            HAVING count(*) = 1 AND NOT bool_or(t.limited)
        ), candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[finish_and_claim.lanes[1]]) AND j.available_at <= now() AND j.waiting_on IS NULL
               AND EXISTS (SELECT FROM sole_turn)
               AND (j.forge, j.owner, j.repo) = (SELECT s.forge, s.owner, s.repo FROM sole_turn s)
               AND NOT EXISTS (SELECT FROM tireless.lane l
                                WHERE l.name = finish_and_claim.lanes[1]
                                  AND (l.limited OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until)))
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = finish_and_claim.worker,
               claimed_login = session_user,
               claim_expires_at = now() + finish_and_claim.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
          FROM candidate
         WHERE j.id = candidate.id
        RETURNING j.*;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM tireless.claim_next(worker => finish_and_claim.worker, lanes => finish_and_claim.lanes,
                                                   lease => finish_and_claim.lease);
END;
$$;

--
-- Name: FUNCTION finish_and_claim(job_id bigint, to_state text, worker text, lanes text[], lease interval, claim_token uuid, note text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.finish_and_claim(job_id bigint, to_state text, worker text, lanes text[], lease interval, claim_token uuid, note text) IS 'The runner''s cycle in one transaction: finishes the claim on job_id exactly as tireless.transition(job_id, to_state, worker, note, token => claim_token) would (its refusals, with their SQLSTATEs: nothing is claimed when the finish is refused), then claims the next job in lanes for worker exactly as tireless.claim_next would, and returns it (no row when nothing is claimable). Sent again with the token of a claim its holder already ended (the answer was lost): the job that finish claimed for worker, if it still holds it, and nothing else changes.';

--
-- Name: finished_job_comment(tireless.job); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.finished_job_comment(job tireless.job) RETURNS text
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    head text;
    attached record;
    said text;
    fence text;
    -- What the outcome comment holds after this text: the checklist of children (at most the body's
    -- limit less 8192 characters, tireless.children_checklist), then the marker line.
    tail integer := coalesce(length(E'\n\n' || tireless.children_checklist(job)), 0)
                    + length(E'\n\n' || tireless.comment_marker(job.id));
BEGIN
    -- The outcome on the first line (no text from a runner there: a delivery's branch is a ref name
    -- without backticks, quoted as code, and its pull request a number).
    SELECT format('tireless: %s%s after %s attempt%s', job.state,
                  CASE WHEN delivered.branch IS NOT NULL
                       THEN coalesce(' as #' || delivered.pull_number, '') || format(' (branch `%s`)', delivered.branch)
                       ELSE '' END,
                  job.attempts, CASE WHEN job.attempts = 1 THEN '' ELSE 's' END)
           -- What its agent spent, when it made model requests through a gateway (tireless.spend_text).
           || coalesce('; ' || tireless.spend_text(job.id), '')
      INTO head
      FROM (SELECT) AS one
      LEFT JOIN tireless.delivery delivered ON delivered.job_id = job.id;
    -- Then the report the job's last attempt attached, when there is one (made safe, rendered as
    -- markdown), cut to the room the body has left (tireless.fit_report).
    SELECT a.report AS text, CASE WHEN a.report_cut THEN E'\n\n(report cut at 60000 characters)' ELSE '' END AS cut
      INTO attached
      FROM tireless.job_attempt a WHERE a.job_id = job.id AND a.attempt = job.attempts;
    IF attached.text IS NOT NULL THEN
        RETURN head || E'\n\n'
               || tireless.fit_report(attached.text, tireless.forge_body_limit() - tail - length(head) - 2 - length(attached.cut))
               || attached.cut;
    END IF;
    -- Else the last holder and the note (blanks folded, cut to 500 characters: it always fits) in a
    -- fenced code block whose fence is longer than any run of backticks inside it: nothing in it
    -- renders (HTML, images, links, headings) and nothing closes it early.
    SELECT nullif(concat_ws(': ', tireless.safe_comment_text(regexp_replace(btrim(holder.worker), '\s+', ' ', 'g')),
                            CASE WHEN length(note.text) > 500 THEN left(note.text, 499) || '…' ELSE note.text END), '')
      INTO said
      FROM (SELECT nullif(tireless.safe_comment_text(regexp_replace(btrim(job.note), '\s+', ' ', 'g')), '') AS text) AS note
      LEFT JOIN LATERAL (SELECT e.worker FROM tireless.job_event e
                          WHERE e.job_id = job.id AND e.worker IS NOT NULL
                          ORDER BY e.id DESC LIMIT 1) AS holder ON true;
    fence := repeat('`', greatest(3, 1 + coalesce((SELECT max(length(m[1])) FROM regexp_matches(said, '(`+)', 'g') AS m), 0)));
    RETURN head || coalesce(E'\n\n' || fence || E'\n' || said || E'\n' || fence, '');
END;
$$;

--
-- Name: FUNCTION finished_job_comment(job tireless.job); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.finished_job_comment(job tireless.job) IS 'The comment a finished job leaves on its issue, up to its checklist of children and its marker line, which tireless.comment_write adds: the outcome and attempts on the first line (a delivery that pushed names its pull request once the mirror recorded it, and its branch: delivered as #12 (branch `tireless/7`) after 1 attempt), what its agent spent when it made model requests (; 12 model requests, 84,210 tokens, $0.41: tireless.spend_text), then the report its last attempt attached (tireless.attach_report) made safe and cut to fit (tireless.fit_report: the whole comment, checklist and marker included, within tireless.forge_body_limit(), a cut saying so) when there is one, else the last holder and the note (blanks folded, cut to 500 characters, made safe by safe_comment_text) in a fenced code block with a fence longer than any backtick run inside, so nothing of it renders or notifies.';

--
-- Name: fit_report(text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.fit_report(report text, room integer) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
    whole text := tireless.safe_report_text(fit_report.report);
    kept integer;
    fitted text;
BEGIN
    IF whole IS NULL OR length(whole) <= fit_report.room THEN
        RETURN whole;
    END IF;
    -- The longest beginning of the safe text that fits with a code fence it leaves open closed and
    -- the line that says what was cut: each try that is too long shortens it by the excess (the
    -- closing fence changes only where a fence line is passed, so it ends in a few tries). A cut
    -- between a character and the one safe_report_text put after it leaves a bare < or @ at the end
    -- of a line: no tag, no mention.
    kept := fit_report.room;
    LOOP
        fitted := rtrim(left(whole, kept), E' \t\r\n');
        fitted := ltrim(fitted || coalesce(E'\n' || tireless.closing_fence(fitted), '')
                        || format(E'\n\n… cut: %s more characters do not fit in a forge''s body (%s at most).',
                                  length(whole) - kept, tireless.forge_body_limit()), E'\n');
        EXIT WHEN length(fitted) <= fit_report.room;
        IF kept = 0 THEN
            RETURN '';  -- no room even to say it
        END IF;
        kept := greatest(kept - (length(fitted) - fit_report.room), 0);
    END LOOP;
    RETURN fitted;
END;
$$;

--
-- Name: FUNCTION fit_report(report text, room integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.fit_report(report text, room integer) IS 'Markdown from a runner (a report, a task''s body) made safe (safe_report_text) in at most room characters: whole when it fits, else as much of its beginning as fits with a code fence it leaves open closed (closing_fence) and a last line saying how many characters of it were cut; empty when not even that fits.';

--
-- Name: activity_count; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.activity_count (
    grain interval NOT NULL,
    bucket timestamp with time zone NOT NULL,
    lane text NOT NULL,
    kind tireless.job_kind NOT NULL,
    pending_delta bigint NOT NULL,
    claimed_delta bigint NOT NULL,
    delivered bigint NOT NULL,
    failed bigint NOT NULL,
    cancelled bigint NOT NULL,
    CONSTRAINT activity_grain_is_minute_or_hour CHECK ((grain = ANY (ARRAY['00:01:00'::interval, '01:00:00'::interval])))
);

--
-- Name: TABLE activity_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.activity_count IS 'Per bucket (a minute or an hour), lane and kind: how the pending and claimed jobs changed (jobs that entered the state minus jobs that left it) and how many jobs ended in each terminal state. Private: read tireless.queue_activity.';

--
-- Name: CONSTRAINT activity_grain_is_minute_or_hour ON activity_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT activity_grain_is_minute_or_hour ON tireless.activity_count IS 'Two grains: minutes and hours.';

--
-- Name: duration_count; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.duration_count (
    grain interval NOT NULL,
    bucket timestamp with time zone NOT NULL,
    lane text NOT NULL,
    kind tireless.job_kind NOT NULL,
    measure text NOT NULL,
    bin smallint NOT NULL,
    jobs bigint NOT NULL,
    CONSTRAINT duration_grain_is_minute_or_hour CHECK ((grain = ANY (ARRAY['00:01:00'::interval, '01:00:00'::interval]))),
    CONSTRAINT duration_measure_is_wait_or_run CHECK ((measure = ANY (ARRAY['wait'::text, 'run'::text])))
);

--
-- Name: TABLE duration_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.duration_count IS 'A histogram per bucket, lane and kind: how many jobs waited (created to first claim, counted in the bucket of the claim) or ran (claim to finish, in the bucket of the finish) for a duration in each bin (tireless.duration_bin). Private: read tireless.job_durations.';

--
-- Name: CONSTRAINT duration_grain_is_minute_or_hour ON duration_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT duration_grain_is_minute_or_hour ON tireless.duration_count IS 'Two grains: minutes and hours.';

--
-- Name: CONSTRAINT duration_measure_is_wait_or_run ON duration_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT duration_measure_is_wait_or_run ON tireless.duration_count IS 'wait: created to first claim; run: claim to finish.';

--
-- Name: issue_run; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.issue_run (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    job_id bigint NOT NULL
);

--
-- Name: TABLE issue_run; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.issue_run IS 'Which jobs each issue has had, so a job page can link the runs before and after it. Kept by the rollup, not by an index on tireless.job: every change of state writes each index of that table (state is in the predicates of its partial indexes, so no update is HOT), and this costs the claim and finish paths nothing. Private: read tireless.issue_runs.';

--
-- Name: worker_seen; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.worker_seen (
    worker text NOT NULL,
    lanes text[] NOT NULL,
    first_seen timestamp with time zone NOT NULL,
    last_seen timestamp with time zone NOT NULL
);

--
-- Name: TABLE worker_seen; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.worker_seen IS 'Every worker the history names (claims, finishes, give-backs) in the last 8 days: the lanes it claimed from and when it was first and last named. Private: read tireless.workers.';

--
-- Name: fold_history(bigint, bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.fold_history(after_id bigint, upto_id bigint) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH moved AS (
          SELECT m.at,
             m.worker,
             m.from_state,
             m.to_state,
             m.error,
             m.job_id,
             m.forge,
             m.owner,
             m.repo,
             m.number,
             m.lane,
             m.kind,
             m.waited,
             m.ran
            FROM tireless.history_moves(fold_history.after_id, fold_history.upto_id) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran)
         ), bucketed AS (
          SELECT g.grain,
             date_bin(g.grain, m.at, '2000-01-01 00:00:00+00'::timestamp with time zone) AS bucket,
             m.lane,
             m.kind,
             m.from_state,
             m.to_state,
             m.waited,
             m.ran,
             m.error,
             m.job_id
            FROM (moved m
              JOIN ( VALUES ('00:01:00'::interval,'03:00:00'::interval), ('01:00:00'::interval,'8 days'::interval)) g(grain, kept) ON ((m.at >= (now() - g.kept))))
         ), flows AS (
          INSERT INTO tireless.activity_count AS a (grain, bucket, lane, kind, pending_delta, claimed_delta, delivered, failed, cancelled)  SELECT b.grain,
                     b.bucket,
                     b.lane,
                     b.kind,
                     (count(*) FILTER (WHERE (b.to_state = 'pending'::tireless.job_state)) - count(*) FILTER (WHERE (b.from_state = 'pending'::tireless.job_state))),
                     (count(*) FILTER (WHERE (b.to_state = 'claimed'::tireless.job_state)) - count(*) FILTER (WHERE (b.from_state = 'claimed'::tireless.job_state))),
                     count(*) FILTER (WHERE (b.to_state = 'delivered'::tireless.job_state)) AS count,
                     count(*) FILTER (WHERE (b.to_state = 'failed'::tireless.job_state)) AS count,
                     count(*) FILTER (WHERE (b.to_state = 'cancelled'::tireless.job_state)) AS count
                    FROM bucketed b
                   GROUP BY b.grain, b.bucket, b.lane, b.kind ON CONFLICT(grain, bucket, lane, kind) DO UPDATE SET pending_delta = (a.pending_delta + excluded.pending_delta), claimed_delta = (a.claimed_delta + excluded.claimed_delta), delivered = (a.delivered + excluded.delivered), failed = (a.failed + excluded.failed), cancelled = (a.cancelled + excluded.cancelled)
         ), durations AS (
          INSERT INTO tireless.duration_count AS d (grain, bucket, lane, kind, measure, bin, jobs)  SELECT b.grain,
                     b.bucket,
                     b.lane,
                     b.kind,
                     x.measure,
                     tireless.duration_bin(x.seconds) AS duration_bin,
                     count(*) AS count
                    FROM (bucketed b
                      CROSS JOIN LATERAL ( VALUES ('wait'::text,b.waited), ('run'::text,b.ran)) x(measure, seconds))
                   WHERE (x.seconds IS NOT NULL)
                   GROUP BY b.grain, b.bucket, b.lane, b.kind, x.measure, (tireless.duration_bin(x.seconds)) ON CONFLICT(grain, bucket, lane, kind, measure, bin) DO UPDATE SET jobs = (d.jobs + excluded.jobs)
         ), failures AS (
          INSERT INTO tireless.failure_count AS f (grain, bucket, lane, error, jobs, latest)  SELECT b.grain,
                     b.bucket,
                     b.lane,
                     b.error,
                     count(*) AS count,
                     max(b.job_id) AS max
                    FROM bucketed b
                   WHERE (b.to_state = 'failed'::tireless.job_state)
                   GROUP BY b.grain, b.bucket, b.lane, b.error ON CONFLICT(grain, bucket, lane, error) DO UPDATE SET jobs = (f.jobs + excluded.jobs), latest = GREATEST(f.latest, excluded.latest)
         ), seen AS (
          INSERT INTO tireless.worker_seen AS w (worker, lanes, first_seen, last_seen)  SELECT m.worker,
                     COALESCE(array_agg(DISTINCT m.lane) FILTER (WHERE (m.to_state = 'claimed'::tireless.job_state)), '{}'::text[]) AS "coalesce",
                     min(m.at) AS min,
                     max(m.at) AS max
                    FROM moved m
                   WHERE ((m.worker IS NOT NULL) AND (m.at >= (now() - '8 days'::interval)))
                   GROUP BY m.worker ON CONFLICT(worker) DO UPDATE SET lanes = ARRAY( SELECT DISTINCT l.l
                    FROM unnest((w.lanes || excluded.lanes)) l(l)
                   ORDER BY l.l), first_seen = LEAST(w.first_seen, excluded.first_seen), last_seen = GREATEST(w.last_seen, excluded.last_seen)
         ), runs AS (
          INSERT INTO tireless.issue_run (forge, owner, repo, number, job_id)  SELECT m.forge,
                     m.owner,
                     m.repo,
                     m.number,
                     m.job_id
                    FROM moved m
                   WHERE (m.from_state IS NULL) ON CONFLICT DO NOTHING
         )
  SELECT count(*) AS count
    FROM moved;
 DELETE FROM tireless.activity_count a
   WHERE (a.bucket < (now() -
         CASE
             WHEN (a.grain = '00:01:00'::interval) THEN '03:00:00'::interval
             ELSE '8 days'::interval
         END));
 DELETE FROM tireless.duration_count d
   WHERE (d.bucket < (now() -
         CASE
             WHEN (d.grain = '00:01:00'::interval) THEN '03:00:00'::interval
             ELSE '8 days'::interval
         END));
 DELETE FROM tireless.failure_count f
   WHERE (f.bucket < (now() -
         CASE
             WHEN (f.grain = '00:01:00'::interval) THEN '03:00:00'::interval
             ELSE '8 days'::interval
         END));
 DELETE FROM tireless.worker_seen w
   WHERE (w.last_seen < (now() - '8 days'::interval));
END;

--
-- Name: FUNCTION fold_history(after_id bigint, upto_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.fold_history(after_id bigint, upto_id bigint) IS 'Folds the events with after_id < id <= upto_id into activity_count, duration_count, failure_count, worker_seen and issue_run, and drops the buckets past their keeping time. Called by tireless.roll_up_history (and once by migration 0023).';

--
-- Name: forge_api_url(tireless.forge_kind, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forge_api_url(kind tireless.forge_kind, base_url text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN (kind = 'github'::tireless.forge_kind) THEN base_url ELSE (base_url || '/api/v1'::text) END;

--
-- Name: FUNCTION forge_api_url(kind tireless.forge_kind, base_url text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forge_api_url(kind tireless.forge_kind, base_url text) IS 'A registered forge''s API root: base_url for GitHub (it is the API root), base_url/api/v1 for Gitea and Forgejo.';

--
-- Name: forge_apps(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forge_apps() RETURNS TABLE(name text, app_id bigint, app_key_file text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT f.name, f.app_id, f.app_key_file FROM tireless.forge f WHERE f.app_id IS NOT NULL ORDER BY f.name;
$$;

--
-- Name: FUNCTION forge_apps(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forge_apps() IS 'The forges that authenticate as a GitHub App, by name: the App''s id and the path of its key''s file (or null).';

--
-- Name: forge_body_limit(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forge_body_limit() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 65536;

--
-- Name: FUNCTION forge_body_limit(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forge_body_limit() IS 'The most characters (code points) of a body tireless writes to any forge: a comment, an issue or a pull request (GitHub''s limit; Gitea and Forgejo take more). Each text the mirror writes is composed to fit.';

--
-- Name: forge_web_root(tireless.forge_kind, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forge_web_root(kind tireless.forge_kind, base_url text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN ((kind = 'github'::tireless.forge_kind) AND (base_url = 'https://api.github.com'::text)) THEN 'https://github.com'::text WHEN (kind = 'github'::tireless.forge_kind) THEN regexp_replace(base_url, '/api/v3$'::text, ''::text) ELSE base_url END;

--
-- Name: FUNCTION forge_web_root(kind tireless.forge_kind, base_url text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forge_web_root(kind tireless.forge_kind, base_url text) IS 'A registered forge''s web root: base_url for Gitea and Forgejo; for GitHub github.com for api.github.com, HOST for HOST/api/v3. Computed from the arguments alone.';

--
-- Name: forge_clone_url(tireless.forge_kind, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (((((tireless.forge_web_root(kind, base_url) || '/'::text) || owner) || '/'::text) || repo) || '.git'::text);

--
-- Name: FUNCTION forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text) IS 'A repository''s HTTPS clone URL, where the runner fetches and pushes: the forge''s web root (tireless.forge_web_root), then /owner/repo.git. Computed from the arguments alone: no token in it.';

--
-- Name: forge_write_backoff(integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forge_write_backoff(failures integer) RETURNS interval
    LANGUAGE sql
    RETURN (LEAST('01:00:00'::interval, ('00:00:15'::interval * ((2)::double precision ^ (LEAST(GREATEST(failures, 0), 20))::double precision))) * ((0.5)::double precision + (random() / (2)::double precision)));

--
-- Name: FUNCTION forge_write_backoff(failures integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forge_write_backoff(failures integer) IS 'How long a forge write waits after its failures-th failure in a row (0 for the first): 15 seconds doubling per failure, capped at an hour, jittered to between half and all of it. The one backoff of the mirror''s writes (tireless.record_forge_write, and the label writes of tireless.record_mirror_failure).';

--
-- Name: forge_writes_due(text, text, text, text, text[], integer, timestamp with time zone); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forge_writes_due(forge text, owner text, repo text, poller text, kinds text[], max_writes integer DEFAULT 100, now timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(id bigint, kind text, number integer, payload jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF forge_writes_due.max_writes IS NULL OR forge_writes_due.max_writes NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_writes must be from 1 to 10000, got %', coalesce(forge_writes_due.max_writes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF forge_writes_due.kinds IS NULL OR cardinality(forge_writes_due.kinds) = 0
       OR array_position(forge_writes_due.kinds, NULL) IS NOT NULL
       OR NOT forge_writes_due.kinds <@ ARRAY['pull', 'task', 'comment', 'cycle', 'checklist', 'reply', 'unknown_label'] THEN
        RAISE EXCEPTION 'kinds must name at least one of pull, task, comment, cycle, checklist, reply, unknown_label, got %',
            coalesce(forge_writes_due.kinds::text, 'null') USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(forge_writes_due.forge, forge_writes_due.owner, forge_writes_due.repo, forge_writes_due.poller);
    RETURN QUERY
    SELECT w.id, w.kind, coalesce((rendered.payload ->> 'number')::integer, w.number), rendered.payload
      FROM tireless.forge_write w
     CROSS JOIN LATERAL (SELECT CASE w.kind WHEN 'pull' THEN tireless.pull_write(w)
                                            WHEN 'task' THEN tireless.task_write(w)
                                            WHEN 'comment' THEN tireless.comment_write(w)
                                            WHEN 'cycle' THEN tireless.cycle_write(w)
                                            WHEN 'checklist' THEN tireless.checklist_write(w)
                                            WHEN 'reply' THEN tireless.reply_write(w)
                                            WHEN 'unknown_label' THEN tireless.unknown_label_write(w) END AS payload) AS rendered
     WHERE (w.forge, w.owner, w.repo) = (forge_writes_due.forge, forge_writes_due.owner, forge_writes_due.repo)
       AND w.kind = ANY (forge_writes_due.kinds)
       AND w.written_at IS NULL AND w.next_try_at <= coalesce(forge_writes_due.now, now())
       AND tireless.mirror_may_write(w.forge, w.owner, w.repo, w.number)
       AND rendered.payload IS NOT NULL
     ORDER BY array_position(forge_writes_due.kinds, w.kind),
              -- A plan's tasks in the file's order (a dependency before its dependents); the others soonest first.
              CASE WHEN w.kind <> 'task' THEN w.next_try_at END, w.job_id, w.task, w.report_id, w.ask_id, w.label_id
     LIMIT forge_writes_due.max_writes;
END;
$$;

--
-- Name: FUNCTION forge_writes_due(forge text, owner text, repo text, poller text, kinds text[], max_writes integer, now timestamp with time zone); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forge_writes_due(forge text, owner text, repo text, poller text, kinds text[], max_writes integer, now timestamp with time zone) IS 'For a poller holding the repository''s poll lease: the forge writes of the given kinds due now (or at now, when given: a retry''s backoff passed), at most max_writes, in the order of kinds, then soonest first (a plan''s tasks in the file''s order): the write''s id, its kind, the issue or pull request it goes to, and what to write, rendered from the store as it is now by its kind''s function (pull: tireless.pull_write, task: task_write, comment: comment_write, cycle: cycle_write, checklist: checklist_write, reply: reply_write, unknown_label: unknown_label_write), which also says whether it waits (a comment for its pull request, a task for its dependencies). None for a gone issue or, for a day, an archived repository (tireless.mirror_may_write). TL004 without the lease, TL005 for bad kinds or max_writes.';

--
-- Name: forges(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.forges() RETURNS TABLE(name text, kind text, base_url text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT f.name, f.kind::text, f.base_url FROM tireless.forge f ORDER BY f.name;
$$;

--
-- Name: FUNCTION forges(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.forges() IS 'The registered forges, by name: name, kind and base_url (a runner that delivers says at start which it has no token for).';

--
-- Name: give_back(bigint, text, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.give_back(job_id bigint, worker text, note text DEFAULT NULL::text, token uuid DEFAULT NULL::uuid) RETURNS tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job;
    result tireless.job;
BEGIN
    PERFORM tireless.check_worker(give_back.worker);
    IF length(give_back.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(give_back.note) USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO job FROM tireless.job j WHERE j.id = give_back.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(give_back.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    -- Sent again because its answer was lost: the first one committed; the job as it is now answers.
    IF give_back.token IS NOT NULL AND job.ended_claim_token = give_back.token THEN
        RETURN job;
    END IF;
    PERFORM tireless.check_holder(job, give_back.worker, give_back.token);
    IF job.cancel_requested_at IS NOT NULL THEN
        -- A cancel request stands (0007_work_rule): the job ends cancelled instead of running again.
        UPDATE tireless.job j
           SET state = 'cancelled', claimed_by = NULL, claim_expires_at = NULL, claim_token = NULL,
               ended_claim_token = give_back.token,
               note = coalesce(job.cancel_note, 'issue withdrew its request') || coalesce('; given back: ' || give_back.note, ''),
               updated_at = now()
         WHERE j.id = job.id
        RETURNING j.* INTO result;
        RETURN result;
    END IF;
    -- Not a failure: no backoff, no count for the circuit breaker, no attempt spent of the budget.
    UPDATE tireless.job j
       SET state = 'pending',
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           ended_claim_token = give_back.token,
           given_back = j.given_back + 1,
           available_at = now(),
           note = 'given back' || coalesce(': ' || give_back.note, ''),
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO result;
    PERFORM tireless.announce_work(job.lane);
    RETURN result;
END;
$$;

--
-- Name: FUNCTION give_back(job_id bigint, worker text, note text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.give_back(job_id bigint, worker text, note text, token uuid) IS 'The holder returns the job because the runner is stopping (SIGTERM, a deploy), not because the job failed: pending and claimable at once, no backoff, no failure for the circuit breaker, not counted against max_attempts (attempts keeps the claim; given_back counts it). The note starts with "given back". A job asked to stop ends cancelled instead, with the stop''s note. TL004 unless worker (and token, when given) holds the claim and the caller is the login that claimed it (or an admin). Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';

--
-- Name: give_turns(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.give_turns() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO tireless.lane_repo AS r (lane, forge, owner, repo, limited)
    SELECT DISTINCT n.lane, n.forge, n.owner, n.repo,
           EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (n.forge, n.owner, n.repo))
      FROM created n WHERE n.state = 'pending'
    ON CONFLICT ON CONSTRAINT one_turn_per_lane_and_repo DO UPDATE SET has_work = true;
    RETURN NULL;
END;
$$;

--
-- Name: FUNCTION give_turns(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.give_turns() IS 'Trigger of tireless.job (per insert statement): the repositories of the new pending jobs get a turn with work in their lanes.';

--
-- Name: heartbeat(bigint, text, interval, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval DEFAULT '00:10:00'::interval, token uuid DEFAULT NULL::uuid) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    requested timestamptz;
    held_lane text;
    held_attempt integer;
BEGIN
    IF NOT (tireless.is_worker_name(heartbeat.worker) AND tireless.is_lease(heartbeat.lease)) THEN
        PERFORM tireless.check_worker(heartbeat.worker);
        PERFORM tireless.check_lease(heartbeat.lease);
    END IF;
    UPDATE tireless.job j
       SET claim_expires_at = now() + heartbeat.lease, updated_at = now()
     WHERE j.id = heartbeat.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = heartbeat.worker
       AND (heartbeat.token IS NULL OR j.claim_token = heartbeat.token)
       AND tireless.acts_for_login(j.claimed_login)
    RETURNING j.cancel_requested_at, j.lane, j.attempts INTO requested, held_lane, held_attempt;
    IF FOUND THEN
        IF requested IS NOT NULL THEN
            RETURN 'cancel';
        END IF;
        RETURN tireless.watch_attempt(heartbeat.job_id, held_attempt, held_lane);
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = heartbeat.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(heartbeat.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN 'lost';
END;
$$;

--
-- Name: FUNCTION heartbeat(job_id bigint, worker text, lease interval, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval, token uuid) IS 'Renews like renew_claim and answers held, lost (worker, or token when given, no longer holds the claim, or the caller is not the login that claimed nor an admin), cancel (the job was asked to stop: its issue withdrew its request, an admin cancelled it), timeout (the attempt ran past its lane''s max_run) or stalled (no progress for its lane''s stall_after). On cancel, timeout and stalled the lease is still extended, so the holder can stop its agent: then transition to cancelled, or end_stopped_attempt. A runner treats an answer it does not know as cancel. TL001 for an unknown job.';

--
-- Name: held_job(bigint, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.held_job(job_id bigint, worker text, token uuid) RETURNS tireless.job
    LANGUAGE plpgsql
    AS $$
DECLARE
    job tireless.job;
BEGIN
    SELECT * INTO job FROM tireless.job j WHERE j.id = held_job.job_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(held_job.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    PERFORM tireless.check_holder(job, held_job.worker, held_job.token);
    RETURN job;
END;
$$;

--
-- Name: FUNCTION held_job(job_id bigint, worker text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.held_job(job_id bigint, worker text, token uuid) IS 'The job, locked (FOR NO KEY UPDATE), when worker (and token, when given) holds its claim; TL001 for an unknown job, TL004 (tireless.check_holder) otherwise.';

--
-- Name: repo_poll; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.repo_poll (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    next_poll_at timestamp with time zone DEFAULT now() NOT NULL,
    backoff_until timestamp with time zone,
    cursor timestamp with time zone,
    etag text,
    reads_since_full integer DEFAULT 0 NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    last_error text,
    last_error_at timestamp with time zone,
    last_success_at timestamp with time zone,
    last_poll_at timestamp with time zone,
    polled_by text,
    poll_lease_until timestamp with time zone,
    moved_to text,
    last_warning text,
    last_warning_at timestamp with time zone,
    poll_again boolean DEFAULT false NOT NULL,
    CONSTRAINT poll_counts_not_negative CHECK (((reads_since_full >= 0) AND (consecutive_failures >= 0))),
    CONSTRAINT poll_lease_has_holder_and_end CHECK (((polled_by IS NULL) = (poll_lease_until IS NULL)))
);

--
-- Name: TABLE repo_poll; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.repo_poll IS 'The poll state of each tracked repository: when it is due, its backoff, its cursor and ETag, its errors, and which poller holds it. Private: claim_repos_to_poll, record_poll and record_poll_failure keep it.';

--
-- Name: COLUMN repo_poll.backoff_until; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_poll.backoff_until IS 'After a failed read the repository is not read again before this time.';

--
-- Name: COLUMN repo_poll.cursor; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_poll.cursor IS 'The newest forge updated_at a good read has seen: the next read asks for issues since it.';

--
-- Name: COLUMN repo_poll.reads_since_full; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_poll.reads_since_full IS 'Good reads since the last full listing; the tenth is a full listing again.';

--
-- Name: COLUMN repo_poll.polled_by; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_poll.polled_by IS 'The poller that holds the repository''s poll lease, until poll_lease_until.';

--
-- Name: COLUMN repo_poll.moved_to; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_poll.moved_to IS 'owner/name the forge says the repository has now (it was renamed or transferred and the poller follows the forge''s redirect); the key stays as tracked.';

--
-- Name: COLUMN repo_poll.last_warning; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_poll.last_warning IS 'What a good read could not do, say an issue too large to read that it skipped; kept until the next warning.';

--
-- Name: COLUMN repo_poll.poll_again; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_poll.poll_again IS 'poll_soon came while a poller held the repository''s lease: the read under way may predate the change, so record_poll makes the repository due at once instead of in next_poll_in.';

--
-- Name: CONSTRAINT poll_counts_not_negative ON repo_poll; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT poll_counts_not_negative ON tireless.repo_poll IS 'Counts of reads and failures are not negative.';

--
-- Name: CONSTRAINT poll_lease_has_holder_and_end ON repo_poll; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT poll_lease_has_holder_and_end ON tireless.repo_poll IS 'A poll lease has both a holder and an end, or neither.';

--
-- Name: held_poll(text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.held_poll(forge text, owner text, repo text, poller text) RETURNS tireless.repo_poll
    LANGUAGE plpgsql
    AS $$
DECLARE
    poll tireless.repo_poll;
BEGIN
    PERFORM tireless.check_repo(held_poll.forge, held_poll.owner, held_poll.repo);
    PERFORM tireless.check_worker(held_poll.poller);
    SELECT * INTO poll FROM tireless.repo_poll rp
     WHERE (rp.forge, rp.owner, rp.repo) = (held_poll.forge, held_poll.owner, held_poll.repo)
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'repository %/%/% is not tracked', held_poll.forge, held_poll.owner, held_poll.repo
            USING ERRCODE = 'TL008';
    END IF;
    IF poll.polled_by IS DISTINCT FROM held_poll.poller THEN
        RAISE EXCEPTION 'poller % does not hold the poll lease of %/%/%', quote_literal(held_poll.poller),
            held_poll.forge, held_poll.owner, held_poll.repo
            USING ERRCODE = 'TL004',
                  DETAIL = coalesce(format('The lease is held by %L.', poll.polled_by), 'Nobody holds the lease.');
    END IF;
    RETURN poll;
END;
$$;

--
-- Name: FUNCTION held_poll(forge text, owner text, repo text, poller text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.held_poll(forge text, owner text, repo text, poller text) IS 'The repository''s poll state, locked, when poller holds its poll lease; TL008 for an untracked repository, TL004 when another poller (or none) holds the lease.';

--
-- Name: history_top(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.history_top() RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END FROM tireless.job_event_id_seq s;
$$;

--
-- Name: FUNCTION history_top(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.history_top() IS 'The newest job_event id drawn so far (0 before the first), read from the sequence without scanning the history.';

--
-- Name: is_commit_id(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_commit_id(id text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (id ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'::text);

--
-- Name: FUNCTION is_commit_id(id text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_commit_id(id text) IS 'True when a text is a full commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits; null for null.';

--
-- Name: is_forge_timestamp(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_forge_timestamp(value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT CASE
        WHEN value !~ '^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-](0\d|1[0-5])(:?[0-5]\d)?)$'
            THEN false
        WHEN left(value, 4) = '0000' THEN false
        -- The day exists in its month (2026-02-30 does not).
        ELSE substr(value, 9, 2)::integer
             <= extract(day FROM make_date(left(value, 4)::integer, substr(value, 6, 2)::integer, 1) + interval '1 month - 1 day')
    END;
$_$;

--
-- Name: FUNCTION is_forge_timestamp(value text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_forge_timestamp(value text) IS 'True for an ISO 8601 timestamp with its time zone, as forges write them (2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00), naming a real date and time.';

--
-- Name: is_lease(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_lease(lease interval) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((lease IS NOT NULL) AND (lease > '00:00:00'::interval) AND (lease <= '1 day'::interval));

--
-- Name: FUNCTION is_lease(lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_lease(lease interval) IS 'True when 0 < lease <= 1 day (false for null).';

--
-- Name: is_model_name(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_model_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (name ~ '^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,198}\*?$'::text);

--
-- Name: FUNCTION is_model_name(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_model_name(name text) IS 'True for a model name a price may name: 1 to 200 letters, digits and . _ : / @ + -, starting with a letter or digit, with one * at its end for a prefix.';

--
-- Name: is_ref_name(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_ref_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((name ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'::text) AND (name !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$'::text) AND (name <> '@'::text));

--
-- Name: FUNCTION is_ref_name(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_ref_name(name text) IS 'True when a text is a git ref name as git check-ref-format allows one (no blank or control character, no ~ ^ : ? * [ \, no .. or @{, no component starting with . or ending with .lock, not starting with - or /, not ending with / or .), of at most 255 characters and without `, <, > or " (so it quotes safely in markdown and HTML); null for null.';

--
-- Name: is_worker_name(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.is_worker_name(worker text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((worker IS NOT NULL) AND (btrim(worker) <> ''::text) AND (length(worker) <= 200));

--
-- Name: FUNCTION is_worker_name(worker text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.is_worker_name(worker text) IS 'True when a text can name a worker: not blank, at most 200 characters (false for null).';

--
-- Name: issue_body_limit(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_body_limit() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 65536;

--
-- Name: FUNCTION issue_body_limit(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_body_limit() IS 'How many characters of an issue''s body the store keeps (GitHub''s own limit on a body); a longer one is cut and flagged.';

--
-- Name: issue_gone(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_gone(forge text, owner text, repo text, number integer) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT EXISTS (SELECT FROM tireless.issue s
                    WHERE (s.forge, s.owner, s.repo, s.number) = (issue_gone.forge, issue_gone.owner, issue_gone.repo, issue_gone.number)
                      AND s.gone_at IS NOT NULL);
$$;

--
-- Name: FUNCTION issue_gone(forge text, owner text, repo text, number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_gone(forge text, owner text, repo text, number integer) IS 'Whether the forge said the issue is gone (deleted or moved: record_issue_gone, record_poll''s deleted numbers) and no listing has shown it since: the mirror makes no write to it.';

--
-- Name: issue_problem(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_problem(issue jsonb) RETURNS text
    LANGUAGE sql STABLE
    AS $_$
    -- The label limits are labels_problem's (at most 100 labels of 1 to 200 characters), checked
    -- here on the JSON array with jsonpath, which keeps this one expression.
    SELECT CASE
        WHEN jsonb_typeof(issue) IS DISTINCT FROM 'object' THEN
            format('must be a JSON object, got %s', left(issue::text, 100))
        WHEN jsonb_typeof(issue -> 'forge') IS DISTINCT FROM 'string' OR length(issue ->> 'forge') NOT BETWEEN 1 AND 100 THEN
            format('"forge" must be a string of 1 to 100 characters, got %s', left(coalesce(issue -> 'forge', 'null')::text, 120))
        WHEN jsonb_typeof(issue -> 'owner') IS DISTINCT FROM 'string' OR length(issue ->> 'owner') NOT BETWEEN 1 AND 200 THEN
            format('"owner" must be a string of 1 to 200 characters, got %s', left(coalesce(issue -> 'owner', 'null')::text, 220))
        WHEN jsonb_typeof(issue -> 'repo') IS DISTINCT FROM 'string' OR length(issue ->> 'repo') NOT BETWEEN 1 AND 200 THEN
            format('"repo" must be a string of 1 to 200 characters, got %s', left(coalesce(issue -> 'repo', 'null')::text, 220))
        WHEN jsonb_typeof(issue -> 'number') IS DISTINCT FROM 'number'
             OR (issue -> 'number')::numeric NOT BETWEEN 1 AND 2147483647
             OR (issue -> 'number')::numeric <> trunc((issue -> 'number')::numeric) THEN
            format('"number" must be an integer from 1 to 2147483647, got %s', left(coalesce(issue -> 'number', 'null')::text, 100))
        WHEN jsonb_typeof(issue -> 'state') IS DISTINCT FROM 'string' OR issue ->> 'state' NOT IN ('open', 'closed') THEN
            format('"state" must be "open" or "closed", got %s', left(coalesce(issue -> 'state', 'null')::text, 100))
        WHEN jsonb_typeof(issue -> 'labels') IS DISTINCT FROM 'array' THEN
            format('"labels" must be an array of strings, got %s', left(coalesce(issue -> 'labels', 'null')::text, 100))
        WHEN jsonb_path_exists(issue, '$.labels[*] ? (@.type() != "string")') THEN
            format('"labels" must hold strings, got %s',
                   left(jsonb_path_query_first(issue, '$.labels[*] ? (@.type() != "string")')::text, 100))
        WHEN jsonb_array_length(issue -> 'labels') > 100 THEN
            format('"labels" holds %s labels, at most 100 are allowed', jsonb_array_length(issue -> 'labels'))
        WHEN jsonb_path_exists(issue, '$.labels[*] ? (!(@ like_regex "^.{1,200}$" flag "s"))') THEN
            format('"labels" must hold labels of 1 to 200 characters, got %s',
                   quote_literal(left(jsonb_path_query_first(issue, '$.labels[*] ? (!(@ like_regex "^.{1,200}$" flag "s"))') #>> '{}', 220)))
        WHEN jsonb_typeof(issue -> 'title') NOT IN ('string', 'null') OR length(issue ->> 'title') > 1000 THEN
            format('"title" must be a string of at most 1000 characters, got %s', left((issue -> 'title')::text, 100))
        WHEN jsonb_typeof(issue -> 'url') NOT IN ('string', 'null')
             OR (jsonb_typeof(issue -> 'url') = 'string'
                 AND (length(issue ->> 'url') > 2000 OR issue ->> 'url' !~ '^https?://[^[:space:][:cntrl:]]+$')) THEN
            format('"url" must be an http:// or https:// URL of at most 2000 characters, got %s', left((issue -> 'url')::text, 100))
        WHEN jsonb_typeof(issue -> 'updated_at') NOT IN ('string', 'null')
             OR (jsonb_typeof(issue -> 'updated_at') = 'string' AND NOT tireless.is_forge_timestamp(issue ->> 'updated_at')) THEN
            format('"updated_at" must be an ISO 8601 timestamp with a time zone, got %s', left((issue -> 'updated_at')::text, 100))
        WHEN jsonb_typeof(issue -> 'parent_id') NOT IN ('number', 'null')
             OR (jsonb_typeof(issue -> 'parent_id') = 'number'
                 AND ((issue -> 'parent_id')::numeric NOT BETWEEN 1 AND 9223372036854775807
                      OR (issue -> 'parent_id')::numeric <> trunc((issue -> 'parent_id')::numeric))) THEN
            format('"parent_id" must be a job id, got %s', left((issue -> 'parent_id')::text, 100))
        WHEN jsonb_typeof(issue -> 'body') NOT IN ('string', 'null') THEN
            format('"body" must be a string or null, got %s', left((issue -> 'body')::text, 100))
        WHEN issue ? 'depends_on' THEN tireless.depends_on_problem(issue -> 'depends_on')
    END;
$_$;

--
-- Name: FUNCTION issue_problem(issue jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_problem(issue jsonb) IS 'Why one element of an enqueue batch is malformed, or null when it is well formed.';

--
-- Name: issue_push(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_push(forge text, owner text, repo text, number integer) RETURNS TABLE(branch text, head text, pull_number integer, pull_url text)
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(last.branch, p.label_prefix || '/' || issue_push.number), last.head, pull.pull_number, pull.pull_url
      FROM tireless.policy p
      LEFT JOIN LATERAL (SELECT d.branch, d.head FROM tireless.delivery d
                          WHERE (d.forge, d.owner, d.repo, d.number)
                                = (issue_push.forge, issue_push.owner, issue_push.repo, issue_push.number)
                            AND d.branch IS NOT NULL
                          ORDER BY d.job_id DESC LIMIT 1) AS last ON true
      LEFT JOIN LATERAL (SELECT d.pull_number, d.pull_url FROM tireless.delivery d
                          WHERE (d.forge, d.owner, d.repo, d.number)
                                = (issue_push.forge, issue_push.owner, issue_push.repo, issue_push.number)
                            AND d.branch = last.branch AND d.pull_number IS NOT NULL
                          ORDER BY d.job_id DESC LIMIT 1) AS pull ON true;
$$;

--
-- Name: FUNCTION issue_push(forge text, owner text, repo text, number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_push(forge text, owner text, repo text, number integer) IS 'What tireless last pushed for an issue: the branch of its newest delivery that pushed one (else <label_prefix>/<number>, not pushed yet), that delivery''s head (null: never pushed), and the newest pull request the mirror recorded for that branch (null: none known; it may have been merged or closed since).';

--
-- Name: issue_ref(text, text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN (issue_ref.owner, issue_ref.repo) = (issue_ref.to_owner, issue_ref.to_repo) THEN ''
                ELSE issue_ref.to_owner || '/' || issue_ref.to_repo END
           || '#' || issue_ref.to_number;
$$;

--
-- Name: FUNCTION issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer) IS 'How an issue of owner/repo names issue to_number of to_owner/to_repo: #N in its own repository, else owner/repo#N.';

--
-- Name: issue_runs(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_runs(job_id bigint) RETURNS TABLE(id bigint, state text, kind text, created_at timestamp with time zone, note text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT j.id,
     (j.state)::text AS state,
     (j.kind)::text AS kind,
     j.created_at,
     j.note
    FROM ((tireless.job me
      JOIN tireless.issue_run r ON (((r.forge = me.forge) AND (r.owner = me.owner) AND (r.repo = me.repo) AND (r.number = me.number))))
      JOIN tireless.job j ON ((j.id = r.job_id)))
   WHERE (me.id = issue_runs.job_id)
 UNION
  SELECT j.id,
     (j.state)::text AS state,
     (j.kind)::text AS kind,
     j.created_at,
     j.note
    FROM ((tireless.job me
      JOIN ( SELECT m.at,
             m.worker,
             m.from_state,
             m.to_state,
             m.error,
             m.job_id,
             m.forge,
             m.owner,
             m.repo,
             m.number,
             m.lane,
             m.kind,
             m.waited,
             m.ran
            FROM tireless.history_moves(( SELECT r.counted_to
                    FROM tireless.history_rollup r), NULL::bigint) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran)
           WHERE (m.from_state IS NULL)) t ON (((t.forge = me.forge) AND (t.owner = me.owner) AND (t.repo = me.repo) AND (t.number = me.number))))
      JOIN tireless.job j ON ((j.id = t.job_id)))
   WHERE (me.id = issue_runs.job_id)
 UNION
  SELECT me.id,
     (me.state)::text AS state,
     (me.kind)::text AS kind,
     me.created_at,
     me.note
    FROM tireless.job me
   WHERE (me.id = issue_runs.job_id)
  ORDER BY 1;
END;

--
-- Name: FUNCTION issue_runs(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_runs(job_id bigint) IS 'Every job the issue of job_id has had (a re-run, or a new request after one ended), in order: those the rollup folded into tireless.issue_run and those created since, and job_id itself; empty for an unknown job.';

--
-- Name: issue_spend(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_spend(forge text, owner text, repo text, number integer, OUT tokens bigint, OUT cost numeric) RETURNS record
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT (COALESCE(sum((((u.input_tokens + u.output_tokens) + u.cache_read_tokens) + u.cache_write_tokens)), (0)::numeric))::bigint AS "coalesce",
     COALESCE(sum(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)), (0)::numeric) AS "coalesce"
    FROM (tireless.job j
      JOIN tireless.model_usage u ON ((u.job_id = j.id)))
   WHERE ((j.forge = issue_spend.forge) AND (j.owner = issue_spend.owner) AND (j.repo = issue_spend.repo) AND (j.number = issue_spend.number));
END;

--
-- Name: FUNCTION issue_spend(forge text, owner text, repo text, number integer, OUT tokens bigint, OUT cost numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_spend(forge text, owner text, repo text, number integer, OUT tokens bigint, OUT cost numeric) IS 'Tokens (every kind) and USD (priced models only) spent by every job of an issue the store keeps (retries, revisions, fixes of failed checks).';

--
-- Name: job_asks(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_asks(job_id bigint) RETURNS TABLE(ask_id bigint, source text, source_id text, pull_number integer, verb text, author text, body text, detail jsonb, asked_at timestamp with time zone, outcome text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT a.id, a.source, a.source_id, a.pull_number, a.verb, a.author, a.body, a.detail, a.asked_at, a.outcome
      FROM tireless.ask a
     WHERE a.job_id = job_asks.job_id
     ORDER BY a.id;
$$;

--
-- Name: FUNCTION job_asks(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_asks(job_id bigint) IS 'The asks a job answers, oldest first (for a revision: the reviews, commands and failed checks that asked for it, which the runner hands the agent in TIRELESS_REVIEW_FILE), or the stop that stopped it; empty for a job asked by its labels.';

--
-- Name: attempt_exit; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.attempt_exit (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    exit_status integer NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: TABLE attempt_exit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.attempt_exit IS 'The exit status of COMMAND in each attempt of a job, as the runner holding it recorded it (tireless.record_exit) before finishing the attempt; a negative status is the signal that ended it. Private: tireless.job_attempts reads it.';

--
-- Name: delivery; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.delivery (
    job_id bigint NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    branch text,
    head text,
    base_branch text,
    base text,
    draft boolean DEFAULT false NOT NULL,
    delivered_at timestamp with time zone DEFAULT now() NOT NULL,
    pull_number integer,
    pull_url text,
    pull_known_at timestamp with time zone,
    CONSTRAINT a_change_moves_past_its_base CHECK ((head <> base)),
    CONSTRAINT a_change_names_branch_head_and_base CHECK ((num_nonnulls(branch, head, base_branch, base) = ANY (ARRAY[0, 4]))),
    CONSTRAINT base_branch_is_a_ref_name CHECK (((base_branch ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'::text) AND (base_branch !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$'::text) AND (base_branch <> '@'::text))),
    CONSTRAINT base_is_a_commit_id CHECK ((base ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'::text)),
    CONSTRAINT branch_is_a_ref_name CHECK (((branch ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'::text) AND (branch !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$'::text) AND (branch <> '@'::text))),
    CONSTRAINT head_is_a_commit_id CHECK ((head ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'::text)),
    CONSTRAINT no_change_opens_no_pull_request CHECK (((branch IS NOT NULL) OR ((pull_number IS NULL) AND (NOT draft)))),
    CONSTRAINT pull_number_positive CHECK ((pull_number > 0)),
    CONSTRAINT pull_number_url_and_time_together CHECK ((num_nonnulls(pull_number, pull_url, pull_known_at) = ANY (ARRAY[0, 3]))),
    CONSTRAINT pull_request_is_not_its_own_base CHECK ((branch <> base_branch)),
    CONSTRAINT pull_url_is_a_web_url CHECK (((pull_url ~ '^https?://[^\x01-\x20\x7f-\x9f]+$'::text) AND (length(pull_url) <= 2000)))
);

--
-- Name: TABLE delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.delivery IS 'What a delivered job delivered, written by tireless.deliver in the transaction that delivers it: the branch pushed, its head commit, the base branch and commit it was made on, whether its pull request is a draft, and that pull request''s number and URL once the mirror recorded them (record_mirror_pull); no branch: delivered with no change. Private: deliver, record_mirror_pull and the views tireless.deliveries and job_list read it.';

--
-- Name: COLUMN delivery.branch; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.delivery.branch IS 'The branch pushed (<prefix>/<number>, the same across attempts and re-requests); null: no change.';

--
-- Name: COLUMN delivery.head; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.delivery.head IS 'The commit the branch was pushed to.';

--
-- Name: COLUMN delivery.base_branch; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.delivery.base_branch IS 'The branch the pull request goes to (the default branch).';

--
-- Name: COLUMN delivery.base; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.delivery.base IS 'The commit of base_branch the work started from.';

--
-- Name: COLUMN delivery.pull_known_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.delivery.pull_known_at IS 'When the mirror recorded the pull request (opened, found or updated for this delivery).';

--
-- Name: CONSTRAINT a_change_moves_past_its_base ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT a_change_moves_past_its_base ON tireless.delivery IS 'A change has a head other than its base: no commit is no change.';

--
-- Name: CONSTRAINT a_change_names_branch_head_and_base ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT a_change_names_branch_head_and_base ON tireless.delivery IS 'A change names its branch, head, base branch and base commit; no change names none of them.';

--
-- Name: CONSTRAINT base_branch_is_a_ref_name ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT base_branch_is_a_ref_name ON tireless.delivery IS 'A base branch is a git ref name (git check-ref-format), without `, <, > or ".';

--
-- Name: CONSTRAINT base_is_a_commit_id ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT base_is_a_commit_id ON tireless.delivery IS 'A base commit is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.';

--
-- Name: CONSTRAINT branch_is_a_ref_name ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT branch_is_a_ref_name ON tireless.delivery IS 'A branch is a git ref name (git check-ref-format), without `, <, > or ", so that it quotes safely in markdown.';

--
-- Name: CONSTRAINT head_is_a_commit_id ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT head_is_a_commit_id ON tireless.delivery IS 'A head commit is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.';

--
-- Name: CONSTRAINT no_change_opens_no_pull_request ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT no_change_opens_no_pull_request ON tireless.delivery IS 'A delivery with no change has no pull request, draft or not.';

--
-- Name: CONSTRAINT pull_number_positive ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pull_number_positive ON tireless.delivery IS 'A pull request number is positive.';

--
-- Name: CONSTRAINT pull_number_url_and_time_together ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pull_number_url_and_time_together ON tireless.delivery IS 'A pull request is known by its number, its URL and when it was recorded, or not at all.';

--
-- Name: CONSTRAINT pull_request_is_not_its_own_base ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pull_request_is_not_its_own_base ON tireless.delivery IS 'A pull request goes from its branch to another.';

--
-- Name: CONSTRAINT pull_url_is_a_web_url ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pull_url_is_a_web_url ON tireless.delivery IS 'A pull request URL is an http(s) URL of at most 2000 characters, no blank in it.';

--
-- Name: job_attempts(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_attempts(job_id bigint) RETURNS TABLE(attempt integer, worker text, started_at timestamp with time zone, ended_at timestamp with time zone, ran interval, ended_as text, cause text, output text, pull_number integer, pull_url text, exit_status integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT c.attempt,
     c.worker,
     c.at,
     e.at,
     (e.at - c.at),
     (e.to_state)::text AS to_state,
     tireless.note_cause(e.note) AS note_cause,
     e.note,
         CASE
             WHEN (e.to_state = 'delivered'::tireless.job_state) THEN d.pull_number
             ELSE NULL::integer
         END AS "case",
         CASE
             WHEN (e.to_state = 'delivered'::tireless.job_state) THEN d.pull_url
             ELSE NULL::text
         END AS "case",
     x.exit_status
    FROM (((tireless.job_event c
      LEFT JOIN LATERAL ( SELECT n.at,
             n.to_state,
             n.note
            FROM tireless.job_event n
           WHERE ((n.job_id = c.job_id) AND (n.id > c.id))
           ORDER BY n.id
          LIMIT 1) e ON (true))
      LEFT JOIN tireless.delivery d ON ((d.job_id = c.job_id)))
      LEFT JOIN tireless.attempt_exit x ON (((x.job_id = c.job_id) AND (x.attempt = c.attempt))))
   WHERE ((c.job_id = job_attempts.job_id) AND (c.to_state = 'claimed'::tireless.job_state))
   ORDER BY c.id;
END;

--
-- Name: FUNCTION job_attempts(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_attempts(job_id bigint) IS 'A job''s attempts in order, from its history: who claimed each and when, when it ended and how long it ran (null while it runs), the state it ended in (pending: released for a retry, given back or swept), its stop reason (the cause its end note gives, tireless.note_cause), that note whole (a failed COMMAND''s: the tail of its output, masked and bounded by the runner), the pull request of the attempt that delivered, and COMMAND''s exit status as the runner recorded it (tireless.record_exit; null: not recorded). Empty for an unknown job.';

--
-- Name: job_brief(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_brief(job_id bigint) RETURNS TABLE(issue_url text, api_url text, clone_url text, body text, body_cut boolean, branch text, branch_head text, pull_number integer, pull_url text, checkpoint_ref text, checkpoint_commit text, protected_paths text[], allowed_paths text[], allow_ci boolean, max_files integer, max_bytes bigint, applied_max_files integer, applied_max_bytes bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN QUERY
    SELECT i.url, tireless.forge_api_url(f.kind, f.base_url), tireless.forge_clone_url(f.kind, f.base_url, j.owner, j.repo),
           i.body, coalesce(i.body_cut, false),
           push.branch, push.head, push.pull_number, push.pull_url, c.ref, c.commit,
           applied.protected, applied.allowed, applied.allow_ci, d.max_files, d.max_bytes,
           applied.max_files, applied.max_bytes
      FROM tireless.job j
      LEFT JOIN tireless.issue i ON (i.forge, i.owner, i.repo, i.number) = (j.forge, j.owner, j.repo, j.number)
      LEFT JOIN tireless.forge f ON f.name = j.forge
      LEFT JOIN tireless.checkpoint c ON c.job_id = j.id
      LEFT JOIN tireless.repo_delivery d ON (d.forge, d.owner, d.repo) = (j.forge, j.owner, j.repo)
     CROSS JOIN LATERAL tireless.issue_push(j.forge, j.owner, j.repo, j.number) AS push
     CROSS JOIN LATERAL tireless.delivery_policy(j.forge, j.owner, j.repo) AS applied
     WHERE j.id = job_brief.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(job_brief.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
END;
$$;

--
-- Name: FUNCTION job_brief(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_brief(job_id bigint) IS 'What an agent needs besides the job row: the issue''s web URL, the forge''s API root, the repository''s clone URL (null when the forge is not registered), and the issue''s body as last polled (its first 65536 characters, body_cut when cut). For the runner, what tireless last pushed for the issue (tireless.issue_push): the branch to push to, branch_head (the head to push with lease over; null: the branch was never pushed) and the pull request the mirror last recorded for it; and the job''s last checkpoint (ref and commit, from an earlier attempt: the workspace starts there); and the repository''s delivery policy: its globs and allow_ci as they apply (tireless.delivery_policy), its limits as set_repo_delivery set them (null: none set) and the limits that apply, the defaults filled in (applied_max_files, applied_max_bytes). No token: the agent gets none. TL001 for an unknown job.';

--
-- Name: job_checklist(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_checklist(job_id bigint) RETURNS TABLE(task integer, child_number integer, title text, done boolean, status text, written_at timestamp with time zone, shown boolean)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT t.task, t.child_number, s.title, s.done, s.status, c.checklist_written_at,
           coalesce(strpos(c.checklist || E'\n', line.text || E'\n') > 0, false)
      FROM tireless.job j
      JOIN tireless.plan_task t ON t.job_id = j.id AND t.attempt = j.attempts
     CROSS JOIN LATERAL tireless.child_status(t) AS s
     CROSS JOIN LATERAL (SELECT '- [' || CASE WHEN s.done THEN 'x' ELSE ' ' END || '] '
                                || coalesce('#' || t.child_number || ' ', '') || s.title || ' — ' || s.status) AS line(text)
      LEFT JOIN tireless.mirror_comment c ON c.job_id = j.id
     WHERE j.id = job_checklist.job_id AND j.state = 'delivered'
     ORDER BY t.task;
$$;

--
-- Name: FUNCTION job_checklist(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_checklist(job_id bigint) IS 'The children a delivered plan job (or the proposals a discover job) opened, as its outcome comment''s checklist says them now (tireless.child_status: done, the words, the title), when the mirror last wrote the checklist on the forge, and whether the forge shows this line as it is now (false: an edit is due, or the comment is not written yet). No row: the job opened no children.';

--
-- Name: job_durations(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_durations(span interval) RETURNS TABLE(lane text, kind text, measure text, jobs bigint, p50 interval, p95 interval)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH frame AS (
          SELECT tireless.activity_grain(job_durations.span) AS grain,
             date_bin(tireless.activity_grain(job_durations.span), now(), '2000-01-01 00:00:00+00'::timestamp with time zone) AS last
         ), bins AS (
          SELECT d.lane,
             d.kind,
             d.measure,
             d.bin,
             sum(d.jobs) AS jobs
            FROM ( SELECT d_1.lane,
                     d_1.kind,
                     d_1.measure,
                     d_1.bin,
                     d_1.jobs
                    FROM (tireless.duration_count d_1
                      JOIN frame f ON (((d_1.grain = f.grain) AND (d_1.bucket > (f.last - job_durations.span)))))
                 UNION ALL
                  SELECT m.lane,
                     m.kind,
                     x.measure,
                     tireless.duration_bin(x.seconds) AS duration_bin,
                     1
                    FROM ((frame f
                      CROSS JOIN tireless.history_moves(( SELECT r_1.counted_to
                            FROM tireless.history_rollup r_1), NULL::bigint) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran))
                      CROSS JOIN LATERAL ( VALUES ('wait'::text,m.waited), ('run'::text,m.ran)) x(measure, seconds))
                   WHERE ((x.seconds IS NOT NULL) AND (date_bin(f.grain, m.at, '2000-01-01 00:00:00+00'::timestamp with time zone) > (f.last - job_durations.span)))) d
           GROUP BY d.lane, d.kind, d.measure, d.bin
         ), running AS (
          SELECT b.lane,
             b.kind,
             b.measure,
             b.bin,
             sum(b.jobs) OVER (PARTITION BY b.lane, b.kind, b.measure ORDER BY b.bin) AS upto,
             sum(b.jobs) OVER (PARTITION BY b.lane, b.kind, b.measure) AS total
            FROM bins b
         )
  SELECT r.lane,
     (r.kind)::text AS kind,
     r.measure,
     (max(r.total))::bigint AS max,
     tireless.bin_bound(min(r.bin) FILTER (WHERE ((r.upto)::double precision >= ceil(((0.5)::double precision * (r.total)::double precision))))) AS bin_bound,
     tireless.bin_bound(min(r.bin) FILTER (WHERE ((r.upto)::double precision >= ceil(((0.95)::double precision * (r.total)::double precision))))) AS bin_bound
    FROM running r
   GROUP BY r.lane, r.kind, r.measure
   ORDER BY r.lane, r.kind, r.measure;
END;

--
-- Name: FUNCTION job_durations(span interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_durations(span interval) IS 'Per lane, kind and measure (wait: created to first claim; run: claim to finish) over the last span (at most 8 days): how many jobs, and the median and 95th percentile as the upper bound of their histogram bin (within 19%). Reads the folded histograms and the history written since the last tireless.roll_up_history(); writes nothing.';

--
-- Name: job_history(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_history(job_id bigint) RETURNS TABLE(event_id bigint, at timestamp with time zone, from_state text, to_state text, worker text, attempt integer, note text, lasted interval)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT e.id,
     e.at,
     (e.from_state)::text AS from_state,
     (e.to_state)::text AS to_state,
     e.worker,
     e.attempt,
     e.note,
     (lead(e.at) OVER (ORDER BY e.id) - e.at)
    FROM tireless.job_event e
   WHERE (e.job_id = job_history.job_id)
   ORDER BY e.id;
END;

--
-- Name: FUNCTION job_history(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_history(job_id bigint) IS 'A job''s timeline: its events in order, each with how long the job stayed in the state it entered (lasted; null for the state it is in now). Empty for an unknown job.';

--
-- Name: job_kind_for(text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_kind_for(labels text[]) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT k::text
      FROM tireless.policy p
     CROSS JOIN unnest(enum_range(NULL::tireless.job_kind)) AS kinds(k)
     WHERE p.label_prefix = ANY (coalesce(job_kind_for.labels, '{}'))
       AND p.label_prefix || '/' || k::text = ANY (job_kind_for.labels)
     -- kinds.k, the enum: a bare k would name the text output column and sort alphabetically.
     ORDER BY kinds.k
     LIMIT 1;
$$;

--
-- Name: FUNCTION job_kind_for(labels text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_kind_for(labels text[]) IS 'The kind of work a set of issue labels asks for: the opt-in label and a mode label are both needed; discover beats plan beats implement; null when the labels ask for none. Labels match exactly.';

--
-- Name: job_model_usage(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_model_usage(job_id bigint) RETURNS TABLE(attempt integer, model text, requests bigint, unread bigint, input_tokens bigint, output_tokens bigint, cache_read_tokens bigint, cache_write_tokens bigint, cost numeric)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT u.attempt,
     u.model,
     (sum(u.requests))::bigint AS sum,
     (sum(u.unread))::bigint AS sum,
     (sum(u.input_tokens))::bigint AS sum,
     (sum(u.output_tokens))::bigint AS sum,
     (sum(u.cache_read_tokens))::bigint AS sum,
     (sum(u.cache_write_tokens))::bigint AS sum,
     tireless.usage_cost(u.model, (sum(u.input_tokens))::bigint, (sum(u.output_tokens))::bigint, (sum(u.cache_read_tokens))::bigint, (sum(u.cache_write_tokens))::bigint) AS usage_cost
    FROM tireless.model_usage u
   WHERE (u.job_id = job_model_usage.job_id)
   GROUP BY u.attempt, u.model
   ORDER BY u.attempt, u.model;
END;

--
-- Name: FUNCTION job_model_usage(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_model_usage(job_id bigint) IS 'What each attempt of the job asked of each model: requests, the unread ones (tokens unknown), tokens of each kind, and the cost in USD at today''s prices (null: unpriced). What `tireless show`, `jobs` and the job page show.';

--
-- Name: network_use; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.network_use (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    lane text NOT NULL,
    host text NOT NULL,
    port integer NOT NULL,
    allowed boolean NOT NULL,
    requests bigint NOT NULL,
    bytes_in bigint NOT NULL,
    bytes_out bigint NOT NULL,
    reason text,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT network_use_attempt_positive CHECK ((attempt > 0)),
    CONSTRAINT network_use_counts_not_negative CHECK (((requests >= 0) AND (bytes_in >= 0) AND (bytes_out >= 0))),
    CONSTRAINT network_use_host_bounded CHECK (((length(host) >= 1) AND (length(host) <= 255))),
    CONSTRAINT network_use_port_in_range CHECK (((port >= 0) AND (port <= 65535))),
    CONSTRAINT network_use_reason_bounded CHECK (((length(reason) >= 1) AND (length(reason) <= 500))),
    CONSTRAINT refusal_says_why CHECK ((allowed = (reason IS NULL)))
);

--
-- Name: TABLE network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.network_use IS 'What an attempt''s agent reached through the runner''s proxy and upstream gateways (allowed: requests and bytes per host and port) and what it was refused (host, port, reason and how often; never the payload), as its holder last recorded it (tireless.record_job_network). Private: read tireless.job_network and tireless.lane_egress.';

--
-- Name: COLUMN network_use.job_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.job_id IS 'The job whose attempt it was.';

--
-- Name: COLUMN network_use.attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.attempt IS 'The attempt (the job''s attempts when it was recorded).';

--
-- Name: COLUMN network_use.lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.lane IS 'The job''s lane during the attempt: what /metrics sums by.';

--
-- Name: COLUMN network_use.host; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.host IS 'The host the agent asked for (a name or an IP literal), its first 255 characters.';

--
-- Name: COLUMN network_use.port; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.port IS 'The port it asked for (0 when a refused request named none that could be read).';

--
-- Name: COLUMN network_use.allowed; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.allowed IS 'True: reached (the counts are its traffic); false: refused (requests counts the refusals).';

--
-- Name: COLUMN network_use.requests; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.requests IS 'Connections or requests made (allowed), or refused (not allowed).';

--
-- Name: COLUMN network_use.bytes_in; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.bytes_in IS 'Bytes the host sent the agent.';

--
-- Name: COLUMN network_use.bytes_out; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.bytes_out IS 'Bytes the agent sent the host.';

--
-- Name: COLUMN network_use.reason; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.reason IS 'Why it was refused (not listed, a private address, ...); null when allowed.';

--
-- Name: COLUMN network_use.recorded_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.network_use.recorded_at IS 'When the holder recorded it.';

--
-- Name: CONSTRAINT network_use_attempt_positive ON network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT network_use_attempt_positive ON tireless.network_use IS 'An attempt is counted from 1.';

--
-- Name: CONSTRAINT network_use_counts_not_negative ON network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT network_use_counts_not_negative ON tireless.network_use IS 'Requests and bytes are not negative.';

--
-- Name: CONSTRAINT network_use_host_bounded ON network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT network_use_host_bounded ON tireless.network_use IS 'A host is 1 to 255 characters.';

--
-- Name: CONSTRAINT network_use_port_in_range ON network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT network_use_port_in_range ON tireless.network_use IS 'A port is 0 to 65535.';

--
-- Name: CONSTRAINT network_use_reason_bounded ON network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT network_use_reason_bounded ON tireless.network_use IS 'A reason is 1 to 500 characters.';

--
-- Name: CONSTRAINT refusal_says_why ON network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT refusal_says_why ON tireless.network_use IS 'A refusal has its reason; an allowed host has none.';

--
-- Name: job_network(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_network(job_id bigint) RETURNS TABLE(attempt integer, host text, port integer, allowed boolean, requests bigint, bytes_in bigint, bytes_out bigint, reason text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT n.attempt,
     n.host,
     n.port,
     n.allowed,
     n.requests,
     n.bytes_in,
     n.bytes_out,
     n.reason
    FROM tireless.network_use n
   WHERE (n.job_id = job_network.job_id)
   ORDER BY n.attempt, n.allowed DESC, n.host, n.port, n.reason;
END;

--
-- Name: FUNCTION job_network(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_network(job_id bigint) IS 'What each attempt of the job reached (allowed: requests, bytes in and out per host and port) and was refused (host, port, reason, how often), as its holder recorded it: what `tireless show` and the dashboard''s job page show. No row for a job whose lane had no allowlist and no upstream, or an unknown job.';

--
-- Name: job_rules_hold(tireless.job); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_rules_hold(job tireless.job) RETURNS boolean
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

--
-- Name: FUNCTION job_rules_hold(job tireless.job); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_rules_hold(job tireless.job) IS 'The rules every job row keeps, each by its name: attempts_not_negative, claimed_holds_claim, claimed_job_counts_an_attempt, given_back_within_attempts, issue_number_positive, lane_is_a_name, not_its_own_parent, pending_holds_no_cancel_request, terminal_holds_no_claim. True when the row keeps them; else raises check_violation (23514) naming the rule it breaks. Called by the constraint job_rules_hold.';

--
-- Name: job_tasks(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_tasks(job_id bigint) RETURNS TABLE(task integer, proposal boolean, title text, lane text, depends_on jsonb, child_number integer, opened_at timestamp with time zone, failures integer, last_error text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT t.task, t.proposal, t.title, t.lane, t.depends_on, t.child_number, t.opened_at, coalesce(w.failures, 0),
           w.last_error
      FROM tireless.plan_task t
      LEFT JOIN tireless.forge_write w ON w.kind = 'task' AND (w.job_id, w.task) = (t.job_id, t.task)
     WHERE t.job_id = job_tasks.job_id
     ORDER BY t.task;
$$;

--
-- Name: FUNCTION job_tasks(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_tasks(job_id bigint) IS 'The tasks a plan or discover job handed back (tireless.attach_plan), in the file''s order: each with the issue the mirror opened for it (null until then) and why its last try failed.';

--
-- Name: model_exchange; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.model_exchange (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    seq integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    api text NOT NULL,
    model text NOT NULL,
    status integer NOT NULL,
    request bytea,
    answer bytea,
    request_bytes bigint NOT NULL,
    answer_bytes bigint NOT NULL,
    CONSTRAINT model_exchange_api_known CHECK ((api = ANY (ARRAY['anthropic'::text, 'chat'::text, 'responses'::text]))),
    CONSTRAINT model_exchange_kept_whole_or_cut CHECK (((request IS NULL) = (answer IS NULL))),
    CONSTRAINT model_exchange_model_bounded CHECK (((length(model) >= 1) AND (length(model) <= 200))),
    CONSTRAINT model_exchange_sizes_not_negative CHECK (((request_bytes >= 0) AND (answer_bytes >= 0)))
);

--
-- Name: TABLE model_exchange; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.model_exchange IS 'The transcript of an attempt: each model request and its answer as the runner''s gateway passed them (masked; the request as the agent sent it, before the key was added), zlib-compressed; request and answer null for an exchange past the attempt''s 20 MiB (its sizes kept: what was cut). Written by tireless.record_exchange; read by tireless.job_transcript; prune removes it with its job.';

--
-- Name: CONSTRAINT model_exchange_api_known ON model_exchange; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_exchange_api_known ON tireless.model_exchange IS 'The APIs the gateway reads.';

--
-- Name: CONSTRAINT model_exchange_kept_whole_or_cut ON model_exchange; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_exchange_kept_whole_or_cut ON tireless.model_exchange IS 'An exchange is kept whole (request and answer) or cut (neither, its sizes kept).';

--
-- Name: CONSTRAINT model_exchange_model_bounded ON model_exchange; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_exchange_model_bounded ON tireless.model_exchange IS 'A model name is 1 to 200 characters.';

--
-- Name: CONSTRAINT model_exchange_sizes_not_negative ON model_exchange; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_exchange_sizes_not_negative ON tireless.model_exchange IS 'Sizes are never negative.';

--
-- Name: job_transcript(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_transcript(job_id bigint) RETURNS TABLE(attempt integer, seq integer, at timestamp with time zone, api text, model text, status integer, request bytea, answer bytea, request_bytes bigint, answer_bytes bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT e.attempt,
     e.seq,
     e.at,
     e.api,
     e.model,
     e.status,
     e.request,
     e.answer,
     e.request_bytes,
     e.answer_bytes
    FROM tireless.model_exchange e
   WHERE (e.job_id = job_transcript.job_id)
   ORDER BY e.attempt, e.seq;
END;

--
-- Name: FUNCTION job_transcript(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_transcript(job_id bigint) IS 'The transcript of each attempt of the job, exchange by exchange (request and answer zlib-compressed, null when cut): what `tireless show JOB --transcript` and the job page render as a session.';

--
-- Name: job_waits(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.job_waits(job_id bigint) RETURNS TABLE(depends_on text, state text, source text, cycle text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT tireless.issue_ref(d.owner, d.repo, d.depends_on_owner, d.depends_on_repo, d.depends_on_number),
           coalesce(s.state, CASE WHEN EXISTS (SELECT FROM tireless.tracked_repo t
                                                WHERE (t.forge, t.owner, t.repo) = (d.forge, d.depends_on_owner, d.depends_on_repo))
                                  THEN 'unseen' ELSE 'untracked' END),
           string_agg(d.source, ', ' ORDER BY d.source),
           tireless.dependency_cycle(j.forge, j.owner, j.repo, j.number)
      FROM tireless.job j
      JOIN tireless.issue_dependency d ON (d.forge, d.owner, d.repo, d.number) = (j.forge, j.owner, j.repo, j.number)
      LEFT JOIN tireless.issue s
             ON (s.forge, s.owner, s.repo, s.number) = (d.forge, d.depends_on_owner, d.depends_on_repo, d.depends_on_number)
     WHERE j.id = job_waits.job_id
     GROUP BY j.forge, j.owner, j.repo, j.number, d.forge, d.owner, d.repo, d.depends_on_owner, d.depends_on_repo, d.depends_on_number, s.state
     ORDER BY (d.depends_on_owner, d.depends_on_repo) <> (d.owner, d.repo), d.depends_on_owner, d.depends_on_repo, d.depends_on_number;
$$;

--
-- Name: FUNCTION job_waits(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.job_waits(job_id bigint) IS 'The dependencies of a job''s issue: each as #N or owner/repo#N, its state as last seen (open, closed, unseen: never read yet, so open; untracked: in a repository tireless does not track, so never read and open), where it was said (body, forge) and the cycle of open dependencies the issue is on, if any. No row: the issue depends on nothing. Why a job waits, for psql users and tireless show.';

--
-- Name: job_list; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.job_list AS
 SELECT j.id,
    j.forge,
    j.owner,
    j.repo,
    j.number,
    j.title,
    j.kind,
    j.lane,
    j.state,
    j.parent_id,
    j.claimed_by,
    j.claim_expires_at,
    j.attempts,
    j.available_at,
    j.note,
    j.created_at,
    j.updated_at,
    ((j.state = 'claimed'::tireless.job_state) AND (j.claim_expires_at < now())) AS past_lease,
    d.branch,
    d.head,
    d.pull_number,
    d.pull_url,
        CASE
            WHEN (j.state = 'pending'::tireless.job_state) THEN j.waiting_on
            ELSE NULL::text[]
        END AS waiting_on,
    tireless.note_cause(j.note) AS cause
   FROM (tireless.job j
     LEFT JOIN tireless.delivery d ON ((d.job_id = j.id)));

--
-- Name: VIEW job_list; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.job_list IS 'Every job as an operator sees it, without its claim token (a fencing secret of the holder); past_lease: claimed and its lease has run out; for a job delivered by tireless.deliver, the branch and head it pushed and its pull request once the mirror recorded it (tireless.deliveries has the rest); waiting_on: the open dependencies a pending job waits for (#3, owner/repo#7; null: none, tireless.job_waits says more); cause: the cause its note gives (tireless.note_cause: the agent''s last error line, not a banner before it). Readable by every role.';

--
-- Name: jobs_matching(tireless.job_state, text, tireless.job_kind, text, text, text, interval, text[], text, integer, bigint, bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.jobs_matching(state tireless.job_state, lane text, kind tireless.job_kind, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint) RETURNS SETOF tireless.job_list
    LANGUAGE sql STABLE
    AS $_$
    SELECT j.*
      FROM tireless.job_list j
     WHERE ($1 IS NULL OR j.state = $1)
       AND ($2 IS NULL OR j.lane = $2)
       AND ($3 IS NULL OR j.kind = $3)
       AND ($4 IS NULL OR j.forge = $4)
       AND ($5 IS NULL OR (j.owner, j.repo) = ($5, $6))
       AND ($7 IS NULL OR j.updated_at >= now() - $7)
       AND ($8 IS NULL OR NOT EXISTS (
               SELECT FROM unnest($8) AS w WHERE strpos(lower(coalesce(j.title, '')), lower(w)) = 0))
       AND ($9 IS NULL OR j.claimed_by = $9 OR tireless.worker_ran(j.id, $9))
       AND ($10 IS NULL OR j.number = $10)
       AND ($11 IS NULL OR j.id > $11)
       AND ($12 IS NULL OR j.id < $12)
$_$;

--
-- Name: FUNCTION jobs_matching(state tireless.job_state, lane text, kind tireless.job_kind, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.jobs_matching(state tireless.job_state, lane text, kind tireless.job_kind, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint) IS 'The rows of tireless.job_list that every given filter keeps (null: no filter), unchecked and unordered: tireless.list_jobs checks the filters, then orders and pages these.';

--
-- Name: judge_ask(text, text, text, text, jsonb, timestamp with time zone); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.judge_ask(forge text, owner text, repo text, login text, item jsonb, read_from timestamp with time zone) RETURNS text
    LANGUAGE plpgsql
    AS $_$
DECLARE
    ask_source text := item ->> 'source';
    made_on integer := (item ->> 'number')::integer;
    ask_author text := item ->> 'author';
    ask_time timestamptz := (item ->> 'created_at')::timestamptz;
    issue_no integer;
    pull_no integer;
    ask_verb text;
    ask_text text := coalesce(item ->> 'body', '');
    ask_detail jsonb := '[]';
    ask_outcome text := 'waiting';
    ask_refusal text;
    ask_reply text;
    asked bigint;
    asked_source_id text;
    limit_of integer;
    before tireless.ask;
    failed jsonb;
BEGIN
    IF EXISTS (SELECT FROM tireless.ask a
                WHERE (a.forge, a.owner, a.repo, a.source, a.source_id)
                      = (judge_ask.forge, judge_ask.owner, judge_ask.repo, ask_source,
                         CASE WHEN ask_source = 'checks' THEN item ->> 'head' ELSE item ->> 'id' END)) THEN
        RETURN NULL;  -- seen before: a redelivery, or a poll reading it again
    END IF;
    IF ask_source <> 'checks' AND lower(ask_author) IS NOT DISTINCT FROM lower(judge_ask.login) THEN
        RETURN NULL;  -- tireless's own words never ask
    END IF;
    -- Where it was made: one of tireless's pull requests (its issue is the delivery's), or an issue.
    SELECT d.number, d.pull_number INTO issue_no, pull_no
      FROM tireless.delivery d
     WHERE (d.forge, d.owner, d.repo, d.pull_number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, made_on)
     ORDER BY d.job_id DESC LIMIT 1;
    IF issue_no IS NULL AND ask_source = 'comment' THEN
        -- An issue, maybe one this poll is about to record for the first time. A pull request that is
        -- not tireless's is no issue of the store, so what is asked there never gets a job.
        issue_no := made_on;
    END IF;
    IF issue_no IS NULL THEN
        RETURN NULL;  -- a review or checks of a pull request that is not tireless's
    END IF;

    IF ask_source = 'comment' THEN
        SELECT c.verb, c.instruction INTO ask_verb, ask_text FROM tireless.command_in(item ->> 'body') AS c;
        IF ask_verb IS NULL OR ask_time < judge_ask.read_from - interval '1 minute' THEN
            RETURN NULL;  -- no command, or an old comment edited since: an edit asks nothing
        END IF;
        IF pull_no IS NULL AND ask_verb = 'revise' THEN
            SELECT p.pull_number INTO pull_no FROM tireless.open_pulls(judge_ask.forge, judge_ask.owner, judge_ask.repo) AS p
             WHERE p.number = issue_no;
            IF pull_no IS NULL THEN
                RETURN NULL;  -- nothing to revise
            END IF;
        ELSIF pull_no IS NOT NULL AND ask_verb IN ('implement', 'plan', 'discover') THEN
            RETURN NULL;  -- the modes are asked for on the issue
        END IF;
        ask_reply := 'react';
    ELSIF ask_source = 'review' THEN
        IF lower(item ->> 'state') <> 'changes_requested' OR pull_no IS NULL THEN
            RETURN NULL;
        END IF;
        ask_verb := 'revise';
        ask_detail := coalesce(item -> 'comments', '[]');
    ELSE
        IF pull_no IS NULL OR NOT coalesce((SELECT rr.revise_on_failed_checks FROM tireless.repo_revisions rr
                                          WHERE (rr.forge, rr.owner, rr.repo) = (judge_ask.forge, judge_ask.owner, judge_ask.repo)), false)
           OR jsonb_path_exists(item, '$.checks[*] ? (@.state == "pending")') THEN
            RETURN NULL;  -- not asked for, or not finished: read again next time
        END IF;
        SELECT coalesce(jsonb_agg(jsonb_build_object('name', c ->> 'name', 'summary', coalesce(c ->> 'summary', ''),
                                                     'url', c -> 'url') ORDER BY c ->> 'name'), '[]')
          INTO failed
          FROM jsonb_array_elements(item -> 'checks') AS c
         WHERE c ->> 'state' = 'failed';
        IF jsonb_array_length(failed) = 0 THEN
            RETURN NULL;  -- every check passed
        END IF;
        ask_verb := 'revise';
        ask_detail := failed;
        ask_text := '';
        ask_author := NULL;
        ask_time := now();
        -- The same failure on two heads in a row asks no more.
        SELECT * INTO before FROM tireless.ask a
         WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
           AND a.source = 'checks'
         ORDER BY a.id DESC LIMIT 1;
        IF FOUND AND (SELECT array_agg(c ->> 'name' ORDER BY c ->> 'name') FROM jsonb_array_elements(before.detail) AS c)
                     = (SELECT array_agg(c ->> 'name' ORDER BY c ->> 'name') FROM jsonb_array_elements(failed) AS c) THEN
            ask_outcome := 'refused';
            ask_refusal := format('the same checks failed as on %s before it', left(before.source_id, 12));
            ask_reply := 'comment';
        END IF;
    END IF;

    IF ask_outcome = 'waiting' AND ask_source <> 'checks' AND coalesce(item ->> 'permission', 'none') NOT IN ('admin', 'write') THEN
        ask_outcome := 'refused';
        ask_refusal := format('%s has no write access to %s/%s', coalesce(ask_author, 'an unknown account'), judge_ask.owner, judge_ask.repo);
        -- Said once to each person on each issue: a second refused command gets no second answer.
        ask_reply := CASE WHEN ask_source = 'comment' AND NOT EXISTS (
                          SELECT FROM tireless.ask a
                           WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
                             AND a.outcome = 'refused' AND a.reply = 'comment' AND lower(a.author) = lower(ask_author)
                             AND a.refusal LIKE '% has no write access %')
                      THEN 'comment' END;
    END IF;

    IF ask_outcome = 'waiting' AND ask_verb = 'revise'
       AND NOT EXISTS (SELECT FROM tireless.ask a
                        WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
                          AND a.outcome = 'waiting') THEN
        limit_of := coalesce((SELECT rr.max_revisions FROM tireless.repo_revisions rr
                               WHERE (rr.forge, rr.owner, rr.repo) = (judge_ask.forge, judge_ask.owner, judge_ask.repo)), 5);
        IF tireless.revisions_since_asked(judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no) >= limit_of THEN
            ask_outcome := 'refused';
            ask_refusal := format('the issue has had its %s revisions (max_revisions)', limit_of);
            -- Said in one comment until a person asks on the issue again (its newest job is then no revision).
            ask_reply := CASE WHEN NOT EXISTS (
                              SELECT FROM tireless.ask a
                               WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
                                 AND a.outcome = 'refused' AND a.reply = 'comment' AND a.refusal LIKE '%(max_revisions)'
                                 AND a.seen_at > coalesce((SELECT max(j.created_at) FROM tireless.job j
                                                            WHERE (j.forge, j.owner, j.repo, j.number) = (a.forge, a.owner, a.repo, a.number)
                                                              AND NOT EXISTS (SELECT FROM tireless.ask r WHERE r.job_id = j.id AND r.verb = 'revise')),
                                                           '-infinity'))
                          THEN 'comment' END;
        END IF;
    END IF;

    IF ask_outcome = 'waiting' AND ask_verb = 'stop' THEN
        ask_outcome := 'done';
    END IF;

    INSERT INTO tireless.ask (forge, owner, repo, number, source, source_id, pull_number, verb, author, body, detail,
                              asked_at, outcome, refusal, reply,
                              job_id)
    VALUES (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no, ask_source,
            CASE WHEN ask_source = 'checks' THEN item ->> 'head' ELSE item ->> 'id' END,
            pull_no, ask_verb, ask_author, left(ask_text, tireless.issue_body_limit()), ask_detail, ask_time, ask_outcome, ask_refusal, ask_reply,
            CASE WHEN ask_outcome = 'done'
                 THEN tireless.stop_issue_work(judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no,
                                               format('stopped by %s (/tireless stop)', ask_author)) END)
    RETURNING ask.id, ask.source_id INTO asked, asked_source_id;
    -- The reply owed is a write of the outbox (tireless.forge_write): a reaction needs the command's id.
    IF ask_reply = 'comment' OR (ask_reply IS NOT NULL AND asked_source_id ~ '^[0-9]{1,18}$') THEN
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, ask_id)
        VALUES ('reply', judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no, asked);
    END IF;
    RETURN ask_outcome;
END;
$_$;

--
-- Name: FUNCTION judge_ask(forge text, owner text, repo text, login text, item jsonb, read_from timestamp with time zone); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.judge_ask(forge text, owner text, repo text, login text, item jsonb, read_from timestamp with time zone) IS 'The conversation''s rule for one well-formed ask of record_conversation (docs/conversation.md): kept once per forge item, and only when it asks for something: a `/tireless` command or a review requesting changes by a person with write access other than tireless''s login, on tireless''s pull request or the issue; failed checks on the head, when the repository''s policy asks for them. Refused when the author may not ask, the issue had its max_revisions, or the same checks failed as on the head before; a stop is carried out at once. Returns the outcome kept, or null for an ask that asks nothing.';

--
-- Name: keep_history_with_its_job(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.keep_history_with_its_job() RETURNS trigger
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

--
-- Name: FUNCTION keep_history_with_its_job(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.keep_history_with_its_job() IS 'Trigger: refuses a DELETE of jobs whose history remains, and any TRUNCATE of tireless.job (23503, history_belongs_to_a_job): every event belongs to a job.';

--
-- Name: keep_turns(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.keep_turns() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO tireless.lane_repo AS r (lane, forge, owner, repo, limited)
    VALUES (NEW.lane, NEW.forge, NEW.owner, NEW.repo,
            EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (NEW.forge, NEW.owner, NEW.repo)))
    ON CONFLICT ON CONSTRAINT one_turn_per_lane_and_repo DO UPDATE SET has_work = true;
    RETURN NULL;
END;
$$;

--
-- Name: FUNCTION keep_turns(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.keep_turns() IS 'Trigger of tireless.job (per changed row): a job returned to pending, re-routed or released from its wait gives its repository a turn with work in its lane.';

--
-- Name: label_marker(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.label_marker(report_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:label:%s -->'::text, report_id);

--
-- Name: FUNCTION label_marker(report_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.label_marker(report_id bigint) IS 'The hidden last line of the comment that reports a label naming nothing (tireless.label_report); the mirror counts it only in a comment written by its own forge account.';

--
-- Name: label_name_limit(tireless.forge_kind); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.label_name_limit(kind tireless.forge_kind) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE label_name_limit.kind WHEN 'github' THEN 50 ELSE 255 END;
$$;

--
-- Name: FUNCTION label_name_limit(kind tireless.forge_kind); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.label_name_limit(kind tireless.forge_kind) IS 'The longest label name a forge of that kind takes: 50 characters on GitHub, 255 on Gitea and Forgejo.';

--
-- Name: label_report; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.label_report (
    id bigint NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    label text NOT NULL,
    found_at timestamp with time zone DEFAULT now() NOT NULL,
    written_at timestamp with time zone,
    CONSTRAINT label_report_bounded CHECK (((length(label) >= 1) AND (length(label) <= 255)))
);

--
-- Name: TABLE label_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.label_report IS 'Per issue and label under the label prefix that names no mode, agent or state (a typo, tireless/implment): the comment that says so on the issue, written once (written_at). Private: the work rule queues it (tireless.report_unknown_labels), the outbox writes it; tireless.label_reports shows it.';

--
-- Name: COLUMN label_report.id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.label_report.id IS 'The report; its comment ends with the marker <!-- tireless:label:<id> -->.';

--
-- Name: COLUMN label_report.number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.label_report.number IS 'The issue that carries the label.';

--
-- Name: COLUMN label_report.label; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.label_report.label IS 'The label as the forge showed it.';

--
-- Name: COLUMN label_report.found_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.label_report.found_at IS 'When a poll first showed the issue with it.';

--
-- Name: COLUMN label_report.written_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.label_report.written_at IS 'When the forge confirmed the comment (null: still to write).';

--
-- Name: CONSTRAINT label_report_bounded ON label_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT label_report_bounded ON tireless.label_report IS 'A label is named in at most 255 characters (Gitea''s limit).';

--
-- Name: label_report_text(tireless.label_report); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.label_report_text(report tireless.label_report) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT 'tireless: the label `' || tireless.safe_comment_text(replace(report.label, '`', '''')) || '` names nothing '
           || 'tireless knows, so it asks for no work. The mode labels are '
           || array_to_string(ARRAY(SELECT '`' || l || '`' FROM unnest(m.mode_labels) AS l), ', ')
           || ' (each with the opt-in label `' || m.prefix || '`); `' || m.prefix || '/agent:<lane>` chooses the agent.'
           || E'\n\n' || tireless.label_marker(report.id)
      FROM tireless.mirror_labels() AS m;
$$;

--
-- Name: FUNCTION label_report_text(report tireless.label_report); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.label_report_text(report tireless.label_report) IS 'The comment that reports a label naming nothing on its issue: the label (made safe by safe_comment_text), that it asks for no work, the mode labels and the opt-in label of the current prefix, the agent label, and the marker line (tireless.label_marker).';

--
-- Name: labels_problem(text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.labels_problem(labels text[]) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE
        WHEN labels IS NULL THEN 'must be an array of labels, got null'
        WHEN cardinality(labels) > 100 THEN format('holds %s labels, at most 100 are allowed', cardinality(labels))
        ELSE (SELECT format('must hold labels of 1 to 200 characters, got %s', coalesce(quote_literal(left(l.label, 220)), 'null'))
                FROM unnest(labels) AS l(label)
               WHERE l.label IS NULL OR length(l.label) NOT BETWEEN 1 AND 200
               LIMIT 1)
    END;
$$;

--
-- Name: FUNCTION labels_problem(labels text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.labels_problem(labels text[]) IS 'Why a set of issue labels breaks the limits (at most 100 labels of 1 to 200 characters), or null when it keeps them.';

--
-- Name: lane_agent(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_agent(lane text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_lane(lane_agent.lane);
    RETURN (SELECT l.agent FROM tireless.lane l WHERE l.name = lane_agent.lane);
END;
$$;

--
-- Name: FUNCTION lane_agent(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_agent(lane text) IS 'The agent CLI profile the lane names (tireless.set_lane_agent), null when it names none. TL005 for a bad lane name. Runners read it at each claim.';

--
-- Name: lane_agents(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_agents() RETURNS TABLE(lane text, agent text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT l.name, l.agent FROM tireless.lane l WHERE l.agent IS NOT NULL ORDER BY l.name;
$$;

--
-- Name: FUNCTION lane_agents(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_agents() IS 'Every lane that names an agent CLI profile (tireless.set_lane_agent), with it, by lane name.';

--
-- Name: lane_for(text, text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_for(kind text, labels text[]) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job_kind tireless.job_kind := tireless.parse_kind(lane_for.kind);
    override_prefix text;
    chosen text;
BEGIN
    SELECT p.label_prefix || '/agent:' INTO override_prefix FROM tireless.policy p;
    SELECT substr(l, length(override_prefix) + 1) INTO chosen
      FROM unnest(coalesce(lane_for.labels, '{}')) AS l
     WHERE starts_with(l, override_prefix)
       AND tireless.is_lane_name(substr(l, length(override_prefix) + 1))
     ORDER BY l COLLATE "C"
     LIMIT 1;
    IF chosen IS NULL THEN
        SELECT kp.default_lane INTO chosen FROM tireless.kind_policy kp WHERE kp.kind = job_kind;
    END IF;
    RETURN chosen;
END;
$$;

--
-- Name: FUNCTION lane_for(kind text, labels text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_for(kind text, labels text[]) IS 'The lane a job of this kind with these labels goes to: the agent label''s lane (several: the first in byte order; one that names no valid lane is ignored), else the kind''s default lane. TL005 for an unknown kind.';

--
-- Name: lane_hands_out_work(boolean, timestamp with time zone); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_hands_out_work(paused boolean, tripped_until timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT NOT paused AND (tripped_until IS NULL OR tripped_until <= now());
$$;

--
-- Name: FUNCTION lane_hands_out_work(paused boolean, tripped_until timestamp with time zone); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_hands_out_work(paused boolean, tripped_until timestamp with time zone) IS 'True when a lane with these settings hands out work now: not paused, and its circuit breaker not tripped.';

--
-- Name: lane_limits(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_limits(lane text) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: FUNCTION lane_limits(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_limits(lane text) IS 'The lane''s limits on one attempt (tireless.set_lane_limits): {memory: bytes, cpus: CPUs, pids: processes, disk: bytes}, each null when it has none. TL005 for a bad lane name. Runners read it at start and at each claim.';

--
-- Name: lane_network(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_network(lane text) RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_lane(lane_network.lane);
    RETURN (SELECT l.egress FROM tireless.lane l WHERE l.name = lane_network.lane);
END;
$$;

--
-- Name: FUNCTION lane_network(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_network(lane text) IS 'The lane''s egress allowlist (tireless.set_lane_network): null when it has none (the agent keeps the host''s network), empty for no egress at all. TL005 for a bad lane name.';

--
-- Name: lane_problem(text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_problem(lanes text[]) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH known AS (
        SELECT j.lane FROM tireless.job j
        UNION SELECT l.name FROM tireless.lane l
        UNION SELECT kp.default_lane FROM tireless.kind_policy kp
    ), unknown AS (
        SELECT asked FROM unnest(lane_problem.lanes) AS asked
         WHERE asked NOT IN (SELECT k.lane FROM known k)
    )
    SELECT format('no job or lane is named %s; the lanes with jobs are %s',
                  string_agg(DISTINCT quote_literal(u.asked), ', '),
                  coalesce((SELECT string_agg(DISTINCT j.lane, ', ' ORDER BY j.lane) FROM tireless.job j),
                           'none yet'))
      FROM unknown u
    HAVING count(*) > 0;
$$;

--
-- Name: FUNCTION lane_problem(lanes text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_problem(lanes text[]) IS 'What is wrong with a worker''s lanes: null when each has a job, a setting (tireless.lane) or is a kind''s default lane; else a sentence naming the unknown ones (a typo, most likely) and the lanes that have jobs. A worker says it at start; it may still wait on a lane that gets its first job later.';

--
-- Name: spend_day(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.spend_day() RETURNS date
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ((now() AT TIME ZONE 'UTC'::text))::date;

--
-- Name: FUNCTION spend_day(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.spend_day() IS 'Today in UTC: the window of the daily budgets (they reset at midnight UTC).';

--
-- Name: lane_repo; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.lane_repo (
    id bigint NOT NULL,
    lane text NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    last_claimed_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL,
    has_work boolean DEFAULT true NOT NULL,
    limited boolean DEFAULT false NOT NULL,
    spend_day date DEFAULT ((now() AT TIME ZONE 'UTC'::text))::date NOT NULL,
    runs integer DEFAULT 0 NOT NULL,
    agent_time interval DEFAULT '00:00:00'::interval NOT NULL,
    CONSTRAINT spend_not_negative CHECK (((runs >= 0) AND (agent_time >= '00:00:00'::interval)))
);

--
-- Name: TABLE lane_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.lane_repo IS 'Each repository''s turn in each lane (claim_next serves the repository whose last claim is oldest first) and what it spent on its spend_day. Private: claim_next and the trigger job_waits_its_turn keep it; read tireless.repo_shares.';

--
-- Name: COLUMN lane_repo.last_claimed_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane_repo.last_claimed_at IS 'When claim_next last claimed a job of the repository in the lane (-infinity: never): the oldest goes first.';

--
-- Name: COLUMN lane_repo.has_work; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane_repo.has_work IS 'True when the repository may have a pending job in the lane: set whenever one becomes pending, cleared by claim_next when it finds none. Only rows with work are walked.';

--
-- Name: COLUMN lane_repo.limited; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane_repo.limited IS 'The repository has a capacity or a budget (tireless.repo_limit): claim_next counts before it claims.';

--
-- Name: COLUMN lane_repo.spend_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane_repo.spend_day IS 'The UTC calendar day that runs and agent_time count; a new day starts them at 0.';

--
-- Name: COLUMN lane_repo.runs; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane_repo.runs IS 'Jobs of the repository claimed in the lane on spend_day (each claim is a run).';

--
-- Name: COLUMN lane_repo.agent_time; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.lane_repo.agent_time IS 'Time the repository''s attempts in the lane held their claim, counted when each attempt ended on spend_day under an agent-time budget (the lane''s or the repository''s).';

--
-- Name: CONSTRAINT spend_not_negative ON lane_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT spend_not_negative ON tireless.lane_repo IS 'Runs and agent time are counts of what happened.';

--
-- Name: lane_spend(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_spend(lane text, OUT runs bigint, OUT agent_time interval) RETURNS record
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT COALESCE(sum(r.runs), (0)::bigint) AS "coalesce",
     COALESCE(sum(r.agent_time), '00:00:00'::interval) AS "coalesce"
    FROM tireless.lane_repo r
   WHERE ((r.lane = lane_spend.lane) AND (r.spend_day = tireless.spend_day()));
END;

--
-- Name: FUNCTION lane_spend(lane text, OUT runs bigint, OUT agent_time interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_spend(lane text, OUT runs bigint, OUT agent_time interval) IS 'How many runs and how much agent time the lane spent today (UTC).';

--
-- Name: spend_of(bigint, text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.spend_of(job_id bigint, lane text, forge text, owner text, repo text, OUT tokens bigint, OUT cost numeric) RETURNS record
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT (COALESCE(sum((((u.input_tokens + u.output_tokens) + u.cache_read_tokens) + u.cache_write_tokens)), (0)::numeric))::bigint AS "coalesce",
     COALESCE(sum(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)), (0)::numeric) AS "coalesce"
    FROM tireless.model_usage u
   WHERE
         CASE
             WHEN (spend_of.job_id IS NOT NULL) THEN (u.job_id = spend_of.job_id)
             WHEN (spend_of.lane IS NOT NULL) THEN ((u.spend_day = tireless.spend_day()) AND (u.lane = spend_of.lane))
             ELSE ((u.spend_day = tireless.spend_day()) AND ((u.forge = spend_of.forge) AND (u.owner = spend_of.owner) AND (u.repo = spend_of.repo)))
         END;
END;

--
-- Name: FUNCTION spend_of(job_id bigint, lane text, forge text, owner text, repo text, OUT tokens bigint, OUT cost numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.spend_of(job_id bigint, lane text, forge text, owner text, repo text, OUT tokens bigint, OUT cost numeric) IS 'Tokens (every kind) and USD (priced models only) spent by a job''s attempts (job_id), else by a lane today (lane), else by a repository today (UTC).';

--
-- Name: tokens_text(numeric); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.tokens_text(tokens numeric) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_char(tokens, 'FM999,999,999,999,999,990'::text);

--
-- Name: FUNCTION tokens_text(tokens numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.tokens_text(tokens numeric) IS 'A count with thousands separated: 3,612.';

--
-- Name: usd_text(numeric); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.usd_text(usd numeric) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ('$'::text || to_char(round(usd, 2), 'FM999,999,999,999,990.00'::text));

--
-- Name: FUNCTION usd_text(usd numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.usd_text(usd numeric) IS 'An amount of USD to the cent: $1,204.31.';

--
-- Name: spent_budget(bigint, numeric, bigint, numeric, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.spent_budget(tokens bigint, cost numeric, tokens_budget bigint, cost_budget numeric, whose text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN (tokens >= tokens_budget) THEN format('token budget spent: %s of %s tokens %s'::text, tireless.tokens_text((tokens)::numeric), tireless.tokens_text((tokens_budget)::numeric), whose) WHEN (cost >= cost_budget) THEN format('cost budget spent: %s of %s %s'::text, tireless.usd_text(cost), tireless.usd_text(cost_budget), whose) ELSE NULL::text END;

--
-- Name: FUNCTION spent_budget(tokens bigint, cost numeric, tokens_budget bigint, cost_budget numeric, whose text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.spent_budget(tokens bigint, cost numeric, tokens_budget bigint, cost_budget numeric, whose text) IS 'The note of a spent budget (token budget spent: 3,612 of 3,000 tokens for the job (lane cc)), or null when neither the budget of tokens nor that of cost is reached (a null budget is never spent).';

--
-- Name: lane_usage_spent(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lane_usage_spent(lane text) RETURNS text
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT tireless.spent_budget(s.tokens, s.cost, l.tokens_per_day, l.cost_per_day, format('today (lane %s)'::text, l.name)) AS spent_budget
    FROM tireless.lane l,
     LATERAL tireless.spend_of(NULL::bigint, l.name, NULL::text, NULL::text, NULL::text) s(tokens, cost)
   WHERE ((l.name = lane_usage_spent.lane) AND (num_nonnulls(l.tokens_per_day, l.cost_per_day) > 0));
END;

--
-- Name: FUNCTION lane_usage_spent(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lane_usage_spent(lane text) IS 'The note of the lane''s daily budget of tokens or cost when today''s usage (UTC) reached it; null otherwise.';

--
-- Name: list_jobs(text, text, text, text, text, text, interval, text[], text, integer, bigint, bigint, boolean, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.list_jobs(state text DEFAULT NULL::text, lane text DEFAULT NULL::text, kind text DEFAULT NULL::text, forge text DEFAULT NULL::text, owner text DEFAULT NULL::text, repo text DEFAULT NULL::text, since interval DEFAULT NULL::interval, words text[] DEFAULT NULL::text[], worker text DEFAULT NULL::text, number integer DEFAULT NULL::integer, after bigint DEFAULT NULL::bigint, before bigint DEFAULT NULL::bigint, newest boolean DEFAULT false, at_most integer DEFAULT 100) RETURNS SETOF tireless.job_list
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
DECLARE
    wanted_state tireless.job_state;
    wanted_kind tireless.job_kind;
BEGIN
    IF list_jobs.state IS NOT NULL THEN
        wanted_state := tireless.parse_state(list_jobs.state);
    END IF;
    IF list_jobs.kind IS NOT NULL THEN
        wanted_kind := tireless.parse_kind(list_jobs.kind);
    END IF;
    IF list_jobs.lane IS NOT NULL THEN
        PERFORM tireless.check_lane(list_jobs.lane);
    END IF;
    IF list_jobs.forge IS NOT NULL AND NOT length(list_jobs.forge) BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'forge must be 1 to 100 characters, got %', quote_literal(left(list_jobs.forge, 120))
            USING ERRCODE = 'TL005';
    END IF;
    IF (list_jobs.owner IS NULL) <> (list_jobs.repo IS NULL)
       OR NOT length(list_jobs.owner) BETWEEN 1 AND 200 OR NOT length(list_jobs.repo) BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'a repository filter takes an owner and a repo of 1 to 200 characters each, got owner % and repo %',
            coalesce(quote_literal(left(list_jobs.owner, 220)), 'null'), coalesce(quote_literal(left(list_jobs.repo, 220)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF list_jobs.since < interval '0' THEN
        RAISE EXCEPTION 'since must not be negative, got %', list_jobs.since USING ERRCODE = 'TL005';
    END IF;
    IF cardinality(list_jobs.words) > 100
       OR EXISTS (SELECT FROM unnest(list_jobs.words) AS w WHERE w IS NULL OR w = '' OR length(w) > 1000) THEN
        RAISE EXCEPTION 'words must be at most 100 words of 1 to 1000 characters, got %', left(list_jobs.words::text, 300)
            USING ERRCODE = 'TL005';
    END IF;
    IF list_jobs.worker IS NOT NULL THEN
        PERFORM tireless.check_worker(list_jobs.worker);
    END IF;
    IF list_jobs.number <= 0 THEN
        RAISE EXCEPTION 'number must be an issue number above 0, got %', list_jobs.number USING ERRCODE = 'TL005';
    END IF;
    IF list_jobs.after < 0 OR list_jobs.before < 0 THEN
        RAISE EXCEPTION 'after and before take a job id, got after % and before %',
            coalesce(list_jobs.after::text, 'null'), coalesce(list_jobs.before::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF list_jobs.newest IS NULL OR list_jobs.at_most IS NULL OR list_jobs.at_most < 0 THEN
        RAISE EXCEPTION 'at_most must be a number of jobs (0 or more) and newest true or false, got at_most % and newest %',
            coalesce(list_jobs.at_most::text, 'null'), coalesce(list_jobs.newest::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF list_jobs.newest THEN
        RETURN QUERY
        SELECT m.* FROM tireless.jobs_matching(wanted_state, list_jobs.lane, wanted_kind, list_jobs.forge,
                                               list_jobs.owner, list_jobs.repo, list_jobs.since, list_jobs.words,
                                               list_jobs.worker, list_jobs.number, list_jobs.after, list_jobs.before) m
         ORDER BY m.id DESC LIMIT list_jobs.at_most;
    ELSE
        RETURN QUERY
        SELECT m.* FROM tireless.jobs_matching(wanted_state, list_jobs.lane, wanted_kind, list_jobs.forge,
                                               list_jobs.owner, list_jobs.repo, list_jobs.since, list_jobs.words,
                                               list_jobs.worker, list_jobs.number, list_jobs.after, list_jobs.before) m
         ORDER BY m.id LIMIT list_jobs.at_most;
    END IF;
END;
$$;

--
-- Name: FUNCTION list_jobs(state text, lane text, kind text, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint, newest boolean, at_most integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.list_jobs(state text, lane text, kind text, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint, newest boolean, at_most integer) IS 'The job list as operators filter it (`tireless jobs`, the dashboard): rows of tireless.job_list, oldest first (newest: newest first), at most at_most of them, with ids above after and below before (keyset paging). Each filter given must hold: state, kind, lane, forge, the repository (owner and repo together), since (changed in that long), words (the title holds every one, in any case), worker (holds the job, or ran an attempt of it), number (the issue''s). A filter that cannot name anything is refused with TL005 naming the value.';

--
-- Name: lock_jobs_for_a_budget(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lock_jobs_for_a_budget() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    LOCK TABLE tireless.job IN SHARE ROW EXCLUSIVE MODE;
END;
$$;

--
-- Name: FUNCTION lock_jobs_for_a_budget(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lock_jobs_for_a_budget() IS 'Takes the lock a budget setter needs before anything else (SHARE ROW EXCLUSIVE on tireless.job, until the transaction ends): the claims in flight have ended, and arm_agent_time_count may switch the trigger.';

--
-- Name: lock_repo_issues(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.lock_repo_issues(forge text, owner text, repo text) RETURNS void
    LANGUAGE sql
    AS $$
    SELECT FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (lock_repo_issues.forge, lock_repo_issues.owner, lock_repo_issues.repo)
       FOR NO KEY UPDATE;
$$;

--
-- Name: FUNCTION lock_repo_issues(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.lock_repo_issues(forge text, owner text, repo text) IS 'Takes the transaction''s lock on one tracked repository''s issues: its tracked_repo row (FOR NO KEY UPDATE), which only the tireless functions can lock. enqueue, record_poll, rerun and the mirror take it, so two of them never judge the same issue at once.';

--
-- Name: longest_label(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.longest_label(prefix text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT l
      FROM unnest(ARRAY(SELECT longest_label.prefix || '/state/' || s
                          FROM unnest(enum_range(NULL::tireless.job_state)::text[] || 'waiting'::text) AS s)
                  || ARRAY(SELECT longest_label.prefix || '/' || k
                             FROM unnest(enum_range(NULL::tireless.job_kind)::text[]) AS k)) AS l
     ORDER BY length(l) DESC, l
     LIMIT 1;
$$;

--
-- Name: FUNCTION longest_label(prefix text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.longest_label(prefix text) IS 'The longest of the state and mode labels the mirror writes with that label prefix (<prefix>/state/cancelled).';

--
-- Name: may_cancel_pending(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.may_cancel_pending() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT pg_has_role(caller.name, 'tireless_admin', 'MEMBER') OR pg_has_role(caller.name, n.nspowner, 'MEMBER')
      FROM pg_namespace n,
           (SELECT CASE WHEN current_setting('role') = 'none' THEN session_user
                        ELSE current_setting('role')::name END AS name) AS caller
     WHERE n.nspname = 'tireless';
$$;

--
-- Name: FUNCTION may_cancel_pending(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.may_cancel_pending() IS 'True when the caller''s effective role (after SET ROLE) may cancel a pending job: a member of tireless_admin or of the schema''s owner.';

--
-- Name: mirror_issue; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.mirror_issue (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    job_id bigint NOT NULL,
    state tireless.job_state NOT NULL,
    applied_job_id bigint,
    applied_state tireless.job_state,
    applied_at timestamp with time zone,
    failures integer DEFAULT 0 NOT NULL,
    next_try_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    last_error_at timestamp with time zone,
    waiting boolean DEFAULT false NOT NULL,
    applied_waiting boolean DEFAULT false NOT NULL,
    CONSTRAINT applied_job_and_state_together CHECK (((applied_job_id IS NULL) = (applied_state IS NULL))),
    CONSTRAINT mirror_failures_not_negative CHECK ((failures >= 0))
);

--
-- Name: TABLE mirror_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.mirror_issue IS 'Per issue with jobs: the job and state it should show (its newest job), the job and state the forge last confirmed, and the retries of a failing write. A newer wanted state replaces an older one, so only the latest is ever applied. Private: mirror_writes, record_mirror_write and record_mirror_failure keep it.';

--
-- Name: COLUMN mirror_issue.job_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_issue.job_id IS 'The issue''s newest job: the one the forge should show.';

--
-- Name: COLUMN mirror_issue.applied_job_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_issue.applied_job_id IS 'The job whose state the forge last confirmed showing (null: none yet).';

--
-- Name: COLUMN mirror_issue.next_try_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_issue.next_try_at IS 'A failed write is not tried again before this time.';

--
-- Name: COLUMN mirror_issue.waiting; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_issue.waiting IS 'The job is pending and waits for a dependency: the issue should show <prefix>/state:waiting, not state:pending.';

--
-- Name: COLUMN mirror_issue.applied_waiting; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_issue.applied_waiting IS 'Whether the state the forge last confirmed was waiting.';

--
-- Name: CONSTRAINT applied_job_and_state_together ON mirror_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT applied_job_and_state_together ON tireless.mirror_issue IS 'What was applied is a job and its state, or nothing.';

--
-- Name: CONSTRAINT mirror_failures_not_negative ON mirror_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT mirror_failures_not_negative ON tireless.mirror_issue IS 'Failures in a row are not negative.';

--
-- Name: mirror_issue_row(text, text, text, integer, bigint, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.mirror_issue_row(forge text, owner text, repo text, number integer, job_id bigint, state text) RETURNS tireless.mirror_issue
    LANGUAGE plpgsql
    AS $$
DECLARE
    queued tireless.mirror_issue;
BEGIN
    PERFORM tireless.parse_state(mirror_issue_row.state);
    SELECT * INTO queued FROM tireless.mirror_issue mi
     WHERE (mi.forge, mi.owner, mi.repo, mi.number)
           = (mirror_issue_row.forge, mirror_issue_row.owner, mirror_issue_row.repo, mirror_issue_row.number)
       FOR UPDATE;
    IF NOT FOUND OR queued.job_id < mirror_issue_row.job_id THEN
        RAISE EXCEPTION 'issue %/%/%#% has no mirror write for job %', mirror_issue_row.forge, mirror_issue_row.owner,
            mirror_issue_row.repo, mirror_issue_row.number, coalesce(mirror_issue_row.job_id::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'Record the writes mirror_writes returned.';
    END IF;
    RETURN queued;
END;
$$;

--
-- Name: FUNCTION mirror_issue_row(forge text, owner text, repo text, number integer, job_id bigint, state text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.mirror_issue_row(forge text, owner text, repo text, number integer, job_id bigint, state text) IS 'The issue''s mirror row, locked; TL005 when mirror_writes never queued a write for that job.';

--
-- Name: mirror_labels(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.mirror_labels(OUT prefix text, OUT mode_labels text[], OUT state_labels text[]) RETURNS record
    LANGUAGE sql STABLE
    AS $$
    SELECT p.label_prefix,
           ARRAY(SELECT p.label_prefix || '/' || k::text FROM unnest(enum_range(NULL::tireless.job_kind)) AS k),
           -- The state labels have a scope of their own (<prefix>/state): a Gitea admin may mark them
           -- exclusive, and setting one then takes off no mode or agent label (scope <prefix>). The
           -- names before issue 36 (<prefix>/state:pending) go last: the mirror takes them off.
           ARRAY(SELECT p.label_prefix || sep.text || s.name
                   FROM unnest(ARRAY['/state/', '/state:']) WITH ORDINALITY AS sep(text, i),
                        unnest(enum_range(NULL::tireless.job_state)::text[] || 'waiting'::text) WITH ORDINALITY AS s(name, j)
                  ORDER BY sep.i, s.j)
      FROM tireless.policy p;
$$;

--
-- Name: FUNCTION mirror_labels(OUT prefix text, OUT mode_labels text[], OUT state_labels text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.mirror_labels(OUT prefix text, OUT mode_labels text[], OUT state_labels text[]) IS 'The label prefix, its mode labels (<prefix>/discover, ...) and its state labels (<prefix>/state/pending, ..., and <prefix>/state/waiting: pending, waiting for a dependency), then the state labels'' names before issue 36 (<prefix>/state:pending, ...), which the mirror takes off an issue it writes to.';

--
-- Name: mirror_may_write(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.mirror_may_write(forge text, owner text, repo text, number integer) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT NOT tireless.issue_gone(mirror_may_write.forge, mirror_may_write.owner, mirror_may_write.repo, mirror_may_write.number)
       AND NOT EXISTS (SELECT FROM tireless.mirror_repo m
                        WHERE (m.forge, m.owner, m.repo) = (mirror_may_write.forge, mirror_may_write.owner, mirror_may_write.repo)
                          AND m.archived_at > now() - interval '1 day');
$$;

--
-- Name: FUNCTION mirror_may_write(forge text, owner text, repo text, number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.mirror_may_write(forge text, owner text, repo text, number integer) IS 'Whether the mirror may write to the issue now: it is not gone (tireless.issue_gone) and its repository was not found archived in the last day (record_repo_archived). Every due function of the mirror lists only these.';

--
-- Name: mirror_unread(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.mirror_unread(forge text, owner text, repo text) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    scanned bigint;
    since timestamptz;
BEGIN
    SELECT m.scanned_to INTO scanned FROM tireless.mirror_repo m
     WHERE (m.forge, m.owner, m.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo);
    SELECT t.tracked_at INTO since FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo);
    IF since IS NULL THEN
        RETURN 0;  -- not tracked: nothing is mirrored
    END IF;
    -- The events after the last scan first (the BRIN index on the id; planned with the actual
    -- position, so the planner knows they are few), then each one's job by its key: a LATERAL
    -- subquery it may not flatten (OFFSET 0), so that it never starts at the repository's jobs,
    -- which no index finds (a scan of every job ever run). Issues with a write already queued are
    -- counted by the caller.
    RETURN (
        SELECT count(DISTINCT j.number)
          FROM tireless.job_event e
         CROSS JOIN LATERAL (
               SELECT j.forge, j.owner, j.repo, j.number FROM tireless.job j
                WHERE j.id = e.job_id
                  AND (j.forge, j.owner, j.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               OFFSET 0) AS j
         WHERE e.id > coalesce(scanned, 0)
           AND e.at >= since
           -- A gone issue's writes are never made: not a backlog.
           AND NOT tireless.issue_gone(j.forge, j.owner, j.repo, j.number)
           AND NOT EXISTS (SELECT FROM tireless.mirror_issue mi
                            WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (j.forge, j.owner, j.repo, j.number)
                              AND ((mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state)
                                   OR mi.applied_waiting <> mi.waiting)))
         + (SELECT count(*) FROM tireless.mirror_comment c
             WHERE (c.forge, c.owner, c.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND c.written_at IS NULL AND NOT tireless.issue_gone(c.forge, c.owner, c.repo, c.number))
         + (SELECT count(*) FROM tireless.forge_write p
             WHERE (p.forge, p.owner, p.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND p.kind = 'pull' AND p.written_at IS NULL AND NOT tireless.issue_gone(p.forge, p.owner, p.repo, p.number))
         -- The issues of delivered plans' steps and discoveries' proposals still to open.
         + (SELECT count(*) FROM tireless.plan_task t JOIN tireless.job j ON j.id = t.job_id
             WHERE (t.forge, t.owner, t.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND t.child_number IS NULL AND j.state = 'delivered' AND t.attempt = j.attempts
               AND NOT tireless.issue_gone(j.forge, j.owner, j.repo, j.number))
         -- The comments that tell an issue it is on a dependency cycle, still to write.
         + (SELECT count(*) FROM tireless.cycle_report r
             WHERE (r.forge, r.owner, r.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND r.written_at IS NULL AND r.broken_at IS NULL
               AND NOT tireless.issue_gone(r.forge, r.owner, r.repo, r.number));
END;
$$;

--
-- Name: FUNCTION mirror_unread(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.mirror_unread(forge text, owner text, repo text) IS 'How many issues of a tracked repository changed after the mirror''s last scan and have no write queued yet, plus the outcome comments, pull requests, plan steps'' issues and dependency-cycle comments still to write, none of a gone issue (tireless.issue_gone) (part of repo_status.mirror_backlog); reads only the history after that scan and the comments'', pull requests'', plan tasks'' and cycle reports'' partial indexes.';

--
-- Name: mirror_writes(text, text, text, text, integer, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.mirror_writes(forge text, owner text, repo text, poller text, max_writes integer DEFAULT 100, settle interval DEFAULT '00:02:00'::interval) RETURNS TABLE(number integer, job_id bigint, state text, state_label text, drop_labels text[], job_began timestamp with time zone, job_labels text[], opt_in text, mode_labels text[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    mirror tireless.mirror_repo;
    labels record;
    newest bigint;
    settled bigint;
    tracked_since timestamptz;
BEGIN
    IF mirror_writes.max_writes IS NULL OR mirror_writes.max_writes NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_writes must be from 1 to 10000, got %', coalesce(mirror_writes.max_writes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF mirror_writes.settle IS NULL OR mirror_writes.settle < interval '0' OR mirror_writes.settle > interval '1 day' THEN
        RAISE EXCEPTION 'settle must be from 0 to 1 day, got %', coalesce(mirror_writes.settle::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, mirror_writes.poller);
    INSERT INTO tireless.mirror_repo (forge, owner, repo)
    VALUES (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
    ON CONFLICT DO NOTHING;
    SELECT * INTO mirror FROM tireless.mirror_repo m
     WHERE (m.forge, m.owner, m.repo) = (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
       FOR UPDATE;
    SELECT t.tracked_at INTO tracked_since FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (mirror.forge, mirror.owner, mirror.repo);

    -- Every issue whose jobs changed since the cursor now wants its newest job's current state; an
    -- older wanted state is replaced (job ids of one issue grow: a new job starts after the last ended).
    -- Every finished job read, newest of its issue or not, gets its own outcome comment, queued once.
    WITH touched AS MATERIALIZED (
        SELECT DISTINCT j.id, j.number, j.state, j.state = 'pending' AND j.waiting_on IS NOT NULL AS waiting
          FROM tireless.job_event e
          JOIN tireless.job j ON j.id = e.job_id
         WHERE e.id > mirror.event_cursor
           AND (j.forge, j.owner, j.repo) = (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
           -- A repository tracked again does not mirror what happened before: no comment on old issues.
           AND e.at >= tracked_since
    ), wanted AS (
        INSERT INTO tireless.mirror_issue AS mi (forge, owner, repo, number, job_id, state, waiting)
        SELECT DISTINCT ON (t.number) mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, t.number, t.id, t.state,
               t.waiting
          FROM touched t
         ORDER BY t.number, t.id DESC
        ON CONFLICT ON CONSTRAINT mirror_issue_pkey DO UPDATE
           SET job_id = excluded.job_id, state = excluded.state, waiting = excluded.waiting, failures = 0, next_try_at = now()
         WHERE excluded.job_id > mi.job_id
            OR (excluded.job_id = mi.job_id AND (excluded.state <> mi.state OR excluded.waiting <> mi.waiting))
    ), commented AS (
        INSERT INTO tireless.mirror_comment AS mc (job_id, forge, owner, repo, number)
        SELECT t.id, mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, t.number
          FROM touched t
         CROSS JOIN tireless.policy p
         WHERE p.mirror_comments AND tireless.is_terminal(t.state)
        ON CONFLICT ON CONSTRAINT mirror_comment_pkey DO NOTHING
        RETURNING mc.job_id, mc.forge, mc.owner, mc.repo, mc.number
    )
    -- Each comment queued is a write of the outbox (tireless.forge_write).
    INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)
    SELECT 'comment', c.forge, c.owner, c.repo, c.number, c.job_id FROM commented c ORDER BY c.job_id
    ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING;

    -- The cursor passes only events older than the settle time: a transaction that commits later
    -- than an event with a greater id is still read by the next scan. Reading an event again is harmless.
    SELECT max(e.id), max(e.id) FILTER (WHERE e.at < now() - mirror_writes.settle) INTO newest, settled
      FROM tireless.job_event e WHERE e.id > mirror.event_cursor;
    UPDATE tireless.mirror_repo m
       SET event_cursor = greatest(m.event_cursor, coalesce(settled, m.event_cursor)),
           scanned_to = greatest(m.scanned_to, coalesce(newest, m.scanned_to))
     WHERE (m.forge, m.owner, m.repo) = (mirror.forge, mirror.owner, mirror.repo);

    -- A job pruned before the forge showed it leaves nothing to show.
    UPDATE tireless.mirror_issue mi
       SET applied_job_id = mi.job_id, applied_state = mi.state, applied_waiting = mi.waiting, applied_at = now()
     WHERE (mi.forge, mi.owner, mi.repo) = (mirror.forge, mirror.owner, mirror.repo)
       AND ((mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state) OR mi.applied_waiting <> mi.waiting)
       AND NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = mi.job_id);

    SELECT * INTO labels FROM tireless.mirror_labels();
    RETURN QUERY
    SELECT mi.number, mi.job_id, mi.state::text,
           labels.prefix || '/state/' || CASE WHEN mi.waiting THEN 'waiting' ELSE mi.state::text END,
           ARRAY(SELECT l FROM unnest(labels.state_labels) AS l
                  WHERE l <> labels.prefix || '/state/' || CASE WHEN mi.waiting THEN 'waiting' ELSE mi.state::text END)
           -- A finished job withdraws its own request, never a newer one the store has already seen
           -- (asked again after the job was made: it gets its own job, rule 1).
           || CASE WHEN tireless.is_terminal(mi.state)
                    AND NOT EXISTS (SELECT FROM tireless.issue s
                                     WHERE (s.forge, s.owner, s.repo, s.number) = (mi.forge, mi.owner, mi.repo, mi.number)
                                       AND s.asks_since > j.created_at)
                   THEN labels.mode_labels ELSE '{}' END,
           j.created_at, j.labels, labels.prefix, labels.mode_labels
      FROM tireless.mirror_issue mi
      JOIN tireless.job j ON j.id = mi.job_id
     WHERE (mi.forge, mi.owner, mi.repo) = (mirror.forge, mirror.owner, mirror.repo)
       AND ((mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state) OR mi.applied_waiting <> mi.waiting)
       AND mi.next_try_at <= now()
       AND tireless.mirror_may_write(mi.forge, mi.owner, mi.repo, mi.number)
     ORDER BY mi.next_try_at, mi.number
     LIMIT mirror_writes.max_writes;
END;
$$;

--
-- Name: FUNCTION mirror_writes(forge text, owner text, repo text, poller text, max_writes integer, settle interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.mirror_writes(forge text, owner text, repo text, poller text, max_writes integer, settle interval) IS 'For a poller holding the repository''s poll lease: reads the job history since the repository''s cursor (each changed issue now wants its newest job''s state, replacing any older wanted state; each finished job read gets its outcome comment queued) and returns the label writes due (at most max_writes): per issue its job and state, the state label to show, the labels to take off (the other state labels, and the mode labels once the job ended, unless the issue asked again since the job was made), when the job was made and with which labels, the opt-in and the mode labels; none for a gone issue or, for a day, an archived repository (tireless.mirror_may_write). The cursor passes only events older than settle. TL004 without the lease.';

--
-- Name: forge; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.forge (
    name text NOT NULL,
    kind tireless.forge_kind NOT NULL,
    base_url text NOT NULL,
    limited_until timestamp with time zone,
    last_error text,
    added_at timestamp with time zone DEFAULT now() NOT NULL,
    app_id bigint,
    app_key_file text,
    CONSTRAINT app_id_is_positive CHECK ((app_id > 0)),
    CONSTRAINT app_is_a_github_forge CHECK (((app_id IS NULL) OR (kind = 'github'::tireless.forge_kind))),
    CONSTRAINT app_key_file_has_an_app CHECK (((app_key_file IS NULL) OR (app_id IS NOT NULL))),
    CONSTRAINT app_key_file_is_absolute CHECK (((app_key_file ~ '^/[^[:cntrl:]]*$'::text) AND (length(app_key_file) <= 4096))),
    CONSTRAINT base_url_is_http CHECK (((base_url ~ '^https?://[^/?#[:space:][:cntrl:]]+(/[^?#[:space:][:cntrl:]]*)?$'::text) AND (length(base_url) <= 2000))),
    CONSTRAINT forge_name_is_a_name CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$'::text))
);

--
-- Name: TABLE forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.forge IS 'The registered forges: the name issue keys use, the API family and the URL. Tokens are never stored here. Private: add_forge, remove_forge, forges and record_forge_trouble.';

--
-- Name: COLUMN forge.limited_until; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.forge.limited_until IS 'After a rate limit or an auth failure, no repository of the forge is read before this time.';

--
-- Name: COLUMN forge.last_error; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.forge.last_error IS 'Why the forge is stopped (a rate limit, 401/403); null when it is not.';

--
-- Name: COLUMN forge.app_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.forge.app_id IS 'The GitHub App tireless authenticates as on this forge (its installation tokens are minted by the poller, mirror and runner); null: a token from TIRELESS_TOKEN_<NAME>.';

--
-- Name: COLUMN forge.app_key_file; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.forge.app_key_file IS 'The path of the App''s private key (PEM) on the hosts that run tireless, read when TIRELESS_APP_KEY_<NAME>[_FILE] is not set; the path only, never the key.';

--
-- Name: CONSTRAINT app_id_is_positive ON forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT app_id_is_positive ON tireless.forge IS 'An App id is a positive integer (GitHub''s App settings page, "App ID").';

--
-- Name: CONSTRAINT app_is_a_github_forge ON forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT app_is_a_github_forge ON tireless.forge IS 'Only a GitHub forge has an App.';

--
-- Name: CONSTRAINT app_key_file_has_an_app ON forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT app_key_file_has_an_app ON tireless.forge IS 'A key file belongs to an App.';

--
-- Name: CONSTRAINT app_key_file_is_absolute ON forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT app_key_file_is_absolute ON tireless.forge IS 'The key file is an absolute path (each process reads it wherever it runs).';

--
-- Name: CONSTRAINT base_url_is_http ON forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT base_url_is_http ON tireless.forge IS 'The base URL is an http:// or https:// URL without query or fragment.';

--
-- Name: CONSTRAINT forge_name_is_a_name ON forge; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_name_is_a_name ON tireless.forge IS 'A forge name is 1 to 100 letters, digits, ".", "-" or "_", starting with a letter or digit.';

--
-- Name: issue; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.issue (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    state text NOT NULL,
    labels text[] DEFAULT '{}'::text[] NOT NULL,
    title text,
    url text,
    updated_at timestamp with time zone,
    asks_since timestamp with time zone,
    answered boolean DEFAULT false NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    body text,
    body_cut boolean DEFAULT false NOT NULL,
    gone_at timestamp with time zone,
    gone_note text,
    CONSTRAINT body_within_limit CHECK ((length(body) <= 65536)),
    CONSTRAINT issue_gone_note_bounded CHECK (((length(gone_note) >= 1) AND (length(gone_note) <= 2000))),
    CONSTRAINT issue_gone_says_how CHECK (((gone_at IS NULL) = (gone_note IS NULL))),
    CONSTRAINT issue_is_open_or_closed CHECK ((state = ANY (ARRAY['open'::text, 'closed'::text]))),
    CONSTRAINT issue_number_is_positive CHECK ((number > 0))
);

--
-- Name: TABLE issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.issue IS 'What the store was last shown of each issue of a tracked repository, and whether its current request for work has had its job. Private: enqueue, record_poll and rerun keep it.';

--
-- Name: COLUMN issue.updated_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.updated_at IS 'The forge''s own updated_at of the issue, as last shown (null: not given).';

--
-- Name: COLUMN issue.asks_since; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.asks_since IS 'Since when the issue''s current request for work stands (open, opt-in and mode label); null while it asks for none.';

--
-- Name: COLUMN issue.answered; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.answered IS 'The current request has had its job (made by the work rule or by rerun); a new request resets it.';

--
-- Name: COLUMN issue.changed_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.changed_at IS 'When the store last recorded a change of this issue.';

--
-- Name: COLUMN issue.body; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.body IS 'The issue''s body as last shown, its first 65536 characters (tireless.issue_body_limit()); null when never given.';

--
-- Name: COLUMN issue.body_cut; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.body_cut IS 'True when the body shown was longer than the limit and was cut.';

--
-- Name: COLUMN issue.gone_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.gone_at IS 'When the forge last said the issue is gone (404 or 410: deleted; a redirect to another repository: moved); null while it is there. The mirror makes no write to a gone issue; a listing that shows it again clears it.';

--
-- Name: COLUMN issue.gone_note; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue.gone_note IS 'How it went: issue deleted, or issue moved to owner/name#N.';

--
-- Name: CONSTRAINT body_within_limit ON issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT body_within_limit ON tireless.issue IS 'A body is kept up to tireless.issue_body_limit() characters.';

--
-- Name: CONSTRAINT issue_gone_note_bounded ON issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_gone_note_bounded ON tireless.issue IS 'The note is 1 to 2000 characters.';

--
-- Name: CONSTRAINT issue_gone_says_how ON issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_gone_says_how ON tireless.issue IS 'A gone issue says how it went; one that is there says nothing.';

--
-- Name: CONSTRAINT issue_is_open_or_closed ON issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_is_open_or_closed ON tireless.issue IS 'An issue is open or closed.';

--
-- Name: CONSTRAINT issue_number_is_positive ON issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_number_is_positive ON tireless.issue IS 'Issue numbers start at 1.';

--
-- Name: issue_skip; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.issue_skip (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    problem text NOT NULL,
    first_seen timestamp with time zone DEFAULT now() NOT NULL,
    last_seen timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT issue_skip_number_positive CHECK ((number > 0)),
    CONSTRAINT issue_skip_problem_bounded CHECK (((length(problem) >= 1) AND (length(problem) <= 500)))
);

--
-- Name: TABLE issue_skip; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.issue_skip IS 'Issues a poll had to leave out of its batch (tireless.record_poll), with the reason: shown by repo_status, the dashboard''s forge view and /metrics; a row goes when the issue is next recorded well-formed.';

--
-- Name: COLUMN issue_skip.number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_skip.number IS 'The issue left out (its number was sound; another field was not).';

--
-- Name: COLUMN issue_skip.problem; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_skip.problem IS 'Why it was left out the last time: the field and what it held.';

--
-- Name: COLUMN issue_skip.first_seen; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_skip.first_seen IS 'When a poll first left it out (since it was last recorded well-formed).';

--
-- Name: COLUMN issue_skip.last_seen; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_skip.last_seen IS 'When a poll last left it out.';

--
-- Name: CONSTRAINT issue_skip_number_positive ON issue_skip; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_skip_number_positive ON tireless.issue_skip IS 'An issue number is positive on both forges.';

--
-- Name: CONSTRAINT issue_skip_problem_bounded ON issue_skip; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_skip_problem_bounded ON tireless.issue_skip IS 'The reason is said, and short enough for a status line (the poller trims it to 500 characters).';

--
-- Name: repo_status; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.repo_status AS
 SELECT rp.forge,
    rp.owner,
    rp.repo,
    (f.kind)::text AS forge_kind,
    (f.name IS NOT NULL) AS registered,
    rp.last_poll_at,
    rp.last_success_at,
    rp.last_error,
    rp.last_error_at,
    rp.consecutive_failures,
    rp.next_poll_at,
    rp.backoff_until,
    rp.polled_by,
    rp.cursor,
    f.limited_until AS forge_limited_until,
    f.last_error AS forge_error,
    COALESCE(live.pending, (0)::bigint) AS pending,
    COALESCE(live.claimed, (0)::bigint) AS claimed,
    (COALESCE(queued.writes, (0)::bigint) + tireless.mirror_unread(rp.forge, rp.owner, rp.repo)) AS mirror_backlog,
    queued.last_error AS mirror_error,
    queued.last_error_at AS mirror_error_at,
    rp.moved_to,
    rp.last_warning,
    rp.last_warning_at,
    COALESCE(skips.issues, (0)::bigint) AS skipped_issues,
    skips.newest AS skipped_issue
   FROM ((((tireless.repo_poll rp
     LEFT JOIN tireless.forge f ON ((f.name = rp.forge)))
     LEFT JOIN LATERAL ( SELECT count(*) FILTER (WHERE (j.state = 'pending'::tireless.job_state)) AS pending,
            count(*) FILTER (WHERE (j.state = 'claimed'::tireless.job_state)) AS claimed
           FROM tireless.job j
          WHERE (((j.forge = rp.forge) AND (j.owner = rp.owner) AND (j.repo = rp.repo)) AND (j.state = ANY (ARRAY['pending'::tireless.job_state, 'claimed'::tireless.job_state])))) live ON (true))
     LEFT JOIN LATERAL ( SELECT count(*) AS writes,
            (array_agg(mi.last_error ORDER BY mi.last_error_at DESC) FILTER (WHERE (mi.last_error IS NOT NULL)))[1] AS last_error,
            max(mi.last_error_at) AS last_error_at
           FROM tireless.mirror_issue mi
          WHERE (((mi.forge = rp.forge) AND (mi.owner = rp.owner) AND (mi.repo = rp.repo)) AND (((mi.applied_job_id IS DISTINCT FROM mi.job_id) OR (mi.applied_state IS DISTINCT FROM mi.state)) OR (mi.applied_waiting <> mi.waiting)) AND (NOT (EXISTS ( SELECT
                   FROM tireless.issue s
                  WHERE (((s.forge = mi.forge) AND (s.owner = mi.owner) AND (s.repo = mi.repo) AND (s.number = mi.number)) AND (s.gone_at IS NOT NULL))))))) queued ON (true))
     LEFT JOIN LATERAL ( SELECT count(*) AS issues,
            (array_agg(format('#%s: %s'::text, k.number, k.problem) ORDER BY k.last_seen DESC, k.number))[1] AS newest
           FROM tireless.issue_skip k
          WHERE ((k.forge = rp.forge) AND (k.owner = rp.owner) AND (k.repo = rp.repo))) skips ON (true));

--
-- Name: VIEW repo_status; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.repo_status IS 'One row per tracked repository: its forge (registered or not, stopped until when and why), its last poll, last good read and last error, failures in a row, next poll, backoff, holder and cursor, its live jobs, the mirror: how many issues still wait for a forge write (mirror_backlog) and the newest error of those, and the poller''s notices: the owner/name the repository was moved to, the last warning of a good read, and how many of its issues the polls leave out as malformed (tireless.issue_skip) with the newest of them.';

--
-- Name: missed_rounds(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.missed_rounds(grace interval DEFAULT '00:01:00'::interval) RETURNS TABLE(part text, due_since timestamp with time zone, items bigint, detail text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT 'poller'::text,
     min(d.due) AS min,
     count(*) AS count,
     format('%s repositories due to be polled and not polled'::text, count(*)) AS format
    FROM ( SELECT GREATEST(r.next_poll_at, r.backoff_until, r.forge_limited_until) AS due
            FROM tireless.repo_status r
           WHERE r.registered) d
   WHERE (d.due < (now() - missed_rounds.grace))
  HAVING (count(*) > 0)
 UNION ALL
  SELECT 'sweeper'::text,
     min(j.claim_expires_at) AS min,
     count(*) AS count,
     format('%s claims past their lease and not swept'::text, count(*)) AS format
    FROM tireless.job j
   WHERE ((j.state = 'claimed'::tireless.job_state) AND (j.claim_expires_at < (now() - missed_rounds.grace)))
  HAVING (count(*) > 0)
 UNION ALL
  SELECT 'workers'::text,
     min(j.available_at) AS min,
     count(*) AS count,
     format('%s ready jobs not claimed'::text, count(*)) AS format
    FROM (tireless.job j
      LEFT JOIN tireless.lane l ON ((l.name = j.lane)))
   WHERE ((j.state = 'pending'::tireless.job_state) AND (j.waiting_on IS NULL) AND (j.available_at < (now() - missed_rounds.grace)) AND (NOT COALESCE(l.paused, false)) AND COALESCE((l.tripped_until < now()), true))
  HAVING (count(*) > 0);
END;

--
-- Name: FUNCTION missed_rounds(grace interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.missed_rounds(grace interval) IS 'The parts of the fleet that missed their rounds by more than grace, one row each: the poller (tracked repositories of a registered forge past their next poll, backoff and rate limit), the sweeper (claims past their lease), the workers (ready jobs of a lane neither paused nor tripped, left unclaimed); since when the oldest was due, how many, and a sentence. No row: every part kept its rounds. The overview shows them.';

--
-- Name: model_prices(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.model_prices() RETURNS SETOF tireless.model_price
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT p.model,
     p.input,
     p.output,
     p.cache_read,
     p.cache_write,
     p.set_at
    FROM tireless.model_price p
   ORDER BY p.model;
END;

--
-- Name: FUNCTION model_prices(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.model_prices() IS 'Every price set (tireless.set_model_price), by model.';

--
-- Name: next_poll_due_at(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.next_poll_due_at() RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT min(greatest(rp.next_poll_at, rp.backoff_until, rp.poll_lease_until, f.limited_until))
      FROM tireless.repo_poll rp
      JOIN tireless.forge f ON f.name = rp.forge;
$$;

--
-- Name: FUNCTION next_poll_due_at(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.next_poll_due_at() IS 'The earliest time claim_repos_to_poll hands out a tracked repository of a registered forge: its next poll, backoff, another poller''s lease and its forge''s stop all passed (in the past: one is due now). Null when no repository of a registered forge is tracked.';

--
-- Name: next_ready_at(text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.next_ready_at(lanes text[]) RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT min(j.available_at) AS min
    FROM tireless.job j
   WHERE ((j.state = 'pending'::tireless.job_state) AND (j.lane = ANY (next_ready_at.lanes)) AND (j.available_at > now()) AND (j.waiting_on IS NULL));
END;

--
-- Name: FUNCTION next_ready_at(lanes text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.next_ready_at(lanes text[]) IS 'When the earliest backed-off pending job in the lanes becomes claimable (null: none is waiting out a backoff): an idle runner sleeps until then at most, since the end of a backoff sends no notification. A job waiting for a dependency is left out: its release sends the lane''s notification.';

--
-- Name: open_dependencies(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.open_dependencies(forge text, owner text, repo text, number integer) RETURNS text[]
    LANGUAGE sql STABLE
    AS $$
    SELECT nullif(ARRAY(
        SELECT tireless.issue_ref(x.owner, x.repo, x.depends_on_owner, x.depends_on_repo, x.depends_on_number)
          FROM (SELECT DISTINCT d.owner, d.repo, d.depends_on_owner, d.depends_on_repo, d.depends_on_number
                  FROM tireless.issue_dependency d
                  LEFT JOIN tireless.issue s
                         ON (s.forge, s.owner, s.repo, s.number) = (d.forge, d.depends_on_owner, d.depends_on_repo, d.depends_on_number)
                 WHERE (d.forge, d.owner, d.repo, d.number)
                       = (open_dependencies.forge, open_dependencies.owner, open_dependencies.repo, open_dependencies.number)
                   AND s.state IS DISTINCT FROM 'closed') AS x
         ORDER BY (x.depends_on_owner, x.depends_on_repo) <> (x.owner, x.repo), x.depends_on_owner, x.depends_on_repo,
                  x.depends_on_number), '{}');
$$;

--
-- Name: FUNCTION open_dependencies(forge text, owner text, repo text, number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.open_dependencies(forge text, owner text, repo text, number integer) IS 'The dependencies of an issue that are still open (not seen closed: one never read is open), as #N or owner/repo#N, its own repository first; null when none is open.';

--
-- Name: open_pulls(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.open_pulls(forge text, owner text, repo text) RETURNS TABLE(number integer, pull_number integer, head text)
    LANGUAGE sql STABLE
    AS $$
    SELECT i.number, push.pull_number, push.head
      FROM tireless.issue i
     CROSS JOIN LATERAL tireless.issue_push(i.forge, i.owner, i.repo, i.number) AS push
     WHERE (i.forge, i.owner, i.repo) = (open_pulls.forge, open_pulls.owner, open_pulls.repo)
       AND i.state = 'open'
       AND push.pull_number IS NOT NULL
       AND EXISTS (SELECT FROM tireless.delivery d
                    WHERE (d.forge, d.owner, d.repo, d.number) = (i.forge, i.owner, i.repo, i.number)
                      AND d.pull_number IS NOT NULL)
     ORDER BY i.number;
$$;

--
-- Name: FUNCTION open_pulls(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.open_pulls(forge text, owner text, repo text) IS 'Each open issue of the repository with a pull request the mirror recorded: its number, the pull request''s and the head tireless last pushed to its branch.';

--
-- Name: parse_kind(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.parse_kind(name text) RETURNS tireless.job_kind
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    IF name IS NULL OR NOT name = ANY (enum_range(NULL::tireless.job_kind)::text[]) THEN
        RAISE EXCEPTION 'unknown job kind %', coalesce(quote_literal(left(name, 80)), 'null')
            USING ERRCODE = 'TL005', DETAIL = format('The kinds are %s.', array_to_string(enum_range(NULL::tireless.job_kind), ', '));
    END IF;
    RETURN name::tireless.job_kind;
END;
$$;

--
-- Name: FUNCTION parse_kind(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.parse_kind(name text) IS 'The job kind named by a text; TL005 for an unknown name.';

--
-- Name: parse_state(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.parse_state(name text) RETURNS tireless.job_state
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    IF name IS NULL OR NOT name = ANY (enum_range(NULL::tireless.job_state)::text[]) THEN
        RAISE EXCEPTION 'unknown job state %', coalesce(quote_literal(left(name, 80)), 'null')
            USING ERRCODE = 'TL005', DETAIL = format('The states are %s.', array_to_string(enum_range(NULL::tireless.job_state), ', '));
    END IF;
    RETURN name::tireless.job_state;
END;
$$;

--
-- Name: FUNCTION parse_state(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.parse_state(name text) IS 'The job state named by a text; TL005 for an unknown name.';

--
-- Name: pause_lane(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.pause_lane(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(pause_lane.lane);
    UPDATE tireless.lane l SET paused = true WHERE l.name = pause_lane.lane RETURNING l.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION pause_lane(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.pause_lane(lane text) IS 'claim_next hands out nothing from the lane until resume_lane; claims already held run on. Returns the lane.';

--
-- Name: plan_problem(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.plan_problem(plan jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
DECLARE
    tasks integer;
    task record;
    dep record;
    cycle integer;
BEGIN
    IF plan_problem.plan IS NULL OR jsonb_typeof(plan_problem.plan) <> 'array' THEN
        RETURN format('the plan must be a JSON list of tasks, got %s', coalesce(jsonb_typeof(plan_problem.plan), 'null'));
    END IF;
    tasks := jsonb_array_length(plan_problem.plan);
    IF tasks > 50 THEN
        RETURN format('the plan has %s tasks; at most 50', tasks);
    END IF;
    FOR task IN SELECT e.position - 1 AS i, e.t FROM jsonb_array_elements(plan_problem.plan) WITH ORDINALITY AS e(t, position) LOOP
        IF jsonb_typeof(task.t) <> 'object' THEN
            RETURN format('task %s must be an object {title, body, lane?, depends_on?}, got %s', task.i, jsonb_typeof(task.t));
        END IF;
        IF EXISTS (SELECT FROM jsonb_object_keys(task.t) AS k WHERE k NOT IN ('title', 'body', 'lane', 'depends_on')) THEN
            RETURN format('task %s: unknown field %s (title, body, lane, depends_on)', task.i,
                          (SELECT quote_literal(left(k, 40)) FROM jsonb_object_keys(task.t) AS k
                            WHERE k NOT IN ('title', 'body', 'lane', 'depends_on') ORDER BY k LIMIT 1));
        END IF;
        IF jsonb_typeof(task.t -> 'title') IS DISTINCT FROM 'string'
           OR length(btrim(task.t ->> 'title')) = 0 OR length(task.t ->> 'title') > 200 THEN
            RETURN format('task %s: "title" must be 1 to 200 characters', task.i);
        END IF;
        IF jsonb_typeof(task.t -> 'body') IS DISTINCT FROM 'string' OR length(task.t ->> 'body') > 60000 THEN
            RETURN format('task %s: "body" must be text of at most 60000 characters', task.i);
        END IF;
        IF task.t ? 'lane' AND jsonb_typeof(task.t -> 'lane') <> 'null'
           AND (jsonb_typeof(task.t -> 'lane') <> 'string' OR NOT tireless.is_lane_name(task.t ->> 'lane')) THEN
            RETURN format('task %s: "lane" must be 1 to 63 letters, digits, ".", "-" or "_", got %s', task.i,
                          left((task.t -> 'lane')::text, 80));
        END IF;
        IF task.t ? 'depends_on' AND jsonb_typeof(task.t -> 'depends_on') <> 'array' THEN
            RETURN format('task %s: "depends_on" must be a list of task indexes and "#N"', task.i);
        END IF;
        IF jsonb_array_length(coalesce(task.t -> 'depends_on', '[]')) > 50 THEN
            RETURN format('task %s: "depends_on" has %s entries; at most 50', task.i, jsonb_array_length(task.t -> 'depends_on'));
        END IF;
        FOR dep IN SELECT d.position - 1 AS n, d.v FROM jsonb_array_elements(coalesce(task.t -> 'depends_on', '[]')) WITH ORDINALITY AS d(v, position) LOOP
            IF NOT ((jsonb_typeof(dep.v) = 'number' AND dep.v::numeric = trunc(dep.v::numeric)
                     AND dep.v::numeric BETWEEN 0 AND tasks - 1 AND dep.v::numeric <> task.i)
                    OR (jsonb_typeof(dep.v) = 'string' AND dep.v #>> '{}' ~ '^#[1-9][0-9]{0,8}$')) THEN
                RETURN format('task %s: "depends_on" entry %s must be the index of another task (0 to %s) or "#N", got %s',
                              task.i, dep.n, tasks - 1, left(dep.v::text, 80));
            END IF;
        END LOOP;
    END LOOP;
    -- No cycle among the indexes: a task that reaches itself.
    WITH RECURSIVE edge(task, dep) AS (
        SELECT e.position - 1, (d.v)::numeric::integer
          FROM jsonb_array_elements(plan_problem.plan) WITH ORDINALITY AS e(t, position)
         CROSS JOIN jsonb_array_elements(coalesce(e.t -> 'depends_on', '[]')) AS d(v)
         WHERE jsonb_typeof(d.v) = 'number'
    ), reach(task, dep) AS (
        SELECT edge.task, edge.dep FROM edge
        UNION
        SELECT r.task, edge.dep FROM reach r JOIN edge ON edge.task = r.dep
    )
    SELECT min(r.task) INTO cycle FROM reach r WHERE r.task = r.dep;
    IF cycle IS NOT NULL THEN
        RETURN format('task %s: "depends_on" makes a cycle (task %s depends on itself through others)', cycle, cycle);
    END IF;
    RETURN NULL;
END;
$_$;

--
-- Name: FUNCTION plan_problem(plan jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.plan_problem(plan jsonb) IS 'The first fault of a plan (or proposals) file, naming the task (its index, from 0) and the field; null when it is a list of at most 50 tasks {title: 1 to 200 characters, body: at most 60000 (room in an issue for the links), lane?: a lane name, depends_on?: at most 50 indexes of other tasks or "#N"} without a cycle.';

--
-- Name: poll_soon(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.poll_soon(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    due boolean;
BEGIN
    PERFORM tireless.check_repo(poll_soon.forge, poll_soon.owner, poll_soon.repo);
    -- A read under way may have listed the forge before this change: it asks for another at once.
    UPDATE tireless.repo_poll rp
       SET next_poll_at = least(rp.next_poll_at, now()),
           poll_again = rp.poll_again OR coalesce(rp.poll_lease_until > now(), false)
      FROM tireless.tracked_key(poll_soon.forge, poll_soon.owner, poll_soon.repo) k
     WHERE (rp.forge, rp.owner, rp.repo) = (k.forge, k.owner, k.repo)
       AND (rp.next_poll_at > now() OR (rp.poll_lease_until > now() AND NOT rp.poll_again));
    due := EXISTS (SELECT FROM tireless.repo_poll rp
                     JOIN tireless.tracked_key(poll_soon.forge, poll_soon.owner, poll_soon.repo) k
                       ON (rp.forge, rp.owner, rp.repo) = (k.forge, k.owner, k.repo)
                    WHERE rp.backoff_until IS NULL OR rp.backoff_until <= now());
    IF due THEN
        PERFORM tireless.announce_poll(poll_soon.forge);
    END IF;
    RETURN due;
END;
$$;

--
-- Name: FUNCTION poll_soon(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.poll_soon(forge text, owner text, repo text) IS 'Makes a tracked repository due now (a webhook saw a change), its owner and name matched without case (while a poller reads it: due again as soon as that read is recorded, poll_again), and wakes the pollers (NOTIFY tireless_poll, payload the forge); a backoff still holds. True when it is due now, false when it is not tracked or is backing off (then no notification).';

--
-- Name: poll_soon_once(text, text, text, bytea); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.poll_soon_once(forge text, owner text, repo text, digest bytea) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_tracked(poll_soon_once.forge, poll_soon_once.owner, poll_soon_once.repo);
    IF octet_length(poll_soon_once.digest) IS DISTINCT FROM 32 THEN
        RAISE EXCEPTION 'digest must be the 32 bytes of a SHA-256, got %',
            coalesce(octet_length(poll_soon_once.digest)::text || ' bytes', 'null')
            USING ERRCODE = 'TL005';
    END IF;
    -- The window: a body older than seven days is forgotten, so the table holds a week of deliveries.
    DELETE FROM tireless.webhook_delivery d WHERE d.received_at < now() - interval '7 days';
    -- Two copies at once: the second waits for the first's row and then finds it (or, if the
    -- first rolled back, inserts its own).
    INSERT INTO tireless.webhook_delivery AS d (forge, digest)
    VALUES (poll_soon_once.forge, poll_soon_once.digest)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN tireless.poll_soon(poll_soon_once.forge, poll_soon_once.owner, poll_soon_once.repo);
END;
$$;

--
-- Name: FUNCTION poll_soon_once(forge text, owner text, repo text, digest bytea); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.poll_soon_once(forge text, owner text, repo text, digest bytea) IS 'tireless.poll_soon for a webhook delivery whose body has SHA-256 digest: null, and nothing done, when the same body reached this forge in the last seven days (a replay); TL008 for a repository that is not tracked, TL005 for a digest that is not 32 bytes.';

--
-- Name: prune(interval, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.prune(older_than interval, max_jobs integer DEFAULT NULL::integer) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    cutoff timestamptz;
    batch bigint[];
    deleted bigint := 0;
    batch_size CONSTANT integer := 1000;
BEGIN
    IF prune.older_than IS NULL OR prune.older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be an interval of 0 or more, got %', coalesce(prune.older_than::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'prune(older_than => ''90 days'') deletes terminal jobs unchanged for 90 days.';
    END IF;
    IF prune.max_jobs IS NOT NULL AND prune.max_jobs <= 0 THEN
        RAISE EXCEPTION 'max_jobs must be positive or null, got %', prune.max_jobs USING ERRCODE = 'TL005';
    END IF;
    cutoff := now() - prune.older_than;
    PERFORM set_config('tireless.pruning', 'on', true);
    LOOP
        -- Leaves first: a job that another job names as parent waits until that child is gone, so
        -- a live job's parent (and its parent) is never deleted. Only terminal rows are locked,
        -- rows no claim, renewal or finish ever touches; SKIP LOCKED passes over a parent that a
        -- new child's foreign key check holds.
        SELECT array_agg(b.id) INTO batch
          FROM (SELECT j.id FROM tireless.job j
                 WHERE j.state IN ('delivered', 'failed', 'cancelled') AND j.updated_at < cutoff
                   AND NOT EXISTS (SELECT FROM tireless.job c WHERE c.parent_id = j.id)
                 ORDER BY j.updated_at
                 LIMIT least(batch_size, prune.max_jobs - deleted)
                   FOR UPDATE SKIP LOCKED) AS b;
        EXIT WHEN batch IS NULL;
        DELETE FROM tireless.job_event e WHERE e.job_id = ANY (batch);
        DELETE FROM tireless.job j WHERE j.id = ANY (batch);
        deleted := deleted + cardinality(batch);
    END LOOP;
    PERFORM set_config('tireless.pruning', 'off', true);
    -- The records of workers that stopped, or were lost, before the cutoff go too (one per name).
    DELETE FROM tireless.worker_state s
     WHERE greatest(s.beat_at, s.stopped_at) < cutoff AND (s.stopped_at IS NOT NULL OR s.expires_at < now());
    RETURN deleted;
END;
$$;

--
-- Name: FUNCTION prune(older_than interval, max_jobs integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.prune(older_than interval, max_jobs integer) IS '(admin) Deletes terminal jobs last changed before now() - older_than, with their history, in batches of 1000; never a live job, never a job that a remaining job names as parent. max_jobs (null: no limit) bounds one call, so a caller can keep each transaction short. Also deletes the records of workers that stopped or were lost before then (tireless.worker_state). Returns how many jobs it deleted.';

--
-- Name: prune_preview(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.prune_preview(older_than interval) RETURNS TABLE(jobs bigint, oldest timestamp with time zone, newest timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF prune_preview.older_than IS NULL OR prune_preview.older_than < interval '0' THEN
        RAISE EXCEPTION 'older_than must be an interval of 0 or more, got %', coalesce(prune_preview.older_than::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    -- prune's rule: a terminal job unchanged since the cutoff goes, unless a job that stays (live, or
    -- newer) descends from it.
    RETURN QUERY
    WITH RECURSIVE kept_ancestor AS (
        SELECT j.parent_id AS id FROM tireless.job j
         WHERE j.parent_id IS NOT NULL
           AND NOT (j.state IN ('delivered', 'failed', 'cancelled') AND j.updated_at < now() - prune_preview.older_than)
        UNION
        SELECT p.parent_id FROM kept_ancestor k JOIN tireless.job p ON p.id = k.id WHERE p.parent_id IS NOT NULL
    )
    SELECT count(*), min(j.updated_at), max(j.updated_at)
      FROM tireless.job j
     WHERE j.state IN ('delivered', 'failed', 'cancelled') AND j.updated_at < now() - prune_preview.older_than
       AND j.id NOT IN (SELECT k.id FROM kept_ancestor k);
END;
$$;

--
-- Name: FUNCTION prune_preview(older_than interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.prune_preview(older_than interval) IS '(admin) What prune(older_than) would delete now: how many jobs, and the oldest and newest last change among them. Deletes nothing.';

--
-- Name: pull_fate_problem(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.pull_fate_problem(fate jsonb) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE
        WHEN jsonb_typeof(fate) IS DISTINCT FROM 'object' THEN
            format('must be a JSON object, got %s', left(fate::text, 100))
        WHEN jsonb_typeof(fate -> 'pull') IS DISTINCT FROM 'number'
             OR (fate -> 'pull')::numeric NOT BETWEEN 1 AND 2147483647
             OR (fate -> 'pull')::numeric <> trunc((fate -> 'pull')::numeric) THEN
            format('"pull" must be an integer from 1 to 2147483647, got %s', left(coalesce(fate -> 'pull', 'null')::text, 100))
        WHEN fate ->> 'state' IS NULL OR fate ->> 'state' NOT IN ('open', 'closed') THEN
            format('"state" must be "open" or "closed", got %s', left(coalesce(fate -> 'state', 'null')::text, 100))
        WHEN jsonb_typeof(fate -> 'merged_at') NOT IN ('string', 'null')
             OR (jsonb_typeof(fate -> 'merged_at') = 'string' AND NOT tireless.is_forge_timestamp(fate ->> 'merged_at')) THEN
            format('"merged_at" must be an ISO 8601 timestamp with a time zone or null, got %s', left((fate -> 'merged_at')::text, 100))
        WHEN jsonb_typeof(fate -> 'closed_at') NOT IN ('string', 'null')
             OR (jsonb_typeof(fate -> 'closed_at') = 'string' AND NOT tireless.is_forge_timestamp(fate ->> 'closed_at')) THEN
            format('"closed_at" must be an ISO 8601 timestamp with a time zone or null, got %s', left((fate -> 'closed_at')::text, 100))
        WHEN fate ->> 'state' = 'closed' AND fate ->> 'closed_at' IS NULL THEN
            'a closed pull request must say when ("closed_at")'
        WHEN fate ->> 'state' = 'open' AND fate ->> 'merged_at' IS NOT NULL THEN
            'an open pull request has no "merged_at"'
    END;
$$;

--
-- Name: FUNCTION pull_fate_problem(fate jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.pull_fate_problem(fate jsonb) IS 'Why one element of a record_pull_outcomes batch is malformed ({pull, state: open|closed, merged_at, closed_at}), or null when it is well formed.';

--
-- Name: pull_marker(integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.pull_marker(number integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:pull:%s -->'::text, number);

--
-- Name: FUNCTION pull_marker(number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.pull_marker(number integer) IS 'The hidden last line of the body of the pull request tireless opens for issue number (the same for every delivery of the issue); the mirror counts it only in a pull request opened by its own forge account.';

--
-- Name: pull_outcomes(interval, timestamp with time zone); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.pull_outcomes(since interval DEFAULT '7 days'::interval, at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(lane text, forge text, owner text, repo text, opened bigint, merged bigint, closed bigint, still_open bigint, revisions bigint, revisions_per_pull numeric, merge_seconds_sum double precision, merge_seconds_median double precision, merge_seconds_mean double precision, merged_tokens bigint, merged_cost numeric, tokens_per_merged numeric, cost_per_merged numeric, unpriced boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    upto timestamptz := coalesce(pull_outcomes.at, now());
BEGIN
    IF pull_outcomes.since IS NOT NULL AND pull_outcomes.since <= interval '0' THEN
        RAISE EXCEPTION 'the window of pull_outcomes must be a positive interval (7 days) or null for all, got %',
            quote_literal(pull_outcomes.since::text)
            USING ERRCODE = 'TL005';
    END IF;
    RETURN QUERY
    WITH pull AS (
        SELECT DISTINCT ON (d.forge, d.owner, d.repo, d.pull_number)
               j.lane, d.forge, d.owner, d.repo, d.number, d.pull_number, d.pull_known_at AS opened_at
          FROM tireless.delivery d
          JOIN tireless.job j ON j.id = d.job_id
         WHERE d.pull_number IS NOT NULL
         ORDER BY d.forge, d.owner, d.repo, d.pull_number, d.pull_known_at, d.job_id
    ), fate AS (
        SELECT p.*, o.merged_at,
               CASE WHEN o.merged_at <= upto THEN 'merged'
                    WHEN o.state = 'closed' AND o.closed_at <= upto THEN 'closed'
                    ELSE 'open' END AS fate,
               (SELECT count(DISTINCT a.job_id) FROM tireless.ask a
                 WHERE (a.forge, a.owner, a.repo, a.pull_number) = (p.forge, p.owner, p.repo, p.pull_number)
                   AND a.verb = 'revise' AND a.job_id IS NOT NULL) AS revisions
          FROM pull p
          LEFT JOIN tireless.pull_outcome o
            ON (o.forge, o.owner, o.repo, o.pull_number) = (p.forge, p.owner, p.repo, p.pull_number)
         WHERE p.opened_at <= upto
           AND (pull_outcomes.since IS NULL OR p.opened_at > upto - pull_outcomes.since)
    ), spent AS (
        -- A merged pull request's cost: every job of its issue made before the merge (the
        -- implementation, its retries, revisions and fixes of failed checks).
        SELECT f.*, s.tokens, s.cost, s.unpriced
          FROM fate f
          LEFT JOIN LATERAL (
              SELECT coalesce(sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens), 0)::bigint AS tokens,
                     coalesce(sum(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                                                      u.cache_write_tokens)), 0) AS cost,
                     coalesce(bool_or(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                                                          u.cache_write_tokens) IS NULL), false) AS unpriced
                FROM tireless.job j
                JOIN tireless.model_usage u ON u.job_id = j.id
               WHERE (j.forge, j.owner, j.repo, j.number) = (f.forge, f.owner, f.repo, f.number)
                 -- the forges stamp whole seconds: a job made in the merge's own second counts
                 AND j.created_at < f.merged_at + interval '1 second') s ON f.fate = 'merged'
    )
    SELECT s.lane, s.forge, s.owner, s.repo,
           count(*), count(*) FILTER (WHERE s.fate = 'merged'), count(*) FILTER (WHERE s.fate = 'closed'),
           count(*) FILTER (WHERE s.fate = 'open'),
           sum(s.revisions)::bigint, round(sum(s.revisions)::numeric / count(*), 2),
           coalesce(sum(extract(epoch FROM s.merged_at - s.opened_at)::double precision) FILTER (WHERE s.fate = 'merged'), 0),
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM s.merged_at - s.opened_at)::double precision)
               FILTER (WHERE s.fate = 'merged'),
           avg(extract(epoch FROM s.merged_at - s.opened_at)::double precision) FILTER (WHERE s.fate = 'merged'),
           coalesce(sum(s.tokens) FILTER (WHERE s.fate = 'merged'), 0)::bigint,
           coalesce(sum(s.cost) FILTER (WHERE s.fate = 'merged'), 0),
           round(sum(s.tokens) FILTER (WHERE s.fate = 'merged')::numeric
                 / nullif(count(*) FILTER (WHERE s.fate = 'merged'), 0), 2),
           sum(s.cost) FILTER (WHERE s.fate = 'merged') / nullif(count(*) FILTER (WHERE s.fate = 'merged'), 0),
           coalesce(bool_or(s.unpriced) FILTER (WHERE s.fate = 'merged'), false)
      FROM spent s
     GROUP BY s.lane, s.forge, s.owner, s.repo
     ORDER BY s.lane, s.forge, s.owner, s.repo;
END;
$$;

--
-- Name: FUNCTION pull_outcomes(since interval, at timestamp with time zone); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.pull_outcomes(since interval, at timestamp with time zone) IS 'Per lane (which is per agent) and repository, the pull requests tireless opened in the window before `at` (since: 7 days unless told, null for every one the store keeps; at: now unless told) and their fate as of `at`: opened, merged, closed unmerged, still open; the revision jobs the conversation made for them (and per pull request); seconds from open to merge (sum, median, mean); and the tokens and USD of every job of a merged one''s issue made before its merge (in all and per merged pull request; unpriced: some model had no price). TL005 for a window that is not positive.';

--
-- Name: pull_request_text(tireless.job); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.pull_request_text(job tireless.job, OUT title text, OUT body text) RETURNS record
    LANGUAGE sql STABLE
    AS $$
    -- The title is the issue's (its blanks folded, made safe, cut to 200 characters); the body closes
    -- the issue on merge, quotes the report of the job's last attempt made safe as the outcome comment
    -- does, says which job made it, and ends with the marker.
    SELECT 'Fix #' || job.number || coalesce(': ' || CASE WHEN length(named.title) > 200 THEN left(named.title, 199) || '…'
                                                          ELSE named.title END, ''),
           'Closes #' || job.number
           || coalesce(E'\n\n' || tireless.fit_report(report.text, tireless.forge_body_limit() - length(report.cut) - 4
                                                                    - length('Closes #' || job.number || tail.text))
                       || report.cut, '')
           || E'\n\n' || tail.text
      FROM (SELECT nullif(tireless.safe_comment_text(regexp_replace(btrim(coalesce(
                   (SELECT i.title FROM tireless.issue i
                     WHERE (i.forge, i.owner, i.repo, i.number) = (job.forge, job.owner, job.repo, job.number)),
                   job.title)), '\s+', ' ', 'g')), '') AS title) AS named
      LEFT JOIN LATERAL (SELECT a.report AS text,
                                CASE WHEN a.report_cut THEN E'\n\n(report cut at 60000 characters)' ELSE '' END AS cut
                           FROM tireless.job_attempt a
                          WHERE a.job_id = job.id AND a.attempt = job.attempts) AS report ON true
     CROSS JOIN LATERAL (SELECT format('Delivered by tireless: job %s, attempt %s%s.', job.id, job.attempts,
                                       coalesce('; ' || tireless.spend_text(job.id), ''))
                                || E'\n\n' || tireless.pull_marker(job.number) AS text) AS tail;
$$;

--
-- Name: FUNCTION pull_request_text(job tireless.job, OUT title text, OUT body text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.pull_request_text(job tireless.job, OUT title text, OUT body text) IS 'The title and body of the pull request of a delivered job: "Fix #7: <the issue''s title>" (blanks folded, made safe by safe_comment_text, cut to 200 characters); "Closes #7", the report of the job''s last attempt made safe and cut so that the body fits in tireless.forge_body_limit() (tireless.fit_report, a cut saying so), which job and attempt made it and what its agent spent (tireless.spend_text), and the marker line (tireless.pull_marker).';

--
-- Name: pull_write(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.pull_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('job_id', w.job_id, 'number', w.number,
                              'action', CASE WHEN known.pull_number IS NULL THEN 'open' ELSE 'update' END,
                              'pull_number', known.pull_number, 'head_branch', d.branch, 'head', d.head,
                              'base_branch', d.base_branch, 'title', pr.title, 'body', pr.body,
                              'marker', tireless.pull_marker(w.number), 'draft', d.draft)
      FROM tireless.delivery d
      JOIN tireless.job j ON j.id = d.job_id
      LEFT JOIN LATERAL (SELECT o.pull_number FROM tireless.delivery o
                          WHERE (o.forge, o.owner, o.repo, o.number) = (d.forge, d.owner, d.repo, d.number)
                            AND o.branch = d.branch AND o.pull_number IS NOT NULL
                          ORDER BY o.job_id DESC LIMIT 1) AS known ON true
     CROSS JOIN LATERAL tireless.pull_request_text(j) AS pr
     WHERE d.job_id = w.job_id
       -- Per issue its newest delivery still to write: its push carries the older ones.
       AND NOT EXISTS (SELECT FROM tireless.forge_write n
                        WHERE n.kind = 'pull' AND (n.forge, n.owner, n.repo, n.number) = (w.forge, w.owner, w.repo, w.number)
                          AND n.written_at IS NULL AND n.job_id > w.job_id);
$$;

--
-- Name: FUNCTION pull_write(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.pull_write(w tireless.forge_write) IS 'What a pull request write (kind pull) does, as tireless.forge_writes_due lists it, for the issue''s newest delivery not yet written (null for an older one: the newest carries its push): {job_id, number, action (open: no pull request known for the branch; update: pull_number, the one last recorded, which may have been closed since), pull_number, head_branch, head, base_branch, title, body (tireless.pull_request_text), marker (the line the body ends with), draft}.';

--
-- Name: pull_written(tireless.forge_write, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.pull_written(w tireless.forge_write, result jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $_$
DECLARE
    pushed tireless.delivery;
    given_number integer;
    given_url text := pull_written.result ->> 'pull_url';
BEGIN
    IF jsonb_typeof(pull_written.result -> 'pull_number') = 'number'
       AND (pull_written.result ->> 'pull_number') ~ '^[0-9]{1,9}$' THEN
        given_number := (pull_written.result ->> 'pull_number')::integer;
    END IF;
    IF given_number IS NULL OR given_number <= 0 THEN
        RAISE EXCEPTION 'pull_number must be a positive integer, got %', coalesce(pull_written.result ->> 'pull_number', 'null')
            USING ERRCODE = 'TL009';
    END IF;
    IF given_url IS NULL OR given_url !~ '^https?://[^\x01-\x20\x7f-\x9f]+$' OR length(given_url) > 2000 THEN
        RAISE EXCEPTION 'pull_url must be an http(s) URL of at most 2000 characters, got %',
            coalesce(quote_literal(left(given_url, 300)), 'null') USING ERRCODE = 'TL009';
    END IF;
    -- The pull request shows this push and every older one of the branch still waiting: those
    -- deliveries are in it too, and their writes are done.
    SELECT * INTO pushed FROM tireless.delivery d WHERE d.job_id = w.job_id;
    UPDATE tireless.delivery d
       SET pull_number = given_number, pull_url = given_url, pull_known_at = now()
     WHERE (d.forge, d.owner, d.repo, d.number) = (pushed.forge, pushed.owner, pushed.repo, pushed.number)
       AND d.branch = pushed.branch
       AND (d.job_id = pushed.job_id
            OR (d.job_id < pushed.job_id
                AND EXISTS (SELECT FROM tireless.forge_write p
                             WHERE p.kind = 'pull' AND p.job_id = d.job_id AND p.written_at IS NULL)));
    UPDATE tireless.forge_write p
       SET written_at = now(), failures = 0, last_error = NULL, last_error_at = NULL
     WHERE p.kind = 'pull' AND (p.forge, p.owner, p.repo, p.number) = (w.forge, w.owner, w.repo, w.number)
       AND p.job_id < w.job_id AND p.written_at IS NULL
       AND EXISTS (SELECT FROM tireless.delivery d WHERE d.job_id = p.job_id AND d.branch = pushed.branch);
END;
$_$;

--
-- Name: FUNCTION pull_written(w tireless.forge_write, result jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.pull_written(w tireless.forge_write, result jsonb) IS 'The forge opened, found or updated the pull request of write w''s delivery (result: {pull_number, pull_url}): recorded on the delivery, and on the older deliveries of the branch still waiting for theirs (the pull request carries their pushes), whose writes are done too. TL009 for a malformed pull_number or pull_url.';

--
-- Name: queue_activity(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.queue_activity(span interval) RETURNS TABLE(bucket timestamp with time zone, lane text, pending bigint, claimed bigint, delivered bigint, failed bigint, cancelled bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH frame AS (
          SELECT tireless.activity_grain(queue_activity.span) AS grain,
             date_bin(tireless.activity_grain(queue_activity.span), now(), '2000-01-01 00:00:00+00'::timestamp with time zone) AS last
         ), counted AS (
          SELECT a.bucket,
             a.lane,
             sum(a.pending_delta) AS pending_delta,
             sum(a.claimed_delta) AS claimed_delta,
             sum(a.delivered) AS delivered,
             sum(a.failed) AS failed,
             sum(a.cancelled) AS cancelled
            FROM ( SELECT a_1.bucket,
                     a_1.lane,
                     a_1.pending_delta,
                     a_1.claimed_delta,
                     a_1.delivered,
                     a_1.failed,
                     a_1.cancelled
                    FROM (tireless.activity_count a_1
                      JOIN frame f ON (((a_1.grain = f.grain) AND (a_1.bucket > (f.last - queue_activity.span)))))
                 UNION ALL
                  SELECT date_bin(f.grain, m.at, '2000-01-01 00:00:00+00'::timestamp with time zone) AS date_bin,
                     m.lane,
                     (((m.to_state = 'pending'::tireless.job_state))::integer - (COALESCE((m.from_state = 'pending'::tireless.job_state), false))::integer),
                     (((m.to_state = 'claimed'::tireless.job_state))::integer - (COALESCE((m.from_state = 'claimed'::tireless.job_state), false))::integer),
                     ((m.to_state = 'delivered'::tireless.job_state))::integer AS int4,
                     ((m.to_state = 'failed'::tireless.job_state))::integer AS int4,
                     ((m.to_state = 'cancelled'::tireless.job_state))::integer AS int4
                    FROM (frame f
                      CROSS JOIN tireless.history_moves(( SELECT r.counted_to
                            FROM tireless.history_rollup r), NULL::bigint) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran))
                   WHERE (date_bin(f.grain, m.at, '2000-01-01 00:00:00+00'::timestamp with time zone) > (f.last - queue_activity.span))) a
           GROUP BY a.bucket, a.lane
         ), live AS (
          SELECT j.lane,
             count(*) FILTER (WHERE (j.state = 'pending'::tireless.job_state)) AS pending,
             count(*) FILTER (WHERE (j.state = 'claimed'::tireless.job_state)) AS claimed
            FROM tireless.job j
           WHERE (j.state = ANY (ARRAY['pending'::tireless.job_state, 'claimed'::tireless.job_state]))
           GROUP BY j.lane
         ), lanes AS (
          SELECT c.lane
            FROM counted c
         UNION
          SELECT v_1.lane
            FROM live v_1
         ), grid AS (
          SELECT s.bucket,
             l.lane,
             COALESCE(c.pending_delta, (0)::numeric) AS pending_delta,
             COALESCE(c.claimed_delta, (0)::numeric) AS claimed_delta,
             COALESCE(c.delivered, (0)::numeric) AS delivered,
             COALESCE(c.failed, (0)::numeric) AS failed,
             COALESCE(c.cancelled, (0)::numeric) AS cancelled
            FROM (((frame f
              CROSS JOIN LATERAL generate_series(((f.last - queue_activity.span) + f.grain), f.last, f.grain) s(bucket))
              CROSS JOIN lanes l)
              LEFT JOIN counted c ON (((c.bucket = s.bucket) AND (c.lane = l.lane))))
         )
  SELECT g.bucket,
     g.lane,
     (GREATEST((0)::numeric, ((COALESCE(v.pending, (0)::bigint))::numeric - COALESCE(sum(g.pending_delta) OVER later, (0)::numeric))))::bigint AS "greatest",
     (GREATEST((0)::numeric, ((COALESCE(v.claimed, (0)::bigint))::numeric - COALESCE(sum(g.claimed_delta) OVER later, (0)::numeric))))::bigint AS "greatest",
     (g.delivered)::bigint AS delivered,
     (g.failed)::bigint AS failed,
     (g.cancelled)::bigint AS cancelled
    FROM (grid g
      LEFT JOIN live v ON ((v.lane = g.lane)))
   WINDOW later AS (PARTITION BY g.lane ORDER BY g.bucket DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
   ORDER BY g.lane, g.bucket;
END;

--
-- Name: FUNCTION queue_activity(span interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.queue_activity(span interval) IS 'Each lane over the last span (at most 8 days) in buckets of a minute (span up to 2 hours) or an hour: its pending and claimed jobs at the end of each bucket and the jobs that ended delivered, failed or cancelled in it. Reads the folded buckets, the history written since the last tireless.roll_up_history() and the live jobs; writes nothing (a hot standby answers it). A job re-routed to another lane while pending counts in the lane it had when the rollup read its event.';

--
-- Name: record_attempt_usage(bigint, text, bigint, double precision, integer, bigint, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_attempt_usage(job_id bigint, worker text, peak_memory bigint, cpu_seconds double precision, peak_processes integer, workspace_bytes bigint, limit_reached text DEFAULT NULL::text, token uuid DEFAULT NULL::uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: FUNCTION record_attempt_usage(job_id bigint, worker text, peak_memory bigint, cpu_seconds double precision, peak_processes integer, workspace_bytes bigint, limit_reached text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_attempt_usage(job_id bigint, worker text, peak_memory bigint, cpu_seconds double precision, peak_processes integer, workspace_bytes bigint, limit_reached text, token uuid) IS 'The holder records what its attempt used once COMMAND ended: peak memory (bytes), CPU seconds, the most processes alive at once, the workspace''s final size (bytes), each null when not measured, and the limit that stopped it (memory, pids, disk; null: none); recorded again, the last one stands. TL001 for an unknown job, TL004 when worker (or token) does not hold it, TL005 for a negative figure or an unknown limit.';

--
-- Name: record_checkpoint(bigint, text, text, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_checkpoint(job_id bigint, worker text, ref text, commit text, token uuid DEFAULT NULL::uuid) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job;
    branch text;
    result timestamptz;
BEGIN
    PERFORM tireless.check_ref_name('ref', record_checkpoint.ref);
    PERFORM tireless.check_commit_id('commit', record_checkpoint.commit);
    job := tireless.held_job(record_checkpoint.job_id, record_checkpoint.worker, record_checkpoint.token);
    SELECT p.branch INTO branch FROM tireless.issue_push(job.forge, job.owner, job.repo, job.number) p;
    IF record_checkpoint.ref IN (branch, 'refs/heads/' || branch) THEN
        RAISE EXCEPTION 'ref % is the pull request''s branch; a checkpoint goes to a ref of its own',
            quote_literal(record_checkpoint.ref)
            USING ERRCODE = 'TL009', HINT = 'Push checkpoints to a ref such as refs/tireless/checkpoints/<job id>-<attempt id>.';
    END IF;
    INSERT INTO tireless.checkpoint AS c (job_id, attempt, ref, commit)
    VALUES (job.id, job.attempts, record_checkpoint.ref, record_checkpoint.commit)
    ON CONFLICT ON CONSTRAINT checkpoint_pkey DO UPDATE
       SET attempt = excluded.attempt, ref = excluded.ref, commit = excluded.commit, recorded_at = now()
    RETURNING c.recorded_at INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION record_checkpoint(job_id bigint, worker text, ref text, commit text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_checkpoint(job_id bigint, worker text, ref text, commit text, token uuid) IS 'The holder pushed its workspace''s commits so far to ref (a ref of tireless''s own, never the pull request''s branch) at commit: kept as the job''s last checkpoint, with the attempt, replacing the one before; job_brief hands it to the job''s later attempts. Returns the time recorded. TL009 for a malformed ref or commit, or the pull request''s branch; TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';

--
-- Name: record_conversation(text, text, text, text, text, jsonb, timestamp with time zone, text, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_conversation(forge text, owner text, repo text, poller text, login text, asks jsonb, comments_cursor timestamp with time zone DEFAULT NULL::timestamp with time zone, comments_etag text DEFAULT NULL::text, pulls jsonb DEFAULT '[]'::jsonb, OUT asked integer, OUT refused integer, OUT created integer, OUT stopped integer, OUT skipped text[]) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    item record;
    problem text;
    judged text;
    read_from timestamptz;
BEGIN
    IF jsonb_typeof(record_conversation.asks) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'asks must be a JSON array, got %', left(coalesce(record_conversation.asks::text, 'null'), 100)
            USING ERRCODE = 'TL010';
    END IF;
    IF jsonb_array_length(record_conversation.asks) > 10000 THEN
        RAISE EXCEPTION 'a batch holds at most 10000 asks, got %', jsonb_array_length(record_conversation.asks)
            USING ERRCODE = 'TL010';
    END IF;
    IF jsonb_typeof(record_conversation.pulls) IS DISTINCT FROM 'array'
       OR jsonb_path_exists(record_conversation.pulls, '$[*] ? (@.type() != "object" || @.pull.type() != "number")') THEN
        RAISE EXCEPTION 'pulls must be a JSON array of {pull, reviews_etag?, read_to?, checks_head?}, got %',
            left(coalesce(record_conversation.pulls::text, 'null'), 100) USING ERRCODE = 'TL010';
    END IF;
    IF length(record_conversation.comments_etag) > 1000 THEN
        RAISE EXCEPTION 'comments_etag must be at most 1000 characters, got %', length(record_conversation.comments_etag)
            USING ERRCODE = 'TL005';
    END IF;
    IF length(record_conversation.login) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'login must be tireless''s own account on the forge (null: unknown), got %',
            coalesce(quote_literal(left(record_conversation.login, 220)), 'null') USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_conversation.forge, record_conversation.owner, record_conversation.repo,
                               record_conversation.poller);
    PERFORM tireless.lock_repo_issues(record_conversation.forge, record_conversation.owner, record_conversation.repo);
    INSERT INTO tireless.conversation_read (forge, owner, repo)
    VALUES (record_conversation.forge, record_conversation.owner, record_conversation.repo)
    ON CONFLICT DO NOTHING;
    SELECT r.comments_cursor INTO read_from FROM tireless.conversation_read r
     WHERE (r.forge, r.owner, r.repo) = (record_conversation.forge, record_conversation.owner, record_conversation.repo)
       FOR UPDATE;

    asked := 0;
    refused := 0;
    stopped := 0;
    skipped := '{}';
    FOR item IN
        SELECT e.value, e.position - 1 AS position
          FROM jsonb_array_elements(record_conversation.asks) WITH ORDINALITY AS e(value, position)
         ORDER BY CASE WHEN tireless.ask_problem(e.value) IS NULL THEN e.value ->> 'created_at' END, e.position
    LOOP
        problem := tireless.ask_problem(item.value);
        IF problem IS NOT NULL THEN
            -- Input from a forge: one odd item is reported and skipped, never blocks the others.
            skipped := skipped || format('ask at index %s: %s', item.position, problem);
            CONTINUE;
        END IF;
        judged := tireless.judge_ask(record_conversation.forge, record_conversation.owner, record_conversation.repo,
                                     record_conversation.login, item.value, read_from);
        asked := asked + coalesce(judged IN ('waiting', 'done'), false)::integer;
        refused := refused + coalesce(judged = 'refused', false)::integer;
        stopped := stopped + coalesce(judged = 'done', false)::integer;
    END LOOP;

    UPDATE tireless.conversation_read r
       SET comments_cursor = greatest(r.comments_cursor, record_conversation.comments_cursor),
           comments_etag = coalesce(record_conversation.comments_etag, r.comments_etag)
     WHERE (r.forge, r.owner, r.repo) = (record_conversation.forge, record_conversation.owner, record_conversation.repo);
    INSERT INTO tireless.pull_read AS pr (forge, owner, repo, pull_number, reviews_etag, read_to, checks_head)
    SELECT record_conversation.forge, record_conversation.owner, record_conversation.repo, (p ->> 'pull')::integer,
           left(p ->> 'reviews_etag', 1000),
           CASE WHEN tireless.is_forge_timestamp(p ->> 'read_to') THEN (p ->> 'read_to')::timestamptz END,
           CASE WHEN tireless.is_commit_id(p ->> 'checks_head') THEN p ->> 'checks_head' END
      FROM jsonb_array_elements(record_conversation.pulls) AS p
    ON CONFLICT ON CONSTRAINT one_read_per_pull DO UPDATE
       SET reviews_etag = coalesce(excluded.reviews_etag, pr.reviews_etag),
           read_to = greatest(excluded.read_to, pr.read_to),
           checks_head = coalesce(excluded.checks_head, pr.checks_head);

    created := tireless.answer_waiting_asks(record_conversation.forge, record_conversation.owner, record_conversation.repo);
END;
$_$;

--
-- Name: FUNCTION record_conversation(forge text, owner text, repo text, poller text, login text, asks jsonb, comments_cursor timestamp with time zone, comments_etag text, pulls jsonb, OUT asked integer, OUT refused integer, OUT created integer, OUT stopped integer, OUT skipped text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_conversation(forge text, owner text, repo text, poller text, login text, asks jsonb, comments_cursor timestamp with time zone, comments_etag text, pulls jsonb, OUT asked integer, OUT refused integer, OUT created integer, OUT stopped integer, OUT skipped text[]) IS 'What a poller holding the repository''s poll lease read of its conversation, in one transaction: asks, a JSON array of {source: review|comment|checks, id, number (the pull request or issue it was made on), author, permission (admin|write|read|none), created_at, body, state (a review''s), comments [{path, line, body}], head and checks [{name, state: passed|failed|pending, summary, url}] (checks)}, each judged by judge_ask (login: tireless''s own account, whose words never ask; null when the forge would not say); then a job for each issue whose asks wait and that has no live job. Stores the comments cursor (never moved back) and ETag, and per pull request {pull, reviews_etag, read_to, checks_head}. A malformed ask is skipped and reported in skipped. Returns asked, refused, created, stopped. TL010 when asks or pulls is not an array, TL004 without the lease, TL008 for an untracked repository.';

--
-- Name: record_exchange(bigint, text, uuid, text, text, integer, bytea, bytea, bigint, bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_exchange(job_id bigint, worker text, token uuid, api text, model text, status integer, request bytea, answer bytea, request_bytes bigint, answer_bytes bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job;
    kept bigint;
    whole boolean;
BEGIN
    IF record_exchange.api IS NULL OR record_exchange.api NOT IN ('anthropic', 'chat', 'responses')
       OR record_exchange.model IS NULL OR length(record_exchange.model) NOT BETWEEN 1 AND 200
       OR record_exchange.status IS NULL OR record_exchange.status NOT BETWEEN 100 AND 999
       OR record_exchange.request_bytes IS NULL OR record_exchange.request_bytes < 0
       OR record_exchange.answer_bytes IS NULL OR record_exchange.answer_bytes < 0
       OR (record_exchange.request IS NULL) <> (record_exchange.answer IS NULL) THEN
        RAISE EXCEPTION 'an exchange is {api (anthropic, chat or responses), model, status, request and answer (both or '
                        'neither), their sizes}, got api %, model %, status %, sizes % and %',
            coalesce(quote_literal(left(record_exchange.api, 50)), 'null'),
            coalesce(quote_literal(left(record_exchange.model, 220)), 'null'),
            coalesce(record_exchange.status::text, 'null'), coalesce(record_exchange.request_bytes::text, 'null'),
            coalesce(record_exchange.answer_bytes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    job := tireless.held_job(record_exchange.job_id, record_exchange.worker, record_exchange.token);
    SELECT coalesce(sum(e.request_bytes + e.answer_bytes) FILTER (WHERE e.request IS NOT NULL), 0) INTO kept
      FROM tireless.model_exchange e WHERE e.job_id = job.id AND e.attempt = job.attempts;
    whole := record_exchange.request IS NOT NULL
             AND kept + record_exchange.request_bytes + record_exchange.answer_bytes <= tireless.transcript_limit();
    INSERT INTO tireless.model_exchange (job_id, attempt, seq, api, model, status, request, answer, request_bytes,
                                         answer_bytes)
    SELECT job.id, job.attempts,
           coalesce((SELECT max(e.seq) FROM tireless.model_exchange e WHERE e.job_id = job.id AND e.attempt = job.attempts), 0) + 1,
           record_exchange.api, record_exchange.model, record_exchange.status,
           CASE WHEN whole THEN record_exchange.request END, CASE WHEN whole THEN record_exchange.answer END,
           record_exchange.request_bytes, record_exchange.answer_bytes;
    RETURN whole;
END;
$$;

--
-- Name: FUNCTION record_exchange(job_id bigint, worker text, token uuid, api text, model text, status integer, request bytea, answer bytea, request_bytes bigint, answer_bytes bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_exchange(job_id bigint, worker text, token uuid, api text, model text, status integer, request bytea, answer bytea, request_bytes bigint, answer_bytes bigint) IS 'The holder''s gateway adds an exchange to its attempt''s transcript: the API, the model, the answer''s status, the request and the answer (masked, compressed; null for one the gateway did not keep) and their sizes before compression. Kept whole while the attempt''s kept exchanges stay within tireless.transcript_limit(), else its sizes only (cut). Returns whether it was kept whole. TL005 for a malformed exchange; TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';

--
-- Name: record_exit(bigint, text, integer, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_exit(job_id bigint, worker text, exit_status integer, token uuid DEFAULT NULL::uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job := tireless.held_job(record_exit.job_id, record_exit.worker, record_exit.token);
BEGIN
    IF record_exit.exit_status IS NULL THEN
        RAISE EXCEPTION 'exit_status must be a number, got null' USING ERRCODE = 'TL005';
    END IF;
    INSERT INTO tireless.attempt_exit AS x (job_id, attempt, exit_status)
    VALUES (job.id, job.attempts, record_exit.exit_status)
    ON CONFLICT ON CONSTRAINT attempt_exit_pkey DO UPDATE SET exit_status = excluded.exit_status, recorded_at = now();
END;
$$;

--
-- Name: FUNCTION record_exit(job_id bigint, worker text, exit_status integer, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_exit(job_id bigint, worker text, exit_status integer, token uuid) IS 'The holder records how COMMAND ended in its attempt (its exit status; negative: the signal that ended it), before it finishes the attempt; recorded again, the last one stands. TL001 for an unknown job, TL004 when worker (or token) does not hold it, TL005 for a null status.';

--
-- Name: record_forge_dependencies(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_forge_dependencies(issues jsonb) RETURNS jsonb
    LANGUAGE sql
    AS $$
    WITH given AS (
        -- An issue listed twice in one batch counts once: its last listing wins (as apply_work_rule).
        SELECT DISTINCT ON (forge, owner, repo, number)
               e.issue ->> 'forge' AS forge, e.issue ->> 'owner' AS owner, e.issue ->> 'repo' AS repo,
               (e.issue ->> 'number')::integer AS number, e.issue -> 'depends_on' AS depends_on
          FROM jsonb_array_elements(record_forge_dependencies.issues) WITH ORDINALITY AS e(issue, position)
         WHERE e.issue ? 'depends_on'
         ORDER BY forge, owner, repo, number, e.position DESC
    ), tracked AS (
        -- Issues of untracked repositories are ignored, as the work rule ignores them.
        SELECT g.* FROM given g
          JOIN tireless.tracked_repo t ON (t.forge, t.owner, t.repo) = (g.forge, g.owner, g.repo)
    ), named AS (
        -- A repository the forge spells in another case than it is tracked under is the tracked one.
        SELECT r.forge, r.owner, r.repo, r.number,
               coalesce(tr.owner, d.entry ->> 'owner') AS depends_on_owner, coalesce(tr.repo, d.entry ->> 'repo') AS depends_on_repo,
               (d.entry ->> 'number')::integer AS depends_on_number
          FROM tracked r
         CROSS JOIN jsonb_array_elements(r.depends_on) AS d(entry)
          LEFT JOIN tireless.tracked_repo tr
                 ON (tr.forge, lower(tr.owner), lower(tr.repo)) = (r.forge, lower(d.entry ->> 'owner'), lower(d.entry ->> 'repo'))
    ), wanted AS (
        SELECT DISTINCT n.* FROM named n
         WHERE (n.depends_on_owner, n.depends_on_repo, n.depends_on_number) IS DISTINCT FROM (n.owner, n.repo, n.number)
    ), dropped AS (
        DELETE FROM tireless.issue_dependency d
         USING tracked r
         WHERE (d.forge, d.owner, d.repo, d.number) = (r.forge, r.owner, r.repo, r.number) AND d.source = 'forge'
           AND NOT EXISTS (SELECT FROM wanted w
                            WHERE (w.forge, w.owner, w.repo, w.number, w.depends_on_owner, w.depends_on_repo, w.depends_on_number)
                                  = (d.forge, d.owner, d.repo, d.number, d.depends_on_owner, d.depends_on_repo, d.depends_on_number))
        RETURNING d.forge, d.owner, d.repo, d.number
    ), added AS (
        INSERT INTO tireless.issue_dependency (forge, owner, repo, number, depends_on_owner, depends_on_repo, depends_on_number, source)
        SELECT w.forge, w.owner, w.repo, w.number, w.depends_on_owner, w.depends_on_repo, w.depends_on_number, 'forge'
          FROM wanted w
        ON CONFLICT DO NOTHING
        RETURNING forge, owner, repo, number
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('forge', c.forge, 'owner', c.owner, 'repo', c.repo,
                                                 'number', c.number, 'body', false)), '[]')
      FROM (SELECT * FROM dropped UNION SELECT * FROM added) AS c;
$$;

--
-- Name: FUNCTION record_forge_dependencies(issues jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_forge_dependencies(issues jsonb) IS 'For each issue of a checked batch given with "depends_on" ([{owner, repo, number}] of the same forge, as the poller read the forge''s own relations this round) in a tracked repository: replaces its source = forge rows of issue_dependency (an entry naming the issue itself dropped); an issue without the key keeps those stored. Returns the issues whose relations changed, [{forge, owner, repo, number, body: false}], for settle_dependencies. Private: apply_work_rule calls it.';

--
-- Name: record_forge_trouble(text, text, timestamp with time zone); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_forge_trouble(name text, error text, until timestamp with time zone) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF record_forge_trouble.error IS NOT NULL AND record_forge_trouble.until IS NULL THEN
        RAISE EXCEPTION 'until must say when to ask the forge % again, got null', quote_literal(record_forge_trouble.name)
            USING ERRCODE = 'TL005';
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.forge f WHERE f.name = record_forge_trouble.name) THEN
        RAISE EXCEPTION 'forge % is not registered', coalesce(quote_literal(left(record_forge_trouble.name, 120)), 'null')
            USING ERRCODE = 'TL008', HINT = 'Register it with tireless.add_forge.';
    END IF;
    UPDATE tireless.forge f
       SET limited_until = CASE WHEN record_forge_trouble.error IS NOT NULL THEN record_forge_trouble.until END,
           last_error = left(btrim(record_forge_trouble.error, E' \t\r\n'), 2000)
     WHERE f.name = record_forge_trouble.name
       AND (f.limited_until, f.last_error) IS DISTINCT FROM
           (CASE WHEN record_forge_trouble.error IS NOT NULL THEN record_forge_trouble.until END,
            left(btrim(record_forge_trouble.error, E' \t\r\n'), 2000));
END;
$$;

--
-- Name: FUNCTION record_forge_trouble(name text, error text, until timestamp with time zone); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_forge_trouble(name text, error text, until timestamp with time zone) IS 'A rate limit or an auth failure: no repository of the forge is read before until, and error says why; a null error clears the stop. TL008 for a forge that is not registered.';

--
-- Name: record_forge_write(text, text, text, text, bigint, text, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_forge_write(forge text, owner text, repo text, poller text, id bigint, error text DEFAULT NULL::text, result jsonb DEFAULT NULL::jsonb) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    queued tireless.forge_write;
    standing boolean := false;
    until timestamptz;
BEGIN
    IF record_forge_write.error IS NOT NULL AND btrim(record_forge_write.error) = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', quote_literal(record_forge_write.error) USING ERRCODE = 'TL005';
    END IF;
    IF record_forge_write.error IS NOT NULL AND record_forge_write.result IS NOT NULL THEN
        RAISE EXCEPTION 'a failed write has no result: give error, or result' USING ERRCODE = 'TL005';
    END IF;
    IF record_forge_write.result IS NOT NULL AND jsonb_typeof(record_forge_write.result) <> 'object' THEN
        RAISE EXCEPTION 'result must be a JSON object, got %', left(record_forge_write.result::text, 300) USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_forge_write.forge, record_forge_write.owner, record_forge_write.repo,
                               record_forge_write.poller);
    SELECT * INTO queued FROM tireless.forge_write w
     WHERE w.id = record_forge_write.id
       AND (w.forge, w.owner, w.repo) = (record_forge_write.forge, record_forge_write.owner, record_forge_write.repo)
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no forge write % queued for %/%/%', coalesce(record_forge_write.id::text, 'null'),
            record_forge_write.forge, record_forge_write.owner, record_forge_write.repo
            USING ERRCODE = 'TL005', HINT = 'Record the writes forge_writes_due returned.';
    END IF;
    IF queued.written_at IS NOT NULL THEN
        RETURN NULL;  -- recorded twice (an answer lost, or another poller's): it landed once
    END IF;
    IF record_forge_write.error IS NOT NULL THEN
        until := now() + tireless.forge_write_backoff(queued.failures);
        UPDATE tireless.forge_write w
           SET failures = w.failures + 1, next_try_at = until,
               last_error = left(btrim(record_forge_write.error), 2000), last_error_at = now()
         WHERE w.id = queued.id;
        RETURN until;
    END IF;
    -- What the forge answered, recorded by the write's kind; a checklist stands while it may change.
    CASE queued.kind
        WHEN 'pull' THEN PERFORM tireless.pull_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'task' THEN PERFORM tireless.task_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'comment' THEN PERFORM tireless.comment_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'cycle' THEN PERFORM tireless.cycle_written(queued);
        WHEN 'checklist' THEN standing := tireless.checklist_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'reply' THEN PERFORM tireless.reply_written(queued);
        WHEN 'unknown_label' THEN PERFORM tireless.unknown_label_written(queued);
    END CASE;
    UPDATE tireless.forge_write w
       SET written_at = CASE WHEN standing THEN NULL ELSE coalesce(w.written_at, now()) END,
           failures = 0, next_try_at = now(), last_error = NULL, last_error_at = NULL
     WHERE w.id = queued.id;
    PERFORM tireless.repo_writable(queued.forge, queued.owner, queued.repo);
    RETURN NULL;
END;
$$;

--
-- Name: FUNCTION record_forge_write(forge text, owner text, repo text, poller text, id bigint, error text, result jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_forge_write(forge text, owner text, repo text, poller text, id bigint, error text, result jsonb) IS 'The forge''s answer to forge write id. error null: it landed, with result (pull: {pull_number, pull_url}; task: {number} of the child issue; comment: {checklist} it holds, if any; checklist: {checklist} it now shows; cycle, reply and label: none) recorded by its kind''s function (tireless.pull_written and the others); never listed again, but a checklist with an unchecked child, listed again when the children change; returns null, also for a write recorded before. Or it failed (error): counted, backed off by tireless.forge_write_backoff; returns when it is tried again; the other writes go on. TL004 without the poll lease, TL005 for a write never queued, a blank error or both error and result, TL009 for a malformed pull request.';

--
-- Name: record_issue_gone(text, text, text, text, integer, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    ended integer;
BEGIN
    IF record_issue_gone.number IS NULL OR record_issue_gone.number < 1 THEN
        RAISE EXCEPTION 'number must be a positive issue number, got %', coalesce(record_issue_gone.number::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF record_issue_gone.note IS NULL OR btrim(record_issue_gone.note) = '' THEN
        RAISE EXCEPTION 'note must say how the issue went, got %', coalesce(quote_literal(record_issue_gone.note), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_issue_gone.forge, record_issue_gone.owner, record_issue_gone.repo,
                               record_issue_gone.poller);
    PERFORM tireless.lock_repo_issues(record_issue_gone.forge, record_issue_gone.owner, record_issue_gone.repo);
    -- The issue is not in this repository any more: its request is withdrawn, and the mirror writes to it no more.
    UPDATE tireless.issue s
       SET state = 'closed', asks_since = NULL, changed_at = now(),
           gone_at = coalesce(s.gone_at, now()), gone_note = left(btrim(record_issue_gone.note), 2000)
     WHERE (s.forge, s.owner, s.repo, s.number)
           = (record_issue_gone.forge, record_issue_gone.owner, record_issue_gone.repo, record_issue_gone.number);
    UPDATE tireless.job j
       SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
           note = left(btrim(record_issue_gone.note), 2000),
           cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
           cancel_note = CASE WHEN j.state = 'claimed' THEN left(btrim(record_issue_gone.note), 2000) END,
           updated_at = now()
     WHERE (j.forge, j.owner, j.repo, j.number)
           = (record_issue_gone.forge, record_issue_gone.owner, record_issue_gone.repo, record_issue_gone.number)
       AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL));
    GET DIAGNOSTICS ended = ROW_COUNT;
    RETURN ended;
END;
$$;

--
-- Name: FUNCTION record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text) IS 'An issue the forge says is gone (404 or 410: deleted; a redirect to another repository: moved, as GitHub answers 301 for a transferred issue): its request is withdrawn, its pending job cancelled and its claimed job asked to stop, the note saying how it went; the issue is marked gone (gone_at, gone_note), so the mirror''s due functions list no write for it until a listing shows it again. Returns how many jobs it ended. TL004 without the poll lease, TL008 for an untracked repository.';

--
-- Name: record_issue_moved(text, text, text, text, integer, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN tireless.record_issue_gone(forge, owner, repo, poller, number, note);

--
-- Name: FUNCTION record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text) IS 'An issue the forge says has moved out of the repository (GitHub answers 301 for a transferred issue): tireless.record_issue_gone, the note saying where it went; returns how many jobs it ended. TL004 without the poll lease, TL008 for an untracked repository.';

--
-- Name: record_job_event(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_job_event() RETURNS trigger
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

--
-- Name: FUNCTION record_job_event(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_job_event() IS 'Trigger: appends the change of state of a job to tireless.job_event, with the login that made it.';

--
-- Name: record_job_network(bigint, text, uuid, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_job_network(job_id bigint, worker text, token uuid, hosts jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: FUNCTION record_job_network(job_id bigint, worker text, token uuid, hosts jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_job_network(job_id bigint, worker text, token uuid, hosts jsonb) IS 'The holder records what its attempt''s agent reached and was refused: a JSON array of {host, port, allowed, requests, bytes_in, bytes_out, reason} (a reason when and only when refused; never a payload; host and reason cut to 255 and 500 characters), rows of one host, port and outcome added up. Replaces what the attempt recorded before, so the holder may record as it goes and at the end. Returns how many rows it keeps. TL005 naming a malformed row; TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';

--
-- Name: record_lane_outcome(text, boolean); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_lane_outcome(lane text, succeeded boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF succeeded THEN
        -- Written only when there is something to reset, so deliveries do not contend on the lane row.
        UPDATE tireless.lane l SET consecutive_failures = 0, tripped_until = NULL
         WHERE l.name = record_lane_outcome.lane
           AND (l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL);
        RETURN;
    END IF;
    INSERT INTO tireless.lane AS l (name, consecutive_failures, tripped_until)
    SELECT record_lane_outcome.lane, 1,
           CASE WHEN p.breaker_threshold <= 1 THEN now() + p.breaker_cooldown END
      FROM tireless.policy p
    ON CONFLICT (name) DO UPDATE
       SET consecutive_failures = l.consecutive_failures + 1,
           tripped_until = CASE
               WHEN l.consecutive_failures + 1 >= (SELECT p.breaker_threshold FROM tireless.policy p)
               THEN now() + (SELECT p.breaker_cooldown FROM tireless.policy p)
               ELSE l.tripped_until END;
END;
$$;

--
-- Name: FUNCTION record_lane_outcome(lane text, succeeded boolean); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_lane_outcome(lane text, succeeded boolean) IS 'Circuit breaker bookkeeping: a success closes the lane''s breaker; a failure counts, and the threshold-th consecutive one trips the lane for the cool-down.';

--
-- Name: record_mirror_failure(text, text, text, text, integer, bigint, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_mirror_failure(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    queued tireless.mirror_issue;
    until timestamptz;
BEGIN
    IF record_mirror_failure.error IS NULL OR btrim(record_mirror_failure.error) = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', coalesce(quote_literal(record_mirror_failure.error), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_mirror_failure.forge, record_mirror_failure.owner, record_mirror_failure.repo,
                               record_mirror_failure.poller);
    queued := tireless.mirror_issue_row(record_mirror_failure.forge, record_mirror_failure.owner, record_mirror_failure.repo,
                                     record_mirror_failure.number, record_mirror_failure.job_id, record_mirror_failure.state);
    until := now() + tireless.forge_write_backoff(queued.failures);
    UPDATE tireless.mirror_issue mi
       SET failures = mi.failures + 1, next_try_at = until,
           last_error = left(btrim(record_mirror_failure.error), 2000), last_error_at = now()
     WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (queued.forge, queued.owner, queued.repo, queued.number);
    RETURN until;
END;
$$;

--
-- Name: FUNCTION record_mirror_failure(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_mirror_failure(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text) IS 'A mirror write to one issue failed: counts it, records the error (trimmed to 2000 characters) and backs that issue off exponentially with jitter; returns when it is tried again. Other issues and the polls go on. TL004 without the poll lease, TL005 for a write never queued.';

--
-- Name: record_mirror_write(text, text, text, text, integer, bigint, text, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_mirror_write(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb DEFAULT NULL::jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    queued tireless.mirror_issue;
    withdrawn boolean;
BEGIN
    PERFORM tireless.held_poll(record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo,
                               record_mirror_write.poller);
    queued := tireless.mirror_issue_row(record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo,
                                     record_mirror_write.number, record_mirror_write.job_id, record_mirror_write.state);
    IF record_mirror_write.issue IS NOT NULL THEN
        PERFORM tireless.check_issue_batch(jsonb_build_array(record_mirror_write.issue));
        IF (record_mirror_write.issue ->> 'forge', record_mirror_write.issue ->> 'owner', record_mirror_write.issue ->> 'repo',
            (record_mirror_write.issue ->> 'number')::integer)
           IS DISTINCT FROM (record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo, record_mirror_write.number) THEN
            RAISE EXCEPTION 'malformed issue: it is not %/%/%#%', record_mirror_write.forge, record_mirror_write.owner,
                record_mirror_write.repo, record_mirror_write.number USING ERRCODE = 'TL006';
        END IF;
    END IF;
    -- What the forge confirmed (an older job or state than wanted leaves the newer one due).
    UPDATE tireless.mirror_issue mi
       SET applied_job_id = record_mirror_write.job_id, applied_state = record_mirror_write.state::tireless.job_state,
           -- The wait as mirror_writes handed it out: it changes only under this repository's poll lease,
           -- or by a dependency of another repository closing at this moment (the next change writes again).
           applied_waiting = mi.waiting AND (mi.job_id, mi.state) = (record_mirror_write.job_id, record_mirror_write.state::tireless.job_state),
           applied_at = now(), failures = 0, next_try_at = now(), last_error = NULL, last_error_at = NULL
     WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (queued.forge, queued.owner, queued.repo, queued.number);
    PERFORM tireless.repo_writable(queued.forge, queued.owner, queued.repo);

    -- A finished job's mode labels are off the issue: its request is withdrawn. The store records it
    -- now, so the next poll sees no change (no job), and a human who adds a mode label again asks again.
    IF tireless.is_terminal(record_mirror_write.state::tireless.job_state) THEN
        -- The issue's row as the last poll left it (a poll of this repository waits for us, or we for it).
        PERFORM tireless.lock_repo_issues(queued.forge, queued.owner, queued.repo);
    END IF;
    withdrawn := tireless.is_terminal(record_mirror_write.state::tireless.job_state)
                 AND record_mirror_write.issue IS NOT NULL
                 AND NOT EXISTS (SELECT FROM tireless.job j
                                  WHERE (j.forge, j.owner, j.repo, j.number) = (queued.forge, queued.owner, queued.repo, queued.number)
                                    AND j.state IN ('pending', 'claimed'))
                 AND NOT EXISTS (SELECT FROM tireless.issue s JOIN tireless.job j ON j.id = record_mirror_write.job_id
                                  WHERE (s.forge, s.owner, s.repo, s.number) = (queued.forge, queued.owner, queued.repo, queued.number)
                                    AND s.asks_since > j.created_at);
    IF withdrawn THEN
        UPDATE tireless.issue s
           SET labels = ARRAY(SELECT l FROM unnest(s.labels) AS l WHERE NOT l = ANY ((tireless.mirror_labels()).mode_labels)),
               asks_since = NULL, answered = false, changed_at = now()
         WHERE (s.forge, s.owner, s.repo, s.number) = (queued.forge, queued.owner, queued.repo, queued.number);
        -- The issue as the forge shows it after the writes, judged by the work rule like a poll: a
        -- mode label still on it is one a person put back after the job was made, a new request.
        PERFORM tireless.apply_work_rule(jsonb_build_array(record_mirror_write.issue));
    END IF;
    RETURN withdrawn;
END;
$$;

--
-- Name: FUNCTION record_mirror_write(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_mirror_write(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb) IS 'The forge confirmed the issue shows job_id in state: recorded as applied, its error cleared. For a finished job with no live successor, given issue (the forge''s issue after the writes, enqueue''s format) and no newer request seen since the job was made, the request is recorded as withdrawn (mode labels off, no longer asking) and issue is judged by the work rule as a poll would (a mode label a person put back is a new request); returns whether it recorded a withdrawal. TL004 without the poll lease, TL005 for a write never queued.';

--
-- Name: record_poll(text, text, text, text, jsonb, timestamp with time zone, text, boolean, integer[], interval, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_poll(forge text, owner text, repo text, poller text, issues jsonb, cursor timestamp with time zone, etag text, full_listing boolean, deleted integer[] DEFAULT '{}'::integer[], next_poll_in interval DEFAULT '00:00:00'::interval, odd jsonb DEFAULT '[]'::jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer, OUT skipped integer) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    outcome record;
    bad record;
    gone integer;
    answered integer;
    kept jsonb;
    left_out jsonb;
BEGIN
    IF record_poll.full_listing IS NULL THEN
        RAISE EXCEPTION 'full_listing must be true or false, got null' USING ERRCODE = 'TL005';
    END IF;
    IF record_poll.next_poll_in IS NULL OR record_poll.next_poll_in < interval '0' OR record_poll.next_poll_in > interval '1 day' THEN
        RAISE EXCEPTION 'next_poll_in must be from 0 to 1 day, got %', coalesce(record_poll.next_poll_in::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF length(record_poll.etag) > 1000 THEN
        RAISE EXCEPTION 'etag must be at most 1000 characters, got %', length(record_poll.etag) USING ERRCODE = 'TL005';
    END IF;
    IF record_poll.deleted IS NULL OR cardinality(record_poll.deleted) > 50000
       OR EXISTS (SELECT FROM unnest(record_poll.deleted) AS d(number) WHERE d.number IS NULL OR d.number < 1) THEN
        RAISE EXCEPTION 'deleted must be an array of at most 50000 positive issue numbers, got %',
            coalesce(left(record_poll.deleted::text, 100), 'null') USING ERRCODE = 'TL005';
    END IF;
    IF record_poll.odd IS NULL OR jsonb_typeof(record_poll.odd) <> 'array' OR jsonb_array_length(record_poll.odd) > 50000
       OR EXISTS (SELECT FROM jsonb_array_elements(record_poll.odd) AS o(item)
                   WHERE CASE WHEN jsonb_typeof(o.item -> 'number') IS DISTINCT FROM 'number'
                                   OR jsonb_typeof(o.item -> 'problem') IS DISTINCT FROM 'string' THEN true
                              ELSE (o.item -> 'number')::numeric NOT BETWEEN 1 AND 2147483647
                                   OR (o.item -> 'number')::numeric <> trunc((o.item -> 'number')::numeric)
                                   OR length(o.item ->> 'problem') NOT BETWEEN 1 AND 500 END) THEN
        RAISE EXCEPTION 'odd must be an array of at most 50000 {"number": issue number, "problem": 1 to 500 characters}, got %',
            coalesce(left(record_poll.odd::text, 200), 'null') USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_poll.forge, record_poll.owner, record_poll.repo, record_poll.poller);
    IF jsonb_typeof(record_poll.issues) IS DISTINCT FROM 'array' THEN
        PERFORM tireless.check_issue_batch(record_poll.issues);  -- raises TL006, naming what came
    END IF;
    -- One odd issue never blocks the rest (issue 36): an issue of this repository whose number the
    -- store can key but which it refuses (issue_problem: 101 labels, a 210-character label, ...) is
    -- left out of the batch and kept in issue_skip with the reason. One it cannot key still refuses
    -- the whole batch (TL006): the poller never sends one.
    SELECT coalesce(jsonb_agg(e.issue ORDER BY e.position) FILTER (WHERE s.problem IS NULL), '[]'),
           coalesce(jsonb_agg(jsonb_build_object('number', (e.issue ->> 'number')::integer, 'problem', s.problem))
                    FILTER (WHERE s.problem IS NOT NULL), '[]')
      INTO kept, left_out
      FROM jsonb_array_elements(record_poll.issues) WITH ORDINALITY AS e(issue, position)
     CROSS JOIN LATERAL (SELECT tireless.issue_problem(e.issue) AS problem) AS p
      LEFT JOIN LATERAL (
         SELECT p.problem
          WHERE p.problem IS NOT NULL
            AND jsonb_typeof(e.issue) = 'object'
            AND (e.issue ->> 'forge', e.issue ->> 'owner', e.issue ->> 'repo')
                IS NOT DISTINCT FROM (record_poll.forge, record_poll.owner, record_poll.repo)
            AND CASE WHEN jsonb_typeof(e.issue -> 'number') = 'number'
                     THEN (e.issue -> 'number')::numeric BETWEEN 1 AND 2147483647
                          AND (e.issue -> 'number')::numeric = trunc((e.issue -> 'number')::numeric)
                     ELSE false END
     ) AS s(problem) ON true;
    record_poll.issues := kept;
    PERFORM tireless.check_issue_batch(record_poll.issues);
    SELECT e.position - 1 AS position, e.issue ->> 'forge' AS forge, e.issue ->> 'owner' AS owner, e.issue ->> 'repo' AS repo
      INTO bad
      FROM jsonb_array_elements(record_poll.issues) WITH ORDINALITY AS e(issue, position)
     WHERE (e.issue ->> 'forge', e.issue ->> 'owner', e.issue ->> 'repo')
           IS DISTINCT FROM (record_poll.forge, record_poll.owner, record_poll.repo)
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: it is of %/%/%, not of the polled repository %/%/%',
            bad.position, bad.forge, bad.owner, bad.repo, record_poll.forge, record_poll.owner, record_poll.repo
            USING ERRCODE = 'TL006';
    END IF;

    PERFORM tireless.lock_repo_issues(record_poll.forge, record_poll.owner, record_poll.repo);
    SELECT * INTO outcome FROM tireless.apply_work_rule(record_poll.issues);

    -- A deleted issue withdraws its request: its pending job is cancelled, its claimed job asked to stop.
    WITH gone_issues AS (
        SELECT DISTINCT d.number FROM unnest(record_poll.deleted) AS d(number)
    ), forgotten AS (
        UPDATE tireless.issue s SET state = 'closed', asks_since = NULL, changed_at = now(),
               gone_at = coalesce(s.gone_at, now()), gone_note = coalesce(s.gone_note, 'issue deleted')
          FROM gone_issues g
         WHERE (s.forge, s.owner, s.repo, s.number) = (record_poll.forge, record_poll.owner, record_poll.repo, g.number)
           AND (s.state <> 'closed' OR s.asks_since IS NOT NULL OR s.gone_at IS NULL)
    ), ended AS (
        UPDATE tireless.job j
           SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
               note = CASE WHEN j.state = 'pending' THEN 'issue deleted' ELSE j.note END,
               cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
               cancel_note = CASE WHEN j.state = 'claimed' THEN 'issue deleted' END,
               updated_at = now()
          FROM gone_issues g
         WHERE (j.forge, j.owner, j.repo, j.number) = (record_poll.forge, record_poll.owner, record_poll.repo, g.number)
           AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL))
        RETURNING j.id
    )
    SELECT count(*) INTO gone FROM ended;

    -- The conversation's asks that wait for a job (record_conversation ran just before, under this
    -- lease): a command on an issue this poll recorded for the first time, or whose live job has ended.
    answered := tireless.answer_waiting_asks(record_poll.forge, record_poll.owner, record_poll.repo);

    -- Dependencies (dependencies.sql): a deleted issue is closed for the issues that depend on it; a
    -- job the asks made above waits like any; a full listing looks again at every waiting job of the
    -- repository (a dependency may have closed elsewhere, or been read since).
    IF cardinality(record_poll.deleted) > 0 OR answered > 0 OR record_poll.full_listing THEN
        PERFORM tireless.settle_dependencies(coalesce(jsonb_agg(jsonb_build_object(
                    'forge', record_poll.forge, 'owner', record_poll.owner, 'repo', record_poll.repo,
                    'number', k.number, 'body', false)), '[]'))
           FROM (SELECT d.number FROM unnest(record_poll.deleted) AS d(number)
                 UNION
                 SELECT j.number FROM tireless.job j
                  WHERE (j.forge, j.owner, j.repo) = (record_poll.forge, record_poll.owner, record_poll.repo)
                    AND j.state = 'pending'
                    AND (j.created_at = now() OR (record_poll.full_listing AND j.waiting_on IS NOT NULL))) AS k;
    END IF;

    UPDATE tireless.repo_poll rp
       SET cursor = greatest(rp.cursor, record_poll.cursor),
           etag = record_poll.etag,
           reads_since_full = CASE WHEN record_poll.full_listing THEN 0 ELSE rp.reads_since_full + 1 END,
           consecutive_failures = 0,
           last_error = NULL,
           backoff_until = NULL,
           last_success_at = now(),
           last_poll_at = now(),
           next_poll_at = now() + CASE WHEN rp.poll_again THEN interval '0' ELSE record_poll.next_poll_in END,
           poll_again = false,
           polled_by = NULL,
           poll_lease_until = NULL
     WHERE (rp.forge, rp.owner, rp.repo) = (record_poll.forge, record_poll.owner, record_poll.repo);

    -- What was left out this time, the poller's (odd: what it could not read as an issue) and the
    -- store's; an issue recorded well-formed, or on a full listing no longer listed, is no longer.
    WITH left_now AS (
        SELECT DISTINCT ON (o.number) o.number, left(o.problem, 500) AS problem
          FROM jsonb_to_recordset(record_poll.odd || left_out) AS o(number integer, problem text)
         ORDER BY o.number
    ), recorded AS (
        INSERT INTO tireless.issue_skip AS s (forge, owner, repo, number, problem)
        SELECT record_poll.forge, record_poll.owner, record_poll.repo, l.number, l.problem FROM left_now l
        ON CONFLICT ON CONSTRAINT issue_skip_pkey DO UPDATE SET problem = excluded.problem, last_seen = now()
        RETURNING s.number
    ), cleared AS (
        DELETE FROM tireless.issue_skip s
         WHERE (s.forge, s.owner, s.repo) = (record_poll.forge, record_poll.owner, record_poll.repo)
           AND s.number NOT IN (SELECT l.number FROM left_now l)
           AND (record_poll.full_listing
                OR s.number IN (SELECT (e.issue ->> 'number')::integer FROM jsonb_array_elements(record_poll.issues) AS e(issue)))
    )
    SELECT count(*) INTO record_poll.skipped FROM recorded;

    record_poll.created := outcome.created + answered;
    record_poll.cancelled := outcome.cancelled + gone;
    record_poll.rerouted := outcome.rerouted;
    record_poll.seen := outcome.seen;
END;
$$;

--
-- Name: FUNCTION record_poll(forge text, owner text, repo text, poller text, issues jsonb, cursor timestamp with time zone, etag text, full_listing boolean, deleted integer[], next_poll_in interval, odd jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer, OUT skipped integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_poll(forge text, owner text, repo text, poller text, issues jsonb, cursor timestamp with time zone, etag text, full_listing boolean, deleted integer[], next_poll_in interval, odd jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer, OUT skipped integer) IS 'What a poller read of one repository, in one transaction: the work rule applied to issues (enqueue''s format and checks; every issue of this repository; one the store refuses whose number it can key is left out and kept in issue_skip with the reason, as are the poller''s odd ones: [{number, problem}], and the rest is recorded), the live jobs of deleted issue numbers cancelled (note issue deleted) and those issues marked gone (the mirror writes to them no more), a job for each open issue whose conversation asks wait and that has no live job (answer_waiting_asks), the cursor (never moved back) and ETag stored, the error cleared, the next poll in next_poll_in, the lease released (due at once when a webhook came during the read: poll_again). Returns created, cancelled, rerouted, seen and skipped (issues left out). TL004 when poller does not hold the repository''s poll lease, TL008 when it is not tracked.';

--
-- Name: record_poll_failure(text, text, text, text, text, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_poll_failure(forge text, owner text, repo text, poller text, error text, retry_after interval DEFAULT NULL::interval) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    poll tireless.repo_poll;
    delay interval;
    until timestamptz;
BEGIN
    IF record_poll_failure.error IS NULL OR btrim(record_poll_failure.error, E' \t\r\n') = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', coalesce(quote_literal(record_poll_failure.error), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF record_poll_failure.retry_after < interval '0' THEN
        RAISE EXCEPTION 'retry_after must not be negative, got %', record_poll_failure.retry_after USING ERRCODE = 'TL005';
    END IF;
    poll := tireless.held_poll(record_poll_failure.forge, record_poll_failure.owner, record_poll_failure.repo,
                               record_poll_failure.poller);
    -- 15 s doubling per consecutive failure, capped at an hour; jitter takes it to between half and all of that.
    delay := least(interval '1 hour', interval '15 seconds' * (2::float8 ^ least(poll.consecutive_failures, 20)))
             * (0.5 + random() / 2);
    until := now() + greatest(delay, coalesce(record_poll_failure.retry_after, interval '0'));
    UPDATE tireless.repo_poll rp
       SET consecutive_failures = rp.consecutive_failures + 1,
           last_error = left(btrim(record_poll_failure.error, E' \t\r\n'), 2000),
           last_error_at = now(),
           last_poll_at = now(),
           backoff_until = until,
           next_poll_at = greatest(rp.next_poll_at, until),
           polled_by = NULL,
           poll_lease_until = NULL
     WHERE (rp.forge, rp.owner, rp.repo) = (poll.forge, poll.owner, poll.repo);
    RETURN until;
END;
$$;

--
-- Name: FUNCTION record_poll_failure(forge text, owner text, repo text, poller text, error text, retry_after interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_poll_failure(forge text, owner text, repo text, poller text, error text, retry_after interval) IS 'A failed read of a repository whose poll lease poller holds: keeps the cursor, counts the failure, records the error (trimmed to 2000 characters), backs off exponentially with jitter (at least retry_after), releases the lease; returns the end of the backoff. TL004 without the lease, TL008 for an untracked repository.';

--
-- Name: record_poll_notice(text, text, text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_poll_notice(forge text, owner text, repo text, poller text, moved_to text, warning text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
BEGIN
    IF length(record_poll_notice.moved_to) > 300 OR record_poll_notice.moved_to !~ '^[^/]+/[^/]+$' THEN
        RAISE EXCEPTION 'moved_to must be owner/name, got %', quote_literal(left(record_poll_notice.moved_to, 300))
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_poll_notice.forge, record_poll_notice.owner, record_poll_notice.repo,
                               record_poll_notice.poller);
    UPDATE tireless.repo_poll rp
       SET moved_to = CASE WHEN lower(record_poll_notice.moved_to) = lower(rp.owner || '/' || rp.repo) THEN NULL
                           ELSE coalesce(record_poll_notice.moved_to, rp.moved_to) END,
           last_warning = coalesce(left(record_poll_notice.warning, 2000), rp.last_warning),
           last_warning_at = CASE WHEN record_poll_notice.warning IS NOT NULL THEN now() ELSE rp.last_warning_at END
     WHERE (rp.forge, rp.owner, rp.repo) = (record_poll_notice.forge, record_poll_notice.owner, record_poll_notice.repo);
END;
$_$;

--
-- Name: FUNCTION record_poll_notice(forge text, owner text, repo text, poller text, moved_to text, warning text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_poll_notice(forge text, owner text, repo text, poller text, moved_to text, warning text) IS 'What a read of a repository whose poll lease poller holds has to report beside its issues: the owner/name the forge now gives it (moved_to; its tracked name clears it) and a warning (say an issue skipped as too large); a null leaves that one as it was. TL004 without the lease, TL008 for an untracked repository.';

--
-- Name: record_pull_outcomes(text, text, text, text, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_pull_outcomes(forge text, owner text, repo text, poller text, pulls jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    problem text;
    bad integer;
    changed integer;
BEGIN
    PERFORM tireless.held_poll(record_pull_outcomes.forge, record_pull_outcomes.owner, record_pull_outcomes.repo,
                               record_pull_outcomes.poller);
    IF jsonb_typeof(record_pull_outcomes.pulls) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'pulls must be a JSON array of pull requests, got %', left(record_pull_outcomes.pulls::text, 100)
            USING ERRCODE = 'TL005';
    END IF;
    SELECT e.n - 1, tireless.pull_fate_problem(e.fate) INTO bad, problem
      FROM jsonb_array_elements(record_pull_outcomes.pulls) WITH ORDINALITY AS e (fate, n)
     WHERE tireless.pull_fate_problem(e.fate) IS NOT NULL
     ORDER BY e.n LIMIT 1;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'pull request % of the batch for %/%/%: %', bad, record_pull_outcomes.forge,
            record_pull_outcomes.owner, record_pull_outcomes.repo, problem
            USING ERRCODE = 'TL005', HINT = 'Nothing of the batch was recorded.';
    END IF;
    -- Only tireless's own pull requests (a delivery's), and only when their fate changed.
    INSERT INTO tireless.pull_outcome AS o (forge, owner, repo, pull_number, state, merged_at, closed_at)
    SELECT DISTINCT ON (f.pull) record_pull_outcomes.forge, record_pull_outcomes.owner, record_pull_outcomes.repo, f.pull,
           CASE WHEN f.state = 'open' THEN 'open' WHEN f.merged_at IS NOT NULL THEN 'merged' ELSE 'closed' END,
           f.merged_at, CASE WHEN f.state = 'closed' THEN f.closed_at END
      FROM jsonb_to_recordset(record_pull_outcomes.pulls) AS f (pull integer, state text, merged_at timestamptz, closed_at timestamptz)
     WHERE EXISTS (SELECT FROM tireless.delivery d
                    WHERE (d.forge, d.owner, d.repo, d.pull_number)
                          = (record_pull_outcomes.forge, record_pull_outcomes.owner, record_pull_outcomes.repo, f.pull))
       -- An open one needs a row only when it was closed before (reopened).
       AND (f.state = 'closed'
            OR EXISTS (SELECT FROM tireless.pull_outcome x
                        WHERE (x.forge, x.owner, x.repo, x.pull_number)
                              = (record_pull_outcomes.forge, record_pull_outcomes.owner, record_pull_outcomes.repo, f.pull)))
     ORDER BY f.pull
    ON CONFLICT ON CONSTRAINT pull_outcome_pkey DO UPDATE
       SET state = excluded.state, merged_at = excluded.merged_at, closed_at = excluded.closed_at, recorded_at = now()
     WHERE (o.state, o.merged_at, o.closed_at) IS DISTINCT FROM (excluded.state, excluded.merged_at, excluded.closed_at);
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END;
$$;

--
-- Name: FUNCTION record_pull_outcomes(forge text, owner text, repo text, poller text, pulls jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_pull_outcomes(forge text, owner text, repo text, poller text, pulls jsonb) IS 'For a poller holding the repository''s poll lease: what its issue listing showed of pull requests ([{pull, state: open|closed, merged_at, closed_at}]), kept for those tireless opened (a delivery''s pull_number): merged, closed unmerged, or open again. Returns how many changed. TL005 names the first malformed element and records nothing; TL004 without the lease, TL008 for an untracked repository.';

--
-- Name: record_push(bigint, text, text, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_push(job_id bigint, worker text, branch text, head text, token uuid DEFAULT NULL::uuid) RETURNS text[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job;
    heads text[];
BEGIN
    PERFORM tireless.check_ref_name('branch', record_push.branch);
    PERFORM tireless.check_commit_id('head', record_push.head);
    job := tireless.held_job(record_push.job_id, record_push.worker, record_push.token);
    INSERT INTO tireless.push (job_id, branch, head) VALUES (job.id, record_push.branch, record_push.head)
    ON CONFLICT ON CONSTRAINT one_record_per_pushed_head DO NOTHING;
    SELECT array_agg(o.head ORDER BY o.at DESC) INTO heads
      FROM (SELECT p.head, max(p.recorded_at) AS at
              FROM tireless.push p JOIN tireless.job j ON j.id = p.job_id
             WHERE (j.forge, j.owner, j.repo, j.number) = (job.forge, job.owner, job.repo, job.number)
               AND p.branch = record_push.branch
             GROUP BY p.head
             UNION ALL
            SELECT d.head, d.delivered_at
              FROM tireless.delivery d
             WHERE (d.forge, d.owner, d.repo, d.number) = (job.forge, job.owner, job.repo, job.number)
               AND d.branch = record_push.branch) o;
    RETURN heads;
END;
$$;

--
-- Name: FUNCTION record_push(job_id bigint, worker text, branch text, head text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_push(job_id bigint, worker text, branch text, head text, token uuid) IS 'The holder is about to push head to its issue''s branch: recorded first, so that a runner dying after the push leaves a commit the next attempt knows as tireless''s own. Returns every head tireless pushed or delivered on that branch for the issue, newest first: the commits a push may go over. TL009 for a malformed branch or head; TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';

--
-- Name: record_repo_archived(text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_repo_archived(forge text, owner text, repo text, poller text) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.held_poll(record_repo_archived.forge, record_repo_archived.owner, record_repo_archived.repo,
                               record_repo_archived.poller);
    INSERT INTO tireless.mirror_repo AS m (forge, owner, repo, archived_at)
    VALUES (record_repo_archived.forge, record_repo_archived.owner, record_repo_archived.repo, now())
    ON CONFLICT ON CONSTRAINT mirror_repo_pkey DO UPDATE SET archived_at = now();
    RETURN now() + interval '1 day';
END;
$$;

--
-- Name: FUNCTION record_repo_archived(forge text, owner text, repo text, poller text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_repo_archived(forge text, owner text, repo text, poller text) IS 'The forge refused a mirror write because the repository is archived (Gitea: 423): for a day the mirror''s due functions list nothing for it (reads go on), then one write is tried again; a write that succeeds clears it. Returns when a write is tried again. TL004 without the poll lease, TL008 for an untracked repository.';

--
-- Name: record_usage(bigint, text, uuid, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.record_usage(job_id bigint, worker text, token uuid, usage jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    job tireless.job;
    item jsonb;
    ordinal bigint;
    counts CONSTANT text[] := ARRAY['requests', 'unread', 'input', 'output', 'cache_read', 'cache_write'];
BEGIN
    IF jsonb_typeof(record_usage.usage) IS DISTINCT FROM 'array' OR jsonb_array_length(record_usage.usage) > 1000 THEN
        RAISE EXCEPTION 'usage must be a JSON array of at most 1000 rows, got %',
            coalesce(left(record_usage.usage::text, 200), 'null') USING ERRCODE = 'TL005';
    END IF;
    FOR item, ordinal IN SELECT e, o FROM jsonb_array_elements(record_usage.usage) WITH ORDINALITY AS x(e, o) LOOP
        IF NOT coalesce(jsonb_typeof(item) = 'object'
                AND jsonb_typeof(item -> 'model') = 'string' AND length(item ->> 'model') BETWEEN 1 AND 200
                AND (SELECT bool_and((item ->> c) ~ '^[0-9]{1,15}$') FROM unnest(counts) AS c)
                AND (item ->> 'unread')::bigint <= (item ->> 'requests')::bigint, false) THEN
            RAISE EXCEPTION 'usage[%] is not {model, requests, unread, input, output, cache_read, cache_write}: %',
                ordinal - 1, left(item::text, 300)
                USING ERRCODE = 'TL005',
                      HINT = 'model a name of 1 to 200 characters; counts whole numbers, not negative; unread at most requests.';
        END IF;
    END LOOP;
    job := tireless.held_job(record_usage.job_id, record_usage.worker, record_usage.token);
    INSERT INTO tireless.model_usage AS u (job_id, attempt, model, spend_day, lane, forge, owner, repo, requests,
                                           unread, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
    SELECT job.id, job.attempts, r.model, tireless.spend_day(), job.lane, job.forge, job.owner, job.repo,
           sum(r.requests), sum(r.unread), sum(r.input), sum(r.output), sum(r.cache_read), sum(r.cache_write)
      FROM jsonb_to_recordset(record_usage.usage)
           AS r(model text, requests bigint, unread bigint, input bigint, output bigint, cache_read bigint,
                cache_write bigint)
     GROUP BY r.model
    ON CONFLICT ON CONSTRAINT model_usage_per_attempt_model_and_day DO UPDATE
       SET requests = u.requests + excluded.requests, unread = u.unread + excluded.unread,
           input_tokens = u.input_tokens + excluded.input_tokens,
           output_tokens = u.output_tokens + excluded.output_tokens,
           cache_read_tokens = u.cache_read_tokens + excluded.cache_read_tokens,
           cache_write_tokens = u.cache_write_tokens + excluded.cache_write_tokens;
    RETURN tireless.allowance_of(job);
END;
$_$;

--
-- Name: FUNCTION record_usage(job_id bigint, worker text, token uuid, usage jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_usage(job_id bigint, worker text, token uuid, usage jsonb) IS 'The holder''s gateway adds what its attempt''s agent used since its last record: a JSON array of {model, requests, unread (answers whose usage it could not read), input, output, cache_read, cache_write} (tokens), added to the attempt''s row of each model for today (UTC). Returns the allowance (tireless.allowance_of). TL005 naming a malformed row; TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';

--
-- Name: refresh_lane(text, text, text, integer, text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.refresh_lane(forge text, owner text, repo text, number integer, labels text[]) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    new_lane text;
    problem text;
BEGIN
    PERFORM tireless.check_repo(refresh_lane.forge, refresh_lane.owner, refresh_lane.repo);
    -- The same limits enqueue applies to an issue's labels.
    problem := tireless.labels_problem(refresh_lane.labels);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'labels %', problem USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.job j
       SET lane = tireless.lane_for(j.kind::text, refresh_lane.labels),
           labels = refresh_lane.labels,
           updated_at = now()
     WHERE (j.forge, j.owner, j.repo, j.number) = (refresh_lane.forge, refresh_lane.owner, refresh_lane.repo, refresh_lane.number)
       AND j.state = 'pending'
    RETURNING j.lane INTO new_lane;
    IF new_lane IS NOT NULL THEN
        PERFORM tireless.announce_work(new_lane);
    END IF;
    RETURN new_lane;
END;
$$;

--
-- Name: FUNCTION refresh_lane(forge text, owner text, repo text, number integer, labels text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.refresh_lane(forge text, owner text, repo text, number integer, labels text[]) IS 'Re-routes the issue''s pending job from its current labels (say an agent label was added) and returns the lane; null when the issue has no pending job.';

--
-- Name: refuse_change_to_terminal_job(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.refuse_change_to_terminal_job() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'job % is % and never changes again', OLD.id, OLD.state
        USING ERRCODE = 'TL003',
              HINT = 'To run the issue again, enqueue it: that makes a new job and keeps this one as history.';
END;
$$;

--
-- Name: FUNCTION refuse_change_to_terminal_job(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.refuse_change_to_terminal_job() IS 'Trigger: refuses any UPDATE of a delivered, failed or cancelled job (SQLSTATE TL003).';

--
-- Name: refuse_delete_of_live_job(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.refuse_delete_of_live_job() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'job % is % and cannot be deleted', OLD.id, OLD.state
        USING ERRCODE = 'TL002',
              HINT = 'Cancel it with tireless.transition(job_id => ..., to_state => ''cancelled'').';
END;
$$;

--
-- Name: FUNCTION refuse_delete_of_live_job(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.refuse_delete_of_live_job() IS 'Trigger: refuses to DELETE a pending or claimed job (SQLSTATE TL002); cancel it instead.';

--
-- Name: refuse_history_rewrite(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.refuse_history_rewrite() RETURNS trigger
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

--
-- Name: FUNCTION refuse_history_rewrite(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.refuse_history_rewrite() IS 'Trigger: refuses UPDATE, DELETE and TRUNCATE of tireless.job_event (SQLSTATE TL007), except the DELETEs of tireless.prune.';

--
-- Name: remove_forge(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.remove_forge(name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    DELETE FROM tireless.forge f WHERE f.name = remove_forge.name;
    RETURN FOUND;
END;
$$;

--
-- Name: FUNCTION remove_forge(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.remove_forge(name text) IS 'Removes a forge from the registry (its repositories stay tracked, unread until it is added again); true when it removed one.';

--
-- Name: renew_claim(bigint, text, interval, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval DEFAULT '00:10:00'::interval, token uuid DEFAULT NULL::uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF NOT (tireless.is_worker_name(renew_claim.worker) AND tireless.is_lease(renew_claim.lease)) THEN
        PERFORM tireless.check_worker(renew_claim.worker);
        PERFORM tireless.check_lease(renew_claim.lease);
    END IF;
    UPDATE tireless.job j
       SET claim_expires_at = now() + renew_claim.lease, updated_at = now()
     WHERE j.id = renew_claim.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = renew_claim.worker
       AND (renew_claim.token IS NULL OR j.claim_token = renew_claim.token)
       AND tireless.acts_for_login(j.claimed_login);
    IF FOUND THEN
        RETURN true;
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = renew_claim.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(renew_claim.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN false;
END;
$$;

--
-- Name: FUNCTION renew_claim(job_id bigint, worker text, lease interval, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval, token uuid) IS 'Extends the lease to now() + lease while worker (and token, when given) holds the claim and the caller is the login that claimed (or an admin); false when the claim was lost or is another login''s. TL001 for an unknown job.';

--
-- Name: renew_poll_leases(text, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.renew_poll_leases(poller text, lease interval) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    renewed integer;
BEGIN
    PERFORM tireless.check_worker(renew_poll_leases.poller);
    PERFORM tireless.check_lease(renew_poll_leases.lease);
    -- Only leases still running: one that lapsed may already be another poller's to take.
    UPDATE tireless.repo_poll rp SET poll_lease_until = now() + renew_poll_leases.lease
     WHERE rp.polled_by = renew_poll_leases.poller AND rp.poll_lease_until > now();
    GET DIAGNOSTICS renewed = ROW_COUNT;
    RETURN renewed;
END;
$$;

--
-- Name: FUNCTION renew_poll_leases(poller text, lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.renew_poll_leases(poller text, lease interval) IS 'Extends to now() + lease every poll lease poller still holds (not one that has run out); returns how many. A poller calls it every third of its lease, so a dead poller''s repositories are free within one lease.';

--
-- Name: replication_warning(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.replication_warning() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH standbys AS (
          SELECT count(*) AS streaming,
             bool_or((r.sync_state = ANY (ARRAY['sync'::text, 'quorum'::text]))) AS one_synchronous
            FROM pg_stat_replication r
           WHERE ((r.state IS DISTINCT FROM 'backup'::text) AND (NOT (r.pid IN ( SELECT s_1.active_pid
                    FROM pg_replication_slots s_1
                   WHERE ((s_1.slot_type = 'logical'::text) AND (s_1.active_pid IS NOT NULL))))))
         )
  SELECT format('this primary streams to %s standby(s) without synchronous commit (%s): a failover to one of them can lose finishes the workers were told had committed, and run those jobs again'::text, s.streaming,
         CASE
             WHEN (current_setting('synchronous_standby_names'::text) = ''::text) THEN 'synchronous_standby_names is empty'::text
             WHEN (current_setting('synchronous_commit'::text) = ANY (ARRAY['off'::text, 'local'::text])) THEN format('synchronous_commit is %s'::text, current_setting('synchronous_commit'::text))
             ELSE format('none is synchronous yet, synchronous_standby_names is %L'::text, current_setting('synchronous_standby_names'::text))
         END) AS format
    FROM standbys s
   WHERE ((NOT pg_is_in_recovery()) AND (s.streaming > 0) AND ((current_setting('synchronous_standby_names'::text) = ''::text) OR (current_setting('synchronous_commit'::text) = ANY (ARRAY['off'::text, 'local'::text])) OR (s.one_synchronous IS FALSE)));
END;

--
-- Name: FUNCTION replication_warning(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.replication_warning() IS 'Why a failover could lose acknowledged work, or null: on a primary with a streaming standby, when synchronous_standby_names is empty, synchronous_commit (as this session has it) is off or local, or no standby is sync or quorum in pg_stat_replication (checked only when the owner may read its sync_state: pg_read_all_stats). Null on a standby and on a primary without one; tireless status and the dashboard show it.';

--
-- Name: reply_write(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.reply_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $_$
    SELECT jsonb_build_object('ask_id', a.id, 'number', coalesce(a.pull_number, a.number), 'reply', a.reply,
                              'comment_id', CASE WHEN a.source = 'comment' AND a.source_id ~ '^[0-9]{1,18}$'
                                                 THEN a.source_id::bigint END,
                              'body', CASE WHEN a.reply = 'comment' THEN tireless.ask_reply_text(a) END,
                              'marker', CASE WHEN a.reply = 'comment' THEN format('<!-- tireless:ask:%s -->', a.id) END)
      FROM tireless.ask a
     WHERE a.id = w.ask_id AND a.reply IS NOT NULL AND a.replied_at IS NULL;
$_$;

--
-- Name: FUNCTION reply_write(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.reply_write(w tireless.forge_write) IS 'What a reply write (kind reply) says, as tireless.forge_writes_due lists it: {ask_id, number (the pull request or issue where the ask was made), reply (react: +1 on the command comment_id, for a command acted on; comment: body, ending with marker, for a refused ask), comment_id, body, marker}.';

--
-- Name: reply_written(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.reply_written(w tireless.forge_write) RETURNS void
    LANGUAGE sql
    BEGIN ATOMIC
 UPDATE tireless.ask a SET replied_at = COALESCE(a.replied_at, now())
   WHERE (a.id = (reply_written.w).ask_id);
END;

--
-- Name: FUNCTION reply_written(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.reply_written(w tireless.forge_write) IS 'The forge shows the reply of write w: the ask owes it no more.';

--
-- Name: repo_has_room(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.repo_has_room(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    limits tireless.repo_limit;
    spent record;
BEGIN
    SELECT * INTO limits FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (repo_has_room.forge, repo_has_room.owner, repo_has_room.repo)
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN true;
    END IF;
    IF limits.capacity IS NOT NULL
       AND (SELECT count(*) FROM tireless.job j
             WHERE j.state = 'claimed'
               AND (j.forge, j.owner, j.repo) = (limits.forge, limits.owner, limits.repo)) >= limits.capacity THEN
        RETURN false;
    END IF;
    spent := tireless.repo_spend(limits.forge, limits.owner, limits.repo);
    RETURN NOT tireless.budget_spent(spent.runs, spent.agent_time, limits.runs_per_day, limits.agent_time_per_day)
       AND tireless.repo_usage_spent(limits.forge, limits.owner, limits.repo) IS NULL;
END;
$$;

--
-- Name: FUNCTION repo_has_room(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.repo_has_room(forge text, owner text, repo text) IS 'True when a job of the repository may be claimed now: fewer claimed jobs than its capacity and its budget of today not spent. Takes the repository''s limit row lock until the transaction ends.';

--
-- Name: repo_spend(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.repo_spend(forge text, owner text, repo text, OUT runs bigint, OUT agent_time interval) RETURNS record
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT COALESCE(sum(r.runs), (0)::bigint) AS "coalesce",
     COALESCE(sum(r.agent_time), '00:00:00'::interval) AS "coalesce"
    FROM tireless.lane_repo r
   WHERE (((r.forge = repo_spend.forge) AND (r.owner = repo_spend.owner) AND (r.repo = repo_spend.repo)) AND (r.spend_day = tireless.spend_day()));
END;

--
-- Name: FUNCTION repo_spend(forge text, owner text, repo text, OUT runs bigint, OUT agent_time interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.repo_spend(forge text, owner text, repo text, OUT runs bigint, OUT agent_time interval) IS 'How many runs and how much agent time the repository spent today (UTC), all lanes.';

--
-- Name: repo_usage_spent(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.repo_usage_spent(forge text, owner text, repo text) RETURNS text
    LANGUAGE sql STABLE
    BEGIN ATOMIC
 SELECT tireless.spent_budget(s.tokens, s.cost, l.tokens_per_day, l.cost_per_day, format('today (repository %s/%s/%s)'::text, l.forge, l.owner, l.repo)) AS spent_budget
    FROM tireless.repo_limit l,
     LATERAL tireless.spend_of(NULL::bigint, NULL::text, l.forge, l.owner, l.repo) s(tokens, cost)
   WHERE (((l.forge = repo_usage_spent.forge) AND (l.owner = repo_usage_spent.owner) AND (l.repo = repo_usage_spent.repo)) AND (num_nonnulls(l.tokens_per_day, l.cost_per_day) > 0));
END;

--
-- Name: FUNCTION repo_usage_spent(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.repo_usage_spent(forge text, owner text, repo text) IS 'The note of the repository''s daily budget of tokens or cost when today''s usage (UTC, all lanes) reached it; null otherwise.';

--
-- Name: repo_writable(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.repo_writable(forge text, owner text, repo text) RETURNS void
    LANGUAGE sql
    AS $$
    UPDATE tireless.mirror_repo m SET archived_at = NULL
     WHERE (m.forge, m.owner, m.repo) = (repo_writable.forge, repo_writable.owner, repo_writable.repo)
       AND m.archived_at IS NOT NULL;
$$;

--
-- Name: FUNCTION repo_writable(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.repo_writable(forge text, owner text, repo text) IS 'The forge accepted a write to the repository: it is not archived (any more). Each record_* of a mirror write''s success calls it.';

--
-- Name: report_progress(bigint, text, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.report_progress(job_id bigint, worker text, step text DEFAULT NULL::text, token uuid DEFAULT NULL::uuid) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job := tireless.held_job(report_progress.job_id, report_progress.worker, report_progress.token);
    result timestamptz;
BEGIN
    PERFORM tireless.current_attempt(job.id, job.attempts);
    UPDATE tireless.job_attempt a
       SET progress_at = now(),
           step = coalesce(left(nullif(btrim(report_progress.step), ''), 500), a.step)
     WHERE a.job_id = job.id
    RETURNING a.progress_at INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION report_progress(job_id bigint, worker text, step text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.report_progress(job_id bigint, worker text, step text, token uuid) IS 'The holder says its attempt progresses (the stall watchdog counts from now): step, when given, becomes the attempt''s current step (its first 500 characters); without one the last step stays. Returns the time recorded. TL001 for an unknown job, TL004 when worker (or token) does not hold it.';

--
-- Name: request_cancel(bigint, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.request_cancel(job_id bigint, note text DEFAULT NULL::text) RETURNS tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job;
    why text := coalesce(request_cancel.note, format('cancelled by %s', session_user));
BEGIN
    IF length(request_cancel.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(request_cancel.note)
            USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO job FROM tireless.job j WHERE j.id = request_cancel.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(request_cancel.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    IF tireless.is_terminal(job.state) THEN
        RAISE EXCEPTION 'job % is % and never changes again; nothing to cancel', job.id, job.state
            USING ERRCODE = 'TL003', HINT = 'Only a pending or claimed job can be cancelled.';
    END IF;
    -- A pending job ends at once; a claimed one keeps its holder, who hears of the request at once
    -- (tireless_stop) and ends it cancelled with this note, or the sweeper does at its lease's end.
    -- A request stands once made: a second one keeps the first's time and note.
    UPDATE tireless.job j
       SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
           cancel_requested_at = CASE WHEN j.state = 'claimed' THEN coalesce(j.cancel_requested_at, now()) END,
           cancel_note = CASE WHEN j.state = 'claimed' THEN coalesce(j.cancel_note, why) END,
           note = why,
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO job;
    RETURN job;
END;
$$;

--
-- Name: FUNCTION request_cancel(job_id bigint, note text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.request_cancel(job_id bigint, note text) IS '(admin) Cancels a job: a pending job ends cancelled at once, with the note; a claimed job gets a cancel request whose note (default "cancelled by <login>") it ends with, which its holder hears at once (tireless_stop) and heartbeat answers. TL001 for an unknown job, TL003 for a finished one.';

--
-- Name: rerun(text, text, text, integer, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.rerun(forge text, owner text, repo text, number integer, kind text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    live bigint;
    seen tireless.issue;
    seen_before boolean;
    last tireless.job;
    run_before boolean;
    asked text[];
    job_kind text;
    job tireless.job;
BEGIN
    IF rerun.number IS NULL OR rerun.number < 1 THEN
        RAISE EXCEPTION 'number must be a positive issue number, got %', coalesce(rerun.number::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF rerun.kind IS NOT NULL THEN
        PERFORM tireless.parse_kind(rerun.kind);
    END IF;
    PERFORM tireless.check_tracked(rerun.forge, rerun.owner, rerun.repo);
    PERFORM tireless.lock_repo_issues(rerun.forge, rerun.owner, rerun.repo);
    SELECT j.id INTO live FROM tireless.job j
     WHERE (j.forge, j.owner, j.repo, j.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number)
       AND j.state IN ('pending', 'claimed');
    IF FOUND THEN
        RAISE EXCEPTION 'issue %/%/%#% already has live job %', rerun.forge, rerun.owner, rerun.repo, rerun.number, live
            USING ERRCODE = '23505', CONSTRAINT = 'one_live_job_per_issue',
                  HINT = 'A rerun waits until the live job has ended.';
    END IF;
    SELECT * INTO seen FROM tireless.issue s
     WHERE (s.forge, s.owner, s.repo, s.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number);
    seen_before := FOUND;
    SELECT * INTO last FROM tireless.job j
     WHERE (j.forge, j.owner, j.repo, j.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number)
     ORDER BY j.id DESC LIMIT 1;
    run_before := FOUND;
    IF NOT (seen_before OR run_before) THEN
        RAISE EXCEPTION 'the store has never seen issue %/%/%#%', rerun.forge, rerun.owner, rerun.repo, rerun.number
            USING ERRCODE = 'TL005',
                  HINT = 'Check the number; a new issue is read by the next poll (tireless poll --once), and its '
                         'labels then ask for work.';
    END IF;
    -- What the issue last asked: its last job's kind and labels (the agent override among them), which
    -- the mirror's withdrawal does not change; an issue shown but never run: the labels last seen.
    asked := coalesce(last.labels, seen.labels, '{}');
    job_kind := coalesce(rerun.kind, last.kind::text, tireless.job_kind_for(seen.labels), 'implement');
    INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, note)
    VALUES (rerun.forge, rerun.owner, rerun.repo, rerun.number, coalesce(seen.title, last.title), asked,
            job_kind::tireless.job_kind, tireless.lane_for(job_kind, asked),
            format('rerun by %s', session_user))
    RETURNING * INTO job;
    -- The issue's current request has had its job: a poll that shows it unchanged makes no other.
    UPDATE tireless.issue s SET answered = true, changed_at = now()
     WHERE (s.forge, s.owner, s.repo, s.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number)
       AND NOT s.answered;
    -- A rerun of an issue with an open dependency waits for it like any job.
    PERFORM tireless.settle_dependencies(jsonb_build_array(jsonb_build_object(
        'forge', rerun.forge, 'owner', rerun.owner, 'repo', rerun.repo, 'number', rerun.number, 'body', false)));
    PERFORM tireless.announce_work(job.lane);
    RETURN job.id;
END;
$$;

--
-- Name: FUNCTION rerun(forge text, owner text, repo text, number integer, kind text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.rerun(forge text, owner text, repo text, number integer, kind text) IS '(admin) A new pending job for an issue of a tracked repository that has no live job, whatever its labels say now: the kind and agent of its last job (the mirror may have taken its mode label off since), else of the labels last seen; kind, when given, replaces the kind. Returns its id. TL008 when the repository is not tracked; 23505 (one_live_job_per_issue) when a live job exists; TL005 for an unknown kind or an issue the store has never seen.';

--
-- Name: reset_lane_breaker(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.reset_lane_breaker(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(reset_lane_breaker.lane);
    UPDATE tireless.lane l SET consecutive_failures = 0, tripped_until = NULL
     WHERE l.name = reset_lane_breaker.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;

--
-- Name: FUNCTION reset_lane_breaker(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.reset_lane_breaker(lane text) IS 'Closes the lane''s circuit breaker and forgets its failures, then wakes its runners. Returns the lane.';

--
-- Name: resume_lane(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.resume_lane(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(resume_lane.lane);
    UPDATE tireless.lane l SET paused = false WHERE l.name = resume_lane.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;

--
-- Name: FUNCTION resume_lane(lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.resume_lane(lane text) IS 'Undoes pause_lane and wakes the lane''s runners. Returns the lane.';

--
-- Name: retry_delay(integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.retry_delay(attempts integer) RETURNS interval
    LANGUAGE sql STABLE
    AS $$
    -- Compared in numeric seconds first: base * 2^n as an interval would overflow long before the cap.
    SELECT CASE WHEN extract(epoch FROM p.backoff_base) * 2::numeric ^ e.exponent >= extract(epoch FROM p.backoff_cap)
                THEN p.backoff_cap
                ELSE p.backoff_base * 2::float8 ^ e.exponent END
      FROM tireless.policy p
     CROSS JOIN LATERAL (SELECT least(greatest(retry_delay.attempts - 1, 0), 80)) AS e(exponent);
$$;

--
-- Name: FUNCTION retry_delay(attempts integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.retry_delay(attempts integer) IS 'Backoff before a job that has had this many attempts may be claimed again: base * 2^(attempts-1), capped.';

--
-- Name: retry_forge(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.retry_forge(name text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    made_due integer;
BEGIN
    PERFORM tireless.check_forge(retry_forge.name);
    UPDATE tireless.forge f SET limited_until = NULL, last_error = NULL WHERE f.name = retry_forge.name;
    UPDATE tireless.repo_poll rp SET next_poll_at = least(rp.next_poll_at, now()), backoff_until = NULL
     WHERE rp.forge = retry_forge.name;
    GET DIAGNOSTICS made_due = ROW_COUNT;
    IF made_due > 0 THEN
        PERFORM tireless.announce_poll(retry_forge.name);
    END IF;
    RETURN made_due;
END;
$$;

--
-- Name: FUNCTION retry_forge(name text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.retry_forge(name text) IS '(admin) Clears a forge''s stop (a rate limit or refused credentials, as record_forge_trouble set it) and makes each of its repositories due now, backoff ended, and wakes the pollers: the next poll round reads them. Returns how many repositories that is. TL008 for a forge that is not registered.';

--
-- Name: revisions_since_asked(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.revisions_since_asked(forge text, owner text, repo text, number integer) RETURNS integer
    LANGUAGE sql STABLE
    AS $$
    SELECT count(DISTINCT a.job_id)::integer
      FROM tireless.ask a
     WHERE (a.forge, a.owner, a.repo, a.number)
           = (revisions_since_asked.forge, revisions_since_asked.owner, revisions_since_asked.repo, revisions_since_asked.number)
       AND a.verb = 'revise' AND a.job_id IS NOT NULL
       AND a.job_id > coalesce((SELECT max(j.id) FROM tireless.job j
                                 WHERE (j.forge, j.owner, j.repo, j.number)
                                       = (a.forge, a.owner, a.repo, a.number)
                                   AND NOT EXISTS (SELECT FROM tireless.ask r
                                                    WHERE r.job_id = j.id AND r.verb = 'revise')), 0);
$$;

--
-- Name: FUNCTION revisions_since_asked(forge text, owner text, repo text, number integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.revisions_since_asked(forge text, owner text, repo text, number integer) IS 'How many revision jobs the issue had since a person last asked on the issue itself (the newest job that answers no revise ask: a mode label, a rerun, `/tireless implement`).';

--
-- Name: roll_up_history(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.roll_up_history() RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: FUNCTION roll_up_history(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.roll_up_history() IS 'Counts the finished jobs of the history written since the last call into tireless.finished_jobs and tireless.finished_jobs_by_hour, and folds the same events into the dashboard''s roll-ups (tireless.fold_history); returns how many finished jobs it added. Reads only new events; an event of a transaction still open is counted by a later call: it moves up to an event id only once every transaction older than its own (whose id it takes after reading the newest event id) has ended. Counts nothing and returns 0 in a transaction that already had its transaction id. Returns 0 at once while another call is rolling up (it holds the table lock of tireless.history_rollup, which only the schema''s owner can take), and does nothing and returns 0 in a read-only transaction or on a hot standby. Called by the sweeper and the poller, never by a read.';

--
-- Name: safe_comment_text(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.safe_comment_text(body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- Control characters (ESC, BEL, ...) and the bidirectional overrides and isolates dropped;
    -- a zero-width joiner after each @, so that no mention notifies even outside the code block.
    SELECT replace(regexp_replace(safe_comment_text.body,
                                  '[\x01-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]', '', 'g'),
                   '@', '@' || U&'\200D');
$$;

--
-- Name: FUNCTION safe_comment_text(body text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.safe_comment_text(body text) IS 'Text from a runner made safe to quote on a forge: control and bidirectional-override characters dropped, a zero-width joiner after every @ (no mention notifies).';

--
-- Name: safe_report_text(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.safe_report_text(body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- A zero-width space after each < and between ! and [: no tag opens, no image loads; links stay.
    SELECT replace(replace(tireless.safe_comment_text(safe_report_text.body), '<', '<' || U&'\200B'),
                   '![', '!' || U&'\200B' || '[');
$$;

--
-- Name: FUNCTION safe_report_text(body text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.safe_report_text(body text) IS 'An agent''s report made safe to post as markdown: safe_comment_text, and a zero-width space after every < and inside every ![ so that no HTML tag opens and no image loads.';

--
-- Name: scope_spent(bigint, numeric, bigint, numeric, bigint, numeric, text, tireless.job); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.scope_spent(tokens bigint, cost numeric, lane_tokens bigint, lane_cost numeric, repo_tokens bigint, repo_cost numeric, scope text, job tireless.job) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN COALESCE(tireless.spent_budget(tokens, cost, lane_tokens, lane_cost, format('for the %s (lane %s)'::text, scope, (job).lane)), tireless.spent_budget(tokens, cost, repo_tokens, repo_cost, format('for the %s (repository %s/%s/%s)'::text, scope, (job).forge, (job).owner, (job).repo)));

--
-- Name: FUNCTION scope_spent(tokens bigint, cost numeric, lane_tokens bigint, lane_cost numeric, repo_tokens bigint, repo_cost numeric, scope text, job tireless.job); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.scope_spent(tokens bigint, cost numeric, lane_tokens bigint, lane_cost numeric, repo_tokens bigint, repo_cost numeric, scope text, job tireless.job) IS 'The note of the job''s lane''s budget of a scope (issue, job, attempt) that its spend reached, else its repository''s (token budget spent: 3,612 of 3,000 tokens for the job (lane cc)); null when neither is reached.';

--
-- Name: set_forge_app(text, bigint, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_forge_app(name text, app_id bigint, app_key_file text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    forge_kind tireless.forge_kind;
BEGIN
    PERFORM tireless.check_forge(set_forge_app.name);
    SELECT f.kind INTO forge_kind FROM tireless.forge f WHERE f.name = set_forge_app.name;
    IF set_forge_app.app_id IS NOT NULL AND forge_kind <> 'github' THEN
        RAISE EXCEPTION 'forge % is a % forge: only a github forge has an App', quote_literal(set_forge_app.name), forge_kind
            USING ERRCODE = 'TL005';
    END IF;
    IF set_forge_app.app_id <= 0 THEN
        RAISE EXCEPTION 'app_id must be a positive integer, got %', set_forge_app.app_id
            USING ERRCODE = 'TL005', HINT = 'The App ID is on the App''s settings page (github.com/settings/apps/SLUG).';
    END IF;
    IF set_forge_app.app_key_file IS NOT NULL AND set_forge_app.app_id IS NULL THEN
        RAISE EXCEPTION 'app_key_file % names the key of no App: give app_id as well', quote_literal(left(set_forge_app.app_key_file, 200))
            USING ERRCODE = 'TL005';
    END IF;
    IF set_forge_app.app_key_file !~ '^/[^[:cntrl:]]*$' OR length(set_forge_app.app_key_file) > 4096 THEN
        RAISE EXCEPTION 'app_key_file must be an absolute path, got %', quote_literal(left(set_forge_app.app_key_file, 200))
            USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.forge f SET app_id = set_forge_app.app_id, app_key_file = set_forge_app.app_key_file
     WHERE f.name = set_forge_app.name
       AND (f.app_id, f.app_key_file) IS DISTINCT FROM (set_forge_app.app_id, set_forge_app.app_key_file);
    RETURN FOUND;
END;
$_$;

--
-- Name: FUNCTION set_forge_app(name text, app_id bigint, app_key_file text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_forge_app(name text, app_id bigint, app_key_file text) IS '(admin) Makes a github forge''s credentials its GitHub App: app_id, and app_key_file, the absolute path of the App''s private key on the hosts that run tireless (the path, never the key); app_id null: a token again. True when it changed the entry. TL008 for a forge not registered, TL005 for a bad argument or a forge of another kind.';

--
-- Name: kind_policy; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.kind_policy (
    kind tireless.job_kind NOT NULL,
    default_lane text DEFAULT 'cc'::text NOT NULL,
    max_attempts integer DEFAULT 3 NOT NULL,
    CONSTRAINT default_lane_is_a_name CHECK (tireless.is_lane_name(default_lane)),
    CONSTRAINT max_attempts_positive CHECK ((max_attempts > 0))
);

--
-- Name: TABLE kind_policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.kind_policy IS 'Per kind: the lane a job goes to without an agent label, and how many attempts it gets. Change it with tireless.set_kind_policy.';

--
-- Name: CONSTRAINT default_lane_is_a_name ON kind_policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT default_lane_is_a_name ON tireless.kind_policy IS 'The default lane is a lane name.';

--
-- Name: CONSTRAINT max_attempts_positive ON kind_policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT max_attempts_positive ON tireless.kind_policy IS 'A job gets at least one attempt.';

--
-- Name: set_kind_policy(text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_kind_policy(kind text, default_lane text DEFAULT NULL::text, max_attempts integer DEFAULT NULL::integer) RETURNS tireless.kind_policy
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job_kind tireless.job_kind := tireless.parse_kind(set_kind_policy.kind);
    result tireless.kind_policy;
BEGIN
    IF set_kind_policy.default_lane IS NOT NULL THEN
        PERFORM tireless.check_lane(set_kind_policy.default_lane);
    END IF;
    IF set_kind_policy.max_attempts IS NOT NULL AND set_kind_policy.max_attempts <= 0 THEN
        RAISE EXCEPTION 'max_attempts must be positive, got %', set_kind_policy.max_attempts USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.kind_policy kp
       SET default_lane = coalesce(set_kind_policy.default_lane, kp.default_lane),
           max_attempts = coalesce(set_kind_policy.max_attempts, kp.max_attempts)
     WHERE kp.kind = job_kind
     RETURNING kp.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_kind_policy(kind text, default_lane text, max_attempts integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_kind_policy(kind text, default_lane text, max_attempts integer) IS 'Sets a kind''s default lane and attempt budget (a null argument leaves it as it is); returns the row.';

--
-- Name: set_lane_agent(text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_lane_agent(lane text, agent text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    stored text;
BEGIN
    PERFORM tireless.check_lane(set_lane_agent.lane);
    IF set_lane_agent.agent IS NOT NULL AND NOT set_lane_agent.agent = ANY (tireless.agent_profiles()) THEN
        RAISE EXCEPTION 'unknown agent profile % for lane %', quote_literal(left(set_lane_agent.agent, 80)),
            quote_literal(set_lane_agent.lane)
            USING ERRCODE = 'TL012',
                  DETAIL = format('The profiles are %s.', array_to_string(tireless.agent_profiles(), ', '));
    END IF;
    PERFORM tireless.ensure_lane(set_lane_agent.lane);
    UPDATE tireless.lane l SET agent = set_lane_agent.agent WHERE l.name = set_lane_agent.lane
        RETURNING l.agent INTO stored;
    RETURN stored;
END;
$$;

--
-- Name: FUNCTION set_lane_agent(lane text, agent text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_lane_agent(lane text, agent text) IS '(admin) The agent CLI profile the lane''s jobs run (one of tireless.agent_profiles); null: none, the worker''s own --agent or COMMAND. Returns it. TL012 naming an unknown profile, TL005 for a bad lane name; nothing changes.';

--
-- Name: set_lane_budget(text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint DEFAULT NULL::bigint, cost_per_day numeric DEFAULT NULL::numeric, tokens_per_job bigint DEFAULT NULL::bigint, cost_per_job numeric DEFAULT NULL::numeric, tokens_per_attempt bigint DEFAULT NULL::bigint, cost_per_attempt numeric DEFAULT NULL::numeric, tokens_per_issue bigint DEFAULT NULL::bigint, cost_per_issue numeric DEFAULT NULL::numeric) RETURNS tireless.lane
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    before tireless.lane;
    result tireless.lane;
    agent_time_changes boolean;
    runs_start boolean;
BEGIN
    PERFORM tireless.check_budget(set_lane_budget.runs_per_day, set_lane_budget.agent_time_per_day);
    PERFORM tireless.check_spend_budget(set_lane_budget.tokens_per_day, set_lane_budget.cost_per_day,
                                        set_lane_budget.tokens_per_job, set_lane_budget.cost_per_job,
                                        set_lane_budget.tokens_per_attempt, set_lane_budget.cost_per_attempt,
                                        set_lane_budget.tokens_per_issue, set_lane_budget.cost_per_issue);
    SELECT * INTO before FROM tireless.lane l WHERE l.name = set_lane_budget.lane;
    -- Whenever a budget of agent time is on either side, not only when it differs from the value read
    -- here: a concurrent setter may change it before this one writes.
    agent_time_changes := set_lane_budget.agent_time_per_day IS NOT NULL OR before.agent_time_per_day IS NOT NULL;
    runs_start := set_lane_budget.runs_per_day IS NOT NULL AND before.runs_per_day IS NULL;
    IF agent_time_changes OR runs_start THEN
        PERFORM tireless.lock_jobs_for_a_budget();
    END IF;
    PERFORM tireless.ensure_lane(set_lane_budget.lane);
    UPDATE tireless.lane l
       SET runs_per_day = set_lane_budget.runs_per_day, agent_time_per_day = set_lane_budget.agent_time_per_day,
           tokens_per_day = set_lane_budget.tokens_per_day, cost_per_day = set_lane_budget.cost_per_day,
           tokens_per_job = set_lane_budget.tokens_per_job, cost_per_job = set_lane_budget.cost_per_job,
           tokens_per_attempt = set_lane_budget.tokens_per_attempt, cost_per_attempt = set_lane_budget.cost_per_attempt,
           tokens_per_issue = set_lane_budget.tokens_per_issue, cost_per_issue = set_lane_budget.cost_per_issue
     WHERE l.name = set_lane_budget.lane RETURNING l.* INTO result;
    IF agent_time_changes THEN
        PERFORM tireless.arm_agent_time_count();
    END IF;
    IF runs_start THEN
        PERFORM tireless.start_counting_runs(result.name, NULL, NULL, NULL);
    END IF;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) IS '(admin) The lane''s budgets. Daily (the UTC calendar day): at most runs_per_day claims, no claim once its attempts ended today held their claims agent_time_per_day in all, or its agents used tokens_per_day tokens or cost_per_day USD today; each counts from the moment it is set, and when spent its jobs stay pending until midnight UTC. Per job (its attempts), per issue (all its jobs) and per attempt: once it used tokens_per_job tokens or cost_per_job USD (or the per issue, per attempt ones), the gateway refuses its agent''s next model request and the job fails (the attempt only, for a budget per attempt). Null: no budget of that kind. Returns the lane.';

--
-- Name: set_lane_capacity(text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_lane_capacity(lane text, capacity integer) RETURNS tireless.lane
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.lane;
BEGIN
    IF set_lane_capacity.capacity < 0 THEN
        RAISE EXCEPTION 'capacity must be null (unlimited) or at least 0, got %', set_lane_capacity.capacity
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.ensure_lane(set_lane_capacity.lane);
    UPDATE tireless.lane l SET capacity = set_lane_capacity.capacity
     WHERE l.name = set_lane_capacity.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_lane_capacity(lane text, capacity integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_lane_capacity(lane text, capacity integer) IS 'At most capacity claimed jobs in the lane at once (null: unlimited; 0 holds the lane''s work back). Returns the lane.';

--
-- Name: set_lane_limits(text, text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_lane_limits(lane text, memory text DEFAULT NULL::text, cpus text DEFAULT NULL::text, pids text DEFAULT NULL::text, disk text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: FUNCTION set_lane_limits(lane text, memory text, cpus text, pids text, disk text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_lane_limits(lane text, memory text, cpus text, pids text, disk text) IS '(admin) The lane''s limits on one attempt: memory and disk sizes (512M, 2GiB: K, M, G, T are powers of 1024), cpus a number of CPUs (1.5), pids a count of processes; each null keeps the lane''s, none clears it. Returns them as tireless.lane_limits does. TL005 naming the value for a bad one, and nothing changes. Runners enforce them on the whole process tree of each attempt (a control group of its own), or do not serve the lane.';

--
-- Name: set_lane_max_run(text, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_lane_max_run(lane text, max_run interval) RETURNS tireless.lane
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.check_run_limit('max_run', set_lane_max_run.max_run);
    PERFORM tireless.ensure_lane(set_lane_max_run.lane);
    UPDATE tireless.lane l SET max_run = set_lane_max_run.max_run
     WHERE l.name = set_lane_max_run.lane RETURNING l.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_lane_max_run(lane text, max_run interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_lane_max_run(lane text, max_run interval) IS '(admin) The time limit of every attempt in the lane (null: none): past it, the holder''s heartbeat answers timeout and the attempt ends as a failure, note "timed out after 2h". Applies to running attempts too. Returns the lane.';

--
-- Name: set_lane_network(text, text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_lane_network(lane text, hosts text[]) RETURNS text[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: FUNCTION set_lane_network(lane text, hosts text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_lane_network(lane text, hosts text[]) IS '(admin) The hosts the lane''s agents may reach, HOST[:PORT] entries (a DNS name, *.suffix, an IP literal; no port: 80 and 443), at most 100; an empty list: no egress at all; null: no list, the host''s network (as before). Returns the list as stored (names lower-cased, repeats dropped). TL005 naming the entry and the lane for a bad one, and for a bad lane name. Runners read it at each claim (tireless.lane_network).';

--
-- Name: set_lane_stall_after(text, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_lane_stall_after(lane text, stall_after interval) RETURNS tireless.lane
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.check_run_limit('stall_after', set_lane_stall_after.stall_after);
    PERFORM tireless.ensure_lane(set_lane_stall_after.lane);
    UPDATE tireless.lane l SET stall_after = set_lane_stall_after.stall_after
     WHERE l.name = set_lane_stall_after.lane RETURNING l.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_lane_stall_after(lane text, stall_after interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_lane_stall_after(lane text, stall_after interval) IS '(admin) The progress watchdog of the lane (null: none): an attempt without progress for this long gets stalled from its heartbeat and ends as a failure, note "no progress for 30m (last: ran the tests)". Returns the lane.';

--
-- Name: set_mirror_comments(boolean); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_mirror_comments(enabled boolean) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF set_mirror_comments.enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must be true or false, got null' USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.policy p SET mirror_comments = set_mirror_comments.enabled;
    RETURN set_mirror_comments.enabled;
END;
$$;

--
-- Name: FUNCTION set_mirror_comments(enabled boolean); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_mirror_comments(enabled boolean) IS '(admin) Turns the mirror''s comment on finished jobs on or off (the state labels stay); returns the setting.';

--
-- Name: set_model_price(text, numeric, numeric, numeric, numeric); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_model_price(model text, input numeric, output numeric, cache_read numeric DEFAULT NULL::numeric, cache_write numeric DEFAULT NULL::numeric) RETURNS tireless.model_price
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.model_price;
    what text;
    price numeric;
BEGIN
    IF NOT coalesce(tireless.is_model_name(set_model_price.model), false) THEN
        RAISE EXCEPTION 'model must be a model name or a prefix*, got %',
            coalesce(quote_literal(left(set_model_price.model, 220)), 'null')
            USING ERRCODE = 'TL015',
                  HINT = '1 to 200 letters, digits and . _ : / @ + -, with one * at the end for every model it starts.';
    END IF;
    FOR what, price IN VALUES ('input', set_model_price.input), ('output', set_model_price.output),
                              ('cache_read', set_model_price.cache_read), ('cache_write', set_model_price.cache_write) LOOP
        IF (price IS NULL AND what IN ('input', 'output')) OR price < 0 OR price > 1000000 THEN
            RAISE EXCEPTION 'the % price of % must be USD per million tokens from 0 to 1000000, got %',
                what, set_model_price.model, coalesce(price::text, 'null')
                USING ERRCODE = 'TL015';
        END IF;
    END LOOP;
    INSERT INTO tireless.model_price AS p (model, input, output, cache_read, cache_write)
    VALUES (set_model_price.model, set_model_price.input, set_model_price.output, set_model_price.cache_read,
            set_model_price.cache_write)
    ON CONFLICT ON CONSTRAINT one_price_per_model DO UPDATE
       SET input = excluded.input, output = excluded.output, cache_read = excluded.cache_read,
           cache_write = excluded.cache_write, set_at = now()
    RETURNING p.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_model_price(model text, input numeric, output numeric, cache_read numeric, cache_write numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_model_price(model text, input numeric, output numeric, cache_read numeric, cache_write numeric) IS '(admin) The price of a model in USD per million tokens of input, output, cache read and cache write (a cache price left null is the input price); model is a name or a prefix* that prices every model it starts (a name''s own price wins, then the longest prefix). Costs are computed from it whenever they are read. Returns the price. TL015 naming a bad model or price.';

--
-- Name: policy; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.policy (
    singleton boolean DEFAULT true NOT NULL,
    label_prefix text DEFAULT 'tireless'::text NOT NULL,
    backoff_base interval DEFAULT '00:00:30'::interval NOT NULL,
    backoff_cap interval DEFAULT '00:30:00'::interval NOT NULL,
    breaker_threshold integer DEFAULT 5 NOT NULL,
    breaker_cooldown interval DEFAULT '00:15:00'::interval NOT NULL,
    mirror_comments boolean DEFAULT true NOT NULL,
    CONSTRAINT backoff_in_order CHECK (((backoff_base >= '00:00:00'::interval) AND (backoff_cap >= backoff_base))),
    CONSTRAINT breaker_cooldown_not_negative CHECK ((breaker_cooldown >= '00:00:00'::interval)),
    CONSTRAINT breaker_threshold_positive CHECK ((breaker_threshold > 0)),
    CONSTRAINT label_prefix_is_a_word CHECK ((label_prefix ~ '^[^\s/:]{1,100}$'::text)),
    CONSTRAINT policy_is_one_row CHECK (singleton)
);

--
-- Name: TABLE policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.policy IS 'The one row of store-wide settings: label prefix, backoff, circuit breaker. Change it with tireless.set_policy.';

--
-- Name: COLUMN policy.mirror_comments; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.policy.mirror_comments IS 'Whether the mirror comments on an issue when its job ends (one comment per finished job). set_mirror_comments changes it.';

--
-- Name: CONSTRAINT backoff_in_order ON policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT backoff_in_order ON tireless.policy IS 'The backoff base is not negative and the cap is not below it.';

--
-- Name: CONSTRAINT breaker_cooldown_not_negative ON policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT breaker_cooldown_not_negative ON tireless.policy IS 'A cool-down is not negative.';

--
-- Name: CONSTRAINT breaker_threshold_positive ON policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT breaker_threshold_positive ON tireless.policy IS 'A breaker trips after at least one failure.';

--
-- Name: CONSTRAINT label_prefix_is_a_word ON policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT label_prefix_is_a_word ON tireless.policy IS 'The label prefix has no blank, slash or colon.';

--
-- Name: CONSTRAINT policy_is_one_row ON policy; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT policy_is_one_row ON tireless.policy IS 'There is exactly one policy row.';

--
-- Name: set_policy(text, interval, interval, integer, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_policy(label_prefix text DEFAULT NULL::text, backoff_base interval DEFAULT NULL::interval, backoff_cap interval DEFAULT NULL::interval, breaker_threshold integer DEFAULT NULL::integer, breaker_cooldown interval DEFAULT NULL::interval) RETURNS tireless.policy
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    result tireless.policy;
BEGIN
    IF set_policy.label_prefix IS NOT NULL AND set_policy.label_prefix !~ '^[^\s/:]{1,100}$' THEN
        RAISE EXCEPTION 'label_prefix must be 1 to 100 characters without blank, "/" or ":", got %', quote_literal(left(set_policy.label_prefix, 120))
            USING ERRCODE = 'TL005';
    END IF;
    IF set_policy.label_prefix IS NOT NULL THEN
        PERFORM tireless.check_label_prefix(set_policy.label_prefix);
    END IF;
    IF set_policy.breaker_threshold IS NOT NULL AND set_policy.breaker_threshold <= 0 THEN
        RAISE EXCEPTION 'breaker_threshold must be positive, got %', set_policy.breaker_threshold USING ERRCODE = 'TL005';
    END IF;
    IF set_policy.breaker_cooldown < interval '0' THEN
        RAISE EXCEPTION 'breaker_cooldown must not be negative, got %', set_policy.breaker_cooldown USING ERRCODE = 'TL005';
    END IF;
    IF set_policy.backoff_base < interval '0' OR set_policy.backoff_cap < interval '0' THEN
        RAISE EXCEPTION 'backoff must not be negative, got base % and cap %', set_policy.backoff_base, set_policy.backoff_cap
            USING ERRCODE = 'TL005';
    END IF;
    IF coalesce(set_policy.backoff_cap, (SELECT p.backoff_cap FROM tireless.policy p))
       < coalesce(set_policy.backoff_base, (SELECT p.backoff_base FROM tireless.policy p)) THEN
        RAISE EXCEPTION 'backoff_cap % is below backoff_base %',
            coalesce(set_policy.backoff_cap, (SELECT p.backoff_cap FROM tireless.policy p)),
            coalesce(set_policy.backoff_base, (SELECT p.backoff_base FROM tireless.policy p))
            USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.policy p
       SET label_prefix = coalesce(set_policy.label_prefix, p.label_prefix),
           backoff_base = coalesce(set_policy.backoff_base, p.backoff_base),
           backoff_cap = coalesce(set_policy.backoff_cap, p.backoff_cap),
           breaker_threshold = coalesce(set_policy.breaker_threshold, p.breaker_threshold),
           breaker_cooldown = coalesce(set_policy.breaker_cooldown, p.breaker_cooldown)
     RETURNING p.* INTO result;
    RETURN result;
END;
$_$;

--
-- Name: FUNCTION set_policy(label_prefix text, backoff_base interval, backoff_cap interval, breaker_threshold integer, breaker_cooldown interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_policy(label_prefix text, backoff_base interval, backoff_cap interval, breaker_threshold integer, breaker_cooldown interval) IS 'Changes the store-wide settings named (a null argument leaves its setting as it is) and returns them. TL005 for a bad value, and for a label_prefix that makes a label longer than a registered forge takes (tireless.check_label_prefix: 50 characters on GitHub).';

--
-- Name: set_repo_budget(text, text, text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_repo_budget(forge text, owner text, repo text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint DEFAULT NULL::bigint, cost_per_day numeric DEFAULT NULL::numeric, tokens_per_job bigint DEFAULT NULL::bigint, cost_per_job numeric DEFAULT NULL::numeric, tokens_per_attempt bigint DEFAULT NULL::bigint, cost_per_attempt numeric DEFAULT NULL::numeric, tokens_per_issue bigint DEFAULT NULL::bigint, cost_per_issue numeric DEFAULT NULL::numeric) RETURNS tireless.repo_limit
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    current tireless.repo_limit;
BEGIN
    PERFORM tireless.check_budget(set_repo_budget.runs_per_day, set_repo_budget.agent_time_per_day);
    PERFORM tireless.check_spend_budget(set_repo_budget.tokens_per_day, set_repo_budget.cost_per_day,
                                        set_repo_budget.tokens_per_job, set_repo_budget.cost_per_job,
                                        set_repo_budget.tokens_per_attempt, set_repo_budget.cost_per_attempt,
                                        set_repo_budget.tokens_per_issue, set_repo_budget.cost_per_issue);
    SELECT * INTO current FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (set_repo_budget.forge, set_repo_budget.owner, set_repo_budget.repo);
    RETURN tireless.set_repo_limit(set_repo_budget.forge, set_repo_budget.owner, set_repo_budget.repo,
                                   current.capacity, set_repo_budget.runs_per_day, set_repo_budget.agent_time_per_day,
                                   set_repo_budget.tokens_per_day, set_repo_budget.cost_per_day,
                                   set_repo_budget.tokens_per_job, set_repo_budget.cost_per_job,
                                   set_repo_budget.tokens_per_attempt, set_repo_budget.cost_per_attempt,
                                   set_repo_budget.tokens_per_issue, set_repo_budget.cost_per_issue);
END;
$$;

--
-- Name: FUNCTION set_repo_budget(forge text, owner text, repo text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_repo_budget(forge text, owner text, repo text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) IS '(admin) The tracked repository''s budgets, all lanes together. Daily (the UTC calendar day): at most runs_per_day claims, and no claim once its attempts ended today held their claims agent_time_per_day in all, or its agents used tokens_per_day tokens or cost_per_day USD today. Per job, per issue and per attempt: once it used tokens_per_job tokens or cost_per_job USD (or the per issue, per attempt ones), the gateway refuses its next model request and the job fails (the attempt only, for a budget per attempt). Null: no budget of that kind. Returns its limits. TL005 for a bad budget, TL008 when it is not tracked.';

--
-- Name: set_repo_capacity(text, text, text, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_repo_capacity(forge text, owner text, repo text, capacity integer) RETURNS tireless.repo_limit
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    current tireless.repo_limit;
BEGIN
    IF set_repo_capacity.capacity < 0 THEN
        RAISE EXCEPTION 'capacity must be null (unlimited) or at least 0, got %', set_repo_capacity.capacity
            USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO current FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (set_repo_capacity.forge, set_repo_capacity.owner, set_repo_capacity.repo);
    RETURN tireless.set_repo_limit(set_repo_capacity.forge, set_repo_capacity.owner, set_repo_capacity.repo,
                                   set_repo_capacity.capacity, current.runs_per_day, current.agent_time_per_day,
                                   current.tokens_per_day, current.cost_per_day, current.tokens_per_job,
                                   current.cost_per_job, current.tokens_per_attempt, current.cost_per_attempt,
                                   current.tokens_per_issue, current.cost_per_issue);
END;
$$;

--
-- Name: FUNCTION set_repo_capacity(forge text, owner text, repo text, capacity integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_repo_capacity(forge text, owner text, repo text, capacity integer) IS '(admin) At most capacity claimed jobs of the tracked repository at once, all lanes together (null: unlimited; 0 holds its work back). Returns its limits. TL005 for a negative capacity, TL008 when it is not tracked.';

--
-- Name: set_repo_delivery(text, text, text, text[], text[], boolean, integer, bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_repo_delivery(forge text, owner text, repo text, protected text[] DEFAULT NULL::text[], allowed text[] DEFAULT NULL::text[], allow_ci boolean DEFAULT NULL::boolean, max_files integer DEFAULT NULL::integer, max_bytes bigint DEFAULT NULL::bigint) RETURNS tireless.repo_delivery
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.repo_delivery;
BEGIN
    PERFORM tireless.check_path_globs('protected', set_repo_delivery.protected);
    PERFORM tireless.check_path_globs('allowed', set_repo_delivery.allowed);
    IF set_repo_delivery.max_files < 0 THEN
        RAISE EXCEPTION 'max_files must be null (as it is), 0 (the runner''s default) or positive, got %',
            set_repo_delivery.max_files USING ERRCODE = 'TL005';
    END IF;
    IF set_repo_delivery.max_bytes < 0 THEN
        RAISE EXCEPTION 'max_bytes must be null (as it is), 0 (the runner''s default) or positive, got %',
            set_repo_delivery.max_bytes USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.check_tracked(set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo);
    IF num_nonnulls(set_repo_delivery.protected, set_repo_delivery.allowed, set_repo_delivery.allow_ci,
                    set_repo_delivery.max_files, set_repo_delivery.max_bytes) = 0 THEN
        -- Nothing to change: the policy as it is (the defaults when none was set), and no row written.
        SELECT * INTO result FROM tireless.repo_delivery d
         WHERE (d.forge, d.owner, d.repo) = (set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo);
        IF NOT FOUND THEN
            result := ROW(set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo, '{}', '{}', false, NULL, NULL);
        END IF;
        RETURN result;
    END IF;
    -- One statement under the row's lock: concurrent setters of different settings both land.
    INSERT INTO tireless.repo_delivery AS d (forge, owner, repo, protected, allowed, allow_ci, max_files, max_bytes)
    VALUES (set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo,
            coalesce(set_repo_delivery.protected, '{}'), coalesce(set_repo_delivery.allowed, '{}'),
            coalesce(set_repo_delivery.allow_ci, false),
            nullif(set_repo_delivery.max_files, 0), nullif(set_repo_delivery.max_bytes, 0))
    ON CONFLICT ON CONSTRAINT one_delivery_policy_per_repo DO UPDATE
       SET protected = coalesce(set_repo_delivery.protected, d.protected),
           allowed = coalesce(set_repo_delivery.allowed, d.allowed),
           allow_ci = coalesce(set_repo_delivery.allow_ci, d.allow_ci),
           max_files = CASE WHEN set_repo_delivery.max_files IS NULL THEN d.max_files ELSE excluded.max_files END,
           max_bytes = CASE WHEN set_repo_delivery.max_bytes IS NULL THEN d.max_bytes ELSE excluded.max_bytes END
    RETURNING d.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_repo_delivery(forge text, owner text, repo text, protected text[], allowed text[], allow_ci boolean, max_files integer, max_bytes bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_repo_delivery(forge text, owner text, repo text, protected text[], allowed text[], allow_ci boolean, max_files integer, max_bytes bigint) IS '(admin) The tracked repository''s delivery policy, which the runner checks an agent''s change against (job_brief): the globs of paths it may not touch (protected), those it may touch all the same (allowed), whether it may change the forge''s CI definitions (allow_ci), at most max_files files and max_bytes bytes (0: the runner''s default). A null argument leaves its setting as it is; a list replaces the list. Returns the policy. TL005 for a bad glob or limit, TL008 when the repository is not tracked.';

--
-- Name: set_repo_limit(text, text, text, integer, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_repo_limit(forge text, owner text, repo text, capacity integer, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) RETURNS tireless.repo_limit
    LANGUAGE plpgsql
    AS $$
DECLARE
    before tireless.repo_limit;
    result tireless.repo_limit;
    agent_time_changes boolean;
    runs_start boolean;
BEGIN
    PERFORM tireless.check_tracked(set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo);
    SELECT * INTO before FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo);
    agent_time_changes := set_repo_limit.agent_time_per_day IS NOT NULL OR before.agent_time_per_day IS NOT NULL;
    runs_start := set_repo_limit.runs_per_day IS NOT NULL AND before.runs_per_day IS NULL;
    IF agent_time_changes OR runs_start THEN
        PERFORM tireless.lock_jobs_for_a_budget();
    END IF;
    result := ROW(set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo, set_repo_limit.capacity,
                  set_repo_limit.runs_per_day, set_repo_limit.agent_time_per_day, set_repo_limit.tokens_per_day,
                  set_repo_limit.cost_per_day, set_repo_limit.tokens_per_job, set_repo_limit.cost_per_job,
                  set_repo_limit.tokens_per_attempt, set_repo_limit.cost_per_attempt, set_repo_limit.tokens_per_issue,
                  set_repo_limit.cost_per_issue);
    IF num_nonnulls(result.capacity, result.runs_per_day, result.agent_time_per_day, result.tokens_per_day,
                    result.cost_per_day, result.tokens_per_job, result.cost_per_job, result.tokens_per_attempt,
                    result.cost_per_attempt, result.tokens_per_issue, result.cost_per_issue) = 0 THEN
        DELETE FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (result.forge, result.owner, result.repo);
    ELSE
        INSERT INTO tireless.repo_limit AS l VALUES (result.*)
        ON CONFLICT ON CONSTRAINT one_limit_row_per_repo DO UPDATE
           SET capacity = excluded.capacity, runs_per_day = excluded.runs_per_day,
               agent_time_per_day = excluded.agent_time_per_day, tokens_per_day = excluded.tokens_per_day,
               cost_per_day = excluded.cost_per_day, tokens_per_job = excluded.tokens_per_job,
               cost_per_job = excluded.cost_per_job, tokens_per_attempt = excluded.tokens_per_attempt,
               cost_per_attempt = excluded.cost_per_attempt, tokens_per_issue = excluded.tokens_per_issue,
               cost_per_issue = excluded.cost_per_issue;
    END IF;
    UPDATE tireless.lane_repo r
       SET limited = num_nonnulls(result.capacity, result.runs_per_day, result.agent_time_per_day,
                                  result.tokens_per_day, result.cost_per_day, result.tokens_per_job,
                                  result.cost_per_job, result.tokens_per_attempt, result.cost_per_attempt,
                                  result.tokens_per_issue, result.cost_per_issue) > 0
     WHERE (r.forge, r.owner, r.repo) = (result.forge, result.owner, result.repo);
    IF agent_time_changes THEN
        PERFORM tireless.arm_agent_time_count();
    END IF;
    IF runs_start THEN
        PERFORM tireless.start_counting_runs(NULL, result.forge, result.owner, result.repo);
    END IF;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_repo_limit(forge text, owner text, repo text, capacity integer, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_repo_limit(forge text, owner text, repo text, capacity integer, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) IS 'Writes a tracked repository''s capacity and budgets (no row when all are null), tells its turns whether they are limited, switches the count of agent time when a budget of agent time is written, and starts counting runs when a budget of runs starts. TL008 when it is not tracked.';

--
-- Name: repo_revisions; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.repo_revisions (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    revise_on_failed_checks boolean DEFAULT false NOT NULL,
    max_revisions integer DEFAULT 5 NOT NULL,
    CONSTRAINT max_revisions_in_range CHECK (((max_revisions >= 0) AND (max_revisions <= 100)))
);

--
-- Name: TABLE repo_revisions; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.repo_revisions IS 'A repository''s revision policy (tireless.set_repo_revisions); a repository without a row: no revision for failed checks, at most 5 revisions per issue. Kept when the repository is untracked, as its delivery policy is.';

--
-- Name: COLUMN repo_revisions.revise_on_failed_checks; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_revisions.revise_on_failed_checks IS 'Whether failed checks on a pull request''s head ask for a revision.';

--
-- Name: COLUMN repo_revisions.max_revisions; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.repo_revisions.max_revisions IS 'How many revisions an issue gets after a person last asked on the issue (its mode label, or a command there).';

--
-- Name: CONSTRAINT max_revisions_in_range ON repo_revisions; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT max_revisions_in_range ON tireless.repo_revisions IS 'At most 100 revisions per request (0: none).';

--
-- Name: set_repo_revisions(text, text, text, boolean, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.set_repo_revisions(forge text, owner text, repo text, revise_on_failed_checks boolean DEFAULT NULL::boolean, max_revisions integer DEFAULT NULL::integer) RETURNS tireless.repo_revisions
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    result tireless.repo_revisions;
BEGIN
    IF set_repo_revisions.max_revisions NOT BETWEEN 0 AND 100 THEN
        RAISE EXCEPTION 'max_revisions must be from 0 to 100, got %', set_repo_revisions.max_revisions USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.check_tracked(set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo);
    IF num_nonnulls(set_repo_revisions.revise_on_failed_checks, set_repo_revisions.max_revisions) = 0 THEN
        SELECT * INTO result FROM tireless.repo_revisions rr
         WHERE (rr.forge, rr.owner, rr.repo) = (set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo);
        IF NOT FOUND THEN
            result := ROW(set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo, false, 5);
        END IF;
        RETURN result;
    END IF;
    INSERT INTO tireless.repo_revisions AS rr (forge, owner, repo, revise_on_failed_checks, max_revisions)
    VALUES (set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo,
            coalesce(set_repo_revisions.revise_on_failed_checks, false), coalesce(set_repo_revisions.max_revisions, 5))
    ON CONFLICT ON CONSTRAINT one_revision_policy_per_repo DO UPDATE
       SET revise_on_failed_checks = coalesce(set_repo_revisions.revise_on_failed_checks, rr.revise_on_failed_checks),
           max_revisions = coalesce(set_repo_revisions.max_revisions, rr.max_revisions)
    RETURNING rr.* INTO result;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION set_repo_revisions(forge text, owner text, repo text, revise_on_failed_checks boolean, max_revisions integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.set_repo_revisions(forge text, owner text, repo text, revise_on_failed_checks boolean, max_revisions integer) IS '(admin) The tracked repository''s revision policy: whether failed checks on tireless''s pull request ask for a revision (revise_on_failed_checks, default false) and how many revisions an issue gets after a person last asked on it (max_revisions, 0 to 100, default 5). A null argument leaves its setting as it is. Returns the policy. TL005 for a bad limit, TL008 when the repository is not tracked.';

--
-- Name: settle_dependencies(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.settle_dependencies(touched jsonb) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    released integer;
    woken text[];
BEGIN
    IF touched IS NULL OR jsonb_array_length(touched) = 0 THEN
        RETURN 0;
    END IF;
    WITH t AS (
        SELECT x.forge, x.owner, x.repo, x.number
          FROM jsonb_to_recordset(settle_dependencies.touched) AS x(forge text, owner text, repo text, number integer, body boolean)
         WHERE x.body
    ), parsed AS (
        -- A repository named in another case than it is tracked under (Acme/Widgets#3) is the
        -- tracked one: the forges match names without case.
        SELECT DISTINCT t.forge, t.owner, t.repo, t.number, coalesce(tr.owner, b.depends_on_owner) AS depends_on_owner,
               coalesce(tr.repo, b.depends_on_repo) AS depends_on_repo, b.depends_on_number
          FROM t
          JOIN tireless.issue s ON (s.forge, s.owner, s.repo, s.number) = (t.forge, t.owner, t.repo, t.number)
         CROSS JOIN LATERAL tireless.body_dependencies(s.body, t.owner, t.repo, t.number) AS b
          LEFT JOIN tireless.tracked_repo tr
                 ON (tr.forge, lower(tr.owner), lower(tr.repo)) = (t.forge, lower(b.depends_on_owner), lower(b.depends_on_repo))
         WHERE (coalesce(tr.owner, b.depends_on_owner), coalesce(tr.repo, b.depends_on_repo), b.depends_on_number)
               IS DISTINCT FROM (t.owner, t.repo, t.number)
    ), dropped AS (
        DELETE FROM tireless.issue_dependency d
         USING t
         WHERE (d.forge, d.owner, d.repo, d.number) = (t.forge, t.owner, t.repo, t.number) AND d.source = 'body'
           AND NOT EXISTS (SELECT FROM parsed p
                            WHERE (p.forge, p.owner, p.repo, p.number, p.depends_on_owner, p.depends_on_repo, p.depends_on_number)
                                  = (d.forge, d.owner, d.repo, d.number, d.depends_on_owner, d.depends_on_repo, d.depends_on_number))
    )
    INSERT INTO tireless.issue_dependency (forge, owner, repo, number, depends_on_owner, depends_on_repo, depends_on_number, source)
    SELECT p.forge, p.owner, p.repo, p.number, p.depends_on_owner, p.depends_on_repo, p.depends_on_number, 'body'
      FROM parsed p
    ON CONFLICT DO NOTHING;

    -- A new statement: it sees the dependencies written above.
    WITH t AS (
        SELECT DISTINCT x.forge, x.owner, x.repo, x.number
          FROM jsonb_to_recordset(settle_dependencies.touched) AS x(forge text, owner text, repo text, number integer)
    ), affected AS (
        SELECT t.forge, t.owner, t.repo, t.number FROM t
        UNION
        SELECT d.forge, d.owner, d.repo, d.number
          FROM t JOIN tireless.issue_dependency d
                   ON (d.forge, d.depends_on_owner, d.depends_on_repo, d.depends_on_number) = (t.forge, t.owner, t.repo, t.number)
    ), judged AS (
        SELECT j.id, j.forge, j.owner, j.repo, j.number, w.waiting_on, cy.cycle,
               CASE WHEN w.waiting_on IS NOT NULL
                    THEN tireless.waiting_note(j.forge, w.waiting_on, cy.cycle)
                    WHEN j.note LIKE 'waiting on %' THEN NULL
                    ELSE j.note END AS note
          FROM affected a
          JOIN tireless.job j ON (j.forge, j.owner, j.repo, j.number) = (a.forge, a.owner, a.repo, a.number)
         CROSS JOIN LATERAL (SELECT tireless.open_dependencies(j.forge, j.owner, j.repo, j.number)) AS w(waiting_on)
         CROSS JOIN LATERAL (SELECT CASE WHEN w.waiting_on IS NOT NULL
                                         THEN tireless.dependency_cycle(j.forge, j.owner, j.repo, j.number) END) AS cy(cycle)
         WHERE j.state = 'pending'
    ), reported AS (
        -- A cycle is told once on each issue in it that has a pending job: one comment per issue and
        -- distinct cycle while it stands (tireless.cycle_report; the mirror posts it). Nothing is
        -- written while the same cycle is seen again.
        INSERT INTO tireless.cycle_report (forge, owner, repo, number, cycle, job_id)
        SELECT jd.forge, jd.owner, jd.repo, jd.number, left(jd.cycle, 4000), jd.id
          FROM judged jd
         CROSS JOIN tireless.policy p
         WHERE jd.cycle IS NOT NULL AND p.mirror_comments
           AND EXISTS (SELECT FROM tireless.tracked_repo r WHERE (r.forge, r.owner, r.repo) = (jd.forge, jd.owner, jd.repo))
           AND NOT EXISTS (SELECT FROM tireless.cycle_report r
                            WHERE (r.forge, r.owner, r.repo, r.number, r.cycle) = (jd.forge, jd.owner, jd.repo, jd.number, left(jd.cycle, 4000))
                              AND r.broken_at IS NULL)
         -- In one order, so that two polls telling the same cycle never wait for each other in a circle.
         ORDER BY jd.forge, jd.owner, jd.repo, jd.number
        ON CONFLICT (forge, owner, repo, number, cycle) WHERE broken_at IS NULL DO NOTHING
        RETURNING cycle_report.id, cycle_report.forge, cycle_report.owner, cycle_report.repo, cycle_report.number
    ), told AS (
        -- Each report's comment is a write of the outbox (tireless.forge_write).
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, report_id)
        SELECT 'cycle', r.forge, r.owner, r.repo, r.number, r.id FROM reported r ORDER BY r.id
    ), broken AS (
        -- The issue's job is on no cycle now, or on another: that report is done with (a comment not
        -- yet written is dropped), and the same cycle made again is told again.
        UPDATE tireless.cycle_report r SET broken_at = now()
          FROM judged jd
         WHERE (r.forge, r.owner, r.repo, r.number) = (jd.forge, jd.owner, jd.repo, jd.number)
           AND r.broken_at IS NULL AND r.cycle IS DISTINCT FROM left(jd.cycle, 4000)
        RETURNING r.id
    ), dropped AS (
        DELETE FROM tireless.forge_write w USING broken b
         WHERE w.kind = 'cycle' AND w.report_id = b.id AND w.written_at IS NULL
    ), changed AS (
        UPDATE tireless.job j
           SET waiting_on = jd.waiting_on, note = jd.note, updated_at = now()
          FROM judged jd
         WHERE j.id = jd.id AND j.state = 'pending'
           AND (j.waiting_on, j.note) IS DISTINCT FROM (jd.waiting_on, jd.note)
        RETURNING j.id, j.forge, j.owner, j.repo, j.number, j.lane, jd.waiting_on IS NULL AS free
    ), mirrored AS (
        -- The mirror shows <prefix>/state/waiting while the job waits (no event: the job stays pending).
        UPDATE tireless.mirror_issue mi SET waiting = NOT c.free
          FROM changed c
         WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (c.forge, c.owner, c.repo, c.number)
           AND mi.job_id = c.id AND mi.state = 'pending' AND mi.waiting = c.free
    )
    SELECT count(*) FILTER (WHERE c.free), coalesce(array_agg(DISTINCT c.lane) FILTER (WHERE c.free), '{}')
      INTO released, woken
      FROM changed c;
    PERFORM tireless.announce_work(l) FROM unnest(woken) AS l;
    RETURN released;
END;
$$;

--
-- Name: FUNCTION settle_dependencies(touched jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.settle_dependencies(touched jsonb) IS 'After the work rule stored a batch (touched: [{forge, owner, repo, number, body}]): records the `Depends on` lines of each body shown, then sets job.waiting_on (and the note `waiting on #3, #7`, with the cycle if any) of the pending jobs of those issues and of the issues that depend on them; a job whose dependencies have all closed is released and its lane woken. A job found on a cycle has it reported once on its issue (tireless.cycle_report, a write of the outbox tireless.forge_write), again only after the cycle was broken. Returns how many jobs it released. Private: apply_work_rule calls it.';

--
-- Name: short_duration(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.short_duration(span interval) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN s.total = 0 THEN round(extract(epoch FROM span) * 1000)::bigint || 'ms'
                ELSE concat(nullif(s.total / 86400, 0) || 'd', nullif(s.total % 86400 / 3600, 0) || 'h',
                            nullif(s.total % 3600 / 60, 0) || 'm', nullif(s.total % 60, 0) || 's') END
      FROM (SELECT floor(extract(epoch FROM span))::bigint AS total) AS s;
$$;

--
-- Name: FUNCTION short_duration(span interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.short_duration(span interval) IS 'An interval written short, as the watchdog''s notes show it: 2h, 30m, 1h30m, 45s, 1d, 250ms (whole seconds above one second).';

--
-- Name: size_bytes(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.size_bytes(size text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
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
$_$;

--
-- Name: FUNCTION size_bytes(size text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.size_bytes(size text) IS 'The bytes a size names (a number of bytes, or a number with K, M, G or T, each 1024 times the last, an optional i and B: 512M, 512MiB, 1.5G), or null when it is not a size.';

--
-- Name: size_limit(text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.size_limit(lane text, what text, size text, smallest text) RETURNS bigint
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

--
-- Name: FUNCTION size_limit(lane text, what text, size text, smallest text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.size_limit(lane text, what text, size text, smallest text) IS 'The bytes of a lane''s size limit as tireless.set_lane_limits takes it (what: memory or disk), null for null or none; TL005 naming the value unless it is a size from smallest (a size, 16 MiB) to 1 PiB.';

--
-- Name: spend_text(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.spend_text(job_id bigint) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT format('%s model request%s, %s tokens, %s%s'::text, tireless.tokens_text(sum(u.requests)),
         CASE
             WHEN (sum(u.requests) = (1)::numeric) THEN ''::text
             ELSE 's'::text
         END, tireless.tokens_text(sum((((u.input_tokens + u.output_tokens) + u.cache_read_tokens) + u.cache_write_tokens))),
         CASE
             WHEN bool_and((u.cost IS NULL)) THEN 'unpriced'::text
             ELSE (tireless.usd_text(sum(u.cost)) ||
             CASE
                 WHEN bool_or((u.cost IS NULL)) THEN ' + unpriced'::text
                 ELSE ''::text
             END)
         END,
         CASE
             WHEN (sum(u.unread) > (0)::numeric) THEN format(' (%s with tokens unknown)'::text, tireless.tokens_text(sum(u.unread)))
             ELSE ''::text
         END) AS format
    FROM tireless.job_model_usage(spend_text.job_id) u(attempt, model, requests, unread, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost)
  HAVING (count(*) > 0);
END;

--
-- Name: FUNCTION spend_text(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.spend_text(job_id bigint) IS 'What the job''s agent spent, in one line: 12 model requests, 84,210 tokens, $0.41 (unpriced, or + unpriced, for models without a price; the answers whose tokens are unknown said); null when it made no model request through a gateway.';

--
-- Name: start_counting_runs(text, text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.start_counting_runs(lane text, forge text, owner text, repo text) RETURNS void
    LANGUAGE sql
    BEGIN ATOMIC
 UPDATE tireless.lane_repo r SET runs = 0, agent_time =
         CASE
             WHEN (r.spend_day = tireless.spend_day()) THEN r.agent_time
             ELSE '00:00:00'::interval
         END, spend_day = tireless.spend_day()
   WHERE
         CASE
             WHEN (start_counting_runs.lane IS NOT NULL) THEN ((r.lane = start_counting_runs.lane) AND (NOT (EXISTS ( SELECT
                FROM tireless.repo_limit l
               WHERE (((l.forge = r.forge) AND (l.owner = r.owner) AND (l.repo = r.repo)) AND (l.runs_per_day IS NOT NULL))))))
             ELSE (((r.forge = start_counting_runs.forge) AND (r.owner = start_counting_runs.owner) AND (r.repo = start_counting_runs.repo)) AND (NOT (EXISTS ( SELECT
                FROM tireless.lane l
               WHERE ((l.name = r.lane) AND (l.runs_per_day IS NOT NULL))))))
         END;
END;

--
-- Name: FUNCTION start_counting_runs(lane text, forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.start_counting_runs(lane text, forge text, owner text, repo text) IS 'A new budget of runs starts counting: today''s runs of the lane''s turns (lane given) or of the repository''s (lane null) become 0, except turns the other kind of budget of runs already counts.';

--
-- Name: stop_finish_note(text, text, timestamp with time zone, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.stop_finish_note(to_state text, note text, cancel_requested_at timestamp with time zone, cancel_note text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE
        WHEN stop_finish_note.cancel_requested_at IS NULL THEN stop_finish_note.note
        WHEN stop_finish_note.to_state = 'cancelled'
            THEN coalesce(stop_finish_note.cancel_note, stop_finish_note.note, 'issue withdrew its request')
        WHEN stop_finish_note.to_state = 'delivered'
            THEN concat_ws('; ', stop_finish_note.note,
                           format('the cancel requested at %s (%s) came after the work was done',
                                  to_char(stop_finish_note.cancel_requested_at AT TIME ZONE 'UTC', 'HH24:MI:SS"Z"'),
                                  coalesce(stop_finish_note.cancel_note, 'issue withdrew its request')))
        ELSE stop_finish_note.note END;
$$;

--
-- Name: FUNCTION stop_finish_note(to_state text, note text, cancel_requested_at timestamp with time zone, cancel_note text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.stop_finish_note(to_state text, note text, cancel_requested_at timestamp with time zone, cancel_note text) IS 'The note a holder''s finish leaves on a job: its own note, unless the job was asked to stop (cancel_requested_at): then ended cancelled, the stop''s note (cancel_note); delivered anyway, the holder''s note and "the cancel requested at 12:00:03Z (cancelled by alice) came after the work was done".';

--
-- Name: stop_issue_work(text, text, text, integer, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.stop_issue_work(forge text, owner text, repo text, number integer, note text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    stopped bigint;
BEGIN
    UPDATE tireless.job j
       SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
           note = CASE WHEN j.state = 'pending' THEN stop_issue_work.note ELSE j.note END,
           cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
           cancel_note = CASE WHEN j.state = 'claimed' THEN stop_issue_work.note END,
           updated_at = now()
     WHERE (j.forge, j.owner, j.repo, j.number) = (stop_issue_work.forge, stop_issue_work.owner, stop_issue_work.repo, stop_issue_work.number)
       AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL))
    RETURNING j.id INTO stopped;
    UPDATE tireless.ask a SET outcome = 'withdrawn'
     WHERE (a.forge, a.owner, a.repo, a.number) = (stop_issue_work.forge, stop_issue_work.owner, stop_issue_work.repo, stop_issue_work.number)
       AND a.outcome = 'waiting';
    RETURN stopped;
END;
$$;

--
-- Name: FUNCTION stop_issue_work(forge text, owner text, repo text, number integer, note text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.stop_issue_work(forge text, owner text, repo text, number integer, note text) IS 'Rule 2 for a `/tireless stop`: the issue''s pending job is cancelled and a claimed one asked to stop (its holder hears it at once), with note; its waiting asks are withdrawn. Returns the job it stopped, or null.';

--
-- Name: task_marker(bigint, integer); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.task_marker(job_id bigint, task integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:task:%s:%s -->'::text, job_id, task);

--
-- Name: FUNCTION task_marker(job_id bigint, task integer); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.task_marker(job_id bigint, task integer) IS 'The hidden last line of the body of the issue opened for a plan''s task; the mirror counts it only in an issue opened by its own forge account.';

--
-- Name: task_write(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.task_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object(
               'job_id', t.job_id, 'task', t.task, 'parent_number', j.number,
               'title', left(regexp_replace(btrim(tireless.safe_comment_text(t.title)), '\s+', ' ', 'g'), 200),
               -- The task's body made safe, cut so that the issue's body fits (tireless.fit_report).
               'body', coalesce(nullif(tireless.fit_report(t.body, tireless.forge_body_limit() - 2 - length(links.text)), '')
                                || E'\n\n', '') || links.text,
               'labels', to_jsonb(ARRAY(SELECT l FROM unnest(ARRAY[CASE WHEN NOT t.proposal THEN p.label_prefix END,
                                                               p.label_prefix || '/implement',
                                                               p.label_prefix || '/agent:' || t.lane]) AS l
                                         WHERE l IS NOT NULL)),
               'marker', tireless.task_marker(t.job_id, t.task),
               'since', j.updated_at - interval '5 minutes',
               -- The issues it depends on (its tasks' children and its "#N"), which the mirror also sets
               -- as the forge's own relations where the forge has them.
               'depends_on', to_jsonb(ARRAY(SELECT CASE WHEN jsonb_typeof(d.v) = 'number'
                                                        THEN (SELECT o.child_number FROM tireless.plan_task o
                                                               WHERE o.job_id = t.job_id AND o.task = (d.v)::numeric::integer)
                                                        ELSE substr(d.v #>> '{}', 2)::integer END
                                              FROM jsonb_array_elements(t.depends_on) WITH ORDINALITY AS d(v, position)
                                             ORDER BY d.position)))
      FROM tireless.plan_task t
      JOIN tireless.job j ON j.id = t.job_id
     CROSS JOIN tireless.policy p
     CROSS JOIN LATERAL (
           SELECT 'Part of #' || j.number
                  || coalesce(E'\n\n' || (SELECT string_agg('Depends on #' || CASE WHEN jsonb_typeof(d.v) = 'number'
                                                          THEN (SELECT o.child_number::text FROM tireless.plan_task o
                                                                 WHERE o.job_id = t.job_id AND o.task = (d.v)::numeric::integer)
                                                          ELSE substr(d.v #>> '{}', 2) END, E'\n' ORDER BY d.position)
                                            FROM jsonb_array_elements(t.depends_on) WITH ORDINALITY AS d(v, position)), '')
                  || E'\n\n' || format('Opened by tireless for job %s (%s %s).', t.job_id,
                                       CASE WHEN t.proposal THEN 'proposal' ELSE 'task' END, t.task)
                  || E'\n\n' || tireless.task_marker(t.job_id, t.task) AS text) AS links
     WHERE (t.job_id, t.task) = (w.job_id, w.task)
       AND t.child_number IS NULL
       AND j.state = 'delivered' AND t.attempt = j.attempts
       -- A dependency is opened before its dependents: its number goes in their bodies.
       AND NOT EXISTS (SELECT FROM jsonb_array_elements(t.depends_on) AS d(v)
                        JOIN tireless.plan_task o ON o.job_id = t.job_id
                              AND o.task = CASE WHEN jsonb_typeof(d.v) = 'number' THEN (d.v)::numeric::integer END
                       WHERE o.child_number IS NULL);
$$;

--
-- Name: FUNCTION task_write(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.task_write(w tireless.forge_write) IS 'What a task write (kind task) opens, as tireless.forge_writes_due lists it: the issue of a task of a delivered plan or discover job, once the task''s dependencies are opened (null until then, or while the job is not delivered): {job_id, task, parent_number, title and body (the task''s made safe and cut so that the body fits in tireless.forge_body_limit(), "Part of #P", a "Depends on #N" line per dependency, the marker line), labels (the opt-in for a plan''s child, not for a proposal; <prefix>/implement; the agent label of its lane), marker, since (when to look from for an issue already opened with it), depends_on (the numbers of the issues it depends on: the mirror sets them as the forge''s own relations too)}.';

--
-- Name: task_written(tireless.forge_write, jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.task_written(w tireless.forge_write, result jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $_$
DECLARE
    child integer;
    queued tireless.plan_task;
BEGIN
    IF jsonb_typeof(task_written.result -> 'number') = 'number' AND (task_written.result ->> 'number') ~ '^[0-9]{1,9}$' THEN
        child := (task_written.result ->> 'number')::integer;
    END IF;
    IF child IS NULL OR child < 1 THEN
        RAISE EXCEPTION 'give the child issue''s number or the error that says what failed, got number %',
            coalesce(task_written.result ->> 'number', 'null') USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.lock_repo_issues(w.forge, w.owner, w.repo);
    SELECT * INTO queued FROM tireless.plan_task t WHERE (t.job_id, t.task) = (w.job_id, w.task) FOR UPDATE;
    IF queued.child_number IS NULL THEN
        UPDATE tireless.plan_task t SET child_number = child, opened_at = now()
         WHERE (t.job_id, t.task) = (queued.job_id, queued.task);
        -- A job the poller made for the child before this was recorded (a create whose answer was
        -- lost, then read) gets its parent now.
        UPDATE tireless.job j SET parent_id = queued.job_id, updated_at = now()
         WHERE (j.forge, j.owner, j.repo, j.number) = (queued.forge, queued.owner, queued.repo, child)
           AND j.state IN ('pending', 'claimed') AND j.parent_id IS NULL AND j.id <> queued.job_id;
    END IF;
END;
$_$;

--
-- Name: FUNCTION task_written(w tireless.forge_write, result jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.task_written(w tireless.forge_write, result jsonb) IS 'The mirror opened (or found by its marker) issue result.number for the task of write w (recorded once; a live job of that issue without a parent gets the plan''s job as its parent). TL005 without a number.';

--
-- Name: track_repo(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.track_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    top bigint;
BEGIN
    PERFORM tireless.check_repo(track_repo.forge, track_repo.owner, track_repo.repo);
    PERFORM tireless.check_forge(track_repo.forge);
    INSERT INTO tireless.tracked_repo (forge, owner, repo)
    VALUES (track_repo.forge, track_repo.owner, track_repo.repo)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO tireless.repo_poll (forge, owner, repo) VALUES (track_repo.forge, track_repo.owner, track_repo.repo);
    -- The mirror reads the history from here on: what happened before the tracking is not shown.
    top := tireless.history_top();
    INSERT INTO tireless.mirror_repo (forge, owner, repo, event_cursor, scanned_to)
    VALUES (track_repo.forge, track_repo.owner, track_repo.repo, top, top);
    PERFORM tireless.announce_poll(track_repo.forge);
    RETURN true;
END;
$$;

--
-- Name: FUNCTION track_repo(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.track_repo(forge text, owner text, repo text) IS 'Starts tracking a repository of a registered forge, so enqueue accepts its issues, the poller reads it (due at once, and woken: tireless_poll) and the mirror shows its jobs from now on; false if it was tracked already (its owner and name in any case: tracked_key says under which). TL008, with the command that registers it, for a forge that is not registered; TL005 for a malformed key.';

--
-- Name: tracked_key(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.tracked_key(forge text, owner text, repo text) RETURNS TABLE(forge text, owner text, repo text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t
     WHERE t.forge = tracked_key.forge
       AND lower(t.owner) = lower(tracked_key.owner) AND lower(t.repo) = lower(tracked_key.repo);
$$;

--
-- Name: FUNCTION tracked_key(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.tracked_key(forge text, owner text, repo text) IS 'The key a repository is tracked under, matching owner and name without case (a webhook names it in the forge''s canonical case); no row when it is not tracked.';

--
-- Name: tracked_repos(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.tracked_repos() RETURNS TABLE(forge text, owner text, repo text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t ORDER BY t.forge, t.owner, t.repo;
$$;

--
-- Name: FUNCTION tracked_repos(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.tracked_repos() IS 'The repositories the poller should read, in order.';

--
-- Name: transcript_limit(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.transcript_limit() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((20 * 1024) * 1024);

--
-- Name: FUNCTION transcript_limit(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.transcript_limit() IS 'The bytes of exchanges (requests and answers, before compression) an attempt''s transcript keeps: 20 MiB.';

--
-- Name: transition(bigint, text, text, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.transition(job_id bigint, to_state text, worker text DEFAULT NULL::text, note text DEFAULT NULL::text, token uuid DEFAULT NULL::uuid) RETURNS tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    target tireless.job_state;
    job tireless.job;
    budget integer;
    final_state tireless.job_state;
    final_note text := transition.note;
    result tireless.job;
    lane_capped boolean;
    breaker_dirty boolean;
    ended record;
BEGIN
    -- The holder ends its claim (delivered, failed, cancelled): one test, then one statement that
    -- takes the row lock, tests the holder and reads the lane's settings. One test, not one per
    -- argument: PL/pgSQL prepares each expression again in every transaction, and every finish is a
    -- transaction of its own. When the statement changes nothing (not the holder), or the call is
    -- any other move, the analysis below decides, under the row lock, which refusal or move it is.
    IF transition.worker IS NOT NULL AND transition.to_state IN ('delivered', 'failed', 'cancelled')
       AND (transition.note IS NULL OR length(transition.note) <= 10000) THEN
        WITH moved AS (
            UPDATE tireless.job j
               SET state = transition.to_state::tireless.job_state,
                   claimed_by = NULL,
                   claim_expires_at = NULL,
                   claim_token = NULL,
                   ended_claim_token = transition.token,
                   note = CASE WHEN j.cancel_requested_at IS NULL THEN transition.note
                               ELSE tireless.stop_finish_note(transition.to_state, transition.note,
                                                              j.cancel_requested_at, j.cancel_note) END,
                   updated_at = now()
             WHERE j.id = transition.job_id
               AND j.state = 'claimed'
               AND j.claimed_by = transition.worker
               AND (transition.token IS NULL OR j.claim_token = transition.token)
               AND tireless.acts_for_login(j.claimed_login)
            RETURNING j
        )
        -- Whether the lane must hear of it: a failure counts against its breaker, a delivery closes
        -- a breaker that counted failures, and a lane with a capacity announces the freed slot. Most
        -- lanes have no settings row, so a delivery there needs nothing more.
        SELECT m.j AS job,
               (m.j).state = 'failed' OR l.capacity IS NOT NULL
               OR ((m.j).state = 'delivered' AND (l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL)) AS lane_hears
          INTO ended
          FROM moved m LEFT JOIN tireless.lane l ON l.name = (m.j).lane;
        IF FOUND THEN
            IF ended.lane_hears THEN
                result := ended.job;
                SELECT l.capacity IS NOT NULL, l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL
                  INTO lane_capped, breaker_dirty
                  FROM tireless.lane l WHERE l.name = result.lane;
                IF result.state = 'failed' THEN
                    PERFORM tireless.record_lane_outcome(result.lane, false);
                ELSIF result.state = 'delivered' AND breaker_dirty THEN
                    PERFORM tireless.record_lane_outcome(result.lane, true);
                END IF;
                IF lane_capped THEN
                    PERFORM tireless.announce_work(result.lane);
                END IF;
            END IF;
            RETURN ended.job;
        END IF;
    END IF;

    -- The names of the holder's moves need no look-up; any other name is parsed (TL005 if unknown).
    IF transition.to_state IN ('delivered', 'failed', 'cancelled') THEN
        target := transition.to_state::tireless.job_state;
    ELSE
        target := tireless.parse_state(transition.to_state);
    END IF;
    IF length(transition.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(transition.note) USING ERRCODE = 'TL005';
    END IF;

    SELECT * INTO job FROM tireless.job j WHERE j.id = transition.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(transition.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    -- The holder's own finish sent again because its answer was lost (a failover, a cut connection):
    -- the first one committed, so the job as it is now is the answer, and nothing moves again.
    IF transition.worker IS NOT NULL AND transition.token IS NOT NULL AND job.ended_claim_token = transition.token THEN
        RETURN job;
    END IF;
    -- Invariant 5: a claimed job answers only to its holder, and a worker that is given speaks as a
    -- holder: not holding the job is its answer whatever the job's state, before any rule of states.
    IF transition.worker IS NOT NULL OR job.state = 'claimed' THEN
        PERFORM tireless.check_holder(job, transition.worker, transition.token);
    END IF;
    IF tireless.is_terminal(job.state) THEN
        RAISE EXCEPTION 'job % is % and never changes again; refused to move it to %', job.id, job.state, target
            USING ERRCODE = 'TL003', HINT = 'To run the issue again, enqueue it: that makes a new job.';
    END IF;
    IF target = 'claimed' THEN
        RAISE EXCEPTION 'job % cannot be moved to claimed by transition', job.id
            USING ERRCODE = 'TL002', HINT = 'A job is claimed only through tireless.claim_next.';
    END IF;

    IF job.state = 'pending' THEN
        IF target <> 'cancelled' THEN
            RAISE EXCEPTION 'job % is pending: it can be cancelled, not moved to %', job.id, target
                USING ERRCODE = 'TL002';
        END IF;
        IF NOT tireless.may_cancel_pending() THEN
            RAISE EXCEPTION 'only tireless_admin may cancel pending job %; % may not', job.id,
                CASE WHEN current_setting('role') = 'none' THEN session_user::text ELSE current_setting('role') END
                USING ERRCODE = '42501';
        END IF;
        final_state := 'cancelled';
    ELSE
        final_state := target;
        IF target = 'pending' AND job.cancel_requested_at IS NOT NULL THEN
            -- A cancel request stands (0007_work_rule): released, the job ends cancelled, not retried.
            final_state := 'cancelled';
            final_note := coalesce(job.cancel_note, 'issue withdrew its request')
                          || coalesce('; released: ' || transition.note, '');
        ELSIF target = 'pending' THEN
            SELECT kp.max_attempts INTO budget FROM tireless.kind_policy kp WHERE kp.kind = job.kind;
            IF tireless.attempts_spent(job) >= budget THEN
                final_state := 'failed';
                final_note := format('attempts exhausted (%s of %s); last: %s',
                                     tireless.attempts_spent(job), budget, coalesce(transition.note, 'released'));
            END IF;
        ELSIF job.cancel_requested_at IS NOT NULL THEN
            final_note := tireless.stop_finish_note(target::text, transition.note, job.cancel_requested_at, job.cancel_note);
        END IF;
    END IF;

    UPDATE tireless.job j
       SET state = final_state,
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           ended_claim_token = CASE WHEN j.state = 'claimed' THEN transition.token ELSE j.ended_claim_token END,
           available_at = CASE WHEN final_state = 'pending' THEN now() + tireless.retry_delay(tireless.attempts_spent(j))
                               ELSE j.available_at END,
           note = final_note,
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO result;

    IF job.state = 'claimed' THEN
        -- Most lanes have no settings row: then there is no breaker to close and no slot to announce.
        SELECT l.capacity IS NOT NULL, l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL
          INTO lane_capped, breaker_dirty
          FROM tireless.lane l WHERE l.name = job.lane;
        IF final_state IN ('pending', 'failed') THEN
            PERFORM tireless.record_lane_outcome(job.lane, false);
        ELSIF final_state = 'delivered' AND breaker_dirty THEN
            PERFORM tireless.record_lane_outcome(job.lane, true);
        END IF;
    END IF;
    -- Wake runners when the job is claimable again at once, or when it freed a slot in a lane with a capacity.
    IF (final_state = 'pending' AND result.available_at <= now()) OR lane_capped THEN
        PERFORM tireless.announce_work(job.lane);
    END IF;
    RETURN result;
END;
$$;

--
-- Name: FUNCTION transition(job_id bigint, to_state text, worker text, note text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.transition(job_id bigint, to_state text, worker text, note text, token uuid) IS 'Moves a job along its state machine and returns it. A worker that is given must hold the claim (and the token, when given) from the login that claimed (or an admin), whatever the job''s state now is: else TL004. Leaving claimed (to pending, delivered, failed, cancelled) needs the holder; a release after the last attempt the budget counts fails the job, and a release of a job asked to stop cancels it. A job asked to stop ends cancelled with the stop''s note (cancel_note), whatever note the holder gives, or delivered with a note saying the stop came after the work was done. A pending job can only be cancelled (by tireless_admin). Entering claimed, or leaving a terminal state, is refused. Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';

--
-- Name: unknown_label_write(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.unknown_label_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('report_id', r.id, 'number', r.number, 'body', tireless.label_report_text(r),
                              'marker', tireless.label_marker(r.id))
      FROM tireless.label_report r
     CROSS JOIN tireless.policy p
     WHERE r.id = w.label_id AND r.written_at IS NULL AND p.mirror_comments;
$$;

--
-- Name: FUNCTION unknown_label_write(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.unknown_label_write(w tireless.forge_write) IS 'What an unknown_label write (kind unknown_label) posts, as tireless.forge_writes_due lists it: {report_id, number, body (tireless.label_report_text, ending with its marker line), marker}; null (not due) while comments are off (set_mirror_comments).';

--
-- Name: unknown_label_written(tireless.forge_write); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.unknown_label_written(w tireless.forge_write) RETURNS void
    LANGUAGE sql
    BEGIN ATOMIC
 UPDATE tireless.label_report r SET written_at = COALESCE(r.written_at, now())
   WHERE (r.id = (unknown_label_written.w).label_id);
END;

--
-- Name: FUNCTION unknown_label_written(w tireless.forge_write); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.unknown_label_written(w tireless.forge_write) IS 'The forge shows the comment of the label report of write w: recorded as written.';

--
-- Name: unknown_labels(text[]); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.unknown_labels(labels text[]) RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce(array_agg(DISTINCT l ORDER BY l), '{}')
      FROM tireless.mirror_labels() AS m
     CROSS JOIN unnest(coalesce(unknown_labels.labels, '{}')) AS l
     WHERE starts_with(l, m.prefix || '/')
       -- The mode labels match exactly (the work rule's rule): another case is a typo too.
       AND l <> ALL (m.mode_labels)
       -- The state labels are tireless's own, matched without case (GitHub's may come back so).
       AND lower(l) <> ALL (SELECT lower(s) FROM unnest(m.state_labels) AS s)
       AND NOT (starts_with(l, m.prefix || '/agent:')
                AND tireless.is_lane_name(substr(l, length(m.prefix || '/agent:') + 1)));
$$;

--
-- Name: FUNCTION unknown_labels(labels text[]); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.unknown_labels(labels text[]) IS 'The labels of a set under the label prefix (<prefix>/...) that name nothing tireless knows: no mode label (exactly: <prefix>/discover, <prefix>/plan, <prefix>/implement), no agent label of a valid lane (<prefix>/agent:<lane>), no state label (<prefix>/state/<state>, in any case); sorted, each once; empty when there is none. The opt-in label, the prefix itself, is no label under it.';

--
-- Name: untrack_repo(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.untrack_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_repo(untrack_repo.forge, untrack_repo.owner, untrack_repo.repo);
    DELETE FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (untrack_repo.forge, untrack_repo.owner, untrack_repo.repo);
    RETURN FOUND;
END;
$$;

--
-- Name: FUNCTION untrack_repo(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.untrack_repo(forge text, owner text, repo text) IS 'Stops tracking a repository; false if it was not tracked. Its jobs stay as they are.';

--
-- Name: usage_allowance(bigint, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.usage_allowance(job_id bigint, worker text, token uuid) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    job tireless.job;
BEGIN
    SELECT * INTO job FROM tireless.job j WHERE j.id = usage_allowance.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(usage_allowance.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    PERFORM tireless.check_holder(job, usage_allowance.worker, usage_allowance.token);
    RETURN tireless.allowance_of(job);
END;
$$;

--
-- Name: FUNCTION usage_allowance(job_id bigint, worker text, token uuid); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.usage_allowance(job_id bigint, worker text, token uuid) IS 'What the holder''s gateway asks before it forwards a model request: {budgeted, spent (null, job or day), note} (tireless.allowance_of). TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';

--
-- Name: waiting_note(text, text[], text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.waiting_note(forge text, waiting_on text[], cycle text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT left('waiting on ' || array_to_string(waiting_note.waiting_on, ', ')
           || CASE WHEN waiting_note.cycle IS NOT NULL
                   THEN ' (a cycle: ' || waiting_note.cycle || '; break it on the forge)' ELSE '' END
           || coalesce(' (' || (SELECT string_agg(DISTINCT split_part(ref, '#', 1), ', ')
                                  FROM unnest(waiting_note.waiting_on) AS ref
                                 WHERE ref LIKE '%/%#%'
                                   AND NOT EXISTS (SELECT FROM tireless.tracked_repo t
                                                    WHERE (t.forge, t.owner || '/' || t.repo)
                                                          = (waiting_note.forge, split_part(ref, '#', 1))))
                       || ' not tracked: nothing reads it until `tireless track`)', ''), 2000);
$$;

--
-- Name: FUNCTION waiting_note(forge text, waiting_on text[], cycle text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.waiting_note(forge text, waiting_on text[], cycle text) IS 'The note of a waiting job of forge: `waiting on #3, #7`, the cycle it is on, if any, and the repositories of its dependencies that are not tracked (never read, so open until tracked).';

--
-- Name: watch_attempt(bigint, integer, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.watch_attempt(job_id bigint, attempt integer, lane text) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    limits record;
    current tireless.job_attempt;
BEGIN
    SELECT l.max_run, l.stall_after INTO limits FROM tireless.lane l WHERE l.name = watch_attempt.lane;
    IF limits.max_run IS NULL AND limits.stall_after IS NULL THEN
        -- No limit (the common case): only a stop already made stands.
        RETURN coalesce((SELECT a.stop FROM tireless.job_attempt a
                          WHERE a.job_id = watch_attempt.job_id AND a.attempt = watch_attempt.attempt), 'held');
    END IF;
    current := tireless.current_attempt(watch_attempt.job_id, watch_attempt.attempt);
    IF current.stop IS NOT NULL THEN
        RETURN current.stop;  -- a stop stands once made, as a cancel request does
    END IF;
    IF now() - current.started_at >= limits.max_run THEN
        current.stop := 'timeout';
        current.stop_note := 'timed out after ' || tireless.short_duration(limits.max_run);
    ELSIF now() - current.progress_at >= limits.stall_after THEN
        current.stop := 'stalled';
        current.stop_note := 'no progress for ' || tireless.short_duration(limits.stall_after)
                             || coalesce(' (last: ' || current.step || ')', '');
    ELSE
        RETURN 'held';
    END IF;
    UPDATE tireless.job_attempt a SET stop = current.stop, stop_note = current.stop_note
     WHERE a.job_id = watch_attempt.job_id;
    RETURN current.stop;
END;
$$;

--
-- Name: FUNCTION watch_attempt(job_id bigint, attempt integer, lane text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.watch_attempt(job_id bigint, attempt integer, lane text) IS 'The watchdog''s answer for a held attempt: held, timeout (claimed longer ago than the lane''s max_run) or stalled (no progress for the lane''s stall_after). A stop is recorded with its note and stands until the attempt ends.';

--
-- Name: watchdog_due_at(bigint); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.watchdog_due_at(job_id bigint) RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT least(coalesce(a.started_at, claim.at) + l.max_run, coalesce(a.progress_at, claim.at) + l.stall_after)
      FROM tireless.job j
      JOIN tireless.lane l ON l.name = j.lane AND (l.max_run IS NOT NULL OR l.stall_after IS NOT NULL)
      -- The job is claimed, so its newest event is its claim (as current_attempt reads it).
      CROSS JOIN LATERAL (SELECT e.at FROM tireless.job_event e WHERE e.job_id = j.id ORDER BY e.id DESC LIMIT 1) AS claim
      LEFT JOIN tireless.job_attempt a ON a.job_id = j.id AND a.attempt = j.attempts
     WHERE j.id = watchdog_due_at.job_id AND j.state = 'claimed';
$$;

--
-- Name: FUNCTION watchdog_due_at(job_id bigint); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.watchdog_due_at(job_id bigint) IS 'When the watchdog may next stop the claimed job''s attempt: its start plus its lane''s max_run, or its last progress plus stall_after, whichever is first (a heartbeat then answers timeout or stalled, unless progress came since). Null when the job is not claimed or its lane has neither limit. The runner heartbeats at that time.';

--
-- Name: worker_beat(text, interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.worker_beat(worker text, lease interval) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_worker(worker_beat.worker);
    PERFORM tireless.check_lease(worker_beat.lease);
    UPDATE tireless.worker_state s SET beat_at = now(), expires_at = now() + worker_beat.lease
     WHERE s.worker = worker_beat.worker AND s.stopped_at IS NULL;
    RETURN FOUND;
END;
$$;

--
-- Name: FUNCTION worker_beat(worker text, lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.worker_beat(worker text, lease interval) IS 'A running worker''s beat: alive for lease more. False when it has no record, or one that says it stopped (a store restored from a backup, or another process of the same name): it says it started again (tireless.worker_started). TL005 for a bad worker name or lease.';

--
-- Name: worker_outcomes(interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.worker_outcomes(span interval) RETURNS TABLE(worker text, delivered bigint, failed bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT e.worker,
     count(*) FILTER (WHERE (j.state = 'delivered'::tireless.job_state)) AS count,
     count(*) FILTER (WHERE (j.state = 'failed'::tireless.job_state)) AS count
    FROM (tireless.job j
      CROSS JOIN LATERAL ( SELECT l.worker
            FROM tireless.job_event l
           WHERE (l.job_id = j.id)
           ORDER BY l.id DESC
          LIMIT 1) e)
   WHERE ((j.state = ANY (ARRAY['delivered'::tireless.job_state, 'failed'::tireless.job_state])) AND (j.updated_at >= (now() - worker_outcomes.span)) AND (e.worker IS NOT NULL))
   GROUP BY e.worker;
END;

--
-- Name: FUNCTION worker_outcomes(span interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.worker_outcomes(span interval) IS 'Per worker, the jobs it delivered and the jobs it failed (its last attempt ended them failed, or its lease ran out on their last attempt) among the jobs that ended in the last span: reads those jobs and the last event of each, never the whole history. The workers page shows it.';

--
-- Name: worker_ran(bigint, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.worker_ran(job_id bigint, worker text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT (EXISTS ( SELECT
            FROM tireless.job_event e
           WHERE ((e.job_id = worker_ran.job_id) AND (e.worker = worker_ran.worker)))) AS "exists";
END;

--
-- Name: FUNCTION worker_ran(job_id bigint, worker text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.worker_ran(job_id bigint, worker text) IS 'True when the history of job_id names worker (it claimed, finished or gave back the job); reads that job''s events only.';

--
-- Name: worker_started(text, text[], interval); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.worker_started(worker text, lanes text[], lease interval) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_worker(worker_started.worker);
    PERFORM tireless.check_lease(worker_started.lease);
    IF worker_started.lanes IS NULL OR cardinality(worker_started.lanes) = 0 THEN
        RAISE EXCEPTION 'lanes must name at least one lane, got %', coalesce(worker_started.lanes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.check_lane(l) FROM unnest(worker_started.lanes) AS l;
    INSERT INTO tireless.worker_state AS s (worker, lanes, started_at, beat_at, expires_at)
    VALUES (worker_started.worker, ARRAY(SELECT DISTINCT l FROM unnest(worker_started.lanes) AS l ORDER BY l),
            now(), now(), now() + worker_started.lease)
    ON CONFLICT ON CONSTRAINT worker_state_pkey DO UPDATE
       SET lanes = excluded.lanes, started_at = now(), beat_at = now(), expires_at = excluded.expires_at,
           stopped_at = NULL, stopped_how = NULL;
    RETURN now();
END;
$$;

--
-- Name: FUNCTION worker_started(worker text, lanes text[], lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.worker_started(worker text, lanes text[], lease interval) IS 'A worker process says it started, serving lanes: its record (tireless.worker_state) starts again, alive for lease (its beats renew it, tireless.worker_beat). Returns when. TL005 for a bad worker name, lease or lane.';

--
-- Name: worker_stopped(text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.worker_stopped(worker text, how text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_worker(worker_stopped.worker);
    IF worker_stopped.how IS NULL OR btrim(worker_stopped.how) = '' THEN
        RAISE EXCEPTION 'how must say how the worker stopped, got %', coalesce(quote_literal(worker_stopped.how), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.worker_state s SET stopped_at = now(), stopped_how = left(btrim(worker_stopped.how), 200)
     WHERE s.worker = worker_stopped.worker AND s.stopped_at IS NULL;
    RETURN FOUND;
END;
$$;

--
-- Name: FUNCTION worker_stopped(worker text, how text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.worker_stopped(worker text, how text) IS 'A worker says it stopped, and how (stopped by SIGINT, drained, --once): its record says stopped from now on. False when it has no record that runs. TL005 for a bad worker name or a blank how.';

--
-- Name: active_claims; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.active_claims AS
 SELECT j.id,
    j.forge,
    j.owner,
    j.repo,
    j.number,
    j.kind,
    j.lane,
    j.claimed_by,
    j.attempts,
    j.claim_expires_at,
    (j.claim_expires_at - now()) AS time_left,
    j.updated_at,
    j.claimed_login
   FROM tireless.job j
  WHERE (j.state = 'claimed'::tireless.job_state)
  ORDER BY j.claim_expires_at;

--
-- Name: VIEW active_claims; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.active_claims IS 'Claimed jobs with the time left on their lease (negative: past its lease, waiting for the sweeper), and the login that claimed each.';

--
-- Name: agent_usage; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.agent_usage AS
 SELECT t.lane,
    t.forge,
    t.owner,
    t.repo,
    t.model,
    t.requests,
    t.unread,
    t.input_tokens,
    t.output_tokens,
    t.cache_read_tokens,
    t.cache_write_tokens,
    t.input_price,
    t.output_price,
    t.cache_read_price,
    t.cache_write_price,
    (((t.input_tokens)::numeric * t.input_price) / (1000000)::numeric) AS input_cost,
    (((t.output_tokens)::numeric * t.output_price) / (1000000)::numeric) AS output_cost,
    (((t.cache_read_tokens)::numeric * COALESCE(t.cache_read_price, t.input_price)) / (1000000)::numeric) AS cache_read_cost,
    (((t.cache_write_tokens)::numeric * COALESCE(t.cache_write_price, t.input_price)) / (1000000)::numeric) AS cache_write_cost,
    ((((((t.input_tokens)::numeric * t.input_price) + ((t.output_tokens)::numeric * t.output_price)) + ((t.cache_read_tokens)::numeric * COALESCE(t.cache_read_price, t.input_price))) + ((t.cache_write_tokens)::numeric * COALESCE(t.cache_write_price, t.input_price))) / (1000000)::numeric) AS cost
   FROM ( SELECT u.lane,
            u.forge,
            u.owner,
            u.repo,
            u.model,
            (sum(u.requests))::bigint AS requests,
            (sum(u.unread))::bigint AS unread,
            (sum(u.input_tokens))::bigint AS input_tokens,
            (sum(u.output_tokens))::bigint AS output_tokens,
            (sum(u.cache_read_tokens))::bigint AS cache_read_tokens,
            (sum(u.cache_write_tokens))::bigint AS cache_write_tokens,
            p.input AS input_price,
            p.output AS output_price,
            p.cache_read AS cache_read_price,
            p.cache_write AS cache_write_price
           FROM (tireless.model_usage u
             LEFT JOIN LATERAL ( SELECT q.model,
                    q.input,
                    q.output,
                    q.cache_read,
                    q.cache_write,
                    q.set_at
                   FROM tireless.model_price q
                  WHERE ((q.model = u.model) OR (("right"(q.model, 1) = '*'::text) AND starts_with(u.model, "left"(q.model, '-1'::integer))))
                  ORDER BY (q.model = u.model) DESC, (length(q.model)) DESC
                 LIMIT 1) p ON (true))
          GROUP BY u.lane, u.forge, u.owner, u.repo, u.model, p.input, p.output, p.cache_read, p.cache_write) t;

--
-- Name: VIEW agent_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.agent_usage IS 'Per lane, repository and model, over the jobs the store keeps: model requests, the unread ones, tokens of each kind, the prices that apply and the cost in USD of each kind and in all (null: unpriced). /metrics exports them as counters.';

--
-- Name: ask_id_seq; Type: SEQUENCE; Schema: tireless; Owner: -
--

ALTER TABLE tireless.ask ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tireless.ask_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: attempt_usage; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.attempt_usage (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    lane text NOT NULL,
    peak_memory bigint,
    cpu_seconds double precision,
    peak_processes integer,
    workspace_bytes bigint,
    limit_reached text,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT attempt_usage_limit_known CHECK ((limit_reached = ANY (ARRAY['memory'::text, 'pids'::text, 'disk'::text]))),
    CONSTRAINT attempt_usage_not_negative CHECK (((peak_memory >= 0) AND (cpu_seconds >= (0)::double precision) AND (peak_processes >= 0) AND (workspace_bytes >= 0)))
);

--
-- Name: TABLE attempt_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.attempt_usage IS 'What each attempt''s processes used of the host, as the runner holding it measured it (tireless.record_attempt_usage) once COMMAND ended: peak memory and CPU seconds of its control group, the most processes alive at once, the workspace''s final size, and the limit it reached (if one stopped it). Null: not measured on that host. Private: read tireless.job_usage.';

--
-- Name: CONSTRAINT attempt_usage_limit_known ON attempt_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT attempt_usage_limit_known ON tireless.attempt_usage IS 'The limit reached is memory, pids or disk (a CPU limit slows, never stops).';

--
-- Name: CONSTRAINT attempt_usage_not_negative ON attempt_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT attempt_usage_not_negative ON tireless.attempt_usage IS 'Usage is never negative.';

--
-- Name: checkpoint; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.checkpoint (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    ref text NOT NULL,
    commit text NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT checkpoint_attempt_positive CHECK ((attempt > 0)),
    CONSTRAINT checkpoint_commit_is_a_commit_id CHECK ((commit ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'::text)),
    CONSTRAINT checkpoint_ref_is_a_ref_name CHECK (((ref ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'::text) AND (ref !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$'::text) AND (ref <> '@'::text)))
);

--
-- Name: TABLE checkpoint; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.checkpoint IS 'A job''s last checkpoint (tireless.record_checkpoint): the ref of tireless''s own the holder pushed the workspace''s commits to, the commit, and in which attempt. A later attempt of the job starts from it (job_brief). Private: record_checkpoint writes it.';

--
-- Name: CONSTRAINT checkpoint_attempt_positive ON checkpoint; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT checkpoint_attempt_positive ON tireless.checkpoint IS 'A checkpoint is made by a claimed attempt, counted from 1.';

--
-- Name: CONSTRAINT checkpoint_commit_is_a_commit_id ON checkpoint; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT checkpoint_commit_is_a_commit_id ON tireless.checkpoint IS 'A checkpoint commit is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.';

--
-- Name: CONSTRAINT checkpoint_ref_is_a_ref_name ON checkpoint; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT checkpoint_ref_is_a_ref_name ON tireless.checkpoint IS 'A checkpoint ref is a git ref name (git check-ref-format), without `, <, > or ".';

--
-- Name: checkpoints; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.checkpoints AS
 SELECT c.job_id,
    c.attempt,
    c.ref,
    c.commit,
    c.recorded_at
   FROM tireless.checkpoint c;

--
-- Name: VIEW checkpoints; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.checkpoints IS 'Each job''s last checkpoint (tireless.record_checkpoint): the attempt that made it, the ref and commit pushed, and when; a later attempt of the job starts from it.';

--
-- Name: conversation_read; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.conversation_read (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    comments_cursor timestamp with time zone DEFAULT now() NOT NULL,
    comments_etag text,
    CONSTRAINT comments_etag_bounded CHECK ((length(comments_etag) <= 1000))
);

--
-- Name: TABLE conversation_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.conversation_read IS 'Where the poller''s reads of a repository''s comments stand: the newest comment time read (a comment written before it and edited since is an edit, never a new command) and the listing''s ETag. Private: conversation_to_read and record_conversation keep it.';

--
-- Name: CONSTRAINT comments_etag_bounded ON conversation_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT comments_etag_bounded ON tireless.conversation_read IS 'An ETag is at most 1000 characters.';

--
-- Name: cycle_report_id_seq; Type: SEQUENCE; Schema: tireless; Owner: -
--

ALTER TABLE tireless.cycle_report ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tireless.cycle_report_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: cycle_reports; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.cycle_reports AS
 SELECT r.forge,
    r.owner,
    r.repo,
    r.number,
    r.cycle,
    r.job_id,
    r.queued_at,
    r.written_at,
    r.broken_at,
    COALESCE(w.failures, 0) AS failures,
    COALESCE(w.next_try_at, r.queued_at) AS next_try_at,
    w.last_error
   FROM (tireless.cycle_report r
     LEFT JOIN tireless.forge_write w ON (((w.kind = 'cycle'::text) AND (w.report_id = r.id))));

--
-- Name: VIEW cycle_reports; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.cycle_reports IS 'Each dependency cycle told (or still to tell) on an issue of it: the cycle as the issue''s job note names it, the job found waiting on it, when it was found, when the mirror''s comment was written (null: still to write), when the cycle was broken (then a comment not yet written is dropped, and the same cycle made again is told again), and the retries of a failing post.';

--
-- Name: deliveries; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.deliveries AS
 SELECT d.job_id,
    d.forge,
    d.owner,
    d.repo,
    d.number,
    d.delivered_at,
    (d.branch IS NOT NULL) AS changed,
    d.branch,
    d.head,
    d.base_branch,
    d.base,
    d.draft,
    d.pull_number,
    d.pull_url,
    d.pull_known_at,
    w.queued_at AS pull_queued_at,
    w.written_at AS pull_written_at,
    COALESCE(w.failures, 0) AS pull_failures,
    w.last_error AS pull_error,
    w.last_error_at AS pull_error_at
   FROM (tireless.delivery d
     LEFT JOIN tireless.forge_write w ON (((w.kind = 'pull'::text) AND (w.job_id = d.job_id))));

--
-- Name: VIEW deliveries; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.deliveries IS 'What each job delivered through tireless.deliver: changed (false: delivered with no change), the branch and head pushed, the base branch and commit, draft, the pull request once the mirror recorded it (number, URL, when), and the mirror''s write of it: when it was queued and written (pull_written_at null and pull_queued_at null: the repository was not tracked, nothing is mirrored), its failures in a row and last error.';

--
-- Name: finished_count; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.finished_count (
    lane text NOT NULL,
    outcome tireless.job_state NOT NULL,
    jobs bigint NOT NULL,
    CONSTRAINT finished_count_is_terminal CHECK (tireless.is_terminal(outcome))
);

--
-- Name: TABLE finished_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.finished_count IS 'How many jobs of each lane ended in each terminal state, as far as the rollup has counted. Private: read tireless.finished_jobs.';

--
-- Name: CONSTRAINT finished_count_is_terminal ON finished_count; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT finished_count_is_terminal ON tireless.finished_count IS 'Only terminal states are outcomes.';

--
-- Name: finished_hourly; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.finished_hourly (
    hour timestamp with time zone NOT NULL,
    lane text NOT NULL,
    outcome tireless.job_state NOT NULL,
    jobs bigint NOT NULL,
    CONSTRAINT finished_hourly_is_terminal CHECK (tireless.is_terminal(outcome))
);

--
-- Name: TABLE finished_hourly; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.finished_hourly IS 'Finished jobs per hour (the hour of the finishing event), lane and outcome; the rollup keeps 8 days. Private: read tireless.finished_jobs_by_hour.';

--
-- Name: CONSTRAINT finished_hourly_is_terminal ON finished_hourly; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT finished_hourly_is_terminal ON tireless.finished_hourly IS 'Only terminal states are outcomes.';

--
-- Name: finished_jobs; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.finished_jobs AS
 SELECT f.lane,
    (f.outcome)::text AS outcome,
    (sum(f.jobs))::bigint AS jobs
   FROM ( SELECT c.lane,
            c.outcome,
            c.jobs
           FROM tireless.finished_count c
        UNION ALL
         SELECT m.lane,
            m.to_state,
            1
           FROM tireless.history_moves(( SELECT r.counted_to
                   FROM tireless.history_rollup r), NULL::bigint) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran)
          WHERE tireless.is_terminal(m.to_state)) f
  GROUP BY f.lane, f.outcome;

--
-- Name: VIEW finished_jobs; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.finished_jobs IS 'Jobs finished per lane and outcome since the store began (a counter): the rolled-up counts and the history written since the last tireless.roll_up_history().';

--
-- Name: finished_jobs_by_hour; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.finished_jobs_by_hour AS
 SELECT h.hour,
    h.lane,
    (h.outcome)::text AS outcome,
    (sum(h.jobs))::bigint AS jobs
   FROM ( SELECT c.hour,
            c.lane,
            c.outcome,
            c.jobs
           FROM tireless.finished_hourly c
        UNION ALL
         SELECT date_trunc('hour'::text, m.at) AS date_trunc,
            m.lane,
            m.to_state,
            1
           FROM tireless.history_moves(( SELECT r.counted_to
                   FROM tireless.history_rollup r), NULL::bigint) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran)
          WHERE (tireless.is_terminal(m.to_state) AND (m.at >= (now() - '8 days'::interval)))) h
  GROUP BY h.hour, h.lane, h.outcome;

--
-- Name: VIEW finished_jobs_by_hour; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.finished_jobs_by_hour IS 'Jobs finished per hour, lane and outcome over the last 8 days: the rolled-up counts and the history written since the last tireless.roll_up_history().';

--
-- Name: forge_write_id_seq; Type: SEQUENCE; Schema: tireless; Owner: -
--

ALTER TABLE tireless.forge_write ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tireless.forge_write_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: issue_dependency; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.issue_dependency (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    depends_on_owner text NOT NULL,
    depends_on_repo text NOT NULL,
    depends_on_number integer NOT NULL,
    source text NOT NULL,
    CONSTRAINT dependency_not_on_itself CHECK ((((owner IS DISTINCT FROM depends_on_owner) OR (repo IS DISTINCT FROM depends_on_repo)) OR (number IS DISTINCT FROM depends_on_number))),
    CONSTRAINT dependency_numbers_positive CHECK (((number > 0) AND (depends_on_number > 0))),
    CONSTRAINT dependency_source_known CHECK ((source = ANY (ARRAY['body'::text, 'forge'::text])))
);

--
-- Name: TABLE issue_dependency; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.issue_dependency IS 'What each issue depends on (the same forge), as its body says (`Depends on #N`, `Depends on owner/repo#N`) or as the forge''s own relations say. Private: record_poll and enqueue keep it (dependencies.sql); a pending job whose issue has an open dependency waits (job.waiting_on).';

--
-- Name: COLUMN issue_dependency.number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_dependency.number IS 'The issue that depends (the dependent).';

--
-- Name: COLUMN issue_dependency.depends_on_owner; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_dependency.depends_on_owner IS 'The owner of the issue it depends on (same forge).';

--
-- Name: COLUMN issue_dependency.depends_on_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_dependency.depends_on_repo IS 'The repository of the issue it depends on (same forge).';

--
-- Name: COLUMN issue_dependency.depends_on_number; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_dependency.depends_on_number IS 'The number of the issue it depends on; open until the store has seen it closed.';

--
-- Name: COLUMN issue_dependency.source; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.issue_dependency.source IS 'body (a `Depends on` line of the dependent''s body) or forge (the forge''s own dependency relation).';

--
-- Name: CONSTRAINT dependency_not_on_itself ON issue_dependency; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT dependency_not_on_itself ON tireless.issue_dependency IS 'An issue never depends on itself (body_dependencies leaves such a line out).';

--
-- Name: CONSTRAINT dependency_numbers_positive ON issue_dependency; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT dependency_numbers_positive ON tireless.issue_dependency IS 'Issue numbers are positive.';

--
-- Name: CONSTRAINT dependency_source_known ON issue_dependency; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT dependency_source_known ON tireless.issue_dependency IS 'A dependency is said by the body or by the forge.';

--
-- Name: job_event_id_seq; Type: SEQUENCE; Schema: tireless; Owner: -
--

ALTER TABLE tireless.job_event ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tireless.job_event_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: job_id_seq; Type: SEQUENCE; Schema: tireless; Owner: -
--

ALTER TABLE tireless.job ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tireless.job_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: job_progress; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.job_progress AS
 SELECT a.job_id,
    a.attempt,
    a.started_at,
    a.progress_at,
    a.step,
    a.stop,
    a.stop_note,
    (a.report IS NOT NULL) AS reported
   FROM tireless.job_attempt a;

--
-- Name: VIEW job_progress; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.job_progress IS 'Each job''s newest attempt as the watchdog sees it: when it was claimed, its last progress and step, the watchdog''s stop and note, and whether the agent attached a report. No row before the attempt''s first heartbeat under a limit, progress report or report.';

--
-- Name: job_usage; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.job_usage AS
 SELECT u.job_id,
    u.attempt,
    u.lane,
    u.peak_memory,
    u.cpu_seconds,
    u.peak_processes,
    u.workspace_bytes,
    u.limit_reached,
    u.recorded_at
   FROM tireless.attempt_usage u;

--
-- Name: VIEW job_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.job_usage IS 'What each attempt used of its host (tireless.record_attempt_usage): peak memory and workspace size in bytes, CPU seconds, the most processes alive at once (null: not measured), and the limit that stopped it, if one did. What `tireless show`, `tireless jobs --json`, the job page and /metrics read.';

--
-- Name: label_report_id_seq; Type: SEQUENCE; Schema: tireless; Owner: -
--

ALTER TABLE tireless.label_report ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tireless.label_report_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: label_reports; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.label_reports AS
 SELECT r.forge,
    r.owner,
    r.repo,
    r.number,
    r.label,
    r.found_at,
    r.written_at,
    COALESCE(w.failures, 0) AS failures,
    COALESCE(w.next_try_at, r.found_at) AS next_try_at,
    w.last_error,
    COALESCE(((s.state = 'open'::text) AND (s.gone_at IS NULL) AND (r.label = ANY (s.labels))), false) AS standing
   FROM ((tireless.label_report r
     LEFT JOIN tireless.forge_write w ON (((w.kind = 'unknown_label'::text) AND (w.label_id = r.id))))
     LEFT JOIN tireless.issue s ON (((s.forge = r.forge) AND (s.owner = r.owner) AND (s.repo = r.repo) AND (s.number = r.number))));

--
-- Name: VIEW label_reports; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.label_reports IS 'Each label under the prefix that names nothing, per issue that carried it: when a poll first showed it, when the mirror''s comment saying so was written (null: still to write), the retries of a failing post, and whether the open issue still carries it as last polled (standing: `tireless status` lists those).';

--
-- Name: lane_budget; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.lane_budget AS
 SELECT l.name AS lane,
        CASE
            WHEN (l.runs_per_day IS NOT NULL) THEN spent.runs
            ELSE NULL::bigint
        END AS runs_today,
    (EXTRACT(epoch FROM spent.agent_time))::double precision AS agent_seconds_today,
    l.runs_per_day,
    (EXTRACT(epoch FROM l.agent_time_per_day))::double precision AS agent_seconds_per_day,
        CASE
            WHEN (COALESCE((spent.runs >= l.runs_per_day), false) OR COALESCE((spent.agent_time >= l.agent_time_per_day), false)) THEN (((((now() AT TIME ZONE 'UTC'::text))::date + 1))::timestamp without time zone AT TIME ZONE 'UTC'::text)
            ELSE NULL::timestamp with time zone
        END AS budget_resets_at
   FROM (tireless.lane l
     CROSS JOIN LATERAL ( SELECT COALESCE(sum(r.runs), (0)::bigint) AS runs,
            COALESCE(sum(r.agent_time), '00:00:00'::interval) AS agent_time
           FROM tireless.lane_repo r
          WHERE ((r.lane = l.name) AND (r.spend_day = ((now() AT TIME ZONE 'UTC'::text))::date))) spent);

--
-- Name: VIEW lane_budget; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.lane_budget IS 'One row per lane with settings: today''s spend (UTC: runs_today, null without a budget of runs; agent_seconds_today) against its daily budgets, with budget_resets_at (the next midnight UTC) while a budget is spent.';

--
-- Name: lane_egress; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.lane_egress AS
 SELECT n.lane,
    (COALESCE(sum(n.requests) FILTER (WHERE (NOT n.allowed)), (0)::numeric))::bigint AS refusals,
    (sum(n.bytes_in))::bigint AS bytes_in,
    (sum(n.bytes_out))::bigint AS bytes_out
   FROM tireless.network_use n
  GROUP BY n.lane;

--
-- Name: VIEW lane_egress; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.lane_egress IS 'Per lane, over the jobs the store keeps: the requests its agents were refused, and the bytes they received (bytes_in) and sent (bytes_out) through the runner''s proxy and gateways. /metrics exports them as counters.';

--
-- Name: lane_repo_id_seq; Type: SEQUENCE; Schema: tireless; Owner: -
--

ALTER TABLE tireless.lane_repo ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tireless.lane_repo_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: lane_status; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.lane_status AS
 WITH live AS (
         SELECT j.lane,
            count(*) FILTER (WHERE (j.state = 'pending'::tireless.job_state)) AS pending,
            count(*) FILTER (WHERE ((j.state = 'pending'::tireless.job_state) AND (j.available_at <= now()) AND (j.waiting_on IS NULL))) AS ready,
            count(*) FILTER (WHERE (j.state = 'claimed'::tireless.job_state)) AS claimed,
            count(*) FILTER (WHERE ((j.state = 'claimed'::tireless.job_state) AND (j.claim_expires_at < now()))) AS past_lease,
            (now() - min(j.created_at) FILTER (WHERE (j.state = 'pending'::tireless.job_state))) AS oldest_pending_age,
            count(*) FILTER (WHERE ((j.state = 'pending'::tireless.job_state) AND (j.waiting_on IS NOT NULL))) AS waiting
           FROM tireless.job j
          WHERE (j.state = ANY (ARRAY['pending'::tireless.job_state, 'claimed'::tireless.job_state]))
          GROUP BY j.lane
        )
 SELECT COALESCE(l.name, live.lane) AS lane,
    l.capacity,
    COALESCE(l.paused, false) AS paused,
        CASE
            WHEN (l.tripped_until > now()) THEN 'open'::text
            WHEN (l.consecutive_failures >= p.breaker_threshold) THEN 'half-open'::text
            ELSE 'closed'::text
        END AS breaker,
    COALESCE(l.consecutive_failures, 0) AS consecutive_failures,
    l.tripped_until,
    COALESCE(live.pending, (0)::bigint) AS pending,
    COALESCE(live.ready, (0)::bigint) AS ready,
    COALESCE(live.claimed, (0)::bigint) AS claimed,
    COALESCE(live.past_lease, (0)::bigint) AS past_lease,
    live.oldest_pending_age,
    l.max_run,
    l.stall_after,
    COALESCE(live.waiting, (0)::bigint) AS waiting,
    l.egress,
    l.memory_limit,
    l.cpu_limit,
    l.pids_limit,
    l.disk_limit
   FROM ((tireless.lane l
     FULL JOIN live ON ((live.lane = l.name)))
     CROSS JOIN tireless.policy p);

--
-- Name: VIEW lane_status; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.lane_status IS 'One row per lane that has settings or live jobs: capacity, paused, circuit breaker (closed, open while tripped, half-open after the cool-down until a success), its pending, ready, claimed and past-lease jobs, its time limits (max_run, stall_after; null: none), its pending jobs waiting for a dependency (waiting; never ready), its egress allowlist (null: none, the host''s network; empty: no egress), and its limits on one attempt (memory_limit and disk_limit in bytes, cpu_limit in CPUs, pids_limit in processes; null: none).';

--
-- Name: queue_stats; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.queue_stats AS
 SELECT j.lane,
    j.state,
    count(*) AS jobs,
    min(j.created_at) AS oldest,
    max(j.updated_at) AS latest_change
   FROM tireless.job j
  WHERE (j.state = ANY (ARRAY['pending'::tireless.job_state, 'claimed'::tireless.job_state]))
  GROUP BY j.lane, j.state
UNION ALL
 SELECT j.lane,
    j.state,
    count(*) AS jobs,
    min(j.created_at) AS oldest,
    max(j.updated_at) AS latest_change
   FROM tireless.job j
  WHERE ((j.state = ANY (ARRAY['delivered'::tireless.job_state, 'failed'::tireless.job_state, 'cancelled'::tireless.job_state])) AND (j.updated_at > (now() - '24:00:00'::interval)))
  GROUP BY j.lane, j.state;

--
-- Name: VIEW queue_stats; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.queue_stats IS 'How many jobs each lane holds in each live state, and how many reached each terminal state in the last 24 hours (reads the live jobs and that window only, never the whole history).';

--
-- Name: lane_summary; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.lane_summary AS
 SELECT COALESCE(s.lane, q.lane) AS lane,
    COALESCE(s.pending, (0)::bigint) AS pending,
    COALESCE(s.ready, (0)::bigint) AS ready,
    COALESCE(s.claimed, (0)::bigint) AS claimed,
    COALESCE(s.past_lease, (0)::bigint) AS past_lease,
    COALESCE(q.delivered, (0)::bigint) AS delivered,
    COALESCE(q.failed, (0)::bigint) AS failed,
    COALESCE(q.cancelled, (0)::bigint) AS cancelled,
    (EXTRACT(epoch FROM s.oldest_pending_age))::double precision AS oldest_pending_seconds,
    COALESCE(s.breaker, 'closed'::text) AS breaker,
    COALESCE(s.paused, false) AS paused,
    s.capacity,
    s.tripped_until,
    COALESCE(s.consecutive_failures, 0) AS consecutive_failures,
    b.runs_today,
    COALESCE(b.agent_seconds_today, (0)::double precision) AS agent_seconds_today,
    b.runs_per_day,
    b.agent_seconds_per_day,
    b.budget_resets_at,
    s.max_run,
    s.stall_after,
    COALESCE(s.waiting, (0)::bigint) AS waiting,
    s.egress,
    s.memory_limit,
    s.cpu_limit,
    s.pids_limit,
    s.disk_limit
   FROM ((tireless.lane_status s
     FULL JOIN ( SELECT st.lane,
            (sum(st.jobs) FILTER (WHERE (st.state = 'delivered'::tireless.job_state)))::bigint AS delivered,
            (sum(st.jobs) FILTER (WHERE (st.state = 'failed'::tireless.job_state)))::bigint AS failed,
            (sum(st.jobs) FILTER (WHERE (st.state = 'cancelled'::tireless.job_state)))::bigint AS cancelled
           FROM tireless.queue_stats st
          GROUP BY st.lane) q ON ((q.lane = s.lane)))
     LEFT JOIN tireless.lane_budget b ON ((b.lane = COALESCE(s.lane, q.lane))));

--
-- Name: VIEW lane_summary; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.lane_summary IS 'One row per lane that has live jobs, settings or jobs finished in the last 24 hours: lane_status (live jobs, the oldest pending job''s age in seconds, breaker, its failures in a row, paused, capacity) beside queue_stats''s delivered, failed and cancelled counts, and today''s spend (UTC: runs_today, counted under a budget of runs, agent_seconds_today) against the lane''s daily budgets, with budget_resets_at (the next midnight UTC) while a budget is spent, its time limits (max_run, stall_after), and its pending jobs waiting for a dependency (waiting), its egress allowlist (egress; null: the host''s network, empty: no egress), and its limits on one attempt (memory_limit, cpu_limit, pids_limit, disk_limit; null: none). What `tireless status`, `tireless lane show` and the dashboard''s overview show.';

--
-- Name: lane_usage; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.lane_usage AS
 SELECT u.lane,
    count(*) AS attempts,
    COALESCE(sum(u.cpu_seconds), (0)::double precision) AS cpu_seconds,
    max(u.peak_memory) AS peak_memory,
    max(u.peak_processes) AS peak_processes,
    count(*) FILTER (WHERE (u.limit_reached = 'memory'::text)) AS memory_stops,
    count(*) FILTER (WHERE (u.limit_reached = 'pids'::text)) AS pids_stops,
    count(*) FILTER (WHERE (u.limit_reached = 'disk'::text)) AS disk_stops
   FROM tireless.attempt_usage u
  GROUP BY u.lane;

--
-- Name: VIEW lane_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.lane_usage IS 'Per lane, over the jobs the store keeps: its measured attempts, the CPU seconds they used, the largest peak memory and process count of one, and how many each limit stopped (memory_stops, pids_stops, disk_stops). /metrics exports them.';

--
-- Name: mirror_comment; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.mirror_comment (
    job_id bigint NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    written_at timestamp with time zone,
    checklist text,
    checklist_written_at timestamp with time zone
);

--
-- Name: TABLE mirror_comment; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.mirror_comment IS 'Per finished job whose end the mirror read: its outcome comment, written once (written_at) whatever the issue did since, and the retries of a failing post. Private: mirror_writes queues, mirror_comments_due and record_mirror_comment keep it.';

--
-- Name: COLUMN mirror_comment.written_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_comment.written_at IS 'When the forge confirmed the comment (null: still to write).';

--
-- Name: COLUMN mirror_comment.checklist; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_comment.checklist IS 'The children''s checklist the outcome comment last showed (null: the job has none, or nothing written yet).';

--
-- Name: COLUMN mirror_comment.checklist_written_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_comment.checklist_written_at IS 'When the forge last confirmed the checklist (the post, or an edit).';

--
-- Name: mirror_repo; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.mirror_repo (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    event_cursor bigint DEFAULT 0 NOT NULL,
    scanned_to bigint DEFAULT 0 NOT NULL,
    archived_at timestamp with time zone,
    CONSTRAINT cursor_not_past_the_scan CHECK ((event_cursor <= scanned_to))
);

--
-- Name: TABLE mirror_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.mirror_repo IS 'Per tracked repository, how far the mirror has read the job history. Private: mirror_writes keeps it.';

--
-- Name: COLUMN mirror_repo.event_cursor; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_repo.event_cursor IS 'Every job_event up to this id has been turned into mirror_issue rows; the scan starts after it. It moves only past events older than the settle time, so a change that commits late is still read.';

--
-- Name: COLUMN mirror_repo.scanned_to; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_repo.scanned_to IS 'The newest job_event id the last scan read (the backlog counts changes after it).';

--
-- Name: COLUMN mirror_repo.archived_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.mirror_repo.archived_at IS 'When a write was last refused because the repository is archived (record_repo_archived); null once a write succeeded. For a day after it the mirror''s due functions list nothing for the repository; then one write is tried again.';

--
-- Name: CONSTRAINT cursor_not_past_the_scan ON mirror_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT cursor_not_past_the_scan ON tireless.mirror_repo IS 'The cursor never passes what was scanned.';

--
-- Name: pull_outcome; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.pull_outcome (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    pull_number integer NOT NULL,
    state text NOT NULL,
    merged_at timestamp with time zone,
    closed_at timestamp with time zone,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ended_has_closed_at CHECK (((state = 'open'::text) = (closed_at IS NULL))),
    CONSTRAINT merged_has_merged_at CHECK (((state = 'merged'::text) = (merged_at IS NOT NULL))),
    CONSTRAINT pull_outcome_number_positive CHECK ((pull_number > 0)),
    CONSTRAINT pull_outcome_state_known CHECK ((state = ANY (ARRAY['open'::text, 'merged'::text, 'closed'::text])))
);

--
-- Name: TABLE pull_outcome; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.pull_outcome IS 'What became of one of tireless''s pull requests (a delivery''s pull_number), as the forge''s issue listing last showed it: merged (merged_at), closed unmerged (closed_at), or open again. Private: the poller records it (tireless.record_pull_outcomes); tireless.pull_outcomes reads it.';

--
-- Name: COLUMN pull_outcome.state; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.pull_outcome.state IS 'open, merged, or closed (closed without a merge).';

--
-- Name: COLUMN pull_outcome.merged_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.pull_outcome.merged_at IS 'When the forge merged it (its merged_at); null unless merged.';

--
-- Name: COLUMN pull_outcome.closed_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.pull_outcome.closed_at IS 'When the forge closed it (its closed_at; a merge closes it too); null while open.';

--
-- Name: COLUMN pull_outcome.recorded_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.pull_outcome.recorded_at IS 'When a poll last changed this row.';

--
-- Name: CONSTRAINT ended_has_closed_at ON pull_outcome; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ended_has_closed_at ON tireless.pull_outcome IS 'A merged or closed pull request says when it closed; an open one has no closed_at.';

--
-- Name: CONSTRAINT merged_has_merged_at ON pull_outcome; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT merged_has_merged_at ON tireless.pull_outcome IS 'A merged pull request says when, and only a merged one.';

--
-- Name: CONSTRAINT pull_outcome_number_positive ON pull_outcome; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pull_outcome_number_positive ON tireless.pull_outcome IS 'Pull request numbers are positive.';

--
-- Name: CONSTRAINT pull_outcome_state_known ON pull_outcome; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pull_outcome_state_known ON tireless.pull_outcome IS 'A pull request is open, merged or closed unmerged.';

--
-- Name: pull_read; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.pull_read (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    pull_number integer NOT NULL,
    reviews_etag text,
    read_to timestamp with time zone,
    checks_head text,
    CONSTRAINT checks_head_is_a_commit_id CHECK ((checks_head ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'::text)),
    CONSTRAINT reviews_etag_bounded CHECK ((length(reviews_etag) <= 1000))
);

--
-- Name: TABLE pull_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.pull_read IS 'Where the poller''s reads of one of tireless''s pull requests stand: the ETag of its reviews (GitHub answers 304 to it at no cost), the updated_at it was last read at, and the last head whose checks had all finished (read no more). Private: conversation_to_read and record_conversation keep it.';

--
-- Name: COLUMN pull_read.read_to; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.pull_read.read_to IS 'The pull request''s updated_at when its conversation was last read: a listing showing it no newer reads nothing.';

--
-- Name: COLUMN pull_read.checks_head; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.pull_read.checks_head IS 'The head commit whose checks had all finished when last read: not read again.';

--
-- Name: CONSTRAINT checks_head_is_a_commit_id ON pull_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT checks_head_is_a_commit_id ON tireless.pull_read IS 'A head is a full commit id.';

--
-- Name: CONSTRAINT reviews_etag_bounded ON pull_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT reviews_etag_bounded ON tireless.pull_read IS 'An ETag is at most 1000 characters.';

--
-- Name: push; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.push (
    job_id bigint NOT NULL,
    branch text NOT NULL,
    head text NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT pushed_branch_is_named CHECK (((length(branch) >= 1) AND (length(branch) <= 255))),
    CONSTRAINT pushed_head_is_a_commit_id CHECK ((head ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'::text))
);

--
-- Name: TABLE push; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.push IS 'Each head a holder was about to push to its issue''s branch (tireless.record_push), recorded before the push: the commits a later push of the branch may go over, whether or not the delivery that pushed them was recorded. Private: record_push reads and writes it.';

--
-- Name: CONSTRAINT pushed_branch_is_named ON push; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pushed_branch_is_named ON tireless.push IS 'The branch is a name of 1 to 255 characters (record_push checks it is a ref name).';

--
-- Name: CONSTRAINT pushed_head_is_a_commit_id ON push; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pushed_head_is_a_commit_id ON tireless.push IS 'A head is a full commit id, 40 or 64 lowercase hex digits.';

--
-- Name: repo_shares; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.repo_shares AS
 SELECT r.lane,
    r.forge,
    r.owner,
    r.repo,
    r.last_claimed_at,
    r.has_work,
        CASE
            WHEN ((l.runs_per_day IS NULL) AND (NOT (EXISTS ( SELECT
               FROM tireless.lane b
              WHERE ((b.name = r.lane) AND (b.runs_per_day IS NOT NULL)))))) THEN NULL::integer
            WHEN (r.spend_day = ((now() AT TIME ZONE 'UTC'::text))::date) THEN r.runs
            ELSE 0
        END AS runs_today,
    (
        CASE
            WHEN (r.spend_day = ((now() AT TIME ZONE 'UTC'::text))::date) THEN EXTRACT(epoch FROM r.agent_time)
            ELSE (0)::numeric
        END)::double precision AS agent_seconds_today,
    l.capacity,
    l.runs_per_day,
    (EXTRACT(epoch FROM l.agent_time_per_day))::double precision AS agent_seconds_per_day,
        CASE
            WHEN (COALESCE((t.runs >= l.runs_per_day), false) OR COALESCE((t.agent_time >= l.agent_time_per_day), false)) THEN (((((now() AT TIME ZONE 'UTC'::text))::date + 1))::timestamp without time zone AT TIME ZONE 'UTC'::text)
            ELSE NULL::timestamp with time zone
        END AS budget_resets_at
   FROM ((tireless.lane_repo r
     LEFT JOIN tireless.repo_limit l ON (((l.forge = r.forge) AND (l.owner = r.owner) AND (l.repo = r.repo))))
     LEFT JOIN LATERAL ( SELECT sum(o.runs) AS runs,
            sum(o.agent_time) AS agent_time
           FROM tireless.lane_repo o
          WHERE (((o.forge = r.forge) AND (o.owner = r.owner) AND (o.repo = r.repo)) AND (o.spend_day = ((now() AT TIME ZONE 'UTC'::text))::date))) t ON ((l.forge IS NOT NULL)));

--
-- Name: VIEW repo_shares; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.repo_shares IS 'One row per lane and repository that has had pending work: its last claim (the longest-waiting goes first), whether it has work, its runs (under a budget of runs; null without) and agent seconds in the lane today (UTC), the repository''s capacity and daily budgets (all lanes), and budget_resets_at (the next midnight UTC) while its budget is spent.';

--
-- Name: sql_file; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.sql_file (
    name text NOT NULL,
    sha256 text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT sql_file_is_a_file_of_db CHECK ((name ~ '^[a-z_]+\.sql$'::text)),
    CONSTRAINT sql_file_sha256_is_hex CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text))
);

--
-- Name: TABLE sql_file; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.sql_file IS 'The SQL files of db/ as tireless.migrate last applied them: a file whose checksum differs is applied again.';

--
-- Name: CONSTRAINT sql_file_is_a_file_of_db ON sql_file; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT sql_file_is_a_file_of_db ON tireless.sql_file IS 'A file of db/, named by concern: claim.sql.';

--
-- Name: CONSTRAINT sql_file_sha256_is_hex ON sql_file; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT sql_file_sha256_is_hex ON tireless.sql_file IS 'The SHA-256 of the file''s text, in hex.';

--
-- Name: sweep_slot; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.sweep_slot (
    slot integer NOT NULL,
    CONSTRAINT sweep_slot_in_range CHECK (((slot >= 0) AND (slot < 64)))
);

--
-- Name: TABLE sweep_slot; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.sweep_slot IS 'The 64 rows a sweeper locks (FOR NO KEY UPDATE SKIP LOCKED) to sweep lanes alone: a lane''s slot is hashtext(lane) & 63. Only the tireless functions can lock them. Private.';

--
-- Name: CONSTRAINT sweep_slot_in_range ON sweep_slot; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT sweep_slot_in_range ON tireless.sweep_slot IS 'A slot is hashtext(lane) & 63.';

--
-- Name: tracked_repo; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.tracked_repo (
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    tracked_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: TABLE tracked_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.tracked_repo IS 'Repositories the poller reads. Private: use track_repo, untrack_repo and tracked_repos.';

--
-- Name: usage_by_day; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.usage_by_day AS
 SELECT u.spend_day,
    u.lane,
    u.forge,
    u.owner,
    u.repo,
    (sum(u.requests))::bigint AS requests,
    (sum(u.unread))::bigint AS unread,
    (sum((((u.input_tokens + u.output_tokens) + u.cache_read_tokens) + u.cache_write_tokens)))::bigint AS tokens,
    sum(((((((u.input_tokens)::numeric * p.input) + ((u.output_tokens)::numeric * p.output)) + ((u.cache_read_tokens)::numeric * COALESCE(p.cache_read, p.input))) + ((u.cache_write_tokens)::numeric * COALESCE(p.cache_write, p.input))) / (1000000)::numeric)) AS cost,
    bool_or((p.input IS NULL)) AS unpriced
   FROM (tireless.model_usage u
     LEFT JOIN LATERAL ( SELECT q.model,
            q.input,
            q.output,
            q.cache_read,
            q.cache_write,
            q.set_at
           FROM tireless.model_price q
          WHERE ((q.model = u.model) OR (("right"(q.model, 1) = '*'::text) AND starts_with(u.model, "left"(q.model, '-1'::integer))))
          ORDER BY (q.model = u.model) DESC, (length(q.model)) DESC
         LIMIT 1) p ON (true))
  GROUP BY u.spend_day, u.lane, u.forge, u.owner, u.repo;

--
-- Name: VIEW usage_by_day; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.usage_by_day IS 'Per UTC day, lane and repository, over the jobs the store keeps: model requests (unread: tokens unknown), tokens of every kind, the cost in USD of its priced models, and whether some model was unpriced. The overview''s spend today and its chart over the last days.';

--
-- Name: webhook_delivery; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.webhook_delivery (
    forge text NOT NULL,
    digest bytea NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT digest_is_sha256 CHECK ((octet_length(digest) = 32))
);

--
-- Name: TABLE webhook_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.webhook_delivery IS 'The SHA-256 of each signed webhook body acted on, per forge, for seven days (tireless.poll_soon_once).';

--
-- Name: CONSTRAINT digest_is_sha256 ON webhook_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT digest_is_sha256 ON tireless.webhook_delivery IS 'A digest is the 32 bytes of a SHA-256.';

--
-- Name: worker_state; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.worker_state (
    worker text NOT NULL,
    lanes text[] NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    beat_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    stopped_at timestamp with time zone,
    stopped_how text,
    CONSTRAINT worker_state_named CHECK (((length(worker) >= 1) AND (length(worker) <= 200))),
    CONSTRAINT worker_state_stop_said CHECK (((stopped_how IS NULL) OR ((length(stopped_how) >= 1) AND (length(stopped_how) <= 200))))
);

--
-- Name: TABLE worker_state; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.worker_state IS 'Per worker name, its last process as it said itself: when it started, its lanes, its last beat and until when that beat holds (its lease), when it stopped and how. Private: tireless.worker_started, worker_beat and worker_stopped write it; tireless.workers shows it.';

--
-- Name: COLUMN worker_state.worker; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.worker_state.worker IS 'The worker''s name (tireless work --worker), unique per process.';

--
-- Name: COLUMN worker_state.lanes; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.worker_state.lanes IS 'The lanes it serves.';

--
-- Name: COLUMN worker_state.started_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.worker_state.started_at IS 'When its process started (said at start).';

--
-- Name: COLUMN worker_state.beat_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.worker_state.beat_at IS 'Its last beat.';

--
-- Name: COLUMN worker_state.expires_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.worker_state.expires_at IS 'Until when its last beat holds (the beat plus its lease): past it with no stop said, the worker is lost.';

--
-- Name: COLUMN worker_state.stopped_at; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.worker_state.stopped_at IS 'When it said it stopped (null: it has not).';

--
-- Name: COLUMN worker_state.stopped_how; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON COLUMN tireless.worker_state.stopped_how IS 'How it stopped, in its words (stopped by SIGINT, drained, --once).';

--
-- Name: CONSTRAINT worker_state_named ON worker_state; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT worker_state_named ON tireless.worker_state IS 'A worker''s name has 1 to 200 characters.';

--
-- Name: CONSTRAINT worker_state_stop_said ON worker_state; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT worker_state_stop_said ON tireless.worker_state IS 'How a worker stopped is said in 1 to 200 characters.';

--
-- Name: workers; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.workers AS
 WITH seen AS (
         SELECT s.worker,
            l.lane,
            s.first_seen,
            s.last_seen
           FROM (tireless.worker_seen s
             LEFT JOIN LATERAL unnest(s.lanes) l(lane) ON (true))
        UNION ALL
         SELECT m.worker,
                CASE
                    WHEN (m.to_state = 'claimed'::tireless.job_state) THEN m.lane
                    ELSE NULL::text
                END AS "case",
            m.at,
            m.at
           FROM tireless.history_moves(( SELECT r_1.counted_to
                   FROM tireless.history_rollup r_1), NULL::bigint) m(at, worker, from_state, to_state, error, job_id, forge, owner, repo, number, lane, kind, waited, ran)
          WHERE (m.worker IS NOT NULL)
        UNION ALL
         SELECT r_1.worker,
            l.lane,
            r_1.started_at,
            GREATEST(r_1.beat_at, r_1.stopped_at) AS "greatest"
           FROM (tireless.worker_state r_1
             LEFT JOIN LATERAL unnest(r_1.lanes) l(lane) ON (true))
        ), recent AS (
         SELECT s.worker,
            COALESCE(array_agg(DISTINCT s.lane ORDER BY s.lane) FILTER (WHERE (s.lane IS NOT NULL)), '{}'::text[]) AS lanes,
            min(s.first_seen) AS first_seen,
            max(s.last_seen) AS last_seen
           FROM seen s
          GROUP BY s.worker
         HAVING (max(s.last_seen) >= (now() - '24:00:00'::interval))
        ), held AS (
         SELECT j.claimed_by AS worker,
            j.id AS job_id,
            j.lane,
            j.claim_expires_at,
            j.updated_at,
            ( SELECT e.at
                   FROM tireless.job_event e
                  WHERE (e.job_id = j.id)
                  ORDER BY e.id DESC
                 LIMIT 1) AS held_since
           FROM tireless.job j
          WHERE (j.state = 'claimed'::tireless.job_state)
        ), holding AS (
         SELECT DISTINCT ON (h_1.worker) h_1.worker,
            h_1.job_id,
            h_1.lane,
            h_1.held_since,
            h_1.claim_expires_at,
                CASE
                    WHEN (h_1.updated_at > h_1.held_since) THEN h_1.updated_at
                    ELSE NULL::timestamp with time zone
                END AS last_heartbeat,
            count(*) OVER (PARTITION BY h_1.worker) AS jobs_held,
            bool_or((h_1.claim_expires_at < now())) OVER (PARTITION BY h_1.worker) AS past_lease
           FROM held h_1
          ORDER BY h_1.worker, h_1.held_since DESC
        )
 SELECT COALESCE(w.worker, h.worker) AS worker,
    ARRAY( SELECT DISTINCT l.l
           FROM unnest((COALESCE(w.lanes, '{}'::text[]) || h.lane)) l(l)
          WHERE (l.l IS NOT NULL)
          ORDER BY l.l) AS lanes,
    h.job_id,
    COALESCE(h.jobs_held, (0)::bigint) AS jobs_held,
    h.held_since,
    h.last_heartbeat,
    h.claim_expires_at AS lease_ends,
    GREATEST(w.last_seen, h.held_since, h.last_heartbeat) AS last_seen,
    w.first_seen,
        CASE
            WHEN h.past_lease THEN 'stopped heartbeating'::text
            WHEN (h.job_id IS NOT NULL) THEN 'working'::text
            ELSE 'idle'::text
        END AS status,
        CASE
            WHEN ((r.stopped_at IS NOT NULL) AND (h.job_id IS NULL)) THEN 'stopped'::text
            WHEN (h.past_lease OR ((r.stopped_at IS NULL) AND (r.expires_at < now()))) THEN 'lost'::text
            WHEN (h.job_id IS NOT NULL) THEN 'live'::text
            WHEN ((r.worker IS NOT NULL) AND (r.stopped_at IS NULL)) THEN 'idle'::text
            ELSE 'unknown'::text
        END AS presence,
    r.started_at,
    r.beat_at,
    r.expires_at AS beat_expires_at,
    r.stopped_at,
    r.stopped_how
   FROM ((recent w
     FULL JOIN holding h ON ((h.worker = w.worker)))
     LEFT JOIN tireless.worker_state r ON ((r.worker = COALESCE(w.worker, h.worker))));

--
-- Name: VIEW workers; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.workers IS 'Every worker named by the history or by its own record in the last 24 hours, or holding a job now: the lanes it serves and claimed from, the job it holds (the newest of jobs_held) since when, its last heartbeat (null until the first after the claim), when its lease ends, and its status: working, stopped heartbeating (a lease it holds ran out) or idle. Then its presence, from its own record (tireless.worker_state: tireless.worker_started, worker_beat, worker_stopped): live (it holds a job), idle (it beats and holds none), stopped (it said so, stopped_how), lost (its beat lapsed, or a lease it holds ran out, with no word of stopping: killed, or its host gone) or unknown (no record: a runner older than the record); when it started, its last beat and until when that holds, when and how it stopped. Reads the rolled-up tireless.worker_seen and the history written since the last tireless.roll_up_history().';

--
-- Name: forge_write forge_write_once; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_once UNIQUE NULLS NOT DISTINCT (kind, job_id, task, report_id, ask_id, label_id);

--
-- Name: CONSTRAINT forge_write_once ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_once ON tireless.forge_write IS 'A write is queued once for what it writes: queuing it again does nothing.';

--
-- Name: report_unknown_labels(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.report_unknown_labels(touched jsonb) RETURNS integer
    LANGUAGE sql
    BEGIN ATOMIC
 WITH found AS (
          INSERT INTO tireless.label_report (forge, owner, repo, number, label)  SELECT s.forge,
                     s.owner,
                     s.repo,
                     s.number,
                     "left"(u.label, 255) AS "left"
                    FROM ((( SELECT DISTINCT x.forge,
                             x.owner,
                             x.repo,
                             x.number
                            FROM jsonb_to_recordset(report_unknown_labels.touched) x(forge text, owner text, repo text, number integer)) t
                      JOIN tireless.issue s ON (((s.forge = t.forge) AND (s.owner = t.owner) AND (s.repo = t.repo) AND (s.number = t.number))))
                      CROSS JOIN LATERAL unnest(tireless.unknown_labels(s.labels)) u(label))
                   WHERE ((s.state = 'open'::text) AND (s.gone_at IS NULL))
                   ORDER BY s.forge, s.owner, s.repo, s.number, u.label ON CONFLICT(forge, owner, repo, number, label) DO NOTHING
           RETURNING label_report.id,
             label_report.forge,
             label_report.owner,
             label_report.repo,
             label_report.number
         ), queued AS (
          INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, label_id)  SELECT 'unknown_label',
                     f.forge,
                     f.owner,
                     f.repo,
                     f.number,
                     f.id
                    FROM found f ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING
           RETURNING 1 AS "?column?"
         )
  SELECT count(*) AS count
    FROM queued;
END;

--
-- Name: FUNCTION report_unknown_labels(touched jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.report_unknown_labels(touched jsonb) IS 'For the issues the work rule judged ([{forge, owner, repo, number}]): each label of an open one that names nothing (tireless.unknown_labels) and was never reported on it gets its label report and the comment''s write of the outbox (kind unknown_label). Returns how many were queued. Private: apply_work_rule calls it.';

--
-- Name: activity_count activity_count_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.activity_count
    ADD CONSTRAINT activity_count_pkey PRIMARY KEY (grain, bucket, lane, kind);

--
-- Name: ask ask_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.ask
    ADD CONSTRAINT ask_pkey PRIMARY KEY (id);

--
-- Name: attempt_exit attempt_exit_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.attempt_exit
    ADD CONSTRAINT attempt_exit_pkey PRIMARY KEY (job_id, attempt);

--
-- Name: attempt_usage attempt_usage_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.attempt_usage
    ADD CONSTRAINT attempt_usage_pkey PRIMARY KEY (job_id, attempt);

--
-- Name: checkpoint checkpoint_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.checkpoint
    ADD CONSTRAINT checkpoint_pkey PRIMARY KEY (job_id);

--
-- Name: cycle_report cycle_report_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.cycle_report
    ADD CONSTRAINT cycle_report_pkey PRIMARY KEY (id);

--
-- Name: delivery delivery_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.delivery
    ADD CONSTRAINT delivery_pkey PRIMARY KEY (job_id);

--
-- Name: duration_count duration_count_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.duration_count
    ADD CONSTRAINT duration_count_pkey PRIMARY KEY (grain, bucket, lane, kind, measure, bin);

--
-- Name: failure_count failure_count_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.failure_count
    ADD CONSTRAINT failure_count_pkey PRIMARY KEY (grain, bucket, lane, error);

--
-- Name: finished_count finished_count_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.finished_count
    ADD CONSTRAINT finished_count_pkey PRIMARY KEY (lane, outcome);

--
-- Name: finished_hourly finished_hourly_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.finished_hourly
    ADD CONSTRAINT finished_hourly_pkey PRIMARY KEY (hour, lane, outcome);

--
-- Name: forge forge_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge
    ADD CONSTRAINT forge_pkey PRIMARY KEY (name);

--
-- Name: forge_write forge_write_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_pkey PRIMARY KEY (id);

--
-- Name: history_rollup history_rollup_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.history_rollup
    ADD CONSTRAINT history_rollup_pkey PRIMARY KEY (singleton);

--
-- Name: issue issue_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.issue
    ADD CONSTRAINT issue_pkey PRIMARY KEY (forge, owner, repo, number);

--
-- Name: issue_run issue_run_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.issue_run
    ADD CONSTRAINT issue_run_pkey PRIMARY KEY (forge, owner, repo, number, job_id);

--
-- Name: issue_skip issue_skip_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.issue_skip
    ADD CONSTRAINT issue_skip_pkey PRIMARY KEY (forge, owner, repo, number);

--
-- Name: job_attempt job_attempt_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job_attempt
    ADD CONSTRAINT job_attempt_pkey PRIMARY KEY (job_id);

--
-- Name: job_event job_event_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job_event
    ADD CONSTRAINT job_event_pkey PRIMARY KEY (job_id, id);

--
-- Name: CONSTRAINT job_event_pkey ON job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT job_event_pkey ON tireless.job_event IS 'An event is identified by its job and its identity id; a job''s history, in order, is a range of this key.';

--
-- Name: job job_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job
    ADD CONSTRAINT job_pkey PRIMARY KEY (id);

--
-- Name: job job_rules_hold; Type: CHECK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE tireless.job
    ADD CONSTRAINT job_rules_hold CHECK (tireless.job_rules_hold(job.*));

--
-- Name: CONSTRAINT job_rules_hold ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT job_rules_hold ON tireless.job IS 'Every row keeps the nine rules of tireless.job_rules_hold; a row that breaks one is refused under that rule''s name.';

--
-- Name: kind_policy kind_policy_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.kind_policy
    ADD CONSTRAINT kind_policy_pkey PRIMARY KEY (kind);

--
-- Name: label_report label_report_once; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.label_report
    ADD CONSTRAINT label_report_once UNIQUE (forge, owner, repo, number, label);

--
-- Name: CONSTRAINT label_report_once ON label_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT label_report_once ON tireless.label_report IS 'An issue is told of a label once, never again.';

--
-- Name: label_report label_report_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.label_report
    ADD CONSTRAINT label_report_pkey PRIMARY KEY (id);

--
-- Name: lane lane_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.lane
    ADD CONSTRAINT lane_pkey PRIMARY KEY (name);

--
-- Name: lane_repo lane_repo_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.lane_repo
    ADD CONSTRAINT lane_repo_pkey PRIMARY KEY (id);

--
-- Name: mirror_comment mirror_comment_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.mirror_comment
    ADD CONSTRAINT mirror_comment_pkey PRIMARY KEY (job_id);

--
-- Name: mirror_issue mirror_issue_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.mirror_issue
    ADD CONSTRAINT mirror_issue_pkey PRIMARY KEY (forge, owner, repo, number);

--
-- Name: mirror_repo mirror_repo_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.mirror_repo
    ADD CONSTRAINT mirror_repo_pkey PRIMARY KEY (forge, owner, repo);

--
-- Name: model_exchange model_exchange_per_attempt; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.model_exchange
    ADD CONSTRAINT model_exchange_per_attempt PRIMARY KEY (job_id, attempt, seq);

--
-- Name: CONSTRAINT model_exchange_per_attempt ON model_exchange; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_exchange_per_attempt ON tireless.model_exchange IS 'Exchanges of an attempt in the order they ended.';

--
-- Name: model_usage model_usage_per_attempt_model_and_day; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.model_usage
    ADD CONSTRAINT model_usage_per_attempt_model_and_day PRIMARY KEY (job_id, attempt, model, spend_day);

--
-- Name: CONSTRAINT model_usage_per_attempt_model_and_day ON model_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_usage_per_attempt_model_and_day ON tireless.model_usage IS 'One row per attempt, model and UTC day; record_usage adds to it.';

--
-- Name: ask one_ask_per_forge_item; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.ask
    ADD CONSTRAINT one_ask_per_forge_item UNIQUE (forge, owner, repo, source, source_id);

--
-- Name: CONSTRAINT one_ask_per_forge_item ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_ask_per_forge_item ON tireless.ask IS 'A review, comment or head asks once: a webhook redelivery or a poll that reads it again asks nothing more.';

--
-- Name: conversation_read one_conversation_read_per_repo; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.conversation_read
    ADD CONSTRAINT one_conversation_read_per_repo PRIMARY KEY (forge, owner, repo);

--
-- Name: CONSTRAINT one_conversation_read_per_repo ON conversation_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_conversation_read_per_repo ON tireless.conversation_read IS 'One read position per repository.';

--
-- Name: repo_delivery one_delivery_policy_per_repo; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.repo_delivery
    ADD CONSTRAINT one_delivery_policy_per_repo PRIMARY KEY (forge, owner, repo);

--
-- Name: CONSTRAINT one_delivery_policy_per_repo ON repo_delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_delivery_policy_per_repo ON tireless.repo_delivery IS 'A repository has one delivery policy.';

--
-- Name: issue_dependency one_dependency_per_source; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.issue_dependency
    ADD CONSTRAINT one_dependency_per_source PRIMARY KEY (forge, owner, repo, number, depends_on_owner, depends_on_repo, depends_on_number, source);

--
-- Name: repo_limit one_limit_row_per_repo; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.repo_limit
    ADD CONSTRAINT one_limit_row_per_repo PRIMARY KEY (forge, owner, repo);

--
-- Name: CONSTRAINT one_limit_row_per_repo ON repo_limit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_limit_row_per_repo ON tireless.repo_limit IS 'A repository has one set of limits.';

--
-- Name: model_price one_price_per_model; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.model_price
    ADD CONSTRAINT one_price_per_model PRIMARY KEY (model);

--
-- Name: CONSTRAINT one_price_per_model ON model_price; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_price_per_model ON tireless.model_price IS 'A model name or prefix has one price.';

--
-- Name: pull_read one_read_per_pull; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.pull_read
    ADD CONSTRAINT one_read_per_pull PRIMARY KEY (forge, owner, repo, pull_number);

--
-- Name: CONSTRAINT one_read_per_pull ON pull_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_read_per_pull ON tireless.pull_read IS 'One read position per pull request.';

--
-- Name: push one_record_per_pushed_head; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.push
    ADD CONSTRAINT one_record_per_pushed_head PRIMARY KEY (job_id, branch, head);

--
-- Name: CONSTRAINT one_record_per_pushed_head ON push; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_record_per_pushed_head ON tireless.push IS 'A head is recorded once per job and branch.';

--
-- Name: repo_revisions one_revision_policy_per_repo; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.repo_revisions
    ADD CONSTRAINT one_revision_policy_per_repo PRIMARY KEY (forge, owner, repo);

--
-- Name: CONSTRAINT one_revision_policy_per_repo ON repo_revisions; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_revision_policy_per_repo ON tireless.repo_revisions IS 'A repository has one revision policy.';

--
-- Name: plan_task one_task_per_child; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.plan_task
    ADD CONSTRAINT one_task_per_child UNIQUE (forge, owner, repo, child_number);

--
-- Name: CONSTRAINT one_task_per_child ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_task_per_child ON tireless.plan_task IS 'An issue is the child of one task at most: enqueue reads its parent from it.';

--
-- Name: lane_repo one_turn_per_lane_and_repo; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.lane_repo
    ADD CONSTRAINT one_turn_per_lane_and_repo UNIQUE (forge, owner, repo, lane);

--
-- Name: CONSTRAINT one_turn_per_lane_and_repo ON lane_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT one_turn_per_lane_and_repo ON tireless.lane_repo IS 'A repository has one turn per lane. Repository first: its limits and spend read its turns in every lane. Every claim writes its turn, so the table has no other index but the walk''s (a lane''s spend, read only for a lane with a budget, scans the table).';

--
-- Name: plan_task plan_task_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.plan_task
    ADD CONSTRAINT plan_task_pkey PRIMARY KEY (job_id, task);

--
-- Name: policy policy_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.policy
    ADD CONSTRAINT policy_pkey PRIMARY KEY (singleton);

--
-- Name: pull_outcome pull_outcome_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.pull_outcome
    ADD CONSTRAINT pull_outcome_pkey PRIMARY KEY (forge, owner, repo, pull_number);

--
-- Name: repo_poll repo_poll_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.repo_poll
    ADD CONSTRAINT repo_poll_pkey PRIMARY KEY (forge, owner, repo);

--
-- Name: sql_file sql_file_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.sql_file
    ADD CONSTRAINT sql_file_pkey PRIMARY KEY (name);

--
-- Name: sweep_slot sweep_slot_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.sweep_slot
    ADD CONSTRAINT sweep_slot_pkey PRIMARY KEY (slot);

--
-- Name: tracked_repo tracked_repo_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.tracked_repo
    ADD CONSTRAINT tracked_repo_pkey PRIMARY KEY (forge, owner, repo);

--
-- Name: webhook_delivery webhook_delivery_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.webhook_delivery
    ADD CONSTRAINT webhook_delivery_pkey PRIMARY KEY (forge, digest);

--
-- Name: worker_seen worker_seen_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.worker_seen
    ADD CONSTRAINT worker_seen_pkey PRIMARY KEY (worker);

--
-- Name: worker_state worker_state_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.worker_state
    ADD CONSTRAINT worker_state_pkey PRIMARY KEY (worker);

--
-- Name: asks_by_issue; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX asks_by_issue ON tireless.ask USING btree (forge, owner, repo, number, id);

--
-- Name: INDEX asks_by_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.asks_by_issue IS 'An issue''s asks, oldest first: the revisions counted, the failure before.';

--
-- Name: asks_by_job; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX asks_by_job ON tireless.ask USING btree (job_id) WHERE (job_id IS NOT NULL);

--
-- Name: INDEX asks_by_job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.asks_by_job IS 'The asks a job answers (its brief, tireless show).';

--
-- Name: asks_waiting; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX asks_waiting ON tireless.ask USING btree (forge, owner, repo, number) WHERE (outcome = 'waiting'::text);

--
-- Name: INDEX asks_waiting; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.asks_waiting IS 'The asks still waiting for their issue''s live job to end.';

--
-- Name: claimed_jobs_by_expiry; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX claimed_jobs_by_expiry ON tireless.job USING btree (claim_expires_at, lane) WHERE (state = 'claimed'::tireless.job_state);

--
-- Name: INDEX claimed_jobs_by_expiry; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.claimed_jobs_by_expiry IS 'expire_stale_claims and lane capacity: claimed jobs by lease end.';

--
-- Name: deliveries_by_issue; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX deliveries_by_issue ON tireless.delivery USING btree (forge, owner, repo, number, job_id);

--
-- Name: INDEX deliveries_by_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.deliveries_by_issue IS 'An issue''s deliveries, newest last: what tireless last pushed for it.';

--
-- Name: dependents_by_issue; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX dependents_by_issue ON tireless.issue_dependency USING btree (forge, depends_on_owner, depends_on_repo, depends_on_number);

--
-- Name: INDEX dependents_by_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.dependents_by_issue IS 'The issues that depend on one issue: re-evaluated when it is recorded (closed, reopened).';

--
-- Name: forge_writes_due; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX forge_writes_due ON tireless.forge_write USING btree (forge, owner, repo, kind, next_try_at) WHERE (written_at IS NULL);

--
-- Name: forge_writes_of_a_job; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX forge_writes_of_a_job ON tireless.forge_write USING btree (job_id) WHERE (job_id IS NOT NULL);

--
-- Name: forge_writes_of_a_label_report; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX forge_writes_of_a_label_report ON tireless.forge_write USING btree (label_id) WHERE (label_id IS NOT NULL);

--
-- Name: INDEX forge_writes_of_a_label_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.forge_writes_of_a_label_report IS 'The write of a label report, found by the report.';

--
-- Name: forge_writes_of_a_report; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX forge_writes_of_a_report ON tireless.forge_write USING btree (report_id) WHERE (report_id IS NOT NULL);

--
-- Name: forge_writes_of_an_ask; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX forge_writes_of_an_ask ON tireless.forge_write USING btree (ask_id) WHERE (ask_id IS NOT NULL);

--
-- Name: job_events_by_id; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX job_events_by_id ON tireless.job_event USING brin (id);

--
-- Name: INDEX job_events_by_id; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.job_events_by_id IS 'roll_up_history: the events written since the last rollup, a range of ids (BRIN: nothing to write per event).';

--
-- Name: jobs_by_parent; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX jobs_by_parent ON tireless.job USING btree (parent_id) WHERE (parent_id IS NOT NULL);

--
-- Name: INDEX jobs_by_parent; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.jobs_by_parent IS 'The children of a job; also keeps the parent foreign key cheap.';

--
-- Name: mirror_writes_due; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX mirror_writes_due ON tireless.mirror_issue USING btree (forge, owner, repo, next_try_at) WHERE ((applied_job_id IS DISTINCT FROM job_id) OR (applied_state IS DISTINCT FROM state) OR (applied_waiting <> waiting));

--
-- Name: INDEX mirror_writes_due; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.mirror_writes_due IS 'The writes still to apply, per repository, by when they are due.';

--
-- Name: model_usage_by_day; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX model_usage_by_day ON tireless.model_usage USING btree (spend_day, lane);

--
-- Name: network_use_per_attempt; Type: INDEX; Schema: tireless; Owner: -
--

CREATE UNIQUE INDEX network_use_per_attempt ON tireless.network_use USING btree (job_id, attempt, host, port, allowed, COALESCE(reason, ''::text));

--
-- Name: INDEX network_use_per_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.network_use_per_attempt IS 'One row per host, port and outcome (allowed, or refused for a reason) of an attempt.';

--
-- Name: one_live_job_per_issue; Type: INDEX; Schema: tireless; Owner: -
--

CREATE UNIQUE INDEX one_live_job_per_issue ON tireless.job USING btree (forge, owner, repo, number) WHERE (state = ANY (ARRAY['pending'::tireless.job_state, 'claimed'::tireless.job_state]));

--
-- Name: INDEX one_live_job_per_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.one_live_job_per_issue IS 'At most one pending or claimed job per issue; a new job is possible once the old one is terminal.';

--
-- Name: one_report_per_standing_cycle; Type: INDEX; Schema: tireless; Owner: -
--

CREATE UNIQUE INDEX one_report_per_standing_cycle ON tireless.cycle_report USING btree (forge, owner, repo, number, cycle) WHERE (broken_at IS NULL);

--
-- Name: INDEX one_report_per_standing_cycle; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.one_report_per_standing_cycle IS 'An issue is told of a standing cycle once.';

--
-- Name: pending_jobs_in_claim_order; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX pending_jobs_in_claim_order ON tireless.job USING btree (lane, id) WHERE ((state = 'pending'::tireless.job_state) AND (waiting_on IS NULL));

--
-- Name: INDEX pending_jobs_in_claim_order; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.pending_jobs_in_claim_order IS 'claim_next: pending jobs of a lane that wait for no dependency, oldest first.';

--
-- Name: pending_jobs_in_repo_order; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX pending_jobs_in_repo_order ON tireless.job USING btree (lane, forge, owner, repo, id) WHERE ((state = 'pending'::tireless.job_state) AND (waiting_on IS NULL));

--
-- Name: INDEX pending_jobs_in_repo_order; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.pending_jobs_in_repo_order IS 'claim_next: a repository''s oldest pending job in a lane that waits for no dependency, one probe whatever the backlog.';

--
-- Name: repos_in_turn_order; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX repos_in_turn_order ON tireless.lane_repo USING btree (lane, last_claimed_at, id) WHERE has_work;

--
-- Name: INDEX repos_in_turn_order; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.repos_in_turn_order IS 'claim_next: the lane''s repositories that have work, longest-waiting first.';

--
-- Name: terminal_jobs_by_change; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX terminal_jobs_by_change ON tireless.job USING btree (updated_at) WHERE (state = ANY (ARRAY['delivered'::tireless.job_state, 'failed'::tireless.job_state, 'cancelled'::tireless.job_state]));

--
-- Name: INDEX terminal_jobs_by_change; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.terminal_jobs_by_change IS 'Terminal jobs by their last change: what prune deletes, and the recent window queue_stats counts.';

--
-- Name: tracked_repo_once_in_any_case; Type: INDEX; Schema: tireless; Owner: -
--

CREATE UNIQUE INDEX tracked_repo_once_in_any_case ON tireless.tracked_repo USING btree (forge, lower(owner), lower(repo));

--
-- Name: INDEX tracked_repo_once_in_any_case; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.tracked_repo_once_in_any_case IS 'A repository is tracked once per forge whatever the case of its owner and name (both forges ignore it): track_repo answers false for the same repository in another case.';

--
-- Name: webhook_delivery_by_age; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX webhook_delivery_by_age ON tireless.webhook_delivery USING btree (received_at);

--
-- Name: INDEX webhook_delivery_by_age; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.webhook_delivery_by_age IS 'The bodies past the seven days, found to be forgotten.';

--
-- Name: job changed_jobs_take_turns; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER changed_jobs_take_turns AFTER UPDATE OF state, lane, waiting_on ON tireless.job FOR EACH ROW WHEN (((new.state = 'pending'::tireless.job_state) AND (new.waiting_on IS NULL) AND ((old.state <> 'pending'::tireless.job_state) OR (old.lane <> new.lane) OR (old.waiting_on IS NOT NULL)))) EXECUTE FUNCTION tireless.keep_turns();

ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER changed_jobs_take_turns;

--
-- Name: TRIGGER changed_jobs_take_turns ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER changed_jobs_take_turns ON tireless.job IS 'A job returned to pending, re-routed or released from its wait for a dependency gives its repository a turn with work in its lane.';

--
-- Name: job created_jobs_take_turns; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER created_jobs_take_turns AFTER INSERT ON tireless.job REFERENCING NEW TABLE AS created FOR EACH STATEMENT EXECUTE FUNCTION tireless.give_turns();

ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER created_jobs_take_turns;

--
-- Name: TRIGGER created_jobs_take_turns ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER created_jobs_take_turns ON tireless.job IS 'New pending jobs give their repository a turn with work in their lane (one statement per insert).';

--
-- Name: delivery delivery_of_a_delivered_job; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER delivery_of_a_delivered_job BEFORE INSERT OR UPDATE OF job_id, forge, owner, repo, number ON tireless.delivery FOR EACH ROW EXECUTE FUNCTION tireless.delivery_of_a_delivered_job();

--
-- Name: TRIGGER delivery_of_a_delivered_job ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER delivery_of_a_delivered_job ON tireless.delivery IS 'A delivery belongs to a delivered job and names its issue (tireless.delivery_of_a_delivered_job).';

--
-- Name: job ended_attempts_count_agent_time; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER ended_attempts_count_agent_time AFTER UPDATE OF state ON tireless.job FOR EACH ROW WHEN ((old.state = 'claimed'::tireless.job_state)) EXECUTE FUNCTION tireless.count_agent_time();

ALTER TABLE tireless.job DISABLE TRIGGER ended_attempts_count_agent_time;

--
-- Name: TRIGGER ended_attempts_count_agent_time ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER ended_attempts_count_agent_time ON tireless.job IS 'An ended attempt counts its held time against the budgets of agent time of its lane and repository. Enabled (ALWAYS) only while some lane or repository has such a budget (tireless.arm_agent_time_count).';

--
-- Name: job history_belongs_to_a_job; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER history_belongs_to_a_job AFTER DELETE ON tireless.job REFERENCING OLD TABLE AS gone_jobs FOR EACH STATEMENT EXECUTE FUNCTION tireless.keep_history_with_its_job();

--
-- Name: TRIGGER history_belongs_to_a_job ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER history_belongs_to_a_job ON tireless.job IS 'Every event belongs to a job: a job leaves only once its history is gone (tireless.prune).';

--
-- Name: job_event history_is_append_only; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER history_is_append_only BEFORE DELETE OR UPDATE ON tireless.job_event FOR EACH ROW EXECUTE FUNCTION tireless.refuse_history_rewrite();

--
-- Name: TRIGGER history_is_append_only ON job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER history_is_append_only ON tireless.job_event IS 'History is never rewritten.';

--
-- Name: job_event history_is_never_truncated; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER history_is_never_truncated BEFORE TRUNCATE ON tireless.job_event FOR EACH STATEMENT EXECUTE FUNCTION tireless.refuse_history_rewrite();

--
-- Name: TRIGGER history_is_never_truncated ON job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER history_is_never_truncated ON tireless.job_event IS 'History is never emptied.';

--
-- Name: job job_created_event; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER job_created_event AFTER INSERT ON tireless.job FOR EACH ROW EXECUTE FUNCTION tireless.record_job_event();

--
-- Name: TRIGGER job_created_event ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER job_created_event ON tireless.job IS 'History: every job starts with an event.';

--
-- Name: job job_state_changed_event; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER job_state_changed_event AFTER UPDATE OF state ON tireless.job FOR EACH ROW WHEN ((old.state IS DISTINCT FROM new.state)) EXECUTE FUNCTION tireless.record_job_event();

--
-- Name: TRIGGER job_state_changed_event ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER job_state_changed_event ON tireless.job IS 'History: every change of state is an event.';

--
-- Name: job jobs_are_never_truncated; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER jobs_are_never_truncated BEFORE TRUNCATE ON tireless.job FOR EACH STATEMENT EXECUTE FUNCTION tireless.keep_history_with_its_job();

--
-- Name: TRIGGER jobs_are_never_truncated ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER jobs_are_never_truncated ON tireless.job IS 'Every event belongs to a job: tireless.job is never emptied under its history.';

--
-- Name: job live_job_is_never_deleted; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER live_job_is_never_deleted BEFORE DELETE ON tireless.job FOR EACH ROW WHEN ((NOT tireless.is_terminal(old.state))) EXECUTE FUNCTION tireless.refuse_delete_of_live_job();

--
-- Name: TRIGGER live_job_is_never_deleted ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER live_job_is_never_deleted ON tireless.job IS 'A live job is never lost by a DELETE.';

--
-- Name: job stop_reaches_its_holder; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER stop_reaches_its_holder AFTER UPDATE OF cancel_requested_at ON tireless.job FOR EACH ROW WHEN (((old.cancel_requested_at IS NULL) AND (new.cancel_requested_at IS NOT NULL))) EXECUTE FUNCTION tireless.announce_stop();

--
-- Name: TRIGGER stop_reaches_its_holder ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER stop_reaches_its_holder ON tireless.job IS 'A claimed job asked to stop (cancel_requested_at set) is announced on tireless_stop, so its holder hears it at once.';

--
-- Name: job terminal_job_is_final; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER terminal_job_is_final BEFORE UPDATE ON tireless.job FOR EACH ROW WHEN ((old.state > 'claimed'::tireless.job_state)) EXECUTE FUNCTION tireless.refuse_change_to_terminal_job();

--
-- Name: TRIGGER terminal_job_is_final ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER terminal_job_is_final ON tireless.job IS 'Invariant 2: a terminal job never changes again.';

--
-- Name: ask ask_answered_by_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.ask
    ADD CONSTRAINT ask_answered_by_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE SET NULL;

--
-- Name: CONSTRAINT ask_answered_by_a_job ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_answered_by_a_job ON tireless.ask IS 'A pruned job leaves its asks, unanswered by any job.';

--
-- Name: ask ask_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.ask
    ADD CONSTRAINT ask_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT ask_of_a_tracked_repo ON ask; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT ask_of_a_tracked_repo ON tireless.ask IS 'Asks are kept while their repository is tracked.';

--
-- Name: attempt_exit attempt_exit_job_id_fkey; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.attempt_exit
    ADD CONSTRAINT attempt_exit_job_id_fkey FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT attempt_exit_job_id_fkey ON attempt_exit; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT attempt_exit_job_id_fkey ON tireless.attempt_exit IS 'An exit status belongs to a job and goes with it (prune).';

--
-- Name: attempt_usage attempt_usage_job_id_fkey; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.attempt_usage
    ADD CONSTRAINT attempt_usage_job_id_fkey FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT attempt_usage_job_id_fkey ON attempt_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT attempt_usage_job_id_fkey ON tireless.attempt_usage IS 'Usage belongs to its job and goes with it (prune).';

--
-- Name: checkpoint checkpoint_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.checkpoint
    ADD CONSTRAINT checkpoint_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT checkpoint_of_a_job ON checkpoint; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT checkpoint_of_a_job ON tireless.checkpoint IS 'A checkpoint belongs to its job and goes with it (prune).';

--
-- Name: conversation_read conversation_read_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.conversation_read
    ADD CONSTRAINT conversation_read_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT conversation_read_of_a_tracked_repo ON conversation_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT conversation_read_of_a_tracked_repo ON tireless.conversation_read IS 'Kept while the repository is tracked.';

--
-- Name: cycle_report cycle_report_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.cycle_report
    ADD CONSTRAINT cycle_report_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE SET NULL;

--
-- Name: CONSTRAINT cycle_report_of_a_job ON cycle_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT cycle_report_of_a_job ON tireless.cycle_report IS 'A pruned job leaves its report (the issue was told).';

--
-- Name: cycle_report cycle_report_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.cycle_report
    ADD CONSTRAINT cycle_report_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT cycle_report_of_a_tracked_repo ON cycle_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT cycle_report_of_a_tracked_repo ON tireless.cycle_report IS 'Mirror state belongs to a tracked repository and goes with it.';

--
-- Name: delivery delivery_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.delivery
    ADD CONSTRAINT delivery_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT delivery_of_a_job ON delivery; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT delivery_of_a_job ON tireless.delivery IS 'A delivery belongs to its job and goes with it (prune).';

--
-- Name: forge_write forge_write_of_a_cycle_report; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_of_a_cycle_report FOREIGN KEY (report_id) REFERENCES tireless.cycle_report(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT forge_write_of_a_cycle_report ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_of_a_cycle_report ON tireless.forge_write IS 'A cycle report deleted takes its write with it.';

--
-- Name: forge_write forge_write_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT forge_write_of_a_job ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_of_a_job ON tireless.forge_write IS 'A job pruned takes its writes with it.';

--
-- Name: forge_write forge_write_of_a_label_report; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_of_a_label_report FOREIGN KEY (label_id) REFERENCES tireless.label_report(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT forge_write_of_a_label_report ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_of_a_label_report ON tireless.forge_write IS 'A label report deleted takes its write with it.';

--
-- Name: forge_write forge_write_of_a_task; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_of_a_task FOREIGN KEY (job_id, task) REFERENCES tireless.plan_task(job_id, task) ON DELETE CASCADE;

--
-- Name: CONSTRAINT forge_write_of_a_task ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_of_a_task ON tireless.forge_write IS 'A plan task replaced by a later attempt''s plan takes its write with it.';

--
-- Name: forge_write forge_write_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT forge_write_of_a_tracked_repo ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_of_a_tracked_repo ON tireless.forge_write IS 'A repository no longer tracked takes its writes with it: nothing is mirrored there.';

--
-- Name: forge_write forge_write_of_an_ask; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.forge_write
    ADD CONSTRAINT forge_write_of_an_ask FOREIGN KEY (ask_id) REFERENCES tireless.ask(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT forge_write_of_an_ask ON forge_write; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT forge_write_of_an_ask ON tireless.forge_write IS 'An ask deleted takes its reply with it.';

--
-- Name: issue_skip issue_skip_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.issue_skip
    ADD CONSTRAINT issue_skip_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT issue_skip_of_a_tracked_repo ON issue_skip; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_skip_of_a_tracked_repo ON tireless.issue_skip IS 'Only a tracked repository''s issues are polled; untracking it forgets its skips.';

--
-- Name: job_attempt job_attempt_job_id_fkey; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job_attempt
    ADD CONSTRAINT job_attempt_job_id_fkey FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT job_attempt_job_id_fkey ON job_attempt; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT job_attempt_job_id_fkey ON tireless.job_attempt IS 'An attempt row belongs to a job and goes with it (prune).';

--
-- Name: label_report label_report_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.label_report
    ADD CONSTRAINT label_report_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT label_report_of_a_tracked_repo ON label_report; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT label_report_of_a_tracked_repo ON tireless.label_report IS 'Mirror state belongs to a tracked repository and goes with it.';

--
-- Name: mirror_comment mirror_comment_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.mirror_comment
    ADD CONSTRAINT mirror_comment_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT mirror_comment_of_a_job ON mirror_comment; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT mirror_comment_of_a_job ON tireless.mirror_comment IS 'A comment belongs to its job and goes with it (prune).';

--
-- Name: mirror_comment mirror_comment_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.mirror_comment
    ADD CONSTRAINT mirror_comment_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT mirror_comment_of_a_tracked_repo ON mirror_comment; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT mirror_comment_of_a_tracked_repo ON tireless.mirror_comment IS 'Mirror state belongs to a tracked repository and goes with it.';

--
-- Name: mirror_issue mirror_issue_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.mirror_issue
    ADD CONSTRAINT mirror_issue_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT mirror_issue_of_a_tracked_repo ON mirror_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT mirror_issue_of_a_tracked_repo ON tireless.mirror_issue IS 'Mirror state belongs to a tracked repository and goes with it.';

--
-- Name: mirror_repo mirror_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.mirror_repo
    ADD CONSTRAINT mirror_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT mirror_of_a_tracked_repo ON mirror_repo; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT mirror_of_a_tracked_repo ON tireless.mirror_repo IS 'Mirror state belongs to a tracked repository and goes with it.';

--
-- Name: model_exchange model_exchange_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.model_exchange
    ADD CONSTRAINT model_exchange_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT model_exchange_of_a_job ON model_exchange; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_exchange_of_a_job ON tireless.model_exchange IS 'A transcript belongs to a job and goes with it (prune).';

--
-- Name: model_usage model_usage_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.model_usage
    ADD CONSTRAINT model_usage_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT model_usage_of_a_job ON model_usage; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT model_usage_of_a_job ON tireless.model_usage IS 'Usage belongs to a job and goes with it (prune).';

--
-- Name: network_use network_use_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.network_use
    ADD CONSTRAINT network_use_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT network_use_of_a_job ON network_use; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT network_use_of_a_job ON tireless.network_use IS 'Network use belongs to its job and goes with it (prune).';

--
-- Name: job parent_is_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job
    ADD CONSTRAINT parent_is_a_job FOREIGN KEY (parent_id) REFERENCES tireless.job(id);

--
-- Name: CONSTRAINT parent_is_a_job ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT parent_is_a_job ON tireless.job IS 'A child job (an implementation planned by a plan) names an existing job.';

--
-- Name: plan_task plan_task_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.plan_task
    ADD CONSTRAINT plan_task_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT plan_task_of_a_job ON plan_task; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT plan_task_of_a_job ON tireless.plan_task IS 'A pruned job takes its tasks with it (the issues stay on the forge).';

--
-- Name: repo_poll poll_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.repo_poll
    ADD CONSTRAINT poll_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT poll_of_a_tracked_repo ON repo_poll; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT poll_of_a_tracked_repo ON tireless.repo_poll IS 'Poll state belongs to a tracked repository and goes with it.';

--
-- Name: pull_read pull_read_of_a_tracked_repo; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.pull_read
    ADD CONSTRAINT pull_read_of_a_tracked_repo FOREIGN KEY (forge, owner, repo) REFERENCES tireless.tracked_repo(forge, owner, repo) ON DELETE CASCADE;

--
-- Name: CONSTRAINT pull_read_of_a_tracked_repo ON pull_read; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pull_read_of_a_tracked_repo ON tireless.pull_read IS 'Kept while the repository is tracked.';

--
-- Name: push push_of_a_job; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.push
    ADD CONSTRAINT push_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job(id) ON DELETE CASCADE;

--
-- Name: CONSTRAINT push_of_a_job ON push; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT push_of_a_job ON tireless.push IS 'A recorded push belongs to its job and goes with it (prune).';

--
-- Name: SCHEMA tireless; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA tireless TO tireless_runner;
GRANT USAGE ON SCHEMA tireless TO tireless_poller;
GRANT USAGE ON SCHEMA tireless TO tireless_admin;

--
-- Name: FUNCTION activity_grain(span interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.activity_grain(span interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.activity_grain(span interval) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.activity_grain(span interval) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.activity_grain(span interval) TO tireless_admin;

--
-- Name: FUNCTION acts_for_login(claimed_login text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.acts_for_login(claimed_login text) FROM PUBLIC;

--
-- Name: FUNCTION add_forge(name text, kind text, base_url text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.add_forge(name text, kind text, base_url text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.add_forge(name text, kind text, base_url text) TO tireless_admin;

--
-- Name: FUNCTION agent_profiles(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.agent_profiles() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.agent_profiles() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.agent_profiles() TO tireless_admin;

--
-- Name: FUNCTION is_lane_name(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_lane_name(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.is_lane_name(name text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.is_lane_name(name text) TO tireless_poller;

--
-- Name: TABLE lane; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.lane TO tireless_admin;

--
-- Name: FUNCTION agent_time_budgeted(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.agent_time_budgeted() FROM PUBLIC;

--
-- Name: TABLE job; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job TO tireless_admin;

--
-- Name: FUNCTION allowance_of(job tireless.job); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.allowance_of(job tireless.job) FROM PUBLIC;

--
-- Name: FUNCTION announce_poll(forge text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.announce_poll(forge text) FROM PUBLIC;

--
-- Name: FUNCTION announce_stop(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.announce_stop() FROM PUBLIC;

--
-- Name: FUNCTION announce_work(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.announce_work(lane text) FROM PUBLIC;

--
-- Name: FUNCTION answer_waiting_asks(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.answer_waiting_asks(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION apply_work_rule(issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.apply_work_rule(issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer) FROM PUBLIC;

--
-- Name: FUNCTION arm_agent_time_count(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.arm_agent_time_count() FROM PUBLIC;

--
-- Name: FUNCTION ask_problem(ask jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.ask_problem(ask jsonb) FROM PUBLIC;

--
-- Name: TABLE ask; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.ask TO tireless_admin;

--
-- Name: FUNCTION ask_reply_text(ask tireless.ask); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.ask_reply_text(ask tireless.ask) FROM PUBLIC;

--
-- Name: FUNCTION attach_plan(job_id bigint, worker text, plan jsonb, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.attach_plan(job_id bigint, worker text, plan jsonb, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.attach_plan(job_id bigint, worker text, plan jsonb, token uuid) TO tireless_runner;

--
-- Name: FUNCTION attach_report(job_id bigint, worker text, report text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.attach_report(job_id bigint, worker text, report text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.attach_report(job_id bigint, worker text, report text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION price_of(model text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.price_of(model text) FROM PUBLIC;

--
-- Name: FUNCTION usage_cost(model text, input bigint, output bigint, cache_read bigint, cache_write bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.usage_cost(model text, input bigint, output bigint, cache_read bigint, cache_write bigint) FROM PUBLIC;

--
-- Name: FUNCTION attempt_spend(job_id bigint, attempt integer, OUT tokens bigint, OUT cost numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.attempt_spend(job_id bigint, attempt integer, OUT tokens bigint, OUT cost numeric) FROM PUBLIC;

--
-- Name: FUNCTION attempts_spent(job tireless.job); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.attempts_spent(job tireless.job) FROM PUBLIC;

--
-- Name: FUNCTION bin_bound(bin smallint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.bin_bound(bin smallint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.bin_bound(bin smallint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.bin_bound(bin smallint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.bin_bound(bin smallint) TO tireless_admin;

--
-- Name: FUNCTION body_dependencies(body text, owner text, repo text, number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.body_dependencies(body text, owner text, repo text, number integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.body_dependencies(body text, owner text, repo text, number integer) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.body_dependencies(body text, owner text, repo text, number integer) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.body_dependencies(body text, owner text, repo text, number integer) TO tireless_admin;

--
-- Name: FUNCTION budget_spent(runs bigint, agent_time interval, runs_per_day integer, agent_time_per_day interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.budget_spent(runs bigint, agent_time interval, runs_per_day integer, agent_time_per_day interval) FROM PUBLIC;

--
-- Name: FUNCTION check_budget(runs_per_day integer, agent_time_per_day interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_budget(runs_per_day integer, agent_time_per_day interval) FROM PUBLIC;

--
-- Name: FUNCTION check_commit_id(what text, id text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_commit_id(what text, id text) FROM PUBLIC;

--
-- Name: FUNCTION check_forge(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_forge(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.check_forge(name text) TO tireless_admin;

--
-- Name: FUNCTION check_holder(job tireless.job, worker text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_holder(job tireless.job, worker text, token uuid) FROM PUBLIC;

--
-- Name: FUNCTION check_issue_batch(issues jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_issue_batch(issues jsonb) FROM PUBLIC;

--
-- Name: FUNCTION check_label_prefix(prefix text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_label_prefix(prefix text) FROM PUBLIC;

--
-- Name: FUNCTION check_lane(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_lane(lane text) FROM PUBLIC;

--
-- Name: FUNCTION check_lease(lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_lease(lease interval) FROM PUBLIC;

--
-- Name: FUNCTION check_path_globs(what text, globs text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_path_globs(what text, globs text[]) FROM PUBLIC;

--
-- Name: FUNCTION check_ref_name(what text, name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_ref_name(what text, name text) FROM PUBLIC;

--
-- Name: FUNCTION check_repo(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_repo(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION check_run_limit(name text, span interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_run_limit(name text, span interval) FROM PUBLIC;

--
-- Name: FUNCTION check_spend_budget(tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_spend_budget(tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) FROM PUBLIC;

--
-- Name: FUNCTION check_tracked(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_tracked(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION check_worker(worker text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_worker(worker text) FROM PUBLIC;

--
-- Name: FUNCTION checklist_write(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.checklist_write(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION checklist_written(w tireless.forge_write, result jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.checklist_written(w tireless.forge_write, result jsonb) FROM PUBLIC;

--
-- Name: FUNCTION child_status(task tireless.plan_task, OUT done boolean, OUT status text, OUT title text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.child_status(task tireless.plan_task, OUT done boolean, OUT status text, OUT title text) FROM PUBLIC;

--
-- Name: FUNCTION children_checklist(job tireless.job); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.children_checklist(job tireless.job) FROM PUBLIC;

--
-- Name: FUNCTION claim_in_turn(worker text, lane text, lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.claim_in_turn(worker text, lane text, lease interval) FROM PUBLIC;

--
-- Name: FUNCTION claim_next(worker text, lanes text[], lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.claim_next(worker text, lanes text[], lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.claim_next(worker text, lanes text[], lease interval) TO tireless_runner;

--
-- Name: FUNCTION claim_repos_to_poll(poller text, lease interval, max_repos integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.claim_repos_to_poll(poller text, lease interval, max_repos integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.claim_repos_to_poll(poller text, lease interval, max_repos integer) TO tireless_poller;

--
-- Name: FUNCTION closing_fence(body text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.closing_fence(body text) FROM PUBLIC;

--
-- Name: FUNCTION command_in(body text, OUT verb text, OUT instruction text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.command_in(body text, OUT verb text, OUT instruction text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.command_in(body text, OUT verb text, OUT instruction text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.command_in(body text, OUT verb text, OUT instruction text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.command_in(body text, OUT verb text, OUT instruction text) TO tireless_admin;

--
-- Name: FUNCTION comment_marker(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.comment_marker(job_id bigint) FROM PUBLIC;

--
-- Name: FUNCTION comment_write(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.comment_write(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION comment_written(w tireless.forge_write, result jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.comment_written(w tireless.forge_write, result jsonb) FROM PUBLIC;

--
-- Name: FUNCTION conversation_to_read(forge text, owner text, repo text, poller text, OUT comments_cursor timestamp with time zone, OUT comments_etag text, OUT pulls jsonb, OUT waiting boolean); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.conversation_to_read(forge text, owner text, repo text, poller text, OUT comments_cursor timestamp with time zone, OUT comments_etag text, OUT pulls jsonb, OUT waiting boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.conversation_to_read(forge text, owner text, repo text, poller text, OUT comments_cursor timestamp with time zone, OUT comments_etag text, OUT pulls jsonb, OUT waiting boolean) TO tireless_poller;

--
-- Name: FUNCTION count_agent_time(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.count_agent_time() FROM PUBLIC;

--
-- Name: TABLE job_attempt; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job_attempt TO tireless_admin;

--
-- Name: FUNCTION current_attempt(job_id bigint, attempt integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.current_attempt(job_id bigint, attempt integer) FROM PUBLIC;

--
-- Name: FUNCTION cycle_marker(report_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.cycle_marker(report_id bigint) FROM PUBLIC;

--
-- Name: TABLE cycle_report; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.cycle_report TO tireless_admin;

--
-- Name: FUNCTION cycle_report_text(report tireless.cycle_report); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.cycle_report_text(report tireless.cycle_report) FROM PUBLIC;

--
-- Name: FUNCTION cycle_write(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.cycle_write(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION cycle_written(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.cycle_written(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION deliver(job_id bigint, worker text, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.deliver(job_id bigint, worker text, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.deliver(job_id bigint, worker text, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean) TO tireless_runner;

--
-- Name: FUNCTION deliver_and_claim(job_id bigint, worker text, lanes text[], lease interval, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.deliver_and_claim(job_id bigint, worker text, lanes text[], lease interval, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.deliver_and_claim(job_id bigint, worker text, lanes text[], lease interval, branch text, head text, base_branch text, base text, token uuid, note text, draft boolean) TO tireless_runner;

--
-- Name: FUNCTION delivery_of_a_delivered_job(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.delivery_of_a_delivered_job() FROM PUBLIC;

--
-- Name: FUNCTION delivery_policy(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.delivery_policy(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.delivery_policy(forge text, owner text, repo text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.delivery_policy(forge text, owner text, repo text) TO tireless_admin;

--
-- Name: FUNCTION dependency_cycle(forge text, owner text, repo text, number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.dependency_cycle(forge text, owner text, repo text, number integer) FROM PUBLIC;

--
-- Name: FUNCTION depends_on_problem(depends_on jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.depends_on_problem(depends_on jsonb) FROM PUBLIC;

--
-- Name: FUNCTION duration_bin(seconds double precision); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.duration_bin(seconds double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.duration_bin(seconds double precision) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.duration_bin(seconds double precision) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.duration_bin(seconds double precision) TO tireless_admin;

--
-- Name: FUNCTION egress_entry(entry text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.egress_entry(entry text) FROM PUBLIC;

--
-- Name: FUNCTION end_stopped_attempt(job_id bigint, worker text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.end_stopped_attempt(job_id bigint, worker text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.end_stopped_attempt(job_id bigint, worker text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION enqueue(issues jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.enqueue(issues jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.enqueue(issues jsonb) TO tireless_poller;

--
-- Name: FUNCTION enqueue_and_list(issues jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.enqueue_and_list(issues jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.enqueue_and_list(issues jsonb) TO tireless_admin;

--
-- Name: FUNCTION ensure_lane(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.ensure_lane(lane text) FROM PUBLIC;

--
-- Name: FUNCTION expire_stale_claims(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.expire_stale_claims() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.expire_stale_claims() TO tireless_runner;

--
-- Name: FUNCTION is_terminal(state tireless.job_state); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_terminal(state tireless.job_state) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.is_terminal(state tireless.job_state) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.is_terminal(state tireless.job_state) TO tireless_poller;

--
-- Name: FUNCTION note_cause(note text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.note_cause(note text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.note_cause(note text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.note_cause(note text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.note_cause(note text) TO tireless_admin;

--
-- Name: TABLE job_event; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job_event TO tireless_admin;

--
-- Name: FUNCTION history_moves(after_id bigint, upto_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.history_moves(after_id bigint, upto_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.history_moves(after_id bigint, upto_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.history_moves(after_id bigint, upto_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.history_moves(after_id bigint, upto_id bigint) TO tireless_admin;

--
-- Name: TABLE failure_count; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.failure_count TO tireless_admin;

--
-- Name: TABLE history_rollup; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.history_rollup TO tireless_admin;

--
-- Name: FUNCTION failure_groups(span interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.failure_groups(span interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.failure_groups(span interval) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.failure_groups(span interval) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.failure_groups(span interval) TO tireless_admin;

--
-- Name: FUNCTION finish_and_claim(job_id bigint, to_state text, worker text, lanes text[], lease interval, claim_token uuid, note text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.finish_and_claim(job_id bigint, to_state text, worker text, lanes text[], lease interval, claim_token uuid, note text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.finish_and_claim(job_id bigint, to_state text, worker text, lanes text[], lease interval, claim_token uuid, note text) TO tireless_runner;

--
-- Name: FUNCTION finished_job_comment(job tireless.job); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.finished_job_comment(job tireless.job) FROM PUBLIC;

--
-- Name: FUNCTION fit_report(report text, room integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.fit_report(report text, room integer) FROM PUBLIC;

--
-- Name: TABLE activity_count; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.activity_count TO tireless_admin;

--
-- Name: TABLE duration_count; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.duration_count TO tireless_admin;

--
-- Name: TABLE issue_run; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.issue_run TO tireless_admin;

--
-- Name: TABLE worker_seen; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.worker_seen TO tireless_admin;

--
-- Name: FUNCTION fold_history(after_id bigint, upto_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.fold_history(after_id bigint, upto_id bigint) FROM PUBLIC;

--
-- Name: FUNCTION forge_api_url(kind tireless.forge_kind, base_url text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forge_api_url(kind tireless.forge_kind, base_url text) FROM PUBLIC;

--
-- Name: FUNCTION forge_apps(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forge_apps() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.forge_apps() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.forge_apps() TO tireless_poller;

--
-- Name: FUNCTION forge_body_limit(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forge_body_limit() FROM PUBLIC;

--
-- Name: FUNCTION forge_web_root(kind tireless.forge_kind, base_url text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forge_web_root(kind tireless.forge_kind, base_url text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.forge_web_root(kind tireless.forge_kind, base_url text) TO tireless_admin;

--
-- Name: FUNCTION forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text) TO tireless_admin;

--
-- Name: FUNCTION forge_write_backoff(failures integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forge_write_backoff(failures integer) FROM PUBLIC;

--
-- Name: FUNCTION forge_writes_due(forge text, owner text, repo text, poller text, kinds text[], max_writes integer, now timestamp with time zone); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forge_writes_due(forge text, owner text, repo text, poller text, kinds text[], max_writes integer, now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.forge_writes_due(forge text, owner text, repo text, poller text, kinds text[], max_writes integer, now timestamp with time zone) TO tireless_poller;

--
-- Name: FUNCTION forges(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.forges() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.forges() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.forges() TO tireless_poller;

--
-- Name: FUNCTION give_back(job_id bigint, worker text, note text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.give_back(job_id bigint, worker text, note text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.give_back(job_id bigint, worker text, note text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION give_turns(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.give_turns() FROM PUBLIC;

--
-- Name: FUNCTION heartbeat(job_id bigint, worker text, lease interval, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval, token uuid) TO tireless_runner;

--
-- Name: FUNCTION held_job(job_id bigint, worker text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.held_job(job_id bigint, worker text, token uuid) FROM PUBLIC;

--
-- Name: TABLE repo_poll; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.repo_poll TO tireless_admin;

--
-- Name: FUNCTION held_poll(forge text, owner text, repo text, poller text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.held_poll(forge text, owner text, repo text, poller text) FROM PUBLIC;

--
-- Name: FUNCTION history_top(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.history_top() FROM PUBLIC;

--
-- Name: FUNCTION is_commit_id(id text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_commit_id(id text) FROM PUBLIC;

--
-- Name: FUNCTION is_forge_timestamp(value text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_forge_timestamp(value text) FROM PUBLIC;

--
-- Name: FUNCTION is_lease(lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_lease(lease interval) FROM PUBLIC;

--
-- Name: FUNCTION is_model_name(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_model_name(name text) FROM PUBLIC;

--
-- Name: FUNCTION is_ref_name(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_ref_name(name text) FROM PUBLIC;

--
-- Name: FUNCTION is_worker_name(worker text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_worker_name(worker text) FROM PUBLIC;

--
-- Name: FUNCTION issue_body_limit(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_body_limit() FROM PUBLIC;

--
-- Name: FUNCTION issue_gone(forge text, owner text, repo text, number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_gone(forge text, owner text, repo text, number integer) FROM PUBLIC;

--
-- Name: FUNCTION issue_problem(issue jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_problem(issue jsonb) FROM PUBLIC;

--
-- Name: FUNCTION issue_push(forge text, owner text, repo text, number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_push(forge text, owner text, repo text, number integer) FROM PUBLIC;

--
-- Name: FUNCTION issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer) TO tireless_admin;

--
-- Name: FUNCTION issue_runs(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_runs(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.issue_runs(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.issue_runs(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.issue_runs(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION issue_spend(forge text, owner text, repo text, number integer, OUT tokens bigint, OUT cost numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_spend(forge text, owner text, repo text, number integer, OUT tokens bigint, OUT cost numeric) FROM PUBLIC;

--
-- Name: FUNCTION job_asks(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_asks(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_asks(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_asks(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_asks(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_attempts(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_attempts(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_attempts(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_attempts(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_attempts(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_brief(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_brief(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_brief(job_id bigint) TO tireless_runner;

--
-- Name: FUNCTION job_checklist(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_checklist(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_checklist(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_checklist(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_checklist(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_durations(span interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_durations(span interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_durations(span interval) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_durations(span interval) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_durations(span interval) TO tireless_admin;

--
-- Name: FUNCTION job_history(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_history(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_history(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_history(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_history(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_kind_for(labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_kind_for(labels text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_kind_for(labels text[]) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_kind_for(labels text[]) TO tireless_poller;

--
-- Name: FUNCTION job_model_usage(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_model_usage(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_model_usage(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_model_usage(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_model_usage(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_network(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_network(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_network(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_network(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_network(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_rules_hold(job tireless.job); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_rules_hold(job tireless.job) FROM PUBLIC;

--
-- Name: FUNCTION job_tasks(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_tasks(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_tasks(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_tasks(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_tasks(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_transcript(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_transcript(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_transcript(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION job_waits(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_waits(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_waits(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_waits(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.job_waits(job_id bigint) TO tireless_admin;

--
-- Name: TABLE job_list; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job_list TO tireless_runner;
GRANT SELECT ON TABLE tireless.job_list TO tireless_poller;
GRANT SELECT ON TABLE tireless.job_list TO tireless_admin;

--
-- Name: FUNCTION jobs_matching(state tireless.job_state, lane text, kind tireless.job_kind, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.jobs_matching(state tireless.job_state, lane text, kind tireless.job_kind, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint) FROM PUBLIC;

--
-- Name: FUNCTION judge_ask(forge text, owner text, repo text, login text, item jsonb, read_from timestamp with time zone); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.judge_ask(forge text, owner text, repo text, login text, item jsonb, read_from timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION keep_history_with_its_job(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.keep_history_with_its_job() FROM PUBLIC;

--
-- Name: FUNCTION keep_turns(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.keep_turns() FROM PUBLIC;

--
-- Name: FUNCTION label_marker(report_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.label_marker(report_id bigint) FROM PUBLIC;

--
-- Name: FUNCTION label_name_limit(kind tireless.forge_kind); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.label_name_limit(kind tireless.forge_kind) FROM PUBLIC;

--
-- Name: TABLE label_report; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.label_report TO tireless_admin;

--
-- Name: FUNCTION label_report_text(report tireless.label_report); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.label_report_text(report tireless.label_report) FROM PUBLIC;

--
-- Name: FUNCTION labels_problem(labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.labels_problem(labels text[]) FROM PUBLIC;

--
-- Name: FUNCTION lane_agent(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_agent(lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.lane_agent(lane text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.lane_agent(lane text) TO tireless_admin;

--
-- Name: FUNCTION lane_agents(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_agents() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.lane_agents() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.lane_agents() TO tireless_admin;

--
-- Name: FUNCTION lane_for(kind text, labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_for(kind text, labels text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.lane_for(kind text, labels text[]) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.lane_for(kind text, labels text[]) TO tireless_poller;

--
-- Name: FUNCTION lane_hands_out_work(paused boolean, tripped_until timestamp with time zone); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_hands_out_work(paused boolean, tripped_until timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION lane_limits(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_limits(lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.lane_limits(lane text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.lane_limits(lane text) TO tireless_admin;

--
-- Name: FUNCTION lane_network(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_network(lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.lane_network(lane text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.lane_network(lane text) TO tireless_admin;

--
-- Name: FUNCTION lane_problem(lanes text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_problem(lanes text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.lane_problem(lanes text[]) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.lane_problem(lanes text[]) TO tireless_admin;

--
-- Name: FUNCTION spend_day(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.spend_day() FROM PUBLIC;

--
-- Name: FUNCTION lane_spend(lane text, OUT runs bigint, OUT agent_time interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_spend(lane text, OUT runs bigint, OUT agent_time interval) FROM PUBLIC;

--
-- Name: FUNCTION spend_of(job_id bigint, lane text, forge text, owner text, repo text, OUT tokens bigint, OUT cost numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.spend_of(job_id bigint, lane text, forge text, owner text, repo text, OUT tokens bigint, OUT cost numeric) FROM PUBLIC;

--
-- Name: FUNCTION tokens_text(tokens numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.tokens_text(tokens numeric) FROM PUBLIC;

--
-- Name: FUNCTION usd_text(usd numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.usd_text(usd numeric) FROM PUBLIC;

--
-- Name: FUNCTION spent_budget(tokens bigint, cost numeric, tokens_budget bigint, cost_budget numeric, whose text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.spent_budget(tokens bigint, cost numeric, tokens_budget bigint, cost_budget numeric, whose text) FROM PUBLIC;

--
-- Name: FUNCTION lane_usage_spent(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lane_usage_spent(lane text) FROM PUBLIC;

--
-- Name: FUNCTION list_jobs(state text, lane text, kind text, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint, newest boolean, at_most integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.list_jobs(state text, lane text, kind text, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint, newest boolean, at_most integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.list_jobs(state text, lane text, kind text, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint, newest boolean, at_most integer) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.list_jobs(state text, lane text, kind text, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint, newest boolean, at_most integer) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.list_jobs(state text, lane text, kind text, forge text, owner text, repo text, since interval, words text[], worker text, number integer, after bigint, before bigint, newest boolean, at_most integer) TO tireless_admin;

--
-- Name: FUNCTION lock_jobs_for_a_budget(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lock_jobs_for_a_budget() FROM PUBLIC;

--
-- Name: FUNCTION lock_repo_issues(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.lock_repo_issues(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION longest_label(prefix text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.longest_label(prefix text) FROM PUBLIC;

--
-- Name: FUNCTION may_cancel_pending(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.may_cancel_pending() FROM PUBLIC;

--
-- Name: TABLE mirror_issue; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.mirror_issue TO tireless_admin;

--
-- Name: FUNCTION mirror_issue_row(forge text, owner text, repo text, number integer, job_id bigint, state text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.mirror_issue_row(forge text, owner text, repo text, number integer, job_id bigint, state text) FROM PUBLIC;

--
-- Name: FUNCTION mirror_labels(OUT prefix text, OUT mode_labels text[], OUT state_labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.mirror_labels(OUT prefix text, OUT mode_labels text[], OUT state_labels text[]) FROM PUBLIC;

--
-- Name: FUNCTION mirror_may_write(forge text, owner text, repo text, number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.mirror_may_write(forge text, owner text, repo text, number integer) FROM PUBLIC;

--
-- Name: FUNCTION mirror_unread(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.mirror_unread(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.mirror_unread(forge text, owner text, repo text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.mirror_unread(forge text, owner text, repo text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.mirror_unread(forge text, owner text, repo text) TO tireless_admin;

--
-- Name: FUNCTION mirror_writes(forge text, owner text, repo text, poller text, max_writes integer, settle interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.mirror_writes(forge text, owner text, repo text, poller text, max_writes integer, settle interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.mirror_writes(forge text, owner text, repo text, poller text, max_writes integer, settle interval) TO tireless_poller;

--
-- Name: TABLE forge; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.forge TO tireless_admin;

--
-- Name: TABLE issue; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.issue TO tireless_admin;

--
-- Name: TABLE repo_status; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.repo_status TO tireless_runner;
GRANT SELECT ON TABLE tireless.repo_status TO tireless_poller;
GRANT SELECT ON TABLE tireless.repo_status TO tireless_admin;

--
-- Name: FUNCTION missed_rounds(grace interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.missed_rounds(grace interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.missed_rounds(grace interval) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.missed_rounds(grace interval) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.missed_rounds(grace interval) TO tireless_admin;

--
-- Name: FUNCTION model_prices(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.model_prices() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.model_prices() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.model_prices() TO tireless_poller;
GRANT ALL ON FUNCTION tireless.model_prices() TO tireless_admin;

--
-- Name: FUNCTION next_poll_due_at(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.next_poll_due_at() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.next_poll_due_at() TO tireless_poller;

--
-- Name: FUNCTION next_ready_at(lanes text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.next_ready_at(lanes text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.next_ready_at(lanes text[]) TO tireless_runner;

--
-- Name: FUNCTION open_dependencies(forge text, owner text, repo text, number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.open_dependencies(forge text, owner text, repo text, number integer) FROM PUBLIC;

--
-- Name: FUNCTION open_pulls(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.open_pulls(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION parse_kind(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.parse_kind(name text) FROM PUBLIC;

--
-- Name: FUNCTION parse_state(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.parse_state(name text) FROM PUBLIC;

--
-- Name: FUNCTION pause_lane(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pause_lane(lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.pause_lane(lane text) TO tireless_admin;

--
-- Name: FUNCTION plan_problem(plan jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.plan_problem(plan jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.plan_problem(plan jsonb) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.plan_problem(plan jsonb) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.plan_problem(plan jsonb) TO tireless_admin;

--
-- Name: FUNCTION poll_soon(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.poll_soon(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.poll_soon(forge text, owner text, repo text) TO tireless_poller;

--
-- Name: FUNCTION poll_soon_once(forge text, owner text, repo text, digest bytea); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.poll_soon_once(forge text, owner text, repo text, digest bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.poll_soon_once(forge text, owner text, repo text, digest bytea) TO tireless_poller;

--
-- Name: FUNCTION prune(older_than interval, max_jobs integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.prune(older_than interval, max_jobs integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.prune(older_than interval, max_jobs integer) TO tireless_admin;

--
-- Name: FUNCTION prune_preview(older_than interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.prune_preview(older_than interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.prune_preview(older_than interval) TO tireless_admin;

--
-- Name: FUNCTION pull_fate_problem(fate jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pull_fate_problem(fate jsonb) FROM PUBLIC;

--
-- Name: FUNCTION pull_marker(number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pull_marker(number integer) FROM PUBLIC;

--
-- Name: FUNCTION pull_outcomes(since interval, at timestamp with time zone); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pull_outcomes(since interval, at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.pull_outcomes(since interval, at timestamp with time zone) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.pull_outcomes(since interval, at timestamp with time zone) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.pull_outcomes(since interval, at timestamp with time zone) TO tireless_admin;

--
-- Name: FUNCTION pull_request_text(job tireless.job, OUT title text, OUT body text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pull_request_text(job tireless.job, OUT title text, OUT body text) FROM PUBLIC;

--
-- Name: FUNCTION pull_write(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pull_write(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION pull_written(w tireless.forge_write, result jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pull_written(w tireless.forge_write, result jsonb) FROM PUBLIC;

--
-- Name: FUNCTION queue_activity(span interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.queue_activity(span interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.queue_activity(span interval) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.queue_activity(span interval) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.queue_activity(span interval) TO tireless_admin;

--
-- Name: FUNCTION record_attempt_usage(job_id bigint, worker text, peak_memory bigint, cpu_seconds double precision, peak_processes integer, workspace_bytes bigint, limit_reached text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_attempt_usage(job_id bigint, worker text, peak_memory bigint, cpu_seconds double precision, peak_processes integer, workspace_bytes bigint, limit_reached text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_attempt_usage(job_id bigint, worker text, peak_memory bigint, cpu_seconds double precision, peak_processes integer, workspace_bytes bigint, limit_reached text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION record_checkpoint(job_id bigint, worker text, ref text, commit text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_checkpoint(job_id bigint, worker text, ref text, commit text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_checkpoint(job_id bigint, worker text, ref text, commit text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION record_conversation(forge text, owner text, repo text, poller text, login text, asks jsonb, comments_cursor timestamp with time zone, comments_etag text, pulls jsonb, OUT asked integer, OUT refused integer, OUT created integer, OUT stopped integer, OUT skipped text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_conversation(forge text, owner text, repo text, poller text, login text, asks jsonb, comments_cursor timestamp with time zone, comments_etag text, pulls jsonb, OUT asked integer, OUT refused integer, OUT created integer, OUT stopped integer, OUT skipped text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_conversation(forge text, owner text, repo text, poller text, login text, asks jsonb, comments_cursor timestamp with time zone, comments_etag text, pulls jsonb, OUT asked integer, OUT refused integer, OUT created integer, OUT stopped integer, OUT skipped text[]) TO tireless_poller;

--
-- Name: FUNCTION record_exchange(job_id bigint, worker text, token uuid, api text, model text, status integer, request bytea, answer bytea, request_bytes bigint, answer_bytes bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_exchange(job_id bigint, worker text, token uuid, api text, model text, status integer, request bytea, answer bytea, request_bytes bigint, answer_bytes bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_exchange(job_id bigint, worker text, token uuid, api text, model text, status integer, request bytea, answer bytea, request_bytes bigint, answer_bytes bigint) TO tireless_runner;

--
-- Name: FUNCTION record_exit(job_id bigint, worker text, exit_status integer, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_exit(job_id bigint, worker text, exit_status integer, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_exit(job_id bigint, worker text, exit_status integer, token uuid) TO tireless_runner;

--
-- Name: FUNCTION record_forge_dependencies(issues jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_forge_dependencies(issues jsonb) FROM PUBLIC;

--
-- Name: FUNCTION record_forge_trouble(name text, error text, until timestamp with time zone); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_forge_trouble(name text, error text, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_forge_trouble(name text, error text, until timestamp with time zone) TO tireless_poller;

--
-- Name: FUNCTION record_forge_write(forge text, owner text, repo text, poller text, id bigint, error text, result jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_forge_write(forge text, owner text, repo text, poller text, id bigint, error text, result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_forge_write(forge text, owner text, repo text, poller text, id bigint, error text, result jsonb) TO tireless_poller;

--
-- Name: FUNCTION record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text) TO tireless_admin;

--
-- Name: FUNCTION record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text) TO tireless_admin;

--
-- Name: FUNCTION record_job_event(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_job_event() FROM PUBLIC;

--
-- Name: FUNCTION record_job_network(job_id bigint, worker text, token uuid, hosts jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_job_network(job_id bigint, worker text, token uuid, hosts jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_job_network(job_id bigint, worker text, token uuid, hosts jsonb) TO tireless_runner;

--
-- Name: FUNCTION record_lane_outcome(lane text, succeeded boolean); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_lane_outcome(lane text, succeeded boolean) FROM PUBLIC;

--
-- Name: FUNCTION record_mirror_failure(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_mirror_failure(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_mirror_failure(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text) TO tireless_poller;

--
-- Name: FUNCTION record_mirror_write(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_mirror_write(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_mirror_write(forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb) TO tireless_poller;

--
-- Name: FUNCTION record_poll(forge text, owner text, repo text, poller text, issues jsonb, cursor timestamp with time zone, etag text, full_listing boolean, deleted integer[], next_poll_in interval, odd jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer, OUT skipped integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_poll(forge text, owner text, repo text, poller text, issues jsonb, cursor timestamp with time zone, etag text, full_listing boolean, deleted integer[], next_poll_in interval, odd jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer, OUT skipped integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_poll(forge text, owner text, repo text, poller text, issues jsonb, cursor timestamp with time zone, etag text, full_listing boolean, deleted integer[], next_poll_in interval, odd jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer, OUT skipped integer) TO tireless_poller;

--
-- Name: FUNCTION record_poll_failure(forge text, owner text, repo text, poller text, error text, retry_after interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_poll_failure(forge text, owner text, repo text, poller text, error text, retry_after interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_poll_failure(forge text, owner text, repo text, poller text, error text, retry_after interval) TO tireless_poller;

--
-- Name: FUNCTION record_poll_notice(forge text, owner text, repo text, poller text, moved_to text, warning text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_poll_notice(forge text, owner text, repo text, poller text, moved_to text, warning text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_poll_notice(forge text, owner text, repo text, poller text, moved_to text, warning text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.record_poll_notice(forge text, owner text, repo text, poller text, moved_to text, warning text) TO tireless_admin;

--
-- Name: FUNCTION record_pull_outcomes(forge text, owner text, repo text, poller text, pulls jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_pull_outcomes(forge text, owner text, repo text, poller text, pulls jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_pull_outcomes(forge text, owner text, repo text, poller text, pulls jsonb) TO tireless_poller;

--
-- Name: FUNCTION record_push(job_id bigint, worker text, branch text, head text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_push(job_id bigint, worker text, branch text, head text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_push(job_id bigint, worker text, branch text, head text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION record_repo_archived(forge text, owner text, repo text, poller text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_repo_archived(forge text, owner text, repo text, poller text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_repo_archived(forge text, owner text, repo text, poller text) TO tireless_poller;

--
-- Name: FUNCTION record_usage(job_id bigint, worker text, token uuid, usage jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_usage(job_id bigint, worker text, token uuid, usage jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.record_usage(job_id bigint, worker text, token uuid, usage jsonb) TO tireless_runner;

--
-- Name: FUNCTION refresh_lane(forge text, owner text, repo text, number integer, labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.refresh_lane(forge text, owner text, repo text, number integer, labels text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.refresh_lane(forge text, owner text, repo text, number integer, labels text[]) TO tireless_poller;

--
-- Name: FUNCTION refuse_change_to_terminal_job(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.refuse_change_to_terminal_job() FROM PUBLIC;

--
-- Name: FUNCTION refuse_delete_of_live_job(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.refuse_delete_of_live_job() FROM PUBLIC;

--
-- Name: FUNCTION refuse_history_rewrite(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.refuse_history_rewrite() FROM PUBLIC;

--
-- Name: FUNCTION remove_forge(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.remove_forge(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.remove_forge(name text) TO tireless_admin;

--
-- Name: FUNCTION renew_claim(job_id bigint, worker text, lease interval, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval, token uuid) TO tireless_runner;

--
-- Name: FUNCTION renew_poll_leases(poller text, lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.renew_poll_leases(poller text, lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.renew_poll_leases(poller text, lease interval) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.renew_poll_leases(poller text, lease interval) TO tireless_admin;

--
-- Name: FUNCTION replication_warning(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.replication_warning() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.replication_warning() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.replication_warning() TO tireless_poller;
GRANT ALL ON FUNCTION tireless.replication_warning() TO tireless_admin;

--
-- Name: FUNCTION reply_write(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.reply_write(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION reply_written(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.reply_written(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION repo_has_room(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.repo_has_room(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION repo_spend(forge text, owner text, repo text, OUT runs bigint, OUT agent_time interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.repo_spend(forge text, owner text, repo text, OUT runs bigint, OUT agent_time interval) FROM PUBLIC;

--
-- Name: FUNCTION repo_usage_spent(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.repo_usage_spent(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION repo_writable(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.repo_writable(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION report_progress(job_id bigint, worker text, step text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.report_progress(job_id bigint, worker text, step text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.report_progress(job_id bigint, worker text, step text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION request_cancel(job_id bigint, note text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.request_cancel(job_id bigint, note text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.request_cancel(job_id bigint, note text) TO tireless_admin;

--
-- Name: FUNCTION rerun(forge text, owner text, repo text, number integer, kind text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.rerun(forge text, owner text, repo text, number integer, kind text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.rerun(forge text, owner text, repo text, number integer, kind text) TO tireless_admin;

--
-- Name: FUNCTION reset_lane_breaker(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.reset_lane_breaker(lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.reset_lane_breaker(lane text) TO tireless_admin;

--
-- Name: FUNCTION resume_lane(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.resume_lane(lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.resume_lane(lane text) TO tireless_admin;

--
-- Name: FUNCTION retry_delay(attempts integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.retry_delay(attempts integer) FROM PUBLIC;

--
-- Name: FUNCTION retry_forge(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.retry_forge(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.retry_forge(name text) TO tireless_admin;

--
-- Name: FUNCTION revisions_since_asked(forge text, owner text, repo text, number integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.revisions_since_asked(forge text, owner text, repo text, number integer) FROM PUBLIC;

--
-- Name: FUNCTION roll_up_history(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.roll_up_history() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.roll_up_history() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.roll_up_history() TO tireless_poller;
GRANT ALL ON FUNCTION tireless.roll_up_history() TO tireless_admin;

--
-- Name: FUNCTION safe_comment_text(body text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.safe_comment_text(body text) FROM PUBLIC;

--
-- Name: FUNCTION safe_report_text(body text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.safe_report_text(body text) FROM PUBLIC;

--
-- Name: FUNCTION scope_spent(tokens bigint, cost numeric, lane_tokens bigint, lane_cost numeric, repo_tokens bigint, repo_cost numeric, scope text, job tireless.job); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.scope_spent(tokens bigint, cost numeric, lane_tokens bigint, lane_cost numeric, repo_tokens bigint, repo_cost numeric, scope text, job tireless.job) FROM PUBLIC;

--
-- Name: FUNCTION set_forge_app(name text, app_id bigint, app_key_file text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_forge_app(name text, app_id bigint, app_key_file text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_forge_app(name text, app_id bigint, app_key_file text) TO tireless_admin;

--
-- Name: TABLE kind_policy; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.kind_policy TO tireless_admin;

--
-- Name: FUNCTION set_kind_policy(kind text, default_lane text, max_attempts integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_kind_policy(kind text, default_lane text, max_attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_kind_policy(kind text, default_lane text, max_attempts integer) TO tireless_admin;

--
-- Name: FUNCTION set_lane_agent(lane text, agent text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_agent(lane text, agent text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_agent(lane text, agent text) TO tireless_admin;

--
-- Name: FUNCTION set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) TO tireless_admin;

--
-- Name: FUNCTION set_lane_capacity(lane text, capacity integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_capacity(lane text, capacity integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_capacity(lane text, capacity integer) TO tireless_admin;

--
-- Name: FUNCTION set_lane_limits(lane text, memory text, cpus text, pids text, disk text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_limits(lane text, memory text, cpus text, pids text, disk text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_limits(lane text, memory text, cpus text, pids text, disk text) TO tireless_admin;

--
-- Name: FUNCTION set_lane_max_run(lane text, max_run interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_max_run(lane text, max_run interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_max_run(lane text, max_run interval) TO tireless_admin;

--
-- Name: FUNCTION set_lane_network(lane text, hosts text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_network(lane text, hosts text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_network(lane text, hosts text[]) TO tireless_admin;

--
-- Name: FUNCTION set_lane_stall_after(lane text, stall_after interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_stall_after(lane text, stall_after interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_stall_after(lane text, stall_after interval) TO tireless_admin;

--
-- Name: FUNCTION set_mirror_comments(enabled boolean); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_mirror_comments(enabled boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_mirror_comments(enabled boolean) TO tireless_admin;

--
-- Name: FUNCTION set_model_price(model text, input numeric, output numeric, cache_read numeric, cache_write numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_model_price(model text, input numeric, output numeric, cache_read numeric, cache_write numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_model_price(model text, input numeric, output numeric, cache_read numeric, cache_write numeric) TO tireless_admin;

--
-- Name: TABLE policy; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.policy TO tireless_admin;

--
-- Name: FUNCTION set_policy(label_prefix text, backoff_base interval, backoff_cap interval, breaker_threshold integer, breaker_cooldown interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_policy(label_prefix text, backoff_base interval, backoff_cap interval, breaker_threshold integer, breaker_cooldown interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_policy(label_prefix text, backoff_base interval, backoff_cap interval, breaker_threshold integer, breaker_cooldown interval) TO tireless_admin;

--
-- Name: FUNCTION set_repo_budget(forge text, owner text, repo text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_repo_budget(forge text, owner text, repo text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_repo_budget(forge text, owner text, repo text, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) TO tireless_admin;

--
-- Name: FUNCTION set_repo_capacity(forge text, owner text, repo text, capacity integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_repo_capacity(forge text, owner text, repo text, capacity integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_repo_capacity(forge text, owner text, repo text, capacity integer) TO tireless_admin;

--
-- Name: FUNCTION set_repo_delivery(forge text, owner text, repo text, protected text[], allowed text[], allow_ci boolean, max_files integer, max_bytes bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_repo_delivery(forge text, owner text, repo text, protected text[], allowed text[], allow_ci boolean, max_files integer, max_bytes bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_repo_delivery(forge text, owner text, repo text, protected text[], allowed text[], allow_ci boolean, max_files integer, max_bytes bigint) TO tireless_admin;

--
-- Name: FUNCTION set_repo_limit(forge text, owner text, repo text, capacity integer, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_repo_limit(forge text, owner text, repo text, capacity integer, runs_per_day integer, agent_time_per_day interval, tokens_per_day bigint, cost_per_day numeric, tokens_per_job bigint, cost_per_job numeric, tokens_per_attempt bigint, cost_per_attempt numeric, tokens_per_issue bigint, cost_per_issue numeric) FROM PUBLIC;

--
-- Name: FUNCTION set_repo_revisions(forge text, owner text, repo text, revise_on_failed_checks boolean, max_revisions integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_repo_revisions(forge text, owner text, repo text, revise_on_failed_checks boolean, max_revisions integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_repo_revisions(forge text, owner text, repo text, revise_on_failed_checks boolean, max_revisions integer) TO tireless_admin;

--
-- Name: FUNCTION settle_dependencies(touched jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.settle_dependencies(touched jsonb) FROM PUBLIC;

--
-- Name: FUNCTION short_duration(span interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.short_duration(span interval) FROM PUBLIC;

--
-- Name: FUNCTION size_bytes(size text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.size_bytes(size text) FROM PUBLIC;

--
-- Name: FUNCTION size_limit(lane text, what text, size text, smallest text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.size_limit(lane text, what text, size text, smallest text) FROM PUBLIC;

--
-- Name: FUNCTION spend_text(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.spend_text(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.spend_text(job_id bigint) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.spend_text(job_id bigint) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.spend_text(job_id bigint) TO tireless_admin;

--
-- Name: FUNCTION start_counting_runs(lane text, forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.start_counting_runs(lane text, forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION stop_finish_note(to_state text, note text, cancel_requested_at timestamp with time zone, cancel_note text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.stop_finish_note(to_state text, note text, cancel_requested_at timestamp with time zone, cancel_note text) FROM PUBLIC;

--
-- Name: FUNCTION stop_issue_work(forge text, owner text, repo text, number integer, note text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.stop_issue_work(forge text, owner text, repo text, number integer, note text) FROM PUBLIC;

--
-- Name: FUNCTION task_marker(job_id bigint, task integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.task_marker(job_id bigint, task integer) FROM PUBLIC;

--
-- Name: FUNCTION task_write(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.task_write(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION task_written(w tireless.forge_write, result jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.task_written(w tireless.forge_write, result jsonb) FROM PUBLIC;

--
-- Name: FUNCTION track_repo(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.track_repo(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.track_repo(forge text, owner text, repo text) TO tireless_admin;

--
-- Name: FUNCTION tracked_key(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.tracked_key(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.tracked_key(forge text, owner text, repo text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.tracked_key(forge text, owner text, repo text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.tracked_key(forge text, owner text, repo text) TO tireless_admin;

--
-- Name: FUNCTION tracked_repos(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.tracked_repos() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.tracked_repos() TO tireless_poller;

--
-- Name: FUNCTION transcript_limit(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.transcript_limit() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.transcript_limit() TO tireless_runner;
GRANT ALL ON FUNCTION tireless.transcript_limit() TO tireless_poller;
GRANT ALL ON FUNCTION tireless.transcript_limit() TO tireless_admin;

--
-- Name: FUNCTION transition(job_id bigint, to_state text, worker text, note text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.transition(job_id bigint, to_state text, worker text, note text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.transition(job_id bigint, to_state text, worker text, note text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION unknown_label_write(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.unknown_label_write(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION unknown_label_written(w tireless.forge_write); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.unknown_label_written(w tireless.forge_write) FROM PUBLIC;

--
-- Name: FUNCTION unknown_labels(labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.unknown_labels(labels text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.unknown_labels(labels text[]) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.unknown_labels(labels text[]) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.unknown_labels(labels text[]) TO tireless_admin;

--
-- Name: FUNCTION untrack_repo(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.untrack_repo(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.untrack_repo(forge text, owner text, repo text) TO tireless_admin;

--
-- Name: FUNCTION usage_allowance(job_id bigint, worker text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.usage_allowance(job_id bigint, worker text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.usage_allowance(job_id bigint, worker text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION waiting_note(forge text, waiting_on text[], cycle text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.waiting_note(forge text, waiting_on text[], cycle text) FROM PUBLIC;

--
-- Name: FUNCTION watch_attempt(job_id bigint, attempt integer, lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.watch_attempt(job_id bigint, attempt integer, lane text) FROM PUBLIC;

--
-- Name: FUNCTION watchdog_due_at(job_id bigint); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.watchdog_due_at(job_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.watchdog_due_at(job_id bigint) TO tireless_runner;

--
-- Name: FUNCTION worker_beat(worker text, lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.worker_beat(worker text, lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.worker_beat(worker text, lease interval) TO tireless_runner;

--
-- Name: FUNCTION worker_outcomes(span interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.worker_outcomes(span interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.worker_outcomes(span interval) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.worker_outcomes(span interval) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.worker_outcomes(span interval) TO tireless_admin;

--
-- Name: FUNCTION worker_ran(job_id bigint, worker text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.worker_ran(job_id bigint, worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.worker_ran(job_id bigint, worker text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.worker_ran(job_id bigint, worker text) TO tireless_poller;
GRANT ALL ON FUNCTION tireless.worker_ran(job_id bigint, worker text) TO tireless_admin;

--
-- Name: FUNCTION worker_started(worker text, lanes text[], lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.worker_started(worker text, lanes text[], lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.worker_started(worker text, lanes text[], lease interval) TO tireless_runner;

--
-- Name: FUNCTION worker_stopped(worker text, how text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.worker_stopped(worker text, how text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.worker_stopped(worker text, how text) TO tireless_runner;

--
-- Name: TABLE active_claims; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.active_claims TO tireless_runner;
GRANT SELECT ON TABLE tireless.active_claims TO tireless_poller;
GRANT SELECT ON TABLE tireless.active_claims TO tireless_admin;

--
-- Name: TABLE agent_usage; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.agent_usage TO tireless_runner;
GRANT SELECT ON TABLE tireless.agent_usage TO tireless_poller;
GRANT SELECT ON TABLE tireless.agent_usage TO tireless_admin;

--
-- Name: TABLE checkpoints; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.checkpoints TO tireless_runner;
GRANT SELECT ON TABLE tireless.checkpoints TO tireless_poller;
GRANT SELECT ON TABLE tireless.checkpoints TO tireless_admin;

--
-- Name: TABLE cycle_reports; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.cycle_reports TO tireless_runner;
GRANT SELECT ON TABLE tireless.cycle_reports TO tireless_poller;
GRANT SELECT ON TABLE tireless.cycle_reports TO tireless_admin;

--
-- Name: TABLE deliveries; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.deliveries TO tireless_runner;
GRANT SELECT ON TABLE tireless.deliveries TO tireless_poller;
GRANT SELECT ON TABLE tireless.deliveries TO tireless_admin;

--
-- Name: TABLE finished_count; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.finished_count TO tireless_admin;

--
-- Name: TABLE finished_hourly; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.finished_hourly TO tireless_admin;

--
-- Name: TABLE finished_jobs; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.finished_jobs TO tireless_runner;
GRANT SELECT ON TABLE tireless.finished_jobs TO tireless_poller;
GRANT SELECT ON TABLE tireless.finished_jobs TO tireless_admin;

--
-- Name: TABLE finished_jobs_by_hour; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.finished_jobs_by_hour TO tireless_runner;
GRANT SELECT ON TABLE tireless.finished_jobs_by_hour TO tireless_poller;
GRANT SELECT ON TABLE tireless.finished_jobs_by_hour TO tireless_admin;

--
-- Name: TABLE job_progress; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job_progress TO tireless_runner;
GRANT SELECT ON TABLE tireless.job_progress TO tireless_poller;
GRANT SELECT ON TABLE tireless.job_progress TO tireless_admin;

--
-- Name: TABLE job_usage; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job_usage TO tireless_runner;
GRANT SELECT ON TABLE tireless.job_usage TO tireless_poller;
GRANT SELECT ON TABLE tireless.job_usage TO tireless_admin;

--
-- Name: TABLE label_reports; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.label_reports TO tireless_runner;
GRANT SELECT ON TABLE tireless.label_reports TO tireless_poller;
GRANT SELECT ON TABLE tireless.label_reports TO tireless_admin;

--
-- Name: TABLE lane_budget; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.lane_budget TO tireless_runner;
GRANT SELECT ON TABLE tireless.lane_budget TO tireless_poller;
GRANT SELECT ON TABLE tireless.lane_budget TO tireless_admin;

--
-- Name: TABLE lane_egress; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.lane_egress TO tireless_runner;
GRANT SELECT ON TABLE tireless.lane_egress TO tireless_poller;
GRANT SELECT ON TABLE tireless.lane_egress TO tireless_admin;

--
-- Name: TABLE lane_status; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.lane_status TO tireless_runner;
GRANT SELECT ON TABLE tireless.lane_status TO tireless_poller;
GRANT SELECT ON TABLE tireless.lane_status TO tireless_admin;

--
-- Name: TABLE queue_stats; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.queue_stats TO tireless_runner;
GRANT SELECT ON TABLE tireless.queue_stats TO tireless_poller;
GRANT SELECT ON TABLE tireless.queue_stats TO tireless_admin;

--
-- Name: TABLE lane_summary; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.lane_summary TO tireless_runner;
GRANT SELECT ON TABLE tireless.lane_summary TO tireless_poller;
GRANT SELECT ON TABLE tireless.lane_summary TO tireless_admin;

--
-- Name: TABLE lane_usage; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.lane_usage TO tireless_runner;
GRANT SELECT ON TABLE tireless.lane_usage TO tireless_poller;
GRANT SELECT ON TABLE tireless.lane_usage TO tireless_admin;

--
-- Name: TABLE mirror_comment; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.mirror_comment TO tireless_admin;

--
-- Name: TABLE mirror_repo; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.mirror_repo TO tireless_admin;

--
-- Name: TABLE pull_outcome; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.pull_outcome TO tireless_admin;

--
-- Name: TABLE push; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.push TO tireless_admin;

--
-- Name: TABLE repo_shares; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.repo_shares TO tireless_runner;
GRANT SELECT ON TABLE tireless.repo_shares TO tireless_poller;
GRANT SELECT ON TABLE tireless.repo_shares TO tireless_admin;

--
-- Name: TABLE sql_file; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.sql_file TO tireless_admin;

--
-- Name: TABLE tracked_repo; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.tracked_repo TO tireless_admin;

--
-- Name: TABLE usage_by_day; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.usage_by_day TO tireless_runner;
GRANT SELECT ON TABLE tireless.usage_by_day TO tireless_poller;
GRANT SELECT ON TABLE tireless.usage_by_day TO tireless_admin;

--
-- Name: TABLE worker_state; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.worker_state TO tireless_admin;

--
-- Name: TABLE workers; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.workers TO tireless_runner;
GRANT SELECT ON TABLE tireless.workers TO tireless_poller;
GRANT SELECT ON TABLE tireless.workers TO tireless_admin;

--
-- Name: FUNCTION report_unknown_labels(touched jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.report_unknown_labels(touched jsonb) FROM PUBLIC;

--
-- PostgreSQL database dump complete
--
