-- The agent CLI a lane's jobs run (issue 46): the profiles `tireless work --agent` knows, a lane's
-- choice among them, and its reading by the runners.
--
-- The current definition of each function here, with its comment and grants.

CREATE OR REPLACE FUNCTION tireless.agent_profiles() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ARRAY['command', 'claude-code', 'codex', 'opencode', 'gemini', 'aider'];
COMMENT ON FUNCTION tireless.agent_profiles() IS
    'The agent CLI profiles tireless work knows (tireless.runner.agents.CHOICES): command (the worker''s COMMAND), '
    'claude-code, codex, opencode, gemini, aider.';
REVOKE ALL ON FUNCTION tireless.agent_profiles() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.agent_profiles() TO tireless_runner, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_lane_agent(lane text, agent text) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    stored text;
BEGIN
    PERFORM tireless.check_lane(set_lane_agent.lane);
    IF set_lane_agent.agent IS NOT NULL AND NOT set_lane_agent.agent = ANY (tireless.agent_profiles()) THEN
        RAISE EXCEPTION 'unknown agent profile % for lane %', quote_literal(left(set_lane_agent.agent, 80)),
            quote_literal(set_lane_agent.lane)
            USING ERRCODE = 'TL012',
                  DETAIL = format('The profiles are %s.', array_to_string(tireless.agent_profiles(), ', '));
    END IF;
    PERFORM tireless.ensure_lane(set_lane_agent.lane);
    UPDATE tireless.lane l SET agent = set_lane_agent.agent WHERE l.name = set_lane_agent.lane
        RETURNING l.agent INTO stored;
    RETURN stored;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_agent(text, text) IS
    '(admin) The agent CLI profile the lane''s jobs run (one of tireless.agent_profiles); null: none, the worker''s '
    'own --agent or COMMAND. Returns it. TL012 naming an unknown profile, TL005 for a bad lane name; nothing changes.';
REVOKE ALL ON FUNCTION tireless.set_lane_agent(text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_lane_agent(text, text) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.lane_agent(lane text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_lane(lane_agent.lane);
    RETURN (SELECT l.agent FROM tireless.lane l WHERE l.name = lane_agent.lane);
END;
$$;
COMMENT ON FUNCTION tireless.lane_agent(text) IS
    'The agent CLI profile the lane names (tireless.set_lane_agent), null when it names none. TL005 for a bad lane '
    'name. Runners read it at each claim.';
REVOKE ALL ON FUNCTION tireless.lane_agent(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.lane_agent(text) TO tireless_runner, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.lane_agents() RETURNS TABLE (lane text, agent text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.name, l.agent FROM tireless.lane l WHERE l.agent IS NOT NULL ORDER BY l.name;
$$;
COMMENT ON FUNCTION tireless.lane_agents() IS
    'Every lane that names an agent CLI profile (tireless.set_lane_agent), with it, by lane name.';
REVOKE ALL ON FUNCTION tireless.lane_agents() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.lane_agents() TO tireless_runner, tireless_admin;
