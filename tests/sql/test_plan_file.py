"""A plan's tasks through the SQL functions: attach_plan checks the plan in the database and names
the task and the field of a fault; once the job is delivered forge_writes_due gives each task's issue
(labels, "Part of #P", "Depends on #N", the marker), a dependency before its dependents; the child's
job records the plan's job as its parent, and a proposal gets no job until the opt-in is added."""

from __future__ import annotations

from typing import Any

import pytest

from tests import outbox
from tests.conftest import Database
from tests.helpers import claimed, issue, rows, tracked
from tireless import JobStore
from tireless.errors import InvalidArgument, MalformedPlan, NotHolder
from tireless.models import JobState

PLAN = ("tireless", "tireless/plan")
DISCOVER = ("tireless", "tireless/discover")


def task(title: str = "Do a thing", **extra: Any) -> dict[str, Any]:
    return {"title": title, "body": f"{title}, in detail."} | extra


def run(db: Database, statement: str) -> None:
    with db.connect() as conn:
        conn.execute(statement)


def polled(store: JobStore, db: Database) -> str:
    """The test repository polled by poller-1 (its lease held); the forge's name."""
    store.add_forge("gitea", "gitea", "https://git.example.com/")
    run(db, "UPDATE tireless.repo_poll SET next_poll_at = now() - interval '1 second'")
    (target,) = store.claim_repos_to_poll("poller-1")
    return target.forge


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"title": "x"}, "the plan must be a JSON list of tasks, got object"),
        ([task()] * 51, "the plan has 51 tasks; at most 50"),
        ([task(), "x"], "task 1 must be an object"),
        ([task(), task(), task(), task("")], 'task 3: "title" must be 1 to 200 characters'),
        ([task("t" * 201)], 'task 0: "title" must be 1 to 200 characters'),
        ([task(body=7)], 'task 0: "body" must be text'),
        ([task(body="b" * 60001)], 'task 0: "body" must be text of at most 60000'),
        ([task(lane="no lane")], 'task 0: "lane" must be 1 to 63 letters'),
        ([task(depends_on=[1])], 'task 0: "depends_on" entry 0 must be the index of another task'),
        ([task(depends_on=[0])], 'task 0: "depends_on" entry 0 must be the index of another task'),
        ([task(depends_on=["12"])], 'task 0: "depends_on" entry 0'),
        ([task(depends_on=[1.5]), task()], 'task 0: "depends_on" entry 0'),
        ([task(depends_on=list(range(51)))], 'task 0: "depends_on" has 51 entries; at most 50'),
        ([task(colour="red")], "task 0: unknown field 'colour'"),
        (
            [task(depends_on=[2]), task(depends_on=[0]), task(depends_on=[1])],
            'task 0: "depends_on" makes a cycle',
        ),
    ],
)
def test_a_bad_plan_is_refused_naming_the_task_and_the_field(
    store: JobStore, db: Database, plan: Any, message: str
) -> None:
    tracked(store).enqueue([issue(1, *PLAN)])
    job = claimed(store)
    with pytest.raises(MalformedPlan, match="^malformed plan: " + message.replace("(", r"\(")):
        store.attach_plan(job.id, "w1", plan)
    assert rows(db, "SELECT * FROM tireless.plan_task") == []


def test_only_the_holder_of_a_plan_or_discover_job_attaches_tasks(store: JobStore) -> None:
    tracked(store).enqueue([issue(1, *PLAN), issue(2)])
    plan_job = claimed(store)
    implement_job = claimed(store)
    with pytest.raises(NotHolder):
        store.attach_plan(plan_job.id, "w2", [task()])
    which = {plan_job.number: plan_job, implement_job.number: implement_job}
    with pytest.raises(InvalidArgument, match="only a plan or discover job"):
        store.attach_plan(which[2].id, "w1", [task()])
    assert store.attach_plan(which[1].id, "w1", [task(), task("Another")]) == 2


def test_a_delivered_plan_gives_each_task_its_issue_dependencies_first(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(7, *PLAN)])
    job = claimed(store)
    plan = [
        task("Wire it", depends_on=[1, "#3"], lane="gpu"),
        task("Build it"),
        task("Test it", depends_on=[0]),
    ]
    assert store.attach_plan(job.id, "w1", plan) == 3
    forge = polled(store, db)
    assert (
        outbox.due(store, "task", forge, "acme", "widgets", "poller-1") == []
    )  # not delivered yet
    store.transition(job.id, JobState.DELIVERED, "w1")
    (first,) = outbox.due(store, "task", forge, "acme", "widgets", "poller-1")
    assert (first.task, first.parent_number, first.title) == (1, 7, "Build it")
    assert first.labels == ["tireless", "tireless/implement"]
    assert first.body.endswith(f"Part of #7\n\nOpened by tireless for job {job.id} (task 1).\n\n"
                               f"<!-- tireless:task:{job.id}:1 -->")  # fmt: skip
    assert first.marker == f"<!-- tireless:task:{job.id}:1 -->"
    assert (
        outbox.record(
            store, "task", forge, "acme", "widgets", "poller-1", job.id, 1, result={"number": 11}
        )
        is None
    )
    (second,) = outbox.due(store, "task", forge, "acme", "widgets", "poller-1")
    assert second.task == 0
    assert second.labels == ["tireless", "tireless/implement", "tireless/agent:gpu"]
    assert "Part of #7\n\nDepends on #11\nDepends on #3\n\n" in second.body
    retry = outbox.record(
        store, "task", forge, "acme", "widgets", "poller-1", job.id, 0, error="500"
    )
    assert retry is not None
    assert outbox.due(store, "task", forge, "acme", "widgets", "poller-1") == []  # backing off
    run(db, "UPDATE tireless.forge_write SET next_try_at = now() WHERE kind = 'task' AND task = 0")
    outbox.record(
        store, "task", forge, "acme", "widgets", "poller-1", job.id, 0, result={"number": 12}
    )
    outbox.record(
        store, "task", forge, "acme", "widgets", "poller-1", job.id, 0, result={"number": 99}
    )  # recorded once
    (third,) = outbox.due(store, "task", forge, "acme", "widgets", "poller-1")
    assert third.task == 2
    assert "Depends on #12" in third.body
    outbox.record(
        store, "task", forge, "acme", "widgets", "poller-1", job.id, 2, result={"number": 13}
    )
    opened = rows(db, "SELECT task, child_number FROM tireless.job_tasks(%(j)s)", {"j": job.id})
    assert opened == [(0, 12), (1, 11), (2, 13)]
    # The children's jobs record the plan's job as their parent.
    store.enqueue([issue(n, "tireless", "tireless/implement") for n in (11, 12, 13)])
    parents = rows(
        db, "SELECT number, parent_id FROM tireless.job WHERE number > 7 ORDER BY number"
    )
    assert parents == [(11, job.id), (12, job.id), (13, job.id)]


def test_a_child_seen_before_it_was_recorded_gets_its_parent_when_it_is(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(7, *PLAN)])
    job = claimed(store)
    store.attach_plan(job.id, "w1", [task()])
    store.transition(job.id, JobState.DELIVERED, "w1")
    store.enqueue([issue(8, "tireless", "tireless/implement")])  # the create's answer was lost
    forge = polled(store, db)
    outbox.record(
        store, "task", forge, "acme", "widgets", "poller-1", job.id, 0, result={"number": 8}
    )
    assert db.scalar("SELECT parent_id FROM tireless.job WHERE number = 8") == job.id


def test_a_later_attempt_replaces_the_plan_and_a_failed_one_opens_nothing(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(7, *PLAN)])
    job = claimed(store)
    store.attach_plan(job.id, "w1", [task("First try"), task("Also")])
    store.transition(job.id, JobState.PENDING, "w1", "failed")
    run(db, "UPDATE tireless.job SET available_at = now()")
    again = claimed(store, "w2")
    assert again.attempts == 2
    forge = polled(store, db)
    store.transition(again.id, JobState.DELIVERED, "w2")  # wrote no plan this time
    assert outbox.due(store, "task", forge, "acme", "widgets", "poller-1") == []


def test_a_proposal_gets_no_job_until_a_person_adds_the_opt_in(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(7, *DISCOVER)])
    job = claimed(store)
    store.attach_plan(job.id, "w1", [task("Maybe this")])
    store.transition(job.id, JobState.DELIVERED, "w1")
    forge = polled(store, db)
    (proposal,) = outbox.due(store, "task", forge, "acme", "widgets", "poller-1")
    assert proposal.labels == ["tireless/implement"]
    assert "(proposal 0)" in proposal.body
    outbox.record(
        store, "task", forge, "acme", "widgets", "poller-1", job.id, 0, result={"number": 8}
    )
    assert store.enqueue([issue(8, "tireless/implement")]) == 0
    assert store.enqueue([issue(8, "tireless/implement", "tireless")]) == 1
    assert db.scalar("SELECT parent_id FROM tireless.job WHERE number = 8") == job.id
