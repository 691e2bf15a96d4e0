"""The mirror opens a delivered job's pull request on the stand-in forge, both API families, over
real HTTP: one pull request per issue from its branch, found by its head before a create and again
after a create whose answer was lost, updated by a later delivery, and named by the outcome
comment."""

from __future__ import annotations

from dev.standin import Request
from tests.support.forge import OWNER, REPO, Setup, asked, claim, comments, one_round
from tests.support.forge import pushed_and_delivered as delivered
from tireless import JobStore

IMPLEMENT = ["tireless", "tireless/implement"]
WORKER = "host1-3"


def asked_to_implement(setup: Setup) -> int:
    setup.track(REPO)
    setup.forge.seed_git(OWNER, REPO, {"README.md": "widgets\n"})
    return asked(setup, "Widgets crash on start", IMPLEMENT)


def test_a_delivered_job_gets_one_pull_request_that_its_comment_names(setup: Setup) -> None:
    number = asked_to_implement(setup)
    delivered(setup, claim(setup.store, WORKER), "one")
    one_round(setup)
    (pull,) = setup.forge.pulls_of(OWNER, REPO)
    assert (pull.head, pull.base, pull.state) == (f"tireless/{number}", "main", "open")
    assert f"Closes #{number}" in pull.body
    assert "Widgets crash on start" in pull.title
    (comment,) = comments(setup, number)
    assert f"#{pull.number}" in comment
    one_round(setup)
    assert len(setup.forge.pulls_of(OWNER, REPO)) == 1, "a write recorded is not made again"


def test_a_create_whose_answer_was_lost_gives_exactly_one_pull_request(setup: Setup) -> None:
    number = asked_to_implement(setup)
    delivered(setup, claim(setup.store, WORKER), "one")

    def lose_the_create_answer(request: Request) -> None:
        if request.method == "POST" and request.path == creates_path:
            # Armed as the create arrives: the forge stores it, then the connection is reset.
            setup.forge.fault("applied-then-reset", times=1, repo=(OWNER, REPO))

    creates_path = (
        f"{'/api/v1' if setup.forge.flavour == 'gitea' else ''}/repos/{OWNER}/{REPO}/pulls"
    )
    setup.forge.on_write(lose_the_create_answer)
    setup.round()
    setup.forge.on_write(None)
    one_round(setup)
    assert len(setup.forge.pull_creates(OWNER, REPO)) == 1, "found, not created again"
    pulls = setup.forge.pulls_of(OWNER, REPO)
    assert [p.head for p in pulls] == [f"tireless/{number}"]
    (comment,) = comments(setup, number)
    assert f"#{pulls[0].number}" in comment


def test_a_later_delivery_of_the_issue_updates_the_same_pull_request(
    setup: Setup, store: JobStore
) -> None:
    number = asked_to_implement(setup)
    delivered(setup, claim(store, WORKER), "one")
    one_round(setup)
    (first,) = setup.forge.pulls_of(OWNER, REPO)
    store.rerun(setup.name, OWNER, REPO, number)
    second = claim(store, WORKER)
    assert store.job_brief(second.id).pull_number == first.number
    delivered(setup, second, "two")
    one_round(setup)
    (pull,) = setup.forge.pulls_of(OWNER, REPO)
    assert pull.number == first.number
    assert f"job {second.id}," in pull.body
    assert len(setup.forge.pull_creates(OWNER, REPO)) == 1


def test_a_job_delivered_while_the_forge_is_down_gets_its_pull_request_once_it_is_back(
    setup: Setup,
) -> None:
    number = asked_to_implement(setup)
    delivered(setup, claim(setup.store, WORKER), "one")
    setup.forge.fault("500", times=None, writes_only=True)  # every write fails: the forge is down
    setup.round()
    assert setup.forge.pulls_of(OWNER, REPO) == []
    assert setup.db.scalar("SELECT pull_failures FROM tireless.deliveries") >= 1, (
        "kept, with its error"
    )
    setup.forge.clear_faults()
    setup.db.scalar(
        "UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'pull' RETURNING 1"
    )  # its backoff
    one_round(setup)
    (pull,) = setup.forge.pulls_of(OWNER, REPO)
    assert pull.head == f"tireless/{number}"
