"""The statements of the forge's side of the store, each beside its parameters and the shape of its
rows, as tireless.store.calls has those of the job's: the forge registry and the poll's
bookkeeping, the mirror's labels and its outbox of forge writes, and the conversation on a pull
request. JobStore and AsyncJobStore run them as they run the others."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg import sql
from psycopg.rows import args_row, class_row, kwargs_row, tuple_row
from psycopg.types.json import Jsonb

from tireless.conversation import ConversationOutcome, ConversationToRead
from tireless.models import (
    DiscoveredIssue,
    Forge,
    ForgeApp,
    ForgeKind,
    ForgeWrite,
    JobAsk,
    MirrorWrite,
    PollOutcome,
    RepoRevisions,
    RepoStatus,
    RepoToPoll,
    WriteKind,
)
from tireless.store.calls import (
    REPO_STATUS_COLUMNS,
    Call,
    _count,
    _flag,
    _nothing,
    _only,
    _repo,
    _rows,
    _value,
    issues_json,
)

# Forges and polling
ADD_FORGE = (
    "SELECT tireless.add_forge(name => %(name)s, kind => %(kind)s, base_url => %(base_url)s)"
)


def add_forge(name: str, kind: ForgeKind | str, base_url: str) -> Call[Any, bool]:
    params = {"name": name, "kind": kind, "base_url": base_url}
    return Call(ADD_FORGE, params, tuple_row, _flag)


REMOVE_FORGE = "SELECT tireless.remove_forge(name => %(name)s)"


def remove_forge(name: str) -> Call[Any, bool]:
    return Call(REMOVE_FORGE, {"name": name}, tuple_row, _flag)


FORGES = "SELECT name, kind, base_url FROM tireless.forges()"
FORGE_WEB_ROOT = (
    "SELECT tireless.forge_web_root(kind => %(kind)s::tireless.forge_kind,"
    " base_url => %(base_url)s)"
)
FORGE_CLONE_URL = (
    "SELECT tireless.forge_clone_url(kind => %(kind)s::tireless.forge_kind,"
    " base_url => %(base_url)s, owner => %(owner)s, repo => %(repo)s)"
)
"""`tireless forge check`'s (tireless_admin): where people, and the runner's git, reach a forge."""


def forges() -> Call[Forge, list[Forge]]:
    return Call(FORGES, {}, kwargs_row(Forge.from_row), _rows)


SET_FORGE_APP = (
    "SELECT tireless.set_forge_app(name => %(name)s, app_id => %(app_id)s,"
    " app_key_file => %(app_key_file)s)"
)


def set_forge_app(name: str, app_id: int | None, app_key_file: str | None) -> Call[Any, bool]:
    params = {"name": name, "app_id": app_id, "app_key_file": app_key_file}
    return Call(SET_FORGE_APP, params, tuple_row, _flag)


FORGE_APPS = "SELECT name, app_id, app_key_file FROM tireless.forge_apps()"


def forge_apps() -> Call[ForgeApp, list[ForgeApp]]:
    return Call(FORGE_APPS, {}, class_row(ForgeApp), _rows)


CHECK_FORGE = "SELECT tireless.check_forge(name => %(name)s)"


def check_forge(name: str) -> Call[Any, None]:
    return Call(CHECK_FORGE, {"name": name}, tuple_row, _nothing)


RETRY_FORGE = "SELECT tireless.retry_forge(name => %(name)s)"


def retry_forge(name: str) -> Call[Any, int]:
    return Call(RETRY_FORGE, {"name": name}, tuple_row, _count)


CLAIM_REPOS_TO_POLL = (
    "SELECT forge, owner, repo, kind, base_url, cursor, etag, full_listing, live_numbers, opt_in,"
    " waiting_numbers FROM tireless.claim_repos_to_poll(poller => %(poller)s, lease => %(lease)s,"
    " max_repos => %(max_repos)s)"
)


def claim_repos_to_poll(
    poller: str, lease: timedelta, max_repos: int
) -> Call[RepoToPoll, list[RepoToPoll]]:
    params = {"poller": poller, "lease": lease, "max_repos": max_repos}
    return Call(CLAIM_REPOS_TO_POLL, params, kwargs_row(RepoToPoll.from_row), _rows)


RECORD_POLL = (
    "SELECT created, cancelled, rerouted, seen, skipped FROM tireless.record_poll(forge => %(forge)s,"
    " owner => %(owner)s, repo => %(repo)s, poller => %(poller)s, issues => %(issues)s,"
    " cursor => %(cursor)s, etag => %(etag)s, full_listing => %(full_listing)s,"
    " deleted => %(deleted)s::integer[], next_poll_in => %(next_poll_in)s, odd => %(odd)s)"
)


def record_poll(
    forge: str,
    owner: str,
    repo: str,
    poller: str,
    issues: Iterable[DiscoveredIssue | Mapping[str, Any]],
    cursor: datetime | None,
    etag: str | None,
    full_listing: bool,
    deleted: Sequence[int],
    next_poll_in: timedelta,
    odd: Sequence[tuple[int, str]] = (),
) -> Call[PollOutcome, PollOutcome]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "issues": issues_json(issues),
        "cursor": cursor,
        "etag": etag,
        "full_listing": full_listing,
        "deleted": list(deleted),
        "next_poll_in": next_poll_in,
        "odd": Jsonb([{"number": number, "problem": problem} for number, problem in odd]),
    }
    return Call(RECORD_POLL, params, class_row(PollOutcome), _only)


RECORD_POLL_FAILURE = (
    "SELECT tireless.record_poll_failure(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, error => %(error)s, retry_after => %(retry_after)s)"
)


def record_poll_failure(
    forge: str, owner: str, repo: str, poller: str, error: str, retry_after: timedelta | None
) -> Call[Any, datetime]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "error": error,
        "retry_after": retry_after,
    }
    return Call(RECORD_POLL_FAILURE, params, tuple_row, _value)


RENEW_POLL_LEASES = "SELECT tireless.renew_poll_leases(poller => %(poller)s, lease => %(lease)s)"


def renew_poll_leases(poller: str, lease: timedelta) -> Call[Any, int]:
    return Call(RENEW_POLL_LEASES, {"poller": poller, "lease": lease}, tuple_row, _value)


RECORD_POLL_NOTICE = (
    "SELECT tireless.record_poll_notice(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, moved_to => %(moved_to)s, warning => %(warning)s)"
)


def record_poll_notice(
    forge: str, owner: str, repo: str, poller: str, moved_to: str | None, warning: str | None
) -> Call[Any, None]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "moved_to": moved_to,
        "warning": warning,
    }
    return Call(RECORD_POLL_NOTICE, params, tuple_row, _nothing)


RECORD_ISSUE_MOVED = (
    "SELECT tireless.record_issue_moved(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, number => %(number)s, note => %(note)s)"
)


def record_issue_moved(
    forge: str, owner: str, repo: str, poller: str, number: int, note: str
) -> Call[Any, int]:
    params = _repo(forge, owner, repo) | {"poller": poller, "number": number, "note": note}
    return Call(RECORD_ISSUE_MOVED, params, tuple_row, _value)


RECORD_ISSUE_GONE = (
    "SELECT tireless.record_issue_gone(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, number => %(number)s, note => %(note)s)"
)


def record_issue_gone(
    forge: str, owner: str, repo: str, poller: str, number: int, note: str
) -> Call[Any, int]:
    params = _repo(forge, owner, repo) | {"poller": poller, "number": number, "note": note}
    return Call(RECORD_ISSUE_GONE, params, tuple_row, _value)


RECORD_REPO_ARCHIVED = (
    "SELECT tireless.record_repo_archived(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s)"
)


def record_repo_archived(forge: str, owner: str, repo: str, poller: str) -> Call[Any, datetime]:
    params = _repo(forge, owner, repo) | {"poller": poller}
    return Call(RECORD_REPO_ARCHIVED, params, tuple_row, _value)


RECORD_FORGE_TROUBLE = (
    "SELECT tireless.record_forge_trouble(name => %(name)s, error => %(error)s, until => %(until)s)"
)


def record_forge_trouble(name: str, error: str | None, until: datetime | None) -> Call[Any, None]:
    params = {"name": name, "error": error, "until": until}
    return Call(RECORD_FORGE_TROUBLE, params, tuple_row, _nothing)


MIRROR_WRITES = (
    "SELECT number, job_id, state, state_label, drop_labels, job_began, opt_in, mode_labels"
    " FROM tireless.mirror_writes(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, max_writes => %(max_writes)s)"
)


def mirror_writes(
    forge: str, owner: str, repo: str, poller: str, max_writes: int
) -> Call[MirrorWrite, list[MirrorWrite]]:
    params = _repo(forge, owner, repo) | {"poller": poller, "max_writes": max_writes}
    return Call(MIRROR_WRITES, params, kwargs_row(MirrorWrite.from_row), _rows)


RECORD_MIRROR_WRITE = (
    "SELECT tireless.record_mirror_write(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, number => %(number)s, job_id => %(job_id)s, state => %(state)s,"
    " issue => %(issue)s)"
)


def record_mirror_write(
    forge: str,
    owner: str,
    repo: str,
    poller: str,
    write: MirrorWrite,
    issue: DiscoveredIssue | Mapping[str, Any] | None,
) -> Call[Any, bool]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "number": write.number,
        "job_id": write.job_id,
        "state": str(write.state),
        "issue": None if issue is None else Jsonb(issues_json([issue]).obj[0]),
    }
    return Call(RECORD_MIRROR_WRITE, params, tuple_row, _flag)


RECORD_MIRROR_FAILURE = (
    "SELECT tireless.record_mirror_failure(forge => %(forge)s, owner => %(owner)s,"
    " repo => %(repo)s, poller => %(poller)s, number => %(number)s, job_id => %(job_id)s,"
    " state => %(state)s, error => %(error)s)"
)


def record_mirror_failure(
    forge: str, owner: str, repo: str, poller: str, write: MirrorWrite, error: str
) -> Call[Any, datetime]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "number": write.number,
        "job_id": write.job_id,
        "state": str(write.state),
        "error": error,
    }
    return Call(RECORD_MIRROR_FAILURE, params, tuple_row, _value)


FORGE_WRITES_DUE = (
    "SELECT id, kind, number, payload"
    " FROM tireless.forge_writes_due(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, kinds => %(kinds)s, max_writes => %(max_writes)s, now => %(now)s)"
)


def forge_writes_due(
    forge: str,
    owner: str,
    repo: str,
    poller: str,
    kinds: Sequence[WriteKind],
    max_writes: int,
    now: datetime | None,
) -> Call[ForgeWrite, list[ForgeWrite]]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "kinds": [str(kind) for kind in kinds],
        "max_writes": max_writes,
        "now": now,
    }
    return Call(FORGE_WRITES_DUE, params, args_row(ForgeWrite.from_row), _rows)


RECORD_FORGE_WRITE = (
    "SELECT tireless.record_forge_write(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, id => %(id)s, error => %(error)s, result => %(result)s)"
)


def record_forge_write(
    forge: str,
    owner: str,
    repo: str,
    poller: str,
    write_id: int,
    error: str | None,
    result: Mapping[str, Any] | None,
) -> Call[Any, datetime | None]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "id": write_id,
        "error": error,
        "result": None if result is None else Jsonb(dict(result)),
    }
    return Call(RECORD_FORGE_WRITE, params, tuple_row, _value)


SET_MIRROR_COMMENTS = "SELECT tireless.set_mirror_comments(enabled => %(enabled)s)"


def set_mirror_comments(enabled: bool) -> Call[Any, bool]:
    return Call(SET_MIRROR_COMMENTS, {"enabled": enabled}, tuple_row, _flag)


POLL_SOON = "SELECT tireless.poll_soon(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"


def poll_soon(forge: str, owner: str, repo: str) -> Call[Any, bool]:
    return Call(POLL_SOON, _repo(forge, owner, repo), tuple_row, _flag)


NEXT_POLL_IN = "SELECT extract(epoch FROM tireless.next_poll_due_at() - now())::float8"


def next_poll_in() -> Call[Any, float | None]:
    """Seconds until a tracked repository of a registered forge is due (negative: one is due
    now); None when there is none."""
    return Call(NEXT_POLL_IN, {}, tuple_row, _value)


REPO_STATUS = (
    sql.SQL("SELECT {} FROM tireless.repo_status ORDER BY forge, owner, repo")
    .format(REPO_STATUS_COLUMNS)
    .as_bytes(None)
)


def repo_status() -> Call[RepoStatus, list[RepoStatus]]:
    return Call(REPO_STATUS, {}, class_row(RepoStatus), _rows)


# The conversation (db/conversation.sql): what a poller reads of it and hands the store, the
# mirror's replies, what a job answers, the repository's revision policy.
CONVERSATION_TO_READ = (
    "SELECT comments_cursor, comments_etag, pulls, waiting FROM tireless.conversation_to_read("
    "forge => %(forge)s, owner => %(owner)s, repo => %(repo)s, poller => %(poller)s)"
)


def conversation_to_read(
    forge: str, owner: str, repo: str, poller: str
) -> Call[ConversationToRead, ConversationToRead]:
    params = _repo(forge, owner, repo) | {"poller": poller}
    return Call(CONVERSATION_TO_READ, params, args_row(ConversationToRead.from_row), _only)


RECORD_CONVERSATION = (
    "SELECT asked, refused, created, stopped, skipped FROM tireless.record_conversation("
    "forge => %(forge)s, owner => %(owner)s, repo => %(repo)s, poller => %(poller)s,"
    " login => %(login)s, asks => %(asks)s, comments_cursor => %(comments_cursor)s,"
    " comments_etag => %(comments_etag)s, pulls => %(pulls)s)"
)


def record_conversation(
    forge: str,
    owner: str,
    repo: str,
    poller: str,
    login: str | None,
    asks: Sequence[Mapping[str, Any]],
    comments_cursor: datetime | None = None,
    comments_etag: str | None = None,
    pulls: Sequence[Mapping[str, Any]] = (),
) -> Call[ConversationOutcome, ConversationOutcome]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "login": login,
        "asks": Jsonb([dict(ask) for ask in asks]),
        "comments_cursor": comments_cursor,
        "comments_etag": comments_etag,
        "pulls": Jsonb([dict(pull) for pull in pulls]),
    }
    return Call(RECORD_CONVERSATION, params, class_row(ConversationOutcome), _only)


JOB_ASKS = (
    "SELECT ask_id, source, source_id, pull_number, verb, author, body, detail, asked_at, outcome"
    " FROM tireless.job_asks(job_id => %(job_id)s)"
)


def job_asks(job_id: int) -> Call[JobAsk, list[JobAsk]]:
    return Call(JOB_ASKS, {"job_id": job_id}, class_row(JobAsk), _rows)


SET_REPO_REVISIONS = (
    "SELECT forge, owner, repo, revise_on_failed_checks, max_revisions"
    " FROM tireless.set_repo_revisions(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " revise_on_failed_checks => %(revise_on_failed_checks)s, max_revisions => %(max_revisions)s)"
)


def set_repo_revisions(
    forge: str,
    owner: str,
    repo: str,
    revise_on_failed_checks: bool | None = None,
    max_revisions: int | None = None,
) -> Call[RepoRevisions, RepoRevisions]:
    params = _repo(forge, owner, repo) | {
        "revise_on_failed_checks": revise_on_failed_checks,
        "max_revisions": max_revisions,
    }
    return Call(SET_REPO_REVISIONS, params, class_row(RepoRevisions), _only)
