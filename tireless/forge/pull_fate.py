"""What became of the pull requests an issue listing shows, read from the listing itself: the
poller lists issues changed since its cursor on both forges, pull requests among them, and a
merge or a close moves a pull request's `updated_at`, so the fate of each costs no request more.

The fields, as each forge writes them on an issue that is a pull request:
- `state` (`open` or `closed`) and `closed_at` (RFC 3339, null while open), on the issue itself:
  Gitea's modules/structs/issue.go `Issue.State`, `Issue.Closed` (json `closed_at`); GitHub's REST
  description (github/rest-api-description, schema `issue`: `state`, `closed_at`);
- `pull_request.merged_at` (RFC 3339, null unless merged): Gitea's `PullRequestMeta.Merged`
  (json `merged_at`, modules/structs/issue.go), GitHub's `issue.pull_request.merged_at` (a
  date-time or null in the same schema; the pull request's own `GET .../pulls/{n}` has it too);
- Gitea's `PullRequestMeta.HasMerged` (json `merged`) beside it, which must agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from tireless.errors import NotHolder, TirelessError
from tireless.forge.client import BadResponse
from tireless.forge.validate import is_pull_request, timestamp
from tireless.models import RepoToPoll
from tireless.outcomes import PullFate
from tireless.store import JobStore


def pull_fates(
    items: Iterable[dict[str, Any]], where: str
) -> tuple[tuple[PullFate, ...], tuple[str, ...]]:
    """The fate of each pull request among listed items, and a note for each whose fate cannot be
    read (it is left out; the rest stand)."""
    fates: list[PullFate] = []
    notes: list[str] = []
    for item in items:
        if not is_pull_request(item):
            continue
        try:
            fates.append(pull_fate(item, where))
        except BadResponse as odd:
            notes.append(f"{odd}: its fate is not recorded")
    return tuple(fates), tuple(notes)


def pull_fate(item: dict[str, Any], where: str) -> PullFate:
    """One listed pull request's fate; BadResponse names what is wrong."""
    number = item.get("number")
    if type(number) is not int or number <= 0:
        raise BadResponse(f"{where}: a pull request has no positive integer number: {number!r:.40}")
    at = f"{where}: pull request #{number}"
    state = item.get("state")
    meta = item.get("pull_request")
    if state not in ("open", "closed"):
        raise BadResponse(f"{at}: state {state!r:.40} is neither open nor closed")
    if not isinstance(meta, dict):
        raise BadResponse(f"{at}: pull_request is {type(meta).__name__}, not an object")
    merged_at = _time(meta.get("merged_at"), at, "merged_at")
    closed_at = _time(item.get("closed_at"), at, "closed_at")
    merged = meta.get("merged", merged_at is not None)  # Gitea's HasMerged; GitHub has none here
    if merged is not (merged_at is not None):
        raise BadResponse(f"{at}: merged is {merged!r:.10} but merged_at is {merged_at}")
    if state == "closed" and closed_at is None:
        raise BadResponse(f"{at}: closed, but closed_at is null")
    if state == "open" and merged_at is not None:
        raise BadResponse(f"{at}: open, but merged at {merged_at}")
    return PullFate(number, state, merged_at, closed_at if state == "closed" else None)


def _time(value: Any, where: str, field: str) -> datetime | None:
    return None if value is None else timestamp(value, where, field)


def record_fates(
    store: JobStore, poller: str, target: RepoToPoll, fates: Sequence[PullFate]
) -> str | None:
    """Records the fates a read showed (the store keeps those of tireless's pull requests); a
    refusal or a surprise is returned as the poll's warning, the issues are recorded all the
    same. NotHolder (the lease ran out) is raised."""
    if not fates:
        return None
    try:
        store.record_pull_outcomes(target.forge, target.owner, target.repo, poller, fates)
    except NotHolder:
        raise
    except TirelessError as refused:
        return f"the pull requests' fates were not recorded: {refused}"
    except Exception as error:  # a bug or a surprise: the issues are recorded all the same
        return f"the pull requests' fates were not recorded: {type(error).__name__}: {error}"
    return None
