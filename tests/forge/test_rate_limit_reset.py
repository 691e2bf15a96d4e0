"""GitHub's primary rate limit spent (403, x-ratelimit-remaining: 0) with an x-ratelimit-reset of
no use: missing, empty, garbled, past, or further away than an hour. It is still a rate limit,
never refused credentials: the forge waits as for a secondary limit (a minute, doubled each time
in a row), or until the reset, an hour and five minutes at most. Through the real `tireless poll`
and the real client against the stand-in forge on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from dev.standin import PRIMARY_LIMIT_FAULTS, StandinForge
from tests.conftest import Database
from tests.helpers import rows
from tests.helpers import tireless_cli as cli
from tests.support.real_forges import TOKEN, registered, wait_of
from tireless.forge.client import RateLimited
from tireless.forge.http import (
    PRIMARY_RESET_MAX,
    RETRY_AFTER_MAX,
    SECONDARY_LIMIT_PAUSE,
    Http,
    retry_after,
)

SLACK = timedelta(seconds=15)  # the time a poll takes, from its answer to the query here


@pytest.fixture
def github() -> Iterator[StandinForge]:
    with StandinForge("github", token=TOKEN) as forge:
        yield forge


@pytest.mark.parametrize("fault", PRIMARY_LIMIT_FAULTS)
def test_a_spent_primary_limit_without_a_usable_reset_is_a_bounded_rate_limit(
    db: Database, github: StandinForge, fault: str
) -> None:
    env = registered(db, github, "gh", "widgets")
    github.fault(fault, times=None)
    result = cli(db.url, "poll", "--once", **env)
    assert result.returncode == 1, result.stdout + result.stderr
    ((wait, last_error),) = rows(db, "SELECT limited_until - now(), last_error FROM tireless.forge")
    assert "rate limited" in last_error
    assert "credentials" not in last_error
    # A day away is a clock-skewed server: capped. Every other reset is of no use: a minute.
    expected = PRIMARY_RESET_MAX if fault == "primary-limit-far-reset" else SECONDARY_LIMIT_PAUSE
    assert expected - SLACK < wait <= expected


def test_a_primary_limit_without_a_reset_waits_longer_each_time_in_a_row(
    github: StandinForge,
) -> None:
    github.create_repo("acme", "widgets")
    http = Http(github.url, {"Authorization": f"Bearer {TOKEN}"}, quick_retries=0)
    url = http.url("repos/acme/widgets/issues")
    waits: list[timedelta] = []
    for fault in ("primary-limit-no-reset", "primary-limit-garbled-reset"):
        github.fault(fault)
        with pytest.raises(RateLimited) as limited:
            http.get(url)
        waits.append(wait_of(limited.value))
    http.close()
    assert SECONDARY_LIMIT_PAUSE - SLACK < waits[0] <= SECONDARY_LIMIT_PAUSE
    assert 2 * SECONDARY_LIMIT_PAUSE - SLACK < waits[1] <= 2 * SECONDARY_LIMIT_PAUSE


@pytest.mark.parametrize("value", ["100000000000", "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_a_wild_retry_after_is_waited_a_day_at_most(value: str) -> None:
    waited = retry_after(httpx.Headers({"retry-after": value}))
    assert waited == RETRY_AFTER_MAX
