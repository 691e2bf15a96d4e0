"""The agent CLIs on the command line: `tireless agents` (the profiles `tireless work --agent`
knows, whether each one's program is found here, `--agent-bin` overriding the path, its version,
the lanes that name it, and what a lane lacks for it: an egress allowlist, the upstream it reaches
its model by), and what `tireless work` checks of its agent before it claims anything."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tireless.cli.session import UsageError, connect, emit
from tireless.store import JobStore

COMMAND = "command"
"""tireless.runner.agents.COMMAND, without importing the runner for every command."""


def agent_bins(given: list[str], default: str | None) -> dict[str, str]:
    """`--agent-bin [PROFILE=]PATH` by profile (a bare PATH is `default`'s); UsageError when a
    bare PATH has no profile to go with, or names an unknown one."""
    from tireless.runner.agents import PROFILES

    found = {}
    for item in given:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = default or "", item
        if name not in PROFILES:
            raise UsageError(
                f"--agent-bin {item}: PROFILE=PATH, or PATH with --agent PROFILE (one of"
                f" {', '.join(PROFILES)})"
            )
        found[name] = path
    return found


def cmd_agents(args: argparse.Namespace) -> int:
    from tireless.runner.agents import PROFILES, find_program, version_of

    bins = agent_bins(args.agent_bin, None)
    upstreams = {item.partition("=")[0] for item in args.upstream}
    with connect(args) as conn:
        store = JobStore(conn)
        lanes = args.lane or list(store.lane_agents())
        named = {lane: store.lane_agent(lane) for lane in lanes}
        networks = {lane: store.lane_network(lane) for lane in lanes}
    rows: list[dict[str, Any]] = []
    for name, profile in PROFILES.items():
        program = find_program(profile, bins.get(name))
        version = None if program is None else version_of(program)
        its_lanes = [lane for lane in lanes if named[lane] == name or args.lane]
        lacks = []
        if not upstreams & set(profile.vias):
            lacks.append("an upstream: " + " or ".join(f"--upstream {n}=URL" for n in profile.vias))
        for lane in its_lanes:
            if networks[lane] is None:
                lacks.append(
                    f"lane {lane}: an egress allowlist (tireless lane allow-net {lane} --none),"
                    " without which it gets no upstream"
                )
        rows.append(
            {
                "profile": name, "program": program or profile.program, "found": program is not None
                and version is not None, "version": version, "package": profile.package,
                "lanes": [lane for lane in lanes if named[lane] == name], "lacks": lacks,
            }
        )  # fmt: skip
    lines = []
    for row in rows:
        found = (
            f"{row['version']} ({row['program']})"
            if row["found"]
            else f"not found ({row['program']})"
        )
        lanes_text = f"; lanes: {', '.join(row['lanes'])}" if row["lanes"] else ""
        lines.append(f"{row['profile']}: {found}, from {row['package']}{lanes_text}")
        lines += [f"  lacks {lack}" for lack in row["lacks"]]
    emit(args, rows, "\n".join(lines))
    return 0


def work_program(profile: str, command: list[str], bins: dict[str, str]) -> str:
    """The program `tireless work` checks before claiming: COMMAND's, or the profile's CLI's."""
    from tireless.runner.agents import CHOICES, PROFILES, find_program

    if profile not in CHOICES:
        raise UsageError(f"--agent: one of {', '.join(CHOICES)}, got {profile!r}")
    if profile == COMMAND:
        if not command:
            raise UsageError("work needs a COMMAND after -- (or --agent PROFILE)")
        return command[0]
    found = find_program(PROFILES[profile], bins.get(profile))
    if found is None:
        raise UsageError(
            f"--agent {profile}: {PROFILES[profile].program!r} is not on PATH (install"
            f" {PROFILES[profile].package}, or give --agent-bin PATH)"
        )
    return found


def lanes_program(args: argparse.Namespace, bins: dict[str, str]) -> str:
    """A worker without COMMAND or --agent serves lanes that each name a profile (tireless lane
    agent): the program of the first, each one's found (UsageError naming a lane that names none
    or a program missing)."""
    with connect(args) as conn:
        store = JobStore(conn)
        named = {lane: store.lane_agent(lane) for lane in args.lane}
    programs = []
    for lane, profile in named.items():
        if profile in (None, COMMAND):
            raise UsageError(
                "work needs a COMMAND after -- (or --agent PROFILE, or lanes that each name one:"
                f" tireless lane agent LANE PROFILE): lane {lane} names none"
            )
        programs.append(work_program(profile, [], bins))
    return programs[0]


def log_agent(worker: str, profile: str, program: str) -> None:
    from tireless.runner.agents import version_of

    version = version_of(program) or "its version unknown"
    print(f"tireless work: {worker}: agent {profile}: {program} ({version})", file=sys.stderr)
