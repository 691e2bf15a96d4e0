"""The Gitea and GitHub clients over real HTTP against the stand-in forge: what they read, how
they page, and how each kind of bad answer is refused as a whole (no database involved)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta

import pytest

from dev.standin import StandinForge
from tireless.forge import client_for, token_for, token_variable
from tireless.forge.client import (
    AuthRefused,
    BadResponse,
    ForgeClient,
    RateLimited,
    ReadFailed,
    Unavailable,
)

TOKEN = "tok-4f1c9a-secret"
FLAVOURS = ("gitea", "github")


@pytest.fixture(params=FLAVOURS)
def forge(request: pytest.FixtureRequest) -> Iterator[StandinForge]:
    with StandinForge(request.param, token=TOKEN, max_page_size=5) as standin:
        yield standin


def client(forge: StandinForge, token: str | None = TOKEN, timeout: float = 5.0) -> ForgeClient:
    return client_for(forge.flavour, forge.url, token, timeout=timeout)


def test_token_variable_names_follow_the_forge_name() -> None:
    assert token_variable("gitea") == "TIRELESS_TOKEN_GITEA"
    assert token_variable("code.acme-corp") == "TIRELESS_TOKEN_CODE_ACME_CORP"


def test_token_comes_only_from_its_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIRELESS_TOKEN_MYFORGE", raising=False)
    assert token_for("myforge") is None
    monkeypatch.setenv("TIRELESS_TOKEN_MYFORGE", "abc")
    assert token_for("myforge") == "abc"


def test_listing_follows_links_across_the_clamped_page_size(forge: StandinForge) -> None:
    # 12 issues, pages clamped to 5 whatever the client asks for: 3 pages, every issue read.
    for n in range(12):
        forge.create_issue("acme", "widgets", f"issue {n}", ["tireless", "tireless/plan"])
    with closing(client(forge)) as reader:
        listing = reader.list_issues("acme", "widgets", since=None)
    assert listing.pages == 3
    assert sorted(i.number for i in listing.issues) == list(range(1, 13))
    first = next(i for i in listing.issues if i.number == 1)
    assert first.labels == ("tireless", "tireless/plan")
    assert first.state == "open"
    assert first.url is not None
    assert first.url.endswith("/acme/widgets/issues/1")
    assert first.updated_at.tzinfo is not None


def test_pull_requests_are_not_issues(forge: StandinForge) -> None:
    forge.create_issue("acme", "widgets", "an issue", ["tireless"])
    forge.create_issue("acme", "widgets", "a pull request", ["tireless"], pull_request=True)
    with closing(client(forge)) as reader:
        listing = reader.list_issues("acme", "widgets", since=None)
    assert [i.number for i in listing.issues] == [1]


def test_since_lists_only_issues_updated_at_or_after_it(forge: StandinForge) -> None:
    old = forge.create_issue("acme", "widgets", "old", [])
    with closing(client(forge)) as reader:
        updated = reader.list_issues("acme", "widgets", since=None).issues[0].updated_at
        later = updated + timedelta(seconds=1)
        forge.close_issue("acme", "widgets", old)  # moves updated_at at least a second on
        changed = reader.list_issues("acme", "widgets", since=later)
        inclusive = reader.list_issues("acme", "widgets", since=updated)
    assert [(i.number, i.state) for i in changed.issues] == [(old, "closed")]
    assert [i.number for i in inclusive.issues] == [old]


def test_github_answers_an_unchanged_listing_with_304() -> None:
    with StandinForge("github", token=TOKEN) as forge:
        forge.create_issue("acme", "widgets", "one", ["tireless"])
        with closing(client(forge)) as reader:
            first = reader.list_issues("acme", "widgets", since=None)
            spent = forge.rate_remaining
            again = reader.list_issues("acme", "widgets", since=None, etag=first.etag)
            assert first.etag is not None
            assert again.not_modified
            assert again.issues == ()
            assert again.etag == first.etag
            assert forge.rate_remaining == spent  # a 304 costs no rate limit
            forge.set_labels("acme", "widgets", 1, [])
            changed = reader.list_issues("acme", "widgets", since=None, etag=first.etag)
    assert not changed.not_modified
    assert changed.issues[0].labels == ()


def test_get_issue_reads_one_and_says_none_when_it_is_gone(forge: StandinForge) -> None:
    number = forge.create_issue("acme", "widgets", "doomed", ["tireless"])
    with closing(client(forge)) as reader:
        assert reader.get_issue("acme", "widgets", number) is not None
        forge.delete_issue("acme", "widgets", number)
        assert reader.get_issue("acme", "widgets", number) is None


BAD_ANSWERS = [
    ("html", "expected JSON, got text/html"),
    ("invalid-json", "invalid JSON"),
    ("not-a-list", "expected a JSON array"),
    ("no-number", "no positive integer number"),
    ("bad-number", "no positive integer number: -1"),
]
ODD_ISSUES = [
    ("labels-not-objects", "labels are not a list of objects with a name"),
    ("nul", "NUL or an unpaired surrogate"),
    ("surrogate", "NUL or an unpaired surrogate"),
]


@pytest.mark.parametrize(("fault", "message"), BAD_ANSWERS)
def test_a_bad_answer_fails_the_whole_listing(
    forge: StandinForge, fault: str, message: str
) -> None:
    for n in range(7):
        forge.create_issue("acme", "widgets", f"issue {n}", ["tireless"])
    forge.fault(fault)
    with closing(client(forge)) as reader, pytest.raises(BadResponse, match=message) as error:
        reader.list_issues("acme", "widgets", since=None)
    assert TOKEN not in str(error.value)


@pytest.mark.parametrize(("fault", "message"), ODD_ISSUES)
def test_an_odd_issue_is_left_out_with_its_reason_and_the_rest_is_listed(
    forge: StandinForge, fault: str, message: str
) -> None:
    for n in range(7):
        forge.create_issue("acme", "widgets", f"issue {n}", ["tireless"])
    forge.fault(fault)
    with closing(client(forge)) as reader:
        listing = reader.list_issues("acme", "widgets", since=None)
    ((number, problem),) = listing.odd
    assert message in problem
    assert sorted([*(issue.number for issue in listing.issues), number]) == list(range(1, 8))


def test_gitea_pages_that_disagree_with_x_total_count_are_refused() -> None:
    with StandinForge("gitea", token=TOKEN, max_page_size=5) as forge:
        for n in range(7):
            forge.create_issue("acme", "widgets", f"issue {n}", [])
        forge.fault("lying-total")
        with closing(client(forge)) as reader, pytest.raises(BadResponse, match="X-Total-Count"):
            reader.list_issues("acme", "widgets", since=None)


def test_a_page_past_the_size_limit_is_read_smaller_and_an_issue_past_it_skipped(
    forge: StandinForge,
) -> None:
    for n in range(5):
        forge.create_issue("acme", "widgets", f"issue {n}", [])
    forge.set_issue_body("acme", "widgets", 3, "x" * 6000)
    reader = client_for(forge.flavour, forge.url, TOKEN, max_bytes=5000)
    with closing(reader):
        listing = reader.list_issues("acme", "widgets", since=None)
        assert sorted(i.number for i in listing.issues) == [1, 2, 4, 5]
        (skipped,) = listing.skipped
        assert "past the 5000" in skipped
        with pytest.raises(BadResponse, match="limit"):  # alone, it is refused
            reader.get_issue("acme", "widgets", 3)


@pytest.mark.parametrize("fault", ["429-seconds", "429-date"])
def test_429_with_retry_after_stops_the_forge_until_then(forge: StandinForge, fault: str) -> None:
    forge.create_repo("acme", "widgets")
    forge.fault(fault, seconds=120)
    with closing(client(forge)) as reader, pytest.raises(RateLimited) as stopped:
        reader.list_issues("acme", "widgets", since=None)
    assert stopped.value.retry_after is not None
    assert timedelta(seconds=100) < stopped.value.retry_after <= timedelta(seconds=121)
    assert stopped.value.until > datetime.now(UTC) + timedelta(seconds=100)


def test_github_primary_rate_limit_reports_its_reset() -> None:
    with StandinForge("github", token=TOKEN, rate_limit=2) as forge:
        forge.create_issue("acme", "widgets", "one", [])
        with closing(client(forge)) as reader:
            assert reader.list_issues("acme", "widgets", since=None).limited_until is None
            spent = reader.list_issues("acme", "widgets", since=None, state="open")
            assert spent.limited_until == datetime.fromtimestamp(forge.rate_reset, UTC)
            with pytest.raises(RateLimited) as stopped:
                reader.list_issues("acme", "widgets", since=None)
    assert stopped.value.until == datetime.fromtimestamp(forge.rate_reset, UTC)


@pytest.mark.parametrize("fault", ["401", "403"])
def test_refused_credentials_stop_the_forge_and_say_so(forge: StandinForge, fault: str) -> None:
    forge.create_repo("acme", "widgets")
    forge.fault(fault)
    with closing(client(forge)) as reader, pytest.raises(AuthRefused) as refused:
        reader.list_issues("acme", "widgets", since=None)
    assert "refused our credentials" in str(refused.value)
    assert TOKEN not in str(refused.value)


def test_a_wrong_token_is_refused_and_never_quoted(forge: StandinForge) -> None:
    forge.create_repo("acme", "widgets")
    reader = client(forge, token="wrong-" + TOKEN)
    with closing(reader), pytest.raises(AuthRefused) as refused:
        reader.list_issues("acme", "widgets", since=None)
    assert TOKEN not in str(refused.value)
    assert [r.authorized for r in forge.requests] == [False]


def test_5xx_is_retried_quickly_then_reported_unavailable(forge: StandinForge) -> None:
    forge.create_issue("acme", "widgets", "one", [])
    forge.fault("500", times=2)
    with closing(client(forge)) as reader:
        assert len(reader.list_issues("acme", "widgets", since=None).issues) == 1
        forge.fault("500", times=None)
        with pytest.raises(Unavailable, match="HTTP 500"):
            reader.list_issues("acme", "widgets", since=None)


def test_a_slow_answer_times_out(forge: StandinForge) -> None:
    forge.create_repo("acme", "widgets")
    forge.fault("slow", times=None, seconds=1.0)
    with (
        closing(client(forge, timeout=0.3)) as reader,
        pytest.raises(Unavailable, match="timed out"),
    ):
        reader.list_issues("acme", "widgets", since=None)


def test_every_failure_is_a_read_failure() -> None:
    for kind in (BadResponse, Unavailable, RateLimited, AuthRefused):
        assert issubclass(kind, ReadFailed)
