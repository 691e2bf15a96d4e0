"""No lock a login outside the tireless roles can take blocks the sweeper, enqueue or the poll,
and one enqueue call can neither hold every repository nor fill the shared lock table."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, end_lease, enqueue_jobs, issue, tracked
from tests.support.roles import Login
from tireless import JobStore
from tireless.errors import MalformedIssue

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster

# The advisory keys the functions took before 0019_holder_login: a repository's issues (enqueue,
# record_poll, rerun, the mirror), a lane's sweep, and the history rollup.
OLD_REPO_KEY = (
    "pg_advisory_lock(hashtext('tireless.issue'),"
    " hashtext(jsonb_build_array(%(forge)s::text, %(owner)s::text, %(repo)s::text)::text))"
)
OLD_SWEEP_KEY = "pg_advisory_lock(hashtext('tireless.expire_stale_claims'), hashtext(%(lane)s))"
OLD_ROLLUP_KEY = "pg_advisory_lock(hashtext('tireless.roll_up_history'))"


def impatient(conninfo: str) -> str:
    """The conninfo with a short lock_timeout: a call that waits on a lock fails instead of hanging."""
    return make_conninfo(conninfo, options="-c lock_timeout=2s")


def test_an_outside_login_holding_every_old_lock_changes_nothing(
    store: JobStore,
    db: Database,
    login: Login,
) -> None:
    enqueue_jobs(store, 2)
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    with psycopg.connect(login(None), autocommit=True) as outsider:
        keys = {"forge": FORGE, "owner": OWNER, "repo": REPO, "lane": "cc"}
        outsider.execute(f"SELECT {OLD_REPO_KEY}, {OLD_SWEEP_KEY}, {OLD_ROLLUP_KEY}", keys)
        # The locks that replace them are out of its reach.
        for table in ("tracked_repo", "sweep_slot", "lane", "history_rollup"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                outsider.execute(f"SELECT FROM tireless.{table} FOR KEY SHARE")
            with pytest.raises(psycopg.errors.InsufficientPrivilege), outsider.transaction():
                outsider.execute(f"LOCK TABLE tireless.{table} IN ACCESS SHARE MODE")
        with (
            JobStore(impatient(login("tireless_runner"))) as runner,
            JobStore(impatient(login("tireless_poller"))) as poller,
        ):
            job = runner.claim_next("host1", ["cc"])
            assert job is not None
            end_lease(db, job.id)
            assert runner.expire_stale_claims() == 1, "the sweeper proceeds"
            assert poller.enqueue([issue(3)]) == 1, "enqueue proceeds"
            assert [r.repo for r in poller.claim_repos_to_poll("p1")] == [REPO]
            outcome = poller.record_poll(FORGE, OWNER, REPO, "p1", [issue(4)], None, None, True)
            assert outcome.created == 1, "the poll proceeds"
            second = runner.claim_next("host1", ["cc"])
            assert second is not None
            runner.transition(second.id, "delivered", "host1", token=second.claim_token)
        with psycopg.connect(login("tireless_runner"), autocommit=True) as reader:
            counted = reader.execute("SELECT tireless.roll_up_history()").fetchone()
            assert counted == (1,), "the history rollup proceeds"
        # The outsider still holds its keys: nothing waited for them.
        held = outsider.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ).fetchone()
        assert held == (3,)


def distinct_repositories(count: int) -> list[dict[str, Any]]:
    return [issue(1, repo=f"r{n}").as_json() for n in range(count)]


def test_fifteen_thousand_repositories_in_one_call_are_refused_while_others_work(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    with db.connect(autocommit=False, lock_timeout="2s") as other:
        # Another session works in the same repository and lane, inside an open transaction.
        other.execute("SELECT tireless.enqueue(%s)", [json.dumps([issue(2).as_json()])])
        with (
            JobStore(impatient(db.conninfo)) as caller,
            pytest.raises(MalformedIssue) as refusal,
        ):
            caller.enqueue(distinct_repositories(15_000))
        assert str(refusal.value) == "a batch names at most 1000 repositories, got 15000"
        claimed = other.execute(
            "SELECT count(*) FROM tireless.claim_next(worker => 'w', lanes => '{cc}')"
        ).fetchone()
        assert claimed == (1,)
        other.commit()
    assert db.scalar("SELECT count(*) FROM tireless.job") == 2


def test_a_call_of_many_repositories_fills_no_lock_table(store: JobStore, db: Database) -> None:
    """Each repository's lock is a row lock, kept in the row, not in the shared lock table."""
    repos = [f"r{n}" for n in range(1000)]
    for repo in repos:
        tracked(store, repo)
    with (
        db.connect(autocommit=False) as caller,
        db.connect(lock_timeout="2s") as other,
        JobStore(impatient(db.conninfo)) as elsewhere,
    ):
        created = caller.execute(
            "SELECT tireless.enqueue(%s)", [json.dumps(distinct_repositories(1000))]
        ).fetchone()
        assert created == (1000,)
        held = other.execute(
            "SELECT count(*) FROM pg_locks WHERE pid = %s", [caller.info.backend_pid]
        ).fetchone()
        assert held is not None
        assert held[0] < 100
        # Meanwhile a repository the open call does not name is enqueued at once.
        assert tracked(elsewhere).enqueue([issue(1)]) == 1
        caller.commit()
    assert db.scalar("SELECT count(*) FROM tireless.job") == 1001
