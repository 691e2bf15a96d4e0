"""The stand-in GitHub's GitHub App (issue 49): the App's JWT checked, its installations per owner,
the installation tokens it mints and their expiry, each answer as GitHub gives it. A test makes
one with the App's public key and attaches it (`forge.app = StandinApp(...)`); the stand-in then
asks it first of every API request (rest.py) and git request (git_http.py).

- The JWT (docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/
  generating-a-json-web-token-jwt-for-a-github-app): RS256 with the App's key, `iss` the App's
  id, `iat` not in the future, `exp` in the future and at most ten minutes ahead. Refused with
  401 and GitHub's messages: "A JSON web token could not be decoded" (a bad signature or not a
  JWT: actions/create-github-app-token#153, backstage/backstage#12887), "'Expiration time' claim
  ('exp') is too far in the future" (coq/bot#204, octokit/auth-app.js#698), "'Expiration time'
  claim ('exp') must be a numeric value representing the future time at which the assertion
  expires" (sigmavirus24/github3.py#1050), "'Issued at' claim ('iat') must be an Integer
  representing the time that the assertion was issued" (probot/probot#967), each with
  `documentation_url` https://docs.github.com/rest.
- `GET /app` (docs.github.com/en/rest/apps/apps#get-the-authenticated-app), `GET /repos/{o}/{r}/
  installation` and `GET /orgs/{org}/installation` (404 "Not Found" where it is not installed),
  `POST /app/installations/{id}/access_tokens`: 201 `{token, expires_at, permissions,
  repository_selection}` (PyGithub's tests/ReplayData/Authentication.
  testAppInstallationAuthAuthentication.txt), the token `ghs_...`, an hour by default
  (`lifetime`: seconds, for tests).
- An installation token expired: 401 "Bad credentials"; used on another owner's repository: 404
  "Not Found" (an installation sees only its own repositories); `GET /user`: 403 "Resource not
  accessible by integration" (rest.py, `installation`). Git takes it as the password of
  `x-access-token` (docs.github.com, "Authenticating as a GitHub App installation"); a refused
  one is 401 with GitHub's Basic challenge (git_http.py).
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from dev.standin.records import APP_LOGIN, Answer

DOCS = "https://docs.github.com/rest"
APP_SLUG = APP_LOGIN.removesuffix("[bot]")
BOT_USER_ID = 41898282
"""The bot user's id (as github-actions[bot]'s is): its noreply address is `<id>+<login>@...`."""
ALL_PERMISSIONS = {
    "issues": "write",
    "pull_requests": "write",
    "contents": "write",
    "checks": "read",
    "statuses": "read",
    "metadata": "read",
}


@dataclass(frozen=True, slots=True)
class Issued:
    """A token the App minted: whose installation, and until when (seconds since the epoch)."""

    installation: int
    owner: str
    expires_at: float


class StandinApp:
    """A GitHub App on the stand-in GitHub. `install(owner)` installs it; `mints` counts the
    tokens minted per installation; `lifetime` is a token's, in seconds."""

    def __init__(
        self,
        public_key: RSAPublicKey,
        *,
        app_id: int = 4242,
        lifetime: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.public_key = public_key
        self.app_id = app_id
        self.lifetime = lifetime
        self.clock = clock
        self._lock = threading.Lock()
        self.installations: dict[str, tuple[int, dict[str, str]]] = {}
        self.tokens: dict[str, Issued] = {}
        self.mints: dict[int, int] = {}
        self.refused: list[str] = []
        """The message of every 401 the App gave (JWTs and expired tokens), in order."""
        self.refuse_push_once = False

    def install(self, owner: str, permissions: Mapping[str, str] | None = None) -> int:
        """Installs the App on `owner` (every repository), with these permissions; its id."""
        with self._lock:
            number = 100 + len(self.installations) + 1
            self.installations[owner.lower()] = (number, dict(permissions or ALL_PERMISSIONS))
        return number

    # The stand-in's hooks
    def answer(self, method: str, parts: list[str], authorization: str | None) -> Answer | None:
        """The App's own routes, and the refusals of an installation token (expired: 401; another
        owner's repository: 404); None for a request the rest of the stand-in answers."""
        bearer = _bearer(authorization)
        if parts == ["app"] or parts[:2] == ["app", "installations"]:
            return self._as_app(method, parts, bearer)
        if (
            method == "GET"
            and len(parts) == 4
            and parts[0] == "repos"
            and parts[3] == "installation"
        ):
            return self._as_app(method, parts, bearer)
        if (
            method == "GET"
            and len(parts) == 3
            and parts[0] == "orgs"
            and parts[2] == "installation"
        ):
            return self._as_app(method, parts, bearer)
        if method == "GET" and [unquote(part) for part in parts] == ["users", APP_LOGIN]:
            bot = {"login": APP_LOGIN, "id": BOT_USER_ID, "type": "Bot", "site_admin": False}
            return Answer(200, {}, bot)
        with self._lock:
            issued = self.tokens.get(bearer or "")
        if issued is None:
            return None
        if self.clock() >= issued.expires_at:
            return self._refuse("Bad credentials")
        if len(parts) >= 2 and parts[0] == "repos" and parts[1].lower() != issued.owner:
            return _error(404, "Not Found")
        return None

    def accepts(self, authorization: str | None) -> bool:
        """Whether the header carries an installation token still valid."""
        with self._lock:
            issued = self.tokens.get(_bearer(authorization) or "")
        return issued is not None and self.clock() < issued.expires_at

    def git_account(self, authorization: str | None, request: str) -> str | None:
        """The bot, for a live installation token as the password of git's HTTP Basic; None (a
        401) otherwise. With `refuse_push_once`, the first push's token is revoked and refused
        (a token that expired between a runner's clone and its push)."""
        _, _, password = _basic(authorization).partition(":")
        with self._lock:
            issued = self.tokens.get(password)
            if issued is not None and self.refuse_push_once and "receive-pack" in request:
                self.refuse_push_once = False
                self.tokens[password] = replace(issued, expires_at=0.0)
                self.refused.append("Bad credentials")
                return None
        return APP_LOGIN if issued is not None and self.clock() < issued.expires_at else None

    # The App's routes, each asked with its JWT
    def _as_app(self, method: str, parts: list[str], bearer: str | None) -> Answer:
        refusal = self._check_jwt(bearer)
        if refusal is not None:
            return refusal
        if parts == ["app"] and method == "GET":
            return Answer(200, {}, self._app_json())
        if parts[0] in ("repos", "orgs"):
            found = self.installations.get(parts[1].lower())
            if found is None:
                return _error(404, "Not Found")
            return Answer(200, {}, self._installation_json(parts[1], *found))
        if method == "POST" and len(parts) == 4 and parts[3] == "access_tokens":
            return self._mint(parts[2])
        return _error(404, "Not Found")

    def _check_jwt(self, bearer: str | None) -> Answer | None:
        if bearer is None:
            return _error(401, "Requires authentication")
        try:
            claims = jwt.decode(
                bearer, self.public_key, algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )  # fmt: skip
        except jwt.PyJWTError:
            return self._refuse("A JSON web token could not be decoded")
        now = self.clock()
        iat, exp = claims.get("iat"), claims.get("exp")
        if type(iat) is not int or iat > now:
            return self._refuse(
                "'Issued at' claim ('iat') must be an Integer representing the time that the"
                " assertion was issued"
            )
        if type(exp) is not int or exp <= now:
            return self._refuse(
                "'Expiration time' claim ('exp') must be a numeric value representing the future"
                " time at which the assertion expires"
            )
        if exp > now + 600:
            return self._refuse("'Expiration time' claim ('exp') is too far in the future")
        if str(claims.get("iss")) != str(self.app_id):
            return self._refuse("A JSON web token could not be decoded")
        return None

    def _mint(self, installation: str) -> Answer:
        with self._lock:
            owner = next(
                (o for o, (number, _) in self.installations.items() if str(number) == installation),
                None,
            )
            if owner is None:
                return _error(404, "Not Found")
            number, permissions = self.installations[owner]
            token = "ghs_" + secrets.token_urlsafe(27)
            expires_at = self.clock() + self.lifetime
            self.tokens[token] = Issued(number, owner, expires_at)
            self.mints[number] = self.mints.get(number, 0) + 1
        expires = datetime.fromtimestamp(expires_at, UTC).isoformat(timespec="milliseconds")
        body = {
            "token": token,
            "expires_at": expires.replace("+00:00", "Z"),
            "permissions": permissions,
            "repository_selection": "all",
        }
        return Answer(201, {}, body)

    def _refuse(self, message: str) -> Answer:
        with self._lock:
            self.refused.append(message)
        return _error(401, message)

    def _app_json(self) -> dict[str, Any]:
        return {
            "id": self.app_id,
            "slug": APP_SLUG,
            "name": "tireless (stand-in)",
            "html_url": f"https://github.com/apps/{APP_SLUG}",
            "permissions": ALL_PERMISSIONS,
            "events": ["issues", "issue_comment", "pull_request", "pull_request_review"],
        }

    def _installation_json(self, owner: str, number: int, permissions: dict[str, str]) -> Any:
        return {
            "id": number,
            "app_id": self.app_id,
            "app_slug": APP_SLUG,
            "account": {"login": owner, "type": "Organization"},
            "target_type": "Organization",
            "repository_selection": "all",
            "permissions": permissions,
            "html_url": f"https://github.com/organizations/{owner}/settings/installations/{number}",
        }


def _basic(authorization: str | None) -> str:
    """`user:password` of an HTTP Basic header, "" for another or none."""
    if authorization is None or authorization[:6].lower() != "basic ":
        return ""
    try:
        return base64.b64decode(authorization[6:].strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def _bearer(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") and value.strip() else None


def _error(status: int, message: str) -> Answer:
    return Answer(
        status, {}, {"message": message, "documentation_url": DOCS, "status": str(status)}
    )
