"""The forge webhooks: a delivery signed with the forge's secret (Gitea's and GitHub's flavour)
makes its repository due for a poll at once; a bad, missing, oversize or replayed delivery is
refused and changes nothing, and nothing but the repository's name is read from a payload."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import quote_plus

import pytest
from starlette.testclient import TestClient

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, track, tracked
from tests.support.roles import Login
from tests.support.web import asgi_post, browser
from tireless import JobStore
from tireless.credentials import secret_variable
from tireless.errors import InvalidArgument, translated_errors
from tireless.web.app import create_app
from tireless.web.guard import HOOK_LIMIT as MAX_BODY
from tireless.web.hooks import FORM

SECRET = "s3cret-for-hooks"
GITHUB_SECRET = "another-secret"


@pytest.fixture
def client(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("TIRELESS_WEBHOOK_SECRET_GITEA", SECRET)
    monkeypatch.setenv("TIRELESS_WEBHOOK_SECRET_GITHUB", GITHUB_SECRET)
    tracked(store)
    track(store, "github", OWNER, REPO)
    not_due(db)
    with browser(create_app(db.conninfo)) as test_client:
        yield test_client


def not_due(db: Database) -> None:
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET next_poll_at = now() + interval '1 hour'")


def next_polls(db: Database) -> dict[str, datetime]:
    with db.connect() as conn:
        rows = conn.execute("SELECT forge, next_poll_at FROM tireless.repo_poll").fetchall()
    return dict(rows)


def is_due(db: Database, forge: str) -> bool:
    due: bool = db.scalar(
        "SELECT next_poll_at <= now() FROM tireless.repo_poll WHERE forge = %(p)s", {"p": forge}
    )
    return due


def payload(owner: str = OWNER, repo: str = REPO, **extra: object) -> bytes:
    body = {
        "action": "label_updated",
        "issue": {"number": 7, "labels": [{"name": "tireless"}], "state": "open"},
        "repository": {"name": repo, "owner": {"login": owner, "username": owner}},
        **extra,
    }
    return json.dumps(body).encode()


def gitea(body: bytes, secret: str = SECRET, delivery: str | None = None) -> dict[str, str]:
    return {
        "X-Gitea-Signature": hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
        "X-Gitea-Delivery": delivery or str(uuid.uuid4()),
        "X-Gitea-Event": "issues",
        "Content-Type": "application/json",
    }


def github(body: bytes, secret: str = GITHUB_SECRET, delivery: str | None = None) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "X-Hub-Signature-256": f"sha256={digest}",
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-GitHub-Event": "issues",
        "Content-Type": "application/json",
    }


def test_the_secret_variable_names_the_forge() -> None:
    assert secret_variable("gitea") == "TIRELESS_WEBHOOK_SECRET_GITEA"
    assert secret_variable("code.example-1") == "TIRELESS_WEBHOOK_SECRET_CODE_EXAMPLE_1"


def test_a_signed_gitea_delivery_makes_the_repository_due(client: TestClient, db: Database) -> None:
    body = payload()
    response = client.post("/hooks/gitea", content=body, headers=gitea(body))
    assert response.status_code == 202
    assert response.json()["poll_soon"] is True
    assert is_due(db, "gitea")
    assert not is_due(db, "github")


def test_a_signed_github_delivery_makes_the_repository_due(
    client: TestClient, db: Database
) -> None:
    body = payload()
    response = client.post("/hooks/github", content=body, headers=github(body))
    assert response.status_code == 202
    assert is_due(db, "github")
    assert not is_due(db, "gitea")


def test_the_payload_is_never_taken_as_data(client: TestClient, db: Database) -> None:
    """Issues, labels, states in the payload: none becomes a job or an issue row."""
    jobs = db.scalar("SELECT count(*) FROM tireless.job")
    issues = db.scalar("SELECT count(*) FROM tireless.issue")
    body = payload(issue={"number": 1, "labels": [{"name": "tireless/implement"}]})
    assert client.post("/hooks/gitea", content=body, headers=gitea(body)).status_code == 202
    assert db.scalar("SELECT count(*) FROM tireless.job") == jobs
    assert db.scalar("SELECT count(*) FROM tireless.issue") == issues


@pytest.mark.parametrize(
    ("case", "status"),
    [
        ("wrong secret", 401),
        ("missing signature", 401),
        ("body changed after signing", 401),
        ("github signature on the gitea hook", 401),
        ("gitea signature without sha256= on the github hook", 401),
        ("oversize", 413),
        ("untracked repository", 404),
        ("no repository in the payload", 400),
        ("no delivery id", 400),
    ],
)
def test_a_bad_delivery_is_refused_and_changes_nothing(
    client: TestClient, db: Database, case: str, status: int
) -> None:
    before = next_polls(db)
    body = payload()
    path, headers = "/hooks/gitea", gitea(body)
    if case == "wrong secret":
        headers = gitea(body, secret="guess")
    elif case == "missing signature":
        del headers["X-Gitea-Signature"]
    elif case == "body changed after signing":
        body = payload(repo="widgets ")
    elif case == "github signature on the gitea hook":
        headers = {**gitea(body), "X-Gitea-Signature": github(body, SECRET)["X-Hub-Signature-256"]}
    elif case == "gitea signature without sha256= on the github hook":
        path = "/hooks/github"
        headers = {
            **github(body),
            "X-Hub-Signature-256": gitea(body, GITHUB_SECRET)["X-Gitea-Signature"],
        }
    elif case == "oversize":
        body = payload(padding="x" * MAX_BODY)
        headers = gitea(body)
    elif case == "untracked repository":
        body = payload(repo="elsewhere")
        headers = gitea(body)
    elif case == "no repository in the payload":
        body = json.dumps({"zen": "hello"}).encode()
        headers = gitea(body)
    elif case == "no delivery id":
        del headers["X-Gitea-Delivery"]
    response = client.post(path, content=body, headers=headers)
    assert response.status_code == status, response.text
    assert next_polls(db) == before


def test_an_oversize_body_is_refused_while_it_is_read(client: TestClient, db: Database) -> None:
    """No Content-Length (a chunked body): the server stops reading past 1 MiB."""
    before = next_polls(db)
    sent: list[int] = []

    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            sent.append(64 * 1024)
            yield b"x" * (64 * 1024)

    response = client.post("/hooks/gitea", content=chunks(), headers=gitea(b""))
    assert response.status_code == 413
    assert next_polls(db) == before


def test_a_replayed_delivery_is_refused(client: TestClient, db: Database) -> None:
    body = payload()
    headers = gitea(body, delivery="b1f0-delivery-1")
    assert client.post("/hooks/gitea", content=body, headers=headers).status_code == 202
    not_due(db)
    before = next_polls(db)
    replay = client.post("/hooks/gitea", content=body, headers=headers)
    assert replay.status_code == 409
    assert next_polls(db) == before


def test_no_secret_configured_refuses_every_delivery(
    client: TestClient, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIRELESS_WEBHOOK_SECRET_GITEA")
    before = next_polls(db)
    body = payload()
    response = client.post("/hooks/gitea", content=body, headers=gitea(body))
    assert response.status_code == 401
    assert SECRET not in response.text
    assert next_polls(db) == before


def test_a_named_forge_uses_its_own_secret(
    client: TestClient, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIRELESS_WEBHOOK_SECRET_CODE_EXAMPLE", "its-own")
    track(store, "code.example", OWNER, REPO)
    not_due(db)
    body = payload()
    assert (
        client.post(
            "/hooks/gitea?forge=code.example", content=body, headers=gitea(body)
        ).status_code
        == 401
    )
    ok = client.post(
        "/hooks/gitea?forge=code.example", content=body, headers=gitea(body, secret="its-own")
    )
    assert ok.status_code == 202
    assert is_due(db, "code.example")
    assert not is_due(db, "gitea")


def test_a_runner_dashboard_may_not_ask_for_a_poll(
    client: TestClient,
    db: Database,
    login: Login,
) -> None:
    before = next_polls(db)
    with browser(create_app(login("tireless_runner"))) as runner:
        body = payload()
        assert runner.post("/hooks/gitea", content=body, headers=gitea(body)).status_code == 403
    assert next_polls(db) == before


@pytest.mark.parametrize("signature", [None, "0" * 64], ids=["unsigned", "badly signed"])
def test_an_unsigned_delivery_is_refused_before_its_body_is_read(
    db: Database, monkeypatch: pytest.MonkeyPatch, signature: str | None
) -> None:
    """Straight through ASGI, counting what the app asks of an endless body: nothing when the
    signature is missing; at most the limit when it is there but wrong."""
    monkeypatch.setenv("TIRELESS_WEBHOOK_SECRET_GITEA", SECRET)
    app = create_app(db.conninfo)
    read: list[int] = []
    headers = [(b"x-gitea-delivery", b"d1")]
    if signature is not None:
        headers.append((b"x-gitea-signature", signature.encode()))

    async def endless() -> dict[str, Any]:
        read.append(64 * 1024)
        return {"type": "http.request", "body": b"x" * (64 * 1024), "more_body": True}

    answers = asgi_post(app, "/hooks/gitea", headers, endless)
    status = answers[0]["status"]
    if signature is None:
        assert (status, sum(read)) == (401, 0)
    else:
        assert status in (401, 413)
        assert sum(read) <= MAX_BODY + 64 * 1024


def test_a_replayed_body_is_refused_whatever_its_delivery_id(
    client: TestClient, db: Database
) -> None:
    """The delivery id header is not signed: a replay comes with a fresh one."""
    body = payload()
    assert client.post("/hooks/gitea", content=body, headers=gitea(body)).status_code == 202
    not_due(db)
    before = next_polls(db)
    for _ in range(3):
        replay = client.post("/hooks/gitea", content=body, headers=gitea(body))
        assert replay.status_code == 409
        assert "replay" in replay.json()["error"]
    assert next_polls(db) == before
    # Another body (the next event of the same issue) is a new delivery.
    assert (
        client.post("/hooks/gitea", content=payload(n=2), headers=gitea(payload(n=2))).status_code
        == 202
    )
    # The same body to another forge, signed with that forge's secret, is that forge's own.
    assert client.post("/hooks/github", content=body, headers=github(body)).status_code == 202
    remembered = "SELECT count(*) FROM tireless.webhook_delivery WHERE digest = %(d)s"
    assert db.scalar(remembered, {"d": hashlib.sha256(body).digest()}) == 2


def test_a_body_is_remembered_for_seven_days(client: TestClient, db: Database) -> None:
    body = payload()
    assert client.post("/hooks/gitea", content=body, headers=gitea(body)).status_code == 202
    not_due(db)
    with db.connect() as conn:
        conn.execute("UPDATE tireless.webhook_delivery SET received_at = now() - interval '6 days'")
    assert client.post("/hooks/gitea", content=body, headers=gitea(body)).status_code == 409
    with db.connect() as conn:
        conn.execute("UPDATE tireless.webhook_delivery SET received_at = now() - interval '8 days'")
    assert client.post("/hooks/gitea", content=body, headers=gitea(body)).status_code == 202
    assert is_due(db, "gitea")
    assert db.scalar("SELECT count(*) FROM tireless.webhook_delivery") == 1, "the old row is gone"


def test_two_copies_of_a_body_at_once_poll_once(store: JobStore, db: Database) -> None:
    """The first copy's transaction holds its row; the second waits for it, then finds it."""
    tracked(store)
    call = "SELECT tireless.poll_soon_once(%(f)s, %(o)s, %(r)s, %(d)s)"
    params = {"f": FORGE, "o": OWNER, "r": REPO, "d": hashlib.sha256(b"same body").digest()}
    second: list[tuple[object, ...] | None] = []
    with db.connect() as first, db.connect(lock_timeout="60s") as other:
        with first.transaction():
            assert first.execute(call, params).fetchone() == (True,)
            racer = threading.Thread(
                target=lambda: second.append(other.execute(call, params).fetchone())
            )
            racer.start()
            waiting = (
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND query LIKE '%%poll_soon_once%%'"
            )
            while db.scalar(waiting) == 0:
                assert racer.is_alive(), "the second copy did not wait for the first"
        racer.join(timeout=60)
    assert second == [(None,)]


def test_a_digest_must_be_a_sha256(store: JobStore, db: Database) -> None:
    tracked(store)
    with (
        db.connect() as conn,
        pytest.raises(InvalidArgument, match="32 bytes"),
        translated_errors(),
    ):
        conn.execute(
            "SELECT tireless.poll_soon_once(%(f)s, %(o)s, %(r)s, %(d)s)",
            {"f": FORGE, "o": OWNER, "r": REPO, "d": b"short"},
        )
    assert db.scalar("SELECT count(*) FROM tireless.webhook_delivery") == 0


def test_a_github_delivery_naming_the_repository_in_another_case_finds_it(
    client: TestClient, store: JobStore, db: Database
) -> None:
    # GitHub's payloads name the repository in its canonical case; it was tracked in lower case.
    track(store, "github", "codertocat", "hello-world")
    not_due(db)
    body = payload("Codertocat", "Hello-World")
    response = client.post("/hooks/github", content=body, headers=github(body))
    assert response.status_code == 202, response.text
    assert response.json() == {
        "forge": "github",
        "owner": "codertocat",
        "repo": "hello-world",
        "poll_soon": True,
    }
    due = db.scalar(
        "SELECT next_poll_at <= now() FROM tireless.repo_poll WHERE repo = 'hello-world'"
    )
    assert due is True
    assert track(store, "github", "CODERTOCAT", "Hello-World") is False  # tracked already


def form(body: bytes) -> bytes:
    """A hook set to content type form sends `payload=` and the JSON percent-encoded, a space as
    + (Gitea: url.Values.Encode in services/webhook/deliver.go; GitHub: docs.github.com/en/
    webhooks/using-webhooks/creating-webhooks)."""
    return b"payload=" + quote_plus(body).encode()


def as_form(headers: dict[str, str]) -> dict[str, str]:
    return {**headers, "Content-Type": f"{FORM}; charset=utf-8"}


def test_a_form_encoded_gitea_delivery_signed_over_its_json_makes_the_repository_due(
    client: TestClient, db: Database
) -> None:
    """Gitea and Forgejo sign the JSON payload, not the form it travels in."""
    body = payload(title="50% done & more + less")  # characters the form encodes
    response = client.post("/hooks/gitea", content=form(body), headers=as_form(gitea(body)))
    assert response.status_code == 202, response.text
    assert is_due(db, "gitea")
    assert not is_due(db, "github")


@pytest.mark.parametrize(
    ("case", "status"),
    [
        ("gitea signed over the form body", 401),
        ("github signed over the json", 401),
        ("gitea form without a payload field", 401),
        ("github form without a payload field", 400),
        ("github form with two payload fields", 400),
    ],
)
def test_a_form_encoded_delivery_signed_over_the_wrong_bytes_is_refused(
    client: TestClient, db: Database, case: str, status: int
) -> None:
    before = next_polls(db)
    body = payload()
    sent, path, headers = form(body), "/hooks/gitea", gitea(body)
    if case == "gitea signed over the form body":
        headers = gitea(sent)
    elif case == "github signed over the json":
        path, headers = "/hooks/github", github(body)
    elif case == "gitea form without a payload field":
        sent = b"data=" + quote_plus(body).encode()
        headers = gitea(body)
    elif case == "github form without a payload field":
        sent = b"data=" + quote_plus(body).encode()
        path, headers = "/hooks/github", github(sent)
    elif case == "github form with two payload fields":
        sent = form(body) + b"&" + form(payload(repo="elsewhere"))
        path, headers = "/hooks/github", github(sent)
    response = client.post(path, content=sent, headers=as_form(headers))
    assert response.status_code == status, response.text
    assert next_polls(db) == before


def test_a_form_encoded_github_delivery_is_signed_over_the_form_as_sent(
    client: TestClient, db: Database
) -> None:
    sent = form(payload())
    response = client.post("/hooks/github", content=sent, headers=as_form(github(sent)))
    assert response.status_code == 202, response.text
    assert is_due(db, "github")
    assert not is_due(db, "gitea")


def test_a_gitea_payload_is_a_replay_in_whatever_form_it_comes_again(
    client: TestClient, db: Database
) -> None:
    """The digest is of the signed JSON: the same payload as a form, or with a field added to
    the form (which the signature does not cover), is the same delivery."""
    body = payload()
    assert client.post("/hooks/gitea", content=body, headers=gitea(body)).status_code == 202
    not_due(db)
    before = next_polls(db)
    for sent in (form(body), form(body) + b"&extra=1"):
        again = client.post("/hooks/gitea", content=sent, headers=as_form(gitea(body)))
        assert again.status_code == 409, again.text
    assert next_polls(db) == before


def organisation_ping() -> bytes:
    """GitHub's ping of an organisation's hook: `zen`, `hook_id`, `hook` and `organization`, no
    `repository` (octokit/webhooks payload-examples/api.github.com/ping/
    with-organization.payload.json)."""
    ping = {
        "zen": "Anything added dilutes everything else.",
        "hook_id": 109948940,
        "hook": {"type": "Organization", "id": 266738161, "name": "web", "active": True},
        "organization": {"login": "Octocoders", "id": 38302899},
        "sender": {"login": "Codertocat", "id": 21031067},
    }
    return json.dumps(ping).encode()


@pytest.mark.parametrize("content", ["json", "form"])
def test_an_organisation_ping_answers_that_the_hook_works_and_changes_nothing(
    client: TestClient, db: Database, content: str
) -> None:
    before = next_polls(db)
    body = organisation_ping()
    sent, headers = body, {**github(body), "X-GitHub-Event": "ping"}
    if content == "form":
        sent = form(body)
        headers = as_form({**github(sent), "X-GitHub-Event": "ping"})
    response = client.post("/hooks/github", content=sent, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"forge": "github", "ping": "reachable, signature good"}
    assert next_polls(db) == before
    assert db.scalar("SELECT count(*) FROM tireless.webhook_delivery") == 0
    badly_signed = client.post("/hooks/github", content=sent, headers=github(b"other"))
    assert badly_signed.status_code == 401


def test_a_github_app_s_installation_event_is_taken_and_changes_nothing(
    client: TestClient, db: Database
) -> None:
    """An App's webhook gets `installation` events, which name the account and no repository
    (docs.github.com/en/webhooks/webhook-events-and-payloads#installation): 202, nothing due."""
    before = next_polls(db)
    event = {
        "action": "created",
        "installation": {"id": 101, "account": {"login": "acme", "type": "Organization"}},
        "repositories": [{"id": 1, "name": "widgets", "full_name": "acme/widgets"}],
        "sender": {"login": "Codertocat", "id": 21031067},
    }
    body = json.dumps(event).encode()
    headers = {**github(body), "X-GitHub-Event": "installation"}
    response = client.post("/hooks/github", content=body, headers=headers)
    assert response.status_code == 202, response.text
    assert response.json() == {"forge": "github", "installation": "acme", "poll_soon": None}
    assert next_polls(db) == before
