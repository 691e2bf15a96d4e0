"""The `tireless` command line: its commands, arguments and help, each command mapped to its
function in `tireless.cli.commands`; and the argument types (durations, counts, signals)."""

from __future__ import annotations

import argparse
import re
import signal
from collections.abc import Callable
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import NoReturn
from uuid import UUID

from tireless.cli.agents import cmd_agents
from tireless.cli.commands import (
    cmd_cancel,
    cmd_claim,
    cmd_enqueue,
    cmd_jobs,
    cmd_lane,
    cmd_migrate,
    cmd_prune,
    cmd_renew,
    cmd_repo,
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
from tireless.cli.forges import cmd_forge, cmd_poll
from tireless.cli.ledger import add_price_arguments, add_spend_budget_arguments, cmd_model
from tireless.cli.outcomes import add_outcome_arguments, cmd_outcomes
from tireless.cli.session import PRUNE_MAX, USAGE, duration
from tireless.forge.check import MAX_REPOS
from tireless.forge.poll import default_poller_name
from tireless.models import JobKind, JobState
from tireless.store.calls import DEFAULT_LEASE, DEFAULT_POLL_LEASE

DESCRIPTION = """The `tireless` command (also `python -m tireless`): see and steer the store from a shell.

Exit codes: 0 done; 1 the database refused or gave up (stderr: `tireless: SQLSTATE: message`,
then its DETAIL and HINT lines; a lock timeout or a cancelled statement is one of these);
2 usage (and `prune` asked for --yes); 3 nothing to do (claim found no job, renew found the claim
lost); 4 cannot reach the database (the connection failed or was lost); 5 `work`: COMMAND cannot
be started (the message names its path; a job claimed meanwhile is given back).
"""
"""`tireless --help`: what the command is for, and its exit codes."""
VERSION_HELP = "print the version and exit"


def seconds(text: str) -> float:
    return duration(text).total_seconds()


SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size(text: str) -> int | None:
    """`500M`, `10G`, `1T` (powers of 1024), or `none` for no bound."""
    if text.strip().lower() == "none":
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT])", text.strip().upper())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"not a size: {text!r}: give a number and its unit, e.g. 500M or 10G (K, M, G, T),"
            " or none"
        )
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2)])


def delivery_limit(parse: Callable[[str], int | None]) -> Callable[[str], int]:
    """A repository's limit of a change (`repo delivery --max-files`, `--max-bytes`): what `parse`
    reads, or `default` (0: back to the runner's default)."""

    def read(text: str) -> int:
        if text.strip().lower() == "default":
            return 0
        value = parse(text)
        if not value:
            raise argparse.ArgumentTypeError(f"not a positive limit: {text!r} (or default)")
        return value

    return read


def capacity(text: str) -> int | None:
    """A lane's capacity: a count of 0 or more, or `none` for no limit."""
    return None if text.strip().lower() == "none" else count(text)


def limit(text: str) -> timedelta | None:
    """A time limit or budget: a duration, or `none` for no limit."""
    return None if text.strip().lower() == "none" else duration(text)


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


def agent_arguments(sub: argparse.ArgumentParser, work: bool = True) -> None:
    """`--agent` (work only) and `--agent-bin` (docs/agents.md)."""
    if work:
        sub.add_argument(
            "--agent",
            default="command",
            metavar="PROFILE",
            help="the agent CLI to run: claude-code, codex, opencode, gemini, aider, or command"
            " (COMMAND, the default); a lane's own (tireless lane agent) wins (docs/agents.md)",
        )
    sub.add_argument(
        "--agent-bin",
        action="append",
        default=[],
        metavar="[PROFILE=]PATH",
        help="a profile's program where it is not on PATH",
    )


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
            "--database-file",
            metavar="PATH",
            default=none,
            help="a file holding the URL or connection string (default: $DATABASE_URL_FILE)",
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
    top.add_argument(
        "--version",
        action="version",
        version=f"tireless {version('tireless-store')}",
        help=VERSION_HELP,
    )
    commands = top.add_subparsers(dest="command_name", metavar="COMMAND")

    def command(
        name: str, run: Callable[[argparse.Namespace], int], help: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name, help=help, description=help, parents=[common(defaults=False)]
        )
        sub.set_defaults(run=run)
        return sub

    def actions(
        of: argparse.ArgumentParser, name: str
    ) -> Callable[[str, str], argparse.ArgumentParser]:
        """Sub-commands of a command (`forge add`, `lane pause`), each with its help."""
        chosen = of.add_subparsers(dest=name, required=True, metavar="ACTION")

        def action(action_name: str, help: str) -> argparse.ArgumentParser:
            return chosen.add_parser(
                action_name, help=help, description=help, parents=[common(False)]
            )

        return action

    def budget_arguments(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "runs_per_day", type=capacity, metavar="RUNS|none", help="claims a day; none: no budget"
        )
        sub.add_argument(
            "agent_time_per_day",
            type=limit,
            metavar="AGENT-TIME|none",
            help="time attempts held their claims a day, e.g. 8h; none: no budget",
        )
        add_spend_budget_arguments(sub)

    def repository(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("forge", help="the forge's short name, e.g. gitea (see `forge list`)")
        sub.add_argument("owner", help="the repository's owner (user or organisation)")
        sub.add_argument("repo", help="the repository's name")

    model = actions(
        command("model", cmd_model, "(admin) the models' prices, USD per million tokens"),
        "model_action",
    )
    add_price_arguments(model("price", "set a model's price (MODEL a name, or prefix*)"))
    model("prices", "every price set (none is built in: a model without one is unpriced)")
    sub = command("migrate", cmd_migrate, "apply the migrations not yet applied")
    sub.add_argument(
        "--adopt-role-members",
        action="store_true",
        help="a first install: adopt the tireless roles although they have members (the logins of"
        " another store in this cluster, which will act on this store too)",
    )
    for name, help in (
        ("track", "start tracking a repository of a registered forge"),
        ("untrack", "stop tracking a repository"),
    ):
        repository(command(name, cmd_track, help))
    command("repos", cmd_repos, "the tracked repositories: last poll, last error, next poll")
    repo = actions(
        command(
            "repo",
            cmd_repo,
            "(admin) a tracked repository's share and policies: capacity, budget, delivery,"
            " revisions",
        ),
        "repo_action",
    )
    sub = repo("capacity", "at most N claimed jobs of the repository at once, all lanes")
    repository(sub)
    sub.add_argument("capacity", type=capacity, metavar="N|none", help="a count, or none: no limit")
    sub = repo(
        "budget",
        "at most RUNS claims and AGENT-TIME of attempts a day (UTC), all lanes; and tokens and"
        " cost a day and a job",
    )
    repository(sub)
    budget_arguments(sub)
    sub = repo(
        "delivery",
        "what an agent's change to the repository may touch, and how much; prints its policy",
    )
    repository(sub)
    sub.add_argument(
        "--protect",
        dest="protected",
        action="append",
        metavar="GLOB",
        help="a path the change may not touch (fnmatch on the whole path; dir/: all under it);"
        " repeat it: the globs given replace the list",
    )
    sub.add_argument(
        "--no-protect",
        dest="protected",
        action="store_const",
        const=[],
        help="protect no path (the list emptied)",
    )
    sub.add_argument(
        "--allow",
        dest="allowed",
        action="append",
        metavar="GLOB",
        help="a path the change may touch all the same (protected, or a CI definition);"
        " repeat it: the globs given replace the list",
    )
    sub.add_argument(
        "--no-allow", dest="allowed", action="store_const", const=[], help="allow no path"
    )
    sub.add_argument(
        "--allow-ci",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the change may touch the forge's CI definitions (.github/workflows/, ...)",
    )
    sub.add_argument(
        "--max-files",
        type=delivery_limit(count),
        metavar="N|default",
        help="at most N files added, modified or deleted; default: the runner's (1000)",
    )
    sub.add_argument(
        "--max-bytes",
        type=delivery_limit(size),
        metavar="SIZE|default",
        help="at most SIZE of files added or modified, e.g. 200M; default: the runner's (50M)",
    )
    sub = repo(
        "revisions",
        "whether failed checks ask for a revision, and how many an issue gets; prints its policy",
    )
    repository(sub)
    sub.add_argument(
        "--on-failed-checks",
        dest="revise_on_failed_checks",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether failed checks on tireless's pull request ask for a revision (default: no)",
    )
    sub.add_argument(
        "--max",
        dest="max_revisions",
        type=int,
        metavar="N",
        help="at most N revisions after a person last asked on the issue, 0 to 100 (default 5)",
    )
    forge = actions(
        command("forge", cmd_forge, "the forge registry: add, list, remove, retry, check"),
        "forge_action",
    )
    sub = forge("add", "register a forge (or change its kind or URL)")
    sub.add_argument("name", help="the forge's short name, as in issue keys (e.g. gitea)")
    sub.add_argument(
        "--kind",
        required=True,
        choices=["gitea", "forgejo", "github"],
        help="its API family (Forgejo speaks Gitea's)",
    )
    sub.add_argument(
        "--url",
        required=True,
        help="Gitea/Forgejo: the web root; GitHub: the API root (https://api.github.com)",
    )
    sub.add_argument(
        "--app-id",
        type=int,
        help="GitHub: authenticate as this GitHub App (its App ID), minting its installations'"
        " tokens, instead of TIRELESS_TOKEN_<NAME> (docs/forges.md#github-app)",
    )
    sub.add_argument(
        "--app-key-file",
        metavar="PEM",
        help="with --app-id: the App's private key file, as the hosts running tireless read it"
        " (its path is registered, never the key; TIRELESS_APP_KEY_<NAME>_FILE wins over it)",
    )
    forge("list", "the registered forges, and the variable each one's token is read from")
    sub = forge("remove", "unregister a forge")
    sub.add_argument("name", help="the forge's short name")
    sub = forge(
        "retry", "clear a forge's stop (rate limit, refused token) and poll its repositories now"
    )
    sub.add_argument("name", help="the forge's short name")
    poller_arguments(sub)
    sub = forge(
        "check",
        "try what tireless needs of a forge and its token, before any poll: a line per"
        " capability, with the fix of each failure (exit 1: something needed is missing)",
    )
    sub.add_argument("name", help="the forge's short name")
    sub.add_argument(
        "--repo",
        metavar="OWNER/REPO",
        help=f"try this repository (default: the first {MAX_REPOS} tracked ones of the forge)",
    )
    sub.add_argument(
        "--write",
        action="store_true",
        help="also try the writes, on the first repository: a scratch label (deleted after) and a"
        " scratch issue with a comment (closed after); without it nothing on the forge changes",
    )
    sub.add_argument(
        "--deliver",
        action="store_true",
        help="also try git and pull requests, as `work --deliver` needs them: a scratch ref"
        " refs/tireless/check/... pushed and deleted, the account's permission to open a pull"
        " request read (with --write: a scratch branch pushed and deleted, a draft pull request"
        " opened and closed)",
    )
    sub.add_argument(
        "--timeout",
        type=seconds,
        default=30.0,
        metavar="DURATION",
        help="give a request up after this long (default 30s)",
    )
    sub = command("poll", cmd_poll, "read the due repositories from their forges")
    when = sub.add_mutually_exclusive_group()
    when.add_argument(
        "--once",
        action="store_true",
        help="one round, then exit (1: a repository failed, or none could be read)",
    )
    when.add_argument(
        "--every",
        type=seconds,
        metavar="DURATION",
        help="a round every DURATION (e.g. 60s) until SIGINT/SIGTERM",
    )
    sub.add_argument(
        "--anonymous",
        action="store_true",
        help="read forges whose token is not set without one (public repositories only);"
        " without it, poll refuses to start",
    )
    poller_arguments(sub)
    sub = command("rerun", cmd_rerun, "(admin) a new job for an issue with no live job")
    repository(sub)
    sub.add_argument("number", type=int, help="the issue's number")
    sub.add_argument(
        "--kind",
        choices=[str(k) for k in JobKind],
        help="what to ask for (default: what the issue last asked for)",
    )
    sub = command("cancel", cmd_cancel, "(admin) cancel a pending job, or stop a claimed one")
    sub.add_argument("job", type=int, help="the job's id")
    sub.add_argument("--note", help="why (default: cancelled by ROLE)")
    sub = command("enqueue", cmd_enqueue, "enqueue a JSON array of issues; print the jobs created")
    sub.add_argument("file", nargs="?", default="-", help="a JSON file (default: stdin)")

    sub = command("claim", cmd_claim, "claim the oldest claimable job in the lanes (exit 3: none)")
    worker_arguments(sub)
    sub = command(
        "renew", cmd_renew, "extend the lease of a claim you hold (exit 3: the claim was lost)"
    )
    sub.add_argument("job", type=int, help="the job's id")
    sub.add_argument("--worker", required=True, help="the holder's name")
    sub.add_argument("--token", type=UUID, help="the claim's token (fencing)")
    sub.add_argument(
        "--lease", type=duration, default=DEFAULT_LEASE, help="e.g. 30s, 10m (default 10m)"
    )
    sub = command(
        "transition", cmd_transition, "move a job: deliver, fail, release to pending, cancel"
    )
    sub.add_argument("job", type=int, help="the job's id")
    sub.add_argument("state", choices=[str(s) for s in JobState], help="where the job goes")
    sub.add_argument("--worker", help="the holder (needed to leave claimed)")
    sub.add_argument("--token", type=UUID, help="the claim's token (fencing)")
    sub.add_argument("--note", help="why, kept as the job's note")
    sub = command(
        "sweep",
        cmd_sweep,
        "return expired claims to pending (or fail them by budget); roll the history up for the"
        " dashboard",
    )
    sub.add_argument(
        "--every",
        type=seconds,
        metavar="DURATION",
        help="keep sweeping at this interval (e.g. 30s) until SIGINT/SIGTERM",
    )

    command(
        "status",
        cmd_status,
        "lanes by state: queue, claims past their lease, paused or tripped lanes",
    )
    lane = actions(
        command(
            "lane",
            cmd_lane,
            "(admin) a lane's settings: pause, resume, capacity, budget, max-run, stall-after,"
            " allow-net, limits, agent, show",
        ),
        "lane_action",
    )
    for name, help in (
        ("pause", "hand out no more jobs of the lane (running ones go on)"),
        ("resume", "hand out the lane's jobs again"),
    ):
        lane(name, help).add_argument("lane", help="the lane's name, e.g. cc")
    sub = lane("capacity", "at most N claimed jobs in the lane at once")
    sub.add_argument("lane", help="the lane's name, e.g. cc")
    sub.add_argument("capacity", type=capacity, metavar="N|none", help="a count, or none: no limit")
    sub = lane(
        "budget",
        "at most RUNS claims and AGENT-TIME of attempts a day (UTC); and tokens and cost a day"
        " and a job",
    )
    sub.add_argument("lane", help="the lane's name, e.g. cc")
    budget_arguments(sub)
    for name, setting, help in (
        ("max-run", "max_run", "stop an attempt that runs longer than DURATION"),
        ("stall-after", "stall_after", "stop an attempt without progress for DURATION"),
    ):
        sub = lane(name, help)
        sub.add_argument("lane", help="the lane's name, e.g. cc")
        sub.add_argument(
            setting, type=limit, metavar="DURATION|none", help="e.g. 2h, 30m; none: no limit"
        )
    sub = lane(
        "allow-net",
        "the hosts the lane's agents may reach (--off: the host's network; --none: no egress)",
    )
    sub.add_argument("lane", help="the lane's name, e.g. cc")
    sub.add_argument(
        "hosts",
        nargs="*",
        metavar="HOST[:PORT]",
        help="a DNS name, *.domain or an IP literal ([2001:db8::1]:443); no port: 80 and 443",
    )
    form = sub.add_mutually_exclusive_group()
    form.add_argument(
        "--off", action="store_true", help="no list: the agent keeps the host's network"
    )
    form.add_argument("--none", action="store_true", help="an empty list: no egress at all")
    sub = lane(
        "limits",
        "what one attempt may take of its host: memory, CPUs, processes, disk (--off: none)",
    )
    sub.add_argument("lane", help="the lane's name, e.g. cc")
    for flag, metavar, help in (
        (
            "--memory",
            "SIZE",
            "memory of the attempt's processes together, e.g. 2G (none: no limit)",
        ),
        ("--cpus", "N", "CPUs of the attempt's processes together, e.g. 1.5 (none: no limit)"),
        ("--pids", "N", "processes alive at once, e.g. 256 (none: no limit)"),
        ("--disk", "SIZE", "bytes written in the workspace and in /tmp, e.g. 5G (none: no limit)"),
    ):
        sub.add_argument(flag, metavar=metavar, help=help)
    sub.add_argument("--off", action="store_true", help="clear every limit of the lane")

    sub = lane("agent", "the agent CLI the lane's jobs run (none: the worker's --agent or COMMAND)")
    sub.add_argument("lane", help="the lane's name, e.g. oc")
    sub.add_argument(
        "profile",
        metavar="PROFILE|none",
        help="claude-code, codex, opencode, gemini, aider, command",
    )
    sub = lane("show", "a lane's queue and settings (all lanes when none is named)")
    sub.add_argument("lane", nargs="?", help="the lane's name (default: every lane)")
    sub = command("jobs", cmd_jobs, "list jobs, oldest first (--newest: newest first)")
    sub.add_argument("--state", choices=[str(s) for s in JobState], help="only jobs in this state")
    sub.add_argument("--kind", choices=[str(k) for k in JobKind], help="only jobs of this kind")
    sub.add_argument("--lane", help="only jobs of this lane")
    sub.add_argument("--forge", help="only jobs of this forge")
    sub.add_argument("--repo", metavar="OWNER/REPO", help="only jobs of this repository")
    sub.add_argument(
        "--since",
        type=duration,
        metavar="DURATION",
        help="only jobs changed in the last DURATION (e.g. 2h)",
    )
    sub.add_argument(
        "--title", metavar="WORDS", help="only jobs whose title holds every word (in any case)"
    )
    sub.add_argument("--worker", help="only jobs this worker holds or ran an attempt of")
    sub.add_argument("--number", type=count, metavar="N", help="only jobs of issue number N")
    sub.add_argument("--newest", action="store_true", help="newest first")
    sub.add_argument(
        "--after", type=int, default=0, metavar="ID", help="only jobs with a larger id"
    )
    sub.add_argument(
        "--limit", type=count, default=100, help="at most this many jobs (default 100)"
    )
    sub = command("show", cmd_show, "a job and its history")
    sub.add_argument("job", type=int, help="the job's id")
    sub.add_argument(
        "--transcript",
        action="store_true",
        help="(admin) print its agent's session with its model instead: each request and answer"
        " the runner's gateway kept",
    )

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
    sub.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")
    sub.add_argument(
        "--max",
        type=count,
        default=PRUNE_MAX,
        metavar="N",
        help=f"delete more than N jobs only with --yes (default {PRUNE_MAX})",
    )
    sub.add_argument("--yes", action="store_true", help="delete even more than --max jobs")

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
        metavar="DURATION",
        help="longest wait between claims when idle (default 30s)",
    )
    sub.add_argument(
        "--grace",
        type=seconds,
        default=10.0,
        metavar="DURATION",
        help="from SIGTERM to SIGKILL when stopping COMMAND (default 10s)",
    )
    sub.add_argument(
        "--drain-on",
        type=drain_signal,
        metavar="SIGNAL",
        help="on this signal (e.g. SIGUSR1) finish the running job, claim no more, exit 0",
    )
    sub.add_argument(
        "--agent-user",
        metavar="NAME",
        help="run COMMAND as this Unix user (the worker must be root): it can read neither the"
        " worker's credential files nor its /proc",
    )
    sub.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "unshare", "none"],
        default="auto",
        help="how COMMAND is contained (default auto: bwrap, else unshare as root, else none);"
        " docs/runners.md#containment. A lane's limits (`lane limits`) are enforced in a control"
        " group of each attempt's own: bwrap enforces memory, cpus, pids and disk (a sized /tmp,"
        " the workspace watched); unshare memory, cpus and pids; none none of them. A lane whose"
        " limits this worker cannot enforce is not served (exit 2)",
    )
    sub.add_argument(
        "--deliver",
        action="store_true",
        help="run COMMAND in a workspace of the issue's repository and push what an implement"
        " job changed to the issue's branch, for one pull request per issue (docs/runners.md#delivery)",
    )
    sub.add_argument(
        "--git-identity",
        default=None,
        metavar="'NAME <EMAIL>'",
        help="with --deliver: the author and committer of tireless's commits (default: the"
        " account of the forge's token, with its noreply address; docs/runners.md#delivery)",
    )
    sub.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the cache of repositories (git/) and the jobs' workspaces (workspaces/) (default"
        " /var/lib/tireless as root, else ~/.local/state/tireless)",
    )
    sub.add_argument(
        "--git-cache-max",
        type=size,
        default=10 << 30,
        metavar="SIZE",
        help="the cache's bound: the least recently used repositories are evicted past it"
        " (default 10G; none: no bound)",
    )
    sub.add_argument(
        "--progress-every",
        type=seconds,
        default=30.0,
        metavar="DURATION",
        help="report COMMAND's output as progress at most this often (default 30s)",
    )
    sub.add_argument(
        "--upstream",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="a service COMMAND reaches through the runner's gateway, which adds its secret:"
        " TIRELESS_UPSTREAM_<NAME>_URL (docs/runners.md#the-agents-network)",
    )
    sub.add_argument(
        "--upstream-header",
        action="append",
        default=[],
        metavar="NAME=HEADER",
        help="the header the gateway sets to the secret (default Authorization: Bearer <secret>)",
    )
    sub.add_argument(
        "--upstream-secret",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="the file the upstream's secret is read from, by the worker only (hidden from COMMAND)",
    )
    agent_arguments(sub)
    sub.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND [ARGS...]",
        help="the agent to run on each job (checked before anything is claimed); with --agent"
        " PROFILE, the CLI's extra arguments",
    )
    sub = command("outcomes", cmd_outcomes, "what became of tireless's pull requests, per lane")
    add_outcome_arguments(sub)
    sub = command("agents", cmd_agents, "the agent CLIs tireless work knows, found or not")
    agent_arguments(sub, work=False)
    sub.add_argument("--lane", action="append", default=[], help="what this lane lacks for each")
    sub.add_argument(
        "--upstream", action="append", default=[], metavar="NAME=URL", help="as tireless work's"
    )

    sub = command(
        "web", cmd_web, "the dashboard, /metrics and the forge webhooks (tireless-store[web])"
    )
    sub.add_argument(
        "--bind",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:8080: this machine only; port 0: any free port;"
        " beyond loopback only with TIRELESS_WEB_TOKEN set)",
    )
    sub.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="answer requests for this Host name too (besides the bound address, localhost,"
        " 127.0.0.1 and [::1]); repeat for more",
    )
    sub.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="close a connection whose request header is not whole within SECONDS (default 10)",
    )
    return top


def worker_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--worker", required=True, help="the claiming worker's name")
    sub.add_argument(
        "--lane", action="append", required=True, help="a lane to serve (repeat for several)"
    )
    sub.add_argument(
        "--lease", type=duration, default=DEFAULT_LEASE, help="e.g. 30s, 10m (default 10m)"
    )


def poller_arguments(sub: argparse.ArgumentParser) -> None:
    """What `poll` and `forge retry` (which polls at once) share."""
    sub.add_argument(
        "--poller", default=default_poller_name(), help="this poller's name (default host:pid)"
    )
    sub.add_argument(
        "--timeout",
        type=seconds,
        default=30.0,
        metavar="DURATION",
        help="give a request up after this long (default 30s); a repository's read after four"
        " times that",
    )
    sub.add_argument(
        "--lease",
        type=duration,
        default=DEFAULT_POLL_LEASE,
        metavar="DURATION",
        help="the poll lease, renewed every third of it while this poller lives: a dead poller's"
        " repositories are read by another within it (default 1m)",
    )
