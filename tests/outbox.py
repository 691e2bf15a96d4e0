"""Shortcuts into the outbox of forge writes (`tireless.forge_writes_due`,
`tireless.record_forge_write`) for the tests of what queues and records them: the writes of one
kind as the mirror lists them, and the record of one named by what it writes (its job, task,
cycle report or ask) rather than by its id."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from tireless import JobStore
from tireless.models import (
    ConversationReply,
    CycleReport,
    ForgeWrite,
    LabelReport,
    PlanTask,
    WriteKind,
)

AHEAD = timedelta(days=2)
"""How far ahead `record` lists the writes to find one backing off (its backoff is at most an hour)."""

_seen: weakref.WeakKeyDictionary[JobStore, dict[tuple[str, int, int | None], int]] = (
    weakref.WeakKeyDictionary()
)
"""Per store, the id of each write listed so far by what it writes: a write recorded once is
not listed again, and recording it again is harmless."""


def key(due: ForgeWrite) -> tuple[str, int, int | None]:
    """What a write writes: its kind and its job (and task), cycle or label report, or ask."""
    write = due.write
    if isinstance(write, PlanTask):
        return due.kind.value, write.job_id, write.task
    if isinstance(write, CycleReport | LabelReport):
        return due.kind.value, write.report_id, None
    if isinstance(write, ConversationReply):
        return due.kind.value, write.ask_id, None
    return due.kind.value, write.job_id, None


def listed(store: JobStore, kind: str, forge: str, owner: str, repo: str, poller: str,
           max_writes: int = 100, now: datetime | None = None) -> list[ForgeWrite]:  # fmt: skip
    """The outbox's writes of `kind` due (at `now`), each remembered by what it writes."""
    found = store.forge_writes_due(forge, owner, repo, poller, [WriteKind(kind)], max_writes, now)
    seen = _seen.setdefault(store, {})
    for due in found:
        seen[key(due)] = due.id
    return found


def due(store: JobStore, kind: str, forge: str, owner: str, repo: str, poller: str,
        max_writes: int = 100) -> list[Any]:  # fmt: skip
    """What the mirror reads of one kind (the typed writes: MirrorPull, PlanTask, ...)."""
    return [found.write for found in listed(store, kind, forge, owner, repo, poller, max_writes)]


def record(store: JobStore, kind: str, forge: str, owner: str, repo: str, poller: str, target: int,
           task: int | None = None, *, error: str | None = None,
           result: Mapping[str, Any] | None = None) -> datetime | None:  # fmt: skip
    """`record_forge_write` for the write of `kind` that writes `target` (a job, with `task` for
    a plan's task; a cycle report; an ask), found by listing the writes as if it were AHEAD from
    now; a write never queued is recorded by an id no write has (TL005)."""
    listed(store, kind, forge, owner, repo, poller, 10000, datetime.now(UTC) + AHEAD)
    write_id = _seen.setdefault(store, {}).get((kind, target, task), 0)
    return store.record_forge_write(forge, owner, repo, poller, write_id, error, result)


def pull(number: int, url: str) -> dict[str, Any]:
    """The result of a pull request's write."""
    return {"pull_number": number, "pull_url": url}
