"""GitHub's limits and its labels without case, against the stand-in over real HTTP and the real
database through the poll and mirror round: a body tireless writes fits in 65536 characters on
every forge (a long report is cut and says so; a plan's checklist fits too), the stand-in refuses
what GitHub refuses, and a state label GitHub already has in another case is used, not doubled."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from dev.standin import Flavour, StandinForge
from tests.conftest import Database
from tests.helpers import rows
from tests.support.forge import NAMES, OWNER, PLAN, TOKEN, Setup, claim, comments, labels, one_round
from tireless import JobStore
from tireless.forge import token_variable

REPO = "widgets"
LIMIT = 65536
IMPLEMENT = ["tireless", "tireless/implement"]


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


@pytest.fixture
def github(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    monkeypatch.setenv(token_variable(NAMES["github"]), TOKEN)
    with StandinForge("github", token=TOKEN, max_page_size=50) as forge:
        store.add_forge(NAMES["github"], "github", forge.url)
        setup = Setup(db, store, forge, NAMES["github"])
        setup.track(REPO)
        yield setup


def comment_posts(setup: Setup, number: int) -> int:
    return sum(
        1
        for r in setup.forge.writes()
        if r.method == "POST" and r.path.endswith(f"/issues/{number}/comments")
    )


def test_a_200000_character_report_is_written_once_within_the_limit(setup: Setup) -> None:
    number = setup.forge.create_issue(OWNER, REPO, "asks", IMPLEMENT)
    one_round(setup)
    job = claim(setup.store)
    # Each "<" and "@" gets an invisible character when made safe: the store's 60000 double.
    report = "## Done\n\n```\n" + "<@ `code` " * 20000
    assert len(report) > 200000
    setup.store.attach_report(job.id, "host1-3", report)
    setup.store.transition(job.id, "delivered", "host1-3", "done")
    for _ in range(2):  # the second round writes nothing more
        one_round(setup)
    (comment,) = comments(setup, number)
    assert comment_posts(setup, number) == 1, "written at the first try"
    assert len(comment) <= LIMIT
    assert comment.endswith(f"\n\n<!-- tireless:job:{job.id} -->")
    assert "\n```\n\n… cut: " in comment, "the fence closed, then the cut said"
    assert "(65536 at most)." in comment


def test_a_plan_with_a_long_checklist_fits(setup: Setup) -> None:
    setup.forge.create_issue(OWNER, REPO, "Plan the widget", PLAN)
    one_round(setup)
    job = claim(setup.store)
    tasks: list[dict[str, Any]] = [
        {"title": f"Step {i} " + "s" * 190, "body": "<@" * 30000 if i < 2 else ""}
        for i in range(50)
    ]
    assert setup.store.attach_plan(job.id, "host1-3", tasks) == 50
    setup.store.attach_report(job.id, "host1-3", "<@" * 30000)
    setup.store.transition(job.id, "delivered", "host1-3", "planned")
    for _ in range(20):  # the children are opened first, within each round's budget
        one_round(setup)
        if comments(setup, 1):
            break
    (comment,) = comments(setup, 1)
    assert len(comment) <= LIMIT
    assert comment.endswith(f"\n\n<!-- tireless:job:{job.id} -->")
    assert comment.count("\n- [ ] #") == 50, "every child listed"
    assert "… cut: " in comment, "the report gave up the room"
    children = [i for i in setup.forge.issues_of(OWNER, REPO) if i.number > 1]
    assert len(children) == 50
    for child in children[:2]:  # a task's body is cut to fit its issue's too
        assert len(child.body) <= LIMIT
        assert "… cut: " in child.body
        assert child.body.endswith(f"\n\n<!-- tireless:task:{job.id}:{child.number - 2} -->")


def test_an_existing_state_label_of_another_case_is_used_on_github(github: Setup) -> None:
    ((names,),) = rows(github.db, "SELECT (tireless.mirror_labels()).state_labels")
    pending = next(name for name in names if name.endswith("pending"))
    other_case = pending.title()  # tireless/state/pending -> Tireless/State/Pending
    assert other_case != pending
    github.forge.create_issue(OWNER, REPO, "labelled by a person", [other_case])
    number = github.forge.create_issue(OWNER, REPO, "asks", PLAN)
    one_round(github)  # the poll makes the job
    one_round(github)  # the mirror shows it
    assert labels(github, number) == [*PLAN, other_case]
    label_posts = [r for r in github.forge.writes() if r.path.endswith(f"/{REPO}/labels")]
    assert label_posts == [], "no label made: GitHub's own is used"
    before = len(github.forge.writes())
    one_round(github)
    assert github.forge.writes()[before:] == [], "a second round writes nothing"

    claim(github.store)
    one_round(github)
    keys = {name.lower() for name in names}
    state = [name.lower() for name in labels(github, number) if name.lower() in keys]
    assert state == [pending.replace("pending", "claimed")], "the other case's pending taken off"


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_the_standin_refuses_a_body_past_65536_characters_on_github_only(
    flavour: Flavour,
) -> None:
    prefix = "/api/v1" if flavour == "gitea" else ""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with (
        StandinForge(flavour, token=TOKEN) as forge,
        httpx.Client(base_url=forge.url + prefix + f"/repos/{OWNER}/{REPO}", headers=auth) as http,
    ):
        forge.create_issue(OWNER, REPO, "asks", PLAN)
        fits = http.post("/issues/1/comments", json={"body": "x" * LIMIT})
        assert fits.status_code == 201
        over = http.post("/issues/1/comments", json={"body": "é" * (LIMIT + 1)})
        edit = http.patch(f"/issues/comments/{fits.json()['id']}", json={"body": "x" * (LIMIT + 1)})
        opened = http.post("/issues", json={"title": "t", "body": "x" * (LIMIT + 1)})
        if flavour == "gitea":  # Gitea sets no such limit
            assert (over.status_code, edit.status_code, opened.status_code) == (201, 200, 201)
            return
        for refused, resource in (
            (over, "IssueComment"),
            (edit, "IssueComment"),
            (opened, "Issue"),
        ):
            assert refused.status_code == 422
            assert refused.json()["message"] == "Validation Failed"
            assert refused.json()["errors"] == [
                {
                    "resource": resource,
                    "code": "custom",
                    "field": "body",
                    "message": "body is too long (maximum is 65536 characters)",
                }
            ]
        assert forge.comments_of(OWNER, REPO, 1) == ["x" * LIMIT]


def test_the_github_standin_matches_label_names_without_case_and_refuses_long_ones() -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with (
        StandinForge("github", token=TOKEN) as forge,
        httpx.Client(base_url=forge.url + f"/repos/{OWNER}/{REPO}", headers=auth) as http,
    ):
        forge.create_issue(OWNER, REPO, "asks", ["bug"])
        forge.create_issue(OWNER, REPO, "another")
        found = http.get("/labels/Bug")
        assert (found.status_code, found.json()["name"]) == (200, "bug")
        added = http.post("/issues/2/labels", json={"labels": ["BUG"]})
        assert [label["name"] for label in added.json()] == ["bug"]
        assert list(forge.repo_labels(OWNER, REPO)) == ["bug"]
        again = http.post("/labels", json={"name": "Bug", "color": "ededed"})
        assert again.status_code == 422
        assert again.json()["errors"] == [
            {"resource": "Label", "code": "already_exists", "field": "name"}
        ]
        long = "l" * 51
        made = http.post("/labels", json={"name": long, "color": "ededed"})
        assert made.status_code == 422
        assert made.json()["errors"][0]["message"] == "name is too long (maximum is 50 characters)"
        on_issue = http.post("/issues/2/labels", json={"labels": [long]})
        assert on_issue.status_code == 422
        assert on_issue.json()["errors"][0]["code"] == "invalid"
        assert http.post("/labels", json={"name": "l" * 50, "color": "ededed"}).status_code == 201


def test_a_mode_label_of_another_case_asks_nothing_and_stays_when_the_job_ends_on_github(
    github: Setup,
) -> None:
    """Labels that ask match exactly on every forge, for the poll and the mirror alike:
    `Tireless/Plan` asks for no plan, so the job's end does not withdraw it (GitHub would take it
    for `tireless/plan` were the mirror to ask it to)."""
    number = github.forge.create_issue(OWNER, REPO, "asks", [*IMPLEMENT, "Tireless/Plan"])
    one_round(github)  # the poll makes the job
    one_round(github)  # the mirror shows it
    job = claim(github.store)
    assert job.kind == "implement", "Tireless/Plan is no mode label"
    github.store.transition(job.id, "delivered", "host1-3", "merged")
    one_round(github)
    shown = labels(github, number)
    assert "Tireless/Plan" in shown
    assert "tireless/implement" not in shown
