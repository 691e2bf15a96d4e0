"""The mirror: the poller applies, to a repository it holds, the writes the store says its issues
need (`tireless.mirror_writes`: each issue's newest job state, older wanted states already
superseded), the pull requests of delivered jobs (`tireless.mirror_pulls_due`), the issues of
delivered plans' tasks and discoveries' proposals (`tireless.plan_tasks_due`), the outcome
comments of finished jobs (`tireless.mirror_comments_due`; a delivered plan's lists its children),
the comments that tell an issue it is on a dependency cycle (`tireless.cycle_reports_due`) and the
edits of outcome comments whose checklist of children changed (`tireless.mirror_checklists_due`),
and reports each back (`record_mirror_write`, `record_mirror_failure`, `record_mirror_pull`,
`record_plan_task`, `record_mirror_comment`, `record_cycle_report`, `record_mirror_checklist`).
Which label, which pull request and which comment is the store's decision; this module only
talks to the forge. An issue the forge says is gone (deleted: 404 or 410; moved: a redirect to
another repository) is reported (`record_issue_gone`) and gets no more writes; an archived
repository (423) is reported (`record_repo_archived`) and its writes end for the round.

Each write is idempotent: the issue is read first, a label already there is not added again, a
label already gone is not removed, and a comment is posted only when no comment *by the mirror's
own account* ends with its marker (the job id), so applying a write twice leaves the issue as
applying it once. A finished job's mode labels are taken off only when they are still the
request the job answered: a request a person made again after the job began (the issue's label
events say so) keeps its labels, and the store makes its job (docs/decisions-mirror.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tireless.forge.client import (
    BadResponse,
    ForgeClient,
    ForgeComment,
    ForgeIssue,
    ForgeStopped,
    IssueEvent,
    IssueMoved,
    LoginUnknown,
    PullRequest,
    ReadFailed,
    WriteRefused,
)
from tireless.forge.conversation import post_reply
from tireless.forge.validate import is_own
from tireless.models import (
    MirrorChecklist,
    MirrorComment,
    MirrorPull,
    MirrorWrite,
    PlanTask,
    RepoToPoll,
)
from tireless.store import JobStore

STATE_LABEL_DESCRIPTION = "Set by tireless: the state of this issue's job (never read to decide)"
TASK_LABEL_DESCRIPTION = (
    "Asks tireless for work (set on an issue tireless opened for a plan's task)"
)
MIRROR_BUDGET = 5.0
"""Seconds of forge writes per repository and round before its read: a backlog drains over
several rounds and never holds back reading what people changed (at least one label write and
one comment are made each round, so it always drains)."""


@dataclass(slots=True)
class MirrorOutcome:
    """What one repository's mirror writes did this round."""

    applied: int = 0  # label writes
    pulled: int = 0  # pull requests opened or updated
    opened: int = 0  # the issues of plans' tasks and discoveries' proposals
    commented: int = 0  # outcome comments, and the comments that tell an issue of a cycle
    edited: int = 0  # outcome comments whose checklist of children changed
    replied: int = 0  # the conversation's reactions and refusals
    failed: int = 0  # label writes, pull requests, comments and replies
    last_error: str | None = None
    gone: set[int] = field(default_factory=set)  # issues found gone: their other writes are skipped


class IssueGone(WriteRefused):
    """The forge answered 404 or 410 for the issue itself: deleted (or never there)."""


class RepoArchived(Exception):
    """A write refused because the repository is archived (423): its writes end for the round."""


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
    """mirror_repository's round: the label writes, pull requests, children, outcome comments,
    the work graph's notes and the conversation's replies, in that order."""
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
            if not _unwritable(store, poller, client, target, outcome, write.number, failure):
                store.record_mirror_failure(forge, owner, repo, poller, write, str(failure))
            _failed(outcome, write.number, failure)
            continue
        issue = None if shown is None else issue_row(target, shown)
        store.record_mirror_write(forge, owner, repo, poller, write, issue)
        outcome.applied += 1
    deadline = max(deadline, time.monotonic())
    # The pull requests before the comments: a delivered job's outcome comment names its pull request.
    for pull in store.mirror_pulls_due(forge, owner, repo, poller, max_writes):
        if outcome.pulled and time.monotonic() > deadline:
            break
        if pull.number in outcome.gone:
            continue
        try:
            opened = apply_pull(client, owner, repo, pull)
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            if not _unwritable(store, poller, client, target, outcome, None, failure):
                store.record_mirror_pull(
                    forge, owner, repo, poller, pull.job_id, error=str(failure)
                )
            _failed(outcome, pull.number, failure)
            continue
        store.record_mirror_pull(forge, owner, repo, poller, pull.job_id, opened.number, opened.url)
        outcome.pulled += 1
    deadline = max(deadline, time.monotonic())
    open_children(store, poller, client, target, outcome, deadline, max_writes)
    deadline = max(deadline, time.monotonic())
    posted = 0
    for comment in store.mirror_comments_due(forge, owner, repo, poller, max_writes):
        if posted and time.monotonic() > deadline:
            break
        if comment.number in outcome.gone:
            continue
        posted += 1
        try:
            post_comment(client, owner, repo, comment)
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            if not _unwritable(store, poller, client, target, outcome, comment.number, failure):
                store.record_mirror_comment(
                    forge, owner, repo, poller, comment.job_id, str(failure)
                )
            _failed(outcome, comment.number, failure)
            continue
        store.record_mirror_comment(
            forge, owner, repo, poller, comment.job_id, checklist=comment.checklist
        )
        outcome.commented += 1
    deadline = max(deadline, time.monotonic())
    write_graph_notes(store, poller, client, target, outcome, deadline, max_writes)
    deadline = max(deadline, time.monotonic())
    # The conversation's replies: a +1 on each command acted on, one comment per refusal said.
    replied = 0
    for reply in store.conversation_replies_due(forge, owner, repo, poller, max_writes):
        if replied and time.monotonic() > deadline:
            break
        if reply.number in outcome.gone:
            continue
        replied += 1
        try:
            post_reply(client, owner, repo, reply, own_login(client))
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            if not _unwritable(store, poller, client, target, outcome, reply.number, failure):
                store.record_conversation_reply(
                    forge, owner, repo, poller, reply.ask_id, str(failure)
                )
            _failed(outcome, reply.number, failure)
            continue
        store.record_conversation_reply(forge, owner, repo, poller, reply.ask_id)
        outcome.replied += 1


def open_children(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    outcome: MirrorOutcome,
    deadline: float,
    max_writes: int,
) -> None:
    """Opens the issues of delivered plans' tasks and discoveries' proposals
    (`tireless.plan_tasks_due`), each recorded as soon as it is open: a task's dependencies are
    due before it (their numbers go in its body), so the due tasks are asked for again until none
    is left, a write fails, or the time is up."""
    forge, owner, repo = target.forge, target.owner, target.repo
    for _ in range(51):  # a plan has at most 50 tasks: its longest chain of dependencies
        due = store.plan_tasks_due(forge, owner, repo, poller, max_writes)
        if not due:
            return
        for task in due:
            if outcome.opened and time.monotonic() > deadline:
                return
            if task.parent_number in outcome.gone:
                continue
            try:
                number = open_child(client, owner, repo, task)
                # Before the record: a stop here leaves the task due, and the next round finds
                # the child by its marker and sets what is missing.
                refused = relate_child(client, owner, repo, task, number)
            except ForgeStopped:
                raise
            except ReadFailed as failure:
                _unwritable(store, poller, client, target, outcome, None, failure)
                store.record_plan_task(
                    forge, owner, repo, poller, task.job_id, task.task, error=str(failure)
                )
                _failed(outcome, task.parent_number, failure)
                return  # its dependents wait for it; the next round tries again
            store.record_plan_task(forge, owner, repo, poller, task.job_id, task.task, number)
            outcome.opened += 1
            for refusal in refused:  # said in the round's report; the body's lines still gate
                _failed(outcome, number, refusal)


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


def _failed(outcome: MirrorOutcome, number: int, failure: ReadFailed) -> None:
    outcome.failed += 1
    outcome.last_error = f"#{number}: {failure}"


def _unwritable(
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


def write_graph_notes(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    outcome: MirrorOutcome,
    deadline: float,
    max_writes: int,
) -> None:
    """The work graph's notes (issue 35): the comment that tells an issue it is on a dependency
    cycle (`tireless.cycle_reports_due`), posted once, and the edits of outcome comments whose
    checklist of children changed (`tireless.mirror_checklists_due`). Each is recorded as it is
    written; a failure is recorded for it (backed off) and the others go on."""
    forge, owner, repo = target.forge, target.owner, target.repo
    written = 0
    for report in store.cycle_reports_due(forge, owner, repo, poller, max_writes):
        if written and time.monotonic() > deadline:
            break
        if report.number in outcome.gone:
            continue
        written += 1
        try:
            if own_comment(client, owner, repo, report.number, report.marker) is None:
                client.add_comment(owner, repo, report.number, report.body)
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            if not _unwritable(store, poller, client, target, outcome, report.number, failure):
                store.record_cycle_report(
                    forge, owner, repo, poller, report.report_id, str(failure)
                )
            _failed(outcome, report.number, failure)
            continue
        store.record_cycle_report(forge, owner, repo, poller, report.report_id)
        outcome.commented += 1
    edits = 0
    for edit in store.mirror_checklists_due(forge, owner, repo, poller, max_writes):
        if edits and time.monotonic() > deadline:
            break
        if edit.number in outcome.gone:
            continue
        edits += 1
        try:
            edit_checklist(client, owner, repo, edit)
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            if not _unwritable(store, poller, client, target, outcome, edit.number, failure):
                store.record_mirror_checklist(
                    forge, owner, repo, poller, edit.job_id, edit.checklist, str(failure)
                )
            _failed(outcome, edit.number, failure)
            continue
        store.record_mirror_checklist(forge, owner, repo, poller, edit.job_id, edit.checklist)
        outcome.edited += 1


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
