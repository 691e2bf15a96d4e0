"""The forge fault run (dev/chaos_forge.py): its checker reports a planted duplicate
comment, a planted lost request, a job for an issue that never asked and an issue for a plan's
step no plan delivered, and a short run (real
pollers, workers and a sweeper killed at random, forge faults, a PostgreSQL restart) keeps every
promise. `make chaos-forge` runs the long one."""

from __future__ import annotations

import random

import pytest

from dev.chaos_forge import (
    FORGE,
    MODES,
    OPT_IN,
    OWNER,
    QUIET,
    TOKEN,
    Ledger,
    Person,
    Plan,
    check,
    run,
    set_up,
)
from dev.standin import MIRROR_LOGIN, StandinForge
from tests.conftest import Database
from tireless import JobStore
from tireless.forge import token_variable
from tireless.forge.poll import client_factory, poll_round

REPOS = ("alpha",)


def rounds(store: JobStore, count: int = 2) -> None:
    for _ in range(count):
        poll_round(store, "poller-1", clients=client_factory(timeout=2.0))


def test_the_checker_reports_a_duplicate_comment_a_lost_request_and_an_unasked_job(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(token_variable(FORGE), TOKEN)
    with StandinForge("gitea", token=TOKEN) as forge:
        set_up(db.conninfo, forge, Plan(repos=REPOS))
        ledger = Ledger()
        asking = forge.create_issue(OWNER, "alpha", "asks", [OPT_IN, MODES[0]])
        quiet = forge.create_issue(OWNER, "alpha", "never asks", [QUIET])
        ledger.issues += [("alpha", asking), ("alpha", quiet)]
        ledger.requests[("alpha", asking)] = 1
        rounds(store)
        job = store.claim_next("host1-1", ["cc"])
        assert job is not None
        store.transition(job.id, "delivered", "host1-1", "done")
        rounds(store)
        assert check(db.conninfo, forge, ledger, REPOS) == []

        # A duplicate: the mirror's account posts the same outcome comment once more.
        (body,) = forge.comments_of(OWNER, "alpha", asking)
        forge.add_comment_as(OWNER, "alpha", asking, MIRROR_LOGIN, body)
        assert check(db.conninfo, forge, ledger, REPOS) == [
            f"alpha#{asking}: job {job.id} has 2 outcome comment(s), not 1"
        ]

        # A lost request: the person asks again and no poll ever sees it.
        forge.edit(OWNER, "alpha", asking, lambda issue: {"labels": [*issue.labels, MODES[1]]})
        ledger.requests[("alpha", asking)] += 1
        problems = check(db.conninfo, forge, ledger, REPOS)
        assert f"alpha#{asking}: 2 request(s) made, 1 job(s)" in problems
        assert f"alpha#{asking}: asks for work, and no job answers it (a lost request)" in problems

        # A job for an issue that never asked.
        store.rerun(FORGE, OWNER, "alpha", quiet)
        problems = check(db.conninfo, forge, ledger, REPOS)
        assert f"alpha#{quiet}: never asked for work, yet has 1 job(s)" in problems

        # An issue of the mirror's account for a plan's step that no delivered plan has.
        stray = forge.create_issue(OWNER, "alpha", "step 0", body="<!-- tireless:task:999:0 -->")
        forge.edit(OWNER, "alpha", stray, lambda issue: {"author": MIRROR_LOGIN})
        problems = check(db.conninfo, forge, ledger, REPOS)
        assert f"issues [('alpha', {stray})] for job 999's step 0, which no plan delivered" in (
            problems
        )


def test_the_scripted_person_counts_a_request_only_when_the_issue_starts_asking(
    db: Database, store: JobStore
) -> None:
    with StandinForge("gitea", token=TOKEN) as forge:
        set_up(db.conninfo, forge, Plan(repos=REPOS))
        ledger = Ledger()
        person = Person(forge, db.conninfo, random.Random(3), ledger)
        person.pace = 0.0
        person.open_issues(20, REPOS)
        for _ in range(200):
            person.act()
        person.close()
        for repo, number in ledger.issues:
            issue = forge.labels_of(OWNER, repo, number)
            if (repo, number) in person.quiet:
                assert ledger.requests[(repo, number)] == 0
                assert not any(mode in issue for mode in MODES)
    assert ledger.actions > 0
    assert sum(ledger.requests.values()) > 0


def test_a_short_fault_run_keeps_every_promise(db: Database) -> None:
    plan = Plan(issues=30, seconds=8.0, repos=("alpha", "beta"), workers=2, kill_every=2.0)
    outcome = run(db.conninfo, db.url, db.server.restart, plan)
    assert outcome.problems == [], outcome.summary() + "\n" + "\n".join(outcome.problems)
    assert outcome.jobs > 0
    assert outcome.faults > 0
    assert outcome.kills > 0
    assert outcome.steps > 0  # plans' steps opened as issues, under the same faults
