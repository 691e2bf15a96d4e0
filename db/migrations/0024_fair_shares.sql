-- Fair shares: within a lane, claims take turns between repositories; a repository's capacity; daily budgets of runs and agent time per lane and per repository.
-- depends: 0023_dashboard

-- 1. Each repository's turn in each lane, and what it spent today. One row per (lane, repository)
-- that has had a pending job; has_work is a hint kept by the trigger below (set when a job becomes
-- pending) and cleared by claim_next when it finds the repository has no pending job left in the lane.
CREATE TABLE tireless.lane_repo (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lane            text        NOT NULL,
    forge           text        NOT NULL,
    owner           text        NOT NULL,
    repo            text        NOT NULL,
    last_claimed_at timestamptz NOT NULL DEFAULT '-infinity',
    has_work        boolean     NOT NULL DEFAULT true,
    limited         boolean     NOT NULL DEFAULT false,
    spend_day       date        NOT NULL DEFAULT (now() AT TIME ZONE 'UTC')::date,
    runs            integer     NOT NULL DEFAULT 0,
    agent_time      interval    NOT NULL DEFAULT '0',
    CONSTRAINT one_turn_per_lane_and_repo UNIQUE (forge, owner, repo, lane),
    CONSTRAINT spend_not_negative CHECK (runs >= 0 AND agent_time >= interval '0')
);
COMMENT ON TABLE tireless.lane_repo IS
    'Each repository''s turn in each lane (claim_next serves the repository whose last claim is oldest first) and '
    'what it spent on its spend_day. Private: claim_next and the trigger job_waits_its_turn keep it; read '
    'tireless.repo_shares.';
COMMENT ON COLUMN tireless.lane_repo.last_claimed_at IS
    'When claim_next last claimed a job of the repository in the lane (-infinity: never): the oldest goes first.';
COMMENT ON COLUMN tireless.lane_repo.has_work IS
    'True when the repository may have a pending job in the lane: set whenever one becomes pending, cleared by '
    'claim_next when it finds none. Only rows with work are walked.';
COMMENT ON COLUMN tireless.lane_repo.limited IS
    'The repository has a capacity or a budget (tireless.repo_limit): claim_next counts before it claims.';
COMMENT ON COLUMN tireless.lane_repo.spend_day IS 'The UTC calendar day that runs and agent_time count; a new day starts them at 0.';
COMMENT ON COLUMN tireless.lane_repo.runs IS 'Jobs of the repository claimed in the lane on spend_day (each claim is a run).';
COMMENT ON COLUMN tireless.lane_repo.agent_time IS
    'Time the repository''s attempts in the lane held their claim, counted when each attempt ended on spend_day '
    'under an agent-time budget (the lane''s or the repository''s).';
COMMENT ON CONSTRAINT one_turn_per_lane_and_repo ON tireless.lane_repo IS
    'A repository has one turn per lane. Repository first: its limits and spend read its turns in every lane. '
    'Every claim writes its turn, so the table has no other index but the walk''s (a lane''s spend, read only for '
    'a lane with a budget, scans the table).';
COMMENT ON CONSTRAINT spend_not_negative ON tireless.lane_repo IS 'Runs and agent time are counts of what happened.';
-- claim_next's walk: the lane's repositories with work, the longest-waiting first.
CREATE INDEX repos_in_turn_order ON tireless.lane_repo (lane, last_claimed_at, id) WHERE has_work;
COMMENT ON INDEX tireless.repos_in_turn_order IS 'claim_next: the lane''s repositories that have work, longest-waiting first.';

-- The oldest pending job of one repository in one lane: the existing claim order with the repository.
CREATE INDEX pending_jobs_in_repo_order ON tireless.job (lane, forge, owner, repo, id) WHERE state = 'pending';
COMMENT ON INDEX tireless.pending_jobs_in_repo_order IS
    'claim_next: a repository''s oldest pending job in a lane, one probe whatever the backlog.';

-- Every repository that has pending work takes its turn from now on, in the order of its oldest job.
INSERT INTO tireless.lane_repo (lane, forge, owner, repo)
SELECT j.lane, j.forge, j.owner, j.repo FROM tireless.job j WHERE j.state = 'pending'
 GROUP BY j.lane, j.forge, j.owner, j.repo ORDER BY min(j.id);

-- 2. A repository's limits, set by the admin: at most capacity claimed jobs at once (all lanes), and a
-- daily budget of runs and of agent time. Null: no limit.
CREATE TABLE tireless.repo_limit (
    forge              text     NOT NULL,
    owner              text     NOT NULL,
    repo               text     NOT NULL,
    capacity           integer,
    runs_per_day       integer,
    agent_time_per_day interval,
    CONSTRAINT one_limit_row_per_repo PRIMARY KEY (forge, owner, repo),
    CONSTRAINT some_limit_is_set CHECK (num_nonnulls(capacity, runs_per_day, agent_time_per_day) > 0),
    CONSTRAINT repo_capacity_not_negative CHECK (capacity >= 0),
    CONSTRAINT repo_runs_per_day_not_negative CHECK (runs_per_day >= 0),
    CONSTRAINT repo_agent_time_per_day_positive CHECK (agent_time_per_day > interval '0')
);
COMMENT ON TABLE tireless.repo_limit IS
    'A repository''s capacity and daily budgets, all lanes together. Private: set_repo_capacity and set_repo_budget '
    'keep it; read tireless.repo_shares.';
COMMENT ON COLUMN tireless.repo_limit.capacity IS 'At most this many claimed jobs of the repository at once; null: unlimited.';
COMMENT ON COLUMN tireless.repo_limit.runs_per_day IS 'At most this many claims of the repository''s jobs per UTC day; null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.agent_time_per_day IS
    'No claim once the repository''s attempts ended today held their claims this long in all; null: no budget.';
COMMENT ON CONSTRAINT one_limit_row_per_repo ON tireless.repo_limit IS 'A repository has one set of limits.';
COMMENT ON CONSTRAINT some_limit_is_set ON tireless.repo_limit IS
    'A repository without any limit has no row (claim_next treats it as any other).';
COMMENT ON CONSTRAINT repo_capacity_not_negative ON tireless.repo_limit IS 'A capacity is null (none) or 0 or more.';
COMMENT ON CONSTRAINT repo_runs_per_day_not_negative ON tireless.repo_limit IS 'A budget of runs is null (none) or 0 or more.';
COMMENT ON CONSTRAINT repo_agent_time_per_day_positive ON tireless.repo_limit IS 'A budget of agent time is null (none) or more than 0.';

-- 3. A lane's daily budgets. limited: claim_next counts the lane under its row lock (capacity or budget).
ALTER TABLE tireless.lane
    ADD COLUMN runs_per_day integer,
    ADD COLUMN agent_time_per_day interval,
    ADD COLUMN limited boolean GENERATED ALWAYS AS
        (capacity IS NOT NULL OR runs_per_day IS NOT NULL OR agent_time_per_day IS NOT NULL) STORED,
    ADD CONSTRAINT runs_per_day_not_negative CHECK (runs_per_day >= 0),
    ADD CONSTRAINT agent_time_per_day_positive CHECK (agent_time_per_day > interval '0');
COMMENT ON COLUMN tireless.lane.runs_per_day IS 'At most this many claims in the lane per UTC day; null: no budget.';
COMMENT ON COLUMN tireless.lane.agent_time_per_day IS
    'No claim once the lane''s attempts ended today held their claims this long in all; null: no budget.';
COMMENT ON COLUMN tireless.lane.limited IS 'The lane has a capacity or a budget: claim_next counts it under the lane''s row lock.';
COMMENT ON CONSTRAINT runs_per_day_not_negative ON tireless.lane IS 'A budget of runs is null (none) or 0 or more.';
COMMENT ON CONSTRAINT agent_time_per_day_positive ON tireless.lane IS 'A budget of agent time is null (none) or more than 0.';

-- The budget's window: the calendar day in UTC (it resets at midnight UTC, the same moment everywhere).
CREATE FUNCTION tireless.spend_day() RETURNS date
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (now() AT TIME ZONE 'UTC')::date;
COMMENT ON FUNCTION tireless.spend_day() IS 'Today in UTC: the window of the daily budgets (they reset at midnight UTC).';

CREATE FUNCTION tireless.budget_spent(runs bigint, agent_time interval, runs_per_day integer, agent_time_per_day interval)
    RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(runs >= runs_per_day, false) OR coalesce(agent_time >= agent_time_per_day, false);
COMMENT ON FUNCTION tireless.budget_spent(bigint, interval, integer, interval) IS
    'True when today''s runs or agent time reached its budget (a null budget is never spent).';

-- What a lane spent today (its repositories' rows of today).
CREATE FUNCTION tireless.lane_spend(lane text, OUT runs bigint, OUT agent_time interval)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(sum(r.runs), 0), coalesce(sum(r.agent_time), interval '0') FROM tireless.lane_repo r
     WHERE r.lane = lane_spend.lane AND r.spend_day = tireless.spend_day();
END;
COMMENT ON FUNCTION tireless.lane_spend(text) IS 'How many runs and how much agent time the lane spent today (UTC).';

CREATE FUNCTION tireless.repo_spend(forge text, owner text, repo text, OUT runs bigint, OUT agent_time interval)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(sum(r.runs), 0), coalesce(sum(r.agent_time), interval '0') FROM tireless.lane_repo r
     WHERE (r.forge, r.owner, r.repo) = (repo_spend.forge, repo_spend.owner, repo_spend.repo)
       AND r.spend_day = tireless.spend_day();
END;
COMMENT ON FUNCTION tireless.repo_spend(text, text, text) IS 'How many runs and how much agent time the repository spent today (UTC), all lanes.';

-- 4. The trigger that keeps the turns: a job that becomes pending gives its repository a turn with
-- work in its lane; an attempt that ends adds the time it held its claim to today's agent_time.
-- ENABLE ALWAYS: a bulk load with session_replication_role = replica still gives its jobs their turn.
-- A job that becomes pending sets has_work under the turn's row lock (waiting for a claimer that holds
-- the turn to commit), so it is never lost to a claimer clearing the hint at the same moment.
CREATE FUNCTION tireless.give_turns() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO tireless.lane_repo AS r (lane, forge, owner, repo, limited)
    SELECT DISTINCT n.lane, n.forge, n.owner, n.repo,
           EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (n.forge, n.owner, n.repo))
      FROM created n WHERE n.state = 'pending'
    ON CONFLICT ON CONSTRAINT one_turn_per_lane_and_repo DO UPDATE SET has_work = true;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION tireless.give_turns() IS
    'Trigger of tireless.job (per insert statement): the repositories of the new pending jobs get a turn with work in their lanes.';

-- On the hot path (every finish), so the common case is one test: agent time is counted only for an
-- attempt under an agent-time budget (of its lane or its repository), the one case that needs it; a
-- count kept for every finish would make the finishes of one repository wait for each other.
CREATE FUNCTION tireless.keep_turns() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF NEW.state = 'pending' THEN
        INSERT INTO tireless.lane_repo AS r (lane, forge, owner, repo, limited)
        VALUES (NEW.lane, NEW.forge, NEW.owner, NEW.repo,
                EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (NEW.forge, NEW.owner, NEW.repo)))
        ON CONFLICT ON CONSTRAINT one_turn_per_lane_and_repo DO UPDATE SET has_work = true;
    END IF;
    IF OLD.state = 'claimed'
       AND (EXISTS (SELECT FROM tireless.lane l WHERE l.name = OLD.lane AND l.agent_time_per_day IS NOT NULL)
            OR EXISTS (SELECT FROM tireless.repo_limit l
                        WHERE (l.forge, l.owner, l.repo) = (OLD.forge, OLD.owner, OLD.repo)
                          AND l.agent_time_per_day IS NOT NULL)) THEN
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
COMMENT ON FUNCTION tireless.keep_turns() IS
    'Trigger of tireless.job (per changed row): a job returned to pending or re-routed gives its repository a turn '
    'with work in its lane; an attempt under an agent-time budget (its lane''s or its repository''s) that ends adds '
    'how long it held its claim to the lane and repository''s agent time of today (UTC).';

CREATE TRIGGER created_jobs_take_turns
    AFTER INSERT ON tireless.job
    REFERENCING NEW TABLE AS created
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.give_turns();
COMMENT ON TRIGGER created_jobs_take_turns ON tireless.job IS
    'New pending jobs give their repository a turn with work in their lane (one statement per insert).';
CREATE TRIGGER changed_jobs_take_turns
    AFTER UPDATE OF state, lane ON tireless.job
    FOR EACH ROW WHEN (OLD.state = 'claimed' OR (NEW.state = 'pending' AND (OLD.state <> 'pending' OR OLD.lane <> NEW.lane)))
    EXECUTE FUNCTION tireless.keep_turns();
COMMENT ON TRIGGER changed_jobs_take_turns ON tireless.job IS
    'A job returned to pending or re-routed gives its repository a turn with work; an ended attempt counts its agent time.';
ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER created_jobs_take_turns;
ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER changed_jobs_take_turns;

-- 5. May a job of this repository be claimed now? Under the repository's limit row lock, so
-- concurrent claimers (in any lane) count one at a time and never pass its capacity or budget.
CREATE FUNCTION tireless.repo_has_room(forge text, owner text, repo text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    limits tireless.repo_limit;
    spent record;
BEGIN
    SELECT * INTO limits FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (repo_has_room.forge, repo_has_room.owner, repo_has_room.repo)
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN true;
    END IF;
    IF limits.capacity IS NOT NULL
       AND (SELECT count(*) FROM tireless.job j
             WHERE j.state = 'claimed'
               AND (j.forge, j.owner, j.repo) = (limits.forge, limits.owner, limits.repo)) >= limits.capacity THEN
        RETURN false;
    END IF;
    spent := tireless.repo_spend(limits.forge, limits.owner, limits.repo);
    RETURN NOT tireless.budget_spent(spent.runs, spent.agent_time, limits.runs_per_day, limits.agent_time_per_day);
END;
$$;
COMMENT ON FUNCTION tireless.repo_has_room(text, text, text) IS
    'True when a job of the repository may be claimed now: fewer claimed jobs than its capacity and its budget of '
    'today not spent. Takes the repository''s limit row lock until the transaction ends.';

-- 6. One claim in one lane, fairly: the repositories with work in the order of their last claim, the
-- oldest first; of the first one that has room, its oldest ready pending job. Usually one index probe
-- for the turn, one for the job and the write; a repository found without pending work leaves the walk. The job's
-- probe names its repository as a range of pending_jobs_in_repo_order, on purpose: with equalities the
-- planner drops the constant columns from the order and may walk the primary key through every older
-- job, finished or not, or the lane's part of pending_jobs_in_claim_order through other repositories' jobs.
CREATE FUNCTION tireless.claim_in_turn(worker text, lane text, lease interval) RETURNS SETOF tireless.job
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
             WHERE j.state = 'pending' AND j.available_at <= now()
               AND (j.lane, j.forge, j.owner, j.repo) >= (turn.lane, turn.forge, turn.owner, turn.repo)
               AND (j.lane, j.forge, j.owner, j.repo) <= (turn.lane, turn.forge, turn.owner, turn.repo)
             ORDER BY j.lane, j.forge, j.owner, j.repo, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED;
            EXIT WHEN FOUND;
        END IF;
        -- Nothing claimable here (in backoff, locked, or no room): a repository with no pending job left
        -- in the lane leaves the walk until one becomes pending again.
        UPDATE tireless.lane_repo r SET has_work = false
         WHERE r.id = turn.id
           AND NOT EXISTS (SELECT FROM tireless.job j
                            WHERE j.state = 'pending' AND j.lane = turn.lane
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
         WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_in_turn.lane]) AND j.available_at <= now()
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

-- 7. claim_next: the lane's claim goes through claim_in_turn; a lane with a budget is counted under its
-- row lock as a lane with a capacity is. Changed from 0015: the two claim statements call
-- claim_in_turn; capacity IS NOT NULL tests read limited; the capped loop also tests the lane's budget.
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
    'job of the repository that has waited longest since its last claim (round-robin between repositories). '
    'Skips paused, tripped and full lanes, lanes and repositories at their capacity or out of today''s budget, '
    'and jobs still in backoff. Zero rows when nothing is claimable; a lane nobody has configured simply holds no work.';

-- 8. The admin's setters.
CREATE FUNCTION tireless.check_budget(runs_per_day integer, agent_time_per_day interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF check_budget.runs_per_day < 0 THEN
        RAISE EXCEPTION 'runs_per_day must be null (no budget) or at least 0, got %', check_budget.runs_per_day
            USING ERRCODE = 'TL005';
    END IF;
    IF check_budget.agent_time_per_day <= interval '0' OR check_budget.agent_time_per_day > interval '1000 days' THEN
        RAISE EXCEPTION 'agent_time_per_day must be null (no budget) or more than 0 and at most 1000 days, got %',
            check_budget.agent_time_per_day
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_budget(integer, interval) IS
    'Raises TL005 (naming the setting) unless runs_per_day is null or >= 0 and agent_time_per_day null or in (0, 1000 days].';

CREATE FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval)
    RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.check_budget(set_lane_budget.runs_per_day, set_lane_budget.agent_time_per_day);
    PERFORM tireless.ensure_lane(set_lane_budget.lane);
    UPDATE tireless.lane l
       SET runs_per_day = set_lane_budget.runs_per_day, agent_time_per_day = set_lane_budget.agent_time_per_day
     WHERE l.name = set_lane_budget.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_budget(text, integer, interval) IS
    '(admin) The lane''s daily budget (the UTC calendar day): at most runs_per_day claims, and no claim once its '
    'attempts ended today held their claims agent_time_per_day in all (null: no budget of that kind). When spent, '
    'its jobs stay pending until midnight UTC. Returns the lane.';

-- The repository's limit row (made when missing), its turns told whether it is limited.
CREATE FUNCTION tireless.set_repo_limit(forge text, owner text, repo text, capacity integer,
                                        runs_per_day integer, agent_time_per_day interval)
    RETURNS tireless.repo_limit
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    result tireless.repo_limit;
BEGIN
    PERFORM tireless.check_tracked(set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo);
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
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_limit(text, text, text, integer, integer, interval) IS
    'Writes a tracked repository''s capacity and budgets (no row when all are null), and tells its turns whether '
    'they are limited. TL008 when it is not tracked.';

CREATE FUNCTION tireless.set_repo_capacity(forge text, owner text, repo text, capacity integer)
    RETURNS tireless.repo_limit
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current tireless.repo_limit;
BEGIN
    IF set_repo_capacity.capacity < 0 THEN
        RAISE EXCEPTION 'capacity must be null (unlimited) or at least 0, got %', set_repo_capacity.capacity
            USING ERRCODE = 'TL005';
    END IF;
    SELECT * INTO current FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (set_repo_capacity.forge, set_repo_capacity.owner, set_repo_capacity.repo);
    RETURN tireless.set_repo_limit(set_repo_capacity.forge, set_repo_capacity.owner, set_repo_capacity.repo,
                                   set_repo_capacity.capacity, current.runs_per_day, current.agent_time_per_day);
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_capacity(text, text, text, integer) IS
    '(admin) At most capacity claimed jobs of the tracked repository at once, all lanes together (null: unlimited; '
    '0 holds its work back). Returns its limits. TL005 for a negative capacity, TL008 when it is not tracked.';

CREATE FUNCTION tireless.set_repo_budget(forge text, owner text, repo text, runs_per_day integer,
                                         agent_time_per_day interval)
    RETURNS tireless.repo_limit
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current tireless.repo_limit;
BEGIN
    PERFORM tireless.check_budget(set_repo_budget.runs_per_day, set_repo_budget.agent_time_per_day);
    SELECT * INTO current FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (set_repo_budget.forge, set_repo_budget.owner, set_repo_budget.repo);
    RETURN tireless.set_repo_limit(set_repo_budget.forge, set_repo_budget.owner, set_repo_budget.repo,
                                   current.capacity, set_repo_budget.runs_per_day, set_repo_budget.agent_time_per_day);
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_budget(text, text, text, integer, interval) IS
    '(admin) The tracked repository''s daily budget, all lanes together (the UTC calendar day): at most '
    'runs_per_day claims, and no claim once its attempts ended today held their claims agent_time_per_day in all '
    '(null: no budget of that kind). Returns its limits. TL005 for a bad budget, TL008 when it is not tracked.';

-- 9. What operators read. The views compute inline (budget_spent, spend_day as written above): a view
-- runs its functions as the reader, and the readers may call none but the API.
CREATE VIEW tireless.repo_shares AS
SELECT r.lane, r.forge, r.owner, r.repo, r.last_claimed_at, r.has_work,
       CASE WHEN r.spend_day = (now() AT TIME ZONE 'UTC')::date THEN r.runs ELSE 0 END AS runs_today,
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
    'whether it has work, its runs and agent seconds in the lane today (UTC), the repository''s capacity and daily '
    'budgets (all lanes), and budget_resets_at (the next midnight UTC) while its budget is spent.';

-- Each lane's spend today against its daily budgets: read by lane_summary, and by the dashboard's
-- overview, which lists its lanes without lane_summary's day of finished jobs.
CREATE VIEW tireless.lane_budget AS
-- Written out rather than through lane_spend and budget_spent: a view reads its tables with its
-- owner's rights, but calls functions with the reader's, and no reader may read lane_repo.
SELECT l.name AS lane,
       spent.runs AS runs_today,
       extract(epoch FROM spent.agent_time)::float8 AS agent_seconds_today,
       l.runs_per_day, extract(epoch FROM l.agent_time_per_day)::float8 AS agent_seconds_per_day,
       CASE WHEN coalesce(spent.runs >= l.runs_per_day, false) OR coalesce(spent.agent_time >= l.agent_time_per_day, false)
            THEN ((now() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC' END AS budget_resets_at
  FROM tireless.lane l
 CROSS JOIN LATERAL (SELECT coalesce(sum(r.runs), 0)::bigint AS runs, coalesce(sum(r.agent_time), interval '0') AS agent_time
                       FROM tireless.lane_repo r
                      WHERE r.lane = l.name AND r.spend_day = (now() AT TIME ZONE 'UTC')::date) AS spent;
COMMENT ON VIEW tireless.lane_budget IS
    'One row per lane with settings: today''s spend (UTC: runs_today, agent_seconds_today) against its daily budgets, '
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
       coalesce(b.runs_today, 0) AS runs_today,
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
    'queue_stats''s delivered, failed and cancelled counts, and today''s spend (UTC: runs_today, '
    'agent_seconds_today) against the lane''s daily budgets, with budget_resets_at (the next midnight UTC) while a '
    'budget is spent. What `tireless status` and the dashboard''s overview show.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tireless.set_lane_budget(text, integer, interval),
    tireless.set_repo_capacity(text, text, text, integer),
    tireless.set_repo_budget(text, text, text, integer, interval)
    TO tireless_admin;
GRANT SELECT ON tireless.repo_shares, tireless.lane_budget TO tireless_runner, tireless_poller, tireless_admin;
