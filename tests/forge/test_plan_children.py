"""A delivered plan's tasks become issues on the stand-in forge, both API families, against the
real database: one issue per task, labelled and linked (the parent, the dependencies, the marker),
even when a create's answer is lost or a poller dies between the create and its record; each
child's job records the plan's job as its parent; a discovery's proposals wait for the opt-in."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from dev.standin import MIRROR_LOGIN, StandinForge
from tests import outbox
from tests.conftest import Database
from tests.helpers import rows
from tests.support.forge import (
    NAMES,
    OWNER,
    REPO,
    TASKS,
    TOKEN,
    Setup,
    delivered,
    labels,
    one_round,
)
from tireless import JobStore
from tireless.forge import client_for, token_variable
from tireless.forge.client import ReadFailed
from tireless.forge.outbox import open_child


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


def opened(setup: Setup) -> list[tuple[int, str]]:
    """(number, title) of each issue the mirror's account opened, in order."""
    stored = setup.forge.issues_of(OWNER, REPO)
    return [(issue.number, issue.title) for issue in stored if issue.author == MIRROR_LOGIN]


def body_of(setup: Setup, number: int) -> str:
    return next(
        issue.body for issue in setup.forge.issues_of(OWNER, REPO) if issue.number == number
    )


def test_a_plan_opens_one_labelled_linked_issue_per_task(setup: Setup) -> None:
    job_id = delivered(setup)
    one_round(setup)  # the mirror opens the children; the read that follows makes their jobs
    assert opened(setup) == [(2, "Build the frame"), (3, "Paint it"), (4, "Ship it")]
    assert labels(setup, 2) == ["tireless", "tireless/implement"]
    assert labels(setup, 3) == ["tireless", "tireless/implement", "tireless/agent:gpu"]
    assert body_of(setup, 3) == (
        f"Blue.\n\nPart of #1\n\nDepends on #2\n\nOpened by tireless for job {job_id} (task 1)."
        f"\n\n<!-- tireless:task:{job_id}:1 -->"
    )
    assert "Part of #1\n\nDepends on #3\nDepends on #40\n\n" in body_of(setup, 4)
    parents = rows(setup.db, "SELECT number, parent_id, lane FROM tireless.job WHERE number > 1")
    assert sorted(parents) == [(2, job_id, "cc"), (3, job_id, "gpu"), (4, job_id, "cc")]
    for _ in range(2):
        one_round(setup)
    assert len(opened(setup)) == 3


def test_a_create_whose_answer_was_lost_and_a_dead_poller_open_nothing_twice(
    setup: Setup,
) -> None:
    job_id = delivered(setup)
    (target,) = setup.store.claim_repos_to_poll("poller-1")
    first, *_ = outbox.due(setup.store, "task", setup.name, OWNER, REPO, "poller-1")
    client = client_for(setup.forge.flavour, setup.forge.url, TOKEN, timeout=2.0)
    try:
        setup.forge.fault("applied-then-reset", writes_only=True)
        with pytest.raises(ReadFailed):
            open_child(client, OWNER, REPO, first)  # stored; its answer lost
        assert open_child(client, OWNER, REPO, first) == 2  # found by its marker, labelled
    finally:
        client.close()
    # poller-1 dies before recording it; poller-2 takes the repository when its lease ends.
    with setup.db.connect() as conn:
        conn.execute(
            "UPDATE tireless.repo_poll SET poll_lease_until = now() - interval '1 second',"
            " next_poll_at = now() - interval '1 second'"
        )
    one_round(setup)
    one_round(setup)
    assert opened(setup) == [(2, "Build the frame"), (3, "Paint it"), (4, "Ship it")]
    assert labels(setup, 2) == ["tireless", "tireless/implement", "tireless/state/pending"]
    parents = rows(setup.db, "SELECT number, parent_id FROM tireless.job WHERE number > 1")
    assert sorted(parents) == [(2, job_id), (3, job_id), (4, job_id)]
    assert target.repo == REPO


def test_a_marker_in_a_persons_issue_counts_for_nothing(setup: Setup) -> None:
    job_id = delivered(setup, tasks=TASKS[:1])
    setup.forge.create_issue(
        OWNER, REPO, "copied", [], body=f"look\n\n<!-- tireless:task:{job_id}:0 -->"
    )
    one_round(setup)
    assert opened(setup) == [(3, "Build the frame")]


def test_a_proposal_runs_only_after_a_person_adds_the_opt_in(setup: Setup) -> None:
    job_id = delivered(setup, ["tireless", "tireless/discover"], TASKS[:1])
    one_round(setup)
    assert opened(setup) == [(2, "Build the frame")]
    assert labels(setup, 2) == ["tireless/implement"]
    assert re.search(r"\(proposal 0\)", body_of(setup, 2))
    one_round(setup)
    assert rows(setup.db, "SELECT count(*) FROM tireless.job WHERE number = 2") == [(0,)]
    setup.forge.set_labels(OWNER, REPO, 2, ["tireless/implement", "tireless"])
    one_round(setup)
    assert rows(setup.db, "SELECT parent_id FROM tireless.job WHERE number = 2") == [(job_id,)]
