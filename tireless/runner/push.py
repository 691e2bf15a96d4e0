"""The trusted push (DESIGN.md, "Delivery": Trusted push, Checkpoints): the change taken and checked
(policy.take_change) pushed to the issue's branch, or to the attempt's checkpoint ref, with a lease
over tireless's own last push; every git command hardened (tireless.git)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from tireless.git import NETWORK_TIMEOUT, GitAuth, GitTimeout
from tireless.masking import Masker
from tireless.runner.extract import Change, PublishRefused, last_line
from tireless.runner.message import CommitMessage
from tireless.runner.policy import PublishPolicy, take_change
from tireless.runner.workspace import Workspace

CHECKPOINTS = "refs/tireless/checkpoints"


class PushFailed(Exception):
    """The push did not reach the forge (`transient`: a connection refused or reset, a timeout,
    a 5xx, a rate limit: push again later without running the agent again)."""

    def __init__(self, note: str, transient: bool) -> None:
        super().__init__(note)
        self.note = note
        self.transient = transient


@dataclass(frozen=True)
class Published:
    """The change is on the forge: `branch` holds `head_commit`, made of `commits` (oldest first)
    on `base_commit`. `head_commit` is tireless's last push of the branch (the next lease)."""

    branch: str
    head_commit: str
    base_commit: str
    commits: tuple[str, ...]


@dataclass(frozen=True)
class Checkpoint:
    """The workspace's commits so far, saved in tireless's own ref (never the pull request's
    branch); `head_commit` is the next checkpoint's lease."""

    ref: str
    head_commit: str
    base_commit: str
    commits: tuple[str, ...]


@dataclass(frozen=True)
class NoChange:
    """The agent changed nothing: the job is delivered with this note, and nothing is pushed."""

    base_commit: str
    note: str = "no change"


def checkpoint_ref(job_id: int, attempt_id: str) -> str:
    """The ref of one attempt's checkpoints (`Job.attempt_id`): two attempts of the same number
    (a claim lost in a failover, whose agent has not stopped yet) never push over each other."""
    return f"{CHECKPOINTS}/{job_id}-{attempt_id}"


TRANSIENT = re.compile(
    r"Could not resolve host|Failed to connect|Connection refused|Connection reset|Connection timed out"
    r"|Operation timed out|timed out|Empty reply from server|early EOF|remote end hung up"
    r"|returned error: (?:5\d\d|429)|RPC failed|HTTP (?:5\d\d|429)|SSL_(?:connect|read|write)"
    r"|gnutls|stopped after",
    re.IGNORECASE,
)
"""git's words (LC_ALL=C) for a push that did not reach the forge, or a forge that could not
answer (5xx) or asked to come back later (429): worth pushing again."""

REFUSED = re.compile(
    r"returned error: 40[134]|HTTP 40[134]|Authentication failed|could not read Username|denied"
)
"""git's words for a forge that will not take the push from this token (no such repository, no
write access, a token without the scope): pushing again changes nothing."""


def push_change(
    change: Change,
    *,
    auth: GitAuth | None,
    ref: str,
    expected: str | None,
    url: str | None = None,
    ours: Collection[str] = (),
) -> str:
    """Push `change.head` to `ref` of the forge (the workspace's clone URL unless `url`) with a
    lease: the ref must hold `expected` (tireless's last push of it), or not exist when None.
    Returns the commit pushed. A ref that holds a commit tireless did not push is left as it is
    (PublishRefused naming it); one that holds a commit of `ours` (tireless pushed it, in an
    attempt whose delivery was never recorded: its runner died after the push) is pushed over; a
    ref someone deleted is made again; a push the forge refuses raises PublishRefused with its
    words; one that did not get through raises PushFailed."""
    url = url or change.workspace.clone_url
    masker = Masker(auth.secrets() if auth is not None else [])
    lease = expected
    for _ in range(3):  # the lease given, then what the ref holds when that is tireless's own
        refused = _push(change, auth, url, ref, lease, masker)
        if refused is None:
            change.workspace.pushed[change.head] = change.tree
            return change.head
        if "stale info" not in refused:
            raise PublishRefused(f"the forge refused the push to {_short(ref)}: {refused}")
        there = _remote_commit(change, auth, url, ref, masker)
        if there == change.head:  # pushed already: an earlier answer was lost
            change.workspace.pushed[change.head] = change.tree
            return change.head
        if there is None and lease is not None:
            lease = None  # someone deleted the ref since tireless pushed it: make it again
            continue
        if there is not None and there in ours and there != lease:
            lease = there
            continue
        raise PublishRefused(
            f"{_short(ref)} has commit {(there or '?')[:12]} that tireless did not push "
            f"(tireless's last push: {(expected or 'none')[:12]}); nothing was pushed and "
            "nothing of theirs was overwritten"
        )
    raise PublishRefused(
        f"{_short(ref)} kept moving while tireless pushed; nothing was overwritten"
    )


def _push(
    change: Change, auth: GitAuth | None, url: str, ref: str, lease: str | None, masker: Masker
) -> str | None:
    """None when the forge took the push, else the reason it gave (`stale info`: the lease)."""
    try:
        pushed = change.git(
            "push", "--porcelain", "--no-verify", "--no-recurse-submodules",
            f"--force-with-lease={ref}:{lease or ''}",
            "--end-of-options", url, f"{change.head}:{ref}",
            auth=auth, check=False, timeout=NETWORK_TIMEOUT,
        )  # fmt: skip
    except GitTimeout as error:
        raise PushFailed(
            f"the push to {_short(ref)} timed out: {error.stderr}", transient=True
        ) from None
    out = masker.mask(pushed.stdout.decode(errors="replace"))
    err = masker.mask(pushed.stderr.decode(errors="replace"))
    said = [
        line.removeprefix("remote:").strip()
        for line in err.splitlines()
        if line.startswith("remote:")
    ]
    for line in out.splitlines():
        flag, _, rest = line.partition("\t")
        if rest.endswith(f":{ref}") or f":{ref}\t" in rest:
            if flag in (" ", "+", "*", "=") and pushed.returncode == 0:
                return None
            summary = rest.split("\t", 1)[-1]
            return "; ".join([summary, *[s for s in said if s]])
    if pushed.returncode == 0:
        return None
    words = "; ".join(s for s in said if s) or last_line(err.encode())
    if REFUSED.search(err):  # first: git may say "RPC failed; HTTP 403" too
        raise PublishRefused(f"the forge refused the push to {_short(ref)}: {words}")
    if TRANSIENT.search(err):
        raise PushFailed(
            f"the push to {_short(ref)} did not get through: {last_line(err.encode())}",
            transient=True,
        )
    raise PushFailed(f"the push to {_short(ref)} failed: {words}", transient=False)


def _remote_commit(
    change: Change, auth: GitAuth | None, url: str, ref: str, masker: Masker
) -> str | None:
    try:
        listed = change.git(
            "ls-remote",
            "--end-of-options",
            url,
            ref,
            auth=auth,
            check=False,
            timeout=NETWORK_TIMEOUT,
        )
    except GitTimeout:
        raise PushFailed(f"reading {_short(ref)} on the forge timed out", transient=True) from None
    if listed.returncode != 0:
        err = masker.mask(listed.stderr.decode(errors="replace"))
        raise PushFailed(
            f"reading {_short(ref)} on the forge failed: {last_line(err.encode())}",
            bool(TRANSIENT.search(err)),
        )
    for line in listed.stdout.decode().splitlines():
        commit, _, name = line.partition("\t")
        if name == ref:
            return commit
    return None


def _short(ref: str) -> str:
    if ref.startswith("refs/heads/"):
        return f"branch {ref.removeprefix('refs/heads/')}"
    return f"ref {ref}"


def publish(
    workspace: Workspace,
    *,
    auth: GitAuth | None,
    branch: str,
    expected: str | None,
    commit: CommitMessage,
    policy: PublishPolicy | None = None,
) -> Published | NoChange:
    """Deliver the workspace's change to `branch` (`<prefix>/<number>`): take it, check it, push
    it with the lease `expected` (tireless's last push of the branch, None if it never pushed
    it). NoChange when there is nothing to deliver. Raises PublishRefused (fail the attempt) or
    PushFailed (transient: call again, or keep a `take_change` and `push_change` it again)."""
    with take_change(workspace, commit=commit, policy=policy) as change:
        if change.empty:
            return NoChange(change.base)
        head = push_change(change, auth=auth, ref=f"refs/heads/{branch}", expected=expected)
        return Published(branch, head, change.base, change.commits)


def save_checkpoint(
    workspace: Workspace,
    *,
    auth: GitAuth | None,
    last: str | None,
    commit: CommitMessage,
    policy: PublishPolicy | None = None,
) -> Checkpoint | NoChange:
    """Save the workspace's commits so far (what is uncommitted committed as for `publish`) in
    the attempt's own ref on the forge (`checkpoint_ref`), over nothing but this workspace's own
    pushes: the same checks as `publish` but the size limits. NoChange when there is nothing to
    save (no change, or the tree of `last`, the job's last checkpoint: this attempt's, else an
    earlier attempt's; None for none)."""
    with take_change(workspace, commit=commit, policy=policy, size_limits=False) as change:
        if change.empty:
            return NoChange(change.base)
        if last is not None:
            last_tree = (
                workspace.pushed.get(last)
                or change.git("rev-parse", "--verify", "--quiet", f"{last}^{{tree}}", check=False)
                .stdout.decode()
                .strip()
            )
            if last_tree == change.tree:
                return NoChange(change.base, "no change since the last checkpoint")
        ref = checkpoint_ref(commit.job_id, commit.attempt_id)
        expected = last if last in workspace.pushed else None  # else the ref is still to make
        head = push_change(change, auth=auth, ref=ref, expected=expected, ours=workspace.pushed)
        return Checkpoint(ref, head, change.base, change.commits)
