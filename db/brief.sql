-- The agent's brief: where its issue is, where to clone from, what the issue says, and what tireless last
-- pushed for it (the branch, its head, the pull request, the job's checkpoint); and the repository's
-- delivery policy that applies (delivery.sql), which the runner checks the change against.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.issue_body_limit() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 65536;
COMMENT ON FUNCTION tireless.issue_body_limit() IS
    'How many characters of an issue''s body the store keeps (GitHub''s own limit on a body); a longer one is cut and flagged.';
REVOKE ALL ON FUNCTION tireless.issue_body_limit() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A forge's web root, where people and git reach it; granted to tireless_admin, as forge_clone_url is:
-- `tireless forge check` names the token page under it and tries git at the very URL the runner uses.
-- Both compute from their arguments alone (no table, no token, no secret).
CREATE OR REPLACE FUNCTION tireless.forge_web_root(kind tireless.forge_kind, base_url text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN kind = 'github' AND base_url = 'https://api.github.com' THEN 'https://github.com'
                WHEN kind = 'github' THEN regexp_replace(base_url, '/api/v3$', '')
                ELSE base_url END;
COMMENT ON FUNCTION tireless.forge_web_root(tireless.forge_kind, text) IS
    'A registered forge''s web root: base_url for Gitea and Forgejo; for GitHub github.com for api.github.com, '
    'HOST for HOST/api/v3. Computed from the arguments alone.';
REVOKE ALL ON FUNCTION tireless.forge_web_root(tireless.forge_kind, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.forge_web_root(tireless.forge_kind, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.forge_clone_url(kind tireless.forge_kind, base_url text, owner text, repo text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN tireless.forge_web_root(kind, base_url) || '/' || owner || '/' || repo || '.git';
COMMENT ON FUNCTION tireless.forge_clone_url(tireless.forge_kind, text, text, text) IS
    'A repository''s HTTPS clone URL, where the runner fetches and pushes: the forge''s web root '
    '(tireless.forge_web_root), then /owner/repo.git. Computed from the arguments alone: no token in it.';
REVOKE ALL ON FUNCTION tireless.forge_clone_url(tireless.forge_kind, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.forge_clone_url(tireless.forge_kind, text, text, text) TO tireless_admin;

-- What tireless last pushed for an issue: the runner reuses the branch, pushes with lease over that
-- head, and updates the pull request it knows.
CREATE OR REPLACE FUNCTION tireless.issue_push(forge text, owner text, repo text, number integer)
    RETURNS TABLE (branch text, head text, pull_number integer, pull_url text)
    LANGUAGE sql STABLE
AS $$
    SELECT coalesce(last.branch, p.label_prefix || '/' || issue_push.number), last.head, pull.pull_number, pull.pull_url
      FROM tireless.policy p
      LEFT JOIN LATERAL (SELECT d.branch, d.head FROM tireless.delivery d
                          WHERE (d.forge, d.owner, d.repo, d.number)
                                = (issue_push.forge, issue_push.owner, issue_push.repo, issue_push.number)
                            AND d.branch IS NOT NULL
                          ORDER BY d.job_id DESC LIMIT 1) AS last ON true
      LEFT JOIN LATERAL (SELECT d.pull_number, d.pull_url FROM tireless.delivery d
                          WHERE (d.forge, d.owner, d.repo, d.number)
                                = (issue_push.forge, issue_push.owner, issue_push.repo, issue_push.number)
                            AND d.branch = last.branch AND d.pull_number IS NOT NULL
                          ORDER BY d.job_id DESC LIMIT 1) AS pull ON true;
$$;
COMMENT ON FUNCTION tireless.issue_push(text, text, text, integer) IS
    'What tireless last pushed for an issue: the branch of its newest delivery that pushed one (else '
    '<label_prefix>/<number>, not pushed yet), that delivery''s head (null: never pushed), and the newest pull '
    'request the mirror recorded for that branch (null: none known; it may have been merged or closed since).';
REVOKE ALL ON FUNCTION tireless.issue_push(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.job_brief(job_id bigint)
    RETURNS TABLE (issue_url text, api_url text, clone_url text, body text, body_cut boolean,
                   branch text, branch_head text, pull_number integer, pull_url text,
                   checkpoint_ref text, checkpoint_commit text,
                   protected_paths text[], allowed_paths text[], allow_ci boolean, max_files integer, max_bytes bigint,
                   applied_max_files integer, applied_max_bytes bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT i.url, tireless.forge_api_url(f.kind, f.base_url), tireless.forge_clone_url(f.kind, f.base_url, j.owner, j.repo),
           i.body, coalesce(i.body_cut, false),
           push.branch, push.head, push.pull_number, push.pull_url, c.ref, c.commit,
           applied.protected, applied.allowed, applied.allow_ci, d.max_files, d.max_bytes,
           applied.max_files, applied.max_bytes
      FROM tireless.job j
      LEFT JOIN tireless.issue i ON (i.forge, i.owner, i.repo, i.number) = (j.forge, j.owner, j.repo, j.number)
      LEFT JOIN tireless.forge f ON f.name = j.forge
      LEFT JOIN tireless.checkpoint c ON c.job_id = j.id
      LEFT JOIN tireless.repo_delivery d ON (d.forge, d.owner, d.repo) = (j.forge, j.owner, j.repo)
     CROSS JOIN LATERAL tireless.issue_push(j.forge, j.owner, j.repo, j.number) AS push
     CROSS JOIN LATERAL tireless.delivery_policy(j.forge, j.owner, j.repo) AS applied
     WHERE j.id = job_brief.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(job_brief.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.job_brief(bigint) IS
    'What an agent needs besides the job row: the issue''s web URL, the forge''s API root, the repository''s clone '
    'URL (null when the forge is not registered), and the issue''s body as last polled (its first 65536 characters, '
    'body_cut when cut). For the runner, what tireless last pushed for the issue (tireless.issue_push): the branch '
    'to push to, branch_head (the head to push with lease over; null: the branch was never pushed) and the pull '
    'request the mirror last recorded for it; and the job''s last checkpoint (ref and commit, from an earlier '
    'attempt: the workspace starts there); and the repository''s delivery policy: its globs and allow_ci as they '
    'apply (tireless.delivery_policy), its limits as set_repo_delivery set them (null: none set) and the limits '
    'that apply, the defaults filled in (applied_max_files, applied_max_bytes). No token: the agent gets none. TL001 for an '
    'unknown job.';
REVOKE ALL ON FUNCTION tireless.job_brief(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_brief(bigint) TO tireless_runner;
