"""The store's adapter: the calls it sends (calls.py), the sync and async stores that run them
(sync.py, asynchronous.py) and the lease that holds a job (lease.py); the rules stay in PostgreSQL."""

from tireless.store.asynchronous import AsyncJobStore, AsyncWorkWaiter
from tireless.store.calls import DEFAULT_LEASE, DEFAULT_POLL_LEASE
from tireless.store.lease import AsyncHeldJob, HeldJob, LeaseLost, Release, ShuttingDown
from tireless.store.sync import JobStore, WorkWaiter

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_POLL_LEASE",
    "AsyncHeldJob",
    "AsyncJobStore",
    "AsyncWorkWaiter",
    "HeldJob",
    "JobStore",
    "LeaseLost",
    "Release",
    "ShuttingDown",
    "WorkWaiter",
]
