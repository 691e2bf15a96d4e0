"""The statements of the ledger, each beside its parameters and the shape of its rows, as
tireless.store.calls has those of the job's: what a gateway records of its attempt's model usage
and the allowance it asks before a request, the models' prices, and a job's usage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any
from uuid import UUID

from psycopg.rows import class_row, tuple_row
from psycopg.types.json import Jsonb

from tireless.store.calls import Call, _only, _rows, _value
from tireless.usage import ModelPrice, ModelUsage

RECORD_USAGE = (
    "SELECT tireless.record_usage(job_id => %(job_id)s, worker => %(worker)s,"
    " token => %(token)s, usage => %(usage)s)"
)


def record_usage(
    job_id: int, worker: str, token: UUID | None, usage: Sequence[Mapping[str, Any]]
) -> Call[Any, dict[str, Any]]:
    params = {
        "job_id": job_id,
        "worker": worker,
        "token": token,
        "usage": Jsonb([dict(row) for row in usage]),
    }
    return Call(RECORD_USAGE, params, tuple_row, _value)


USAGE_ALLOWANCE = "SELECT tireless.usage_allowance(job_id => %(job_id)s, worker => %(worker)s, token => %(token)s)"


def usage_allowance(job_id: int, worker: str, token: UUID | None) -> Call[Any, dict[str, Any]]:
    params = {"job_id": job_id, "worker": worker, "token": token}
    return Call(USAGE_ALLOWANCE, params, tuple_row, _value)


SET_MODEL_PRICE = (
    "SELECT * FROM tireless.set_model_price(model => %(model)s, input => %(input)s,"
    " output => %(output)s, cache_read => %(cache_read)s, cache_write => %(cache_write)s)"
)


def set_model_price(
    model: str,
    input: Decimal,
    output: Decimal,
    cache_read: Decimal | None = None,
    cache_write: Decimal | None = None,
) -> Call[ModelPrice, ModelPrice]:
    params = {
        "model": model,
        "input": input,
        "output": output,
        "cache_read": cache_read,
        "cache_write": cache_write,
    }
    return Call(SET_MODEL_PRICE, params, class_row(ModelPrice), _only)


MODEL_PRICES = "SELECT * FROM tireless.model_prices()"


def model_prices() -> Call[ModelPrice, list[ModelPrice]]:
    return Call(MODEL_PRICES, {}, class_row(ModelPrice), _rows)


JOB_MODEL_USAGE = "SELECT * FROM tireless.job_model_usage(job_id => %(job_id)s)"


def job_model_usage(job_id: int) -> Call[ModelUsage, list[ModelUsage]]:
    return Call(JOB_MODEL_USAGE, {"job_id": job_id}, class_row(ModelUsage), _rows)


RECORD_EXCHANGE = (
    "SELECT tireless.record_exchange(job_id => %(job_id)s, worker => %(worker)s, token => %(token)s,"
    " api => %(api)s, model => %(model)s, status => %(status)s, request => %(request)s,"
    " answer => %(answer)s, request_bytes => %(request_bytes)s, answer_bytes => %(answer_bytes)s)"
)


def record_exchange(
    job_id: int, worker: str, token: UUID | None, exchange: Mapping[str, Any]
) -> Call[Any, bool]:
    params = {"job_id": job_id, "worker": worker, "token": token, **exchange}
    return Call(RECORD_EXCHANGE, params, tuple_row, _value)


JOB_TRANSCRIPT = "SELECT * FROM tireless.job_transcript(job_id => %(job_id)s)"
"""A job's exchanges, attempt by attempt (tireless.transcript renders them)."""
