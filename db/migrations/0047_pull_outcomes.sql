-- Outcomes per agent (issue 48, item 6): what became of each pull request tireless opened, merged (when) or closed unmerged (when), as the poller reads it from the forge's issue listing (tireless.pull_outcome).
-- depends: 0046_worker_states

-- One row per pull request of tireless's whose fate a poll read: merged or closed unmerged, or open
-- again after a close. A pull request without a row is open as far as the store knows.
CREATE TABLE tireless.pull_outcome (
    forge       text        NOT NULL,
    owner       text        NOT NULL,
    repo        text        NOT NULL,
    pull_number integer     NOT NULL,
    state       text        NOT NULL,
    merged_at   timestamptz,
    closed_at   timestamptz,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (forge, owner, repo, pull_number),
    CONSTRAINT pull_outcome_state_known CHECK (state IN ('open', 'merged', 'closed')),
    CONSTRAINT pull_outcome_number_positive CHECK (pull_number > 0),
    CONSTRAINT merged_has_merged_at CHECK ((state = 'merged') = (merged_at IS NOT NULL)),
    CONSTRAINT ended_has_closed_at CHECK ((state = 'open') = (closed_at IS NULL))
);
COMMENT ON TABLE tireless.pull_outcome IS
    'What became of one of tireless''s pull requests (a delivery''s pull_number), as the forge''s issue listing last '
    'showed it: merged (merged_at), closed unmerged (closed_at), or open again. Private: the poller records it '
    '(tireless.record_pull_outcomes); tireless.pull_outcomes reads it.';
COMMENT ON COLUMN tireless.pull_outcome.state IS 'open, merged, or closed (closed without a merge).';
COMMENT ON COLUMN tireless.pull_outcome.merged_at IS 'When the forge merged it (its merged_at); null unless merged.';
COMMENT ON COLUMN tireless.pull_outcome.closed_at IS 'When the forge closed it (its closed_at; a merge closes it too); null while open.';
COMMENT ON COLUMN tireless.pull_outcome.recorded_at IS 'When a poll last changed this row.';
COMMENT ON CONSTRAINT pull_outcome_state_known ON tireless.pull_outcome IS 'A pull request is open, merged or closed unmerged.';
COMMENT ON CONSTRAINT pull_outcome_number_positive ON tireless.pull_outcome IS 'Pull request numbers are positive.';
COMMENT ON CONSTRAINT merged_has_merged_at ON tireless.pull_outcome IS 'A merged pull request says when, and only a merged one.';
COMMENT ON CONSTRAINT ended_has_closed_at ON tireless.pull_outcome IS 'A merged or closed pull request says when it closed; an open one has no closed_at.';
REVOKE ALL ON tireless.pull_outcome FROM PUBLIC;
GRANT SELECT ON tireless.pull_outcome TO tireless_admin;
