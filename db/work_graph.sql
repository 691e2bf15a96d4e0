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

CREATE OR REPLACE FUNCTION tireless.cycle_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('report_id', r.id, 'number', r.number, 'body', tireless.cycle_report_text(r),
                              'marker', tireless.cycle_marker(r.id))
      FROM tireless.cycle_report r
     CROSS JOIN tireless.policy p
     WHERE r.id = w.report_id AND r.written_at IS NULL AND r.broken_at IS NULL AND p.mirror_comments;
$$;
COMMENT ON FUNCTION tireless.cycle_write(tireless.forge_write) IS
    'What a cycle write (kind cycle) posts, as tireless.forge_writes_due lists it: {report_id, number, body '
    '(tireless.cycle_report_text, ending with its marker line), marker}; null (not due) once the cycle is broken, or '
    'while comments are off (set_mirror_comments).';
REVOKE ALL ON FUNCTION tireless.cycle_write(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.cycle_written(w tireless.forge_write) RETURNS void
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    UPDATE tireless.cycle_report r SET written_at = coalesce(r.written_at, now()) WHERE r.id = w.report_id;
END;
COMMENT ON FUNCTION tireless.cycle_written(tireless.forge_write) IS
    'The forge shows the comment of the cycle report of write w: recorded as written.';
REVOKE ALL ON FUNCTION tireless.cycle_written(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The outcome comment of a delivered plan (or discovery) lists its children (tireless.comment_write);
-- while one of them is unchecked, each round compares the checklist the store computes now with the
-- one last written, and the mirror edits the comment when they differ.
CREATE OR REPLACE FUNCTION tireless.checklist_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('job_id', c.job_id, 'number', c.number,
                              'body', tireless.finished_job_comment(j) || E'\n\n' || fresh.checklist || E'\n\n'
                                      || tireless.comment_marker(j.id),
                              'marker', tireless.comment_marker(j.id), 'checklist', fresh.checklist)
      FROM tireless.mirror_comment c
      JOIN tireless.job j ON j.id = c.job_id
     CROSS JOIN tireless.policy p
     CROSS JOIN LATERAL (SELECT tireless.children_checklist(j) AS checklist) AS fresh
     WHERE c.job_id = w.job_id
       -- A checklist with every child checked is final.
       AND c.checklist IS NOT NULL AND strpos(c.checklist, '- [ ] ') > 0
       AND c.written_at IS NOT NULL AND p.mirror_comments
       AND fresh.checklist IS NOT NULL AND fresh.checklist <> c.checklist;
$$;
COMMENT ON FUNCTION tireless.checklist_write(tireless.forge_write) IS
    'What a checklist write (kind checklist) edits, as tireless.forge_writes_due lists it, when the outcome '
    'comment''s checklist of children (tireless.children_checklist) differs from the one last written, while the '
    'written one still has an unchecked child: {job_id, number, body (the whole new body ending with the marker '
    'line, at most tireless.forge_body_limit() characters, as comment_write''s), marker, checklist (the new one)}. '
    'An unchanged checklist is null (not due), so it costs the forge no request.';
REVOKE ALL ON FUNCTION tireless.checklist_write(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.checklist_written(w tireless.forge_write, result jsonb) RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    shown text := checklist_written.result ->> 'checklist';
BEGIN
    IF shown IS NULL OR btrim(shown) = '' THEN
        RAISE EXCEPTION 'checklist must be the text written, got %', coalesce(quote_literal(shown), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.mirror_comment c SET checklist = shown, checklist_written_at = now() WHERE c.job_id = w.job_id;
    RETURN strpos(shown, '- [ ] ') > 0;
END;
$$;
COMMENT ON FUNCTION tireless.checklist_written(tireless.forge_write, jsonb) IS
    'The forge shows the outcome comment of write w with result.checklist: recorded as the one written, so it is '
    'listed again only when the children change; returns whether the write stands (a child is still unchecked). '
    'TL005 without the checklist.';
REVOKE ALL ON FUNCTION tireless.checklist_written(tireless.forge_write, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

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
       coalesce(w.failures, 0) AS failures, coalesce(w.next_try_at, r.queued_at) AS next_try_at, w.last_error
  FROM tireless.cycle_report r
  LEFT JOIN tireless.forge_write w ON w.kind = 'cycle' AND w.report_id = r.id;
COMMENT ON VIEW tireless.cycle_reports IS
    'Each dependency cycle told (or still to tell) on an issue of it: the cycle as the issue''s job note names it, '
    'the job found waiting on it, when it was found, when the mirror''s comment was written (null: still to write), '
    'when the cycle was broken (then a comment not yet written is dropped, and the same cycle made again is told '
    'again), and the retries of a failing post.';
REVOKE ALL ON tireless.cycle_reports FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.cycle_reports TO tireless_runner, tireless_poller, tireless_admin;
