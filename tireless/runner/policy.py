"""What a change may be (DESIGN.md, "Delivery": The change): the limits of a change and the paths
it may not touch (`PublishPolicy`, the defaults a repository's delivery policy goes over), checked
on the change extract.py took from the workspace; `take_change` does both."""

from __future__ import annotations

import fnmatch
import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tireless.runner.extract import (
    Change,
    PublishRefused,
    closed_if_refused,
    extract,
    last_line,
    ls_tree,
)
from tireless.runner.message import CommitMessage
from tireless.runner.workspace import Workspace

CI_DEFINITIONS = (".github/workflows/", ".gitea/workflows/", ".forgejo/workflows/")
"""Where the forges read their CI definitions (a CI file can read the repository's secrets)."""

FORGE_FILE_LIMIT = 100 * 1024 * 1024
"""GitHub blocks a push with a file over 100 MiB ("GitHub blocks files larger than 100 MiB":
docs.github.com/en/repositories/working-with-files/managing-large-files/about-large-files-on-github).
Gitea and Forgejo have no such default; the policy may lower it for them."""


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
        for path, entry in ls_tree(change, change.head).items()
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
            f"the workspace's commits need objects it does not hold: {last_line(listed.stderr)}"
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


def take_change(
    workspace: Workspace,
    *,
    commit: CommitMessage,
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
    change = extract(
        workspace, commit=commit,
        max_object_bytes=policy.max_object_bytes, max_file_bytes=policy.max_file_bytes,
        scratch_root=scratch_root,
    )  # fmt: skip
    with closed_if_refused(change):
        if not change.empty:
            _check_paths(change, policy)
            _check_sizes(change, policy, size_limits)  # before the links: every blob's size known
            _check_links(change)
    return change
