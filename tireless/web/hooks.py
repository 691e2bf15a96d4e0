"""The forge webhooks: `POST /hooks/gitea` (Gitea and Forgejo) and `POST /hooks/github`.

A delivery is read up to 1 MiB (413 past it, while reading), its HMAC-SHA256 signature over the
raw body checked in constant time against `TIRELESS_WEBHOOK_SECRET_<NAME>` (401), a delivery id
seen before is refused (409), and then the one thing it may do is done: make its repository due
for a poll (`tireless.poll_soon`; 404 for a repository the store does not track). Nothing in the
payload but the repository's name is read: the poll reads the forge itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tireless import calls
from tireless.errors import PermissionDenied, UnknownRepository
from tireless.web import reads
from tireless.web.pages import dashboard_of

log = logging.getLogger("tireless.web.hooks")

MAX_BODY = 1024 * 1024


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


@dataclass
class Deliveries:
    """The delivery ids already acted on, the newest `keep` of them (a forge redelivers a
    delivery with its id unchanged)."""

    keep: int = 10000
    seen: OrderedDict[str, None] = field(default_factory=OrderedDict)

    def first_time(self, delivery: str) -> bool:
        """Records the id; false when it was already recorded."""
        if delivery in self.seen:
            return False
        self.seen[delivery] = None
        while len(self.seen) > self.keep:
            self.seen.popitem(last=False)
        return True

    def forget(self, delivery: str) -> None:
        self.seen.pop(delivery, None)


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


async def read_body(request: Request) -> bytes | None:
    """The body, or None as soon as it passes MAX_BODY (the rest is never read)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return None
    return bytes(body)


def repository_of(body: bytes) -> tuple[str, str] | None:
    """(owner, repo) named by the payload's `repository`; None when it names none."""
    try:
        payload = json.loads(body)
        repository = payload["repository"]
        owner = repository["owner"]
        name = owner.get("login") or owner.get("username")
        repo = repository["name"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
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
    body = await read_body(request)
    if body is None:
        return refuse(413, f"body over {MAX_BODY} bytes")
    secret = os.environ.get(secret_variable(forge))
    if not secret:
        log.warning("webhook for forge %r refused: %s is not set", forge, secret_variable(forge))
        return refuse(401, "no webhook secret is configured for this forge")
    given = request.headers.get(flavour.signature_header)
    if not given or not signed(secret, body, given, flavour):
        return refuse(401, f"bad or missing {flavour.signature_header}")
    delivery = request.headers.get(flavour.delivery_header)
    if not delivery:
        return refuse(400, f"missing {flavour.delivery_header}")
    repository = repository_of(body)
    if repository is None:
        return refuse(400, "the payload names no repository")
    deliveries = dashboard_of(request).deliveries
    key = f"{forge}:{delivery}"
    if not deliveries.first_time(key):
        return refuse(409, "delivery already received")
    owner, repo = repository
    board, params = dashboard_of(request), {"forge": forge, "owner": owner, "repo": repo}
    try:
        # Owner and name matched without case: GitHub names the repository in its canonical
        # case (`Codertocat/Hello-World`), whatever case it was tracked in; the answer gives the
        # key as tracked.
        tracked = await board.rows(reads.TRACKED_KEY, params)
        if not tracked:
            deliveries.forget(key)
            return refuse(404, "repository not tracked")
        params = dict(tracked[0])
        owner, repo = params["owner"], params["repo"]
        due = bool((await board.rows(calls.POLL_SOON, params))[0]["poll_soon"])
    except UnknownRepository:
        deliveries.forget(key)
        return refuse(404, "repository not tracked")
    except PermissionDenied:
        deliveries.forget(key)
        return refuse(
            403, "this dashboard's database role may not ask for a poll (tireless_poller)"
        )
    except BaseException:
        deliveries.forget(key)
        raise
    return JSONResponse({"forge": forge, "owner": owner, "repo": repo, "poll_soon": due}, 202)
