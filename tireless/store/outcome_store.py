"""The outcome methods of JobStore and AsyncJobStore (mixed into each): what a poller records of
tireless's pull requests' fates, and the figures per lane and repository. Each runs one statement
of tireless.store.outcome_calls as the stores run theirs."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from tireless.outcomes import PullFate, PullOutcomes
from tireless.store import outcome_calls
from tireless.store.calls import Call

Answer = TypeVar("Answer")
WEEK = timedelta(days=7)


class OutcomeMethods:
    """JobStore's outcomes: each method one call of tireless.store.outcome_calls."""

    def _run(self, call: Call[Any, Answer]) -> Answer:
        raise NotImplementedError  # JobStore's

    def record_pull_outcomes(
        self, forge: str, owner: str, repo: str, poller: str, fates: Sequence[PullFate]
    ) -> int:
        """The poller holding the repository's lease records what its listing showed of pull
        requests; those tireless opened are kept. How many changed."""
        return self._run(outcome_calls.record_pull_outcomes(forge, owner, repo, poller, fates))

    def pull_outcomes(
        self, since: timedelta | None = WEEK, at: datetime | None = None
    ) -> list[PullOutcomes]:
        """Per lane and repository, the pull requests opened in the window before `at` (None:
        every one) and their fates as of `at` (None: now)."""
        return self._run(outcome_calls.pull_outcomes(since, at))


class AsyncOutcomeMethods:
    """AsyncJobStore's outcomes, as OutcomeMethods."""

    def _run(self, call: Call[Any, Answer]) -> Awaitable[Answer]:
        raise NotImplementedError  # AsyncJobStore's

    async def record_pull_outcomes(
        self, forge: str, owner: str, repo: str, poller: str, fates: Sequence[PullFate]
    ) -> int:
        return await self._run(
            outcome_calls.record_pull_outcomes(forge, owner, repo, poller, fates)
        )

    async def pull_outcomes(
        self, since: timedelta | None = WEEK, at: datetime | None = None
    ) -> list[PullOutcomes]:
        return await self._run(outcome_calls.pull_outcomes(since, at))
