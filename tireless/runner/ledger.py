"""An attempt's ledger in the runner: the usage its gateways read, added up per model and handed to
the store in batches (`tireless.record_usage`, at most FLUSH_EVERY apart, so a killed worker loses
at most that much), and the allowance the gateways ask before each model request: with no budget
of tokens or cost for the job the last batch's answer stands; with one, the store is asked again
before each request, so no budget is passed by more than the request in flight."""

from __future__ import annotations

import dataclasses
import logging
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from tireless.errors import NotHolder, TirelessError, UnknownJob
from tireless.masking import Masker
from tireless.usage import Usage

log = logging.getLogger(__name__)

FLUSH_EVERY = 1.0
"""Seconds between the ledger's records of usage while an attempt runs."""
TRANSCRIPT_KEPT = 20 * 1024 * 1024
"""The bytes of requests and answers an attempt's transcript keeps (tireless.transcript_limit);
an exchange past them is recorded by its sizes only."""

Allowance = Mapping[str, Any]
"""What record_usage and usage_allowance answer: {budgeted, spent (None, "job" or "day"), note}."""
Record = Callable[[Sequence[Mapping[str, Any]]], Allowance]
Ask = Callable[[], Allowance]


@dataclass(frozen=True, slots=True)
class Exchange:
    """A model request and its answer as the gateway passed them (None when not kept: past the
    transcript's bytes), with their sizes."""

    api: str
    model: str
    status: int
    request: bytes | None
    answer: bytes | None
    request_bytes: int
    answer_bytes: int


KeepExchange = Callable[[Exchange], object]


@dataclass(slots=True)
class Counts:
    """What one model was asked since the last record."""

    requests: int = 0
    unread: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


class Ledger:
    """`add` each answer's Usage (from the gateways' threads); `refusal` before forwarding a model
    request: None to forward it, else the spent budget's note; `close` records what is left.
    `spent` is the first spent allowance a request was refused for (the runner ends the attempt
    by it)."""

    def __init__(
        self,
        record: Record,
        ask: Ask,
        on_spent: Callable[[str], None] | None = None,
        every: float = FLUSH_EVERY,
        keep: KeepExchange | None = None,
        masker: Masker | None = None,
    ) -> None:
        self._record = record
        self._keep = keep
        self._masker = masker
        self._exchanges: list[Exchange] = []
        self._kept = 0  # bytes of the attempt's exchanges kept so far
        self._ask = ask
        self._on_spent = on_spent
        self._every = every
        self._lock = threading.Lock()
        self._recording = threading.Lock()  # one record of usage at a time, in order
        self._flushing = threading.Lock()  # one batch of exchanges at a time, in order
        self._counts: dict[str, Counts] = {}
        self._allowance: Allowance = {"budgeted": True, "spent": None, "note": None}
        self._held = True  # False once the store says the worker no longer holds the job
        self.spent: Allowance | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Ledger:
        self._thread = threading.Thread(target=self._run, name="ledger", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.flush()

    def close(self) -> None:
        """Stops the batches and records what is left."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()

    def add(self, usage: Usage) -> None:
        with self._lock:
            counts = self._counts.setdefault(usage.model, Counts())
            counts.requests += 1
            if not usage.read:
                counts.unread += 1
            counts.input += usage.input
            counts.output += usage.output
            counts.cache_read += usage.cache_read
            counts.cache_write += usage.cache_write

    @property
    def keeps_transcript(self) -> bool:
        """Whether exchanges are still kept whole: the transcript has room left."""
        return self._keep is not None and self._kept < TRANSCRIPT_KEPT

    def add_exchange(self, exchange: Exchange) -> None:
        if self._keep is None:
            return
        with self._lock:
            if exchange.request is not None and exchange.answer is not None:
                size = exchange.request_bytes + exchange.answer_bytes
                if self._kept + size > TRANSCRIPT_KEPT:  # past the room: its sizes only
                    exchange = dataclasses.replace(exchange, request=None, answer=None)
                self._kept += size
            self._exchanges.append(exchange)

    def flush(self) -> None:
        """Hands what was added since the last record to the store (kept for the next one when
        the store cannot be reached), and keeps its answer as the allowance; then the exchanges,
        masked and compressed."""
        self._flush_usage()
        with self._flushing:
            with self._lock:
                exchanges, self._exchanges = self._exchanges, []
            for exchange in exchanges:
                self._call_keep(exchange)

    def _call_keep(self, exchange: Exchange) -> None:
        """Records one exchange, masked and compressed; one the store cannot take is dropped
        (the transcript is a record for people: the usage is what the budgets count)."""
        keep, mask = self._keep, self._masker
        assert keep is not None

        def packed(data: bytes | None) -> bytes | None:
            if data is None:
                return None
            return zlib.compress(mask.mask_bytes(data) if mask is not None else data, 1)  # fast

        recorded = dataclasses.replace(
            exchange, request=packed(exchange.request), answer=packed(exchange.answer)
        )
        self._call(lambda: {"kept": keep(recorded)})

    def _flush_usage(self) -> None:
        """The usage since the last record, and the allowance (under its own lock: a request
        that asks the allowance never waits for the transcript's writes)."""
        with self._recording:
            with self._lock:
                batch, self._counts = self._counts, {}
            if not batch and not self._allowance["budgeted"]:
                return
            rows = [{"model": model, **vars_of(counts)} for model, counts in batch.items()]
            allowance = self._call(lambda: self._record(rows) if rows else self._ask())
            if allowance is None and self._held:
                with self._lock:  # recorded at the next batch
                    for model, counts in batch.items():
                        merge(self._counts.setdefault(model, Counts()), counts)
            elif allowance is not None:
                self._allowance = allowance

    def _call(self, call: Callable[[], Allowance]) -> Allowance | None:
        if not self._held:
            return None
        try:
            return call()
        except (NotHolder, UnknownJob):
            self._held = False  # the lease is lost: nothing more is the worker's to record
        except (psycopg.Error, TirelessError) as error:
            log.warning("the usage is not recorded yet: %s", error)
        return None

    def refusal(self) -> str | None:
        """None when a model request may be forwarded; else the note of the budget it would pass.
        Under a budget the usage so far is recorded first and the store asked."""
        if self._allowance["budgeted"]:
            self._flush_usage()
        allowance = self._allowance
        if allowance["spent"] is None:
            return None
        note = str(allowance["note"])
        with self._lock:
            first = self.spent is None
            if first:
                self.spent = allowance
        if first and self._on_spent is not None:
            self._on_spent(note)
        return note


def vars_of(counts: Counts) -> dict[str, int]:
    return {
        "requests": counts.requests,
        "unread": counts.unread,
        "input": counts.input,
        "output": counts.output,
        "cache_read": counts.cache_read,
        "cache_write": counts.cache_write,
    }


def merge(into: Counts, more: Counts) -> None:
    into.requests += more.requests
    into.unread += more.unread
    into.input += more.input
    into.output += more.output
    into.cache_read += more.cache_read
    into.cache_write += more.cache_write
