-- The heads tireless pushed to an issue's branch, recorded before each push: a runner that dies between its push and tireless.deliver leaves a commit that the next attempt knows as tireless's own.
-- depends: 0028_delivery_policy

CREATE TABLE tireless.push (
    job_id      bigint      NOT NULL,
    branch      text        NOT NULL,
    head        text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT one_record_per_pushed_head PRIMARY KEY (job_id, branch, head),
    CONSTRAINT push_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT pushed_branch_is_named CHECK (length(branch) BETWEEN 1 AND 255),
    CONSTRAINT pushed_head_is_a_commit_id CHECK (head ~ '^([0-9a-f]{40}|[0-9a-f]{64})$')
);
COMMENT ON TABLE tireless.push IS
    'Each head a holder was about to push to its issue''s branch (tireless.record_push), recorded before the push: '
    'the commits a later push of the branch may go over, whether or not the delivery that pushed them was recorded. '
    'Private: record_push reads and writes it.';
COMMENT ON CONSTRAINT one_record_per_pushed_head ON tireless.push IS 'A head is recorded once per job and branch.';
COMMENT ON CONSTRAINT push_of_a_job ON tireless.push IS 'A recorded push belongs to its job and goes with it (prune).';
COMMENT ON CONSTRAINT pushed_branch_is_named ON tireless.push IS 'The branch is a name of 1 to 255 characters (record_push checks it is a ref name).';
COMMENT ON CONSTRAINT pushed_head_is_a_commit_id ON tireless.push IS 'A head is a full commit id, 40 or 64 lowercase hex digits.';
REVOKE ALL ON tireless.push FROM PUBLIC;
GRANT SELECT ON tireless.push TO tireless_admin;
