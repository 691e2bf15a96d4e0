-- Plans and proposals: the tasks a plan job's plan file (or a discover job's proposals file) hands
-- back, checked here; the issues the mirror opens for them once the job is delivered, each exactly
-- once (a marker in its body is looked up before creating it); the parent each child's job records.

-- The rule of a plan: a list of at most 50 tasks {title, body, lane?, depends_on?}; the first fault
-- found, naming the task and the field, or null when there is none.
CREATE OR REPLACE FUNCTION tireless.plan_problem(plan jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    tasks integer;
    task record;
    dep record;
    cycle integer;
BEGIN
    IF plan_problem.plan IS NULL OR jsonb_typeof(plan_problem.plan) <> 'array' THEN
        RETURN format('the plan must be a JSON list of tasks, got %s', coalesce(jsonb_typeof(plan_problem.plan), 'null'));
    END IF;
    tasks := jsonb_array_length(plan_problem.plan);
    IF tasks > 50 THEN
        RETURN format('the plan has %s tasks; at most 50', tasks);
    END IF;
    FOR task IN SELECT e.position - 1 AS i, e.t FROM jsonb_array_elements(plan_problem.plan) WITH ORDINALITY AS e(t, position) LOOP
        IF jsonb_typeof(task.t) <> 'object' THEN
            RETURN format('task %s must be an object {title, body, lane?, depends_on?}, got %s', task.i, jsonb_typeof(task.t));
        END IF;
        IF EXISTS (SELECT FROM jsonb_object_keys(task.t) AS k WHERE k NOT IN ('title', 'body', 'lane', 'depends_on')) THEN
            RETURN format('task %s: unknown field %s (title, body, lane, depends_on)', task.i,
                          (SELECT quote_literal(left(k, 40)) FROM jsonb_object_keys(task.t) AS k
                            WHERE k NOT IN ('title', 'body', 'lane', 'depends_on') ORDER BY k LIMIT 1));
        END IF;
        IF jsonb_typeof(task.t -> 'title') IS DISTINCT FROM 'string'
           OR length(btrim(task.t ->> 'title')) = 0 OR length(task.t ->> 'title') > 200 THEN
            RETURN format('task %s: "title" must be 1 to 200 characters', task.i);
        END IF;
        IF jsonb_typeof(task.t -> 'body') IS DISTINCT FROM 'string' OR length(task.t ->> 'body') > 60000 THEN
            RETURN format('task %s: "body" must be text of at most 60000 characters', task.i);
        END IF;
        IF task.t ? 'lane' AND jsonb_typeof(task.t -> 'lane') <> 'null'
           AND (jsonb_typeof(task.t -> 'lane') <> 'string' OR NOT tireless.is_lane_name(task.t ->> 'lane')) THEN
            RETURN format('task %s: "lane" must be 1 to 63 letters, digits, ".", "-" or "_", got %s', task.i,
                          left((task.t -> 'lane')::text, 80));
        END IF;
        IF task.t ? 'depends_on' AND jsonb_typeof(task.t -> 'depends_on') <> 'array' THEN
            RETURN format('task %s: "depends_on" must be a list of task indexes and "#N"', task.i);
        END IF;
        IF jsonb_array_length(coalesce(task.t -> 'depends_on', '[]')) > 50 THEN
            RETURN format('task %s: "depends_on" has %s entries; at most 50', task.i, jsonb_array_length(task.t -> 'depends_on'));
        END IF;
        FOR dep IN SELECT d.position - 1 AS n, d.v FROM jsonb_array_elements(coalesce(task.t -> 'depends_on', '[]')) WITH ORDINALITY AS d(v, position) LOOP
            IF NOT ((jsonb_typeof(dep.v) = 'number' AND dep.v::numeric = trunc(dep.v::numeric)
                     AND dep.v::numeric BETWEEN 0 AND tasks - 1 AND dep.v::numeric <> task.i)
                    OR (jsonb_typeof(dep.v) = 'string' AND dep.v #>> '{}' ~ '^#[1-9][0-9]{0,8}$')) THEN
                RETURN format('task %s: "depends_on" entry %s must be the index of another task (0 to %s) or "#N", got %s',
                              task.i, dep.n, tasks - 1, left(dep.v::text, 80));
            END IF;
        END LOOP;
    END LOOP;
    -- No cycle among the indexes: a task that reaches itself.
    WITH RECURSIVE edge(task, dep) AS (
        SELECT e.position - 1, (d.v)::numeric::integer
          FROM jsonb_array_elements(plan_problem.plan) WITH ORDINALITY AS e(t, position)
         CROSS JOIN jsonb_array_elements(coalesce(e.t -> 'depends_on', '[]')) AS d(v)
         WHERE jsonb_typeof(d.v) = 'number'
    ), reach(task, dep) AS (
        SELECT edge.task, edge.dep FROM edge
        UNION
        SELECT r.task, edge.dep FROM reach r JOIN edge ON edge.task = r.dep
    )
    SELECT min(r.task) INTO cycle FROM reach r WHERE r.task = r.dep;
    IF cycle IS NOT NULL THEN
        RETURN format('task %s: "depends_on" makes a cycle (task %s depends on itself through others)', cycle, cycle);
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.plan_problem(jsonb) IS
    'The first fault of a plan (or proposals) file, naming the task (its index, from 0) and the field; null when it '
    'is a list of at most 50 tasks {title: 1 to 200 characters, body: at most 60000 (room in an issue for the links), lane?: a lane name, '
    'depends_on?: at most 50 indexes of other tasks or "#N"} without a cycle.';
REVOKE ALL ON FUNCTION tireless.plan_problem(jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.plan_problem(jsonb) TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.attach_plan(job_id bigint, worker text, plan jsonb, token uuid DEFAULT NULL)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job := tireless.held_job(attach_plan.job_id, attach_plan.worker, attach_plan.token);
    problem text;
    attached integer;
BEGIN
    IF job.kind::text NOT IN ('plan', 'discover') THEN
        RAISE EXCEPTION 'job % is a % job; only a plan or discover job hands back tasks', job.id, job.kind
            USING ERRCODE = 'TL005';
    END IF;
    problem := tireless.plan_problem(attach_plan.plan);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'malformed %: %', CASE WHEN job.kind::text = 'plan' THEN 'plan' ELSE 'proposals' END, problem
            USING ERRCODE = 'TL011',
                  HINT = 'A list of at most 50 tasks {title, body, lane?, depends_on: [index or "#N"]}, without a cycle.';
    END IF;
    -- The attempt's tasks replace those of an earlier attempt (none of which was opened: the job is live).
    DELETE FROM tireless.plan_task t WHERE t.job_id = job.id AND t.child_number IS NULL;
    INSERT INTO tireless.plan_task (job_id, task, forge, owner, repo, attempt, proposal, title, body, lane, depends_on)
    SELECT job.id, e.position - 1, job.forge, job.owner, job.repo, job.attempts, job.kind::text = 'discover',
           e.t ->> 'title', e.t ->> 'body', nullif(e.t ->> 'lane', ''), coalesce(e.t -> 'depends_on', '[]')
      FROM jsonb_array_elements(attach_plan.plan) WITH ORDINALITY AS e(t, position);
    GET DIAGNOSTICS attached = ROW_COUNT;
    -- Each task's issue is a write of the outbox (tireless.forge_write), due once the job is delivered.
    INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id, task)
    SELECT 'task', t.forge, t.owner, t.repo, job.number, t.job_id, t.task
      FROM tireless.plan_task t
     WHERE t.job_id = job.id AND t.child_number IS NULL
       AND EXISTS (SELECT FROM tireless.tracked_repo r WHERE (r.forge, r.owner, r.repo) = (t.forge, t.owner, t.repo))
     ORDER BY t.task
    ON CONFLICT ON CONSTRAINT forge_write_once DO NOTHING;
    RETURN attached;
END;
$$;
COMMENT ON FUNCTION tireless.attach_plan(bigint, text, jsonb, uuid) IS
    'The holder of a plan (or discover) job attaches the tasks its agent wrote, before delivering it; they replace '
    'those of an earlier attempt, and once the job is delivered the mirror opens an issue for each (a write of the outbox, tireless.forge_write). '
    'Returns how many. TL011 naming the task and the field for a malformed plan (tireless.plan_problem): the runner '
    'then fails the attempt with that note; TL005 for a job of another kind, TL001 for an unknown job, TL004 when '
    'worker (or token) does not hold it.';
REVOKE ALL ON FUNCTION tireless.attach_plan(bigint, text, jsonb, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.attach_plan(bigint, text, jsonb, uuid) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.task_marker(job_id bigint, task integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format('<!-- tireless:task:%s:%s -->', task_marker.job_id, task_marker.task);
COMMENT ON FUNCTION tireless.task_marker(bigint, integer) IS
    'The hidden last line of the body of the issue opened for a plan''s task; the mirror counts it only in an issue '
    'opened by its own forge account.';
REVOKE ALL ON FUNCTION tireless.task_marker(bigint, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.task_write(w tireless.forge_write) RETURNS jsonb
    LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object(
               'job_id', t.job_id, 'task', t.task, 'parent_number', j.number,
               'title', left(regexp_replace(btrim(tireless.safe_comment_text(t.title)), '\s+', ' ', 'g'), 200),
               -- The task's body made safe, cut so that the issue's body fits (tireless.fit_report).
               'body', coalesce(nullif(tireless.fit_report(t.body, tireless.forge_body_limit() - 2 - length(links.text)), '')
                                || E'\n\n', '') || links.text,
               'labels', to_jsonb(ARRAY(SELECT l FROM unnest(ARRAY[CASE WHEN NOT t.proposal THEN p.label_prefix END,
                                                               p.label_prefix || '/implement',
                                                               p.label_prefix || '/agent:' || t.lane]) AS l
                                         WHERE l IS NOT NULL)),
               'marker', tireless.task_marker(t.job_id, t.task),
               'since', j.updated_at - interval '5 minutes',
               -- The issues it depends on (its tasks' children and its "#N"), which the mirror also sets
               -- as the forge's own relations where the forge has them.
               'depends_on', to_jsonb(ARRAY(SELECT CASE WHEN jsonb_typeof(d.v) = 'number'
                                                        THEN (SELECT o.child_number FROM tireless.plan_task o
                                                               WHERE o.job_id = t.job_id AND o.task = (d.v)::numeric::integer)
                                                        ELSE substr(d.v #>> '{}', 2)::integer END
                                              FROM jsonb_array_elements(t.depends_on) WITH ORDINALITY AS d(v, position)
                                             ORDER BY d.position)))
      FROM tireless.plan_task t
      JOIN tireless.job j ON j.id = t.job_id
     CROSS JOIN tireless.policy p
     CROSS JOIN LATERAL (
           SELECT 'Part of #' || j.number
                  || coalesce(E'\n\n' || (SELECT string_agg('Depends on #' || CASE WHEN jsonb_typeof(d.v) = 'number'
                                                          THEN (SELECT o.child_number::text FROM tireless.plan_task o
                                                                 WHERE o.job_id = t.job_id AND o.task = (d.v)::numeric::integer)
                                                          ELSE substr(d.v #>> '{}', 2) END, E'\n' ORDER BY d.position)
                                            FROM jsonb_array_elements(t.depends_on) WITH ORDINALITY AS d(v, position)), '')
                  || E'\n\n' || format('Opened by tireless for job %s (%s %s).', t.job_id,
                                       CASE WHEN t.proposal THEN 'proposal' ELSE 'task' END, t.task)
                  || E'\n\n' || tireless.task_marker(t.job_id, t.task) AS text) AS links
     WHERE (t.job_id, t.task) = (w.job_id, w.task)
       AND t.child_number IS NULL
       AND j.state = 'delivered' AND t.attempt = j.attempts
       -- A dependency is opened before its dependents: its number goes in their bodies.
       AND NOT EXISTS (SELECT FROM jsonb_array_elements(t.depends_on) AS d(v)
                        JOIN tireless.plan_task o ON o.job_id = t.job_id
                              AND o.task = CASE WHEN jsonb_typeof(d.v) = 'number' THEN (d.v)::numeric::integer END
                       WHERE o.child_number IS NULL);
$$;
COMMENT ON FUNCTION tireless.task_write(tireless.forge_write) IS
    'What a task write (kind task) opens, as tireless.forge_writes_due lists it: the issue of a task of a delivered '
    'plan or discover job, once the task''s dependencies are opened (null until then, or while the job is not '
    'delivered): {job_id, task, parent_number, title and body (the task''s made safe and cut so that the body fits in '
    'tireless.forge_body_limit(), "Part of #P", a "Depends on #N" line per dependency, the marker line), labels (the '
    'opt-in for a plan''s child, not for a proposal; <prefix>/implement; the agent label of its lane), marker, since '
    '(when to look from for an issue already opened with it), depends_on (the numbers of the issues it depends on: '
    'the mirror sets them as the forge''s own relations too)}.';
REVOKE ALL ON FUNCTION tireless.task_write(tireless.forge_write) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.task_written(w tireless.forge_write, result jsonb) RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    child integer;
    queued tireless.plan_task;
BEGIN
    IF jsonb_typeof(task_written.result -> 'number') = 'number' AND (task_written.result ->> 'number') ~ '^[0-9]{1,9}$' THEN
        child := (task_written.result ->> 'number')::integer;
    END IF;
    IF child IS NULL OR child < 1 THEN
        RAISE EXCEPTION 'give the child issue''s number or the error that says what failed, got number %',
            coalesce(task_written.result ->> 'number', 'null') USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.lock_repo_issues(w.forge, w.owner, w.repo);
    SELECT * INTO queued FROM tireless.plan_task t WHERE (t.job_id, t.task) = (w.job_id, w.task) FOR UPDATE;
    IF queued.child_number IS NULL THEN
        UPDATE tireless.plan_task t SET child_number = child, opened_at = now()
         WHERE (t.job_id, t.task) = (queued.job_id, queued.task);
        -- A job the poller made for the child before this was recorded (a create whose answer was
        -- lost, then read) gets its parent now.
        UPDATE tireless.job j SET parent_id = queued.job_id, updated_at = now()
         WHERE (j.forge, j.owner, j.repo, j.number) = (queued.forge, queued.owner, queued.repo, child)
           AND j.state IN ('pending', 'claimed') AND j.parent_id IS NULL AND j.id <> queued.job_id;
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.task_written(tireless.forge_write, jsonb) IS
    'The mirror opened (or found by its marker) issue result.number for the task of write w (recorded once; a live '
    'job of that issue without a parent gets the plan''s job as its parent). TL005 without a number.';
REVOKE ALL ON FUNCTION tireless.task_written(tireless.forge_write, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;


CREATE OR REPLACE FUNCTION tireless.job_tasks(job_id bigint)
    RETURNS TABLE (task integer, proposal boolean, title text, lane text, depends_on jsonb, child_number integer,
                   opened_at timestamptz, failures integer, last_error text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.task, t.proposal, t.title, t.lane, t.depends_on, t.child_number, t.opened_at, coalesce(w.failures, 0),
           w.last_error
      FROM tireless.plan_task t
      LEFT JOIN tireless.forge_write w ON w.kind = 'task' AND (w.job_id, w.task) = (t.job_id, t.task)
     WHERE t.job_id = job_tasks.job_id
     ORDER BY t.task;
$$;
COMMENT ON FUNCTION tireless.job_tasks(bigint) IS
    'The tasks a plan or discover job handed back (tireless.attach_plan), in the file''s order: each with the issue '
    'the mirror opened for it (null until then) and why its last try failed.';
REVOKE ALL ON FUNCTION tireless.job_tasks(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_tasks(bigint) TO tireless_runner, tireless_poller, tireless_admin;
