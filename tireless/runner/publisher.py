"""Publishing for `tireless work --deliver` (DESIGN.md, "Delivery"): the workspace COMMAND works
in, made from the host's cache of the issue's repository, and, when an `implement` job's COMMAND
exits 0, its change pushed by the runner (push.py) to the issue's branch; the Delivery that
push made is what the lease delivers the job with (`tireless.deliver`). Every kind gets a
workspace; only `implement` pushes. A job whose forge is not registered (no clone URL) runs as
before, in the worker's directory, with nothing to push."""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import pwd
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tireless.credentials import token_variable
from tireless.forge.app_auth import app_of, forge_git_auth
from tireless.forge.client import ReadFailed
from tireless.git import GitAuth, GitError
from tireless.models import NO_CHANGE, Delivery, Job, JobBrief, JobKind
from tireless.runner.extract import PublishRefused
from tireless.runner.identity import Identities
from tireless.runner.message import CommitMessage
from tireless.runner.policy import PublishPolicy, take_change
from tireless.runner.push import Checkpoint, PushFailed, push_change, save_checkpoint
from tireless.runner.workspace import (
    RepoCache,
    Workspace,
    WorkspaceError,
    prepare_workspace,
    remove_tree,
)
from tireless.store.lease import Release

log = logging.getLogger(__name__)

PUSH_TRIES = 4
"""A push that does not get through (a timeout, a 5xx) is tried this many times, 1, 2 and 4 s
apart, before the attempt is released: the agent is not run again for it."""


def state_directory() -> Path:
    """Where `tireless work` keeps its cache of repositories and the jobs' workspaces by default:
    /var/lib/tireless as root, else $XDG_STATE_HOME/tireless (~/.local/state/tireless)."""
    if os.geteuid() == 0:
        return Path("/var/lib/tireless")
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "tireless"


@dataclass
class Publisher:
    """Where the runner keeps its cache of repositories and the jobs' workspaces, and who its
    commits are by (`identities`: the forge's account, or `--git-identity`)."""

    state_dir: Path
    cache_max_bytes: int | None = None
    identities: Identities = field(default_factory=Identities)
    policy: PublishPolicy = field(default_factory=PublishPolicy)
    """The limits of a change the store does not set; the repository's policy, as it applies
    (its job's brief), replaces the rest (policy_for)."""
    agent: pwd.struct_passwd | None = None
    worker: str = "worker"
    """The worker's name: its workspaces are named after it, so that it removes, when it starts,
    those a killed run of it left behind (one worker name is one running worker)."""

    def __post_init__(self) -> None:
        for directory in (self.state_dir, self.state_dir / "workspaces"):
            directory.mkdir(parents=True, exist_ok=True)
            directory.chmod(0o755)  # the agent's user goes through to its workspace
        self.cache = RepoCache(self.state_dir / "git", self.cache_max_bytes)
        self._prefix = re.sub(r"[^A-Za-z0-9._-]", "_", self.worker) + "--"
        for left in (self.state_dir / "workspaces").glob(f"{glob.escape(self._prefix)}*"):
            log.info("%s: removing the workspace %s its last run left", self.worker, left.name)
            remove_tree(left)

    @contextlib.contextmanager
    def workspace(self, job: Job, brief: JobBrief) -> Iterator[Workspace | None]:
        """The job's workspace for as long as the block runs, removed after it; None when the job's
        forge is not registered. Raises Release (a failed attempt, with a note) when it cannot be
        made: no token for the forge, the forge unreachable, the repository empty."""
        if brief.clone_url is None:
            yield None
            return
        auth = forge_auth(job)
        if auth is None:
            raise Release(
                f"this runner has no token for forge {job.forge!r}: set {token_variable(job.forge)}"
                f" or {token_variable(job.forge)}_FILE where `tireless work` runs"
            )
        # A name of its own: job ids repeat across stores, and a dead worker's workspace may remain.
        unique = secrets.token_hex(4)
        name = f"{self._prefix}job-{job.id}-attempt-{job.attempts}-{unique}"
        dest = self.state_dir / "workspaces" / name
        owner = None if self.agent is None else (self.agent.pw_uid, self.agent.pw_gid)
        made = None
        try:
            base = default_branch(self.cache.refresh(brief.clone_url, auth))
            for start in starting_points(brief):
                try:
                    made = prepare_workspace(
                        self.cache, brief.clone_url, auth, dest, start=start,
                        base=None if start is None else base, branch=brief.branch, owner=owner,
                        refresh=False,
                    )  # fmt: skip
                    break
                except WorkspaceError as missing:  # a checkpoint or a branch that is gone
                    log.info("job %s: not from %s (%s); trying the next", job.id, start, missing)
        except GitError as failed:
            raise Release(f"workspace: {failed}") from failed
        if made is None:
            raise Release(f"workspace: nothing to start from in {brief.clone_url}")
        try:
            yield made
        finally:
            made.remove()

    def policy_for(self, brief: JobBrief) -> PublishPolicy:
        """The repository's delivery policy as it applies (`tireless.delivery_policy`, in the
        brief: the store fills in the defaults) in place of the defaults of `policy`; the limits
        the store does not set (commits, file and object sizes) stay those of `policy`."""
        assert brief.applied_max_files is not None, "a brief from the store says what applies"
        assert brief.applied_max_bytes is not None, "a brief from the store says what applies"
        return replace(
            self.policy,
            protected=brief.protected_paths,
            allowed=brief.allowed_paths,
            allow_ci=brief.allow_ci,
            max_files=brief.applied_max_files,
            max_bytes=brief.applied_max_bytes,
        )

    def commit_message(
        self, job: Job, summary: str | None = None, checkpoint: bool = False
    ) -> CommitMessage:
        """What the runner's commit of the job's work says, and who it is by."""
        assert job.attempt_id is not None, "a claimed job's work is committed"
        return CommitMessage(
            self.identities.of(job.forge), job.id, job.attempt_id, job.number, job.title,
            summary, checkpoint,
        )  # fmt: skip

    def push(
        self,
        job: Job,
        brief: JobBrief,
        workspace: Workspace,
        draft: bool,
        record: Callable[[str, str], Collection[str]],
        report: str | None = None,
    ) -> Delivery | None:
        """After COMMAND exited 0: an `implement` job's change on the forge (its branch and head),
        or NO_CHANGE when it changed nothing; None for a kind that does not push. `report` (the
        agent's, masked) is the body of the runner's commit of what it left uncommitted.
        `record(branch, head)` records the push in the store before it is made and answers the
        heads tireless pushed to the branch before (tireless.record_push), which the push may go
        over. Raises Release with the note when the change is refused (a CI file, a limit, someone
        else's commit on the branch, the forge's refusal) or the push never got through."""
        if job.kind is not JobKind.IMPLEMENT:
            return None
        assert brief.branch is not None, "the brief names the branch of an issue with a clone URL"
        base_branch = default_branch(workspace.mirror)
        try:
            with take_change(
                workspace, commit=self.commit_message(job, report), policy=self.policy_for(brief)
            ) as change:
                if change.empty:
                    return NO_CHANGE
                ours = record(brief.branch, change.head)
                auth, renewed = forge_auth(job), False
                for tried in range(1, PUSH_TRIES + 1):
                    try:
                        head = push_change(
                            change, auth=auth, ref=f"refs/heads/{brief.branch}",
                            expected=brief.branch_head, ours=ours,
                        )  # fmt: skip
                        break
                    except (PushFailed, PublishRefused) as failed:
                        if not renewed and (fresh := renewed_auth(job, auth, str(failed))):
                            auth, renewed = fresh, True  # a GitHub App's token refused: once
                            continue
                        if isinstance(failed, PublishRefused) or not failed.transient:
                            raise
                        if tried == PUSH_TRIES:
                            raise
                        log.info("job %s: push failed (%s); again in %ss", job.id, failed, tried)
                        time.sleep(2 ** (tried - 1))
                log.info("job %s: pushed %s at %s", job.id, brief.branch, head[:12])
                return Delivery(brief.branch, head, base_branch, change.base, draft)
        except (PublishRefused, PushFailed) as refused:
            raise Release(refused.note) from refused
        except GitError as failed:
            raise Release(f"publish: {failed}") from failed

    def checkpoint(
        self, job: Job, brief: JobBrief, workspace: Workspace, last: str | None
    ) -> Checkpoint | None:
        """The workspace's work so far saved in the attempt's checkpoint ref on the forge (`last`:
        the job's last checkpoint); None when there was nothing new to save or it could not be
        saved (said in the log: a checkpoint is a help, never the job's failure)."""
        assert job.attempt_id is not None, "a checkpoint is saved for a claimed job"
        try:
            saved = save_checkpoint(
                workspace, auth=forge_auth(job), last=last,
                commit=self.commit_message(job, checkpoint=True), policy=self.policy_for(brief),
            )  # fmt: skip
        except (PublishRefused, PushFailed, GitError, Release) as failed:
            log.warning("job %s: the checkpoint was not saved: %s", job.id, failed)
            return None
        return saved if isinstance(saved, Checkpoint) else None


class Checkpoints:
    """Saves the workspace's work each time COMMAND asks (`::checkpoint::`), one save at a time on
    a thread of its own (the reader of COMMAND's output never waits; asks that come during a save
    make one more save), and hands each saved checkpoint to `record` (the store)."""

    def __init__(
        self,
        save: Callable[[str | None], Checkpoint | None],
        record: Callable[[Checkpoint], object],
        last: str | None,
    ) -> None:
        self._save = save
        self._record = record
        self._last = last
        self._asked: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="checkpoints", daemon=True)
        self._thread.start()

    def ask(self) -> None:
        self._asked.put(True)

    def close(self) -> None:
        """Once the saves asked for so far are done: COMMAND ended, its work is pushed next."""
        self._asked.put(False)
        self._thread.join()

    def _run(self) -> None:
        while self._asked.get():
            while not self._asked.empty():  # asks that came meanwhile: one save covers them
                if not self._asked.get():
                    self._asked.put(False)
                    break
            saved = self._save(self._last)
            if saved is not None:
                try:
                    self._record(saved)
                    self._last = saved.head_commit
                except (
                    Exception
                ):  # the lease lost, the database away: the next attempt starts earlier
                    log.warning("the checkpoint %s was not recorded", saved.ref, exc_info=True)


def starting_points(brief: JobBrief) -> list[str | None]:
    """Where the workspace starts, best first: the job's last checkpoint, the issue's branch when
    tireless pushed it and its pull request is known (the pull request's head), the default
    branch (None)."""
    points: list[str | None] = []
    if brief.checkpoint_ref is not None:
        points.append(brief.checkpoint_ref)
    if brief.branch is not None and brief.branch_head is not None and brief.pull_number is not None:
        points.append(brief.branch)
    return [*points, None]


def default_branch(mirror: Path) -> str:
    """The repository's default branch, as the cache's mirror of the forge names it."""
    head = (mirror / "HEAD").read_text().strip()
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: ") else "main"


def forge_auth(job: Job) -> GitAuth | None:
    """git_auth for the job's repository; Release (a failed attempt, with a note) when the forge's
    GitHub App could not mint its token (the forge unreachable, the App not installed there)."""
    try:
        return forge_git_auth(job.forge, job.owner, job.repo)
    except ReadFailed as failed:
        raise Release(f"forge {job.forge}: no token for {job.owner}/{job.repo}: {failed}") from None


GIT_AUTH_REFUSED = re.compile(
    r"Authentication failed|could not read Username|returned error: 401|HTTP 401", re.IGNORECASE
)
"""What git says when the forge refused its credentials (an installation token expired)."""


def renewed_auth(job: Job, auth: GitAuth | None, failed: str) -> GitAuth | None:
    """For a push the forge refused our token (401), on a forge of a GitHub App: the credentials
    of a token minted anew (the push is then tried once more); None otherwise."""
    app = app_of(job.forge)
    if app is None or auth is None or not GIT_AUTH_REFUSED.search(failed):
        return None
    try:
        return GitAuth.github(app.renew(job.owner, job.repo, auth.token))
    except ReadFailed:
        return None
