-- Real forges, second contact (issue 36): one odd issue never blocks its repository. record_poll
-- records the issues it had to leave out, with the reason, and goes on with the rest of the batch.
-- depends: 0034_work_graph_notes

-- One row per left-out issue of a tracked repository: the last reason it was left out, and when it
-- was first and last seen so. Deleted as soon as the issue is recorded well-formed (or its
-- repository untracked).
CREATE TABLE tireless.issue_skip (
    forge      text        NOT NULL,
    owner      text        NOT NULL,
    repo       text        NOT NULL,
    number     integer     NOT NULL,
    problem    text        NOT NULL,
    first_seen timestamptz NOT NULL DEFAULT now(),
    last_seen  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (forge, owner, repo, number),
    CONSTRAINT issue_skip_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT issue_skip_number_positive CHECK (number > 0),
    CONSTRAINT issue_skip_problem_bounded CHECK (length(problem) BETWEEN 1 AND 500)
);
COMMENT ON TABLE tireless.issue_skip IS
    'Issues a poll had to leave out of its batch (tireless.record_poll), with the reason: shown by repo_status, '
    'the dashboard''s forge view and /metrics; a row goes when the issue is next recorded well-formed.';
COMMENT ON COLUMN tireless.issue_skip.number IS 'The issue left out (its number was sound; another field was not).';
COMMENT ON COLUMN tireless.issue_skip.problem IS 'Why it was left out the last time: the field and what it held.';
COMMENT ON COLUMN tireless.issue_skip.first_seen IS 'When a poll first left it out (since it was last recorded well-formed).';
COMMENT ON COLUMN tireless.issue_skip.last_seen IS 'When a poll last left it out.';
COMMENT ON CONSTRAINT issue_skip_of_a_tracked_repo ON tireless.issue_skip IS
    'Only a tracked repository''s issues are polled; untracking it forgets its skips.';
COMMENT ON CONSTRAINT issue_skip_number_positive ON tireless.issue_skip IS 'An issue number is positive on both forges.';
COMMENT ON CONSTRAINT issue_skip_problem_bounded ON tireless.issue_skip IS
    'The reason is said, and short enough for a status line (the poller trims it to 500 characters).';

-- record_poll takes the poller's odd issues and returns how many it left out (db/poll.sql).
DROP FUNCTION tireless.record_poll(text, text, text, text, jsonb, timestamptz, text, boolean, integer[], interval);
