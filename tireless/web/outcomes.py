"""The dashboard's page of outcomes per agent (`/outcomes`, linked from every page's header): per
lane (which is per agent) and repository, what became of the pull requests tireless opened over a
window (tireless.pull_outcomes), and the read /metrics exports as counters (every one kept)."""

from __future__ import annotations

from datetime import timedelta

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from tireless.web.dashboard import dashboard_of
from tireless.web.pages import render, who

PULL_OUTCOMES = (
    "SELECT o.*, o.cost_per_merged::float8 AS cost_per_merged_usd,"
    " o.merged_cost::float8 AS merged_cost_usd FROM tireless.pull_outcomes(since => %(since)s) o"
)
"""The figures per lane and repository over a window (since None: every pull request kept)."""

WINDOWS: dict[str, timedelta | None] = {
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "all": None,
}


async def outcomes(request: Request) -> Response:
    name = request.query_params.get("window") or "7d"
    if name not in WINDOWS:
        raise HTTPException(400, f"window takes one of {', '.join(WINDOWS)}, got {name!r}")
    rows = await dashboard_of(request).rows(PULL_OUTCOMES, {"since": WINDOWS[name]})
    return render(
        request,
        "outcomes.html",
        {"me": await who(request), "rows": rows, "window": name, "windows": list(WINDOWS)},
    )
