"""The `tireless` commands, one function each: read the parsed arguments, call the store, print
(text or `--json`) and return the exit code."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row, tuple_row

from tireless.cli.agents import COMMAND, agent_bins, lanes_program, log_agent, work_program
from tireless.cli.ledger import show_transcript, spend_budget, usage_table
from tireless.cli.render import (
    as_json,
    as_plain,
    clock,
    describe,
    job_table,
    render_findings,
    render_forges,
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
    REFUSED,
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
from tireless.credentials import app_key_variable, keep_secrets_out_of_environment_block
from tireless.errors import PermissionDenied, UnknownJob
from tireless.forge import token_variable
from tireless.forge.app_auth import app_of, load_key, refresh_apps
from tireless.forge.app_check import check_app_forge
from tireless.forge.check import MAX_REPOS, Target, check_forge, failed_required
from tireless.forge.client import AuthRefused
from tireless.forge.poll import READ_DEADLINE_FACTOR, Report, client_factory, poll_round
from tireless.git import Identity
from tireless.migrate import migrate
from tireless.models import Job, JobState, RepoStatus
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


def cmd_forge(args: argparse.Namespace) -> int:
    """`forge add|list|remove|retry`: the forge registry (tokens stay in TIRELESS_TOKEN_<NAME>)."""
    with connect(args) as conn:
        store = JobStore(conn)
        if args.forge_action == "retry":
            due = store.retry_forge(args.name)
            if not args.json:
                print(f"forge {args.name}: stop cleared; polling its {due} repositories now")
            return poll_once(args, store)
        if args.forge_action == "check":
            return forge_check(args, conn)
        if args.forge_action == "list":
            forges = store.forges()
            listed = render_forges(forges, store.forge_apps()) if forges else "no forges registered"
            emit(args, forges, listed)
            return OK
        if args.forge_action == "add":
            key_file = app_flags(args)
            changed = store.add_forge(args.name, args.kind, args.url)
            if args.app_id is not None:
                changed = store.set_forge_app(args.name, args.app_id, key_file) or changed
            credentials = (
                f"its token is read from {token_variable(args.name)}"
                if args.app_id is None
                else f"as GitHub App {args.app_id}, its key read from"
                f" {app_key_variable(args.name)}_FILE, else {key_file or 'nowhere'}"
            )
            text = (
                f"forge {args.name}: {args.kind} at {args.url}; {credentials}"
                if changed
                else f"forge {args.name} was already {args.kind} at {args.url}; {credentials}"
            )
        else:
            changed = store.remove_forge(args.name)
            text = f"removed forge {args.name}" if changed else f"no forge named {args.name}"
    emit(args, {"name": args.name, "changed": changed}, text)
    return OK


def app_flags(args: argparse.Namespace) -> str | None:
    """`forge add`'s --app-id and --app-key-file checked before anything is registered: the key
    file's absolute path (it must hold an RSA private key; only the path is registered)."""
    if args.app_key_file is not None and args.app_id is None:
        raise UsageError("--app-key-file names the key of a GitHub App: give --app-id as well")
    if args.app_id is not None and args.kind != "github":
        raise UsageError(f"--app-id is a GitHub App's: forge {args.name} is {args.kind}")
    if args.app_key_file is None:
        return None
    path = Path(args.app_key_file).resolve()
    try:
        load_key(path.read_bytes(), str(path))
    except OSError as error:
        raise UsageError(f"--app-key-file {path}: {error.strerror}") from None
    except ValueError as error:
        raise UsageError(f"--app-key-file: {error}") from None
    return str(path)


def forge_check(args: argparse.Namespace, conn: psycopg.Connection[Any]) -> int:
    """`forge check`: the findings of tireless.forge.check, for --repo or the first tracked
    repositories of the forge; exit 1 when something tireless needs is missing. The web root and
    clone URLs are the store's (tireless.forge_web_root, forge_clone_url), as the runner's are."""
    store = JobStore(conn)
    forge = next((f for f in store.forges() if f.name == args.name), None)
    if forge is None:
        raise UsageError(
            f"no forge named {args.name!r}: `tireless forge list` shows the registered ones"
        )
    if args.repo is not None:
        owner, _, repo = args.repo.partition("/")
        if not owner or not repo or "/" in repo:
            raise UsageError(f"--repo takes OWNER/REPO, got {args.repo!r}")
        repos = [(owner, repo)]
    else:
        tracked = [(r.owner, r.repo) for r in store.tracked_repos() if r.forge == forge.name]
        repos = tracked[:MAX_REPOS]
    where = {"kind": forge.kind, "base_url": forge.base_url}
    ((web_root,),) = fetch(conn, forge_calls.FORGE_WEB_ROOT, where, tuple_row)
    targets = []
    for owner, repo in repos:
        place = {**where, "owner": owner, "repo": repo}
        ((clone_url,),) = fetch(conn, forge_calls.FORGE_CLONE_URL, place, tuple_row)
        targets.append(Target(owner, repo, clone_url))
    refresh_apps(store, args.timeout)
    try:
        app = app_of(forge.name)
    except AuthRefused as broken:  # its App's key is nowhere, or not a key
        raise UsageError(str(broken)) from None
    check = check_forge if app is None else partial(check_app_forge, app=app)
    findings = check(
        forge, web_root, targets, write=args.write, deliver=args.deliver, timeout=args.timeout
    )
    emit(args, findings, render_findings(forge.name, findings))
    return REFUSED if failed_required(findings) else OK


def cmd_poll(args: argparse.Namespace) -> int:
    """One round (`--once`) or a round every `--every`: read the due repositories. Between rounds
    it LISTENs on tireless_poll: a webhook (poll_soon), a new tracking or `forge retry` starts the
    next round at once, and so does the end of a backoff or of a forge's stop when it comes
    before `--every` (tireless.next_poll_due_at). SIGINT or SIGTERM let the round under way finish
    (no repository stays leased to a poller that is gone), then end the command (exit 0)."""
    with connect(args) as conn:
        tokens_set(args, JobStore(conn))
        if args.every is None:
            return poll_once(args, JobStore(conn))
    stop = StopSignals()
    next_poll_in = timedelta(seconds=args.every)

    def poll(conn: psycopg.Connection[Any]) -> None:
        store = JobStore(conn)
        # Listening from before the first round: a repository made due during a round is read next.
        with store.listen_for_polls() as due:
            while not stop.stopped:
                poll_round(
                    store,
                    args.poller,
                    clients=client_factory(args.timeout, store),
                    next_poll_in=next_poll_in,
                    lease=args.lease,
                    read_deadline=READ_DEADLINE_FACTOR * args.timeout,
                    log=poll_log(args),
                )
                if not stop.stopped:
                    stop.listen(due, until_next_round(store, args.every))

    reconnecting(args, stop, poll)  # a lost connection is made again; exit 4 only at the start
    return OK


def tokens_set(args: argparse.Namespace, store: JobStore) -> None:
    """A usage error, before anything is sent, when a registered forge with a tracked repository
    has no token (TIRELESS_TOKEN_<NAME> nor its _FILE), unless --anonymous reads public
    repositories without: a forge would refuse the reads, and the poll would stop it for a while."""
    if args.anonymous:
        return
    registered = {forge.name for forge in store.forges()}  # the others are skipped, and said so
    registered -= {app.name for app in store.forge_apps()}  # a GitHub App mints its own tokens
    tracked = {r.forge for r in store.tracked_repos() if r.forge in registered}
    unset = sorted({token_variable(forge) for forge in tracked} - set(os.environ))
    unset = [name for name in unset if name + "_FILE" not in os.environ]
    if unset:
        raise UsageError(
            f"{' and '.join(unset)} is not set (nor {unset[0]}_FILE): nothing was sent to the"
            " forge; set it to the forge's token, or pass --anonymous to read public"
            " repositories without one"
        )


POLL_WAKE_MARGIN = 0.05
"""Seconds past a repository's due time that an idle poller wakes, so the round finds it due."""
POLL_WAIT_FLOOR = 0.5
"""The shortest timed wait between two rounds: a repository due at once is read by the next round
already, and the floor keeps an edge case from spinning."""


def until_next_round(store: JobStore, every: float) -> float:
    """Seconds until the next round without a notification: --every, or sooner when a repository
    becomes due before (a backoff or a forge's stop ends: no notification says so)."""
    due_in = store.next_poll_in()
    if due_in is None:
        return every
    return min(every, max(due_in + POLL_WAKE_MARGIN, POLL_WAIT_FLOOR))


def poll_log(args: argparse.Namespace) -> Callable[[Report], None]:
    def log(report: Report) -> None:
        if args.json:
            print(json.dumps(as_plain(report)), flush=True)
        else:
            print(f"{clock(datetime.now())} {report.line()}", flush=True)

    return log


def poll_once(args: argparse.Namespace, store: JobStore) -> int:
    """One round, then what it could not read and why: 1 when a repository failed, or when none
    could be read because its forge is stopped or not registered."""
    reports = poll_round(
        store,
        args.poller,
        clients=client_factory(args.timeout, store),
        lease=args.lease,
        read_deadline=READ_DEADLINE_FACTOR * args.timeout,
        log=poll_log(args),
    )
    failed = sum(r.error is not None for r in reports)
    try:
        unread = unread_forges(store.repo_status())
    except PermissionDenied:
        unread = []
    for line in unread:
        print(as_json(line) if args.json else skipped_line(line))
    if not args.json:
        print(f"polled {len(reports)} repositories, {failed} failed")
    return REFUSED if failed or (unread and not reports) else OK


def unread_forges(repos: Sequence[RepoStatus]) -> list[dict[str, Any]]:
    """The forges whose tracked repositories a round skips: stopped until a time, or unregistered."""
    now = datetime.now(UTC)
    skipped: dict[str, dict[str, Any]] = {}
    for repo in repos:
        stopped = repo.forge_limited_until is not None and repo.forge_limited_until > now
        if repo.registered and not stopped:
            continue
        entry = skipped.setdefault(
            repo.forge,
            {
                "forge": repo.forge,
                "registered": repo.registered,
                "until": repo.forge_limited_until if repo.registered else None,
                "error": repo.forge_error,
                "skipped": 0,
            },
        )
        entry["skipped"] += 1
    return list(skipped.values())


def skipped_line(forge: dict[str, Any]) -> str:
    name, skipped = forge["forge"], forge["skipped"]
    if not forge["registered"]:
        return (
            f"skipped {skipped} repositories of forge {name}: it is not registered"
            f" (tireless forge add {name} --kind gitea|forgejo|github --url URL)"
        )
    return (
        f"skipped {skipped} repositories of forge {name}: stopped until"
        f" {clock(forge['until'])} ({forge['error']}); `tireless forge retry {name}` asks again now"
    )


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
