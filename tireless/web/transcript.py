"""An attempt's transcript read as a session (`tireless show JOB --transcript`, the job page): each
exchange the gateway kept (tireless.job_transcript) becomes a turn, the messages its request added
to the conversation (the prompt, tool results) and what the model answered (text, tool calls),
with its tokens; an exchange past the transcript's bytes is said to be cut."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tireless.usage import Api, Usage, UsageReader

SHOWN = 4000
"""The characters of one message a turn shows; the rest is said to be left out."""


@dataclass(frozen=True, slots=True)
class Message:
    """One part of a conversation: who (system, user, assistant, tool) and what, as text; `kind`
    text, tool call or tool result."""

    role: str
    kind: str
    text: str


@dataclass(slots=True)
class Turn:
    """One exchange: the messages its request added, the model's answer, its tokens."""

    attempt: int
    seq: int
    at: datetime
    model: str
    status: int
    asked: list[Message] = field(default_factory=list)
    answered: list[Message] = field(default_factory=list)
    usage: Usage | None = None
    cut: bool = False
    """Past the attempt's 20 MiB: neither request nor answer was kept."""
    sizes: tuple[int, int] = (0, 0)


def shown(text: str) -> str:
    return (
        text if len(text) <= SHOWN else f"{text[:SHOWN]}… ({len(text) - SHOWN:,} more characters)"
    )


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the texts of its blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(block.get("text", block.get("content", ""))) if isinstance(block, dict)
                         else str(block) for block in content)  # fmt: skip
    return "" if content is None else json.dumps(content)


def call_text(name: Any, arguments: Any) -> str:
    given = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f"{name}({given})"


def anthropic_messages(request: Mapping[str, Any]) -> Iterator[Message]:
    if request.get("system"):
        yield Message("system", "text", text_of(request["system"]))
    for message in request.get("messages") or []:
        role, content = message.get("role", "?"), message.get("content")
        if not isinstance(content, list):
            yield Message(role, "text", text_of(content))
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                yield Message(role, "tool call", call_text(block.get("name"), block.get("input")))
            elif kind == "tool_result":
                yield Message("tool", "tool result", text_of(block.get("content")))
            elif kind == "text":
                yield Message(role, "text", str(block.get("text", "")))


def chat_messages(request: Mapping[str, Any]) -> Iterator[Message]:
    for message in request.get("messages") or []:
        role = message.get("role", "?")
        if role == "tool":
            yield Message("tool", "tool result", text_of(message.get("content")))
            continue
        if message.get("content"):
            yield Message(role, "text", text_of(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            yield Message(
                role, "tool call", call_text(function.get("name"), function.get("arguments"))
            )


def responses_messages(request: Mapping[str, Any]) -> Iterator[Message]:
    if request.get("instructions"):
        yield Message("system", "text", text_of(request["instructions"]))
    given = request.get("input")
    if isinstance(given, str):
        yield Message("user", "text", given)
        return
    for item in given or []:
        if not isinstance(item, dict):
            continue
        yield from response_item(item, item.get("role", "user"))


def response_item(item: Mapping[str, Any], role: str) -> Iterator[Message]:
    kind = item.get("type", "message")
    if kind == "message":
        yield Message(item.get("role", role), "text", text_of(item.get("content")))
    elif kind in ("function_call", "custom_tool_call"):
        yield Message(
            "assistant",
            "tool call",
            call_text(item.get("name"), item.get("arguments", item.get("input"))),
        )
    elif kind in ("function_call_output", "custom_tool_call_output"):
        yield Message("tool", "tool result", text_of(item.get("output")))


ASKED = {
    Api.ANTHROPIC: anthropic_messages,
    Api.CHAT: chat_messages,
    Api.RESPONSES: responses_messages,
}


def answered(api: Api, answer: bytes) -> list[Message]:
    """What the model answered: its text and tool calls, from a JSON answer or a stream."""
    if not answer.lstrip().startswith(b"{"):
        return streamed(api, answer)
    try:
        body = json.loads(answer)
    except ValueError:
        return [Message("assistant", "text", answer.decode(errors="replace"))]
    if not isinstance(body, dict):
        return []
    if "error" in body:
        return [
            Message(
                "error",
                "text",
                text_of(
                    body["error"].get("message")
                    if isinstance(body["error"], dict)
                    else body["error"]
                ),
            )
        ]
    if api is Api.ANTHROPIC:
        return list(
            anthropic_messages(
                {"messages": [{"role": "assistant", "content": body.get("content")}]}
            )
        )
    if api is Api.CHAT:
        choice = (body.get("choices") or [{}])[0]
        return list(
            chat_messages({"messages": [{"role": "assistant", **(choice.get("message") or {})}]})
        )
    return [
        m
        for item in body.get("output") or []
        if isinstance(item, dict)
        for m in response_item(item, "assistant")
    ]


def streamed(api: Api, answer: bytes) -> list[Message]:
    text: list[str] = []
    calls: dict[int, list[str]] = {}
    completed: list[Message] | None = None
    for line in answer.split(b"\n"):
        if not line.startswith(b"data:"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if api is Api.ANTHROPIC:
            block, delta = event.get("content_block") or {}, event.get("delta") or {}
            if kind == "content_block_start" and block.get("type") == "tool_use":
                calls[event.get("index", 0)] = [str(block.get("name")), ""]
            elif kind == "content_block_delta" and delta.get("type") == "text_delta":
                text.append(str(delta.get("text", "")))
            elif kind == "content_block_delta" and delta.get("type") == "input_json_delta":
                calls.setdefault(event.get("index", 0), ["?", ""])[1] += str(
                    delta.get("partial_json", "")
                )
        elif api is Api.CHAT:
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                text.append(str(delta.get("content") or ""))
                for call in delta.get("tool_calls") or []:
                    function = call.get("function") or {}
                    named = calls.setdefault(call.get("index", 0), ["", ""])
                    named[0] += str(function.get("name") or "")
                    named[1] += str(function.get("arguments") or "")
        elif kind == "response.completed" and isinstance(event.get("response"), dict):
            completed = answered(api, json.dumps(event["response"]).encode())
    if completed is not None:
        return completed
    said = [Message("assistant", "text", "".join(text))] if "".join(text) else []
    return said + [
        Message("assistant", "tool call", f"{name}({args})") for name, args in calls.values()
    ]


def turns(rows: Iterable[Mapping[str, Any]]) -> list[Turn]:
    """Each exchange of the rows of tireless.job_transcript as a turn: the messages its request
    added since the attempt's previous request, and the answer."""
    out: list[Turn] = []
    seen: dict[int, int] = {}  # per attempt, the messages its earlier requests showed
    for row in rows:
        api = Api(row["api"])
        turn = Turn(row["attempt"], row["seq"], row["at"], row["model"], row["status"],
                    sizes=(row["request_bytes"], row["answer_bytes"]))  # fmt: skip
        out.append(turn)
        if row["request"] is None:
            turn.cut = True
            continue
        request, answer = zlib.decompress(row["request"]), zlib.decompress(row["answer"])
        try:
            body = json.loads(request)
        except ValueError:
            body = None
        messages = list(ASKED[api](body)) if isinstance(body, dict) else []
        turn.asked = [
            Message(m.role, m.kind, shown(m.text)) for m in messages[seen.get(turn.attempt, 0) :]
        ]
        seen[turn.attempt] = len(messages)
        turn.answered = [Message(m.role, m.kind, shown(m.text)) for m in answered(api, answer)]
        reader = UsageReader(api, not answer.lstrip().startswith(b"{"), row["model"])
        reader.feed(answer)
        usage = reader.end()[1]
        turn.usage = usage if usage.read else None
    return out


def tokens_line(usage: Usage | None) -> str:
    if usage is None:
        return "tokens unknown"
    return (f"{usage.input:,} in, {usage.output:,} out, {usage.cache_read:,} cache read,"
            f" {usage.cache_write:,} cache write")  # fmt: skip


def render(rows: Iterable[Mapping[str, Any]]) -> str:
    """The transcript as text, for a terminal."""
    lines: list[str] = []
    for turn in turns(rows):
        lines.append(f"── attempt {turn.attempt}, exchange {turn.seq} · {turn.model} · {turn.status}"
                     f" · {tokens_line(turn.usage)}")  # fmt: skip
        if turn.cut:
            lines.append(
                f"   (cut: past the attempt's 20 MiB; {turn.sizes[0]:,} bytes asked, {turn.sizes[1]:,} answered)"
            )
            continue
        for message in turn.asked:
            lines.append(f"▸ {message.role} ({message.kind}): {message.text}")
        for message in turn.answered:
            lines.append(f"◂ {message.role} ({message.kind}): {message.text}")
    return (
        "\n".join(lines)
        if lines
        else "no transcript: the job made no model request through a gateway"
    )
