-- Trust boundaries in the store: a holder is its worker name and the login that claimed, and no lock an outside login can take blocks the sweeper, enqueue or the poll.
-- depends: 0018_fleet_control

-- The group roles belong to the cluster (0002_roles adopts them when they exist). A group role that
-- can log in, or is a superuser, is not a group: whoever holds its password is every runner, poller
-- or admin of every store in the cluster. tireless.migrate refuses such roles before a first install
-- (and roles with members it did not grant); this refuses them on every upgrade as well.
DO $$
DECLARE
    unsafe text;
BEGIN
    SELECT string_agg(format('%s (%s)', r.rolname,
                             concat_ws(', ', CASE WHEN r.rolcanlogin THEN 'LOGIN' END, CASE WHEN r.rolsuper THEN 'SUPERUSER' END)),
                      '; ' ORDER BY r.rolname)
      INTO unsafe
      FROM pg_catalog.pg_roles r
     WHERE r.rolname IN ('tireless_runner', 'tireless_poller', 'tireless_admin') AND (r.rolcanlogin OR r.rolsuper);
    IF unsafe IS NOT NULL THEN
        RAISE EXCEPTION 'the tireless group roles must be NOLOGIN NOSUPERUSER groups; refused: %', unsafe
            USING ERRCODE = '42501',
                  HINT = 'ALTER ROLE ... NOLOGIN NOSUPERUSER (give each host a login role of its own that is a member), then migrate again.';
    END IF;
END;
$$;

-- One login, one runner (DESIGN.md: "A holder is a worker name *and* the database login that
-- claimed"). session_user, not current_user: inside these SECURITY DEFINER functions current_user is
-- the owner of the schema, session_user the login that connected.
ALTER TABLE tireless.job ADD COLUMN claimed_login text;
COMMENT ON COLUMN tireless.job.claimed_login IS
    'The database login (session_user) that made the job''s latest claim; kept after the claim ends, like attempts. '
    'While the job is claimed only that login (or an admin) may renew, heartbeat, give back or finish it. '
    'Null: claimed before 0019_holder_login, or never claimed.';

ALTER TABLE tireless.job_event ADD COLUMN login text;
COMMENT ON COLUMN tireless.job_event.login IS
    'The database login (session_user) whose call made the change, beside worker, the holder the change concerns. '
    'Null for events written before 0019_holder_login.';

CREATE OR REPLACE FUNCTION tireless.record_job_event() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    -- OLD is null for an INSERT: the creation event has no from_state.
    -- clock_timestamp(), not now(): written under the row lock, so one job's events are in time order
    -- even when a transaction that started earlier changes the job later.
    INSERT INTO tireless.job_event (job_id, at, from_state, to_state, worker, attempt, note, login)
    VALUES (NEW.id, clock_timestamp(), OLD.state, NEW.state, coalesce(NEW.claimed_by, OLD.claimed_by), NEW.attempts, NEW.note,
            session_user);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.record_job_event() IS
    'Trigger: appends the change of state of a job to tireless.job_event, with the login that made it.';

-- Which login holds each claim, beside the worker name (a column added at the end keeps the view's
-- earlier columns as they were).
CREATE OR REPLACE VIEW tireless.active_claims AS
SELECT j.id, j.forge, j.owner, j.repo, j.number, j.kind, j.lane, j.claimed_by, j.attempts,
       j.claim_expires_at, j.claim_expires_at - now() AS time_left, j.updated_at, j.claimed_login
  FROM tireless.job j
 WHERE j.state = 'claimed'
 ORDER BY j.claim_expires_at;
COMMENT ON VIEW tireless.active_claims IS
    'Claimed jobs with the time left on their lease (negative: past its lease, waiting for the sweeper), '
    'and the login that claimed each.';

-- Inlined into the statements that call it (one SQL expression), so a holder calling from its own
-- login pays one comparison: the admin test runs only for another login.
CREATE FUNCTION tireless.acts_for_login(claimed_login text) RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    SELECT acts_for_login.claimed_login = session_user
           OR acts_for_login.claimed_login IS NULL
           OR tireless.may_cancel_pending()
$$;
COMMENT ON FUNCTION tireless.acts_for_login(text) IS
    'True when the caller may act for a claim made by claimed_login: it is that login (session_user), the claim '
    'predates logins (null), or the caller''s effective role is an admin (as tireless.may_cancel_pending judges).';

-- Invariant 5 with the login: another login presenting the holder's name (and token) is not the holder.
CREATE OR REPLACE FUNCTION tireless.check_holder(job tireless.job, worker text, token uuid) RETURNS void
    LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF job.state = 'claimed' AND job.claimed_by = check_holder.worker
       AND (check_holder.token IS NULL OR check_holder.token = job.claim_token)
       AND tireless.acts_for_login(job.claimed_login) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'worker % does not hold job %', coalesce(quote_literal(left(check_holder.worker, 220)), 'null'), job.id
        USING ERRCODE = 'TL004',
              DETAIL = CASE
                  WHEN job.state <> 'claimed' THEN format('The job is %s now.', job.state)
                  WHEN job.claimed_by IS DISTINCT FROM check_holder.worker THEN format('The job is claimed by %L.', job.claimed_by)
                  WHEN check_holder.token IS NOT NULL AND check_holder.token <> job.claim_token
                      THEN 'The claim was lost and the job claimed again.'
                  ELSE format('The job was claimed by the login %I, not by %I.', job.claimed_login, session_user) END,
              HINT = CASE WHEN job.state = 'claimed' AND job.claimed_by = check_holder.worker
                               AND (check_holder.token IS NULL OR check_holder.token = job.claim_token)
                          THEN 'Only the login that claimed a job (or an admin) may act for its holder.'
                          ELSE 'The lease was lost: stop the work and leave the job to the store.' END;
END;
$$;
COMMENT ON FUNCTION tireless.check_holder(tireless.job, text, uuid) IS
    'Raises TL004 unless worker (and token, when given) holds the job''s current claim and the caller is the login '
    'that claimed it (or an admin); DETAIL says where the job is now, or which login claimed it.';

CREATE OR REPLACE FUNCTION tireless.claim_next(worker text, lanes text[], lease interval DEFAULT '10 minutes')
    RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    malformed boolean;
    open_lanes text[];
    any_capped boolean;
    capped record;
    next_lane text;
BEGIN
    -- The common case, one test and one statement: a well-formed call for one lane that hands out
    -- work without a count (no settings row, or one that is unlimited, not paused and not tripped).
    -- The lane test is a one-time filter of the statement, so a lane that has settings costs no scan
    -- here. One test, not one per argument: PL/pgSQL prepares each expression again in every
    -- transaction, and every claim is a transaction of its own.
    IF tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)
       AND cardinality(claim_next.lanes) = 1 AND tireless.is_lane_name(claim_next.lanes[1]) THEN
        -- Invariant 4: one row transition; the row lock (SKIP LOCKED) and the write share the statement.
        RETURN QUERY
        WITH candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_next.lanes[1]]) AND j.available_at <= now()
               AND NOT EXISTS (SELECT FROM tireless.lane l
                                WHERE l.name = claim_next.lanes[1]
                                  AND (l.capacity IS NOT NULL OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until)))
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_next.worker,
               claimed_login = session_user,
               claim_expires_at = now() + claim_next.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
          FROM candidate
         WHERE j.id = candidate.id
        RETURNING j.*;
        -- Nothing claimed: the lane is empty, paused or tripped (the general path would find nothing
        -- either), or it has a capacity, which only the general path counts. Two tests, not one
        -- condition: FOUND alone is a plain expression, the look at the lane a statement of its own.
        IF FOUND THEN
            RETURN;
        END IF;
        IF NOT EXISTS (SELECT FROM tireless.lane l WHERE l.name = claim_next.lanes[1] AND l.capacity IS NOT NULL) THEN
            RETURN;
        END IF;
    ELSE
        IF NOT (tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)) THEN
            PERFORM tireless.check_worker(claim_next.worker);
            PERFORM tireless.check_lease(claim_next.lease);
        END IF;
        IF claim_next.lanes IS NULL OR cardinality(claim_next.lanes) > 100 THEN
            RAISE EXCEPTION 'lanes must be an array of at most 100 lane names, got %', coalesce(left(claim_next.lanes::text, 100), 'null')
                USING ERRCODE = 'TL005';
        END IF;
    END IF;

    -- One look at the lanes: is a name malformed, which lanes are open without a lock (no settings
    -- row, or unlimited, not paused and not tripped), and does any have a capacity.
    SELECT bool_or(r.name IS NULL OR NOT tireless.is_lane_name(r.name)),
           coalesce(array_agg(DISTINCT r.name) FILTER (
               WHERE l.name IS NULL
                  OR (l.capacity IS NULL AND tireless.lane_hands_out_work(l.paused, l.tripped_until))), '{}'),
           bool_or(l.capacity IS NOT NULL)
      INTO malformed, open_lanes, any_capped
      FROM unnest(claim_next.lanes) AS r(name)
      LEFT JOIN tireless.lane l ON l.name = r.name;
    IF malformed THEN
        PERFORM tireless.check_lane(r.name) FROM unnest(claim_next.lanes) AS r(name);
    END IF;

    -- A lane with a capacity is counted under its row lock, so concurrent claimers take its free
    -- slots one at a time and never hold more claims than the capacity.
    IF any_capped THEN
        FOR capped IN
            SELECT l.name, l.capacity FROM tireless.lane l
             WHERE l.name = ANY (claim_next.lanes)
               AND l.capacity IS NOT NULL AND tireless.lane_hands_out_work(l.paused, l.tripped_until)
             ORDER BY l.name
               FOR UPDATE
        LOOP
            IF (SELECT count(*) FROM tireless.job j WHERE j.state = 'claimed' AND j.lane = capped.name) < capped.capacity THEN
                open_lanes := open_lanes || capped.name;
            END IF;
        END LOOP;
    END IF;

    IF cardinality(open_lanes) = 0 THEN
        RETURN;
    END IF;

    -- One lane at a time, the lane whose oldest ready job is oldest first: each lane is an ordered
    -- scan of its own part of pending_jobs_in_claim_order, so neither finished jobs nor a backlog in
    -- another lane cost anything (bench/results.md). Written lane = ANY (ARRAY[lane]) ... ORDER BY
    -- j.lane, j.id on purpose: with lane = x and ORDER BY j.id the planner walks the primary key
    -- through every older job, finished or not, expecting a match at any moment.
    IF cardinality(open_lanes) > 1 THEN
        open_lanes := ARRAY(
            SELECT l.name FROM unnest(open_lanes) AS l(name)
             ORDER BY (SELECT j.id FROM tireless.job j
                        WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[l.name]) AND j.available_at <= now()
                        ORDER BY j.lane, j.id LIMIT 1) NULLS LAST);
    END IF;
    FOREACH next_lane IN ARRAY open_lanes LOOP
        -- Invariant 4: one row transition; the row lock (SKIP LOCKED) and the write share the statement.
        RETURN QUERY
        WITH candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[next_lane]) AND j.available_at <= now()
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_next.worker,
               claimed_login = session_user,
               claim_expires_at = now() + claim_next.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
          FROM candidate
         WHERE j.id = candidate.id
        RETURNING j.*;
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
END;
$$;
COMMENT ON FUNCTION tireless.claim_next(text, text[], interval) IS
    'Claims the oldest claimable pending job in the given lanes for worker: state claimed, a lease of lease, a fresh '
    'claim_token, attempts + 1, and the caller''s login as claimed_login. Skips paused, tripped and full lanes and jobs still in backoff. Zero rows when '
    'nothing is claimable; a lane nobody has configured simply holds no work.';

CREATE OR REPLACE FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval DEFAULT '10 minutes', token uuid DEFAULT NULL)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT (tireless.is_worker_name(renew_claim.worker) AND tireless.is_lease(renew_claim.lease)) THEN
        PERFORM tireless.check_worker(renew_claim.worker);
        PERFORM tireless.check_lease(renew_claim.lease);
    END IF;
    UPDATE tireless.job j
       SET claim_expires_at = now() + renew_claim.lease, updated_at = now()
     WHERE j.id = renew_claim.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = renew_claim.worker
       AND (renew_claim.token IS NULL OR j.claim_token = renew_claim.token)
       AND tireless.acts_for_login(j.claimed_login);
    IF FOUND THEN
        RETURN true;
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = renew_claim.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(renew_claim.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN false;
END;
$$;
COMMENT ON FUNCTION tireless.renew_claim(bigint, text, interval, uuid) IS
    'Extends the lease to now() + lease while worker (and token, when given) holds the claim and the caller is the '
    'login that claimed (or an admin); false when the claim was lost or is another login''s. TL001 for an unknown job.';

CREATE OR REPLACE FUNCTION tireless.heartbeat(job_id bigint, worker text, lease interval DEFAULT '10 minutes', token uuid DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    requested timestamptz;
    held_lane text;
    held_attempt integer;
BEGIN
    IF NOT (tireless.is_worker_name(heartbeat.worker) AND tireless.is_lease(heartbeat.lease)) THEN
        PERFORM tireless.check_worker(heartbeat.worker);
        PERFORM tireless.check_lease(heartbeat.lease);
    END IF;
    UPDATE tireless.job j
       SET claim_expires_at = now() + heartbeat.lease, updated_at = now()
     WHERE j.id = heartbeat.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = heartbeat.worker
       AND (heartbeat.token IS NULL OR j.claim_token = heartbeat.token)
       AND tireless.acts_for_login(j.claimed_login)
    RETURNING j.cancel_requested_at, j.lane, j.attempts INTO requested, held_lane, held_attempt;
    IF FOUND THEN
        IF requested IS NOT NULL THEN
            RETURN 'cancel';
        END IF;
        RETURN tireless.watch_attempt(heartbeat.job_id, held_attempt, held_lane);
    END IF;
    IF NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = heartbeat.job_id) THEN
        RAISE EXCEPTION 'no job with id %', coalesce(heartbeat.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    RETURN 'lost';
END;
$$;
COMMENT ON FUNCTION tireless.heartbeat(bigint, text, interval, uuid) IS
    'Renews like renew_claim and answers held, lost (worker, or token when given, no longer holds the claim, or the '
    'caller is not the login that claimed nor an admin), '
    'cancel (the issue withdrew its request), timeout (the attempt ran past its lane''s max_run) or stalled (no '
    'progress for its lane''s stall_after). On cancel, timeout and stalled the lease is still extended, so the holder '
    'can stop its agent: then transition to cancelled, or end_stopped_attempt. A runner treats an answer it does '
    'not know as cancel. TL001 for an unknown job.';

CREATE OR REPLACE FUNCTION tireless.transition(
    job_id bigint, to_state text, worker text DEFAULT NULL, note text DEFAULT NULL, token uuid DEFAULT NULL
) RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    target tireless.job_state;
    job tireless.job;
    budget integer;
    final_state tireless.job_state;
    final_note text := transition.note;
    result tireless.job;
    lane_capped boolean;
    breaker_dirty boolean;
    ended record;
BEGIN
    -- The holder ends its claim (delivered, failed, cancelled): one test, then one statement that
    -- takes the row lock, tests the holder and reads the lane's settings. One test, not one per
    -- argument: PL/pgSQL prepares each expression again in every transaction, and every finish is a
    -- transaction of its own. When the statement changes nothing (not the holder), or the call is
    -- any other move, the analysis below decides, under the row lock, which refusal or move it is.
    IF transition.worker IS NOT NULL AND transition.to_state IN ('delivered', 'failed', 'cancelled')
       AND (transition.note IS NULL OR length(transition.note) <= 10000) THEN
        WITH moved AS (
            UPDATE tireless.job j
               SET state = transition.to_state::tireless.job_state,
                   claimed_by = NULL,
                   claim_expires_at = NULL,
                   claim_token = NULL,
                   note = transition.note,
                   updated_at = now()
             WHERE j.id = transition.job_id
               AND j.state = 'claimed'
               AND j.claimed_by = transition.worker
               AND (transition.token IS NULL OR j.claim_token = transition.token)
               AND tireless.acts_for_login(j.claimed_login)
            RETURNING j
        )
        -- Whether the lane must hear of it: a failure counts against its breaker, a delivery closes
        -- a breaker that counted failures, and a lane with a capacity announces the freed slot. Most
        -- lanes have no settings row, so a delivery there needs nothing more.
        SELECT m.j AS job,
               (m.j).state = 'failed' OR l.capacity IS NOT NULL
               OR ((m.j).state = 'delivered' AND (l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL)) AS lane_hears
          INTO ended
          FROM moved m LEFT JOIN tireless.lane l ON l.name = (m.j).lane;
        IF FOUND THEN
            IF ended.lane_hears THEN
                result := ended.job;
                SELECT l.capacity IS NOT NULL, l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL
                  INTO lane_capped, breaker_dirty
                  FROM tireless.lane l WHERE l.name = result.lane;
                IF result.state = 'failed' THEN
                    PERFORM tireless.record_lane_outcome(result.lane, false);
                ELSIF result.state = 'delivered' AND breaker_dirty THEN
                    PERFORM tireless.record_lane_outcome(result.lane, true);
                END IF;
                IF lane_capped THEN
                    PERFORM tireless.announce_work(result.lane);
                END IF;
            END IF;
            RETURN ended.job;
        END IF;
    END IF;

    -- The names of the holder's moves need no look-up; any other name is parsed (TL005 if unknown).
    IF transition.to_state IN ('delivered', 'failed', 'cancelled') THEN
        target := transition.to_state::tireless.job_state;
    ELSE
        target := tireless.parse_state(transition.to_state);
    END IF;
    IF length(transition.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(transition.note) USING ERRCODE = 'TL005';
    END IF;

    SELECT * INTO job FROM tireless.job j WHERE j.id = transition.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(transition.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    -- Invariant 5: a claimed job answers only to its holder, and a worker that is given speaks as a
    -- holder: not holding the job is its answer whatever the job's state, before any rule of states.
    IF transition.worker IS NOT NULL OR job.state = 'claimed' THEN
        PERFORM tireless.check_holder(job, transition.worker, transition.token);
    END IF;
    IF tireless.is_terminal(job.state) THEN
        RAISE EXCEPTION 'job % is % and never changes again; refused to move it to %', job.id, job.state, target
            USING ERRCODE = 'TL003', HINT = 'To run the issue again, enqueue it: that makes a new job.';
    END IF;
    IF target = 'claimed' THEN
        RAISE EXCEPTION 'job % cannot be moved to claimed by transition', job.id
            USING ERRCODE = 'TL002', HINT = 'A job is claimed only through tireless.claim_next.';
    END IF;

    IF job.state = 'pending' THEN
        IF target <> 'cancelled' THEN
            RAISE EXCEPTION 'job % is pending: it can be cancelled, not moved to %', job.id, target
                USING ERRCODE = 'TL002';
        END IF;
        IF NOT tireless.may_cancel_pending() THEN
            RAISE EXCEPTION 'only tireless_admin may cancel pending job %; % may not', job.id,
                CASE WHEN current_setting('role') = 'none' THEN session_user::text ELSE current_setting('role') END
                USING ERRCODE = '42501';
        END IF;
        final_state := 'cancelled';
    ELSE
        final_state := target;
        IF target = 'pending' AND job.cancel_requested_at IS NOT NULL THEN
            -- A cancel request stands (0007_work_rule): released, the job ends cancelled, not retried.
            final_state := 'cancelled';
            final_note := 'issue withdrew its request' || coalesce('; released: ' || transition.note, '');
        ELSIF target = 'pending' THEN
            SELECT kp.max_attempts INTO budget FROM tireless.kind_policy kp WHERE kp.kind = job.kind;
            IF tireless.attempts_spent(job) >= budget THEN
                final_state := 'failed';
                final_note := format('attempts exhausted (%s of %s); last: %s',
                                     tireless.attempts_spent(job), budget, coalesce(transition.note, 'released'));
            END IF;
        END IF;
    END IF;

    UPDATE tireless.job j
       SET state = final_state,
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           available_at = CASE WHEN final_state = 'pending' THEN now() + tireless.retry_delay(tireless.attempts_spent(j))
                               ELSE j.available_at END,
           note = final_note,
           updated_at = now()
     WHERE j.id = job.id
    RETURNING j.* INTO result;

    IF job.state = 'claimed' THEN
        -- Most lanes have no settings row: then there is no breaker to close and no slot to announce.
        SELECT l.capacity IS NOT NULL, l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL
          INTO lane_capped, breaker_dirty
          FROM tireless.lane l WHERE l.name = job.lane;
        IF final_state IN ('pending', 'failed') THEN
            PERFORM tireless.record_lane_outcome(job.lane, false);
        ELSIF final_state = 'delivered' AND breaker_dirty THEN
            PERFORM tireless.record_lane_outcome(job.lane, true);
        END IF;
    END IF;
    -- Wake runners when the job is claimable again at once, or when it freed a slot in a lane with a capacity.
    IF (final_state = 'pending' AND result.available_at <= now()) OR lane_capped THEN
        PERFORM tireless.announce_work(job.lane);
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.transition(bigint, text, text, text, uuid) IS
    'Moves a job along its state machine and returns it. A worker that is given must hold the claim (and the '
    'token, when given) from the login that claimed (or an admin), whatever the job''s state now is: else TL004. Leaving claimed (to pending, delivered, '
    'failed, cancelled) needs the holder; a release after the last attempt the budget counts fails the job, and a '
    'release of a job whose issue withdrew its request cancels it. '
    'A pending job can only be cancelled (by tireless_admin). Entering claimed, or leaving a terminal state, is refused.';

COMMENT ON FUNCTION tireless.give_back(bigint, text, text, uuid) IS
    'The holder returns the job because the runner is stopping (SIGTERM, a deploy), not because the job failed: '
    'pending and claimable at once, no backoff, no failure for the circuit breaker, not counted against max_attempts '
    '(attempts keeps the claim; given_back counts it). The note starts with "given back". A job whose issue withdrew '
    'its request ends cancelled instead. TL004 unless worker (and token, when given) holds the claim and the caller '
    'is the login that claimed it (or an admin).';

-- Locks only the tireless roles can take. An advisory lock is the cluster's: any login, even one
-- with no tireless role, could take the keys the functions took and stop the sweeper in a lane or
-- hold every enqueue of a repository, and each key took a slot of the shared lock table (one batch
-- naming 15,000 repositories exhausted it: 53200 in other sessions). A row lock needs UPDATE on the
-- table, which no role but the schema's owner holds, and lives in the row itself, not in the lock table.

-- A repository's lock is its tracked_repo row. FOR NO KEY UPDATE: the foreign keys that name the row
-- (repo_poll, mirror_repo, mirror_issue) take FOR KEY SHARE, which it does not block; untrack_repo's
-- DELETE waits for it. The issues of an untracked repository are never judged, so it needs no lock.
CREATE OR REPLACE FUNCTION tireless.lock_repo_issues(forge text, owner text, repo text) RETURNS void
    LANGUAGE sql VOLATILE
AS $$
    SELECT FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (lock_repo_issues.forge, lock_repo_issues.owner, lock_repo_issues.repo)
       FOR NO KEY UPDATE;
$$;
COMMENT ON FUNCTION tireless.lock_repo_issues(text, text, text) IS
    'Takes the transaction''s lock on one tracked repository''s issues: its tracked_repo row (FOR NO KEY UPDATE), '
    'which only the tireless functions can lock. enqueue, record_poll, rerun and the mirror take it, so two of them '
    'never judge the same issue at once.';

CREATE OR REPLACE FUNCTION tireless.check_issue_batch(issues jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    bad record;
    repositories bigint;
BEGIN
    IF jsonb_typeof(check_issue_batch.issues) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'issues must be a JSON array, got %', left(coalesce(check_issue_batch.issues::text, 'null'), 100)
            USING ERRCODE = 'TL006';
    END IF;
    IF jsonb_array_length(check_issue_batch.issues) > 50000 THEN
        RAISE EXCEPTION 'a batch holds at most 50000 issues, got %', jsonb_array_length(check_issue_batch.issues)
            USING ERRCODE = 'TL006', HINT = 'Split the poll into several calls.';
    END IF;
    -- A batch locks each repository it names until it commits: a bounded set, so one call cannot hold
    -- every repository of the store at once. The poller sends one repository per call.
    SELECT count(*) INTO repositories
      FROM (SELECT DISTINCT e.issue -> 'forge', e.issue -> 'owner', e.issue -> 'repo'
              FROM jsonb_array_elements(check_issue_batch.issues) AS e(issue)) AS r;
    IF repositories > 1000 THEN
        RAISE EXCEPTION 'a batch names at most 1000 repositories, got %', repositories
            USING ERRCODE = 'TL006', HINT = 'Split the batch by repository into several calls.';
    END IF;
    SELECT e.position - 1 AS position, p.problem INTO bad
      FROM jsonb_array_elements(check_issue_batch.issues) WITH ORDINALITY AS e(issue, position)
     CROSS JOIN LATERAL (SELECT tireless.issue_problem(e.issue)) AS p(problem)
     WHERE p.problem IS NOT NULL
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: %', bad.position, bad.problem USING ERRCODE = 'TL006';
    END IF;
    SELECT e.position - 1 AS position, (e.issue ->> 'parent_id') AS parent_id INTO bad
      FROM jsonb_array_elements(check_issue_batch.issues) WITH ORDINALITY AS e(issue, position)
     WHERE jsonb_typeof(e.issue -> 'parent_id') = 'number'
       AND NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = (e.issue ->> 'parent_id')::bigint)
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: "parent_id" % is not a job', bad.position, bad.parent_id
            USING ERRCODE = 'TL006';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_issue_batch(jsonb) IS
    'Raises TL006 naming the first malformed element (and the field) unless the batch is a JSON array of at most '
    '50000 well-formed issues of at most 1000 repositories whose parent_ids name jobs. enqueue and record_poll '
    'check before they write.';

-- A sweeper's lock on a lane is a row of its own here: tireless.lane holds only lanes with
-- settings, and a claim counting a capacity locks those rows. A fixed set of slots, each lane in the
-- slot its name hashes to, so no lock row is ever inserted (an insert would make two sweepers, or
-- two pollers making a lane's first job, wait for each other). Two lanes that share a slot are swept
-- by one sweeper at a time: a sweep that skips a lane leaves it for the next sweep.
CREATE TABLE tireless.sweep_slot (
    slot integer PRIMARY KEY,
    CONSTRAINT sweep_slot_in_range CHECK (slot >= 0 AND slot < 64)
);
COMMENT ON TABLE tireless.sweep_slot IS
    'The 64 rows a sweeper locks (FOR NO KEY UPDATE SKIP LOCKED) to sweep lanes alone: a lane''s slot is '
    'hashtext(lane) & 63. Only the tireless functions can lock them. Private.';
COMMENT ON CONSTRAINT sweep_slot_in_range ON tireless.sweep_slot IS 'A slot is hashtext(lane) & 63.';
INSERT INTO tireless.sweep_slot (slot) SELECT generate_series(0, 63);

CREATE OR REPLACE FUNCTION tireless.expire_stale_claims() RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    moved integer := 0;
    expired record;
    failed_lanes text[] := '{}';
    failed_lane text;
    sweep_lanes text[];
BEGIN
    -- One sweeper per lane at a time, by its slot's row of tireless.sweep_slot (FOR NO KEY UPDATE
    -- SKIP LOCKED): a lane another sweeper holds is left for the next sweep, so two sweepers never
    -- wait on each other, not even on the lane row the circuit breaker counts in. A row only the
    -- tireless functions can lock, not an advisory key any login could take: no outside login stops a sweep.
    SELECT coalesce(array_agg(s.lane), '{}') INTO sweep_lanes
      FROM (SELECT DISTINCT j.lane FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS s;
    IF cardinality(sweep_lanes) = 0 THEN
        RETURN 0;
    END IF;
    sweep_lanes := ARRAY(
        WITH held AS (
            SELECT k.slot FROM tireless.sweep_slot k
             WHERE k.slot IN (SELECT hashtext(l) & 63 FROM unnest(sweep_lanes) AS l)
             ORDER BY k.slot
               FOR NO KEY UPDATE SKIP LOCKED)
        SELECT l FROM unnest(sweep_lanes) AS l WHERE hashtext(l) & 63 IN (SELECT h.slot FROM held h));
    -- SKIP LOCKED: a job whose row another transaction holds is left as well; no job moves twice.
    -- A cancel-requested claim is cancelled, not retried: no failure for the breaker, no attempt spent.
    FOR expired IN
        WITH stale AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now() AND j.lane = ANY (sweep_lanes)
             ORDER BY j.claim_expires_at
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                            WHEN tireless.attempts_spent(j) >= kp.max_attempts THEN 'failed'
                            ELSE 'pending' END::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               available_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR tireless.attempts_spent(j) >= kp.max_attempts THEN j.available_at
                                   ELSE now() + tireless.retry_delay(tireless.attempts_spent(j)) END,
               note = CASE WHEN j.cancel_requested_at IS NOT NULL
                           THEN format('issue withdrew its request; lease of %s expired at %s', j.claimed_by, j.claim_expires_at)
                           WHEN tireless.attempts_spent(j) >= kp.max_attempts
                           THEN format('attempts exhausted (%s of %s); last: lease of %s expired at %s',
                                       tireless.attempts_spent(j), kp.max_attempts, j.claimed_by, j.claim_expires_at)
                           ELSE format('lease of %s expired at %s', j.claimed_by, j.claim_expires_at) END,
               updated_at = now()
          FROM stale, tireless.kind_policy kp
         WHERE j.id = stale.id AND kp.kind = j.kind
        RETURNING j.lane, j.state, j.available_at
    LOOP
        moved := moved + 1;
        IF expired.state <> 'cancelled' THEN
            failed_lanes := failed_lanes || expired.lane;
        END IF;
        -- As in transition: the job is claimable at once, or its claim freed a slot in a capped lane.
        IF (expired.state = 'pending' AND expired.available_at <= now())
           OR EXISTS (SELECT FROM tireless.lane l WHERE l.name = expired.lane AND l.capacity IS NOT NULL) THEN
            PERFORM tireless.announce_work(expired.lane);
        END IF;
    END LOOP;
    -- Lane rows are written in name order, the order claim_next locks capped lanes in, so a sweep
    -- and a claim that both touch several lanes never deadlock on them.
    FOR failed_lane IN SELECT l FROM unnest(failed_lanes) AS l ORDER BY l LOOP
        PERFORM tireless.record_lane_outcome(failed_lane, false);
    END LOOP;
    RETURN moved;
END;
$$;
COMMENT ON FUNCTION tireless.expire_stale_claims() IS
    'Returns every claimed job whose lease has passed to pending (after its backoff), fails it when the last '
    'attempt its budget counts is spent (give-backs are not counted), or cancels it when its issue withdrew its '
    'request (no failure counted); clears the claim, keeps the attempt count, and returns how many jobs it moved. '
    'Never waits on another sweeper: a job whose row is locked, or a lane another sweeper holds (its '
    'tireless.sweep_slot row), is left for the next sweep. Locks only rows no login outside the tireless roles can lock.';

-- The history rollup's one-at-a-time lock: the table's, not an advisory key any login could hold.
CREATE OR REPLACE FUNCTION tireless.roll_up_history() RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    state     tireless.history_rollup;
    newest    bigint;
    horizon   xid8;
    oldest    xid8;
    target    bigint;
    counted   bigint;
BEGIN
    -- One rollup at a time; a second caller leaves it to the first. A table lock, not a row lock:
    -- it takes no transaction id, so the horizons below are not held back by this transaction
    -- itself. EXCLUSIVE conflicts with itself, not with the ACCESS SHARE of a reader (the most a
    -- login other than the owner may take on the table), so no one else can hold it.
    BEGIN
        LOCK TABLE tireless.history_rollup IN EXCLUSIVE MODE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        RETURN 0;
    END;
    SELECT r.* INTO state FROM tireless.history_rollup r;
    -- Each statement takes a new snapshot: every event id up to newest was drawn by a transaction
    -- that already had its transaction id, so one older than horizon.
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END INTO newest FROM tireless.job_event_id_seq s;
    horizon := pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot());
    oldest := pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot());
    IF oldest >= horizon THEN
        -- Every transaction that could hold an event up to newest has ended: count them all now.
        target := newest;
        state.waiting_to := NULL;
        state.waiting_until := NULL;
    ELSIF state.waiting_to IS NOT NULL AND oldest >= state.waiting_until THEN
        target := state.waiting_to;
        state.waiting_to := newest;
        state.waiting_until := horizon;
    ELSE
        -- A transaction older than the stop is still open: count nothing yet, keep the stop.
        target := state.counted_to;
        IF state.waiting_to IS NULL THEN
            state.waiting_to := newest;
            state.waiting_until := horizon;
        END IF;
    END IF;

    WITH finished AS (
        SELECT date_trunc('hour', e.at) AS hour, j.lane, e.to_state AS outcome
          FROM tireless.job_event e
          JOIN tireless.job j ON j.id = e.job_id
         WHERE e.id > state.counted_to AND e.id <= target AND tireless.is_terminal(e.to_state)
    ), per_lane AS (
        INSERT INTO tireless.finished_count AS c (lane, outcome, jobs)
        SELECT f.lane, f.outcome, count(*) FROM finished f GROUP BY f.lane, f.outcome
        ON CONFLICT (lane, outcome) DO UPDATE SET jobs = c.jobs + excluded.jobs
    ), per_hour AS (
        INSERT INTO tireless.finished_hourly AS h (hour, lane, outcome, jobs)
        SELECT f.hour, f.lane, f.outcome, count(*) FROM finished f GROUP BY f.hour, f.lane, f.outcome
        ON CONFLICT (hour, lane, outcome) DO UPDATE SET jobs = h.jobs + excluded.jobs
    )
    SELECT count(*) INTO counted FROM finished;

    DELETE FROM tireless.finished_hourly h WHERE h.hour < now() - interval '8 days';
    UPDATE tireless.history_rollup r
       SET counted_to = greatest(state.counted_to, target),
           waiting_to = state.waiting_to, waiting_until = state.waiting_until;
    RETURN counted;
END;
$$;
COMMENT ON FUNCTION tireless.roll_up_history() IS
    'Counts the finished jobs of the history written since the last call into tireless.finished_jobs and '
    'tireless.finished_jobs_by_hour; returns how many it added. Reads only new events; an event of a '
    'transaction still open is counted by a later call. Returns 0 at once while another call is rolling up (it holds the table lock of tireless.history_rollup, '
    'which only the schema''s owner can take).';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
