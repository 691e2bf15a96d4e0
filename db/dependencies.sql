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

-- A dependency in a repository tireless does not track is never read, so it stays open: the note
-- says so, with what to do.
CREATE OR REPLACE FUNCTION tireless.waiting_note(forge text, waiting_on text[], cycle text) RETURNS text
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
COMMENT ON FUNCTION tireless.waiting_note(text, text[], text) IS
    'The note of a waiting job of forge: `waiting on #3, #7`, the cycle it is on, if any, and the repositories of '
    'its dependencies that are not tracked (never read, so open until tracked).';
REVOKE ALL ON FUNCTION tireless.waiting_note(text, text[], text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The forge's own relations (Gitea and Forgejo issue dependencies, GitHub's blocked-by and
-- sub-issues), as the poller read them this round: each issue of the batch given with "depends_on"
-- (checked by check_issue_batch: tireless.depends_on_problem) has its source = 'forge' rows replaced;
-- an issue given without it keeps those stored (not read this round). An entry naming the issue
-- itself is dropped. Returns the issues whose relations changed, in settle_dependencies' shape, so
-- that they are settled even when the issue row itself was shown unchanged (a GitHub dependency
-- change does not move the issue's updated_at; Gitea sends no webhook for one).
CREATE OR REPLACE FUNCTION tireless.record_forge_dependencies(issues jsonb) RETURNS jsonb
    LANGUAGE sql VOLATILE
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
COMMENT ON FUNCTION tireless.record_forge_dependencies(jsonb) IS
    'For each issue of a checked batch given with "depends_on" ([{owner, repo, number}] of the same forge, as the '
    'poller read the forge''s own relations this round) in a tracked repository: replaces its source = forge rows of '
    'issue_dependency (an entry naming the issue itself dropped); an issue without the key keeps those stored. '
    'Returns the issues whose relations changed, [{forge, owner, repo, number, body: false}], for '
    'settle_dependencies. Private: apply_work_rule calls it.';
REVOKE ALL ON FUNCTION tireless.record_forge_dependencies(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

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
COMMENT ON FUNCTION tireless.settle_dependencies(jsonb) IS
    'After the work rule stored a batch (touched: [{forge, owner, repo, number, body}]): records the `Depends on` '
    'lines of each body shown, then sets job.waiting_on (and the note `waiting on #3, #7`, with the cycle if any) '
    'of the pending jobs of those issues and of the issues that depend on them; a job whose dependencies have all '
    'closed is released and its lane woken. A job found on a cycle has it reported once on its issue '
    '(tireless.cycle_report, a write of the outbox tireless.forge_write), again only after the cycle was broken. '
    'Returns how many jobs it released. Private: apply_work_rule calls it.';
REVOKE ALL ON FUNCTION tireless.settle_dependencies(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.job_waits(job_id bigint)
    RETURNS TABLE (depends_on text, state text, source text, cycle text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.job_waits(bigint) IS
    'The dependencies of a job''s issue: each as #N or owner/repo#N, its state as last seen (open, closed, unseen: '
    'never read yet, so open; untracked: in a repository tireless does not track, so never read and open), where it was said (body, forge) and the cycle of open dependencies the issue is on, if any. '
    'No row: the issue depends on nothing. Why a job waits, for psql users and tireless show.';
REVOKE ALL ON FUNCTION tireless.job_waits(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_waits(bigint) TO tireless_runner, tireless_poller, tireless_admin;
