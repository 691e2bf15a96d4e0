"""Small builders for test issues, shared by the test modules."""

from __future__ import annotations

from typing import Any

from tireless import DiscoveredIssue, JobStore

FORGE, OWNER, REPO = "gitea", "acme", "widgets"
WORK = ("tireless", "tireless/implement")


def issue(
    number: int, *labels: str, state: str = "open", repo: str = REPO, **extra: Any
) -> DiscoveredIssue:
    """An issue of the test repository; with no labels given it asks for an implementation."""
    return DiscoveredIssue(FORGE, OWNER, repo, number, state=state, labels=labels or WORK, **extra)


def tracked(store: JobStore, repo: str = REPO) -> JobStore:
    """The store with the test repository tracked."""
    store.track_repo(FORGE, OWNER, repo)
    return store


def enqueue_jobs(store: JobStore, count: int, *labels: str, first: int = 1) -> int:
    """Track the test repository and enqueue `count` issues asking for work; returns how many were created."""
    tracked(store)
    return store.enqueue([issue(n, *labels) for n in range(first, first + count)])
