"""Dependencies gate claims (issue 35): a pending job whose issue has an open dependency (a
`Depends on` line of its body) waits, with what it waits on; the claim, finish-and-claim, the fair
turns and next_ready_at pass over it; the poll or enqueue that sees its last dependency close
releases it; a cycle is reported on each of its jobs and none of them runs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from yoyo import get_backend, read_migrations

from tests.conftest import SERVER, Database
from tests.helpers import (
    FORGE,
    MIGRATIONS,
    OWNER,
    REPO,
    TEST_REPO,
    claimed,
    issue,
    rows,
    tireless_cli,
    track,
    tracked,
)
from tireless import DiscoveredIssue, JobState, JobStore, migrate
from tireless.migrate import yoyo_uri

CURSOR = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
PLAIN = ("bug",)
"""The labels of an issue that asks for no work: a dependency, not a job."""


def waits(db: Database, number: int, repo: str = REPO) -> tuple[Any, ...]:
    """The live job of an issue as job_list shows it: (waiting_on, note)."""
    (row,) = rows(
        db,
        "SELECT waiting_on, note FROM tireless.job_list"
        " WHERE (forge, owner, repo, number) = (%(f)s, %(o)s, %(r)s, %(n)s)"
        " AND state IN ('pending', 'claimed')",
        {"f": FORGE, "o": OWNER, "r": repo, "n": number},
    )
    return row


def test_the_body_says_what_an_issue_depends_on(db: Database) -> None:
    body = (
        "Some text that depends on #1 in passing.\n"
        "Depends on #3, #7\n"
        "  - depends ON: acme/other#12 and #4\n"
        "> Depends on #5 (this is #5 again)\n"
        "Depends on #9\n"  # the issue itself
        "Depends on issue 8, not a reference; depends on#6 neither\n"
    )
    found = rows(
        db,
        "SELECT depends_on_owner, depends_on_repo, depends_on_number"
        " FROM tireless.body_dependencies(%(b)s, 'acme', 'widgets', 9)",
        {"b": body},
    )
    assert found == [
        ("acme", "other", 12),
        ("acme", "widgets", 3),
        ("acme", "widgets", 4),
        ("acme", "widgets", 5),
        ("acme", "widgets", 7),
    ]


def test_a_job_waits_for_its_dependency_and_is_claimable_in_the_poll_that_sees_it_close(
    store: JobStore, db: Database
) -> None:
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)

    def poll(*issues: DiscoveredIssue) -> None:
        (repo,) = store.claim_repos_to_poll("p1")
        assert repo.repo == REPO
        store.record_poll(*TEST_REPO, "p1", issues, CURSOR, None, full_listing=False)

    poll(issue(3, *PLAIN), issue(5, body="Part two.\n\nDepends on #3"))
    assert waits(db, 5) == (["#3"], "waiting on #3")
    assert store.claim_next("w1", ["cc"]) is None, "a waiting job is not claimable"
    assert rows(db, "SELECT lane, waiting FROM tireless.lane_status") == [("cc", 1)]

    with db.connect() as listener:
        listener.execute("LISTEN tireless_work")
        poll(issue(3, *PLAIN, state="closed"))
        woken = [n.payload for n in listener.notifies(timeout=1, stop_after=1)]
    assert woken == ["cc"], "the release wakes the lane's runners"
    assert waits(db, 5) == (None, None)
    job = claimed(store)
    assert job.number == 5


def test_a_dependency_never_seen_is_open_until_it_is_read_closed(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(5, body="depends on #9")])
    assert waits(db, 5)[0] == ["#9"]
    assert rows(
        db, "SELECT depends_on, state, source FROM tireless.job_waits(%(id)s)", {"id": 1}
    ) == [("#9", "unseen", "body")]
    store.enqueue([issue(9, *PLAIN)])
    assert waits(db, 5)[0] == ["#9"], "read open: still waiting"
    store.enqueue([issue(9, *PLAIN, state="closed")])
    assert claimed(store).number == 5


def test_a_dependency_on_another_tracked_repository_works_the_same(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    track(store, FORGE, OWNER, "gears")
    store.enqueue([issue(5, body="Depends on acme/gears#2")])
    assert waits(db, 5)[0] == ["acme/gears#2"]
    store.enqueue([issue(2, *PLAIN, repo="gears", state="closed")])
    assert waits(db, 5)[0] is None
    assert claimed(store).number == 5


def test_a_repository_named_in_another_case_is_the_tracked_one_and_an_untracked_one_is_said(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    track(store, FORGE, OWNER, "gears")
    store.enqueue([issue(5, body="Depends on ACME/Gears#2, Acme/Widgets#5, acme/levers#4")])
    untracked = "acme/levers not tracked: nothing reads it until `tireless track`"
    assert waits(db, 5) == (
        ["acme/gears#2", "acme/levers#4"],
        f"waiting on acme/gears#2, acme/levers#4 ({untracked})",
    )
    assert rows(db, "SELECT depends_on, state FROM tireless.job_waits(%(id)s)", {"id": 1}) == [
        ("acme/gears#2", "unseen"),
        ("acme/levers#4", "untracked"),
    ]
    store.enqueue([issue(2, *PLAIN, repo="gears", state="closed")])
    assert waits(db, 5)[0] == ["acme/levers#4"]
    track(store, FORGE, OWNER, "levers")
    store.enqueue([issue(4, *PLAIN, repo="levers", state="closed")])
    assert claimed(store).number == 5


def test_a_change_of_the_body_evaluates_the_wait_again(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(5, body="Depends on #3, #7")])
    assert waits(db, 5) == (["#3", "#7"], "waiting on #3, #7")
    store.enqueue([issue(5, body="Depends on #7")])
    assert waits(db, 5) == (["#7"], "waiting on #7")
    assert store.claim_next("w1", ["cc"]) is None
    store.enqueue([issue(5, body="No dependency any more.")])
    assert waits(db, 5) == (None, None)
    assert claimed(store).number == 5
    assert rows(db, "SELECT count(*) FROM tireless.issue_dependency") == [(0,)]


def test_a_reopened_dependency_makes_the_pending_job_wait_again(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(3, *PLAIN, state="closed"), issue(5, body="Depends on #3")])
    assert waits(db, 5)[0] is None
    store.enqueue([issue(3, *PLAIN)])
    assert waits(db, 5)[0] == ["#3"]


def test_a_cycle_is_reported_on_each_of_its_jobs_and_none_of_them_runs(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([issue(3, body="Depends on #4"), issue(4, body="Depends on #3")])
    assert waits(db, 3) == (["#4"], "waiting on #4 (a cycle: #3 → #4 → #3; break it on the forge)")
    assert waits(db, 4) == (["#3"], "waiting on #3 (a cycle: #4 → #3 → #4; break it on the forge)")
    assert store.claim_next("w1", ["cc"]) is None
    events = db.scalar("SELECT count(*) FROM tireless.job_event")
    store.enqueue([issue(3, body="Depends on #4"), issue(4, body="Depends on #3")])
    assert db.scalar("SELECT count(*) FROM tireless.job_event") == events

    # A person breaks it: #4 no longer depends on #3. #4 runs; #3 waits for #4, no cycle now.
    store.enqueue([issue(4, body="Nothing to wait for.")])
    assert waits(db, 3) == (["#4"], "waiting on #4")
    assert claimed(store).number == 4


def test_the_claims_pass_over_a_waiting_job(store: JobStore, db: Database) -> None:
    tracked(store)
    track(store, FORGE, OWNER, "gears")
    # The oldest job waits; a ready job in the same repository and one in another (fair turns).
    store.enqueue([issue(1, body="Depends on #100")])
    store.enqueue([issue(2)])
    store.enqueue([issue(3, repo="gears")])
    first = claimed(store)
    assert first.number != 1
    second = store.finish_and_claim(
        first.id, JobState.DELIVERED, "w1", ["cc"], token=first.claim_token
    )
    assert second is not None
    assert second.number != 1
    assert {first.number, second.number} == {2, 3}
    assert (
        store.finish_and_claim(
            second.id, JobState.DELIVERED, "w1", ["cc"], token=second.claim_token
        )
        is None
    )
    assert store.claim_next("w1", ["cc", "oc"]) is None, "the general path skips it too"
    # Its repository has left the walk of turns: nothing claimable there.
    assert rows(db, "SELECT repo, has_work FROM tireless.lane_repo ORDER BY repo") == [
        ("gears", False),
        ("widgets", False),
    ]
    store.enqueue([issue(100, *PLAIN, state="closed")])
    assert rows(db, "SELECT has_work FROM tireless.lane_repo WHERE repo = 'widgets'") == [(True,)]
    assert claimed(store).number == 1


def test_next_ready_at_leaves_a_waiting_job_out(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(5, body="Depends on #3")])
    with db.connect() as conn:
        conn.execute("UPDATE tireless.job SET available_at = now() + interval '1 hour'")
    assert store.next_ready_in(["cc"]) is None
    store.enqueue([issue(3, *PLAIN, state="closed")])
    ready_in = store.next_ready_in(["cc"])
    assert ready_in is not None
    assert ready_in > 3000, "released, its backoff still stands"


def test_a_rerun_waits_for_an_open_dependency(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(5, *PLAIN, body="Depends on #3")])
    store.rerun(*TEST_REPO, 5)
    assert waits(db, 5)[0] == ["#3"]


def test_the_dependency_table_refuses_an_issue_depending_on_itself(db: Database) -> None:
    with db.connect() as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "INSERT INTO tireless.issue_dependency VALUES ('gitea', 'a', 'b', 1, 'a', 'b', 1, 'body')"
        )


def test_the_mirror_shows_a_waiting_job_as_waiting_until_it_is_released(store: JobStore) -> None:
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    store.enqueue([issue(3, *PLAIN), issue(5, body="Depends on #3")])
    store.claim_repos_to_poll("p1")

    def due() -> list[tuple[int, str, bool]]:
        writes = store.mirror_writes(*TEST_REPO, "p1")
        for write in writes:
            store.record_mirror_write(*TEST_REPO, "p1", write, None)
        return [
            (w.number, w.state_label, "tireless/state/pending" in w.drop_labels) for w in writes
        ]

    assert due() == [(5, "tireless/state/waiting", True)]
    assert due() == [], "written once"
    store.enqueue([issue(3, *PLAIN, state="closed")])
    writes = store.mirror_writes(*TEST_REPO, "p1")
    assert [(w.number, w.state_label) for w in writes] == [(5, "tireless/state/pending")]
    assert "tireless/state/waiting" in writes[0].drop_labels


def test_a_full_listing_reads_a_dependency_the_store_never_saw(store: JobStore) -> None:
    """A closed issue is in no listing of open issues: the full listing fetches it by number."""
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    (first,) = store.claim_repos_to_poll("p1")
    assert first.full_listing
    store.record_poll(
        *TEST_REPO, "p1", [issue(5, body="Depends on #2")], CURSOR, None, full_listing=True
    )
    (again,) = store.claim_repos_to_poll("p1")
    assert again.live_numbers == (2, 5), "its own job's issue, and the dependency never read"
    store.record_poll(
        *TEST_REPO, "p1", [issue(2, *PLAIN, state="closed")], CURSOR, None, full_listing=False
    )
    (known,) = store.claim_repos_to_poll("p1")
    assert known.live_numbers == (5,), "read once, then known"
    assert claimed(store).number == 5


def test_a_full_listing_of_another_repository_reads_the_dependency_there(
    store: JobStore,
) -> None:
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    store.enqueue([issue(5, body="Depends on acme/gears#4")])
    store.track_repo(FORGE, OWNER, "gears")
    listed = {r.repo: r.live_numbers for r in store.claim_repos_to_poll("p1")}
    assert listed == {"gears": (4,), REPO: (5,)}


def test_jobs_and_show_say_a_job_waits_and_on_what(store: JobStore, db: Database) -> None:
    tracked(store).enqueue([issue(5, body="Depends on #3, acme/gears#7")])
    (job_id,) = rows(db, "SELECT id FROM tireless.job")[0]
    listed = tireless_cli(db.url, "jobs")
    assert listed.returncode == 0, listed.stderr
    (line,) = [text for text in listed.stdout.splitlines() if f"{REPO}#5" in text]
    assert line.split()[4] == "waiting"
    assert "waiting on #3, acme/gears#7" in line
    shown = tireless_cli(db.url, "show", str(job_id))
    assert shown.returncode == 0, shown.stderr
    assert "       waiting_on: #3, acme/gears#7\n" in shown.stdout
    untracked = "acme/gears not tracked: nothing reads it until `tireless track`"
    assert f"             note: waiting on #3, acme/gears#7 ({untracked})\n" in shown.stdout


def test_an_upgrade_reads_the_bodies_stored_before_it(request: pytest.FixtureRequest) -> None:
    """0032 reads the `Depends on` lines of the bodies the store already holds, and the pending
    jobs of those issues wait from the upgrade on."""
    server = request.config.stash[SERVER]
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS before_dependencies")
        admin.execute("CREATE DATABASE before_dependencies")
    conninfo = server.conninfo("before_dependencies")
    try:
        backend = get_backend(yoyo_uri(conninfo))
        try:
            before = read_migrations(str(MIGRATIONS)).filter(lambda m: m.id < "0032")
            backend.apply_migrations(backend.to_apply(before))
        finally:
            backend.connection.close()
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO tireless.forge (name, kind, base_url)"
                " VALUES ('gitea', 'gitea', 'https://gitea.invalid')"
            )
            conn.execute("INSERT INTO tireless.tracked_repo VALUES ('gitea', 'acme', 'widgets')")
            conn.execute(
                "INSERT INTO tireless.issue (forge, owner, repo, number, state, body) VALUES"
                " ('gitea', 'acme', 'widgets', 3, 'closed', NULL),"
                " ('gitea', 'acme', 'widgets', 5, 'open', 'Depends on #3, #7'),"
                " ('gitea', 'acme', 'widgets', 6, 'open', 'Depends on #3')"
            )
            conn.execute(
                "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)"
                " VALUES ('gitea', 'acme', 'widgets', 5, 'implement', 'cc'),"
                " ('gitea', 'acme', 'widgets', 6, 'implement', 'cc')"
            )
        migrate(conninfo, adopt_role_members=True)
        with psycopg.connect(conninfo) as conn:
            waiting = conn.execute(
                "SELECT number, waiting_on FROM tireless.job ORDER BY number"
            ).fetchall()
        assert waiting == [(5, ["#7"]), (6, None)]
    finally:
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS before_dependencies WITH (FORCE)")


# The forge's own relations (issue 35): an issue given with "depends_on" has its source = 'forge'
# dependencies replaced; one given without it keeps them.
def forge_said(
    number: int, *depends_on: int | tuple[str, str, int], **extra: Any
) -> dict[str, Any]:
    """An issue of the test repository as the poller hands it, with the relations it read."""
    refs = [d if isinstance(d, tuple) else (OWNER, REPO, d) for d in depends_on]
    return issue(number, **extra).as_json() | {
        "depends_on": [{"owner": o, "repo": r, "number": n} for o, r, n in refs]
    }


def forge_rows(db: Database) -> list[tuple[Any, ...]]:
    return rows(
        db,
        "SELECT number, depends_on_number, source FROM tireless.issue_dependency"
        " ORDER BY number, depends_on_number, source",
    )


def test_the_forge_relations_replace_those_stored_and_an_issue_without_them_keeps_them(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([forge_said(5, 3, 4, 5), issue(3, *PLAIN), issue(4, *PLAIN)])
    assert forge_rows(db) == [(5, 3, "forge"), (5, 4, "forge")], "the issue itself is dropped"
    assert waits(db, 5) == (["#3", "#4"], "waiting on #3, #4")
    store.enqueue([issue(5)])  # not read this round: what the forge said stands
    assert waits(db, 5)[0] == ["#3", "#4"]
    store.enqueue([forge_said(5, 4, body="Depends on #3")])  # the body says #3 now
    assert forge_rows(db) == [(5, 3, "body"), (5, 4, "forge")]
    assert rows(db, "SELECT depends_on, source FROM tireless.job_waits(1)") == [
        ("#3", "body"),
        ("#4", "forge"),
    ]
    store.enqueue([forge_said(5, body="")])
    assert forge_rows(db) == []
    assert waits(db, 5) == (None, None)


def test_a_relation_removed_on_the_forge_releases_the_job_though_the_issue_is_unchanged(
    store: JobStore, db: Database
) -> None:
    shown = issue(5, updated_at=CURSOR)
    tracked(store).enqueue([forge_said(5, 3, updated_at=CURSOR), issue(3, *PLAIN)])
    assert waits(db, 5)[0] == ["#3"]
    with db.connect() as listener:
        listener.execute("LISTEN tireless_work")
        store.enqueue([shown.as_json() | {"depends_on": []}])  # the issue row is as it was
        woken = [n.payload for n in listener.notifies(timeout=1, stop_after=1)]
    assert woken == ["cc"]
    assert waits(db, 5) == (None, None)
    store.enqueue([forge_said(5, ("acme", "gears", 2), updated_at=CURSOR)])
    assert waits(db, 5)[0] == ["acme/gears#2"], "a pending job that gained a relation waits"


def test_record_poll_takes_the_forge_relations_and_settles_them_in_the_same_call(
    store: JobStore, db: Database
) -> None:
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    (repo,) = store.claim_repos_to_poll("p1")
    assert (repo.opt_in, repo.waiting_numbers) == ("tireless", ())
    batch = [forge_said(5, 3), issue(3, *PLAIN).as_json()]
    store.record_poll(*TEST_REPO, "p1", batch, CURSOR, None, full_listing=True)
    (repo,) = store.claim_repos_to_poll("p1")
    assert repo.waiting_numbers == (5,), "a full listing reads a waiting job's relations again"
    store.record_poll(*TEST_REPO, "p1", [forge_said(5)], CURSOR, None, full_listing=False)
    assert waits(db, 5) == (None, None)


BAD_DEPENDS_ON: list[Any] = [
    None,
    "#3",
    {"owner": "acme", "repo": "widgets", "number": 3},
    [3],
    [{"owner": "acme", "repo": "widgets"}],
    [{"owner": "acme", "repo": "widgets", "number": 0}],
    [{"owner": "acme", "repo": "widgets", "number": 2.5}],
    [{"owner": "acme", "repo": "widgets", "number": "3"}],
    [{"owner": "", "repo": "widgets", "number": 3}],
    [{"owner": "acme", "repo": "w" * 201, "number": 3}],
    [{"owner": "acme", "repo": "widgets", "number": n} for n in range(1, 102)],
]


def test_a_malformed_depends_on_refuses_the_batch_and_changes_nothing(
    store: JobStore, db: Database
) -> None:
    tracked(store).enqueue([forge_said(5, 3)])
    before = [forge_rows(db), rows(db, "SELECT id, waiting_on, updated_at FROM tireless.job")]
    for bad in BAD_DEPENDS_ON:
        batch = [issue(4).as_json(), issue(5).as_json() | {"depends_on": bad}]
        with db.connect() as conn, pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "SELECT tireless.enqueue(%(b)s::jsonb)", {"b": psycopg.types.json.Jsonb(batch)}
            )
        assert refused.value.sqlstate == "TL006", bad
        assert "malformed issue at index 1: " in str(refused.value), bad
        assert '"depends_on"' in str(refused.value), bad
    assert [
        forge_rows(db),
        rows(db, "SELECT id, waiting_on, updated_at FROM tireless.job"),
    ] == before
    assert store.enqueue([forge_said(4, *range(1, 101))]) == 1, "100 relations are allowed"
