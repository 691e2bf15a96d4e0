"""The work graph's notes on the stand-in forge, both API families, against the real database
(issue 35): a dependency cycle is told once on each issue in it, even when a post's answer is lost
and the rounds go on; a delivered plan's outcome comment lists its children and that one comment
is edited as they change, with no request when nothing changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dev.standin import MIRROR_LOGIN, Request, StandinForge
from tests.conftest import Database
from tests.support.forge import NAMES, OWNER, TOKEN, Setup, claim, comments, delivered, one_round
from tireless import JobStore
from tireless.forge import client_for, token_variable
from tireless.forge.client import WriteRefused

REPO = "widgets"
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


def authored(setup: Setup, number: int) -> list[tuple[str, str]]:
    return setup.forge.comments_with_authors(OWNER, REPO, number)


def comment_edits(setup: Setup) -> list[Request]:
    return [
        r for r in setup.forge.writes() if r.method == "PATCH" and "/issues/comments/" in r.path
    ]


def test_a_cycle_is_told_once_on_each_of_its_issues_even_when_an_answer_is_lost(
    setup: Setup,
) -> None:
    first = setup.forge.create_issue(OWNER, REPO, "first", IMPLEMENT, body="Depends on #2")
    second = setup.forge.create_issue(OWNER, REPO, "second", IMPLEMENT, body="Depends on #1")
    one_round(setup)  # the read makes both jobs, finds the cycle and queues one report per issue
    lost: list[Request] = []

    def lose_the_first_answer(request: Request) -> None:
        if not lost and request.method == "POST" and request.path.endswith(f"/{first}/comments"):
            lost.append(request)  # this post is stored, then its answer lost
            setup.forge.fault("applied-then-reset", times=1, writes_only=True, number=first)

    setup.forge.on_write(lose_the_first_answer)
    report = one_round(setup)
    setup.forge.on_write(None)
    assert lost
    assert report.mirror_failed == 1
    with setup.db.connect() as conn:  # its backoff over
        conn.execute("UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'cycle'")
    for _ in range(2):
        one_round(setup)
    for number, cycle in ((first, "#1 → #2 → #1"), (second, "#2 → #1 → #2")):
        (only,) = authored(setup, number)
        assert only[0] == MIRROR_LOGIN
        assert only[1].startswith(f"tireless: this issue is on a dependency cycle: {cycle}\n\n")
        assert only[1].endswith("-->")
    assert setup.store.claim_next("w1", ["cc"]) is None, "none of its jobs runs"
    assert (
        setup.db.scalar("SELECT count(*) FROM tireless.cycle_report WHERE written_at IS NULL") == 0
    )


def test_a_plans_one_comment_lists_its_children_and_is_edited_as_they_change(
    setup: Setup,
) -> None:
    job_id = delivered(setup)
    one_round(setup)  # the children are opened, then the comment posted listing them
    ((author, body),) = authored(setup, 1)
    assert author == MIRROR_LOGIN
    assert body.endswith(
        "\n\nTasks:\n"
        "- [ ] #2 Build the frame — open\n"
        "- [ ] #3 Paint it — open\n"
        "- [ ] #4 Ship it — open\n\n"
        f"<!-- tireless:job:{job_id} -->"
    )
    assert comment_edits(setup) == []

    one_round(setup)  # the read of the last round made the children's jobs: one edit
    ((_, body),) = authored(setup, 1)
    assert (
        "- [ ] #2 Build the frame — pending\n"
        "- [ ] #3 Paint it — waiting on #2\n"
        "- [ ] #4 Ship it — waiting on #3, #40\n\n"
    ) in body
    assert len(comment_edits(setup)) == 1
    one_round(setup)
    assert len(comment_edits(setup)) == 1, "nothing changed: no request"

    child = claim(setup.store)
    assert child.number == 2
    setup.store.transition(child.id, "delivered", "host1-3", "framed")
    one_round(setup)
    ((_, body),) = authored(setup, 1)
    assert "- [x] #2 Build the frame — delivered\n- [ ] #3 Paint it — waiting on #2\n" in body
    assert len(comments(setup, 1)) == 1, "the same comment, edited"
    assert len(comment_edits(setup)) == 2
    one_round(setup)
    assert len(comment_edits(setup)) == 2


def test_the_edit_endpoint_answers_as_each_forge_does(setup: Setup) -> None:
    number = setup.forge.create_issue(OWNER, REPO, "talk", [])
    theirs = setup.forge.add_comment_as(OWNER, REPO, number, "carol", "carol's words")
    client = client_for(setup.forge.flavour, setup.forge.url, TOKEN, timeout=2.0)
    try:
        client.add_comment(OWNER, REPO, number, "ours")
        ours = next(c for c in client.comments(OWNER, REPO, number) if c.author == MIRROR_LOGIN)
        assert ours.id is not None
        client.edit_comment(OWNER, REPO, ours.id, "ours, edited")
        client.edit_comment(OWNER, REPO, ours.id, "ours, edited")  # twice is harmless
        assert setup.forge.comments_of(OWNER, REPO, number) == ["carol's words", "ours, edited"]
        with pytest.raises(WriteRefused) as unknown:
            client.edit_comment(OWNER, REPO, 999_999, "nothing")
        assert unknown.value.status == 404
        setup.forge.set_permission(OWNER, REPO, MIRROR_LOGIN, "read")
        with pytest.raises(WriteRefused) as refused:
            client.edit_comment(OWNER, REPO, theirs, "not ours")
        assert refused.value.status == 403
        client.edit_comment(OWNER, REPO, ours.id, "still ours")  # its author may
    finally:
        client.close()
