"""A GitHub forge registered with a GitHub App (`forge add --app-id --app-key-file`) against the
stand-in's App (dev.standin.apps): tokens minted per installation and renewed as they expire
while polls, mirror writes and a `--deliver` push go on; the App's JWTs as GitHub checks them; an
owner without an installation; the key and the tokens kept out of the store, the logs and the
agent's reach; the bot's commit and pull request."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from dev.standin import APP_LOGIN, StandinForge
from dev.standin.apps import BOT_USER_ID, StandinApp
from tests.conftest import Database
from tests.helpers import rows, tireless_cli
from tests.schema_dump import pg_dump
from tireless import JobStore
from tireless.errors import InvalidArgument, UnknownRepository
from tireless.forge import client_for
from tireless.forge.app_auth import GitHubApp, NoInstallation, app_of, use_apps
from tireless.forge.client import AuthRefused
from tireless.forge.http import forget_refusals
from tireless.forge.poll import Report, client_factory, poll_round

FORGE = "gh"
OWNERS = ("acme", "beta")
UNINSTALLED = "nobody"
IMPLEMENT = ["tireless", "tireless/implement"]
PLAN = ["tireless", "tireless/plan"]
LIFETIME = 2.0
"""Seconds an installation token lives on the stand-in here: three lifetimes in a test."""


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,  # as GitHub hands it out: PKCS#1
        serialization.NoEncryption(),
    )


KEY = new_key()


@pytest.fixture
def app_forge(
    db: Database, store: JobStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[StandinForge, StandinApp, Path]]:
    """The stand-in GitHub with its App installed on OWNERS, registered by `tireless forge add
    --app-id --app-key-file`, a repository of each owner (and of UNINSTALLED) tracked."""
    forget_refusals()
    key_file = tmp_path / "app.pem"
    key_file.write_bytes(pem(KEY))
    key_file.chmod(0o600)
    app = StandinApp(KEY.public_key(), lifetime=LIFETIME)
    with StandinForge("github", installation=True) as forge:
        forge.app = app
        for owner in OWNERS:
            app.install(owner)
        added = tireless_cli(
            db.url, "forge", "add", FORGE, "--kind", "github", "--url", forge.url,
            "--app-id", str(app.app_id), "--app-key-file", str(key_file),
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        assert f"GitHub App {app.app_id}" in added.stdout
        for owner in (*OWNERS, UNINSTALLED):
            forge.create_repo(owner, "widgets")
            store.track_repo(FORGE, owner, "widgets")
        yield forge, app, key_file
    use_apps([], [])


def poll(store: JobStore) -> list[Report]:
    return poll_round(store, "poller-1", clients=client_factory(2.0, store))


def test_tokens_expire_while_polls_mirror_writes_and_a_push_go_on_each_minted_once(
    db: Database,
    store: JobStore,
    app_forge: tuple[StandinForge, StandinApp, Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    forge, app, key_file = app_forge
    caplog.set_level(logging.DEBUG)
    forge.seed_git("acme", "widgets", {"README.md": "widgets\n"})
    number = forge.create_issue("acme", "widgets", "Paint it", IMPLEMENT)
    started = time.monotonic()
    rounds: list[list[Report]] = []
    pushed: subprocess.CompletedProcess[str] | None = None
    while time.monotonic() - started < 3 * LIFETIME or pushed is None:
        for owner in OWNERS:  # something to read, and a state label to write, every round
            forge.create_issue(owner, "widgets", f"plan {len(rounds)}", PLAN)
        rounds.append(poll(store))
        if pushed is None and time.monotonic() - started > LIFETIME:
            # The agent leaves what it can see in the change it delivers: read from the forge.
            script = (
                "env > seen.txt; cat .git/config >> seen.txt 2>/dev/null; ls -la >> seen.txt;"
                f" cat {key_file} >> seen.txt 2>/dev/null; true"
            )
            app.refuse_push_once = True  # its token expired between the clone and the push
            pushed = tireless_cli(
                db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
                "--state-dir", str(tmp_path / "state"), "--", "sh", "-c", script,
            )  # fmt: skip
            assert pushed.returncode == 0, pushed.stderr
    rounds.append(poll(store))  # the pull request the delivery asked for
    elapsed = time.monotonic() - started

    # No failure across three lifetimes but the owner without an installation, said once.
    for reports in rounds:
        for report in reports:
            assert report.error is None or report.owner == UNINSTALLED, report.error
            assert report.mirror_error is None, report.mirror_error
    missing = [r for reports in rounds for r in reports if r.owner == UNINSTALLED]
    assert len(missing) == 1
    assert UNINSTALLED in (missing[0].error or "")
    warned = [r for r in caplog.records if "not installed on" in r.getMessage()]
    assert len(warned) == 1
    assert UNINSTALLED in warned[0].getMessage()
    # Every JWT passed; a token that expired on its way (a loaded machine: the margin is a
    # quarter of 2 s here) was refused "Bad credentials", minted anew and the request sent again.
    assert set(app.refused) <= {"Bad credentials"}

    # Each owner its own installation and tokens; minted once a lifetime, not per request.
    product = app_of(FORGE)
    assert product is not None
    ours = {app.installations[owner][0] for owner in OWNERS}
    assert set(product.mints) == ours
    assert {t.owner for t in app.tokens.values()} == set(OWNERS)
    for installation in ours:
        minted = product.mints[installation]
        # At least one renewal (the rounds stop while the runner's process works), and never
        # more than one token per three quarters of a lifetime: not one per request.
        assert 2 <= minted <= elapsed / (0.75 * LIFETIME) + 1, (minted, elapsed)
    assert not app.refuse_push_once, "the push was refused once, minted anew and pushed"
    acme = app.installations["acme"][0]
    assert app.mints[acme] > product.mints[acme], "the runner minted its own"

    # The bot's commit and pull request.
    branch = f"tireless/{number}"
    host = "127.0.0.1"
    commit = forge.commits_of("acme", "widgets", branch)[0]
    shown = ["log", "-1", "--format=%an <%ae> %cn <%ce>", commit.sha]
    bot = f"{APP_LOGIN} <{BOT_USER_ID}+{APP_LOGIN}@users.noreply.{host}>"
    assert forge.git._run(forge.git.path("acme", "widgets"), *shown).strip() == f"{bot} {bot}"
    (pull,) = forge.pulls_of("acme", "widgets")
    assert (pull.head, pull.author) == (branch, APP_LOGIN)

    # The key and the tokens: in no table, no log, nothing the agent saw.
    key_text = key_file.read_text()
    key_body = "".join(key_text.splitlines()[1:-1])
    secrets = [*app.tokens, key_body[:64], key_body[-64:]]
    dump = subprocess.run(
        [str(pg_dump()), "--data-only", f"--dbname={db.conninfo}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    seen = forge.file_at("acme", "widgets", branch, "seen.txt") or ""
    assert "TIRELESS_JOB_ID" in seen
    logs = caplog.text + (pushed.stderr if pushed else "")
    for secret in secrets:
        assert secret not in dump
        assert secret not in logs
        assert secret not in seen
    assert str(key_file) not in seen


def test_the_stand_in_refuses_a_jwt_as_github_does_the_product_s_pass_and_a_401_mints_once_more(
    app_forge: tuple[StandinForge, StandinApp, Path],
) -> None:
    forge, app, _ = app_forge
    now = int(time.time())

    def installation(token: str) -> tuple[int, str]:
        answer = httpx.get(
            f"{forge.url}/repos/acme/widgets/installation",
            headers={"Authorization": f"Bearer {token}"},
        )
        return answer.status_code, answer.json()["message"] if answer.status_code != 200 else ""

    claims = {"iat": now - 60, "exp": now + 540, "iss": str(app.app_id)}
    assert installation(jwt.encode(claims, KEY, algorithm="RS256"))[0] == 200
    wrong_key = jwt.encode(claims, new_key(), algorithm="RS256")
    assert installation(wrong_key) == (401, "A JSON web token could not be decoded")
    too_long = jwt.encode(claims | {"exp": now + 11 * 60}, KEY, algorithm="RS256")
    assert installation(too_long) == (
        401,
        "'Expiration time' claim ('exp') is too far in the future",
    )
    ahead = GitHubApp(
        forge.url, app.app_id, KEY, key_source="test", clock=lambda: time.time() + 120
    )
    with pytest.raises(AuthRefused, match="clock"):
        ahead.installation("acme", "widgets")
    ahead.close()
    assert app.refused[-1].startswith("'Issued at' claim ('iat')")
    ours = GitHubApp(forge.url, app.app_id, KEY, key_source="test")
    for _ in range(3):
        assert installation(ours.jwt())[0] == 200
    assert ours.installation("beta", "widgets").id == app.installations["beta"][0]
    # A token the forge no longer takes (revoked, or expired on its way): 401, one mint, the
    # request sent once more, and it succeeds.
    client = client_for("github", forge.url, None, app=ours)
    client.list_issues("beta", "widgets", since=None)
    for token, issued in list(app.tokens.items()):
        app.tokens[token] = replace(issued, expires_at=0.0)
    refused = len(app.refused)
    assert client.list_issues("beta", "widgets", since=None).issues == ()
    assert app.refused[refused:] == ["Bad credentials"]
    assert ours.mints == {app.installations["beta"][0]: 2}
    # Uninstalled since: the owner's repositories wait, said with the owner's name.
    del app.installations["beta"]
    for token, issued in list(app.tokens.items()):
        app.tokens[token] = replace(issued, expires_at=0.0)
    for _ in range(2):  # the mint refused, then the lookup of the owner
        with pytest.raises(NoInstallation, match="installed on beta"):
            client.list_issues("beta", "widgets", since=None)
    client.close()
    ours.close()


def test_the_registry_refuses_a_bad_app_naming_the_value_and_a_key_nowhere_stops_the_forge(
    store: JobStore, app_forge: tuple[StandinForge, StandinApp, Path], db: Database
) -> None:
    with pytest.raises(InvalidArgument, match="got 0"):
        store.set_forge_app(FORGE, 0)
    with pytest.raises(InvalidArgument, match=r"'relative/app\.pem'"):
        store.set_forge_app(FORGE, 7, "relative/app.pem")
    store.add_forge("tea", "gitea", "http://127.0.0.1:1")
    with pytest.raises(InvalidArgument, match="'tea' is a gitea forge"):
        store.set_forge_app("tea", 7)
    with pytest.raises(UnknownRepository, match="'nope'"):
        store.set_forge_app("nope", 7)
    (app,) = store.forge_apps()
    assert app.name == FORGE
    assert app.app_key_file is not None
    columns = rows(db, "SELECT app_id, app_key_file FROM tireless.forge WHERE name = 'tea'")
    assert columns == [(None, None)]
    # An App whose key is nowhere stops its forge, naming where to put the key.
    assert store.set_forge_app(FORGE, app.app_id, None)
    reports = poll(store)
    assert reports
    for report in reports:
        assert "TIRELESS_APP_KEY_GH_FILE" in (report.error or "")
    (trouble,) = rows(db, "SELECT last_error FROM tireless.forge WHERE name = 'gh'")
    assert "TIRELESS_APP_KEY_GH" in trouble[0]


def test_forge_check_names_the_app_each_installation_and_the_permissions_it_lacks_and_list_the_app(
    db: Database, app_forge: tuple[StandinForge, StandinApp, Path]
) -> None:
    _, app, key_file = app_forge
    app.install("beta", {"issues": "read", "metadata": "read"})
    checked = tireless_cli(db.url, "forge", "check", FORGE, "--json")
    assert checked.returncode == 1, checked.stderr
    found = {f["capability"]: f for f in json.loads(checked.stdout)}
    assert found["app"]["ok"]
    assert "tireless-app[bot]" in found["app"]["detail"]
    assert found["installation acme"]["ok"]
    assert found["permissions acme"]["ok"]
    assert not found["permissions beta"]["ok"]
    assert "issues: write" in found["permissions beta"]["fix"]
    assert "pull_requests: write" in found["permissions beta"]["fix"]
    assert "contents" not in found["permissions beta"]["fix"], "contents: write is --deliver's"
    assert not found["installation nobody"]["ok"]
    assert "install the App on nobody" in found["installation nobody"]["fix"]
    polled = tireless_cli(db.url, "poll", "--once")  # no TIRELESS_TOKEN_GH is asked for
    assert "not set" not in polled.stderr
    assert "not installed on nobody" in polled.stdout
    listed = tireless_cli(db.url, "forge", "list").stdout
    assert f"GitHub App {app.app_id}, key: TIRELESS_APP_KEY_GH_FILE or {key_file}" in listed
