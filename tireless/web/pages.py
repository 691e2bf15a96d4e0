"""The dashboard's pages (overview, jobs, a job) and its actions (admin only, POST forms with a
CSRF token). Every read is a view or function of schema tireless; every value a parameter."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from markupsafe import Markup
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from tireless.errors import TirelessError, translated_errors
from tireless.models import JobKind, JobState, size_text
from tireless.store import calls, forge_calls, lane_calls, ledger_calls, reads
from tireless.web import chart, flash, spend, transcript
from tireless.web.dashboard import dashboard_of

PAGE_SIZE = 50
BIGGEST_ID = 2**63 - 1  # a job id is a bigint


# Filters for the templates
def age(value: timedelta | float | None) -> str:
    if value is None:
        return "-"
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    sign, total = ("-" if seconds < 0 else ""), abs(int(seconds))
    if total < 120:
        return f"{sign}{total}s"
    if total < 7200:
        return f"{sign}{total // 60}m{total % 60:02d}s"
    if total < 172800:
        return f"{sign}{total // 3600}h{total % 3600 // 60:02d}m"
    return f"{sign}{total // 86400}d{total % 86400 // 3600:02d}h"


def at_most(value: timedelta | None) -> str:
    """A percentile read from a histogram: the upper bound of its bin."""
    if value is None:
        return "-"
    return "< 1s" if value < timedelta(seconds=1) else f"≤ {age(value)}"


def clock(value: datetime | None) -> str:
    return "-" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def when(value: datetime | None) -> Markup:
    """A time the browser's script shows in its own zone and as "3 min ago" (the server's clock
    and zone without script)."""
    if value is None:
        return Markup("-")
    return Markup('<time datetime="{}">{}</time>').format(value.isoformat(), clock(value))


FILTERS: dict[str, Callable[..., str]] = {
    "age": age,
    "at_most": at_most,
    "clock": clock,
    "size": size_text,
    "when": when,
}


async def who(request: Request) -> dict[str, Any]:
    rows = await dashboard_of(request).rows(reads.WHO_AM_I)
    return rows[0]


async def issue_links(request: Request) -> dict[str, tuple[str, str]]:
    """forge name -> (kind, base_url) from the registry; empty when this role may not read it."""
    try:
        rows = await dashboard_of(request).rows(forge_calls.FORGES)
    except TirelessError:
        return {}
    return {row["name"]: (row["kind"], row["base_url"]) for row in rows}


def issue_url(forges: Mapping[str, tuple[str, str]], job: Mapping[str, Any]) -> str | None:
    """The issue's web page: base_url is the web root for Gitea/Forgejo, the API root for GitHub."""
    entry = forges.get(job["forge"])
    if entry is None:
        return None
    kind, base_url = entry
    root = base_url.rstrip("/")
    if kind == "github":
        parts = urlsplit(root)
        if parts.hostname == "api.github.com":
            root = "https://github.com"
        elif root.endswith("/api/v3"):
            root = root.removesuffix("/api/v3")
    return f"{root}/{job['owner']}/{job['repo']}/issues/{job['number']}"


def render(
    request: Request, template: str, context: dict[str, Any], status_code: int = 200
) -> Response:
    """A page; every page carries the role banner, the database label and a CSRF token."""
    board = dashboard_of(request)
    session = board.csrf.session(request)
    message = flash.taken(request, board.csrf)
    response = board.templates.TemplateResponse(
        request,
        template,
        {
            "database": board.database_label,
            "csrf": board.csrf.token(session),
            "flash": message,
            **context,
        },
        status_code=status_code,
    )
    board.csrf.keep(response, session)
    if message is not None:
        flash.clear(response)
    return response


def problem(request: Request, status: int, message: str) -> Response:
    return render(
        request, "problem.html", {"status": status, "message": message, "me": None}, status
    )


async def overview(request: Request) -> Response:
    board = dashboard_of(request)
    me = await who(request)
    activity = await board.rows(reads.ACTIVITY, {"span": chart.WINDOWS["24h"]})
    lanes = await board.rows(reads.LANES)
    try:
        repos: list[dict[str, Any]] | None = await board.rows(reads.REPOS)
    except TirelessError:
        repos = None  # this role may not read the repositories
    now = (await board.rows("SELECT now() AS now"))[0]["now"]
    warning = (await board.rows(reads.REPLICATION_WARNING))[0]["warning"]
    missed = await board.rows(reads.MISSED_ROUNDS)
    finished = chart.activity(activity, chart.GRAINS["24h"], chart.WINDOWS["24h"])
    spent = spend.spend(await board.rows(spend.SPEND_BY_DAY, {"days": spend.DAYS}))
    return render(
        request,
        "overview.html",
        {
            "me": me,
            "lanes": lanes,
            "repos": repos,
            "chart": finished,
            "spend": spent,
            "now": now,
            "replication_warning": warning,
            "missed": missed,
        },
    )


def job_filters(request: Request) -> reads.JobFilter:
    """The jobs page's filters from its query string; 400 for a value that names nothing."""
    query = request.query_params
    state, kind = query.get("state") or None, query.get("kind") or None
    if state is not None and state not in set(JobState):
        raise HTTPException(400, f"no job state {state!r}")
    if kind is not None and kind not in set(JobKind):
        raise HTTPException(400, f"no job kind {kind!r}")
    search = searched(query.get("q") or "")
    repo_text = query.get("repo") or search.pop("repo", "")
    owner, _, repo = repo_text.partition("/")
    if repo_text and not (owner and repo):
        raise HTTPException(400, f"repo takes OWNER/REPO, got {repo_text!r}")
    words = search.get("words")
    return reads.JobFilter(
        state=state,
        kind=kind,
        lane=query.get("lane") or None,
        forge=query.get("forge") or None,
        owner=owner or None,
        repo=repo or None,
        worker=query.get("worker") or None,
        number=search.get("number"),
        words=None if words is None else tuple(words),
    )


def searched(text: str) -> dict[str, Any]:
    """The search box: `#12` or `12` is an issue number, `owner/repo` a repository, anything
    else words that the title holds (all of them, in any case)."""
    words = text.split()
    number = words[0].lstrip("#") if len(words) == 1 else ""
    if number.isascii() and number.isdigit() and len(number) < 10:
        return {"number": int(number)}
    if len(words) == 1 and words[0].count("/") == 1:
        return {"repo": words[0]}
    return {"words": words} if words else {}


def job_id_of(request: Request) -> int:
    job_id: int = request.path_params["job_id"]
    if job_id > BIGGEST_ID:
        raise HTTPException(404, f"no job with id {job_id}")
    return job_id


def page_bound(request: Request, name: str) -> int | None:
    text = request.query_params.get(name)
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > BIGGEST_ID:
        raise HTTPException(400, f"{name} takes a job id, got {text!r}")
    return int(text)


async def jobs(request: Request) -> Response:
    board = dashboard_of(request)
    filters = job_filters(request)
    before, after = page_bound(request, "before"), page_bound(request, "after")
    if after is not None:
        page = reads.Page(after=after, at_most=PAGE_SIZE + 1)
        found = await board.read(reads.listed_jobs(filters, page))
        more_newer, found = len(found) > PAGE_SIZE, found[:PAGE_SIZE]
        found.reverse()
        more_older = True
    else:
        page = reads.Page(before=before, newest=True, at_most=PAGE_SIZE + 1)
        found = await board.read(reads.listed_jobs(filters, page))
        more_older, found = len(found) > PAGE_SIZE, found[:PAGE_SIZE]
        more_newer = before is not None
    form = {
        "q": request.query_params.get("q") or None,
        "state": filters.state,
        "kind": filters.kind,
        "lane": filters.lane,
        "forge": filters.forge,
        "repo": request.query_params.get("repo") or None,
        "worker": filters.worker,
    }
    shown = {key: value for key, value in form.items() if value}
    older = urlencode({**shown, "before": found[-1]["id"]}) if found and more_older else None
    newer = urlencode({**shown, "after": found[0]["id"]}) if found and more_newer else None
    forges = await issue_links(request)
    return render(
        request,
        "jobs.html",
        {
            "me": await who(request),
            "jobs": [{**row, "url": issue_url(forges, row)} for row in found],
            "filters": form,
            "states": [str(s) for s in JobState],
            "kinds": [str(k) for k in JobKind],
            "older": older,
            "newer": newer,
            "here": request.url.path + (f"?{request.url.query}" if request.url.query else ""),
        },
    )


async def job(request: Request) -> Response:
    board = dashboard_of(request)
    job_id = job_id_of(request)
    row = await board.read(reads.listed_job(job_id))
    if row is None:
        raise HTTPException(404, f"no job with id {job_id}")
    forges = await issue_links(request)
    parent = await board.read(reads.listed_job(row["parent_id"])) if row["parent_id"] else None
    now = (await board.rows("SELECT now() AS now"))[0]["now"]
    return render(
        request,
        "job.html",
        {
            "me": await who(request),
            "job": {**row, "url": issue_url(forges, row)},
            "history": await board.read(reads.job_history(job_id)),
            "attempts": await board.rows(reads.JOB_ATTEMPTS, {"job_id": job_id}),
            "progress": next(iter(await board.rows(reads.JOB_PROGRESS, {"job_id": job_id})), None),
            "delivery": next(iter(await board.rows(reads.JOB_DELIVERY, {"job_id": job_id})), None),
            "checkpoint": next(
                iter(await board.rows(reads.JOB_CHECKPOINT, {"job_id": job_id})), None
            ),
            "asks": await board.rows(forge_calls.JOB_ASKS, {"job_id": job_id}),
            "network": await board.rows(calls.JOB_NETWORK, {"job_id": job_id}),
            "usage": await board.rows(reads.JOB_USAGE, {"job_id": job_id}),
            "model_usage": await board.rows(ledger_calls.JOB_MODEL_USAGE, {"job_id": job_id}),
            "spend": (await board.rows(reads.JOB_SPEND, {"job_id": job_id}))[0]["spend"],
            "parent": parent,
            "children": [
                {**child, "url": issue_url(forges, child)}
                for child in await board.rows(reads.CHILDREN, {"job_id": job_id})
            ],
            "runs": await board.rows(reads.ISSUE_RUNS, {"job_id": job_id}),
            "now": now,
        },
    )


async def job_transcript(request: Request) -> Response:
    """The job's session with its model: each exchange its gateway kept, as turns."""
    board = dashboard_of(request)
    job_id = job_id_of(request)
    row = await board.read(reads.listed_job(job_id))
    if row is None:
        raise HTTPException(404, f"no job with id {job_id}")
    rows = await board.rows(ledger_calls.JOB_TRANSCRIPT, {"job_id": job_id})
    return render(
        request,
        "transcript.html",
        {"me": await who(request), "job": row, "turns": transcript.turns(rows)},
    )


# Actions: admin only, POST with the session's CSRF token; back to the page that asked.
async def action_form(request: Request) -> dict[str, str]:
    body = await request.body()  # bounded by the guard while it is read
    form = dict(parse_qsl(body.decode("utf-8", "replace")))
    board = dashboard_of(request)
    if not board.csrf.accepts(request, form.get("csrf", "")):
        raise HTTPException(
            403, "the form's CSRF token does not match this session: reload the page"
        )
    if not (await who(request))["admin"]:
        raise HTTPException(403, "read-only: actions need a connection as tireless_admin")
    return form


def back_to(form: Mapping[str, str], default: str) -> str:
    """Only a path of this site, never another origin."""
    target = form.get("next", "")
    return target if target.startswith("/") and not target.startswith("//") else default


async def attempt(request: Request, query: Any, params: dict[str, Any]) -> tuple[Any, str | None]:
    """Run one call in its own transaction: (the first column of its answer, None), or (None,
    the store's refusal with its SQLSTATE)."""
    board = dashboard_of(request)
    try:
        async with board.pool.connection() as conn, conn.cursor() as cur:
            with translated_errors():
                await cur.execute(query, params)
                answer = await cur.fetchone()
    except TirelessError as refusal:
        return None, f"refused ({refusal.sqlstate}): {refusal}"
    return (answer[0] if answer else None), None


async def run_action(
    request: Request, query: Any, params: dict[str, Any], back: Callable[[Any], str]
) -> Response:
    """Run the action's call; back(the first column of its answer) is where the browser goes."""
    answer, refusal = await attempt(request, query, params)
    if refusal is not None:
        return render(request, "problem.html", {"status": 409, "message": refusal, "me": None}, 409)
    return RedirectResponse(back(answer), status_code=303)


LANE_ACTIONS = {
    "pause": lane_calls.PAUSE_LANE,
    "resume": lane_calls.RESUME_LANE,
    "reset-breaker": lane_calls.RESET_LANE_BREAKER,
}


async def lane_action(request: Request) -> Response:
    query = LANE_ACTIONS.get(request.path_params["action"])
    if query is None:
        raise HTTPException(404, "no such action")
    form = await action_form(request)
    back = back_to(form, "/")
    return await run_action(request, query, {"lane": request.path_params["lane"]}, lambda _: back)


async def forge_action(request: Request) -> Response:
    """Retry a stopped forge: its stop cleared, its repositories due at the poller's next round."""
    if request.path_params["action"] != "retry":
        raise HTTPException(404, "no such action")
    form = await action_form(request)
    back = back_to(form, "/")
    params = {"name": request.path_params["forge"]}
    return await run_action(request, forge_calls.RETRY_FORGE, params, lambda _: back)


async def job_action(request: Request) -> Response:
    action, job_id = request.path_params["action"], job_id_of(request)
    if action not in ("cancel", "rerun"):
        raise HTTPException(404, "no such action")
    form = await action_form(request)
    back = back_to(form, f"/jobs/{job_id}")
    if action == "cancel":  # a pending job ends now; a claimed one's holder is asked to stop
        me = await who(request)
        params = {"job_id": job_id, "note": f"cancelled from the dashboard by {me['role']}"}
        return await run_action(request, calls.REQUEST_CANCEL, params, lambda _: back)
    found = await dashboard_of(request).read(reads.listed_job(job_id))
    if found is None:
        raise HTTPException(404, f"no job with id {job_id}")
    issue = {key: found[key] for key in ("forge", "owner", "repo", "number")} | {"kind": None}
    return await run_action(request, calls.RERUN, issue, lambda new_job: f"/jobs/{new_job}")
