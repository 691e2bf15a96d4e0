"""The forge webhooks: `POST /hooks/gitea` (Gitea and Forgejo) and `POST /hooks/github`.

A delivery without a secret configured for its forge or without a signature is refused (401)
before its body is read; the body is read up to 1 MiB (413 past it, while reading: the guard),
its HMAC-SHA256 signature checked in constant time against `TIRELESS_WEBHOOK_SECRET_<NAME>`
(401), and then the one thing it may do is done: make its repository due for a poll
(`tireless.poll_soon_once`; 404 for a repository the store does not track), unless the same
signed bytes were received in the last seven days (409, a replay: the delivery id header is not
signed, so it does not tell a replay apart). A JSON body or a form's `payload` field; GitHub's
ping of an organisation's hook, which names no repository, is answered 200 and does nothing.
Nothing in the payload but the repository's name is read: the poll reads the forge itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tireless.credentials import secret_variable
from tireless.errors import PermissionDenied, UnknownRepository
from tireless.store import reads
from tireless.web.dashboard import dashboard_of

log = logging.getLogger("tireless.web.hooks")


@dataclass(frozen=True, slots=True)
class Flavour:
    signature_header: str
    signature_prefix: str
    delivery_header: str
    form_signs_payload: bool
    """A form-encoded delivery is signed over its `payload` field (the JSON), not over the form
    as sent."""


FLAVOURS = {
    # Gitea and Forgejo: X-Gitea-Signature is the bare hex HMAC-SHA256 of the JSON payload, also
    # when the hook's content type is form (`payload=<JSON>`): newDefaultRequest and
    # addDefaultHeaders in services/webhook/deliver.go sign t.PayloadContent. Forgejo sends the
    # same in X-Gitea-Signature beside X-Forgejo-Signature (services/webhook/shared/payloader.go
    # AddDefaultHeaders).
    "gitea": Flavour("X-Gitea-Signature", "", "X-Gitea-Delivery", form_signs_payload=True),
    # GitHub: X-Hub-Signature-256 is "sha256=" and the hex HMAC-SHA256 of the request body as
    # sent, a form's too (docs.github.com/en/webhooks/using-webhooks/validating-webhook-
    # deliveries: "original request body to verify").
    "github": Flavour(
        "X-Hub-Signature-256", "sha256=", "X-GitHub-Delivery", form_signs_payload=False
    ),
}
FORM = "application/x-www-form-urlencoded"
"""Both forges' other content type: the JSON payload sent as the form field `payload`
(services/webhook/deliver.go; docs.github.com/en/webhooks/using-webhooks/creating-webhooks)."""


def signed(secret: str, body: bytes, given: str, flavour: Flavour) -> bool:
    expected = (
        flavour.signature_prefix + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    )
    return hmac.compare_digest(expected.encode(), given.strip().encode())


def refuse(status: int, reason: str) -> Response:
    return JSONResponse({"error": reason}, status_code=status)


def is_form(request: Request) -> bool:
    media_type = request.headers.get("content-type", "").partition(";")[0]
    return media_type.strip().lower() == FORM


def form_payload(body: bytes) -> bytes | None:
    """The form's `payload` field, percent-decoded to the very bytes the forge signed; None when
    the form has no such field or more than one. The body is already bounded (1 MiB)."""
    found = [
        unquote_to_bytes(value.replace(b"+", b" "))
        for name, _, value in (field.partition(b"=") for field in body.split(b"&"))
        if unquote_to_bytes(name.replace(b"+", b" ")) == b"payload"
    ]
    return found[0] if len(found) == 1 else None


def decoded(payload: bytes) -> object:
    """The payload's JSON; None when it is not JSON, or nested deeper than the parser goes."""
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        return None


def repository_of(payload: object) -> tuple[str, str] | None:
    """(owner, repo) named by the payload's `repository`; None when it names none."""
    if not isinstance(payload, dict):
        return None
    try:
        repository = payload["repository"]
        owner = repository["owner"]
        name = owner.get("login") or owner.get("username")
        repo = repository["name"]
    except (KeyError, TypeError, AttributeError):
        return None
    if isinstance(name, str) and isinstance(repo, str) and name and repo:
        return name, repo
    return None


def is_ping(payload: object) -> bool:
    """GitHub's `ping`, sent when a hook is made or pinged: `zen`, `hook_id` and `hook`; an
    organisation's hook's ping names the `organization` and no repository (docs.github.com/en/
    webhooks/webhook-events-and-payloads#ping; octokit/webhooks payload-examples/api.github.com/
    ping/with-organization.payload.json), while its issue events name their repository. Gitea
    and Forgejo send no ping (modules/webhook/type.go has no such event)."""
    return isinstance(payload, dict) and {"zen", "hook_id", "hook"} <= payload.keys()


def installation_account(payload: object) -> str | None:
    """The account of a GitHub App's `installation` or `installation_repositories` event (sent
    to the App's webhook when it is installed, removed or given repositories: docs.github.com/
    en/webhooks/webhook-events-and-payloads#installation), which names no repository; None for
    another payload."""
    if not isinstance(payload, dict) or not isinstance(payload.get("installation"), dict):
        return None
    account = payload["installation"].get("account")
    login = account.get("login") if isinstance(account, dict) else None
    return login if isinstance(login, str) and login else None


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
    form = is_form(request)
    payload = form_payload(body) if form else body
    covered = payload if form and flavour.form_signs_payload else body  # what is signed
    if covered is None or not signed(secret, covered, given, flavour):
        return refuse(401, f"bad or missing {flavour.signature_header}")
    if payload is None:
        return refuse(400, "the form has no single `payload` field")
    delivery = request.headers.get(flavour.delivery_header)
    if not delivery:
        return refuse(400, f"missing {flavour.delivery_header}")
    data = decoded(payload)
    repository = repository_of(data)
    if repository is None and is_ping(data):
        return JSONResponse({"forge": forge, "ping": "reachable, signature good"}, 200)
    if repository is None and (account := installation_account(data)) is not None:
        # The poller finds each owner's installation itself (tireless.forge.app_auth).
        return JSONResponse({"forge": forge, "installation": account, "poll_soon": None}, 202)
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
        once = {**params, "digest": hashlib.sha256(covered).digest()}
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
