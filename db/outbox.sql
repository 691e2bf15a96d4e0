-- The outbox of the mirror's forge writes (issue 45): the pull requests of deliveries, the issues
-- of plans' tasks, the outcome comments, the comments of dependency cycles, the edits of
-- checklists, the conversation's replies and the comments on labels that name nothing are each a
-- row of tireless.forge_write, queued by what makes them (deliver, attach_plan, mirror_writes,
-- settle_dependencies, judge_ask, a comment written with a checklist, report_unknown_labels).
-- One due function lists them, rendered from the store as it is now by
-- each kind's own function (tireless.pull_write and the others, in the file of their concern); one
-- record function takes the forge's answer, a success by each kind's own function
-- (tireless.pull_written and the others), a failure by the one backoff. The label writes are not
-- queued writes but each issue's wanted state (tireless.mirror_issue, mirror.sql); they share the
-- backoff.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.forge_write_backoff(failures integer) RETURNS interval
    LANGUAGE sql VOLATILE
    -- 15 s doubling per failure in a row, capped at an hour, jittered to between half and all of it.
    RETURN least(interval '1 hour', interval '15 seconds' * (2::float8 ^ least(greatest(forge_write_backoff.failures, 0), 20)))
           * (0.5 + random() / 2);
COMMENT ON FUNCTION tireless.forge_write_backoff(integer) IS
    'How long a forge write waits after its failures-th failure in a row (0 for the first): 15 seconds doubling per '
    'failure, capped at an hour, jittered to between half and all of it. The one backoff of the mirror''s writes '
    '(tireless.record_forge_write, and the label writes of tireless.record_mirror_failure).';
REVOKE ALL ON FUNCTION tireless.forge_write_backoff(integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.forge_writes_due(forge text, owner text, repo text, poller text, kinds text[],
                                                     max_writes integer DEFAULT 100, now timestamptz DEFAULT NULL)
    RETURNS TABLE (id bigint, kind text, number integer, payload jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF forge_writes_due.max_writes IS NULL OR forge_writes_due.max_writes NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_writes must be from 1 to 10000, got %', coalesce(forge_writes_due.max_writes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF forge_writes_due.kinds IS NULL OR cardinality(forge_writes_due.kinds) = 0
       OR array_position(forge_writes_due.kinds, NULL) IS NOT NULL
       OR NOT forge_writes_due.kinds <@ ARRAY['pull', 'task', 'comment', 'cycle', 'checklist', 'reply', 'unknown_label'] THEN
        RAISE EXCEPTION 'kinds must name at least one of pull, task, comment, cycle, checklist, reply, unknown_label, got %',
            coalesce(forge_writes_due.kinds::text, 'null') USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(forge_writes_due.forge, forge_writes_due.owner, forge_writes_due.repo, forge_writes_due.poller);
    RETURN QUERY
    SELECT w.id, w.kind, coalesce((rendered.payload ->> 'number')::integer, w.number), rendered.payload
      FROM tireless.forge_write w
     CROSS JOIN LATERAL (SELECT CASE w.kind WHEN 'pull' THEN tireless.pull_write(w)
                                            WHEN 'task' THEN tireless.task_write(w)
                                            WHEN 'comment' THEN tireless.comment_write(w)
                                            WHEN 'cycle' THEN tireless.cycle_write(w)
                                            WHEN 'checklist' THEN tireless.checklist_write(w)
                                            WHEN 'reply' THEN tireless.reply_write(w)
                                            WHEN 'unknown_label' THEN tireless.unknown_label_write(w) END AS payload) AS rendered
     WHERE (w.forge, w.owner, w.repo) = (forge_writes_due.forge, forge_writes_due.owner, forge_writes_due.repo)
       AND w.kind = ANY (forge_writes_due.kinds)
       AND w.written_at IS NULL AND w.next_try_at <= coalesce(forge_writes_due.now, now())
       AND tireless.mirror_may_write(w.forge, w.owner, w.repo, w.number)
       AND rendered.payload IS NOT NULL
     ORDER BY array_position(forge_writes_due.kinds, w.kind),
              -- A plan's tasks in the file's order (a dependency before its dependents); the others soonest first.
              CASE WHEN w.kind <> 'task' THEN w.next_try_at END, w.job_id, w.task, w.report_id, w.ask_id, w.label_id
     LIMIT forge_writes_due.max_writes;
END;
$$;
COMMENT ON FUNCTION tireless.forge_writes_due(text, text, text, text, text[], integer, timestamptz) IS
    'For a poller holding the repository''s poll lease: the forge writes of the given kinds due now (or at now, '
    'when given: a retry''s backoff passed), at most max_writes, in the order of kinds, then soonest first (a plan''s '
    'tasks in the file''s order): the write''s id, its kind, the issue or pull request it goes to, and what to write, '
    'rendered from the store as it is now by its kind''s function (pull: tireless.pull_write, task: task_write, '
    'comment: comment_write, cycle: cycle_write, checklist: checklist_write, reply: reply_write, unknown_label: '
    'unknown_label_write), which also says '
    'whether it waits (a comment for its pull request, a task for its dependencies). None for a gone issue or, for a '
    'day, an archived repository (tireless.mirror_may_write). TL004 without the lease, TL005 for bad kinds or '
    'max_writes.';
REVOKE ALL ON FUNCTION tireless.forge_writes_due(text, text, text, text, text[], integer, timestamptz) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.forge_writes_due(text, text, text, text, text[], integer, timestamptz) TO tireless_poller;

CREATE OR REPLACE FUNCTION tireless.record_forge_write(forge text, owner text, repo text, poller text, id bigint,
                                                       error text DEFAULT NULL, result jsonb DEFAULT NULL)
    RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    queued tireless.forge_write;
    standing boolean := false;
    until timestamptz;
BEGIN
    IF record_forge_write.error IS NOT NULL AND btrim(record_forge_write.error) = '' THEN
        RAISE EXCEPTION 'error must say what failed, got %', quote_literal(record_forge_write.error) USING ERRCODE = 'TL005';
    END IF;
    IF record_forge_write.error IS NOT NULL AND record_forge_write.result IS NOT NULL THEN
        RAISE EXCEPTION 'a failed write has no result: give error, or result' USING ERRCODE = 'TL005';
    END IF;
    IF record_forge_write.result IS NOT NULL AND jsonb_typeof(record_forge_write.result) <> 'object' THEN
        RAISE EXCEPTION 'result must be a JSON object, got %', left(record_forge_write.result::text, 300) USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_forge_write.forge, record_forge_write.owner, record_forge_write.repo,
                               record_forge_write.poller);
    SELECT * INTO queued FROM tireless.forge_write w
     WHERE w.id = record_forge_write.id
       AND (w.forge, w.owner, w.repo) = (record_forge_write.forge, record_forge_write.owner, record_forge_write.repo)
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no forge write % queued for %/%/%', coalesce(record_forge_write.id::text, 'null'),
            record_forge_write.forge, record_forge_write.owner, record_forge_write.repo
            USING ERRCODE = 'TL005', HINT = 'Record the writes forge_writes_due returned.';
    END IF;
    IF queued.written_at IS NOT NULL THEN
        RETURN NULL;  -- recorded twice (an answer lost, or another poller's): it landed once
    END IF;
    IF record_forge_write.error IS NOT NULL THEN
        until := now() + tireless.forge_write_backoff(queued.failures);
        UPDATE tireless.forge_write w
           SET failures = w.failures + 1, next_try_at = until,
               last_error = left(btrim(record_forge_write.error), 2000), last_error_at = now()
         WHERE w.id = queued.id;
        RETURN until;
    END IF;
    -- What the forge answered, recorded by the write's kind; a checklist stands while it may change.
    CASE queued.kind
        WHEN 'pull' THEN PERFORM tireless.pull_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'task' THEN PERFORM tireless.task_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'comment' THEN PERFORM tireless.comment_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'cycle' THEN PERFORM tireless.cycle_written(queued);
        WHEN 'checklist' THEN standing := tireless.checklist_written(queued, coalesce(record_forge_write.result, '{}'));
        WHEN 'reply' THEN PERFORM tireless.reply_written(queued);
        WHEN 'unknown_label' THEN PERFORM tireless.unknown_label_written(queued);
    END CASE;
    UPDATE tireless.forge_write w
       SET written_at = CASE WHEN standing THEN NULL ELSE coalesce(w.written_at, now()) END,
           failures = 0, next_try_at = now(), last_error = NULL, last_error_at = NULL
     WHERE w.id = queued.id;
    PERFORM tireless.repo_writable(queued.forge, queued.owner, queued.repo);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.record_forge_write(text, text, text, text, bigint, text, jsonb) IS
    'The forge''s answer to forge write id. error null: it landed, with result (pull: {pull_number, pull_url}; task: '
    '{number} of the child issue; comment: {checklist} it holds, if any; checklist: {checklist} it now shows; cycle, '
    'reply and label: none) recorded by its kind''s function (tireless.pull_written and the others); never listed again, '
    'but a checklist with an unchecked child, listed again when the children change; returns null, also for a write '
    'recorded before. Or it failed (error): counted, backed off by tireless.forge_write_backoff; returns when it is '
    'tried again; the other writes go on. TL004 without the poll lease, TL005 for a write never queued, a blank '
    'error or both error and result, TL009 for a malformed pull request.';
REVOKE ALL ON FUNCTION tireless.record_forge_write(text, text, text, text, bigint, text, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_forge_write(text, text, text, text, bigint, text, jsonb) TO tireless_poller;
