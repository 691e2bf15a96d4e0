"""The ledger's methods of JobStore and AsyncJobStore (mixed into each): what a gateway records
of its attempt's model usage and transcript and the allowance it asks, the models' prices, and a
job's usage. Each runs one statement of tireless.store.ledger_calls as the stores run theirs."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeVar
from uuid import UUID

from tireless.store import ledger_calls
from tireless.store.calls import Call
from tireless.usage import ModelPrice, ModelUsage

Answer = TypeVar("Answer")


class LedgerMethods:
    """JobStore's ledger: each method one call of tireless.store.ledger_calls."""

    def _run(self, call: Call[Any, Answer]) -> Answer:
        raise NotImplementedError  # JobStore's

    def record_usage(
        self, job_id: int, worker: str, token: UUID | None, usage: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """The holder's gateway adds what its attempt's agent used since its last record (rows of
        {model, requests, unread, input, output, cache_read, cache_write}); returns the allowance:
        {budgeted, spent (None, "job" or "day"), note}."""
        return self._run(ledger_calls.record_usage(job_id, worker, token, usage))

    def usage_allowance(self, job_id: int, worker: str, token: UUID | None) -> dict[str, Any]:
        """What the holder's gateway may do before a model request (as record_usage answers)."""
        return self._run(ledger_calls.usage_allowance(job_id, worker, token))

    def record_exchange(
        self, job_id: int, worker: str, token: UUID | None, exchange: Mapping[str, Any]
    ) -> bool:
        """The holder's gateway adds an exchange to its attempt's transcript ({api, model, status,
        request, answer (compressed, None when not kept), request_bytes, answer_bytes}); whether
        it was kept whole."""
        return self._run(ledger_calls.record_exchange(job_id, worker, token, exchange))

    def job_model_usage(self, job_id: int) -> list[ModelUsage]:
        """What each attempt of the job asked of each model, with its cost (None: unpriced)."""
        return self._run(ledger_calls.job_model_usage(job_id))

    def set_model_price(
        self,
        model: str,
        input: Decimal,
        output: Decimal,
        cache_read: Decimal | None = None,
        cache_write: Decimal | None = None,
    ) -> ModelPrice:
        """A model's (or a prefix*'s) price in USD per million tokens."""
        return self._run(
            ledger_calls.set_model_price(model, input, output, cache_read, cache_write)
        )

    def model_prices(self) -> list[ModelPrice]:
        return self._run(ledger_calls.model_prices())


class AsyncLedgerMethods:
    """AsyncJobStore's ledger, as LedgerMethods."""

    def _run(self, call: Call[Any, Answer]) -> Awaitable[Answer]:
        raise NotImplementedError  # AsyncJobStore's

    async def record_usage(
        self, job_id: int, worker: str, token: UUID | None, usage: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        return await self._run(ledger_calls.record_usage(job_id, worker, token, usage))

    async def usage_allowance(self, job_id: int, worker: str, token: UUID | None) -> dict[str, Any]:
        return await self._run(ledger_calls.usage_allowance(job_id, worker, token))

    async def record_exchange(
        self, job_id: int, worker: str, token: UUID | None, exchange: Mapping[str, Any]
    ) -> bool:
        return await self._run(ledger_calls.record_exchange(job_id, worker, token, exchange))

    async def job_model_usage(self, job_id: int) -> list[ModelUsage]:
        return await self._run(ledger_calls.job_model_usage(job_id))

    async def set_model_price(
        self,
        model: str,
        input: Decimal,
        output: Decimal,
        cache_read: Decimal | None = None,
        cache_write: Decimal | None = None,
    ) -> ModelPrice:
        return await self._run(
            ledger_calls.set_model_price(model, input, output, cache_read, cache_write)
        )

    async def model_prices(self) -> list[ModelPrice]:
        return await self._run(ledger_calls.model_prices())
