-- The finish pays nothing for daily budgets of agent time unless one is set: the trigger that counts an ended attempt's held time is enabled only while some lane or repository has such a budget.
-- depends: 0024_fair_shares

-- 0024's changed_jobs_take_turns fired at every finish (OLD.state = 'claimed') to ask whether the
-- attempt's lane or repository had a budget of agent time: a trigger call and two index probes a
-- cycle, about 35 µs of a 410 µs finish-and-claim cycle (docs/performance.md), paid by every queue
-- whether it has such a budget or not (most have none). It is now two triggers:
-- - changed_jobs_take_turns: a job returned to pending or re-routed gives its repository a turn with
--   work (0024's rule, unchanged; it never fires on a claim or a finish);
-- - ended_attempts_count_agent_time: an attempt that ends adds its held time to the day's agent time
--   of its lane and repository when either has a budget of agent time (0024's rule, unchanged). It
--   is enabled (ALWAYS) while at least one budget of agent time exists, and disabled otherwise: the
--   budget setters switch it, in the same transaction as the budget, under a lock of tireless.job.
-- What is counted is what 0024 counted: an attempt counts when it ends under such a budget, so a
-- budget counts the attempts that end after it is set. Invariant (tests/test_fair_shares.py): the
-- trigger is enabled exactly when some lane or repository has a budget of agent time.

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
-- lock they took first (tireless.lock_for_agent_time): two admins writing such budgets at once take
-- turns, so the last one to commit switches the trigger on what both did. A setter whose lane or
-- repository has no budget of agent time before or after takes no lock and switches nothing.
CREATE FUNCTION tireless.arm_agent_time_count() RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    armed boolean := (SELECT t.tgenabled = 'A' FROM pg_catalog.pg_trigger t
                       WHERE t.tgrelid = 'tireless.job'::regclass AND t.tgname = 'ended_attempts_count_agent_time');
BEGIN
    IF tireless.agent_time_budgeted() AND NOT armed THEN
        ALTER TABLE tireless.job ENABLE ALWAYS TRIGGER ended_attempts_count_agent_time;
    ELSIF NOT tireless.agent_time_budgeted() AND armed THEN
        ALTER TABLE tireless.job DISABLE TRIGGER ended_attempts_count_agent_time;
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.arm_agent_time_count() IS
    'Enables the trigger ended_attempts_count_agent_time when some budget of agent time exists, disables it when '
    'none does. Run under tireless.lock_for_agent_time.';

-- A setter that changes a budget of agent time takes this lock before it writes anything: the lock
-- arm_agent_time_count's ALTER TABLE needs (SHARE ROW EXCLUSIVE on tireless.job, which also keeps
-- two such setters apart). Taken first, it never waits while holding a lane's or a repository's row
-- that a runner's claim may be waiting for. It waits for the transactions writing jobs at that
-- moment, and holds new ones until the setter commits: a budget of agent time is set rarely.
CREATE FUNCTION tireless.lock_for_agent_time() RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    LOCK TABLE tireless.job IN SHARE ROW EXCLUSIVE MODE;
END;
$$;
COMMENT ON FUNCTION tireless.lock_for_agent_time() IS
    'Takes the lock a change of a budget of agent time needs before anything else (SHARE ROW EXCLUSIVE on '
    'tireless.job, until the transaction ends): arm_agent_time_count may then switch the trigger.';

CREATE OR REPLACE FUNCTION tireless.set_lane_budget(lane text, runs_per_day integer, agent_time_per_day interval)
    RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
    agent_time_changes boolean;
BEGIN
    PERFORM tireless.check_budget(set_lane_budget.runs_per_day, set_lane_budget.agent_time_per_day);
    -- Whenever a budget of agent time is on either side, not only when it differs from the value read
    -- here: a concurrent setter may change it before this one writes.
    agent_time_changes := set_lane_budget.agent_time_per_day IS NOT NULL
                          OR EXISTS (SELECT FROM tireless.lane l
                                      WHERE l.name = set_lane_budget.lane AND l.agent_time_per_day IS NOT NULL);
    IF agent_time_changes THEN
        PERFORM tireless.lock_for_agent_time();
    END IF;
    PERFORM tireless.ensure_lane(set_lane_budget.lane);
    UPDATE tireless.lane l
       SET runs_per_day = set_lane_budget.runs_per_day, agent_time_per_day = set_lane_budget.agent_time_per_day
     WHERE l.name = set_lane_budget.lane RETURNING l.* INTO result;
    IF agent_time_changes THEN
        PERFORM tireless.arm_agent_time_count();
    END IF;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_budget(text, integer, interval) IS
    '(admin) The lane''s daily budget (the UTC calendar day): at most runs_per_day claims, and no claim once its '
    'attempts ended today held their claims agent_time_per_day in all (null: no budget of that kind). When spent, '
    'its jobs stay pending until midnight UTC. Returns the lane.';

CREATE OR REPLACE FUNCTION tireless.set_repo_limit(forge text, owner text, repo text, capacity integer,
                                        runs_per_day integer, agent_time_per_day interval)
    RETURNS tireless.repo_limit
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    result tireless.repo_limit;
    agent_time_changes boolean;
BEGIN
    PERFORM tireless.check_tracked(set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo);
    agent_time_changes := set_repo_limit.agent_time_per_day IS NOT NULL
                          OR EXISTS (SELECT FROM tireless.repo_limit l
                                      WHERE (l.forge, l.owner, l.repo) = (set_repo_limit.forge, set_repo_limit.owner, set_repo_limit.repo)
                                        AND l.agent_time_per_day IS NOT NULL);
    IF agent_time_changes THEN
        PERFORM tireless.lock_for_agent_time();
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
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_limit(text, text, text, integer, integer, interval) IS
    'Writes a tracked repository''s capacity and budgets (no row when all are null), and tells its turns whether '
    'they are limited (switching the count of agent time when its budget of agent time changes). TL008 when it is '
    'not tracked.';

-- The trigger starts as the budgets stand.
ALTER TABLE tireless.job DISABLE TRIGGER ended_attempts_count_agent_time;
SELECT tireless.arm_agent_time_count();

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
