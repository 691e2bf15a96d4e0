-- Plans and proposals (issue 35, items 1 and 2): the tasks a plan or discover job's attempt handed back, and the child issues the mirror opened for them.
-- depends: 0032_dependencies

-- A SQLSTATE of its own for a plan the runner hands over (the other codes: 0003_policy, 0027_delivery,
-- 0031_conversation):
--   TL011 malformed plan: the plan (or proposals) file is not a list of at most 50 well-formed tasks
--         without a cycle; the message names the task and the field

CREATE TABLE tireless.plan_task (
    job_id        bigint      NOT NULL,
    task          integer     NOT NULL,
    forge         text        NOT NULL,
    owner         text        NOT NULL,
    repo          text        NOT NULL,
    attempt       integer     NOT NULL,
    proposal      boolean     NOT NULL,
    title         text        NOT NULL,
    body          text        NOT NULL DEFAULT '',
    lane          text,
    depends_on    jsonb       NOT NULL DEFAULT '[]',
    child_number  integer,
    opened_at     timestamptz,
    failures      integer     NOT NULL DEFAULT 0,
    next_try_at   timestamptz NOT NULL DEFAULT now(),
    last_error    text,
    last_error_at timestamptz,
    CONSTRAINT plan_task_pkey PRIMARY KEY (job_id, task),
    CONSTRAINT plan_task_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT one_task_per_child UNIQUE (forge, owner, repo, child_number),
    CONSTRAINT plan_task_index_bounded CHECK (task BETWEEN 0 AND 49),
    CONSTRAINT plan_task_title_bounded CHECK (length(title) BETWEEN 1 AND 200),
    CONSTRAINT plan_task_body_bounded CHECK (length(body) <= 60000),
    CONSTRAINT plan_task_depends_on_is_a_list CHECK (jsonb_typeof(depends_on) = 'array'),
    CONSTRAINT plan_task_child_positive CHECK (child_number > 0),
    CONSTRAINT an_opened_child_has_its_time CHECK ((child_number IS NULL) = (opened_at IS NULL)),
    CONSTRAINT plan_task_failures_not_negative CHECK (failures >= 0)
);
CREATE INDEX plan_tasks_to_open ON tireless.plan_task (forge, owner, repo, next_try_at) WHERE child_number IS NULL;
COMMENT ON TABLE tireless.plan_task IS
    'The tasks of a plan job''s plan file (children) or a discover job''s proposals file (proposals), as the last '
    'attempt that attached one handed them over (attach_plan), and the issue the mirror opened for each once the '
    'job was delivered (plan_tasks_due, record_plan_task). Private.';
COMMENT ON COLUMN tireless.plan_task.job_id IS 'The plan (or discover) job whose attempt handed the task back: the parent of the child''s job.';
COMMENT ON COLUMN tireless.plan_task.forge IS 'The job''s forge (the child is opened in the job''s repository).';
COMMENT ON COLUMN tireless.plan_task.owner IS 'The job''s repository owner.';
COMMENT ON COLUMN tireless.plan_task.repo IS 'The job''s repository.';
COMMENT ON COLUMN tireless.plan_task.task IS 'The task''s index in the file, from 0 (depends_on counts the same way).';
COMMENT ON COLUMN tireless.plan_task.attempt IS 'The attempt that attached it: only the delivering attempt''s tasks are opened.';
COMMENT ON COLUMN tireless.plan_task.proposal IS 'true: a discover job''s proposal (opened without the opt-in label); false: a plan''s child.';
COMMENT ON COLUMN tireless.plan_task.title IS 'The task''s title as the agent wrote it (1 to 200 characters).';
COMMENT ON COLUMN tireless.plan_task.body IS 'The task''s body as the agent wrote it (at most 60000 characters).';
COMMENT ON COLUMN tireless.plan_task.lane IS 'The lane its agent label names; null: no agent label.';
COMMENT ON COLUMN tireless.plan_task.depends_on IS 'The tasks (indexes) and issues ("#N") it depends on, in the file''s order.';
COMMENT ON COLUMN tireless.plan_task.child_number IS 'The issue the mirror opened (or found by its marker) for the task; null until then.';
COMMENT ON COLUMN tireless.plan_task.opened_at IS 'When the mirror recorded the child issue.';
COMMENT ON COLUMN tireless.plan_task.failures IS 'Failed attempts in a row to open the child; reset when it is recorded.';
COMMENT ON COLUMN tireless.plan_task.next_try_at IS 'When the mirror tries again after a failure (backoff with jitter).';
COMMENT ON COLUMN tireless.plan_task.last_error IS 'What the last failed attempt to open the child said.';
COMMENT ON COLUMN tireless.plan_task.last_error_at IS 'When that failure was recorded.';
COMMENT ON CONSTRAINT plan_task_of_a_job ON tireless.plan_task IS 'A pruned job takes its tasks with it (the issues stay on the forge).';
COMMENT ON CONSTRAINT one_task_per_child ON tireless.plan_task IS 'An issue is the child of one task at most: enqueue reads its parent from it.';
COMMENT ON CONSTRAINT plan_task_index_bounded ON tireless.plan_task IS 'A plan has at most 50 tasks, indexed from 0.';
COMMENT ON CONSTRAINT plan_task_title_bounded ON tireless.plan_task IS 'A task''s title is 1 to 200 characters (an issue title).';
COMMENT ON CONSTRAINT plan_task_body_bounded ON tireless.plan_task IS 'A task''s body is at most 60000 characters (an issue body holds 65536: room for the links and the marker).';
COMMENT ON CONSTRAINT plan_task_depends_on_is_a_list ON tireless.plan_task IS 'depends_on is a JSON list.';
COMMENT ON CONSTRAINT plan_task_child_positive ON tireless.plan_task IS 'An issue number is positive.';
COMMENT ON CONSTRAINT an_opened_child_has_its_time ON tireless.plan_task IS 'A recorded child has the time it was recorded, and only then.';
COMMENT ON CONSTRAINT plan_task_failures_not_negative ON tireless.plan_task IS 'Failures are counted up from 0.';
COMMENT ON INDEX tireless.plan_tasks_to_open IS 'plan_tasks_due: a repository''s tasks whose issue is still to open.';
