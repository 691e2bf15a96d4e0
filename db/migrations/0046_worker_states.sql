-- An operator's second day (issue 50): a label under the prefix that names nothing is told once per issue and label (tireless.label_report, a write of the outbox of kind unknown_label); each worker's own record of its start, beats and stop (tireless.worker_state), so the workers page tells live, idle, stopped and lost apart.
-- depends: 0045_lane_agent

-- One row per issue and label found under the label prefix naming no mode, agent or state
-- (tireless.unknown_labels): queued by the work rule when it judges the issue, posted by the
-- poller holding the issue's repository as a forge write of kind unknown_label. Never queued again for
-- the same issue and label, whatever later polls show.
CREATE TABLE tireless.label_report (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    forge      text        NOT NULL,
    owner      text        NOT NULL,
    repo       text        NOT NULL,
    number     integer     NOT NULL,
    label      text        NOT NULL,
    found_at   timestamptz NOT NULL DEFAULT now(),
    written_at timestamptz,
    CONSTRAINT label_report_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT label_report_once UNIQUE (forge, owner, repo, number, label),
    CONSTRAINT label_report_bounded CHECK (length(label) BETWEEN 1 AND 255)
);
COMMENT ON TABLE tireless.label_report IS
    'Per issue and label under the label prefix that names no mode, agent or state (a typo, tireless/implment): the '
    'comment that says so on the issue, written once (written_at). Private: the work rule queues it '
    '(tireless.report_unknown_labels), the outbox writes it; tireless.label_reports shows it.';
COMMENT ON COLUMN tireless.label_report.id IS 'The report; its comment ends with the marker <!-- tireless:label:<id> -->.';
COMMENT ON COLUMN tireless.label_report.number IS 'The issue that carries the label.';
COMMENT ON COLUMN tireless.label_report.label IS 'The label as the forge showed it.';
COMMENT ON COLUMN tireless.label_report.found_at IS 'When a poll first showed the issue with it.';
COMMENT ON COLUMN tireless.label_report.written_at IS 'When the forge confirmed the comment (null: still to write).';
COMMENT ON CONSTRAINT label_report_of_a_tracked_repo ON tireless.label_report IS 'Mirror state belongs to a tracked repository and goes with it.';
COMMENT ON CONSTRAINT label_report_once ON tireless.label_report IS 'An issue is told of a label once, never again.';
COMMENT ON CONSTRAINT label_report_bounded ON tireless.label_report IS 'A label is named in at most 255 characters (Gitea''s limit).';
GRANT SELECT ON tireless.label_report TO tireless_admin;

-- The outbox gains the kind unknown_label, which names a label report.
ALTER TABLE tireless.forge_write
    ADD COLUMN label_id bigint,
    ADD CONSTRAINT forge_write_of_a_label_report FOREIGN KEY (label_id) REFERENCES tireless.label_report (id) ON DELETE CASCADE,
    DROP CONSTRAINT forge_write_kind_known,
    ADD CONSTRAINT forge_write_kind_known CHECK (kind IN ('pull', 'task', 'comment', 'cycle', 'checklist', 'reply', 'unknown_label')),
    DROP CONSTRAINT forge_write_names_its_target,
    ADD CONSTRAINT forge_write_names_its_target CHECK (
        CASE kind WHEN 'task' THEN job_id IS NOT NULL AND task IS NOT NULL AND report_id IS NULL AND ask_id IS NULL AND label_id IS NULL
                  WHEN 'cycle' THEN report_id IS NOT NULL AND job_id IS NULL AND task IS NULL AND ask_id IS NULL AND label_id IS NULL
                  WHEN 'reply' THEN ask_id IS NOT NULL AND job_id IS NULL AND task IS NULL AND report_id IS NULL AND label_id IS NULL
                  WHEN 'unknown_label' THEN label_id IS NOT NULL AND job_id IS NULL AND task IS NULL AND report_id IS NULL AND ask_id IS NULL
                  ELSE job_id IS NOT NULL AND task IS NULL AND report_id IS NULL AND ask_id IS NULL AND label_id IS NULL END),
    DROP CONSTRAINT forge_write_once,
    ADD CONSTRAINT forge_write_once UNIQUE NULLS NOT DISTINCT (kind, job_id, task, report_id, ask_id, label_id);
COMMENT ON TABLE tireless.forge_write IS
    'The outbox of the mirror''s forge writes other than labels: one row per write queued (kind pull: a delivery''s '
    'pull request, job_id; task: a plan task''s child issue, job_id and task; comment: a finished job''s outcome '
    'comment, job_id; cycle: the comment of a dependency cycle, report_id; checklist: the edits of an outcome '
    'comment''s checklist of children, job_id, standing while the checklist written has an unchecked child; reply: '
    'the conversation''s reply to an ask, ask_id; unknown_label: the comment that names a label meaning nothing, label_id), '
    'on issue number. What is written is rendered from the store when it is due (tireless.forge_writes_due); '
    'written_at is when it landed (tireless.record_forge_write), failures, next_try_at and last_error its retries '
    '(tireless.forge_write_backoff).';
CREATE INDEX forge_writes_of_a_label_report ON tireless.forge_write (label_id) WHERE label_id IS NOT NULL;
COMMENT ON COLUMN tireless.forge_write.label_id IS 'The label report a write of kind unknown_label posts (tireless.label_report).';
COMMENT ON CONSTRAINT forge_write_of_a_label_report ON tireless.forge_write IS
    'A label report deleted takes its write with it.';
COMMENT ON CONSTRAINT forge_write_kind_known ON tireless.forge_write IS
    'A write is one of the seven kinds the mirror makes (tireless.forge_writes_due dispatches by it).';
COMMENT ON CONSTRAINT forge_write_names_its_target ON tireless.forge_write IS
    'Each kind names what it writes and nothing else: a job (pull, comment, checklist), a job and its task (task), '
    'a cycle report (cycle), an ask (reply) or a label report (unknown_label).';
COMMENT ON CONSTRAINT forge_write_once ON tireless.forge_write IS
    'A write is queued once for what it writes: queuing it again does nothing.';
COMMENT ON INDEX tireless.forge_writes_of_a_label_report IS 'The write of a label report, found by the report.';

-- Each worker's own record (the workers page's live, idle, stopped and lost): a worker says when it
-- starts, beats while it runs (whether it holds a job or not) and says when it stops; one whose
-- beat lapsed with no word of stopping is lost (killed, its host gone).
CREATE TABLE tireless.worker_state (
    worker      text        PRIMARY KEY,
    lanes       text[]      NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    beat_at     timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    stopped_at  timestamptz,
    stopped_how text,
    CONSTRAINT worker_state_named CHECK (length(worker) BETWEEN 1 AND 200),
    CONSTRAINT worker_state_stop_said CHECK (stopped_how IS NULL OR length(stopped_how) BETWEEN 1 AND 200)
);
COMMENT ON TABLE tireless.worker_state IS
    'Per worker name, its last process as it said itself: when it started, its lanes, its last beat and until when '
    'that beat holds (its lease), when it stopped and how. Private: tireless.worker_started, worker_beat and '
    'worker_stopped write it; tireless.workers shows it.';
COMMENT ON COLUMN tireless.worker_state.worker IS 'The worker''s name (tireless work --worker), unique per process.';
COMMENT ON COLUMN tireless.worker_state.lanes IS 'The lanes it serves.';
COMMENT ON COLUMN tireless.worker_state.started_at IS 'When its process started (said at start).';
COMMENT ON COLUMN tireless.worker_state.beat_at IS 'Its last beat.';
COMMENT ON COLUMN tireless.worker_state.expires_at IS
    'Until when its last beat holds (the beat plus its lease): past it with no stop said, the worker is lost.';
COMMENT ON COLUMN tireless.worker_state.stopped_at IS 'When it said it stopped (null: it has not).';
COMMENT ON COLUMN tireless.worker_state.stopped_how IS 'How it stopped, in its words (stopped by SIGINT, drained, --once).';
COMMENT ON CONSTRAINT worker_state_named ON tireless.worker_state IS 'A worker''s name has 1 to 200 characters.';
COMMENT ON CONSTRAINT worker_state_stop_said ON tireless.worker_state IS 'How a worker stopped is said in 1 to 200 characters.';
GRANT SELECT ON tireless.worker_state TO tireless_admin;
