-- The claim protocol: tracking, enqueue, claim_next, renew_claim, transition, expire_stale_claims, refresh_lane.
-- depends: 0004_history

CREATE FUNCTION tireless.check_repo(forge text, owner text, repo text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF forge IS NULL OR length(forge) NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'forge must be 1 to 100 characters, got %', coalesce(quote_literal(left(forge, 120)), 'null') USING ERRCODE = 'TL005';
    END IF;
    IF owner IS NULL OR length(owner) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'owner must be 1 to 200 characters, got %', coalesce(quote_literal(left(owner, 220)), 'null') USING ERRCODE = 'TL005';
    END IF;
    IF repo IS NULL OR length(repo) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'repo must be 1 to 200 characters, got %', coalesce(quote_literal(left(repo, 220)), 'null') USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_repo(text, text, text) IS
    'Raises TL005 unless forge (1-100 characters), owner and repo (1-200 each) are given.';

CREATE FUNCTION tireless.track_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_repo(track_repo.forge, track_repo.owner, track_repo.repo);
    INSERT INTO tireless.tracked_repo (forge, owner, repo)
    VALUES (track_repo.forge, track_repo.owner, track_repo.repo)
    ON CONFLICT DO NOTHING;
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION tireless.track_repo(text, text, text) IS
    'Starts tracking a repository, so enqueue accepts its issues; false if it was tracked already.';

CREATE FUNCTION tireless.untrack_repo(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_repo(untrack_repo.forge, untrack_repo.owner, untrack_repo.repo);
    DELETE FROM tireless.tracked_repo t
     WHERE (t.forge, t.owner, t.repo) = (untrack_repo.forge, untrack_repo.owner, untrack_repo.repo);
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION tireless.untrack_repo(text, text, text) IS
    'Stops tracking a repository; false if it was not tracked. Its jobs stay as they are.';

CREATE FUNCTION tireless.tracked_repos() RETURNS TABLE (forge text, owner text, repo text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.forge, t.owner, t.repo FROM tireless.tracked_repo t ORDER BY t.forge, t.owner, t.repo;
$$;
COMMENT ON FUNCTION tireless.tracked_repos() IS 'The repositories the poller should read, in order.';

CREATE FUNCTION tireless.labels_problem(labels text[]) RETURNS text
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        WHEN labels IS NULL THEN 'must be an array of labels, got null'
        WHEN cardinality(labels) > 100 THEN format('holds %s labels, at most 100 are allowed', cardinality(labels))
        ELSE (SELECT format('must hold labels of 1 to 200 characters, got %s', coalesce(quote_literal(left(l.label, 220)), 'null'))
                FROM unnest(labels) AS l(label)
               WHERE l.label IS NULL OR length(l.label) NOT BETWEEN 1 AND 200
               LIMIT 1)
    END;
$$;
COMMENT ON FUNCTION tireless.labels_problem(text[]) IS
    'Why a set of issue labels breaks the limits (at most 100 labels of 1 to 200 characters), or null when it keeps them.';

CREATE FUNCTION tireless.issue_problem(issue jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        WHEN jsonb_typeof(issue) IS DISTINCT FROM 'object' THEN
            format('must be a JSON object, got %s', left(issue::text, 100))
        WHEN jsonb_typeof(issue -> 'forge') IS DISTINCT FROM 'string' OR length(issue ->> 'forge') NOT BETWEEN 1 AND 100 THEN
            format('"forge" must be a string of 1 to 100 characters, got %s', left(coalesce(issue -> 'forge', 'null')::text, 120))
        WHEN jsonb_typeof(issue -> 'owner') IS DISTINCT FROM 'string' OR length(issue ->> 'owner') NOT BETWEEN 1 AND 200 THEN
            format('"owner" must be a string of 1 to 200 characters, got %s', left(coalesce(issue -> 'owner', 'null')::text, 220))
        WHEN jsonb_typeof(issue -> 'repo') IS DISTINCT FROM 'string' OR length(issue ->> 'repo') NOT BETWEEN 1 AND 200 THEN
            format('"repo" must be a string of 1 to 200 characters, got %s', left(coalesce(issue -> 'repo', 'null')::text, 220))
        WHEN jsonb_typeof(issue -> 'number') IS DISTINCT FROM 'number'
             OR (issue -> 'number')::numeric NOT BETWEEN 1 AND 2147483647
             OR (issue -> 'number')::numeric <> trunc((issue -> 'number')::numeric) THEN
            format('"number" must be an integer from 1 to 2147483647, got %s', left(coalesce(issue -> 'number', 'null')::text, 100))
        WHEN jsonb_typeof(issue -> 'state') IS DISTINCT FROM 'string' OR issue ->> 'state' NOT IN ('open', 'closed') THEN
            format('"state" must be "open" or "closed", got %s', left(coalesce(issue -> 'state', 'null')::text, 100))
        WHEN jsonb_typeof(issue -> 'labels') IS DISTINCT FROM 'array' THEN
            format('"labels" must be an array of strings, got %s', left(coalesce(issue -> 'labels', 'null')::text, 100))
        WHEN EXISTS (SELECT FROM jsonb_array_elements(issue -> 'labels') AS l(label) WHERE jsonb_typeof(l.label) <> 'string') THEN
            format('"labels" must hold strings, got %s',
                   (SELECT left(l.label::text, 100) FROM jsonb_array_elements(issue -> 'labels') AS l(label)
                     WHERE jsonb_typeof(l.label) <> 'string' LIMIT 1))
        WHEN tireless.labels_problem(ARRAY(SELECT jsonb_array_elements_text(issue -> 'labels'))) IS NOT NULL THEN
            '"labels" ' || tireless.labels_problem(ARRAY(SELECT jsonb_array_elements_text(issue -> 'labels')))
        WHEN jsonb_typeof(issue -> 'title') NOT IN ('string', 'null') OR length(issue ->> 'title') > 1000 THEN
            format('"title" must be a string of at most 1000 characters, got %s', left((issue -> 'title')::text, 100))
        WHEN jsonb_typeof(issue -> 'parent_id') NOT IN ('number', 'null')
             OR (jsonb_typeof(issue -> 'parent_id') = 'number'
                 AND ((issue -> 'parent_id')::numeric NOT BETWEEN 1 AND 9223372036854775807
                      OR (issue -> 'parent_id')::numeric <> trunc((issue -> 'parent_id')::numeric))) THEN
            format('"parent_id" must be a job id, got %s', left((issue -> 'parent_id')::text, 100))
    END;
$$;
COMMENT ON FUNCTION tireless.issue_problem(jsonb) IS
    'Why one element of an enqueue batch is malformed, or null when it is well formed.';

CREATE FUNCTION tireless.enqueue(issues jsonb) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    bad record;
    created integer;
    woken text[];
BEGIN
    IF jsonb_typeof(enqueue.issues) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'issues must be a JSON array, got %', left(coalesce(enqueue.issues::text, 'null'), 100)
            USING ERRCODE = 'TL006';
    END IF;
    IF jsonb_array_length(enqueue.issues) > 50000 THEN
        RAISE EXCEPTION 'a batch holds at most 50000 issues, got %', jsonb_array_length(enqueue.issues)
            USING ERRCODE = 'TL006', HINT = 'Split the poll into several calls.';
    END IF;

    -- Validate everything before writing anything: a batch is all or nothing.
    SELECT e.position - 1 AS position, p.problem INTO bad
      FROM jsonb_array_elements(enqueue.issues) WITH ORDINALITY AS e(issue, position)
     CROSS JOIN LATERAL (SELECT tireless.issue_problem(e.issue)) AS p(problem)
     WHERE p.problem IS NOT NULL
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: %', bad.position, bad.problem USING ERRCODE = 'TL006';
    END IF;
    SELECT e.position - 1 AS position, (e.issue ->> 'parent_id') AS parent_id INTO bad
      FROM jsonb_array_elements(enqueue.issues) WITH ORDINALITY AS e(issue, position)
     WHERE jsonb_typeof(e.issue -> 'parent_id') = 'number'
       AND NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = (e.issue ->> 'parent_id')::bigint)
     ORDER BY e.position
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'malformed issue at index %: "parent_id" % is not a job', bad.position, bad.parent_id
            USING ERRCODE = 'TL006';
    END IF;

    WITH incoming AS (
        -- An issue listed twice in one batch counts once: its last listing wins.
        SELECT DISTINCT ON (forge, owner, repo, number)
               e.issue ->> 'forge' AS forge,
               e.issue ->> 'owner' AS owner,
               e.issue ->> 'repo' AS repo,
               (e.issue ->> 'number')::integer AS number,
               e.issue ->> 'state' AS state,
               e.issue ->> 'title' AS title,
               ARRAY(SELECT jsonb_array_elements_text(e.issue -> 'labels')) AS labels,
               (e.issue ->> 'parent_id')::bigint AS parent_id
          FROM jsonb_array_elements(enqueue.issues) WITH ORDINALITY AS e(issue, position)
         ORDER BY forge, owner, repo, number, e.position DESC
    ), work AS MATERIALIZED (
        -- MATERIALIZED: job_kind_for runs once per issue, not once per reference.
        SELECT i.*, tireless.job_kind_for(i.labels) AS kind
          FROM incoming i
         WHERE i.state = 'open'
           AND EXISTS (SELECT FROM tireless.tracked_repo t
                        WHERE (t.forge, t.owner, t.repo) = (i.forge, i.owner, i.repo))
           AND NOT EXISTS (SELECT FROM tireless.job j
                            WHERE (j.forge, j.owner, j.repo, j.number) = (i.forge, i.owner, i.repo, i.number)
                              AND j.state IN ('pending', 'claimed'))
    ), inserted AS (
        INSERT INTO tireless.job (forge, owner, repo, number, title, labels, kind, lane, parent_id)
        SELECT w.forge, w.owner, w.repo, w.number, w.title, w.labels,
               w.kind::tireless.job_kind, tireless.lane_for(w.kind, w.labels), w.parent_id
          FROM work w
         WHERE w.kind IS NOT NULL
         ORDER BY w.forge, w.owner, w.repo, w.number
        -- Two pollers racing on the same issue: the loser's row is skipped, not an error.
        ON CONFLICT (forge, owner, repo, number) WHERE state IN ('pending', 'claimed') DO NOTHING
        RETURNING lane
    )
    SELECT count(*), array_agg(DISTINCT lane) INTO created, woken FROM inserted;

    PERFORM tireless.announce_work(l) FROM unnest(woken) AS l;
    RETURN created;
END;
$$;
COMMENT ON FUNCTION tireless.enqueue(jsonb) IS
    'Takes a JSON array of issues {forge, owner, repo, number, state, labels, title?, parent_id?} and creates a '
    'pending job for each open issue of a tracked repository whose labels ask for work and that has no live job. '
    'Returns how many it created; a repeated poll creates nothing. Validates the whole batch first (TL006).';

CREATE FUNCTION tireless.claim_next(worker text, lanes text[], lease interval DEFAULT '10 minutes')
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
    PERFORM tireless.check_worker(claim_next.worker);
    PERFORM tireless.check_lease(claim_next.lease);
    IF claim_next.lanes IS NULL OR cardinality(claim_next.lanes) > 100 THEN
        RAISE EXCEPTION 'lanes must be an array of at most 100 lane names, got %', coalesce(left(claim_next.lanes::text, 100), 'null')
            USING ERRCODE = 'TL005';
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
    'claim_token, attempts + 1. Skips paused, tripped and full lanes and jobs still in backoff. Zero rows when '
    'nothing is claimable; a lane nobody has configured simply holds no work.';

CREATE FUNCTION tireless.renew_claim(job_id bigint, worker text, lease interval DEFAULT '10 minutes', token uuid DEFAULT NULL)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_worker(renew_claim.worker);
    PERFORM tireless.check_lease(renew_claim.lease);
    UPDATE tireless.job j
       SET claim_expires_at = now() + renew_claim.lease, updated_at = now()
     WHERE j.id = renew_claim.job_id
       AND j.state = 'claimed'
       AND j.claimed_by = renew_claim.worker
       AND (renew_claim.token IS NULL OR j.claim_token = renew_claim.token);
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
    'Extends the lease to now() + lease while worker (and token, when given) holds the claim; false when the '
    'claim was lost. TL001 for an unknown job.';

CREATE FUNCTION tireless.may_cancel_pending() RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    -- session_user: inside a SECURITY DEFINER function current_user is the owner, not the caller.
    SELECT pg_has_role(session_user, 'tireless_admin', 'MEMBER')
        OR pg_has_role(session_user, n.nspowner, 'MEMBER')
      FROM pg_namespace n WHERE n.nspname = 'tireless';
$$;
COMMENT ON FUNCTION tireless.may_cancel_pending() IS
    'True when the session''s user may cancel a pending job: a member of tireless_admin or of the schema''s owner.';

CREATE FUNCTION tireless.transition(
    job_id bigint, to_state text, worker text DEFAULT NULL, note text DEFAULT NULL, token uuid DEFAULT NULL
) RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    target tireless.job_state := tireless.parse_state(transition.to_state);
    job tireless.job;
    budget integer;
    final_state tireless.job_state;
    final_note text := transition.note;
    result tireless.job;
    lane_capped boolean;
    breaker_dirty boolean;
BEGIN
    IF length(transition.note) > 10000 THEN
        RAISE EXCEPTION 'note must be at most 10000 characters, got %', length(transition.note) USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO job FROM tireless.job j WHERE j.id = transition.job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(transition.job_id::text, 'null') USING ERRCODE = 'TL001';
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
            RAISE EXCEPTION 'only tireless_admin may cancel pending job %; % may not', job.id, session_user
                USING ERRCODE = '42501';
        END IF;
        final_state := 'cancelled';
    ELSE
        -- Invariant 5: only the holder leaves claimed; the token, when given, must be this claim's.
        IF transition.worker IS NULL OR transition.worker IS DISTINCT FROM job.claimed_by THEN
            RAISE EXCEPTION 'worker % does not hold job %', coalesce(quote_literal(left(transition.worker, 220)), 'null'), job.id
                USING ERRCODE = 'TL004', DETAIL = format('The job is claimed by %L.', job.claimed_by);
        END IF;
        IF transition.token IS NOT NULL AND transition.token <> job.claim_token THEN
            RAISE EXCEPTION 'token % is not the current claim of job % by %', transition.token, job.id, job.claimed_by
                USING ERRCODE = 'TL004', DETAIL = 'The claim was lost and the job claimed again.';
        END IF;
        final_state := target;
        IF target = 'pending' THEN
            SELECT kp.max_attempts INTO budget FROM tireless.kind_policy kp WHERE kp.kind = job.kind;
            IF job.attempts >= budget THEN
                final_state := 'failed';
                final_note := format('attempts exhausted (%s of %s); last: %s', job.attempts, budget, coalesce(transition.note, 'released'));
            END IF;
        END IF;
    END IF;

    UPDATE tireless.job j
       SET state = final_state,
           claimed_by = NULL,
           claim_expires_at = NULL,
           claim_token = NULL,
           available_at = CASE WHEN final_state = 'pending' THEN now() + tireless.retry_delay(j.attempts) ELSE j.available_at END,
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
    'Moves a job along its state machine and returns it. Leaving claimed (to pending, delivered, failed, cancelled) '
    'needs the holder''s worker name and, when given, its token; a release after the last attempt fails the job. '
    'A pending job can only be cancelled (by tireless_admin). Entering claimed, or leaving a terminal state, is refused.';

CREATE FUNCTION tireless.expire_stale_claims() RETURNS integer
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
    -- One sweeper per lane at a time (a non-blocking advisory lock): a lane another sweeper holds
    -- is left for the next sweep, so two sweepers never wait on each other, not even on the lane
    -- row the circuit breaker counts in.
    SELECT coalesce(array_agg(s.lane), '{}') INTO sweep_lanes
      FROM (SELECT DISTINCT j.lane FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS s
     WHERE pg_try_advisory_xact_lock(hashtext('tireless.expire_stale_claims'), hashtext(s.lane));
    -- SKIP LOCKED: a job whose row another transaction holds is left as well; no job moves twice.
    FOR expired IN
        WITH stale AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now() AND j.lane = ANY (sweep_lanes)
             ORDER BY j.claim_expires_at
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = CASE WHEN j.attempts >= kp.max_attempts THEN 'failed' ELSE 'pending' END::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               available_at = CASE WHEN j.attempts >= kp.max_attempts THEN j.available_at
                                   ELSE now() + tireless.retry_delay(j.attempts) END,
               note = CASE WHEN j.attempts >= kp.max_attempts
                           THEN format('attempts exhausted (%s of %s); last: lease of %s expired at %s',
                                       j.attempts, kp.max_attempts, j.claimed_by, j.claim_expires_at)
                           ELSE format('lease of %s expired at %s', j.claimed_by, j.claim_expires_at) END,
               updated_at = now()
          FROM stale, tireless.kind_policy kp
         WHERE j.id = stale.id AND kp.kind = j.kind
        RETURNING j.lane, j.state, j.available_at
    LOOP
        moved := moved + 1;
        failed_lanes := failed_lanes || expired.lane;
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
    'Returns every claimed job whose lease has passed to pending (after its backoff), or fails it when its last '
    'attempt is spent; clears the claim, keeps the attempt count, and returns how many jobs it moved. Never '
    'waits on another sweeper: a job whose row is locked, or a lane another sweeper holds, is left for the next sweep.';

CREATE FUNCTION tireless.refresh_lane(forge text, owner text, repo text, number integer, labels text[]) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    new_lane text;
    problem text;
BEGIN
    PERFORM tireless.check_repo(refresh_lane.forge, refresh_lane.owner, refresh_lane.repo);
    -- The same limits enqueue applies to an issue's labels.
    problem := tireless.labels_problem(refresh_lane.labels);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'labels %', problem USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.job j
       SET lane = tireless.lane_for(j.kind::text, refresh_lane.labels),
           labels = refresh_lane.labels,
           updated_at = now()
     WHERE (j.forge, j.owner, j.repo, j.number) = (refresh_lane.forge, refresh_lane.owner, refresh_lane.repo, refresh_lane.number)
       AND j.state = 'pending'
    RETURNING j.lane INTO new_lane;
    IF new_lane IS NOT NULL THEN
        PERFORM tireless.announce_work(new_lane);
    END IF;
    RETURN new_lane;
END;
$$;
COMMENT ON FUNCTION tireless.refresh_lane(text, text, text, integer, text[]) IS
    'Re-routes the issue''s pending job from its current labels (say an agent label was added) and returns the '
    'lane; null when the issue has no pending job.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tireless.claim_next(text, text[], interval),
    tireless.renew_claim(bigint, text, interval, uuid),
    tireless.transition(bigint, text, text, text, uuid),
    tireless.expire_stale_claims()
    TO tireless_runner;
GRANT EXECUTE ON FUNCTION
    tireless.tracked_repos(),
    tireless.enqueue(jsonb),
    tireless.refresh_lane(text, text, text, integer, text[])
    TO tireless_poller;
GRANT EXECUTE ON FUNCTION
    tireless.track_repo(text, text, text),
    tireless.untrack_repo(text, text, text)
    TO tireless_admin;
