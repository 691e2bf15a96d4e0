"""The poll loop: one round claims the repositories that are due (`claim_repos_to_poll`), reads
each from its forge, and hands what it read to the store in one transaction per repository
(`record_poll`), or records why it could not (`record_poll_failure`, `record_forge_trouble`).
The rules (the work rule, backoff, leases) are the database's; this module only reads forges.

Each forge is read in a thread of its own, its repositories one after another, so a slow or dead
forge holds up only itself; every request has its timeout and every repository's round (the
mirror's writes, the read, the conversation) a deadline (READ_DEADLINE_FACTOR timeouts), retries
included; a request that times out is the forge's last this round (forge/http.py). While the round runs, a keeper renews the
poller's leases every third of the lease: the lease can be short (a minute), and a poller that
dies frees its repositories within it.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tireless.credentials import app_key_variable
from tireless.errors import NotHolder, TirelessError
from tireless.forge import client_for, token_for, token_variable
from tireless.forge.app_auth import app_of, has_app, refresh_apps
from tireless.forge.client import (
    AuthRefused,
    ForgeClient,
    ForgeIssue,
    ForgeStopped,
    IssueMoved,
    IssueRef,
    OddIssue,
    ReadFailed,
    TooLarge,
)
from tireless.forge.conversation import read_conversation
from tireless.forge.mirror import issue_row, mirror_repository
from tireless.forge.pull_fate import record_fates
from tireless.models import RepoToPoll
from tireless.outcomes import PullFate
from tireless.store import JobStore
from tireless.store.calls import DEFAULT_POLL_LEASE

OVERLAP = timedelta(minutes=1)
"""An incremental read asks for issues updated since the cursor minus this much: a change the
forge stamped with an older time than one we saw (clocks, transactions committing late) is
still read. Reading an issue again changes nothing in the store."""


READ_DEADLINE_FACTOR = 4
"""A repository's round (the mirror's writes, its listings, the issues fetched one by one, the
conversation, every retry) is given up after this many request timeouts: two minutes with the
default 30 s. A forge that does not answer costs its round one timeout (forge/http.py)."""


def default_poller_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True, slots=True)
class Read:
    """What one repository's read produced, ready for `record_poll`."""

    issues: tuple[ForgeIssue, ...]
    deleted: tuple[int, ...]
    cursor: datetime | None
    etag: str | None
    pages: int
    not_modified: bool
    limited_until: datetime | None
    moved: tuple[tuple[int, str], ...] = ()
    """Issues the forge says moved to another repository: (number, where to: owner/name#N)."""
    moved_to: str | None = None
    """owner/name the forge gives the repository now, when it redirected us there."""
    skipped: tuple[str, ...] = ()
    """Issues left out as too large to read, each said why."""
    pulls: tuple[tuple[int, datetime], ...] = ()
    """Pull requests the listings showed, with their `updated_at`: their conversation may have
    changed."""
    depends_on: tuple[tuple[int, tuple[IssueRef, ...]], ...] = ()
    """The forge's own dependency relations read this round, per issue number (an issue not
    here was not read: the store keeps what it has)."""
    odd: tuple[tuple[int, str], ...] = ()
    """Issues left out because a field of theirs cannot be taken: (number, why)."""
    fates: tuple[PullFate, ...] = ()
    """What became of the pull requests the listings showed (the newest listing's word on each)."""


@dataclass(slots=True)
class Report:
    """One repository's part of a round, for the log line and `--json`."""

    forge: str
    owner: str
    repo: str
    issues_read: int = 0
    pages: int = 0
    created: int = 0
    cancelled: int = 0
    rerouted: int = 0
    deleted: int = 0
    revisions: int = 0
    """Jobs the conversation asked for (reviews, commands, failed checks)."""
    refused: int = 0
    """Asks of the conversation refused (no write access, the revision limit, the same failure)."""
    stopped: int = 0
    """Jobs a `/tireless stop` stopped."""
    conversation_requests: int = 0
    skipped_issues: int = 0
    """Issues left out as malformed (the poller's odd ones and those the store refused)."""
    not_modified: bool = False
    mirrored: int = 0
    mirror_failed: int = 0
    mirror_error: str | None = None
    moved_to: str | None = None
    warning: str | None = None
    error: str | None = None
    retry_at: datetime | None = None

    @property
    def name(self) -> str:
        return f"{self.forge}/{self.owner}/{self.repo}"

    @property
    def did_something(self) -> bool:
        return bool(
            self.error
            or self.warning
            or self.moved_to
            or self.created
            or self.revisions
            or self.refused
            or self.stopped
            or self.cancelled
            or self.rerouted
            or self.mirrored
            or self.mirror_failed
            or self.skipped_issues
        )

    def line(self) -> str:
        """`gitea/acme/widgets: 3 new jobs, 1 cancelled, 120 issues read in 2 pages`."""
        if self.error is not None:
            retry = f" (next try {self.retry_at:%H:%M:%S}Z)" if self.retry_at else ""
            return f"{self.name}: poll failed: {self.error}{retry}"
        parts = [f"{self.created} new job{'s' if self.created != 1 else ''}"]
        if self.cancelled:
            parts.append(f"{self.cancelled} cancelled")
        if self.rerouted:
            parts.append(f"{self.rerouted} re-routed")
        if self.revisions:
            parts.append(f"{self.revisions} asked in the conversation")
        if self.stopped:
            parts.append(f"{self.stopped} stopped by /tireless stop")
        if self.refused:
            parts.append(f"{self.refused} refused in the conversation")
        read = f"{self.issues_read} issue{'s' if self.issues_read != 1 else ''} read"
        parts.append(f"{read} in {self.pages} page{'s' if self.pages != 1 else ''}")
        if self.mirrored:
            parts.append(f"{self.mirrored} issue{'s' if self.mirrored != 1 else ''} mirrored")
        if self.mirror_failed:
            parts.append(f"{self.mirror_failed} mirror write(s) failed: {self.mirror_error}")
        if self.skipped_issues:
            parts.append(f"{self.skipped_issues} malformed issue(s) left out (`tireless repos`)")
        if self.moved_to:
            parts.append(f"moved to {self.moved_to}")
        if self.warning:
            parts.append(f"warning: {self.warning}")
        return f"{self.name}: " + ", ".join(parts)


def read_repository(client: ForgeClient, target: RepoToPoll) -> Read:
    """Read a repository: the issues changed since its cursor (with an overlap) and, on a full
    listing, every open issue, then each live job's issue that neither showed, one by one (gone:
    `deleted`). The cursor moves only with the `updated_at` values of the incremental read (or of
    the first full listing), never with our clock. Raises ReadFailed."""
    owner, repo = target.owner, target.repo
    cursor = target.cursor
    found: dict[int, ForgeIssue] = {}
    pages = 0
    etag = target.etag
    not_modified = False
    limited_until = None
    moved_to: str | None = None
    skipped: list[str] = []
    odd: dict[int, str] = {}
    pulls: dict[int, datetime] = {}
    fates: dict[int, PullFate] = {}

    def keep(issues: Iterable[ForgeIssue]) -> None:
        for issue in issues:
            seen = found.get(issue.number)
            if seen is None or issue.updated_at > seen.updated_at:
                found[issue.number] = issue

    if cursor is not None or not target.full_listing:
        since = None if cursor is None else cursor - OVERLAP
        listing = client.list_issues(owner, repo, since=since, state="all", etag=etag)
        pages += listing.pages
        not_modified, etag, limited_until = (
            listing.not_modified,
            listing.etag,
            listing.limited_until,
        )
        keep(listing.issues)
        odd.update(listing.odd)
        _newer(pulls, listing.pulls)
        fates.update((fate.pull, fate) for fate in listing.fates)
        cursor = _newest(cursor, listing.issues)
        moved_to, skipped = listing.moved_to, list(listing.skipped)
    deleted: list[int] = []
    moved: list[tuple[int, str]] = []
    if target.full_listing:
        everything_open = client.list_issues(owner, repo, since=None, state="open")
        pages += everything_open.pages
        limited_until = everything_open.limited_until or limited_until
        not_modified = False
        keep(everything_open.issues)
        odd.update(everything_open.odd)
        _newer(pulls, everything_open.pulls)
        fates.update((fate.pull, fate) for fate in everything_open.fates)
        moved_to = everything_open.moved_to or moved_to
        skipped += everything_open.skipped
        if target.cursor is None:
            cursor = _newest(cursor, everything_open.issues)
        for number in sorted(set(target.live_numbers) - found.keys() - odd.keys()):
            try:
                issue = client.get_issue(owner, repo, number)
            except OddIssue as left_out:
                odd[left_out.number] = left_out.problem
                continue
            except IssueMoved as gone:
                moved.append((number, gone.to))
                continue
            except TooLarge as error:  # skipped in the listing too: said, not concluded
                skipped.append(f"issue #{number} skipped: {error}")
                continue
            if issue is None:
                deleted.append(number)
            else:
                found[number] = issue
    issues = tuple(found[number] for number in sorted(found))
    relations = read_dependencies(client, target, issues, skipped)
    return Read(
        issues,
        tuple(deleted),
        cursor,
        etag,
        pages,
        not_modified,
        limited_until,
        tuple(moved),
        moved_to,
        tuple(dict.fromkeys(skipped)),
        tuple(pulls.items()),
        tuple(relations.items()),
        tuple(
            (number, problem[:500])
            for number, problem in sorted(odd.items())
            if number not in found
        ),
        tuple(fates[pull] for pull in sorted(fates)),
    )


def dependency_reads(target: RepoToPoll, issues: Iterable[ForgeIssue]) -> list[ForgeIssue]:
    """The issues whose forge relations this read asks for: each open one carrying the opt-in
    label that changed since the repository's cursor (all of them at the first read), and on a
    full listing each issue of a waiting job, changed or not (a forge's dependency change need
    not move the issue's `updated_at`: GitHub's does not, and Gitea sends no webhook for one)."""
    waiting = set(target.waiting_numbers) if target.full_listing else set()
    return [
        issue
        for issue in issues
        if issue.number in waiting
        or (
            issue.state == "open"
            and (target.opt_in is None or target.opt_in in issue.labels)
            and (target.cursor is None or issue.updated_at > target.cursor)
        )
    ]


def read_dependencies(
    client: ForgeClient, target: RepoToPoll, issues: Iterable[ForgeIssue], notes: list[str]
) -> dict[int, tuple[IssueRef, ...]]:
    """The forge's relations of the issues `dependency_reads` picks, per number. An issue whose
    listing says it has none (GitHub's summaries) costs no request; one whose relations the forge
    does not offer here (feature off, no right: the client's None) has none; a read that fails is
    said in `notes` and left out, so the store keeps what it had. A stop (rate limit, refused
    credentials) ends the read as any other request's would."""
    relations: dict[int, tuple[IssueRef, ...]] = {}
    for issue in dependency_reads(target, issues):
        if issue.forge_relations_known_none:
            relations[issue.number] = ()
            continue
        try:
            refs = client.issue_dependencies(
                target.owner,
                target.repo,
                issue.number,
                blocked_by=issue.forge_dependencies is not False,
                sub_issues=issue.forge_sub_issues is not False,
            )
        except ForgeStopped:
            raise
        except ReadFailed as error:
            notes.append(f"issue #{issue.number}: its forge dependencies were not read: {error}")
            continue
        relations[issue.number] = tuple(_spelled(target, ref) for ref in refs or ())
    return relations


def _spelled(target: RepoToPoll, ref: IssueRef) -> IssueRef:
    """A relation in the polled repository, under the name it is tracked by (the forge may
    spell the owner or name in another case)."""
    if (ref.owner.lower(), ref.repo.lower()) == (target.owner.lower(), target.repo.lower()):
        return IssueRef(target.owner, target.repo, ref.number)
    return ref


def _newer(pulls: dict[int, datetime], listed: Iterable[tuple[int, datetime]]) -> None:
    """Keeps each pull request's newest `updated_at` among those listed."""
    for number, at in listed:
        pulls[number] = max(at, pulls.get(number, at))


def _newest(cursor: datetime | None, issues: Iterable[ForgeIssue]) -> datetime | None:
    """The newest `updated_at` among the cursor and the issues read."""
    times = [i.updated_at for i in issues] + ([cursor] if cursor is not None else [])
    return max(times, default=None)


def issue_rows(
    target: RepoToPoll,
    issues: Sequence[ForgeIssue],
    depends_on: Mapping[int, Sequence[IssueRef]] | None = None,
) -> list[dict[str, Any]]:
    """The issues in the format `record_poll` (like `enqueue`) takes, with their bodies (the
    mirror's read-back leaves the body out, and the store keeps the one it has) and, for those
    whose forge relations were read (`depends_on`), those relations."""
    relations = depends_on or {}
    rows = []
    for issue in issues:
        row = issue_row(target, issue) | {"body": issue.body}
        if issue.number in relations:
            row["depends_on"] = [
                {"owner": ref.owner, "repo": ref.repo, "number": ref.number}
                for ref in relations[issue.number]
            ]
        rows.append(row)
    return rows


ClientFactory = Callable[[RepoToPoll], ForgeClient]


def client_factory(timeout: float, store: JobStore | None = None) -> ClientFactory:
    """Clients built from the forge registry's rows, tokens from TIRELESS_TOKEN_<NAME>, or
    minted for the forge's GitHub App (the registry's Apps read from `store`, when given)."""
    if store is not None:
        refresh_apps(store, timeout)

    def build(target: RepoToPoll) -> ForgeClient:
        app = app_of(target.forge)  # AuthRefused when its App's key is nowhere: the forge stops
        token = token_for(target.forge)
        return client_for(target.kind, target.base_url, token, timeout=timeout, app=app)

    return build


def poll_round(
    store: JobStore,
    poller: str,
    *,
    clients: ClientFactory,
    next_poll_in: timedelta = timedelta(0),
    lease: timedelta = DEFAULT_POLL_LEASE,
    max_repos: int = 100,
    read_deadline: float | None = None,
    log: Callable[[Report], None] = lambda report: None,
) -> list[Report]:
    """One round: every due repository this poller could lease, read and recorded; a report
    each, in the order they were leased. Each forge is read in its own thread; a forge that stops
    (rate limit, refused credentials) is not asked again this round. `read_deadline`: seconds a
    repository's round may take, the mirror's writes and its read (None: no deadline beyond each
    request's timeout). Then it rolls the history up for the dashboard (tireless.roll_up_history),
    as the sweeper does."""
    targets = store.claim_repos_to_poll(poller, lease, max_repos)
    by_forge: dict[str, list[RepoToPoll]] = {}
    for target in targets:
        by_forge.setdefault(target.forge, []).append(target)
    reports = {id(target): Report(target.forge, target.owner, target.repo) for target in targets}
    log_turn = threading.Lock()

    def logged(report: Report) -> None:
        with log_turn:
            log(report)

    def poll_forge(forge_targets: list[RepoToPoll]) -> None:
        client: ForgeClient | None = None
        stopped: dict[str, ForgeStopped] = {}
        started = time.monotonic()
        try:
            for target in forge_targets:
                report = reports[id(target)]
                if target.forge in stopped:
                    _fail(store, poller, target, report, stopped[target.forge])
                elif read_deadline is not None and time.monotonic() - started > read_deadline:
                    # A slow forge gets one read deadline to start its reads each round: the
                    # round ends within two, and the repositories left wait for the next one.
                    late = ReadFailed("not read: its forge was too slow this round")
                    late.retry_after = timedelta(0)
                    _fail(store, poller, target, report, late)
                else:
                    try:
                        client = client or clients(target)
                    except ForgeStopped as stop:  # its App's key is nowhere
                        _stop_forge(store, poller, target, report, stop, stopped)
                    else:
                        _poll_one(
                            store, poller, client, target, report, next_poll_in, read_deadline,
                            stopped,
                        )  # fmt: skip
                if report.did_something:
                    logged(report)
        finally:
            if client is not None:
                client.close()

    if targets:
        with _leases_kept(store, poller, lease), ThreadPoolExecutor(len(by_forge)) as pool:
            for done in [pool.submit(poll_forge, group) for group in by_forge.values()]:
                done.result()
    store.roll_up_history()  # a writer's chore, so that the dashboard's reads write nothing
    return [reports[id(target)] for target in targets]


@contextmanager
def _leases_kept(store: JobStore, poller: str, lease: timedelta) -> Iterator[None]:
    """Renews the poller's poll leases every third of `lease` while the block runs."""
    done = threading.Event()

    def keep() -> None:
        while not done.wait(lease.total_seconds() / 3):
            try:
                store.renew_poll_leases(poller, lease)
            except Exception:  # the database is away: the leases run out, others take over
                continue

    keeper = threading.Thread(target=keep, name="poll-lease-keeper", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        done.set()
        keeper.join()


def _poll_one(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    report: Report,
    next_poll_in: timedelta,
    read_deadline: float | None,
    stopped: dict[str, ForgeStopped],
) -> None:
    # One deadline for the repository's round, the mirror's writes and the read alike (the mirror's
    # writes have their own smaller budget, MIRROR_BUDGET, so a backlog leaves the read its time).
    client.set_deadline(read_deadline)
    # The mirror first, under the same poll lease: the read that follows then sees the issues as
    # the mirror left them, and a withdrawal it recorded is not undone by an older listing.
    try:
        mirrored = mirror_repository(store, poller, client, target)
    except ForgeStopped as stop:
        _stop_forge(store, poller, target, report, stop, stopped)
        return
    except NotHolder as lost:
        report.error = f"lost the poll lease: {lost}"
        return
    except Exception as error:  # a bug or a surprise: the mirror waits, the read goes on
        report.mirror_failed, report.mirror_error = 1, f"{type(error).__name__}: {error}"
    else:
        report.mirrored, report.mirror_failed = mirrored.applied, mirrored.failed
        report.mirror_error = mirrored.last_error
    try:
        read = read_repository(client, target)
    except ForgeStopped as stop:
        _stop_forge(store, poller, target, report, stop, stopped)
        return
    except ReadFailed as failure:
        _fail(store, poller, target, report, failure)
        return
    except Exception as error:  # a bug or a surprise: this repository fails, the others go on
        _fail(store, poller, target, report, ReadFailed(f"{type(error).__name__}: {error}"))
        return
    report.issues_read, report.pages = len(read.issues), read.pages
    report.not_modified, report.deleted = read.not_modified, len(read.deleted)
    report.moved_to = read.moved_to
    report.warning = "; ".join(read.skipped) or None
    # The conversation before the issues are recorded, under the same lease (record_poll releases it):
    # record_poll then makes the job a command asked for on an issue it records for the first time.
    try:
        talk = read_conversation(
            store,
            poller,
            client,
            target,
            issues_updated=[issue.updated_at for issue in read.issues],
            pulls_changed=read.pulls,
        )
    except ForgeStopped as stop:
        _stop_forge(store, poller, target, report, stop, stopped)
        return
    except NotHolder as lost:
        report.error = f"lost the poll lease: {lost}"
        return
    except Exception as error:  # the issues are recorded all the same; the conversation next time
        failed = f"the conversation was not read: {type(error).__name__}: {error}"
        report.warning = "; ".join(filter(None, (report.warning, failed)))
    else:
        report.revisions, report.refused, report.stopped = talk.created, talk.refused, talk.stopped
        report.conversation_requests = talk.requests
        if talk.skipped:
            report.warning = "; ".join(filter(None, (report.warning, *talk.skipped)))
    try:  # after the conversation, under the same lease: a merged pull request asks nothing more
        unrecorded = record_fates(store, poller, target, read.fates)
    except NotHolder as lost:
        report.error = f"lost the poll lease: {lost}"
        return
    if unrecorded is not None:
        report.warning = "; ".join(filter(None, (report.warning, unrecorded)))
    try:
        for number, to in read.moved:
            note = f"issue moved to {to}"
            report.cancelled += store.record_issue_moved(
                target.forge, target.owner, target.repo, poller, number, note
            )
        if read.moved_to is not None or report.warning is not None:
            store.record_poll_notice(
                target.forge, target.owner, target.repo, poller, read.moved_to, report.warning
            )
        outcome = store.record_poll(
            target.forge,
            target.owner,
            target.repo,
            poller,
            issue_rows(target, read.issues, dict(read.depends_on)),
            read.cursor,
            read.etag,
            target.full_listing,
            list(read.deleted),
            next_poll_in,
            read.odd,
        )
    except NotHolder as lost:  # the lease ran out while we read: the next holder reads again
        report.error = f"lost the poll lease: {lost}"
        return
    except TirelessError as refused:
        _fail(store, poller, target, report, ReadFailed(f"the store refused the read: {refused}"))
        return
    report.created, report.rerouted = outcome.created, outcome.rerouted
    report.skipped_issues = outcome.skipped
    report.cancelled += outcome.cancelled
    if read.limited_until is not None:
        store.record_forge_trouble(
            target.forge, "no requests left until the rate limit resets", read.limited_until
        )
        stopped[target.forge] = ForgeStopped(
            f"{target.forge}: rate limit spent until {read.limited_until:%H:%M:%S}Z",
            read.limited_until,
        )


def _stop_forge(
    store: JobStore,
    poller: str,
    target: RepoToPoll,
    report: Report,
    stop: ForgeStopped,
    stopped: dict[str, ForgeStopped],
) -> None:
    """The forge is asked nothing more until stop.until; refused credentials name the variable
    the token is read from, and how to ask again at once."""
    if isinstance(stop, AuthRefused):
        source = (
            f"the App's key is read from {app_key_variable(target.forge)}[_FILE] or its key file"
            if has_app(target.forge)
            else f"the token is read from {token_variable(target.forge)}"
        )
        stop = AuthRefused(
            f"{stop} ({source}; once it is right,"
            f" `tireless forge retry {target.forge}` asks again at once)",
            stop.until,
        )
    stopped[target.forge] = stop
    store.record_forge_trouble(target.forge, str(stop), stop.until)
    _fail(store, poller, target, report, stop)


def _fail(
    store: JobStore, poller: str, target: RepoToPoll, report: Report, failure: ReadFailed
) -> None:
    report.error = str(failure)
    retry_after = failure.retry_after
    if isinstance(failure, ForgeStopped):
        retry_after = max(failure.until - datetime.now(UTC), timedelta(0))
    try:
        report.retry_at = store.record_poll_failure(
            target.forge, target.owner, target.repo, poller, report.error, retry_after
        )
    except NotHolder:  # the lease ran out while we read: its next holder reads again
        report.error += " (the poll lease had run out)"
