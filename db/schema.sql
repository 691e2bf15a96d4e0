-- The schema as db/migrations leave it: pg_dump --schema-only of a freshly migrated
-- database, normalised. Do not edit: `make schema` regenerates it (tests/schema_dump.py),
-- and tests/test_schema_file.py fails when a migration changed the schema without it.
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
    IF lease IS NULL OR lease <= interval '0' OR lease > interval '1 day' THEN
        RAISE EXCEPTION 'lease must be more than 0 and at most 1 day, got %', coalesce(lease::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'A long run keeps its lease by renewing it.';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_lease(lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_lease(lease interval) IS 'Raises TL005 unless 0 < lease <= 1 day.';

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
-- Name: check_worker(text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.check_worker(worker text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF worker IS NULL OR btrim(worker) = '' OR length(worker) > 200 THEN
        RAISE EXCEPTION 'worker must be a name of 1 to 200 characters, got %', coalesce(quote_literal(left(worker, 220)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;

--
-- Name: FUNCTION check_worker(worker text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.check_worker(worker text) IS 'Raises TL005 unless worker is a non-blank name of at most 200 characters.';

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
    CONSTRAINT attempts_not_negative CHECK ((attempts >= 0)),
    CONSTRAINT claimed_holds_claim CHECK (((state <> 'claimed'::tireless.job_state) OR ((claimed_by IS NOT NULL) AND (claim_expires_at IS NOT NULL) AND (claim_token IS NOT NULL)))),
    CONSTRAINT claimed_job_counts_an_attempt CHECK (((state <> 'claimed'::tireless.job_state) OR (attempts > 0))),
    CONSTRAINT issue_number_positive CHECK ((number > 0)),
    CONSTRAINT lane_is_a_name CHECK (tireless.is_lane_name(lane)),
    CONSTRAINT not_its_own_parent CHECK ((parent_id <> id)),
    CONSTRAINT pending_holds_no_claim CHECK (((state <> 'pending'::tireless.job_state) OR ((claimed_by IS NULL) AND (claim_expires_at IS NULL) AND (claim_token IS NULL)))),
    CONSTRAINT terminal_holds_no_claim CHECK (((NOT tireless.is_terminal(state)) OR ((claimed_by IS NULL) AND (claim_expires_at IS NULL) AND (claim_token IS NULL))))
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
-- Name: CONSTRAINT attempts_not_negative ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT attempts_not_negative ON tireless.job IS 'Attempts count claims; never negative.';

--
-- Name: CONSTRAINT claimed_holds_claim ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT claimed_holds_claim ON tireless.job IS 'A claimed job has a holder, a lease and a token.';

--
-- Name: CONSTRAINT claimed_job_counts_an_attempt ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT claimed_job_counts_an_attempt ON tireless.job IS 'The attempt is counted at claim, so a claimed job has at least one.';

--
-- Name: CONSTRAINT issue_number_positive ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT issue_number_positive ON tireless.job IS 'Issue numbers start at 1.';

--
-- Name: CONSTRAINT lane_is_a_name ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT lane_is_a_name ON tireless.job IS 'A lane is a short name (see tireless.is_lane_name).';

--
-- Name: CONSTRAINT not_its_own_parent ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT not_its_own_parent ON tireless.job IS 'A job is never its own parent.';

--
-- Name: CONSTRAINT pending_holds_no_claim ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT pending_holds_no_claim ON tireless.job IS 'A pending job has no holder, no lease and no token: a half-done release fails here instead of stranding the job.';

--
-- Name: CONSTRAINT terminal_holds_no_claim ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT terminal_holds_no_claim ON tireless.job IS 'A delivered, failed or cancelled job holds no claim.';

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
    next_lane text;
BEGIN
    PERFORM tireless.check_worker(claim_next.worker);
    PERFORM tireless.check_lease(claim_next.lease);
    IF claim_next.lanes IS NULL OR cardinality(claim_next.lanes) > 100 THEN
        RAISE EXCEPTION 'lanes must be an array of at most 100 lane names, got %', coalesce(left(claim_next.lanes::text, 100), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    -- One look at the lanes: is a name malformed, which lanes are open without a lock (no settings
    -- row, or unlimited, not paused and not tripped), and does any have a capacity.
    SELECT bool_or(r.name IS NULL OR NOT tireless.is_lane_name(r.name)),
           coalesce(array_agg(DISTINCT r.name) FILTER (
               WHERE l.name IS NULL
                  OR (l.capacity IS NULL AND tireless.lane_hands_out_work(l.paused, l.tripped_until))), '{}'),
           bool_or(l.capacity IS NOT NULL)
      INTO malformed, open_lanes, any_capped
      FROM unnest(claim_next.lanes) AS r(name)
      LEFT JOIN tireless.lane l ON l.name = r.name;
    IF malformed THEN
        PERFORM tireless.check_lane(r.name) FROM unnest(claim_next.lanes) AS r(name);
    END IF;

    -- A lane with a capacity is counted under its row lock, so concurrent claimers take its free
    -- slots one at a time and never hold more claims than the capacity.
    IF any_capped THEN
        FOR capped IN
            SELECT l.name, l.capacity FROM tireless.lane l
             WHERE l.name = ANY (claim_next.lanes)
               AND l.capacity IS NOT NULL AND tireless.lane_hands_out_work(l.paused, l.tripped_until)
             ORDER BY l.name
               FOR UPDATE
        LOOP
            IF (SELECT count(*) FROM tireless.job j WHERE j.state = 'claimed' AND j.lane = capped.name) < capped.capacity THEN
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
                        WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[l.name]) AND j.available_at <= now()
                        ORDER BY j.lane, j.id LIMIT 1) NULLS LAST);
    END IF;
    FOREACH next_lane IN ARRAY open_lanes LOOP
        -- Invariant 4: one row transition; the row lock (SKIP LOCKED) and the write share the statement.
        RETURN QUERY
        WITH candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[next_lane]) AND j.available_at <= now()
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_next.worker,
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
    END LOOP;
END;
$$;

--
-- Name: FUNCTION claim_next(worker text, lanes text[], lease interval); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.claim_next(worker text, lanes text[], lease interval) IS 'Claims the oldest claimable pending job in the given lanes for worker: state claimed, a lease of lease, a fresh claim_token, attempts + 1. Skips paused, tripped and full lanes and jobs still in backoff. Zero rows when nothing is claimable; a lane nobody has configured simply holds no work.';

--
-- Name: enqueue(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.enqueue(issues jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    bad record;
    created integer;
    woken text[];
BEGIN
    IF jsonb_typeof(enqueue.issues) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'issues must be a JSON array, got %', left(coalesce(enqueue.issues::text, 'null'), 100)
            USING ERRCODE = 'TL006';
    END IF;
    IF jsonb_array_length(enqueue.issues) > 50000 THEN
        RAISE EXCEPTION 'a batch holds at most 50000 issues, got %', jsonb_array_length(enqueue.issues)
            USING ERRCODE = 'TL006', HINT = 'Split the poll into several calls.';
    END IF;

    -- Validate everything before writing anything: a batch is all or nothing.
    SELECT e.position - 1 AS position, p.problem INTO bad
      FROM jsonb_array_elements(enqueue.issues) WITH ORDINALITY AS e(issue, position)
     CROSS JOIN LATERAL (SELECT tireless.issue_problem(e.issue)) AS p(problem)
     WHERE p.problem IS NOT NULL
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: %', bad.position, bad.problem USING ERRCODE = 'TL006';
    END IF;
    SELECT e.position - 1 AS position, (e.issue ->> 'parent_id') AS parent_id INTO bad
      FROM jsonb_array_elements(enqueue.issues) WITH ORDINALITY AS e(issue, position)
     WHERE jsonb_typeof(e.issue -> 'parent_id') = 'number'
       AND NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = (e.issue ->> 'parent_id')::bigint)
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: "parent_id" % is not a job', bad.position, bad.parent_id
            USING ERRCODE = 'TL006';
    END IF;

    WITH incoming AS (
        -- An issue listed twice in one batch counts once: its last listing wins.
        SELECT DISTINCT ON (forge, owner, repo, number)
               e.issue ->> 'forge' AS forge,
               e.issue ->> 'owner' AS owner,
               e.issue ->> 'repo' AS repo,
               (e.issue ->> 'number')::integer AS number,
               e.issue ->> 'state' AS state,
               e.issue ->> 'title' AS title,
               ARRAY(SELECT jsonb_array_elements_text(e.issue -> 'labels')) AS labels,
               (e.issue ->> 'parent_id')::bigint AS parent_id
          FROM jsonb_array_elements(enqueue.issues) WITH ORDINALITY AS e(issue, position)
         ORDER BY forge, owner, repo, number, e.position DESC
    ), work AS MATERIALIZED (
        -- MATERIALIZED: job_kind_for runs once per issue, not once per reference.
        SELECT i.*, tireless.job_kind_for(i.labels) AS kind
          FROM incoming i
         WHERE i.state = 'open'
           AND EXISTS (SELECT FROM tireless.tracked_repo t
                        WHERE (t.forge, t.owner, t.repo) = (i.forge, i.owner, i.repo))
           AND NOT EXISTS (SELECT FROM tireless.job j
                            WHERE (j.forge, j.owner, j.repo, j.number) = (i.forge, i.owner, i.repo, i.number)
                              AND j.state IN ('pending', 'claimed'))
    ), inserted AS (
        INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, parent_id)
        SELECT w.forge, w.owner, w.repo, w.number, w.title, w.labels,
               w.kind::tireless.job_kind, tireless.lane_for(w.kind, w.labels), w.parent_id
          FROM work w
         WHERE w.kind IS NOT NULL
         ORDER BY w.forge, w.owner, w.repo, w.number
        -- Two pollers racing on the same issue: the loser's row is skipped, not an error.
        ON CONFLICT (forge, owner, repo, number) WHERE state IN ('pending', 'claimed') DO NOTHING
        RETURNING lane
    )
    SELECT count(*), array_agg(DISTINCT lane) INTO created, woken FROM inserted;

    PERFORM tireless.announce_work(l) FROM unnest(woken) AS l;
    RETURN created;
END;
$$;

--
-- Name: FUNCTION enqueue(issues jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.enqueue(issues jsonb) IS 'Takes a JSON array of issues {forge, owner, repo, number, state, labels, title?, parent_id?} and creates a pending job for each open issue of a tracked repository whose labels ask for work and that has no live job. Returns how many it created; a repeated poll creates nothing. Validates the whole batch first (TL006).';

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
    -- One sweeper per lane at a time (a non-blocking advisory lock): a lane another sweeper holds
    -- is left for the next sweep, so two sweepers never wait on each other, not even on the lane
    -- row the circuit breaker counts in.
    SELECT coalesce(array_agg(s.lane), '{}') INTO sweep_lanes
      FROM (SELECT DISTINCT j.lane FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS s
     WHERE pg_try_advisory_xact_lock(hashtext('tireless.expire_stale_claims'), hashtext(s.lane));
    -- SKIP LOCKED: a job whose row another transaction holds is left as well; no job moves twice.
    FOR expired IN
        WITH stale AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now() AND j.lane = ANY (sweep_lanes)
             ORDER BY j.claim_expires_at
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = CASE WHEN j.attempts >= kp.max_attempts THEN 'failed' ELSE 'pending' END::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               available_at = CASE WHEN j.attempts >= kp.max_attempts THEN j.available_at
                                   ELSE now() + tireless.retry_delay(j.attempts) END,
               note = CASE WHEN j.attempts >= kp.max_attempts
                           THEN format('attempts exhausted (%s of %s); last: lease of %s expired at %s',
                                       j.attempts, kp.max_attempts, j.claimed_by, j.claim_expires_at)
                           ELSE format('lease of %s expired at %s', j.claimed_by, j.claim_expires_at) END,
               updated_at = now()
          FROM stale, tireless.kind_policy kp
         WHERE j.id = stale.id AND kp.kind = j.kind
        RETURNING j.lane, j.state, j.available_at
    LOOP
        moved := moved + 1;
        failed_lanes := failed_lanes || expired.lane;
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

COMMENT ON FUNCTION tireless.expire_stale_claims() IS 'Returns every claimed job whose lease has passed to pending (after its backoff), or fails it when its last attempt is spent; clears the claim, keeps the attempt count, and returns how many jobs it moved. Never waits on another sweeper: a job whose row is locked, or a lane another sweeper holds, is left for the next sweep.';

--
-- Name: issue_problem(jsonb); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.issue_problem(issue jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
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
        WHEN EXISTS (SELECT FROM jsonb_array_elements(issue -> 'labels') AS l(label) WHERE jsonb_typeof(l.label) <> 'string') THEN
            format('"labels" must hold strings, got %s',
                   (SELECT left(l.label::text, 100) FROM jsonb_array_elements(issue -> 'labels') AS l(label)
                     WHERE jsonb_typeof(l.label) <> 'string' LIMIT 1))
        WHEN tireless.labels_problem(ARRAY(SELECT jsonb_array_elements_text(issue -> 'labels'))) IS NOT NULL THEN
            '"labels" ' || tireless.labels_problem(ARRAY(SELECT jsonb_array_elements_text(issue -> 'labels')))
        WHEN jsonb_typeof(issue -> 'title') NOT IN ('string', 'null') OR length(issue ->> 'title') > 1000 THEN
            format('"title" must be a string of at most 1000 characters, got %s', left((issue -> 'title')::text, 100))
        WHEN jsonb_typeof(issue -> 'parent_id') NOT IN ('number', 'null')
             OR (jsonb_typeof(issue -> 'parent_id') = 'number'
                 AND ((issue -> 'parent_id')::numeric NOT BETWEEN 1 AND 9223372036854775807
                      OR (issue -> 'parent_id')::numeric <> trunc((issue -> 'parent_id')::numeric))) THEN
            format('"parent_id" must be a job id, got %s', left((issue -> 'parent_id')::text, 100))
    END;
$$;

--
-- Name: FUNCTION issue_problem(issue jsonb); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.issue_problem(issue jsonb) IS 'Why one element of an enqueue batch is malformed, or null when it is well formed.';

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
-- Name: may_cancel_pending(); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.may_cancel_pending() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    -- session_user: inside a SECURITY DEFINER function current_user is the owner, not the caller.
    SELECT pg_has_role(session_user, 'tireless_admin', 'MEMBER')
        OR pg_has_role(session_user, n.nspowner, 'MEMBER')
      FROM pg_namespace n WHERE n.nspname = 'tireless';
$$;

--
-- Name: FUNCTION may_cancel_pending(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.may_cancel_pending() IS 'True when the session''s user may cancel a pending job: a member of tireless_admin or of the schema''s owner.';

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
-- Name: lane; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.lane (
    name text NOT NULL,
    capacity integer,
    paused boolean DEFAULT false NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    tripped_until timestamp with time zone,
    CONSTRAINT capacity_not_negative CHECK ((capacity >= 0)),
    CONSTRAINT failures_not_negative CHECK ((consecutive_failures >= 0)),
    CONSTRAINT lane_name_is_a_name CHECK (tireless.is_lane_name(name))
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
-- Name: CONSTRAINT capacity_not_negative ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT capacity_not_negative ON tireless.lane IS 'Capacity is null (unlimited) or not negative.';

--
-- Name: CONSTRAINT failures_not_negative ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT failures_not_negative ON tireless.lane IS 'A count of failures is not negative.';

--
-- Name: CONSTRAINT lane_name_is_a_name ON lane; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT lane_name_is_a_name ON tireless.lane IS 'A lane is a short name (see tireless.is_lane_name).';

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
-- Name: record_job_event(); Type: FUNCTION; Schema: tireless; Owner: -
--

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

--
-- Name: FUNCTION record_job_event(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.record_job_event() IS 'Trigger: appends the change of state of a job to tireless.job_event.';

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
    RAISE EXCEPTION 'tireless.job_event is append-only: % refused', TG_OP
        USING ERRCODE = 'TL007';
END;
$$;

--
-- Name: FUNCTION refuse_history_rewrite(); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.refuse_history_rewrite() IS 'Trigger: refuses UPDATE, DELETE and TRUNCATE of tireless.job_event (SQLSTATE TL007).';

--
-- Name: renew_claim(bigint, text, interval, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval DEFAULT '00:10:00'::interval, token uuid DEFAULT NULL::uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_worker(renew_claim.worker);
    PERFORM tireless.check_lease(renew_claim.lease);
    UPDATE tireless.job j
       SET claim_expires_at = now() + renew_claim.lease, updated_at = now()
     WHERE j.id = renew_claim.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = renew_claim.worker
       AND (renew_claim.token IS NULL OR j.claim_token = renew_claim.token);
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

COMMENT ON FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval, token uuid) IS 'Extends the lease to now() + lease while worker (and token, when given) holds the claim; false when the claim was lost. TL001 for an unknown job.';

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
-- Name: policy; Type: TABLE; Schema: tireless; Owner: -
--

CREATE TABLE tireless.policy (
    singleton boolean DEFAULT true NOT NULL,
    label_prefix text DEFAULT 'tireless'::text NOT NULL,
    backoff_base interval DEFAULT '00:00:30'::interval NOT NULL,
    backoff_cap interval DEFAULT '00:30:00'::interval NOT NULL,
    breaker_threshold integer DEFAULT 5 NOT NULL,
    breaker_cooldown interval DEFAULT '00:15:00'::interval NOT NULL,
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

COMMENT ON FUNCTION tireless.set_policy(label_prefix text, backoff_base interval, backoff_cap interval, breaker_threshold integer, breaker_cooldown interval) IS 'Changes the store-wide settings named (a null argument leaves its setting as it is) and returns them.';

--
-- Name: track_repo(text, text, text); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.track_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM tireless.check_repo(track_repo.forge, track_repo.owner, track_repo.repo);
    INSERT INTO tireless.tracked_repo (forge, owner, repo)
    VALUES (track_repo.forge, track_repo.owner, track_repo.repo)
    ON CONFLICT DO NOTHING;
    RETURN FOUND;
END;
$$;

--
-- Name: FUNCTION track_repo(forge text, owner text, repo text); Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON FUNCTION tireless.track_repo(forge text, owner text, repo text) IS 'Starts tracking a repository, so enqueue accepts its issues; false if it was tracked already.';

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
-- Name: transition(bigint, text, text, text, uuid); Type: FUNCTION; Schema: tireless; Owner: -
--

CREATE FUNCTION tireless.transition(job_id bigint, to_state text, worker text DEFAULT NULL::text, note text DEFAULT NULL::text, token uuid DEFAULT NULL::uuid) RETURNS tireless.job
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    target tireless.job_state := tireless.parse_state(transition.to_state);
    job tireless.job;
    budget integer;
    final_state tireless.job_state;
    final_note text := transition.note;
    result tireless.job;
    lane_capped boolean;
    breaker_dirty boolean;
BEGIN
    IF length(transition.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(transition.note) USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO job FROM tireless.job j WHERE j.id = transition.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(transition.job_id::text, 'null') USING ERRCODE = 'TL001';
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
            RAISE EXCEPTION 'only tireless_admin may cancel pending job %; % may not', job.id, session_user
                USING ERRCODE = '42501';
        END IF;
        final_state := 'cancelled';
    ELSE
        -- Invariant 5: only the holder leaves claimed; the token, when given, must be this claim's.
        IF transition.worker IS NULL OR transition.worker IS DISTINCT FROM job.claimed_by THEN
            RAISE EXCEPTION 'worker % does not hold job %', coalesce(quote_literal(left(transition.worker, 220)), 'null'), job.id
                USING ERRCODE = 'TL004', DETAIL = format('The job is claimed by %L.', job.claimed_by);
        END IF;
        IF transition.token IS NOT NULL AND transition.token <> job.claim_token THEN
            RAISE EXCEPTION 'token % is not the current claim of job % by %', transition.token, job.id, job.claimed_by
                USING ERRCODE = 'TL004', DETAIL = 'The claim was lost and the job claimed again.';
        END IF;
        final_state := target;
        IF target = 'pending' THEN
            SELECT kp.max_attempts INTO budget FROM tireless.kind_policy kp WHERE kp.kind = job.kind;
            IF job.attempts >= budget THEN
                final_state := 'failed';
                final_note := format('attempts exhausted (%s of %s); last: %s', job.attempts, budget, coalesce(transition.note, 'released'));
            END IF;
        END IF;
    END IF;

    UPDATE tireless.job j
       SET state = final_state,
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           available_at = CASE WHEN final_state = 'pending' THEN now() + tireless.retry_delay(j.attempts) ELSE j.available_at END,
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

COMMENT ON FUNCTION tireless.transition(job_id bigint, to_state text, worker text, note text, token uuid) IS 'Moves a job along its state machine and returns it. Leaving claimed (to pending, delivered, failed, cancelled) needs the holder''s worker name and, when given, its token; a release after the last attempt fails the job. A pending job can only be cancelled (by tireless_admin). Entering claimed, or leaving a terminal state, is refused.';

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
    j.updated_at
   FROM tireless.job j
  WHERE (j.state = 'claimed'::tireless.job_state)
  ORDER BY j.claim_expires_at;

--
-- Name: VIEW active_claims; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.active_claims IS 'Claimed jobs with the time left on their lease (negative: past its lease, waiting for the sweeper).';

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
    CONSTRAINT event_changes_state CHECK ((from_state IS DISTINCT FROM to_state))
);

--
-- Name: TABLE job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TABLE tireless.job_event IS 'Append-only history: one row per change of a job''s state (from_state is null when the job is created). worker is the holder the change concerns; attempt is the job''s attempt count after the change.';

--
-- Name: CONSTRAINT event_changes_state ON job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT event_changes_state ON tireless.job_event IS 'Every event is a change of state.';

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
-- Name: lane_status; Type: VIEW; Schema: tireless; Owner: -
--

CREATE VIEW tireless.lane_status AS
 WITH live AS (
         SELECT j.lane,
            count(*) FILTER (WHERE (j.state = 'pending'::tireless.job_state)) AS pending,
            count(*) FILTER (WHERE ((j.state = 'pending'::tireless.job_state) AND (j.available_at <= now()))) AS ready,
            count(*) FILTER (WHERE (j.state = 'claimed'::tireless.job_state)) AS claimed,
            count(*) FILTER (WHERE ((j.state = 'claimed'::tireless.job_state) AND (j.claim_expires_at < now()))) AS past_lease,
            (now() - min(j.created_at) FILTER (WHERE (j.state = 'pending'::tireless.job_state))) AS oldest_pending_age
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
    live.oldest_pending_age
   FROM ((tireless.lane l
     FULL JOIN live ON ((live.lane = l.name)))
     CROSS JOIN tireless.policy p);

--
-- Name: VIEW lane_status; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.lane_status IS 'One row per lane that has settings or live jobs: capacity, paused, circuit breaker (closed, open while tripped, half-open after the cool-down until a success), and its pending, ready, claimed and past-lease jobs.';

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
  GROUP BY j.lane, j.state;

--
-- Name: VIEW queue_stats; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON VIEW tireless.queue_stats IS 'How many jobs each lane holds in each state (reads the whole job table).';

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
-- Name: job_event job_event_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job_event
    ADD CONSTRAINT job_event_pkey PRIMARY KEY (id);

--
-- Name: job job_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job
    ADD CONSTRAINT job_pkey PRIMARY KEY (id);

--
-- Name: kind_policy kind_policy_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.kind_policy
    ADD CONSTRAINT kind_policy_pkey PRIMARY KEY (kind);

--
-- Name: lane lane_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.lane
    ADD CONSTRAINT lane_pkey PRIMARY KEY (name);

--
-- Name: policy policy_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.policy
    ADD CONSTRAINT policy_pkey PRIMARY KEY (singleton);

--
-- Name: tracked_repo tracked_repo_pkey; Type: CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.tracked_repo
    ADD CONSTRAINT tracked_repo_pkey PRIMARY KEY (forge, owner, repo);

--
-- Name: claimed_jobs_by_expiry; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX claimed_jobs_by_expiry ON tireless.job USING btree (claim_expires_at, lane) WHERE (state = 'claimed'::tireless.job_state);

--
-- Name: INDEX claimed_jobs_by_expiry; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.claimed_jobs_by_expiry IS 'expire_stale_claims and lane capacity: claimed jobs by lease end.';

--
-- Name: job_events_in_order; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX job_events_in_order ON tireless.job_event USING btree (job_id, id);

--
-- Name: INDEX job_events_in_order; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.job_events_in_order IS 'A job''s history, in order.';

--
-- Name: jobs_by_parent; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX jobs_by_parent ON tireless.job USING btree (parent_id) WHERE (parent_id IS NOT NULL);

--
-- Name: INDEX jobs_by_parent; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.jobs_by_parent IS 'The children of a job; also keeps the parent foreign key cheap.';

--
-- Name: one_live_job_per_issue; Type: INDEX; Schema: tireless; Owner: -
--

CREATE UNIQUE INDEX one_live_job_per_issue ON tireless.job USING btree (forge, owner, repo, number) WHERE (state = ANY (ARRAY['pending'::tireless.job_state, 'claimed'::tireless.job_state]));

--
-- Name: INDEX one_live_job_per_issue; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.one_live_job_per_issue IS 'At most one pending or claimed job per issue; a new job is possible once the old one is terminal.';

--
-- Name: pending_jobs_in_claim_order; Type: INDEX; Schema: tireless; Owner: -
--

CREATE INDEX pending_jobs_in_claim_order ON tireless.job USING btree (lane, id) WHERE (state = 'pending'::tireless.job_state);

--
-- Name: INDEX pending_jobs_in_claim_order; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON INDEX tireless.pending_jobs_in_claim_order IS 'claim_next: pending jobs of a lane, oldest first.';

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
-- Name: job live_job_is_never_deleted; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER live_job_is_never_deleted BEFORE DELETE ON tireless.job FOR EACH ROW WHEN ((NOT tireless.is_terminal(old.state))) EXECUTE FUNCTION tireless.refuse_delete_of_live_job();

--
-- Name: TRIGGER live_job_is_never_deleted ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER live_job_is_never_deleted ON tireless.job IS 'A live job is never lost by a DELETE.';

--
-- Name: job terminal_job_is_final; Type: TRIGGER; Schema: tireless; Owner: -
--

CREATE TRIGGER terminal_job_is_final BEFORE UPDATE ON tireless.job FOR EACH ROW WHEN (tireless.is_terminal(old.state)) EXECUTE FUNCTION tireless.refuse_change_to_terminal_job();

--
-- Name: TRIGGER terminal_job_is_final ON job; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON TRIGGER terminal_job_is_final ON tireless.job IS 'Invariant 2: a terminal job never changes again.';

--
-- Name: job_event job_event_job_id_fkey; Type: FK CONSTRAINT; Schema: tireless; Owner: -
--

ALTER TABLE ONLY tireless.job_event
    ADD CONSTRAINT job_event_job_id_fkey FOREIGN KEY (job_id) REFERENCES tireless.job(id);

--
-- Name: CONSTRAINT job_event_job_id_fkey ON job_event; Type: COMMENT; Schema: tireless; Owner: -
--

COMMENT ON CONSTRAINT job_event_job_id_fkey ON tireless.job_event IS 'Every event belongs to a job that exists.';

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
-- Name: SCHEMA tireless; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA tireless TO tireless_runner;
GRANT USAGE ON SCHEMA tireless TO tireless_poller;
GRANT USAGE ON SCHEMA tireless TO tireless_admin;

--
-- Name: FUNCTION announce_work(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.announce_work(lane text) FROM PUBLIC;

--
-- Name: FUNCTION check_lane(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_lane(lane text) FROM PUBLIC;

--
-- Name: FUNCTION check_lease(lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_lease(lease interval) FROM PUBLIC;

--
-- Name: FUNCTION check_repo(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_repo(forge text, owner text, repo text) FROM PUBLIC;

--
-- Name: FUNCTION check_worker(worker text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.check_worker(worker text) FROM PUBLIC;

--
-- Name: FUNCTION is_lane_name(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_lane_name(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.is_lane_name(name text) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.is_lane_name(name text) TO tireless_poller;

--
-- Name: FUNCTION is_terminal(state tireless.job_state); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.is_terminal(state tireless.job_state) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.is_terminal(state tireless.job_state) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.is_terminal(state tireless.job_state) TO tireless_poller;

--
-- Name: TABLE job; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job TO tireless_admin;

--
-- Name: FUNCTION claim_next(worker text, lanes text[], lease interval); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.claim_next(worker text, lanes text[], lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.claim_next(worker text, lanes text[], lease interval) TO tireless_runner;

--
-- Name: FUNCTION enqueue(issues jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.enqueue(issues jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.enqueue(issues jsonb) TO tireless_poller;

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
-- Name: FUNCTION issue_problem(issue jsonb); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.issue_problem(issue jsonb) FROM PUBLIC;

--
-- Name: FUNCTION job_kind_for(labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.job_kind_for(labels text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.job_kind_for(labels text[]) TO tireless_runner;
GRANT ALL ON FUNCTION tireless.job_kind_for(labels text[]) TO tireless_poller;

--
-- Name: FUNCTION labels_problem(labels text[]); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.labels_problem(labels text[]) FROM PUBLIC;

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
-- Name: FUNCTION may_cancel_pending(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.may_cancel_pending() FROM PUBLIC;

--
-- Name: FUNCTION parse_kind(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.parse_kind(name text) FROM PUBLIC;

--
-- Name: FUNCTION parse_state(name text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.parse_state(name text) FROM PUBLIC;

--
-- Name: TABLE lane; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.lane TO tireless_admin;

--
-- Name: FUNCTION pause_lane(lane text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.pause_lane(lane text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.pause_lane(lane text) TO tireless_admin;

--
-- Name: FUNCTION record_job_event(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_job_event() FROM PUBLIC;

--
-- Name: FUNCTION record_lane_outcome(lane text, succeeded boolean); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.record_lane_outcome(lane text, succeeded boolean) FROM PUBLIC;

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
-- Name: FUNCTION renew_claim(job_id bigint, worker text, lease interval, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval, token uuid) TO tireless_runner;

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
-- Name: TABLE kind_policy; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.kind_policy TO tireless_admin;

--
-- Name: FUNCTION set_kind_policy(kind text, default_lane text, max_attempts integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_kind_policy(kind text, default_lane text, max_attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_kind_policy(kind text, default_lane text, max_attempts integer) TO tireless_admin;

--
-- Name: FUNCTION set_lane_capacity(lane text, capacity integer); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.set_lane_capacity(lane text, capacity integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.set_lane_capacity(lane text, capacity integer) TO tireless_admin;

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
-- Name: FUNCTION track_repo(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.track_repo(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.track_repo(forge text, owner text, repo text) TO tireless_admin;

--
-- Name: FUNCTION tracked_repos(); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.tracked_repos() FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.tracked_repos() TO tireless_poller;

--
-- Name: FUNCTION transition(job_id bigint, to_state text, worker text, note text, token uuid); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.transition(job_id bigint, to_state text, worker text, note text, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.transition(job_id bigint, to_state text, worker text, note text, token uuid) TO tireless_runner;

--
-- Name: FUNCTION untrack_repo(forge text, owner text, repo text); Type: ACL; Schema: tireless; Owner: -
--

REVOKE ALL ON FUNCTION tireless.untrack_repo(forge text, owner text, repo text) FROM PUBLIC;
GRANT ALL ON FUNCTION tireless.untrack_repo(forge text, owner text, repo text) TO tireless_admin;

--
-- Name: TABLE active_claims; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.active_claims TO tireless_runner;
GRANT SELECT ON TABLE tireless.active_claims TO tireless_poller;
GRANT SELECT ON TABLE tireless.active_claims TO tireless_admin;

--
-- Name: TABLE job_event; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.job_event TO tireless_admin;

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
-- Name: TABLE tracked_repo; Type: ACL; Schema: tireless; Owner: -
--

GRANT SELECT ON TABLE tireless.tracked_repo TO tireless_admin;

--
-- PostgreSQL database dump complete
--
