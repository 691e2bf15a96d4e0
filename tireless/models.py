"""The vocabulary and the typed rows. The database holds the same vocabulary (enum types);
tests/test_catalog.py proves the two are one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID


class JobState(StrEnum):
    PENDING = "pending"
    CLAIMED = "claimed"
    DELIVERED = "delivered"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """A terminal job never changes again (invariant 2)."""
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset({JobState.DELIVERED, JobState.FAILED, JobState.CANCELLED})


class JobKind(StrEnum):
    """Declared in routing precedence, as in the database: discover, then plan, then implement."""

    DISCOVER = "discover"
    PLAN = "plan"
    IMPLEMENT = "implement"


@dataclass(frozen=True, slots=True)
class RepoRef:
    forge: str
    owner: str
    repo: str


@dataclass(frozen=True, slots=True)
class DiscoveredIssue:
    """One issue as the poller saw it; `enqueue` decides whether it expresses work."""

    forge: str
    owner: str
    repo: str
    number: int
    state: str = "open"
    labels: tuple[str, ...] = ()
    title: str | None = None
    parent_id: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The element of `tireless.enqueue`'s JSON array."""
        return {
            "forge": self.forge,
            "owner": self.owner,
            "repo": self.repo,
            "number": self.number,
            "state": self.state,
            "labels": list(self.labels),
            "title": self.title,
            "parent_id": self.parent_id,
        }


@dataclass(frozen=True, slots=True)
class Job:
    """A row of `tireless.job` as the functions return it."""

    id: int
    forge: str
    owner: str
    repo: str
    number: int
    title: str | None
    labels: tuple[str, ...]
    kind: JobKind
    lane: str
    state: JobState
    parent_id: int | None
    claimed_by: str | None
    claim_expires_at: datetime | None
    claim_token: UUID | None
    attempts: int
    available_at: datetime
    note: str | None
    created_at: datetime
    updated_at: datetime
    given_back: int = 0
    """How many of `attempts` were given back by a stopping runner (not counted by the budget)."""

    @classmethod
    def from_row(cls, **columns: Any) -> Job:
        """Build a Job from a row's columns, turning the enum texts into enums."""
        columns["kind"] = JobKind(columns["kind"])
        columns["state"] = JobState(columns["state"])
        columns["labels"] = tuple(columns["labels"])
        return cls(**columns)


@dataclass(frozen=True, slots=True)
class Lane:
    """A row of `tireless.lane`: a lane's settings and circuit-breaker state."""

    name: str
    capacity: int | None
    paused: bool
    consecutive_failures: int
    tripped_until: datetime | None
