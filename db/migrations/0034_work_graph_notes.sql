-- The work graph's notes on the forge (issue 35): a dependency cycle reported once on each issue in it, and the children's checklist in a plan's outcome comment, kept current by editing that comment.
-- depends: 0033_plans

-- One comment per issue and distinct cycle: queued by settle_dependencies when it finds a pending
-- job's issue on a cycle, posted by the poller holding the issue's repository (cycle_reports_due,
-- record_cycle_report). A cycle that is broken (the issue's pending job is judged on no cycle, or
-- on another) gets broken_at; the same cycle made again later is a new report.
CREATE TABLE tireless.cycle_report (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    forge         text        NOT NULL,
    owner         text        NOT NULL,
    repo          text        NOT NULL,
    number        integer     NOT NULL,
    cycle         text        NOT NULL,
    job_id        bigint,
    queued_at     timestamptz NOT NULL DEFAULT now(),
    broken_at     timestamptz,
    written_at    timestamptz,
    failures      integer     NOT NULL DEFAULT 0,
    next_try_at   timestamptz NOT NULL DEFAULT now(),
    last_error    text,
    last_error_at timestamptz,
    CONSTRAINT cycle_report_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT cycle_report_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE SET NULL,
    CONSTRAINT cycle_report_failures_not_negative CHECK (failures >= 0),
    CONSTRAINT cycle_report_bounded CHECK (length(cycle) BETWEEN 1 AND 4000)
);
CREATE UNIQUE INDEX one_report_per_standing_cycle ON tireless.cycle_report (forge, owner, repo, number, cycle)
    WHERE broken_at IS NULL;
CREATE INDEX cycle_reports_due ON tireless.cycle_report (forge, owner, repo, next_try_at)
    WHERE written_at IS NULL AND broken_at IS NULL;
COMMENT ON TABLE tireless.cycle_report IS
    'Per issue with a pending job on a dependency cycle, and per distinct cycle: the comment that says so on the '
    'issue, written once (written_at), and the retries of a failing post. Private: settle_dependencies queues, '
    'cycle_reports_due and record_cycle_report keep it; tireless.cycle_reports shows it.';
COMMENT ON COLUMN tireless.cycle_report.id IS 'The report; its comment ends with the marker <!-- tireless:cycle:<id> -->.';
COMMENT ON COLUMN tireless.cycle_report.number IS 'The issue the comment goes on (one of the cycle).';
COMMENT ON COLUMN tireless.cycle_report.cycle IS 'The cycle as the issue''s job note names it: #3 → #4 → #3.';
COMMENT ON COLUMN tireless.cycle_report.job_id IS 'The pending job that was found waiting on the cycle (null once pruned).';
COMMENT ON COLUMN tireless.cycle_report.queued_at IS 'When the cycle was found.';
COMMENT ON COLUMN tireless.cycle_report.broken_at IS
    'When the issue''s pending job was judged on no cycle or another one: a comment not yet written is dropped, '
    'and the same cycle made again is reported again.';
COMMENT ON COLUMN tireless.cycle_report.written_at IS 'When the forge confirmed the comment (null: still to write).';
COMMENT ON COLUMN tireless.cycle_report.failures IS 'Failed posts in a row.';
COMMENT ON COLUMN tireless.cycle_report.next_try_at IS 'When the mirror tries again after a failure (backoff with jitter).';
COMMENT ON COLUMN tireless.cycle_report.last_error IS 'What the last failed post said.';
COMMENT ON COLUMN tireless.cycle_report.last_error_at IS 'When that failure was recorded.';
COMMENT ON INDEX tireless.one_report_per_standing_cycle IS 'An issue is told of a standing cycle once.';
COMMENT ON INDEX tireless.cycle_reports_due IS 'The cycle comments still to write, per repository, by when they are due.';
COMMENT ON CONSTRAINT cycle_report_of_a_tracked_repo ON tireless.cycle_report IS 'Mirror state belongs to a tracked repository and goes with it.';
COMMENT ON CONSTRAINT cycle_report_of_a_job ON tireless.cycle_report IS 'A pruned job leaves its report (the issue was told).';
COMMENT ON CONSTRAINT cycle_report_failures_not_negative ON tireless.cycle_report IS 'Failures in a row are not negative.';
COMMENT ON CONSTRAINT cycle_report_bounded ON tireless.cycle_report IS 'A cycle is named in at most 4000 characters (20 steps).';
GRANT SELECT ON tireless.cycle_report TO tireless_admin;

-- The checklist of a plan's (or discovery's) children in its outcome comment: what was last written
-- (by the post, then by each edit), so that an unchanged checklist costs no request.
ALTER TABLE tireless.mirror_comment
    ADD COLUMN checklist               text,
    ADD COLUMN checklist_written_at    timestamptz,
    ADD COLUMN checklist_failures      integer NOT NULL DEFAULT 0,
    ADD COLUMN checklist_next_try_at   timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN checklist_error         text,
    ADD COLUMN checklist_error_at      timestamptz,
    ADD CONSTRAINT mirror_comment_checklist_failures_not_negative CHECK (checklist_failures >= 0);
CREATE INDEX mirror_checklists_open ON tireless.mirror_comment (forge, owner, repo, checklist_next_try_at)
    WHERE checklist IS NOT NULL AND strpos(checklist, '- [ ] ') > 0;
COMMENT ON COLUMN tireless.mirror_comment.checklist IS
    'The children''s checklist the outcome comment last showed (null: the job has none, or nothing written yet).';
COMMENT ON COLUMN tireless.mirror_comment.checklist_written_at IS 'When the forge last confirmed the checklist (the post, or an edit).';
COMMENT ON COLUMN tireless.mirror_comment.checklist_failures IS 'Failed edits of the checklist in a row.';
COMMENT ON COLUMN tireless.mirror_comment.checklist_next_try_at IS 'When the mirror edits again after a failure (backoff with jitter).';
COMMENT ON COLUMN tireless.mirror_comment.checklist_error IS 'What the last failed edit said.';
COMMENT ON COLUMN tireless.mirror_comment.checklist_error_at IS 'When that failure was recorded.';
COMMENT ON CONSTRAINT mirror_comment_checklist_failures_not_negative ON tireless.mirror_comment IS 'Failures in a row are not negative.';
COMMENT ON INDEX tireless.mirror_checklists_open IS
    'mirror_checklists_due: the outcome comments whose checklist still has an unchecked child, per repository.';

-- The outcome comment's queue gains the checklist: new result and argument lists (db/mirror.sql).
DROP FUNCTION tireless.mirror_comments_due(text, text, text, text, integer);
DROP FUNCTION tireless.record_mirror_comment(text, text, text, text, bigint, text);
