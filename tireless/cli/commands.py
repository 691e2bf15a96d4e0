"""The `tireless` commands, one function each: read the parsed arguments, call the store, print
(text or `--json`) and return the exit code."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from tireless.cli.agents import COMMAND, agent_bins, lanes_program, log_agent, work_program
from tireless.cli.ledger import show_transcript, spend_budget, usage_table
from tireless.cli.render import (
    clock,
    describe,
    job_table,
    render_job,
    render_label_reports,
    render_repo_delivery,
    render_repo_limit,
    render_repos,
    render_status,
    span,
)
from tireless.cli.session import (
    NOTHING_TO_DO,
    OK,
    Stop,
    StopSignals,
    UsageError,
    connect,
    database_url,
    emit,
    reconnecting,
    stop_on_signals,
)
from tireless.connect import RECONNECT_EVERY, WORKER_CALL_DEADLINE
from tireless.credentials import keep_secrets_out_of_environment_block
from tireless.errors import PermissionDenied, UnknownJob
from tireless.git import Identity
from tireless.migrate import migrate
from tireless.models import Job, JobState
from tireless.store import JobStore, calls, forge_calls, reads
from tireless.store.calls import JOB_ROW, issues_json
from tireless.store.reads import fetch, replication_warning, status_rows

PRUNE_BATCH = 1000
"""`tireless prune` deletes at most this many jobs per transaction."""


MIGRATE_HINT = (
    "migrate creates the schema and the group roles tireless_runner, tireless_poller and"
    " tireless_admin: run it as the database's owner with CREATEROLE (or as a superuser)"
)


def cmd_migrate(args: argparse.Namespace) -> int:
    with connect(args):
        pass  # reachable? (exit 4 if not), before yoyo opens its own connection
    try:
        applied = migrate(database_url(args), args.adopt_role_members)
    except psycopg.errors.InsufficientPrivilege as denied:
        message = denied.diag.message_primary or str(denied)
        raise PermissionDenied(message, hint=MIGRATE_HINT) from denied
    changed_files = [name for name in applied if name.startswith("db/")]
    emit(
        args,
        {"applied": applied},
        f"applied {len(applied) - len(changed_files)} migration(s) and {len(changed_files)}"
        " changed SQL file(s)" + (": " + ", ".join(applied) if applied else ""),
    )
    return OK


def cmd_track(args: argparse.Namespace) -> int:
    """`track` and `untrack`: the store call and the two outcomes differ, the rest is one."""
    tracking = args.command_name == "track"
    key = {"forge": args.forge, "owner": args.owner, "repo": args.repo}
    with connect(args) as conn:
        store = JobStore(conn)
        change = store.track_repo if tracking else store.untrack_repo
        changed = change(args.forge, args.owner, args.repo)
        if tracking:  # the key it is tracked under: `Acme Widgets` may be tracked as acme/widgets
            key = next(iter(fetch(conn, reads.TRACKED_KEY, key, dict_row)), key)
    name = f"{key['forge']}/{key['owner']}/{key['repo']}"
    if tracking:
        text = f"tracking {name}" if changed else f"{name} was already tracked"
    else:
        text = f"no longer tracking {name}" if changed else f"{name} was not tracked"
    emit(args, key | {"changed": changed}, text)
    return OK


def cmd_repos(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        repos = JobStore(conn).repo_status()
    emit(args, repos, render_repos(repos) if repos else "no tracked repositories")
    return OK


def cmd_repo(args: argparse.Namespace) -> int:
    """`repo capacity|budget`: a tracked repository's share of its lanes; `repo delivery`: what an
    agent's change to it may touch; `repo revisions`: what asks for a revision of its pull requests."""
    with connect(args) as conn:
        store = JobStore(conn)
        if args.repo_action == "delivery":
            policy = store.set_repo_delivery(
                args.forge, args.owner, args.repo, args.protected, args.allowed, args.allow_ci,
                args.max_files, args.max_bytes,
            )  # fmt: skip
            emit(args, policy, render_repo_delivery(policy))
            return OK
        if args.repo_action == "revisions":
            revisions = store.set_repo_revisions(
                args.forge, args.owner, args.repo, args.revise_on_failed_checks, args.max_revisions
            )
            checks = "ask" if revisions.revise_on_failed_checks else "do not ask"
            text = (
                f"{revisions.forge}/{revisions.owner}/{revisions.repo}: failed checks {checks} for"
                f" a revision; at most {revisions.max_revisions} revisions per request"
            )
            emit(args, revisions, text)
            return OK
        if args.repo_action == "capacity":
            limits = store.set_repo_capacity(args.forge, args.owner, args.repo, args.capacity)
        else:
            limits = store.set_repo_budget(
                args.forge, args.owner, args.repo, args.runs_per_day, args.agent_time_per_day,
                spend_budget(args),
            )  # fmt: skip
    emit(args, limits, render_repo_limit(limits))
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
            store = JobStore(conn)
            moved = store.expire_stale_claims()
            store.roll_up_history()
        emit(args, {"expired": moved}, f"returned {moved} expired claim(s)")
        return OK
    stop = StopSignals()

    def sweep(conn: psycopg.Connection[Any]) -> None:
        store = JobStore(conn)
        while not stop.stopped:
            moved = store.expire_stale_claims()
            store.roll_up_history()
            if moved:
                emit(
                    args,
                    {"expired": moved, "at": datetime.now().astimezone()},
                    f"{clock(datetime.now())} returned {moved} expired claim(s)",
                )
                sys.stdout.flush()
            stop.wait(args.every)

    # The workers' deadline and reconnect: a hung primary is left for the promoted standby within
    # seconds, so leases that end there are returned as soon as the workers are back.
    reconnecting(args, stop, sweep, deadline=WORKER_CALL_DEADLINE, reconnect_every=RECONNECT_EVERY)
    return OK


def cmd_status(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        rows = status_rows(conn)
        warning = replication_warning(conn)
        try:
            repos = JobStore(conn).repo_status()
            typos = reads.label_reports(conn)
        except PermissionDenied:
            repos, typos = [], []
    troubled = [r for r in repos if r.last_error or r.forge_error or r.mirror_error]
    backlog = sum(r.mirror_backlog for r in repos if r.registered)  # else no poller writes
    text = render_status(rows)
    if warning:
        warning = f"warning: {warning} (docs/operations.md, High availability)"
        text = f"{warning}\n\n{text}"
        if args.json:  # the JSON stays the list of lanes
            print(f"tireless: {warning}", file=sys.stderr)
    if backlog:
        text += f"\n\nmirror: {backlog} issue(s) wait for their forge labels or comment"
    if troubled:
        text += "\n\nrepositories with errors:\n" + render_repos(troubled)
    if typos:
        text += "\n\n" + render_label_reports(typos)
    emit(args, rows, text)
    return OK


JOBS_HINT = (
    "tireless jobs and show read tireless.job, which only tireless_admin may read; other roles"
    " read tireless.job_list in psql, or the dashboard"
)


def cmd_jobs(args: argparse.Namespace) -> int:
    owner, _, repo = (args.repo or "").partition("/")
    if args.repo and not repo:
        raise UsageError(f"--repo takes OWNER/REPO, got {args.repo!r}")
    words = tuple((args.title or "").split())
    filters = reads.JobFilter(
        state=args.state,
        lane=args.lane,
        kind=args.kind,
        forge=args.forge,
        owner=owner or None,
        repo=repo or None,
        since=args.since,
        words=words or None,
        worker=args.worker,
        number=args.number,
    )
    page = reads.Page(after=args.after, newest=args.newest, at_most=args.limit)
    with connect(args) as conn, admin_read():
        jobs = reads.read(conn, reads.jobs(filters, page))
        delivered = [job.id for job in jobs if job.state is JobState.DELIVERED]
        found = fetch(conn, reads.JOB_DELIVERIES, {"job_ids": delivered}, dict_row)
        measured = fetch(conn, reads.JOBS_USAGE, {"job_ids": [job.id for job in jobs]}, dict_row)
        spent = fetch(conn, reads.JOBS_SPEND, {"job_ids": [job.id for job in jobs]}, dict_row)
    deliveries = {row.pop("job_id"): row for row in found}
    usage = {row.pop("job_id"): row for row in measured}
    spend = {row["job_id"]: row["spend"] for row in spent if row["spend"] is not None}
    model_usage = {row["job_id"]: row["usage"] for row in spent}
    listed = [
        dataclasses.asdict(job)
        | {
            "delivery": deliveries.get(job.id),
            "usage": usage.get(job.id),
            "spend": spend.get(job.id),
            "model_usage": model_usage.get(job.id),
        }
        for job in jobs
    ]
    emit(args, listed, job_table(jobs, spend) if jobs else "no jobs")
    return OK


@contextmanager
def admin_read() -> Iterator[None]:
    """A refused read of tireless.job says who may read it."""
    try:
        yield
    except PermissionDenied as denied:
        denied.hint = denied.hint or JOBS_HINT
        raise


def cmd_show(args: argparse.Namespace) -> int:
    if args.transcript:
        return show_transcript(args)
    with connect(args) as conn, admin_read():
        job = reads.read(conn, reads.job(args.job))
        if job is None:
            raise UnknownJob(f"no job with id {args.job}")
        history = reads.read(conn, reads.job_events(args.job))
        attempt = next(iter(fetch(conn, reads.JOB_PROGRESS, {"job_id": args.job}, dict_row)), None)
        delivery = next(iter(fetch(conn, reads.JOB_DELIVERY, {"job_id": args.job}, dict_row)), None)
        checkpoint = next(
            iter(fetch(conn, reads.JOB_CHECKPOINT, {"job_id": args.job}, dict_row)), None
        )
        asks = fetch(conn, forge_calls.JOB_ASKS, {"job_id": args.job}, dict_row)
        network = fetch(conn, calls.JOB_NETWORK, {"job_id": args.job}, dict_row)
        usage = fetch(conn, reads.JOB_USAGE, {"job_id": args.job}, dict_row)
        model_usage = JobStore(conn).job_model_usage(args.job)
        spend = fetch(conn, reads.JOB_SPEND, {"job_id": args.job}, dict_row)[0]["spend"]
    if delivery is not None:
        delivery.pop("job_id")
    shown = {
        "job": job,
        "attempt": attempt,
        "delivery": delivery,
        "checkpoint": checkpoint,
        "asks": asks,
        "network": network,
        "usage": usage,
        "model_usage": model_usage,
        "spend": spend,
        "history": history,
    }
    text = render_job(job, history, attempt, delivery, checkpoint, asks, network, usage)
    spent = f"\n\nmodel usage:\n{usage_table(model_usage, spend)}" if model_usage else ""
    emit(args, shown, text + spent)
    return OK


def cmd_rerun(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        job_id = JobStore(conn).rerun(args.forge, args.owner, args.repo, args.number, args.kind)
        found = reads.read(conn, reads.job(job_id))
    issue = f"{args.forge}/{args.owner}/{args.repo}#{args.number}"
    text = describe(found) if found else f"job {job_id} pending for {issue}"
    emit(args, {"job": job_id}, f"rerun {issue}: {text}")
    return OK


def cmd_prune(args: argparse.Namespace) -> int:
    """Says what would go (tireless.prune_preview); deletes more than --max jobs only with --yes,
    in short transactions of at most PRUNE_BATCH jobs each, so no lock is held for long."""
    with connect(args) as conn:
        store = JobStore(conn)
        (preview,) = fetch(conn, reads.PRUNE_PREVIEW, {"older_than": args.older_than}, dict_row)
        what = f"finished job(s) unchanged for {span(args.older_than)}"
        if preview["jobs"]:
            what += f", last changed from {clock(preview['oldest'])} to {clock(preview['newest'])}"
        too_many = preview["jobs"] > args.max and not args.yes
        if args.dry_run or too_many:
            emit(
                args,
                pruned_json(preview, preview["jobs"], True),
                f"would delete {preview['jobs']} {what}",
            )
            if too_many and not args.dry_run:
                raise UsageError(
                    f"that is more than --max {args.max}: add --yes to delete them (or raise --max)"
                )
            return OK
        # Without --yes never more than --max, even if more jobs aged since the preview.
        left = None if args.yes else args.max
        pruned = 0
        while left != 0 and (
            batch := store.prune(args.older_than, min(PRUNE_BATCH, left or PRUNE_BATCH))
        ):
            pruned += batch
            left = None if left is None else left - batch
    text = f"deleted {pruned} {what}, with their history"
    emit(args, pruned_json(preview, pruned, False), text)
    return OK


def pruned_json(preview: dict[str, Any], pruned: int, dry_run: bool) -> dict[str, Any]:
    return {
        "pruned": pruned,
        "dry_run": dry_run,
        "oldest": preview["oldest"],
        "newest": preview["newest"],
    }


def cmd_cancel(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        job = JobStore(conn).request_cancel(args.job, args.note)
    if job.state == JobState.CLAIMED:
        text = (
            f"asked {job.claimed_by} to stop job {job.id}: it ends cancelled when its runner stops"
        )
    else:
        text = f"cancelled job {job.id}"
    emit(args, job, f"{text}\n{describe(job)}")
    return OK


def allowlist(args: argparse.Namespace) -> list[str] | None:
    """`lane allow-net`'s one form: HOST[:PORT]..., --off (None: no list) or --none ([])."""
    if args.off or args.none:
        if args.hosts:
            flag = "--off" if args.off else "--none"
            raise UsageError(f"lane allow-net takes hosts or {flag}, not both: {args.hosts[0]}")
        return None if args.off else []
    if not args.hosts:
        raise UsageError("lane allow-net needs HOST[:PORT]..., --off or --none")
    return list(args.hosts)


def limits_given(args: argparse.Namespace) -> dict[str, str | None]:
    """`lane limits`'s settings: those given (the store parses and checks them), or every one
    cleared with --off."""
    given = {name: getattr(args, name) for name in ("memory", "cpus", "pids", "disk")}
    if args.off:
        if named := [f"--{name}" for name, value in given.items() if value is not None]:
            raise UsageError(f"lane limits takes limits or --off, not both: {named[0]}")
        return dict.fromkeys(given, "none")
    if all(value is None for value in given.values()):
        raise UsageError("lane limits needs --memory, --cpus, --pids, --disk or --off")
    return given


def cmd_lane(args: argparse.Namespace) -> int:
    """`lane pause|resume|capacity|budget|max-run|stall-after|allow-net|limits|show`: a lane's settings,
    and its row of `tireless status`."""
    with connect(args) as conn:
        store = JobStore(conn)
        if args.lane_action == "pause":
            store.pause_lane(args.lane)
        elif args.lane_action == "resume":
            store.resume_lane(args.lane)
        elif args.lane_action == "capacity":
            store.set_lane_capacity(args.lane, args.capacity)
        elif args.lane_action == "budget":
            store.set_lane_budget(
                args.lane, args.runs_per_day, args.agent_time_per_day, spend_budget(args)
            )
        elif args.lane_action == "max-run":
            store.set_lane_max_run(args.lane, args.max_run)
        elif args.lane_action == "stall-after":
            store.set_lane_stall_after(args.lane, args.stall_after)
        elif args.lane_action == "allow-net":
            store.set_lane_network(args.lane, allowlist(args))
        elif args.lane_action == "limits":
            store.set_lane_limits(args.lane, **limits_given(args))
        elif args.lane_action == "agent":
            store.set_lane_agent(args.lane, None if args.profile == "none" else args.profile)
        rows = [row for row in status_rows(conn) if args.lane in (None, row["lane"])]
    if not rows:
        emit(args, rows, f"lane {args.lane} has no settings and no live or recent jobs")
        return OK
    emit(args, rows, render_status(rows))
    return OK


def cmd_work(args: argparse.Namespace) -> int:
    from tireless.runner.attempt import (  # `work` only
        agent_user,
        unstartable,
        unstartable_by,
        writable_directory,
    )
    from tireless.runner.config import WorkConfig
    from tireless.runner.gateway import parse_upstreams
    from tireless.runner.identity import Identities
    from tireless.runner.publisher import Publisher, state_directory
    from tireless.runner.sandbox import choose
    from tireless.runner.worker import CANNOT_START, work

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    bins = agent_bins(args.agent_bin, args.agent)
    lanes_name_theirs = args.agent == COMMAND and not command
    if lanes_name_theirs and args.command_line is not None:  # the store is read: secrets first
        keep_secrets_out_of_environment_block(args.command_line)
    if lanes_name_theirs:
        program = lanes_program(args, bins)
    else:
        program = work_program(args.agent, command, bins)
    if command and args.agent == COMMAND and os.sep in command[0]:  # `./agent`: from here
        command = [os.path.abspath(command[0]), *command[1:]]
    if problem := unstartable([program]):
        print(f"tireless: {problem}", file=sys.stderr)
        return CANNOT_START
    if args.command_line is not None and not lanes_name_theirs:
        keep_secrets_out_of_environment_block(args.command_line)
    user = None if args.agent_user is None else agent_user(args.agent_user)
    if user is not None and (problem := unstartable_by([program], user)):
        print(f"tireless: {problem}", file=sys.stderr)
        return CANNOT_START
    try:  # the secrets are read here, by the worker; their files are hidden from COMMAND
        upstreams = parse_upstreams(args.upstream, args.upstream_header, args.upstream_secret)
    except ValueError as bad:
        raise UsageError(str(bad)) from None
    secret_files = [value.partition("=")[2] for value in args.upstream_secret]
    sandbox = choose(args.sandbox, user, secret_files)  # one that cannot run here: a usage error
    if args.sandbox == "auto" and sandbox.uncontained:
        print(
            f"tireless work: warning: --sandbox auto: bubblewrap is missing or cannot run here,"
            f" so COMMAND runs under --sandbox {sandbox.name}, which does not contain it:"
            f" {sandbox.uncontained}; install bubblewrap, or say --sandbox {sandbox.name}",
            file=sys.stderr,
        )
    publisher = None
    if args.git_identity is not None and not args.deliver:
        raise UsageError("--git-identity is for --deliver: without it tireless commits nothing")
    try:
        given = None if args.git_identity is None else Identity.parse(args.git_identity)
    except ValueError as bad:
        raise UsageError(f"--git-identity: {bad}") from None
    if args.deliver:
        state_dir = args.state_dir or state_directory()
        try:
            publisher = Publisher(
                state_dir, args.git_cache_max, Identities(given), agent=user, worker=args.worker
            )
        except OSError as error:
            raise UsageError(f"--state-dir {state_dir}: {error}") from error
    with connect(args) as conn:  # a malformed URL is a usage error (2), unreachable exit 4
        if lanes := JobStore(conn).lane_problem(args.lane):
            print(f"tireless work: warning: {lanes}", file=sys.stderr)
    config = WorkConfig(
        name=args.worker,
        lanes=tuple(args.lane),
        command=tuple(command),
        sandbox=sandbox,
        lease=args.lease,
        poll=args.poll,
        grace=args.grace,
        once=args.once,
        drain_on=args.drain_on,
        progress_every=args.progress_every,
        agent=user,
        publisher=publisher,
        directory=None if publisher is not None else writable_directory(user),
        upstreams=tuple(upstreams),
        profile=args.agent,
        agent_bins=tuple(bins.items()),
    )
    if args.agent != COMMAND:
        log_agent(args.worker, args.agent, program)
    return work(database_url(args), config)


def cmd_web(args: argparse.Namespace) -> int:
    try:  # the web stack is the optional extra tireless-store[web]
        from tireless.web.app import serve
        from tireless.web.guard import SettingRefused
    except ImportError as missing:
        raise UsageError(
            f"tireless web needs the extra: pip install 'tireless-store[web]' ({missing})"
        ) from missing
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--bind takes HOST:PORT, got {args.bind!r}")
    if not 0 < args.header_timeout <= 3600:
        raise UsageError(f"--header-timeout takes 0 < SECONDS <= 3600, got {args.header_timeout}")
    database = database_url(args)
    with connect(args):
        pass  # reachable? (exit 4 if not), before the server starts listening
    stop_on_signals()
    with suppress(Stop):
        try:
            serve(database, args.bind, tuple(args.allowed_host), args.header_timeout)
        except SettingRefused as refused:
            raise UsageError(f"web: {refused}") from None
    return OK
