-- The poller against real forges: repository names matched without case, a poll lease the poller keeps renewing (so a dead poller's lapses within a minute), moved issues that end their job, a renamed repository and a skipped issue reported.
-- depends: 0019_holder_login

-- Owner and repository names are case-insensitive on both forges (Gitea keeps lower_name beside
-- name, models/repo/repo.go; GitHub redirects any case to the canonical one), and GitHub's
-- webhooks name the repository in its canonical case. The key stays as it was first tracked (the
-- jobs, issues and history keep it); one forge cannot track the same repository twice in two cases.
-- On a store that already tracks one repository in two cases this index cannot be built: untrack
-- one of them first.
CREATE UNIQUE INDEX tracked_repo_once_in_any_case ON tireless.tracked_repo (forge, lower(owner), lower(repo));
COMMENT ON INDEX tireless.tracked_repo_once_in_any_case IS
    'A repository is tracked once per forge whatever the case of its owner and name (both forges ignore it): '
    'track_repo answers false for the same repository in another case.';

CREATE FUNCTION tireless.tracked_key(forge text, owner text, repo text)
    RETURNS TABLE (forge text, owner text, repo text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t
     WHERE t.forge = tracked_key.forge
       AND lower(t.owner) = lower(tracked_key.owner) AND lower(t.repo) = lower(tracked_key.repo);
$$;
COMMENT ON FUNCTION tireless.tracked_key(text, text, text) IS
    'The key a repository is tracked under, matching owner and name without case (a webhook names it in the '
    'forge''s canonical case); no row when it is not tracked.';

CREATE OR REPLACE FUNCTION tireless.poll_soon(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_repo(poll_soon.forge, poll_soon.owner, poll_soon.repo);
    UPDATE tireless.repo_poll rp SET next_poll_at = now()
      FROM tireless.tracked_key(poll_soon.forge, poll_soon.owner, poll_soon.repo) k
     WHERE (rp.forge, rp.owner, rp.repo) = (k.forge, k.owner, k.repo)
       AND rp.next_poll_at > now();
    RETURN EXISTS (SELECT FROM tireless.repo_poll rp
                     JOIN tireless.tracked_key(poll_soon.forge, poll_soon.owner, poll_soon.repo) k
                       ON (rp.forge, rp.owner, rp.repo) = (k.forge, k.owner, k.repo)
                    WHERE rp.backoff_until IS NULL OR rp.backoff_until <= now());
END;
$$;
COMMENT ON FUNCTION tireless.poll_soon(text, text, text) IS
    'Makes a tracked repository due now (a webhook saw a change), its owner and name matched without case; a '
    'backoff still holds. True when it is due now, false when it is not tracked or is backing off.';

-- A poller renews the leases it holds every third of the lease while it lives (tireless.forge.poll),
-- so the lease can be short: a poller that dies leaves its repositories to the others within one
-- lease (a minute by default) instead of the five minutes a whole round once needed.
CREATE FUNCTION tireless.renew_poll_leases(poller text, lease interval) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    renewed integer;
BEGIN
    PERFORM tireless.check_worker(renew_poll_leases.poller);
    PERFORM tireless.check_lease(renew_poll_leases.lease);
    -- Only leases still running: one that lapsed may already be another poller's to take.
    UPDATE tireless.repo_poll rp SET poll_lease_until = now() + renew_poll_leases.lease
     WHERE rp.polled_by = renew_poll_leases.poller AND rp.poll_lease_until > now();
    GET DIAGNOSTICS renewed = ROW_COUNT;
    RETURN renewed;
END;
$$;
COMMENT ON FUNCTION tireless.renew_poll_leases(text, interval) IS
    'Extends to now() + lease every poll lease poller still holds (not one that has run out); returns how many. '
    'A poller calls it every third of its lease, so a dead poller''s repositories are free within one lease.';

ALTER TABLE tireless.repo_poll ADD COLUMN moved_to text, ADD COLUMN last_warning text,
    ADD COLUMN last_warning_at timestamptz;
COMMENT ON COLUMN tireless.repo_poll.moved_to IS
    'owner/name the forge says the repository has now (it was renamed or transferred and the poller follows the '
    'forge''s redirect); the key stays as tracked.';
COMMENT ON COLUMN tireless.repo_poll.last_warning IS
    'What a good read could not do, say an issue too large to read that it skipped; kept until the next warning.';

CREATE FUNCTION tireless.record_poll_notice(forge text, owner text, repo text, poller text, moved_to text,
                                            warning text) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF length(record_poll_notice.moved_to) > 300 OR record_poll_notice.moved_to !~ '^[^/]+/[^/]+$' THEN
        RAISE EXCEPTION 'moved_to must be owner/name, got %', quote_literal(left(record_poll_notice.moved_to, 300))
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_poll_notice.forge, record_poll_notice.owner, record_poll_notice.repo,
                               record_poll_notice.poller);
    UPDATE tireless.repo_poll rp
       SET moved_to = CASE WHEN lower(record_poll_notice.moved_to) = lower(rp.owner || '/' || rp.repo) THEN NULL
                           ELSE coalesce(record_poll_notice.moved_to, rp.moved_to) END,
           last_warning = coalesce(left(record_poll_notice.warning, 2000), rp.last_warning),
           last_warning_at = CASE WHEN record_poll_notice.warning IS NOT NULL THEN now() ELSE rp.last_warning_at END
     WHERE (rp.forge, rp.owner, rp.repo) = (record_poll_notice.forge, record_poll_notice.owner, record_poll_notice.repo);
END;
$$;
COMMENT ON FUNCTION tireless.record_poll_notice(text, text, text, text, text, text) IS
    'What a read of a repository whose poll lease poller holds has to report beside its issues: the owner/name '
    'the forge now gives it (moved_to; its tracked name clears it) and a warning (say an issue skipped as too '
    'large); a null leaves that one as it was. TL004 without the lease, TL008 for an untracked repository.';

CREATE FUNCTION tireless.record_issue_moved(forge text, owner text, repo text, poller text, number integer, note text)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ended integer;
BEGIN
    IF record_issue_moved.number IS NULL OR record_issue_moved.number < 1 THEN
        RAISE EXCEPTION 'number must be a positive issue number, got %', coalesce(record_issue_moved.number::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    IF record_issue_moved.note IS NULL OR btrim(record_issue_moved.note) = '' THEN
        RAISE EXCEPTION 'note must say where the issue went, got %', coalesce(quote_literal(record_issue_moved.note), 'null')
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.held_poll(record_issue_moved.forge, record_issue_moved.owner, record_issue_moved.repo,
                               record_issue_moved.poller);
    PERFORM tireless.lock_repo_issues(record_issue_moved.forge, record_issue_moved.owner, record_issue_moved.repo);
    -- The issue is not in this repository any more: its request is withdrawn, as for a deleted one.
    UPDATE tireless.issue s SET state = 'closed', asks_since = NULL, changed_at = now()
     WHERE (s.forge, s.owner, s.repo, s.number)
           = (record_issue_moved.forge, record_issue_moved.owner, record_issue_moved.repo, record_issue_moved.number)
       AND (s.state <> 'closed' OR s.asks_since IS NOT NULL);
    UPDATE tireless.job j
       SET state = CASE WHEN j.state = 'pending' THEN 'cancelled' ELSE j.state END::tireless.job_state,
           note = left(btrim(record_issue_moved.note), 2000),
           cancel_requested_at = CASE WHEN j.state = 'claimed' THEN now() END,
           updated_at = now()
     WHERE (j.forge, j.owner, j.repo, j.number)
           = (record_issue_moved.forge, record_issue_moved.owner, record_issue_moved.repo, record_issue_moved.number)
       AND (j.state = 'pending' OR (j.state = 'claimed' AND j.cancel_requested_at IS NULL));
    GET DIAGNOSTICS ended = ROW_COUNT;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION tireless.record_issue_moved(text, text, text, text, integer, text) IS
    'An issue the forge says has moved out of the repository (GitHub answers 301 for a transferred issue): its '
    'request is withdrawn, its pending job cancelled and its claimed job asked to stop, the note saying where it '
    'went; returns how many jobs it ended. TL004 without the poll lease, TL008 for an untracked repository.';

-- repo_status shows where a repository moved and the last warning of its reads (new columns last).
CREATE OR REPLACE VIEW tireless.repo_status AS
SELECT rp.forge, rp.owner, rp.repo,
       f.kind::text AS forge_kind,
       f.name IS NOT NULL AS registered,
       rp.last_poll_at, rp.last_success_at, rp.last_error, rp.last_error_at, rp.consecutive_failures,
       rp.next_poll_at, rp.backoff_until, rp.polled_by, rp.cursor,
       f.limited_until AS forge_limited_until, f.last_error AS forge_error,
       coalesce(live.pending, 0) AS pending, coalesce(live.claimed, 0) AS claimed,
       coalesce(queued.writes, 0) + tireless.mirror_unread(rp.forge, rp.owner, rp.repo) AS mirror_backlog,
       queued.last_error AS mirror_error, queued.last_error_at AS mirror_error_at,
       rp.moved_to, rp.last_warning, rp.last_warning_at
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
    'last good read and last error, failures in a row, next poll, backoff, holder and cursor, its live jobs, '
    'the mirror: how many issues still wait for a forge write (mirror_backlog) and the newest error of those, '
    'and the poller''s notices: the owner/name the repository was moved to, the last warning of a good read.';

REVOKE ALL ON FUNCTION
    tireless.tracked_key(text, text, text),
    tireless.renew_poll_leases(text, interval),
    tireless.record_poll_notice(text, text, text, text, text, text),
    tireless.record_issue_moved(text, text, text, text, integer, text)
    FROM PUBLIC;
-- The webhook (the dashboard's role) and poll_soon look repositories up through tracked_key.
GRANT EXECUTE ON FUNCTION tireless.tracked_key(text, text, text) TO tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION
    tireless.renew_poll_leases(text, interval),
    tireless.record_poll_notice(text, text, text, text, text, text),
    tireless.record_issue_moved(text, text, text, text, integer, text)
    TO tireless_poller, tireless_admin;
