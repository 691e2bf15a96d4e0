-- GitHub Apps (issue 49): a GitHub forge's App id and the path of its private key's file in the forge registry; the key itself is never stored.
-- depends: 0041_attempt_exit

ALTER TABLE tireless.forge
    ADD COLUMN app_id bigint,
    ADD COLUMN app_key_file text,
    ADD CONSTRAINT app_id_is_positive CHECK (app_id > 0),
    ADD CONSTRAINT app_is_a_github_forge CHECK (app_id IS NULL OR kind = 'github'),
    ADD CONSTRAINT app_key_file_has_an_app CHECK (app_key_file IS NULL OR app_id IS NOT NULL),
    ADD CONSTRAINT app_key_file_is_absolute CHECK (app_key_file ~ '^/[^[:cntrl:]]*$' AND length(app_key_file) <= 4096);
COMMENT ON COLUMN tireless.forge.app_id IS
    'The GitHub App tireless authenticates as on this forge (its installation tokens are minted by the poller, mirror and runner); null: a token from TIRELESS_TOKEN_<NAME>.';
COMMENT ON COLUMN tireless.forge.app_key_file IS
    'The path of the App''s private key (PEM) on the hosts that run tireless, read when TIRELESS_APP_KEY_<NAME>[_FILE] is not set; the path only, never the key.';
COMMENT ON CONSTRAINT app_id_is_positive ON tireless.forge IS 'An App id is a positive integer (GitHub''s App settings page, "App ID").';
COMMENT ON CONSTRAINT app_is_a_github_forge ON tireless.forge IS 'Only a GitHub forge has an App.';
COMMENT ON CONSTRAINT app_key_file_has_an_app ON tireless.forge IS 'A key file belongs to an App.';
COMMENT ON CONSTRAINT app_key_file_is_absolute ON tireless.forge IS 'The key file is an absolute path (each process reads it wherever it runs).';
