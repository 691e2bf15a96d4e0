"""The overview's chart: jobs finished per hour over the last 24 hours, stacked by outcome, as
the geometry of an SVG the template draws (server-side: no script, nothing from outside)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

OUTCOMES = ("delivered", "failed", "cancelled")
HOURS = 24
WIDTH, HEIGHT = 720, 180
LEFT, BOTTOM, TOP = 40, 20, 10
BAR_SPACE = (WIDTH - LEFT) / HOURS


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    outcome: str
    jobs: int
    hour: datetime


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    baseline: float
    top: int
    peak: int
    total: dict[str, int]
    bars: list[Bar]
    ticks: list[Tick]


def finished_per_hour(rows: Iterable[Mapping[str, Any]], now: datetime) -> Chart:
    """rows: (hour, outcome, jobs) of the last 24 hours; now: the database's now()."""
    last = now.replace(minute=0, second=0, microsecond=0)
    hours = [last - timedelta(hours=HOURS - 1 - i) for i in range(HOURS)]
    counts: dict[tuple[datetime, str], int] = {}
    for row in rows:
        counts[(row["hour"], row["outcome"])] = int(row["jobs"])
    per_hour = [sum(counts.get((hour, o), 0) for o in OUTCOMES) for hour in hours]
    peak = max([*per_hour, 1])
    baseline = HEIGHT - BOTTOM
    scale = (baseline - TOP) / peak
    bars: list[Bar] = []
    for i, hour in enumerate(hours):
        y = float(baseline)
        for outcome in OUTCOMES:
            jobs = counts.get((hour, outcome), 0)
            if jobs:
                height = jobs * scale
                y -= height
                x = LEFT + i * BAR_SPACE + 1
                bars.append(Bar(x, y, BAR_SPACE - 2, height, outcome, jobs, hour))
    ticks = [
        Tick(LEFT + i * BAR_SPACE + BAR_SPACE / 2, hour.astimezone().strftime("%H:00"))
        for i, hour in enumerate(hours)
        if i % 6 == 5
    ]
    total = {o: sum(counts.get((hour, o), 0) for hour in hours) for o in OUTCOMES}
    return Chart(WIDTH, HEIGHT, LEFT, baseline, TOP, peak, total, bars, ticks)
