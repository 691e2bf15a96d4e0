"""The `tireless forge` and `tireless poll` commands: the forge registry and its check, and the
poller's rounds (once, or every so often until stopped) with what each round read and skipped."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from tireless.cli.render import (
    as_json,
    as_plain,
    clock,
    render_findings,
    render_forges,
)
from tireless.cli.session import (
    OK,
    REFUSED,
    StopSignals,
    UsageError,
    connect,
    emit,
    reconnecting,
)
from tireless.credentials import app_key_variable
from tireless.errors import PermissionDenied
from tireless.forge import token_variable
from tireless.forge.app_auth import app_of, load_key, refresh_apps
from tireless.forge.app_check import check_app_forge
from tireless.forge.check import MAX_REPOS, Target, check_forge, failed_required
from tireless.forge.client import AuthRefused
from tireless.forge.poll import READ_DEADLINE_FACTOR, Report, client_factory, poll_round
from tireless.models import RepoStatus
from tireless.store import JobStore, forge_calls
from tireless.store.reads import fetch


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
