"""Google's Gemini API (generativelanguage v1beta) as the stand-in answers it, for Gemini CLI:
a GenerateContentResponse (JSON), its stream, and errors.

Shapes from the Gemini API reference ("Generating content": POST
/v1beta/models/{model}:generateContent and :streamGenerateContent, `?alt=sse` giving one
`data: {GenerateContentResponse}` event per chunk; `candidates[].content.parts[]` of `text` or
`functionCall {name, args}`, `finishReason` STOP; `usageMetadata {promptTokenCount,
candidatesTokenCount, totalTokenCount, cachedContentTokenCount}`; the request's `tools[]
.functionDeclarations[] {name, parameters | parametersJsonSchema}` and `contents[].parts[]
.functionResponse` for a tool's result; "Counting tokens": `{totalTokens}`) and its errors
(`{"error": {"code", "message", "status"}}`, ai.google.dev/gemini-api/docs/troubleshooting)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from dev.model_standin.script import Call, Tool, Usage

STATUSES = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "The model was not found"),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted"),
    500: ("INTERNAL", "An internal error has occurred"),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    529: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def declared(body: dict[str, Any]) -> list[Tool]:
    """The function declarations of a request, as tools."""
    tools = []
    for group in body.get("tools") or []:
        for raw in (group or {}).get("functionDeclarations") or []:
            schema = raw.get("parametersJsonSchema") or raw.get("parameters") or {}
            props = schema.get("properties") or {} if isinstance(schema, dict) else {}
            if isinstance(raw.get("name"), str):
                tools.append(Tool(raw["name"], "function", frozenset(props)))
    return tools


def tool_results(body: dict[str, Any]) -> int:
    """How many tool results the conversation carries: `functionResponse` parts."""
    return sum(
        1
        for content in body.get("contents") or []
        for part in (content or {}).get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    )


def response(
    model: str, ident: str, text: str | None, call: Call | None, usage: Usage
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"text": text})
    if call is not None:
        args = call.arguments if isinstance(call.arguments, dict) else {"input": call.arguments}
        parts.append({"functionCall": {"name": call.name, "args": args}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.input_tokens + usage.output_tokens,
            "cachedContentTokenCount": usage.cache_read_input_tokens,
        },
        "modelVersion": model,
        "responseId": ident,
    }


def stream(
    model: str, ident: str, text: str | None, call: Call | None, usage: Usage
) -> Iterator[bytes]:
    """`alt=sse`: the text in chunks, then the call and the usage in the last chunk."""
    whole = response(model, ident, text, call, usage)
    pieces = [text[i : i + 24] for i in range(0, len(text), 24)] if text else []
    for piece in pieces[:-1]:
        chunk = response(model, ident, piece, None, usage)
        del chunk["usageMetadata"], chunk["candidates"][0]["finishReason"]
        yield f"data: {json.dumps(chunk)}\r\n\r\n".encode()
    last = response(model, ident, pieces[-1] if pieces else None, call, usage) if pieces else whole
    yield f"data: {json.dumps(last)}\r\n\r\n".encode()


def json_aside(body: dict[str, Any]) -> str | None:
    """For a request that asks for JSON (`generationConfig.responseMimeType` application/json,
    with `responseJsonSchema` or `responseSchema`: Gemini CLI's router and next-speaker checks),
    the least value its schema takes; None for another request."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") != "application/json":
        return None
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    return json.dumps(least(schema))


def least(schema: Any) -> Any:
    """The simplest value of a (JSON or OpenAPI-style) schema: its first enum value, the type's
    zero (1 for an integer: scores count from 1), every property of an object."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {name: least(sub) for name, sub in (schema.get("properties") or {}).items()}
    return {"string": "", "integer": 1, "number": 1, "boolean": False, "array": []}.get(kind)


def error(status: int) -> dict[str, Any]:
    name, message = STATUSES.get(status, ("UNKNOWN", f"Error {status}"))
    return {"error": {"code": status, "message": message, "status": name}}
