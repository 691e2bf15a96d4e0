"""The `tireless` command end to end: each command (tests.helpers.tireless_cli) against the test
database, its --json output parsed, its exit code checked (0 ok, 1 refused, 2 usage, 3 nothing to
do, 4 unreachable)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

from tests.conftest import Database
from tests.helpers import (
    FORGE,
    OWNER,
    REPO,
    WORK,
    cli_json,
    end_lease,
    enqueue_jobs,
    issue,
    tracked,
    wait_until,
)
from tests.helpers import tireless_cli as cli
from tireless import JobStore


def issues_json(*numbers: int, labels: tuple[str, ...] = WORK) -> str:
    return json.dumps([issue(n, *labels).as_json() for n in numbers])


def test_migrate_on_a_migrated_database_applies_nothing(db: Database) -> None:
    assert cli_json(db.url, "migrate") == {"applied": []}


def test_track_untrack_and_repos_report_what_changed(db: Database) -> None:
    repo = [FORGE, OWNER, REPO]
    cli_json(db.url, "forge", "add", FORGE, "--kind", "gitea", "--url", "https://gitea.test")
    assert cli_json(db.url, "track", *repo)["changed"] is True
    assert cli_json(db.url, "track", *repo)["changed"] is False
    (listed,) = cli_json(db.url, "repos")  # with its poll state (tireless.repo_status)
    assert (listed["forge"], listed["owner"], listed["repo"]) == (FORGE, OWNER, REPO)
    assert (listed["last_poll_at"], listed["last_error"]) == (None, None)
    assert cli_json(db.url, "untrack", *repo)["changed"] is True
    assert cli_json(db.url, "untrack", *repo)["changed"] is False
    assert cli_json(db.url, "repos") == []
    assert cli(db.url, "repos").stdout.strip() == "no tracked repositories"


def test_enqueue_reads_stdin_or_a_file_and_prints_the_jobs_it_created(
    db: Database, tmp_path: Any
) -> None:
    cli_json(db.url, "forge", "add", FORGE, "--kind", "gitea", "--url", "https://gitea.test")
    cli_json(db.url, "track", FORGE, OWNER, REPO)
    batch = json.loads(issues_json(1, 2)) + json.loads(issues_json(3, labels=("tireless",)))
    created = cli_json(db.url, "enqueue", stdin=json.dumps(batch))
    assert created["created"] == 2
    assert [(j["number"], j["state"], j["kind"]) for j in created["jobs"]] == [
        (1, "pending", "implement"),
        (2, "pending", "implement"),
    ]
    again = tmp_path / "issues.json"
    again.write_text(json.dumps(batch))
    assert cli_json(db.url, "enqueue", str(again)) == {"created": 0, "jobs": []}
    text = cli(db.url, "enqueue", stdin=issues_json(4))
    assert text.returncode == 0
    assert text.stdout.startswith("created 1 job(s) from 1 issue(s)\njob ")


def test_enqueue_of_a_malformed_batch_exits_1_with_its_sqlstate_and_bad_json_exits_2(
    db: Database,
) -> None:
    refused = cli(db.url, "enqueue", stdin='[{"forge": "gitea"}]')
    assert refused.returncode == 1
    assert refused.stderr.startswith("tireless: TL006: malformed issue at index 0")
    assert cli(db.url, "enqueue", stdin="not json").returncode == 2
    assert cli(db.url, "enqueue", stdin='{"an": "object"}').returncode == 2
    assert db.scalar("SELECT count(*) FROM tireless.job") == 0


def test_claim_renew_and_transition_deliver_a_job_with_its_token(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = cli_json(db.url, "claim", "--worker", "w1", "--lane", "cc", "--lease", "30s")
    assert (job["state"], job["claimed_by"], job["attempts"]) == ("claimed", "w1", 1)
    token, job_id = job["claim_token"], str(job["id"])
    renewed = cli_json(db.url, "renew", job_id, "--worker", "w1", "--token", token, "--lease", "5m")
    assert renewed == {"job": job["id"], "renewed": True}
    done = cli_json(
        db.url,
        "transition",
        job_id,
        "delivered",
        "--worker",
        "w1",
        "--token",
        token,
        "--note",
        "merged",
    )
    assert (done["state"], done["note"], done["claimed_by"]) == ("delivered", "merged", None)
    nothing = cli(db.url, "claim", "--worker", "w1", "--lane", "cc", "--json")
    assert (nothing.returncode, json.loads(nothing.stdout)) == (3, None)


def test_renewing_a_claim_held_by_another_worker_exits_3(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = cli_json(db.url, "claim", "--worker", "w1", "--lane", "cc")
    result = cli(db.url, "renew", str(job["id"]), "--worker", "w2", "--json")
    assert result.returncode == 3
    assert json.loads(result.stdout) == {"job": job["id"], "renewed": False}


def test_a_transition_by_a_non_holder_exits_1_naming_tl004(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = cli_json(db.url, "claim", "--worker", "w1", "--lane", "cc")
    result = cli(db.url, "transition", str(job["id"]), "delivered", "--worker", "w2")
    assert result.returncode == 1
    assert result.stderr.startswith(f"tireless: TL004: worker 'w2' does not hold job {job['id']}")
    assert db.scalar("SELECT state::text FROM tireless.job") == "claimed"


def test_sweep_returns_an_expired_claim_to_pending(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 2)
    job = cli_json(db.url, "claim", "--worker", "w1", "--lane", "cc")
    cli_json(db.url, "claim", "--worker", "w2", "--lane", "cc")
    end_lease(db, job["id"])
    assert cli_json(db.url, "sweep") == {"expired": 1}
    assert (
        db.scalar("SELECT state::text FROM tireless.job WHERE id = %(id)s", {"id": job["id"]})
        == "pending"
    )


def test_sweep_every_keeps_sweeping_and_exits_0_on_sigterm(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = store.claim_next("w1", ["cc"])
    assert job is not None
    sweeper = subprocess.Popen(
        [sys.executable, "-m", "tireless", "--database", db.url, "sweep", "--every", "0.1s"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        end_lease(db, job.id)  # the sweeper runs already: only its loop can pick this up
        state = "SELECT state::text FROM tireless.job WHERE id = %(id)s"
        wait_until(lambda: db.scalar(state, {"id": job.id}) == "pending", "the sweep")
        sweeper.send_signal(signal.SIGTERM)
        out, _ = sweeper.communicate(timeout=30)
    finally:
        sweeper.kill()
    assert sweeper.returncode == 0
    assert "returned 1 expired claim(s)" in out


def test_status_shows_lanes_by_state_with_claims_past_lease_and_paused_lanes(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 3)
    tracked_oc = [issue(10, *WORK, "tireless/agent:oc")]
    store.enqueue(tracked_oc)
    first = store.claim_next("w1", ["cc"])
    second = store.claim_next("w1", ["cc"])
    assert first is not None
    assert second is not None
    store.transition(first.id, "delivered", "w1")
    end_lease(db, second.id)
    store.pause_lane("oc")
    lanes = {row["lane"]: row for row in cli_json(db.url, "status")}
    cc, oc = lanes["cc"], lanes["oc"]
    assert (cc["pending"], cc["claimed"], cc["past_lease"], cc["delivered"]) == (1, 1, 1, 1)
    assert (oc["pending"], oc["paused"], oc["breaker"]) == (1, True, "closed")
    assert oc["oldest_pending_seconds"] >= 0
    text = cli(db.url, "status").stdout
    assert text.splitlines()[0].split() == [
        "LANE", "PENDING", "READY", "WAITING", "CLAIMED", "PAST-LEASE", "DELIVERED", "FAILED",
        "CANCELLED", "OLDEST-PENDING", "LANE-STATE", "EGRESS",
    ]  # fmt: skip
    assert "paused" in text
    assert text.rstrip().endswith("3 live job(s)")


def test_jobs_filters_by_state_lane_and_repo(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 2)
    tracked(store, "gadgets")
    store.enqueue([issue(1, repo="gadgets"), issue(2, *WORK, "tireless/agent:oc", repo="gadgets")])
    claimed = store.claim_next("w1", ["cc"])
    assert claimed is not None

    def numbers(*filters: str) -> list[tuple[str, int]]:
        return [(j["repo"], j["number"]) for j in cli_json(db.url, "jobs", *filters)]

    assert numbers() == [(REPO, 1), (REPO, 2), ("gadgets", 1), ("gadgets", 2)]
    assert numbers("--state", "claimed") == [(REPO, 1)]
    assert numbers("--lane", "oc") == [("gadgets", 2)]
    assert numbers("--repo", f"{OWNER}/gadgets", "--state", "pending") == [
        ("gadgets", 1),
        ("gadgets", 2),
    ]
    assert numbers("--after", str(claimed.id), "--limit", "1") == [(REPO, 2)]
    assert cli(db.url, "jobs", "--repo", "no-slash").returncode == 2


def test_show_prints_a_job_and_its_history(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = store.claim_next("w1", ["cc"])
    assert job is not None
    store.transition(job.id, "pending", "w1", note="tests failed")
    shown = cli_json(db.url, "show", str(job.id))
    assert (shown["job"]["id"], shown["job"]["state"], shown["job"]["note"]) == (
        job.id,
        "pending",
        "tests failed",
    )
    assert [
        (e["from_state"], e["to_state"], e["worker"], e["attempt"]) for e in shown["history"]
    ] == [
        (None, "pending", None, 0),
        ("pending", "claimed", "w1", 1),
        ("claimed", "pending", "w1", 1),
    ]
    text = cli(db.url, "show", str(job.id)).stdout
    assert "history:" in text
    assert "tests failed" in text
    unknown = cli(db.url, "show", "999999")
    assert (unknown.returncode, unknown.stderr.strip()) == (
        1,
        "tireless: TL001: no job with id 999999",
    )


# What a hostile issue or agent may write: an OSC 52 clipboard write ended by BEL, a colour (ESC [),
# a C1 CSI, a carriage return that would overwrite the line, a right-to-left override and isolate.
HOSTILE = "ok\x1b]52;c;cm0gLXJmIH4=\x07\x1b[31mred\x9b2J\rback\u202eevil\u2066"
SHOWN = "ok\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[31mred\\x9b2J\\x0dback\\u202eevil\\u2066"


def test_show_and_jobs_print_control_characters_visibly_never_raw(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    store.enqueue([issue(1, title=f"title {HOSTILE}"), issue(2)])
    worker = f"worker {HOSTILE}"
    first, second = store.claim_next(worker, ["cc"]), store.claim_next(worker, ["cc"])
    assert first is not None
    assert second is not None
    store.transition(first.id, "pending", worker, note=f"line one\nnote {HOSTILE}")
    shown, listed = cli(db.url, "show", str(first.id)).stdout, cli(db.url, "jobs").stdout
    for out in (shown, listed):
        assert [c for c in out if c != "\n" and not c.isprintable()] == []
        assert f"worker {SHOWN}" in out
    assert f"title {SHOWN}" in shown
    assert f"line one\nnote {SHOWN}" in shown, "a note's own lines stay lines"
    # A table cell shows the note's last line: a carriage return ends a line there too.
    assert "back\\u202eevil\\u2066" in listed


def test_no_database_is_a_usage_error_and_an_unreachable_one_exits_4(db: Database) -> None:
    missing = cli(None, "status")
    assert missing.returncode == 2
    assert "DATABASE_URL" in missing.stderr
    assert cli(None, "status", "--bogus-flag").returncode == 2
    gone = cli(None, "--database", f"host={db.server.socket_dir} port=1 dbname=nowhere", "status")
    assert gone.returncode == 4
    assert gone.stderr.startswith("tireless: cannot reach the database")


def test_a_poller_enqueues_without_the_listing_and_may_not_read_jobs(
    db: Database, store: JobStore
) -> None:
    tracked(store)
    dbname = db.scalar("SELECT current_database()")
    role = f"poller_{dbname}"
    with db.connect() as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN IN ROLE tireless_poller')
    try:
        as_poller = f"host={db.server.socket_dir} port={db.server.port} user={role} dbname={dbname}"
        enqueued = cli(as_poller, "enqueue", "--json", stdin=issues_json(1, 2))
        assert enqueued.returncode == 0, enqueued.stderr
        assert json.loads(enqueued.stdout) == {"created": 2, "jobs": None}
        refused = cli(as_poller, "jobs")
        assert refused.returncode == 1
        assert refused.stderr.startswith("tireless: 42501: permission denied for table job")
    finally:
        with db.connect() as admin:
            admin.execute(f'DROP ROLE "{role}"')
