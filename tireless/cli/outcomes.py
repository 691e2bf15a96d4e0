"""`tireless outcomes`: what became of the pull requests tireless opened, per lane (which is per
agent) and repository over a window (tireless.pull_outcomes): opened, merged, closed unmerged,
still open, revisions, time to merge, and tokens and cost per merged pull request."""

from __future__ import annotations

import argparse
from datetime import timedelta
from decimal import Decimal

from tireless.cli.render import age, table
from tireless.cli.session import connect, duration, emit
from tireless.outcomes import PullOutcomes
from tireless.store import JobStore


def window(text: str) -> timedelta | None:
    """`--since 7d` (a duration), or `all`: every pull request the store keeps."""
    return None if text.strip().lower() == "all" else duration(text)


def add_outcome_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--since",
        type=window,
        default=timedelta(days=7),
        metavar="DURATION",
        help="the pull requests opened in this window before now (7d unless told; all: every one)",
    )


def _usd(amount: Decimal | None, unpriced: bool) -> str:
    if amount is None:
        return "-"
    return f"${amount:,.2f}" + (" + unpriced" if unpriced else "")


def _tokens(amount: Decimal | None) -> str:
    return "-" if amount is None else f"{amount:,.0f}"


def outcomes_table(found: list[PullOutcomes]) -> str:
    return table(
        [{"o": o} for o in found],
        [
            ("LANE", lambda r: r["o"].lane),
            ("REPOSITORY", lambda r: r["o"].repository),
            ("OPENED", lambda r: str(r["o"].opened)),
            ("MERGED", lambda r: str(r["o"].merged)),
            ("CLOSED", lambda r: str(r["o"].closed)),
            ("OPEN", lambda r: str(r["o"].still_open)),
            ("REVISIONS/PR", lambda r: str(r["o"].revisions_per_pull)),
            ("MERGE MEDIAN", lambda r: age(r["o"].merge_seconds_median)),
            ("MERGE MEAN", lambda r: age(r["o"].merge_seconds_mean)),
            ("TOKENS/MERGED", lambda r: _tokens(r["o"].tokens_per_merged)),
            ("COST/MERGED", lambda r: _usd(r["o"].cost_per_merged, r["o"].unpriced)),
        ],
    )


def cmd_outcomes(args: argparse.Namespace) -> int:
    with connect(args) as conn:
        found = JobStore(conn).pull_outcomes(args.since)
    shown = (
        "every pull request"
        if args.since is None
        else f"opened in the last {age(args.since.total_seconds())}"
    )
    text = outcomes_table(found) if found else f"No pull request of tireless's {shown}."
    emit(args, found, text)
    return 0
