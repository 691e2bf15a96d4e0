"""The dashboard's pages of the fleet over time: activity (queue depth, throughput, wait and run
times per lane over a window), failures (grouped by their error, with the jobs), and workers.
Every read is a function or view of schema tireless (migration 0023)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from tireless.store import reads
from tireless.web import chart
from tireless.web.chart import GRAINS, WINDOWS
from tireless.web.dashboard import dashboard_of
from tireless.web.pages import issue_links, issue_url, render, who


def window_of(request: Request, default: str = "24h") -> str:
    """The window named by ?window=; 400 for a name it does not know."""
    name = request.query_params.get("window") or default
    if name not in WINDOWS:
        raise HTTPException(400, f"window takes one of {', '.join(WINDOWS)}, got {name!r}")
    return name


async def activity_charts(request: Request, window: str) -> tuple[chart.Chart, list[Any]]:
    """The chart of every lane together, and one per lane: (lane, chart)."""
    rows = await dashboard_of(request).rows(reads.ACTIVITY, {"span": WINDOWS[window]})
    by_lane: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_lane[row["lane"]].append(row)
    span, grain = WINDOWS[window], GRAINS[window]
    lanes = [(lane, chart.activity(found, grain, span)) for lane, found in sorted(by_lane.items())]
    return chart.activity(rows, grain, span), lanes


async def activity(request: Request) -> Response:
    window = window_of(request)
    total, lanes = await activity_charts(request, window)
    durations = await dashboard_of(request).rows(reads.DURATIONS, {"span": WINDOWS[window]})
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for row in durations:
        table.setdefault((row["lane"], row["kind"]), {})[row["measure"]] = row
    return render(
        request,
        "activity.html",
        {
            "me": await who(request),
            "window": window,
            "windows": list(WINDOWS),
            "chart": total,
            "lanes": lanes,
            "durations": [
                {"lane": k[0], "kind": k[1], "wait": None, "run": None, **v}
                for k, v in sorted(table.items())
            ],
        },
    )


async def failures(request: Request) -> Response:
    window = window_of(request)
    error = request.query_params.get("error")
    board = dashboard_of(request)
    span = WINDOWS[window]
    forges = await issue_links(request)
    params = {"span": span, "error": error}
    found = await board.rows(reads.RETRIED, params) + await board.rows(reads.FAILED, params)
    return render(
        request,
        "failures.html",
        {
            "me": await who(request),
            "window": window,
            "windows": list(WINDOWS),
            "error": error,
            "groups": await board.rows(reads.FAILURE_GROUPS, {"span": span}),
            "jobs": [{**row, "url": issue_url(forges, row)} for row in found],
        },
    )


async def workers(request: Request) -> Response:
    board = dashboard_of(request)
    now = (await board.rows("SELECT now() AS now"))[0]["now"]
    return render(
        request,
        "workers.html",
        {"me": await who(request), "workers": await board.rows(reads.WORKERS), "now": now},
    )
