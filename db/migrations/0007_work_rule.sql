-- The work rule (tireless.issue, enqueue on it), heartbeat and cancel requests, rerun, the forge registry and the poll bookkeeping.
-- depends: 0006_views

-- TL008 unknown repository: the repository is not tracked, or the forge is not registered.

-- What the store was last shown of each issue. The work rule compares a poll with it, so a poll
-- that shows nothing new writes nothing, and a request for work is answered once.
CREATE TABLE tireless.issue (
    forge         text        NOT NULL,
    owner         text        NOT NULL,
    repo          text        NOT NULL,
    number        integer     NOT NULL,
    state         text        NOT NULL,
    labels        text[]      NOT NULL DEFAULT '{}',
    title         text,
    url           text,
    updated_at    timestamptz,
    asks_since    timestamptz,
    answered      boolean     NOT NULL DEFAULT false,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    changed_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (forge, owner, repo, number),
    CONSTRAINT issue_number_is_positive CHECK (number > 0),
    CONSTRAINT issue_is_open_or_closed CHECK (state IN ('open', 'closed'))
);
COMMENT ON TABLE tireless.issue IS
    'What the store was last shown of each issue of a tracked repository, and whether its current request for '
    'work has had its job. Private: enqueue, record_poll and rerun keep it.';
COMMENT ON COLUMN tireless.issue.updated_at IS 'The forge''s own updated_at of the issue, as last shown (null: not given).';
COMMENT ON COLUMN tireless.issue.asks_since IS
    'Since when the issue''s current request for work stands (open, opt-in and mode label); null while it asks for none.';
COMMENT ON COLUMN tireless.issue.answered IS
    'The current request has had its job (made by the work rule or by rerun); a new request resets it.';
COMMENT ON COLUMN tireless.issue.changed_at IS 'When the store last recorded a change of this issue.';
COMMENT ON CONSTRAINT issue_number_is_positive ON tireless.issue IS 'Issue numbers start at 1.';
COMMENT ON CONSTRAINT issue_is_open_or_closed ON tireless.issue IS 'An issue is open or closed.';

-- Upgrading re-runs nothing: every issue that has a job is remembered as asking, its request answered.
-- Its labels, title and request time are those of its newest job.
INSERT INTO tireless.issue (forge, owner, repo, number, state, labels, title, asks_since, answered)
SELECT DISTINCT ON (j.forge, j.owner, j.repo, j.number)
       j.forge, j.owner, j.repo, j.number, 'open', j.labels, j.title, j.created_at, true
  FROM tireless.job j
 ORDER BY j.forge, j.owner, j.repo, j.number, j.id DESC;

-- A claimed job whose issue withdrew its request: the holder learns it from heartbeat.
ALTER TABLE tireless.job ADD COLUMN cancel_requested_at timestamptz;
ALTER TABLE tireless.job ADD CONSTRAINT pending_holds_no_cancel_request
    CHECK (state <> 'pending' OR cancel_requested_at IS NULL);
COMMENT ON COLUMN tireless.job.cancel_requested_at IS
    'When the issue withdrew its request while the job was claimed; null unless it did. The job then ends cancelled.';
COMMENT ON CONSTRAINT pending_holds_no_cancel_request ON tireless.job IS
    'A cancel request stands: a cancel-requested claim never goes back to pending (it ends cancelled).';

-- Issue format: url and updated_at join it. Both checks below are single expressions without
-- subqueries, so the planner inlines them (and issue_problem) into the query that checks a batch:
-- a function call per element would cost more than the whole work rule.
CREATE FUNCTION tireless.is_forge_timestamp(value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        WHEN value !~ '^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-](0\d|1[0-5])(:?[0-5]\d)?)$'
            THEN false
        WHEN left(value, 4) = '0000' THEN false
        -- The day exists in its month (2026-02-30 does not).
        ELSE substr(value, 9, 2)::integer
             <= extract(day FROM make_date(left(value, 4)::integer, substr(value, 6, 2)::integer, 1) + interval '1 month - 1 day')
    END;
$$;
COMMENT ON FUNCTION tireless.is_forge_timestamp(text) IS
    'True for an ISO 8601 timestamp with its time zone, as forges write them (2024-05-01T12:00:00Z, '
    '2024-05-01T14:00:00+02:00), naming a real date and time.';

-- STABLE, not IMMUTABLE: format() is stable, and an immutable SQL function calling it is not inlined.
CREATE OR REPLACE FUNCTION tireless.issue_problem(issue jsonb) RETURNS text
    LANGUAGE sql STABLE
AS $$
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
    END;
$$;
COMMENT ON FUNCTION tireless.issue_problem(jsonb) IS
    'Why one element of an enqueue batch is malformed, or null when it is well formed.';

CREATE FUNCTION tireless.check_issue_batch(issues jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    bad record;
BEGIN
    IF jsonb_typeof(check_issue_batch.issues) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'issues must be a JSON array, got %', left(coalesce(check_issue_batch.issues::text, 'null'), 100)
            USING ERRCODE = 'TL006';
    END IF;
    IF jsonb_array_length(check_issue_batch.issues) > 50000 THEN
        RAISE EXCEPTION 'a batch holds at most 50000 issues, got %', jsonb_array_length(check_issue_batch.issues)
            USING ERRCODE = 'TL006', HINT = 'Split the poll into several calls.';
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
COMMENT ON FUNCTION tireless.check_issue_batch(jsonb) IS
    'Raises TL006 naming the first malformed element (and the field) unless the batch is a JSON array of at most '
    '50000 well-formed issues whose parent_ids name jobs. enqueue and record_poll check before they write.';

CREATE FUNCTION tireless.lock_repo_issues(forge text, owner text, repo text) RETURNS void
    LANGUAGE sql VOLATILE
AS $$
    SELECT pg_advisory_xact_lock(hashtext('tireless.issue'), hashtext(jsonb_build_array(forge, owner, repo)::text));
$$;
COMMENT ON FUNCTION tireless.lock_repo_issues(text, text, text) IS
    'Takes the transaction''s lock on one repository''s issues (an advisory lock: it writes nothing). enqueue, '
    'record_poll and rerun take it, so two of them never judge the same issue at once.';

-- The work rule: the one implementation, called by enqueue and record_poll on a checked batch.
CREATE FUNCTION tireless.apply_work_rule(
    issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer
)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    woken text[];
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
               (e.issue ->> 'parent_id')::bigint AS parent_id
          FROM jsonb_array_elements(apply_work_rule.issues) WITH ORDINALITY AS e(issue, position)
         ORDER BY forge, owner, repo, number, e.position DESC
    ), shown AS MATERIALIZED (
        -- Issues of untracked repositories are ignored.
        SELECT i.*, s.number IS NOT NULL AS known, s.asks_since, coalesce(s.answered, false) AS answered,
               s.number IS NULL
               OR (s.state, s.labels, s.title, s.url, s.updated_at)
                  IS DISTINCT FROM (i.state, i.labels, i.title, i.url, i.updated_at) AS changed
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
               jd.kind IS NULL AND jd.asks_since IS NOT NULL AS withdrawn,
               -- Rule 1: a job per request, made while no job is live.
               jd.kind IS NOT NULL AND jd.live_id IS NULL AND (jd.asks_since IS NULL OR NOT jd.answered) AS makes_job,
               CASE WHEN jd.kind IS NOT NULL THEN tireless.lane_for(jd.kind, jd.labels) END AS lane
          FROM judged jd
    ), saved AS (
        INSERT INTO tireless.issue AS s (forge, owner, repo, number, state, labels, title, url, updated_at, asks_since, answered)
        SELECT d.forge, d.owner, d.repo, d.number, d.state, d.labels, d.title, d.url, d.updated_at,
               CASE WHEN d.rising THEN now() WHEN d.kind IS NOT NULL THEN d.asks_since END,
               d.makes_job OR (d.answered AND NOT d.rising)
          FROM decided d
         WHERE d.changed OR d.makes_job OR d.rising OR d.withdrawn
        ON CONFLICT (forge, owner, repo, number) DO UPDATE
           SET state = excluded.state, labels = excluded.labels, title = excluded.title, url = excluded.url,
               updated_at = excluded.updated_at, asks_since = excluded.asks_since, answered = excluded.answered,
               changed_at = now()
    ), ended AS (
        -- Rule 2: a pending job is cancelled; a claimed one gets a cancel request (it stands once made).
        UPDATE tireless.job j
           SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
               note = CASE WHEN j.state <> 'pending' THEN j.note
                           WHEN d.state = 'closed' THEN 'issue closed'
                           ELSE 'issue no longer asks for work' END,
               cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
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
        SELECT d.forge, d.owner, d.repo, d.number, d.title, d.labels, d.kind::tireless.job_kind, d.lane, d.parent_id
          FROM decided d
         WHERE d.makes_job
         ORDER BY d.forge, d.owner, d.repo, d.number
        ON CONFLICT (forge, owner, repo, number) WHERE state IN ('pending', 'claimed') DO NOTHING
        RETURNING lane
    )
    SELECT (SELECT count(*) FROM made), (SELECT count(*) FROM ended), (SELECT count(*) FROM moved),
           (SELECT count(*) FROM shown),
           ARRAY(SELECT m.lane FROM made m UNION SELECT m.lane FROM moved m)
      INTO apply_work_rule.created, apply_work_rule.cancelled, apply_work_rule.rerouted, apply_work_rule.seen, woken;

    PERFORM tireless.announce_work(l) FROM unnest(woken) AS l;
END;
$$;
COMMENT ON FUNCTION tireless.apply_work_rule(jsonb) IS
    'The work rule on a checked batch of issues of tracked repositories: a pending job for an issue that asks for '
    'work and whose request has had none; withdrawal cancels a pending job or requests the cancel of a claimed one; '
    'relabelling re-routes a pending job. An issue shown as it was before writes nothing. Returns what it did.';

CREATE OR REPLACE FUNCTION tireless.enqueue(issues jsonb) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.enqueue(jsonb) IS
    'Takes a JSON array of issues {forge, owner, repo, number, state, labels, title?, url?, updated_at?, parent_id?} '
    'and applies the work rule to those of tracked repositories: a pending job per request for work, a pending job '
    'cancelled (or a claimed one asked to stop) when its issue withdraws the request, a pending job re-routed when '
    'relabelled. Returns how many jobs it created; a repeated poll creates nothing and writes nothing. Validates '
    'the whole batch first (TL006).';

-- Heartbeat and the sweeper's answer to a cancel request.
CREATE FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval DEFAULT '10 minutes', token uuid DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    requested timestamptz;
BEGIN
    PERFORM tireless.check_worker(heartbeat.worker);
    PERFORM tireless.check_lease(heartbeat.lease);
    UPDATE tireless.job j
       SET claim_expires_at = now() + heartbeat.lease, updated_at = now()
     WHERE j.id = heartbeat.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = heartbeat.worker
       AND (heartbeat.token IS NULL OR j.claim_token = heartbeat.token)
    RETURNING j.cancel_requested_at INTO requested;
    IF FOUND THEN
        RETURN CASE WHEN requested IS NULL THEN 'held' ELSE 'cancel' END;
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = heartbeat.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(heartbeat.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN 'lost';
END;
$$;
COMMENT ON FUNCTION tireless.heartbeat(bigint, text, interval, uuid) IS
    'Renews like renew_claim and answers held, lost (worker, or token when given, no longer holds the claim) or '
    'cancel (the issue withdrew its request: the lease is still extended, so the holder can stop its agent and '
    'transition the job to cancelled). TL001 for an unknown job.';

CREATE OR REPLACE FUNCTION tireless.expire_stale_claims() RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
                            WHEN j.attempts >= kp.max_attempts THEN 'failed'
                            ELSE 'pending' END::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               available_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempts >= kp.max_attempts THEN j.available_at
                                   ELSE now() + tireless.retry_delay(j.attempts) END,
               note = CASE WHEN j.cancel_requested_at IS NOT NULL
                           THEN format('issue withdrew its request; lease of %s expired at %s', j.claimed_by, j.claim_expires_at)
                           WHEN j.attempts >= kp.max_attempts
                           THEN format('attempts exhausted (%s of %s); last: lease of %s expired at %s',
                                       j.attempts, kp.max_attempts, j.claimed_by, j.claim_expires_at)
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
COMMENT ON FUNCTION tireless.expire_stale_claims() IS
    'Returns every claimed job whose lease has passed to pending (after its backoff), fails it when its last '
    'attempt is spent, or cancels it when its issue withdrew its request (no failure counted); clears the claim, '
    'keeps the attempt count, and returns how many jobs it moved. Never waits on another sweeper: a job whose row '
    'is locked, or a lane another sweeper holds, is left for the next sweep.';

-- Tracking creates the repository's poll state.
CREATE TABLE tireless.repo_poll (
    forge                text        NOT NULL,
    owner                text        NOT NULL,
    repo                 text        NOT NULL,
    next_poll_at         timestamptz NOT NULL DEFAULT now(),
    backoff_until        timestamptz,
    cursor               timestamptz,
    etag                 text,
    reads_since_full     integer     NOT NULL DEFAULT 0,
    consecutive_failures integer     NOT NULL DEFAULT 0,
    last_error           text,
    last_error_at        timestamptz,
    last_success_at      timestamptz,
    last_poll_at         timestamptz,
    polled_by            text,
    poll_lease_until     timestamptz,
    PRIMARY KEY (forge, owner, repo),
    CONSTRAINT poll_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT poll_lease_has_holder_and_end CHECK ((polled_by IS NULL) = (poll_lease_until IS NULL)),
    CONSTRAINT poll_counts_not_negative CHECK (reads_since_full >= 0 AND consecutive_failures >= 0)
);
COMMENT ON TABLE tireless.repo_poll IS
    'The poll state of each tracked repository: when it is due, its backoff, its cursor and ETag, its errors, and '
    'which poller holds it. Private: claim_repos_to_poll, record_poll and record_poll_failure keep it.';
COMMENT ON COLUMN tireless.repo_poll.cursor IS 'The newest forge updated_at a good read has seen: the next read asks for issues since it.';
COMMENT ON COLUMN tireless.repo_poll.reads_since_full IS 'Good reads since the last full listing; the tenth is a full listing again.';
COMMENT ON COLUMN tireless.repo_poll.backoff_until IS 'After a failed read the repository is not read again before this time.';
COMMENT ON COLUMN tireless.repo_poll.polled_by IS 'The poller that holds the repository''s poll lease, until poll_lease_until.';
COMMENT ON CONSTRAINT poll_of_a_tracked_repo ON tireless.repo_poll IS 'Poll state belongs to a tracked repository and goes with it.';
COMMENT ON CONSTRAINT poll_lease_has_holder_and_end ON tireless.repo_poll IS 'A poll lease has both a holder and an end, or neither.';
COMMENT ON CONSTRAINT poll_counts_not_negative ON tireless.repo_poll IS 'Counts of reads and failures are not negative.';

INSERT INTO tireless.repo_poll (forge, owner, repo) SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t;

CREATE OR REPLACE FUNCTION tireless.track_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_repo(track_repo.forge, track_repo.owner, track_repo.repo);
    INSERT INTO tireless.tracked_repo (forge, owner, repo)
    VALUES (track_repo.forge, track_repo.owner, track_repo.repo)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO tireless.repo_poll (forge, owner, repo) VALUES (track_repo.forge, track_repo.owner, track_repo.repo);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION tireless.track_repo(text, text, text) IS
    'Starts tracking a repository, so enqueue accepts its issues and the poller reads it (due at once); false if '
    'it was tracked already.';

-- The forge registry.
CREATE TYPE tireless.forge_kind AS ENUM ('gitea', 'forgejo', 'github');
COMMENT ON TYPE tireless.forge_kind IS 'The API family a forge speaks: gitea, forgejo (Gitea''s API) or github.';

CREATE TABLE tireless.forge (
    name          text                NOT NULL PRIMARY KEY,
    kind          tireless.forge_kind NOT NULL,
    base_url      text                NOT NULL,
    limited_until timestamptz,
    last_error    text,
    added_at      timestamptz         NOT NULL DEFAULT now(),
    CONSTRAINT forge_name_is_a_name CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$'),
    CONSTRAINT base_url_is_http CHECK (base_url ~ '^https?://[^/?#[:space:][:cntrl:]]+(/[^?#[:space:][:cntrl:]]*)?$'
                                       AND length(base_url) <= 2000)
);
COMMENT ON TABLE tireless.forge IS
    'The registered forges: the name issue keys use, the API family and the URL. Tokens are never stored here. '
    'Private: add_forge, remove_forge, forges and record_forge_trouble.';
COMMENT ON COLUMN tireless.forge.limited_until IS 'After a rate limit or an auth failure, no repository of the forge is read before this time.';
COMMENT ON COLUMN tireless.forge.last_error IS 'Why the forge is stopped (a rate limit, 401/403); null when it is not.';
COMMENT ON CONSTRAINT forge_name_is_a_name ON tireless.forge IS
    'A forge name is 1 to 100 letters, digits, ".", "-" or "_", starting with a letter or digit.';
COMMENT ON CONSTRAINT base_url_is_http ON tireless.forge IS 'The base URL is an http:// or https:// URL without query or fragment.';

CREATE FUNCTION tireless.add_forge(name text, kind text, base_url text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    url text := rtrim(add_forge.base_url, '/');
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
    INSERT INTO tireless.forge AS f (name, kind, base_url)
    VALUES (add_forge.name, add_forge.kind::tireless.forge_kind, url)
    ON CONFLICT ON CONSTRAINT forge_pkey DO UPDATE
       SET kind = excluded.kind, base_url = excluded.base_url
     WHERE (f.kind, f.base_url) IS DISTINCT FROM (excluded.kind, excluded.base_url);
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION tireless.add_forge(text, text, text) IS
    'Registers a forge (kind gitea, forgejo or github; base_url http(s)://, a trailing slash dropped) or changes '
    'its entry; true when it created or changed it, false when it was already so. TL005 for a bad argument.';

CREATE FUNCTION tireless.remove_forge(name text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM tireless.forge f WHERE f.name = remove_forge.name;
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION tireless.remove_forge(text) IS
    'Removes a forge from the registry (its repositories stay tracked, unread until it is added again); true when it removed one.';

CREATE FUNCTION tireless.forges() RETURNS TABLE (name text, kind text, base_url text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT f.name, f.kind::text, f.base_url FROM tireless.forge f ORDER BY f.name;
$$;
COMMENT ON FUNCTION tireless.forges() IS 'The registered forges, by name: name, kind and base_url.';

-- Rerun.
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
COMMENT ON FUNCTION tireless.check_tracked(text, text, text) IS
    'Raises TL005 for a malformed repository key and TL008 unless the repository is tracked.';

CREATE FUNCTION tireless.rerun(forge text, owner text, repo text, number integer) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    live bigint;
    seen tireless.issue;
    job_kind text;
    job tireless.job;
BEGIN
    IF rerun.number IS NULL OR rerun.number < 1 THEN
        RAISE EXCEPTION 'number must be a positive issue number, got %', coalesce(rerun.number::text, 'null')
            USING ERRCODE = 'TL005';
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
    job_kind := coalesce(tireless.job_kind_for(seen.labels), 'implement');
    INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, note)
    VALUES (rerun.forge, rerun.owner, rerun.repo, rerun.number, seen.title, coalesce(seen.labels, '{}'),
            job_kind::tireless.job_kind, tireless.lane_for(job_kind, coalesce(seen.labels, '{}')),
            format('rerun by %s', session_user))
    RETURNING * INTO job;
    -- The issue's current request has had its job: a poll that shows it unchanged makes no other.
    UPDATE tireless.issue s SET answered = true, changed_at = now()
     WHERE (s.forge, s.owner, s.repo, s.number) = (rerun.forge, rerun.owner, rerun.repo, rerun.number)
       AND NOT s.answered;
    PERFORM tireless.announce_work(job.lane);
    RETURN job.id;
END;
$$;
COMMENT ON FUNCTION tireless.rerun(text, text, text, integer) IS
    '(admin) A new pending job for an issue of a tracked repository that has no live job, whatever its labels say '
    'now: its kind from the labels last seen, else implement. Returns its id. TL008 when the repository is not '
    'tracked; 23505 (one_live_job_per_issue) when a live job exists.';

-- The poll bookkeeping.
CREATE FUNCTION tireless.claim_repos_to_poll(poller text, lease interval DEFAULT '5 minutes', max_repos integer DEFAULT 100)
    RETURNS TABLE (forge text, owner text, repo text, kind text, base_url text, cursor timestamptz, etag text, full_listing boolean,
                  live_numbers integer[])
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
       SET polled_by = claim_repos_to_poll.poller, poll_lease_until = now() + claim_repos_to_poll.lease
      FROM due, tireless.forge f
     WHERE (rp.forge, rp.owner, rp.repo) = (due.forge, due.owner, due.repo) AND f.name = rp.forge
    RETURNING rp.forge, rp.owner, rp.repo, f.kind::text, f.base_url, rp.cursor, rp.etag,
              rp.last_success_at IS NULL OR rp.reads_since_full >= 9,
              -- A full listing fetches on its own each live job's issue it did not show.
              ARRAY(SELECT j.number FROM tireless.job j
                     WHERE (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo)
                       AND j.state IN ('pending', 'claimed')
                     ORDER BY j.number);
END;
$$;
COMMENT ON FUNCTION tireless.claim_repos_to_poll(text, interval, integer) IS
    'Leases to poller (for lease) up to max_repos due repositories of registered forges that are not stopped: '
    'next poll time reached, not backing off, lease free or expired; FOR UPDATE SKIP LOCKED, so two pollers never '
    'get the same one. Returns each with its forge kind and URL, cursor, ETag and whether to list it in full '
    '(the first read and every tenth), and the issue numbers of its live jobs.';

CREATE FUNCTION tireless.held_poll(forge text, owner text, repo text, poller text) RETURNS tireless.repo_poll
    LANGUAGE plpgsql VOLATILE
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
COMMENT ON FUNCTION tireless.held_poll(text, text, text, text) IS
    'The repository''s poll state, locked, when poller holds its poll lease; TL008 for an untracked repository, '
    'TL004 when another poller (or none) holds the lease.';

CREATE FUNCTION tireless.record_poll(
    forge text, owner text, repo text, poller text, issues jsonb, cursor timestamptz, etag text,
    full_listing boolean, deleted integer[] DEFAULT '{}', next_poll_in interval DEFAULT '0',
    OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer
)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    outcome record;
    bad record;
    gone integer;
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
    PERFORM tireless.held_poll(record_poll.forge, record_poll.owner, record_poll.repo, record_poll.poller);
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
        UPDATE tireless.issue s SET state = 'closed', asks_since = NULL, changed_at = now()
          FROM gone_issues g
         WHERE (s.forge, s.owner, s.repo, s.number) = (record_poll.forge, record_poll.owner, record_poll.repo, g.number)
           AND (s.state <> 'closed' OR s.asks_since IS NOT NULL)
    ), ended AS (
        UPDATE tireless.job j
           SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
               note = CASE WHEN j.state = 'pending' THEN 'issue deleted' ELSE j.note END,
               cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
               updated_at = now()
          FROM gone_issues g
         WHERE (j.forge, j.owner, j.repo, j.number) = (record_poll.forge, record_poll.owner, record_poll.repo, g.number)
           AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL))
        RETURNING j.id
    )
    SELECT count(*) INTO gone FROM ended;

    UPDATE tireless.repo_poll rp
       SET cursor = greatest(rp.cursor, record_poll.cursor),
           etag = record_poll.etag,
           reads_since_full = CASE WHEN record_poll.full_listing THEN 0 ELSE rp.reads_since_full + 1 END,
           consecutive_failures = 0,
           last_error = NULL,
           backoff_until = NULL,
           last_success_at = now(),
           last_poll_at = now(),
           next_poll_at = now() + record_poll.next_poll_in,
           polled_by = NULL,
           poll_lease_until = NULL
     WHERE (rp.forge, rp.owner, rp.repo) = (record_poll.forge, record_poll.owner, record_poll.repo);

    record_poll.created := outcome.created;
    record_poll.cancelled := outcome.cancelled + gone;
    record_poll.rerouted := outcome.rerouted;
    record_poll.seen := outcome.seen;
END;
$$;
COMMENT ON FUNCTION tireless.record_poll(text, text, text, text, jsonb, timestamptz, text, boolean, integer[], interval) IS
    'What a poller read of one repository, in one transaction: the work rule applied to issues (enqueue''s format '
    'and checks; every issue of this repository), the live jobs of deleted issue numbers cancelled (note issue '
    'deleted), the cursor (never moved back) and ETag stored, the error cleared, the next poll in next_poll_in, '
    'the lease released. Returns created, cancelled, rerouted and seen. TL004 when poller does not hold the '
    'repository''s poll lease, TL008 when it is not tracked.';

CREATE FUNCTION tireless.record_poll_failure(
    forge text, owner text, repo text, poller text, error text, retry_after interval DEFAULT NULL
) RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.record_poll_failure(text, text, text, text, text, interval) IS
    'A failed read of a repository whose poll lease poller holds: keeps the cursor, counts the failure, records the '
    'error (trimmed to 2000 characters), backs off exponentially with jitter (at least retry_after), releases the '
    'lease; returns the end of the backoff. TL004 without the lease, TL008 for an untracked repository.';

CREATE FUNCTION tireless.record_forge_trouble(name text, error text, until timestamptz) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.record_forge_trouble(text, text, timestamptz) IS
    'A rate limit or an auth failure: no repository of the forge is read before until, and error says why; a null '
    'error clears the stop. TL008 for a forge that is not registered.';

CREATE FUNCTION tireless.poll_soon(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_repo(poll_soon.forge, poll_soon.owner, poll_soon.repo);
    UPDATE tireless.repo_poll rp SET next_poll_at = now()
     WHERE (rp.forge, rp.owner, rp.repo) = (poll_soon.forge, poll_soon.owner, poll_soon.repo)
       AND rp.next_poll_at > now();
    RETURN EXISTS (SELECT FROM tireless.repo_poll rp
                    WHERE (rp.forge, rp.owner, rp.repo) = (poll_soon.forge, poll_soon.owner, poll_soon.repo)
                      AND (rp.backoff_until IS NULL OR rp.backoff_until <= now()));
END;
$$;
COMMENT ON FUNCTION tireless.poll_soon(text, text, text) IS
    'Makes a tracked repository due now (a webhook saw a change); a backoff still holds. True when it is due now, '
    'false when it is not tracked or is backing off.';

CREATE VIEW tireless.repo_status AS
SELECT rp.forge, rp.owner, rp.repo,
       f.kind::text AS forge_kind,
       f.name IS NOT NULL AS registered,
       rp.last_poll_at, rp.last_success_at, rp.last_error, rp.last_error_at, rp.consecutive_failures,
       rp.next_poll_at, rp.backoff_until, rp.polled_by, rp.cursor,
       f.limited_until AS forge_limited_until, f.last_error AS forge_error,
       coalesce(live.pending, 0) AS pending, coalesce(live.claimed, 0) AS claimed
  FROM tireless.repo_poll rp
  LEFT JOIN tireless.forge f ON f.name = rp.forge
  LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE j.state = 'pending') AS pending,
             count(*) FILTER (WHERE j.state = 'claimed') AS claimed
        FROM tireless.job j
       WHERE (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo) AND j.state IN ('pending', 'claimed')
  ) AS live ON true;
COMMENT ON VIEW tireless.repo_status IS
    'One row per tracked repository: its forge (registered or not, stopped until when and why), its last poll, '
    'last good read and last error, failures in a row, next poll, backoff, holder and cursor, and its live jobs.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.heartbeat(bigint, text, interval, uuid) TO tireless_runner;
GRANT EXECUTE ON FUNCTION
    tireless.forges(),
    tireless.claim_repos_to_poll(text, interval, integer),
    tireless.record_poll(text, text, text, text, jsonb, timestamptz, text, boolean, integer[], interval),
    tireless.record_poll_failure(text, text, text, text, text, interval),
    tireless.record_forge_trouble(text, text, timestamptz),
    tireless.poll_soon(text, text, text)
    TO tireless_poller;
GRANT EXECUTE ON FUNCTION
    tireless.rerun(text, text, text, integer),
    tireless.add_forge(text, text, text),
    tireless.remove_forge(text)
    TO tireless_admin;
GRANT SELECT ON tireless.issue, tireless.forge, tireless.repo_poll TO tireless_admin;
GRANT SELECT ON tireless.repo_status TO tireless_runner, tireless_poller, tireless_admin;
