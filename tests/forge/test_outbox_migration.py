"""The writes in flight when a store moves to the one outbox (issue 45, migration 0039): a store at
0038, with writes of every kind queued by the 0038 functions (one of them failed once, backing
off), is migrated to the newest version, and the real mirror then makes each write on the
stand-in forge exactly once."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from yoyo import get_backend, read_migrations

from dev.embedded import EmbeddedPostgres
from dev.standin import MIRROR_LOGIN, StandinForge
from tests.support.forge import OWNER, TOKEN
from tireless import DiscoveredIssue, JobStore, migrate
from tireless.forge import token_variable
from tireless.forge.poll import Report, client_factory, poll_round
from tireless.migrate import SQL_FILES, yoyo_uri

ROOT = Path(__file__).resolve().parents[2]
BEFORE = "0038_ended_claims"
NAME, REPO, POLLER, WORKER = "gitea", "widgets", "poller-1", "host1-3"
IMPLEMENT = ("tireless", "tireless/implement")
PLAN = ("tireless", "tireless/plan")


def files_before_the_outbox() -> dict[str, str]:
    """db/'s SQL files as the last version before 0039 left them: the parent of the commit that
    added 0039 (read from git; skipped outside a clone)."""
    try:
        added = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--", "db/migrations/0039_outbox.sql"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        added = []
    if not added:
        pytest.skip("needs the git history of db/ (a clone with 0039 committed)")
    texts = {}
    for name in SQL_FILES:  # the files of that version, in their order (a file since is left out)
        shown = subprocess.run(
            ["git", "show", f"{added[-1]}^:db/{name}"], cwd=ROOT, capture_output=True, text=True
        )
        if shown.returncode == 0:
            texts[name] = shown.stdout
    return texts


@pytest.fixture
def at_0038(server: EmbeddedPostgres) -> Iterator[str]:
    """A database at 0038 with the functions of that version, as its code left it."""
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS outbox_at_0038")
        admin.execute("CREATE DATABASE outbox_at_0038")
    conninfo = server.conninfo("outbox_at_0038")
    try:
        backend = get_backend(yoyo_uri(conninfo))
        try:
            migrations = read_migrations(str(ROOT / "db" / "migrations"))
            backend.apply_migrations(backend.to_apply(migrations.filter(lambda m: m.id <= BEFORE)))
        finally:
            backend.connection.close()
        with psycopg.connect(conninfo) as conn:
            for text in files_before_the_outbox().values():
                conn.execute(text.encode())
        yield conninfo
    finally:
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS outbox_at_0038 WITH (FORCE)")


def old(conninfo: str, call: str, **params: Any) -> list[tuple[Any, ...]]:
    """A 0038 function, called as the 0038 code called it."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return conn.execute(f"SELECT * FROM tireless.{call}", params).fetchall()


def one_round(store: JobStore) -> Report:
    """A poll round of the repository, due now (a round of the mirror follows its read)."""
    store.poll_soon(NAME, OWNER, REPO)
    (report,) = poll_round(store, POLLER, clients=client_factory(timeout=2.0))
    assert report.error is None, report.error
    return report


def mine(forge: StandinForge, number: int, marker: str) -> list[str]:
    """The comments of the mirror's account on issue `number` that end with `marker`."""
    return [
        body
        for author, body in forge.comments_with_authors(OWNER, REPO, number)
        if author == MIRROR_LOGIN and body.rstrip().endswith(marker)
    ]


def test_writes_queued_at_0038_of_every_kind_are_made_once_after_the_migration(
    at_0038: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(token_variable(NAME), TOKEN)
    with StandinForge("gitea", token=TOKEN, max_page_size=50) as forge, JobStore(at_0038) as store:
        store.add_forge(NAME, "gitea", forge.url)
        forge.create_repo(OWNER, REPO)
        forge.seed_git(OWNER, REPO, {"README.md": "widgets\n"})
        store.track_repo(NAME, OWNER, REPO)
        fixed = forge.create_issue(OWNER, REPO, "Widgets crash", IMPLEMENT)
        plan = forge.create_issue(OWNER, REPO, "Plan the widget", PLAN)
        first = forge.create_issue(OWNER, REPO, "first", IMPLEMENT, body=f"Depends on #{plan + 2}")
        second = forge.create_issue(OWNER, REPO, "second", IMPLEMENT, body=f"Depends on #{first}")
        listed = forge.create_issue(OWNER, REPO, "Plan the frame", PLAN)
        child = forge.create_issue(OWNER, REPO, "Frame", IMPLEMENT)
        shown = {fixed: IMPLEMENT, plan: PLAN, first: IMPLEMENT, second: IMPLEMENT, listed: PLAN}
        bodies = {first: f"Depends on #{second}", second: f"Depends on #{first}"}
        store.enqueue(
            [
                DiscoveredIssue(NAME, OWNER, REPO, n, labels=labels, body=bodies.get(n, ""))
                for n, labels in shown.items()
            ]
        )
        claimed = {}
        for _ in range(3):  # the cycle's two wait
            job = store.claim_next(WORKER, ["cc"])
            assert job is not None
            claimed[job.number] = job
        assert store.claim_next(WORKER, ["cc"]) is None
        # A delivery (its pull request queued) ...
        base = forge.branch_head(OWNER, REPO, "main")
        head = forge.seed_git(OWNER, REPO, {"fix.txt": "one"}, branch=f"tireless/{fixed}")
        store.deliver(claimed[fixed].id, WORKER, branch=f"tireless/{fixed}", head=head,
                      base_branch="main", base=base, token=claimed[fixed].claim_token)  # fmt: skip
        # ... and two plans (their tasks queued), one of whose children is opened already.
        tasks = [{"title": "Build the frame", "body": ""}, {"title": "Paint it", "body": ""}]
        for number, plan_tasks in ((plan, tasks), (listed, [{"title": "Frame", "body": ""}])):
            job = claimed[number]
            store.attach_plan(job.id, WORKER, plan_tasks, job.claim_token)
            store.transition(job.id, "delivered", WORKER, "planned", token=job.claim_token)
        store.claim_repos_to_poll(POLLER)
        store.mirror_writes(NAME, OWNER, REPO, POLLER)  # the outcome comments queued
        key = {"forge": NAME, "owner": OWNER, "repo": REPO, "poller": POLLER}
        at = "forge => %(forge)s, owner => %(owner)s, repo => %(repo)s, poller => %(poller)s"
        # The outcome comment of the plan whose child is open, posted with its checklist ...
        old(at_0038, f"record_plan_task({at}, job_id => %(job)s, task => 0, number => %(child)s)",
            **key, job=claimed[listed].id, child=child)  # fmt: skip
        due = old(at_0038, f"mirror_comments_due({at})", **key)
        (comment,) = [row for row in due if row[0] == claimed[listed].id]
        forge.add_comment_as(OWNER, REPO, listed, MIRROR_LOGIN, comment[2])
        old(at_0038, f"record_mirror_comment({at}, job_id => %(job)s, checklist => %(list)s)",
            **key, job=claimed[listed].id, list=comment[4])  # fmt: skip
        # ... which is to be edited: the child gets a job.
        store.enqueue([DiscoveredIssue(NAME, OWNER, REPO, child, labels=IMPLEMENT)])
        assert [row[0] for row in old(at_0038, f"mirror_checklists_due({at})", **key)] == [
            claimed[listed].id
        ]
        # A refused command, whose reply is owed.
        store.conversation_to_read(NAME, OWNER, REPO, POLLER)
        refusal = {"source": "comment", "id": 7001, "number": fixed, "author": "mallory",
                   "permission": "none", "created_at": datetime.now(UTC).isoformat(),
                   "body": "/tireless implement"}  # fmt: skip
        store.record_conversation(NAME, OWNER, REPO, POLLER, MIRROR_LOGIN, [refusal])
        # The pull request's write failed once: in flight, backing off.
        old(at_0038, f"record_mirror_pull({at}, job_id => %(job)s, error => 'HTTP 502')",
            **key, job=claimed[fixed].id)  # fmt: skip
        queued = {
            "pull": old(at_0038, f"mirror_pulls_due({at})", **key),
            "task": old(at_0038, f"plan_tasks_due({at})", **key),
            "comment": old(at_0038, f"mirror_comments_due({at})", **key),
            "cycle": old(at_0038, f"cycle_reports_due({at})", **key),
            "checklist": old(at_0038, f"mirror_checklists_due({at})", **key),
            "reply": old(at_0038, f"conversation_replies_due({at})", **key),
        }
        assert (
            {kind: len(rows) for kind, rows in queued.items()}
            == {
                "pull": 0,  # backing off
                "task": 2,
                "comment": 0,  # both wait: the delivery's for its pull request, the plan's for its children
                "cycle": 2,
                "checklist": 1,
                "reply": 1,
            }
        )

        with psycopg.connect(at_0038) as conn:
            waiting = conn.execute(
                "SELECT count(*) FROM tireless.mirror_comment WHERE written_at IS NULL"
            ).fetchone()
        assert waiting == (2,)

        migrate(at_0038)
        with psycopg.connect(at_0038) as conn:
            carried = conn.execute(
                "SELECT pull_failures, pull_error FROM tireless.deliveries WHERE job_id = %(j)s",
                {"j": claimed[fixed].id},
            ).fetchall()
            assert carried == [(1, "HTTP 502")], "the retry moved in with its backoff"
            # Its backoff over and the 0038 poller's lease ended (the test's stand-in for
            # waiting them out).
            conn.execute("UPDATE tireless.forge_write SET next_try_at = now()")
            conn.execute("UPDATE tireless.repo_poll SET poll_lease_until = now()")
        for _ in range(3):
            one_round(store)
        writes = len(forge.writes())
        one_round(store)
        made = [r for r in forge.writes()[writes:] if r.method in ("POST", "PATCH")]
        assert [r for r in made if "/labels" not in r.path] == [], "nothing is written twice"

        (pull,) = forge.pulls_of(OWNER, REPO)
        assert pull.head == f"tireless/{fixed}"
        assert len(forge.pull_creates(OWNER, REPO)) == 1
        (outcome,) = mine(forge, fixed, f"<!-- tireless:job:{claimed[fixed].id} -->")
        assert f"#{pull.number}" in outcome, "the comment waited for its pull request"
        (reply,) = [
            body
            for author, body in forge.comments_with_authors(OWNER, REPO, fixed)
            if author == MIRROR_LOGIN and "<!-- tireless:ask:" in body
        ]
        assert "Only people with write access" in reply
        children = [i for i in forge.issues_of(OWNER, REPO) if i.author == MIRROR_LOGIN]
        assert sorted(i.title for i in children) == ["Build the frame", "Paint it"]
        (listing,) = mine(forge, plan, f"<!-- tireless:job:{claimed[plan].id} -->")
        assert all(f"#{i.number} " in listing for i in children), "it lists its children"
        for number in (first, second):
            assert len(mine(forge, number, "-->")) == 1, "one cycle comment on each"
        (edited,) = mine(forge, listed, f"<!-- tireless:job:{claimed[listed].id} -->")
        assert f"#{child} Frame — pending" in edited, "the one comment edited, not posted again"
        with psycopg.connect(at_0038) as conn:
            left = conn.execute(
                "SELECT kind FROM tireless.forge_write WHERE written_at IS NULL ORDER BY kind"
            ).fetchall()
        # Every write landed; the checklists of the two plans stand while a child is unchecked.
        assert left == [("checklist",), ("checklist",)]
