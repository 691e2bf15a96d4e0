"""The mirror: the poller applies, to a repository it holds, the writes the store says its issues
need (`tireless.mirror_writes`: each issue's newest job state, older wanted states already
superseded), and reports each back (`record_mirror_write`, `record_mirror_failure`). Which label
and which comment is the store's decision; this module only talks to the forge.

Each write is idempotent: the issue is read first, a label already there is not added again, a
label already gone is not removed, and a comment is posted only when none of the issue's comments
carries its marker (the job id), so applying a write twice leaves the issue as applying it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tireless.forge.client import ForgeClient, ForgeIssue, ForgeStopped, ReadFailed, WriteRefused
from tireless.models import MirrorWrite, RepoToPoll
from tireless.store import JobStore

STATE_LABEL_DESCRIPTION = "Set by tireless: the state of this issue's job (never read to decide)"


@dataclass(slots=True)
class MirrorOutcome:
    """What one repository's mirror writes did this round."""

    applied: int = 0
    failed: int = 0
    last_error: str | None = None


def mirror_repository(
    store: JobStore, poller: str, client: ForgeClient, target: RepoToPoll, max_writes: int = 100
) -> MirrorOutcome:
    """Applies the due writes of a repository whose poll lease `poller` holds. A write that fails
    is recorded for its issue (retried later with backoff) and the others go on; ForgeStopped (a
    rate limit, refused credentials) ends the repository's writes and is raised."""
    outcome = MirrorOutcome()
    forge, owner, repo = target.forge, target.owner, target.repo
    for write in store.mirror_writes(forge, owner, repo, poller, max_writes):
        try:
            shown = apply_write(client, owner, repo, write)
        except ForgeStopped:
            raise
        except ReadFailed as failure:  # refused, unavailable, or an answer we cannot trust
            store.record_mirror_failure(forge, owner, repo, poller, write, str(failure))
            outcome.failed += 1
            outcome.last_error = f"#{write.number}: {failure}"
            continue
        issue = None if shown is None else issue_row(target, shown)
        store.record_mirror_write(forge, owner, repo, poller, write, issue)
        outcome.applied += 1
    return outcome


def apply_write(
    client: ForgeClient, owner: str, repo: str, write: MirrorWrite
) -> ForgeIssue | None:
    """Makes the issue show `write`; for a finished job returns the issue as the forge shows it
    afterwards (the store records the withdrawal from it), else None."""
    number = write.number
    issue = client.get_issue(owner, repo, number)
    if issue is None:
        raise WriteRefused(f"issue {owner}/{repo}#{number} is gone", 404)
    if write.state_label not in issue.labels:
        client.ensure_label(owner, repo, write.state_label, STATE_LABEL_DESCRIPTION)
        client.add_label(owner, repo, number, write.state_label)
    for name in issue.labels:
        if name in write.drop_labels:
            client.remove_label(owner, repo, number, name)
    if write.comment is not None and not any(
        write.comment_marker in body for body in client.comment_bodies(owner, repo, number)
    ):
        client.add_comment(owner, repo, number, write.comment)
    if not write.state.is_terminal:
        return None
    return client.get_issue(owner, repo, number)


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
