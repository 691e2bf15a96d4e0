-- Outcomes per agent (issue 48, item 6): what became of the pull requests tireless opened, as the
-- poller reads it from the forge (record_pull_outcomes), and the figures per lane (which is per
-- agent) and repository over a window (pull_outcomes): opened, merged, closed unmerged, still open,
-- revisions, time to merge, and what a merged pull request cost.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- Why one element of a record_pull_outcomes batch is malformed, or null when it is well formed.
CREATE OR REPLACE FUNCTION tireless.pull_fate_problem(fate jsonb) RETURNS text
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
COMMENT ON FUNCTION tireless.pull_fate_problem(jsonb) IS
    'Why one element of a record_pull_outcomes batch is malformed ({pull, state: open|closed, merged_at, closed_at}), '
    'or null when it is well formed.';
REVOKE ALL ON FUNCTION tireless.pull_fate_problem(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_pull_outcomes(forge text, owner text, repo text, poller text, pulls jsonb)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.record_pull_outcomes(text, text, text, text, jsonb) IS
    'For a poller holding the repository''s poll lease: what its issue listing showed of pull requests '
    '([{pull, state: open|closed, merged_at, closed_at}]), kept for those tireless opened (a delivery''s pull_number): '
    'merged, closed unmerged, or open again. Returns how many changed. TL005 names the first malformed element and '
    'records nothing; TL004 without the lease, TL008 for an untracked repository.';
REVOKE ALL ON FUNCTION tireless.record_pull_outcomes(text, text, text, text, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_pull_outcomes(text, text, text, text, jsonb) TO tireless_poller;

-- The figures: each pull request opened in the window (its first delivery's pull_known_at), under
-- the lane of the job that opened it, and its fate as of `at`.
CREATE OR REPLACE FUNCTION tireless.pull_outcomes(since interval DEFAULT interval '7 days', at timestamptz DEFAULT NULL)
    RETURNS TABLE (lane text, forge text, owner text, repo text, opened bigint, merged bigint, closed bigint,
                   still_open bigint, revisions bigint, revisions_per_pull numeric,
                   merge_seconds_sum double precision, merge_seconds_median double precision,
                   merge_seconds_mean double precision, merged_tokens bigint, merged_cost numeric,
                   tokens_per_merged numeric, cost_per_merged numeric, unpriced boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.pull_outcomes(interval, timestamptz) IS
    'Per lane (which is per agent) and repository, the pull requests tireless opened in the window before `at` '
    '(since: 7 days unless told, null for every one the store keeps; at: now unless told) and their fate as of '
    '`at`: opened, merged, closed unmerged, still open; the revision jobs the conversation made for them (and per '
    'pull request); seconds from open to merge (sum, median, mean); and the tokens and USD of every job of a merged '
    'one''s issue made before its merge (in all and per merged pull request; unpriced: some model had no price). '
    'TL005 for a window that is not positive.';
REVOKE ALL ON FUNCTION tireless.pull_outcomes(interval, timestamptz) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.pull_outcomes(interval, timestamptz) TO tireless_runner, tireless_poller, tireless_admin;
