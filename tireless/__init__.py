"""tireless: the job store that issue-driven coding agents run on.

The rules live in PostgreSQL (schema `tireless`); this package is a thin adapter.
"""

from tireless.astore import AsyncJobStore, AsyncWorkWaiter
from tireless.calls import LEASE
from tireless.errors import TirelessError
from tireless.lease import AsyncLease, Lease, LeaseLost, Release
from tireless.migrate import migrate
from tireless.models import DiscoveredIssue, Job, JobKind, JobState, Lane, RepoRef
from tireless.store import JobStore, WorkWaiter

__all__ = [
    "LEASE",
    "AsyncJobStore",
    "AsyncLease",
    "AsyncWorkWaiter",
    "DiscoveredIssue",
    "Job",
    "JobKind",
    "JobState",
    "JobStore",
    "Lane",
    "Lease",
    "LeaseLost",
    "Release",
    "RepoRef",
    "TirelessError",
    "WorkWaiter",
    "migrate",
]
