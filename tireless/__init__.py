"""tireless: the job store that issue-driven coding agents run on.

The rules live in PostgreSQL (schema `tireless`); this package is a thin adapter.
"""

from tireless.astore import AsyncJobStore, AsyncWorkWaiter
from tireless.calls import LEASE, POLL_LEASE
from tireless.errors import TirelessError
from tireless.lease import AsyncLease, Lease, LeaseLost, Release
from tireless.migrate import migrate
from tireless.models import (
    DiscoveredIssue,
    Forge,
    ForgeKind,
    Heartbeat,
    Job,
    JobKind,
    JobState,
    Lane,
    PollOutcome,
    RepoRef,
    RepoStatus,
    RepoToPoll,
)
from tireless.store import JobStore, WorkWaiter

__all__ = [
    "LEASE",
    "POLL_LEASE",
    "AsyncJobStore",
    "AsyncLease",
    "AsyncWorkWaiter",
    "DiscoveredIssue",
    "Forge",
    "ForgeKind",
    "Heartbeat",
    "Job",
    "JobKind",
    "JobState",
    "JobStore",
    "Lane",
    "Lease",
    "LeaseLost",
    "PollOutcome",
    "Release",
    "RepoRef",
    "RepoStatus",
    "RepoToPoll",
    "TirelessError",
    "WorkWaiter",
    "migrate",
]
