"""The dashboard's charts: jobs finished per bucket (stacked by outcome) and the queue's depth
(pending and claimed, as lines) over a window, as the geometry of an SVG the template draws
(server-side: no script, nothing from outside)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

OUTCOMES = ("delivered", "failed", "cancelled")
DEPTHS = ("pending", "claimed")
WIDTH, HEIGHT = 720, 180
LEFT, RIGHT, BOTTOM, TOP = 40, 40, 20, 10
TICKS = 6
# The windows a page may ask for, and the bucket tireless.queue_activity gives each.
WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}
GRAINS = {"1h": timedelta(minutes=1), "24h": timedelta(hours=1), "7d": timedelta(hours=1)}


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    outcome: str
    jobs: int
    bucket: datetime


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True, slots=True)
class Line:
    name: str
    points: str
    last: int


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    right: int
    baseline: float
    top: int
    peak: int
    depth_peak: int
    total: dict[str, int]
    bars: list[Bar]
    lines: list[Line]
    ticks: list[Tick]


def tick_label(bucket: datetime, grain: timedelta, span: timedelta) -> str:
    local = bucket.astimezone()
    if grain < timedelta(hours=1):
        return local.strftime("%H:%M")
    return local.strftime("%a %H:00" if span > timedelta(days=1) else "%H:00")


def activity(rows: Iterable[Mapping[str, Any]], grain: timedelta, span: timedelta) -> Chart:
    """rows: tireless.queue_activity's (bucket, lane, pending, claimed, delivered, failed,
    cancelled); the lanes of a bucket are added up."""
    per_bucket: dict[datetime, dict[str, int]] = {}
    for row in rows:
        counts = per_bucket.setdefault(row["bucket"], dict.fromkeys(OUTCOMES + DEPTHS, 0))
        for name in OUTCOMES + DEPTHS:
            counts[name] += int(row[name])
    buckets = sorted(per_bucket)
    space = (WIDTH - LEFT - RIGHT) / max(len(buckets), 1)
    baseline = HEIGHT - BOTTOM
    peak = max([sum(per_bucket[b][o] for o in OUTCOMES) for b in buckets] + [1])
    depth_peak = max([per_bucket[b][d] for b in buckets for d in DEPTHS] + [1])
    scale, depth_scale = (baseline - TOP) / peak, (baseline - TOP) / depth_peak
    bars: list[Bar] = []
    for i, bucket in enumerate(buckets):
        y = float(baseline)
        for outcome in OUTCOMES:
            jobs = per_bucket[bucket][outcome]
            if jobs:
                height = jobs * scale
                y -= height
                x = LEFT + i * space + min(1, space / 4)
                bars.append(Bar(x, y, max(space - 2, space / 2), height, outcome, jobs, bucket))
    lines = [
        Line(
            depth,
            " ".join(
                f"{LEFT + (i + 0.5) * space:.1f},{baseline - per_bucket[b][depth] * depth_scale:.1f}"
                for i, b in enumerate(buckets)
            ),
            per_bucket[buckets[-1]][depth] if buckets else 0,
        )
        for depth in DEPTHS
    ]
    every = max(1, len(buckets) // TICKS)
    ticks = [
        Tick(LEFT + (i + 0.5) * space, tick_label(bucket, grain, span))
        for i, bucket in enumerate(buckets)
        if i % every == every - 1
    ]
    total = {o: sum(per_bucket[b][o] for b in buckets) for o in OUTCOMES}
    return Chart(
        WIDTH, HEIGHT, LEFT, RIGHT, baseline, TOP, peak, depth_peak, total, bars, lines, ticks
    )
