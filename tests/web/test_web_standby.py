"""Reads that do not write: the dashboard, `/metrics`, `tireless status` and `tireless jobs`
answer from a hot standby, and show what the primary holds although nothing was rolled up there
since (the roll-up is the sweeper's and the poller's, on the primary)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.helpers import cli_json, tireless_cli
from tests.standby import Replicated, hot_standby  # noqa: F401 (the fixture)
from tests.support.web import Jobs, browser, populate, scrape, value
from tireless import JobStore
from tireless.web.app import create_app

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster

FINISHED = (
    "SELECT lane, state::text, count(*) FROM tireless.job"
    " WHERE state IN ('delivered', 'failed', 'cancelled') GROUP BY lane, state"
)


@pytest.fixture(scope="module")
def jobs(hot_standby: Replicated) -> Jobs:  # noqa: F811 (the fixture)
    """The primary's jobs in every state, replayed on the standby; nothing rolled up."""
    with JobStore(hot_standby.primary.conninfo) as store:
        made = populate(store, hot_standby.primary)
    hot_standby.caught_up()
    return made


@pytest.fixture(scope="module")
def client(hot_standby: Replicated, jobs: Jobs) -> Iterator[TestClient]:  # noqa: F811 (the fixture)
    with browser(create_app(hot_standby.standby.conninfo)) as test_client:
        yield test_client


def finished_on_primary(pair: Replicated) -> dict[tuple[str, str], int]:
    with pair.primary.connect() as conn:
        return {(lane, state): jobs for lane, state, jobs in conn.execute(FINISHED)}


def test_the_fixture_is_a_hot_standby(hot_standby: Replicated) -> None:  # noqa: F811 (the fixture)
    assert hot_standby.standby.scalar("SELECT pg_is_in_recovery()") is True
    assert hot_standby.primary.scalar("SELECT pg_is_in_recovery()") is False


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/jobs",
        "/jobs?state=failed",
        "/activity?window=1h",
        "/activity?window=24h",
        "/activity?window=7d",
        "/failures",
        "/failures?window=7d",
        "/workers",
    ],
)
def test_every_page_answers_200_on_a_standby(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, response.text


def test_every_job_page_answers_200_on_a_standby(client: TestClient, jobs: Jobs) -> None:
    for job_id in vars(jobs).values():
        response = client.get(f"/jobs/{job_id}")
        assert response.status_code == 200, (job_id, response.text)


def test_the_standby_shows_the_primarys_jobs_before_any_roll_up(
    client: TestClient,
    hot_standby: Replicated,  # noqa: F811 (the fixture)
    jobs: Jobs,
) -> None:
    assert hot_standby.standby.scalar("SELECT counted_to FROM tireless.history_rollup") == 0
    listed = client.get("/jobs").text
    for job_id in vars(jobs).values():
        assert f'href="/jobs/{job_id}"' in listed
    assert "tests failed" in client.get("/failures").text
    assert "runner-c" in client.get("/workers").text
    samples, _ = scrape(client)
    finished = finished_on_primary(hot_standby)
    assert finished
    for (lane, outcome), count in finished.items():
        assert value(samples, "tireless_jobs_finished_total", lane=lane, outcome=outcome) == count


def test_a_sweep_on_the_primary_rolls_up_and_the_standby_counts_each_job_once(
    client: TestClient,
    hot_standby: Replicated,  # noqa: F811 (the fixture)
) -> None:
    before, _ = scrape(client)
    swept = tireless_cli(hot_standby.primary.url, "sweep")
    assert swept.returncode == 0, swept.stderr
    hot_standby.caught_up()
    assert hot_standby.standby.scalar("SELECT counted_to FROM tireless.history_rollup") > 0
    after, _ = scrape(client)
    finished = [name for name in before if name[0] == "tireless_jobs_finished_total"]
    assert finished
    assert {name: after[name] for name in finished} == {name: before[name] for name in finished}


def test_status_and_jobs_on_a_standby(hot_standby: Replicated, jobs: Jobs) -> None:  # noqa: F811 (the fixture)
    status = tireless_cli(hot_standby.standby.url, "status")
    assert status.returncode == 0, status.stderr
    assert "cc" in status.stdout
    listed = cli_json(hot_standby.standby.url, "jobs")
    assert {job["id"] for job in listed} >= set(vars(jobs).values())
    shown = tireless_cli(hot_standby.standby.url, "show", str(jobs.failed))
    assert shown.returncode == 0, shown.stderr
    assert "tests failed" in shown.stdout
