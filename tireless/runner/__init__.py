"""`tireless work` and its parts: the claim loop (worker.py) and one attempt (attempt.py), given a
WorkConfig (config.py); the agent's brief and report (brief.py), its progress (progress.py), its
sandbox and network; the workspaces and the push of --deliver (publisher.py over workspace.py,
extract.py, policy.py and push.py). The secrets, their masking and the hardened git are below it,
in tireless/credentials.py, masking.py and git.py."""
