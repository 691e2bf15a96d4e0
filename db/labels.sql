-- A label under the prefix that names nothing (issue 50): `tireless/implment` asks for no work, and
-- nothing said so. The work rule finds such labels on the issues it judges (unknown_labels) and
-- queues one comment per issue and label (tireless.label_report, a write of the outbox of kind
-- unknown_label), which names the labels that do mean something; `tireless status` and the view
-- tireless.label_reports show them too. Never told twice: not on later polls, not after the label
-- was taken off and put back.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.unknown_labels(labels text[]) RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT l ORDER BY l), '{}')
      FROM tireless.mirror_labels() AS m
     CROSS JOIN unnest(coalesce(unknown_labels.labels, '{}')) AS l
     WHERE starts_with(l, m.prefix || '/')
       -- The mode labels match exactly (the work rule's rule): another case is a typo too.
       AND l <> ALL (m.mode_labels)
       -- The state labels are tireless's own, matched without case (GitHub's may come back so).
       AND lower(l) <> ALL (SELECT lower(s) FROM unnest(m.state_labels) AS s)
       AND NOT (starts_with(l, m.prefix || '/agent:')
                AND tireless.is_lane_name(substr(l, length(m.prefix || '/agent:') + 1)));
$$;
COMMENT ON FUNCTION tireless.unknown_labels(text[]) IS
    'The labels of a set under the label prefix (<prefix>/...) that name nothing tireless knows: no mode label '
    '(exactly: <prefix>/discover, <prefix>/plan, <prefix>/implement), no agent label of a valid lane '
    '(<prefix>/agent:<lane>), no state label (<prefix>/state/<state>, in any case); sorted, each once; empty when '
    'there is none. The opt-in label, the prefix itself, is no label under it.';
REVOKE ALL ON FUNCTION tireless.unknown_labels(text[]) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.unknown_labels(text[]) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.report_unknown_labels(touched jsonb) RETURNS integer
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    WITH found AS (
        INSERT INTO tireless.label_report (forge, owner, repo, number, label)
        SELECT s.forge, s.owner, s.repo, s.number, left(u.label, 255)
          FROM (SELECT DISTINCT x.forge, x.owner, x.repo, x.number
                  FROM jsonb_to_recordset(report_unknown_labels.touched) AS x(forge text, owner text, repo text, number integer)) AS t
          JOIN tireless.issue s ON (s.forge, s.owner, s.repo, s.number) = (t.forge, t.owner, t.repo, t.number)
         CROSS JOIN LATERAL unnest(tireless.unknown_labels(s.labels)) AS u(label)
         WHERE s.state = 'open' AND s.gone_at IS NULL
         ORDER BY s.forge, s.owner, s.repo, s.number, u.label
        ON CONFLICT (forge, owner, repo, number, label) DO NOTHING
        RETURNING label_report.id, label_report.forge, label_report.owner, label_report.repo, label_report.number
    ), queued AS (
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, label_id)
        SELECT 'unknown_label', f.forge, f.owner, f.repo, f.number, f.id FROM found f
        ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING
        RETURNING 1
    )
    SELECT count(*) FROM queued;
END;
COMMENT ON FUNCTION tireless.report_unknown_labels(jsonb) IS
    'For the issues the work rule judged ([{forge, owner, repo, number}]): each label of an open one that names '
    'nothing (tireless.unknown_labels) and was never reported on it gets its label report and the comment''s write of '
    'the outbox (kind unknown_label). Returns how many were queued. Private: apply_work_rule calls it.';
REVOKE ALL ON FUNCTION tireless.report_unknown_labels(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.label_marker(report_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:label:%s -->', label_marker.report_id);
COMMENT ON FUNCTION tireless.label_marker(bigint) IS
    'The hidden last line of the comment that reports a label naming nothing (tireless.label_report); the mirror '
    'counts it only in a comment written by its own forge account.';
REVOKE ALL ON FUNCTION tireless.label_marker(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.label_report_text(report tireless.label_report) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT 'tireless: the label `' || tireless.safe_comment_text(replace(report.label, '`', '''')) || '` names nothing '
           || 'tireless knows, so it asks for no work. The mode labels are '
           || array_to_string(ARRAY(SELECT '`' || l || '`' FROM unnest(m.mode_labels) AS l), ', ')
           || ' (each with the opt-in label `' || m.prefix || '`); `' || m.prefix || '/agent:<lane>` chooses the agent.'
           || E'\n\n' || tireless.label_marker(report.id)
      FROM tireless.mirror_labels() AS m;
$$;
COMMENT ON FUNCTION tireless.label_report_text(tireless.label_report) IS
    'The comment that reports a label naming nothing on its issue: the label (made safe by safe_comment_text), that '
    'it asks for no work, the mode labels and the opt-in label of the current prefix, the agent label, and the '
    'marker line (tireless.label_marker).';
REVOKE ALL ON FUNCTION tireless.label_report_text(tireless.label_report) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.unknown_label_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('report_id', r.id, 'number', r.number, 'body', tireless.label_report_text(r),
                              'marker', tireless.label_marker(r.id))
      FROM tireless.label_report r
     CROSS JOIN tireless.policy p
     WHERE r.id = w.label_id AND r.written_at IS NULL AND p.mirror_comments;
$$;
COMMENT ON FUNCTION tireless.unknown_label_write(tireless.forge_write) IS
    'What an unknown_label write (kind unknown_label) posts, as tireless.forge_writes_due lists it: {report_id, number, body '
    '(tireless.label_report_text, ending with its marker line), marker}; null (not due) while comments are off '
    '(set_mirror_comments).';
REVOKE ALL ON FUNCTION tireless.unknown_label_write(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.unknown_label_written(w tireless.forge_write) RETURNS void
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    UPDATE tireless.label_report r SET written_at = coalesce(r.written_at, now()) WHERE r.id = w.label_id;
END;
COMMENT ON FUNCTION tireless.unknown_label_written(tireless.forge_write) IS
    'The forge shows the comment of the label report of write w: recorded as written.';
REVOKE ALL ON FUNCTION tireless.unknown_label_written(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE VIEW tireless.label_reports AS
SELECT r.forge, r.owner, r.repo, r.number, r.label, r.found_at, r.written_at,
       coalesce(w.failures, 0) AS failures, coalesce(w.next_try_at, r.found_at) AS next_try_at, w.last_error,
       coalesce(s.state = 'open' AND s.gone_at IS NULL AND r.label = ANY (s.labels), false) AS standing
  FROM tireless.label_report r
  LEFT JOIN tireless.forge_write w ON w.kind = 'unknown_label' AND w.label_id = r.id
  LEFT JOIN tireless.issue s ON (s.forge, s.owner, s.repo, s.number) = (r.forge, r.owner, r.repo, r.number);
COMMENT ON VIEW tireless.label_reports IS
    'Each label under the prefix that names nothing, per issue that carried it: when a poll first showed it, when '
    'the mirror''s comment saying so was written (null: still to write), the retries of a failing post, and whether '
    'the open issue still carries it as last polled (standing: `tireless status` lists those).';
REVOKE ALL ON tireless.label_reports FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.label_reports TO tireless_runner, tireless_poller, tireless_admin;
