"""Fair shares: within a lane claims take turns between repositories (the one whose last claim is
oldest first), also under concurrent claimers; a repository's capacity is never exceeded under many
claimers; daily budgets of runs and agent time hold a lane's or a repository's jobs pending until
the UTC day moves on (the clock moved through the database, not slept)."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, WORK, cli_json, issue, rows, tireless_cli, tracked
from tireless import Job, JobState, JobStore
from tireless.errors import InvalidArgument, UnknownRepository


def enqueue_repos(store: JobStore, jobs_per_repo: dict[str, int]) -> None:
    """Track each repository and enqueue its jobs, one repository after the other (so the oldest
    jobs all belong to the first)."""
    for repo, jobs in jobs_per_repo.items():
        tracked(store, repo)
        store.enqueue([issue(n, *WORK, repo=repo) for n in range(1, jobs + 1)])


def claim_all(store: JobStore, worker: str = "w1") -> list[Job]:
    claimed: list[Job] = []
    while (job := store.claim_next(worker, ["cc"])) is not None:
        claimed.append(job)
    return claimed


def claims_in_order(db: Database) -> list[str]:
    """The repository of every claim, in the order the history wrote them (event ids are taken
    under the locks that decide a claim)."""
    return [
        repo
        for (repo,) in rows(
            db,
            "SELECT j.repo FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id"
            " WHERE e.to_state = 'claimed' ORDER BY e.id",
        )
    ]


def test_claims_take_turns_between_repositories_oldest_job_first_within_each(
    store: JobStore,
) -> None:
    enqueue_repos(store, {"big": 4, "small": 2, "tiny": 1})
    claimed = claim_all(store)
    assert [(job.repo, job.number) for job in claimed] == [
        ("big", 1),
        ("small", 1),
        ("tiny", 1),
        ("big", 2),
        ("small", 2),
        ("big", 3),
        ("big", 4),
    ]


def test_a_lane_where_one_repository_has_work_claims_without_a_turn(
    db: Database, store: JobStore
) -> None:
    """0025: with one repository there are no turns to take, so its claims write no turn (nor
    count runs nobody budgets); a second repository with work brings the turns back. Neither has
    ever taken a turn, so the first to have had one goes first: the newcomer waits one claim."""
    enqueue_repos(store, {"alone": 4})
    first = store.claim_next("w1", ["cc"])
    second = store.claim_next("w2", ["cc"])
    assert (first.number if first else None, second.number if second else None) == (1, 2)
    turns = "SELECT last_claimed_at = '-infinity', runs_today FROM tireless.repo_shares"
    assert rows(db, turns) == [(True, None)]
    enqueue_repos(store, {"newcomer": 2})
    assert [job.repo for job in claim_all(store)] == ["alone", "newcomer", "alone", "newcomer"]


def test_a_budget_of_runs_counts_the_claims_from_the_moment_it_is_set(
    db: Database, store: JobStore
) -> None:
    enqueue_repos(store, {"a": 6})
    assert store.claim_next("w1", ["cc"]) is not None  # no budget: not counted
    assert db.scalar("SELECT runs_today FROM tireless.lane_summary WHERE lane = 'cc'") is None
    store.set_lane_budget("cc", 2, None)
    assert [job.number for job in claim_all(store)] == [2, 3]
    assert db.scalar("SELECT runs_today FROM tireless.lane_summary WHERE lane = 'cc'") == 2
    store.set_lane_budget("cc", 3, None)  # a new value of a running budget keeps its count
    assert [job.number for job in claim_all(store)] == [4]
    store.set_lane_budget("cc", None, None)
    assert db.scalar("SELECT runs_today FROM tireless.lane_summary WHERE lane = 'cc'") is None
    assert [job.number for job in claim_all(store)] == [5, 6]


def test_a_repository_that_gets_work_again_goes_first_having_waited_longest(
    store: JobStore,
) -> None:
    enqueue_repos(store, {"a": 3, "b": 1})
    assert [job.repo for job in claim_all(store)] == ["a", "b", "a", "a"]
    store.enqueue([issue(2, *WORK, repo="b"), issue(4, *WORK, repo="a")])
    assert [job.repo for job in claim_all(store)] == ["b", "a"]


def concurrent_claimers(conninfo: str, workers: int) -> None:
    """`workers` threads, each on its own connection, start at a barrier and claim and deliver
    until the lane is empty."""
    barrier = threading.Barrier(workers)
    failures: list[BaseException] = []

    def run(worker: str) -> None:
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute("SET lock_timeout = '10s'")
                store = JobStore(conn)
                barrier.wait(timeout=30)
                while (job := store.claim_next(worker, ["cc"])) is not None:
                    store.transition(job.id, "delivered", worker)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(f"runner-{n}",)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()
    assert not failures, failures


def test_concurrent_claimers_take_turns_between_repositories(db: Database, store: JobStore) -> None:
    repos = {f"repo-{n}": 3 for n in range(10)}
    enqueue_repos(store, repos)
    workers = 4
    concurrent_claimers(db.conninfo, workers)
    order = claims_in_order(db)
    assert Counter(order) == Counter(repos)
    # Claim k of a repository comes before every repository had its turn k times over, give or take
    # the claims the other workers made meanwhile: a claim's event id is taken after its turn is
    # locked, so a claimer descheduled between the two (a loaded 2-core machine) lets the other
    # workers claim ahead of it. Under CI load a second claim came at 28 (bound 26, 2026-12-05) and
    # at 23 (bound 22, 2026-12-04), so each other worker may claim up to three times ahead.
    # Oldest-first would still fail: repo-9's first claim at 27, past 10 + 9.
    slack = 3 * (workers - 1)
    for repo in repos:
        positions = [n for n, claimed in enumerate(order) if claimed == repo]
        for k, position in enumerate(positions):
            assert position < (k + 1) * len(repos) + slack, (repo, positions)


def test_one_big_repository_leaves_room_for_nine_small_ones(db: Database, store: JobStore) -> None:
    enqueue_repos(store, {"big": 500} | {f"small-{n}": 5 for n in range(9)})
    concurrent_claimers_until(db.conninfo, workers=4, claims=100)
    first = Counter(claims_in_order(db)[:100])
    assert sum(count for repo, count in first.items() if repo != "big") == 45


def concurrent_claimers_until(conninfo: str, workers: int, claims: int) -> None:
    """As concurrent_claimers, stopping once `claims` jobs were claimed in all."""
    barrier = threading.Barrier(workers)
    taken = iter(range(claims))
    lock = threading.Lock()

    def run(worker: str) -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            store = JobStore(conn)
            barrier.wait(timeout=30)
            while True:
                with lock:
                    if next(taken, None) is None:
                        return
                job = store.claim_next(worker, ["cc"])
                assert job is not None
                store.transition(job.id, "delivered", worker)

    threads = [threading.Thread(target=run, args=(f"runner-{n}",)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()


def test_several_claimers_of_one_repository_each_get_a_job(db: Database, store: JobStore) -> None:
    """Turns are taken with SKIP LOCKED; a claimer that finds the only turn taken still gets a job."""
    enqueue_repos(store, {"only": 3})
    with db.connect() as a, db.connect(lock_timeout="5s") as b, a.transaction():
        first = JobStore(a).claim_next("w1", ["cc"])
        second = JobStore(b).claim_next("w2", ["cc"])
    assert first is not None
    assert second is not None
    assert first.id != second.id


EXAMPLES = itertools.count()


def most_claimed_at_once(db: Database, repo: str) -> int:
    """Replays the repository's claim and finish events in the order they were written."""
    held = most = 0
    for (claimed,) in rows(
        db,
        "SELECT e.to_state = 'claimed' FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id"
        " WHERE j.repo = %(repo)s AND 'claimed' IN (e.from_state, e.to_state) ORDER BY e.id",
        {"repo": repo},
    ):
        held += 1 if claimed else -1
        most = max(most, held)
    return most


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(capacity=st.integers(0, 3), claimers=st.integers(2, 8), jobs=st.integers(1, 8))
def test_a_repository_capacity_is_never_exceeded_by_concurrent_claimers(
    db: Database, store: JobStore, capacity: int, claimers: int, jobs: int
) -> None:
    example = next(EXAMPLES)  # each example its own repositories, and its own lane
    capped, free, lane = f"capped-{example}", f"free-{example}", f"lane-{example}"
    agent = (*WORK, f"tireless/agent:{lane}")
    for repo, count in ((capped, jobs), (free, 2)):
        tracked(store, repo)
        store.enqueue([issue(n, *agent, repo=repo) for n in range(1, count + 1)])
    store.set_repo_capacity(FORGE, OWNER, capped, capacity)
    barrier = threading.Barrier(claimers)
    held: list[Job] = []

    def run(worker: str) -> None:
        with psycopg.connect(db.conninfo, autocommit=True) as conn:
            conn.execute("SET lock_timeout = '10s'")
            barrier.wait(timeout=30)
            while (job := JobStore(conn).claim_next(worker, [lane])) is not None:
                held.append(job)  # held, never finished: every claim counts against the capacity

    threads = [threading.Thread(target=run, args=(f"runner-{n}",)) for n in range(claimers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sum(job.repo == capped for job in held) == min(capacity, jobs)
    assert sum(job.repo == free for job in held) == 2
    assert most_claimed_at_once(db, capped) == min(capacity, jobs)


def test_a_repository_at_capacity_gets_work_again_when_a_claim_ends(store: JobStore) -> None:
    enqueue_repos(store, {"capped": 3})
    limits = store.set_repo_capacity(FORGE, OWNER, "capped", 1)
    assert (limits.capacity, limits.runs_per_day) == (1, None)
    held = store.claim_next("w1", ["cc"])
    assert held is not None
    assert store.claim_next("w2", ["cc"]) is None
    store.transition(held.id, "delivered", "w1")
    assert store.claim_next("w2", ["cc"]) is not None
    assert store.set_repo_capacity(FORGE, OWNER, "capped", None).capacity is None
    assert store.claim_next("w3", ["cc"]) is not None


def test_repository_settings_refuse_bad_values_and_untracked_repositories(
    store: JobStore,
) -> None:
    enqueue_repos(store, {"widgets": 1})
    with pytest.raises(InvalidArgument, match="capacity"):
        store.set_repo_capacity(FORGE, OWNER, "widgets", -1)
    with pytest.raises(InvalidArgument, match="runs_per_day"):
        store.set_repo_budget(FORGE, OWNER, "widgets", -1, None)
    with pytest.raises(InvalidArgument, match="agent_time_per_day"):
        store.set_lane_budget("cc", None, timedelta(0))
    with pytest.raises(UnknownRepository):
        store.set_repo_capacity(FORGE, OWNER, "nobody-tracks-this", 1)


def move_to_yesterday(db: Database) -> None:
    """The admin's way to let a day pass: what was spent is recorded as spent yesterday (UTC)."""
    with db.connect() as conn:
        conn.execute("UPDATE tireless.lane_repo SET spend_day = spend_day - 1")


def test_a_lane_out_of_runs_keeps_its_jobs_pending_until_the_day_moves(
    db: Database, store: JobStore
) -> None:
    enqueue_repos(store, {"a": 3, "b": 2})
    store.set_lane_budget("cc", 3, None)
    claimed = claim_all(store)
    assert len(claimed) == 3
    (summary,) = [r for r in status(db) if r["lane"] == "cc"]
    assert (summary["runs_today"], summary["runs_per_day"], summary["pending"]) == (3, 3, 2)
    assert summary["budget_resets_at"] is not None
    move_to_yesterday(db)
    assert [r["budget_resets_at"] for r in status(db) if r["lane"] == "cc"] == [None]
    assert len(claim_all(store)) == 2
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'failed'") == 0


def test_agent_time_spent_stops_claims_and_counts_the_attempts_held_time(
    db: Database, store: JobStore
) -> None:
    enqueue_repos(store, {"a": 3})
    store.set_lane_budget("cc", None, timedelta(hours=1))
    job = store.claim_next("w1", ["cc"])
    assert job is not None
    with (
        db.connect() as conn
    ):  # the attempt began 90 minutes ago (replica: past the history's guard)
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "UPDATE tireless.job_event SET at = at - interval '90 minutes'"
            " WHERE job_id = %(id)s AND to_state = 'claimed'",
            {"id": job.id},
        )
    store.transition(job.id, "delivered", "w1")
    spent = db.scalar("SELECT agent_seconds_today FROM tireless.lane_summary WHERE lane = 'cc'")
    assert spent >= 90 * 60
    assert store.claim_next("w1", ["cc"]) is None
    move_to_yesterday(db)
    assert store.claim_next("w1", ["cc"]) is not None


def agent_time_count(db: Database) -> str:
    """The state of the trigger that counts ended attempts' agent time: A (enabled) or D."""
    return str(
        db.scalar(
            "SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'tireless.job'::regclass"
            " AND tgname = 'ended_attempts_count_agent_time'"
        )
    )


def test_agent_time_is_counted_only_while_some_budget_of_agent_time_exists(
    db: Database, store: JobStore
) -> None:
    """0025: a finish pays for the count of agent time only while a lane or a repository has a
    budget of it; the setters switch the count in their own transaction."""
    enqueue_repos(store, {"a": 1})
    assert agent_time_count(db) == "D"
    store.set_lane_budget("cc", 5, None)  # runs only: nothing to count
    store.set_repo_capacity(FORGE, OWNER, "a", 3)
    assert agent_time_count(db) == "D"
    store.set_lane_budget("cc", None, timedelta(hours=1))
    assert agent_time_count(db) == "A"
    store.set_repo_budget(FORGE, OWNER, "a", None, timedelta(hours=2))
    store.set_lane_budget("cc", None, None)
    assert agent_time_count(db) == "A"  # the repository's budget remains
    store.set_repo_budget(FORGE, OWNER, "a", None, None)
    assert agent_time_count(db) == "D"
    with db.connect(autocommit=False) as conn:  # a setter's switch is undone with its transaction
        conn.execute("SELECT tireless.set_lane_budget('cc', NULL, interval '1 hour')")
        assert conn.execute(
            "SELECT tgenabled FROM pg_trigger WHERE tgname = 'ended_attempts_count_agent_time'"
        ).fetchone() == ("A",)
        conn.rollback()
    assert agent_time_count(db) == "D"


def test_a_repository_budget_of_agent_time_counts_the_attempts_that_end_after_it_is_set(
    db: Database, store: JobStore
) -> None:
    enqueue_repos(store, {"a": 3})
    before = store.claim_next("w1", ["cc"])
    assert before is not None
    store.transition(before.id, "delivered", "w1")  # ended before any budget: not counted
    store.set_repo_budget(FORGE, OWNER, "a", None, timedelta(hours=1))
    job = store.claim_next("w1", ["cc"])
    assert job is not None
    with (
        db.connect() as conn
    ):  # the attempt began 90 minutes ago (replica: past the history's guard)
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "UPDATE tireless.job_event SET at = at - interval '90 minutes'"
            " WHERE job_id = %(id)s AND to_state = 'claimed'",
            {"id": job.id},
        )
    store.transition(job.id, "delivered", "w1")
    spent = db.scalar("SELECT agent_seconds_today FROM tireless.repo_shares WHERE repo = 'a'")
    assert 90 * 60 <= spent < 100 * 60
    assert store.claim_next("w1", ["cc"]) is None


def test_a_budget_of_agent_time_set_while_a_runner_finishes_waits_for_it_then_counts(
    db: Database, store: JobStore
) -> None:
    """The setter locks tireless.job before it writes a lane: it waits for a runner's open
    transaction (never the other way round, so no deadlock), and the attempts that end after it
    commits are counted."""
    enqueue_repos(store, {"a": 2})
    first = store.claim_next("w1", ["cc"])
    second = store.claim_next("w2", ["cc"])
    assert first is not None
    assert second is not None
    done: list[object] = []
    with db.connect() as runner, db.connect(lock_timeout="60s") as admin:
        with runner.transaction():
            runner.execute(
                "SELECT tireless.transition(%(id)s, 'delivered', 'w1')", {"id": first.id}
            )
            setter = threading.Thread(
                target=lambda: done.append(
                    admin.execute(
                        "SELECT tireless.set_lane_budget('cc', NULL, interval '1 hour')"
                    ).fetchone()
                )
            )
            setter.start()
            waiting = (
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND query LIKE '%%set_lane_budget%%'"
            )
            while db.scalar(waiting) == 0:
                assert setter.is_alive(), "the setter did not wait for the runner"
        setter.join(timeout=60)
    assert len(done) == 1
    assert agent_time_count(db) == "A"
    store.transition(second.id, "delivered", "w2")
    counted = db.scalar("SELECT agent_seconds_today FROM tireless.repo_shares WHERE repo = 'a'")
    assert counted is not None
    assert counted > 0


def test_a_repository_out_of_budget_waits_while_the_others_go_on(
    db: Database, store: JobStore
) -> None:
    enqueue_repos(store, {"costly": 3, "other": 3})
    store.set_repo_budget(FORGE, OWNER, "costly", 1, None)
    assert Counter(job.repo for job in claim_all(store)) == {"costly": 1, "other": 3}
    (share,) = rows(
        db, "SELECT runs_today, budget_resets_at FROM tireless.repo_shares WHERE repo = 'costly'"
    )
    assert share[0] == 1
    assert share[1] is not None
    move_to_yesterday(db)
    assert [job.repo for job in claim_all(store)] == ["costly"]


def status(db: Database) -> list[dict[str, Any]]:
    return list(cli_json(db.url, "status"))


def test_the_command_line_sets_budgets_limits_and_repository_shares(
    db: Database, store: JobStore
) -> None:
    enqueue_repos(store, {"widgets": 2})
    (lane,) = cli_json(db.url, "lane", "budget", "cc", "1", "2h")
    assert (lane["runs_per_day"], lane["agent_seconds_per_day"]) == (1, 7200)
    cli_json(db.url, "lane", "max-run", "cc", "2h")
    cli_json(db.url, "lane", "stall-after", "cc", "30m")
    limits = rows(db, "SELECT max_run, stall_after FROM tireless.lane WHERE name = 'cc'")
    assert limits == [(timedelta(hours=2), timedelta(minutes=30))]
    (shown,) = cli_json(db.url, "lane", "show", "cc")
    assert (shown["max_run"], shown["stall_after"]) == (7200, 1800)
    assert "max run 2h00m, stall after 30m" in tireless_cli(db.url, "lane", "show", "cc").stdout
    cli_json(db.url, "lane", "stall-after", "cc", "none")
    assert db.scalar("SELECT stall_after FROM tireless.lane WHERE name = 'cc'") is None
    (shown,) = cli_json(db.url, "lane", "show", "cc")
    assert (shown["max_run"], shown["stall_after"]) == (7200, None)
    capped = cli_json(db.url, "repo", "capacity", FORGE, OWNER, "widgets", "0")
    assert capped["capacity"] == 0
    budget = cli_json(db.url, "repo", "budget", FORGE, OWNER, "widgets", "5", "none")
    assert (budget["capacity"], budget["runs_per_day"]) == (0, 5)
    assert store.claim_next("w1", ["cc"]) is None  # capacity 0 holds the repository back
    cli_json(db.url, "repo", "capacity", FORGE, OWNER, "widgets", "none")
    assert store.claim_next("w1", ["cc"]) is not None
    assert store.claim_next("w1", ["cc"]) is None  # the lane's one run a day is spent
    text = tireless_cli(db.url, "status")
    assert "runs today 1/1" in text.stdout
    assert "budget spent until" in text.stdout
    refused = tireless_cli(db.url, "repo", "capacity", FORGE, OWNER, "untracked", "1")
    assert refused.returncode == 1
    assert "TL008" in refused.stderr


def test_a_job_returned_to_pending_takes_its_turn_again(db: Database, store: JobStore) -> None:
    """With a limit, a repository's jobs are claimed only through its turns (never as the lane's
    oldest job when every turn is taken), so the job must give its repository its turn back."""
    enqueue_repos(store, {"a": 1, "b": 1})
    for repo in ("a", "b"):
        store.set_repo_capacity(FORGE, OWNER, repo, 5)
    first = store.claim_next("w1", ["cc"])
    second = store.claim_next("w1", ["cc"])
    assert first is not None
    assert second is not None
    assert store.claim_next("w1", ["cc"]) is None  # both repositories leave the walk
    store.give_back(first.id, "w1")
    again = store.claim_next("w1", ["cc"])
    assert again is not None
    assert again.id == first.id
    assert again.state is JobState.CLAIMED


def test_a_job_routed_to_another_lane_takes_its_turn_there(store: JobStore) -> None:
    """With a limit, a repository's jobs are claimed only through its turns: the new lane's turn
    must exist for the re-routed job to be claimed."""
    enqueue_repos(store, {"widgets": 1})
    store.set_repo_capacity(FORGE, OWNER, "widgets", 1)
    assert store.refresh_lane(FORGE, OWNER, "widgets", 1, [*WORK, "tireless/agent:oc"]) == "oc"
    assert store.claim_next("w1", ["cc"]) is None
    job = store.claim_next("w1", ["oc"])
    assert job is not None
    assert job.lane == "oc"
