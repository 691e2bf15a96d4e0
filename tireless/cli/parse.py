"""The `tireless` command line: its commands, arguments and help, each command mapped to its
function in `tireless.cli.commands`; and the argument types (durations, counts, signals)."""

from __future__ import annotations

import argparse
import re
import signal
from collections.abc import Callable
from datetime import timedelta
from typing import NoReturn
from uuid import UUID

from tireless.calls import DEFAULT_LEASE, DEFAULT_POLL_LEASE
from tireless.cli.commands import (
    cmd_claim,
    cmd_enqueue,
    cmd_forge,
    cmd_jobs,
    cmd_migrate,
    cmd_poll,
    cmd_prune,
    cmd_renew,
    cmd_repos,
    cmd_rerun,
    cmd_show,
    cmd_status,
    cmd_sweep,
    cmd_track,
    cmd_transition,
    cmd_web,
    cmd_work,
)
from tireless.cli.session import USAGE
from tireless.forge.poll import default_poller_name
from tireless.models import JobState

DESCRIPTION = """The `tireless` command (also `python -m tireless`): see and steer the store from a shell.

Exit codes: 0 done; 1 the database refused or gave up (stderr: `tireless: SQLSTATE: message`,
then its DETAIL and HINT lines; a lock timeout or a cancelled statement is one of these);
2 usage; 3 nothing to do (claim found no job, renew found the claim lost); 4 cannot reach the
database (the connection failed or was lost).
"""
"""`tireless --help`: what the command is for, and its exit codes."""


def duration(text: str) -> timedelta:
    """`90`, `90s`, `500ms`, `10m`, `2h`, `90d`: a lease or an interval."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 30s, 10m, 1h, 90d)")
    unit = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
    return timedelta(**{unit[match.group(2) or "s"]: float(match.group(1))})


def seconds(text: str) -> float:
    return duration(text).total_seconds()


def count(text: str) -> int:
    """A number of rows: 0 or more."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"not a count of 0 or more: {text!r}")
    return int(text)


def drain_signal(text: str) -> signal.Signals:
    """`SIGUSR1`, `USR1`, `SIGHUP`, ...: a signal that asks `work` to drain (not one that stops it)."""
    name = text.strip().upper()
    name = name if name.startswith("SIG") else f"SIG{name}"
    chosen = signal.Signals.__members__.get(name)
    if chosen is None or chosen in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL, signal.SIGSTOP):
        raise argparse.ArgumentTypeError(
            f"not a signal to drain on: {text!r} (try SIGUSR1; SIGTERM and SIGINT stop the worker)"
        )
    return chosen


class Parser(argparse.ArgumentParser):
    """Usage errors in one line (exit 2), like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    def common(defaults: bool) -> Parser:
        # Given before or after the command; a subcommand's default must not hide the top's value.
        flags = Parser(add_help=False)
        none = None if defaults else argparse.SUPPRESS
        flags.add_argument(
            "--database",
            metavar="URL",
            default=none,
            help="libpq URL or connection string (default: $DATABASE_URL)",
        )
        flags.add_argument(
            "--json",
            action="store_true",
            default=False if defaults else argparse.SUPPRESS,
            help="print JSON instead of text",
        )
        return flags

    top = Parser(
        prog="tireless",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common(defaults=True)],
    )
    commands = top.add_subparsers(dest="command_name", required=True, metavar="COMMAND")

    def command(
        name: str, run: Callable[[argparse.Namespace], int], help: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name, help=help, description=help, parents=[common(defaults=False)]
        )
        sub.set_defaults(run=run)
        return sub

    command("migrate", cmd_migrate, "apply the migrations not yet applied")
    for name, help in (
        ("track", "start tracking a repository"),
        ("untrack", "stop tracking a repository"),
    ):
        sub = command(name, cmd_track, help)
        sub.add_argument("forge", help="the forge's short name, e.g. gitea")
        sub.add_argument("owner")
        sub.add_argument("repo")
    command("repos", cmd_repos, "the tracked repositories: last poll, last error, next poll")
    forge = command("forge", cmd_forge, "the forge registry: add, list, remove")
    actions = forge.add_subparsers(dest="forge_action", required=True, metavar="ACTION")
    sub = actions.add_parser(
        "add", help="register a forge (or change its kind or URL)", parents=[common(False)]
    )
    sub.add_argument("name", help="the forge's short name, as in issue keys (e.g. gitea)")
    sub.add_argument("--kind", required=True, choices=["gitea", "forgejo", "github"])
    sub.add_argument(
        "--url",
        required=True,
        help="Gitea/Forgejo: the web root; GitHub: the API root (https://api.github.com)",
    )
    actions.add_parser("list", help="the registered forges", parents=[common(False)])
    sub = actions.add_parser("remove", help="unregister a forge", parents=[common(False)])
    sub.add_argument("name")
    sub = command("poll", cmd_poll, "read the due repositories from their forges")
    when = sub.add_mutually_exclusive_group()
    when.add_argument(
        "--once", action="store_true", help="one round, then exit (1: a repository failed)"
    )
    when.add_argument(
        "--every",
        type=seconds,
        metavar="SECONDS",
        help="a round every SECONDS until SIGINT/SIGTERM",
    )
    sub.add_argument(
        "--poller", default=default_poller_name(), help="this poller's name (default host:pid)"
    )
    sub.add_argument(
        "--timeout",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="give a request up after this long (default 30); a repository's read after four times that",
    )
    sub.add_argument(
        "--lease",
        type=duration,
        default=DEFAULT_POLL_LEASE,
        help="the poll lease, renewed every third of it while this poller lives: a dead poller's"
        " repositories are read by another within it (default 1m)",
    )
    sub = command("rerun", cmd_rerun, "a new job for an issue with no live job (admin)")
    sub.add_argument("forge")
    sub.add_argument("owner")
    sub.add_argument("repo")
    sub.add_argument("number", type=int)
    sub = command("enqueue", cmd_enqueue, "enqueue a JSON array of issues; print the jobs created")
    sub.add_argument("file", nargs="?", default="-", help="a JSON file (default: stdin)")

    sub = command("claim", cmd_claim, "claim the oldest claimable job in the lanes (exit 3: none)")
    sub.add_argument("--worker", required=True)
    sub.add_argument(
        "--lane", action="append", required=True, help="a lane to serve (repeat for several)"
    )
    sub.add_argument(
        "--lease", type=duration, default=DEFAULT_LEASE, help="e.g. 30s, 10m (default 10m)"
    )
    sub = command(
        "renew", cmd_renew, "extend the lease of a claim you hold (exit 3: the claim was lost)"
    )
    sub.add_argument("job", type=int)
    sub.add_argument("--worker", required=True)
    sub.add_argument("--token", type=UUID, help="the claim's token (fencing)")
    sub.add_argument("--lease", type=duration, default=DEFAULT_LEASE)
    sub = command(
        "transition", cmd_transition, "move a job: deliver, fail, release to pending, cancel"
    )
    sub.add_argument("job", type=int)
    sub.add_argument("state", choices=[str(s) for s in JobState])
    sub.add_argument("--worker", help="the holder (needed to leave claimed)")
    sub.add_argument("--token", type=UUID, help="the claim's token (fencing)")
    sub.add_argument("--note")
    sub = command("sweep", cmd_sweep, "return expired claims to pending (or fail them by budget)")
    sub.add_argument(
        "--every",
        type=seconds,
        metavar="SECONDS",
        help="keep sweeping at this interval until SIGINT/SIGTERM",
    )

    command(
        "status",
        cmd_status,
        "lanes by state: queue, claims past their lease, paused or tripped lanes",
    )
    sub = command("jobs", cmd_jobs, "list jobs, oldest first")
    sub.add_argument("--state", choices=[str(s) for s in JobState])
    sub.add_argument("--lane")
    sub.add_argument("--repo", metavar="OWNER/REPO")
    sub.add_argument(
        "--after", type=int, default=0, metavar="ID", help="only jobs with a larger id"
    )
    sub.add_argument("--limit", type=count, default=100)
    sub = command("show", cmd_show, "a job and its history")
    sub.add_argument("job", type=int)

    sub = command(
        "prune", cmd_prune, "(admin) delete finished jobs unchanged for a while, with their history"
    )
    sub.add_argument(
        "--older-than",
        type=duration,
        required=True,
        metavar="DURATION",
        help="last changed longer ago than this, e.g. 90d",
    )
    sub.add_argument("--dry-run", action="store_true", help="count what would go; delete nothing")

    sub = command("work", cmd_work, "claim jobs and run COMMAND on each under a renewed lease")
    sub.add_argument("--worker", required=True, help="this worker's name (unique per process)")
    sub.add_argument(
        "--lane", action="append", required=True, help="a lane to serve (repeat for several)"
    )
    sub.add_argument(
        "--lease",
        type=duration,
        default=DEFAULT_LEASE,
        help="lease length, renewed at a third (default 10m)",
    )
    sub.add_argument(
        "--once", action="store_true", help="run at most one job, then exit (3: none to claim)"
    )
    sub.add_argument(
        "--poll",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="longest wait between claims when idle (default 30)",
    )
    sub.add_argument(
        "--grace",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="from SIGTERM to SIGKILL when stopping COMMAND (default 10)",
    )
    sub.add_argument(
        "--drain-on",
        type=drain_signal,
        metavar="SIGNAL",
        help="on this signal (e.g. SIGUSR1) finish the running job, claim no more, exit 0",
    )
    sub.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")

    sub = command("web", cmd_web, "the dashboard, /metrics and the forge webhooks (tireless[web])")
    sub.add_argument(
        "--bind",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:8080: this machine only; port 0: any free port)",
    )
    return top
