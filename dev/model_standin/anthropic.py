"""The Anthropic Messages API's wire shapes, as the stand-in answers them: a Message (JSON), its
stream of server-sent events, and errors.

Shapes from Anthropic's documentation: "Messages" (POST /v1/messages; the Message object with
`content` blocks `text` and `tool_use`, `stop_reason` `end_turn`/`tool_use`, `usage`), "Streaming
Messages" (docs.anthropic.com/en/api/messages-streaming, platform.claude.com/docs/build-with-
claude/streaming: message_start with an empty content and the usage so far, a ping, per block
content_block_start, content_block_delta `text_delta` or `input_json_delta` with `partial_json`,
content_block_stop, then message_delta with `stop_reason` and the cumulative `usage`, and
message_stop) and "Errors" (docs.anthropic.com/en/api/errors: `{"type": "error", "error":
{"type": ..., "message": ...}}`, 529 overloaded_error, 401 authentication_error)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from dev.model_standin.script import Call, Usage

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ERROR_MESSAGES = {401: "invalid x-api-key", 529: "Overloaded", 429: "Rate limited"}


def tool_results(body: dict[str, Any]) -> int:
    """How many tool results the conversation carries: `tool_result` blocks in user turns."""
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(
                1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
            )
    return count


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def _blocks(text: str | None, call: Call | None, ident: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if text:
        blocks.append({"type": "text", "text": text})
    if call is not None:
        blocks.append(
            {"type": "tool_use", "id": f"toolu_{ident}", "name": call.name, "input": call.arguments}
        )
    return blocks


def message(
    model: str, ident: str, text: str | None, call: Call | None, usage: Usage
) -> dict[str, Any]:
    """The Message a non-streaming request gets."""
    return {
        "id": f"msg_{ident}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(text, call, ident),
        "stop_reason": "tool_use" if call is not None else "end_turn",
        "stop_sequence": None,
        "usage": _usage(usage),
    }


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _pieces(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream(
    model: str, ident: str, text: str | None, call: Call | None, usage: Usage
) -> Iterator[bytes]:
    """The events of a streaming request, the input JSON of a tool call split into several
    `input_json_delta`s as the API does."""
    start = message(model, ident, None, None, usage)
    start["stop_reason"] = None
    # message_start's usage is the usage so far; the output count is final only in message_delta
    # (cumulative), so it starts at 0 here and a client adding or replacing gets the same total.
    start["usage"]["output_tokens"] = 0
    yield _event("message_start", {"type": "message_start", "message": start})
    yield _event("ping", {"type": "ping"})
    for index, block in enumerate(_blocks(text, call, ident)):
        if block["type"] == "text":
            yield _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _pieces(block["text"]):
                delta = {"type": "text_delta", "text": piece}
                yield _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
        else:
            opening = {**block, "input": {}}
            yield _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
            for piece in _pieces(json.dumps(block["input"])):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    stop = "tool_use" if call is not None else "end_turn"
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def error(status: int) -> dict[str, Any]:
    """The error body for an HTTP status."""
    kind = ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": ERROR_MESSAGES.get(status, kind)}}


def count_tokens(usage: Usage) -> dict[str, int]:
    """POST /v1/messages/count_tokens's answer."""
    return {"input_tokens": usage.input_tokens}
