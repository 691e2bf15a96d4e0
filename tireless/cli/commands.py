"""The `tireless` commands, one function each: read the parsed arguments, call the store, print
(text or `--json`) and return the exit code."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from contextlib import suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from tireless import calls
from tireless.calls import JOB_ROW, issues_json
from tireless.cli.reads import fetch, status_rows
from tireless.cli.render import (
    as_plain,
    clock,
    describe,
    job_table,
    render_forges,
    render_job,
    render_repos,
    render_status,
)
from tireless.cli.session import (
    NOTHING_TO_DO,
    OK,
    REFUSED,
    Stop,
    UsageError,
    connect,
    database_url,
    emit,
    stop_on_signals,
)
from tireless.errors import PermissionDenied, UnknownJob
from tireless.forge import token_variable
from tireless.forge.poll import READ_DEADLINE_FACTOR, Report, client_factory, poll_round
from tireless.migrate import migrate
from tireless.models import Job
from tireless.store import JobStore

PRUNE_BATCH = 1000
"""`tireless prune` deletes at most this many jobs per transaction."""


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
    """Enqueue, with the jobs that created (tireless.enqueue_and_list); a role that may not read
    jobs (a poller: only tireless_admin reads tireless.job) enqueues alone, and gets None for them."""
    with conn.transaction():
        try:
            with conn.transaction():
                jobs = fetch(conn, calls.ENQUEUE_AND_LIST, {"issues": issues_json(issues)}, JOB_ROW)
        except PermissionDenied:
            return JobStore(conn).enqueue(issues), None
    return len(jobs), jobs


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
    emit(args, {"job": job, "history": history}, render_job(job, history))
    return OK


def cmd_forge(args: argparse.Namespace) -> int:
    """`forge add|list|remove`: the forge registry (tokens stay in TIRELESS_TOKEN_<NAME>)."""
    with connect(args) as conn:
        store = JobStore(conn)
        if args.forge_action == "list":
            forges = store.forges()
            emit(args, forges, render_forges(forges) if forges else "no forges registered")
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
                    store,
                    args.poller,
                    clients=clients,
                    next_poll_in=next_poll_in,
                    lease=args.lease,
                    read_deadline=READ_DEADLINE_FACTOR * args.timeout,
                    log=log,
                )
                if args.every is None:
                    failed = sum(r.error is not None for r in reports)
                    if not args.json:
                        print(f"polled {len(reports)} repositories, {failed} failed")
                    return REFUSED if failed else OK
                threading.Event().wait(args.every)
    except Stop:
        return OK


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
