-- The conversation on tireless's pull requests and issues (docs/conversation.md): which review,
-- `/tireless` command or failing checks asks for work, who may ask, how many revisions an issue
-- gets, the job that answers, and the replies the mirror owes.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.command_in(body text, OUT verb text, OUT instruction text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The first line that is not blank must be the command; the instruction is the rest of that
    -- line and every line after it.
    SELECT lower(m[1]), btrim(m[2], E' \t\r\n')
      FROM regexp_match(coalesce(command_in.body, ''),
                        '^[ \t\r\n]*/tireless[ \t]+(revise|stop|implement|plan|discover)(?![[:alnum:]_-])(.*)$', 'i') AS m;
$$;
COMMENT ON FUNCTION tireless.command_in(text) IS
    'The `/tireless` command a comment starts with (revise, stop, implement, plan or discover, any case) and the '
    'instruction after it (the rest of its text, trimmed); nulls when the comment is no command.';
REVOKE ALL ON FUNCTION tireless.command_in(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.command_in(text) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.ask_problem(ask jsonb) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT CASE
        WHEN jsonb_typeof(ask) IS DISTINCT FROM 'object' THEN
            format('must be a JSON object, got %s', left(ask::text, 100))
        WHEN ask ->> 'source' IS NULL OR ask ->> 'source' NOT IN ('review', 'comment', 'checks') THEN
            format('"source" must be "review", "comment" or "checks", got %s', left(coalesce(ask -> 'source', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'id') NOT IN ('string', 'number') OR length(ask ->> 'id') NOT BETWEEN 1 AND 100 THEN
            format('"id" must be a string or number of 1 to 100 characters, got %s', left(coalesce(ask -> 'id', 'null')::text, 120))
        WHEN jsonb_typeof(ask -> 'number') IS DISTINCT FROM 'number'
             OR (ask -> 'number')::numeric NOT BETWEEN 1 AND 2147483647
             OR (ask -> 'number')::numeric <> trunc((ask -> 'number')::numeric) THEN
            format('"number" must be an integer from 1 to 2147483647, got %s', left(coalesce(ask -> 'number', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'author') NOT IN ('string', 'null') OR length(ask ->> 'author') > 200 THEN
            format('"author" must be a login of at most 200 characters, got %s', left((ask -> 'author')::text, 100))
        WHEN jsonb_typeof(ask -> 'permission') NOT IN ('string', 'null')
             OR ask ->> 'permission' NOT IN ('admin', 'write', 'read', 'none') THEN
            format('"permission" must be "admin", "write", "read" or "none", got %s', left((ask -> 'permission')::text, 100))
        WHEN jsonb_typeof(ask -> 'created_at') IS DISTINCT FROM 'string' OR NOT tireless.is_forge_timestamp(ask ->> 'created_at') THEN
            format('"created_at" must be an ISO 8601 timestamp with a time zone, got %s', left(coalesce(ask -> 'created_at', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'body') NOT IN ('string', 'null') THEN
            format('"body" must be a string or null, got %s', left((ask -> 'body')::text, 100))
        WHEN ask ->> 'source' = 'review' AND jsonb_typeof(ask -> 'state') IS DISTINCT FROM 'string' THEN
            format('"state" of a review must be a string, got %s', left(coalesce(ask -> 'state', 'null')::text, 100))
        WHEN jsonb_typeof(ask -> 'comments') NOT IN ('array', 'null')
             OR jsonb_path_exists(ask, '$.comments[*] ? (@.type() != "object" || @.path.type() != "string" || @.body.type() != "string")') THEN
            format('"comments" must be a list of {path, line, body}, got %s', left((ask -> 'comments')::text, 100))
        WHEN ask ->> 'source' = 'checks' AND NOT tireless.is_commit_id(ask ->> 'head') THEN
            format('"head" of checks must be a commit id, got %s', left(coalesce(ask -> 'head', 'null')::text, 100))
        WHEN ask ->> 'source' = 'checks'
             AND (jsonb_typeof(ask -> 'checks') IS DISTINCT FROM 'array'
                  OR jsonb_path_exists(ask, '$.checks[*] ? (@.type() != "object" || @.name.type() != "string" || !(@.state == "passed" || @.state == "failed" || @.state == "pending"))')) THEN
            format('"checks" must be a list of {name, state: passed|failed|pending, summary?, url?}, got %s',
                   left(coalesce(ask -> 'checks', 'null')::text, 100))
    END;
$$;
COMMENT ON FUNCTION tireless.ask_problem(jsonb) IS
    'Why one element of a record_conversation batch is malformed, or null when it is well formed.';
REVOKE ALL ON FUNCTION tireless.ask_problem(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The pull requests tireless opened for the repository's open issues: the newest one the mirror
-- recorded for each issue's branch (tireless.issue_push), and the head tireless last pushed.
CREATE OR REPLACE FUNCTION tireless.open_pulls(forge text, owner text, repo text)
    RETURNS TABLE (number integer, pull_number integer, head text)
    LANGUAGE sql STABLE
AS $$
    SELECT i.number, push.pull_number, push.head
      FROM tireless.issue i
     CROSS JOIN LATERAL tireless.issue_push(i.forge, i.owner, i.repo, i.number) AS push
     WHERE (i.forge, i.owner, i.repo) = (open_pulls.forge, open_pulls.owner, open_pulls.repo)
       AND i.state = 'open'
       AND push.pull_number IS NOT NULL
       AND EXISTS (SELECT FROM tireless.delivery d
                    WHERE (d.forge, d.owner, d.repo, d.number) = (i.forge, i.owner, i.repo, i.number)
                      AND d.pull_number IS NOT NULL)
     ORDER BY i.number;
$$;
COMMENT ON FUNCTION tireless.open_pulls(text, text, text) IS
    'Each open issue of the repository with a pull request the mirror recorded: its number, the pull request''s '
    'and the head tireless last pushed to its branch.';
REVOKE ALL ON FUNCTION tireless.open_pulls(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.conversation_to_read(forge text, owner text, repo text, poller text,
                                                         OUT comments_cursor timestamptz, OUT comments_etag text,
                                                         OUT pulls jsonb, OUT waiting boolean)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    checks_wanted boolean;
BEGIN
    PERFORM tireless.held_poll(conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo,
                               conversation_to_read.poller);
    -- A repository read for the first time starts from now: commands written before ask nothing.
    INSERT INTO tireless.conversation_read (forge, owner, repo)
    VALUES (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo)
    ON CONFLICT DO NOTHING;
    SELECT r.comments_cursor, r.comments_etag INTO conversation_to_read.comments_cursor, conversation_to_read.comments_etag
      FROM tireless.conversation_read r
     WHERE (r.forge, r.owner, r.repo) = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo);
    SELECT coalesce(rr.revise_on_failed_checks, false) INTO checks_wanted
      FROM (SELECT) AS one
      LEFT JOIN tireless.repo_revisions rr
        ON (rr.forge, rr.owner, rr.repo) = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo);
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'number', p.number, 'pull', p.pull_number, 'head', p.head, 'reviews_etag', pr.reviews_etag,
               'read_to', pr.read_to,
               'read_checks', checks_wanted AND p.head IS DISTINCT FROM pr.checks_head,
               'seen_reviews', ARRAY(SELECT a.source_id::bigint FROM tireless.ask a
                                      WHERE (a.forge, a.owner, a.repo, a.pull_number)
                                            = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo, p.pull_number)
                                        AND a.source = 'review' ORDER BY a.id))
               ORDER BY p.number), '[]')
      INTO conversation_to_read.pulls
      FROM tireless.open_pulls(conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo) AS p
      LEFT JOIN tireless.pull_read pr
        ON (pr.forge, pr.owner, pr.repo, pr.pull_number)
           = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo, p.pull_number);
    conversation_to_read.waiting := EXISTS (
        SELECT FROM tireless.ask a
         WHERE (a.forge, a.owner, a.repo) = (conversation_to_read.forge, conversation_to_read.owner, conversation_to_read.repo)
           AND a.outcome = 'waiting');
END;
$$;
COMMENT ON FUNCTION tireless.conversation_to_read(text, text, text, text) IS
    'For a poller holding the repository''s poll lease, what to read of its conversation: the comments written or '
    'edited since comments_cursor (with the listing''s ETag), and each open issue''s pull request (number, pull, '
    'head, reviews_etag, read_to: the updated_at it was last read at, read_checks: whether its head''s checks are still to read, the policy asking for them; '
    'seen_reviews: the ids of its reviews already judged), and whether asks wait for a job (then record_conversation '
    'makes it once the issue''s live job has ended, even with nothing new read). TL004 without the lease, TL008 for an '
    'untracked repository.';
REVOKE ALL ON FUNCTION tireless.conversation_to_read(text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.conversation_to_read(text, text, text, text) TO tireless_poller;

-- The revisions an issue had since a person last asked on it: jobs answering a revise ask made after
-- its newest job that answers none (a mode label, a rerun, or a command on the issue made that one).
CREATE OR REPLACE FUNCTION tireless.revisions_since_asked(forge text, owner text, repo text, number integer) RETURNS integer
    LANGUAGE sql STABLE
AS $$
    SELECT count(DISTINCT a.job_id)::integer
      FROM tireless.ask a
     WHERE (a.forge, a.owner, a.repo, a.number)
           = (revisions_since_asked.forge, revisions_since_asked.owner, revisions_since_asked.repo, revisions_since_asked.number)
       AND a.verb = 'revise' AND a.job_id IS NOT NULL
       AND a.job_id > coalesce((SELECT max(j.id) FROM tireless.job j
                                 WHERE (j.forge, j.owner, j.repo, j.number)
                                       = (a.forge, a.owner, a.repo, a.number)
                                   AND NOT EXISTS (SELECT FROM tireless.ask r
                                                    WHERE r.job_id = j.id AND r.verb = 'revise')), 0);
$$;
COMMENT ON FUNCTION tireless.revisions_since_asked(text, text, text, integer) IS
    'How many revision jobs the issue had since a person last asked on the issue itself (the newest job that '
    'answers no revise ask: a mode label, a rerun, `/tireless implement`).';
REVOKE ALL ON FUNCTION tireless.revisions_since_asked(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.stop_issue_work(forge text, owner text, repo text, number integer, note text) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    stopped bigint;
BEGIN
    UPDATE tireless.job j
       SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
           note = CASE WHEN j.state = 'pending' THEN stop_issue_work.note ELSE j.note END,
           cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
           cancel_note = CASE WHEN j.state = 'claimed' THEN stop_issue_work.note END,
           updated_at = now()
     WHERE (j.forge, j.owner, j.repo, j.number) = (stop_issue_work.forge, stop_issue_work.owner, stop_issue_work.repo, stop_issue_work.number)
       AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL))
    RETURNING j.id INTO stopped;
    UPDATE tireless.ask a SET outcome = 'withdrawn'
     WHERE (a.forge, a.owner, a.repo, a.number) = (stop_issue_work.forge, stop_issue_work.owner, stop_issue_work.repo, stop_issue_work.number)
       AND a.outcome = 'waiting';
    RETURN stopped;
END;
$$;
COMMENT ON FUNCTION tireless.stop_issue_work(text, text, text, integer, text) IS
    'Rule 2 for a `/tireless stop`: the issue''s pending job is cancelled and a claimed one asked to stop (its holder '
    'hears it at once), with note; its waiting asks are withdrawn. Returns the job it stopped, or null.';
REVOKE ALL ON FUNCTION tireless.stop_issue_work(text, text, text, integer, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- One ask, judged under the repository's lock. Returns what became of it: null (it asks nothing and is
-- not kept), or the outcome it was kept with.
CREATE OR REPLACE FUNCTION tireless.judge_ask(forge text, owner text, repo text, login text, item jsonb, read_from timestamptz)
    RETURNS text
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    ask_source text := item ->> 'source';
    made_on integer := (item ->> 'number')::integer;
    ask_author text := item ->> 'author';
    ask_time timestamptz := (item ->> 'created_at')::timestamptz;
    issue_no integer;
    pull_no integer;
    ask_verb text;
    ask_text text := coalesce(item ->> 'body', '');
    ask_detail jsonb := '[]';
    ask_outcome text := 'waiting';
    ask_refusal text;
    ask_reply text;
    asked bigint;
    asked_source_id text;
    limit_of integer;
    before tireless.ask;
    failed jsonb;
BEGIN
    IF EXISTS (SELECT FROM tireless.ask a
                WHERE (a.forge, a.owner, a.repo, a.source, a.source_id)
                      = (judge_ask.forge, judge_ask.owner, judge_ask.repo, ask_source,
                         CASE WHEN ask_source = 'checks' THEN item ->> 'head' ELSE item ->> 'id' END)) THEN
        RETURN NULL;  -- seen before: a redelivery, or a poll reading it again
    END IF;
    IF ask_source <> 'checks' AND lower(ask_author) IS NOT DISTINCT FROM lower(judge_ask.login) THEN
        RETURN NULL;  -- tireless's own words never ask
    END IF;
    -- Where it was made: one of tireless's pull requests (its issue is the delivery's), or an issue.
    SELECT d.number, d.pull_number INTO issue_no, pull_no
      FROM tireless.delivery d
     WHERE (d.forge, d.owner, d.repo, d.pull_number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, made_on)
     ORDER BY d.job_id DESC LIMIT 1;
    IF issue_no IS NULL AND ask_source = 'comment' THEN
        -- An issue, maybe one this poll is about to record for the first time. A pull request that is
        -- not tireless's is no issue of the store, so what is asked there never gets a job.
        issue_no := made_on;
    END IF;
    IF issue_no IS NULL THEN
        RETURN NULL;  -- a review or checks of a pull request that is not tireless's
    END IF;

    IF ask_source = 'comment' THEN
        SELECT c.verb, c.instruction INTO ask_verb, ask_text FROM tireless.command_in(item ->> 'body') AS c;
        IF ask_verb IS NULL OR ask_time < judge_ask.read_from - interval '1 minute' THEN
            RETURN NULL;  -- no command, or an old comment edited since: an edit asks nothing
        END IF;
        IF pull_no IS NULL AND ask_verb = 'revise' THEN
            SELECT p.pull_number INTO pull_no FROM tireless.open_pulls(judge_ask.forge, judge_ask.owner, judge_ask.repo) AS p
             WHERE p.number = issue_no;
            IF pull_no IS NULL THEN
                RETURN NULL;  -- nothing to revise
            END IF;
        ELSIF pull_no IS NOT NULL AND ask_verb IN ('implement', 'plan', 'discover') THEN
            RETURN NULL;  -- the modes are asked for on the issue
        END IF;
        ask_reply := 'react';
    ELSIF ask_source = 'review' THEN
        IF lower(item ->> 'state') <> 'changes_requested' OR pull_no IS NULL THEN
            RETURN NULL;
        END IF;
        ask_verb := 'revise';
        ask_detail := coalesce(item -> 'comments', '[]');
    ELSE
        IF pull_no IS NULL OR NOT coalesce((SELECT rr.revise_on_failed_checks FROM tireless.repo_revisions rr
                                          WHERE (rr.forge, rr.owner, rr.repo) = (judge_ask.forge, judge_ask.owner, judge_ask.repo)), false)
           OR jsonb_path_exists(item, '$.checks[*] ? (@.state == "pending")') THEN
            RETURN NULL;  -- not asked for, or not finished: read again next time
        END IF;
        SELECT coalesce(jsonb_agg(jsonb_build_object('name', c ->> 'name', 'summary', coalesce(c ->> 'summary', ''),
                                                     'url', c -> 'url') ORDER BY c ->> 'name'), '[]')
          INTO failed
          FROM jsonb_array_elements(item -> 'checks') AS c
         WHERE c ->> 'state' = 'failed';
        IF jsonb_array_length(failed) = 0 THEN
            RETURN NULL;  -- every check passed
        END IF;
        ask_verb := 'revise';
        ask_detail := failed;
        ask_text := '';
        ask_author := NULL;
        ask_time := now();
        -- The same failure on two heads in a row asks no more.
        SELECT * INTO before FROM tireless.ask a
         WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
           AND a.source = 'checks'
         ORDER BY a.id DESC LIMIT 1;
        IF FOUND AND (SELECT array_agg(c ->> 'name' ORDER BY c ->> 'name') FROM jsonb_array_elements(before.detail) AS c)
                     = (SELECT array_agg(c ->> 'name' ORDER BY c ->> 'name') FROM jsonb_array_elements(failed) AS c) THEN
            ask_outcome := 'refused';
            ask_refusal := format('the same checks failed as on %s before it', left(before.source_id, 12));
            ask_reply := 'comment';
        END IF;
    END IF;

    IF ask_outcome = 'waiting' AND ask_source <> 'checks' AND coalesce(item ->> 'permission', 'none') NOT IN ('admin', 'write') THEN
        ask_outcome := 'refused';
        ask_refusal := format('%s has no write access to %s/%s', coalesce(ask_author, 'an unknown account'), judge_ask.owner, judge_ask.repo);
        -- Said once to each person on each issue: a second refused command gets no second answer.
        ask_reply := CASE WHEN ask_source = 'comment' AND NOT EXISTS (
                          SELECT FROM tireless.ask a
                           WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
                             AND a.outcome = 'refused' AND a.reply = 'comment' AND lower(a.author) = lower(ask_author)
                             AND a.refusal LIKE '% has no write access %')
                      THEN 'comment' END;
    END IF;

    IF ask_outcome = 'waiting' AND ask_verb = 'revise'
       AND NOT EXISTS (SELECT FROM tireless.ask a
                        WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
                          AND a.outcome = 'waiting') THEN
        limit_of := coalesce((SELECT rr.max_revisions FROM tireless.repo_revisions rr
                               WHERE (rr.forge, rr.owner, rr.repo) = (judge_ask.forge, judge_ask.owner, judge_ask.repo)), 5);
        IF tireless.revisions_since_asked(judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no) >= limit_of THEN
            ask_outcome := 'refused';
            ask_refusal := format('the issue has had its %s revisions (max_revisions)', limit_of);
            -- Said in one comment until a person asks on the issue again (its newest job is then no revision).
            ask_reply := CASE WHEN NOT EXISTS (
                              SELECT FROM tireless.ask a
                               WHERE (a.forge, a.owner, a.repo, a.number) = (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no)
                                 AND a.outcome = 'refused' AND a.reply = 'comment' AND a.refusal LIKE '%(max_revisions)'
                                 AND a.seen_at > coalesce((SELECT max(j.created_at) FROM tireless.job j
                                                            WHERE (j.forge, j.owner, j.repo, j.number) = (a.forge, a.owner, a.repo, a.number)
                                                              AND NOT EXISTS (SELECT FROM tireless.ask r WHERE r.job_id = j.id AND r.verb = 'revise')),
                                                           '-infinity'))
                          THEN 'comment' END;
        END IF;
    END IF;

    IF ask_outcome = 'waiting' AND ask_verb = 'stop' THEN
        ask_outcome := 'done';
    END IF;

    INSERT INTO tireless.ask (forge, owner, repo, number, source, source_id, pull_number, verb, author, body, detail,
                              asked_at, outcome, refusal, reply,
                              job_id)
    VALUES (judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no, ask_source,
            CASE WHEN ask_source = 'checks' THEN item ->> 'head' ELSE item ->> 'id' END,
            pull_no, ask_verb, ask_author, left(ask_text, tireless.issue_body_limit()), ask_detail, ask_time, ask_outcome, ask_refusal, ask_reply,
            CASE WHEN ask_outcome = 'done'
                 THEN tireless.stop_issue_work(judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no,
                                               format('stopped by %s (/tireless stop)', ask_author)) END)
    RETURNING ask.id, ask.source_id INTO asked, asked_source_id;
    -- The reply owed is a write of the outbox (tireless.forge_write): a reaction needs the command's id.
    IF ask_reply = 'comment' OR (ask_reply IS NOT NULL AND asked_source_id ~ '^[0-9]{1,18}$') THEN
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, ask_id)
        VALUES ('reply', judge_ask.forge, judge_ask.owner, judge_ask.repo, issue_no, asked);
    END IF;
    RETURN ask_outcome;
END;
$$;
COMMENT ON FUNCTION tireless.judge_ask(text, text, text, text, jsonb, timestamptz) IS
    'The conversation''s rule for one well-formed ask of record_conversation (docs/conversation.md): kept once per '
    'forge item, and only when it asks for something: a `/tireless` command or a review requesting changes by a '
    'person with write access other than tireless''s login, on tireless''s pull request or the issue; failed checks '
    'on the head, when the repository''s policy asks for them. Refused when the author may not ask, the issue had '
    'its max_revisions, or the same checks failed as on the head before; a stop is carried out at once. Returns '
    'the outcome kept, or null for an ask that asks nothing.';
REVOKE ALL ON FUNCTION tireless.judge_ask(text, text, text, text, jsonb, timestamptz) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The job for each issue whose asks wait and which has no live job: one job answers every ask
-- waiting then. A command on the issue asks for its mode; otherwise it is a revision.
CREATE OR REPLACE FUNCTION tireless.answer_waiting_asks(forge text, owner text, repo text) RETURNS integer
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    waiting record;
    made tireless.job;
    created integer := 0;
BEGIN
    FOR waiting IN
        SELECT a.number,
               (array_agg(a.verb ORDER BY a.id DESC) FILTER (WHERE a.verb IN ('implement', 'plan', 'discover')))[1] AS mode,
               (array_agg(a ORDER BY a.id DESC))[1] AS newest
          FROM tireless.ask a
         WHERE (a.forge, a.owner, a.repo) = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo)
           AND a.outcome = 'waiting'
           AND EXISTS (SELECT FROM tireless.issue i
                        WHERE (i.forge, i.owner, i.repo, i.number) = (a.forge, a.owner, a.repo, a.number) AND i.state = 'open')
           AND NOT EXISTS (SELECT FROM tireless.job j
                            WHERE (j.forge, j.owner, j.repo, j.number) = (a.forge, a.owner, a.repo, a.number)
                              AND j.state IN ('pending', 'claimed'))
         GROUP BY a.number
         ORDER BY a.number
    LOOP
        INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, note)
        SELECT answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number, i.title,
               coalesce(i.labels, '{}'), coalesce(waiting.mode, 'implement')::tireless.job_kind,
               tireless.lane_for(coalesce(waiting.mode, 'implement'), coalesce(i.labels, '{}')),
               CASE WHEN waiting.mode IS NOT NULL
                    THEN format('asked by %s in comment %s', (waiting.newest).author, (waiting.newest).source_id)
                    ELSE format('revision %s of #%s, asked %s',
                                tireless.revisions_since_asked(answer_waiting_asks.forge, answer_waiting_asks.owner,
                                                               answer_waiting_asks.repo, waiting.number) + 1,
                                waiting.number,
                                CASE (waiting.newest).source
                                    WHEN 'checks' THEN format('by failed checks on %s', left((waiting.newest).source_id, 12))
                                    ELSE format('by %s in %s %s', (waiting.newest).author, (waiting.newest).source,
                                                (waiting.newest).source_id) END) END
          FROM tireless.issue i
         WHERE (i.forge, i.owner, i.repo, i.number)
               = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number)
        RETURNING * INTO made;
        IF waiting.mode IS NOT NULL THEN
            -- The command answered the issue's request: its mode label, if it carries one, asks no second job.
            UPDATE tireless.issue i SET answered = true, changed_at = now()
             WHERE (i.forge, i.owner, i.repo, i.number)
                   = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number)
               AND i.asks_since IS NOT NULL AND NOT i.answered;
        END IF;
        UPDATE tireless.ask a SET outcome = 'answered', job_id = made.id
         WHERE (a.forge, a.owner, a.repo, a.number)
               = (answer_waiting_asks.forge, answer_waiting_asks.owner, answer_waiting_asks.repo, waiting.number)
           AND a.outcome = 'waiting';
        PERFORM tireless.announce_work(made.lane);
        created := created + 1;
    END LOOP;
    RETURN created;
END;
$$;
COMMENT ON FUNCTION tireless.answer_waiting_asks(text, text, text) IS
    'Rule 1 for the conversation: a pending job for each open issue the store has read whose asks wait and that has '
    'no live job, answering all of them: of the kind a command on the issue asked for, else an implement revision '
    '(note: "revision 2 of #14, asked by alice in review 123"); its lane from the issue''s labels. Returns how many.';
REVOKE ALL ON FUNCTION tireless.answer_waiting_asks(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_conversation(
    forge text, owner text, repo text, poller text, login text, asks jsonb,
    comments_cursor timestamptz DEFAULT NULL, comments_etag text DEFAULT NULL, pulls jsonb DEFAULT '[]',
    OUT asked integer, OUT refused integer, OUT created integer, OUT stopped integer, OUT skipped text[]
)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    item record;
    problem text;
    judged text;
    read_from timestamptz;
BEGIN
    IF jsonb_typeof(record_conversation.asks) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'asks must be a JSON array, got %', left(coalesce(record_conversation.asks::text, 'null'), 100)
            USING ERRCODE = 'TL010';
    END IF;
    IF jsonb_array_length(record_conversation.asks) > 10000 THEN
        RAISE EXCEPTION 'a batch holds at most 10000 asks, got %', jsonb_array_length(record_conversation.asks)
            USING ERRCODE = 'TL010';
    END IF;
    IF jsonb_typeof(record_conversation.pulls) IS DISTINCT FROM 'array'
       OR jsonb_path_exists(record_conversation.pulls, '$[*] ? (@.type() != "object" || @.pull.type() != "number")') THEN
        RAISE EXCEPTION 'pulls must be a JSON array of {pull, reviews_etag?, read_to?, checks_head?}, got %',
            left(coalesce(record_conversation.pulls::text, 'null'), 100) USING ERRCODE = 'TL010';
    END IF;
    IF length(record_conversation.comments_etag) > 1000 THEN
        RAISE EXCEPTION 'comments_etag must be at most 1000 characters, got %', length(record_conversation.comments_etag)
            USING ERRCODE = 'TL005';
    END IF;
    IF length(record_conversation.login) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'login must be tireless''s own account on the forge (null: unknown), got %',
            coalesce(quote_literal(left(record_conversation.login, 220)), 'null') USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_conversation.forge, record_conversation.owner, record_conversation.repo,
                               record_conversation.poller);
    PERFORM tireless.lock_repo_issues(record_conversation.forge, record_conversation.owner, record_conversation.repo);
    INSERT INTO tireless.conversation_read (forge, owner, repo)
    VALUES (record_conversation.forge, record_conversation.owner, record_conversation.repo)
    ON CONFLICT DO NOTHING;
    SELECT r.comments_cursor INTO read_from FROM tireless.conversation_read r
     WHERE (r.forge, r.owner, r.repo) = (record_conversation.forge, record_conversation.owner, record_conversation.repo)
       FOR UPDATE;

    asked := 0;
    refused := 0;
    stopped := 0;
    skipped := '{}';
    FOR item IN
        SELECT e.value, e.position - 1 AS position
          FROM jsonb_array_elements(record_conversation.asks) WITH ORDINALITY AS e(value, position)
         ORDER BY CASE WHEN tireless.ask_problem(e.value) IS NULL THEN e.value ->> 'created_at' END, e.position
    LOOP
        problem := tireless.ask_problem(item.value);
        IF problem IS NOT NULL THEN
            -- Input from a forge: one odd item is reported and skipped, never blocks the others.
            skipped := skipped || format('ask at index %s: %s', item.position, problem);
            CONTINUE;
        END IF;
        judged := tireless.judge_ask(record_conversation.forge, record_conversation.owner, record_conversation.repo,
                                     record_conversation.login, item.value, read_from);
        asked := asked + coalesce(judged IN ('waiting', 'done'), false)::integer;
        refused := refused + coalesce(judged = 'refused', false)::integer;
        stopped := stopped + coalesce(judged = 'done', false)::integer;
    END LOOP;

    UPDATE tireless.conversation_read r
       SET comments_cursor = greatest(r.comments_cursor, record_conversation.comments_cursor),
           comments_etag = coalesce(record_conversation.comments_etag, r.comments_etag)
     WHERE (r.forge, r.owner, r.repo) = (record_conversation.forge, record_conversation.owner, record_conversation.repo);
    INSERT INTO tireless.pull_read AS pr (forge, owner, repo, pull_number, reviews_etag, read_to, checks_head)
    SELECT record_conversation.forge, record_conversation.owner, record_conversation.repo, (p ->> 'pull')::integer,
           left(p ->> 'reviews_etag', 1000),
           CASE WHEN tireless.is_forge_timestamp(p ->> 'read_to') THEN (p ->> 'read_to')::timestamptz END,
           CASE WHEN tireless.is_commit_id(p ->> 'checks_head') THEN p ->> 'checks_head' END
      FROM jsonb_array_elements(record_conversation.pulls) AS p
    ON CONFLICT ON CONSTRAINT one_read_per_pull DO UPDATE
       SET reviews_etag = coalesce(excluded.reviews_etag, pr.reviews_etag),
           read_to = greatest(excluded.read_to, pr.read_to),
           checks_head = coalesce(excluded.checks_head, pr.checks_head);

    created := tireless.answer_waiting_asks(record_conversation.forge, record_conversation.owner, record_conversation.repo);
END;
$$;
COMMENT ON FUNCTION tireless.record_conversation(text, text, text, text, text, jsonb, timestamptz, text, jsonb) IS
    'What a poller holding the repository''s poll lease read of its conversation, in one transaction: asks, a '
    'JSON array of {source: review|comment|checks, id, number (the pull request or issue it was made on), author, '
    'permission (admin|write|read|none), created_at, body, state (a review''s), comments [{path, line, body}], head '
    'and checks [{name, state: passed|failed|pending, summary, url}] (checks)}, each judged by judge_ask (login: '
    'tireless''s own account, whose words never ask; null when the forge would not say); then a job for each issue whose asks wait and that has no live '
    'job. Stores the comments cursor (never moved back) and ETag, and per pull request {pull, reviews_etag, '
    'read_to, checks_head}. A malformed ask is skipped and reported in skipped. Returns asked, refused, created, stopped. '
    'TL010 when asks or pulls is not an array, TL004 without the lease, TL008 for an untracked repository.';
REVOKE ALL ON FUNCTION tireless.record_conversation(text, text, text, text, text, jsonb, timestamptz, text, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_conversation(text, text, text, text, text, jsonb, timestamptz, text, jsonb) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.job_asks(job_id bigint)
    RETURNS TABLE (ask_id bigint, source text, source_id text, pull_number integer, verb text, author text, body text,
                   detail jsonb, asked_at timestamptz, outcome text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT a.id, a.source, a.source_id, a.pull_number, a.verb, a.author, a.body, a.detail, a.asked_at, a.outcome
      FROM tireless.ask a
     WHERE a.job_id = job_asks.job_id
     ORDER BY a.id;
$$;
COMMENT ON FUNCTION tireless.job_asks(bigint) IS
    'The asks a job answers, oldest first (for a revision: the reviews, commands and failed checks that asked for '
    'it, which the runner hands the agent in TIRELESS_REVIEW_FILE), or the stop that stopped it; empty for a job '
    'asked by its labels.';
REVOKE ALL ON FUNCTION tireless.job_asks(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_asks(bigint) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_repo_revisions(forge text, owner text, repo text,
                                                       revise_on_failed_checks boolean DEFAULT NULL,
                                                       max_revisions integer DEFAULT NULL)
    RETURNS tireless.repo_revisions
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.repo_revisions;
BEGIN
    IF set_repo_revisions.max_revisions NOT BETWEEN 0 AND 100 THEN
        RAISE EXCEPTION 'max_revisions must be from 0 to 100, got %', set_repo_revisions.max_revisions USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.check_tracked(set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo);
    IF num_nonnulls(set_repo_revisions.revise_on_failed_checks, set_repo_revisions.max_revisions) = 0 THEN
        SELECT * INTO result FROM tireless.repo_revisions rr
         WHERE (rr.forge, rr.owner, rr.repo) = (set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo);
        IF NOT FOUND THEN
            result := ROW(set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo, false, 5);
        END IF;
        RETURN result;
    END IF;
    INSERT INTO tireless.repo_revisions AS rr (forge, owner, repo, revise_on_failed_checks, max_revisions)
    VALUES (set_repo_revisions.forge, set_repo_revisions.owner, set_repo_revisions.repo,
            coalesce(set_repo_revisions.revise_on_failed_checks, false), coalesce(set_repo_revisions.max_revisions, 5))
    ON CONFLICT ON CONSTRAINT one_revision_policy_per_repo DO UPDATE
       SET revise_on_failed_checks = coalesce(set_repo_revisions.revise_on_failed_checks, rr.revise_on_failed_checks),
           max_revisions = coalesce(set_repo_revisions.max_revisions, rr.max_revisions)
    RETURNING rr.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_revisions(text, text, text, boolean, integer) IS
    '(admin) The tracked repository''s revision policy: whether failed checks on tireless''s pull request ask for a '
    'revision (revise_on_failed_checks, default false) and how many revisions an issue gets after a person last '
    'asked on it (max_revisions, 0 to 100, default 5). A null argument leaves its setting as it is. Returns the '
    'policy. TL005 for a bad limit, TL008 when the repository is not tracked.';
REVOKE ALL ON FUNCTION tireless.set_repo_revisions(text, text, text, boolean, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_repo_revisions(text, text, text, boolean, integer) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.ask_reply_text(ask tireless.ask) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT tireless.safe_comment_text(CASE
        WHEN ask.refusal LIKE '% has no write access %' THEN
            format('Only people with write access to %s/%s can ask tireless for work: `/tireless %s` by %s asks nothing.',
                   ask.owner, ask.repo, ask.verb, coalesce(ask.author, 'an unknown account'))
        WHEN ask.refusal LIKE '%(max_revisions)' THEN
            format('No revision of #%s is asked: %s. Nothing more is asked until a person with write access asks again '
                   'on the issue (its mode label, or `/tireless implement` there).', ask.number, ask.refusal)
        ELSE
            format('No revision is asked for the failed checks on %s (%s): %s. A review or `/tireless revise` still '
                   'asks for one.', left(ask.source_id, 12),
                   -- The checks' names, cut to 4000 characters: the reply fits in tireless.forge_body_limit().
                   (SELECT CASE WHEN length(n.names) > 4000 THEN left(n.names, 3999) || '…' ELSE n.names END
                      FROM (SELECT string_agg(c ->> 'name', ', ' ORDER BY c ->> 'name') AS names
                              FROM jsonb_array_elements(ask.detail) AS c) AS n),
                   ask.refusal)
    END) || E'\n\n' || format('<!-- tireless:ask:%s -->', ask.id);
$$;
COMMENT ON FUNCTION tireless.ask_reply_text(tireless.ask) IS
    'The comment that answers a refused ask, made safe to post (safe_comment_text), ending with its marker line; '
    'the failed checks'' names cut to 4000 characters, so that it fits in tireless.forge_body_limit().';
REVOKE ALL ON FUNCTION tireless.ask_reply_text(tireless.ask) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.reply_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('ask_id', a.id, 'number', coalesce(a.pull_number, a.number), 'reply', a.reply,
                              'comment_id', CASE WHEN a.source = 'comment' AND a.source_id ~ '^[0-9]{1,18}$'
                                                 THEN a.source_id::bigint END,
                              'body', CASE WHEN a.reply = 'comment' THEN tireless.ask_reply_text(a) END,
                              'marker', CASE WHEN a.reply = 'comment' THEN format('<!-- tireless:ask:%s -->', a.id) END)
      FROM tireless.ask a
     WHERE a.id = w.ask_id AND a.reply IS NOT NULL AND a.replied_at IS NULL;
$$;
COMMENT ON FUNCTION tireless.reply_write(tireless.forge_write) IS
    'What a reply write (kind reply) says, as tireless.forge_writes_due lists it: {ask_id, number (the pull request '
    'or issue where the ask was made), reply (react: +1 on the command comment_id, for a command acted on; comment: '
    'body, ending with marker, for a refused ask), comment_id, body, marker}.';
REVOKE ALL ON FUNCTION tireless.reply_write(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.reply_written(w tireless.forge_write) RETURNS void
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    UPDATE tireless.ask a SET replied_at = coalesce(a.replied_at, now()) WHERE a.id = w.ask_id;
END;
COMMENT ON FUNCTION tireless.reply_written(tireless.forge_write) IS
    'The forge shows the reply of write w: the ask owes it no more.';
REVOKE ALL ON FUNCTION tireless.reply_written(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
