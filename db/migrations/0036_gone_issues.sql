-- Real forges, second contact (issue 36): the store learns that an issue is gone (deleted, or moved to another repository) and that a repository is archived, so the mirror stops writing to them.
-- depends: 0035_issue_skips

-- An issue the forge says is gone: record_issue_gone (the mirror, the poll) and record_poll's deleted
-- numbers set it; the issue listed again (apply_work_rule) clears it. The mirror's due functions skip it.
ALTER TABLE tireless.issue
    ADD COLUMN gone_at   timestamptz,
    ADD COLUMN gone_note text,
    ADD CONSTRAINT issue_gone_says_how CHECK ((gone_at IS NULL) = (gone_note IS NULL)),
    ADD CONSTRAINT issue_gone_note_bounded CHECK (length(gone_note) BETWEEN 1 AND 2000);
COMMENT ON COLUMN tireless.issue.gone_at IS
    'When the forge last said the issue is gone (404 or 410: deleted; a redirect to another repository: moved); '
    'null while it is there. The mirror makes no write to a gone issue; a listing that shows it again clears it.';
COMMENT ON COLUMN tireless.issue.gone_note IS 'How it went: issue deleted, or issue moved to owner/name#N.';
COMMENT ON CONSTRAINT issue_gone_says_how ON tireless.issue IS 'A gone issue says how it went; one that is there says nothing.';
COMMENT ON CONSTRAINT issue_gone_note_bounded ON tireless.issue IS 'The note is 1 to 2000 characters.';

-- A repository the forge refuses every write to because it is archived (Gitea answers 423).
ALTER TABLE tireless.mirror_repo ADD COLUMN archived_at timestamptz;
COMMENT ON COLUMN tireless.mirror_repo.archived_at IS
    'When a write was last refused because the repository is archived (record_repo_archived); null once a write '
    'succeeded. For a day after it the mirror''s due functions list nothing for the repository; then one write is '
    'tried again.';
