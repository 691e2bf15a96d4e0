-- The work graph's notes on the forge (issue 35): the comment that tells each issue of a dependency
-- cycle about it (queued by settle_dependencies), and the edits that keep a plan's outcome comment's
-- checklist of children current. The store decides what to say; the mirror only talks to the forge,
-- finding what it already wrote by a marker in a comment of its own forge account.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.cycle_marker(report_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:cycle:%s -->', cycle_marker.report_id);
COMMENT ON FUNCTION tireless.cycle_marker(bigint) IS
    'The hidden last line of the comment that reports a dependency cycle on an issue (tireless.cycle_report); the '
    'mirror counts it only in a comment written by its own forge account.';
REVOKE ALL ON FUNCTION tireless.cycle_marker(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.cycle_report_text(report tireless.cycle_report) RETURNS text
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
COMMENT ON FUNCTION tireless.cycle_report_text(tireless.cycle_report) IS
    'The comment that reports a dependency cycle on one of its issues: the cycle (`#3 → #4 → #3`, made safe by '
    'safe_comment_text), that none of its jobs runs until a person breaks it and how (a `Depends on` line, or the '
    'forge''s relation), and the marker line (tireless.cycle_marker).';
REVOKE ALL ON FUNCTION tireless.cycle_report_text(tireless.cycle_report) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.cycle_reports_due(forge text, owner text, repo text, poller text, max_reports integer DEFAULT 100)
    RETURNS TABLE (report_id bigint, number integer, body text, marker text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF cycle_reports_due.max_reports IS NULL OR cycle_reports_due.max_reports NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_reports must be from 1 to 10000, got %', coalesce(cycle_reports_due.max_reports::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(cycle_reports_due.forge, cycle_reports_due.owner, cycle_reports_due.repo,
                               cycle_reports_due.poller);
    RETURN QUERY
    SELECT r.id, r.number, tireless.cycle_report_text(r), tireless.cycle_marker(r.id)
      FROM tireless.cycle_report r
     CROSS JOIN tireless.policy p
     WHERE (r.forge, r.owner, r.repo) = (cycle_reports_due.forge, cycle_reports_due.owner, cycle_reports_due.repo)
       AND r.written_at IS NULL AND r.broken_at IS NULL AND r.next_try_at <= now()
       AND p.mirror_comments AND tireless.mirror_may_write(r.forge, r.owner, r.repo, r.number)
     ORDER BY r.next_try_at, r.id
     LIMIT cycle_reports_due.max_reports;
END;
$$;
COMMENT ON FUNCTION tireless.cycle_reports_due(text, text, text, text, integer) IS
    'For a poller holding the repository''s poll lease: the dependency-cycle comments still to write (at most '
    'max_reports), oldest first: the report, its issue, the body (tireless.cycle_report_text) ending with its marker '
    'line, and the marker. A cycle broken before its comment was written is not listed. Nothing while comments are '
    'off (set_mirror_comments); none for a gone issue or, for a day, an archived repository (tireless.mirror_may_write). '
    'TL004 without the lease.';
REVOKE ALL ON FUNCTION tireless.cycle_reports_due(text, text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.cycle_reports_due(text, text, text, text, integer) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.record_cycle_report(
    forge text, owner text, repo text, poller text, report_id bigint, error text DEFAULT NULL
) RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    queued tireless.cycle_report;
    until timestamptz;
BEGIN
    IF record_cycle_report.error IS NOT NULL AND btrim(record_cycle_report.error) = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', quote_literal(record_cycle_report.error) USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_cycle_report.forge, record_cycle_report.owner, record_cycle_report.repo,
                               record_cycle_report.poller);
    SELECT * INTO queued FROM tireless.cycle_report r
     WHERE r.id = record_cycle_report.report_id
       AND (r.forge, r.owner, r.repo) = (record_cycle_report.forge, record_cycle_report.owner, record_cycle_report.repo)
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no cycle report % queued for %/%/%', coalesce(record_cycle_report.report_id::text, 'null'),
            record_cycle_report.forge, record_cycle_report.owner, record_cycle_report.repo
            USING ERRCODE = 'TL005', HINT = 'Record the reports cycle_reports_due returned.';
    END IF;
    IF record_cycle_report.error IS NULL THEN
        UPDATE tireless.cycle_report r
           SET written_at = coalesce(r.written_at, now()), last_error = NULL, last_error_at = NULL
         WHERE r.id = queued.id;
        PERFORM tireless.repo_writable(queued.forge, queued.owner, queued.repo);
        RETURN NULL;
    END IF;
    -- 15 s doubling per failure in a row, capped at an hour, jittered to between half and all of it.
    until := now() + least(interval '1 hour', interval '15 seconds' * (2::float8 ^ least(queued.failures, 20)))
                     * (0.5 + random() / 2);
    UPDATE tireless.cycle_report r
       SET failures = r.failures + 1, next_try_at = until,
           last_error = left(btrim(record_cycle_report.error), 2000), last_error_at = now()
     WHERE r.id = queued.id;
    RETURN until;
END;
$$;
COMMENT ON FUNCTION tireless.record_cycle_report(text, text, text, text, bigint, text) IS
    'The forge confirmed the comment of cycle report report_id (error null: recorded as written, never listed again; '
    'returns null), or posting it failed (error: counted, backed off exponentially with jitter; returns when it is '
    'tried again). TL004 without the poll lease, TL005 for a report never queued.';
REVOKE ALL ON FUNCTION tireless.record_cycle_report(text, text, text, text, bigint, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_cycle_report(text, text, text, text, bigint, text) TO tireless_poller;

-- The outcome comment of a delivered plan (or discovery) lists its children (mirror_comments_due);
-- while one of them is unchecked, each round compares the checklist the store computes now with the
-- one last written, and the mirror edits the comment when they differ.
CREATE OR REPLACE FUNCTION tireless.mirror_checklists_due(forge text, owner text, repo text, poller text, max_edits integer DEFAULT 100)
    RETURNS TABLE (job_id bigint, number integer, body text, marker text, checklist text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF mirror_checklists_due.max_edits IS NULL OR mirror_checklists_due.max_edits NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_edits must be from 1 to 10000, got %', coalesce(mirror_checklists_due.max_edits::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(mirror_checklists_due.forge, mirror_checklists_due.owner, mirror_checklists_due.repo,
                               mirror_checklists_due.poller);
    RETURN QUERY
    SELECT c.job_id, c.number,
           tireless.finished_job_comment(j) || E'\n\n' || fresh.checklist || E'\n\n' || tireless.comment_marker(j.id),
           tireless.comment_marker(j.id), fresh.checklist
      FROM tireless.mirror_comment c
      JOIN tireless.job j ON j.id = c.job_id
     CROSS JOIN tireless.policy p
     CROSS JOIN LATERAL (SELECT tireless.children_checklist(j) AS checklist) AS fresh
     WHERE (c.forge, c.owner, c.repo) = (mirror_checklists_due.forge, mirror_checklists_due.owner, mirror_checklists_due.repo)
       -- The partial index mirror_checklists_open: a checklist with every child checked is final.
       AND c.checklist IS NOT NULL AND strpos(c.checklist, '- [ ] ') > 0
       AND c.written_at IS NOT NULL AND c.checklist_next_try_at <= now() AND p.mirror_comments
       AND fresh.checklist IS NOT NULL AND fresh.checklist <> c.checklist
       AND tireless.mirror_may_write(c.forge, c.owner, c.repo, c.number)
     ORDER BY c.checklist_next_try_at, c.job_id
     LIMIT mirror_checklists_due.max_edits;
END;
$$;
COMMENT ON FUNCTION tireless.mirror_checklists_due(text, text, text, text, integer) IS
    'For a poller holding the repository''s poll lease: the outcome comments whose checklist of children '
    '(tireless.children_checklist) differs from the one last written (at most max_edits), while the written one '
    'still has an unchecked child: the job, its issue, the whole new body ending with the marker line (at most '
    'tireless.forge_body_limit() characters, as mirror_comments_due''s), the marker, '
    'and the new checklist. An unchanged checklist is not listed, so it costs the forge no request; nor is one of a '
    'gone issue or, for a day, an archived repository (tireless.mirror_may_write). TL004 without the lease.';
REVOKE ALL ON FUNCTION tireless.mirror_checklists_due(text, text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.mirror_checklists_due(text, text, text, text, integer) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.record_mirror_checklist(
    forge text, owner text, repo text, poller text, job_id bigint, checklist text, error text DEFAULT NULL
) RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    queued tireless.mirror_comment;
    until timestamptz;
BEGIN
    IF record_mirror_checklist.error IS NOT NULL AND btrim(record_mirror_checklist.error) = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', quote_literal(record_mirror_checklist.error) USING ERRCODE = 'TL005';
    END IF;
    IF record_mirror_checklist.error IS NULL AND (record_mirror_checklist.checklist IS NULL
                                                  OR btrim(record_mirror_checklist.checklist) = '') THEN
        RAISE EXCEPTION 'checklist must be the text written, got %', coalesce(quote_literal(record_mirror_checklist.checklist), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_mirror_checklist.forge, record_mirror_checklist.owner, record_mirror_checklist.repo,
                               record_mirror_checklist.poller);
    SELECT * INTO queued FROM tireless.mirror_comment c
     WHERE c.job_id = record_mirror_checklist.job_id
       AND (c.forge, c.owner, c.repo) = (record_mirror_checklist.forge, record_mirror_checklist.owner, record_mirror_checklist.repo)
       AND c.written_at IS NOT NULL AND c.checklist IS NOT NULL
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % of %/%/% has no outcome comment with a checklist written',
            coalesce(record_mirror_checklist.job_id::text, 'null'),
            record_mirror_checklist.forge, record_mirror_checklist.owner, record_mirror_checklist.repo
            USING ERRCODE = 'TL005', HINT = 'Record the edits mirror_checklists_due returned.';
    END IF;
    IF record_mirror_checklist.error IS NULL THEN
        UPDATE tireless.mirror_comment c
           SET checklist = record_mirror_checklist.checklist, checklist_written_at = now(), checklist_failures = 0,
               checklist_next_try_at = now(), checklist_error = NULL, checklist_error_at = NULL
         WHERE c.job_id = queued.job_id;
        PERFORM tireless.repo_writable(queued.forge, queued.owner, queued.repo);
        RETURN NULL;
    END IF;
    -- 15 s doubling per failure in a row, capped at an hour, jittered to between half and all of it.
    until := now() + least(interval '1 hour', interval '15 seconds' * (2::float8 ^ least(queued.checklist_failures, 20)))
                     * (0.5 + random() / 2);
    UPDATE tireless.mirror_comment c
       SET checklist_failures = c.checklist_failures + 1, checklist_next_try_at = until,
           checklist_error = left(btrim(record_mirror_checklist.error), 2000), checklist_error_at = now()
     WHERE c.job_id = queued.job_id;
    RETURN until;
END;
$$;
COMMENT ON FUNCTION tireless.record_mirror_checklist(text, text, text, text, bigint, text, text) IS
    'The forge shows job_id''s outcome comment with checklist (error null: recorded as the one written, so it is '
    'listed again only when the children change; returns null), or editing it failed (error: counted, backed off '
    'exponentially with jitter; returns when it is tried again). TL004 without the poll lease, TL005 for a comment '
    'never written with a checklist.';
REVOKE ALL ON FUNCTION tireless.record_mirror_checklist(text, text, text, text, bigint, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_mirror_checklist(text, text, text, text, bigint, text, text) TO tireless_poller;

-- For psql users: a plan's children as its checklist says them, and the cycles told on the forge.
CREATE OR REPLACE FUNCTION tireless.job_checklist(job_id bigint)
    RETURNS TABLE (task integer, child_number integer, title text, done boolean, status text,
                   written_at timestamptz, shown boolean)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION tireless.job_checklist(bigint) IS
    'The children a delivered plan job (or the proposals a discover job) opened, as its outcome comment''s checklist '
    'says them now (tireless.child_status: done, the words, the title), when the mirror last wrote the checklist on '
    'the forge, and whether the forge shows this line as it is now (false: an edit is due, or the comment is not '
    'written yet). No row: the job opened no children.';
REVOKE ALL ON FUNCTION tireless.job_checklist(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_checklist(bigint) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE VIEW tireless.cycle_reports AS
SELECT r.forge, r.owner, r.repo, r.number, r.cycle, r.job_id, r.queued_at, r.written_at, r.broken_at,
       r.failures, r.next_try_at, r.last_error
  FROM tireless.cycle_report r;
COMMENT ON VIEW tireless.cycle_reports IS
    'Each dependency cycle told (or still to tell) on an issue of it: the cycle as the issue''s job note names it, '
    'the job found waiting on it, when it was found, when the mirror''s comment was written (null: still to write), '
    'when the cycle was broken (then a comment not yet written is dropped, and the same cycle made again is told '
    'again), and the retries of a failing post.';
REVOKE ALL ON tireless.cycle_reports FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.cycle_reports TO tireless_runner, tireless_poller, tireless_admin;
