-- The claim: claim_next, the fair claim in turn, and the runner's finish-and-claim cycle.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- A claim in a lane where one repository has work writes no turn (budgets.sql): the count of runs is
-- kept for the budgets of runs, and the views show it where one applies.
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
    spent record;
    next_lane text;
BEGIN
    -- The common case: a well-formed call for one lane that hands out work without a count (no
    -- settings row, or one that is unlimited, not paused and not tripped). One test, not one per
    -- argument: PL/pgSQL prepares each expression again in every transaction, and every claim is a
    -- transaction of its own.
    IF tireless.is_worker_name(claim_next.worker) AND tireless.is_lease(claim_next.lease)
       AND cardinality(claim_next.lanes) = 1 AND tireless.is_lane_name(claim_next.lanes[1]) THEN
        -- A lane where one repository has work has no turns to take: its oldest ready job, in one
        -- statement, as before 0024, and no write of the turn (a lane with a budget of runs, or a
        -- repository with a limit, is counted on the general path). sole_turn is that repository,
        -- or no row when the lane's turns with work are several, or one that is limited; then the
        -- statement claims nothing (a one-time filter: no job is read) and the walk below decides.
        RETURN QUERY
        WITH sole_turn AS (
            SELECT min(t.forge) AS forge, min(t.owner) AS owner, min(t.repo) AS repo
              FROM (SELECT r.forge, r.owner, r.repo, r.limited FROM tireless.lane_repo r
                     WHERE r.lane = claim_next.lanes[1] AND r.has_work
                     LIMIT 2) t
            HAVING count(*) = 1 AND NOT bool_or(t.limited)
        ), candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_next.lanes[1]]) AND j.available_at <= now() AND j.waiting_on IS NULL
               AND EXISTS (SELECT FROM sole_turn)
               AND (j.forge, j.owner, j.repo) = (SELECT s.forge, s.owner, s.repo FROM sole_turn s)
               AND NOT EXISTS (SELECT FROM tireless.lane l
                                WHERE l.name = claim_next.lanes[1]
                                  AND (l.limited OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until)))
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
        -- Several repositories, or nothing ready in the one: their turns (claim_in_turn).
        IF NOT EXISTS (SELECT FROM tireless.lane l
                        WHERE l.name = claim_next.lanes[1]
                          AND (l.limited OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until))) THEN
            RETURN QUERY SELECT * FROM tireless.claim_in_turn(claim_next.worker, claim_next.lanes[1], claim_next.lease);
            RETURN;
        END IF;
        -- Paused or tripped: nothing. Limited: the general path counts it.
        IF NOT EXISTS (SELECT FROM tireless.lane l WHERE l.name = claim_next.lanes[1] AND l.limited) THEN
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
    -- row, or unlimited, not paused and not tripped), and does any have a capacity or a budget.
    SELECT bool_or(r.name IS NULL OR NOT tireless.is_lane_name(r.name)),
           coalesce(array_agg(DISTINCT r.name) FILTER (
               WHERE l.name IS NULL
                  OR (NOT l.limited AND tireless.lane_hands_out_work(l.paused, l.tripped_until))), '{}'),
           bool_or(l.limited)
      INTO malformed, open_lanes, any_capped
      FROM unnest(claim_next.lanes) AS r(name)
      LEFT JOIN tireless.lane l ON l.name = r.name;
    IF malformed THEN
        PERFORM tireless.check_lane(r.name) FROM unnest(claim_next.lanes) AS r(name);
    END IF;

    -- A lane with a capacity or a budget is counted under its row lock, so concurrent claimers take
    -- its free slots one at a time and never hold more claims than the capacity or the budget allows.
    IF any_capped THEN
        FOR capped IN
            SELECT l.name, l.capacity, l.runs_per_day, l.agent_time_per_day FROM tireless.lane l
             WHERE l.name = ANY (claim_next.lanes)
               AND l.limited AND tireless.lane_hands_out_work(l.paused, l.tripped_until)
             ORDER BY l.name
               FOR UPDATE
        LOOP
            IF capped.capacity IS NOT NULL
               AND (SELECT count(*) FROM tireless.job j WHERE j.state = 'claimed' AND j.lane = capped.name) >= capped.capacity THEN
                CONTINUE;
            END IF;
            spent := tireless.lane_spend(capped.name);
            IF NOT tireless.budget_spent(spent.runs, spent.agent_time, capped.runs_per_day, capped.agent_time_per_day)
               AND tireless.lane_usage_spent(capped.name) IS NULL THEN
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
                        WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[l.name]) AND j.available_at <= now() AND j.waiting_on IS NULL
                        ORDER BY j.lane, j.id LIMIT 1) NULLS LAST);
    END IF;
    FOREACH next_lane IN ARRAY open_lanes LOOP
        RETURN QUERY SELECT * FROM tireless.claim_in_turn(claim_next.worker, next_lane, claim_next.lease);
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
END;
$$;
COMMENT ON FUNCTION tireless.claim_next(text, text[], interval) IS
    'Claims a claimable pending job in the given lanes for worker: state claimed, a lease of lease, a fresh '
    'claim_token, attempts + 1. The lane whose oldest ready job is oldest first; within a lane, the oldest ready '
    'job of the repository that has waited longest since its last claim (round-robin between repositories; a lane '
    'where one repository has work takes its oldest ready job without a turn). Skips paused, tripped and full '
    'lanes, lanes and repositories at their capacity or out of today''s budget, and jobs still in backoff. Zero '
    'rows when nothing is claimable; a lane nobody has configured simply holds no work.';
REVOKE ALL ON FUNCTION tireless.claim_next(text, text[], interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.claim_next(text, text[], interval) TO tireless_runner;

-- The runner's cycle without two of its calls: finish_and_claim carries a copy of the
-- common case of each function it stands for, and calls the function for everything else. The call
-- of a SECURITY DEFINER function and the set of rows it returns cost about 40 µs of a 330 µs cycle
-- (docs/performance.md). What the copies do is what the functions do in that case: the same
-- statement, and the functions decide every other case, refusals included.
CREATE OR REPLACE FUNCTION tireless.finish_and_claim(
    job_id bigint, to_state text, worker text, lanes text[], lease interval DEFAULT '10 minutes',
    claim_token uuid DEFAULT NULL, note text DEFAULT NULL
) RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    finished boolean := false;
    ended tireless.job;
BEGIN
    -- The finish: transition's holder statement, in the one case where the lane needs to hear nothing
    -- (a delivery or the holder's cancel, in a lane without a capacity and without failures counted
    -- by its breaker). Anything else, or no change (not the holder, a refusal), is transition's.
    IF finish_and_claim.worker IS NOT NULL AND finish_and_claim.to_state IN ('delivered', 'cancelled')
       AND (finish_and_claim.note IS NULL OR length(finish_and_claim.note) <= 10000) THEN
        UPDATE tireless.job j
           SET state = finish_and_claim.to_state::tireless.job_state,
               claimed_by = NULL,
               claim_expires_at = NULL,
               claim_token = NULL,
               ended_claim_token = finish_and_claim.claim_token,
               note = CASE WHEN j.cancel_requested_at IS NULL THEN finish_and_claim.note
                           ELSE tireless.stop_finish_note(finish_and_claim.to_state, finish_and_claim.note,
                                                          j.cancel_requested_at, j.cancel_note) END,
               updated_at = now()
         WHERE j.id = finish_and_claim.job_id
           AND j.state = 'claimed'
           AND j.claimed_by = finish_and_claim.worker
           AND (finish_and_claim.claim_token IS NULL OR j.claim_token = finish_and_claim.claim_token)
           AND tireless.acts_for_login(j.claimed_login)
           AND NOT EXISTS (SELECT FROM tireless.lane l
                            WHERE l.name = j.lane
                              AND (l.capacity IS NOT NULL OR l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL));
        finished := FOUND;
    END IF;
    IF NOT finished AND finish_and_claim.claim_token IS NOT NULL THEN
        -- Sent again because its answer was lost: the first one committed. Its answer was the job
        -- it claimed for this worker in the same transaction (the same now()), if that claim stands.
        SELECT * INTO ended FROM tireless.job j
         WHERE j.id = finish_and_claim.job_id AND j.ended_claim_token = finish_and_claim.claim_token;
        IF FOUND THEN
            RETURN QUERY SELECT * FROM tireless.job j
                          WHERE j.state = 'claimed' AND j.claimed_by = finish_and_claim.worker
                            AND j.updated_at = ended.updated_at AND j.id <> ended.id
                            AND tireless.acts_for_login(j.claimed_login);
            RETURN;
        END IF;
    END IF;
    IF NOT finished THEN
        PERFORM tireless.transition(job_id => finish_and_claim.job_id, to_state => finish_and_claim.to_state,
                                    worker => finish_and_claim.worker, note => finish_and_claim.note,
                                    token => finish_and_claim.claim_token);
    END IF;
    -- The claim: claim_next's first statement (a copy, tests/test_catalog.py keeps the two the same), for
    -- one lane where one repository has work; anything else is claim_next's.
    IF tireless.is_worker_name(finish_and_claim.worker) AND tireless.is_lease(finish_and_claim.lease)
       AND cardinality(finish_and_claim.lanes) = 1 AND tireless.is_lane_name(finish_and_claim.lanes[1]) THEN
        RETURN QUERY
        WITH sole_turn AS (
            SELECT min(t.forge) AS forge, min(t.owner) AS owner, min(t.repo) AS repo
              FROM (SELECT r.forge, r.owner, r.repo, r.limited FROM tireless.lane_repo r
                     WHERE r.lane = finish_and_claim.lanes[1] AND r.has_work
                     LIMIT 2) t
            HAVING count(*) = 1 AND NOT bool_or(t.limited)
        ), candidate AS (
            SELECT j.id FROM tireless.job j
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[finish_and_claim.lanes[1]]) AND j.available_at <= now() AND j.waiting_on IS NULL
               AND EXISTS (SELECT FROM sole_turn)
               AND (j.forge, j.owner, j.repo) = (SELECT s.forge, s.owner, s.repo FROM sole_turn s)
               AND NOT EXISTS (SELECT FROM tireless.lane l
                                WHERE l.name = finish_and_claim.lanes[1]
                                  AND (l.limited OR NOT tireless.lane_hands_out_work(l.paused, l.tripped_until)))
             ORDER BY j.lane, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED
        )
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = finish_and_claim.worker,
               claimed_login = session_user,
               claim_expires_at = now() + finish_and_claim.lease,
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
    END IF;
    RETURN QUERY SELECT * FROM tireless.claim_next(worker => finish_and_claim.worker, lanes => finish_and_claim.lanes,
                                                   lease => finish_and_claim.lease);
END;
$$;
COMMENT ON FUNCTION tireless.finish_and_claim(bigint, text, text, text[], interval, uuid, text) IS
    'The runner''s cycle in one transaction: finishes the claim on job_id exactly as tireless.transition(job_id, '
    'to_state, worker, note, token => claim_token) would (its refusals, with their SQLSTATEs: nothing is claimed '
    'when the finish is refused), then claims the next job in lanes for worker exactly as tireless.claim_next '
    'would, and returns it (no row when nothing is claimable). Sent again with the token of a claim its holder '
    'already ended (the answer was lost): the job that finish claimed for worker, if it still holds it, and nothing '
    'else changes.';
REVOKE ALL ON FUNCTION tireless.finish_and_claim(bigint, text, text, text[], interval, uuid, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.finish_and_claim(bigint, text, text, text[], interval, uuid, text) TO tireless_runner;

-- One claim in one lane, fairly: the repositories with work in the order of their last claim, the
-- oldest first; of the first one that has room, its oldest ready pending job. Usually one index probe
-- for the turn, one for the job and the write; a repository found without pending work leaves the walk. The job's
-- probe names its repository as a range of pending_jobs_in_repo_order, on purpose: with equalities the
-- planner drops the constant columns from the order and may walk the primary key through every older
-- job, finished or not, or the lane's part of pending_jobs_in_claim_order through other repositories' jobs.
CREATE OR REPLACE FUNCTION tireless.claim_in_turn(worker text, lane text, lease interval) RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    turn tireless.lane_repo;
    after_at timestamptz := '-infinity';
    after_id bigint := 0;
    next_job bigint;
BEGIN
    LOOP
        SELECT * INTO turn FROM tireless.lane_repo r
         WHERE r.lane = claim_in_turn.lane AND r.has_work AND (r.last_claimed_at, r.id) > (after_at, after_id)
         ORDER BY r.last_claimed_at, r.id
         LIMIT 1
           FOR UPDATE SKIP LOCKED;
        EXIT WHEN NOT FOUND;
        IF NOT turn.limited OR tireless.repo_has_room(turn.forge, turn.owner, turn.repo) THEN
            SELECT j.id INTO next_job FROM tireless.job j
             WHERE j.state = 'pending' AND j.available_at <= now() AND j.waiting_on IS NULL
               AND (j.lane, j.forge, j.owner, j.repo) >= (turn.lane, turn.forge, turn.owner, turn.repo)
               AND (j.lane, j.forge, j.owner, j.repo) <= (turn.lane, turn.forge, turn.owner, turn.repo)
             ORDER BY j.lane, j.forge, j.owner, j.repo, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED;
            EXIT WHEN FOUND;
        END IF;
        -- Nothing claimable here (in backoff, locked, or no room): a repository with no pending job left
        -- in the lane that waits for nothing leaves the walk until one becomes pending, or is released
        -- from its wait, again (changed_jobs_take_turns).
        UPDATE tireless.lane_repo r SET has_work = false
         WHERE r.id = turn.id
           AND NOT EXISTS (SELECT FROM tireless.job j
                            WHERE j.state = 'pending' AND j.waiting_on IS NULL AND j.lane = turn.lane
                              AND (j.forge, j.owner, j.repo) = (turn.forge, turn.owner, turn.repo));
        after_at := turn.last_claimed_at;
        after_id := turn.id;
        turn := NULL;
    END LOOP;
    IF next_job IS NULL THEN
        -- Every repository with work is taken by another claimer at this moment (several runners, few
        -- repositories): the lane's oldest ready job of a repository without limits, as before turns,
        -- rather than nothing. A limited lane never gets here: its claims take turns under its row lock.
        IF EXISTS (SELECT FROM tireless.lane l WHERE l.name = claim_in_turn.lane AND l.limited) THEN
            RETURN;
        END IF;
        SELECT j.id INTO next_job FROM tireless.job j
         WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_in_turn.lane]) AND j.available_at <= now() AND j.waiting_on IS NULL
           AND NOT EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (j.forge, j.owner, j.repo))
         ORDER BY j.lane, j.id
         LIMIT 1
           FOR UPDATE OF j SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        -- Its turn is counted when no other claimer holds it (that one moves it to the back anyway).
        SELECT r.* INTO turn FROM tireless.lane_repo r JOIN tireless.job j USING (lane, forge, owner, repo)
         WHERE j.id = next_job
           FOR UPDATE OF r SKIP LOCKED;
    END IF;
    -- Invariant 4: the job's row lock (SKIP LOCKED above) is held until the claim commits.
    RETURN QUERY
    WITH claimed AS (
        UPDATE tireless.job j
           SET state = 'claimed',
               claimed_by = claim_in_turn.worker,
               claimed_login = session_user,  -- one login, one runner (0019_holder_login)
               claim_expires_at = now() + claim_in_turn.lease,
               claim_token = gen_random_uuid(),
               attempts = j.attempts + 1,
               note = NULL,
               updated_at = now()
         WHERE j.id = next_job
        RETURNING j.*
    ), counted AS (
        UPDATE tireless.lane_repo r
           SET last_claimed_at = clock_timestamp(),
               runs = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.runs + 1 ELSE 1 END,
               agent_time = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.agent_time ELSE interval '0' END,
               spend_day = (now() AT TIME ZONE 'UTC')::date
         WHERE r.id = turn.id
    )
    SELECT * FROM claimed;
END;
$$;
COMMENT ON FUNCTION tireless.claim_in_turn(text, text, interval) IS
    'claim_next in one lane: the oldest ready pending job of the repository whose last claim in the lane is oldest '
    '(round-robin), skipping repositories that are locked by another claimer, at their capacity or out of budget; '
    'moves that repository to the back and counts the run. Zero rows when nothing is claimable.';
REVOKE ALL ON FUNCTION tireless.claim_in_turn(text, text, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
