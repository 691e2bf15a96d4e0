-- The mirror: the labels and comments each issue should show, the pull request of each delivery, the
-- writes still to make, and the making-safe of what reaches a forge.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.mirror_labels(OUT prefix text, OUT mode_labels text[], OUT state_labels text[])
    LANGUAGE sql STABLE
AS $$
    SELECT p.label_prefix,
           ARRAY(SELECT p.label_prefix || '/' || k::text FROM unnest(enum_range(NULL::tireless.job_kind)) AS k),
           -- The state labels have a scope of their own (<prefix>/state): a Gitea admin may mark them
           -- exclusive, and setting one then takes off no mode or agent label (scope <prefix>). The
           -- names before issue 36 (<prefix>/state:pending) go last: the mirror takes them off.
           ARRAY(SELECT p.label_prefix || sep.text || s.name
                   FROM unnest(ARRAY['/state/', '/state:']) WITH ORDINALITY AS sep(text, i),
                        unnest(enum_range(NULL::tireless.job_state)::text[] || 'waiting'::text) WITH ORDINALITY AS s(name, j)
                  ORDER BY sep.i, s.j)
      FROM tireless.policy p;
$$;
COMMENT ON FUNCTION tireless.mirror_labels() IS
    'The label prefix, its mode labels (<prefix>/discover, ...) and its state labels (<prefix>/state/pending, ..., '
    'and <prefix>/state/waiting: pending, waiting for a dependency), then the state labels'' names before issue 36 '
    '(<prefix>/state:pending, ...), which the mirror takes off an issue it writes to.';
REVOKE ALL ON FUNCTION tireless.mirror_labels() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- GitHub refuses a comment, issue or pull request body past 65536 characters (422 "body is too long
-- (maximum is 65536 characters)"); Gitea and Forgejo store far more. One limit for every forge: a
-- body tireless writes fits anywhere, and a repository moved between forges reads the same.
CREATE OR REPLACE FUNCTION tireless.forge_body_limit() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 65536;
COMMENT ON FUNCTION tireless.forge_body_limit() IS
    'The most characters (code points) of a body tireless writes to any forge: a comment, an issue or a pull '
    'request (GitHub''s limit; Gitea and Forgejo take more). Each text the mirror writes is composed to fit.';
REVOKE ALL ON FUNCTION tireless.forge_body_limit() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.closing_fence(body text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    fence text[];
    indent text;
    marks text;
BEGIN
    -- CommonMark's fenced code blocks: a line of at most 3 spaces then 3 or more backticks (no backtick
    -- after them) or tildes opens one; a line of the same character, at least as many, and blanks
    -- closes it. The closing line keeps the opener's indent, so it closes it inside a list item too.
    FOR fence IN SELECT m.parts FROM regexp_matches(closing_fence.body, '^( {0,3})(`{3,}|~{3,})(.*)$', 'gn')
                                     WITH ORDINALITY AS m(parts, n) ORDER BY m.n LOOP
        IF marks IS NULL THEN
            IF NOT (left(fence[2], 1) = '`' AND strpos(fence[3], '`') > 0) THEN
                indent := fence[1];
                marks := fence[2];
            END IF;
        ELSIF left(fence[2], 1) = left(marks, 1) AND length(fence[2]) >= length(marks) AND fence[3] ~ '^[ \t\r]*$' THEN
            marks := NULL;
        END IF;
    END LOOP;
    RETURN indent || marks;
END;
$$;
COMMENT ON FUNCTION tireless.closing_fence(text) IS
    'The line that closes the fenced code block markdown body leaves open at its end (the opener''s indent and '
    'fence); null when none is open. A body cut short is closed with it, so nothing after it renders as code.';
REVOKE ALL ON FUNCTION tireless.closing_fence(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.fit_report(report text, room integer) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    whole text := tireless.safe_report_text(fit_report.report);
    kept integer;
    fitted text;
BEGIN
    IF whole IS NULL OR length(whole) <= fit_report.room THEN
        RETURN whole;
    END IF;
    -- The longest beginning of the safe text that fits with a code fence it leaves open closed and
    -- the line that says what was cut: each try that is too long shortens it by the excess (the
    -- closing fence changes only where a fence line is passed, so it ends in a few tries). A cut
    -- between a character and the one safe_report_text put after it leaves a bare < or @ at the end
    -- of a line: no tag, no mention.
    kept := fit_report.room;
    LOOP
        fitted := rtrim(left(whole, kept), E' \t\r\n');
        fitted := ltrim(fitted || coalesce(E'\n' || tireless.closing_fence(fitted), '')
                        || format(E'\n\n… cut: %s more characters do not fit in a forge''s body (%s at most).',
                                  length(whole) - kept, tireless.forge_body_limit()), E'\n');
        EXIT WHEN length(fitted) <= fit_report.room;
        IF kept = 0 THEN
            RETURN '';  -- no room even to say it
        END IF;
        kept := greatest(kept - (length(fitted) - fit_report.room), 0);
    END LOOP;
    RETURN fitted;
END;
$$;
COMMENT ON FUNCTION tireless.fit_report(text, integer) IS
    'Markdown from a runner (a report, a task''s body) made safe (safe_report_text) in at most room characters: '
    'whole when it fits, else as much of its beginning as fits with a code fence it leaves open closed '
    '(closing_fence) and a last line saying how many characters of it were cut; empty when not even that fits.';
REVOKE ALL ON FUNCTION tireless.fit_report(text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.finished_job_comment(job tireless.job) RETURNS text
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    head text;
    attached record;
    said text;
    fence text;
    -- What the outcome comment holds after this text: the checklist of children (at most the body's
    -- limit less 8192 characters, tireless.children_checklist), then the marker line.
    tail integer := coalesce(length(E'\n\n' || tireless.children_checklist(job)), 0)
                    + length(E'\n\n' || tireless.comment_marker(job.id));
BEGIN
    -- The outcome on the first line (no text from a runner there: a delivery's branch is a ref name
    -- without backticks, quoted as code, and its pull request a number).
    SELECT format('tireless: %s%s after %s attempt%s', job.state,
                  CASE WHEN delivered.branch IS NOT NULL
                       THEN coalesce(' as #' || delivered.pull_number, '') || format(' (branch `%s`)', delivered.branch)
                       ELSE '' END,
                  job.attempts, CASE WHEN job.attempts = 1 THEN '' ELSE 's' END)
           -- What its agent spent, when it made model requests through a gateway (tireless.spend_text).
           || coalesce('; ' || tireless.spend_text(job.id), '')
      INTO head
      FROM (SELECT) AS one
      LEFT JOIN tireless.delivery delivered ON delivered.job_id = job.id;
    -- Then the report the job's last attempt attached, when there is one (made safe, rendered as
    -- markdown), cut to the room the body has left (tireless.fit_report).
    SELECT a.report AS text, CASE WHEN a.report_cut THEN E'\n\n(report cut at 60000 characters)' ELSE '' END AS cut
      INTO attached
      FROM tireless.job_attempt a WHERE a.job_id = job.id AND a.attempt = job.attempts;
    IF attached.text IS NOT NULL THEN
        RETURN head || E'\n\n'
               || tireless.fit_report(attached.text, tireless.forge_body_limit() - tail - length(head) - 2 - length(attached.cut))
               || attached.cut;
    END IF;
    -- Else the last holder and the note (blanks folded, cut to 500 characters: it always fits) in a
    -- fenced code block whose fence is longer than any run of backticks inside it: nothing in it
    -- renders (HTML, images, links, headings) and nothing closes it early.
    SELECT nullif(concat_ws(': ', tireless.safe_comment_text(regexp_replace(btrim(holder.worker), '\s+', ' ', 'g')),
                            CASE WHEN length(note.text) > 500 THEN left(note.text, 499) || '…' ELSE note.text END), '')
      INTO said
      FROM (SELECT nullif(tireless.safe_comment_text(regexp_replace(btrim(job.note), '\s+', ' ', 'g')), '') AS text) AS note
      LEFT JOIN LATERAL (SELECT e.worker FROM tireless.job_event e
                          WHERE e.job_id = job.id AND e.worker IS NOT NULL
                          ORDER BY e.id DESC LIMIT 1) AS holder ON true;
    fence := repeat('`', greatest(3, 1 + coalesce((SELECT max(length(m[1])) FROM regexp_matches(said, '(`+)', 'g') AS m), 0)));
    RETURN head || coalesce(E'\n\n' || fence || E'\n' || said || E'\n' || fence, '');
END;
$$;
COMMENT ON FUNCTION tireless.finished_job_comment(tireless.job) IS
    'The comment a finished job leaves on its issue, up to its checklist of children and its marker line, which '
    'tireless.comment_write adds: the outcome and attempts on the first line (a delivery that '
    'pushed names its pull request once the mirror recorded it, and its branch: delivered as #12 (branch '
    '`tireless/7`) after 1 attempt), what its agent spent when it made model requests (; 12 model requests, 84,210 '
    'tokens, $0.41: tireless.spend_text), then the report its '
    'last attempt attached (tireless.attach_report) made safe and cut to fit (tireless.fit_report: the whole '
    'comment, checklist and marker included, within tireless.forge_body_limit(), a cut saying so) when there is '
    'one, else the last holder and the note (blanks folded, cut to 500 characters, made safe by safe_comment_text) '
    'in a fenced code block with a fence longer than any backtick run inside, so nothing of it renders or notifies.';
REVOKE ALL ON FUNCTION tireless.finished_job_comment(tireless.job) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- Where the mirror writes: not to a gone issue, and not to an archived repository (Gitea answers 423
-- to every write) until a day has passed, when one write is tried again.
CREATE OR REPLACE FUNCTION tireless.mirror_may_write(forge text, owner text, repo text, number integer) RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    SELECT NOT tireless.issue_gone(mirror_may_write.forge, mirror_may_write.owner, mirror_may_write.repo, mirror_may_write.number)
       AND NOT EXISTS (SELECT FROM tireless.mirror_repo m
                        WHERE (m.forge, m.owner, m.repo) = (mirror_may_write.forge, mirror_may_write.owner, mirror_may_write.repo)
                          AND m.archived_at > now() - interval '1 day');
$$;
COMMENT ON FUNCTION tireless.mirror_may_write(text, text, text, integer) IS
    'Whether the mirror may write to the issue now: it is not gone (tireless.issue_gone) and its repository was not '
    'found archived in the last day (record_repo_archived). Every due function of the mirror lists only these.';
REVOKE ALL ON FUNCTION tireless.mirror_may_write(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.repo_writable(forge text, owner text, repo text) RETURNS void
    LANGUAGE sql VOLATILE
AS $$
    UPDATE tireless.mirror_repo m SET archived_at = NULL
     WHERE (m.forge, m.owner, m.repo) = (repo_writable.forge, repo_writable.owner, repo_writable.repo)
       AND m.archived_at IS NOT NULL;
$$;
COMMENT ON FUNCTION tireless.repo_writable(text, text, text) IS
    'The forge accepted a write to the repository: it is not archived (any more). Each record_* of a mirror write''s '
    'success calls it.';
REVOKE ALL ON FUNCTION tireless.repo_writable(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_repo_archived(forge text, owner text, repo text, poller text) RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.held_poll(record_repo_archived.forge, record_repo_archived.owner, record_repo_archived.repo,
                               record_repo_archived.poller);
    INSERT INTO tireless.mirror_repo AS m (forge, owner, repo, archived_at)
    VALUES (record_repo_archived.forge, record_repo_archived.owner, record_repo_archived.repo, now())
    ON CONFLICT ON CONSTRAINT mirror_repo_pkey DO UPDATE SET archived_at = now();
    RETURN now() + interval '1 day';
END;
$$;
COMMENT ON FUNCTION tireless.record_repo_archived(text, text, text, text) IS
    'The forge refused a mirror write because the repository is archived (Gitea: 423): for a day the mirror''s due '
    'functions list nothing for it (reads go on), then one write is tried again; a write that succeeds clears it. '
    'Returns when a write is tried again. TL004 without the poll lease, TL008 for an untracked repository.';
REVOKE ALL ON FUNCTION tireless.record_repo_archived(text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_repo_archived(text, text, text, text) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.mirror_writes(
    forge text, owner text, repo text, poller text, max_writes integer DEFAULT 100, settle interval DEFAULT '2 minutes'
) RETURNS TABLE (number integer, job_id bigint, state text, state_label text, drop_labels text[],
                 job_began timestamptz, job_labels text[], opt_in text, mode_labels text[])
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    mirror tireless.mirror_repo;
    labels record;
    newest bigint;
    settled bigint;
    tracked_since timestamptz;
BEGIN
    IF mirror_writes.max_writes IS NULL OR mirror_writes.max_writes NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_writes must be from 1 to 10000, got %', coalesce(mirror_writes.max_writes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF mirror_writes.settle IS NULL OR mirror_writes.settle < interval '0' OR mirror_writes.settle > interval '1 day' THEN
        RAISE EXCEPTION 'settle must be from 0 to 1 day, got %', coalesce(mirror_writes.settle::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, mirror_writes.poller);
    INSERT INTO tireless.mirror_repo (forge, owner, repo)
    VALUES (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
    ON CONFLICT DO NOTHING;
    SELECT * INTO mirror FROM tireless.mirror_repo m
     WHERE (m.forge, m.owner, m.repo) = (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
       FOR UPDATE;
    SELECT t.tracked_at INTO tracked_since FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (mirror.forge, mirror.owner, mirror.repo);

    -- Every issue whose jobs changed since the cursor now wants its newest job's current state; an
    -- older wanted state is replaced (job ids of one issue grow: a new job starts after the last ended).
    -- Every finished job read, newest of its issue or not, gets its own outcome comment, queued once.
    WITH touched AS MATERIALIZED (
        SELECT DISTINCT j.id, j.number, j.state, j.state = 'pending' AND j.waiting_on IS NOT NULL AS waiting
          FROM tireless.job_event e
          JOIN tireless.job j ON j.id = e.job_id
         WHERE e.id > mirror.event_cursor
           AND (j.forge, j.owner, j.repo) = (mirror_writes.forge, mirror_writes.owner, mirror_writes.repo)
           -- A repository tracked again does not mirror what happened before: no comment on old issues.
           AND e.at >= tracked_since
    ), wanted AS (
        INSERT INTO tireless.mirror_issue AS mi (forge, owner, repo, number, job_id, state, waiting)
        SELECT DISTINCT ON (t.number) mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, t.number, t.id, t.state,
               t.waiting
          FROM touched t
         ORDER BY t.number, t.id DESC
        ON CONFLICT ON CONSTRAINT mirror_issue_pkey DO UPDATE
           SET job_id = excluded.job_id, state = excluded.state, waiting = excluded.waiting, failures = 0, next_try_at = now()
         WHERE excluded.job_id > mi.job_id
            OR (excluded.job_id = mi.job_id AND (excluded.state <> mi.state OR excluded.waiting <> mi.waiting))
    ), commented AS (
        INSERT INTO tireless.mirror_comment AS mc (job_id, forge, owner, repo, number)
        SELECT t.id, mirror_writes.forge, mirror_writes.owner, mirror_writes.repo, t.number
          FROM touched t
         CROSS JOIN tireless.policy p
         WHERE p.mirror_comments AND tireless.is_terminal(t.state)
        ON CONFLICT ON CONSTRAINT mirror_comment_pkey DO NOTHING
        RETURNING mc.job_id, mc.forge, mc.owner, mc.repo, mc.number
    )
    -- Each comment queued is a write of the outbox (tireless.forge_write).
    INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)
    SELECT 'comment', c.forge, c.owner, c.repo, c.number, c.job_id FROM commented c ORDER BY c.job_id
    ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING;

    -- The cursor passes only events older than the settle time: a transaction that commits later
    -- than an event with a greater id is still read by the next scan. Reading an event again is harmless.
    SELECT max(e.id), max(e.id) FILTER (WHERE e.at < now() - mirror_writes.settle) INTO newest, settled
      FROM tireless.job_event e WHERE e.id > mirror.event_cursor;
    UPDATE tireless.mirror_repo m
       SET event_cursor = greatest(m.event_cursor, coalesce(settled, m.event_cursor)),
           scanned_to = greatest(m.scanned_to, coalesce(newest, m.scanned_to))
     WHERE (m.forge, m.owner, m.repo) = (mirror.forge, mirror.owner, mirror.repo);

    -- A job pruned before the forge showed it leaves nothing to show.
    UPDATE tireless.mirror_issue mi
       SET applied_job_id = mi.job_id, applied_state = mi.state, applied_waiting = mi.waiting, applied_at = now()
     WHERE (mi.forge, mi.owner, mi.repo) = (mirror.forge, mirror.owner, mirror.repo)
       AND ((mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state) OR mi.applied_waiting <> mi.waiting)
       AND NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = mi.job_id);

    SELECT * INTO labels FROM tireless.mirror_labels();
    RETURN QUERY
    SELECT mi.number, mi.job_id, mi.state::text,
           labels.prefix || '/state/' || CASE WHEN mi.waiting THEN 'waiting' ELSE mi.state::text END,
           ARRAY(SELECT l FROM unnest(labels.state_labels) AS l
                  WHERE l <> labels.prefix || '/state/' || CASE WHEN mi.waiting THEN 'waiting' ELSE mi.state::text END)
           -- A finished job withdraws its own request, never a newer one the store has already seen
           -- (asked again after the job was made: it gets its own job, rule 1).
           || CASE WHEN tireless.is_terminal(mi.state)
                    AND NOT EXISTS (SELECT FROM tireless.issue s
                                     WHERE (s.forge, s.owner, s.repo, s.number) = (mi.forge, mi.owner, mi.repo, mi.number)
                                       AND s.asks_since > j.created_at)
                   THEN labels.mode_labels ELSE '{}' END,
           j.created_at, j.labels, labels.prefix, labels.mode_labels
      FROM tireless.mirror_issue mi
      JOIN tireless.job j ON j.id = mi.job_id
     WHERE (mi.forge, mi.owner, mi.repo) = (mirror.forge, mirror.owner, mirror.repo)
       AND ((mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state) OR mi.applied_waiting <> mi.waiting)
       AND mi.next_try_at <= now()
       AND tireless.mirror_may_write(mi.forge, mi.owner, mi.repo, mi.number)
     ORDER BY mi.next_try_at, mi.number
     LIMIT mirror_writes.max_writes;
END;
$$;
COMMENT ON FUNCTION tireless.mirror_writes(text, text, text, text, integer, interval) IS
    'For a poller holding the repository''s poll lease: reads the job history since the repository''s cursor '
    '(each changed issue now wants its newest job''s state, replacing any older wanted state; each finished job '
    'read gets its outcome comment queued) and returns the label writes due (at most max_writes): per issue its '
    'job and state, the state label to show, the labels to take off (the other state labels, and the mode labels '
    'once the job ended, unless the issue asked again since the job was made), when the job was made and with '
    'which labels, the opt-in and the mode labels; none for a gone issue or, for a day, an archived repository '
    '(tireless.mirror_may_write). The cursor passes only events older than settle. TL004 without the lease.';
REVOKE ALL ON FUNCTION tireless.mirror_writes(text, text, text, text, integer, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.mirror_writes(text, text, text, text, integer, interval) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.mirror_issue_row(forge text, owner text, repo text, number integer, job_id bigint, state text)
    RETURNS tireless.mirror_issue
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    queued tireless.mirror_issue;
BEGIN
    PERFORM tireless.parse_state(mirror_issue_row.state);
    SELECT * INTO queued FROM tireless.mirror_issue mi
     WHERE (mi.forge, mi.owner, mi.repo, mi.number)
           = (mirror_issue_row.forge, mirror_issue_row.owner, mirror_issue_row.repo, mirror_issue_row.number)
       FOR UPDATE;
    IF NOT FOUND OR queued.job_id < mirror_issue_row.job_id THEN
        RAISE EXCEPTION 'issue %/%/%#% has no mirror write for job %', mirror_issue_row.forge, mirror_issue_row.owner,
            mirror_issue_row.repo, mirror_issue_row.number, coalesce(mirror_issue_row.job_id::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'Record the writes mirror_writes returned.';
    END IF;
    RETURN queued;
END;
$$;
COMMENT ON FUNCTION tireless.mirror_issue_row(text, text, text, integer, bigint, text) IS
    'The issue''s mirror row, locked; TL005 when mirror_writes never queued a write for that job.';
REVOKE ALL ON FUNCTION tireless.mirror_issue_row(text, text, text, integer, bigint, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A withdrawal is recorded only when the forge confirmed the writes (the issue as it shows after
-- them is given) and only for the request the job answered: a request the store saw after the job
-- was made stands, and gets its own job at the next poll.
CREATE OR REPLACE FUNCTION tireless.record_mirror_write(
    forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, issue jsonb DEFAULT NULL
) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    queued tireless.mirror_issue;
    withdrawn boolean;
BEGIN
    PERFORM tireless.held_poll(record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo,
                               record_mirror_write.poller);
    queued := tireless.mirror_issue_row(record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo,
                                     record_mirror_write.number, record_mirror_write.job_id, record_mirror_write.state);
    IF record_mirror_write.issue IS NOT NULL THEN
        PERFORM tireless.check_issue_batch(jsonb_build_array(record_mirror_write.issue));
        IF (record_mirror_write.issue ->> 'forge', record_mirror_write.issue ->> 'owner', record_mirror_write.issue ->> 'repo',
            (record_mirror_write.issue ->> 'number')::integer)
           IS DISTINCT FROM (record_mirror_write.forge, record_mirror_write.owner, record_mirror_write.repo, record_mirror_write.number) THEN
            RAISE EXCEPTION 'malformed issue: it is not %/%/%#%', record_mirror_write.forge, record_mirror_write.owner,
                record_mirror_write.repo, record_mirror_write.number USING ERRCODE = 'TL006';
        END IF;
    END IF;
    -- What the forge confirmed (an older job or state than wanted leaves the newer one due).
    UPDATE tireless.mirror_issue mi
       SET applied_job_id = record_mirror_write.job_id, applied_state = record_mirror_write.state::tireless.job_state,
           -- The wait as mirror_writes handed it out: it changes only under this repository's poll lease,
           -- or by a dependency of another repository closing at this moment (the next change writes again).
           applied_waiting = mi.waiting AND (mi.job_id, mi.state) = (record_mirror_write.job_id, record_mirror_write.state::tireless.job_state),
           applied_at = now(), failures = 0, next_try_at = now(), last_error = NULL, last_error_at = NULL
     WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (queued.forge, queued.owner, queued.repo, queued.number);
    PERFORM tireless.repo_writable(queued.forge, queued.owner, queued.repo);

    -- A finished job's mode labels are off the issue: its request is withdrawn. The store records it
    -- now, so the next poll sees no change (no job), and a human who adds a mode label again asks again.
    IF tireless.is_terminal(record_mirror_write.state::tireless.job_state) THEN
        -- The issue's row as the last poll left it (a poll of this repository waits for us, or we for it).
        PERFORM tireless.lock_repo_issues(queued.forge, queued.owner, queued.repo);
    END IF;
    withdrawn := tireless.is_terminal(record_mirror_write.state::tireless.job_state)
                 AND record_mirror_write.issue IS NOT NULL
                 AND NOT EXISTS (SELECT FROM tireless.job j
                                  WHERE (j.forge, j.owner, j.repo, j.number) = (queued.forge, queued.owner, queued.repo, queued.number)
                                    AND j.state IN ('pending', 'claimed'))
                 AND NOT EXISTS (SELECT FROM tireless.issue s JOIN tireless.job j ON j.id = record_mirror_write.job_id
                                  WHERE (s.forge, s.owner, s.repo, s.number) = (queued.forge, queued.owner, queued.repo, queued.number)
                                    AND s.asks_since > j.created_at);
    IF withdrawn THEN
        UPDATE tireless.issue s
           SET labels = ARRAY(SELECT l FROM unnest(s.labels) AS l WHERE NOT l = ANY ((tireless.mirror_labels()).mode_labels)),
               asks_since = NULL, answered = false, changed_at = now()
         WHERE (s.forge, s.owner, s.repo, s.number) = (queued.forge, queued.owner, queued.repo, queued.number);
        -- The issue as the forge shows it after the writes, judged by the work rule like a poll: a
        -- mode label still on it is one a person put back after the job was made, a new request.
        PERFORM tireless.apply_work_rule(jsonb_build_array(record_mirror_write.issue));
    END IF;
    RETURN withdrawn;
END;
$$;
COMMENT ON FUNCTION tireless.record_mirror_write(text, text, text, text, integer, bigint, text, jsonb) IS
    'The forge confirmed the issue shows job_id in state: recorded as applied, its error cleared. For a finished job '
    'with no live successor, given issue (the forge''s issue after the writes, enqueue''s format) and no newer '
    'request seen since the job was made, the request is recorded as withdrawn (mode labels off, no longer asking) '
    'and issue is judged by the work rule as a poll would (a mode label a person put back is a new request); '
    'returns whether it recorded a withdrawal. TL004 without the poll lease, TL005 for a write never queued.';
REVOKE ALL ON FUNCTION tireless.record_mirror_write(text, text, text, text, integer, bigint, text, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_mirror_write(text, text, text, text, integer, bigint, text, jsonb) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.record_mirror_failure(
    forge text, owner text, repo text, poller text, number integer, job_id bigint, state text, error text
) RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    queued tireless.mirror_issue;
    until timestamptz;
BEGIN
    IF record_mirror_failure.error IS NULL OR btrim(record_mirror_failure.error) = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', coalesce(quote_literal(record_mirror_failure.error), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_mirror_failure.forge, record_mirror_failure.owner, record_mirror_failure.repo,
                               record_mirror_failure.poller);
    queued := tireless.mirror_issue_row(record_mirror_failure.forge, record_mirror_failure.owner, record_mirror_failure.repo,
                                     record_mirror_failure.number, record_mirror_failure.job_id, record_mirror_failure.state);
    until := now() + tireless.forge_write_backoff(queued.failures);
    UPDATE tireless.mirror_issue mi
       SET failures = mi.failures + 1, next_try_at = until,
           last_error = left(btrim(record_mirror_failure.error), 2000), last_error_at = now()
     WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (queued.forge, queued.owner, queued.repo, queued.number);
    RETURN until;
END;
$$;
COMMENT ON FUNCTION tireless.record_mirror_failure(text, text, text, text, integer, bigint, text, text) IS
    'A mirror write to one issue failed: counts it, records the error (trimmed to 2000 characters) and backs that '
    'issue off exponentially with jitter; returns when it is tried again. Other issues and the polls go on. TL004 '
    'without the poll lease, TL005 for a write never queued.';
REVOKE ALL ON FUNCTION tireless.record_mirror_failure(text, text, text, text, integer, bigint, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_mirror_failure(text, text, text, text, integer, bigint, text, text) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.set_mirror_comments(enabled boolean) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF set_mirror_comments.enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must be true or false, got null' USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.policy p SET mirror_comments = set_mirror_comments.enabled;
    RETURN set_mirror_comments.enabled;
END;
$$;
COMMENT ON FUNCTION tireless.set_mirror_comments(boolean) IS
    '(admin) Turns the mirror''s comment on finished jobs on or off (the state labels stay); returns the setting.';
REVOKE ALL ON FUNCTION tireless.set_mirror_comments(boolean) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_mirror_comments(boolean) TO tireless_admin;

-- The mirror's backlog of an issue's repository: the writes still to make, outcome comments and pull
-- requests included.
CREATE OR REPLACE FUNCTION tireless.mirror_unread(forge text, owner text, repo text) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    scanned bigint;
    since timestamptz;
BEGIN
    SELECT m.scanned_to INTO scanned FROM tireless.mirror_repo m
     WHERE (m.forge, m.owner, m.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo);
    SELECT t.tracked_at INTO since FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo);
    IF since IS NULL THEN
        RETURN 0;  -- not tracked: nothing is mirrored
    END IF;
    -- The events after the last scan first (the BRIN index on the id; planned with the actual
    -- position, so the planner knows they are few), then each one's job by its key: a LATERAL
    -- subquery it may not flatten (OFFSET 0), so that it never starts at the repository's jobs,
    -- which no index finds (a scan of every job ever run). Issues with a write already queued are
    -- counted by the caller.
    RETURN (
        SELECT count(DISTINCT j.number)
          FROM tireless.job_event e
         CROSS JOIN LATERAL (
               SELECT j.forge, j.owner, j.repo, j.number FROM tireless.job j
                WHERE j.id = e.job_id
                  AND (j.forge, j.owner, j.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               OFFSET 0) AS j
         WHERE e.id > coalesce(scanned, 0)
           AND e.at >= since
           -- A gone issue's writes are never made: not a backlog.
           AND NOT tireless.issue_gone(j.forge, j.owner, j.repo, j.number)
           AND NOT EXISTS (SELECT FROM tireless.mirror_issue mi
                            WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (j.forge, j.owner, j.repo, j.number)
                              AND ((mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state)
                                   OR mi.applied_waiting <> mi.waiting)))
         + (SELECT count(*) FROM tireless.mirror_comment c
             WHERE (c.forge, c.owner, c.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND c.written_at IS NULL AND NOT tireless.issue_gone(c.forge, c.owner, c.repo, c.number))
         + (SELECT count(*) FROM tireless.forge_write p
             WHERE (p.forge, p.owner, p.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND p.kind = 'pull' AND p.written_at IS NULL AND NOT tireless.issue_gone(p.forge, p.owner, p.repo, p.number))
         -- The issues of delivered plans' steps and discoveries' proposals still to open.
         + (SELECT count(*) FROM tireless.plan_task t JOIN tireless.job j ON j.id = t.job_id
             WHERE (t.forge, t.owner, t.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND t.child_number IS NULL AND j.state = 'delivered' AND t.attempt = j.attempts
               AND NOT tireless.issue_gone(j.forge, j.owner, j.repo, j.number))
         -- The comments that tell an issue it is on a dependency cycle, still to write.
         + (SELECT count(*) FROM tireless.cycle_report r
             WHERE (r.forge, r.owner, r.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               AND r.written_at IS NULL AND r.broken_at IS NULL
               AND NOT tireless.issue_gone(r.forge, r.owner, r.repo, r.number));
END;
$$;
COMMENT ON FUNCTION tireless.mirror_unread(text, text, text) IS
    'How many issues of a tracked repository changed after the mirror''s last scan and have no write queued yet, '
    'plus the outcome comments, pull requests, plan steps'' issues and dependency-cycle comments still to write, '
    'none of a gone issue (tireless.issue_gone) '
    '(part of repo_status.mirror_backlog); reads only the history after that scan and the comments'', pull '
    'requests'', plan tasks'' and cycle reports'' partial indexes.';
REVOKE ALL ON FUNCTION tireless.mirror_unread(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.mirror_unread(text, text, text) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.safe_comment_text(body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Control characters (ESC, BEL, ...) and the bidirectional overrides and isolates dropped;
    -- a zero-width joiner after each @, so that no mention notifies even outside the code block.
    SELECT replace(regexp_replace(safe_comment_text.body,
                                  '[\x01-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]', '', 'g'),
                   '@', '@' || U&'\200D');
$$;
COMMENT ON FUNCTION tireless.safe_comment_text(text) IS
    'Text from a runner made safe to quote on a forge: control and bidirectional-override characters dropped, a '
    'zero-width joiner after every @ (no mention notifies).';
REVOKE ALL ON FUNCTION tireless.safe_comment_text(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The agent's report (tireless.attach_report) is markdown meant to render, so it is not fenced; it is
-- made safe as the note is, and no HTML tag or image in it renders either.
CREATE OR REPLACE FUNCTION tireless.safe_report_text(body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- A zero-width space after each < and between ! and [: no tag opens, no image loads; links stay.
    SELECT replace(replace(tireless.safe_comment_text(safe_report_text.body), '<', '<' || U&'\200B'),
                   '![', '!' || U&'\200B' || '[');
$$;
COMMENT ON FUNCTION tireless.safe_report_text(text) IS
    'An agent''s report made safe to post as markdown: safe_comment_text, and a zero-width space after every < and '
    'inside every ![ so that no HTML tag opens and no image loads.';
REVOKE ALL ON FUNCTION tireless.safe_report_text(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.comment_marker(job_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:job:%s -->', comment_marker.job_id);
COMMENT ON FUNCTION tireless.comment_marker(bigint) IS
    'The hidden last line of a job''s outcome comment; the mirror counts it only in a comment written by its own forge account.';
REVOKE ALL ON FUNCTION tireless.comment_marker(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The children a delivered plan (or discovery) opened, as its outcome comment lists them (issue 35).
-- A child is done (checked) when its newest job was delivered or its issue is closed; else it says
-- what its newest job is doing (waiting on #N, pending, claimed, failed, cancelled), or, with no job
-- yet, that the issue is open (a proposal: that it waits for the opt-in), or not opened yet.
CREATE OR REPLACE FUNCTION tireless.child_status(task tireless.plan_task, OUT done boolean, OUT status text, OUT title text)
    LANGUAGE sql STABLE
AS $$
    SELECT coalesce(newest.state = 'delivered' OR s.state = 'closed', false),
           CASE WHEN task.child_number IS NULL THEN 'not opened yet'
                WHEN newest.state = 'delivered' THEN 'delivered'
                WHEN s.state = 'closed' THEN 'closed'
                WHEN newest.state = 'pending' AND newest.waiting_on IS NOT NULL
                     THEN 'waiting on ' || array_to_string(newest.waiting_on, ', ')
                WHEN newest.state IS NOT NULL THEN newest.state::text
                WHEN task.proposal THEN 'proposed: add the opt-in label to run it'
                ELSE 'open' END,
           left(tireless.safe_report_text(regexp_replace(btrim(coalesce(s.title, task.title)), '\s+', ' ', 'g')), 200)
      FROM (SELECT) AS one
      LEFT JOIN tireless.issue s
             ON (s.forge, s.owner, s.repo, s.number) = (task.forge, task.owner, task.repo, task.child_number)
      LEFT JOIN LATERAL (SELECT j.state, j.waiting_on FROM tireless.job j
                          WHERE (j.forge, j.owner, j.repo, j.number) = (task.forge, task.owner, task.repo, task.child_number)
                          ORDER BY j.id DESC LIMIT 1) AS newest ON true;
$$;
COMMENT ON FUNCTION tireless.child_status(tireless.plan_task) IS
    'The state of a plan''s task as its parent''s checklist says it: done (the child''s newest job delivered, or its '
    'issue closed), the words (delivered, closed, waiting on #N, pending, claimed, failed, cancelled; open or proposed '
    'with no job yet; not opened yet) and the child''s title (the issue''s as last read, else the task''s; blanks '
    'folded, made safe by safe_report_text, cut to 200 characters).';
REVOKE ALL ON FUNCTION tireless.child_status(tireless.plan_task) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.children_checklist(job tireless.job) RETURNS text
    LANGUAGE sql STABLE
AS $$
    -- At most the body's limit less 8192 characters (the outcome line, some of the report, the marker
    -- line): the lines that fit, in order, then how many more there are.
    SELECT CASE WHEN job.kind::text = 'discover' THEN 'Proposals:' ELSE 'Tasks:' END
           || coalesce(E'\n' || string_agg(l.line, E'\n' ORDER BY l.task)
                                 FILTER (WHERE l.total <= l.room OR l.upto <= l.room - 20), '')
           || coalesce(E'\n… and ' || nullif(count(*) FILTER (WHERE l.total > l.room AND l.upto > l.room - 20), 0)
                       || ' more', '')
      FROM (SELECT t.task, line.text AS line,
                   sum(length(line.text) + 1) OVER (ORDER BY t.task) AS upto,
                   sum(length(line.text) + 1) OVER () AS total,
                   tireless.forge_body_limit() - 8192 - length('Proposals:') AS room
              FROM tireless.plan_task t
             CROSS JOIN LATERAL tireless.child_status(t) AS s
             CROSS JOIN LATERAL (SELECT '- [' || CASE WHEN s.done THEN 'x' ELSE ' ' END || '] '
                                        || coalesce('#' || t.child_number || ' ', '') || s.title || ' — ' || s.status) AS line(text)
             WHERE t.job_id = job.id AND t.attempt = job.attempts AND job.state = 'delivered') AS l
    HAVING count(*) > 0;
$$;
COMMENT ON FUNCTION tireless.children_checklist(tireless.job) IS
    'The checklist of the children a delivered plan job (or the proposals a discover job) opened, in the file''s '
    'order, as its outcome comment shows it: `- [x] #13 Title — delivered`, `- [ ] #12 Title — waiting on #11` '
    '(tireless.child_status); at most tireless.forge_body_limit() less 8192 characters, the lines past that said '
    'as "… and 3 more"; null when the job opened none.';
REVOKE ALL ON FUNCTION tireless.children_checklist(tireless.job) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.comment_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('job_id', c.job_id, 'number', c.number,
                              'body', tireless.finished_job_comment(j) || coalesce(E'\n\n' || children.checklist, '')
                                      || E'\n\n' || tireless.comment_marker(j.id),
                              'marker', tireless.comment_marker(j.id), 'checklist', children.checklist)
      FROM tireless.mirror_comment c
      JOIN tireless.job j ON j.id = c.job_id
     CROSS JOIN LATERAL (SELECT tireless.children_checklist(j) AS checklist) AS children
     WHERE c.job_id = w.job_id AND c.written_at IS NULL
       -- A delivery's comment names its pull request: it waits for the pull request's write, unless
       -- that failed three times in a row or was queued an hour ago (then it names the branch only).
       AND NOT EXISTS (SELECT FROM tireless.forge_write p
                        WHERE p.kind = 'pull' AND p.job_id = c.job_id AND p.written_at IS NULL
                          AND p.failures < 3 AND p.queued_at > now() - interval '1 hour')
       -- A plan's comment lists its children: it waits for them to be opened, unless opening one
       -- failed three times in a row or the job was delivered an hour ago (then it says which are not).
       AND NOT (j.state = 'delivered' AND j.updated_at > now() - interval '1 hour'
                AND EXISTS (SELECT FROM tireless.plan_task t
                             WHERE t.job_id = c.job_id AND t.attempt = j.attempts AND t.child_number IS NULL)
                AND NOT EXISTS (SELECT FROM tireless.plan_task t
                                  JOIN tireless.forge_write o ON o.kind = 'task' AND (o.job_id, o.task) = (t.job_id, t.task)
                                 WHERE t.job_id = c.job_id AND t.attempt = j.attempts AND t.child_number IS NULL
                                   AND o.failures >= 3));
$$;
COMMENT ON FUNCTION tireless.comment_write(tireless.forge_write) IS
    'What an outcome comment write (kind comment) posts, as tireless.forge_writes_due lists it: {job_id, number, '
    'body, marker, checklist}: the body ends with its marker line (at most tireless.forge_body_limit() characters: '
    'finished_job_comment cuts the report to fit) and holds the checklist of the children the job opened '
    '(tireless.children_checklist; null when none) before the marker. Null (not due) while a delivered job''s comment '
    'waits for its pull request''s write so that it names it, unless that write failed three times in a row or was '
    'queued an hour ago, or a delivered plan''s (or discovery''s) waits for its children to be opened so that it lists '
    'them, unless opening one failed three times in a row or the job was delivered an hour ago.';
REVOKE ALL ON FUNCTION tireless.comment_write(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.comment_written(w tireless.forge_write, result jsonb) RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    shown text := comment_written.result ->> 'checklist';
BEGIN
    -- The checklist the posted comment holds (as comment_write gave it): later edits start from it.
    UPDATE tireless.mirror_comment c
       SET written_at = coalesce(c.written_at, now()),
           checklist = coalesce(shown, c.checklist),
           checklist_written_at = CASE WHEN shown IS NOT NULL THEN now() ELSE c.checklist_written_at END
     WHERE c.job_id = w.job_id;
    -- While a child is unchecked, the checklist is edited as the children change (tireless.checklist_write).
    IF strpos(shown, '- [ ] ') > 0 THEN
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)
        VALUES ('checklist', w.forge, w.owner, w.repo, w.number, w.job_id)
        ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING;
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.comment_written(tireless.forge_write, jsonb) IS
    'The forge shows the outcome comment of write w: recorded as written, with result''s checklist (the one '
    'comment_write gave), which tireless.checklist_write compares with the current one; a checklist with an '
    'unchecked child queues the checklist''s standing write.';
REVOKE ALL ON FUNCTION tireless.comment_written(tireless.forge_write, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The pull request of a delivery. One per issue, from its branch to the base branch: a write per
-- delivery that pushed, of which the mirror makes only the issue's newest (it carries every older push
-- of the branch); recorded once, with the pull request's number and URL, which the outcome comment
-- then names.
CREATE OR REPLACE FUNCTION tireless.pull_marker(number integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:pull:%s -->', pull_marker.number);
COMMENT ON FUNCTION tireless.pull_marker(integer) IS
    'The hidden last line of the body of the pull request tireless opens for issue number (the same for every '
    'delivery of the issue); the mirror counts it only in a pull request opened by its own forge account.';
REVOKE ALL ON FUNCTION tireless.pull_marker(integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.pull_request_text(job tireless.job, OUT title text, OUT body text)
    LANGUAGE sql STABLE
AS $$
    -- The title is the issue's (its blanks folded, made safe, cut to 200 characters); the body closes
    -- the issue on merge, quotes the report of the job's last attempt made safe as the outcome comment
    -- does, says which job made it, and ends with the marker.
    SELECT 'Fix #' || job.number || coalesce(': ' || CASE WHEN length(named.title) > 200 THEN left(named.title, 199) || '…'
                                                          ELSE named.title END, ''),
           'Closes #' || job.number
           || coalesce(E'\n\n' || tireless.fit_report(report.text, tireless.forge_body_limit() - length(report.cut) - 4
                                                                    - length('Closes #' || job.number || tail.text))
                       || report.cut, '')
           || E'\n\n' || tail.text
      FROM (SELECT nullif(tireless.safe_comment_text(regexp_replace(btrim(coalesce(
                   (SELECT i.title FROM tireless.issue i
                     WHERE (i.forge, i.owner, i.repo, i.number) = (job.forge, job.owner, job.repo, job.number)),
                   job.title)), '\s+', ' ', 'g')), '') AS title) AS named
      LEFT JOIN LATERAL (SELECT a.report AS text,
                                CASE WHEN a.report_cut THEN E'\n\n(report cut at 60000 characters)' ELSE '' END AS cut
                           FROM tireless.job_attempt a
                          WHERE a.job_id = job.id AND a.attempt = job.attempts) AS report ON true
     CROSS JOIN LATERAL (SELECT format('Delivered by tireless: job %s, attempt %s%s.', job.id, job.attempts,
                                       coalesce('; ' || tireless.spend_text(job.id), ''))
                                || E'\n\n' || tireless.pull_marker(job.number) AS text) AS tail;
$$;
COMMENT ON FUNCTION tireless.pull_request_text(tireless.job) IS
    'The title and body of the pull request of a delivered job: "Fix #7: <the issue''s title>" (blanks folded, made '
    'safe by safe_comment_text, cut to 200 characters); "Closes #7", the report of the job''s last attempt made safe '
    'and cut so that the body fits in tireless.forge_body_limit() (tireless.fit_report, a cut saying so), which job '
    'and attempt made it and what its agent spent (tireless.spend_text), and the marker line (tireless.pull_marker).';
REVOKE ALL ON FUNCTION tireless.pull_request_text(tireless.job) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.pull_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('job_id', w.job_id, 'number', w.number,
                              'action', CASE WHEN known.pull_number IS NULL THEN 'open' ELSE 'update' END,
                              'pull_number', known.pull_number, 'head_branch', d.branch, 'head', d.head,
                              'base_branch', d.base_branch, 'title', pr.title, 'body', pr.body,
                              'marker', tireless.pull_marker(w.number), 'draft', d.draft)
      FROM tireless.delivery d
      JOIN tireless.job j ON j.id = d.job_id
      LEFT JOIN LATERAL (SELECT o.pull_number FROM tireless.delivery o
                          WHERE (o.forge, o.owner, o.repo, o.number) = (d.forge, d.owner, d.repo, d.number)
                            AND o.branch = d.branch AND o.pull_number IS NOT NULL
                          ORDER BY o.job_id DESC LIMIT 1) AS known ON true
     CROSS JOIN LATERAL tireless.pull_request_text(j) AS pr
     WHERE d.job_id = w.job_id
       -- Per issue its newest delivery still to write: its push carries the older ones.
       AND NOT EXISTS (SELECT FROM tireless.forge_write n
                        WHERE n.kind = 'pull' AND (n.forge, n.owner, n.repo, n.number) = (w.forge, w.owner, w.repo, w.number)
                          AND n.written_at IS NULL AND n.job_id > w.job_id);
$$;
COMMENT ON FUNCTION tireless.pull_write(tireless.forge_write) IS
    'What a pull request write (kind pull) does, as tireless.forge_writes_due lists it, for the issue''s newest '
    'delivery not yet written (null for an older one: the newest carries its push): {job_id, number, action (open: '
    'no pull request known for the branch; update: pull_number, the one last recorded, which may have been closed '
    'since), pull_number, head_branch, head, base_branch, title, body (tireless.pull_request_text), marker (the line '
    'the body ends with), draft}.';
REVOKE ALL ON FUNCTION tireless.pull_write(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.pull_written(w tireless.forge_write, result jsonb) RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    pushed tireless.delivery;
    given_number integer;
    given_url text := pull_written.result ->> 'pull_url';
BEGIN
    IF jsonb_typeof(pull_written.result -> 'pull_number') = 'number'
       AND (pull_written.result ->> 'pull_number') ~ '^[0-9]{1,9}$' THEN
        given_number := (pull_written.result ->> 'pull_number')::integer;
    END IF;
    IF given_number IS NULL OR given_number <= 0 THEN
        RAISE EXCEPTION 'pull_number must be a positive integer, got %', coalesce(pull_written.result ->> 'pull_number', 'null')
            USING ERRCODE = 'TL009';
    END IF;
    IF given_url IS NULL OR given_url !~ '^https?://[^\x01-\x20\x7f-\x9f]+$' OR length(given_url) > 2000 THEN
        RAISE EXCEPTION 'pull_url must be an http(s) URL of at most 2000 characters, got %',
            coalesce(quote_literal(left(given_url, 300)), 'null') USING ERRCODE = 'TL009';
    END IF;
    -- The pull request shows this push and every older one of the branch still waiting: those
    -- deliveries are in it too, and their writes are done.
    SELECT * INTO pushed FROM tireless.delivery d WHERE d.job_id = w.job_id;
    UPDATE tireless.delivery d
       SET pull_number = given_number, pull_url = given_url, pull_known_at = now()
     WHERE (d.forge, d.owner, d.repo, d.number) = (pushed.forge, pushed.owner, pushed.repo, pushed.number)
       AND d.branch = pushed.branch
       AND (d.job_id = pushed.job_id
            OR (d.job_id < pushed.job_id
                AND EXISTS (SELECT FROM tireless.forge_write p
                             WHERE p.kind = 'pull' AND p.job_id = d.job_id AND p.written_at IS NULL)));
    UPDATE tireless.forge_write p
       SET written_at = now(), failures = 0, last_error = NULL, last_error_at = NULL
     WHERE p.kind = 'pull' AND (p.forge, p.owner, p.repo, p.number) = (w.forge, w.owner, w.repo, w.number)
       AND p.job_id < w.job_id AND p.written_at IS NULL
       AND EXISTS (SELECT FROM tireless.delivery d WHERE d.job_id = p.job_id AND d.branch = pushed.branch);
END;
$$;
COMMENT ON FUNCTION tireless.pull_written(tireless.forge_write, jsonb) IS
    'The forge opened, found or updated the pull request of write w''s delivery (result: {pull_number, pull_url}): '
    'recorded on the delivery, and on the older deliveries of the branch still waiting for theirs (the pull request '
    'carries their pushes), whose writes are done too. TL009 for a malformed pull_number or pull_url.';
REVOKE ALL ON FUNCTION tireless.pull_written(tireless.forge_write, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
