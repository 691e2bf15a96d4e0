"""`tireless work` and its parts: the worker (worker.py), the agent's brief and report (brief.py),
its progress (progress.py), and the worker's secrets (credentials.py) and their masking (masking.py)."""
