"""The poller against what real forges do that a well-behaved forge never shows (issue 21): moved
issues and renamed repositories, Link headers from another ROOT_URL, GitHub's secondary rate
limits, slow and drip-fed answers, a poller killed mid-read, repository names in another case,
bodies past the size limit. Each through the real `tireless` command against the stand-in forge
on 127.0.0.1, unless it is about one HTTP exchange."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import cli_json, rows, wait_until
from tests.helpers import tireless_cli as cli
from tests.support.real_forges import TOKEN, registered, wait_of
from tireless.forge.client import RateLimited
from tireless.forge.http import SECONDARY_LIMIT_PAUSE, Http

PLAN = ["tireless", "tireless/plan"]
LEASE = ("--lease", "3s")


def jobs(db: Database, forge: str, repo: str = "widgets") -> list[tuple[int, str, str | None]]:
    return rows(
        db,
        "SELECT number, state::text, note FROM tireless.job"
        " WHERE forge = %(f)s AND repo = %(r)s ORDER BY id",
        {"f": forge, "r": repo},
    )


def repos(db: Database) -> dict[str, dict[str, object]]:
    return {f"{r['forge']}/{r['repo']}": r for r in cli_json(db.url, "repos")}


def full_listing_next(db: Database, cursor_ahead: bool = False) -> None:
    """The next read lists in full; `cursor_ahead`: and its incremental listing shows nothing,
    so a live job's issue is only seen when it is fetched on its own."""
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET reads_since_full = 9")
        if cursor_ahead:
            conn.execute("UPDATE tireless.repo_poll SET cursor = now() + interval '1 hour'")


@pytest.fixture
def github() -> Iterator[StandinForge]:
    with StandinForge("github", token=TOKEN) as forge:
        yield forge


@pytest.fixture
def gitea() -> Iterator[StandinForge]:
    with StandinForge("gitea", token=TOKEN) as forge:
        yield forge


def test_a_transferred_github_issue_ends_its_job_and_the_repository_polls_on(
    db: Database, github: StandinForge
) -> None:
    env = registered(db, github, "gh", "widgets")
    moving = github.create_issue("acme", "widgets", "belongs elsewhere", PLAN)
    github.create_issue("acme", "widgets", "stays", PLAN)
    assert cli(db.url, "poll", "--once", **env).returncode == 0
    github.create_repo("other", "place")
    new_number = github.transfer_issue("acme", "widgets", moving, "other", "place")
    full_listing_next(db)
    result = cli(db.url, "poll", "--once", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert jobs(db, "gh") == [
        (moving, "cancelled", f"issue moved to other/place#{new_number}"),
        (2, "pending", None),
    ]
    assert repos(db)["gh/widgets"]["last_error"] is None
    assert cli(db.url, "poll", "--once", **env).returncode == 0  # and every poll after


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_a_renamed_repository_is_followed_and_repos_shows_its_new_name(
    db: Database, flavour: str
) -> None:
    with StandinForge(flavour, token=TOKEN) as forge:  # type: ignore[arg-type]
        env = registered(db, forge, "forge", "widgets")
        number = forge.create_issue("acme", "widgets", "work", PLAN)
        assert cli(db.url, "poll", "--once", **env).returncode == 0
        forge.rename_repo("acme", "widgets", "acme-corp", "gizmos")
        redirects = len(forge.requests)
        forge.create_issue("acme-corp", "gizmos", "more work", PLAN)
        forge.close_issue("acme-corp", "gizmos", number)
        full_listing_next(db, cursor_ahead=True)  # the close is seen only by fetching the issue
        result = cli(db.url, "poll", "--once", **env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "moved to acme-corp/gizmos" in result.stdout
        followed = [r.path for r in forge.requests[redirects:] if r.path.endswith("/issues")]
        # GitHub: 301 to /repositories/{id}/issues; Gitea: 307 to /repos/acme-corp/gizmos/issues
        assert any("/acme/widgets/" not in path for path in followed)
    # The issue in the renamed repository is the same issue: closed, not moved away.
    assert jobs(db, "forge") == [(1, "cancelled", "issue closed"), (2, "pending", None)]
    shown = repos(db)["forge/widgets"]
    assert shown["moved_to"] == "acme-corp/gizmos"
    assert shown["last_error"] is None
    assert "forge/acme/widgets (moved to acme-corp/gizmos)" in cli(db.url, "repos").stdout


def test_gitea_links_built_from_another_root_url_are_paged_on_the_registered_url(
    db: Database,
) -> None:
    with StandinForge("gitea", token=TOKEN, root_url="http://localhost:3000") as forge:
        env = registered(db, forge, "gitea", "widgets", "gadgets")
        for n in range(120):
            forge.create_issue("acme", "widgets", f"issue {n}", PLAN)
            forge.create_issue("acme", "gadgets", f"issue {n}", PLAN)
        result = cli(db.url, "poll", "--once", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "120 new jobs, 120 issues read in 3 pages" in result.stdout
    assert result.stderr.count("sends Link headers for http://localhost:3000") == 1
    assert len(jobs(db, "gitea", "gadgets")) == 120


def test_github_secondary_rate_limits_stop_reads_and_writes_for_a_minute_then_longer(
    github: StandinForge,
) -> None:
    github.create_repo("acme", "widgets")
    http = Http(github.url, {"Authorization": f"Bearer {TOKEN}"}, quick_retries=0)
    url = http.url("repos/acme/widgets/issues")
    waits: list[timedelta] = []
    for _ in range(2):  # a 403 with no retry-after and x-ratelimit-remaining above 0
        github.fault("secondary-limit")
        with pytest.raises(RateLimited) as limited:
            http.get(url)
        waits.append(wait_of(limited.value))
    assert SECONDARY_LIMIT_PAUSE - timedelta(seconds=5) <= waits[0] <= SECONDARY_LIMIT_PAUSE
    assert 2 * SECONDARY_LIMIT_PAUSE - timedelta(seconds=5) <= waits[1]  # exponentially longer
    github.fault("secondary-limit", writes_only=True)
    with pytest.raises(RateLimited):  # a write the same: the mirror stops, not just this write
        http.send("POST", http.url("repos/acme/widgets/labels"), {"name": "x", "color": "000000"})
    assert http.get(url).status == 200  # a good answer forgets the strikes
    github.fault("secondary-limit")
    with pytest.raises(RateLimited) as limited:
        http.get(url)
    assert wait_of(limited.value) <= SECONDARY_LIMIT_PAUSE
    http.close()


def test_a_secondary_rate_limit_stops_the_forge_and_blames_no_token(
    db: Database, github: StandinForge
) -> None:
    env = registered(db, github, "gh", "widgets", "gadgets")
    github.fault("secondary-limit", repo=("acme", "widgets"))
    result = cli(db.url, "poll", "--once", "--json", **env)
    assert result.returncode == 1
    (forge,) = rows(db, "SELECT limited_until - now(), last_error FROM tireless.forge")
    assert timedelta(seconds=50) < forge[0] <= timedelta(minutes=1)
    assert "rate limited" in forge[1]
    assert "credentials" not in forge[1]


def test_a_drip_fed_and_a_late_forge_hold_neither_the_round_nor_the_other_forge(
    db: Database, gitea: StandinForge, github: StandinForge
) -> None:
    slow = registered(db, gitea, "slow", "dripping", "late")
    fast = registered(db, github, "fast", "widgets")
    gitea.create_issue("acme", "dripping", "a body a byte a second", PLAN)
    gitea.fault("drip", times=None, repo=("acme", "dripping"), seconds=1.0)
    gitea.fault("slow", times=None, repo=("acme", "late"), seconds=100.0)
    github.create_issue("acme", "widgets", "read at once", PLAN)
    started = datetime.now(UTC)
    result = cli(db.url, "poll", "--once", "--timeout", "2s", "--json", **slow, **fast)
    assert datetime.now(UTC) - started < timedelta(seconds=60)  # a hang guard, not a speed bound
    assert result.returncode == 1
    shown = repos(db)
    assert "timed out" in str(shown["slow/dripping"]["last_error"])
    assert "timed out" in str(shown["slow/late"]["last_error"])
    assert shown["fast/widgets"]["last_error"] is None
    assert jobs(db, "fast") == [(1, "pending", None)]


def test_a_killed_poller_frees_its_repositories_within_its_lease(
    db: Database, gitea: StandinForge
) -> None:
    env = registered(db, gitea, "gitea", "widgets")
    gitea.create_issue("acme", "widgets", "work", PLAN)
    gitea.hold()  # the poller's first request waits: it is killed mid-read
    poller = subprocess.Popen(
        [sys.executable, "-m", "tireless", "poll", "--once", "--poller", "doomed", *LEASE],
        env=os.environ | env | {"DATABASE_URL": db.url},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert gitea.wait_for_requests(1, timeout=60)

        def lease_end() -> datetime:
            (end,) = rows(db, "SELECT poll_lease_until FROM tireless.repo_poll")[0]
            assert isinstance(end, datetime)
            return end

        first = lease_end()
        wait_until(lambda: lease_end() > first, "the living poller renews its lease")
        poller.send_signal(signal.SIGKILL)
        poller.wait(timeout=30)
        (left,) = rows(db, "SELECT poll_lease_until - now() FROM tireless.repo_poll")[0]
        assert left <= timedelta(seconds=3)  # not the five minutes a lease once was
        wait_until(
            lambda: rows(db, "SELECT poll_lease_until < now() FROM tireless.repo_poll")[0][0],
            "the dead poller's lease lapses",
        )
    finally:
        poller.kill()
        gitea.open_gate()
    result = cli(db.url, "poll", "--once", "--poller", "heir", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert jobs(db, "gitea") == [(1, "pending", None)]


def test_track_matches_repository_names_without_case(db: Database) -> None:
    cli_json(db.url, "forge", "add", "gh", "--kind", "github", "--url", "https://api.github.com")
    assert cli_json(db.url, "track", "gh", "codertocat", "hello-world")["changed"] is True
    again = cli_json(db.url, "track", "gh", "Codertocat", "Hello-World")
    assert again == {"forge": "gh", "owner": "codertocat", "repo": "hello-world", "changed": False}
    said = cli(db.url, "track", "gh", "Codertocat", "Hello-World").stdout.strip()
    assert said == "gh/codertocat/hello-world was already tracked", "the key, not what was typed"
    assert [(r["owner"], r["repo"]) for r in cli_json(db.url, "repos")] == [
        ("codertocat", "hello-world")
    ]


def test_a_page_too_large_is_read_in_smaller_pages(db: Database, github: StandinForge) -> None:
    env = registered(db, github, "gh", "widgets")
    for n in range(100):  # 100 bodies of 200 KiB: a page of 100 is past the 16 MiB limit
        number = github.create_issue("acme", "widgets", f"long {n}", PLAN)
        github.set_issue_body("acme", "widgets", number, "x" * 200 * 1024)
    result = cli(db.url, "poll", "--once", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(jobs(db, "gh")) == 100
    sizes = {r.query.get("per_page") for r in github.listing_requests("acme", "widgets")}
    assert sizes == {"100", "10"}
    assert repos(db)["gh/widgets"]["last_warning"] is None


def test_an_issue_too_large_alone_is_skipped_and_said_never_the_repository(
    db: Database, gitea: StandinForge
) -> None:
    env = registered(db, gitea, "gitea", "widgets")
    for n in range(60):
        gitea.create_issue("acme", "widgets", f"issue {n}", PLAN)
    gitea.set_issue_body("acme", "widgets", 17, "x" * (17 * 1024 * 1024))  # 17 MiB
    result = cli(db.url, "poll", "--once", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning: item" in result.stdout
    assert sorted(n for n, _, _ in jobs(db, "gitea")) == [n for n in range(1, 61) if n != 17]
    shown = repos(db)["gitea/widgets"]
    assert shown["last_error"] is None
    assert "skipped" in str(shown["last_warning"])
    assert "item 44 of the listing skipped" in cli(db.url, "repos").stdout
