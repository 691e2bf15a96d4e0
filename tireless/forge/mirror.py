"""The mirror: the poller applies, to a repository it holds, the label writes the store says its
issues need (`tireless.mirror_writes`: each issue's newest job state, older wanted states already
superseded), reporting each back (`record_mirror_write`, `record_mirror_failure`), then drains
the outbox of its other forge writes (tireless.forge.outbox: pull requests, children, comments,
checklist edits, replies). Which label is the store's decision; this module only talks to the
forge. An issue the forge says is gone (deleted: 404 or 410; moved: a redirect to another
repository) is reported (`record_issue_gone`) and gets no more writes; an archived repository
(423) is reported (`record_repo_archived`) and its writes end for the round.

Each label write is idempotent: the issue is read first, a label already there is not added
again and a label already gone is not removed, so applying a write twice leaves the issue as
applying it once. A finished job's mode labels are taken off only when they are still the
request the job answered: a request a person made again after the job began (the issue's label
events say so) keeps its labels, and the store makes its job (docs/decisions-mirror.md).
"""

from __future__ import annotations

import time
from typing import Any

from tireless.forge.client import (
    ForgeClient,
    ForgeIssue,
    ForgeStopped,
    IssueEvent,
    ReadFailed,
)
from tireless.forge.outbox import (
    IssueGone,
    MirrorOutcome,
    RepoArchived,
    drain,
    failed,
    own_login,
    unwritable,
)
from tireless.forge.validate import is_own
from tireless.models import (
    MirrorWrite,
    RepoToPoll,
)
from tireless.store import JobStore

STATE_LABEL_DESCRIPTION = "Set by tireless: the state of this issue's job (never read to decide)"
MIRROR_BUDGET = 5.0
"""Seconds of forge writes per repository and round before its read: a backlog drains over
several rounds and never holds back reading what people changed (at least one label write and
one comment are made each round, so it always drains)."""


def mirror_repository(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    *,
    budget: float | None = None,
    max_writes: int = 100,
) -> MirrorOutcome:
    """Applies the due writes and comments of a repository whose poll lease `poller` holds, for
    about `budget` seconds (default MIRROR_BUDGET). A write that fails is recorded for its issue (retried later with
    backoff) and the others go on; an issue found gone is recorded so (`record_issue_gone`); a
    repository found archived is recorded so (`record_repo_archived`) and its writes end;
    ForgeStopped (a rate limit, refused credentials) ends the repository's writes and is raised."""
    outcome = MirrorOutcome()
    try:
        _apply_due(store, poller, client, target, outcome, budget, max_writes)
    except RepoArchived as archived:
        store.record_repo_archived(target.forge, target.owner, target.repo, poller)
        outcome.failed += 1
        outcome.last_error = f"{target.owner}/{target.repo} is archived: {archived}"
    return outcome


def _apply_due(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    outcome: MirrorOutcome,
    budget: float | None,
    max_writes: int,
) -> None:
    """mirror_repository's round: the label writes, then the outbox's writes (tireless.forge.outbox)."""
    forge, owner, repo = target.forge, target.owner, target.repo
    deadline = time.monotonic() + (MIRROR_BUDGET if budget is None else budget)
    for write in store.mirror_writes(forge, owner, repo, poller, max_writes):
        if outcome.applied + outcome.failed and time.monotonic() > deadline:
            break
        try:
            shown = apply_write(client, owner, repo, write)
        except ForgeStopped:
            raise
        except ReadFailed as failure:  # refused, unavailable, or an answer we cannot trust
            if not unwritable(store, poller, client, target, outcome, write.number, failure):
                store.record_mirror_failure(forge, owner, repo, poller, write, str(failure))
            failed(outcome, write.number, failure)
            continue
        issue = None if shown is None else issue_row(target, shown)
        store.record_mirror_write(forge, owner, repo, poller, write, issue)
        outcome.applied += 1
    drain(store, poller, client, target, outcome, deadline, max_writes)


def apply_write(
    client: ForgeClient, owner: str, repo: str, write: MirrorWrite
) -> ForgeIssue | None:
    """Makes the issue show `write`; for a finished job returns the issue as the forge shows it
    afterwards (the store records the withdrawal from it), else None. Raises ReadFailed when the
    forge did not confirm that the finished request's mode labels are off."""
    number = write.number
    issue = client.get_issue(owner, repo, number)
    if issue is None:
        raise IssueGone(f"issue {owner}/{repo}#{number} is gone", 404)
    # The state labels, the mirror's own, are compared as the forge compares names (GitHub:
    # without case, showing its repository label's spelling); the mode labels, a person's, match
    # exactly, as the poll reads them (docs/forges.md, "Labels").
    key = client.label_key
    if key(write.state_label) not in {key(name) for name in issue.labels}:
        client.ensure_label(owner, repo, write.state_label, STATE_LABEL_DESCRIPTION)
        client.add_label(owner, repo, number, write.state_label)
    modes = {name for name in write.mode_labels if name in write.drop_labels}
    drop = {key(name) for name in write.drop_labels if name not in modes}
    for name in issue.labels:
        if key(name) in drop:
            client.remove_label(owner, repo, number, name)
    if not write.state.is_terminal:
        return None
    if not modes:  # the store saw a newer request: its labels stay
        return client.get_issue(owner, repo, number)
    login = own_login(client)
    standing = standing_request(write, issue, _events(client, owner, repo, write), login)
    for name in issue.labels:
        if name in modes and name not in standing:
            client.remove_label(owner, repo, number, name)
    # Read after the writes, then the events again: a person who asked again while we wrote is
    # seen, and a label of theirs that our removal took off is put back.
    after = _shown(client, owner, repo, number)
    standing = standing_request(write, issue, _events(client, owner, repo, write), login)
    missing = [name for name in sorted(standing) if name not in after.labels]
    for name in missing:
        client.add_label(owner, repo, number, name)
    if missing:
        after = _shown(client, owner, repo, number)
    left = [name for name in after.labels if name in modes and name not in standing]
    if left:
        raise ReadFailed(f"#{number}: {', '.join(left)} still on the issue after taking it off")
    return after


def _shown(client: ForgeClient, owner: str, repo: str, number: int) -> ForgeIssue:
    issue = client.get_issue(owner, repo, number)
    if issue is None:
        raise IssueGone(f"issue {owner}/{repo}#{number} is gone", 404)
    return issue


def _events(client: ForgeClient, owner: str, repo: str, write: MirrorWrite) -> list[IssueEvent]:
    """The issue's events after the job began. Both forges stamp events in whole seconds, so an
    event in the second the job began counts only when stamped at or after it: the edits that
    made the job (just before it) are never replayed as a new request."""
    events = client.issue_events(owner, repo, write.number, write.job_began)
    return [event for event in events if event.at >= write.job_began]


def standing_request(
    write: MirrorWrite, shown: ForgeIssue, events: list[IssueEvent], login: str | None
) -> frozenset[str]:
    """The mode labels of a request that a person made again after the job began and that still
    stands: replaying the issue's events from how it was when the job began, the issue stopped
    asking for work (a mode or opt-in label off, closed) and a person's edit made it ask again.
    One edit is the events of one actor in one second that touch each label once (trading one
    mode label for another is one edit, not a withdrawal and a new request). The mirror's own
    removal of such a label does not withdraw it. Empty when the job's own request is the one
    that stands."""
    labels, is_open = _as_it_began(shown, events)
    standing: set[str] = set()

    def asks() -> bool:
        return is_open and write.opt_in in labels and any(m in labels for m in write.mode_labels)

    for edit in _edits(events):
        asked = asks()
        mine = is_own(edit[0].actor, login)
        for event in edit:
            if event.kind == "labeled" and event.label is not None:
                labels.add(event.label)
            elif event.kind == "unlabeled" and event.label is not None:
                if not (mine and event.label in standing):
                    labels.discard(event.label)
            elif event.kind in ("closed", "reopened"):
                is_open = event.kind == "reopened"
        if not asks():
            standing = set()
        elif standing or (not asked and not mine):  # made again by a person, or still standing
            standing = {name for name in write.mode_labels if name in labels}
    return frozenset(standing)


def _as_it_began(shown: ForgeIssue, events: list[IssueEvent]) -> tuple[set[str], bool]:
    """The issue's labels and whether it was open before `events`, from the issue as `shown`: a
    label an event touched was the opposite of what its first event made it, any other as shown
    (so an issue shown before or after some of the events gives the same answer). Not the job's
    labels: they are the listing's that made the job, which may predate an edit made before the
    job began (stamped before it, so not among the events)."""
    first: dict[str, IssueEvent] = {}
    state: IssueEvent | None = None
    for event in events:
        if event.kind in ("labeled", "unlabeled") and event.label is not None:
            first.setdefault(event.label, event)
        elif event.kind in ("closed", "reopened") and state is None:
            state = event
    labels = {name for name in shown.labels if name not in first}
    labels |= {name for name, event in first.items() if event.kind == "unlabeled"}
    return labels, (shown.state == "open" if state is None else state.kind == "closed")


def _edits(events: list[IssueEvent]) -> list[list[IssueEvent]]:
    """The events grouped into edits: consecutive events of one actor in one second, each
    touching another label (or the state)."""
    edits: list[list[IssueEvent]] = []
    for event in events:
        last = edits[-1] if edits else None
        if (
            last is not None
            and (last[0].at, last[0].actor) == (event.at, event.actor)
            and all(_touches(done) != _touches(event) for done in last)
        ):
            last.append(event)
        else:
            edits.append([event])
    return edits


def _touches(event: IssueEvent) -> str | None:
    """The label an event changes; None for the issue's state."""
    return event.label if event.kind in ("labeled", "unlabeled") else None


def issue_row(target: RepoToPoll, issue: ForgeIssue) -> dict[str, Any]:
    """An issue in the format `record_poll` and `record_mirror_write` (like `enqueue`) take."""
    return {
        "forge": target.forge,
        "owner": target.owner,
        "repo": target.repo,
        "number": issue.number,
        "state": issue.state,
        "labels": list(issue.labels),
        "title": issue.title,
        "url": issue.url,
        "updated_at": issue.updated_at.isoformat(),
    }
