-- The mirror's backlog in repo_status reads only the history after the mirror's last scan.
-- depends: 0012_enqueue_and_list

-- In 0011_mirror, repo_status counted each repository's unread changes by starting at its jobs,
-- which no index finds by repository: every `tireless status`, overview and /metrics scrape read
-- the whole job table once per tracked repository (bench/web-results.md: 670 ms at 1,000,000
-- finished jobs instead of 7). Now it reads the events after the last scan first (the BRIN index
-- on the id), then their jobs by key. And a tracked repository gets its mirror_repo row when it is
-- tracked, its scan position at the newest event id drawn so far, instead of at its first
-- mirror_writes with position 0: until a poller mirrored it (its forge not registered yet, no
-- poller running) the backlog would otherwise start at event 0. A job of the repository can only
-- be enqueued once the tracking has committed, so each of its events draws a greater id; and
-- mirror_writes still reads nothing older than tracked_at.

CREATE OR REPLACE FUNCTION tireless.history_top() RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END FROM tireless.job_event_id_seq s;
$$;
COMMENT ON FUNCTION tireless.history_top() IS
    'The newest job_event id drawn so far (0 before the first), read from the sequence without scanning the history.';

CREATE OR REPLACE FUNCTION tireless.track_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    top bigint;
BEGIN
    PERFORM tireless.check_repo(track_repo.forge, track_repo.owner, track_repo.repo);
    INSERT INTO tireless.tracked_repo (forge, owner, repo)
    VALUES (track_repo.forge, track_repo.owner, track_repo.repo)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO tireless.repo_poll (forge, owner, repo) VALUES (track_repo.forge, track_repo.owner, track_repo.repo);
    -- The mirror reads the history from here on: what happened before the tracking is not shown.
    top := tireless.history_top();
    INSERT INTO tireless.mirror_repo (forge, owner, repo, event_cursor, scanned_to)
    VALUES (track_repo.forge, track_repo.owner, track_repo.repo, top, top);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION tireless.track_repo(text, text, text) IS
    'Starts tracking a repository, so enqueue accepts its issues, the poller reads it (due at once) and the mirror '
    'shows its jobs from now on; false if it was tracked already.';

-- A repository tracked before this and never mirrored: its history so far counts as read, and its
-- live jobs are queued, so their issues get their state label (as 0011_mirror did on upgrade).
INSERT INTO tireless.mirror_issue (forge, owner, repo, number, job_id, state)
SELECT j.forge, j.owner, j.repo, j.number, j.id, j.state
  FROM tireless.job j
  JOIN tireless.tracked_repo t ON (t.forge, t.owner, t.repo) = (j.forge, j.owner, j.repo)
 WHERE j.state IN ('pending', 'claimed')
   AND NOT EXISTS (SELECT FROM tireless.mirror_repo m WHERE (m.forge, m.owner, m.repo) = (t.forge, t.owner, t.repo))
ON CONFLICT DO NOTHING;
INSERT INTO tireless.mirror_repo (forge, owner, repo, event_cursor, scanned_to)
SELECT t.forge, t.owner, t.repo, tireless.history_top(), tireless.history_top()
  FROM tireless.tracked_repo t
ON CONFLICT DO NOTHING;

CREATE FUNCTION tireless.mirror_unread(forge text, owner text, repo text) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    scanned bigint;
    since timestamptz;
BEGIN
    SELECT m.scanned_to INTO scanned FROM tireless.mirror_repo m
     WHERE (m.forge, m.owner, m.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo);
    SELECT t.tracked_at INTO since FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo);
    IF since IS NULL THEN
        RETURN 0;  -- not tracked: nothing is mirrored
    END IF;
    -- The events after the last scan first (the BRIN index on the id; planned with the actual
    -- position, so the planner knows they are few), then each one's job by its key: a LATERAL
    -- subquery it may not flatten (OFFSET 0), so that it never starts at the repository's jobs,
    -- which no index finds (a scan of every job ever run). Issues with a write already queued are
    -- counted by the caller.
    RETURN (
        SELECT count(DISTINCT j.number)
          FROM tireless.job_event e
         CROSS JOIN LATERAL (
               SELECT j.forge, j.owner, j.repo, j.number FROM tireless.job j
                WHERE j.id = e.job_id
                  AND (j.forge, j.owner, j.repo) = (mirror_unread.forge, mirror_unread.owner, mirror_unread.repo)
               OFFSET 0) AS j
         WHERE e.id > coalesce(scanned, 0)
           AND e.at >= since
           AND NOT EXISTS (SELECT FROM tireless.mirror_issue mi
                            WHERE (mi.forge, mi.owner, mi.repo, mi.number) = (j.forge, j.owner, j.repo, j.number)
                              AND (mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state)));
END;
$$;
COMMENT ON FUNCTION tireless.mirror_unread(text, text, text) IS
    'How many issues of a tracked repository changed after the mirror''s last scan and have no write queued yet '
    '(part of repo_status.mirror_backlog); reads only the history after that scan.';

-- repo_status counts the unread changes with mirror_unread.
CREATE OR REPLACE VIEW tireless.repo_status AS
SELECT rp.forge, rp.owner, rp.repo,
       f.kind::text AS forge_kind,
       f.name IS NOT NULL AS registered,
       rp.last_poll_at, rp.last_success_at, rp.last_error, rp.last_error_at, rp.consecutive_failures,
       rp.next_poll_at, rp.backoff_until, rp.polled_by, rp.cursor,
       f.limited_until AS forge_limited_until, f.last_error AS forge_error,
       coalesce(live.pending, 0) AS pending, coalesce(live.claimed, 0) AS claimed,
       coalesce(queued.writes, 0) + tireless.mirror_unread(rp.forge, rp.owner, rp.repo) AS mirror_backlog,
       queued.last_error AS mirror_error, queued.last_error_at AS mirror_error_at
  FROM tireless.repo_poll rp
  LEFT JOIN tireless.forge f ON f.name = rp.forge
  LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE j.state = 'pending') AS pending,
             count(*) FILTER (WHERE j.state = 'claimed') AS claimed
        FROM tireless.job j
       WHERE (j.forge, j.owner, j.repo) = (rp.forge, rp.owner, rp.repo) AND j.state IN ('pending', 'claimed')
  ) AS live ON true
  LEFT JOIN LATERAL (
      SELECT count(*) AS writes,
             (array_agg(mi.last_error ORDER BY mi.last_error_at DESC) FILTER (WHERE mi.last_error IS NOT NULL))[1] AS last_error,
             max(mi.last_error_at) AS last_error_at
        FROM tireless.mirror_issue mi
       WHERE (mi.forge, mi.owner, mi.repo) = (rp.forge, rp.owner, rp.repo)
         AND (mi.applied_job_id, mi.applied_state) IS DISTINCT FROM (mi.job_id, mi.state)
  ) AS queued ON true;
COMMENT ON VIEW tireless.repo_status IS
    'One row per tracked repository: its forge (registered or not, stopped until when and why), its last poll, '
    'last good read and last error, failures in a row, next poll, backoff, holder and cursor, its live jobs, and '
    'the mirror: how many issues still wait for a forge write (mirror_backlog) and the newest error of those.';

REVOKE ALL ON FUNCTION tireless.history_top(), tireless.mirror_unread(text, text, text) FROM PUBLIC;
-- Whoever reads repo_status calls mirror_unread through it.
GRANT EXECUTE ON FUNCTION tireless.mirror_unread(text, text, text) TO tireless_runner, tireless_poller, tireless_admin;
