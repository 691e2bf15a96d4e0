"""The calls of a lane's and a repository's settings: capacity, pause and the breaker, time
limits, the egress allowlist, the limits on an attempt and what it used, the agent profile, the
daily budgets, and a repository's capacity, budgets and delivery policy. Each builder returns its
`Call` as tireless.store.calls' do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta
from typing import Any
from uuid import UUID

from psycopg.rows import kwargs_row, tuple_row

from tireless.models import (
    AttemptUsage,
    Lane,
    LaneLimits,
    RepoDelivery,
    RepoLimit,
    SpendBudget,
)
from tireless.store.calls import (
    _LANE,
    _REPO_LIMIT,
    LANE_COLUMNS,
    REPO_DELIVERY_COLUMNS,
    REPO_LIMIT_COLUMNS,
    Call,
    _nothing,
    _only,
    _repo,
    _returning,
    _value,
)

# Lanes
SET_LANE_CAPACITY = _returning(
    LANE_COLUMNS, "tireless.set_lane_capacity(lane => %(lane)s, capacity => %(capacity)s)"
)


def set_lane_capacity(lane: str, capacity: int | None) -> Call[Lane, Lane]:
    return Call(SET_LANE_CAPACITY, {"lane": lane, "capacity": capacity}, _LANE, _only)


PAUSE_LANE = _returning(LANE_COLUMNS, "tireless.pause_lane(lane => %(lane)s)")


def pause_lane(lane: str) -> Call[Lane, Lane]:
    return Call(PAUSE_LANE, {"lane": lane}, _LANE, _only)


RESUME_LANE = _returning(LANE_COLUMNS, "tireless.resume_lane(lane => %(lane)s)")


def resume_lane(lane: str) -> Call[Lane, Lane]:
    return Call(RESUME_LANE, {"lane": lane}, _LANE, _only)


RESET_LANE_BREAKER = _returning(LANE_COLUMNS, "tireless.reset_lane_breaker(lane => %(lane)s)")


def reset_lane_breaker(lane: str) -> Call[Lane, Lane]:
    return Call(RESET_LANE_BREAKER, {"lane": lane}, _LANE, _only)


SET_LANE_MAX_RUN = _returning(
    LANE_COLUMNS, "tireless.set_lane_max_run(lane => %(lane)s, max_run => %(max_run)s)"
)


def set_lane_max_run(lane: str, max_run: timedelta | None) -> Call[Lane, Lane]:
    return Call(SET_LANE_MAX_RUN, {"lane": lane, "max_run": max_run}, _LANE, _only)


SET_LANE_NETWORK = "SELECT tireless.set_lane_network(lane => %(lane)s, hosts => %(hosts)s)"


def set_lane_network(lane: str, hosts: Sequence[str] | None) -> Call[Any, list[str] | None]:
    params = {"lane": lane, "hosts": None if hosts is None else list(hosts)}
    return Call(SET_LANE_NETWORK, params, tuple_row, _value)


LANE_NETWORK = "SELECT tireless.lane_network(lane => %(lane)s)"


def lane_network(lane: str) -> Call[Any, list[str] | None]:
    return Call(LANE_NETWORK, {"lane": lane}, tuple_row, _value)


SET_LANE_LIMITS = (
    "SELECT tireless.set_lane_limits(lane => %(lane)s, memory => %(memory)s, cpus => %(cpus)s,"
    " pids => %(pids)s, disk => %(disk)s)"
)


def set_lane_limits(
    lane: str,
    memory: str | None = None,
    cpus: str | None = None,
    pids: str | None = None,
    disk: str | None = None,
) -> Call[Any, LaneLimits]:
    params = {"lane": lane, "memory": memory, "cpus": cpus, "pids": pids, "disk": disk}
    return Call(SET_LANE_LIMITS, params, tuple_row, _limits)


LANE_LIMITS = "SELECT tireless.lane_limits(lane => %(lane)s)"


def lane_limits(lane: str) -> Call[Any, LaneLimits]:
    return Call(LANE_LIMITS, {"lane": lane}, tuple_row, _limits)


def _limits(rows: list[tuple[Any, ...]]) -> LaneLimits:
    return LaneLimits.from_json(rows[0][0])


RECORD_ATTEMPT_USAGE = (
    "SELECT tireless.record_attempt_usage(job_id => %(job_id)s, worker => %(worker)s,"
    " peak_memory => %(peak_memory)s, cpu_seconds => %(cpu_seconds)s,"
    " peak_processes => %(peak_processes)s, workspace_bytes => %(workspace_bytes)s,"
    " limit_reached => %(limit_reached)s, token => %(token)s)"
)


def record_attempt_usage(
    job_id: int, worker: str, usage: AttemptUsage, token: UUID | None
) -> Call[Any, None]:
    params = {"job_id": job_id, "worker": worker, "token": token} | asdict(usage)
    return Call(RECORD_ATTEMPT_USAGE, params, tuple_row, _nothing)


SET_LANE_AGENT = "SELECT tireless.set_lane_agent(lane => %(lane)s, agent => %(agent)s)"


def set_lane_agent(lane: str, agent: str | None) -> Call[Any, str | None]:
    return Call(SET_LANE_AGENT, {"lane": lane, "agent": agent}, tuple_row, _value)


LANE_AGENT = "SELECT tireless.lane_agent(lane => %(lane)s)"


def lane_agent(lane: str) -> Call[Any, str | None]:
    return Call(LANE_AGENT, {"lane": lane}, tuple_row, _value)


LANE_AGENTS = "SELECT lane, agent FROM tireless.lane_agents()"


def lane_agents() -> Call[tuple[Any, ...], dict[str, str]]:
    return Call(LANE_AGENTS, {}, tuple_row, lambda rows: {lane: agent for lane, agent in rows})


SET_LANE_STALL_AFTER = _returning(
    LANE_COLUMNS, "tireless.set_lane_stall_after(lane => %(lane)s, stall_after => %(stall_after)s)"
)


def set_lane_stall_after(lane: str, stall_after: timedelta | None) -> Call[Lane, Lane]:
    return Call(SET_LANE_STALL_AFTER, {"lane": lane, "stall_after": stall_after}, _LANE, _only)


SET_LANE_BUDGET = _returning(
    LANE_COLUMNS,
    "tireless.set_lane_budget(lane => %(lane)s, runs_per_day => %(runs_per_day)s,"
    " agent_time_per_day => %(agent_time_per_day)s, tokens_per_day => %(tokens_per_day)s,"
    " cost_per_day => %(cost_per_day)s, tokens_per_job => %(tokens_per_job)s,"
    " cost_per_job => %(cost_per_job)s, tokens_per_attempt => %(tokens_per_attempt)s,"
    " cost_per_attempt => %(cost_per_attempt)s, tokens_per_issue => %(tokens_per_issue)s,"
    " cost_per_issue => %(cost_per_issue)s)",
)


def set_lane_budget(
    lane: str,
    runs_per_day: int | None,
    agent_time_per_day: timedelta | None,
    spend: SpendBudget | None = None,
) -> Call[Lane, Lane]:
    params = {
        "lane": lane,
        "runs_per_day": runs_per_day,
        "agent_time_per_day": agent_time_per_day,
        **asdict(spend or SpendBudget()),
    }
    return Call(SET_LANE_BUDGET, params, _LANE, _only)


SET_REPO_CAPACITY = _returning(
    REPO_LIMIT_COLUMNS,
    "tireless.set_repo_capacity(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " capacity => %(capacity)s)",
)


def set_repo_capacity(
    forge: str, owner: str, repo: str, capacity: int | None
) -> Call[RepoLimit, RepoLimit]:
    params = {"forge": forge, "owner": owner, "repo": repo, "capacity": capacity}
    return Call(SET_REPO_CAPACITY, params, _REPO_LIMIT, _only)


SET_REPO_BUDGET = _returning(
    REPO_LIMIT_COLUMNS,
    "tireless.set_repo_budget(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " runs_per_day => %(runs_per_day)s, agent_time_per_day => %(agent_time_per_day)s,"
    " tokens_per_day => %(tokens_per_day)s, cost_per_day => %(cost_per_day)s,"
    " tokens_per_job => %(tokens_per_job)s, cost_per_job => %(cost_per_job)s,"
    " tokens_per_attempt => %(tokens_per_attempt)s, cost_per_attempt => %(cost_per_attempt)s,"
    " tokens_per_issue => %(tokens_per_issue)s, cost_per_issue => %(cost_per_issue)s)",
)


def set_repo_budget(
    forge: str,
    owner: str,
    repo: str,
    runs_per_day: int | None,
    agent_time_per_day: timedelta | None,
    spend: SpendBudget | None = None,
) -> Call[RepoLimit, RepoLimit]:
    params = {
        "forge": forge,
        "owner": owner,
        "repo": repo,
        "runs_per_day": runs_per_day,
        "agent_time_per_day": agent_time_per_day,
        **asdict(spend or SpendBudget()),
    }
    return Call(SET_REPO_BUDGET, params, _REPO_LIMIT, _only)


SET_REPO_DELIVERY = _returning(
    REPO_DELIVERY_COLUMNS,
    "tireless.set_repo_delivery(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " protected => %(protected)s::text[], allowed => %(allowed)s::text[],"
    " allow_ci => %(allow_ci)s, max_files => %(max_files)s, max_bytes => %(max_bytes)s)",
)


def set_repo_delivery(
    forge: str,
    owner: str,
    repo: str,
    protected: Sequence[str] | None = None,
    allowed: Sequence[str] | None = None,
    allow_ci: bool | None = None,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> Call[RepoDelivery, RepoDelivery]:
    params = _repo(forge, owner, repo) | {
        "protected": None if protected is None else list(protected),
        "allowed": None if allowed is None else list(allowed),
        "allow_ci": allow_ci,
        "max_files": max_files,
        "max_bytes": max_bytes,
    }
    return Call(SET_REPO_DELIVERY, params, kwargs_row(RepoDelivery.from_row), _only)


DELIVERY_POLICY = _returning(
    REPO_DELIVERY_COLUMNS,
    "tireless.delivery_policy(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)",
)


def delivery_policy(forge: str, owner: str, repo: str) -> Call[RepoDelivery, RepoDelivery]:
    params = _repo(forge, owner, repo)
    return Call(DELIVERY_POLICY, params, kwargs_row(RepoDelivery.from_row), _only)
