"""The forges' own dependency relations (issue 35) on the stand-in forge over real HTTP, both API
families, against the real database: Gitea's and Forgejo's issue dependencies, GitHub's blocked-by
relations and sub-issues. A job whose issue the forge says is blocked waits, and the poll that sees
the blocker closed releases it; a relation removed without a change of the issue is seen by the
next full listing; GitHub's listing summaries spare the reads; a refused or failed read costs that
read only; a plan's children get their relations set once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import rows
from tests.support.forge import NAMES, OWNER, TASKS, TOKEN, Setup, delivered
from tireless import JobStore
from tireless.forge import client_for, token_variable
from tireless.forge.client import IssueRef
from tireless.forge.outbox import relate_child
from tireless.forge.poll import Report
from tireless.models import PlanTask

REPO = "widgets"
WORK = ["tireless", "tireless/implement"]


@pytest.fixture(params=["gitea", "github"])
def setup(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    flavour = request.param
    name = NAMES[flavour]
    monkeypatch.setenv(token_variable(name), TOKEN)
    with StandinForge(flavour, token=TOKEN, max_page_size=50) as forge:
        store.add_forge(name, flavour, forge.url)
        setup = Setup(db, store, forge, name)
        setup.track(REPO)
        yield setup


def one_round(setup: Setup) -> Report:
    (report,) = setup.round()
    assert report.error is None, report.error
    return report


def waiting_on(setup: Setup, number: int) -> list[str] | None:
    (row,) = rows(
        setup.db,
        "SELECT waiting_on FROM tireless.job WHERE number = %(n)s AND state = 'pending'",
        {"n": number},
    )
    found: list[str] | None = row[0]
    return found


def relation_reads(setup: Setup) -> list[str]:
    """The paths of the relation reads the forge was asked, in order."""
    return [
        r.path
        for r in setup.forge.requests
        if r.method == "GET"
        and r.path.rsplit("/", 1)[-1] in ("dependencies", "blocked_by", "sub_issues")
    ]


def relation_writes(setup: Setup) -> list[str]:
    return [
        r.path
        for r in setup.forge.requests
        if r.method != "GET"
        and r.path.rsplit("/", 1)[-1] in ("dependencies", "blocked_by", "sub_issues")
    ]


def test_a_job_waits_for_its_forge_dependency_and_the_poll_that_sees_it_closed_releases_it(
    setup: Setup,
) -> None:
    blocker = setup.forge.create_issue(OWNER, REPO, "the frame", ["bug"])
    dependent = setup.forge.create_issue(OWNER, REPO, "paint it", WORK)
    setup.forge.add_dependency(OWNER, REPO, dependent, blocker)
    one_round(setup)
    assert waiting_on(setup, dependent) == [f"#{blocker}"]
    assert setup.store.claim_next("w1", ["cc"]) is None
    assert rows(setup.db, "SELECT depends_on, state, source FROM tireless.job_waits(1)") == [
        (f"#{blocker}", "open", "forge")
    ]
    setup.forge.close_issue(OWNER, REPO, blocker)
    one_round(setup)
    assert waiting_on(setup, dependent) is None
    job = setup.store.claim_next("w1", ["cc"])
    assert job is not None
    assert job.number == dependent


def test_a_dependency_removed_on_the_forge_without_a_change_of_the_issue_is_seen_within_one_full_listing(
    setup: Setup,
) -> None:
    """The quirk: a change of a GitHub dependency does not move the issue's updated_at, and Gitea
    sends no webhook for one; the incremental read cannot see it, the next full listing does."""
    blocker = setup.forge.create_issue(OWNER, REPO, "the frame", ["bug"])
    dependent = setup.forge.create_issue(OWNER, REPO, "paint it", WORK)
    setup.forge.add_dependency(OWNER, REPO, dependent, blocker)
    one_round(setup)
    one_round(setup)  # the mirror shows state:waiting
    assert waiting_on(setup, dependent) == [f"#{blocker}"]
    shown = next(i for i in setup.forge.issues_of(OWNER, REPO) if i.number == dependent)
    setup.forge.remove_dependency(OWNER, REPO, dependent, blocker)
    after = next(i for i in setup.forge.issues_of(OWNER, REPO) if i.number == dependent)
    assert after.updated_at == shown.updated_at, "the stand-in keeps the quirk"
    one_round(setup)  # incremental: the issue did not change since the cursor
    assert waiting_on(setup, dependent) == [f"#{blocker}"]
    setup.full_listing_next()
    one_round(setup)
    assert waiting_on(setup, dependent) is None
    job = setup.store.claim_next("w1", ["cc"])
    assert job is not None
    assert job.number == dependent


def test_github_reads_no_relation_an_issue_summary_says_it_has_none(setup: Setup) -> None:
    if setup.forge.flavour != "github":
        pytest.skip("Gitea's issues carry no summary of their relations")
    for n in range(3):
        setup.forge.create_issue(OWNER, REPO, f"task {n}", WORK)
    one_round(setup)
    assert relation_reads(setup) == [], "summaries 0: no request"
    assert setup.forge.relation_requests() == 0
    blocker = setup.forge.create_issue(OWNER, REPO, "the frame", ["bug"])
    setup.forge.add_dependency(OWNER, REPO, 2, blocker)
    setup.forge.set_labels(OWNER, REPO, 2, [*WORK, "later"])  # the issue changes as well
    one_round(setup)
    assert relation_reads(setup) == [f"/repos/{OWNER}/{REPO}/issues/2/dependencies/blocked_by"]
    assert waiting_on(setup, 2) == [f"#{blocker}"]
    setup.forge.relation_summaries = False  # an older GitHub Enterprise Server: read both
    setup.forge.set_labels(OWNER, REPO, 3, WORK)  # changed: read
    setup.forge.edit(OWNER, REPO, 3, lambda issue: {"title": "task two"})
    before = len(relation_reads(setup))
    one_round(setup)
    # (#2 is read again too: the mirror's state:waiting label moved its updated_at this round.)
    assert [p for p in relation_reads(setup)[before:] if "/issues/3/" in p] == [
        f"/repos/{OWNER}/{REPO}/issues/3/dependencies/blocked_by",
        f"/repos/{OWNER}/{REPO}/issues/3/sub_issues",
    ]


def test_github_an_open_sub_issue_holds_its_parent(setup: Setup) -> None:
    if setup.forge.flavour != "github":
        pytest.skip("Gitea and Forgejo have no sub-issues")
    parent = setup.forge.create_issue(OWNER, REPO, "the whole", WORK)
    child = setup.forge.create_issue(OWNER, REPO, "a part", ["bug"])
    setup.forge.add_sub_issue(OWNER, REPO, parent, child)
    one_round(setup)
    assert waiting_on(setup, parent) == [f"#{child}"]
    setup.forge.close_issue(OWNER, REPO, child)
    one_round(setup)
    assert waiting_on(setup, parent) is None


@pytest.mark.parametrize("status", [403, 404])
def test_relations_the_forge_will_not_show_are_none_and_stop_nothing(
    setup: Setup, status: int
) -> None:
    setup.forge.refuse_dependencies(OWNER, REPO, status)
    blocker = setup.forge.create_issue(OWNER, REPO, "the frame", ["bug"])
    dependent = setup.forge.create_issue(OWNER, REPO, "paint it", WORK)
    setup.forge.add_dependency(OWNER, REPO, dependent, blocker)
    setup.forge.relation_summaries = False  # GitHub too reads, and is refused
    report = one_round(setup)
    assert report.created == 1
    assert report.warning is None
    assert waiting_on(setup, dependent) is None
    assert relation_reads(setup), "asked, and refused"
    (forge,) = rows(setup.db, "SELECT limited_until, last_error FROM tireless.forge")
    assert forge == (None, None), "the forge is not stopped"


def test_a_failed_relation_read_costs_that_read_only_and_keeps_what_was_stored(
    setup: Setup,
) -> None:
    blocker = setup.forge.create_issue(OWNER, REPO, "the frame", ["bug"])
    dependent = setup.forge.create_issue(OWNER, REPO, "paint it", WORK)
    other = setup.forge.create_issue(OWNER, REPO, "another", WORK)
    setup.forge.add_dependency(OWNER, REPO, dependent, blocker)
    setup.forge.add_dependency(OWNER, REPO, other, blocker)
    one_round(setup)
    one_round(setup)
    assert waiting_on(setup, dependent) == waiting_on(setup, other) == [f"#{blocker}"]
    setup.forge.remove_dependency(OWNER, REPO, dependent, blocker)
    setup.forge.remove_dependency(OWNER, REPO, other, blocker)
    setup.forge.relation_summaries = False  # GitHub reads them all, as Gitea does
    setup.forge.fault("500", times=None, number=dependent)
    setup.full_listing_next()
    report = one_round(setup)
    assert report.warning is not None
    assert f"issue #{dependent}: its forge dependencies were not read" in report.warning
    assert waiting_on(setup, dependent) == [f"#{blocker}"], "not read: what was stored stands"
    assert waiting_on(setup, other) is None, "the other issue's read went on"
    setup.forge.clear_faults()
    setup.full_listing_next()
    one_round(setup)
    assert waiting_on(setup, dependent) is None


def test_a_plans_children_get_their_forge_relations_once(setup: Setup) -> None:
    delivered(setup)
    report = one_round(setup)  # the mirror opens #2, #3, #4 and relates them
    blocked = {n: setup.forge.dependencies_of(OWNER, REPO, n) for n in (2, 3, 4)}
    assert blocked == {2: [], 3: [(OWNER, REPO, 2)], 4: [(OWNER, REPO, 3)]}
    # Task 2 also depends on "#40", which does not exist: that write alone is refused, said.
    assert report.mirror_failed == 1
    assert report.mirror_error is not None
    assert "#4" in report.mirror_error
    if setup.forge.flavour == "github":
        assert setup.forge.sub_issues_of(OWNER, REPO, 1) == [(OWNER, REPO, n) for n in (2, 3, 4)]
    # The children's jobs wait for each other by both the body and the forge.
    assert rows(
        setup.db, "SELECT depends_on, source FROM tireless.job_waits(%(j)s)",
        {"j": rows(setup.db, "SELECT id FROM tireless.job WHERE number = 3")[0][0]},
    ) == [("#2", "body, forge")]  # fmt: skip
    # A second poller (or a retry after a lost answer) relates them again: nothing is added.
    writes = len(relation_writes(setup))
    task = PlanTask(0, 1, 1, "Paint it", "", [], "", datetime.now(UTC), depends_on=[2])
    client = client_for(setup.forge.flavour, setup.forge.url, TOKEN, timeout=2.0)
    try:
        assert relate_child(client, OWNER, REPO, task, 3) == []
    finally:
        client.close()
    assert len(relation_writes(setup)) == writes
    assert setup.forge.dependencies_of(OWNER, REPO, 3) == [(OWNER, REPO, 2)]
    assert len(TASKS) == 3


def test_a_relation_write_whose_answer_was_lost_is_not_made_twice(setup: Setup) -> None:
    first = setup.forge.create_issue(OWNER, REPO, "the frame", ["bug"])
    second = setup.forge.create_issue(OWNER, REPO, "paint it", ["bug"])
    client = client_for(setup.forge.flavour, setup.forge.url, TOKEN, timeout=2.0)
    try:
        setup.forge.fault("applied-then-reset", writes_only=True, number=second)
        client.add_dependency(OWNER, REPO, second, first)  # stored; the answer lost; found
        assert setup.forge.dependencies_of(OWNER, REPO, second) == [(OWNER, REPO, first)]
        client.add_dependency(OWNER, REPO, second, first)  # done already: read, nothing sent
        assert client.issue_dependencies(OWNER, REPO, second) == [IssueRef(OWNER, REPO, first)]
        if setup.forge.flavour == "github":
            setup.forge.fault("applied-then-reset", writes_only=True, number=first)
            client.add_sub_issue(OWNER, REPO, first, second)
            client.add_sub_issue(OWNER, REPO, first, second)
            assert setup.forge.sub_issues_of(OWNER, REPO, first) == [(OWNER, REPO, second)]
    finally:
        client.close()
    assert len(relation_writes(setup)) == (2 if setup.forge.flavour == "github" else 1)
