-- The forge registry and the poll's bookkeeping: which repositories are due, their cursors,
-- errors, backoff and webhooks.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.add_forge(name text, kind text, base_url text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
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
$$;
COMMENT ON FUNCTION tireless.add_forge(text, text, text) IS
    'Registers a forge (kind gitea, forgejo or github; base_url http(s)://, a trailing slash dropped) or changes '
    'its entry; true when it created or changed it, false when it was already so. TL005 for a bad argument, and '
    'when the policy''s label_prefix makes a label longer than a forge of that kind takes (50 characters on GitHub).';
REVOKE ALL ON FUNCTION tireless.add_forge(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.add_forge(text, text, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.remove_forge(name text) RETURNS boolean
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
REVOKE ALL ON FUNCTION tireless.remove_forge(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.remove_forge(text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.forges() RETURNS TABLE (name text, kind text, base_url text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT f.name, f.kind::text, f.base_url FROM tireless.forge f ORDER BY f.name;
$$;
COMMENT ON FUNCTION tireless.forges() IS 'The registered forges, by name: name, kind and base_url (a runner that delivers says at start which it has no token for).';
REVOKE ALL ON FUNCTION tireless.forges() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.forges() TO tireless_runner, tireless_poller;

CREATE OR REPLACE FUNCTION tireless.set_forge_app(name text, app_id bigint, app_key_file text DEFAULT NULL) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
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
$$;
COMMENT ON FUNCTION tireless.set_forge_app(text, bigint, text) IS
    '(admin) Makes a github forge''s credentials its GitHub App: app_id, and app_key_file, the absolute path of the '
    'App''s private key on the hosts that run tireless (the path, never the key); app_id null: a token again. True when '
    'it changed the entry. TL008 for a forge not registered, TL005 for a bad argument or a forge of another kind.';
REVOKE ALL ON FUNCTION tireless.set_forge_app(text, bigint, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_forge_app(text, bigint, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.forge_apps() RETURNS TABLE (name text, app_id bigint, app_key_file text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT f.name, f.app_id, f.app_key_file FROM tireless.forge f WHERE f.app_id IS NOT NULL ORDER BY f.name;
$$;
COMMENT ON FUNCTION tireless.forge_apps() IS
    'The forges that authenticate as a GitHub App, by name: the App''s id and the path of its key''s file (or null).';
REVOKE ALL ON FUNCTION tireless.forge_apps() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.forge_apps() TO tireless_runner, tireless_poller;

-- The poll bookkeeping: pollers lease the repositories that are due.
CREATE OR REPLACE FUNCTION tireless.claim_repos_to_poll(poller text, lease interval DEFAULT '5 minutes', max_repos integer DEFAULT 100)
    RETURNS TABLE (forge text, owner text, repo text, kind text, base_url text, cursor timestamptz, etag text, full_listing boolean,
                  live_numbers integer[], opt_in text, waiting_numbers integer[])
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
COMMENT ON FUNCTION tireless.claim_repos_to_poll(text, interval, integer) IS
    'Leases to poller (for lease) up to max_repos due repositories of registered forges that are not stopped: '
    'next poll time reached, not backing off, lease free or expired; FOR UPDATE SKIP LOCKED, so two pollers never '
    'get the same one. Returns each with its forge kind and URL, cursor, ETag and whether to list it in full '
    '(the first read and every tenth), the issue numbers of its live jobs and of the issues of the repository '
    'waiting jobs depend on that the store has never read, the opt-in label (the policy''s label_prefix: the '
    'poller reads the forge''s dependency relations of the changed issues carrying it) and the issue numbers of its '
    'waiting jobs (whose relations a full listing reads again).';
REVOKE ALL ON FUNCTION tireless.claim_repos_to_poll(text, interval, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.claim_repos_to_poll(text, interval, integer) TO tireless_poller;

-- A poller that waits between rounds (`tireless poll --every`) wakes at this time at the latest, as a
-- runner does at tireless.next_ready_at: no notification says that a backoff or a forge's stop ended.
CREATE OR REPLACE FUNCTION tireless.next_poll_due_at() RETURNS timestamptz
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min(greatest(rp.next_poll_at, rp.backoff_until, rp.poll_lease_until, f.limited_until))
      FROM tireless.repo_poll rp
      JOIN tireless.forge f ON f.name = rp.forge;
$$;
COMMENT ON FUNCTION tireless.next_poll_due_at() IS
    'The earliest time claim_repos_to_poll hands out a tracked repository of a registered forge: its next poll, '
    'backoff, another poller''s lease and its forge''s stop all passed (in the past: one is due now). Null when no '
    'repository of a registered forge is tracked.';
REVOKE ALL ON FUNCTION tireless.next_poll_due_at() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.next_poll_due_at() TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.held_poll(forge text, owner text, repo text, poller text) RETURNS tireless.repo_poll
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
REVOKE ALL ON FUNCTION tireless.held_poll(text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_poll(
    forge text, owner text, repo text, poller text, issues jsonb, cursor timestamptz, etag text,
    full_listing boolean, deleted integer[] DEFAULT '{}', next_poll_in interval DEFAULT '0',
    odd jsonb DEFAULT '[]',
    OUT created integer, OUT cancelled integer, OUT rerouted integer, OUT seen integer, OUT skipped integer
)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.record_poll(text, text, text, text, jsonb, timestamptz, text, boolean, integer[], interval, jsonb) IS
    'What a poller read of one repository, in one transaction: the work rule applied to issues (enqueue''s format '
    'and checks; every issue of this repository; one the store refuses whose number it can key is left out and kept in '
    'issue_skip with the reason, as are the poller''s odd ones: [{number, problem}], and the rest is recorded), the live jobs of deleted issue numbers cancelled (note issue '
    'deleted) and those issues marked gone (the mirror writes to them no more), a job for each open issue whose conversation asks wait and that has no live job (answer_waiting_asks), the cursor (never moved back) and ETag stored, the error cleared, the next poll in next_poll_in, '
    'the lease released (due at once when a webhook came during the read: poll_again). Returns created, cancelled, rerouted, seen and skipped (issues left out). TL004 when poller does not hold the '
    'repository''s poll lease, TL008 when it is not tracked.';
REVOKE ALL ON FUNCTION tireless.record_poll(text, text, text, text, jsonb, timestamp with time zone, text, boolean, integer[], interval, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_poll(text, text, text, text, jsonb, timestamp with time zone, text, boolean, integer[], interval, jsonb) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.record_poll_failure(
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
REVOKE ALL ON FUNCTION tireless.record_poll_failure(text, text, text, text, text, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_poll_failure(text, text, text, text, text, interval) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.record_forge_trouble(name text, error text, until timestamptz) RETURNS void
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
REVOKE ALL ON FUNCTION tireless.record_forge_trouble(text, text, timestamp with time zone) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_forge_trouble(text, text, timestamp with time zone) TO tireless_poller;

-- Wake-up: pollers (`tireless poll --every`) LISTEN on channel tireless_poll; the payload is the forge.
CREATE OR REPLACE FUNCTION tireless.announce_poll(forge text) RETURNS void
    LANGUAGE sql VOLATILE
AS $$
    SELECT pg_notify('tireless_poll', announce_poll.forge);
$$;
COMMENT ON FUNCTION tireless.announce_poll(text) IS
    'NOTIFY tireless_poll with the forge as payload: a repository of it is due now. Sent at commit.';
REVOKE ALL ON FUNCTION tireless.announce_poll(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.poll_soon(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.poll_soon(text, text, text) IS
    'Makes a tracked repository due now (a webhook saw a change), its owner and name matched without case (while a '
    'poller reads it: due again as soon as that read is recorded, poll_again), and '
    'wakes the pollers (NOTIFY tireless_poll, payload the forge); a backoff still holds. True when it is due now, '
    'false when it is not tracked or is backing off (then no notification).';
REVOKE ALL ON FUNCTION tireless.poll_soon(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.poll_soon(text, text, text) TO tireless_poller;

-- repo_status shows where a repository moved, the last warning of its reads and the issues left out (a new column goes last:
-- CREATE OR REPLACE VIEW only adds columns at the end).
CREATE OR REPLACE VIEW tireless.repo_status AS
SELECT rp.forge, rp.owner, rp.repo,
       f.kind::text AS forge_kind,
       f.name IS NOT NULL AS registered,
       rp.last_poll_at, rp.last_success_at, rp.last_error, rp.last_error_at, rp.consecutive_failures,
       rp.next_poll_at, rp.backoff_until, rp.polled_by, rp.cursor,
       f.limited_until AS forge_limited_until, f.last_error AS forge_error,
       coalesce(live.pending, 0) AS pending, coalesce(live.claimed, 0) AS claimed,
       coalesce(queued.writes, 0) + tireless.mirror_unread(rp.forge, rp.owner, rp.repo) AS mirror_backlog,
       queued.last_error AS mirror_error, queued.last_error_at AS mirror_error_at,
       rp.moved_to, rp.last_warning, rp.last_warning_at,
       coalesce(skips.issues, 0) AS skipped_issues, skips.newest AS skipped_issue
  FROM tireless.repo_poll rp
  LEFT JOIN tireless.forge f ON f.name = rp.forge
  LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE j.state = 'pending') AS pending,
             count(*) FILTER (WHERE j.state = 'claimed') AS claimed
        FROM tireless.job j
       WHERE (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo) AND j.state IN ('pending', 'claimed')
  ) AS live ON true
  LEFT JOIN LATERAL (
      SELECT count(*) AS writes,
             (array_agg(mi.last_error ORDER BY mi.last_error_at DESC) FILTER (WHERE mi.last_error IS NOT NULL))[1] AS last_error,
             max(mi.last_error_at) AS last_error_at
        FROM tireless.mirror_issue mi
       WHERE (mi.forge, mi.owner, mi.repo) = (rp.forge, rp.owner, rp.repo)
         AND ((mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state) OR mi.applied_waiting <> mi.waiting)
         -- A gone issue's write is never made (tireless.issue_gone; inline: a view runs as its reader).
         AND NOT EXISTS (SELECT FROM tireless.issue s
                          WHERE (s.forge, s.owner, s.repo, s.number) = (mi.forge, mi.owner, mi.repo, mi.number)
                            AND s.gone_at IS NOT NULL)
  ) AS queued ON true
  LEFT JOIN LATERAL (
      SELECT count(*) AS issues,
             (array_agg(format('#%s: %s', k.number, k.problem) ORDER BY k.last_seen DESC, k.number))[1] AS newest
        FROM tireless.issue_skip k
       WHERE (k.forge, k.owner, k.repo) = (rp.forge, rp.owner, rp.repo)
  ) AS skips ON true;
COMMENT ON VIEW tireless.repo_status IS
    'One row per tracked repository: its forge (registered or not, stopped until when and why), its last poll, '
    'last good read and last error, failures in a row, next poll, backoff, holder and cursor, its live jobs, '
    'the mirror: how many issues still wait for a forge write (mirror_backlog) and the newest error of those, '
    'and the poller''s notices: the owner/name the repository was moved to, the last warning of a good read, '
    'and how many of its issues the polls leave out as malformed (tireless.issue_skip) with the newest of them.';
REVOKE ALL ON tireless.repo_status FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.repo_status TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.check_forge(name text) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.check_forge(text) IS
    'Raises TL008, with the command that registers it, unless the forge is registered (track_repo, retry_forge).';
REVOKE ALL ON FUNCTION tireless.check_forge(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.check_forge(text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.retry_forge(name text) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.retry_forge(text) IS
    '(admin) Clears a forge''s stop (a rate limit or refused credentials, as record_forge_trouble set it) and makes '
    'each of its repositories due now, backoff ended, and wakes the pollers: the next poll round reads them. Returns how many repositories '
    'that is. TL008 for a forge that is not registered.';
REVOKE ALL ON FUNCTION tireless.retry_forge(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.retry_forge(text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.poll_soon_once(forge text, owner text, repo text, digest bytea) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.poll_soon_once(text, text, text, bytea) IS
    'tireless.poll_soon for a webhook delivery whose body has SHA-256 digest: null, and nothing done, when the same '
    'body reached this forge in the last seven days (a replay); TL008 for a repository that is not tracked, '
    'TL005 for a digest that is not 32 bytes.';
REVOKE ALL ON FUNCTION tireless.poll_soon_once(text, text, text, bytea) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.poll_soon_once(text, text, text, bytea) TO tireless_poller;

-- A forge's API root: the base URL for GitHub, /api/v1 under it for Gitea and Forgejo.
CREATE OR REPLACE FUNCTION tireless.forge_api_url(kind tireless.forge_kind, base_url text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN kind = 'github' THEN base_url ELSE base_url || '/api/v1' END;
COMMENT ON FUNCTION tireless.forge_api_url(tireless.forge_kind, text) IS
    'A registered forge''s API root: base_url for GitHub (it is the API root), base_url/api/v1 for Gitea and Forgejo.';
REVOKE ALL ON FUNCTION tireless.forge_api_url(tireless.forge_kind, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A poller renews the leases it holds every third of the lease while it lives (tireless.forge.poll),
-- so the lease can be short: a poller that dies leaves its repositories to the others within one
-- lease (a minute by default) instead of the five minutes a whole round once needed.
CREATE OR REPLACE FUNCTION tireless.renew_poll_leases(poller text, lease interval) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.renew_poll_leases(text, interval) IS
    'Extends to now() + lease every poll lease poller still holds (not one that has run out); returns how many. '
    'A poller calls it every third of its lease, so a dead poller''s repositories are free within one lease.';
REVOKE ALL ON FUNCTION tireless.renew_poll_leases(text, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.renew_poll_leases(text, interval) TO tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_poll_notice(forge text, owner text, repo text, poller text, moved_to text,
                                            warning text) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
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
$$;
COMMENT ON FUNCTION tireless.record_poll_notice(text, text, text, text, text, text) IS
    'What a read of a repository whose poll lease poller holds has to report beside its issues: the owner/name '
    'the forge now gives it (moved_to; its tracked name clears it) and a warning (say an issue skipped as too '
    'large); a null leaves that one as it was. TL004 without the lease, TL008 for an untracked repository.';
REVOKE ALL ON FUNCTION tireless.record_poll_notice(text, text, text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_poll_notice(text, text, text, text, text, text) TO tireless_poller, tireless_admin;
