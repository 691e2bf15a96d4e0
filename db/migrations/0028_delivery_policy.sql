-- A tracked repository's delivery policy, set by the admin and read by the runner in the job's brief: the paths a change may not touch, those it may touch all the same, whether it may change CI definitions, its limits; job_brief's new signature.
-- depends: 0027_delivery

-- One row per repository whose admin set its policy (tireless.set_repo_delivery); a repository
-- without one gets the runner's defaults. Kept when the repository is untracked, as its limits are
-- (tireless.repo_limit): tracking it again does not lose what protects it.
-- A glob is checked on the list joined by newlines, the one character no glob holds: a check
-- constraint cannot look at each element of an array.
CREATE TABLE tireless.repo_delivery (
    forge     text    NOT NULL,
    owner     text    NOT NULL,
    repo      text    NOT NULL,
    protected text[]  NOT NULL DEFAULT '{}',
    allowed   text[]  NOT NULL DEFAULT '{}',
    allow_ci  boolean NOT NULL DEFAULT false,
    max_files integer,
    max_bytes bigint,
    CONSTRAINT one_delivery_policy_per_repo PRIMARY KEY (forge, owner, repo),
    CONSTRAINT protected_globs_are_path_globs CHECK (
        coalesce(array_ndims(protected), 1) = 1
        AND (cardinality(protected) = 0
             OR array_to_string(protected, E'\n', '')
                ~ '^[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254}(\n[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254})*$')),
    CONSTRAINT allowed_globs_are_path_globs CHECK (
        coalesce(array_ndims(allowed), 1) = 1
        AND (cardinality(allowed) = 0
             OR array_to_string(allowed, E'\n', '')
                ~ '^[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254}(\n[^/\x01-\x1f\x7f][^\x01-\x1f\x7f]{0,254})*$')),
    CONSTRAINT at_most_100_protected_globs CHECK (cardinality(protected) <= 100),
    CONSTRAINT at_most_100_allowed_globs CHECK (cardinality(allowed) <= 100),
    CONSTRAINT delivery_max_files_positive CHECK (max_files > 0),
    CONSTRAINT delivery_max_bytes_positive CHECK (max_bytes > 0)
);
COMMENT ON TABLE tireless.repo_delivery IS
    'A repository''s delivery policy, over the runner''s defaults: the globs of paths a change may not touch, '
    'those it may touch all the same, whether it may change the forge''s CI definitions, and its limits. '
    'Private: set_repo_delivery keeps it; job_brief hands it to the runner.';
COMMENT ON COLUMN tireless.repo_delivery.protected IS
    'Globs of paths a change may not touch (fnmatch on the whole path, * matching / too; a glob ending in / '
    'matches everything under it).';
COMMENT ON COLUMN tireless.repo_delivery.allowed IS
    'Globs of paths a change may touch all the same, even when protected or a CI definition.';
COMMENT ON COLUMN tireless.repo_delivery.allow_ci IS
    'Whether a change may touch the forge''s CI definitions (.github/workflows/, .gitea/workflows/, '
    '.forgejo/workflows/): a CI file can read the repository''s secrets.';
COMMENT ON COLUMN tireless.repo_delivery.max_files IS 'At most this many files added, modified or deleted; null: the runner''s default.';
COMMENT ON COLUMN tireless.repo_delivery.max_bytes IS 'At most this many bytes of the files added or modified; null: the runner''s default.';
COMMENT ON CONSTRAINT one_delivery_policy_per_repo ON tireless.repo_delivery IS 'A repository has one delivery policy.';
COMMENT ON CONSTRAINT protected_globs_are_path_globs ON tireless.repo_delivery IS
    'A protected glob is 1 to 255 characters, no control character, not starting with / (a path in a '
    'repository never does); a list of them has one dimension and no null.';
COMMENT ON CONSTRAINT allowed_globs_are_path_globs ON tireless.repo_delivery IS
    'An allowed glob is 1 to 255 characters, no control character, not starting with /; a list of them has '
    'one dimension and no null.';
COMMENT ON CONSTRAINT at_most_100_protected_globs ON tireless.repo_delivery IS 'A repository protects at most 100 globs.';
COMMENT ON CONSTRAINT at_most_100_allowed_globs ON tireless.repo_delivery IS 'A repository allows at most 100 globs.';
COMMENT ON CONSTRAINT delivery_max_files_positive ON tireless.repo_delivery IS 'A limit of files is null (the runner''s default) or positive.';
COMMENT ON CONSTRAINT delivery_max_bytes_positive ON tireless.repo_delivery IS 'A limit of bytes is null (the runner''s default) or positive.';
REVOKE ALL ON tireless.repo_delivery FROM PUBLIC;

-- job_brief answers the repository's delivery policy: a new result type, so the old signature goes
-- (db/brief.sql defines the new one). IF EXISTS: a database migrated from before 0027 in one run has
-- no job_brief here (0027 dropped it, and the files are applied after the last migration). A runner
-- of the previous release reads the columns it knows by name, and keeps working.
DROP FUNCTION IF EXISTS tireless.job_brief(bigint);
