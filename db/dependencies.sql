-- Dependencies gate claims (docs/work-rule.md, "Dependencies"): what each issue depends on, which
-- pending jobs wait for an open dependency, and the cycles among them.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).
--
-- A waiting job is pending with job.waiting_on set. The claim's indexes (pending_jobs_in_claim_order,
-- pending_jobs_in_repo_order) hold only pending jobs that wait for nothing, and every claim names
-- `waiting_on IS NULL`: a claim never reads a waiting job, however many wait. Its available_at (a
-- backoff) is left as it is, so releasing it needs nothing kept aside.

-- How a dependency is written on the job and in its note: #N in the issue's own repository, else owner/repo#N.
CREATE OR REPLACE FUNCTION tireless.issue_ref(owner text, repo text, to_owner text, to_repo text, to_number integer)
    RETURNS text
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN (issue_ref.owner, issue_ref.repo) = (issue_ref.to_owner, issue_ref.to_repo) THEN ''
                ELSE issue_ref.to_owner || '/' || issue_ref.to_repo END
           || '#' || issue_ref.to_number;
$$;
COMMENT ON FUNCTION tireless.issue_ref(text, text, text, text, integer) IS
    'How an issue of owner/repo names issue to_number of to_owner/to_repo: #N in its own repository, else owner/repo#N.';
REVOKE ALL ON FUNCTION tireless.issue_ref(text, text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.issue_ref(text, text, text, text, integer) TO tireless_runner, tireless_poller, tireless_admin;

-- The lines of a body that say `Depends on ...`: any case, at the start of a line (after spaces,
-- `>`, `-` or `*`), each naming one or more issues (#3, owner/repo#7, "#3, #7", "#3 and #7").
CREATE OR REPLACE FUNCTION tireless.body_dependencies(body text, owner text, repo text, number integer)
    RETURNS TABLE (depends_on_owner text, depends_on_repo text, depends_on_number integer)
    LANGUAGE sql IMMUTABLE
AS $$
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
$$;
COMMENT ON FUNCTION tireless.body_dependencies(text, text, text, integer) IS
    'The issues a body says issue number of owner/repo depends on: each `Depends on #N` or `Depends on owner/repo#N` '
    '(any case, several per line and per body; the same forge), not the issue itself, at most 100.';
REVOKE ALL ON FUNCTION tireless.body_dependencies(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.body_dependencies(text, text, text, integer) TO tireless_runner, tireless_poller, tireless_admin;

-- Open: not seen closed. An issue the store has never read is open until it is read.
CREATE OR REPLACE FUNCTION tireless.open_dependencies(forge text, owner text, repo text, number integer) RETURNS text[]
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
COMMENT ON FUNCTION tireless.open_dependencies(text, text, text, integer) IS
    'The dependencies of an issue that are still open (not seen closed: one never read is open), as #N or '
    'owner/repo#N, its own repository first; null when none is open.';
REVOKE ALL ON FUNCTION tireless.open_dependencies(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The shortest way back to the issue along open dependencies, breadth first (at most 20 steps).
CREATE OR REPLACE FUNCTION tireless.dependency_cycle(forge text, owner text, repo text, number integer) RETURNS text
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
COMMENT ON FUNCTION tireless.dependency_cycle(text, text, text, integer) IS
    'The cycle of open dependencies the issue is on, as `#3 → #4 → #3` (the shortest, at most 20 steps); null when '
    'it is on none.';
REVOKE ALL ON FUNCTION tireless.dependency_cycle(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.waiting_note(waiting_on text[], cycle text) RETURNS text
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT left('waiting on ' || array_to_string(waiting_note.waiting_on, ', ')
           || CASE WHEN waiting_note.cycle IS NOT NULL
                   THEN ' (a cycle: ' || waiting_note.cycle || '; break it on the forge)' ELSE '' END, 2000);
$$;
COMMENT ON FUNCTION tireless.waiting_note(text[], text) IS
    'The note of a waiting job: `waiting on #3, #7`, and the cycle it is on, if any.';
REVOKE ALL ON FUNCTION tireless.waiting_note(text[], text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- After the work rule has stored a batch: the body's dependencies of each issue in touched whose body
-- was given, then the pending jobs of those issues and of the issues that depend on them wait or
-- are released. touched: [{forge, owner, repo, number, body}] (body: true when the body was shown).
-- A job whose last dependency closed is claimable in this transaction, and its lane is woken.
CREATE OR REPLACE FUNCTION tireless.settle_dependencies(touched jsonb) RETURNS integer
    LANGUAGE plpgsql VOLATILE
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
        SELECT t.forge, t.owner, t.repo, t.number, b.depends_on_owner, b.depends_on_repo, b.depends_on_number
          FROM t
          JOIN tireless.issue s ON (s.forge, s.owner, s.repo, s.number) = (t.forge, t.owner, t.repo, t.number)
         CROSS JOIN LATERAL tireless.body_dependencies(s.body, t.owner, t.repo, t.number) AS b
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
        SELECT j.id, w.waiting_on,
               CASE WHEN w.waiting_on IS NOT NULL
                    THEN tireless.waiting_note(w.waiting_on, tireless.dependency_cycle(j.forge, j.owner, j.repo, j.number))
                    WHEN j.note LIKE 'waiting on %' THEN NULL
                    ELSE j.note END AS note
          FROM affected a
          JOIN tireless.job j ON (j.forge, j.owner, j.repo, j.number) = (a.forge, a.owner, a.repo, a.number)
         CROSS JOIN LATERAL (SELECT tireless.open_dependencies(j.forge, j.owner, j.repo, j.number)) AS w(waiting_on)
         WHERE j.state = 'pending'
    ), changed AS (
        UPDATE tireless.job j
           SET waiting_on = jd.waiting_on, note = jd.note, updated_at = now()
          FROM judged jd
         WHERE j.id = jd.id AND j.state = 'pending'
           AND (j.waiting_on, j.note) IS DISTINCT FROM (jd.waiting_on, jd.note)
        RETURNING j.id, j.forge, j.owner, j.repo, j.number, j.lane, jd.waiting_on IS NULL AS free
    ), mirrored AS (
        -- The mirror shows <prefix>/state:waiting while the job waits (no event: the job stays pending).
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
COMMENT ON FUNCTION tireless.settle_dependencies(jsonb) IS
    'After the work rule stored a batch (touched: [{forge, owner, repo, number, body}]): records the `Depends on` '
    'lines of each body shown, then sets job.waiting_on (and the note `waiting on #3, #7`, with the cycle if any) '
    'of the pending jobs of those issues and of the issues that depend on them; a job whose dependencies have all '
    'closed is released and its lane woken. Returns how many jobs it released. Private: apply_work_rule calls it.';
REVOKE ALL ON FUNCTION tireless.settle_dependencies(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.job_waits(job_id bigint)
    RETURNS TABLE (depends_on text, state text, source text, cycle text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT tireless.issue_ref(d.owner, d.repo, d.depends_on_owner, d.depends_on_repo, d.depends_on_number),
           coalesce(s.state, 'unseen'),
           string_agg(d.source, ', ' ORDER BY d.source),
           tireless.dependency_cycle(j.forge, j.owner, j.repo, j.number)
      FROM tireless.job j
      JOIN tireless.issue_dependency d ON (d.forge, d.owner, d.repo, d.number) = (j.forge, j.owner, j.repo, j.number)
      LEFT JOIN tireless.issue s
             ON (s.forge, s.owner, s.repo, s.number) = (d.forge, d.depends_on_owner, d.depends_on_repo, d.depends_on_number)
     WHERE j.id = job_waits.job_id
     GROUP BY j.forge, j.owner, j.repo, j.number, d.owner, d.repo, d.depends_on_owner, d.depends_on_repo, d.depends_on_number, s.state
     ORDER BY (d.depends_on_owner, d.depends_on_repo) <> (d.owner, d.repo), d.depends_on_owner, d.depends_on_repo, d.depends_on_number;
$$;
COMMENT ON FUNCTION tireless.job_waits(bigint) IS
    'The dependencies of a job''s issue: each as #N or owner/repo#N, its state as last seen (open, closed, or unseen: '
    'never read, so open), where it was said (body, forge) and the cycle of open dependencies the issue is on, if any. '
    'No row: the issue depends on nothing. Why a job waits, for psql users and tireless show.';
REVOKE ALL ON FUNCTION tireless.job_waits(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_waits(bigint) TO tireless_runner, tireless_poller, tireless_admin;
