-- The operator's reads of jobs: the job list under its filters, the one function `tireless jobs`,
-- the dashboard's job list and the demo call, so that a filter means the same everywhere. One job
-- is a row of tireless.job_list (dashboard.sql); its history is tireless.job_history (history.sql).
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- The filters alone, inlined into tireless.list_jobs's queries (a LANGUAGE sql function without
-- SECURITY DEFINER or SET is), so a page in id order walks the primary key.
CREATE OR REPLACE FUNCTION tireless.jobs_matching(
        state tireless.job_state, lane text, kind tireless.job_kind, forge text, owner text, repo text,
        since interval, words text[], worker text, number integer, after bigint, before bigint)
    RETURNS SETOF tireless.job_list
    LANGUAGE sql STABLE
AS $$
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
$$;
COMMENT ON FUNCTION tireless.jobs_matching(tireless.job_state, text, tireless.job_kind, text, text, text, interval, text[], text, integer, bigint, bigint) IS
    'The rows of tireless.job_list that every given filter keeps (null: no filter), unchecked and unordered: '
    'tireless.list_jobs checks the filters, then orders and pages these.';
REVOKE ALL ON FUNCTION tireless.jobs_matching(tireless.job_state, text, tireless.job_kind, text, text, text, interval, text[], text, integer, bigint, bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- Every filter is optional (null keeps every job) and all given must hold; a filter that cannot
-- name anything is refused (TL005) rather than answered with no rows.
CREATE OR REPLACE FUNCTION tireless.list_jobs(
        state text DEFAULT NULL, lane text DEFAULT NULL, kind text DEFAULT NULL,
        forge text DEFAULT NULL, owner text DEFAULT NULL, repo text DEFAULT NULL,
        since interval DEFAULT NULL, words text[] DEFAULT NULL, worker text DEFAULT NULL,
        number integer DEFAULT NULL, after bigint DEFAULT NULL, before bigint DEFAULT NULL,
        newest boolean DEFAULT false, at_most integer DEFAULT 100)
    RETURNS SETOF tireless.job_list
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    -- Each page planned for its own filters (a null filter folds away), never one generic plan.
    SET plan_cache_mode = force_custom_plan
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
COMMENT ON FUNCTION tireless.list_jobs(text, text, text, text, text, text, interval, text[], text, integer, bigint, bigint, boolean, integer) IS
    'The job list as operators filter it (`tireless jobs`, the dashboard): rows of tireless.job_list, oldest first '
    '(newest: newest first), at most at_most of them, with ids above after and below before (keyset paging). '
    'Each filter given must hold: state, kind, lane, forge, the repository (owner and repo together), since (changed '
    'in that long), words (the title holds every one, in any case), worker (holds the job, or ran an attempt of it), '
    'number (the issue''s). A filter that cannot name anything is refused with TL005 naming the value.';
REVOKE ALL ON FUNCTION tireless.list_jobs(text, text, text, text, text, text, interval, text[], text, integer, bigint, bigint, boolean, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.list_jobs(text, text, text, text, text, text, interval, text[], text, integer, bigint, bigint, boolean, integer) TO tireless_runner, tireless_poller, tireless_admin;
