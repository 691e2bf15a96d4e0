"""The ledger in the store (issue 48): the holder's gateway adds its attempt's model usage as it
goes, per model and day; prices are data (a name or a prefix*, TL015 for a bad one) and the store
computes cost, an unpriced model showing none; budgets of tokens and cost per job and per day
answer the gateway's allowance, and a spent daily one holds the lane's or repository's jobs
pending until the day allows."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, claimed, enqueue_jobs, rows
from tireless import JobStore
from tireless.errors import InvalidArgument, MalformedPrice, NotHolder
from tireless.models import SpendBudget


def usage(model: str, requests: int = 1, **tokens: int) -> dict[str, Any]:
    row = {"model": model, "requests": requests, "unread": 0, "input": 0, "output": 0}
    return row | {"cache_read": 0, "cache_write": 0} | tokens


def test_usage_adds_up_per_attempt_and_model_and_costs_at_the_price_that_applies(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    sonnet, gpt, other = "claude-sonnet-4-5", "gpt-5-codex", "local-llama"
    first = [usage(sonnet, input=1000, output=200, cache_read=5000, cache_write=300), usage(gpt)]
    allowance = store.record_usage(job.id, "w1", job.claim_token, first)
    assert allowance == {"budgeted": False, "spent": None, "note": None}
    store.record_usage(
        job.id, "w1", job.claim_token,
        [usage(sonnet, 2, input=500, output=100), usage(other, 1, unread=1)],
    )  # fmt: skip
    store.set_model_price("claude-*", Decimal(3), Decimal(15), Decimal("0.30"), Decimal("3.75"))
    store.set_model_price("gpt-5*", Decimal("1.25"), Decimal(10))
    store.set_model_price("gpt-5-codex", Decimal(2), Decimal(20))  # its own price beats the prefix
    by_model = {u.model: u for u in store.job_model_usage(job.id)}
    assert by_model[sonnet].requests == 3
    assert by_model[sonnet].tokens == 1500 + 300 + 5000 + 300
    # 1500 * 3 + 300 * 15 + 5000 * 0.30 + 300 * 3.75 per million
    assert by_model[sonnet].cost == Decimal("0.011625")
    assert by_model[gpt].cost == 0
    assert by_model[other].cost is None, "unpriced"
    assert (by_model[other].requests, by_model[other].unread) == (1, 1)
    metrics = rows(
        db,
        "SELECT model, requests, input_tokens, cost FROM tireless.agent_usage ORDER BY model",
    )
    assert metrics == [
        (sonnet, 3, 1500, Decimal("0.011625")),
        (gpt, 1, 0, Decimal(0)),
        (other, 1, 0, None),
    ]


@pytest.mark.parametrize(
    ("model", "prices", "message"),
    [
        ("", (1, 1), "model must be a model name or a prefix*, got ''"),
        ("gpt*5", (1, 1), "model must be a model name or a prefix*, got 'gpt*5'"),
        ("m", (-1, 1), "the input price of m must be USD per million tokens"),
        ("m", (1, 2_000_000), "the output price of m must be USD per million tokens"),
    ],
)
def test_a_bad_price_is_refused_naming_it_and_changes_nothing(
    store: JobStore, model: str, prices: tuple[int, int], message: str
) -> None:
    with pytest.raises(MalformedPrice, match=message.replace("*", r"\*")):
        store.set_model_price(model, Decimal(prices[0]), Decimal(prices[1]))
    assert store.model_prices() == []


def test_a_malformed_usage_row_or_a_job_not_held_is_refused(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    with pytest.raises(InvalidArgument, match=r"usage\[1\] is not"):
        store.record_usage(job.id, "w1", job.claim_token, [usage("m"), usage("m", input=-1)])
    with pytest.raises(InvalidArgument, match=r"usage\[0\] is not"):
        store.record_usage(job.id, "w1", job.claim_token, [usage("m", 1, unread=2)])
    with pytest.raises(NotHolder):
        store.record_usage(job.id, "w2", job.claim_token, [usage("m")])
    assert store.job_model_usage(job.id) == []


def test_a_budget_per_job_is_spent_once_the_job_reaches_it(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    store.set_lane_budget("cc", None, None, SpendBudget(tokens_per_job=3000))
    job = claimed(store)
    allowance = store.record_usage(job.id, "w1", job.claim_token, [usage("m", input=2999)])
    assert allowance == {"budgeted": True, "spent": None, "note": None}
    allowance = store.record_usage(job.id, "w1", job.claim_token, [usage("m", input=613)])
    assert allowance == {
        "budgeted": True,
        "spent": "job",
        "note": "token budget spent: 3,612 of 3,000 tokens for the job (lane cc)",
    }
    assert store.usage_allowance(job.id, "w1", job.claim_token) == allowance


def test_a_spent_daily_budget_holds_the_lanes_jobs_until_the_day_allows(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 2)
    store.set_model_price("m", Decimal(1), Decimal(1))
    lane = store.set_lane_budget("cc", None, None, SpendBudget(cost_per_day=Decimal("0.50")))
    assert lane.cost_per_day == Decimal("0.50")
    job = claimed(store)
    allowance = store.record_usage(job.id, "w1", job.claim_token, [usage("m", output=612_345)])
    assert allowance["spent"] == "day"
    assert allowance["note"] == "cost budget spent: $0.61 of $0.50 today (lane cc)"
    assert store.claim_next("w2", ["cc"]) is None, "the lane's budget of today is spent"
    with db.connect() as conn:  # the day passes
        conn.execute("UPDATE tireless.model_usage SET spend_day = spend_day - 1")
    assert store.claim_next("w2", ["cc"]) is not None


def test_a_repositorys_daily_budget_holds_its_jobs_in_every_lane(store: JobStore) -> None:
    enqueue_jobs(store, 2)
    limits = store.set_repo_budget(FORGE, OWNER, REPO, None, None, SpendBudget(tokens_per_day=10))
    assert limits.tokens_per_day == 10
    job = claimed(store)
    allowance = store.record_usage(job.id, "w1", job.claim_token, [usage("m", input=10)])
    assert (
        allowance["note"]
        == f"token budget spent: 10 of 10 tokens today (repository {FORGE}/{OWNER}/{REPO})"
    )
    assert store.claim_next("w2", ["cc"]) is None
    store.set_repo_budget(FORGE, OWNER, REPO, None, None)
    assert store.claim_next("w2", ["cc"]) is not None, "no budget, no row, no hold"


def test_an_attempts_transcript_keeps_20_mib_says_what_was_cut_and_goes_with_its_job(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    big = 12 * 1024 * 1024
    exchange = {"api": "chat", "model": "gpt-5", "status": 200, "request": b"x", "answer": b"y",
                "request_bytes": big, "answer_bytes": 1}  # fmt: skip
    assert store.record_exchange(job.id, "w1", job.claim_token, exchange) is True
    assert store.record_exchange(job.id, "w1", job.claim_token, exchange) is False, "past 20 MiB"
    kept = rows(
        db,
        "SELECT seq, request IS NOT NULL, request_bytes FROM tireless.model_exchange ORDER BY seq",
    )
    assert kept == [(1, True, big), (2, False, big)]
    store.record_usage(job.id, "w1", job.claim_token, [usage("gpt-5")])
    store.transition(job.id, "failed", "w1")
    with db.connect() as conn:  # aged past the triggers, as the prune tests age jobs
        conn.execute("SET session_replication_role = replica")
        conn.execute("UPDATE tireless.job SET updated_at = now() - interval '2 days'")
    assert store.prune(timedelta(days=1)) == 1
    assert rows(db, "SELECT count(*) FROM tireless.model_exchange") == [(0,)]
    assert rows(db, "SELECT count(*) FROM tireless.model_usage") == [(0,)]


def test_the_outcome_comment_and_the_pull_requests_body_say_what_the_agent_spent(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.record_usage(
        job.id, "w1", job.claim_token,
        [usage("claude-sonnet-4-5", 12, input=70_000, output=10_000, cache_read=4_210)],
    )  # fmt: skip
    store.set_model_price("claude-*", Decimal(3), Decimal(15), Decimal("0.30"))
    store.transition(job.id, "failed", "w1", "it broke")
    spend = "12 model requests, 84,210 tokens, $0.36"
    (comment, body) = rows(
        db,
        "SELECT tireless.finished_job_comment(j), (tireless.pull_request_text(j)).body"
        " FROM tireless.job j WHERE j.id = %(id)s",
        {"id": job.id},
    )[0]
    assert comment.splitlines()[0] == f"tireless: failed after 1 attempt; {spend}"
    assert f"Delivered by tireless: job {job.id}, attempt 1; {spend}." in body


def test_budgets_per_attempt_and_per_issue_name_themselves(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    store.set_repo_budget(FORGE, OWNER, REPO, None, None, SpendBudget(tokens_per_attempt=100))
    job = claimed(store)
    allowance = store.record_usage(job.id, "w1", job.claim_token, [usage("m", input=150)])
    note = (
        f"token budget spent: 150 of 100 tokens for the attempt (repository {FORGE}/{OWNER}/{REPO})"
    )
    assert (allowance["spent"], allowance["note"]) == ("attempt", note)
    store.set_lane_budget("cc", None, None, SpendBudget(tokens_per_issue=120, tokens_per_job=10))
    allowance = store.usage_allowance(job.id, "w1", job.claim_token)
    assert allowance["note"] == "token budget spent: 150 of 120 tokens for the issue (lane cc)", (
        "the widest budget spent is named"
    )
    with pytest.raises(InvalidArgument, match="tokens_per_issue must be null"):
        store.set_lane_budget("cc", None, None, SpendBudget(tokens_per_issue=-1))
