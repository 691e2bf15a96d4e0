"""OpenAI's wire shapes, as the stand-in answers them: Chat Completions (a chat.completion, its
stream of chat.completion.chunk) and Responses (a response, its stream of semantic events), and
errors.

Shapes from OpenAI's API reference: "Chat Completions" (POST /v1/chat/completions; `choices[].
message` with `content` and `tool_calls[]` `{id, type: "function", function: {name, arguments}}`,
`finish_reason` `stop`/`tool_calls`, `usage` `{prompt_tokens, completion_tokens, total_tokens,
prompt_tokens_details.cached_tokens}`; streamed, `delta`s with the tool call's `index`, `id` and
name first and then pieces of `arguments`, `data: [DONE]` last, and with `stream_options.
include_usage` a last chunk with empty `choices` and the usage, `usage: null` on the others),
"Responses" (POST /v1/responses; `output[]` items `message` with `output_text` parts,
`function_call` `{call_id, name, arguments}`, `custom_tool_call` `{call_id, name, input}`;
`usage` `{input_tokens, input_tokens_details.cached_tokens, output_tokens,
output_tokens_details.reasoning_tokens, total_tokens}`) and "Streaming responses"
(developers.openai.com/docs/guides/streaming-responses: response.created, response.in_progress,
response.output_item.added/done, response.content_part.added/done, response.output_text.delta/
done, response.function_call_arguments.delta/done, response.custom_tool_call_input.delta/done,
response.completed carrying the whole response and its usage; each with a `sequence_number`; no
[DONE]). Errors: `{"error": {"message", "type", "param", "code"}}` ("Error codes")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from dev.model_standin.script import Call, Usage

# Chat Completions


def chat_tool_results(body: dict[str, Any]) -> int:
    """How many tool results a Chat Completions conversation carries: `role: "tool"` messages."""
    return sum(
        1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"
    )


def _chat_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _chat_call(call: Call, ident: str) -> dict[str, Any]:
    return {
        "id": f"call_{ident}",
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json()},
    }


def completion(
    model: str, ident: str, text: str | None, call: Call | None, usage: Usage
) -> dict[str, Any]:
    """The chat.completion a non-streaming request gets."""
    msg: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if call is not None:
        msg["tool_calls"] = [_chat_call(call, ident)]
    return {
        "id": f"chatcmpl-{ident}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": msg,
                "logprobs": None,
                "finish_reason": "tool_calls" if call is not None else "stop",
            }
        ],
        "usage": _chat_usage(usage),
    }


def _data(data: dict[str, Any] | str) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def _pieces(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chunks(
    model: str,
    ident: str,
    text: str | None,
    call: Call | None,
    usage: Usage,
    include_usage: bool,
) -> Iterator[bytes]:
    """The chunks of a streaming request."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": f"chatcmpl-{ident}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            body["usage"] = None
        return _data(body)

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(text) if text else []:
        yield chunk({"content": piece})
    if call is not None:
        first = _chat_call(call, ident)
        first["function"]["arguments"] = ""
        yield chunk({"tool_calls": [{"index": 0, **first}]})
        for piece in _pieces(call.arguments_json()):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if call is not None else "stop")
    if include_usage:
        last = {
            "id": f"chatcmpl-{ident}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": _chat_usage(usage),
        }
        yield _data(last)
    yield _data("[DONE]")


# Responses


def responses_tool_results(body: dict[str, Any]) -> int:
    """How many tool results a Responses input carries: `function_call_output` and
    `custom_tool_call_output` items."""
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    kinds = ("function_call_output", "custom_tool_call_output")
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") in kinds)


def _responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _items(text: str | None, call: Call | None, ident: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{ident}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    if call is not None and call.kind == "custom":
        items.append(
            {
                "type": "custom_tool_call",
                "id": f"ctc_{ident}",
                "call_id": f"call_{ident}",
                "name": call.name,
                "input": call.arguments_json(),
                "status": "completed",
            }
        )
    elif call is not None:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{ident}",
                "call_id": f"call_{ident}",
                "name": call.name,
                "arguments": call.arguments_json(),
                "status": "completed",
            }
        )
    return items


def response(
    model: str,
    ident: str,
    text: str | None,
    call: Call | None,
    usage: Usage | None,
    status: str = "completed",
) -> dict[str, Any]:
    """The response object: whole when completed, empty while in progress."""
    done = status == "completed"
    return {
        "id": f"resp_{ident}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": _items(text, call, ident) if done else [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": _responses_usage(usage) if done and usage is not None else None,
    }


def events(
    model: str, ident: str, text: str | None, call: Call | None, usage: Usage
) -> Iterator[bytes]:
    """The semantic events of a streaming request."""
    sequence = 0

    def event(kind: str, **data: Any) -> bytes:
        nonlocal sequence
        body = {"type": kind, "sequence_number": sequence, **data}
        sequence += 1
        return f"event: {kind}\ndata: {json.dumps(body)}\n\n".encode()

    yield event(
        "response.created", response=response(model, ident, None, None, None, "in_progress")
    )
    yield event(
        "response.in_progress", response=response(model, ident, None, None, None, "in_progress")
    )
    for index, item in enumerate(_items(text, call, ident)):
        if item["type"] == "message":
            opening = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=opening)
            part = {"type": "output_text", "text": "", "annotations": []}
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", **ids, part=part)
            whole = item["content"][0]["text"]
            for piece in _pieces(whole):
                yield event("response.output_text.delta", **ids, delta=piece)
            yield event("response.output_text.done", **ids, text=whole)
            yield event("response.content_part.done", **ids, part=item["content"][0])
        else:
            field = "input" if item["type"] == "custom_tool_call" else "arguments"
            kind = "custom_tool_call_input" if field == "input" else "function_call_arguments"
            opening = {**item, "status": "in_progress", field: ""}
            yield event("response.output_item.added", output_index=index, item=opening)
            ids = {"item_id": item["id"], "output_index": index}
            for piece in _pieces(item[field]):
                yield event(f"response.{kind}.delta", **ids, delta=piece)
            yield event(f"response.{kind}.done", **ids, **{field: item[field]})
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response(model, ident, text, call, usage))


# Errors

ERRORS = {
    400: ("invalid_request_error", None, "Invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided"),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden"),
    404: ("invalid_request_error", "model_not_found", "The model does not exist"),
    429: ("rate_limit_exceeded", "rate_limit_exceeded", "Rate limit reached"),
    500: ("server_error", None, "The server had an error while processing your request"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later"),
    529: ("server_error", None, "The engine is currently overloaded, please try again later"),
}


def error(status: int) -> dict[str, Any]:
    """The error body for an HTTP status."""
    kind, code, text = ERRORS.get(status, ("server_error", None, f"Error {status}"))
    return {"error": {"message": text, "type": kind, "param": None, "code": code}}


def models(names: list[str]) -> dict[str, Any]:
    """GET /v1/models's list."""
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "created": 0, "owned_by": "standin"} for n in names],
    }
