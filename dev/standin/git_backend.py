"""Git for the stand-in forge: a bare repository per stand-in repository, in a temporary directory
the forge owns, served over smart HTTP by git's own `git http-backend` (run as a CGI, as
git-http-backend(1) describes), so clone, fetch and push are real git talking to a real git.
Branch protection is a real pre-receive hook, so git itself refuses the push, in the forge's
words. Tests seed commits and read branches through the helpers here (StandinForge re-exports
them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Flavour = Literal["gitea", "github"]

GIT_TIMEOUT = 60.0
"""Seconds any one git process of the stand-in may take (a clone of a test repository takes
milliseconds; a hung one fails the test instead of hanging it)."""
SERVICES = ("info/refs", "git-upload-pack", "git-receive-pack", "HEAD")
"""The smart-HTTP paths under `/{owner}/{repo}.git/` that git-http-backend serves."""
PROTECTED_LIST = "tireless-protected-branches"
"""The file in a bare repository naming its protected refs, one a line (read by the hook)."""
IDENTITY = {
    "GIT_AUTHOR_NAME": "Alice",
    "GIT_AUTHOR_EMAIL": "alice@example.com",
    "GIT_COMMITTER_NAME": "Alice",
    "GIT_COMMITTER_EMAIL": "alice@example.com",
}

# The pre-receive hook of branch protection; {refuse} is the forge's own words for the refusal
# (GiteaApi.protected_refusal in dev.standin.gitea, GitHubApi's in dev.standin.github): git shows
# each line prefixed `remote: ` and the ref `! [remote rejected] ... (pre-receive hook declined)`.
_HOOK = """#!/bin/sh
# The stand-in forge's branch protection (dev.standin.git_backend): refuses any update of a
# ref listed in {listed}, in the words of {flavour}.
listed="${{GIT_DIR:-.}}/{listed}"
refused=0
while read -r old new ref; do
    if [ -f "$listed" ] && grep -qxF "$ref" "$listed"; then
        branch="${{ref#refs/heads/}}"
{refuse}
        refused=1
    fi
done
exit $refused
"""


@dataclass(frozen=True)
class GitCommit:
    """One commit of a stand-in repository, as tests read it."""

    sha: str
    subject: str
    author: str


@dataclass(frozen=True)
class CgiAnswer:
    """What git-http-backend answered: its Status (200 when it gave none), headers and body."""

    status: int
    headers: dict[str, str]
    body: bytes


def git_environment(home: str | None = None) -> dict[str, str]:
    """An environment for git processes that reads no system or user configuration (no hooks
    path, credential helper or URL rewrite of the machine leaks in) and never prompts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    if home is not None:
        env["HOME"] = home
    return env


class StandinGit:
    """The bare repositories of one stand-in forge, made on first use under a temporary directory
    that `close` removes."""

    def __init__(self, flavour: Flavour, refuse: str) -> None:
        self.flavour: Flavour = flavour
        self.refuse = refuse
        """The hook's shell lines that print the forge's refusal of a protected branch's update
        (`$ref`, `$branch`, `$new` set)."""
        self._root: Path | None = None
        self._lock = threading.RLock()

    @property
    def root(self) -> Path:
        """GIT_PROJECT_ROOT: every repository is `{root}/{owner}/{repo}.git`."""
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix=f"standin-{self.flavour}-git-"))
            return self._root

    def close(self) -> None:
        with self._lock:
            root, self._root = self._root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def exists(self, owner: str, repo: str) -> bool:
        return self._root is not None and (self._root / owner / f"{repo}.git").is_dir()

    def path(self, owner: str, repo: str) -> Path:
        """The repository's bare directory, made (empty, HEAD on `main`) when missing."""
        path = self.root / owner / f"{repo}.git"
        with self._lock:
            if not path.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
                made = path.with_name(f".{repo}.git.{threading.get_ident()}")
                self._run(None, "init", "--quiet", "--bare", "--initial-branch=main", str(made))
                # Pushes come through git-http-backend only after the stand-in checked the
                # token; receive-pack is off by default for a CGI without REMOTE_USER.
                self._run(made, "config", "http.receivepack", "true")
                hook = made / "hooks" / "pre-receive"
                hook.write_text(
                    _HOOK.format(listed=PROTECTED_LIST, flavour=self.flavour, refuse=self.refuse)
                )
                hook.chmod(0o755)
                made.rename(path)
        return path

    def rename(self, owner: str, repo: str, new_owner: str, new_repo: str) -> None:
        """The repository follows its forge repository's new name."""
        if self.exists(owner, repo):
            target = self.root / new_owner / f"{new_repo}.git"
            target.parent.mkdir(parents=True, exist_ok=True)
            (self.root / owner / f"{repo}.git").rename(target)

    # Seeding and reading
    def seed(
        self,
        owner: str,
        repo: str,
        files: dict[str, str],
        *,
        commits: int = 1,
        branch: str | None = None,
        message: str = "seed",
    ) -> str:
        """`commits` new commits on `branch` (the default branch when None), on top of its head,
        or of the default branch's for a new branch: the first writes `files`, each further one
        appends a line `commit N` to every one of them. Written with git fast-import straight
        into the bare repository; returns the new head."""
        if commits < 1:
            raise ValueError("seed at least one commit")
        path = self.path(owner, repo)
        default = f"refs/heads/{self.default_branch(owner, repo)}"
        ref = f"refs/heads/{branch}" if branch else default
        parent = self._rev(path, ref) or self._rev(path, default)
        stream = bytearray()
        now = int(time.time())
        contents = dict(files)
        for n in range(1, commits + 1):
            if n > 1:
                contents = {name: f"{text}commit {n}\n" for name, text in contents.items()}
            subject = message if commits == 1 else f"{message} {n}"
            stream += f"commit {ref}\n".encode()
            for role in ("author", "committer"):
                name, email = IDENTITY[f"GIT_{role.upper()}_NAME"], IDENTITY["GIT_AUTHOR_EMAIL"]
                stream += f"{role} {name} <{email}> {now + n} +0000\n".encode()
            stream += _data(subject.encode())
            if n == 1 and parent is not None:
                stream += f"from {parent}\n".encode()
            for name, text in contents.items():
                stream += f"M 100644 inline {name}\n".encode() + _data(text.encode())
        self._run(path, "fast-import", "--quiet", input=bytes(stream))
        head = self._rev(path, ref)
        assert head is not None
        return head

    def default_branch(self, owner: str, repo: str) -> str:
        """The branch HEAD names (`main` until told otherwise, as both forges now default to)."""
        if not self.exists(owner, repo):
            return "main"
        head = self._run(self.path(owner, repo), "symbolic-ref", "HEAD").strip()
        return head.removeprefix("refs/heads/")

    def set_default_branch(self, owner: str, repo: str, branch: str) -> None:
        self._run(self.path(owner, repo), "symbolic-ref", "HEAD", f"refs/heads/{branch}")

    def branches(self, owner: str, repo: str) -> dict[str, str]:
        """Every branch and its head commit."""
        if not self.exists(owner, repo):
            return {}
        out = self._run(
            self.path(owner, repo),
            "for-each-ref",
            "--format=%(refname:lstrip=2) %(objectname)",
            "refs/heads",
        )
        found: dict[str, str] = {}
        for line in out.splitlines():
            name, _, sha = line.rpartition(" ")
            found[name] = sha
        return found

    def branch_head(self, owner: str, repo: str, branch: str) -> str | None:
        """The branch's head commit, None when there is no such branch."""
        if not self.exists(owner, repo):
            return None
        return self._rev(self.path(owner, repo), f"refs/heads/{branch}")

    def commits(self, owner: str, repo: str, ref: str) -> list[GitCommit]:
        """The commits reachable from `ref` (a branch, tag or commit), newest first."""
        if not self.exists(owner, repo):
            return []
        out = self._run(self.path(owner, repo), "log", "--format=%H%x00%s%x00%an", ref, "--")
        return [GitCommit(*line.split("\x00")) for line in out.splitlines()]

    def file_at(self, owner: str, repo: str, ref: str, name: str) -> str | None:
        """A file's text at `ref`, None when it has no such file."""
        if not self.exists(owner, repo):
            return None
        done = self._git(self.path(owner, repo), "cat-file", "blob", f"{ref}:{name}")
        return done.stdout.decode() if done.returncode == 0 else None

    def is_ancestor(self, owner: str, repo: str, ancestor: str, descendant: str) -> bool:
        done = self._git(
            self.path(owner, repo), "merge-base", "--is-ancestor", ancestor, descendant
        )
        return done.returncode == 0

    # Branch protection
    def protect(self, owner: str, repo: str, branch: str) -> None:
        """Pushes that update or delete the branch are refused by the pre-receive hook."""
        listed = self.path(owner, repo) / PROTECTED_LIST
        with self._lock:
            names = set(listed.read_text().split()) if listed.exists() else set()
            listed.write_text("".join(f"{n}\n" for n in sorted(names | {f"refs/heads/{branch}"})))

    def unprotect(self, owner: str, repo: str, branch: str) -> None:
        listed = self.path(owner, repo) / PROTECTED_LIST
        with self._lock:
            if listed.exists():
                names = set(listed.read_text().split()) - {f"refs/heads/{branch}"}
                listed.write_text("".join(f"{n}\n" for n in sorted(names)))

    # Serving
    def serve(
        self,
        owner: str,
        repo: str,
        service: str,
        *,
        method: str,
        query: str,
        content_type: str | None,
        body: bytes,
        remote_user: str,
        content_encoding: str | None = None,
        git_protocol: str | None = None,
    ) -> CgiAnswer:
        """One smart-HTTP request run through `git http-backend` as a CGI (git-http-backend(1):
        GIT_PROJECT_ROOT, GIT_HTTP_EXPORT_ALL, PATH_INFO, QUERY_STRING, REQUEST_METHOD,
        CONTENT_TYPE, REMOTE_USER). The caller has checked the credentials."""
        self.path(owner, repo)
        env = git_environment(str(self.root)) | {
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REQUEST_METHOD": method,
            "PATH_INFO": f"/{owner}/{repo}.git/{service}",
            "QUERY_STRING": query,
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": remote_user,
            "REMOTE_ADDR": "127.0.0.1",
        }
        if content_type:
            env["CONTENT_TYPE"] = content_type
        if content_encoding:  # git gzips its upload-pack requests; http-backend inflates them
            env["HTTP_CONTENT_ENCODING"] = content_encoding
        if git_protocol:  # protocol v2 (Git-Protocol: version=2)
            env["HTTP_GIT_PROTOCOL"] = git_protocol
        done = subprocess.run(
            ["git", "http-backend"],
            input=body,
            capture_output=True,
            env=env,
            timeout=GIT_TIMEOUT,
            check=False,
        )
        head, _, rest = done.stdout.partition(b"\r\n\r\n")  # http-backend ends lines CRLF
        headers: dict[str, str] = {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.strip():
                headers[name.strip()] = value.strip()
        status = headers.pop("Status", "200").split()[0]
        if done.returncode != 0 and not done.stdout:
            return CgiAnswer(500, {"Content-Type": "text/plain"}, done.stderr[-2000:])
        return CgiAnswer(int(status) if status.isdigit() else 500, headers, rest)

    def _rev(self, path: Path, ref: str) -> str | None:
        done = self._git(path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def _git(
        self, path: Path | None, *args: str, input: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        env = git_environment(str(self.root)) | IDENTITY
        where = ["-C", str(path)] if path is not None else []
        return subprocess.run(
            ["git", *where, *args],
            input=input,
            capture_output=True,
            env=env,
            timeout=GIT_TIMEOUT,
            check=False,
        )

    def _run(self, path: Path | None, *args: str, input: bytes | None = None) -> str:
        done = self._git(path, *args, input=input)
        if done.returncode != 0:
            raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode(errors='replace')}")
        return done.stdout.decode()


def _data(payload: bytes) -> bytes:
    """A fast-import `data` command with its exact byte count."""
    return f"data {len(payload)}\n".encode() + payload + b"\n"
