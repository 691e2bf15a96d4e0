"""Bulk actions on the jobs the list's checkboxes select: re-run their issues, or cancel them.
Admin only, through the same CSRF-checked form as every action; the first POST shows what would
happen to each job and asks for a confirmation, the second does it, job by job (a refusal of one
changes nothing of the others), and the next page says what changed (a flash message)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from tireless.store import calls, reads
from tireless.web import flash
from tireless.web.dashboard import dashboard_of
from tireless.web.pages import action_form, attempt, back_to, render, who

ACTIONS = {"rerun": "Re-run", "cancel": "Cancel"}
MAX_JOBS = 200
TERMINAL = ("delivered", "failed", "cancelled")


def selected(body: bytes) -> list[int]:
    """The ids of the checked jobs (every `job` field of the form)."""
    ids = {
        int(value)
        for key, value in parse_qsl(body.decode("utf-8", "replace"))
        if key == "job" and value.isdigit() and len(value) < 19
    }
    if len(ids) > MAX_JOBS:
        raise HTTPException(400, f"select at most {MAX_JOBS} jobs at once")
    return sorted(ids)


def plan(
    action: str, jobs: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], str | None]]:
    """Each job with what the action will do to it, or None when it does nothing (and why not
    is what the confirmation shows)."""
    planned: list[tuple[Mapping[str, Any], str | None]] = []
    issues: set[tuple[str, str, str, int]] = set()
    for job in jobs:
        issue = (job["forge"], job["owner"], job["repo"], job["number"])
        if action == "cancel":
            outcome = {
                "pending": "cancelled now",
                "claimed": "its holder is asked to stop (a cancel request): it ends cancelled",
            }.get(job["state"])
        elif job["state"] not in TERMINAL or issue in issues:
            outcome = None
        else:
            outcome = "a new pending job for its issue"
        issues.add(issue)
        planned.append((job, outcome))
    return planned


def why_not(action: str, job: Mapping[str, Any]) -> str:
    if action == "cancel":
        return f"already {job['state']}"
    if job["state"] not in TERMINAL:
        return f"still {job['state']}: an issue is re-run once its job has ended"
    return "its issue is already re-run by another selected job"


async def carry_out(request: Request, action: str, job: Mapping[str, Any]) -> str:
    """Do the action to one job; a sentence for the flash message."""
    if action == "cancel":
        me = await who(request)
        params = {"job_id": job["id"], "note": f"cancelled from the dashboard by {me['role']}"}
        _, refusal = await attempt(request, calls.REQUEST_CANCEL, params)
        if refusal:
            return f"job {job['id']} {refusal}"
        if job["state"] == "claimed":
            return f"asked the holder of job {job['id']} to stop"
        return f"cancelled job {job['id']}"
    issue = {key: job[key] for key in ("forge", "owner", "repo", "number")} | {"kind": None}
    new_job, refusal = await attempt(request, calls.RERUN, issue)
    return f"job {job['id']} {refusal}" if refusal else f"re-ran job {job['id']} as job {new_job}"


async def bulk(request: Request) -> Response:
    form = await action_form(request)
    action = form.get("action", "")
    if action not in ACTIONS:
        raise HTTPException(400, f"no bulk action {action!r}")
    ids = selected(await request.body())
    back = back_to(form, "/jobs")
    board = dashboard_of(request)
    if not ids:
        response = RedirectResponse(back, status_code=303)
        flash.give(response, board.csrf, "No job was selected: nothing changed.")
        return response
    planned = plan(action, await board.rows(reads.JOBS_BY_ID, {"ids": ids}))
    if form.get("confirm") != "yes":
        return render(
            request,
            "bulk.html",
            {
                "me": await who(request),
                "action": action,
                "label": ACTIONS[action],
                "planned": [(job, outcome or why_not(action, job)) for job, outcome in planned],
                "doing": [job["id"] for job, outcome in planned if outcome],
                "next": back,
            },
        )
    done = [await carry_out(request, action, job) for job, outcome in planned if outcome]
    left = [f"job {job['id']} ({why_not(action, job)})" for job, outcome in planned if not outcome]
    message = "; ".join(done) or "Nothing changed"
    if left:
        message += ". Unchanged: " + "; ".join(left)
    response = RedirectResponse(back, status_code=303)
    flash.give(response, board.csrf, message[:1].upper() + message[1:] + ".")
    return response
