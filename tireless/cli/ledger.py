"""The ledger on the command line: `tireless model price|prices` (prices are data), and how a job's
model usage reads for a person (`tireless show`): per model its requests, tokens and cost, then
the store's one line (tireless.spend_text: `12 model requests, 84,210 tokens, $0.41`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict
from decimal import Decimal, InvalidOperation

from psycopg.rows import dict_row

from tireless.cli.render import table
from tireless.cli.session import connect, emit
from tireless.errors import UnknownJob
from tireless.models import SpendBudget
from tireless.store import JobStore, ledger_calls
from tireless.usage import ModelPrice, ModelUsage
from tireless.web import transcript

OK = 0


def usd(text: str) -> Decimal:
    """An amount of USD, e.g. 3 or 0.30: a number, not negative."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not an amount of USD: {text!r}") from None
    if not value.is_finite() or value < 0:
        raise argparse.ArgumentTypeError(f"not an amount of USD of 0 or more: {text!r}")
    return value


def tokens_or_none(text: str) -> int | None:
    """A budget of tokens: a count, or `none` for no budget."""
    if text.strip().lower() == "none":
        return None
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"not a count of tokens: {text!r}")
    return int(text)


def usd_or_none(text: str) -> Decimal | None:
    """A budget of USD, or `none` for no budget."""
    return None if text.strip().lower() == "none" else usd(text)


def add_spend_budget_arguments(sub: argparse.ArgumentParser) -> None:
    """The budgets of tokens and cost beside those of runs and agent time (none when not given)."""
    for flag, read, what in (
        ("--tokens-per-day", tokens_or_none, "tokens its agents may use a day (UTC)"),
        (
            "--cost-per-day",
            usd_or_none,
            "USD its agents may spend a day (UTC), at the models' prices",
        ),
        ("--tokens-per-job", tokens_or_none, "tokens a job's attempts may use in all"),
        ("--cost-per-job", usd_or_none, "USD a job's attempts may spend in all"),
        ("--tokens-per-attempt", tokens_or_none, "tokens one attempt may use (the job may retry)"),
        ("--cost-per-attempt", usd_or_none, "USD one attempt may spend (the job may retry)"),
        ("--tokens-per-issue", tokens_or_none, "tokens all the jobs of an issue may use"),
        ("--cost-per-issue", usd_or_none, "USD all the jobs of an issue may spend"),
    ):
        sub.add_argument(
            flag,
            type=read,
            default=None,
            metavar="N|none" if read is tokens_or_none else "USD|none",
            help=f"{what}; not given or none: no budget",
        )


def spend_budget(args: argparse.Namespace) -> SpendBudget:
    """The budgets of tokens and cost a `lane budget` or `repo budget` gave."""
    return SpendBudget(
        args.tokens_per_day, args.cost_per_day, args.tokens_per_job, args.cost_per_job
    )


def add_price_arguments(price: argparse.ArgumentParser) -> None:
    """`model price MODEL --input USD --output USD [--cache-read USD] [--cache-write USD]`."""
    price.add_argument(
        "model",
        metavar="MODEL",
        help="e.g. claude-sonnet-4-5, or claude-* for every model it starts",
    )
    price.add_argument(
        "--input", type=usd, required=True, metavar="USD", help="per million input tokens"
    )
    price.add_argument(
        "--output", type=usd, required=True, metavar="USD", help="per million output tokens"
    )
    price.add_argument(
        "--cache-read",
        type=usd,
        metavar="USD",
        help="per million cache-read tokens (default: the input price)",
    )
    price.add_argument("--cache-write", type=usd, metavar="USD", help="per million cache-write tokens (default: the input price)")  # fmt: skip


def cmd_model(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        store = JobStore(conn)
        if args.model_action == "price":
            set_price = store.set_model_price(
                args.model, args.input, args.output, args.cache_read, args.cache_write
            )
            emit(args, set_price, price_table([set_price]))
            return OK
        prices = store.model_prices()
    emit(args, prices, price_table(prices) if prices else "no price set: every model is unpriced")
    return OK


def price_table(prices: Sequence[ModelPrice]) -> str:
    rows = [asdict(price) for price in prices]
    return table(
        rows,
        [
            ("MODEL", lambda p: p["model"]),
            ("INPUT", lambda p: str(p["input"])),
            ("OUTPUT", lambda p: str(p["output"])),
            ("CACHE-READ", lambda p: str(p["cache_read"] if p["cache_read"] is not None else p["input"])),
            ("CACHE-WRITE", lambda p: str(p["cache_write"] if p["cache_write"] is not None else p["input"])),
            ("SET", lambda p: p["set_at"].strftime("%Y-%m-%d")),
        ],
    )  # fmt: skip


def tokens_text(count: int) -> str:
    return f"{count:,}"


def cost_text(cost: Decimal | None) -> str:
    return "unpriced" if cost is None else f"${cost:,.2f}"


def usage_table(usage: Sequence[ModelUsage], spend: str) -> str:
    """A job's usage per attempt and model (rows of tireless.job_model_usage), then its summary."""
    rows = table(
        [asdict(u) for u in usage],
        [
            ("ATTEMPT", lambda u: str(u["attempt"])),
            ("MODEL", lambda u: u["model"]),
            ("REQUESTS", lambda u: f"{u['requests']:,}" + (f" ({u['unread']:,} unread)" if u["unread"] else "")),
            ("INPUT", lambda u: tokens_text(u["input_tokens"])),
            ("OUTPUT", lambda u: tokens_text(u["output_tokens"])),
            ("CACHE-READ", lambda u: tokens_text(u["cache_read_tokens"])),
            ("CACHE-WRITE", lambda u: tokens_text(u["cache_write_tokens"])),
            ("COST", lambda u: cost_text(u["cost"])),
        ],
    )  # fmt: skip
    return f"{rows}\n{spend}"


def show_transcript(args: argparse.Namespace) -> int:
    """`tireless show JOB --transcript`: the job's exchanges with its model, as a session."""
    with connect(args) as conn, conn.cursor(row_factory=dict_row) as cur:
        if (
            cur.execute(
                "SELECT 1 FROM tireless.job_list WHERE id = %(job)s", {"job": args.job}
            ).fetchone()
            is None
        ):
            raise UnknownJob(f"no job with id {args.job}")
        rows = cur.execute(ledger_calls.JOB_TRANSCRIPT, {"job_id": args.job}).fetchall()
    emit(args, [asdict(turn) for turn in transcript.turns(rows)], transcript.render(rows))
    return OK
