-- Functions, views and triggers live in one SQL file per concern (db/*.sql), applied after every migration run; this table records which version of each file the database holds.
-- depends: 0025_lean_turns_and_budgets

-- From here on a numbered migration carries what cannot be applied twice (tables, columns, constraints,
-- indexes, data moves, the drop of an old signature); the files of db/ carry the current definition of
-- every function, view and trigger, and tireless.migrate applies them all, in a fixed order, after the
-- migrations whenever a migration ran or a file changed (db/README.md).
CREATE TABLE tireless.sql_file (
    name text PRIMARY KEY,
    sha256 text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sql_file_is_a_file_of_db CHECK (name ~ '^[a-z_]+\.sql$'),
    CONSTRAINT sql_file_sha256_is_hex CHECK (sha256 ~ '^[0-9a-f]{64}$')
);
COMMENT ON TABLE tireless.sql_file IS
    'The SQL files of db/ as tireless.migrate last applied them: a file whose checksum differs is applied again.';
COMMENT ON CONSTRAINT sql_file_is_a_file_of_db ON tireless.sql_file IS 'A file of db/, named by concern: claim.sql.';
COMMENT ON CONSTRAINT sql_file_sha256_is_hex ON tireless.sql_file IS 'The SHA-256 of the file''s text, in hex.';
REVOKE ALL ON tireless.sql_file FROM PUBLIC;
GRANT SELECT ON tireless.sql_file TO tireless_admin;
