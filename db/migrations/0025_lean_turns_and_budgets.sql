-- The runner's cycle pays for turns and budgets only where they apply: a lane where one repository has work claims without a turn, and the count of agent time is a trigger enabled only while some budget of agent time exists.
-- depends: 0024_fair_shares

-- Two costs 0024 put on every cycle of every queue (docs/performance.md measures them):
-- 1. The claim took a turn even in a lane where one repository has work: a row lock, a new version of
--    the turn's row with an entry in each of its three indexes, and the walk's statements. Such a lane
--    has no turns to take; its claim is again one statement (claim_next below), and writes no turn.
--    Its runs are therefore no longer counted; a budget of runs is counted on the general path (a lane
--    with one, or a repository with a limit, never takes this one), from the moment it is set
--    (start_counting_runs), and the views show runs where such a budget applies, null elsewhere.
-- 2. 0024's changed_jobs_take_turns fired at every finish (OLD.state = 'claimed') to ask whether the
--    attempt's lane or repository had a budget of agent time: a trigger call and two index probes a
--    cycle, about 35 µs of a 410 µs finish-and-claim cycle (docs/performance.md), paid by every queue
--    whether it has such a budget or not (most have none). It is now two triggers:
--    - changed_jobs_take_turns: a job returned to pending or re-routed gives its repository a turn with
--      work (0024's rule, unchanged; it never fires on a claim or a finish);
--    - ended_attempts_count_agent_time: an attempt that ends adds its held time to the day's agent time
--      of its lane and repository when either has a budget of agent time (0024's rule, unchanged). It
--      is enabled (ALWAYS) while at least one budget of agent time exists, and disabled otherwise: the
--      budget setters switch it, in the same transaction as the budget, under a lock of tireless.job.
--    What is counted is what 0024 counted: an attempt counts when it ends under such a budget, so a
--    budget counts the attempts that end after it is set. Invariant (tests/test_fair_shares.py): the
--    trigger is enabled exactly when some lane or repository has a budget of agent time.

DROP TRIGGER changed_jobs_take_turns ON tireless.job;

CREATE OR REPLACE FUNCTION tireless.keep_turns() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO tireless.lane_repo AS r (lane, forge, owner, repo, limited)
    VALUES (NEW.lane, NEW.forge, NEW.owner, NEW.repo,
            EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (NEW.forge, NEW.owner, NEW.repo)))
    ON CONFLICT ON CONSTRAINT one_turn_per_lane_and_repo DO UPDATE SET has_work = true;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.keep_turns() IS
    'Trigger of tireless.job (per changed row): a job returned to pending or re-routed gives its repository a turn '
    'with work in its lane.';

CREATE TRIGGER changed_jobs_take_turns
    AFTER UPDATE OF state, lane ON tireless.job
    FOR EACH ROW WHEN (NEW.state = 'pending' AND (OLD.state <> 'pending' OR OLD.lane <> NEW.lane))
    EXECUTE FUNCTION tireless.keep_turns();
COMMENT ON TRIGGER changed_jobs_take_turns ON tireless.job IS
    'A job returned to pending or re-routed gives its repository a turn with work in its lane.';
ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER changed_jobs_take_turns;

CREATE FUNCTION tireless.count_agent_time() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF EXISTS (SELECT FROM tireless.lane l WHERE l.name = OLD.lane AND l.agent_time_per_day IS NOT NULL)
       OR EXISTS (SELECT FROM tireless.repo_limit l
                   WHERE (l.forge, l.owner, l.repo) = (OLD.forge, OLD.owner, OLD.repo)
                     AND l.agent_time_per_day IS NOT NULL) THEN
        UPDATE tireless.lane_repo r
           SET agent_time = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.agent_time ELSE interval '0' END
                            -- The attempt began at the job's newest claim in its history.
                            + coalesce((SELECT now() - e.at FROM tireless.job_event e
                                         WHERE e.job_id = OLD.id AND e.to_state = 'claimed'
                                         ORDER BY e.id DESC LIMIT 1), interval '0'),
               runs = CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.runs ELSE 0 END,
               spend_day = (now() AT TIME ZONE 'UTC')::date
         WHERE (r.lane, r.forge, r.owner, r.repo) = (OLD.lane, OLD.forge, OLD.owner, OLD.repo);
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.count_agent_time() IS
    'Trigger of tireless.job (per ended attempt, enabled only while a budget of agent time exists): when the '
    'attempt''s lane or repository has a budget of agent time, adds how long it held its claim to the lane and '
    'repository''s agent time of today (UTC).';

CREATE TRIGGER ended_attempts_count_agent_time
    AFTER UPDATE OF state ON tireless.job
    FOR EACH ROW WHEN (OLD.state = 'claimed')
    EXECUTE FUNCTION tireless.count_agent_time();
COMMENT ON TRIGGER ended_attempts_count_agent_time ON tireless.job IS
    'An ended attempt counts its held time against the budgets of agent time of its lane and repository. Enabled '
    '(ALWAYS) only while some lane or repository has such a budget (tireless.arm_agent_time_count).';

-- Whether some lane or repository has a budget of agent time.
CREATE FUNCTION tireless.agent_time_budgeted() RETURNS boolean
    LANGUAGE sql STABLE
    RETURN EXISTS (SELECT FROM tireless.lane l WHERE l.agent_time_per_day IS NOT NULL)
        OR EXISTS (SELECT FROM tireless.repo_limit l WHERE l.agent_time_per_day IS NOT NULL);
COMMENT ON FUNCTION tireless.agent_time_budgeted() IS 'True when some lane or repository has a daily budget of agent time.';

-- Called by the setters after they wrote a budget of agent time (set, changed or removed), under the
-- lock they took first (tireless.lock_jobs_for_a_budget): two admins writing such budgets at once take
-- turns, so the last one to commit switches the trigger on what both did. A setter whose lane or
-- repository has no budget of agent time before or after takes no lock and switches nothing.
CREATE FUNCTION tireless.arm_agent_time_count() RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    armed boolean := (SELECT t.tgenabled = 'A' FROM pg_catalog.pg_trigger t
                       WHERE t.tgrelid = 'tireless.job'::regclass AND t.tgname = 'ended_attempts_count_agent_time');
    wanted boolean := tireless.agent_time_budgeted();
BEGIN
    IF wanted AND NOT armed THEN
        ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER ended_attempts_count_agent_time;
    ELSIF armed AND NOT wanted THEN
        ALTER TABLE tireless.job DISABLE TRIGGER ended_attempts_count_agent_time;
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.arm_agent_time_count() IS
    'Enables the trigger ended_attempts_count_agent_time when some budget of agent time exists, disables it when '
    'none does. Run under tireless.lock_jobs_for_a_budget.';

-- A setter that writes a budget of agent time, or starts a budget of runs, takes this lock before it
-- writes anything: the lock arm_agent_time_count's ALTER TABLE needs (SHARE ROW EXCLUSIVE on
-- tireless.job, which also keeps two such setters apart), and the end of the claims in flight, which
-- start_counting_runs must not miss. Taken first, it never waits while holding a lane's or a
-- repository's row that a runner's claim may be waiting for. It waits for the transactions writing
-- jobs at that moment, and holds new ones until the setter commits: budgets are set rarely.
CREATE FUNCTION tireless.lock_jobs_for_a_budget() RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    LOCK TABLE tireless.job IN SHARE ROW EXCLUSIVE MODE;
END;
$$;
COMMENT ON FUNCTION tireless.lock_jobs_for_a_budget() IS
    'Takes the lock a budget setter needs before anything else (SHARE ROW EXCLUSIVE on tireless.job, until the '
    'transaction ends): the claims in flight have ended, and arm_agent_time_count may switch the trigger.';

-- A budget of runs counts the claims made from the moment it is set (0025: a claim in a lane where one
-- repository has work writes no turn, so nothing counted its runs before): the setter that starts one
-- sets today's runs of the turns it counts to 0, after the claims in flight have ended. A turn is
-- counted by its lane's budget and its repository's: one that the other kind of budget already
-- counts keeps its count (a budget may then count a few claims from before it was set, never fewer).
CREATE FUNCTION tireless.start_counting_runs(lane text, forge text, owner text, repo text) RETURNS void
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    UPDATE tireless.lane_repo r
       SET runs = 0,
           agent_time = CASE WHEN r.spend_day = tireless.spend_day() THEN r.agent_time ELSE interval '0' END,
           spend_day = tireless.spend_day()
     WHERE CASE WHEN start_counting_runs.lane IS NOT NULL
                THEN r.lane = start_counting_runs.lane
                     AND NOT EXISTS (SELECT FROM tireless.repo_limit l
                                      WHERE (l.forge, l.owner, l.repo) = (r.forge, r.owner, r.repo) AND l.runs_per_day IS NOT NULL)
                ELSE (r.forge, r.owner, r.repo) = (start_counting_runs.forge, start_counting_runs.owner, start_counting_runs.repo)
                     AND NOT EXISTS (SELECT FROM tireless.lane l WHERE l.name = r.lane AND l.runs_per_day IS NOT NULL)
           END;
END;
COMMENT ON FUNCTION tireless.start_counting_runs(text, text, text, text) IS
    'A new budget of runs starts counting: today''s runs of the lane''s turns (lane given) or of the repository''s '
    '(lane null) become 0, except turns the other kind of budget of runs already counts.';

CREATE OR REPLACE FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval)
    RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    before tireless.lane;
    result tireless.lane;
    agent_time_changes boolean;
    runs_start boolean;
BEGIN
    PERFORM tireless.check_budget(set_lane_budget.runs_per_day, set_lane_budget.agent_time_per_day);
    SELECT * INTO before FROM tireless.lane l WHERE l.name = set_lane_budget.lane;
    -- Whenever a budget of agent time is on either side, not only when it differs from the value read
    -- here: a concurrent setter may change it before this one writes.
    agent_time_changes := set_lane_budget.agent_time_per_day IS NOT NULL OR before.agent_time_per_day IS NOT NULL;
    runs_start := set_lane_budget.runs_per_day IS NOT NULL AND before.runs_per_day IS NULL;
    IF agent_time_changes OR runs_start THEN
        PERFORM tireless.lock_jobs_for_a_budget();
    END IF;
    PERFORM tireless.ensure_lane(set_lane_budget.lane);
    UPDATE tireless.lane l
       SET runs_per_day = set_lane_budget.runs_per_day, agent_time_per_day = set_lane_budget.agent_time_per_day
     WHERE l.name = set_lane_budget.lane RETURNING l.* INTO result;
    IF agent_time_changes THEN
        PERFORM tireless.arm_agent_time_count();
    END IF;
    IF runs_start THEN
        PERFORM tireless.start_counting_runs(result.name, NULL, NULL, NULL);
    END IF;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_budget(text, integer, interval) IS
    '(admin) The lane''s daily budget (the UTC calendar day): at most runs_per_day claims, and no claim once its '
    'attempts ended today held their claims agent_time_per_day in all (null: no budget of that kind); each counts '
    'from the moment it is set. When spent, its jobs stay pending until midnight UTC. Returns the lane.';

CREATE OR REPLACE FUNCTION tireless.set_repo_limit(forge text, owner text, repo text, capacity integer,
                                                   runs_per_day integer, agent_time_per_day interval)
    RETURNS tireless.repo_limit
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    before tireless.repo_limit;
    result tireless.repo_limit;
    agent_time_changes boolean;
    runs_start boolean;
BEGIN
    PERFORM tireless.check_tracked(set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo);
    SELECT * INTO before FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo);
    agent_time_changes := set_repo_limit.agent_time_per_day IS NOT NULL OR before.agent_time_per_day IS NOT NULL;
    runs_start := set_repo_limit.runs_per_day IS NOT NULL AND before.runs_per_day IS NULL;
    IF agent_time_changes OR runs_start THEN
        PERFORM tireless.lock_jobs_for_a_budget();
    END IF;
    result := ROW(set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo, set_repo_limit.capacity,
                  set_repo_limit.runs_per_day, set_repo_limit.agent_time_per_day);
    IF num_nonnulls(result.capacity, result.runs_per_day, result.agent_time_per_day) = 0 THEN
        DELETE FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (result.forge, result.owner, result.repo);
    ELSE
        INSERT INTO tireless.repo_limit AS l VALUES (result.*)
        ON CONFLICT ON CONSTRAINT one_limit_row_per_repo DO UPDATE
           SET capacity = excluded.capacity, runs_per_day = excluded.runs_per_day,
               agent_time_per_day = excluded.agent_time_per_day;
    END IF;
    UPDATE tireless.lane_repo r
       SET limited = num_nonnulls(result.capacity, result.runs_per_day, result.agent_time_per_day) > 0
     WHERE (r.forge, r.owner, r.repo) = (result.forge, result.owner, result.repo);
    IF agent_time_changes THEN
        PERFORM tireless.arm_agent_time_count();
    END IF;
    IF runs_start THEN
        PERFORM tireless.start_counting_runs(NULL, result.forge, result.owner, result.repo);
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_limit(text, text, text, integer, integer, interval) IS
    'Writes a tracked repository''s capacity and budgets (no row when all are null), tells its turns whether they '
    'are limited, switches the count of agent time when a budget of agent time is written, and starts counting '
    'runs when a budget of runs starts. TL008 when it is not tracked.';


-- A claim in a lane where one repository has work writes no turn (section above): the count of runs is
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
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_next.lanes[1]]) AND j.available_at <= now()
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
            IF NOT tireless.budget_spent(spent.runs, spent.agent_time, capped.runs_per_day, capped.agent_time_per_day) THEN
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

CREATE OR REPLACE VIEW tireless.repo_shares AS
SELECT r.lane, r.forge, r.owner, r.repo, r.last_claimed_at, r.has_work,
       -- Counted under a budget of runs only (its lane's or its repository's): null without one.
       CASE WHEN l.runs_per_day IS NULL AND NOT EXISTS (SELECT FROM tireless.lane b WHERE b.name = r.lane AND b.runs_per_day IS NOT NULL)
            THEN NULL
            WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.runs ELSE 0 END AS runs_today,
       CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN extract(epoch FROM r.agent_time) ELSE 0 END::float8
           AS agent_seconds_today,
       l.capacity, l.runs_per_day, extract(epoch FROM l.agent_time_per_day)::float8 AS agent_seconds_per_day,
       CASE WHEN coalesce(t.runs >= l.runs_per_day, false) OR coalesce(t.agent_time >= l.agent_time_per_day, false)
            THEN ((now() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC' END AS budget_resets_at
  FROM tireless.lane_repo r
  LEFT JOIN tireless.repo_limit l ON (l.forge, l.owner, l.repo) = (r.forge, r.owner, r.repo)
  LEFT JOIN LATERAL (SELECT sum(o.runs) AS runs, sum(o.agent_time) AS agent_time FROM tireless.lane_repo o
                      WHERE (o.forge, o.owner, o.repo) = (r.forge, r.owner, r.repo)
                        AND o.spend_day = (now() AT TIME ZONE 'UTC')::date) t ON l.forge IS NOT NULL;
COMMENT ON VIEW tireless.repo_shares IS
    'One row per lane and repository that has had pending work: its last claim (the longest-waiting goes first), '
    'whether it has work, its runs (under a budget of runs; null without) and agent seconds in the lane today (UTC), the repository''s capacity and daily '
    'budgets (all lanes), and budget_resets_at (the next midnight UTC) while its budget is spent.';

CREATE OR REPLACE VIEW tireless.lane_budget AS
-- Written out rather than through lane_spend and budget_spent: a view reads its tables with its
-- owner's rights, but calls functions with the reader's, and no reader may read lane_repo.
SELECT l.name AS lane,
       CASE WHEN l.runs_per_day IS NOT NULL THEN spent.runs END AS runs_today,  -- counted under a budget of runs only
       extract(epoch FROM spent.agent_time)::float8 AS agent_seconds_today,
       l.runs_per_day, extract(epoch FROM l.agent_time_per_day)::float8 AS agent_seconds_per_day,
       CASE WHEN coalesce(spent.runs >= l.runs_per_day, false) OR coalesce(spent.agent_time >= l.agent_time_per_day, false)
            THEN ((now() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC' END AS budget_resets_at
  FROM tireless.lane l
 CROSS JOIN LATERAL (SELECT coalesce(sum(r.runs), 0)::bigint AS runs, coalesce(sum(r.agent_time), interval '0') AS agent_time
                       FROM tireless.lane_repo r
                      WHERE r.lane = l.name AND r.spend_day = (now() AT TIME ZONE 'UTC')::date) AS spent;
COMMENT ON VIEW tireless.lane_budget IS
    'One row per lane with settings: today''s spend (UTC: runs_today, null without a budget of runs; '
    'agent_seconds_today) against its daily budgets, '
    'with budget_resets_at (the next midnight UTC) while a budget is spent.';

CREATE OR REPLACE VIEW tireless.lane_summary AS
SELECT coalesce(s.lane, q.lane) AS lane,
       coalesce(s.pending, 0) AS pending, coalesce(s.ready, 0) AS ready,
       coalesce(s.claimed, 0) AS claimed, coalesce(s.past_lease, 0) AS past_lease,
       coalesce(q.delivered, 0) AS delivered, coalesce(q.failed, 0) AS failed,
       coalesce(q.cancelled, 0) AS cancelled,
       extract(epoch FROM s.oldest_pending_age)::float8 AS oldest_pending_seconds,
       coalesce(s.breaker, 'closed') AS breaker, coalesce(s.paused, false) AS paused,
       s.capacity, s.tripped_until,
       coalesce(s.consecutive_failures, 0) AS consecutive_failures,
       b.runs_today,
       coalesce(b.agent_seconds_today, 0)::float8 AS agent_seconds_today,
       b.runs_per_day, b.agent_seconds_per_day, b.budget_resets_at
  FROM tireless.lane_status s
  FULL JOIN (SELECT st.lane,
                    sum(st.jobs) FILTER (WHERE st.state = 'delivered')::bigint AS delivered,
                    sum(st.jobs) FILTER (WHERE st.state = 'failed')::bigint AS failed,
                    sum(st.jobs) FILTER (WHERE st.state = 'cancelled')::bigint AS cancelled
               FROM tireless.queue_stats st GROUP BY st.lane) q ON q.lane = s.lane
  LEFT JOIN tireless.lane_budget b ON b.lane = coalesce(s.lane, q.lane);
COMMENT ON VIEW tireless.lane_summary IS
    'One row per lane that has live jobs, settings or jobs finished in the last 24 hours: lane_status (live jobs, '
    'the oldest pending job''s age in seconds, breaker, its failures in a row, paused, capacity) beside '
    'queue_stats''s delivered, failed and cancelled counts, and today''s spend (UTC: runs_today, counted under a budget of runs, '
    'agent_seconds_today) against the lane''s daily budgets, with budget_resets_at (the next midnight UTC) while a '
    'budget is spent. What `tireless status` and the dashboard''s overview show.';

-- The runner's cycle without two of its calls (issue 26): finish_and_claim carries a copy of the
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
               note = finish_and_claim.note,
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
             WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[finish_and_claim.lanes[1]]) AND j.available_at <= now()
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
    'would, and returns it (no row when nothing is claimable).';

-- The trigger starts as the budgets stand.
ALTER TABLE tireless.job DISABLE TRIGGER ended_attempts_count_agent_time;
DO $$ BEGIN PERFORM tireless.arm_agent_time_count(); END $$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
