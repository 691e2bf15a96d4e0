-- What a job delivered (its branch, head and base, its pull request once the mirror knows it), the holder's checkpoints, and the mirror's queue of pull-request writes; job_brief's new signature.
-- depends: 0026_sql_files

-- A SQLSTATE of its own for what these tables are fed (the other codes: 0003_policy):
--   TL009 malformed delivery: a branch, ref, commit, pull request number or URL that is not one

-- Whether a delivery belongs to a delivered job is kept by a trigger (delivery_of_a_delivered_job,
-- db/transition.sql): a foreign key to (id, state) would need a unique index on tireless.job, paid
-- at every claim and every finish.
CREATE TABLE tireless.delivery (
    job_id        bigint      PRIMARY KEY,
    forge         text        NOT NULL,
    owner         text        NOT NULL,
    repo          text        NOT NULL,
    number        integer     NOT NULL,
    branch        text,
    head          text,
    base_branch   text,
    base          text,
    draft         boolean     NOT NULL DEFAULT false,
    delivered_at  timestamptz NOT NULL DEFAULT now(),
    pull_number   integer,
    pull_url      text,
    pull_known_at timestamptz,
    CONSTRAINT delivery_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT a_change_names_branch_head_and_base CHECK (num_nonnulls(branch, head, base_branch, base) IN (0, 4)),
    CONSTRAINT branch_is_a_ref_name CHECK (
        branch ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'
        AND branch !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$' AND branch <> '@'),
    CONSTRAINT base_branch_is_a_ref_name CHECK (
        base_branch ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'
        AND base_branch !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$' AND base_branch <> '@'),
    CONSTRAINT head_is_a_commit_id CHECK (head ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'),
    CONSTRAINT base_is_a_commit_id CHECK (base ~ '^([0-9a-f]{40}|[0-9a-f]{64})$'),
    CONSTRAINT pull_request_is_not_its_own_base CHECK (branch <> base_branch),
    CONSTRAINT a_change_moves_past_its_base CHECK (head <> base),
    CONSTRAINT no_change_opens_no_pull_request CHECK (branch IS NOT NULL OR (pull_number IS NULL AND NOT draft)),
    CONSTRAINT pull_number_positive CHECK (pull_number > 0),
    CONSTRAINT pull_number_url_and_time_together CHECK (num_nonnulls(pull_number, pull_url, pull_known_at) IN (0, 3)),
    CONSTRAINT pull_url_is_a_web_url CHECK (pull_url ~ '^https?://[^\x01-\x20\x7f-\x9f]+$' AND length(pull_url) <= 2000)
);
CREATE INDEX deliveries_by_issue ON tireless.delivery (forge, owner, repo, number, job_id);
COMMENT ON TABLE tireless.delivery IS
    'What a delivered job delivered, written by tireless.deliver in the transaction that delivers it: the branch '
    'pushed, its head commit, the base branch and commit it was made on, whether its pull request is a draft, and '
    'that pull request''s number and URL once the mirror recorded them (record_mirror_pull); no branch: delivered '
    'with no change. Private: deliver, record_mirror_pull and the views tireless.deliveries and job_list read it.';
COMMENT ON COLUMN tireless.delivery.branch IS 'The branch pushed (<prefix>/<number>, the same across attempts and re-requests); null: no change.';
COMMENT ON COLUMN tireless.delivery.head IS 'The commit the branch was pushed to.';
COMMENT ON COLUMN tireless.delivery.base_branch IS 'The branch the pull request goes to (the default branch).';
COMMENT ON COLUMN tireless.delivery.base IS 'The commit of base_branch the work started from.';
COMMENT ON COLUMN tireless.delivery.pull_known_at IS 'When the mirror recorded the pull request (opened, found or updated for this delivery).';
COMMENT ON INDEX tireless.deliveries_by_issue IS 'An issue''s deliveries, newest last: what tireless last pushed for it.';
COMMENT ON CONSTRAINT delivery_of_a_job ON tireless.delivery IS 'A delivery belongs to its job and goes with it (prune).';
COMMENT ON CONSTRAINT a_change_names_branch_head_and_base ON tireless.delivery IS
    'A change names its branch, head, base branch and base commit; no change names none of them.';
COMMENT ON CONSTRAINT branch_is_a_ref_name ON tireless.delivery IS
    'A branch is a git ref name (git check-ref-format), without `, <, > or ", so that it quotes safely in markdown.';
COMMENT ON CONSTRAINT base_branch_is_a_ref_name ON tireless.delivery IS
    'A base branch is a git ref name (git check-ref-format), without `, <, > or ".';
COMMENT ON CONSTRAINT head_is_a_commit_id ON tireless.delivery IS 'A head commit is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.';
COMMENT ON CONSTRAINT base_is_a_commit_id ON tireless.delivery IS 'A base commit is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.';
COMMENT ON CONSTRAINT pull_request_is_not_its_own_base ON tireless.delivery IS 'A pull request goes from its branch to another.';
COMMENT ON CONSTRAINT a_change_moves_past_its_base ON tireless.delivery IS 'A change has a head other than its base: no commit is no change.';
COMMENT ON CONSTRAINT no_change_opens_no_pull_request ON tireless.delivery IS 'A delivery with no change has no pull request, draft or not.';
COMMENT ON CONSTRAINT pull_number_positive ON tireless.delivery IS 'A pull request number is positive.';
COMMENT ON CONSTRAINT pull_number_url_and_time_together ON tireless.delivery IS
    'A pull request is known by its number, its URL and when it was recorded, or not at all.';
COMMENT ON CONSTRAINT pull_url_is_a_web_url ON tireless.delivery IS 'A pull request URL is an http(s) URL of at most 2000 characters, no blank in it.';
REVOKE ALL ON tireless.delivery FROM PUBLIC;

CREATE TABLE tireless.checkpoint (
    job_id      bigint      PRIMARY KEY,
    attempt     integer     NOT NULL,
    ref         text        NOT NULL,
    commit      text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT checkpoint_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT checkpoint_attempt_positive CHECK (attempt > 0),
    CONSTRAINT checkpoint_ref_is_a_ref_name CHECK (
        ref ~ '^[^\x01-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069~^:?*[\\`<>"]{1,255}$'
        AND ref !~ '^[-/]|/$|//|(^|/)\.|\.\.|@\{|\.lock(/|$)|\.$' AND ref <> '@'),
    CONSTRAINT checkpoint_commit_is_a_commit_id CHECK (commit ~ '^([0-9a-f]{40}|[0-9a-f]{64})$')
);
COMMENT ON TABLE tireless.checkpoint IS
    'A job''s last checkpoint (tireless.record_checkpoint): the ref of tireless''s own the holder pushed the '
    'workspace''s commits to, the commit, and in which attempt. A later attempt of the job starts from it '
    '(job_brief). Private: record_checkpoint writes it.';
COMMENT ON CONSTRAINT checkpoint_of_a_job ON tireless.checkpoint IS 'A checkpoint belongs to its job and goes with it (prune).';
COMMENT ON CONSTRAINT checkpoint_attempt_positive ON tireless.checkpoint IS 'A checkpoint is made by a claimed attempt, counted from 1.';
COMMENT ON CONSTRAINT checkpoint_ref_is_a_ref_name ON tireless.checkpoint IS
    'A checkpoint ref is a git ref name (git check-ref-format), without `, <, > or ".';
COMMENT ON CONSTRAINT checkpoint_commit_is_a_commit_id ON tireless.checkpoint IS
    'A checkpoint commit is 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.';
REVOKE ALL ON tireless.checkpoint FROM PUBLIC;

CREATE TABLE tireless.mirror_pull (
    job_id        bigint      PRIMARY KEY,
    forge         text        NOT NULL,
    owner         text        NOT NULL,
    repo          text        NOT NULL,
    number        integer     NOT NULL,
    queued_at     timestamptz NOT NULL DEFAULT now(),
    written_at    timestamptz,
    failures      integer     NOT NULL DEFAULT 0,
    next_try_at   timestamptz NOT NULL DEFAULT now(),
    last_error    text,
    last_error_at timestamptz,
    CONSTRAINT mirror_pull_of_a_delivery FOREIGN KEY (job_id) REFERENCES tireless.delivery (job_id) ON DELETE CASCADE,
    CONSTRAINT mirror_pull_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT mirror_pull_failures_not_negative CHECK (failures >= 0)
);
CREATE INDEX mirror_pulls_due ON tireless.mirror_pull (forge, owner, repo, number, job_id) WHERE written_at IS NULL;
COMMENT ON TABLE tireless.mirror_pull IS
    'Per delivery that pushed a branch of a tracked repository: the pull request the mirror must open or update '
    'for it, written once (written_at, also when a newer delivery of the issue was written first) and the retries '
    'of a failing write. Private: deliver queues it, mirror_pulls_due and record_mirror_pull keep it.';
COMMENT ON COLUMN tireless.mirror_pull.written_at IS 'When the forge confirmed the pull request for this push (null: still to write).';
COMMENT ON INDEX tireless.mirror_pulls_due IS 'The pull-request writes still to make, per issue, newest last.';
COMMENT ON CONSTRAINT mirror_pull_of_a_delivery ON tireless.mirror_pull IS 'A pull-request write is of a delivery and goes with it (prune).';
COMMENT ON CONSTRAINT mirror_pull_of_a_tracked_repo ON tireless.mirror_pull IS 'Mirror state belongs to a tracked repository and goes with it.';
COMMENT ON CONSTRAINT mirror_pull_failures_not_negative ON tireless.mirror_pull IS 'Failures in a row are not negative.';
REVOKE ALL ON tireless.mirror_pull FROM PUBLIC;

-- job_brief answers what tireless last pushed for the issue and the job's checkpoint: a new result
-- type, so the old signature goes (db/brief.sql defines the new one). A runner of the previous
-- release reads the columns it knows by name, and keeps working.
DROP FUNCTION tireless.job_brief(bigint);
