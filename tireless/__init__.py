"""tireless: the job store that issue-driven coding agents run on.

The rules live in PostgreSQL (schema `tireless`); this package is a thin adapter.
"""

from tireless.astore import AsyncJobStore
from tireless.errors import TirelessError
from tireless.migrate import migrate
from tireless.models import DiscoveredIssue, Job, JobKind, JobState, Lane, RepoRef
from tireless.store import LEASE, JobStore

__all__ = [
    "LEASE",
    "AsyncJobStore",
    "DiscoveredIssue",
    "Job",
    "JobKind",
    "JobState",
    "JobStore",
    "Lane",
    "RepoRef",
    "TirelessError",
    "migrate",
]
