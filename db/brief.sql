-- The agent's brief: where its issue is, where to clone from, and what the issue says.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.issue_body_limit() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 65536;
COMMENT ON FUNCTION tireless.issue_body_limit() IS
    'How many characters of an issue''s body the store keeps (GitHub''s own limit on a body); a longer one is cut and flagged.';
REVOKE ALL ON FUNCTION tireless.issue_body_limit() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN kind = 'github' AND base_url = 'https://api.github.com' THEN 'https://github.com'
                WHEN kind = 'github' THEN regexp_replace(base_url, '/api/v3$', '')
                ELSE base_url END
           || '/' || owner || '/' || repo || '.git';
COMMENT ON FUNCTION tireless.forge_clone_url(tireless.forge_kind, text, text, text) IS
    'A repository''s HTTPS clone URL: the forge''s web root (GitHub: github.com for api.github.com, HOST for '
    'HOST/api/v3), then /owner/repo.git.';
REVOKE ALL ON FUNCTION tireless.forge_clone_url(tireless.forge_kind, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.job_brief(job_id bigint)
    RETURNS TABLE (issue_url text, api_url text, clone_url text, body text, body_cut boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT i.url, tireless.forge_api_url(f.kind, f.base_url), tireless.forge_clone_url(f.kind, f.base_url, j.owner, j.repo),
           i.body, coalesce(i.body_cut, false)
      FROM tireless.job j
      LEFT JOIN tireless.issue i ON (i.forge, i.owner, i.repo, i.number) = (j.forge, j.owner, j.repo, j.number)
      LEFT JOIN tireless.forge f ON f.name = j.forge
     WHERE j.id = job_brief.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(job_brief.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.job_brief(bigint) IS
    'What an agent needs besides the job row: the issue''s web URL, the forge''s API root, the repository''s clone '
    'URL (null when the forge is not registered), and the issue''s body as last polled (its first 65536 characters, '
    'body_cut when cut). No token: the agent gets none. TL001 for an unknown job.';
REVOKE ALL ON FUNCTION tireless.job_brief(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_brief(bigint) TO tireless_runner;
