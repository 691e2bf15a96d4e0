"""The scripted model stand-in (dev/model_standin): each API's answers in its documented shape,
streamed and not, the CLI's own tool picked from the tools its request declares, the usage
known, errors in each vendor's shape, and every request recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from dev.model_standin import Fail, Final, ModelStandin, Script, Usage, Write

CLAUDE_TOOLS = [
    {"name": "Read", "input_schema": {"properties": {"file_path": {}}}},
    {"name": "Write", "input_schema": {"properties": {"file_path": {}, "content": {}}}},
    {
        "name": "Edit",
        "input_schema": {"properties": {"file_path": {}, "old_string": {}, "new_string": {}}},
    },
]
SYSTEM = "You are a CLI.\nWorking directory: /work/repo\nIs directory a git repo: yes"


@pytest.fixture
def model() -> Iterator[ModelStandin]:
    script = Script(
        [Write("NOTES.md", "hello\n"), Final("Wrote NOTES.md.")],
        usages=[Usage(120, 30, 7, 5)],
        usage=Usage(200, 40),
    )
    with ModelStandin(script) as standin:
        yield standin


def sse(response: httpx.Response) -> list[tuple[str | None, Any]]:
    events, name = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data = line[len("data: ") :]
            events.append((name, data if data == "[DONE]" else json.loads(data)))
            name = None
    return events


def test_anthropic_messages_stream_the_write_tool_then_answer_the_final_message(
    model: ModelStandin,
) -> None:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "stream": True,
        "system": [{"type": "text", "text": SYSTEM}],
        "tools": CLAUDE_TOOLS,
        "messages": [{"role": "user", "content": "Write NOTES.md"}],
    }
    with httpx.stream("POST", model.url + "/v1/messages?beta=true", json=body) as response:
        assert response.headers["content-type"] == "text/event-stream"
        events = sse(response)
    names = [n for n, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert all(n == d["type"] for n, d in events)
    start = events[0][1]["message"]
    assert start["content"] == []
    assert start["usage"]["input_tokens"] == 120
    assert start["usage"]["cache_read_input_tokens"] == 7
    block = events[2][1]["content_block"]
    assert block["type"] == "tool_use"
    assert block["name"] == "Write"
    assert block["input"] == {}
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert len(deltas) > 1
    assert {d["type"] for d in deltas} == {"input_json_delta"}
    tool_input = json.loads("".join(d["partial_json"] for d in deltas))
    assert tool_input == {"file_path": "/work/repo/NOTES.md", "content": "hello\n"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert events[-2][1]["usage"] == {"output_tokens": 30}

    # The tool's result in the conversation moves the script on; not streamed, a Message.
    body["stream"] = False
    body["messages"] += [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": tool_input}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ]
    final = httpx.post(model.url + "/v1/messages", json=body).json()
    assert final["type"] == "message"
    assert final["stop_reason"] == "end_turn"
    assert final["content"] == [{"type": "text", "text": "Wrote NOTES.md."}]
    assert final["usage"]["input_tokens"] == 200
    assert final["usage"]["output_tokens"] == 40

    # A request without tools (a title, a summary) gets the aside; every request is recorded.
    aside = httpx.post(model.url + "/v1/messages", json={"model": "m", "messages": []}).json()
    assert aside["content"][0]["text"] == model.script.aside
    assert [(g.kind, g.tool, g.streamed) for g in model.given] == [
        ("tool", "Write", True),
        ("final", None, False),
        ("aside", None, False),
    ]
    assert [r.path for r in model.received] == [
        "/v1/messages?beta=true",
        "/v1/messages",
        "/v1/messages",
    ]
    assert model.received[0].body["tools"][1]["name"] == "Write"


def test_chat_completions_stream_tool_calls_and_the_usage_chunk(model: ModelStandin) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "write",
                "parameters": {"properties": {"filePath": {}, "content": {}}},
            },
        }
    ]
    body: dict[str, Any] = {
        "model": "gpt-4.1",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": tools,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}],
    }
    with httpx.stream("POST", model.url + "/v1/chat/completions", json=body) as response:
        events = sse(response)
    assert events[-1] == (None, "[DONE]")
    chunks = [d for _, d in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    calls = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert calls[0]["id"].startswith("call_")
    assert calls[0]["function"]["name"] == "write"
    arguments = json.loads("".join(c["function"]["arguments"] for c in calls))
    assert arguments == {"filePath": "/work/repo/NOTES.md", "content": "hello\n"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["prompt_tokens"] == 120
    assert chunks[-1]["usage"]["completion_tokens"] == 30

    body.update(stream=False)
    body["messages"].append({"role": "tool", "tool_call_id": calls[0]["id"], "content": "ok"})
    final = httpx.post(model.url + "/v1/chat/completions", json=body).json()
    assert final["object"] == "chat.completion"
    assert final["choices"][0]["message"]["content"] == "Wrote NOTES.md."
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["usage"]["total_tokens"] == 240
    assert httpx.get(model.url + "/v1/models").json()["object"] == "list"


def test_responses_stream_codex_s_custom_apply_patch_and_complete_with_usage(
    model: ModelStandin,
) -> None:
    body: dict[str, Any] = {
        "model": "gpt-5",
        "stream": True,
        "tools": [{"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}],
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<cwd>/work/repo</cwd>"}],
            }
        ],
    }
    with httpx.stream("POST", model.url + "/v1/responses", json=body) as response:
        events = sse(response)
    kinds = [d["type"] for _, d in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed"
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    patch = "".join(
        d["delta"] for _, d in events if d["type"] == "response.custom_tool_call_input.delta"
    )
    assert patch == "*** Begin Patch\n*** Add File: NOTES.md\n+hello\n*** End Patch\n"
    done = events[-1][1]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["type"] == "custom_tool_call"
    assert done["output"][0]["input"] == patch
    assert done["usage"]["input_tokens"] == 120
    assert done["usage"]["output_tokens"] == 30
    assert done["usage"]["input_tokens_details"]["cached_tokens"] == 7

    body.update(stream=False)
    body["input"].append({"type": "custom_tool_call_output", "call_id": "call_x", "output": "ok"})
    final = httpx.post(model.url + "/v1/responses", json=body).json()
    assert final["object"] == "response"
    assert final["output"][0]["type"] == "message"
    assert final["output"][0]["content"][0]["text"] == "Wrote NOTES.md."


def test_errors_come_in_each_vendor_s_shape_for_as_many_requests_as_asked(
    model: ModelStandin,
) -> None:
    model.fail(529, times=1)
    overloaded = httpx.post(
        model.url + "/v1/messages", json={"messages": [], "tools": CLAUDE_TOOLS}
    )
    assert overloaded.status_code == 529
    assert overloaded.json() == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert httpx.post(model.url + "/v1/messages", json={"messages": []}).status_code == 200
    model.fail(401)
    for _ in range(2):
        refused = httpx.post(model.url + "/v1/chat/completions", json={"messages": []})
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "invalid_api_key"
    assert [(g.kind, g.status) for g in model.given] == [
        ("error", 529),
        ("aside", 200),
        ("error", 401),
        ("error", 401),
    ]


def test_a_fail_step_answers_its_error_once_the_conversation_reaches_it() -> None:
    script = Script([Write("a.txt", "a"), Fail(529)])
    with ModelStandin(script) as model:
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": "go"}],
            "tools": CLAUDE_TOOLS,
        }
        assert httpx.post(model.url + "/v1/messages", json=body).status_code == 200
        body["messages"].append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
            }
        )
        assert httpx.post(model.url + "/v1/messages", json=body).status_code == 529
        aside = httpx.post(model.url + "/v1/messages", json={"messages": body["messages"]})
        assert aside.status_code == 200, "a side request is not the conversation"


def test_gemini_streams_a_function_call_and_answers_a_json_aside_by_its_schema(
    model: ModelStandin,
) -> None:
    body: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
        "tools": [{"functionDeclarations": [
            {"name": "write_file", "parametersJsonSchema": {"properties": {"file_path": {}, "content": {}}}}
        ]}],
    }  # fmt: skip
    url = model.url + "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    with httpx.stream("POST", url, json=body) as response:
        events = sse(response)
    (_, last), *_ = reversed(events)
    part = last["candidates"][0]["content"]["parts"][-1]
    assert part == {
        "functionCall": {
            "name": "write_file",
            "args": {"file_path": "NOTES.md", "content": "hello\n"},
        }
    }
    assert last["usageMetadata"]["promptTokenCount"] == 120
    schema = {
        "type": "OBJECT",
        "properties": {"score": {"type": "INTEGER"}, "why": {"type": "STRING"}},
    }
    aside = httpx.post(
        model.url + "/v1beta/models/flash:generateContent",
        json={
            "contents": [],
            "generationConfig": {
                "responseMimeType": "application/json",
                "responseJsonSchema": schema,
            },
        },
    ).json()
    assert json.loads(aside["candidates"][0]["content"]["parts"][0]["text"]) == {
        "score": 1,
        "why": "",
    }
    model.fail(401, times=1)
    refused = httpx.post(model.url + "/v1beta/models/flash:generateContent", json=body)
    assert refused.json()["error"]["status"] == "UNAUTHENTICATED"
