"""The `tireless` command (also `python -m tireless`): see and steer the store from a shell.

Exit codes: 0 done; 1 the database refused or gave up (stderr: `tireless: SQLSTATE: message`,
then its DETAIL and HINT lines; a lock timeout or a cancelled statement is one of these);
2 usage; 3 nothing to do (claim found no job, renew found the claim lost); 4 cannot reach the
database (the connection failed or was lost).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn
from uuid import UUID

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import RowFactory, dict_row

from tireless import calls
from tireless.calls import DEFAULT_LEASE, JOB_ROW, Query, issues_json
from tireless.errors import PermissionDenied, TirelessError, UnknownJob, translated_errors
from tireless.forge import token_variable
from tireless.forge.poll import Report, client_factory, default_poller_name, poll_round
from tireless.migrate import migrate
from tireless.models import Job, JobState, RepoStatus
from tireless.store import JobStore

OK, REFUSED, USAGE, NOTHING_TO_DO, UNREACHABLE = 0, 1, 2, 3, 4
PRUNE_BATCH = 1000
"""`tireless prune` deletes at most this many jobs per transaction."""


class Unreachable(Exception):
    """The database cannot be reached (exit 4)."""


class UsageError(Exception):
    """The arguments or the input are wrong (exit 2)."""


# Arguments
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


def database_url(args: argparse.Namespace) -> str:
    url: str | None = args.database or os.environ.get("DATABASE_URL")
    if not url:
        raise UsageError("no database: pass --database URL or set DATABASE_URL")
    return url


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[psycopg.Connection[Any]]:
    """One autocommit connection for a command; each store call is its own transaction."""
    url = checked_url(args)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as error:
        raise Unreachable(str(error).strip()) from error
    with conn:
        yield conn


def checked_url(args: argparse.Namespace) -> str:
    """The database URL, refused as a usage error when it does not parse."""
    url = database_url(args)
    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as error:  # a malformed URL or connection string
        raise UsageError(f"bad --database or DATABASE_URL: {error}") from error
    return url


# Output
def as_json(value: Any) -> str:
    def plain(item: Any) -> Any:
        if isinstance(item, datetime):
            return item.isoformat()
        if isinstance(item, timedelta):
            return item.total_seconds()
        if isinstance(item, UUID):
            return str(item)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return dataclasses.asdict(item)
        raise TypeError(f"not JSON: {item!r}")

    return json.dumps(value, default=plain, indent=2)


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(as_json(data) if args.json else text)


def table(
    rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Callable[[Any], str]]]
) -> str:
    """A plain text table: each column is (header, the cell's text from a row)."""
    cells = [[header for header, _ in columns]] + [
        [cell(row) for _, cell in columns] for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    total = int(seconds)
    if total < 120:
        return f"{total}s"
    if total < 7200:
        return f"{total // 60}m"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


def clock(value: datetime | None) -> str:
    return "-" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def last_line(note: str | None) -> str:
    """A note in a table cell: its last line, cut to 60 characters."""
    return note.splitlines()[-1][:60] if note and note.strip() else "-"


def describe(job: Job) -> str:
    """One line about a job."""
    text = (
        f"job {job.id} {job.owner}/{job.repo}#{job.number} {job.kind} lane {job.lane}: {job.state}"
    )
    text += f", attempt {job.attempts}"
    if job.claimed_by is not None:
        text += f", held by {job.claimed_by} until {clock(job.claim_expires_at)} (token {job.claim_token})"
    return text + (f"\n  note: {job.note}" if job.note else "")


def fetch(
    conn: psycopg.Connection[Any], query: Query, params: dict[str, Any], row: RowFactory[Any]
) -> list[Any]:
    """Rows of an operator read, its refusals (say 42501 for a runner reading jobs) translated."""
    with translated_errors(), conn.cursor(row_factory=row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def status_rows(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """tireless.lane_status with each lane's terminal counts from tireless.queue_stats."""
    return fetch(conn, calls.STATUS, {}, dict_row)


def render_status(rows: Sequence[dict[str, Any]]) -> str:
    def count(key: str) -> Callable[[dict[str, Any]], str]:
        return lambda row: str(row[key])

    def flags(row: dict[str, Any]) -> str:
        marks = ["paused"] if row["paused"] else []
        if row["breaker"] != "closed":
            marks.append(
                f"breaker {row['breaker']}"
                + (f" until {clock(row['tripped_until'])}" if row["breaker"] == "open" else "")
            )
        if row["capacity"] is not None:
            marks.append(f"capacity {row['capacity']}")
        return ", ".join(marks) or "-"

    columns: list[tuple[str, Callable[[dict[str, Any]], str]]] = [("LANE", count("lane"))]
    columns += [
        (key.upper().replace("_", "-"), count(key))
        for key in ("pending", "ready", "claimed", "past_lease", "delivered", "failed", "cancelled")
    ]
    columns += [
        ("OLDEST-PENDING", lambda row: age(row["oldest_pending_seconds"])),
        ("LANE-STATE", flags),
    ]
    live = sum(row["pending"] + row["claimed"] for row in rows)
    summary = f"{live} live job(s)" if live else "settled: no pending or claimed job"
    window = "delivered, failed, cancelled: jobs that finished in the last 24 hours"
    return (
        "\n".join([table(rows, columns), window, summary]) if rows else "no lanes and no jobs yet"
    )


def job_table(jobs: Sequence[Job]) -> str:
    rows = [dataclasses.asdict(job) for job in jobs]
    return table(
        rows,
        [
            ("ID", lambda r: str(r["id"])),
            ("ISSUE", lambda r: f"{r['forge']}/{r['owner']}/{r['repo']}#{r['number']}"),
            ("KIND", lambda r: str(r["kind"])),
            ("LANE", lambda r: r["lane"]),
            ("STATE", lambda r: str(r["state"])),
            ("ATTEMPTS", lambda r: str(r["attempts"])),
            ("HOLDER", lambda r: r["claimed_by"] or "-"),
            ("NOTE", lambda r: last_line(r["note"])),
        ],
    )


# Commands, one function each
def cmd_migrate(args: argparse.Namespace) -> int:
    with connect(args):
        pass  # reachable? (exit 4 if not), before yoyo opens its own connection
    applied = migrate(database_url(args))
    emit(
        args,
        {"applied": applied},
        f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""),
    )
    return OK


def cmd_track(args: argparse.Namespace) -> int:
    """`track` and `untrack`: the store call and the two outcomes differ, the rest is one."""
    tracking = args.command_name == "track"
    with connect(args) as conn:
        store = JobStore(conn)
        change = store.track_repo if tracking else store.untrack_repo
        changed = change(args.forge, args.owner, args.repo)
    name = f"{args.forge}/{args.owner}/{args.repo}"
    if tracking:
        text = f"tracking {name}" if changed else f"{name} was already tracked"
    else:
        text = f"no longer tracking {name}" if changed else f"{name} was not tracked"
    emit(
        args,
        {"forge": args.forge, "owner": args.owner, "repo": args.repo, "changed": changed},
        text,
    )
    return OK


def cmd_repos(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        repos = JobStore(conn).repo_status()
    emit(args, repos, render_repos(repos) if repos else "no tracked repositories")
    return OK


def render_repos(repos: Sequence[RepoStatus]) -> str:
    """Each tracked repository's last poll, last error and next poll (tireless.repo_status)."""

    def error(repo: RepoStatus) -> str:
        if repo.forge_error is not None:
            return last_line(f"forge stopped: {repo.forge_error}")
        return last_line(repo.last_error)

    rows = [dataclasses.asdict(repo) | {"status": repo} for repo in repos]
    return table(
        rows,
        [
            ("REPO", lambda r: f"{r['forge']}/{r['owner']}/{r['repo']}"),
            ("KIND", lambda r: r["forge_kind"] or "unregistered"),
            ("LAST-POLL", lambda r: clock(r["last_poll_at"])),
            ("LAST-SUCCESS", lambda r: clock(r["last_success_at"])),
            (
                "NEXT-POLL",
                lambda r: clock(max(filter(None, [r["next_poll_at"], r["backoff_until"]]))),
            ),
            ("FAILURES", lambda r: str(r["consecutive_failures"])),
            ("LIVE", lambda r: str(r["pending"] + r["claimed"])),
            ("MIRROR-BACKLOG", lambda r: str(r["mirror_backlog"])),
            ("LAST-ERROR", lambda r: error(r["status"])),
            ("LAST-MIRROR-ERROR", lambda r: last_line(r["mirror_error"])),
        ],
    )


def cmd_enqueue(args: argparse.Namespace) -> int:
    source = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    try:
        issues = json.loads(source)
    except json.JSONDecodeError as error:
        raise UsageError(f"{args.file}: not JSON: {error}") from error
    if not isinstance(issues, list) or not all(isinstance(i, dict) for i in issues):
        raise UsageError(f"{args.file}: expected a JSON array of issue objects")
    with connect(args) as conn:
        created, jobs = enqueue_and_list(conn, issues)
    text = f"created {created} job(s) from {len(issues)} issue(s)"
    listed = [describe(job) for job in jobs or []]
    emit(args, {"created": created, "jobs": jobs}, "\n".join([text, *listed]))
    return OK


def enqueue_and_list(
    conn: psycopg.Connection[Any], issues: list[dict[str, Any]]
) -> tuple[int, list[Job] | None]:
    """Enqueue, and read back in the same transaction the jobs that created; None for the jobs
    when the role may not read them (a poller: only tireless_admin reads tireless.job)."""
    with conn.transaction():
        created = JobStore(conn).enqueue(issues)
        try:
            with conn.transaction():
                jobs = fetch(conn, calls.CREATED_JOBS, {"issues": issues_json(issues)}, JOB_ROW)
        except PermissionDenied:
            return created, None
    return created, jobs


def cmd_claim(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        job = JobStore(conn).claim_next(args.worker, args.lane, args.lease)
    if job is None:
        emit(args, None, f"nothing to claim in lane(s) {', '.join(args.lane)}")
        return NOTHING_TO_DO
    emit(args, job, describe(job))
    return OK


def cmd_renew(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        renewed = JobStore(conn).renew_claim(args.job, args.worker, args.lease, args.token)
    text = (
        f"renewed job {args.job} for {args.lease}"
        if renewed
        else f"{args.worker} no longer holds job {args.job}: the claim was lost"
    )
    emit(args, {"job": args.job, "renewed": renewed}, text)
    return OK if renewed else NOTHING_TO_DO


def cmd_transition(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        job = JobStore(conn).transition(args.job, args.state, args.worker, args.note, args.token)
    emit(args, job, describe(job))
    return OK


class Stop(BaseException):
    """SIGTERM or SIGINT asked a long-running command to stop."""


def stop_on_signals() -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.every is None:
        with connect(args) as conn:
            moved = JobStore(conn).expire_stale_claims()
        emit(args, {"expired": moved}, f"returned {moved} expired claim(s)")
        return OK
    stop_on_signals()
    try:
        with connect(args) as conn:
            store = JobStore(conn)
            while True:
                moved = store.expire_stale_claims()
                if moved:
                    emit(
                        args,
                        {"expired": moved, "at": datetime.now().astimezone()},
                        f"{clock(datetime.now())} returned {moved} expired claim(s)",
                    )
                    sys.stdout.flush()
                threading.Event().wait(args.every)
    except Stop:
        return OK


def cmd_status(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        rows = status_rows(conn)
        try:
            repos = JobStore(conn).repo_status()
        except PermissionDenied:
            repos = []
    troubled = [r for r in repos if r.last_error or r.forge_error or r.mirror_error]
    backlog = sum(r.mirror_backlog for r in repos if r.registered)  # else no poller writes
    text = render_status(rows)
    if backlog:
        text += f"\n\nmirror: {backlog} issue(s) wait for their forge labels or comment"
    if troubled:
        text += "\n\nrepositories with errors:\n" + render_repos(troubled)
    emit(args, rows, text)
    return OK


def cmd_jobs(args: argparse.Namespace) -> int:
    owner, _, repo = (args.repo or "").partition("/")
    if args.repo and not repo:
        raise UsageError(f"--repo takes OWNER/REPO, got {args.repo!r}")
    params = {
        "state": args.state,
        "lane": args.lane,
        "owner": owner or None,
        "repo": repo or None,
        "after": args.after,
        "limit": args.limit,
    }
    with connect(args) as conn:
        jobs = fetch(conn, calls.JOBS, params, JOB_ROW)
    emit(args, jobs, job_table(jobs) if jobs else "no jobs")
    return OK


def cmd_show(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        found = fetch(conn, calls.JOB, {"job_id": args.job}, JOB_ROW)
        if not found:
            raise UnknownJob(f"no job with id {args.job}")
        history = fetch(conn, calls.JOB_EVENTS, {"job_id": args.job}, dict_row)
    job: Job = found[0]
    fields = "\n".join(f"{name:>17}: {value}" for name, value in dataclasses.asdict(job).items())
    events = table(
        history,
        [
            ("AT", lambda e: clock(e["at"])),
            ("FROM", lambda e: e["from_state"] or "-"),
            ("TO", lambda e: e["to_state"]),
            ("WORKER", lambda e: e["worker"] or "-"),
            ("ATTEMPT", lambda e: str(e["attempt"])),
            ("NOTE", lambda e: last_line(e["note"])),
        ],
    )
    emit(args, {"job": job, "history": history}, f"{fields}\n\nhistory:\n{events}")
    return OK


def cmd_forge(args: argparse.Namespace) -> int:
    """`forge add|list|remove`: the forge registry (tokens stay in TIRELESS_TOKEN_<NAME>)."""
    with connect(args) as conn:
        store = JobStore(conn)
        if args.forge_action == "list":
            forges = store.forges()
            text = table(
                [dataclasses.asdict(f) for f in forges],
                [
                    ("NAME", lambda r: r["name"]),
                    ("KIND", lambda r: str(r["kind"])),
                    ("URL", lambda r: r["base_url"]),
                    ("TOKEN-VARIABLE", lambda r: token_variable(r["name"])),
                ],
            )
            emit(args, forges, text if forges else "no forges registered")
            return OK
        if args.forge_action == "add":
            changed = store.add_forge(args.name, args.kind, args.url)
            text = (
                f"forge {args.name}: {args.kind} at {args.url}; its token is read from"
                f" {token_variable(args.name)}"
                if changed
                else f"forge {args.name} was already {args.kind} at {args.url}"
            )
        else:
            changed = store.remove_forge(args.name)
            text = f"removed forge {args.name}" if changed else f"no forge named {args.name}"
    emit(args, {"name": args.name, "changed": changed}, text)
    return OK


def cmd_poll(args: argparse.Namespace) -> int:
    """One round (`--once`) or a round every `--every` seconds: read the due repositories."""

    def log(report: Report) -> None:
        if args.json:
            print(json.dumps(as_plain(report)), flush=True)
        else:
            print(f"{clock(datetime.now())} {report.line()}", flush=True)

    if args.every is not None:
        stop_on_signals()
    clients = client_factory(args.timeout)
    next_poll_in = timedelta(seconds=args.every or 0)
    try:
        with connect(args) as conn:
            store = JobStore(conn)
            while True:
                reports = poll_round(
                    store, args.poller, clients=clients, next_poll_in=next_poll_in, log=log
                )
                if args.every is None:
                    failed = sum(r.error is not None for r in reports)
                    if not args.json:
                        print(f"polled {len(reports)} repositories, {failed} failed")
                    return REFUSED if failed else OK
                threading.Event().wait(args.every)
    except Stop:
        return OK


def as_plain(report: Report) -> dict[str, Any]:
    plain: dict[str, Any] = json.loads(as_json(report))
    return {"repository": report.name, **plain}


def cmd_rerun(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        job_id = JobStore(conn).rerun(args.forge, args.owner, args.repo, args.number)
        found = fetch(conn, calls.JOB, {"job_id": job_id}, JOB_ROW)
    issue = f"{args.forge}/{args.owner}/{args.repo}#{args.number}"
    text = describe(found[0]) if found else f"job {job_id} pending for {issue}"
    emit(args, {"job": job_id}, f"rerun {issue}: {text}")
    return OK


def cmd_prune(args: argparse.Namespace) -> int:
    """In short transactions of at most PRUNE_BATCH jobs each, so no lock is held for long; a dry
    run prunes inside one transaction it rolls back, and so counts exactly what would go."""
    with connect(args) as conn:
        store = JobStore(conn)
        if args.dry_run:
            with conn.transaction(force_rollback=True):
                pruned = store.prune(args.older_than)
        else:
            pruned = 0
            while batch := store.prune(args.older_than, PRUNE_BATCH):
                pruned += batch
    days = args.older_than / timedelta(days=1)
    text = f"{'would delete' if args.dry_run else 'deleted'} {pruned} finished job(s) unchanged for {days:g} day(s), with their history"
    emit(args, {"pruned": pruned, "dry_run": args.dry_run}, text)
    return OK


def cmd_work(args: argparse.Namespace) -> int:
    from tireless.worker import work  # the runner loads only for `work`

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("work needs a COMMAND after --")
    with connect(args):
        pass  # a malformed URL is a usage error (2), an unreachable database exit 4
    return work(
        database_url(args),
        args.worker,
        args.lane,
        command,
        lease=args.lease,
        once=args.once,
        poll=args.poll,
        grace=args.grace,
        drain_on=args.drain_on,
    )


def cmd_web(args: argparse.Namespace) -> int:
    try:
        from tireless.web.app import serve  # the web stack is the optional extra tireless[web]
    except ImportError as missing:
        raise UsageError(
            f"tireless web needs the extra: pip install 'tireless[web]' ({missing})"
        ) from missing
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--bind takes HOST:PORT, got {args.bind!r}")
    database = database_url(args)
    with connect(args):
        pass  # reachable? (exit 4 if not), before the server starts listening
    stop_on_signals()
    with suppress(Stop):
        serve(database, args.bind)
    return OK


# Parsing
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
        description=__doc__,
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
        help="give a request up after this long (default 30)",
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


def connection_failed(error: psycopg.Error) -> bool:
    """The connection failed or was lost (no SQLSTATE: libpq could not connect; class 08; the
    server shutting down or starting): not a refusal, nor a lock timeout or cancelled statement."""
    code = error.sqlstate
    if code is None:
        return isinstance(error, psycopg.OperationalError)
    return code.startswith("08") or code in ("57P01", "57P02", "57P03")


def report(code: str | None, message: str, detail: str | None, hint: str | None) -> str:
    """A database error for a person: `tireless: SQLSTATE: message`, then DETAIL and HINT lines."""
    lines = [f"tireless: {code}: {message}" if code else f"tireless: {message}"]
    lines += [f"DETAIL: {detail}"] if detail else []
    lines += [f"HINT: {hint}"] if hint else []
    return "\n".join(lines)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except UsageError as error:
        print(f"tireless: {error}", file=sys.stderr)
        return USAGE
    except OSError as error:  # a file named on the command line
        print(f"tireless: {error}", file=sys.stderr)
        return USAGE
    except Unreachable as error:
        print(f"tireless: cannot reach the database: {error}", file=sys.stderr)
        return UNREACHABLE
    except TirelessError as error:
        print(report(error.sqlstate, str(error), error.detail, error.hint), file=sys.stderr)
        return REFUSED
    except psycopg.Error as error:
        if connection_failed(error):
            print(f"tireless: cannot reach the database: {first_line(error)}", file=sys.stderr)
            return UNREACHABLE
        diag = error.diag
        message = diag.message_primary or first_line(error)
        print(
            report(error.sqlstate, message, diag.message_detail, diag.message_hint), file=sys.stderr
        )
        return REFUSED


if __name__ == "__main__":
    sys.exit(main())
