"""The job list's one filter (tireless.list_jobs, db/reads.sql): each filter keeps only its jobs,
given filters all hold, pages walk the ids both ways, every role may list, and a filter that
cannot name anything is refused with TL005 naming the value."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, WORK, claimed, issue, tracked
from tireless import JobStore

OTHER = "gadgets"
PLAN = ("tireless", "tireless/plan")
ON_OC = (*WORK, "tireless/agent:oc")


def listed(db: Database, params: dict[str, Any], *, select: str = "j.id") -> list[Any]:
    """What list_jobs answers for named arguments given as SQL expressions over %(...)s values."""
    args = ", ".join(f"{name} => %({name})s" for name in params)
    with db.connect() as conn:
        found = conn.execute(f"SELECT {select} FROM tireless.list_jobs({args}) j", params)
        return [row[0] for row in found.fetchall()]


@pytest.fixture
def jobs(db: Database, store: JobStore) -> dict[str, Any]:
    """Five jobs in two repositories: widgets #1 delivered by w1, widgets #2 (a plan) given back
    by w2, widgets #3 held by w3 in lane oc, gadgets #1 and #4 pending; `between` is a time after
    every change but the last (gadgets #4's creation)."""
    tracked(tracked(store), OTHER)
    for each in [
        issue(1, title="Fix the Login page"),
        issue(2, *PLAN, title="Plan the login rework"),
        issue(3, *ON_OC, title="Speed up search"),
    ]:
        store.enqueue([each])  # one by one: the ids in this order
    first = claimed(store, "w1")
    store.transition(first.id, "delivered", "w1", token=first.claim_token)
    second = claimed(store, "w2")
    store.give_back(second.id, "w2", token=second.claim_token)
    claimed(store, "w3", ["oc"])
    store.enqueue([issue(1, repo=OTHER, title="Login for gadgets")])
    between: datetime = db.scalar("SELECT clock_timestamp()")
    store.enqueue([issue(4, repo=OTHER)])
    with db.connect() as conn:
        ids = conn.execute("SELECT repo, number, id FROM tireless.job").fetchall()
    return {f"{repo}#{number}": job_id for repo, number, job_id in ids} | {"between": between}


def ids_of(jobs: dict[str, Any], *names: str) -> list[int]:
    return sorted(jobs[name] for name in names)


@pytest.mark.parametrize(
    ("params", "kept"),
    [
        ({}, ["widgets#1", "widgets#2", "widgets#3", "gadgets#1", "gadgets#4"]),
        ({"state": "delivered"}, ["widgets#1"]),
        ({"state": "claimed"}, ["widgets#3"]),
        ({"state": "pending"}, ["widgets#2", "gadgets#1", "gadgets#4"]),
        ({"kind": "plan"}, ["widgets#2"]),
        ({"kind": "implement"}, ["widgets#1", "widgets#3", "gadgets#1", "gadgets#4"]),
        ({"lane": "oc"}, ["widgets#3"]),
        ({"lane": "cx"}, []),
        ({"forge": FORGE}, ["widgets#1", "widgets#2", "widgets#3", "gadgets#1", "gadgets#4"]),
        ({"forge": "github"}, []),
        ({"owner": OWNER, "repo": OTHER}, ["gadgets#1", "gadgets#4"]),
        ({"owner": "someone", "repo": REPO}, []),
        ({"words": ["login"]}, ["widgets#1", "widgets#2", "gadgets#1"]),
        ({"words": ["LOGIN", "page"]}, ["widgets#1"]),
        ({"words": []}, ["widgets#1", "widgets#2", "widgets#3", "gadgets#1", "gadgets#4"]),
        ({"worker": "w1"}, ["widgets#1"]),  # ran it: delivered, no holder now
        ({"worker": "w2"}, ["widgets#2"]),  # ran an attempt of it, gave it back
        ({"worker": "w3"}, ["widgets#3"]),  # holds it
        ({"worker": "w4"}, []),
        ({"number": 1}, ["widgets#1", "gadgets#1"]),
    ],
)
def test_each_filter_keeps_only_its_jobs(
    db: Database, jobs: dict[str, Any], params: dict[str, Any], kept: list[str]
) -> None:
    assert listed(db, params) == ids_of(jobs, *kept)


def test_since_keeps_the_jobs_changed_in_that_long(db: Database, jobs: dict[str, Any]) -> None:
    with db.connect() as conn:
        found = conn.execute(
            "SELECT j.id FROM tireless.list_jobs(since => now() - %(between)s) j",
            {"between": jobs["between"]},
        )
        assert [row[0] for row in found.fetchall()] == [jobs["gadgets#4"]]
    assert listed(db, {"since": "1 hour"}) == ids_of(
        jobs, "widgets#1", "widgets#2", "widgets#3", "gadgets#1", "gadgets#4"
    )


@pytest.mark.parametrize(
    ("params", "kept"),
    [
        ({"state": "pending", "words": ["login"]}, ["widgets#2", "gadgets#1"]),
        ({"state": "pending", "words": ["login"], "owner": OWNER, "repo": OTHER}, ["gadgets#1"]),
        ({"number": 1, "kind": "implement", "owner": OWNER, "repo": REPO}, ["widgets#1"]),
        ({"worker": "w2", "state": "pending", "lane": "cc"}, ["widgets#2"]),
        ({"worker": "w2", "state": "delivered"}, []),
        ({"lane": "oc", "kind": "plan"}, []),
    ],
)
def test_the_filters_given_all_hold(
    db: Database, jobs: dict[str, Any], params: dict[str, Any], kept: list[str]
) -> None:
    assert listed(db, params) == ids_of(jobs, *kept)


def test_pages_walk_the_ids_oldest_or_newest_first(db: Database, jobs: dict[str, Any]) -> None:
    every = listed(db, {})
    assert every == sorted(every), "oldest first"
    assert listed(db, {"newest": True}) == every[::-1]
    assert listed(db, {"at_most": 2}) == every[:2]
    assert listed(db, {"at_most": 0}) == []
    assert listed(db, {"after": every[1], "at_most": 2}) == every[2:4]
    assert listed(db, {"before": every[3], "newest": True, "at_most": 2}) == every[1:3][::-1]
    assert listed(db, {"after": every[0], "before": every[4]}) == every[1:4]
    assert listed(db, {"after": every[-1]}) == []


def test_the_rows_are_the_job_list_s(db: Database, jobs: dict[str, Any]) -> None:
    held = jobs["widgets#3"]
    (row,) = listed(db, {"state": "claimed"}, select="to_jsonb(j)")
    with db.connect() as conn:
        (viewed,) = conn.execute(
            "SELECT to_jsonb(v) FROM tireless.job_list v WHERE v.id = %s", [held]
        ).fetchone() or (None,)
    assert row == viewed
    assert "claim_token" not in row


@pytest.mark.parametrize("group", ["tireless_runner", "tireless_poller", "tireless_admin"])
def test_every_role_lists_jobs(db: Database, jobs: dict[str, Any], group: str) -> None:
    with db.connect() as conn:
        conn.execute(f"SET ROLE {group}")
        found = conn.execute("SELECT j.id FROM tireless.list_jobs(state => 'claimed') j")
        assert [row[0] for row in found.fetchall()] == [jobs["widgets#3"]]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"state": "done"}, "'done'"),
        ({"kind": "fix"}, "'fix'"),
        ({"lane": "no lane"}, "'no lane'"),
        ({"forge": ""}, "''"),
        ({"owner": OWNER}, "repo null"),
        ({"repo": REPO}, "owner null"),
        ({"owner": "", "repo": REPO}, "owner ''"),
        ({"since": "-1 hour"}, "-01:00:00"),
        ({"words": ["login", ""]}, '{login,""}'),
        ({"words": ["login", None]}, "{login,NULL}"),
        ({"worker": " "}, "' '"),
        ({"number": 0}, "got 0"),
        ({"after": -1}, "after -1"),
        ({"before": -5}, "before -5"),
        ({"at_most": -1}, "at_most -1"),
        ({"at_most": None}, "at_most null"),
        ({"newest": None}, "newest null"),
    ],
)
def test_a_filter_that_names_nothing_is_refused_naming_it(
    db: Database, jobs: dict[str, Any], params: dict[str, Any], named: str
) -> None:
    with pytest.raises(psycopg.Error) as refused:
        listed(db, params)
    assert refused.value.sqlstate == "TL005"
    assert named in str(refused.value)
