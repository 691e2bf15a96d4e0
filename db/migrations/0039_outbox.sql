-- One outbox of forge writes (issue 45): the pull requests, children, outcome comments, cycle comments, checklist edits and conversation replies the mirror owes move into tireless.forge_write, with one backoff; their old queue columns and tireless.mirror_pull go.
-- depends: 0038_ended_claims

CREATE TABLE tireless.forge_write (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind text NOT NULL,
    forge text NOT NULL,
    owner text NOT NULL,
    repo text NOT NULL,
    number integer NOT NULL,
    job_id bigint,
    task integer,
    report_id bigint,
    ask_id bigint,
    queued_at timestamptz NOT NULL DEFAULT now(),
    written_at timestamptz,
    failures integer NOT NULL DEFAULT 0,
    next_try_at timestamptz NOT NULL DEFAULT now(),
    last_error text,
    last_error_at timestamptz,
    CONSTRAINT forge_write_kind_known CHECK (kind IN ('pull', 'task', 'comment', 'cycle', 'checklist', 'reply')),
    CONSTRAINT forge_write_names_its_target CHECK (
        CASE kind WHEN 'task' THEN job_id IS NOT NULL AND task IS NOT NULL AND report_id IS NULL AND ask_id IS NULL
                  WHEN 'cycle' THEN report_id IS NOT NULL AND job_id IS NULL AND task IS NULL AND ask_id IS NULL
                  WHEN 'reply' THEN ask_id IS NOT NULL AND job_id IS NULL AND task IS NULL AND report_id IS NULL
                  ELSE job_id IS NOT NULL AND task IS NULL AND report_id IS NULL AND ask_id IS NULL END),
    CONSTRAINT forge_write_failures_not_negative CHECK (failures >= 0),
    CONSTRAINT forge_write_once UNIQUE NULLS NOT DISTINCT (kind, job_id, task, report_id, ask_id),
    CONSTRAINT forge_write_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT forge_write_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT forge_write_of_a_task FOREIGN KEY (job_id, task) REFERENCES tireless.plan_task (job_id, task) ON DELETE CASCADE,
    CONSTRAINT forge_write_of_a_cycle_report FOREIGN KEY (report_id) REFERENCES tireless.cycle_report (id) ON DELETE CASCADE,
    CONSTRAINT forge_write_of_an_ask FOREIGN KEY (ask_id) REFERENCES tireless.ask (id) ON DELETE CASCADE
);
COMMENT ON TABLE tireless.forge_write IS
    'The outbox of the mirror''s forge writes other than labels: one row per write queued (kind pull: a delivery''s '
    'pull request, job_id; task: a plan task''s child issue, job_id and task; comment: a finished job''s outcome '
    'comment, job_id; cycle: the comment of a dependency cycle, report_id; checklist: the edits of an outcome '
    'comment''s checklist of children, job_id, standing while the checklist written has an unchecked child; reply: '
    'the conversation''s reply to an ask, ask_id), on issue number. What is written is rendered from the store when '
    'it is due (tireless.forge_writes_due); written_at is when it landed (tireless.record_forge_write), failures, '
    'next_try_at and last_error its retries (tireless.forge_write_backoff).';
CREATE INDEX forge_writes_due ON tireless.forge_write (forge, owner, repo, kind, next_try_at) WHERE written_at IS NULL;
CREATE INDEX forge_writes_of_a_job ON tireless.forge_write (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX forge_writes_of_a_report ON tireless.forge_write (report_id) WHERE report_id IS NOT NULL;
CREATE INDEX forge_writes_of_an_ask ON tireless.forge_write (ask_id) WHERE ask_id IS NOT NULL;

-- The writes in flight move in with their retries; a written pull request keeps its record (the
-- deliveries view shows when it was queued and written), the other kinds' written state stays in
-- their own tables.
INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id, queued_at, written_at, failures, next_try_at,
                                  last_error, last_error_at)
SELECT 'pull', p.forge, p.owner, p.repo, p.number, p.job_id, p.queued_at, p.written_at, p.failures, p.next_try_at,
       p.last_error, p.last_error_at
  FROM tireless.mirror_pull p
 ORDER BY p.job_id;
INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id, task, failures, next_try_at, last_error, last_error_at)
SELECT 'task', t.forge, t.owner, t.repo, j.number, t.job_id, t.task, t.failures, t.next_try_at, t.last_error, t.last_error_at
  FROM tireless.plan_task t
  JOIN tireless.job j ON j.id = t.job_id
 WHERE t.child_number IS NULL
 ORDER BY t.job_id, t.task;
INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id, failures, next_try_at, last_error, last_error_at)
SELECT 'comment', c.forge, c.owner, c.repo, c.number, c.job_id, c.failures, c.next_try_at, c.last_error, c.last_error_at
  FROM tireless.mirror_comment c
 WHERE c.written_at IS NULL
 ORDER BY c.job_id;
INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id, failures, next_try_at, last_error, last_error_at)
SELECT 'checklist', c.forge, c.owner, c.repo, c.number, c.job_id, c.checklist_failures, c.checklist_next_try_at,
       c.checklist_error, c.checklist_error_at
  FROM tireless.mirror_comment c
 WHERE c.written_at IS NOT NULL AND strpos(c.checklist, '- [ ] ') > 0
 ORDER BY c.job_id;
INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, report_id, queued_at, failures, next_try_at, last_error,
                                  last_error_at)
SELECT 'cycle', r.forge, r.owner, r.repo, r.number, r.id, r.queued_at, r.failures, r.next_try_at, r.last_error, r.last_error_at
  FROM tireless.cycle_report r
 WHERE r.written_at IS NULL AND r.broken_at IS NULL
 ORDER BY r.id;
INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, ask_id, failures, next_try_at, last_error, last_error_at)
SELECT 'reply', a.forge, a.owner, a.repo, a.number, a.id, a.reply_failures, a.next_reply_at, a.reply_error,
       CASE WHEN a.reply_error IS NOT NULL THEN now() END
  FROM tireless.ask a
 WHERE a.reply IS NOT NULL AND a.replied_at IS NULL AND (a.reply = 'comment' OR a.source_id ~ '^[0-9]{1,18}$')
 ORDER BY a.id;

-- The views that show the old columns are made again by the files, from the outbox.
DROP VIEW IF EXISTS tireless.deliveries;
DROP VIEW IF EXISTS tireless.cycle_reports;
DROP TABLE tireless.mirror_pull;
ALTER TABLE tireless.mirror_comment
    DROP COLUMN failures, DROP COLUMN next_try_at, DROP COLUMN last_error, DROP COLUMN last_error_at,
    DROP COLUMN checklist_failures, DROP COLUMN checklist_next_try_at, DROP COLUMN checklist_error,
    DROP COLUMN checklist_error_at;
ALTER TABLE tireless.plan_task
    DROP COLUMN failures, DROP COLUMN next_try_at, DROP COLUMN last_error, DROP COLUMN last_error_at;
ALTER TABLE tireless.cycle_report
    DROP COLUMN failures, DROP COLUMN next_try_at, DROP COLUMN last_error, DROP COLUMN last_error_at;
ALTER TABLE tireless.ask DROP COLUMN reply_failures, DROP COLUMN next_reply_at, DROP COLUMN reply_error;

-- The six pairs of due and record functions become tireless.forge_writes_due and tireless.record_forge_write.
DROP FUNCTION IF EXISTS tireless.mirror_pulls_due(text, text, text, text, integer);
DROP FUNCTION IF EXISTS tireless.record_mirror_pull(text, text, text, text, bigint, integer, text, text);
DROP FUNCTION IF EXISTS tireless.plan_tasks_due(text, text, text, text, integer);
DROP FUNCTION IF EXISTS tireless.record_plan_task(text, text, text, text, bigint, integer, integer, text);
DROP FUNCTION IF EXISTS tireless.mirror_comments_due(text, text, text, text, integer);
DROP FUNCTION IF EXISTS tireless.record_mirror_comment(text, text, text, text, bigint, text, text);
DROP FUNCTION IF EXISTS tireless.cycle_reports_due(text, text, text, text, integer);
DROP FUNCTION IF EXISTS tireless.record_cycle_report(text, text, text, text, bigint, text);
DROP FUNCTION IF EXISTS tireless.mirror_checklists_due(text, text, text, text, integer);
DROP FUNCTION IF EXISTS tireless.record_mirror_checklist(text, text, text, text, bigint, text, text);
DROP FUNCTION IF EXISTS tireless.conversation_replies_due(text, text, text, text, integer);
DROP FUNCTION IF EXISTS tireless.record_conversation_reply(text, text, text, text, bigint, text);
-- job_tasks' failures and last_error now come from the outbox: same columns, the function is replaced in place.

COMMENT ON CONSTRAINT forge_write_kind_known ON tireless.forge_write IS
    'A write is one of the six kinds the mirror makes (tireless.forge_writes_due dispatches by it).';
COMMENT ON CONSTRAINT forge_write_names_its_target ON tireless.forge_write IS
    'Each kind names what it writes and nothing else: a job (pull, comment, checklist), a job and its task (task), '
    'a cycle report (cycle) or an ask (reply).';
COMMENT ON CONSTRAINT forge_write_failures_not_negative ON tireless.forge_write IS
    'The failures in a row of a write are counted from 0.';
COMMENT ON CONSTRAINT forge_write_once ON tireless.forge_write IS
    'A write is queued once for what it writes: queuing it again does nothing.';
COMMENT ON CONSTRAINT forge_write_of_a_tracked_repo ON tireless.forge_write IS
    'A repository no longer tracked takes its writes with it: nothing is mirrored there.';
COMMENT ON CONSTRAINT forge_write_of_a_job ON tireless.forge_write IS
    'A job pruned takes its writes with it.';
COMMENT ON CONSTRAINT forge_write_of_a_task ON tireless.forge_write IS
    'A plan task replaced by a later attempt''s plan takes its write with it.';
COMMENT ON CONSTRAINT forge_write_of_a_cycle_report ON tireless.forge_write IS
    'A cycle report deleted takes its write with it.';
COMMENT ON CONSTRAINT forge_write_of_an_ask ON tireless.forge_write IS
    'An ask deleted takes its reply with it.';
