"""tireless: the job store that issue-driven coding agents run on.

The rules live in PostgreSQL (schema `tireless`); this package is a thin adapter.
"""

from tireless.errors import TirelessError
from tireless.migrate import migrate
from tireless.models import (
    NO_CHANGE,
    Delivery,
    DiscoveredIssue,
    Forge,
    ForgeKind,
    Heartbeat,
    Job,
    JobBrief,
    JobKind,
    JobState,
    Lane,
    PollOutcome,
    RepoDelivery,
    RepoLimit,
    RepoRef,
    RepoStatus,
    RepoToPoll,
)
from tireless.store import (
    DEFAULT_LEASE,
    DEFAULT_POLL_LEASE,
    AsyncHeldJob,
    AsyncJobStore,
    AsyncWorkWaiter,
    HeldJob,
    JobStore,
    LeaseLost,
    Release,
    WorkWaiter,
)

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_POLL_LEASE",
    "NO_CHANGE",
    "AsyncHeldJob",
    "AsyncJobStore",
    "AsyncWorkWaiter",
    "Delivery",
    "DiscoveredIssue",
    "Forge",
    "ForgeKind",
    "Heartbeat",
    "HeldJob",
    "Job",
    "JobBrief",
    "JobKind",
    "JobState",
    "JobStore",
    "Lane",
    "LeaseLost",
    "PollOutcome",
    "Release",
    "RepoDelivery",
    "RepoLimit",
    "RepoRef",
    "RepoStatus",
    "RepoToPoll",
    "TirelessError",
    "WorkWaiter",
    "migrate",
]
