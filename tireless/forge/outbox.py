"""The outbox's drain: each round the mirror makes the forge writes the store queued for a
repository (`tireless.forge_writes_due`: the pull requests of deliveries, the issues of delivered
plans' tasks and discoveries' proposals, the outcome comments of finished jobs, the comments that
tell an issue it is on a dependency cycle, the edits of outcome comments whose checklist of
children changed, the conversation's replies, the comments that tell an issue one of its labels
names nothing) and reports each back
(`tireless.record_forge_write`), dispatching by kind. What to write is the store's decision; this
module only talks to the forge.

The kinds go in the order of WriteKind: a delivery's pull request before its outcome comment,
which names it; a plan's children before its comment, which lists them. Each write is idempotent
(found first by its marker in what the mirror's own account wrote, so a write whose answer was
lost is not made twice); one that fails is recorded with its error (retried later with the one
backoff, `tireless.forge_write_backoff`) and the others go on; an issue found gone is recorded so
(`record_issue_gone`) and its other writes are skipped; a repository found archived (423) ends
the round's writes (RepoArchived); ForgeStopped (a rate limit, refused credentials) is raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tireless.forge.client import (
    BadResponse,
    ForgeClient,
    ForgeComment,
    ForgeStopped,
    IssueMoved,
    LoginUnknown,
    PullRequest,
    ReadFailed,
    WriteRefused,
)
from tireless.forge.conversation import post_reply
from tireless.forge.validate import is_own
from tireless.models import (
    ConversationReply,
    CycleReport,
    ForgeWrite,
    LabelReport,
    MirrorChecklist,
    MirrorComment,
    MirrorPull,
    PlanTask,
    RepoToPoll,
    WriteKind,
)
from tireless.store import JobStore

TASK_LABEL_DESCRIPTION = (
    "Asks tireless for work (set on an issue tireless opened for a plan's task)"
)


@dataclass(slots=True)
class MirrorOutcome:
    """What one repository's mirror writes did this round."""

    applied: int = 0  # label writes
    pulled: int = 0  # pull requests opened or updated
    opened: int = 0  # the issues of plans' tasks and discoveries' proposals
    commented: int = 0  # outcome comments, the comments that tell an issue of a cycle or a label
    edited: int = 0  # outcome comments whose checklist of children changed
    replied: int = 0  # the conversation's reactions and refusals
    failed: int = 0  # label writes, pull requests, comments and replies
    last_error: str | None = None
    gone: set[int] = field(default_factory=set)  # issues found gone: their other writes are skipped


class IssueGone(WriteRefused):
    """The forge answered 404 or 410 for the issue itself: deleted (or never there)."""


class RepoArchived(Exception):
    """A write refused because the repository is archived (423): its writes end for the round."""


def drain(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    outcome: MirrorOutcome,
    deadline: float,
    max_writes: int,
) -> None:
    """Makes the repository's due forge writes, kind after kind (WriteKind's order), each kind for
    at least one write and then until `deadline` (time.monotonic(); moved on to now when a kind
    starts late). A plan's tasks are asked for again as they are opened, since a task's
    dependencies are opened before it (their numbers go in its body); a task that fails ends
    the tasks for the round (its dependents wait for it)."""
    for kind in WriteKind:
        deadline = max(deadline, time.monotonic())
        # A plan has at most 50 tasks: its longest chain of dependencies is 50 listings.
        for _ in range(51 if kind is WriteKind.TASK else 1):
            more = _drain_kind(store, poller, client, target, outcome, deadline, max_writes, kind)
            if not more or time.monotonic() > deadline:
                break


def _drain_kind(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    outcome: MirrorOutcome,
    deadline: float,
    max_writes: int,
    kind: WriteKind,
) -> bool:
    """The due writes of one kind, each recorded as soon as the forge answered; whether a task
    was opened and more may be due (the others: False, one listing a round)."""
    forge, owner, repo = target.forge, target.owner, target.repo
    made = 0
    for due in store.forge_writes_due(forge, owner, repo, poller, [kind], max_writes):
        if made and time.monotonic() > deadline:
            return False
        if due.number in outcome.gone:
            continue
        made += 1
        try:
            result = _WRITERS[kind](client, owner, repo, due)
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            # A pull request or a child issue refused says nothing of the issue itself.
            about = None if kind in (WriteKind.PULL, WriteKind.TASK) else due.number
            if not unwritable(store, poller, client, target, outcome, about, failure):
                store.record_forge_write(forge, owner, repo, poller, due.id, error=str(failure))
            failed(outcome, due.number, failure)
            if kind is WriteKind.TASK:
                return False  # its dependents wait for it; the next round tries again
            continue
        store.record_forge_write(forge, owner, repo, poller, due.id, result=result.answer)
        _count(outcome, kind)
        for refusal in result.refused:  # said in the round's report; the write stands
            failed(outcome, result.refused_on or due.number, refusal)
    return kind is WriteKind.TASK and made > 0


@dataclass(frozen=True, slots=True)
class Written:
    """What the forge answered a write: `answer` for `record_forge_write` (as the kind needs it),
    and the refusals of its secondary writes (a child's relations) to say in the report."""

    answer: Mapping[str, Any] | None = None
    refused: list[ReadFailed] = field(default_factory=list)
    refused_on: int | None = None


def _count(outcome: MirrorOutcome, kind: WriteKind) -> None:
    match kind:
        case WriteKind.PULL:
            outcome.pulled += 1
        case WriteKind.TASK:
            outcome.opened += 1
        case WriteKind.COMMENT | WriteKind.CYCLE | WriteKind.UNKNOWN_LABEL:
            outcome.commented += 1
        case WriteKind.CHECKLIST:
            outcome.edited += 1
        case WriteKind.REPLY:
            outcome.replied += 1


def _write_pull(client: ForgeClient, owner: str, repo: str, due: ForgeWrite) -> Written:
    assert isinstance(due.write, MirrorPull)
    opened = apply_pull(client, owner, repo, due.write)
    return Written({"pull_number": opened.number, "pull_url": opened.url})


def _write_task(client: ForgeClient, owner: str, repo: str, due: ForgeWrite) -> Written:
    assert isinstance(due.write, PlanTask)
    number = open_child(client, owner, repo, due.write)
    # Before the record: a stop here leaves the task due, and the next round finds the child by
    # its marker and sets what is missing.
    refused = relate_child(client, owner, repo, due.write, number)
    return Written({"number": number}, refused, number)


def _write_comment(client: ForgeClient, owner: str, repo: str, due: ForgeWrite) -> Written:
    assert isinstance(due.write, MirrorComment)
    post_comment(client, owner, repo, due.write)
    checklist = due.write.checklist
    return Written(None if checklist is None else {"checklist": checklist})


def _write_note(client: ForgeClient, owner: str, repo: str, due: ForgeWrite) -> Written:
    """A comment of the store's on an issue (a cycle, a label that names nothing), posted once."""
    assert isinstance(due.write, CycleReport | LabelReport)
    report = due.write
    if own_comment(client, owner, repo, report.number, report.marker) is None:
        client.add_comment(owner, repo, report.number, report.body)
    return Written()


def _write_checklist(client: ForgeClient, owner: str, repo: str, due: ForgeWrite) -> Written:
    assert isinstance(due.write, MirrorChecklist)
    edit_checklist(client, owner, repo, due.write)
    return Written({"checklist": due.write.checklist})


def _write_reply(client: ForgeClient, owner: str, repo: str, due: ForgeWrite) -> Written:
    assert isinstance(due.write, ConversationReply)
    post_reply(client, owner, repo, due.write, own_login(client))
    return Written()


_WRITERS: dict[WriteKind, Callable[[ForgeClient, str, str, ForgeWrite], Written]] = {
    WriteKind.PULL: _write_pull,
    WriteKind.TASK: _write_task,
    WriteKind.COMMENT: _write_comment,
    WriteKind.CYCLE: _write_note,
    WriteKind.CHECKLIST: _write_checklist,
    WriteKind.REPLY: _write_reply,
    WriteKind.UNKNOWN_LABEL: _write_note,
}


def open_child(client: ForgeClient, owner: str, repo: str, task: PlanTask) -> int:
    """The task's issue, opened unless the mirror's own account already opened it (a create whose
    answer was lost, or another poller's): an issue of that account whose body ends with the
    marker is looked for first, then its labels are put on (a found one may lack them)."""
    login = own_login(client)
    number = client.find_issue(owner, repo, marker=task.marker, author=login, since=task.since)
    if number is None:
        number = client.create_issue(owner, repo, title=task.title, body=task.body)
    shown = client.get_issue(owner, repo, number)
    if shown is None:
        raise WriteRefused(f"issue {owner}/{repo}#{number} is gone", 404)
    shown_keys = {client.label_key(name) for name in shown.labels}
    for name in task.labels:
        if client.label_key(name) not in shown_keys:
            client.ensure_label(owner, repo, name, TASK_LABEL_DESCRIPTION)
            client.add_label(owner, repo, number, name)
    return number


def relate_child(
    client: ForgeClient, owner: str, repo: str, task: PlanTask, number: int
) -> list[ReadFailed]:
    """The forge's own relations of a task's child issue, where the forge has them: it depends
    on the issues its `Depends on` lines name (Gitea's dependency, GitHub's blocked-by) and, on
    GitHub, it is a sub-issue of the parent. Each write reads first (done already is fine), so a
    second poller or a retry after a lost answer adds nothing. A refusal (the feature off, no
    right: 403, 404, 422) costs that write only, and is returned to be said; the body's lines
    gate the child's job all the same."""
    refused: list[ReadFailed] = []
    blockers = [on for on in dict.fromkeys(task.depends_on or ()) if on and on != number]
    for on in [*blockers, None]:
        try:
            if on is None:
                client.add_sub_issue(owner, repo, task.parent_number, number)
            else:
                client.add_dependency(owner, repo, number, on)
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            refused.append(failure)
    return refused


def own_login(client: ForgeClient) -> str | None:
    """The login the mirror writes as; None while the forge will not tell it (LoginUnknown: the
    token may not read GET /user and no write of its own named it yet), when is_own knows an
    App's account only. Any other failure is raised: the write waits rather than risk a second
    comment or issue."""
    try:
        return client.whoami()
    except LoginUnknown:
        return None


def failed(outcome: MirrorOutcome, number: int, failure: ReadFailed) -> None:
    outcome.failed += 1
    outcome.last_error = f"#{number}: {failure}"


def unwritable(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    outcome: MirrorOutcome,
    number: int | None,
    failure: ReadFailed,
) -> bool:
    """Whether a failed write says the forge takes no more writes there: RepoArchived is raised
    for a 423 (the repository is archived); True when issue `number` is gone (recorded with
    `record_issue_gone`: its failure is not backed off, and its other writes are skipped)."""
    if isinstance(failure, WriteRefused) and failure.status == 423:
        raise RepoArchived(str(failure)) from failure
    if number is None:
        return False
    note = gone_note(client, target.owner, target.repo, number, failure)
    if note is None:
        return False
    store.record_issue_gone(target.forge, target.owner, target.repo, poller, number, note)
    outcome.gone.add(number)
    return True


def gone_note(
    client: ForgeClient, owner: str, repo: str, number: int, failure: ReadFailed
) -> str | None:
    """How the issue went, when a failed write says it may be gone: moved (IssueMoved names
    where), or deleted. A 404 or 410 of an endpoint under the issue, or an answer we could not
    read (a 404's body), is checked by reading the issue once; a deletion also by reading the
    repository, so that a repository the token cannot see (404 for all) deletes nothing.
    None when the issue is there, or when the check fails."""
    if isinstance(failure, IssueMoved):
        return f"issue moved to {failure.to}"
    try:
        if not isinstance(failure, IssueGone):
            refused = isinstance(failure, WriteRefused) and failure.status in (404, 410)
            if not (refused or isinstance(failure, BadResponse)):
                return None
            if client.get_issue(owner, repo, number) is not None:
                return None
        client.default_branch(owner, repo)
    except IssueMoved as moved:
        return f"issue moved to {moved.to}"
    except ForgeStopped:
        raise
    except ReadFailed:
        return None
    return "issue deleted"


def apply_pull(client: ForgeClient, owner: str, repo: str, pull: MirrorPull) -> PullRequest:
    """The delivery's pull request, opened or brought up to date: the open one from its head branch
    is found first (a create whose answer was lost made it, or a person reopened it), and
    create_pull finds it again when the forge says it exists, so one branch never gets two."""
    found = client.find_pull(owner, repo, pull.head_branch)
    if found is None:
        return client.create_pull(
            owner, repo, head=pull.head_branch, base=pull.base_branch,
            title=pull.title, body=pull.body, draft=pull.draft,
        )  # fmt: skip
    if (found.title, found.body) == (pull.title, pull.body):
        return found
    return client.update_pull(owner, repo, found.number, title=pull.title, body=pull.body)


def post_comment(client: ForgeClient, owner: str, repo: str, comment: MirrorComment) -> None:
    """Posts the outcome comment unless the mirror's own account already did: a marker in anyone
    else's comment, or inside a quoted note, counts for nothing. One found with a checklist of
    children other than this one (posted by a try whose answer was lost, before a child changed)
    is edited to this body, so that the checklist recorded is the one the forge shows."""
    found = own_comment(client, owner, repo, comment.number, comment.marker)
    if found is None:
        client.add_comment(owner, repo, comment.number, comment.body)
    elif comment.checklist is not None and found.id is not None and _differs(found, comment.body):
        client.edit_comment(owner, repo, found.id, comment.body)


def own_comment(
    client: ForgeClient, owner: str, repo: str, number: int, marker: str
) -> ForgeComment | None:
    """The issue's comment by the mirror's own forge account (is_own) whose body ends with
    `marker` (the first, should there be several); None when there is none."""
    login = own_login(client)
    for found in client.comments(owner, repo, number):
        if is_own(found.author, login) and found.body.rstrip().endswith(marker):
            return found
    return None


def edit_checklist(client: ForgeClient, owner: str, repo: str, edit: MirrorChecklist) -> None:
    """The mirror's own outcome comment (its marker, its login) made to show `edit.body`: edited
    unless it shows it already (an edit whose answer was lost). A comment no longer there (a
    person deleted it) is not written again: WriteRefused (404), backed off like any failure."""
    found = own_comment(client, owner, repo, edit.number, edit.marker)
    if found is None or found.id is None:
        raise WriteRefused(
            f"#{edit.number}: no comment of ours ends with {edit.marker} (deleted?)", 404
        )
    if _differs(found, edit.body):
        client.edit_comment(owner, repo, found.id, edit.body)


def _differs(found: ForgeComment, body: str) -> bool:
    """Whether the comment shows another text than `body` (trailing blanks aside: a forge may trim
    them)."""
    return found.body.rstrip() != body.rstrip()
