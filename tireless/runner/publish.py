"""The trusted push (DESIGN.md, "Delivery": The change, Trusted push, Checkpoints): what the agent
left in its workspace becomes commits in a repository of the runner's, checked, and pushed to the
issue's branch (or to a checkpoint ref) with a lease over tireless's own last push.

The workspace is a repository cloned by a stranger. The runner never runs git with it as the
repository and never reads its config, hooks, `info/attributes`, `info/exclude`,
`objects/info/alternates`, `.gitmodules` or in-tree `.gitattributes`. It reads its `.git` as data:
- `.git` must be a directory (not missing, not a symbolic link, not a `gitdir:` file); HEAD is
  resolved by reading `.git/HEAD`, then the loose ref file or `packed-refs` (every file opened
  component by component without following a link, regular files only, size-bounded);
- the object files (loose objects `xx/yyyy…`, packs `pack/pack-*.pack`; nothing else of
  `objects/`) are taken into a quarantine directory of the runner's, bounded in total: loose
  objects copied, then checked by `git fsck --no-full --strict` (each file's content must hash to
  its name, so none can stand in for an object of the base history); each pack streamed to
  `git index-pack --stdin --fsck-objects`, which builds its own index from the pack's content
  (the agent's `.idx` is never read).
The runner's git then works in a fresh bare repository of its own (`runner.git`, no template)
with `GIT_OBJECT_DIRECTORY=<quarantine>` and `GIT_ALTERNATE_OBJECT_DIRECTORIES=<runner.git
objects>:<the cache's mirror objects>`, so only the agent's verified objects and the cache's are
seen. Every command is hardened (`workspace.git`): no hook, no system or global config, no
credential helper, no fsmonitor, no submodules.

What the agent left uncommitted is committed by the runner: the working tree is listed in Python
(a walk that never enters a `.git` or follows a link); which untracked files are ignored is
answered by `git --git-dir=runner.git --work-tree=WORKSPACE ls-files --others --exclude-standard`
against a temporary index holding the agent's HEAD (it reads the workspace's `.gitignore` files,
opened with O_NOFOLLOW, and runner.git's own config and `info/exclude`; no config, hook or
attribute of the workspace); each file is hashed by `hash-object -w --no-filters` (no attribute,
no filter); the tree is built by `update-index --index-info` and `write-tree` on a temporary
index and committed on the agent's HEAD by `commit-tree`, with the forge's bot identity and the
trailers `Tireless-Job` and `Tireless-Attempt`. A nested repository's files (a directory with its
own `.git`) are left out, as `git add` would leave them; so is what only the workspace's
`.git/info/exclude` ignores (a local file, not the repository's rules).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from tireless.git import (
    HEX40,
    LOCAL_TIMEOUT,
    NETWORK_TIMEOUT,
    GitAuth,
    GitError,
    GitTimeout,
    Identity,
    git,
)
from tireless.masking import Masker
from tireless.runner.workspace import Workspace

CI_DEFINITIONS = (".github/workflows/", ".gitea/workflows/", ".forgejo/workflows/")
"""Where the forges read their CI definitions (a CI file can read the repository's secrets)."""

FORGE_FILE_LIMIT = 100 * 1024 * 1024
"""GitHub blocks a push with a file over 100 MiB ("GitHub blocks files larger than 100 MiB":
docs.github.com/en/repositories/working-with-files/managing-large-files/about-large-files-on-github).
Gitea and Forgejo have no such default; the policy may lower it for them."""

CHECKPOINTS = "refs/tireless/checkpoints"
SMALL_FILE = 1 << 16
"""The most of `.git/HEAD` or a loose ref file the runner reads."""
PACKED_REFS_LIMIT = 64 << 20


class PublishRefused(Exception):
    """The attempt fails and nothing is pushed: `note` says why (the job's note)."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


class PushFailed(Exception):
    """The push did not reach the forge (`transient`: a connection refused or reset, a timeout,
    a 5xx, a rate limit: push again later without running the agent again)."""

    def __init__(self, note: str, transient: bool) -> None:
        super().__init__(note)
        self.note = note
        self.transient = transient


@dataclass(frozen=True)
class PublishPolicy:
    """The limits of a change and the paths it may not touch. Globs are fnmatch patterns on the
    whole path (`*` matches `/` too); a pattern ending in `/` matches everything under it."""

    max_files: int = 1000
    """Files the change adds, modifies or deletes."""
    max_bytes: int = 50 << 20
    """Bytes of the files the change adds or modifies."""
    max_commits: int = 500
    """Commits pushed."""
    max_file_bytes: int = FORGE_FILE_LIMIT
    """The largest file any pushed commit may hold: the forge would refuse the push."""
    max_object_bytes: int = 2 << 30
    """The workspace's own object files the runner takes in (loose objects and packs)."""
    allow_ci: bool = False
    """Whether the change may touch CI_DEFINITIONS."""
    protected: tuple[str, ...] = ()
    """Globs of paths the change may not touch."""
    allowed: tuple[str, ...] = ()
    """Globs of paths it may touch all the same (a CI file the repository lets agents edit)."""


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


@dataclass(frozen=True)
class Entry:
    """A file of a change: its path, old and new mode and blob (mode 0, null blob: absent)."""

    path: str
    old_mode: int
    new_mode: int
    old_blob: str
    new_blob: str


@dataclass
class Change:
    """The agent's work, taken into a repository of the runner's and checked: `head` (the agent's
    HEAD, or the runner's commit of what it left uncommitted on it), `base`, `commits` (oldest
    first) and `entries` (the files that differ from the base). Holds its scratch directory until
    `close()`; `push_change` may push it again after a transient failure."""

    workspace: Workspace
    scratch: Path
    base: str
    head: str = ""
    tree: str = ""
    base_tree: str = ""
    commits: tuple[str, ...] = ()
    entries: tuple[Entry, ...] = ()
    _env: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def repository(self) -> Path:
        return self.scratch / "runner.git"

    @property
    def empty(self) -> bool:
        """Nothing to deliver: the tree is the base's."""
        return self.tree == self.base_tree

    def git(
        self,
        *args: str,
        auth: GitAuth | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | int | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """The runner's git in runner.git, seeing the quarantine and the cache's objects only."""
        return git(
            *args,
            git_dir=self.repository,
            cwd=self.scratch,
            auth=auth,
            env=self._env | (env or {}),
            stdin=stdin,
            allow_file=self.workspace.cache.allow_file_urls,
            check=check,
            timeout=LOCAL_TIMEOUT if timeout is None else timeout,
        )

    def text(self, *args: str, env: dict[str, str] | None = None) -> str:
        """A command's standard output, stripped (commands that print one value)."""
        return self.git(*args, env=env).stdout.decode().strip()

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> Change:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# Reading the workspace's .git as data
def _open_beneath(directory: int, relative: str, *, is_directory: bool = False) -> int:
    """A descriptor of `relative` beneath the directory `directory`, opened one component at a
    time, following no symbolic link (O_NONBLOCK: a FIFO planted there does not hang the open)."""
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise PublishRefused(
            f"the workspace's .git names a path the runner will not open: {relative!r}"
        )
    fd = os.dup(directory)
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_RDONLY
            if not last or is_directory:
                flags |= os.O_DIRECTORY
            opened = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = opened
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_file(directory: int, relative: str, limit: int) -> bytes | None:
    """The content of a regular file beneath `directory` (None when it does not exist); a link, a
    special file or a file over `limit` bytes is refused."""
    try:
        fd = _open_beneath(directory, relative)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise PublishRefused(
            f"the workspace's .git/{relative} cannot be read: {error.strerror}"
        ) from None
    with os.fdopen(fd, "rb") as file:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise PublishRefused(f"the workspace's .git/{relative} is not a regular file")
        if found.st_size > limit:
            raise PublishRefused(f"the workspace's .git/{relative} is over {limit} bytes")
        return file.read(limit + 1)[:limit]


REF_NAME = re.compile(
    r"refs/(?:[A-Za-z0-9_+@-][A-Za-z0-9._+@-]*/)*[A-Za-z0-9_+@-][A-Za-z0-9._+@-]*"
)


def _agent_head(gitdir: int) -> str:
    """The commit the workspace's HEAD names, read as data: `.git/HEAD`, then the loose ref file or
    `packed-refs` (a symbolic ref is followed at most five times)."""
    content = _read_file(gitdir, "HEAD", SMALL_FILE)
    if content is None:
        raise PublishRefused("the workspace's .git has no HEAD")
    packed: dict[str, str] | None = None
    text = content.decode("ascii", errors="replace").strip()
    for _ in range(5):
        if HEX40.fullmatch(text):
            return text
        ref = text.removeprefix("ref:").strip()
        valid = REF_NAME.fullmatch(ref) and ".." not in ref and not ref.endswith(".lock")
        if not text.startswith("ref:") or not valid:
            raise PublishRefused(
                f"the workspace's HEAD is not a commit or a branch: {text[:100]!r}"
            )
        loose = _read_file(gitdir, ref, SMALL_FILE)
        if loose is not None:
            text = loose.decode("ascii", errors="replace").strip()
            continue
        if packed is None:
            packed = _packed_refs(gitdir)
        if ref not in packed:
            raise PublishRefused(f"the workspace's HEAD names {ref}, which has no commit")
        text = packed[ref]
    raise PublishRefused("the workspace's HEAD is a chain of symbolic refs")


def _packed_refs(gitdir: int) -> dict[str, str]:
    content = _read_file(gitdir, "packed-refs", PACKED_REFS_LIMIT) or b""
    refs: dict[str, str] = {}
    for line in content.decode("ascii", errors="replace").splitlines():
        fields = line.split(" ", 1)
        if len(fields) == 2 and HEX40.fullmatch(fields[0]):
            refs[fields[1].strip()] = fields[0]
    return refs


def _take_objects(change: Change, gitdir: int, limit: int) -> None:
    """Copy the workspace's loose objects and index its packs into the quarantine, at most
    `limit` bytes in all, and check every loose object's content against its name."""
    quarantine = change.scratch / "objects"
    taken = 0

    def count(size: int) -> None:
        nonlocal taken
        taken += size
        if taken > limit:
            raise PublishRefused(
                f"the workspace's objects take over {limit} bytes (the policy's max_object_bytes)"
            )

    try:
        objects = _open_beneath(gitdir, "objects", is_directory=True)
    except OSError:
        raise PublishRefused("the workspace's .git/objects is not a directory") from None
    try:
        with os.scandir(objects) as entries:
            names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
        for name in names:
            if re.fullmatch(r"[0-9a-f]{2}", name):
                _copy_loose(objects, name, quarantine, count)
        if "pack" in names:
            pack = _open_beneath(objects, "pack", is_directory=True)
            try:
                with os.scandir(pack) as entries:
                    packs = sorted(
                        e.name
                        for e in entries
                        if e.is_file(follow_symlinks=False)
                        and re.fullmatch(r"pack-[0-9a-f]{40}\.pack", e.name)
                    )
                for name in packs:
                    fd = _open_beneath(pack, name)
                    try:
                        found = os.fstat(fd)
                        if stat.S_ISREG(found.st_mode):
                            count(found.st_size)
                            checked = change.git(
                                "index-pack", "--stdin", "--fsck-objects", stdin=fd, check=False
                            )
                            if checked.returncode != 0:
                                raise PublishRefused(
                                    f"the workspace's pack {name} is broken: {_last_line(checked.stderr)}"
                                )
                    finally:
                        os.close(fd)
            finally:
                os.close(pack)
    finally:
        os.close(objects)
    # Content checks of the copied loose objects (hash against name included); not the graphs
    # or multi-pack indexes of the object directories, none of which is the agent's.
    checked = change.git(
        "-c", "core.commitGraph=false", "-c", "core.multiPackIndex=false",
        "fsck", "--no-full", "--strict", "--no-dangling", "--no-reflogs", "--no-progress",
        check=False,
    )  # fmt: skip
    if checked.returncode != 0:
        raise PublishRefused(f"the workspace's objects are broken: {_last_line(checked.stderr)}")


def _copy_loose(objects: int, name: str, quarantine: Path, count: Callable[[int], None]) -> None:
    directory = _open_beneath(objects, name, is_directory=True)
    try:
        with os.scandir(directory) as entries:
            files = [
                e.name
                for e in entries
                if e.is_file(follow_symlinks=False) and re.fullmatch(r"[0-9a-f]{38}", e.name)
            ]
        if not files:
            return
        (quarantine / name).mkdir(exist_ok=True)
        for file in files:
            fd = _open_beneath(directory, file)
            with os.fdopen(fd, "rb") as source:
                found = os.fstat(fd)
                if not stat.S_ISREG(found.st_mode):
                    continue
                count(found.st_size)
                data = source.read(found.st_size + 1)
                if len(data) != found.st_size:
                    raise PublishRefused(
                        f"the workspace's object {name}{file} changed as it was read"
                    )
                target = quarantine / name / file
                target.write_bytes(data)
                target.chmod(0o444)
    finally:
        os.close(directory)


def _last_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no message)"


# The agent's uncommitted work
@dataclass(frozen=True)
class _TreeEntry:
    mode: int
    kind: str
    blob: str


def _ls_tree(change: Change, treeish: str) -> dict[bytes, _TreeEntry]:
    """Every file of a tree (recursively), by path."""
    listing = change.git("ls-tree", "-r", "-z", "--full-tree", treeish).stdout
    entries: dict[bytes, _TreeEntry] = {}
    for record in listing.split(b"\0"):
        if record:
            info, _, path = record.partition(b"\t")
            mode, kind, blob = info.decode().split(" ")
            entries[path] = _TreeEntry(int(mode, 8), kind, blob)
    return entries


def _is_dot_git(name: bytes) -> bool:
    return name.lower() == b".git"


def _working_tree(root: bytes, wanted: set[bytes]) -> dict[bytes, os.stat_result]:
    """The files of the working tree among `wanted` (paths relative to `root`), found by a walk
    that enters no `.git` (whatever its case), follows no symbolic link and enters only the
    directories leading to a wanted path; each with its lstat."""
    leading = {path[:i] for path in wanted for i in range(len(path)) if path[i : i + 1] == b"/"}
    found: dict[bytes, os.stat_result] = {}
    pending = [b""]
    while pending:
        relative = pending.pop()
        with os.scandir(os.path.join(root, relative) if relative else root) as entries:
            for entry in entries:
                path = relative + b"/" + entry.name if relative else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if not _is_dot_git(entry.name) and path in leading:
                        pending.append(path)
                elif path in wanted:
                    found[path] = entry.stat(follow_symlinks=False)
    return found


def _commit_uncommitted(
    change: Change, head: str, identity: Identity, job_id: int, attempt: int, policy: PublishPolicy
) -> str:
    """The agent's HEAD, or a commit on it of what the agent left in the working tree."""
    listing_index = {"GIT_INDEX_FILE": str(change.scratch / "listing.index")}
    change.git("read-tree", head, env=listing_index)
    workspace = os.fsencode(change.workspace.path)
    untracked = change.git(
        f"--work-tree={change.workspace.path}",
        "ls-files", "-z", "--others", "--exclude-standard",
        env=listing_index,
    ).stdout  # fmt: skip
    tracked = _ls_tree(change, head)
    wanted = {path for path, entry in tracked.items() if entry.kind == "blob"}
    wanted |= {path for path in untracked.split(b"\0") if path and not path.endswith(b"/")}
    wanted = {path for path in wanted if not any(map(_is_dot_git, path.split(b"/")))}
    files = _working_tree(workspace, wanted)

    index: list[bytes] = []
    to_hash: list[tuple[bytes, int, bytes]] = []  # path, mode, file to hash
    links = change.scratch / "links"
    links.mkdir()
    for path, found in sorted(files.items()):
        if stat.S_ISREG(found.st_mode):
            if found.st_size > policy.max_file_bytes:
                raise PublishRefused(
                    f"{os.fsdecode(path)} is {found.st_size} bytes: over {policy.max_file_bytes}, "
                    "the forge would refuse it"
                )
            mode = 0o100755 if found.st_mode & stat.S_IXUSR else 0o100644
            to_hash.append((path, mode, os.path.join(workspace, path)))
        elif stat.S_ISLNK(found.st_mode):
            target = links / str(len(to_hash))
            target.write_bytes(os.readlink(os.path.join(workspace, path)))
            to_hash.append((path, 0o120000, os.fsencode(target)))
    for path, entry in tracked.items():  # a submodule's commit stays as the agent left it
        if entry.kind == "commit" and os.path.lexists(os.path.join(workspace, path)):
            index.append(b"%o %s\t%s\0" % (entry.mode, entry.blob.encode(), path))
    blobs = _hash_files(change, [file for _, _, file in to_hash])
    for (path, mode, _), blob in zip(to_hash, blobs, strict=True):
        index.append(b"%o %s\t%s\0" % (mode, blob.encode(), path))

    building = {"GIT_INDEX_FILE": str(change.scratch / "commit.index")}
    change.git("update-index", "-z", "--index-info", stdin=b"".join(index), env=building)
    tree = change.text("write-tree", env=building)
    if tree == change.text("rev-parse", f"{head}^{{tree}}"):
        return head
    message = (
        f"Uncommitted work of tireless job {job_id}, attempt {attempt}\n\n"
        f"Tireless-Job: {job_id}\nTireless-Attempt: {attempt}\n"
    )
    who = {
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }
    return (
        change.git("commit-tree", tree, "-p", head, "-F", "-", stdin=message.encode(), env=who)
        .stdout.decode()
        .strip()
    )


def _hash_files(change: Change, files: Sequence[bytes]) -> list[str]:
    """Write each file as a blob, as it is (`--no-filters`: no attribute, no filter, no line-end
    conversion); absolute paths, so `--stdin-paths` never unquotes one. A name with a line break
    (which `--stdin-paths` cannot carry) is hashed on its own, from a descriptor."""
    blobs: dict[bytes, str] = {}
    batch = [file for file in files if b"\n" not in file]
    if batch:
        written = change.git(
            "hash-object", "-w", "--no-filters", "--stdin-paths", stdin=b"\n".join(batch) + b"\n"
        ).stdout.split()
        blobs.update(zip(batch, (blob.decode() for blob in written), strict=True))
    for file in files:
        if file not in blobs:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                blobs[file] = (
                    change.git("hash-object", "-w", "--no-filters", "--stdin", stdin=fd)
                    .stdout.decode()
                    .strip()
                )
            finally:
                os.close(fd)
    return [blobs[file] for file in files]


# The checks
def _diff(change: Change, old: str, new: str) -> tuple[Entry, ...]:
    raw = change.git("diff-tree", "-r", "-z", "--no-renames", "--raw", old, new).stdout
    fields = raw.split(b"\0")
    entries: list[Entry] = []
    for info, path in zip(fields[0::2], fields[1::2], strict=False):
        if info.startswith(b":"):
            old_mode, new_mode, old_blob, new_blob, _ = info[1:].decode().split(" ")
            entries.append(
                Entry(os.fsdecode(path), int(old_mode, 8), int(new_mode, 8), old_blob, new_blob)
            )
    return tuple(entries)


def _touched_by_commits(change: Change) -> set[str]:
    """Every path a commit of the change (not a merge) touches, also those a later commit
    undid."""
    if not change.commits:
        return set()
    listing = change.git(
        "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--stdin",
        stdin="".join(f"{commit}\n" for commit in change.commits).encode(),
    ).stdout  # fmt: skip
    commits = set(change.commits)
    return {
        os.fsdecode(p)
        for p in listing.split(b"\0")
        if p and p.decode(errors="replace") not in commits
    }


def matches(path: str, pattern: str) -> bool:
    """A policy glob: fnmatch on the whole path, or everything under a pattern ending in `/`."""
    return path.startswith(pattern) if pattern.endswith("/") else fnmatch.fnmatchcase(path, pattern)


def _names(paths: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(sorted(paths)[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def _check_paths(change: Change, policy: PublishPolicy) -> None:
    touched = {entry.path for entry in change.entries} | _touched_by_commits(change)
    odd = [
        p for p in touched if any(part.lower() in ("", ".", "..", ".git") for part in p.split("/"))
    ]
    if odd:
        raise PublishRefused(f"the change has paths no forge accepts: {_names(odd)}")
    others = [p for p in touched if not any(matches(p, glob) for glob in policy.allowed)]
    ci = [p for p in others if any(matches(p, directory) for directory in CI_DEFINITIONS)]
    if ci and not policy.allow_ci:
        raise PublishRefused(
            f"the change touches the forge's CI definitions, which the policy does not allow: {_names(ci)}"
        )
    protected = [p for p in others if any(matches(p, glob) for glob in policy.protected)]
    if protected:
        raise PublishRefused(f"the change touches paths the policy protects: {_names(protected)}")


def _check_links(change: Change) -> None:
    """Refuse a symbolic link the change adds or modifies that leads out of the tree: absolute,
    or escaping it with `..`, resolved the way the kernel would through the tree's other links."""
    changed = [e.path for e in change.entries if e.new_mode == 0o120000]
    if not changed:
        return
    every = {
        os.fsdecode(path): entry.blob
        for path, entry in _ls_tree(change, change.head).items()
        if entry.mode == 0o120000
    }
    targets = _blobs(change, list(every.values()))
    links = {path: targets[blob].decode(errors="surrogateescape") for path, blob in every.items()}
    out = [path for path in changed if _escapes(path, links)]
    if out:
        raise PublishRefused(
            f"the change has symbolic links that point out of the tree: {_names(out)}"
        )


def _escapes(path: str, links: dict[str, str]) -> bool:
    """Whether the link at `path` resolves outside the tree (or loops), given every link of it."""
    resolved = path.split("/")[:-1]
    pending = deque(links[path].split("/"))
    if links[path].startswith("/"):
        return True
    hops = 0
    while pending:
        part = pending.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return True
            resolved.pop()
            continue
        here = "/".join([*resolved, part])
        if here in links:
            hops += 1
            if hops > 40 or links[here].startswith("/"):
                return True
            pending.extendleft(reversed(links[here].split("/")))
            continue
        resolved.append(part)
    return False


def _blobs(change: Change, blobs: Sequence[str]) -> dict[str, bytes]:
    """The content of small blobs (link targets), by name."""
    if not blobs:
        return {}
    out = change.git("cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode()).stdout
    contents: dict[str, bytes] = {}
    while out:
        header, _, out = out.partition(b"\n")
        name, _, size = header.decode().split(" ")
        contents[name] = out[: int(size)]
        out = out[int(size) + 1 :]
    return contents


def _check_sizes(change: Change, policy: PublishPolicy, limits: bool) -> None:
    """Every object pushed is present; no file of any pushed commit is over the forge's limit;
    with `limits`, the change is within the policy's counts."""
    listed = change.git(
        "rev-list", "--objects", "--no-object-names", change.head, f"^{change.base}", check=False
    )
    if listed.returncode != 0:
        raise PublishRefused(
            f"the workspace's commits need objects it does not hold: {_last_line(listed.stderr)}"
        )
    sizes = change.git(
        "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)", stdin=listed.stdout
    ).stdout.decode()
    names = {entry.new_blob: entry.path for entry in change.entries}
    for line in sizes.splitlines():
        name, kind, *size = line.split(" ")
        if kind == "missing":
            raise PublishRefused(
                f"the workspace's commits need object {name}, which it does not hold"
            )
        if kind == "blob" and int(size[0]) > policy.max_file_bytes:
            where = names.get(name, f"a file of blob {name} in one of its commits")
            raise PublishRefused(
                f"the change holds {where} of {size[0]} bytes: over {policy.max_file_bytes}, "
                "the forge would refuse the push"
            )
    if not limits:
        return
    if len(change.commits) > policy.max_commits:
        raise PublishRefused(
            f"the change has {len(change.commits)} commits: at most {policy.max_commits}"
        )
    if len(change.entries) > policy.max_files:
        raise PublishRefused(
            f"the change touches {len(change.entries)} files: at most {policy.max_files}"
        )
    new = [e.new_blob for e in change.entries if e.new_mode and e.new_mode != 0o160000]
    checked = change.git(
        "cat-file", "--batch-check=%(objectsize)", stdin="".join(f"{b}\n" for b in new).encode()
    ).stdout.split()
    total = sum(int(size) for size in checked)
    if total > policy.max_bytes:
        raise PublishRefused(
            f"the change adds or modifies {total} bytes: at most {policy.max_bytes}"
        )


# Taking the change
def take_change(
    workspace: Workspace,
    *,
    identity: Identity,
    job_id: int,
    attempt: int,
    policy: PublishPolicy | None = None,
    size_limits: bool = True,
    scratch_root: Path | None = None,
) -> Change:
    """The agent's work in a repository of the runner's, committed (what it left uncommitted)
    and checked: raises PublishRefused with the note when the workspace's `.git` was removed or
    replaced, when its HEAD does not descend from the base, when the change holds a file the
    forge would refuse, touches CI definitions or protected paths, adds a link out of the tree,
    or (`size_limits`) is over the policy's counts. `change.empty`: nothing to deliver. Close it
    (a context manager) when done."""
    policy = policy or PublishPolicy()
    scratch = Path(tempfile.mkdtemp(prefix="tireless-publish-", dir=scratch_root))
    change = Change(workspace, scratch, workspace.base_commit)
    try:
        (scratch / "objects" / "pack").mkdir(parents=True)
        git("init", "--quiet", "--bare", "--template=", str(change.repository))
        change._env = {
            "GIT_OBJECT_DIRECTORY": str(scratch / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(
                [str(change.repository / "objects"), str(workspace.mirror / "objects")]
            ),
        }
        _take(change, identity, job_id, attempt, policy, size_limits)
    except GitError as error:
        change.close()
        raise PublishRefused(
            f"the runner's git refused the workspace's work: {error.stderr.strip()[-500:]}"
        ) from None
    except BaseException:
        change.close()
        raise
    return change


def _take(
    change: Change,
    identity: Identity,
    job_id: int,
    attempt: int,
    policy: PublishPolicy,
    limits: bool,
) -> None:
    with _workspace_git(change.workspace.path) as gitdir:
        head = _agent_head(gitdir)
        _take_objects(change, gitdir, policy.max_object_bytes)
    if change.git("cat-file", "-t", head, check=False).stdout.strip() != b"commit":
        raise PublishRefused(f"the workspace's HEAD names {head}, a commit it does not hold")
    descends = change.git("merge-base", "--is-ancestor", change.base, head, check=False)
    if descends.returncode == 1:
        raise PublishRefused(
            f"the workspace's HEAD ({head[:12]}) does not descend from the base commit "
            f"({change.base[:12]}): its commits are on another history"
        )
    if descends.returncode != 0:
        raise PublishRefused(
            f"the workspace's history cannot be read: {_last_line(descends.stderr)}"
        )
    connected = change.git("rev-list", "--objects", head, f"^{change.base}", check=False)
    if connected.returncode != 0:
        raise PublishRefused(
            f"the workspace's commits need objects it does not hold: {_last_line(connected.stderr)}"
        )
    change.head = _commit_uncommitted(change, head, identity, job_id, attempt, policy)
    change.tree = change.text("rev-parse", f"{change.head}^{{tree}}")
    change.base_tree = change.text("rev-parse", f"{change.base}^{{tree}}")
    if change.empty:
        return
    listed = change.text("rev-list", "--reverse", change.head, f"^{change.base}")
    change.commits = tuple(listed.split())
    change.entries = _diff(change, change.base, change.head)
    _check_paths(change, policy)
    _check_sizes(change, policy, limits)  # before reading links: every blob's size is known
    _check_links(change)


@contextlib.contextmanager
def _workspace_git(workspace: Path) -> Iterator[int]:
    """A descriptor of the workspace's `.git`, which must be a directory: not missing, not a
    symbolic link, not a `gitdir:` file."""
    root = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            found = os.stat(".git", dir_fd=root, follow_symlinks=False)
        except FileNotFoundError:
            raise PublishRefused("the workspace's .git was removed") from None
        if stat.S_ISLNK(found.st_mode):
            raise PublishRefused("the workspace's .git was replaced by a symbolic link")
        if stat.S_ISREG(found.st_mode):
            raise PublishRefused("the workspace's .git was replaced by a file (a gitdir: pointer?)")
        if not stat.S_ISDIR(found.st_mode):
            raise PublishRefused("the workspace's .git is not a directory")
        gitdir = os.open(
            ".git", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root
        )
    finally:
        os.close(root)
    try:
        yield gitdir
    finally:
        os.close(gitdir)


# Pushing
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
    words = "; ".join(s for s in said if s) or _last_line(err.encode())
    if REFUSED.search(err):  # first: git may say "RPC failed; HTTP 403" too
        raise PublishRefused(f"the forge refused the push to {_short(ref)}: {words}")
    if TRANSIENT.search(err):
        raise PushFailed(
            f"the push to {_short(ref)} did not get through: {_last_line(err.encode())}",
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
            f"reading {_short(ref)} on the forge failed: {_last_line(err.encode())}",
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
    identity: Identity,
    job_id: int,
    attempt: int,
    policy: PublishPolicy | None = None,
) -> Published | NoChange:
    """Deliver the workspace's change to `branch` (`<prefix>/<number>`): take it, check it, push
    it with the lease `expected` (tireless's last push of the branch, None if it never pushed
    it). NoChange when there is nothing to deliver. Raises PublishRefused (fail the attempt) or
    PushFailed (transient: call again, or keep a `take_change` and `push_change` it again)."""
    with take_change(
        workspace, identity=identity, job_id=job_id, attempt=attempt, policy=policy
    ) as change:
        if change.empty:
            return NoChange(change.base)
        head = push_change(change, auth=auth, ref=f"refs/heads/{branch}", expected=expected)
        return Published(branch, head, change.base, change.commits)


def save_checkpoint(
    workspace: Workspace,
    *,
    auth: GitAuth | None,
    last: str | None,
    identity: Identity,
    job_id: int,
    attempt: int,
    attempt_id: str,
    policy: PublishPolicy | None = None,
) -> Checkpoint | NoChange:
    """Save the workspace's commits so far (what is uncommitted committed as for `publish`) in
    the attempt's own ref on the forge (`checkpoint_ref`), over nothing but this workspace's own
    pushes: the same checks as `publish` but the size limits. NoChange when there is nothing to
    save (no change, or the tree of `last`, the job's last checkpoint: this attempt's, else an
    earlier attempt's; None for none)."""
    with take_change(
        workspace,
        identity=identity,
        job_id=job_id,
        attempt=attempt,
        policy=policy,
        size_limits=False,
    ) as change:
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
        ref = checkpoint_ref(job_id, attempt_id)
        expected = last if last in workspace.pushed else None  # else the ref is still to make
        head = push_change(change, auth=auth, ref=ref, expected=expected, ours=workspace.pushed)
        return Checkpoint(ref, head, change.base, change.commits)
