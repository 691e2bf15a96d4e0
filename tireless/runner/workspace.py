"""The job's workspace, made from a per-host cache of each repository (DESIGN.md, "Delivery":
Workspace), fetched and cloned with tireless's hardened git (tireless.git: the forge's token is in
the runner's own git processes only).

**The cache.** One bare mirror per remote repository under `ROOT/mirrors/<key>.git` (the key: a
readable, safe name derived from the clone URL and a digest of it), refreshed by `git fetch
--prune` of the branches, tags and tireless's own refs (`refs/tireless/*`: the checkpoints) each
time a workspace is made. The cache root and the mirrors are the runner's, 0755, their files 0644
(`core.sharedRepository=0644`): the agent's user can read them and write none of them. The locks
and last-use stamps are under `ROOT/state/` (0700: the agent cannot hold a lock). Per repository:
- the *write lock* (`<key>.lock`): exclusive while the mirror is created, fetched, packed or
  evicted; shared while a workspace is cloned from it. So a refresh never runs while a clone
  reads the refs, and two workers refreshing one repository take turns;
- the *use lock* (`<key>.use`): shared by every live workspace of the repository (it reads the
  mirror's objects through its alternates until it is removed), exclusive only to evict it. An
  eviction takes both locks without waiting: a repository another process is using is never
  evicted. Lock files are never deleted (a waiter could lock a deleted file's inode while a
  newcomer locks a new one).
After a refresh, when the mirrors take more than `max_bytes`, the least recently used repositories
(`<key>.used`'s mtime, touched on each use) are evicted first, never the one just refreshed.
Automatic gc is off in every git the runner runs; after a refresh the runner runs `gc --auto`
itself, under the exclusive write lock, and only when it can take the use lock exclusively: gc
drops the unreachable objects of a pack older than two weeks at once, and a live workspace may
have started from a branch that was force-pushed away since.

**The workspace** is `git clone --shared --no-checkout MIRROR DEST` and a checkout of the wanted
commit: nothing is copied, the workspace's `objects/info/alternates` points at the mirror's
objects, so making one costs a checkout whatever the length of the history. Chosen over
`--reference URL` (which asks the forge again, with the token, for every workspace) and over a
local clone with hard links (the agent's user, made owner of the workspace by chown, would own
the mirror's object files through the shared inodes and could rewrite them). `--shared`'s known
danger (objects vanishing from under the clone when the source is pruned) is what the use lock
and gc's grace period answer. The workspace's `origin` is the forge's plain URL, without
credentials; the agent holds no token, so it can read the forge's repository only if it is public.
Caveat: the agent's user can read every mirror of the cache (the alternates need it); a host whose
agents must not read each other's repositories keeps one cache per trust domain, or its sandbox
binds only the job's mirror.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tireless.git import HEX40, NETWORK_TIMEOUT, GitAuth, git

FETCH_REFSPECS = (
    "+refs/heads/*:refs/heads/*",
    "+refs/tags/*:refs/tags/*",
    "+refs/tireless/*:refs/tireless/*",
)
"""What the cache mirrors: branches, tags and tireless's own refs (checkpoints), not every ref
(`clone --mirror` would also take GitHub's refs/pull/*, one per pull request ever opened)."""


class WorkspaceError(Exception):
    """The workspace could not be made (an unknown ref, an empty repository, ...)."""


def check_url(url: str, allow_file: bool = False) -> str:
    """The clone URL, if the runner may fetch and push it: https or http with no credentials in
    it (a token in a URL ends up in a command line, a config file, a log); a local path or
    file:// only when `allow_file` (tests, the benchmark)."""
    parts = urlsplit(url)
    if parts.scheme in ("https", "http"):
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise ValueError(f"a clone URL must carry no credentials: {parts.hostname}")
        if not parts.hostname:
            raise ValueError(f"a clone URL without a host: {url!r}")
        return url
    if allow_file and (parts.scheme == "file" or (not parts.scheme and url.startswith("/"))):
        return url
    raise ValueError(f"a clone URL must be https:// or http://: {url!r}")


def cache_key(url: str) -> str:
    """A directory name for the repository at `url`: readable (host and path) and unique (a
    digest of the URL, its scheme and host lower-cased, without a trailing slash)."""
    parts = urlsplit(url)
    normal = parts._replace(
        scheme=parts.scheme.lower(), netloc=parts.netloc.lower(), path=parts.path.rstrip("/")
    ).geturl()
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{parts.hostname or 'local'}{parts.path}")
    readable = readable.strip("-.")[:60] or "repository"
    return f"{readable}-{hashlib.sha256(normal.encode()).hexdigest()[:16]}"


class _Lock:
    """An flock(2) on a file of the cache's state directory."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)

    def take(self, shared: bool, wait: bool = True) -> bool:
        operation = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB)
        try:
            fcntl.flock(self.fd, operation)
        except BlockingIOError:
            return False
        return True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the last descriptor releases the lock
            self.fd = -1

    @classmethod
    @contextlib.contextmanager
    def held(cls, path: Path, shared: bool) -> Iterator[None]:
        lock = cls(path)
        try:
            lock.take(shared)
            yield
        finally:
            lock.close()


class RepoCache:
    """The per-host cache: one bare mirror per remote repository, shared by every worker of the
    host (processes), bounded by `max_bytes` (None: unbounded). `allow_file_urls` lets local
    paths be remotes (tests and the benchmark only)."""

    def __init__(
        self, root: Path, max_bytes: int | None = None, *, allow_file_urls: bool = False
    ) -> None:
        self.root = Path(root).absolute()
        self.max_bytes = max_bytes
        self.allow_file_urls = allow_file_urls
        self.mirrors = self.root / "mirrors"
        self.state = self.root / "state"
        for directory, mode in ((self.root, 0o755), (self.mirrors, 0o755), (self.state, 0o700)):
            directory.mkdir(mode=mode, parents=directory is self.root, exist_ok=True)
            found = os.lstat(directory)
            if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
                raise WorkspaceError(f"{directory} is not a directory of this user (the cache's)")
            os.chmod(directory, mode)  # never writable by the agent's user

    def mirror(self, clone_url: str) -> Path:
        return self.mirrors / f"{cache_key(clone_url)}.git"

    def _state(self, key: str, suffix: str) -> Path:
        return self.state / f"{key}.{suffix}"

    def hold(self, clone_url: str) -> _Lock:
        """The use lock, shared: the repository is not evicted until it is closed. Marks the
        repository used now."""
        key = cache_key(clone_url)
        lock = _Lock(self._state(key, "use"))
        lock.take(shared=True)
        self._state(key, "used").touch()
        return lock

    @contextlib.contextmanager
    def reading(self, clone_url: str) -> Iterator[Path]:
        """The mirror, under its write lock shared: no refresh or eviction changes it meanwhile."""
        with _Lock.held(self._state(cache_key(clone_url), "lock"), shared=True):
            mirror = self.mirror(clone_url)
            if not (mirror / "HEAD").is_file():
                raise WorkspaceError(f"the cache has no mirror of {clone_url} (refresh it)")
            yield mirror

    def refresh(self, clone_url: str, auth: GitAuth | None) -> Path:
        """Create the repository's mirror, or fetch what changed (`fetch --prune`), under its
        write lock, and pack it (`gc --auto`) when no workspace uses it; then evict what is over
        the bound. Returns the mirror."""
        check_url(clone_url, self.allow_file_urls)
        key = cache_key(clone_url)
        mirror = self.mirror(clone_url)
        with _Lock.held(self._state(key, "lock"), shared=False):
            if not (mirror / "HEAD").is_file():
                self._create(clone_url, auth, mirror)
            else:
                self._fetch(clone_url, auth, mirror)
                if not self._has(mirror, "HEAD"):  # the default branch was renamed or removed
                    self._set_head(clone_url, auth, mirror)
            self._state(key, "used").touch()
            use = _Lock(self._state(key, "use"))
            try:
                if use.take(shared=False, wait=False):  # no workspace reads it: gc may drop objects
                    git("gc", "--auto", "--quiet", git_dir=mirror, config=["gc.auto=6700"])
            finally:
                use.close()
        if self.max_bytes is not None:
            self.evict(keep=key)
        return mirror

    def _create(self, clone_url: str, auth: GitAuth | None, mirror: Path) -> None:
        building = mirror.with_name(f"{mirror.name}.new")
        remove_tree(building)  # the remains of a creation that was killed
        git("init", "--quiet", "--bare", "--template=", "--shared=0644", str(building))
        self._fetch(clone_url, auth, building)
        self._set_head(clone_url, auth, building)
        os.rename(building, mirror)

    def _fetch(self, clone_url: str, auth: GitAuth | None, mirror: Path) -> None:
        git(
            "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head",
            "--end-of-options", clone_url, *FETCH_REFSPECS,
            git_dir=mirror, auth=auth, allow_file=self.allow_file_urls, timeout=NETWORK_TIMEOUT,
        )  # fmt: skip

    def _set_head(self, clone_url: str, auth: GitAuth | None, mirror: Path) -> None:
        """Point the mirror's HEAD at the remote's default branch (`ls-remote --symref`)."""
        listing = git(
            "ls-remote", "--symref", "--end-of-options", clone_url, "HEAD",
            git_dir=mirror, auth=auth, allow_file=self.allow_file_urls, timeout=NETWORK_TIMEOUT,
        ).stdout.decode()  # fmt: skip
        found = re.search(r"^ref: (refs/heads/\S+)\tHEAD$", listing, re.MULTILINE)
        if found is not None:
            git("symbolic-ref", "HEAD", found.group(1), git_dir=mirror)

    @staticmethod
    def _has(mirror: Path, ref: str) -> bool:
        found = git(
            "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", git_dir=mirror, check=False
        )
        return found.returncode == 0

    def sizes(self) -> dict[str, int]:
        """Bytes each mirror of the cache takes (its files' sizes), by key."""
        sizes: dict[str, int] = {}
        for mirror in self.mirrors.glob("*.git"):
            total = 0
            for directory, _, files in os.walk(mirror):
                for name in files:
                    with contextlib.suppress(FileNotFoundError):
                        total += os.lstat(os.path.join(directory, name)).st_size
            sizes[mirror.name.removesuffix(".git")] = total
        return sizes

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove the least recently used mirrors until the cache is within its bound, skipping
        `keep` and every repository another process holds (a live workspace, a refresh, a clone).
        Returns the keys evicted."""
        if self.max_bytes is None:
            return []
        sizes = self.sizes()
        total = sum(sizes.values())
        evicted: list[str] = []

        def used(key: str) -> float:
            with contextlib.suppress(FileNotFoundError):
                return os.stat(self._state(key, "used")).st_mtime
            return 0.0

        for key in sorted((k for k in sizes if k != keep), key=used):
            if total <= self.max_bytes:
                break
            write, use = _Lock(self._state(key, "lock")), _Lock(self._state(key, "use"))
            try:
                if write.take(shared=False, wait=False) and use.take(shared=False, wait=False):
                    doomed = self.mirrors / f"{key}.git.evicted"
                    remove_tree(doomed)
                    os.rename(self.mirrors / f"{key}.git", doomed)
                    remove_tree(doomed)
                    total -= sizes[key]
                    evicted.append(key)
            finally:
                use.close()
                write.close()
        return evicted


@dataclass
class Workspace:
    """A job's working copy: `path` (COMMAND's working directory), the commit the change is
    measured against and must descend from (`base_commit`), the commit it started at
    (`start_commit`: the base, a pull request's head or a checkpoint), the branch checked out,
    and where it came from. Holds its repository in the cache until `remove()`."""

    path: Path
    base_commit: str
    start_commit: str
    branch: str
    clone_url: str
    cache: RepoCache
    _hold: _Lock | None = field(default=None, repr=False)
    pushed: dict[str, str] = field(default_factory=dict, repr=False)
    """The tree of each commit the runner pushed from this workspace (push.py's memory: the
    cache does not hold those commits until its next refresh)."""

    @property
    def mirror(self) -> Path:
        return self.cache.mirror(self.clone_url)

    def remove(self) -> None:
        """Delete the working copy (whatever the agent made read-only) and let the cache evict
        its repository again."""
        try:
            remove_tree(self.path)
        finally:
            if self._hold is not None:
                self._hold.close()
                self._hold = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def prepare_workspace(
    cache: RepoCache,
    clone_url: str,
    auth: GitAuth | None,
    dest: Path,
    *,
    start: str | None = None,
    base: str | None = None,
    branch: str | None = None,
    owner: tuple[int, int] | None = None,
    refresh: bool = True,
) -> Workspace:
    """A working copy of the repository at `clone_url` in `dest` (which must not exist yet),
    ready for COMMAND: the cache refreshed (unless `refresh` is false), then `start` checked out
    on the local branch `branch`. `start`: None for the default branch's head, a branch name, a
    full ref (`refs/tireless/checkpoints/7`) or a commit. `base`: what the change is measured
    against (None: `start` itself); the workspace's base commit is the merge base of the two, so
    a checkpoint made on an older default branch keeps its own base. `branch` defaults to
    `start`'s branch name, else the default branch's. `owner`: (uid, gid) made owner of it all."""
    check_url(clone_url, cache.allow_file_urls)
    dest = Path(dest).absolute()
    if dest.exists() or dest.is_symlink():
        raise WorkspaceError(f"the workspace {dest} exists already")
    if refresh:
        cache.refresh(clone_url, auth)  # before the use lock: the refresh may gc it
    hold = cache.hold(clone_url)
    try:
        if not (cache.mirror(clone_url) / "HEAD").is_file():  # evicted in between, or no refresh
            cache.refresh(clone_url, auth)
        with cache.reading(clone_url) as mirror:
            # The mirror is the runner's own: its HEAD file is read as it is.
            head = (mirror / "HEAD").read_text().strip()
            default = head.removeprefix("ref: refs/heads/") if head.startswith("ref: ") else "main"
            start_commit, start_branch = _resolve(mirror, start or default)
            base_commit = start_commit
            if base is not None:
                base_commit = _merge_base(mirror, start_commit, _resolve(mirror, base)[0])
            if (
                branch is not None
                and git("check-ref-format", "--branch", branch, check=False).returncode
            ):
                raise WorkspaceError(f"not a branch name: {branch!r}")
            branch = branch or start_branch or default
            git(
                "clone", "--quiet", "--shared", "--no-checkout", "--template=",
                "--end-of-options", str(mirror), str(dest),
                allow_file=True,
            )  # fmt: skip
        git("config", "remote.origin.url", clone_url, cwd=dest)  # check_url: no credential in it
        git("checkout", "--quiet", "--no-recurse-submodules", "-B", branch, start_commit, cwd=dest)
        if owner is not None:
            _chown_tree(dest, *owner)
    except BaseException:
        remove_tree(dest)
        hold.close()
        raise
    return Workspace(dest, base_commit, start_commit, branch, clone_url, cache, hold)


def _resolve(mirror: Path, what: str) -> tuple[str, str | None]:
    """The commit `what` (a commit, a branch name or a full ref) names in the mirror, and its
    branch name when it is a branch."""
    ref = what
    if not HEX40.fullmatch(what):
        ref = what if what.startswith("refs/") else f"refs/heads/{what}"
    found = git(
        "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
        git_dir=mirror, check=False,
    )  # fmt: skip
    if found.returncode != 0:
        raise WorkspaceError(f"the repository has no commit {what}")
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    return found.stdout.decode().strip(), branch


def _merge_base(mirror: Path, one: str, other: str) -> str:
    found = git("merge-base", one, other, git_dir=mirror, check=False)
    if found.returncode != 0:
        raise WorkspaceError(f"{one} and {other} share no history")
    return found.stdout.decode().strip()


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    """chown -R, never following a symbolic link (the tree's own links are changed, not what
    they point at)."""
    os.lchown(root, uid, gid)
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(directory, name), uid, gid)


def remove_tree(path: Path) -> None:
    """Delete a directory tree that an agent made: when plain deletion fails (directories made
    read-only or unreadable, which only stops a runner that is not root), make every directory
    of the tree the runner's to write and try again. Never follows a symbolic link."""
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
        return
    try:
        shutil.rmtree(path)
    except OSError:
        _make_writable(path)
        shutil.rmtree(path)


def _make_writable(path: Path) -> None:
    """u+rwx on every directory of the tree, top down, each reached without following a link (an
    O_PATH descriptor needs no permission on the directory; chmod through /proc/self/fd)."""
    try:
        handle = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            return
        raise
    try:
        os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(os.fstat(handle).st_mode) | stat.S_IRWXU)
        fd = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_DIRECTORY)
        try:
            with os.scandir(fd) as entries:
                children = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        finally:
            os.close(fd)
    finally:
        os.close(handle)
    for name in children:
        _make_writable(Path(path, name))
