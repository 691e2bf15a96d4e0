"""The mirror against the forges' real behaviour (issue 21) and its comment made safe (issue 22):
every label an issue can carry is found (Gitea's label pages without Link, organisation labels),
a mode label is recorded as off only when the forge confirmed it, a request made while the mirror
finishes the previous job gets exactly one job, each finished job exactly one comment, a label
creation whose answer was lost makes no duplicate, a backlog never holds the read back, and the
outcome comment neither notifies, renders nor hides. Against the stand-in forge on 127.0.0.1,
polled through the real `tireless poll --once` where the test can."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from dev.standin import MIRROR_LOGIN, Flavour, Request, StandinForge
from tests.conftest import Database
from tests.helpers import rows, wait_until
from tests.helpers import tireless_cli as cli
from tests.support.forge import (
    MODE,
    OWNER,
    PLAN,
    REPO,
    STATE,
    TOKEN,
    Setup,
    ask_again,
    asked,
    began_earlier,
    claim,
    claimed_a_while_ago,
    comments,
    jobs,
    labels,
    one_round,
)
from tireless import JobStore
from tireless.forge import client_for, token_variable
from tireless.forge.mirror import MIRROR_BUDGET

OTHER = "tireless/implement"


@pytest.fixture
def gitea(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    monkeypatch.setenv(token_variable("gitea"), TOKEN)
    with StandinForge("gitea", token=TOKEN) as forge:
        store.add_forge("gitea", "gitea", forge.url)
        yield Setup(db, store, forge, "gitea")


def poll_once(setup: Setup) -> str:
    """One round of the real `tireless poll --once`; its output."""
    done = cli(setup.db.url, "poll", "--once", **{token_variable(setup.name): TOKEN})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def deliver(store: JobStore, note: str = "done") -> int:
    job = claim(store)
    store.transition(job.id, "delivered", "host1-3", note)
    return job.id


def test_gitea_labels_on_later_pages_are_found_so_a_finished_issue_is_not_run_again(
    gitea: Setup,
) -> None:
    gitea.track(REPO)
    for n in range(60):  # sorted by name, 50 a page: every tireless/* label is on page 2
        gitea.forge.create_issue(OWNER, REPO, f"other {n}", [f"area/{n:02}"])
    number = gitea.forge.create_issue(OWNER, REPO, "asks", PLAN)
    poll_once(gitea)
    poll_once(gitea)
    deliver(gitea.store)
    poll_once(gitea)
    for _ in range(2):
        poll_once(gitea)
    assert labels(gitea, number) == ["tireless", f"{STATE}delivered"]
    assert jobs(gitea, number) == ["delivered"]  # not worked again, poll after poll
    names = gitea.forge.label_names(OWNER, REPO)
    assert len(names) == len(set(names)), "no label made twice"


def test_organisation_labels_are_taken_off_by_their_id_and_used_for_the_state(gitea: Setup) -> None:
    gitea.track(REPO)
    for name in ("tireless", MODE, f"{STATE}pending", f"{STATE}claimed", f"{STATE}delivered"):
        gitea.forge.create_org_label(OWNER, name)
    number = gitea.forge.create_issue(OWNER, REPO, "asks", PLAN)
    assert gitea.forge.label_names(OWNER, REPO) == []  # the repository's list never shows them
    poll_once(gitea)
    poll_once(gitea)
    deliver(gitea.store)
    poll_once(gitea)
    poll_once(gitea)
    assert labels(gitea, number) == ["tireless", f"{STATE}delivered"]
    assert jobs(gitea, number) == ["delivered"]
    assert gitea.forge.label_names(OWNER, REPO) == []  # no repository copy of an org label


def test_a_mode_label_the_forge_did_not_take_off_is_not_recorded_as_withdrawn(
    setup: Setup,
) -> None:
    setup.track(REPO)
    number = asked(setup)
    deliver(setup.store)
    refused = threading.Event()

    def refuse(request: Request) -> None:  # every DELETE of the mode label answers 500
        if request.method == "DELETE" and _is_mode_label(setup, request):
            refused.set()
            setup.forge.fault("500", times=1, writes_only=True, number=number)

    setup.forge.on_write(refuse)
    report = one_round(setup)
    setup.forge.on_write(None)
    assert refused.is_set()
    assert report.mirror_failed == 1
    assert MODE in labels(setup, number)
    (answered,) = rows(
        setup.db,
        "SELECT answered AND asks_since IS NOT NULL FROM tireless.issue WHERE number = %(n)s",
        {"n": number},
    )
    assert answered == (True,), "the request still stands as answered: not withdrawn"
    assert jobs(setup, number) == ["delivered"]
    with setup.db.connect() as conn:
        conn.execute("UPDATE tireless.mirror_issue SET next_try_at = now()")
    one_round(setup)
    one_round(setup)
    assert MODE not in labels(setup, number)
    assert jobs(setup, number) == ["delivered"]


def test_a_request_made_as_the_mirror_takes_the_mode_label_off_gets_exactly_one_job(
    setup: Setup,
) -> None:
    """The person takes the label off and puts it back (asks again) at the exact moment the
    mirror's DELETE of the finished job's mode label reaches the forge, before it is applied."""
    setup.track(REPO)
    number = asked(setup)
    began_earlier(setup, number)
    deliver(setup.store)
    edited = threading.Event()

    def edit_in_the_window(request: Request) -> None:
        if request.method == "DELETE" and not edited.is_set() and _is_mode_label(setup, request):
            edited.set()
            ask_again(setup, number)

    setup.forge.on_write(edit_in_the_window)
    poll_once(setup)
    setup.forge.on_write(None)
    assert edited.is_set(), "the edit landed inside the mirror's write"
    assert MODE in labels(setup, number), "the person's label is back on the issue"
    for _ in range(2):
        poll_once(setup)
    assert jobs(setup, number) == ["delivered", "pending"], "the new request has its one job"
    deliver(setup.store)
    for _ in range(2):
        poll_once(setup)
    assert jobs(setup, number) == ["delivered", "delivered"]
    assert MODE not in labels(setup, number)
    assert len(comments(setup, number)) == 2, "each finished job one comment"


def _is_mode_label(setup: Setup, request: Request) -> bool:
    if setup.forge.flavour == "github":
        return request.path.endswith("/labels/tireless%2Fplan") or request.path.endswith(MODE)
    mode_id = setup.forge.repo_labels(OWNER, REPO)[MODE].id
    return request.path.endswith(f"/labels/{mode_id}")


def test_a_request_made_again_between_two_polls_while_the_job_ran_gets_its_job(
    setup: Setup,
) -> None:
    number, job = claimed_a_while_ago(setup)
    ask_again(setup, number)  # between two polls: the store never sees the label off
    setup.store.transition(job.id, "delivered", "host1-3", "done")
    for _ in range(3):
        one_round(setup)
    assert jobs(setup, number) == ["delivered", "pending"]
    assert MODE in labels(setup, number)


def test_a_request_the_store_saw_while_the_job_ran_keeps_its_label_and_gets_one_job(
    setup: Setup,
) -> None:
    setup.track(REPO)
    number = asked(setup)
    job = claim(setup.store)
    setup.forge.set_labels(OWNER, REPO, number, ["tireless", f"{STATE}pending"])
    one_round(setup)  # withdrawn: the claim is asked to stop
    setup.forge.set_labels(OWNER, REPO, number, ["tireless", f"{STATE}pending", MODE])
    one_round(setup)  # asks again while the job is live
    setup.store.transition(job.id, "cancelled", "host1-3", "stopped")
    for _ in range(3):
        one_round(setup)
    assert jobs(setup, number) == ["cancelled", "pending"]
    assert MODE in labels(setup, number)
    (comment,) = comments(setup, number)
    assert comment.startswith("tireless: cancelled")


def test_a_finished_jobs_comment_is_written_even_after_a_newer_job_took_the_issue(
    setup: Setup,
) -> None:
    setup.track(REPO)
    number = asked(setup)
    first = deliver(setup.store)
    setup.forge.fault("500", times=None, writes_only=True, number=number)
    one_round(setup)  # every write to the issue fails this round
    setup.forge.clear_faults()
    with setup.db.connect() as conn:  # meanwhile an admin runs it again: a newer job
        conn.execute(
            "SELECT tireless.rerun(%(f)s, %(o)s, %(r)s, %(n)s)",
            {"f": setup.name, "o": OWNER, "r": REPO, "n": number},
        )
        conn.execute("UPDATE tireless.mirror_issue SET next_try_at = now()")
        conn.execute("UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'comment'")
    for _ in range(2):
        one_round(setup)
    (comment,) = comments(setup, number)
    assert comment.endswith(f"<!-- tireless:job:{first} -->")
    assert jobs(setup, number) == ["delivered", "pending"]


def test_a_label_creation_and_a_comment_stored_but_unanswered_are_not_made_twice(
    setup: Setup,
) -> None:
    setup.track(REPO)
    number = setup.forge.create_issue(OWNER, REPO, "asks", PLAN)
    one_round(setup)  # the job
    # The first write (the state label's creation) is stored, then its answer is lost.
    setup.forge.fault("applied-then-reset", times=1)
    one_round(setup)
    assert labels(setup, number)[-1] == f"{STATE}pending"
    deliver(setup.store)
    # Every comment POST is stored and its answer lost, once.
    posts = [0]

    def lose_comment_answer(request: Request) -> None:
        if request.path.endswith("/comments") and posts[0] == 0:
            posts[0] += 1
            setup.forge.fault("applied-then-reset", times=1, number=number)

    setup.forge.on_write(lose_comment_answer)
    for _ in range(2):
        report = one_round(setup)
        with setup.db.connect() as conn:
            conn.execute(
                "UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'comment'"
            )
    setup.forge.on_write(None)
    assert posts[0] == 1
    assert report.error is None
    assert len(comments(setup, number)) == 1
    names = setup.forge.label_names(OWNER, REPO)
    assert len(names) == len(set(names)), names


def test_a_mirror_backlog_does_not_hold_back_the_read(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup.track(REPO)
    for n in range(20):
        setup.forge.create_issue(OWNER, REPO, f"asks {n}", PLAN)
    one_round(setup)  # 20 jobs: 20 pending labels to write
    monkeypatch.setattr("tireless.forge.mirror.MIRROR_BUDGET", 0.2)
    slow = threading.Event()

    def slow_forge(request: Request) -> None:  # 50 ms a write
        slow.wait(0.05)

    setup.forge.on_write(slow_forge)
    late = setup.forge.create_issue(OWNER, REPO, "asked while the backlog waits", PLAN)
    report = one_round(setup)
    setup.forge.on_write(None)
    assert 0 < report.mirrored < 20, "the round stopped writing when its budget ran out"
    assert report.created == 1, "and read all the same"
    assert jobs(setup, late) == ["pending"]
    monkeypatch.setattr("tireless.forge.mirror.MIRROR_BUDGET", MIRROR_BUDGET)
    for _ in range(2):
        one_round(setup)
    assert setup.poll_state()["mirror_backlog"] == 0


def test_the_outcome_comment_neither_notifies_renders_nor_hides(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    job = claim(setup.store, "host1-3 @bob")
    # Someone else plants the job's marker first: it must not stop the mirror's own comment.
    setup.forge.add_comment_as(OWNER, REPO, number, "mallory", f"<!-- tireless:job:{job.id} -->")
    note = (
        "@alice see ```` <img src=x onerror=alert(1)> [x](http://evil) \x1b[31mred\x07"
        f" \u202eevil\u2066 <!-- tireless:job:{job.id} -->"
    )
    setup.store.transition(job.id, "failed", "host1-3 @bob", note)
    poll_once(setup)
    ours = [c for c in comments(setup, number) if c.startswith("tireless:")]
    (comment,) = ours
    head, _blank, fence_open, quoted, fence_close, _blank_too, marker = comment.split("\n")
    assert head == "tireless: failed after 1 attempt"
    assert fence_open == fence_close == "`````"  # longer than the note's four backticks
    assert "@alice" not in quoted
    assert "@\u200dalice" in quoted
    assert "@\u200dbob" in quoted
    assert not any(c in quoted for c in "\x1b\x07\u202e\u2066")
    assert marker == f"<!-- tireless:job:{job.id} -->"
    one_round(setup)
    assert len([c for c in comments(setup, number) if c.startswith("tireless:")]) == 1


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_the_forge_clients_read_label_events_and_their_own_account(flavour: Flavour) -> None:
    with StandinForge(flavour, token=TOKEN) as forge:
        forge.create_repo(OWNER, REPO)
        number = forge.create_issue(OWNER, REPO, "x", PLAN)
        forge.set_labels(OWNER, REPO, number, ["tireless"])
        forge.close_issue(OWNER, REPO, number)
        forge.reopen_issue(OWNER, REPO, number)
        client = client_for(flavour, forge.url, TOKEN)
        try:
            since = datetime.now(UTC) - timedelta(minutes=1)
            events = client.issue_events(OWNER, REPO, number, since)
            assert client.whoami() == MIRROR_LOGIN
        finally:
            client.close()
    assert [(e.kind, e.label, e.actor) for e in events] == [
        ("unlabeled", MODE, "alice"),
        ("closed", None, "alice"),
        ("reopened", None, "alice"),
    ]


def test_trading_one_mode_label_for_another_after_the_job_began_is_not_a_new_request(
    setup: Setup,
) -> None:
    number, job = claimed_a_while_ago(setup)
    now = setup.forge.labels_of(OWNER, REPO, number)  # one edit: plan off, implement on
    setup.forge.set_labels(
        OWNER, REPO, number, [*(n for n in now if n != MODE), "tireless/implement"]
    )
    setup.store.transition(job.id, "delivered", "host1-3", "done")
    for _ in range(3):
        one_round(setup)
    assert jobs(setup, number) == ["delivered"]
    assert labels(setup, number) == ["tireless", f"{STATE}delivered"]


def test_a_secondary_rate_limit_on_a_write_stops_the_forge_not_just_the_write(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(token_variable("gh"), TOKEN)
    with StandinForge("github", token=TOKEN) as forge:
        store.add_forge("gh", "github", forge.url)
        setup = Setup(db, store, forge, "gh")
        setup.track(REPO)
        for n in range(3):
            forge.create_issue(OWNER, REPO, f"asks {n}", PLAN)
        one_round(setup)  # three jobs, three labels to write
        forge.fault("secondary-limit", times=None, writes_only=True)
        writes = len(forge.writes())
        (report,) = setup.round()
        assert len(forge.writes()) - writes == 1, "the first refusal stopped every write"
        assert "rate limited until" in (report.error or "")
        (status,) = store.repo_status()
        assert status.forge_limited_until is not None
        assert (status.forge_limited_until - datetime.now(UTC)).total_seconds() > 50


def test_a_request_made_again_after_a_trade_the_jobs_labels_missed_keeps_its_label(
    setup: Setup,
) -> None:
    """The listing that made the job showed the issue just before the person traded its mode
    label for another, so the job's labels are out of date; while the job runs the person
    withdraws (the new label off) and asks again (it on again). Writing the job's end, the mirror
    keeps the new request's label, and the request gets its job."""
    setup.track(REPO)
    one_round(setup)  # the first read, of no issue: the comments cursor starts before the issue
    number = setup.forge.create_issue(OWNER, REPO, "asks", ["tireless", MODE])
    listing = (
        "/api/v1" if setup.forge.flavour == "gitea" else ""
    ) + f"/repos/{OWNER}/{REPO}/issues"
    listed, traded = threading.Event(), threading.Event()

    def trade_after_the_listing(request: Request) -> None:
        if request.path == listing:
            listed.set()
        elif listed.is_set() and not traded.is_set():
            traded.set()
            setup.forge.set_labels(OWNER, REPO, number, ["tireless", OTHER])

    setup.forge.on_read(trade_after_the_listing)
    # The listing shows MODE; the trade lands at the next read (the issue's comments, newer than
    # the cursor), before the job is made.
    one_round(setup)
    setup.forge.on_read(None)
    assert traded.is_set()
    job = claim(setup.store)
    assert (job.kind, job.labels) == ("plan", ("tireless", MODE)), "the job's labels: stale"
    began = job.created_at.replace(microsecond=0) + timedelta(seconds=1)
    wait_until(lambda: datetime.now(UTC) >= began, "the person's next edit in a later second")
    kept = [n for n in setup.forge.labels_of(OWNER, REPO, number) if n != OTHER]
    setup.forge.set_labels(OWNER, REPO, number, kept)  # withdrawn
    one_round(setup)  # the store sees it: the claim is asked to stop
    setup.forge.set_labels(
        OWNER, REPO, number, [*setup.forge.labels_of(OWNER, REPO, number), OTHER]
    )
    setup.store.transition(job.id, "cancelled", "host1-3", "stopped")
    for _ in range(3):
        one_round(setup)
    assert OTHER in labels(setup, number)
    assert jobs(setup, number) == ["cancelled", "pending"]
