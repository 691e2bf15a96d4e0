"""What the agents spent, on the dashboard: today's spend by lane and by repository, and a chart of
tokens per UTC day over the last days (tireless.usage_by_day), as rows and the geometry of an SVG
the template draws."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

DAYS = 14
"""The days the overview's chart shows, today the last."""
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 140, 60, 20, 10

SPEND_BY_DAY = (
    "SELECT u.spend_day, u.lane, u.forge, u.owner, u.repo, u.requests, u.unread, u.tokens, u.cost,"
    " u.unpriced, (now() AT TIME ZONE 'UTC')::date AS today FROM tireless.usage_by_day u"
    " WHERE u.spend_day > (now() AT TIME ZONE 'UTC')::date - %(days)s"
    " ORDER BY u.spend_day, u.lane, u.forge, u.owner, u.repo"
)


@dataclass(slots=True)
class Spent:
    """What a lane or a repository spent today."""

    name: str
    requests: int = 0
    tokens: int = 0
    cost: Decimal = Decimal(0)
    unpriced: bool = False

    def add(self, row: Mapping[str, Any]) -> None:
        self.requests += row["requests"]
        self.tokens += row["tokens"]
        self.cost += row["cost"] or 0
        self.unpriced = self.unpriced or row["unpriced"]


@dataclass(frozen=True, slots=True)
class DayBar:
    x: float
    y: float
    width: float
    height: float
    day: date
    tokens: int
    cost: Decimal


@dataclass(slots=True)
class Spend:
    """Today by lane and by repository, and the bars of the last DAYS days."""

    lanes: list[Spent] = field(default_factory=list)
    repos: list[Spent] = field(default_factory=list)
    bars: list[DayBar] = field(default_factory=list)
    peak: int = 0
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    baseline: int = HEIGHT - BOTTOM


def spend(rows: Iterable[Mapping[str, Any]]) -> Spend:
    rows = list(rows)
    out = Spend()
    if not rows:
        return out
    today: date = rows[0]["today"]
    lanes: dict[str, Spent] = {}
    repos: dict[str, Spent] = {}
    days: dict[date, list[Any]] = {today - timedelta(days=n): [0, Decimal(0)] for n in range(DAYS)}
    for row in rows:
        totals = days.setdefault(row["spend_day"], [0, Decimal(0)])
        totals[0] += row["tokens"]
        totals[1] += row["cost"] or 0
        if row["spend_day"] == today:
            lanes.setdefault(row["lane"], Spent(row["lane"])).add(row)
            repo = f"{row['forge']}/{row['owner']}/{row['repo']}"
            repos.setdefault(repo, Spent(repo)).add(row)
    out.lanes, out.repos = (
        sorted(lanes.values(), key=lambda s: s.name),
        sorted(repos.values(), key=lambda s: s.name),
    )
    out.peak = max(tokens for tokens, _ in days.values()) or 1
    slot = (WIDTH - LEFT) / DAYS
    for index, day in enumerate(sorted(days)[-DAYS:]):
        tokens, cost = days[day]
        height = (HEIGHT - BOTTOM - TOP) * tokens / out.peak
        out.bars.append(
            DayBar(
                LEFT + index * slot + 2,
                HEIGHT - BOTTOM - height,
                slot - 4,
                height,
                day,
                tokens,
                cost,
            )
        )
    return out
