-- lane_summary: `tireless status` as a view, so that psql shows what the command shows.
-- depends: 0013_mirror_from_tracking

CREATE VIEW tireless.lane_summary AS
SELECT coalesce(s.lane, q.lane) AS lane,
       coalesce(s.pending, 0) AS pending, coalesce(s.ready, 0) AS ready,
       coalesce(s.claimed, 0) AS claimed, coalesce(s.past_lease, 0) AS past_lease,
       coalesce(q.delivered, 0) AS delivered, coalesce(q.failed, 0) AS failed,
       coalesce(q.cancelled, 0) AS cancelled,
       extract(epoch FROM s.oldest_pending_age)::float8 AS oldest_pending_seconds,
       coalesce(s.breaker, 'closed') AS breaker, coalesce(s.paused, false) AS paused,
       s.capacity, s.tripped_until
  FROM tireless.lane_status s
  FULL JOIN (SELECT st.lane,
                    sum(st.jobs) FILTER (WHERE st.state = 'delivered')::bigint AS delivered,
                    sum(st.jobs) FILTER (WHERE st.state = 'failed')::bigint AS failed,
                    sum(st.jobs) FILTER (WHERE st.state = 'cancelled')::bigint AS cancelled
               FROM tireless.queue_stats st GROUP BY st.lane) q ON q.lane = s.lane;
COMMENT ON VIEW tireless.lane_summary IS
    'One row per lane that has live jobs, settings or jobs finished in the last 24 hours: lane_status (live jobs, '
    'the oldest pending job''s age in seconds, breaker, paused, capacity) beside queue_stats''s delivered, failed '
    'and cancelled counts. What `tireless status` shows.';

REVOKE ALL ON tireless.lane_summary FROM PUBLIC;
GRANT SELECT ON tireless.lane_summary TO tireless_runner, tireless_poller, tireless_admin;
