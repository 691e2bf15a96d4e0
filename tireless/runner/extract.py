"""Taking the agent's work out of its untrusted workspace (DESIGN.md, "Delivery": The change): what
the agent left becomes commits in a repository of the runner's (`Change`), which policy.py checks
and push.py pushes.

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
seen. Every command is hardened (`tireless.git.git`): no hook, no system or global config, no
credential helper, no fsmonitor, no submodules.

What the agent left uncommitted is committed by the runner: the working tree is listed in Python
(a walk that never enters a `.git` or follows a link); which untracked files are ignored is
answered by `git --git-dir=runner.git --work-tree=WORKSPACE ls-files --others --exclude-standard`
against a temporary index holding the agent's HEAD (it reads the workspace's `.gitignore` files,
opened with O_NOFOLLOW, and runner.git's own config and `info/exclude`; no config, hook or
attribute of the workspace); each file is hashed by `hash-object -w --no-filters` (no attribute,
no filter); the tree is built by `update-index --index-info` and `write-tree` on a temporary
index and committed on the agent's HEAD by `commit-tree`, as the forge's bot account (or
`--git-identity`), with the message of tireless.runner.message: the issue's `Fix #N: <title>` or
the agent's own last subject, its report, the trailers `Tireless-Job` and `Tireless-Attempt`. A nested repository's files (a directory with its
own `.git`) are left out, as `git add` would leave them; so is what only the workspace's
`.git/info/exclude` ignores (a local file, not the repository's rules).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tireless.git import HEX40, LOCAL_TIMEOUT, GitAuth, GitError, git
from tireless.runner.message import CommitMessage
from tireless.runner.workspace import Workspace

SMALL_FILE = 1 << 16
"""The most of `.git/HEAD` or a loose ref file the runner reads."""
PACKED_REFS_LIMIT = 64 << 20


class PublishRefused(Exception):
    """The attempt fails and nothing is pushed: `note` says why (the job's note)."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


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
    """The agent's work, taken into a repository of the runner's (and checked, when
    policy.take_change took it): `head` (the agent's HEAD, or the runner's commit of what it left
    uncommitted on it), `base`, `commits` (oldest first) and `entries` (the files that differ from
    the base). Holds its scratch directory until `close()`; `push_change` may push it again after
    a transient failure."""

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

    def __exit__(self, *exc_info: object) -> None:
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
                                    f"the workspace's pack {name} is broken: {last_line(checked.stderr)}"
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
        raise PublishRefused(f"the workspace's objects are broken: {last_line(checked.stderr)}")


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


def last_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no message)"


# The agent's uncommitted work
@dataclass(frozen=True)
class TreeEntry:
    mode: int
    kind: str
    blob: str


def ls_tree(change: Change, treeish: str) -> dict[bytes, TreeEntry]:
    """Every file of a tree (recursively), by path."""
    listing = change.git("ls-tree", "-r", "-z", "--full-tree", treeish).stdout
    entries: dict[bytes, TreeEntry] = {}
    for record in listing.split(b"\0"):
        if record:
            info, _, path = record.partition(b"\t")
            mode, kind, blob = info.decode().split(" ")
            entries[path] = TreeEntry(int(mode, 8), kind, blob)
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
    change: Change, head: str, commit: CommitMessage, max_file_bytes: int
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
    tracked = ls_tree(change, head)
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
            if found.st_size > max_file_bytes:
                raise PublishRefused(
                    f"{os.fsdecode(path)} is {found.st_size} bytes: over {max_file_bytes}, "
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
    agent_subject = None
    if (
        head != change.workspace.start_commit
    ):  # the agent committed: its subject (message.py cleans)
        agent_subject = change.git("log", "-1", "--format=%s", head).stdout.decode(errors="replace")
    message = commit.text(agent_subject).encode()
    made = change.git(
        "commit-tree", tree, "-p", head, "-F", "-", stdin=message, env=commit.identity.environment()
    )
    return made.stdout.decode().strip()


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


def diff(change: Change, old: str, new: str) -> tuple[Entry, ...]:
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


def extract(
    workspace: Workspace,
    *,
    commit: CommitMessage,
    max_object_bytes: int,
    max_file_bytes: int,
    scratch_root: Path | None = None,
) -> Change:
    """The agent's work in a repository of the runner's, committed (what it left uncommitted),
    not yet checked against a policy (policy.take_change does both): raises PublishRefused with
    the note when the workspace's `.git` was removed or replaced, when its objects take over
    `max_object_bytes` or are broken, when its HEAD does not descend from the base, or when it
    left a file over `max_file_bytes`. `change.empty`: nothing to deliver. Close it (a context
    manager) when done."""
    scratch = Path(tempfile.mkdtemp(prefix="tireless-publish-", dir=scratch_root))
    change = Change(workspace, scratch, workspace.base_commit)
    with closed_if_refused(change):
        (scratch / "objects" / "pack").mkdir(parents=True)
        git("init", "--quiet", "--bare", "--template=", str(change.repository))
        change._env = {
            "GIT_OBJECT_DIRECTORY": str(scratch / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(
                [str(change.repository / "objects"), str(workspace.mirror / "objects")]
            ),
        }
        _take(change, commit, max_object_bytes, max_file_bytes)
    return change


@contextlib.contextmanager
def closed_if_refused(change: Change) -> Iterator[None]:
    """A block of work on `change` that closes it when the block raises, a failure of the
    runner's git raised as PublishRefused with its note."""
    try:
        yield
    except GitError as error:
        change.close()
        raise PublishRefused(
            f"the runner's git refused the workspace's work: {error.stderr.strip()[-500:]}"
        ) from None
    except BaseException:
        change.close()
        raise


def _take(
    change: Change, commit: CommitMessage, max_object_bytes: int, max_file_bytes: int
) -> None:
    with _workspace_git(change.workspace.path) as gitdir:
        head = _agent_head(gitdir)
        _take_objects(change, gitdir, max_object_bytes)
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
            f"the workspace's history cannot be read: {last_line(descends.stderr)}"
        )
    connected = change.git("rev-list", "--objects", head, f"^{change.base}", check=False)
    if connected.returncode != 0:
        raise PublishRefused(
            f"the workspace's commits need objects it does not hold: {last_line(connected.stderr)}"
        )
    change.head = _commit_uncommitted(change, head, commit, max_file_bytes)
    change.tree = change.text("rev-parse", f"{change.head}^{{tree}}")
    change.base_tree = change.text("rev-parse", f"{change.base}^{{tree}}")
    if change.empty:
        return
    listed = change.text("rev-list", "--reverse", change.head, f"^{change.base}")
    change.commits = tuple(listed.split())
    change.entries = diff(change, change.base, change.head)


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
