-- Fair shares: turns between the repositories of a lane, repository limits, and daily budgets
-- of runs and agent time.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- The budget's window: the calendar day in UTC (it resets at midnight UTC, the same moment everywhere).
CREATE OR REPLACE FUNCTION tireless.spend_day() RETURNS date
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (now() AT TIME ZONE 'UTC')::date;
COMMENT ON FUNCTION tireless.spend_day() IS 'Today in UTC: the window of the daily budgets (they reset at midnight UTC).';
REVOKE ALL ON FUNCTION tireless.spend_day() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.budget_spent(runs bigint, agent_time interval, runs_per_day integer, agent_time_per_day interval)
    RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(runs >= runs_per_day, false) OR coalesce(agent_time >= agent_time_per_day, false);
COMMENT ON FUNCTION tireless.budget_spent(bigint, interval, integer, interval) IS
    'True when today''s runs or agent time reached its budget (a null budget is never spent).';
REVOKE ALL ON FUNCTION tireless.budget_spent(bigint, interval, integer, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- What a lane spent today (its repositories' rows of today).
CREATE OR REPLACE FUNCTION tireless.lane_spend(lane text, OUT runs bigint, OUT agent_time interval)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(sum(r.runs), 0), coalesce(sum(r.agent_time), interval '0') FROM tireless.lane_repo r
     WHERE r.lane = lane_spend.lane AND r.spend_day = tireless.spend_day();
END;
COMMENT ON FUNCTION tireless.lane_spend(text) IS 'How many runs and how much agent time the lane spent today (UTC).';
REVOKE ALL ON FUNCTION tireless.lane_spend(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.repo_spend(forge text, owner text, repo text, OUT runs bigint, OUT agent_time interval)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(sum(r.runs), 0), coalesce(sum(r.agent_time), interval '0') FROM tireless.lane_repo r
     WHERE (r.forge, r.owner, r.repo) = (repo_spend.forge, repo_spend.owner, repo_spend.repo)
       AND r.spend_day = tireless.spend_day();
END;
COMMENT ON FUNCTION tireless.repo_spend(text, text, text) IS 'How many runs and how much agent time the repository spent today (UTC), all lanes.';
REVOKE ALL ON FUNCTION tireless.repo_spend(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The trigger that keeps the turns: a job that becomes pending gives its repository a turn with
-- work in its lane; an attempt that ends adds the time it held its claim to today's agent_time.
-- ENABLE ALWAYS: a bulk load with session_replication_role = replica still gives its jobs their turn.
-- A job that becomes pending sets has_work under the turn's row lock (waiting for a claimer that holds
-- the turn to commit), so it is never lost to a claimer clearing the hint at the same moment.
CREATE OR REPLACE FUNCTION tireless.give_turns() RETURNS trigger
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
REVOKE ALL ON FUNCTION tireless.give_turns() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

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
    'Trigger of tireless.job (per changed row): a job returned to pending, re-routed or released from its wait '
    'gives its repository a turn with work in its lane.';
REVOKE ALL ON FUNCTION tireless.keep_turns() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER created_jobs_take_turns
    AFTER INSERT ON tireless.job
    REFERENCING NEW TABLE AS created
    FOR EACH STATEMENT EXECUTE FUNCTION tireless.give_turns();
COMMENT ON TRIGGER created_jobs_take_turns ON tireless.job IS
    'New pending jobs give their repository a turn with work in their lane (one statement per insert).';
ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER created_jobs_take_turns;

CREATE OR REPLACE TRIGGER changed_jobs_take_turns
    AFTER UPDATE OF state, lane, waiting_on ON tireless.job
    FOR EACH ROW WHEN (NEW.state = 'pending' AND NEW.waiting_on IS NULL
                       AND (OLD.state <> 'pending' OR OLD.lane <> NEW.lane OR OLD.waiting_on IS NOT NULL))
    EXECUTE FUNCTION tireless.keep_turns();
COMMENT ON TRIGGER changed_jobs_take_turns ON tireless.job IS
    'A job returned to pending, re-routed or released from its wait for a dependency gives its repository a turn '
    'with work in its lane.';
ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER changed_jobs_take_turns;

-- May a job of this repository be claimed now? Under the repository's limit row lock, so
-- concurrent claimers (in any lane) count one at a time and never pass its capacity or budget.
CREATE OR REPLACE FUNCTION tireless.repo_has_room(forge text, owner text, repo text) RETURNS boolean
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
    RETURN NOT tireless.budget_spent(spent.runs, spent.agent_time, limits.runs_per_day, limits.agent_time_per_day)
       AND tireless.repo_usage_spent(limits.forge, limits.owner, limits.repo) IS NULL;
END;
$$;
COMMENT ON FUNCTION tireless.repo_has_room(text, text, text) IS
    'True when a job of the repository may be claimed now: fewer claimed jobs than its capacity and its budget of '
    'today not spent. Takes the repository''s limit row lock until the transaction ends.';
REVOKE ALL ON FUNCTION tireless.repo_has_room(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The admin's setters: a budget is a number of runs or an amount of agent time a day.
CREATE OR REPLACE FUNCTION tireless.check_budget(runs_per_day integer, agent_time_per_day interval) RETURNS void
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
REVOKE ALL ON FUNCTION tireless.check_budget(integer, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval,
                                                    tokens_per_day bigint DEFAULT NULL, cost_per_day numeric DEFAULT NULL,
                                                    tokens_per_job bigint DEFAULT NULL, cost_per_job numeric DEFAULT NULL,
                                                    tokens_per_attempt bigint DEFAULT NULL,
                                                    cost_per_attempt numeric DEFAULT NULL,
                                                    tokens_per_issue bigint DEFAULT NULL,
                                                    cost_per_issue numeric DEFAULT NULL)
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
    PERFORM tireless.check_spend_budget(set_lane_budget.tokens_per_day, set_lane_budget.cost_per_day,
                                        set_lane_budget.tokens_per_job, set_lane_budget.cost_per_job,
                                        set_lane_budget.tokens_per_attempt, set_lane_budget.cost_per_attempt,
                                        set_lane_budget.tokens_per_issue, set_lane_budget.cost_per_issue);
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
       SET runs_per_day = set_lane_budget.runs_per_day, agent_time_per_day = set_lane_budget.agent_time_per_day,
           tokens_per_day = set_lane_budget.tokens_per_day, cost_per_day = set_lane_budget.cost_per_day,
           tokens_per_job = set_lane_budget.tokens_per_job, cost_per_job = set_lane_budget.cost_per_job,
           tokens_per_attempt = set_lane_budget.tokens_per_attempt, cost_per_attempt = set_lane_budget.cost_per_attempt,
           tokens_per_issue = set_lane_budget.tokens_per_issue, cost_per_issue = set_lane_budget.cost_per_issue
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
COMMENT ON FUNCTION tireless.set_lane_budget(text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) IS
    '(admin) The lane''s budgets. Daily (the UTC calendar day): at most runs_per_day claims, no claim once its '
    'attempts ended today held their claims agent_time_per_day in all, or its agents used tokens_per_day tokens or '
    'cost_per_day USD today; each counts from the moment it is set, and when spent its jobs stay pending until '
    'midnight UTC. Per job (its attempts), per issue (all its jobs) and per attempt: once it used tokens_per_job '
    'tokens or cost_per_job USD (or the per issue, per attempt ones), the gateway refuses its agent''s next model '
    'request and the job fails (the attempt only, for a budget per attempt). Null: no budget of that kind. Returns '
    'the lane.';
REVOKE ALL ON FUNCTION tireless.set_lane_budget(text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_lane_budget(text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_repo_limit(forge text, owner text, repo text, capacity integer,
                                                   runs_per_day integer, agent_time_per_day interval,
                                                   tokens_per_day bigint, cost_per_day numeric,
                                                   tokens_per_job bigint, cost_per_job numeric,
                                                   tokens_per_attempt bigint, cost_per_attempt numeric,
                                                   tokens_per_issue bigint, cost_per_issue numeric)
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
                  set_repo_limit.runs_per_day, set_repo_limit.agent_time_per_day, set_repo_limit.tokens_per_day,
                  set_repo_limit.cost_per_day, set_repo_limit.tokens_per_job, set_repo_limit.cost_per_job,
                  set_repo_limit.tokens_per_attempt, set_repo_limit.cost_per_attempt, set_repo_limit.tokens_per_issue,
                  set_repo_limit.cost_per_issue);
    IF num_nonnulls(result.capacity, result.runs_per_day, result.agent_time_per_day, result.tokens_per_day,
                    result.cost_per_day, result.tokens_per_job, result.cost_per_job, result.tokens_per_attempt,
                    result.cost_per_attempt, result.tokens_per_issue, result.cost_per_issue) = 0 THEN
        DELETE FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (result.forge, result.owner, result.repo);
    ELSE
        INSERT INTO tireless.repo_limit AS l VALUES (result.*)
        ON CONFLICT ON CONSTRAINT one_limit_row_per_repo DO UPDATE
           SET capacity = excluded.capacity, runs_per_day = excluded.runs_per_day,
               agent_time_per_day = excluded.agent_time_per_day, tokens_per_day = excluded.tokens_per_day,
               cost_per_day = excluded.cost_per_day, tokens_per_job = excluded.tokens_per_job,
               cost_per_job = excluded.cost_per_job, tokens_per_attempt = excluded.tokens_per_attempt,
               cost_per_attempt = excluded.cost_per_attempt, tokens_per_issue = excluded.tokens_per_issue,
               cost_per_issue = excluded.cost_per_issue;
    END IF;
    UPDATE tireless.lane_repo r
       SET limited = num_nonnulls(result.capacity, result.runs_per_day, result.agent_time_per_day,
                                  result.tokens_per_day, result.cost_per_day, result.tokens_per_job,
                                  result.cost_per_job, result.tokens_per_attempt, result.cost_per_attempt,
                                  result.tokens_per_issue, result.cost_per_issue) > 0
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
COMMENT ON FUNCTION tireless.set_repo_limit(text, text, text, integer, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) IS
    'Writes a tracked repository''s capacity and budgets (no row when all are null), tells its turns whether they '
    'are limited, switches the count of agent time when a budget of agent time is written, and starts counting '
    'runs when a budget of runs starts. TL008 when it is not tracked.';
REVOKE ALL ON FUNCTION tireless.set_repo_limit(text, text, text, integer, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_repo_capacity(forge text, owner text, repo text, capacity integer)
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
                                   set_repo_capacity.capacity, current.runs_per_day, current.agent_time_per_day,
                                   current.tokens_per_day, current.cost_per_day, current.tokens_per_job,
                                   current.cost_per_job, current.tokens_per_attempt, current.cost_per_attempt,
                                   current.tokens_per_issue, current.cost_per_issue);
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_capacity(text, text, text, integer) IS
    '(admin) At most capacity claimed jobs of the tracked repository at once, all lanes together (null: unlimited; '
    '0 holds its work back). Returns its limits. TL005 for a negative capacity, TL008 when it is not tracked.';
REVOKE ALL ON FUNCTION tireless.set_repo_capacity(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_repo_capacity(text, text, text, integer) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_repo_budget(forge text, owner text, repo text, runs_per_day integer,
                                         agent_time_per_day interval, tokens_per_day bigint DEFAULT NULL,
                                         cost_per_day numeric DEFAULT NULL, tokens_per_job bigint DEFAULT NULL,
                                         cost_per_job numeric DEFAULT NULL, tokens_per_attempt bigint DEFAULT NULL,
                                         cost_per_attempt numeric DEFAULT NULL, tokens_per_issue bigint DEFAULT NULL,
                                         cost_per_issue numeric DEFAULT NULL)
    RETURNS tireless.repo_limit
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current tireless.repo_limit;
BEGIN
    PERFORM tireless.check_budget(set_repo_budget.runs_per_day, set_repo_budget.agent_time_per_day);
    PERFORM tireless.check_spend_budget(set_repo_budget.tokens_per_day, set_repo_budget.cost_per_day,
                                        set_repo_budget.tokens_per_job, set_repo_budget.cost_per_job,
                                        set_repo_budget.tokens_per_attempt, set_repo_budget.cost_per_attempt,
                                        set_repo_budget.tokens_per_issue, set_repo_budget.cost_per_issue);
    SELECT * INTO current FROM tireless.repo_limit l
     WHERE (l.forge, l.owner, l.repo) = (set_repo_budget.forge, set_repo_budget.owner, set_repo_budget.repo);
    RETURN tireless.set_repo_limit(set_repo_budget.forge, set_repo_budget.owner, set_repo_budget.repo,
                                   current.capacity, set_repo_budget.runs_per_day, set_repo_budget.agent_time_per_day,
                                   set_repo_budget.tokens_per_day, set_repo_budget.cost_per_day,
                                   set_repo_budget.tokens_per_job, set_repo_budget.cost_per_job,
                                   set_repo_budget.tokens_per_attempt, set_repo_budget.cost_per_attempt,
                                   set_repo_budget.tokens_per_issue, set_repo_budget.cost_per_issue);
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_budget(text, text, text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) IS
    '(admin) The tracked repository''s budgets, all lanes together. Daily (the UTC calendar day): at most '
    'runs_per_day claims, and no claim once its attempts ended today held their claims agent_time_per_day in all, '
    'or its agents used tokens_per_day tokens or cost_per_day USD today. Per job, per issue and per attempt: once '
    'it used tokens_per_job tokens or cost_per_job USD (or the per issue, per attempt ones), the gateway refuses its '
    'next model request and the job fails (the attempt only, for a budget per attempt). '
    'Null: no budget of that kind. Returns its limits. TL005 for a bad budget, TL008 when it is not tracked.';
REVOKE ALL ON FUNCTION tireless.set_repo_budget(text, text, text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_repo_budget(text, text, text, integer, interval, bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) TO tireless_admin;

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
REVOKE ALL ON tireless.repo_shares FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.repo_shares TO tireless_runner, tireless_poller, tireless_admin;

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
REVOKE ALL ON tireless.lane_budget FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.lane_budget TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.count_agent_time() RETURNS trigger
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
REVOKE ALL ON FUNCTION tireless.count_agent_time() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER ended_attempts_count_agent_time
    AFTER UPDATE OF state ON tireless.job
    FOR EACH ROW WHEN (OLD.state = 'claimed')
    EXECUTE FUNCTION tireless.count_agent_time();
COMMENT ON TRIGGER ended_attempts_count_agent_time ON tireless.job IS
    'An ended attempt counts its held time against the budgets of agent time of its lane and repository. Enabled '
    '(ALWAYS) only while some lane or repository has such a budget (tireless.arm_agent_time_count).';
ALTER TABLE tireless.job DISABLE TRIGGER ended_attempts_count_agent_time;
SELECT tireless.arm_agent_time_count();

-- Whether some lane or repository has a budget of agent time.
CREATE OR REPLACE FUNCTION tireless.agent_time_budgeted() RETURNS boolean
    LANGUAGE sql STABLE
    RETURN EXISTS (SELECT FROM tireless.lane l WHERE l.agent_time_per_day IS NOT NULL)
        OR EXISTS (SELECT FROM tireless.repo_limit l WHERE l.agent_time_per_day IS NOT NULL);
COMMENT ON FUNCTION tireless.agent_time_budgeted() IS 'True when some lane or repository has a daily budget of agent time.';
REVOKE ALL ON FUNCTION tireless.agent_time_budgeted() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- Called by the setters after they wrote a budget of agent time (set, changed or removed), under the
-- lock they took first (tireless.lock_jobs_for_a_budget): two admins writing such budgets at once take
-- turns, so the last one to commit switches the trigger on what both did. A setter whose lane or
-- repository has no budget of agent time before or after takes no lock and switches nothing.
CREATE OR REPLACE FUNCTION tireless.arm_agent_time_count() RETURNS void
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
REVOKE ALL ON FUNCTION tireless.arm_agent_time_count() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A setter that writes a budget of agent time, or starts a budget of runs, takes this lock before it
-- writes anything: the lock arm_agent_time_count's ALTER TABLE needs (SHARE ROW EXCLUSIVE on
-- tireless.job, which also keeps two such setters apart), and the end of the claims in flight, which
-- start_counting_runs must not miss. Taken first, it never waits while holding a lane's or a
-- repository's row that a runner's claim may be waiting for. It waits for the transactions writing
-- jobs at that moment, and holds new ones until the setter commits: budgets are set rarely.
CREATE OR REPLACE FUNCTION tireless.lock_jobs_for_a_budget() RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    LOCK TABLE tireless.job IN SHARE ROW EXCLUSIVE MODE;
END;
$$;
COMMENT ON FUNCTION tireless.lock_jobs_for_a_budget() IS
    'Takes the lock a budget setter needs before anything else (SHARE ROW EXCLUSIVE on tireless.job, until the '
    'transaction ends): the claims in flight have ended, and arm_agent_time_count may switch the trigger.';
REVOKE ALL ON FUNCTION tireless.lock_jobs_for_a_budget() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- A budget of runs counts the claims made from the moment it is set (a claim in a lane where one
-- repository has work writes no turn, so nothing counts its runs until then): the setter that starts one
-- sets today's runs of the turns it counts to 0, after the claims in flight have ended. A turn is
-- counted by its lane's budget and its repository's: one that the other kind of budget already
-- counts keeps its count (a budget may then count a few claims from before it was set, never fewer).
CREATE OR REPLACE FUNCTION tireless.start_counting_runs(lane text, forge text, owner text, repo text) RETURNS void
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
REVOKE ALL ON FUNCTION tireless.start_counting_runs(text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
