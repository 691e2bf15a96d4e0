"""`tireless work` (tireless/runner/): real commands under a renewed lease, the watchdog and the
brief as the agent sees them, progress reports, and the worker's secrets kept from the agent."""
