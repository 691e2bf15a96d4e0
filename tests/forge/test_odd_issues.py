"""One odd issue never blocks its repository (issue 36): an issue whose number is sound but which
the poller cannot read (a NUL in its title, as Gitea on SQLite or MySQL stores it) or the store
refuses (101 labels: Gitea sets no limit; a 210-character label: Gitea allows 255,
models/issues/label.go) is left out and reported, with its number and the reason, by the poll's
line, `tireless repos`, the dashboard and /metrics; the rest of the repository's issues are
recorded in the same round. Both API families, over real HTTP, against the real database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import rows
from tests.support.forge import NAMES, OWNER, PLAN, TOKEN, Setup
from tireless import JobStore
from tireless.cli.render import render_repos
from tireless.forge import token_variable


@pytest.fixture(params=["gitea", "github"])
def setup(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    name = NAMES[request.param]
    monkeypatch.setenv(token_variable(name), TOKEN)
    with StandinForge(request.param, token=TOKEN, max_page_size=50) as forge:
        store.add_forge(name, request.param, forge.url)
        yield Setup(db, store, forge, name)


def skips(setup: Setup) -> dict[int, str]:
    found = rows(
        setup.db,
        "SELECT number, problem FROM tireless.issue_skip WHERE forge = %(f)s ORDER BY number",
        {"f": setup.name},
    )
    return {number: problem for number, problem in found}


def test_odd_issues_are_left_out_and_reported_and_the_rest_get_their_jobs(setup: Setup) -> None:
    setup.track("widgets")
    forge = setup.forge
    before = forge.create_issue(OWNER, "widgets", "well formed", PLAN)
    many = forge.create_issue(
        OWNER, "widgets", "many labels", [*PLAN, *(f"l{n}" for n in range(99))]
    )
    long = forge.create_issue(OWNER, "widgets", "long label", [*PLAN, "x" * 210])
    nul = forge.create_issue(OWNER, "widgets", "a\x00b", PLAN)
    after = forge.create_issue(OWNER, "widgets", "also well formed", PLAN)

    (report,) = setup.round()

    assert report.error is None
    assert report.created == 2
    assert report.skipped_issues == 3
    assert "3 malformed issue(s) left out" in report.line()
    assert setup.jobs() == {before: ("pending", None), after: ("pending", None)}
    left_out = skips(setup)
    assert left_out.keys() == {many, long, nul}
    assert "101 labels" in left_out[many]
    assert "1 to 200 characters" in left_out[long]
    assert "NUL" in left_out[nul]
    (status,) = setup.store.repo_status()
    assert status.skipped_issues == 3
    assert status.last_error is None
    assert status.skipped_issue is not None
    assert status.skipped_issue.startswith("#")
    assert "3 malformed issue(s) left out" in render_repos([status])


def test_an_odd_issue_made_well_formed_is_recorded_and_no_longer_reported(setup: Setup) -> None:
    setup.track("widgets")
    odd = setup.forge.create_issue(OWNER, "widgets", "long label", [*PLAN, "x" * 210])
    setup.round()
    assert skips(setup).keys() == {odd}

    setup.forge.set_labels(OWNER, "widgets", odd, PLAN)
    setup.due_now()
    (report,) = setup.round()

    assert report.created == 1
    assert report.skipped_issues == 0
    assert skips(setup) == {}
    assert setup.jobs() == {odd: ("pending", None)}
    assert setup.store.repo_status()[0].skipped_issues == 0


def test_a_live_jobs_issue_turned_odd_is_reported_not_taken_for_deleted(setup: Setup) -> None:
    """A full listing fetches each live job's issue it did not list, one by one: an odd one is
    left out and reported there too, and its job stands (it is not deleted)."""
    setup.track("widgets")
    number = setup.forge.create_issue(OWNER, "widgets", "asks", PLAN)
    setup.round()
    setup.forge.set_labels(OWNER, "widgets", number, [*PLAN, "x" * 210])
    setup.forge.close_issue(OWNER, "widgets", number)  # left out of the open listing
    setup.full_listing_next()
    setup.due_now()

    (report,) = setup.round()

    assert report.error is None
    assert report.deleted == 0
    assert number in skips(setup)
    assert setup.jobs() == {number: ("pending", None)}
