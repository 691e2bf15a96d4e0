-- The work rule (docs/work-rule.md): which issues get a job, routing by labels, tracking
-- repositories, rerun.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- Routing: the one implementation of the label protocol. enqueue and refresh_lane call it; so does Python.
CREATE OR REPLACE FUNCTION tireless.job_kind_for(labels text[]) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.job_kind_for(text[]) IS
    'The kind of work a set of issue labels asks for: the opt-in label and a mode label are both needed; '
    'discover beats plan beats implement; null when the labels ask for none. Labels match exactly.';
REVOKE ALL ON FUNCTION tireless.job_kind_for(text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_kind_for(text[]) TO tireless_runner, tireless_poller;

CREATE OR REPLACE FUNCTION tireless.lane_for(kind text, labels text[]) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.lane_for(text, text[]) IS
    'The lane a job of this kind with these labels goes to: the agent label''s lane (several: the first in '
    'byte order; one that names no valid lane is ignored), else the kind''s default lane. TL005 for an unknown kind.';
REVOKE ALL ON FUNCTION tireless.lane_for(text, text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.lane_for(text, text[]) TO tireless_runner, tireless_poller;

CREATE OR REPLACE FUNCTION tireless.track_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.track_repo(text, text, text) IS
    'Starts tracking a repository of a registered forge, so enqueue accepts its issues, the poller reads it (due at '
    'once, and woken: tireless_poll) and the mirror shows its jobs from now on; false if it was tracked already '
    '(its owner and name in any case: tracked_key says under which). TL008, with the command that registers it, '
    'for a forge that is not registered; TL005 for a malformed key.';
REVOKE ALL ON FUNCTION tireless.track_repo(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.track_repo(text, text, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.untrack_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_repo(untrack_repo.forge, untrack_repo.owner, untrack_repo.repo);
    DELETE FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (untrack_repo.forge, untrack_repo.owner, untrack_repo.repo);
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION tireless.untrack_repo(text, text, text) IS
    'Stops tracking a repository; false if it was not tracked. Its jobs stay as they are.';
REVOKE ALL ON FUNCTION tireless.untrack_repo(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.untrack_repo(text, text, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.tracked_repos() RETURNS TABLE (forge text, owner text, repo text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t ORDER BY t.forge, t.owner, t.repo;
$$;
COMMENT ON FUNCTION tireless.tracked_repos() IS 'The repositories the poller should read, in order.';
REVOKE ALL ON FUNCTION tireless.tracked_repos() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.tracked_repos() TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.labels_problem(labels text[]) RETURNS text
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
COMMENT ON FUNCTION tireless.labels_problem(text[]) IS
    'Why a set of issue labels breaks the limits (at most 100 labels of 1 to 200 characters), or null when it keeps them.';
REVOKE ALL ON FUNCTION tireless.labels_problem(text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- An issue's optional "depends_on": the forge's own relations as the poller read them
-- (docs/work-rule.md, "Dependencies"): [{owner, repo, number}] of the same forge, at most 100.
CREATE OR REPLACE FUNCTION tireless.depends_on_problem(depends_on jsonb) RETURNS text
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
COMMENT ON FUNCTION tireless.depends_on_problem(jsonb) IS
    'Why an issue''s "depends_on" (the forge''s relations: an array of at most 100 {owner, repo, number} of the '
    'same forge) is malformed, or null when it is well formed.';
REVOKE ALL ON FUNCTION tireless.depends_on_problem(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- enqueue and record_poll accept an optional "body" (a string or null) and an optional
-- "depends_on" (the forge's relations; absent: not read, the stored ones stay).
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
        WHEN jsonb_typeof(issue -> 'body') NOT IN ('string', 'null') THEN
            format('"body" must be a string or null, got %s', left((issue -> 'body')::text, 100))
        WHEN issue ? 'depends_on' THEN tireless.depends_on_problem(issue -> 'depends_on')
    END;
$$;
COMMENT ON FUNCTION tireless.issue_problem(jsonb) IS
    'Why one element of an enqueue batch is malformed, or null when it is well formed.';
REVOKE ALL ON FUNCTION tireless.issue_problem(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

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
    'Takes a JSON array of issues {forge, owner, repo, number, state, labels, title?, url?, updated_at?, parent_id?, '
    'body?, depends_on?: [{owner, repo, number}] (the forge''s own relations, replacing those stored)} '
    'and applies the work rule to those of tracked repositories: a pending job per request for work, a pending job '
    'cancelled (or a claimed one asked to stop) when its issue withdraws the request, a pending job re-routed when '
    'relabelled. Returns how many jobs it created; a repeated poll creates nothing and writes nothing. Validates '
    'the whole batch first (TL006).';
REVOKE ALL ON FUNCTION tireless.enqueue(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.enqueue(jsonb) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.refresh_lane(forge text, owner text, repo text, number integer, labels text[]) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.refresh_lane(text, text, text, integer, text[]) IS
    'Re-routes the issue''s pending job from its current labels (say an agent label was added) and returns the '
    'lane; null when the issue has no pending job.';
REVOKE ALL ON FUNCTION tireless.refresh_lane(text, text, text, integer, text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.refresh_lane(text, text, text, integer, text[]) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.check_issue_batch(issues jsonb) RETURNS void
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
COMMENT ON FUNCTION tireless.check_issue_batch(jsonb) IS
    'Raises TL006 naming the first malformed element (and the field) unless the batch is a JSON array of at most '
    '50000 well-formed issues of at most 1000 repositories whose parent_ids name jobs. enqueue and record_poll '
    'check before they write.';
REVOKE ALL ON FUNCTION tireless.check_issue_batch(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A repository's lock is its tracked_repo row. FOR NO KEY UPDATE: the foreign keys that name the row
-- (repo_poll, mirror_repo, mirror_issue) take FOR KEY SHARE, which it does not block; untrack_repo's
-- DELETE waits for it. The issues of an untracked repository are never judged, so it needs no lock.
CREATE OR REPLACE FUNCTION tireless.lock_repo_issues(forge text, owner text, repo text) RETURNS void
    LANGUAGE sql VOLATILE
AS $$
    SELECT FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (lock_repo_issues.forge, lock_repo_issues.owner, lock_repo_issues.repo)
       FOR NO KEY UPDATE;
$$;
COMMENT ON FUNCTION tireless.lock_repo_issues(text, text, text) IS
    'Takes the transaction''s lock on one tracked repository''s issues: its tracked_repo row (FOR NO KEY UPDATE), '
    'which only the tireless functions can lock. enqueue, record_poll, rerun and the mirror take it, so two of them '
    'never judge the same issue at once.';
REVOKE ALL ON FUNCTION tireless.lock_repo_issues(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.apply_work_rule(
    issues jsonb, OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer
)
    LANGUAGE plpgsql VOLATILE
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
COMMENT ON FUNCTION tireless.apply_work_rule(jsonb) IS
    'The work rule on a checked batch of issues of tracked repositories: a pending job for an issue that asks for '
    'work and whose request has had none; withdrawal cancels a pending job or requests the cancel of a claimed one '
    '(note, and cancel_note: issue closed, or issue no longer asks for work); '
    'relabelling re-routes a pending job; an issue''s "depends_on" replaces its forge relations '
    '(record_forge_dependencies); the pending jobs of the issues judged, of those whose forge relations changed and '
    'of their dependents wait for their open dependencies or are released (settle_dependencies); a label of an '
    'issue judged that names nothing is reported once (report_unknown_labels). An issue shown as '
    'it was before writes nothing. '
    'Returns what it did.';
REVOKE ALL ON FUNCTION tireless.apply_work_rule(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.rerun(forge text, owner text, repo text, number integer, kind text DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.rerun(text, text, text, integer, text) IS
    '(admin) A new pending job for an issue of a tracked repository that has no live job, whatever its labels say '
    'now: the kind and agent of its last job (the mirror may have taken its mode label off since), else of the '
    'labels last seen; kind, when given, replaces the kind. Returns its id. TL008 when the repository is not '
    'tracked; 23505 (one_live_job_per_issue) when a live job exists; TL005 for an unknown kind or an issue the '
    'store has never seen.';
REVOKE ALL ON FUNCTION tireless.rerun(text, text, text, integer, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.rerun(text, text, text, integer, text) TO tireless_admin;

-- Exact, not guessed from created_at: every writer of jobs (enqueue, record_poll, rerun) first takes
-- the lock of each repository it touches (lock_repo_issues). Taken here before the batch's jobs are
-- read, and held to the end of the transaction, those locks keep every other writer away from
-- these issues, so the jobs of the batch that were not there before are the ones this call made.
CREATE OR REPLACE FUNCTION tireless.enqueue_and_list(issues jsonb) RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.enqueue_and_list(jsonb) IS
    'enqueue, returning the jobs it created (oldest first) instead of their count: what `tireless enqueue` shows. '
    'For tireless_admin, who reads tireless.job; a poller calls enqueue.';
REVOKE ALL ON FUNCTION tireless.enqueue_and_list(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.enqueue_and_list(jsonb) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.issue_gone(forge text, owner text, repo text, number integer) RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (SELECT FROM tireless.issue s
                    WHERE (s.forge, s.owner, s.repo, s.number) = (issue_gone.forge, issue_gone.owner, issue_gone.repo, issue_gone.number)
                      AND s.gone_at IS NOT NULL);
$$;
COMMENT ON FUNCTION tireless.issue_gone(text, text, text, integer) IS
    'Whether the forge said the issue is gone (deleted or moved: record_issue_gone, record_poll''s deleted numbers) '
    'and no listing has shown it since: the mirror makes no write to it.';
REVOKE ALL ON FUNCTION tireless.issue_gone(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_issue_gone(forge text, owner text, repo text, poller text, number integer, note text)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.record_issue_gone(text, text, text, text, integer, text) IS
    'An issue the forge says is gone (404 or 410: deleted; a redirect to another repository: moved, as GitHub '
    'answers 301 for a transferred issue): its request is withdrawn, its pending job cancelled and its claimed job '
    'asked to stop, the note saying how it went; the issue is marked gone (gone_at, gone_note), so the mirror''s due '
    'functions list no write for it until a listing shows it again. Returns how many jobs it ended. TL004 without '
    'the poll lease, TL008 for an untracked repository.';
REVOKE ALL ON FUNCTION tireless.record_issue_gone(text, text, text, text, integer, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_issue_gone(text, text, text, text, integer, text) TO tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text)
    RETURNS integer
    LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    RETURN tireless.record_issue_gone(forge, owner, repo, poller, number, note);
COMMENT ON FUNCTION tireless.record_issue_moved(text, text, text, text, integer, text) IS
    'An issue the forge says has moved out of the repository (GitHub answers 301 for a transferred issue): '
    'tireless.record_issue_gone, the note saying where it went; returns how many jobs it ended. TL004 without the '
    'poll lease, TL008 for an untracked repository.';
REVOKE ALL ON FUNCTION tireless.record_issue_moved(text, text, text, text, integer, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_issue_moved(text, text, text, text, integer, text) TO tireless_poller, tireless_admin;
