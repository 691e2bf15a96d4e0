"""The three group roles: each login member may call what its role may call and nothing more,
tables are never writable directly, and a hostile search_path changes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, enqueue_jobs, issue, rows, tracked
from tests.support.roles import GROUPS, Login, login_name
from tireless import JobStore
from tireless.errors import NotHolder, PermissionDenied

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster

# Each table the roles must not write, with a column an UPDATE would set.
LOCKED_TABLES = {
    "job": "state",
    "job_event": "note",
    "tracked_repo": "repo",
    "lane": "paused",
    "policy": "label_prefix",
    "issue": "title",
    "forge": "base_url",
    "repo_poll": "etag",
}


def refused(conn: psycopg.Connection[Any], query: str) -> str | None:
    """The SQLSTATE a statement fails with, or None when it succeeds."""
    try:
        conn.execute(query)
    except psycopg.Error as error:
        return error.sqlstate
    return None


def pending_job(store: JobStore, db: Database) -> int:
    """Track the repository and enqueue one issue; the new pending job's id."""
    enqueue_jobs(store, 1)
    job_id: int = db.scalar("SELECT max(id) FROM tireless.job")
    return job_id


def test_a_runner_claims_renews_finishes_its_claim_and_sweeps(
    store: JobStore, login: Login
) -> None:
    enqueue_jobs(store, 2)
    with JobStore(login("tireless_runner")) as runner:
        job = runner.claim_next("host1", ["cc"])
        assert job is not None
        assert job.claimed_by == "host1"
        assert runner.renew_claim(job.id, "host1", timedelta(minutes=5), token=job.claim_token)
        assert (
            runner.transition(job.id, "delivered", "host1", token=job.claim_token).state
            == "delivered"
        )
        assert runner.expire_stale_claims() == 0
        second = runner.claim_next("host1", ["cc"])
        assert second is not None
        assert runner.heartbeat(second.id, "host1", token=second.claim_token) == "held"
        assert [s.repo for s in runner.repo_status()] == [REPO]


def test_a_poller_reads_tracking_enqueues_and_reroutes(store: JobStore, login: Login) -> None:
    tracked(store)
    with JobStore(login("tireless_poller")) as poller:
        assert [(r.forge, r.owner, r.repo) for r in poller.tracked_repos()] == [
            (FORGE, OWNER, REPO)
        ]
        assert poller.enqueue([issue(7)]) == 1
        assert (
            poller.refresh_lane(
                FORGE, OWNER, REPO, 7, ["tireless", "tireless/implement", "tireless/agent:oc"]
            )
            == "oc"
        )


def test_a_poller_keeps_the_poll_bookkeeping(store: JobStore, login: Login) -> None:
    tracked(store)
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    until = datetime.now(UTC) + timedelta(minutes=1)
    with JobStore(login("tireless_poller")) as poller:
        assert [f.name for f in poller.forges()] == [FORGE]
        assert poller.poll_soon(FORGE, OWNER, REPO)
        assert [r.repo for r in poller.claim_repos_to_poll("p1")] == [REPO]
        assert poller.record_poll(FORGE, OWNER, REPO, "p1", [issue(1)], None, None, True).created
        poller.claim_repos_to_poll("p1")
        assert poller.record_poll_failure(FORGE, OWNER, REPO, "p1", "HTTP 500") < until
        poller.record_forge_trouble(FORGE, "rate limited", until)
        assert poller.repo_status()[0].forge_error == "rate limited"


def test_a_poller_keeps_the_mirror_bookkeeping(store: JobStore, login: Login) -> None:
    tracked(store)
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.enqueue([issue(1), issue(2)])
    with JobStore(login("tireless_poller")) as poller:
        poller.claim_repos_to_poll("p1")
        first, second = poller.mirror_writes(FORGE, OWNER, REPO, "p1")
        assert first.state_label == "tireless/state/pending"
        assert poller.record_mirror_write(FORGE, OWNER, REPO, "p1", first) is False
        poller.record_mirror_failure(FORGE, OWNER, REPO, "p1", second, "HTTP 403")
        assert poller.repo_status()[0].mirror_error == "HTTP 403"


def test_an_admin_may_do_everything(store: JobStore, login: Login) -> None:
    with (
        JobStore(login("tireless_admin")) as admin,
        psycopg.connect(login("tireless_admin"), autocommit=True) as conn,
    ):
        assert admin.add_forge(FORGE, "gitea", "https://gitea.example.com")
        assert admin.track_repo(FORGE, OWNER, REPO)
        assert admin.enqueue([issue(1), issue(2)]) == 2
        job = admin.claim_next("admin-host", ["cc"])
        assert job is not None
        assert (
            admin.transition(job.id, "delivered", "admin-host", token=job.claim_token).state
            == "delivered"
        )
        second = conn.execute("SELECT id FROM tireless.job WHERE state = 'pending'").fetchone()
        assert second is not None
        assert admin.transition(second[0], "cancelled", note="not needed").state == "cancelled"
        assert admin.rerun(FORGE, OWNER, REPO, 2) > second[0]
        assert admin.remove_forge(FORGE)
        assert admin.pause_lane("cc").paused
        assert not admin.resume_lane("cc").paused
        assert admin.set_lane_capacity("cc", 2).capacity == 2
        assert admin.reset_lane_breaker("cc").consecutive_failures == 0
        conn.execute(
            "SELECT tireless.set_policy(backoff_base => '1 second', backoff_cap => '1 minute')"
        )
        conn.execute("SELECT tireless.set_kind_policy(kind => 'plan', max_attempts => 5)")
        github = "'github', 'https://api.github.com'"  # forge check: the URLs the runner uses
        assert conn.execute(f"SELECT tireless.forge_web_root({github})").fetchone() == (
            "https://github.com",
        )
        assert conn.execute(
            f"SELECT tireless.forge_clone_url({github}, 'acme', 'widgets')"
        ).fetchone() == ("https://github.com/acme/widgets.git",)
        for relation in (
            *LOCKED_TABLES,
            "kind_policy",
            "lane_status",
            "queue_stats",
            "active_claims",
            "repo_status",
            "job_list",
            "finished_jobs",
            "finished_jobs_by_hour",
        ):
            conn.execute(f"SELECT count(*) FROM tireless.{relation}")
        assert admin.untrack_repo(FORGE, OWNER, REPO)


@pytest.mark.parametrize("group", GROUPS)
def test_no_role_writes_a_table_directly(
    store: JobStore, db: Database, login: Login, group: str
) -> None:
    pending_job(store, db)
    store.pause_lane("cc")
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    counts = ", ".join(f"(SELECT count(*) FROM tireless.{t})" for t in LOCKED_TABLES)
    before = db.scalar(f"SELECT row({counts})::text")
    with psycopg.connect(login(group), autocommit=True) as conn:
        for table, column in LOCKED_TABLES.items():
            assert refused(conn, f"DELETE FROM tireless.{table}") == "42501", table
            assert refused(conn, f"UPDATE tireless.{table} SET {column} = {column}") == "42501", (
                table
            )
            assert refused(conn, f"INSERT INTO tireless.{table} DEFAULT VALUES") == "42501", table
    assert db.scalar(f"SELECT row({counts})::text") == before == "(1,1,1,1,1,1,1,1)"


@pytest.mark.parametrize("group", ["tireless_runner", "tireless_poller"])
def test_tables_are_private_to_runners_and_pollers(login: Login, group: str) -> None:
    with psycopg.connect(login(group), autocommit=True) as conn:
        for table in LOCKED_TABLES:
            assert refused(conn, f"SELECT FROM tireless.{table}") == "42501"


@pytest.mark.parametrize("group", GROUPS)
def test_every_role_reads_what_the_dashboard_reads(
    store: JobStore, db: Database, login: Login, group: str
) -> None:
    """tireless web: jobs without their claim token, a job's timeline, the finished counters, the
    replication warning."""
    job_id = pending_job(store, db)
    with psycopg.connect(login(group), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM tireless.job_list").fetchone() == (1,)
        assert refused(conn, "SELECT claim_token FROM tireless.job_list") == "42703"
        history = conn.execute(
            "SELECT to_state FROM tireless.job_history(job_id => %s)", [job_id]
        ).fetchall()
        assert history == [("pending",)]
        assert conn.execute("SELECT tireless.roll_up_history()").fetchone() == (0,)
        conn.execute("SELECT * FROM tireless.finished_jobs, tireless.finished_jobs_by_hour")
        assert conn.execute("SELECT tireless.replication_warning()").fetchone() == (None,)
        if group != "tireless_admin":
            for table in ("finished_count", "finished_hourly", "history_rollup"):
                assert refused(conn, f"SELECT FROM tireless.{table}") == "42501"
                assert refused(conn, f"DELETE FROM tireless.{table}") == "42501"


@pytest.mark.parametrize(
    ("group", "call"),
    [
        ("tireless_runner", "SELECT tireless.enqueue(issues => '[]')"),
        (
            "tireless_runner",
            "SELECT tireless.track_repo(forge => 'gitea', owner => 'acme', repo => 'x')",
        ),
        ("tireless_runner", "SELECT tireless.pause_lane(lane => 'cc')"),
        ("tireless_runner", "SELECT tireless.set_policy(backoff_base => '0')"),
        ("tireless_poller", "SELECT * FROM tireless.claim_next(worker => 'p', lanes => '{cc}')"),
        ("tireless_poller", "SELECT tireless.expire_stale_claims()"),
        (
            "tireless_poller",
            "SELECT tireless.untrack_repo(forge => 'gitea', owner => 'acme', repo => 'widgets')",
        ),
        ("tireless_poller", "SELECT tireless.set_lane_capacity(lane => 'cc', capacity => 1)"),
        ("tireless_poller", "SELECT tireless.give_back(job_id => 1, worker => 'p')"),
        ("tireless_runner", "SELECT tireless.prune(older_than => '90 days')"),
        ("tireless_poller", "SELECT tireless.prune(older_than => '90 days')"),
        ("tireless_runner", "SELECT * FROM tireless.claim_repos_to_poll(poller => 'r')"),
        (
            "tireless_runner",
            "SELECT tireless.poll_soon(forge => 'gitea', owner => 'acme', repo => 'widgets')",
        ),
        ("tireless_poller", "SELECT tireless.heartbeat(job_id => 1, worker => 'p')"),
        (
            "tireless_poller",
            "SELECT tireless.rerun(forge => 'gitea', owner => 'acme', repo => 'widgets', number => 1)",
        ),
        (
            "tireless_poller",
            "SELECT tireless.add_forge(name => 'x', kind => 'gitea', base_url => 'https://x.test')",
        ),
        ("tireless_poller", "SELECT tireless.remove_forge(name => 'gitea')"),
        (
            "tireless_runner",
            "SELECT * FROM tireless.mirror_writes(forge => 'gitea', owner => 'acme',"
            " repo => 'widgets', poller => 'r')",
        ),
        ("tireless_poller", "SELECT tireless.set_mirror_comments(enabled => false)"),
        ("tireless_runner", "SELECT tireless.forge_clone_url('gitea', 'https://g.test', 'a', 'b')"),
        ("tireless_poller", "SELECT tireless.forge_web_root('gitea', 'https://g.test')"),
    ],
)
def test_a_function_of_another_role_is_refused(
    store: JobStore, login: Login, group: str, call: str
) -> None:
    tracked(store)
    with psycopg.connect(login(group), autocommit=True) as conn:
        assert refused(conn, call) == "42501"
    assert store.tracked_repos()[0].repo == REPO


def test_a_runner_cannot_cancel_a_pending_job(store: JobStore, login: Login, db: Database) -> None:
    job_id = pending_job(store, db)
    with (
        JobStore(login("tireless_runner")) as runner,
        pytest.raises(PermissionDenied, match="tireless_admin"),
    ):
        runner.transition(job_id, "cancelled")
    assert (
        db.scalar("SELECT state::text FROM tireless.job WHERE id = %(id)s", {"id": job_id})
        == "pending"
    )


def test_the_adapter_maps_42501_to_permission_denied(store: JobStore, login: Login) -> None:
    tracked(store)
    with JobStore(login("tireless_runner")) as runner, pytest.raises(PermissionDenied) as refusal:
        runner.enqueue([issue(1)])
    assert refusal.value.sqlstate == "42501"
    assert store.claim_next("w", ["cc"]) is None


HOSTILE_OBJECTS = """
CREATE TABLE hostile.job (id bigint, state text);
INSERT INTO hostile.job VALUES (1, 'pending');
CREATE FUNCTION hostile.now() RETURNS timestamptz LANGUAGE sql RETURN '2000-01-01'::timestamptz;
CREATE FUNCTION hostile.gen_random_uuid() RETURNS uuid LANGUAGE sql
    RETURN '00000000-0000-0000-0000-000000000000'::uuid;
CREATE FUNCTION hostile.is_terminal(state tireless.job_state) RETURNS boolean LANGUAGE sql RETURN true;
CREATE FUNCTION hostile.always(a text, b text) RETURNS boolean LANGUAGE sql RETURN true;
CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.always);
CREATE TEMP TABLE job (id bigint);
"""


def test_a_hostile_search_path_changes_nothing(store: JobStore, login: Login, db: Database) -> None:
    enqueue_jobs(store, 2)
    conninfo = login("tireless_runner")
    user = psycopg.conninfo.conninfo_to_dict(conninfo)["user"]
    with db.connect() as owner:
        owner.execute(f'CREATE SCHEMA hostile AUTHORIZATION "{user}"')
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(HOSTILE_OBJECTS)
        conn.execute("SET search_path = hostile, pg_catalog, public")
        # The hostile objects really do shadow the built-ins for the caller's own queries ...
        assert conn.execute("SELECT now() < '2001-01-01', 'a'::text = 'b'::text").fetchone() == (
            True,
            True,
        )
        # ... and the store's functions do not see them.
        first = conn.execute(
            "SELECT id, claimed_by, attempts, claim_token, claim_expires_at > clock_timestamp()"
            " FROM tireless.claim_next(worker => 'host1', lanes => '{cc}')"
        ).fetchone()
        second = conn.execute(
            "SELECT id, claimed_by, attempts, claim_token, claim_expires_at > clock_timestamp()"
            " FROM tireless.claim_next(worker => 'host2', lanes => '{cc}')"
        ).fetchone()
        assert first is not None
        assert second is not None
        assert [first[0], second[0]] == [1, 2], "the oldest job first, each once"
        assert (first[1:3], second[1:3]) == (("host1", 1), ("host2", 1))
        assert first[3] != second[3]
        assert uuid.UUID(int=0) not in (first[3], second[3])
        assert first[4], "the lease ends after the real now()"
        assert second[4]
        assert conn.execute(
            "SELECT tireless.renew_claim(job_id => 1, worker => 'host2')"
        ).fetchone() == (False,)
        assert conn.execute("SELECT tireless.expire_stale_claims()").fetchone() == (0,)
        delivered = conn.execute(
            "SELECT state::text FROM tireless.transition(job_id => 1, to_state => 'delivered',"
            " worker => 'host1', token => %s)",
            [first[3]],
        ).fetchone()
        assert delivered == ("delivered",)
        assert conn.execute("SELECT count(*) FROM hostile.job").fetchone() == (1,)
    assert db.scalar("SELECT array_agg(state::text ORDER BY id) FROM tireless.job") == [
        "delivered",
        "claimed",
    ]


def test_another_runner_login_is_refused_on_every_holder_call(
    store: JobStore, db: Database, login: Login
) -> None:
    """A holder is its worker name and the login that claimed: a second runner login that
    presents the name and the token is not the holder, on every call a holder makes."""
    enqueue_jobs(store, 1)
    first, second = login("tireless_runner"), login("tireless_runner")
    with JobStore(first) as host1, JobStore(second) as host2:
        job = host1.claim_next("host1-w1", ["cc"])
        assert job is not None
        token = job.claim_token
        assert host2.renew_claim(job.id, "host1-w1", token=token) is False
        assert host2.renew_claim(job.id, "host1-w1") is False
        assert host2.heartbeat(job.id, "host1-w1", token=token) == "lost"
        for to_state in ("delivered", "failed", "cancelled", "pending"):
            with pytest.raises(NotHolder) as refusal:
                host2.transition(job.id, to_state, "host1-w1", token=token)
            assert refusal.value.detail == (
                f"The job was claimed by the login {login_name(first)}, not by {login_name(second)}."
            )
        with pytest.raises(NotHolder):
            host2.transition(job.id, "delivered", "host1-w1")
        with pytest.raises(NotHolder):
            host2.give_back(job.id, "host1-w1", token=token)
        assert host2.claim_next("host2-w1", ["cc"]) is None, "the job was never given back"
        # The holder's own login goes on as before.
        assert host1.heartbeat(job.id, "host1-w1", token=token) == "held"
        assert host1.transition(job.id, "delivered", "host1-w1", token=token).state == "delivered"
    assert rows(
        db,
        "SELECT to_state::text, worker, login FROM tireless.job_event WHERE job_id = %(id)s"
        " ORDER BY id",
        {"id": job.id},
    ) == [
        ("pending", None, "postgres"),
        ("claimed", "host1-w1", login_name(first)),
        ("delivered", "host1-w1", login_name(first)),
    ]


def test_an_admin_login_may_act_for_any_holder(store: JobStore, db: Database, login: Login) -> None:
    enqueue_jobs(store, 2)
    admin_login = login("tireless_admin")
    with JobStore(login("tireless_runner")) as runner, JobStore(admin_login) as admin:
        job = runner.claim_next("host1-w1", ["cc"])
        other = runner.claim_next("host1-w2", ["cc"])
        assert job is not None
        assert other is not None
        assert admin.renew_claim(job.id, "host1-w1", token=job.claim_token)
        assert admin.heartbeat(job.id, "host1-w1") == "held"
        assert admin.give_back(other.id, "host1-w2").state == "pending"
        assert admin.transition(job.id, "failed", "host1-w1", note="stuck").state == "failed"
    assert db.scalar(
        "SELECT login FROM tireless.job_event WHERE job_id = %(id)s AND to_state = 'failed'",
        {"id": job.id},
    ) == login_name(admin_login)


def test_the_job_row_names_the_login_that_claimed(
    store: JobStore, db: Database, login: Login
) -> None:
    enqueue_jobs(store, 1)
    conninfo = login("tireless_runner")
    with JobStore(conninfo) as runner:
        job = runner.claim_next("host1-w1", ["cc"])
    assert job is not None
    assert db.scalar(
        "SELECT claimed_login FROM tireless.job WHERE id = %(id)s", {"id": job.id}
    ) == login_name(conninfo)
    assert rows(db, "SELECT claimed_by, claimed_login FROM tireless.active_claims") == [
        ("host1-w1", login_name(conninfo))
    ]
