"""The vocabulary of outcomes per agent (issue 48, item 6): what the forge showed of one pull
request's fate, and the figures per lane and repository that tireless.pull_outcomes gives."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any


@dataclass(frozen=True, slots=True)
class PullFate:
    """One pull request as an issue listing showed it: open, or closed (merged when `merged_at`)."""

    pull: int
    state: str  # "open" or "closed"
    merged_at: datetime | None
    closed_at: datetime | None

    def row(self) -> dict[str, Any]:
        """The element tireless.record_pull_outcomes takes."""
        return {
            "pull": self.pull,
            "state": self.state,
            "merged_at": None if self.merged_at is None else self.merged_at.isoformat(),
            "closed_at": None if self.closed_at is None else self.closed_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class PullOutcomes:
    """One lane's pull requests in one repository over a window (tireless.pull_outcomes): how many
    were opened, merged, closed unmerged and are still open; the revision jobs made for them; the
    seconds from open to merge; and what the merged ones cost (None: none merged)."""

    lane: str
    forge: str
    owner: str
    repo: str
    opened: int
    merged: int
    closed: int
    still_open: int
    revisions: int
    revisions_per_pull: Decimal
    merge_seconds_sum: float
    merge_seconds_median: float | None
    merge_seconds_mean: float | None
    merged_tokens: int
    merged_cost: Decimal
    tokens_per_merged: Decimal | None
    cost_per_merged: Decimal | None
    unpriced: bool

    @property
    def repository(self) -> str:
        return f"{self.forge}/{self.owner}/{self.repo}"
