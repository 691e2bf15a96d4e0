-- The three group roles that act on the store: tireless_runner, tireless_poller, tireless_admin.
-- depends: 0001_schema

-- Roles belong to the cluster, not to one database: create each only if it is missing.
DO $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['tireless_runner', 'tireless_poller', 'tireless_admin'] LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
        END IF;
    END LOOP;
END;
$$;

COMMENT ON ROLE tireless_runner IS 'tireless: claims, renews and finishes its own claims, and sweeps expired leases.';
COMMENT ON ROLE tireless_poller IS 'tireless: reads the tracked repositories, enqueues issues and re-routes pending jobs.';
COMMENT ON ROLE tireless_admin IS 'tireless: everything a runner and a poller may do, plus tracking, policy and cancelling.';

GRANT tireless_runner, tireless_poller TO tireless_admin;

-- Tables stay private: the roles reach the store only through SECURITY DEFINER functions.
REVOKE ALL ON SCHEMA tireless FROM PUBLIC;
GRANT USAGE ON SCHEMA tireless TO tireless_runner, tireless_poller, tireless_admin;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.is_terminal(tireless.job_state), tireless.is_lane_name(text)
    TO tireless_runner, tireless_poller;
GRANT SELECT ON ALL TABLES IN SCHEMA tireless TO tireless_admin;
