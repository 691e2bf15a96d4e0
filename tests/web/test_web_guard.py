"""The guard in front of `tireless web`, through Starlette's TestClient against the real test
database: a rebinding Host gets no page and no CSRF token, a POST from another origin changes
nothing, every answer carries the security headers, no page holds an inline script, a login is
asked for when a token is set, and a bad query, path or body is a 400, never a 500."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.conftest import Database
from tests.support.web import SITE, Jobs, asgi_post, browser, csrf_of, lane_row, populate
from tireless import JobStore
from tireless.web import guard
from tireless.web.app import create_app
from tireless.web.guard import (
    SettingRefused,
    allowed_hosts,
    host_name,
    token_from_environment,
)

TOKEN = "a-token-long-enough-for-tests"


@pytest.fixture
def jobs(store: JobStore, db: Database) -> Jobs:
    return populate(store, db)


@pytest.fixture
def admin(db: Database) -> Iterator[TestClient]:
    with browser(create_app(db.conninfo)) as client:
        yield client


def test_a_rebinding_host_gets_no_page_no_token_and_no_action(
    admin: TestClient,
    jobs: Jobs,
    db: Database,
) -> None:
    token = csrf_of(admin.get("/").text)
    for host in ("rebind.attacker.example", "rebind.attacker.example:8080", "", "127.0.0.2"):
        page = admin.get("/", headers={"Host": host})
        assert page.status_code == 421, host
        assert "csrf" not in page.text
        assert "set-cookie" not in page.headers
        refused = admin.post(
            "/lanes/cc/pause",
            data={"csrf": token},
            headers={"Host": host, "Origin": f"http://{host}"},
        )
        assert refused.status_code == 421
    assert lane_row(db, "cc")[0] is False
    for host in ("localhost", "localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST."):
        assert admin.get("/", headers={"Host": host}).status_code == 200, host


def test_allowed_hosts_are_the_bound_address_the_loopback_names_and_the_added_ones() -> None:
    assert allowed_hosts("192.0.2.7") == {"192.0.2.7", "localhost", "127.0.0.1", "[::1]"}
    assert allowed_hosts("::", ["Tireless.Example", ""]) >= {"[::]", "tireless.example"}
    assert host_name("[::1]:8080") == "[::1]"
    assert host_name("tireless.example.:443") == "tireless.example"


def test_an_added_host_is_answered(db: Database) -> None:
    app = create_app(db.conninfo, allowed_hosts("127.0.0.1", ["tireless.example"]))
    with TestClient(app, base_url="https://tireless.example") as client:
        assert client.get("/").status_code == 200
        assert client.get("/", headers={"Host": "other.example"}).status_code == 421


@pytest.mark.parametrize(
    ("headers", "accepted"),
    [
        ({"Origin": SITE}, True),
        ({"Origin": "http://evil.example"}, False),
        ({"Origin": "http://localhost:9999"}, False),
        ({"Origin": "null"}, False),
        ({"Sec-Fetch-Site": "same-origin"}, True),
        ({"Sec-Fetch-Site": "cross-site"}, False),
        ({"Sec-Fetch-Site": "same-site"}, False),
        ({"Referer": SITE + "/jobs"}, True),
        ({"Referer": "http://evil.example/"}, False),
        ({}, False),
    ],
)
def test_a_post_is_accepted_only_from_the_dashboards_own_origin(
    db: Database, jobs: Jobs, headers: dict[str, str], accepted: bool
) -> None:
    with TestClient(create_app(db.conninfo), base_url=SITE) as client:
        token = csrf_of(client.get("/").text)  # the session's own token: only the origin differs
        done = client.post(
            "/lanes/cc/pause", data={"csrf": token}, headers=headers, follow_redirects=False
        )
    assert done.status_code == (303 if accepted else 403), done.text
    assert lane_row(db, "cc")[0] is accepted


def test_every_answer_carries_the_security_headers(
    admin: TestClient, jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIRELESS_WEBHOOK_SECRET_GITEA", "s3cret")
    answers = [
        admin.get("/"),
        admin.get("/jobs"),
        admin.get(f"/jobs/{jobs.delivered}"),
        admin.get("/jobs/424242"),
        admin.get("/jobs?state=nonsense"),
        admin.get("/metrics"),
        admin.get("/static/style.css"),
        admin.get("/static/dashboard.js"),
        admin.get("/nowhere"),
        admin.get("/", headers={"Host": "rebind.attacker.example"}),
        admin.post("/lanes/cc/pause", data={}, headers={"Origin": "http://evil.example"}),
        admin.post("/hooks/gitea", content=b"{}"),
    ]
    for answer in answers:
        where = f"{answer.request.method} {answer.request.url} -> {answer.status_code}"
        policy = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy, where
        assert "script-src 'self'" in policy, where
        assert "unsafe-inline" not in policy, where
        assert answer.headers["x-frame-options"] == "DENY", where
        assert answer.headers["x-content-type-options"] == "nosniff", where
        assert answer.headers["referrer-policy"] == "same-origin", where


def test_no_page_holds_an_inline_script_or_style(admin: TestClient, jobs: Jobs) -> None:
    for path in (
        "/",
        "/jobs",
        f"/jobs/{jobs.delivered}",
        "/jobs/424242",
        "/activity",
        "/failures",
        "/workers",
    ):
        page = admin.get(path).text
        assert not re.search(r"<script(?![^>]*\bsrc=)", page), path
        assert "<style" not in page, path
        assert not re.search(r"\sstyle=", page), path
        assert not re.search(r"\son[a-z]+=", page), path  # no event handler attributes
    assert '<script src="/static/dashboard.js" defer></script>' in admin.get("/").text


def test_with_a_token_every_page_asks_for_the_login(db: Database, jobs: Jobs) -> None:
    app = create_app(db.conninfo, allowed_hosts("127.0.0.1"), TOKEN)
    with TestClient(app, base_url=SITE, headers={"Origin": SITE}) as client:
        for path in ("/", "/jobs", "/metrics", "/static/style.css"):
            asked = client.get(path)
            assert asked.status_code == 401, path
            assert asked.headers["www-authenticate"].startswith('Basic realm="tireless"')
            assert "csrf" not in asked.text
        wrong = base64.b64encode(b"admin:not-the-token").decode()
        assert client.get("/", headers={"Authorization": f"Basic {wrong}"}).status_code == 401
        assert client.get("/", headers={"Authorization": "Basic %%%"}).status_code == 401
        assert client.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401
        basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
        page = client.get("/", headers={"Authorization": f"Basic {basic}"})
        assert page.status_code == 200
        token = csrf_of(page.text)
        refused = client.post("/lanes/cc/pause", data={"csrf": token})
        assert refused.status_code == 401
        assert lane_row(db, "cc")[0] is False
        done = client.post(
            "/lanes/cc/pause",
            data={"csrf": token},
            headers={"Authorization": f"Basic {basic}"},
            follow_redirects=False,
        )
        assert done.status_code == 303
        assert lane_row(db, "cc")[0] is True
        scrape = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert scrape.status_code == 200
        # A webhook is signed by its forge instead: no login asked (this 401 is the hook's own).
        hook = client.post("/hooks/gitea", content=b"{}")
        assert "www-authenticate" not in hook.headers
        assert "error" in hook.json()


def test_the_token_comes_from_the_environment_or_a_file(tmp_path: Path) -> None:
    assert token_from_environment({}) is None
    assert token_from_environment({"TIRELESS_WEB_TOKEN": TOKEN}) == TOKEN
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    assert token_from_environment({"TIRELESS_WEB_TOKEN_FILE": str(path)}) == TOKEN
    for environ, says in [
        ({"TIRELESS_WEB_TOKEN": TOKEN, "TIRELESS_WEB_TOKEN_FILE": str(path)}, "not both"),
        ({"TIRELESS_WEB_TOKEN": "short"}, "shorter than 16"),
        ({"TIRELESS_WEB_TOKEN_FILE": str(tmp_path / "missing")}, "missing"),
    ]:
        with pytest.raises(SettingRefused, match=says):
            token_from_environment(environ)


def test_a_body_that_never_ends_is_cut_off(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that sends its body slower than the deadline (here: never) gets 408 and the
    connection closes, with nothing done."""
    monkeypatch.setattr(guard, "BODY_TIMEOUT", 0.5)

    async def never() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    answers = asgi_post(create_app(db.conninfo), "/lanes/cc/pause", [], never)
    assert answers[0]["status"] == 408
    assert (b"connection", b"close") in answers[0]["headers"]


def nested_signed(depth: int, secret: str) -> tuple[bytes, dict[str, str]]:
    body = b'{"repository": ' + b"[" * depth + b"]" * depth + b"}"
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {"X-Gitea-Signature": signature, "X-Gitea-Delivery": str(uuid.uuid4())}


def test_a_bad_query_path_or_body_is_a_400_not_a_500(
    admin: TestClient, jobs: Jobs, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client raises the server's exception, so a 500 fails here with its traceback."""
    for path, status in (
        ("/jobs?before=9999999999999999999", 400),
        ("/jobs?after=99999999999999999999999", 400),
        ("/jobs?before=%D9%A1%D9%A2", 400),  # Arabic-Indic digits: isdigit() but not a job id
        ("/jobs?lane=%00", 400),
        ("/jobs?lane=cc%00x", 400),
        ("/jobs?repo=a%00/b", 400),
        ("/jobs?forge=%ff%fe", 200),  # not UTF-8: read with replacement characters, matches none
        ("/jobs%00", 400),
    ):
        answer = admin.get(path)
        assert answer.status_code == status, (path, answer.status_code)
        assert "Traceback" not in answer.text
    assert admin.get("/jobs/99999999999999999999").status_code == 404
    token = csrf_of(admin.get("/").text)
    big_cancel = admin.post("/jobs/99999999999999999999/cancel", data={"csrf": token})
    assert big_cancel.status_code == 404
    assert admin.post("/lanes/%00/pause", data={"csrf": token}).status_code == 400
    form = b"csrf=" + token.encode() + b"&next=%00%ff"
    nul_next = admin.post("/lanes/cc/pause", content=form, follow_redirects=False)
    assert (nul_next.status_code, nul_next.headers["location"]) == (303, "/")
    bad_length = admin.post("/lanes/cc/pause", headers={"Content-Length": "12x"}, content=b"")
    assert bad_length.status_code == 400
    monkeypatch.setenv("TIRELESS_WEBHOOK_SECRET_GITEA", "s3cret")
    body, headers = nested_signed(100_000, "s3cret")
    nested = admin.post("/hooks/gitea", content=body, headers=headers)
    assert nested.status_code == 400
    assert "Traceback" not in nested.text
