"""`/metrics` in the Prometheus text format (0.0.4). Live figures come from tireless.lane_status
and tireless.repo_status; finished jobs are counters from tireless.finished_jobs: what the
sweeper's and poller's roll-up counted plus the history written since, so a scrape writes nothing
(a hot standby answers it); the agents' network from tireless.lane_egress; the lanes' limits from
tireless.lane_status and what their attempts used from tireless.lane_usage; their model usage
from tireless.agent_usage; what became of tireless's pull requests from tireless.pull_outcomes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tireless.errors import TirelessError
from tireless.store import reads
from tireless.web import outcomes
from tireless.web.dashboard import dashboard_of

BREAKER_STATES = ("closed", "half-open", "open")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def label_value(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Exposition:
    """Metric families, each with its HELP and TYPE lines once, then its samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(
        self, name: str, kind: str, help: str, samples: Iterable[tuple[Mapping[str, Any], float]]
    ) -> None:
        self.lines += [f"# HELP {name} {help}", f"# TYPE {name} {kind}"]
        for labels, value in samples:
            text = ",".join(f'{key}="{label_value(v)}"' for key, v in labels.items())
            number = str(int(value)) if float(value).is_integer() else repr(float(value))
            self.lines.append(f"{name}{{{text}}} {number}" if text else f"{name} {number}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def lane_families(out: Exposition, lanes: list[dict[str, Any]], now: datetime) -> None:
    out.family(
        "tireless_jobs",
        "gauge",
        "Live jobs by lane and state (pending, ready: pending and claimable now, waiting: pending"
        " and waiting for an open dependency, claimed).",
        (
            ({"lane": lane["lane"], "state": state}, lane[state])
            for lane in lanes
            for state in ("pending", "ready", "waiting", "claimed")
        ),
    )
    out.family(
        "tireless_oldest_pending_seconds",
        "gauge",
        "Age of the oldest pending job of the lane (0 when none is pending).",
        (({"lane": lane["lane"]}, lane["oldest_pending_seconds"] or 0) for lane in lanes),
    )
    out.family(
        "tireless_claims_past_lease",
        "gauge",
        "Claimed jobs whose lease has run out, waiting for the sweeper.",
        (({"lane": lane["lane"]}, lane["past_lease"]) for lane in lanes),
    )
    out.family(
        "tireless_lane_breaker",
        "gauge",
        "The lane's circuit breaker: 1 for the state it is in (closed, half-open, open).",
        (
            ({"lane": lane["lane"], "state": state}, 1 if lane["breaker"] == state else 0)
            for lane in lanes
            for state in BREAKER_STATES
        ),
    )
    out.family(
        "tireless_lane_breaker_cooldown_seconds",
        "gauge",
        "Seconds until an open breaker lets the lane hand out work again (0 unless open).",
        (
            (
                {"lane": lane["lane"]},
                max(0.0, (lane["tripped_until"] - now).total_seconds())
                if lane["tripped_until"]
                else 0,
            )
            for lane in lanes
        ),
    )
    out.family(
        "tireless_lane_runs_today",
        "gauge",
        "Claims in the lane today (the UTC day), counted against its daily budget of runs:"
        " lanes with one only.",
        (
            ({"lane": lane["lane"]}, lane["runs_today"])
            for lane in lanes
            if lane["runs_today"] is not None  # counted under a budget of runs only (lane_budget)
        ),
    )
    out.family(
        "tireless_lane_agent_seconds_today",
        "gauge",
        "Seconds the lane's attempts that ended today (UTC) held their claims.",
        (({"lane": lane["lane"]}, lane["agent_seconds_today"]) for lane in lanes),
    )
    out.family(
        "tireless_lane_budget_reset_seconds",
        "gauge",
        "Seconds until a spent daily budget resets at midnight UTC (0 while none is spent).",
        (
            (
                {"lane": lane["lane"]},
                max(0.0, (lane["budget_resets_at"] - now).total_seconds())
                if lane["budget_resets_at"]
                else 0,
            )
            for lane in lanes
        ),
    )
    out.family(
        "tireless_lane_paused",
        "gauge",
        "1 while the lane is paused.",
        (({"lane": lane["lane"]}, 1 if lane["paused"] else 0) for lane in lanes),
    )


def egress_families(out: Exposition, lanes: list[dict[str, Any]]) -> None:
    out.family(
        "tireless_lane_egress_refusals_total",
        "counter",
        "Requests the lane's agents were refused by the runner's egress proxy (over the jobs the"
        " store keeps).",
        (({"lane": lane["lane"]}, lane["refusals"]) for lane in lanes),
    )
    out.family(
        "tireless_lane_egress_bytes_total",
        "counter",
        "Bytes the lane's agents received (in) and sent (out) through the runner's proxy and"
        " upstream gateways (over the jobs the store keeps).",
        (
            ({"lane": lane["lane"], "direction": direction}, lane[f"bytes_{direction}"])
            for lane in lanes
            for direction in ("in", "out")
        ),
    )


LIMITS = (
    ("memory_bytes", "memory_limit"),
    ("cpus", "cpu_limit"),
    ("processes", "pids_limit"),
    ("disk_bytes", "disk_limit"),
)


def usage_families(
    out: Exposition, lanes: list[dict[str, Any]], usage: list[dict[str, Any]]
) -> None:
    out.family(
        "tireless_lane_limit",
        "gauge",
        "The lane's limit on one attempt, by resource (memory_bytes, cpus, processes, disk_bytes);"
        " absent: no limit.",
        (
            ({"lane": lane["lane"], "resource": resource}, float(lane[column]))
            for lane in lanes
            for resource, column in LIMITS
            if lane.get(column) is not None
        ),
    )
    out.family(
        "tireless_lane_attempt_cpu_seconds_total",
        "counter",
        "CPU seconds the lane's measured attempts used (over the jobs the store keeps).",
        (({"lane": u["lane"]}, u["cpu_seconds"]) for u in usage),
    )
    out.family(
        "tireless_lane_attempt_peak_memory_bytes",
        "gauge",
        "The largest peak memory of one of the lane's attempts (over the jobs the store keeps).",
        (({"lane": u["lane"]}, u["peak_memory"]) for u in usage if u["peak_memory"] is not None),
    )
    out.family(
        "tireless_lane_attempt_peak_processes",
        "gauge",
        "The most processes one of the lane's attempts had alive at once (over the kept jobs).",
        (
            ({"lane": u["lane"]}, u["peak_processes"])
            for u in usage
            if u["peak_processes"] is not None
        ),
    )
    out.family(
        "tireless_lane_limit_stops_total",
        "counter",
        "Attempts of the lane stopped by a limit (memory, pids, disk), over the jobs the store keeps.",
        (
            ({"lane": u["lane"], "limit": limit}, u[f"{limit}_stops"])
            for u in usage
            for limit in ("memory", "pids", "disk")
        ),
    )


TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")


def model_families(out: Exposition, usage: list[dict[str, Any]]) -> None:
    def key(row: Mapping[str, Any], **more: str) -> dict[str, Any]:
        repository = f"{row['forge']}/{row['owner']}/{row['repo']}"
        return {"lane": row["lane"], "repository": repository, "model": row["model"], **more}

    out.family(
        "tireless_agent_tokens_total",
        "counter",
        "Tokens the agents' model answers used, as the runner's gateway read them, by kind (input,"
        " output, cache_read, cache_write; over the jobs the store keeps).",
        ((key(row, kind=kind), row[f"{kind}_tokens"]) for row in usage for kind in TOKEN_KINDS),
    )
    out.family(
        "tireless_agent_cost_total",
        "counter",
        "USD the agents' model answers cost at the models' prices, by kind of token (an unpriced"
        " model has no sample; over the jobs the store keeps).",
        (
            (key(row, kind=kind), row[f"{kind}_cost"])
            for row in usage
            for kind in TOKEN_KINDS
            if row[f"{kind}_cost"] is not None
        ),
    )
    out.family(
        "tireless_agent_requests_total",
        "counter",
        "Model requests the agents made through the runner's gateway; unread: answers whose usage"
        " could not be read (their tokens are unknown).",
        (
            (key(row, answer=answer), row[column])
            for row in usage
            for answer, column in (("all", "requests"), ("unread", "unread"))
        ),
    )


def outcome_families(out: Exposition, rows: list[dict[str, Any]]) -> None:
    """Outcomes per agent over every pull request the store keeps (tireless.pull_outcomes)."""

    def key(row: Mapping[str, Any], **more: str) -> dict[str, Any]:
        repository = f"{row['forge']}/{row['owner']}/{row['repo']}"
        return {"lane": row["lane"], "repository": repository, **more}

    out.family(
        "tireless_pull_requests_total",
        "counter",
        "Pull requests tireless opened, by the lane of the job that opened them and what became of"
        " them (merged, closed unmerged, open), as the poller last read the forge.",
        (
            (key(row, outcome=outcome), row[column])
            for row in rows
            for outcome, column in (
                ("merged", "merged"),
                ("closed", "closed"),
                ("open", "still_open"),
            )
        ),
    )
    out.family(
        "tireless_pull_request_revisions_total",
        "counter",
        "Revision jobs the conversation made for tireless's pull requests (reviews, commands, failed"
        " checks).",
        ((key(row), row["revisions"]) for row in rows),
    )
    out.family(
        "tireless_merged_pull_seconds_total",
        "counter",
        "Seconds from opening to merge, summed over the merged pull requests (divide by"
        ' tireless_pull_requests_total{outcome="merged"} for the mean).',
        ((key(row), row["merge_seconds_sum"]) for row in rows),
    )
    out.family(
        "tireless_merged_pull_tokens_total",
        "counter",
        "Tokens every job of a merged pull request's issue used before its merge.",
        ((key(row), row["merged_tokens"]) for row in rows),
    )
    out.family(
        "tireless_merged_pull_cost_total",
        "counter",
        "USD every job of a merged pull request's issue cost before its merge (priced models only).",
        ((key(row), row["merged_cost_usd"]) for row in rows),
    )


def repo_families(out: Exposition, repos: list[dict[str, Any]]) -> None:
    def key(repo: Mapping[str, Any]) -> dict[str, Any]:
        return {"forge": repo["forge"], "owner": repo["owner"], "repo": repo["repo"]}

    out.family(
        "tireless_repo_poll_failures",
        "gauge",
        "Consecutive failed polls of the repository (0 after a good read).",
        ((key(r), r["consecutive_failures"] or 0) for r in repos),
    )
    out.family(
        "tireless_repo_poll_error",
        "gauge",
        "1 while the repository's last poll failed (its last_error is set).",
        ((key(r), 1 if r["last_error"] else 0) for r in repos),
    )
    out.family(
        "tireless_repo_mirror_backlog",
        "gauge",
        "Issues of the repository still waiting for the mirror's forge write (labels or comment).",
        ((key(r), r["mirror_backlog"]) for r in repos),
    )
    out.family(
        "tireless_repo_mirror_error",
        "gauge",
        "1 while a mirror write waiting on the repository last failed (its mirror_error is set).",
        ((key(r), 1 if r["mirror_error"] else 0) for r in repos),
    )
    out.family(
        "tireless_repo_skipped_issues",
        "gauge",
        "Issues of the repository its polls leave out as malformed (tireless.issue_skip).",
        ((key(r), r["skipped_issues"]) for r in repos),
    )


async def scrape(request: Request) -> Response:
    board = dashboard_of(request)
    now = (await board.rows("SELECT now() AS now"))[0]["now"]
    out = Exposition()
    lanes = await board.rows(reads.LANES)
    lane_families(out, lanes, now)
    out.family(
        "tireless_jobs_finished_total",
        "counter",
        "Jobs finished by lane and outcome (delivered, failed, cancelled), counted from history.",
        (
            ({"lane": row["lane"], "outcome": row["outcome"]}, row["jobs"])
            for row in await board.rows(reads.FINISHED)
        ),
    )
    egress_families(out, await board.rows(reads.LANE_EGRESS))
    usage_families(out, lanes, await board.rows(reads.LANE_USAGE))
    model_families(out, await board.rows(reads.AGENT_USAGE))
    outcome_families(out, await board.rows(outcomes.PULL_OUTCOMES, {"since": None}))
    try:
        repos = await board.rows(reads.REPOS)
    except TirelessError:
        repos = []  # this role may not read the repositories
    repo_families(out, repos)
    return Response(out.text(), media_type=CONTENT_TYPE)
