-- enqueue_and_list: enqueue a batch and return exactly the jobs it created (for tireless_admin).
-- depends: 0011_mirror

-- Exact, not guessed from created_at: every writer of jobs (enqueue, record_poll, rerun) first takes
-- the lock of each repository it touches (lock_repo_issues). Taken here before the batch's jobs are
-- read, and held to the end of the transaction, those locks keep every other writer away from
-- these issues, so the jobs of the batch that were not there before are the ones this call made.
CREATE FUNCTION tireless.enqueue_and_list(issues jsonb) RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    known bigint[];
BEGIN
    -- Validate first: a malformed batch is refused by its TL006 before anything reads it.
    PERFORM tireless.check_issue_batch(enqueue_and_list.issues);
    -- In key order, as enqueue takes them, so the two never deadlock.
    PERFORM tireless.lock_repo_issues(r.forge, r.owner, r.repo)
       FROM (SELECT DISTINCT e.issue ->> 'forge' AS forge, e.issue ->> 'owner' AS owner, e.issue ->> 'repo' AS repo
               FROM jsonb_array_elements(enqueue_and_list.issues) AS e(issue)
              ORDER BY 1, 2, 3) AS r;
    SELECT coalesce(array_agg(j.id), '{}') INTO known
      FROM tireless.job j
     WHERE (j.forge, j.owner, j.repo, j.number) IN
           (SELECT e.issue ->> 'forge', e.issue ->> 'owner', e.issue ->> 'repo', (e.issue ->> 'number')::integer
              FROM jsonb_array_elements(enqueue_and_list.issues) AS e(issue));
    PERFORM tireless.enqueue(enqueue_and_list.issues);
    RETURN QUERY
        SELECT j.* FROM tireless.job j
         WHERE (j.forge, j.owner, j.repo, j.number) IN
               (SELECT e.issue ->> 'forge', e.issue ->> 'owner', e.issue ->> 'repo', (e.issue ->> 'number')::integer
                  FROM jsonb_array_elements(enqueue_and_list.issues) AS e(issue))
           AND j.id <> ALL (known)
         ORDER BY j.id;
END;
$$;
COMMENT ON FUNCTION tireless.enqueue_and_list(jsonb) IS
    'enqueue, returning the jobs it created (oldest first) instead of their count: what `tireless enqueue` shows. '
    'For tireless_admin, who reads tireless.job; a poller calls enqueue.';

REVOKE ALL ON FUNCTION tireless.enqueue_and_list(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.enqueue_and_list(jsonb) TO tireless_admin;
