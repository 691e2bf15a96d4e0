"""What a model answer used, read by the gateway as the answer's bytes pass: Anthropic Messages
(`usage`; `message_start` and `message_delta` on a stream), OpenAI Chat Completions (`usage`, the
last chunk of a stream that asked for it) and Responses (`response.completed`). Only the few
events that carry usage are decoded; every other byte is passed on as it came."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

JSON_LIMIT = 16 * 1024 * 1024
"""The most of an answer that is not a stream kept to read its usage; a longer one is unread."""
LINE_LIMIT = 4 * 1024 * 1024
"""The longest line of a stream kept whole; a longer one is passed on and not read."""
MODEL_IN_REQUEST = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')
MARKER_SPAN = 64
"""Bytes either side of a chunk's seam searched for a marker of usage split between chunks."""


class Api(StrEnum):
    """The model APIs whose answers the gateway reads."""

    ANTHROPIC = "anthropic"
    CHAT = "chat"
    RESPONSES = "responses"


MARKERS = {
    Api.ANTHROPIC: b'"message_',
    Api.CHAT: b'"prompt_tokens"',
    Api.RESPONSES: b"response.completed",
}
"""A word each API's events that carry usage have, and few others (Anthropic's message_start,
message_delta and message_stop; a Chat usage object; the Responses event that ends a response)."""


def api_of(method: str, path: str) -> Api | None:
    """The API a request asks a model of (its answer has usage), or None: a listing of models, a
    count of tokens, anything else."""
    if method != "POST":
        return None
    route = path.partition("?")[0].rstrip("/")
    if route.endswith("/messages"):
        return Api.ANTHROPIC
    if route.endswith("/chat/completions"):
        return Api.CHAT
    if route.endswith("/responses"):
        return Api.RESPONSES
    return None


@dataclass(slots=True)
class Usage:
    """One answer's usage: its model and tokens of each kind; `read` False when the answer's usage
    could not be read (then its tokens are unknown, not zero)."""

    model: str
    read: bool = False
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


def count(value: Any) -> int:
    """A token count as an API gives it; 0 for anything that is not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def ask_for_usage(body: bytes) -> tuple[bytes, bool]:
    """A Chat Completions request's body, with `stream_options.include_usage` added when it
    streams without it; and whether it was added (the agent did not ask for the usage chunk, so
    it is taken out of what the agent sees). A body that is not a JSON object passes as it is."""
    try:
        request = json.loads(body)
    except ValueError:
        return body, False
    if not isinstance(request, dict) or request.get("stream") is not True:
        return body, False
    options = request.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        return body, False
    request["stream_options"] = {
        **(options if isinstance(options, dict) else {}),
        "include_usage": True,
    }
    return json.dumps(request, separators=(",", ":")).encode(), True


class UsageReader:
    """Fed an answer's bytes as they arrive (`feed` returns what to pass on), then `end`: the
    answer's Usage. A stream (text/event-stream) passes as it comes; only its lines that may carry
    usage are split out and decoded; another answer is kept (up to JSON_LIMIT) and read once it ended."""

    def __init__(self, api: Api, stream: bool, model: str, strip_usage_chunk: bool = False) -> None:
        self.api = api
        self.stream = stream
        self.usage = Usage(model)
        self._strip = strip_usage_chunk and stream and api is Api.CHAT
        self._pending = b""  # a stream's unfinished line
        self._kept: list[bytes] = []  # an answer that is not a stream
        self._size = 0
        self._dropping = False  # the usage chunk was taken out: so is the blank line that ends it
        self._marked = False  # the unfinished line holds a marker of usage
        self._marker = MARKERS[api]

    def feed(self, chunk: bytes) -> bytes:
        if not self.stream:
            self._size += len(chunk)
            if self._size <= JSON_LIMIT:
                self._kept.append(chunk)
            return chunk
        end = chunk.rfind(b"\n") + 1
        seam = self._pending[-MARKER_SPAN:] + chunk[:MARKER_SPAN]
        in_chunk = self._carries_usage(chunk)
        marked = self._marked or in_chunk or self._carries_usage(seam)
        if end == 0:  # no line ends here
            self._pending += chunk
            self._marked = marked
            if len(self._pending) > LINE_LIMIT:  # a line this long is passed on, not read
                passed, self._pending, self._marked = self._pending, b"", False
                return passed if self._strip else chunk
            return b"" if self._strip else chunk
        # The fast path: lines that cannot carry usage pass without being copied, split or
        # decoded (a marker split between two chunks is found at the seam).
        if marked or self._dropping:
            passed = self._lines(self._pending + chunk[:end])
        else:
            passed = self._pending + chunk[:end] if self._strip else b""
        self._pending = chunk[end:]
        self._marked = in_chunk and self._carries_usage(self._pending)
        return passed if self._strip else chunk

    def _carries_usage(self, lines: bytes) -> bool:
        """Whether the bytes may hold usage: one search for a word only usage events have."""
        return self._marker in lines

    def _lines(self, complete: bytes) -> bytes:
        """Reads each line; what passes on (the usage chunk, and the blank line that ends it, are
        taken out when the agent did not ask for them)."""
        out: list[bytes] = []
        for line in complete.split(b"\n")[:-1]:
            if self._line(line) and self._strip:
                self._dropping = True  # the usage chunk: the agent did not ask for it
                continue
            if self._dropping and not line.strip(b"\r"):
                self._dropping = False
                continue
            self._dropping = False
            out.append(line + b"\n")
        return b"".join(out)

    def end(self) -> tuple[bytes, Usage]:
        """What is still held to pass on, and the answer's Usage."""
        rest = b""
        if self.stream:
            if self._pending:
                rest = self._lines(self._pending + b"\n")[:-1] if self._strip else b""
                if not self._strip:
                    self._line(self._pending)
            self._pending = b""
        elif self._size <= JSON_LIMIT:
            try:
                answer = json.loads(b"".join(self._kept))
            except ValueError:
                answer = None
            if isinstance(answer, dict):
                if self.api is Api.RESPONSES and isinstance(answer.get("response"), dict):
                    answer = answer["response"]
                self._model(answer.get("model"))
                self._usage(answer.get("usage"))
        return rest, self.usage

    def _line(self, line: bytes) -> bool:
        """Reads one line of a stream; True when it is the data of a chat usage chunk."""
        if not line.startswith(b"data:"):
            return False
        data = line[5:]
        if self.api is Api.ANTHROPIC:
            if b'"message_start"' in data or b'"message_delta"' in data:
                self._anthropic(self._decode(data))
            return False
        if self.api is Api.RESPONSES:
            if b'"response.completed"' in data:
                event = self._decode(data)
                response = event.get("response") if isinstance(event, dict) else None
                if isinstance(response, dict):
                    self._model(response.get("model"))
                    self._usage(response.get("usage"))
            return False
        # Chat Completions: the usage in the last chunk of a stream that asked for it.
        if self._marker not in data:
            return False
        event = self._decode(data)
        if not isinstance(event, dict) or not isinstance(event.get("usage"), dict):
            return False
        self._model(event.get("model"))
        self._usage(event["usage"])
        return not event.get("choices")

    @staticmethod
    def _decode(data: bytes) -> Any:
        try:
            return json.loads(data)
        except ValueError:
            return None

    def _model(self, model: Any) -> None:
        if isinstance(model, str) and 0 < len(model) <= 200:
            self.usage.model = model

    def _anthropic(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
            self._model(event["message"].get("model"))
            self._usage(event["message"].get("usage"))
        elif event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
            self._usage(event["usage"])  # counts so far: each given replaces the one before

    def _usage(self, usage: Any) -> None:
        """Reads an API's usage object into self.usage: OpenAI's input counts include the cached
        ones, which are told apart here; Anthropic counts its cache reads and writes apart."""
        if not isinstance(usage, dict):
            return
        self.usage.read = True
        if self.api is Api.ANTHROPIC:
            for key, kind in (
                ("input_tokens", "input"),
                ("output_tokens", "output"),
                ("cache_read_input_tokens", "cache_read"),
                ("cache_creation_input_tokens", "cache_write"),
            ):
                if key in usage:
                    setattr(self.usage, kind, count(usage[key]))
            return
        prompt, completion, details = (
            ("prompt_tokens", "completion_tokens", "prompt_tokens_details")
            if self.api is Api.CHAT
            else ("input_tokens", "output_tokens", "input_tokens_details")
        )
        cached = usage.get(details)
        self.usage.cache_read = (
            count(cached.get("cached_tokens")) if isinstance(cached, dict) else 0
        )
        self.usage.input = max(count(usage.get(prompt)) - self.usage.cache_read, 0)
        self.usage.output = count(usage.get(completion))


def requested_model(chunk: bytes) -> str | None:
    """The model a request's first bytes name, if they do."""
    found = MODEL_IN_REQUEST.search(chunk)
    return found.group(1).decode(errors="replace") if found else None


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """What an attempt's agent asked of one model through the runner's gateway
    (`tireless.job_model_usage`): requests, the unread ones (whose tokens are unknown), tokens of each
    kind, and the cost in USD at today's prices (None: the model is unpriced)."""

    attempt: int
    model: str
    requests: int
    unread: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: Decimal | None

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A model's price in USD per million tokens (`tireless.set_model_price`); a cache price of
    None is the input price. `model` is a name or a prefix*."""

    model: str
    input: Decimal
    output: Decimal
    cache_read: Decimal | None
    cache_write: Decimal | None
    set_at: datetime
