"""The one way tireless runs git (`git`): hardened, so that no git command of tireless's reads a
hook, config, attribute, alternates or submodule setting of a repository it did not make, and with
the forge's token handed to tireless's own git processes only. The runner fetches, clones and
pushes with it (tireless.runner.workspace, tireless.runner.push), and `tireless forge check` tries
a token with it (tireless.forge.check).

**Authentication.** `GitAuth(username, token)` becomes `http.extraHeader=Authorization: Basic
base64(username:token)` through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0` in the
environment of the runner's own git process (and its `git-remote-https`): never on a command line
(`/proc/PID/cmdline` is world-readable; `/proc/PID/environ` is the same user's or root's only),
never in a file, never in the workspace's config or remote URL, never in COMMAND's environment.
Gitea and Forgejo take the token as the Basic password whatever the user name; GitHub wants the
user `x-access-token` (`GitAuth.github(token)`).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tireless.credentials import token_for
from tireless.masking import Masker

HEX40 = re.compile(r"[0-9a-f]{40}")
NETWORK_TIMEOUT = 600.0
"""Seconds a fetch, ls-remote or push may take before it is stopped (a stalled transfer is
stopped sooner: http.lowSpeedLimit/lowSpeedTime below)."""
LOCAL_TIMEOUT = 600.0
"""Seconds any other git command may take."""

PASSED_ENVIRONMENT = (
    "PATH", "TMPDIR", "TZ",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "CURL_CA_BUNDLE",
)  # fmt: skip
"""The only variables of the runner's environment its git sees (how to reach the forge); every
GIT_* variable of the runner's own (GIT_DIR, GIT_CONFIG_PARAMETERS, GIT_ASKPASS, ...) is left out."""

HARDENED_ENVIRONMENT = {
    "GIT_CONFIG_NOSYSTEM": "1",  # no /etc/gitconfig
    "GIT_CONFIG_GLOBAL": "/dev/null",  # no ~/.gitconfig, no $XDG_CONFIG_HOME/git/config
    "GIT_ATTR_NOSYSTEM": "1",  # no /etc/gitattributes
    "GIT_TERMINAL_PROMPT": "0",  # a missing credential fails, never asks
    "GIT_NO_REPLACE_OBJECTS": "1",  # refs/replace/* never stand in for an object
    "HOME": "/nonexistent",  # nothing read from a home directory (curl's ~/.netrc included)
    "LC_ALL": "C",  # git's own messages in English, as the error notes quote them
}

HARDENED_CONFIG = (
    "core.hooksPath=/dev/null",  # no hook runs
    "core.fsmonitor=false",  # no fsmonitor program runs
    "core.untrackedCache=false",
    "core.excludesFile=/dev/null",  # no ignore file of the runner's user
    "core.attributesFile=/dev/null",  # no attributes file of the runner's user
    "credential.helper=",  # no credential helper (an empty value resets the list)
    "core.askPass=",
    "submodule.recurse=false",  # never into a submodule
    "fetch.recurseSubmodules=false",
    "protocol.allow=never",  # only the transports allowed next
    "protocol.https.allow=always",
    "protocol.http.allow=always",
    "gc.auto=0",  # no automatic gc; the cache packs itself under its lock
    "maintenance.auto=false",
    "http.lowSpeedLimit=1000",  # a transfer under 1 kB/s for a minute is stopped
    "http.lowSpeedTime=60",
)
"""Given with `-c` to every git the runner runs (command-line config outranks a repository's)."""


class GitError(Exception):
    """A git command the runner ran failed: its arguments (after the hardening options), its exit
    code, and its standard error with every known secret masked."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"git {' '.join(argv)} failed ({returncode}): {stderr.strip()[-2000:]}")


class GitTimeout(GitError):
    """A git command ran past its time and was stopped (with its children)."""


@dataclass(frozen=True)
class GitAuth:
    """How the runner's git authenticates to the forge: HTTP Basic with the token as the
    password. Its repr never shows the token."""

    username: str
    token: str = field(repr=False)

    def __post_init__(self) -> None:
        if any(c in self.username + self.token for c in "\r\n\0") or ":" in self.username:
            raise ValueError("a forge user name or token with a line break, NUL or ':' in it")

    @classmethod
    def github(cls, token: str) -> GitAuth:
        """GitHub's user name for a token over HTTPS (GitHub Apps' installation tokens and
        fine-grained tokens alike): docs.github.com, "Authenticating as a GitHub App installation"."""
        return cls("x-access-token", token)

    @property
    def header(self) -> str:
        basic = base64.b64encode(f"{self.username}:{self.token}".encode()).decode()
        return f"Authorization: Basic {basic}"

    def environment(self) -> dict[str, str]:
        """The environment that gives the runner's git process the header (config passed this
        way counts as command-line config, and is inherited by git-remote-https)."""
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": self.header,
        }

    def secrets(self) -> list[str]:
        """Every form of the token that could show up in git's output: masked in errors."""
        return [self.token, self.header.removeprefix("Authorization: Basic ")]


def _execute(
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    stdin: bytes | int | None,
    timeout: float,
) -> subprocess.CompletedProcess[bytes]:
    """Run one git process (every git of the runner goes through here: tests wrap it to see the
    command lines). It runs in a session of its own, so a timeout stops it with its children."""
    with subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=stdin if isinstance(stdin, int) else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as process:
        try:
            out, err = process.communicate(stdin if isinstance(stdin, bytes) else None, timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            raise GitTimeout(
                argv, -9, f"stopped after {timeout:g} s: {err.decode(errors='replace')}"
            ) from None
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def git(
    *args: str,
    git_dir: Path | None = None,
    cwd: Path | None = None,
    auth: GitAuth | None = None,
    env: Mapping[str, str] | None = None,
    config: Sequence[str] = (),
    stdin: bytes | int | None = None,
    allow_file: bool = False,
    check: bool = True,
    timeout: float = LOCAL_TIMEOUT,
) -> subprocess.CompletedProcess[bytes]:
    """Run the runner's git, hardened: a minimal environment with no system or global config, no
    prompt, no hook, no fsmonitor, no credential helper, no submodule recursion, https/http only
    (and local paths when `allow_file`: the runner's own clone of its mirror, and tests),
    `safe.directory` for the runner's own repository only. `git_dir` or `cwd` names that
    repository; `config` adds `-c` settings after the hardening ones; `env` adds variables (the
    quarantine's object directories, a temporary index, an identity); `auth` adds the token's
    header to this process's environment alone. Raises GitError (secrets masked) on a non-zero
    exit when `check`."""
    environment = {name: os.environ[name] for name in PASSED_ENVIRONMENT if name in os.environ}
    environment.setdefault("PATH", os.defpath)
    environment |= HARDENED_ENVIRONMENT
    environment |= dict(env or {})
    if auth is not None:
        environment |= auth.environment()
    options = list(HARDENED_CONFIG)
    if allow_file:
        options.append("protocol.file.allow=always")
    own = git_dir if git_dir is not None else cwd
    if own is not None:
        options.append(f"safe.directory={Path(own).absolute()}")
    options += config
    argv = ["git", "--no-replace-objects"]
    for option in options:
        argv += ["-c", option]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    argv += args
    masker = Masker(auth.secrets() if auth is not None else [])
    try:
        result = _execute(argv, environment, None if cwd is None else str(cwd), stdin, timeout)
    except GitTimeout as error:
        raise GitTimeout(args, error.returncode, masker.mask(error.stderr)) from None
    if check and result.returncode != 0:
        raise GitError(args, result.returncode, masker.mask(result.stderr.decode(errors="replace")))
    return result


IDENTITY = re.compile(r"\s*([^<>]*?)\s*<([^<>\s]+@[^<>\s]+)>\s*")
"""`NAME <EMAIL>`, as `tireless work --git-identity` takes it (git's own form of an author)."""


@dataclass(frozen=True)
class Identity:
    """Author and committer of the runner's commits: the forge's bot account
    (tireless.runner.identity) or `tireless work --git-identity`."""

    name: str
    email: str

    def __post_init__(self) -> None:
        text = self.name + self.email
        if not self.name.strip() or not self.email or any(c in text for c in "<>\n\0"):
            raise ValueError(f"not a commit identity: {self.name!r} <{self.email}>")
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
            raise ValueError(f"a commit identity with a control character: {text!r}")

    @classmethod
    def parse(cls, text: str) -> Identity:
        """`NAME <EMAIL>`; ValueError naming the text when it is not that."""
        found = IDENTITY.fullmatch(text)
        if found is None or not found.group(1):
            raise ValueError(f"not NAME <EMAIL>: {text!r}")
        return cls(found.group(1), found.group(2))

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"

    def environment(self) -> dict[str, str]:
        """The author and committer of a `git commit-tree`."""
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
        }


BOT = Identity("tireless", "tireless@localhost")
"""The author of the runner's commits when the forge's account cannot be read (a GitHub App
installation's token has none) and no `--git-identity` was given; `forge check`'s scratch commit."""


def git_auth(forge: str) -> GitAuth | None:
    """The runner's git credentials for a forge, from TIRELESS_TOKEN_<NAME>[_FILE]; None when the
    runner has none. `x-access-token` is GitHub's user name for a token over HTTPS, and Gitea and
    Forgejo take the token as the password whatever the user name (GitAuth above)."""
    token = token_for(forge)
    return None if token is None else GitAuth.github(token)
