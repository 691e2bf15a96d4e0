"""Outcomes per agent (issue 48, item 6), both API families of the stand-in forge over real HTTP
and the real poller: a pull request of tireless's merged and one closed on the forge are recorded
after a poll round; the figures per lane and repository are exact on a known mix (a revision,
usage recorded through record_usage, prices set); `/metrics`, the `/outcomes` page and
`tireless outcomes --json` show the store's figures; a fate the listing garbles is said and
left out, the others kept."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.helpers import rows, tireless_cli
from tests.support.forge import OWNER, REPO, Setup, claim, one_round
from tests.support.forge import pushed_and_delivered as delivered
from tests.support.web import browser, scrape, value
from tireless.errors import InvalidArgument
from tireless.forge.pull_fate import pull_fates
from tireless.web.app import create_app

IMPLEMENT = ["tireless", "tireless/implement"]
WORKER = "host1-3"


def usage(model: str, input: int, output: int) -> list[dict[str, Any]]:
    row = {"model": model, "requests": 1, "unread": 0, "input": input, "output": output}
    return [row | {"cache_read": 0, "cache_write": 0}]


def scene(setup: Setup) -> dict[str, int]:
    """Three issues implemented, each with its pull request and its agent's usage; the first
    revised once after a review; then the first merged and the second closed on the forge.
    The pull request of each issue: {"merged", "closed", "open"}."""
    setup.track(REPO)
    setup.forge.seed_git(OWNER, REPO, {"README.md": "widgets\n"})
    setup.forge.set_permission(OWNER, REPO, "alice", "write")
    issues = [
        setup.forge.create_issue(OWNER, REPO, title, IMPLEMENT)
        for title in ("Merge me", "Close me", "Leave me")
    ]
    one_round(setup)
    spent = {issues[0]: ("claude-x", 1000, 200), issues[1]: ("local", 70, 7)}
    for _ in issues:
        job = claim(setup.store, WORKER)
        model, input, output = spent.get(job.number, ("claude-x", 50, 0))
        setup.store.record_usage(job.id, WORKER, job.claim_token, usage(model, input, output))
        delivered(setup, job, f"fix {job.number}")
    one_round(setup)
    pulls = {p.head: p.number for p in setup.forge.pulls_of(OWNER, REPO)}
    pull = {
        fate: pulls[f"tireless/{n}"]
        for fate, n in zip(("merged", "closed", "open"), issues, strict=True)
    }
    setup.forge.submit_review(OWNER, REPO, pull["merged"], "alice", "changes_requested", "Again.")
    assert one_round(setup).revisions == 1
    revision = claim(setup.store, WORKER)
    setup.store.record_usage(revision.id, WORKER, revision.claim_token, usage("claude-x", 500, 100))
    delivered(setup, revision, "fix again")
    one_round(setup)
    setup.store.set_model_price("claude-*", Decimal(3), Decimal(15))
    with setup.db.connect() as conn:  # opened an hour ago: the merge is not in the same second
        conn.execute("UPDATE tireless.delivery SET pull_known_at = pull_known_at - interval '1h'")
    setup.forge.merge_pull(OWNER, REPO, pull["merged"])
    setup.forge.close_pull(OWNER, REPO, pull["closed"])
    one_round(setup)
    return pull


def test_merged_and_closed_pull_requests_are_recorded_and_their_figures_shown(
    setup: Setup,
) -> None:
    pull = scene(setup)
    recorded = rows(
        setup.db,
        "SELECT pull_number, state, merged_at, closed_at FROM tireless.pull_outcome"
        " ORDER BY pull_number",
    )
    stored = {i.number: i for i in setup.forge.issues_of(OWNER, REPO)}
    merged, closed = stored[pull["merged"]], stored[pull["closed"]]
    assert merged.merged_at is not None
    assert closed.closed_at is not None
    whole = merged.merged_at.replace(microsecond=0)  # the forges write whole seconds
    assert recorded == [
        (pull["merged"], "merged", whole, whole),
        (pull["closed"], "closed", None, closed.closed_at.replace(microsecond=0)),
    ]

    ((opened_at,),) = rows(
        setup.db,
        "SELECT min(pull_known_at) FROM tireless.delivery WHERE pull_number = %(p)s",
        {"p": pull["merged"]},
    )
    (figures,) = setup.store.pull_outcomes()
    assert (figures.lane, figures.repository) == ("cc", f"{setup.name}/{OWNER}/{REPO}")
    counts = (figures.opened, figures.merged, figures.closed, figures.still_open)
    assert counts == (3, 1, 1, 1)
    assert (figures.revisions, figures.revisions_per_pull) == (1, Decimal("0.33"))
    seconds = (whole - opened_at).total_seconds()
    assert figures.merge_seconds_median == figures.merge_seconds_mean == figures.merge_seconds_sum
    assert figures.merge_seconds_sum == pytest.approx(seconds)
    # The implementation and its revision: 1,200 + 600 tokens; (1000 * 3 + 200 * 15 + 500 * 3
    # + 100 * 15) / 1,000,000 USD. The closed one's unpriced model is not a merged one's.
    assert (figures.merged_tokens, figures.tokens_per_merged) == (1800, Decimal("1800.00"))
    assert figures.merged_cost == figures.cost_per_merged == Decimal("0.009")
    assert figures.unpriced is False
    (before,) = setup.store.pull_outcomes(at=whole - timedelta(seconds=1))
    assert (before.merged, before.still_open, before.cost_per_merged) == (0, 3, None)
    assert setup.store.pull_outcomes(timedelta(seconds=1), at=opened_at - timedelta(days=1)) == []
    with pytest.raises(InvalidArgument, match="must be a positive interval"):
        setup.store.pull_outcomes(timedelta(0))

    with browser(create_app(setup.db.conninfo)) as client:
        samples, types = scrape(client)
        page = client.get("/outcomes?window=all")
        assert client.get("/outcomes?window=1y").status_code == 400
    key = {"lane": "cc", "repository": figures.repository}
    assert types["tireless_pull_requests"] == "counter"
    for outcome, count in (("merged", 1), ("closed", 1), ("open", 1)):
        assert value(samples, "tireless_pull_requests_total", **key, outcome=outcome) == count
    assert value(samples, "tireless_pull_request_revisions_total", **key) == 1
    assert value(samples, "tireless_merged_pull_seconds_total", **key) == pytest.approx(seconds)
    assert value(samples, "tireless_merged_pull_tokens_total", **key) == 1800
    assert value(samples, "tireless_merged_pull_cost_total", **key) == 0.009
    assert page.status_code == 200
    assert '<td class="n merged">1</td>' in page.text
    assert '<td class="n revisions">0.33</td>' in page.text
    assert '<td class="n tokens">1,800</td>' in page.text
    assert '<td class="n cost">$0.01</td>' in page.text

    shown = json.loads(tireless_cli(setup.db.url, "outcomes", "--since", "all", "--json").stdout)
    assert shown == [json.loads(json.dumps(asdict(figures), default=str))]


def test_a_garbled_fate_is_said_and_left_out_and_the_others_kept() -> None:
    listed: list[dict[str, Any]] = [
        {"number": 4, "state": "closed", "closed_at": "2026-01-02T03:04:05Z",
         "pull_request": {"merged": True, "merged_at": "2026-01-02T03:04:05Z"}},
        {"number": 5, "state": "closed", "closed_at": None, "pull_request": {"merged_at": None}},
        {"number": 6, "state": "closed", "closed_at": "2026-01-02T03:04:05Z",
         "pull_request": {"merged": True, "merged_at": None}},
        {"number": 7, "state": "open", "closed_at": None, "pull_request": {"merged_at": "soon"}},
        {"number": 8, "state": "open", "closed_at": None, "pull_request": {"merged_at": None}},
        {"number": 9, "state": "open", "title": "an issue, no pull request"},
    ]  # fmt: skip
    fates, notes = pull_fates(listed, "GET acme/widgets issues")
    assert [(f.pull, f.state, f.merged_at is not None) for f in fates] == [
        (4, "closed", True),
        (8, "open", False),
    ]
    assert [note.split(": ")[1] for note in notes] == [
        "pull request #5",
        "pull request #6",
        "pull request #7",
    ]
    assert all(note.endswith("its fate is not recorded") for note in notes)
