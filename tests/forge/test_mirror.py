"""The mirror against the stand-in forge over real HTTP, both API families, against the real
database: each issue shows its newest job's state as one `<prefix>/state/<state>` label, a
finished job takes its mode labels off and leaves one comment, the store records that withdrawal,
and a failing write is recorded without stopping the other issues or the polls."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import pytest

from dev.standin import Flavour, StandinForge
from tests import outbox
from tests.conftest import Database
from tests.helpers import rows, track
from tests.helpers import tireless_cli as cli
from tests.support.forge import (
    OWNER,
    PLAN,
    REPO,
    STATE,
    TOKEN,
    Setup,
    asked,
    claim,
    comments,
    labels,
    one_round,
)
from tests.support.schemas import validator
from tireless import JobStore
from tireless.cli.render import render_repos
from tireless.errors import NotHolder
from tireless.forge import client_for
from tireless.forge.mirror import apply_write
from tireless.forge.outbox import post_comment


def state_labels(setup: Setup, number: int) -> list[str]:
    return [label for label in labels(setup, number) if label.startswith(STATE)]


def mirror_row(setup: Setup, number: int) -> dict[str, Any]:
    (row,) = rows(
        setup.db,
        "SELECT to_jsonb(m) FROM tireless.mirror_issue m"
        " WHERE forge = %(f)s AND owner = %(o)s AND repo = %(r)s AND number = %(n)s",
        {"f": setup.name, "o": OWNER, "r": REPO, "n": number},
    )
    found: dict[str, Any] = row[0]
    return found


def test_a_new_job_shows_pending_and_a_claim_shows_claimed(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    assert state_labels(setup, number) == [f"{STATE}pending"]
    claim(setup.store)
    report = one_round(setup)
    assert report.mirrored == 1
    assert state_labels(setup, number) == [f"{STATE}claimed"]
    assert labels(setup, number)[:2] == PLAN  # the request's labels stay while the job lives
    assert comments(setup, number) == []


def test_the_missing_state_label_is_created_on_the_repository_not_exclusive(setup: Setup) -> None:
    setup.track(REPO)
    setup.forge.create_issue(OWNER, REPO, "asks", [*PLAN, "tireless/agent:oc"])
    assert f"{STATE}pending" not in setup.forge.repo_labels(OWNER, REPO)
    one_round(setup)
    one_round(setup)
    created = setup.forge.repo_labels(OWNER, REPO)[f"{STATE}pending"]
    assert created.exclusive is False
    # Not exclusive: the other tireless/* labels of the scope stay on the issue.
    assert labels(setup, 1) == [*PLAN, "tireless/agent:oc", f"{STATE}pending"]


def test_exclusive_state_labels_on_gitea_never_knock_a_mode_label_off(setup: Setup) -> None:
    """An admin who marks every tireless label exclusive (Gitea's scoped labels): the state labels
    have their own scope (tireless/state), so setting one takes off only another state label, and
    the mode and agent labels (scope tireless) stay: the job is not cancelled."""
    if setup.forge.flavour != "gitea":
        pytest.skip("exclusive scopes are Gitea's and Forgejo's")
    setup.track(REPO)
    for name in [*PLAN[1:], "tireless/implement", "tireless/agent:oc"] + [
        f"{STATE}{state}" for state in ("pending", "waiting", "claimed", "delivered")
    ]:
        setup.forge.mark_exclusive(OWNER, REPO, name)
    number = setup.forge.create_issue(OWNER, REPO, "asks", [*PLAN, "tireless/agent:oc"])
    one_round(setup)
    job = setup.store.claim_next("host1-3", ["oc"])
    assert job is not None
    one_round(setup)
    one_round(setup)
    assert labels(setup, number) == [*PLAN, "tireless/agent:oc", f"{STATE}claimed"]
    assert setup.jobs(REPO) == {number: ("claimed", None)}


def test_an_old_style_state_label_is_taken_off_at_the_next_write(setup: Setup) -> None:
    setup.track(REPO)
    number = setup.forge.create_issue(OWNER, REPO, "asks", [*PLAN, "tireless/state:claimed"])
    one_round(setup)
    one_round(setup)
    assert labels(setup, number) == [*PLAN, f"{STATE}pending"]


def test_delivered_shows_delivered_takes_the_mode_labels_off_and_comments_once(
    setup: Setup,
) -> None:
    setup.track(REPO)
    number = asked(setup)
    job = claim(setup.store)
    setup.store.transition(job.id, "delivered", "host1-3", "merged as #12\n  (squashed)")
    one_round(setup)
    assert labels(setup, number) == ["tireless", f"{STATE}delivered"]
    (comment,) = comments(setup, number)
    assert comment == (
        "tireless: delivered after 1 attempt\n\n"
        "```\nhost1-3: merged as #12 (squashed)\n```\n\n"
        f"<!-- tireless:job:{job.id} -->"
    )
    for _ in range(2):  # later rounds change nothing on the forge
        one_round(setup)
    assert comments(setup, number) == [comment]
    assert labels(setup, number) == ["tireless", f"{STATE}delivered"]


def test_a_release_shows_pending_again(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    job = claim(setup.store)
    one_round(setup)
    assert state_labels(setup, number) == [f"{STATE}claimed"]
    setup.store.transition(job.id, "pending", "host1-3", "runner stopping")
    one_round(setup)
    assert state_labels(setup, number) == [f"{STATE}pending"]
    assert comments(setup, number) == []


def test_three_quick_changes_collapse_to_the_last(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    writes_before = len(setup.forge.writes())
    job = claim(setup.store)
    setup.store.transition(job.id, "pending", "host1-3")
    setup.store.expire_stale_claims()
    with setup.db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET available_at = now() WHERE id = %(id)s", {"id": job.id}
        )
    again = claim(setup.store, "host2-1")
    setup.store.transition(again.id, "failed", "host2-1", "tests red")
    report = one_round(setup)
    assert report.mirrored == 1
    assert state_labels(setup, number) == [f"{STATE}failed"]
    # Nothing of the states in between reached the forge: no claimed label was ever made.
    assert f"{STATE}claimed" not in setup.forge.repo_labels(OWNER, REPO)
    writes = setup.forge.writes()[writes_before:]
    assert sum(1 for w in writes if w.path.endswith("/comments")) == 1
    assert comments(setup, number)[0].startswith(
        "tireless: failed after 2 attempts\n\n```\nhost2-1"
    )


def test_a_500_is_retried_and_the_write_lands_in_the_same_round(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    claim(setup.store)
    setup.forge.fault("500", times=1, writes_only=True)
    report = one_round(setup)
    assert (report.mirrored, report.mirror_failed) == (1, 0)
    assert state_labels(setup, number) == [f"{STATE}claimed"]
    statuses = [w for w in setup.forge.writes() if w.method == "POST"]
    assert len(statuses) >= 2  # the failed try and its retry


def test_a_403_is_recorded_and_the_other_issues_and_the_polls_go_on(setup: Setup) -> None:
    setup.track(REPO)
    refused = asked(setup, "read-only for us")
    fine = setup.forge.create_issue(OWNER, REPO, "fine", PLAN)
    setup.forge.fault("403", times=None, writes_only=True, number=refused)
    one_round(setup)  # the poll makes fine's job
    claim(setup.store)  # the oldest job: refused's
    report = one_round(setup)
    assert (report.mirrored, report.mirror_failed) == (1, 1)
    assert "HTTP 403" in (report.mirror_error or "")
    assert state_labels(setup, fine) == [f"{STATE}pending"]
    assert state_labels(setup, refused) == [f"{STATE}pending"]  # still the old state
    shown = render_repos(setup.store.repo_status())
    assert "MIRROR-BACKLOG" in shown
    assert "HTTP 403" in shown
    printed = cli(setup.db.url, "status").stdout
    assert "mirror: 1 issue(s) wait for their forge labels or comment" in printed
    assert "HTTP 403" in printed
    status = setup.poll_state()
    assert status["last_error"] is None  # the polls are fine
    assert status["mirror_backlog"] == 1
    assert "HTTP 403" in status["mirror_error"]
    row = mirror_row(setup, refused)
    assert (row["failures"], row["state"], row["applied_state"]) == (1, "claimed", "pending")
    # The poll goes on: a new request still gets its job, in the next round.
    newer = setup.forge.create_issue(OWNER, REPO, "newer", PLAN)
    assert one_round(setup).created == 1
    assert newer in setup.jobs()
    # Once the forge accepts, the backed-off write lands and the error clears.
    setup.forge.clear_faults()
    with setup.db.connect() as conn:
        conn.execute("UPDATE tireless.mirror_issue SET next_try_at = now()")
    one_round(setup)
    assert state_labels(setup, refused) == [f"{STATE}claimed"]
    status = setup.poll_state()
    assert (status["mirror_backlog"], status["mirror_error"]) == (0, None)


def test_the_same_write_applied_twice_leaves_one_comment_and_one_label(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    job = claim(setup.store)
    setup.store.transition(job.id, "cancelled", "host1-3", "not needed")
    (target,) = setup.store.claim_repos_to_poll("poller-1")
    (write,) = setup.store.mirror_writes(setup.name, OWNER, REPO, "poller-1")
    (comment,) = outbox.due(setup.store, "comment", setup.name, OWNER, REPO, "poller-1")
    client = client_for(setup.forge.flavour, setup.forge.url, TOKEN)
    try:
        apply_write(client, OWNER, REPO, write)
        post_comment(client, OWNER, REPO, comment)
        once = (labels(setup, number), comments(setup, number))
        writes = len(setup.forge.writes())
        apply_write(client, OWNER, REPO, write)
        post_comment(client, OWNER, REPO, comment)
    finally:
        client.close()
    assert (labels(setup, number), comments(setup, number)) == once
    assert len(setup.forge.writes()) == writes  # the second time had nothing left to write
    assert once == (["tireless", f"{STATE}cancelled"], [once[1][0]])
    assert target.repo == REPO


def test_after_the_withdrawal_no_job_until_a_human_asks_again(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    job = claim(setup.store)
    setup.store.transition(job.id, "delivered", "host1-3", "done")
    one_round(setup)  # the mirror takes the mode label off and records the withdrawal
    (issue,) = rows(
        setup.db,
        "SELECT labels, asks_since FROM tireless.issue WHERE number = %(n)s",
        {"n": number},
    )
    assert issue == (["tireless", f"{STATE}delivered"], None)
    for _ in range(2):
        assert one_round(setup).created == 0
    assert list(setup.jobs().values()) == [("delivered", "done")]
    setup.forge.set_labels(OWNER, REPO, number, [*labels(setup, number), "tireless/implement"])
    assert one_round(setup).created == 1
    states = rows(setup.db, "SELECT state::text FROM tireless.job ORDER BY id")
    assert states == [("delivered",), ("pending",)]
    one_round(setup)
    assert state_labels(setup, number) == [f"{STATE}pending"]


def test_a_zombie_holder_that_tries_to_finish_makes_no_forge_write(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    zombie = claim(setup.store, "host1-3")
    with setup.db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET claim_expires_at = now() - interval '1 second',"
            " available_at = now() WHERE id = %(id)s",
            {"id": zombie.id},
        )
    setup.store.expire_stale_claims()
    with setup.db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET available_at = now() WHERE id = %(id)s", {"id": zombie.id}
        )
    claim(setup.store, "host1-3")  # the same name again, a new token
    one_round(setup)
    assert state_labels(setup, number) == [f"{STATE}claimed"]
    writes = len(setup.forge.writes())
    with pytest.raises(NotHolder):
        setup.store.transition(zombie.id, "delivered", "host1-3", "stale", token=zombie.claim_token)
    one_round(setup)
    assert len(setup.forge.writes()) == writes
    assert state_labels(setup, number) == [f"{STATE}claimed"]
    assert comments(setup, number) == []


def test_forge_labels_never_decide_a_claim(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    # A human (or a stale mirror) marks the pending issue claimed on the forge.
    setup.forge.set_labels(OWNER, REPO, number, [*PLAN, f"{STATE}claimed"])
    one_round(setup)
    job = setup.store.claim_next("host1-3", ["cc"])
    assert job is not None
    assert job.number == number


def test_comments_can_be_turned_off(setup: Setup) -> None:
    setup.track(REPO)
    number = asked(setup)
    assert setup.store.set_mirror_comments(False) is False
    job = claim(setup.store)
    setup.store.transition(job.id, "delivered", "host1-3", "done")
    one_round(setup)
    assert labels(setup, number) == ["tireless", f"{STATE}delivered"]
    assert comments(setup, number) == []


def test_newer_gitea_takes_label_names_and_older_refuses_them(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client sends ids, which both Gitea generations take; the stand-in's default (ids
    only, Gitea up to 1.20) refuses a name with 422, as those versions do."""
    with StandinForge("gitea", token=TOKEN) as forge:
        forge.create_issue(OWNER, REPO, "asks", PLAN)
        reply = _post(
            forge, f"/api/v1/repos/{OWNER}/{REPO}/issues/1/labels", {"labels": ["tireless"]}
        )
        assert reply == 422
    with StandinForge("gitea", token=TOKEN, gitea_label_refs="both") as forge:
        forge.create_issue(OWNER, REPO, "asks", ["tireless"])
        forge.create_repo(OWNER, REPO)
        forge.set_labels(OWNER, REPO, 1, ["tireless", "tireless/plan"])
        forge.set_labels(OWNER, REPO, 1, ["tireless"])
        reply = _post(
            forge, f"/api/v1/repos/{OWNER}/{REPO}/issues/1/labels", {"labels": ["tireless/plan"]}
        )
        assert reply == 200
        assert forge.labels_of(OWNER, REPO, 1) == ["tireless", "tireless/plan"]


def _post(forge: StandinForge, path: str, body: object) -> int:
    headers = {"Authorization": f"token {TOKEN}"}
    return httpx.post(forge.url + path, json=body, headers=headers).status_code


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_the_write_endpoints_answer_as_the_published_schemas(flavour: Flavour) -> None:
    prefix = "/api/v1" if flavour == "gitea" else ""
    auth = {"Authorization": f"{'token' if flavour == 'gitea' else 'Bearer'} {TOKEN}"}
    color = "#6a737d" if flavour == "gitea" else "6a737d"
    label = validator(
        f"{flavour}_issue.json", "#/$defs/" + ("Label" if flavour == "gitea" else "label")
    )
    comment = validator(f"{flavour}_comment.json")
    with (
        StandinForge(flavour, token=TOKEN) as forge,
        httpx.Client(base_url=forge.url + prefix + f"/repos/{OWNER}/{REPO}", headers=auth) as http,
    ):
        forge.create_issue(OWNER, REPO, "asks", PLAN)
        made = http.post("/labels", json={"name": f"{STATE}pending", "color": color})
        assert made.status_code == 201
        label.validate(made.json())
        ref = made.json()["id"] if flavour == "gitea" else made.json()["name"]
        added = http.post("/issues/1/labels", json={"labels": [ref]})
        assert added.status_code == 200
        for item in added.json():
            label.validate(item)
        for item in http.get("/labels").json():
            label.validate(item)
        posted = http.post("/issues/1/comments", json={"body": "tireless: delivered"})
        assert posted.status_code == 201
        comment.validate(posted.json())
        (listed,) = http.get("/issues/1/comments").json()
        comment.validate(listed)
        gone = http.delete(f"/issues/1/labels/{quote(str(ref), safe='')}")
        assert gone.status_code == (204 if flavour == "gitea" else 200)
        assert forge.labels_of(OWNER, REPO, 1) == PLAN
        # A color in the other forge's spelling is refused, as each forge does.
        wrong = color.lstrip("#") if flavour == "gitea" else "#" + color
        assert http.post("/labels", json={"name": "x", "color": wrong}).status_code == 422


def test_a_repository_tracked_again_gets_no_write_for_what_happened_before(setup: Setup) -> None:
    setup.track(REPO)
    asked(setup)
    job = claim(setup.store)
    setup.store.untrack_repo(setup.name, OWNER, REPO)
    setup.store.transition(job.id, "delivered", "host1-3", "done while untracked")
    setup.store.track_repo(setup.name, OWNER, REPO)
    setup.store.claim_repos_to_poll("poller-1")
    assert setup.store.mirror_writes(setup.name, OWNER, REPO, "poller-1") == []


OLD_HISTORY = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, attempts)
SELECT 'gitea', 'acme', 'old', g, 'implement', 'cc', 'delivered', 1 FROM generate_series(1, 20000) g;
INSERT INTO tireless.job_event (job_id, at, from_state, to_state, worker, attempt)
SELECT j.id, now() - interval '1 day', e.from_state, e.to_state, 'w', 1
  FROM tireless.job j,
       (VALUES (NULL::tireless.job_state, 'pending'::tireless.job_state),
               ('claimed', 'delivered')) AS e(from_state, to_state)
"""


HISTORY_READS = """
SELECT relname, seq_scan, seq_tup_read, coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables
 WHERE schemaname = 'tireless' AND relname IN ('job', 'job_event') ORDER BY relname"""


def table_reads(conn: Any) -> dict[str, tuple[int, int, int]]:
    """Sequential scans, rows they read, and rows fetched through an index, of job and job_event."""
    conn.execute("SELECT pg_stat_force_next_flush()")  # this backend's counts, flushed when idle
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return {
        name: (scans, scanned, fetched)
        for name, scans, scanned, fetched in conn.execute(HISTORY_READS)
    }


def test_the_mirror_backlog_scans_no_job_table_and_none_of_the_old_history(
    db: Database, store: JobStore
) -> None:
    """A repository tracked after 40,000 events (its forge not registered, so nothing has mirrored
    it yet): repo_status reads its unread changes from the top of the history at its tracking, and
    finds their jobs by key instead of scanning every job ever run."""
    with db.connect() as conn:
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")  # as loaded, no triggers
            conn.execute(OLD_HISTORY)
        conn.execute("VACUUM ANALYZE tireless.job_event")  # summarises the BRIN index on the id
        track(store, "nowhere", OWNER, "fresh")
        before = table_reads(conn)
        backlog = conn.execute("SELECT mirror_backlog FROM tireless.repo_status").fetchall()
        after = table_reads(conn)
    assert backlog == [(0,)]
    (job_scans, _, _), (event_scans, _, events_fetched) = (
        tuple(a - b for a, b in zip(after[name], before[name], strict=True))
        for name in ("job", "job_event")
    )
    assert (job_scans, event_scans) == (0, 0), "no sequential scan of the jobs or the history"
    # At most the newest block range of the BRIN index on the id (128 pages), not 40,000 events.
    assert events_fetched < 20000
