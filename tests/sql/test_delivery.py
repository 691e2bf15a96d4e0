"""Delivery (issue 33): deliver records what the holder pushed in the transaction that delivers the
job and queues its pull request for the mirror, refusing exactly what transition refuses and every
malformed value; the mirror lists the pull request until it records it, and the issue's next
delivery updates it; checkpoints and the brief tell a later attempt where the work stands; the
outcome comment names the pull request."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests import outbox
from tests.conftest import Database
from tests.helpers import (
    FORGE,
    OWNER,
    REPO,
    claimed,
    end_lease,
    history,
    issue,
    jobs,
    make_available,
    rows,
    tracked,
    wait_until_blocked,
)
from tests.support.roles import Login, login_name
from tireless import Job, JobStore
from tireless.errors import (
    InvariantViolated,
    MalformedDelivery,
    NotHolder,
    PermissionDenied,
    TirelessError,
    translate,
)
from tireless.models import MirrorPull, PullAction

HEAD, BASE, LATER = "a1" * 20, "b2" * 20, "c3" * 20
POLLER = "p1"
URL = "https://git.example.com/acme/widgets/pulls/12"


def deliver(store: JobStore, job: Job, head: str = HEAD, **extra: Any) -> Job:
    """The holder of job delivers branch tireless/<number> at head, made on main at BASE."""
    assert job.claimed_by is not None
    return store.deliver(
        job.id,
        job.claimed_by,
        f"tireless/{job.number}",
        head,
        "main",
        BASE,
        token=job.claim_token,
        **extra,
    )


def repository(store: JobStore) -> JobStore:
    """The store with the test repository tracked and its forge registered (the poller reads it)."""
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    return tracked(store)


def pulls_due(store: JobStore) -> list[MirrorPull]:
    """What the mirror reads for the test repository, holding its poll lease."""
    store.claim_repos_to_poll(POLLER)
    return outbox.due(store, "pull", FORGE, OWNER, REPO, POLLER)


def record_pull(store: JobStore, job_id: int, number: int = 12) -> None:
    """The mirror opened (or found, or updated) job_id's pull request: `number`."""
    store.claim_repos_to_poll(POLLER)
    url = f"https://git.example.com/acme/widgets/pulls/{number}"
    assert (
        outbox.record(
            store, "pull", FORGE, OWNER, REPO, POLLER, job_id, result=outbox.pull(number, url)
        )
        is None
    )


def delivery(db: Database, job_id: int) -> tuple[Any, ...]:
    found = rows(
        db,
        "SELECT changed, branch, head, base_branch, base, draft, pull_number, pull_url"
        " FROM tireless.deliveries WHERE job_id = %(id)s",
        {"id": job_id},
    )
    assert len(found) == 1
    return found[0]


def again(store: JobStore, number: int = 1) -> Job:
    """A re-request of the issue (an admin's rerun), claimed by w2."""
    store.rerun(FORGE, OWNER, REPO, number)
    return claimed(store, "w2")


def stored(db: Database) -> tuple[Any, ...]:
    """Everything deliver and record_checkpoint could have written."""
    return (
        [(j.id, j.state, j.claimed_by, j.note) for j in jobs(db)],
        rows(db, "SELECT * FROM tireless.delivery"),
        rows(db, "SELECT * FROM tireless.forge_write"),
        rows(db, "SELECT * FROM tireless.checkpoint"),
    )


def test_deliver_records_what_was_pushed_and_queues_one_pull_request(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1, title="Widgets  break\non Tuesdays")])
    job = claimed(store)
    store.attach_report(job.id, "w1", "Fixed it. <img src=x> @alice")
    done = deliver(store, job, draft=True)
    assert (done.state, done.claimed_by, done.note) == ("delivered", None, None)
    assert history(db, job.id)[-1] == ("claimed", "delivered", "w1", 1, None)
    assert delivery(db, job.id) == (True, "tireless/1", HEAD, "main", BASE, True, None, None)
    assert rows(db, "SELECT branch, head, pull_number FROM tireless.job_list") == [
        ("tireless/1", HEAD, None)
    ]
    assert db.scalar("SELECT count(*) FROM tireless.forge_write WHERE kind = 'pull'") == 1
    (pull,) = pulls_due(store)
    assert (pull.job_id, pull.number, pull.action, pull.pull_number) == (job.id, 1, "open", None)
    assert (pull.head_branch, pull.head, pull.base_branch, pull.draft) == (
        "tireless/1",
        HEAD,
        "main",
        True,
    )
    assert pull.title == "Fix #1: Widgets break on Tuesdays"
    assert pull.body == (
        "Closes #1\n\nFixed it. <\u200bimg src=x> @\u200dalice\n\n"
        f"Delivered by tireless: job {job.id}, attempt 1.\n\n<!-- tireless:pull:1 -->"
    )
    assert pull.marker == "<!-- tireless:pull:1 -->"


def test_the_pull_request_is_listed_until_recorded_and_then_never_again(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1)])
    job = claimed(store)
    deliver(store, job)
    assert [p.job_id for p in pulls_due(store)] == [job.id]
    assert [p.job_id for p in pulls_due(store)] == [job.id], "listing writes nothing"
    retry = outbox.record(store, "pull", FORGE, OWNER, REPO, POLLER, job.id, error="HTTP 502")
    assert retry is not None
    assert retry > datetime.now(UTC)
    assert pulls_due(store) == [], "backing off"
    assert rows(db, "SELECT pull_failures, pull_error FROM tireless.deliveries") == [
        (1, "HTTP 502")
    ]
    with db.connect() as conn:
        conn.execute("UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'pull'")
    assert [p.job_id for p in pulls_due(store)] == [job.id]
    record_pull(store, job.id)
    assert pulls_due(store) == []
    assert delivery(db, job.id)[-2:] == (12, URL)
    assert rows(db, "SELECT pull_number, pull_url FROM tireless.job_list") == [(12, URL)]
    assert rows(db, "SELECT pull_failures, pull_error FROM tireless.deliveries") == [(0, None)]
    record_pull(store, job.id)  # recorded twice: harmless
    assert pulls_due(store) == []
    assert (
        db.scalar(
            "SELECT count(*) FROM tireless.forge_write WHERE kind = 'pull' AND written_at IS NULL"
        )
        == 0
    )


def test_a_second_delivery_of_the_issue_reuses_the_branch_and_updates_its_pull_request(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1)])
    first = claimed(store)
    deliver(store, first)
    record_pull(store, first.id)
    second = again(store)
    brief = store.job_brief(second.id)
    assert (brief.branch, brief.branch_head, brief.pull_number, brief.pull_url) == (
        "tireless/1",
        HEAD,
        12,
        URL,
    )
    deliver(store, second, head=LATER)
    (pull,) = pulls_due(store)
    assert (pull.job_id, pull.action, pull.pull_number, pull.head) == (
        second.id,
        PullAction.UPDATE,
        12,
        LATER,
    )
    record_pull(store, second.id)
    assert pulls_due(store) == []
    assert delivery(db, second.id)[1:3] + delivery(db, second.id)[-2:] == (
        "tireless/1",
        LATER,
        12,
        URL,
    )
    assert store.job_brief(second.id).branch_head == LATER


def test_the_newest_delivery_carries_an_older_one_still_waiting_for_its_pull_request(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1)])
    first = claimed(store)
    deliver(store, first)
    second = again(store)
    deliver(store, second, head=LATER)
    (pull,) = pulls_due(store)
    assert (pull.job_id, pull.action, pull.head) == (second.id, "open", LATER)
    record_pull(store, second.id, 5)
    assert pulls_due(store) == []
    assert [delivery(db, j.id)[-2] for j in (first, second)] == [5, 5]


def test_deliver_with_no_change_pushes_nothing_and_queues_no_pull_request(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1), issue(2)])
    job, other = claimed(store), claimed(store)
    done = store.deliver(job.id, "w1", token=job.claim_token, draft=True)
    assert (done.state, done.note) == ("delivered", "no change")
    store.deliver(other.id, "w1", note="no change: already fixed upstream")
    assert delivery(db, job.id) == (False, None, None, None, None, False, None, None)
    assert rows(db, "SELECT note FROM tireless.job ORDER BY id") == [
        ("no change",),
        ("no change: already fixed upstream",),
    ]
    assert db.scalar("SELECT count(*) FROM tireless.forge_write WHERE kind = 'pull'") == 0
    assert pulls_due(store) == []
    brief = store.job_brief(again(store).id)
    assert (brief.branch, brief.branch_head, brief.pull_number) == ("tireless/1", None, None)


def test_an_untracked_repository_gets_its_delivery_but_no_pull_request(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1)])
    job = claimed(store)
    store.untrack_repo(FORGE, OWNER, REPO)
    deliver(store, job)
    assert delivery(db, job.id)[:3] == (True, "tireless/1", HEAD)
    assert rows(db, "SELECT pull_queued_at, pull_written_at FROM tireless.deliveries") == [
        (None, None)
    ]


# (name, how to find the job and the worker that asks) for each refusal of a holder's call
Refusal = Callable[[dict[str, Job]], tuple[int, str | None, uuid.UUID | None]]
REFUSALS: dict[str, Refusal] = {
    "another worker": lambda j: (j["held"].id, "w2", j["held"].claim_token),
    "a stale token": lambda j: (j["held"].id, "w1", uuid.uuid4()),
    "no worker": lambda j: (j["held"].id, None, None),
    # With its own claim's token the holder's finish is answered as done (tests/sql/test_ended_claims.py).
    "a finished job": lambda j: (j["finished"].id, "w1", None),
    "a pending job": lambda j: (j["pending"].id, "w1", None),
    "an unknown job": lambda j: (987654321, "w1", None),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_deliver_refuses_exactly_what_transition_refuses_and_changes_nothing(
    store: JobStore, db: Database, case: str
) -> None:
    repository(store).enqueue([issue(1), issue(2), issue(3)])
    held, finished = claimed(store), claimed(store)
    store.transition(finished.id, "cancelled", "w1", token=finished.claim_token)
    pending = jobs(db)[2]
    job_id, worker, token = REFUSALS[case]({"held": held, "finished": finished, "pending": pending})
    before = stored(db)
    with pytest.raises(TirelessError) as by_deliver:
        store.deliver(job_id, worker, "tireless/1", HEAD, "main", BASE, token)  # type: ignore[arg-type]
    with pytest.raises(TirelessError) as by_transition:
        store.transition(job_id, "delivered", worker, token=token)
    refusals = [
        (type(e.value), e.value.sqlstate, str(e.value), e.value.detail)
        for e in (by_deliver, by_transition)
    ]
    assert refusals[0] == refusals[1]
    assert stored(db) == before


def test_another_runner_login_may_not_deliver_or_checkpoint_for_the_holder(
    store: JobStore,
    db: Database,
    login: Login,
) -> None:
    repository(store).enqueue([issue(1)])
    first, second = login("tireless_runner"), login("tireless_runner")
    with JobStore(first) as host1, JobStore(second) as host2:
        job = claimed(host1, "host1-w1")
        token = job.claim_token
        before = stored(db)
        with pytest.raises(NotHolder) as refusal:
            host2.deliver(job.id, "host1-w1", "tireless/1", HEAD, "main", BASE, token)
        assert refusal.value.detail == (
            f"The job was claimed by the login {login_name(first)}, not by {login_name(second)}."
        )
        with pytest.raises(NotHolder):
            host2.record_checkpoint(job.id, "host1-w1", "refs/tireless/checkpoints/1", HEAD, token)
        assert stored(db) == before
        host1.record_checkpoint(job.id, "host1-w1", "refs/tireless/checkpoints/1", HEAD, token)
        assert host1.deliver(job.id, "host1-w1", "tireless/1", HEAD, "main", BASE, token).state == (
            "delivered"
        )
    assert rows(
        db, "SELECT worker, login FROM tireless.job_event WHERE to_state = 'delivered'"
    ) == [("host1-w1", login_name(first))]


def test_runners_deliver_and_checkpoint_pollers_write_pull_requests_and_the_tables_are_private(
    store: JobStore,
    login: Login,
) -> None:
    repository(store).enqueue([issue(1)])
    with (
        JobStore(login("tireless_runner")) as runner,
        JobStore(login("tireless_poller")) as poller,
    ):
        job = claimed(runner)
        runner.record_checkpoint(job.id, "w1", "refs/tireless/checkpoints/1", HEAD)
        assert runner.job_brief(job.id).checkpoint_commit == HEAD
        with pytest.raises(PermissionDenied):
            poller.deliver(job.id, "w1")
        deliver(runner, job)
        with pytest.raises(PermissionDenied):
            outbox.due(runner, "pull", FORGE, OWNER, REPO, POLLER)
        (pull,) = pulls_due(poller)
        record_pull(poller, pull.job_id)
        with pytest.raises(PermissionDenied):
            outbox.record(
                runner, "pull", FORGE, OWNER, REPO, POLLER, job.id, result=outbox.pull(12, URL)
            )
    for group in ("tireless_runner", "tireless_poller"):
        with psycopg.connect(login(group), autocommit=True) as conn:
            for table in ("delivery", "checkpoint", "forge_write"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(f"SELECT FROM tireless.{table}")
            assert conn.execute("SELECT count(*) FROM tireless.deliveries").fetchone() == (1,)


MALFORMED = [
    ({"branch": "tireless 1"}, "branch must be a git ref name, got 'tireless 1'"),
    ({"branch": "tireless/1.lock"}, "branch must be a git ref name, got 'tireless/1.lock'"),
    ({"branch": "-tireless/1"}, "branch must be a git ref name, got '-tireless/1'"),
    ({"branch": "tireless/`1`"}, "branch must be a git ref name, got 'tireless/`1`'"),
    ({"base_branch": "main~1"}, "base_branch must be a git ref name, got 'main~1'"),
    ({"head": HEAD.upper()}, f"head must be a full commit id, got '{HEAD.upper()}'"),
    ({"head": "a1b2c3d"}, "head must be a full commit id, got 'a1b2c3d'"),
    ({"head": None}, "head must be a full commit id, got null"),
    ({"base": "zz" * 20}, f"base must be a full commit id, got '{'zz' * 20}'"),
    (
        {"branch": "main"},
        "branch 'main' is the base branch; a pull request goes from its branch to another",
    ),
    ({"head": BASE}, f"head {BASE} is the base commit: nothing was committed"),
]


@pytest.mark.parametrize(("values", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_deliver_refuses_a_malformed_value_naming_it_and_changes_nothing(
    store: JobStore, db: Database, values: dict[str, Any], message: str
) -> None:
    repository(store).enqueue([issue(1)])
    job = claimed(store)
    given = {"branch": "tireless/1", "head": HEAD, "base_branch": "main", "base": BASE} | values
    before = stored(db)
    with pytest.raises(MalformedDelivery) as refusal:
        store.deliver(job.id, "w1", token=job.claim_token, **given)
    assert (refusal.value.sqlstate, str(refusal.value)) == ("TL009", message)
    assert stored(db) == before


@pytest.mark.parametrize(
    ("ref", "commit", "message"),
    [
        ("refs/tireless/checkpoint 1", HEAD, "ref must be a git ref name"),
        ("refs/tireless/checkpoints/1", "HEAD", "commit must be a full commit id, got 'HEAD'"),
        ("tireless/1", HEAD, "ref 'tireless/1' is the pull request's branch"),
        ("refs/heads/tireless/1", HEAD, "ref 'refs/heads/tireless/1' is the pull request's branch"),
    ],
)
def test_a_checkpoint_refuses_a_malformed_value_and_the_pull_request_branch(
    store: JobStore, db: Database, ref: str, commit: str, message: str
) -> None:
    repository(store).enqueue([issue(1)])
    job = claimed(store)
    before = stored(db)
    with pytest.raises(MalformedDelivery) as refusal:
        store.record_checkpoint(job.id, "w1", ref, commit, job.claim_token)
    assert str(refusal.value).startswith(message)
    assert stored(db) == before


def test_a_later_attempt_of_the_job_is_briefed_with_its_last_checkpoint(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1)])
    job = claimed(store)
    assert store.job_brief(job.id).checkpoint_ref is None
    ref = f"refs/tireless/checkpoints/{job.id}"
    store.record_checkpoint(job.id, "w1", ref, HEAD, job.claim_token)
    store.record_checkpoint(job.id, "w1", ref, LATER, job.claim_token)
    with pytest.raises(NotHolder):
        store.record_checkpoint(job.id, "w2", ref, BASE)
    with pytest.raises(NotHolder):
        store.record_checkpoint(job.id, "w1", ref, BASE, uuid.uuid4())
    store.transition(job.id, "pending", "w1", note="killed", token=job.claim_token)
    make_available(db, job.id)
    retried = claimed(store, "w2")
    assert retried.attempts == 2
    brief = store.job_brief(retried.id)
    assert (brief.checkpoint_ref, brief.checkpoint_commit, brief.branch_head) == (ref, LATER, None)
    assert rows(db, "SELECT job_id, attempt, ref, commit FROM tireless.checkpoints") == [
        (job.id, 1, ref, LATER)
    ]
    assert brief.branch == "tireless/1", "a checkpoint is never the branch"


def test_the_outcome_comment_waits_for_the_pull_request_and_names_it(
    store: JobStore, db: Database
) -> None:
    repository(store).enqueue([issue(1), issue(2)])
    job, other = claimed(store), claimed(store)
    deliver(store, job)
    deliver(store, other)
    store.claim_repos_to_poll(POLLER)
    store.mirror_writes(FORGE, OWNER, REPO, POLLER)  # reads the ends: the comments are queued
    assert outbox.due(store, "comment", FORGE, OWNER, REPO, POLLER) == []
    record_pull(store, job.id)
    for _ in range(3):  # the other's pull request fails three times in a row
        outbox.record(store, "pull", FORGE, OWNER, REPO, POLLER, other.id, error="HTTP 403")
    comments = {c.job_id: c.body for c in outbox.due(store, "comment", FORGE, OWNER, REPO, POLLER)}
    assert comments[job.id].splitlines()[0] == (
        "tireless: delivered as #12 (branch `tireless/1`) after 1 attempt"
    )
    assert comments[other.id].splitlines()[0] == (
        "tireless: delivered (branch `tireless/2`) after 1 attempt"
    )


def test_a_delivery_belongs_to_a_delivered_job_of_its_issue(store: JobStore, db: Database) -> None:
    repository(store).enqueue([issue(1), issue(2)])
    held, done = claimed(store), claimed(store)
    store.transition(done.id, "delivered", "w1")
    insert = (
        "INSERT INTO tireless.delivery (job_id, forge, owner, repo, number, branch, head,"
        " base_branch, base) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    )
    cases = [
        ((held.id, FORGE, OWNER, REPO, 1, "tireless/1", HEAD, "main", BASE), "delivery_of_a_delivered_job"),
        ((done.id, FORGE, OWNER, REPO, 1, "tireless/2", HEAD, "main", BASE), "delivery_names_its_job_s_issue"),
        ((done.id, FORGE, OWNER, REPO, 2, "tireless/2", None, "main", BASE), "a_change_names_branch_head_and_base"),
        ((done.id, FORGE, OWNER, REPO, 2, "main", HEAD, "main", BASE), "pull_request_is_not_its_own_base"),
        ((done.id, FORGE, OWNER, REPO, 2, "tireless/2", BASE, "main", BASE), "a_change_moves_past_its_base"),
        ((done.id, FORGE, OWNER, REPO, 2, "tireless/2", "X" * 40, "main", BASE), "head_is_a_commit_id"),
    ]  # fmt: skip
    with db.connect() as conn:
        for values, rule in cases:
            with pytest.raises(psycopg.errors.CheckViolation) as broken:
                conn.execute(insert, values)
            mapped = translate(broken.value)
            assert isinstance(mapped, InvariantViolated)
            assert mapped.constraint == rule


def test_the_ref_and_commit_checks_are_the_rules_of_the_tables(db: Database) -> None:
    """is_ref_name and is_commit_id (which deliver and record_checkpoint test first, to name the
    value) accept exactly what the tables' constraints accept, and each table spells the rule
    the same way."""
    names = ["tireless/7", "main", "refs/tireless/checkpoints/7", "bot!/7", "ü/7", "a@b", "x-y_z.1+2",
             "", "-x", "a b", "a..b", "a/.b", ".a", "a.lock", "a.lock/b", "a/", "/a", "a//b", "a.",
             "a@{b", "@", "a~1", "a^", "a:b", "a?", "a*", "a[b", "a\\b", "a`b", "a<b", "a>b", 'a"b',
             "a\tb", "a\x7fb", "a\u202eb", "a" * 255, "a" * 256]  # fmt: skip
    commits = [HEAD, "ab" * 32, HEAD.upper(), HEAD[:39], "ab" * 33, "g" * 40, " " + HEAD[1:]]
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)"
            " VALUES ('gitea', 'acme', 'widgets', 1, 'implement', 'cc')"
        )

        def accepted(ref: str, commit: str) -> bool:
            try:
                with conn.transaction(force_rollback=True):
                    conn.execute(
                        "INSERT INTO tireless.checkpoint (job_id, attempt, ref, commit)"
                        " SELECT max(id), 1, %s, %s FROM tireless.job",
                        [ref, commit],
                    )
            except psycopg.errors.CheckViolation:
                return False
            return True

        def check(function: str, value: str) -> bool:
            row = conn.execute(f"SELECT coalesce(tireless.{function}(%s), false)", [value])
            return bool(row.fetchone()[0])  # type: ignore[index]

        assert [accepted(n, HEAD) for n in names] == [check("is_ref_name", n) for n in names]
        assert [accepted("refs/x", c) for c in commits] == [
            check("is_commit_id", c) for c in commits
        ]
        assert sum(check("is_ref_name", n) for n in names) == 8
        assert [check("is_commit_id", c) for c in commits] == [True, True] + [False] * 5

        def rule(name: str, column: str) -> str:
            text: str = conn.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s", [name]
            ).fetchone()[0]  # type: ignore[index]
            return text.replace(column, "name")

        ref_rules = {
            rule("branch_is_a_ref_name", "branch"),
            rule("base_branch_is_a_ref_name", "base_branch"),
            rule("checkpoint_ref_is_a_ref_name", "ref"),
        }
        assert len(ref_rules) == 1
        commit_rules = {
            rule("head_is_a_commit_id", "head"),
            rule("base_is_a_commit_id", "base"),
            rule("checkpoint_commit_is_a_commit_id", "commit"),
        }
        assert len(commit_rules) == 1


def test_a_delivery_that_waits_for_the_sweeper_is_refused_and_records_nothing(
    store: JobStore, db: Database
) -> None:
    """The sweeper holds the expired claim's row; deliver waits for it, then finds the job no
    longer held: TL004, as transition, and no delivery and no pull request."""
    repository(store).enqueue([issue(1)])
    job = claimed(store)
    end_lease(db, job.id)
    outcome: list[BaseException | Job] = []
    with db.connect() as sweeper, db.connect() as runner:
        pid = runner.info.backend_pid
        with sweeper.transaction():
            assert sweeper.execute("SELECT tireless.expire_stale_claims()").fetchone() == (1,)
            with JobStore(runner) as held:

                def delivering() -> None:
                    try:
                        outcome.append(deliver(held, job))
                    except TirelessError as refused:
                        outcome.append(refused)

                thread = threading.Thread(target=delivering)
                thread.start()
                wait_until_blocked(db, pid, sweeper.info.backend_pid, "deliver waits for the sweep")
        thread.join(timeout=30)
    assert len(outcome) == 1
    assert isinstance(outcome[0], NotHolder)
    assert rows(db, "SELECT state::text FROM tireless.job") == [("pending",)]
    assert db.scalar("SELECT count(*) FROM tireless.delivery") == 0
    assert db.scalar("SELECT count(*) FROM tireless.forge_write WHERE kind = 'pull'") == 0


def test_recording_a_pull_request_does_not_hold_back_the_issue_s_next_delivery(
    store: JobStore, db: Database
) -> None:
    """The mirror records job 1's pull request in a transaction still open while the runner
    delivers job 2 of the same issue (lock_timeout 2 s: a wait would fail the test); the next
    listing updates the pull request with job 2's head."""
    repository(store).enqueue([issue(1)])
    first = claimed(store)
    deliver(store, first)
    second = again(store)
    store.claim_repos_to_poll(POLLER)
    (written,) = outbox.listed(store, "pull", FORGE, OWNER, REPO, POLLER)
    with (
        db.connect(lock_timeout="2s") as mirror,
        db.connect(lock_timeout="2s") as conn,
        mirror.transaction(),
    ):
        mirror.execute(
            "SELECT tireless.record_forge_write(forge => %s, owner => %s, repo => %s,"
            " poller => %s, id => %s, result => %s)",
            [FORGE, OWNER, REPO, POLLER, written.id, Jsonb(outbox.pull(12, URL))],
        )
        assert deliver(JobStore(conn), second, head=LATER).state == "delivered"
    (pull,) = pulls_due(store)
    assert (pull.job_id, pull.action, pull.pull_number, pull.head) == (
        second.id,
        "update",
        12,
        LATER,
    )


def test_record_push_is_the_holders_and_answers_every_head_tireless_put_on_the_branch(
    db: Database, store: JobStore
) -> None:
    tracked(store)
    store.enqueue([issue(7)])
    job = store.claim_next("w1", ["cc"])
    assert job is not None
    one, two = "1" * 40, "2" * 40
    with pytest.raises(NotHolder):
        store.record_push(job.id, "w2", "tireless/7", one, job.claim_token)
    with pytest.raises(MalformedDelivery):
        store.record_push(job.id, "w1", "tireless/7", "not-a-commit", job.claim_token)
    assert db.scalar("SELECT count(*) FROM tireless.push") == 0, "a refusal records nothing"
    assert store.record_push(job.id, "w1", "tireless/7", one, job.claim_token) == [one]
    assert store.record_push(job.id, "w1", "tireless/7", two, job.claim_token) == [two, one]
    assert store.record_push(job.id, "w1", "tireless/other", one, job.claim_token) == [one]
