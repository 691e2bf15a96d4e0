-- Real agents, first-class (issue 46): the agent CLI a lane's jobs run (tireless work's profiles: claude-code, codex, opencode, gemini, aider, or command).
-- depends: 0044_ledger

-- Null: the lane names none, the worker's own --agent (or its COMMAND) runs its jobs.
-- The names are checked by tireless.set_lane_agent (db/agents.sql), the only writer.
ALTER TABLE tireless.lane
    ADD COLUMN agent text,
    ADD CONSTRAINT agent_is_a_profile_name CHECK (agent ~ '^[a-z][a-z0-9-]{0,39}$');
COMMENT ON COLUMN tireless.lane.agent IS
    'The agent CLI profile the lane''s jobs run (tireless.agent_profiles: claude-code, codex, opencode, gemini, aider, '
    'command). Null: the worker''s own --agent, or its COMMAND.';
COMMENT ON CONSTRAINT agent_is_a_profile_name ON tireless.lane IS
    'A lane''s agent is a profile name: lower-case letters, digits and dashes, at most 40.';
