"""The ledger on the command line (issue 48): `tireless model price` sets a price (TL015 for a bad
one), `model prices` lists them; `lane budget` and `repo budget` take the budgets of tokens and
cost; `tireless show` prints a job's usage per model with its summary, `unpriced` without a
price."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, claimed, cli_json, enqueue_jobs, tireless_cli
from tireless import JobStore


def usage(model: str, requests: int, input: int, output: int) -> dict[str, Any]:
    return {"model": model, "requests": requests, "unread": 0, "input": input, "output": output,
            "cache_read": 0, "cache_write": 0}  # fmt: skip


def test_prices_budgets_and_a_jobs_usage_on_the_command_line(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.record_usage(
        job.id, "w1", job.claim_token,
        [usage("claude-sonnet-4-5", 10, 70_000, 10_000), usage("local", 2, 4_000, 210)],
    )  # fmt: skip
    shown = tireless_cli(db.url, "show", str(job.id))
    assert shown.returncode == 0, shown.stderr
    assert "12 model requests, 84,210 tokens, unpriced" in shown.stdout

    price = cli_json(
        db.url, "model", "price", "claude-*", "--input", "3", "--output", "15", "--cache-read",
        "0.30", "--json",
    )  # fmt: skip
    assert (price["model"], price["input"], price["cache_write"]) == ("claude-*", "3", None)
    shown = tireless_cli(db.url, "show", str(job.id))
    # 70,000 * 3 + 10,000 * 15 per million: $0.36
    assert "12 model requests, 84,210 tokens, $0.36 + unpriced" in shown.stdout
    assert "claude-sonnet-4-5" in shown.stdout
    jobs = tireless_cli(db.url, "jobs")
    assert "SPEND" in jobs.stdout
    assert "12 model requests, 84,210 tokens, $0.36 + unpriced" in jobs.stdout
    (listed_job,) = cli_json(db.url, "jobs", "--json")
    assert [(u["model"], u["requests"], u["cost"]) for u in listed_job["model_usage"]] == [
        ("claude-sonnet-4-5", 10, "0.36"), ("local", 2, None),
    ]  # fmt: skip
    listed = tireless_cli(db.url, "model", "prices")
    assert listed.stdout.splitlines()[1].split()[:5] == ["claude-*", "3", "15", "0.30", "3"]

    bad = tireless_cli(db.url, "model", "price", "claude*x", "--input", "1", "--output", "1")
    assert bad.returncode == 1
    assert "TL015" in bad.stderr
    assert "'claude*x'" in bad.stderr
    refused = tireless_cli(db.url, "model", "price", "m", "--input", "-1", "--output", "1")
    assert refused.returncode == 2, "not an amount: a usage error"

    lane = tireless_cli(db.url, "lane", "budget", "cc", "none", "none", "--tokens-per-job", "3000",
                        "--cost-per-day", "12.50")  # fmt: skip
    assert lane.returncode == 0, lane.stderr
    assert db.scalar("SELECT tokens_per_job FROM tireless.lane WHERE name = 'cc'") == 3000
    assert db.scalar("SELECT cost_per_day FROM tireless.lane WHERE name = 'cc'") == Decimal("12.50")
    repo = cli_json(
        db.url, "repo", "budget", FORGE, OWNER, REPO, "5", "none", "--tokens-per-day", "1000000",
        "--json",
    )  # fmt: skip
    assert (repo["runs_per_day"], repo["tokens_per_day"], repo["cost_per_job"]) == (
        5,
        1000000,
        None,
    )
