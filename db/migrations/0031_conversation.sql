-- The conversation on tireless's pull requests and issues: each review, `/tireless` command or failing set of checks that asked for work (or was refused), the job that answers it and the mirror's reply; each repository's revision policy; where the poller's reads of the conversation stand.
-- depends: 0030_stop_notes

-- A SQLSTATE of its own for what record_conversation is fed (the other codes: 0003_policy, 0027_delivery):
--   TL010 malformed conversation: the batch is not an array of asks (one malformed ask in a good
--         batch is skipped and reported, not raised: input from a forge never blocks the rest)

CREATE TABLE tireless.ask (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    forge          text        NOT NULL,
    owner          text        NOT NULL,
    repo           text        NOT NULL,
    number         integer     NOT NULL,
    source         text        NOT NULL,
    source_id      text        NOT NULL,
    pull_number    integer,
    verb           text        NOT NULL,
    author         text,
    body           text        NOT NULL DEFAULT '',
    detail         jsonb       NOT NULL DEFAULT '[]',
    asked_at       timestamptz NOT NULL,
    seen_at        timestamptz NOT NULL DEFAULT now(),
    outcome        text        NOT NULL,
    refusal        text,
    job_id         bigint,
    reply          text,
    replied_at     timestamptz,
    reply_failures integer     NOT NULL DEFAULT 0,
    next_reply_at  timestamptz NOT NULL DEFAULT now(),
    reply_error    text,
    CONSTRAINT one_ask_per_forge_item UNIQUE (forge, owner, repo, source, source_id),
    CONSTRAINT ask_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT ask_answered_by_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE SET NULL,
    CONSTRAINT ask_source_known CHECK (source IN ('review', 'comment', 'checks')),
    CONSTRAINT ask_source_id_bounded CHECK (length(source_id) BETWEEN 1 AND 100),
    CONSTRAINT ask_verb_known CHECK (verb IN ('revise', 'stop', 'implement', 'plan', 'discover')),
    CONSTRAINT ask_outcome_known CHECK (outcome IN ('waiting', 'answered', 'refused', 'withdrawn', 'done')),
    CONSTRAINT a_refusal_says_why CHECK ((outcome = 'refused') = (refusal IS NOT NULL)),
    CONSTRAINT ask_numbers_positive CHECK (number > 0 AND pull_number > 0),
    CONSTRAINT ask_body_bounded CHECK (length(body) <= 65536),
    CONSTRAINT ask_detail_is_a_list CHECK (jsonb_typeof(detail) = 'array'),
    CONSTRAINT ask_reply_known CHECK (reply IN ('react', 'comment')),
    CONSTRAINT ask_reply_failures_not_negative CHECK (reply_failures >= 0)
);
CREATE INDEX asks_by_issue ON tireless.ask (forge, owner, repo, number, id);
CREATE INDEX asks_by_job ON tireless.ask (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX asks_waiting ON tireless.ask (forge, owner, repo, number) WHERE outcome = 'waiting';
CREATE INDEX replies_due ON tireless.ask (forge, owner, repo, next_reply_at) WHERE reply IS NOT NULL AND replied_at IS NULL;
COMMENT ON TABLE tireless.ask IS
    'Each request made in the conversation (a review requesting changes, a `/tireless` command, a failing set of '
    'checks), once per forge item, whatever became of it: waiting for the issue''s live job to end, answered by a '
    'job, refused (and why), withdrawn by a stop, or done (a stop that was carried out). Private: '
    'record_conversation writes it; job_asks hands an answering job''s asks to the runner.';
COMMENT ON COLUMN tireless.ask.number IS 'The issue the ask is about (a pull request''s issue, for an ask made on the pull request).';
COMMENT ON COLUMN tireless.ask.source IS 'review, comment (a `/tireless` command) or checks (the failed checks of one head).';
COMMENT ON COLUMN tireless.ask.source_id IS 'The forge''s id of the review or comment, or the head commit whose checks failed.';
COMMENT ON COLUMN tireless.ask.pull_number IS 'The pull request the ask was made on; null: made on the issue.';
COMMENT ON COLUMN tireless.ask.verb IS 'What it asks: revise, stop, or implement, plan, discover (on the issue).';
COMMENT ON COLUMN tireless.ask.body IS 'The review''s text, or the instruction after the command (at most 65536 characters).';
COMMENT ON COLUMN tireless.ask.detail IS 'A review''s inline comments [{path, line, body}], or the failed checks [{name, summary, url}].';
COMMENT ON COLUMN tireless.ask.asked_at IS 'When it was made on the forge (a review''s submission, a comment''s creation, the read of the checks).';
COMMENT ON COLUMN tireless.ask.refusal IS 'Why it asks nothing: no write access, the revision limit, the same failure as the head before.';
COMMENT ON COLUMN tireless.ask.job_id IS 'The job that answers it (or, for a stop, the job it stopped).';
COMMENT ON COLUMN tireless.ask.reply IS 'What the mirror owes on the forge: react (a +1 on the command) or comment (a refusal said once).';
COMMENT ON COLUMN tireless.ask.replied_at IS 'When the forge confirmed the reply; null: still owed (when reply is set).';
COMMENT ON CONSTRAINT one_ask_per_forge_item ON tireless.ask IS
    'A review, comment or head asks once: a webhook redelivery or a poll that reads it again asks nothing more.';
COMMENT ON CONSTRAINT ask_of_a_tracked_repo ON tireless.ask IS 'Asks are kept while their repository is tracked.';
COMMENT ON CONSTRAINT ask_answered_by_a_job ON tireless.ask IS 'A pruned job leaves its asks, unanswered by any job.';
COMMENT ON CONSTRAINT ask_source_known ON tireless.ask IS 'An ask comes from a review, a comment or the checks.';
COMMENT ON CONSTRAINT ask_source_id_bounded ON tireless.ask IS 'A source id is 1 to 100 characters.';
COMMENT ON CONSTRAINT ask_verb_known ON tireless.ask IS 'An ask is revise, stop, implement, plan or discover.';
COMMENT ON CONSTRAINT ask_outcome_known ON tireless.ask IS 'An ask is waiting, answered, refused, withdrawn or done.';
COMMENT ON CONSTRAINT a_refusal_says_why ON tireless.ask IS 'A refused ask says why; no other ask has a refusal.';
COMMENT ON CONSTRAINT ask_numbers_positive ON tireless.ask IS 'Issue and pull request numbers are positive.';
COMMENT ON CONSTRAINT ask_body_bounded ON tireless.ask IS 'An ask keeps at most 65536 characters of text, as an issue''s body.';
COMMENT ON CONSTRAINT ask_detail_is_a_list ON tireless.ask IS 'The detail is a JSON array.';
COMMENT ON CONSTRAINT ask_reply_known ON tireless.ask IS 'A reply is a reaction or a comment.';
COMMENT ON CONSTRAINT ask_reply_failures_not_negative ON tireless.ask IS 'Failures of the reply are counted from 0.';
COMMENT ON INDEX tireless.asks_by_issue IS 'An issue''s asks, oldest first: the revisions counted, the failure before.';
COMMENT ON INDEX tireless.asks_by_job IS 'The asks a job answers (its brief, tireless show).';
COMMENT ON INDEX tireless.asks_waiting IS 'The asks still waiting for their issue''s live job to end.';
COMMENT ON INDEX tireless.replies_due IS 'The mirror''s replies still owed, per repository, soonest first.';
REVOKE ALL ON tireless.ask FROM PUBLIC;
GRANT SELECT ON tireless.ask TO tireless_admin;

CREATE TABLE tireless.repo_revisions (
    forge                   text    NOT NULL,
    owner                   text    NOT NULL,
    repo                    text    NOT NULL,
    revise_on_failed_checks boolean NOT NULL DEFAULT false,
    max_revisions           integer NOT NULL DEFAULT 5,
    CONSTRAINT one_revision_policy_per_repo PRIMARY KEY (forge, owner, repo),
    CONSTRAINT max_revisions_in_range CHECK (max_revisions BETWEEN 0 AND 100)
);
COMMENT ON TABLE tireless.repo_revisions IS
    'A repository''s revision policy (tireless.set_repo_revisions); a repository without a row: no revision for '
    'failed checks, at most 5 revisions per issue. Kept when the repository is untracked, as its delivery policy is.';
COMMENT ON COLUMN tireless.repo_revisions.revise_on_failed_checks IS 'Whether failed checks on a pull request''s head ask for a revision.';
COMMENT ON COLUMN tireless.repo_revisions.max_revisions IS
    'How many revisions an issue gets after a person last asked on the issue (its mode label, or a command there).';
COMMENT ON CONSTRAINT one_revision_policy_per_repo ON tireless.repo_revisions IS 'A repository has one revision policy.';
COMMENT ON CONSTRAINT max_revisions_in_range ON tireless.repo_revisions IS 'At most 100 revisions per request (0: none).';
REVOKE ALL ON tireless.repo_revisions FROM PUBLIC;

CREATE TABLE tireless.conversation_read (
    forge           text        NOT NULL,
    owner           text        NOT NULL,
    repo            text        NOT NULL,
    comments_cursor timestamptz NOT NULL DEFAULT now(),
    comments_etag   text,
    CONSTRAINT one_conversation_read_per_repo PRIMARY KEY (forge, owner, repo),
    CONSTRAINT conversation_read_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT comments_etag_bounded CHECK (length(comments_etag) <= 1000)
);
COMMENT ON TABLE tireless.conversation_read IS
    'Where the poller''s reads of a repository''s comments stand: the newest comment time read (a comment written '
    'before it and edited since is an edit, never a new command) and the listing''s ETag. Private: '
    'conversation_to_read and record_conversation keep it.';
COMMENT ON CONSTRAINT one_conversation_read_per_repo ON tireless.conversation_read IS 'One read position per repository.';
COMMENT ON CONSTRAINT conversation_read_of_a_tracked_repo ON tireless.conversation_read IS 'Kept while the repository is tracked.';
COMMENT ON CONSTRAINT comments_etag_bounded ON tireless.conversation_read IS 'An ETag is at most 1000 characters.';
REVOKE ALL ON tireless.conversation_read FROM PUBLIC;

CREATE TABLE tireless.pull_read (
    forge        text    NOT NULL,
    owner        text    NOT NULL,
    repo         text    NOT NULL,
    pull_number  integer NOT NULL,
    reviews_etag text,
    read_to      timestamptz,
    checks_head  text,
    CONSTRAINT one_read_per_pull PRIMARY KEY (forge, owner, repo, pull_number),
    CONSTRAINT pull_read_of_a_tracked_repo FOREIGN KEY (forge, owner, repo)
        REFERENCES tireless.tracked_repo (forge, owner, repo) ON DELETE CASCADE,
    CONSTRAINT reviews_etag_bounded CHECK (length(reviews_etag) <= 1000),
    CONSTRAINT checks_head_is_a_commit_id CHECK (checks_head ~ '^([0-9a-f]{40}|[0-9a-f]{64})$')
);
COMMENT ON TABLE tireless.pull_read IS
    'Where the poller''s reads of one of tireless''s pull requests stand: the ETag of its reviews (GitHub answers '
    '304 to it at no cost), the updated_at it was last read at, and the last head whose checks had all finished (read no more). Private: '
    'conversation_to_read and record_conversation keep it.';
COMMENT ON COLUMN tireless.pull_read.read_to IS
    'The pull request''s updated_at when its conversation was last read: a listing showing it no newer reads nothing.';
COMMENT ON COLUMN tireless.pull_read.checks_head IS 'The head commit whose checks had all finished when last read: not read again.';
COMMENT ON CONSTRAINT one_read_per_pull ON tireless.pull_read IS 'One read position per pull request.';
COMMENT ON CONSTRAINT pull_read_of_a_tracked_repo ON tireless.pull_read IS 'Kept while the repository is tracked.';
COMMENT ON CONSTRAINT reviews_etag_bounded ON tireless.pull_read IS 'An ETag is at most 1000 characters.';
COMMENT ON CONSTRAINT checks_head_is_a_commit_id ON tireless.pull_read IS 'A head is a full commit id.';
REVOKE ALL ON tireless.pull_read FROM PUBLIC;

-- The repositories tracked before this migration start reading their comments from now: commands
-- written before tireless could read them ask nothing.
INSERT INTO tireless.conversation_read (forge, owner, repo)
SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t;

-- A webhook that arrives while its repository is being read asks for another read at once: the
-- read under way may have listed the forge before the change the webhook reports.
ALTER TABLE tireless.repo_poll ADD COLUMN poll_again boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN tireless.repo_poll.poll_again IS
    'poll_soon came while a poller held the repository''s lease: the read under way may predate the change, so '
    'record_poll makes the repository due at once instead of in next_poll_in.';
