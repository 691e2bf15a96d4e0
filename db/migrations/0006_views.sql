-- Views for operators in psql: lanes with their breakers and queues, queue statistics, active claims.
-- depends: 0005_protocol

CREATE VIEW tireless.lane_status AS
WITH live AS (
    SELECT j.lane,
           count(*) FILTER (WHERE j.state = 'pending') AS pending,
           count(*) FILTER (WHERE j.state = 'pending' AND j.available_at <= now()) AS ready,
           count(*) FILTER (WHERE j.state = 'claimed') AS claimed,
           count(*) FILTER (WHERE j.state = 'claimed' AND j.claim_expires_at < now()) AS past_lease,
           now() - min(j.created_at) FILTER (WHERE j.state = 'pending') AS oldest_pending_age
      FROM tireless.job j
     WHERE j.state IN ('pending', 'claimed')
     GROUP BY j.lane
)
SELECT coalesce(l.name, live.lane) AS lane,
       l.capacity,
       coalesce(l.paused, false) AS paused,
       CASE WHEN l.tripped_until > now() THEN 'open'
            WHEN l.consecutive_failures >= p.breaker_threshold THEN 'half-open'
            ELSE 'closed' END AS breaker,
       coalesce(l.consecutive_failures, 0) AS consecutive_failures,
       l.tripped_until,
       coalesce(live.pending, 0) AS pending,
       coalesce(live.ready, 0) AS ready,
       coalesce(live.claimed, 0) AS claimed,
       coalesce(live.past_lease, 0) AS past_lease,
       live.oldest_pending_age
  FROM tireless.lane l
  FULL JOIN live ON live.lane = l.name
 CROSS JOIN tireless.policy p;
COMMENT ON VIEW tireless.lane_status IS
    'One row per lane that has settings or live jobs: capacity, paused, circuit breaker (closed, open while tripped, '
    'half-open after the cool-down until a success), and its pending, ready, claimed and past-lease jobs.';

CREATE VIEW tireless.queue_stats AS
SELECT j.lane, j.state, count(*) AS jobs, min(j.created_at) AS oldest, max(j.updated_at) AS latest_change
  FROM tireless.job j
 GROUP BY j.lane, j.state;
COMMENT ON VIEW tireless.queue_stats IS 'How many jobs each lane holds in each state (reads the whole job table).';

CREATE VIEW tireless.active_claims AS
SELECT j.id, j.forge, j.owner, j.repo, j.number, j.kind, j.lane, j.claimed_by, j.attempts,
       j.claim_expires_at, j.claim_expires_at - now() AS time_left, j.updated_at
  FROM tireless.job j
 WHERE j.state = 'claimed'
 ORDER BY j.claim_expires_at;
COMMENT ON VIEW tireless.active_claims IS
    'Claimed jobs with the time left on their lease (negative: past its lease, waiting for the sweeper).';

REVOKE ALL ON tireless.lane_status, tireless.queue_stats, tireless.active_claims FROM PUBLIC;
GRANT SELECT ON tireless.lane_status, tireless.queue_stats, tireless.active_claims
    TO tireless_runner, tireless_poller, tireless_admin;
