-- The argument checks: each raises its own SQLSTATE with a message naming the bad value.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.is_terminal(state tireless.job_state) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN state IN ('delivered', 'failed', 'cancelled');
COMMENT ON FUNCTION tireless.is_terminal(tireless.job_state) IS
    'True for the states a job never leaves: delivered, failed, cancelled.';
REVOKE ALL ON FUNCTION tireless.is_terminal(tireless.job_state) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.is_terminal(tireless.job_state) TO tireless_runner, tireless_poller;

CREATE OR REPLACE FUNCTION tireless.is_lane_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$';
COMMENT ON FUNCTION tireless.is_lane_name(text) IS
    'True when a text can name a lane: 1 to 63 letters, digits, dot, dash or underscore, starting with a letter or digit.';
REVOKE ALL ON FUNCTION tireless.is_lane_name(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.is_lane_name(text) TO tireless_runner, tireless_poller;

CREATE OR REPLACE FUNCTION tireless.check_worker(worker text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF NOT tireless.is_worker_name(worker) THEN
        RAISE EXCEPTION 'worker must be a name of 1 to 200 characters, got %', coalesce(quote_literal(left(worker, 220)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_worker(text) IS
    'Raises TL005 unless worker is a non-blank name of at most 200 characters (tireless.is_worker_name).';
REVOKE ALL ON FUNCTION tireless.check_worker(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.check_lease(lease interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF NOT tireless.is_lease(lease) THEN
        RAISE EXCEPTION 'lease must be more than 0 and at most 1 day, got %', coalesce(lease::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'A long run keeps its lease by renewing it.';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_lease(interval) IS 'Raises TL005 unless 0 < lease <= 1 day (tireless.is_lease).';
REVOKE ALL ON FUNCTION tireless.check_lease(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.check_lane(lane text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF lane IS NULL OR NOT tireless.is_lane_name(lane) THEN
        RAISE EXCEPTION 'lane must be 1 to 63 letters, digits, ".", "-" or "_", got %', coalesce(quote_literal(left(lane, 80)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_lane(text) IS 'Raises TL005 unless lane is a lane name.';
REVOKE ALL ON FUNCTION tireless.check_lane(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.parse_state(name text) RETURNS tireless.job_state
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
COMMENT ON FUNCTION tireless.parse_state(text) IS 'The job state named by a text; TL005 for an unknown name.';
REVOKE ALL ON FUNCTION tireless.parse_state(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.parse_kind(name text) RETURNS tireless.job_kind
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
COMMENT ON FUNCTION tireless.parse_kind(text) IS 'The job kind named by a text; TL005 for an unknown name.';
REVOKE ALL ON FUNCTION tireless.parse_kind(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.check_repo(forge text, owner text, repo text) RETURNS void
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
COMMENT ON FUNCTION tireless.check_repo(text, text, text) IS
    'Raises TL005 unless forge (1-100 characters), owner and repo (1-200 each) are given.';
REVOKE ALL ON FUNCTION tireless.check_repo(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- Issue format: url and updated_at join it. Both checks below are single expressions without
-- subqueries, so the planner inlines them (and issue_problem) into the query that checks a batch:
-- a function call per element would cost more than the whole work rule.
CREATE OR REPLACE FUNCTION tireless.is_forge_timestamp(value text) RETURNS boolean
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
REVOKE ALL ON FUNCTION tireless.is_forge_timestamp(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A repository the store tracks, or TL008.
CREATE OR REPLACE FUNCTION tireless.check_tracked(forge text, owner text, repo text) RETURNS void
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
REVOKE ALL ON FUNCTION tireless.check_tracked(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The argument rules as expressions: a function on the hot path tests them inline (no call, no
-- statement) and calls the check, which raises the error naming the value, only when they fail.
CREATE OR REPLACE FUNCTION tireless.is_worker_name(worker text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN worker IS NOT NULL AND btrim(worker) <> '' AND length(worker) <= 200;
COMMENT ON FUNCTION tireless.is_worker_name(text) IS
    'True when a text can name a worker: not blank, at most 200 characters (false for null).';
REVOKE ALL ON FUNCTION tireless.is_worker_name(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.is_lease(lease interval) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN lease IS NOT NULL AND lease > interval '0' AND lease <= interval '1 day';
COMMENT ON FUNCTION tireless.is_lease(interval) IS 'True when 0 < lease <= 1 day (false for null).';
REVOKE ALL ON FUNCTION tireless.is_lease(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- Durations as people write them in notes: 2h, 30m, 1h30m, 45s, 1d, 250ms.
CREATE OR REPLACE FUNCTION tireless.short_duration(span interval) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN s.total = 0 THEN round(extract(epoch FROM span) * 1000)::bigint || 'ms'
                ELSE concat(nullif(s.total / 86400, 0) || 'd', nullif(s.total % 86400 / 3600, 0) || 'h',
                            nullif(s.total % 3600 / 60, 0) || 'm', nullif(s.total % 60, 0) || 's') END
      FROM (SELECT floor(extract(epoch FROM span))::bigint AS total) AS s;
$$;
COMMENT ON FUNCTION tireless.short_duration(interval) IS
    'An interval written short, as the watchdog''s notes show it: 2h, 30m, 1h30m, 45s, 1d, 250ms (whole seconds above one second).';
REVOKE ALL ON FUNCTION tireless.short_duration(interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.tracked_key(forge text, owner text, repo text)
    RETURNS TABLE (forge text, owner text, repo text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t
     WHERE t.forge = tracked_key.forge
       AND lower(t.owner) = lower(tracked_key.owner) AND lower(t.repo) = lower(tracked_key.repo);
$$;
COMMENT ON FUNCTION tireless.tracked_key(text, text, text) IS
    'The key a repository is tracked under, matching owner and name without case (a webhook names it in the '
    'forge''s canonical case); no row when it is not tracked.';
REVOKE ALL ON FUNCTION tireless.tracked_key(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.tracked_key(text, text, text) TO tireless_runner, tireless_poller, tireless_admin;

-- What a delivery and a checkpoint name: the same rules as the constraints of tireless.delivery and
-- tireless.checkpoint (0027_delivery), tested here first so that a refusal names the value (TL009)
-- and changes nothing; tests/sql/test_delivery.py proves the function and the constraints agree.
CREATE OR REPLACE FUNCTION tireless.is_ref_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN name ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'
           AND name !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$' AND name <> '@';
COMMENT ON FUNCTION tireless.is_ref_name(text) IS
    'True when a text is a git ref name as git check-ref-format allows one (no blank or control character, no '
    '~ ^ : ? * [ \, no .. or @{, no component starting with . or ending with .lock, not starting with - or /, '
    'not ending with / or .), of at most 255 characters and without `, <, > or " (so it quotes safely in '
    'markdown and HTML); null for null.';
REVOKE ALL ON FUNCTION tireless.is_ref_name(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.is_commit_id(id text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN id ~ '^([0-9a-f]{40}|[0-9a-f]{64})$';
COMMENT ON FUNCTION tireless.is_commit_id(text) IS
    'True when a text is a full commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits; null for null.';
REVOKE ALL ON FUNCTION tireless.is_commit_id(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.check_ref_name(what text, name text) RETURNS void
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
COMMENT ON FUNCTION tireless.check_ref_name(text, text) IS
    'Raises TL009 naming the argument (what) and its value unless name is a ref name (tireless.is_ref_name).';
REVOKE ALL ON FUNCTION tireless.check_ref_name(text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.check_commit_id(what text, id text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF id IS NULL OR NOT tireless.is_commit_id(id) THEN
        RAISE EXCEPTION '% must be a full commit id, got %', what, coalesce(quote_literal(left(id, 100)), 'null')
            USING ERRCODE = 'TL009', HINT = 'A commit id is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits: git rev-parse HEAD.';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_commit_id(text, text) IS
    'Raises TL009 naming the argument (what) and its value unless id is a full commit id (tireless.is_commit_id).';
REVOKE ALL ON FUNCTION tireless.check_commit_id(text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A repository's delivery policy: its path globs (tireless.repo_delivery).
CREATE OR REPLACE FUNCTION tireless.check_path_globs(what text, globs text[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
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
$$;
COMMENT ON FUNCTION tireless.check_path_globs(text, text[]) IS
    'Raises TL005 naming the setting (what) and the glob unless globs is null or a list of at most 100 path '
    'globs, each 1 to 255 characters, no control character, not starting with /.';
REVOKE ALL ON FUNCTION tireless.check_path_globs(text, text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
