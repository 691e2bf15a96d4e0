"""The forge webhooks: `POST /hooks/gitea` (Gitea and Forgejo) and `POST /hooks/github`.

A delivery without a secret configured for its forge or without a signature is refused (401)
before its body is read; the body is read up to 1 MiB (413 past it, while reading: the guard),
its HMAC-SHA256 signature over the raw body checked in constant time against
`TIRELESS_WEBHOOK_SECRET_<NAME>` (401), and then the one thing it may do is done: make its
repository due for a poll (`tireless.poll_soon_once`; 404 for a repository the store does not
track), unless the same signed body was received in the last seven days (409, a replay: the
delivery id header is not signed, so it does not tell a replay apart). Nothing in the payload but
the repository's name is read: the poll reads the forge itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tireless.errors import PermissionDenied, UnknownRepository
from tireless.web import reads
from tireless.web.dashboard import dashboard_of

log = logging.getLogger("tireless.web.hooks")


@dataclass(frozen=True, slots=True)
class Flavour:
    signature_header: str
    signature_prefix: str
    delivery_header: str


FLAVOURS = {
    # Gitea and Forgejo: X-Gitea-Signature is the bare hex HMAC-SHA256 of the body.
    "gitea": Flavour("X-Gitea-Signature", "", "X-Gitea-Delivery"),
    # GitHub: X-Hub-Signature-256 is "sha256=" and the hex HMAC-SHA256 of the body.
    "github": Flavour("X-Hub-Signature-256", "sha256=", "X-GitHub-Delivery"),
}


def secret_variable(forge: str) -> str:
    """TIRELESS_WEBHOOK_SECRET_<NAME>: the forge name upper-cased, other than letters and digits as _."""
    return "TIRELESS_WEBHOOK_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", forge).upper()


def signed(secret: str, body: bytes, given: str, flavour: Flavour) -> bool:
    expected = (
        flavour.signature_prefix + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    )
    return hmac.compare_digest(expected.encode(), given.strip().encode())


def refuse(status: int, reason: str) -> Response:
    return JSONResponse({"error": reason}, status_code=status)


def repository_of(body: bytes) -> tuple[str, str] | None:
    """(owner, repo) named by the payload's `repository`; None when it names none."""
    try:
        payload = json.loads(body)
        repository = payload["repository"]
        owner = repository["owner"]
        name = owner.get("login") or owner.get("username")
        repo = repository["name"]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None  # RecursionError: nested deeper than the parser goes
    if isinstance(name, str) and isinstance(repo, str) and name and repo:
        return name, repo
    return None


async def receive(request: Request) -> Response:
    flavour_name = request.path_params["flavour"]
    flavour = FLAVOURS.get(flavour_name)
    if flavour is None:
        return refuse(
            404, f"no webhook flavour {flavour_name!r}: use /hooks/gitea or /hooks/github"
        )
    forge = request.query_params.get("forge") or flavour_name
    secret = os.environ.get(secret_variable(forge))
    if not secret:
        log.warning("webhook for forge %r refused: %s is not set", forge, secret_variable(forge))
        return refuse(401, "no webhook secret is configured for this forge")
    given = request.headers.get(flavour.signature_header)
    if not given:
        return refuse(401, f"bad or missing {flavour.signature_header}")
    body = await request.body()  # bounded by the guard while it is read
    if not signed(secret, body, given, flavour):
        return refuse(401, f"bad or missing {flavour.signature_header}")
    delivery = request.headers.get(flavour.delivery_header)
    if not delivery:
        return refuse(400, f"missing {flavour.delivery_header}")
    repository = repository_of(body)
    if repository is None:
        return refuse(400, "the payload names no repository")
    owner, repo = repository
    board, params = dashboard_of(request), {"forge": forge, "owner": owner, "repo": repo}
    try:
        # Owner and name matched without case: GitHub names the repository in its canonical
        # case (`Codertocat/Hello-World`), whatever case it was tracked in; the answer gives the
        # key as tracked.
        tracked = await board.rows(reads.TRACKED_KEY, params)
        if not tracked:
            return refuse(404, "repository not tracked")
        params = dict(tracked[0])
        owner, repo = params["owner"], params["repo"]
        once = {**params, "digest": hashlib.sha256(body).digest()}
        due = (await board.rows(reads.POLL_SOON_ONCE, once))[0]["due"]
    except UnknownRepository:
        return refuse(404, "repository not tracked")
    except PermissionDenied:
        return refuse(
            403, "this dashboard's database role may not ask for a poll (tireless_poller)"
        )
    if due is None:
        log.info(
            "webhook delivery %s for forge %r replays a body already received", delivery, forge
        )
        return refuse(409, "this body was already received (a replay)")
    return JSONResponse({"forge": forge, "owner": owner, "repo": repo, "poll_soon": due}, 202)
