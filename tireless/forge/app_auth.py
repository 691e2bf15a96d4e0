"""A GitHub App's credentials (docs/forges.md, "GitHub App"): the JWT signed with the App's key,
each owner's installation, and its installation tokens, minted when first needed and cached in
the process until shortly before they expire. The key and the tokens stay in this process's
memory: never in the store, a log line, an error message or a workspace.

- The JWT (docs.github.com, "Generating a JSON Web Token (JWT) for a GitHub App"): RS256, `iss`
  the App's id, `iat` 60 seconds in the past against clock drift, `exp` ten minutes after `iat`
  less a margin (GitHub refuses one "too far in the future": coq/bot#204, octokit/auth-app.js#698).
- The installation of an owner: `GET /repos/{owner}/{repo}/installation` with the JWT
  (docs.github.com, "Authenticating as a GitHub App installation"); 404 when the App is not
  installed there.
- A token: `POST /app/installations/{id}/access_tokens`, 201 `{token, expires_at, permissions}`;
  an hour on GitHub. Renewed RENEW_BEFORE before `expires_at` (a quarter of its life for a
  shorter one), and at once after a 401 (InstallationAuth: one mint, one retry).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from tireless.credentials import app_key_for, app_key_variable
from tireless.forge.client import AuthRefused, BadResponse, ReadFailed, Unavailable
from tireless.forge.http import AUTH_PAUSE, TIMEOUT
from tireless.git import GitAuth, git_auth
from tireless.models import Forge, ForgeApp
from tireless.store import JobStore

log = logging.getLogger(__name__)

JWT_BACKDATE = 60
"""Seconds `iat` is set in the past, as GitHub's own examples do against clock drift."""
JWT_LIFETIME = 600 - 30
"""Seconds from `iat` to `exp`: GitHub takes at most ten minutes; 30 seconds less leaves room for
a clock a little behind GitHub's."""
RENEW_BEFORE = timedelta(minutes=5)
"""A cached token is replaced once it has less than this left (or a quarter of its lifetime, for
a token that lives less than 20 minutes: a stand-in's of seconds)."""
NO_INSTALLATION_PAUSE = timedelta(minutes=10)
"""How long an owner without an installation is not asked again (its repositories wait as long)."""
NEEDED_PERMISSIONS = {
    "issues": "write",
    "pull_requests": "write",
    "contents": "write",
    "checks": "read",
    "statuses": "read",
    "metadata": "read",
}
"""What tireless needs of an installation: issues (poll, mirror), pull requests and contents
(delivery), checks and commit statuses (the conversation's revisions), metadata (every App)."""


class NoInstallation(ReadFailed):
    """The App is not installed on the repository's owner (GET .../installation answered 404):
    that owner's repositories wait NO_INSTALLATION_PAUSE; the others go on."""

    retry_after = NO_INSTALLATION_PAUSE

    def __init__(self, message: str, owner: str) -> None:
        super().__init__(message)
        self.owner = owner


@dataclass(frozen=True, slots=True)
class Installation:
    """An owner's installation of the App: its id, the account, and the permissions it grants."""

    id: int
    account: str
    permissions: Mapping[str, str]


@dataclass(slots=True)
class Token:
    """An installation token and when it expires; its repr never shows the token."""

    value: str = field(repr=False)
    expires_at: datetime
    minted_at: datetime
    permissions: Mapping[str, str]

    def fresh(self, now: datetime) -> bool:
        margin = min(RENEW_BEFORE, (self.expires_at - self.minted_at) / 4)
        return now < self.expires_at - margin


def load_key(pem: bytes, where: str) -> RSAPrivateKey:
    """The App's RSA private key from its PEM (GitHub gives PKCS#1, `BEGIN RSA PRIVATE KEY`;
    PKCS#8 works as well); ValueError naming `where`, never the key, when it is not one."""
    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{where} holds no PEM private key without a password ({error})") from None
    if not isinstance(key, RSAPrivateKey):
        raise ValueError(f"{where} holds a {type(key).__name__}, not an RSA key")
    return key


class GitHubApp:
    """One App on one GitHub: its JWT, its installations by owner, their tokens cached (thread
    safe: a poller's forges run in threads, a runner's jobs too). `mints` counts the tokens each
    installation minted in this process (the bench and tests read it)."""

    def __init__(
        self,
        base_url: str,
        app_id: int,
        key: RSAPrivateKey,
        *,
        key_source: str,
        key_digest: str = "",
        timeout: float = TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self.app_id = app_id
        self.key_source = key_source
        """Where the key was read from (a variable's or a file's name), for the messages."""
        self.key_digest = key_digest
        """The SHA-256 of the key's PEM: a changed key makes a new GitHubApp (use_apps)."""
        self._key = key
        self._clock = clock
        self._http = httpx.Client(
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
        )
        self._lock = threading.Lock()
        self._owners: dict[str, Installation] = {}
        self._missing: dict[str, datetime] = {}
        self._tokens: dict[int, Token] = {}
        self._minting: dict[int, threading.Lock] = {}
        self._app: dict[str, Any] | None = None
        self._bot_id: int | None = None
        self.mints: dict[int, int] = {}
        self.minting_seconds = 0.0
        """Wall time spent minting tokens and finding installations (the bench's cold start)."""

    def close(self) -> None:
        self._http.close()

    # The JWT and the App itself
    def jwt(self) -> str:
        """A JWT for the App's own endpoints (`/app`, `/app/installations/...`)."""
        iat = int(self._clock()) - JWT_BACKDATE
        claims = {"iat": iat, "exp": iat + JWT_LIFETIME, "iss": str(self.app_id)}
        return jwt.encode(claims, self._key, algorithm="RS256")

    def _as_app(self, method: str, path: str) -> httpx.Response:
        where = f"{method} /{path}"
        try:
            response = self._http.request(
                method, self.base_url + path, headers={"Authorization": f"Bearer {self.jwt()}"}
            )
        except httpx.TransportError as error:
            raise Unavailable(f"{where}: {type(error).__name__}: {error}") from error
        if response.status_code >= 500:
            raise Unavailable(f"{where}: HTTP {response.status_code}")
        if response.status_code == 401:
            raise AuthRefused(
                f"{where}: HTTP 401 {_message(response)}: GitHub refused the App's JWT (App id"
                f" {self.app_id}, key from {self.key_source}: is it this App's key, and is this"
                " host's clock right?)",
                datetime.now(UTC) + AUTH_PAUSE,
            )
        return response

    def app(self) -> Mapping[str, Any]:
        """GET /app as the App: its `slug`, `name`, `html_url`, `permissions` and `events`."""
        with self._lock:
            if self._app is not None:
                return self._app
        response = self._as_app("GET", "app")
        found = _object(response, "GET /app")
        if not isinstance(found.get("slug"), str) or not found["slug"]:
            raise BadResponse("GET /app: no slug")
        with self._lock:
            self._app = found
        return found

    def bot_login(self) -> str:
        """`<slug>[bot]`: the account the App's installation tokens write as."""
        return f"{self.app()['slug']}[bot]"

    def bot_email(self) -> str:
        """`<id>+<slug>[bot]@users.noreply.<host>`, the bot user's id from GET /users/<login>
        (public: asked without credentials; docs.github.com, "Setting your commit email
        address"), an address GitHub links to the bot."""
        login = self.bot_login()
        if self._bot_id is None:
            where = f"GET /users/{login}"
            try:
                response = self._http.get(f"{self.base_url}users/{quote(login, safe='')}")
            except httpx.TransportError as error:
                raise Unavailable(f"{where}: {type(error).__name__}: {error}") from error
            if response.status_code != 200:
                raise BadResponse(f"{where}: HTTP {response.status_code}")
            number = _object(response, where).get("id")
            if type(number) is not int:
                raise BadResponse(f"{where}: no id")
            self._bot_id = number
        host = (urlsplit(self.base_url).hostname or "localhost").lower()
        noreply = "github.com" if host in ("api.github.com", "github.com") else host
        return f"{self._bot_id}+{login}@users.noreply.{noreply}"

    # Installations and their tokens
    def installation(self, owner: str, repo: str) -> Installation:
        """The owner's installation (cached), found through the repository; NoInstallation when
        the App is not installed there (said once in the log, asked again after the pause)."""
        key = owner.lower()
        with self._lock:
            if key in self._owners:
                return self._owners[key]
            missing = self._missing.get(key)
        fix = f"install the App on {owner} (github.com/apps/SLUG/installations/new)"
        if missing is not None and datetime.now(UTC) < missing + NO_INSTALLATION_PAUSE:
            raise NoInstallation(f"the App {self.app_id} is not installed on {owner}: {fix}", owner)
        started = time.monotonic()
        path = f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/installation"
        response = self._as_app("GET", path)
        self._count_time(started)
        if response.status_code == 404:
            with self._lock:
                first = key not in self._missing
                self._missing[key] = datetime.now(UTC)
            if first:
                log.warning("forge at %s: the App %s is not installed on %s: %s", self.base_url,
                            self.app_id, owner, fix)  # fmt: skip
            raise NoInstallation(f"the App {self.app_id} is not installed on {owner}: {fix}", owner)
        if response.status_code != 200:
            raise BadResponse(f"GET /{path}: unexpected HTTP {response.status_code}")
        found = _object(response, f"GET /{path}")
        number, account = found.get("id"), found.get("account")
        login = account.get("login") if isinstance(account, dict) else None
        if type(number) is not int or not isinstance(login, str):
            raise BadResponse(f"GET /{path}: no installation id or account")
        installation = Installation(number, login, _permissions(found.get("permissions")))
        with self._lock:
            self._owners[key] = installation
            self._missing.pop(key, None)
        return installation

    def token(self, owner: str, repo: str) -> str:
        """A fresh token of the owner's installation: the cached one, or one minted now."""
        return self._token(self.installation(owner, repo).id, stale=None).value

    def renew(self, owner: str, repo: str, stale: str) -> str:
        """After a 401 with `stale`: a new token (one mint, however many requests were refused
        with that token at once)."""
        return self._token(self.installation(owner, repo).id, stale=stale).value

    def granted(self, owner: str, repo: str) -> Mapping[str, str]:
        """The permissions the owner's token answered with (`forge check`)."""
        return self._token(self.installation(owner, repo).id, stale=None).permissions

    def _token(self, installation: int, stale: str | None) -> Token:
        with self._lock:
            minting = self._minting.setdefault(installation, threading.Lock())
        with minting:
            with self._lock:
                cached = self._tokens.get(installation)
            now = datetime.fromtimestamp(self._clock(), UTC)
            if cached is not None and cached.value != stale and cached.fresh(now):
                return cached
            made = self._mint(installation)
            with self._lock:
                self._tokens[installation] = made
                self.mints[installation] = self.mints.get(installation, 0) + 1
            return made

    def _mint(self, installation: int) -> Token:
        started = time.monotonic()
        path = f"app/installations/{installation}/access_tokens"
        response = self._as_app("POST", path)
        self._count_time(started)
        if response.status_code == 404:  # uninstalled since: its owner is looked up again
            with self._lock:
                gone = [o for o, i in self._owners.items() if i.id == installation]
                for owner in gone:
                    del self._owners[owner]
            named = ", ".join(gone) or f"installation {installation}"
            raise NoInstallation(f"the App {self.app_id} is no longer installed on {named}", named)
        if response.status_code != 201:
            raise BadResponse(
                f"POST /{path}: unexpected HTTP {response.status_code} {_message(response)}"
            )
        found = _object(response, f"POST /{path}")
        value, expires = found.get("token"), found.get("expires_at")
        if not isinstance(value, str) or not value or any(c in value for c in "\r\n\0 :"):
            raise BadResponse(f"POST /{path}: no token")
        try:
            expires_at = datetime.fromisoformat(str(expires).replace("Z", "+00:00"))
        except ValueError:
            raise BadResponse(f"POST /{path}: expires_at is not a time") from None
        if expires_at.tzinfo is None:
            raise BadResponse(f"POST /{path}: expires_at has no time zone")
        now = datetime.fromtimestamp(self._clock(), UTC)
        log.info("forge at %s: minted a token of installation %s, until %s", self.base_url,
                 installation, expires_at.isoformat(timespec="seconds"))  # fmt: skip
        return Token(value, expires_at, now, _permissions(found.get("permissions")))

    def _count_time(self, started: float) -> None:
        with self._lock:
            self.minting_seconds += time.monotonic() - started


class InstallationAuth(httpx.Auth):
    """httpx's auth for a GitHubClient of an App: each request carries the token of the
    installation of the repository it names (`/repos/{owner}/{repo}/...`; another path takes the
    last owner's); a 401 mints once more and sends the request once more."""

    def __init__(self, app: GitHubApp) -> None:
        self.app = app
        self._last: tuple[str, str] | None = None

    def __repr__(self) -> str:  # what Http keys the refusals it remembers by: the App, no token
        return f"InstallationAuth(app {self.app.app_id} at {self.app.base_url})"

    def repository(self, url: httpx.URL) -> tuple[str, str] | None:
        base = urlsplit(self.app.base_url).path
        parts = url.path.removeprefix(base.rstrip("/")).strip("/").split("/")
        if len(parts) >= 3 and parts[0] == "repos":
            self._last = (parts[1], parts[2])
        return self._last

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        repository = self.repository(request.url)
        if repository is None:  # no repository named yet: as nobody (GET /meta)
            yield request
            return
        token = self.app.token(*repository)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {self.app.renew(*repository, token)}"
            yield request


_apps: dict[str, GitHubApp] = {}
_broken: dict[str, str] = {}
"""The forges whose App this process cannot use, and why (its key is nowhere, or not a key)."""
_apps_lock = threading.Lock()


def use_apps(forges: Sequence[Forge], apps: Sequence[ForgeApp], timeout: float = TIMEOUT) -> None:
    """Makes the registry's Apps this process's (the store's `forges()` and `forge_apps()`): a
    forge whose App, URL and key are unchanged keeps its GitHubApp and its tokens. A forge whose
    key cannot be read, or is no RSA key, is kept aside with why: app_of refuses it, naming the
    variable or the file (never the key)."""
    urls = {forge.name: forge.base_url for forge in forges}
    kept: dict[str, GitHubApp] = {}
    broken: dict[str, str] = {}
    for entry in apps:
        if entry.name not in urls:
            continue
        url = urls[entry.name].rstrip("/") + "/"
        try:
            pem, source = app_key_for(entry.name, entry.app_key_file)
            digest = hashlib.sha256(pem).hexdigest()
            with _apps_lock:
                known = _apps.get(entry.name)
            if known is not None and (known.base_url, known.app_id, known.key_digest) == (
                url,
                entry.app_id,
                digest,
            ):
                kept[entry.name] = known
                continue
            kept[entry.name] = GitHubApp(
                url, entry.app_id, load_key(pem, source), key_source=source, key_digest=digest,
                timeout=timeout,
            )  # fmt: skip
        except (LookupError, OSError, ValueError) as error:
            broken[entry.name] = str(error)
    with _apps_lock:
        for name, old in _apps.items():
            if kept.get(name) is not old:
                old.close()
        _apps.clear()
        _apps.update(kept)
        _broken.clear()
        _broken.update(broken)


def refresh_apps(store: JobStore, timeout: float = TIMEOUT) -> None:
    """use_apps with the store's registry (each poll round, a runner's start)."""
    use_apps(store.forges(), store.forge_apps(), timeout)


def app_of(forge: str) -> GitHubApp | None:
    """The forge's App in this process (use_apps), None when it authenticates with a token.
    AuthRefused, naming what to set, when it has an App whose key cannot be used."""
    with _apps_lock:
        app, broken = _apps.get(forge), _broken.get(forge)
    if broken is not None:
        raise AuthRefused(f"{broken} ({missing_key_fix(forge)})", datetime.now(UTC) + AUTH_PAUSE)
    return app


def forge_git_auth(forge: str, owner: str, repo: str) -> GitAuth | None:
    """The runner's git credentials for a repository: its installation's token (minted or
    cached) on a forge of a GitHub App, else tireless.git.git_auth's token; None without one."""
    if (app := app_of(forge)) is not None:
        return GitAuth.github(app.token(owner, repo))
    return git_auth(forge)


def has_app(forge: str) -> bool:
    """Whether the forge authenticates as a GitHub App in this process (its key usable or not)."""
    with _apps_lock:
        return forge in _apps or forge in _broken


def missing_key_fix(forge: str) -> str:
    """What to set when a forge's App key is nowhere."""
    variable = app_key_variable(forge)
    return f"set {variable}_FILE (or {variable}) to the App's private key, or --app-key-file"


def _object(response: httpx.Response, where: str) -> dict[str, Any]:
    try:
        found = response.json()
    except ValueError:
        raise BadResponse(f"{where}: not JSON") from None
    if not isinstance(found, dict):
        raise BadResponse(f"{where}: not an object")
    return found


def _permissions(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str)}


def _message(response: httpx.Response) -> str:
    try:
        found = response.json()
    except ValueError:
        return ""
    message = found.get("message") if isinstance(found, dict) else None
    return repr(message[:200]) if isinstance(message, str) else ""
