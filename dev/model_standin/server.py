"""The scripted model's HTTP server (ModelStandin): the routes of the three APIs, the faults a
test switches on, and the record of every request received and every answer given."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from dev.model_standin import anthropic, gemini, openai
from dev.model_standin.script import (
    Api,
    Call,
    Fail,
    Final,
    Script,
    Tool,
    Usage,
    aider_edit,
    call_for,
    declared_tools,
    working_directory,
)


@dataclass(frozen=True)
class Received:
    """One request as it arrived: its method, path (query included), headers, JSON body (None
    when it had none or it was not JSON), the API it spoke, and when (time.monotonic())."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    api: Api | None
    at: float


@dataclass(frozen=True)
class Given:
    """One answer: the API, what it was (`tool`, `final`, `aside`, `error`), the tool called,
    the HTTP status, the usage it reported (None for an error), whether it streamed, and when
    it was answered (time.monotonic(), recorded just before the answer is written, so a client
    that has read the answer finds it recorded)."""

    api: Api
    kind: str
    tool: str | None
    status: int
    usage: Usage | None
    streamed: bool
    at: float


def texts(value: Any) -> Iterator[str]:
    """Every string in a JSON value, depth first (the text a request's prompt is made of)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


class ModelStandin:
    """A scripted model on 127.0.0.1: `url` is the base URL (Anthropic clients add /v1/messages,
    OpenAI clients are given `url + "/v1"`). Set `script` before or between runs; `fail(status,
    times)` answers the next requests with an error in the API's own shape."""

    def __init__(self, script: Script | None = None, *, port: int = 0) -> None:
        self.script = script or Script()
        self.received: list[Received] = []
        self.given: list[Given] = []
        self._faults: list[tuple[int, int | None]] = []
        self._changed = threading.Condition()
        self._count = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ModelStandin:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ModelStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # What tests set and read

    def fail(self, status: int, times: int | None = None) -> None:
        """Answer the next `times` model requests (every one when None) with `status`."""
        with self._changed:
            self._faults = [(status, times)]

    def heal(self) -> None:
        with self._changed:
            self._faults = []

    def model_requests(self) -> list[Received]:
        """The requests to a model endpoint (messages, chat completions, responses)."""
        with self._changed:
            return [r for r in self.received if r.api is not None]

    def wait(self, predicate: Callable[[ModelStandin], bool], timeout: float = 30.0) -> bool:
        """Wait until `predicate(self)` holds (checked at each request and answer)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    # Serving

    def _record(self, item: Received | Given) -> None:
        with self._changed:
            (self.received if isinstance(item, Received) else self.given).append(item)  # type: ignore[arg-type]
            self._changed.notify_all()

    def _fault(self) -> int | None:
        with self._changed:
            if not self._faults:
                return None
            status, times = self._faults[0]
            if times is not None:
                self._faults = [(status, times - 1)] if times > 1 else []
            return status

    def _ident(self) -> tuple[int, str]:
        with self._changed:
            number = self._count
            self._count += 1
        return number, f"standin{number:04d}"

    def scripted_failure(self, api: Api, body: dict[str, Any]) -> int | None:
        """The status of a Fail step the conversation has reached, if it has (a request with
        tools only: a side request is not the conversation)."""
        if not _tools(api, body):
            # aider edits in text, the whole script in one answer: a Fail step fails it.
            if "SEARCH/REPLACE" in "\n".join(texts(body)):
                failing = [s for s in self.script.steps if isinstance(s, Fail)]
                return failing[0].status if failing else None
            return None
        done = _tool_results(api, body)
        step = self.script.steps[done] if done < len(self.script.steps) else None
        return step.status if isinstance(step, Fail) else None

    def answer(self, api: Api, body: dict[str, Any]) -> tuple[str | None, Call | None, str]:
        """What to say to `body`: the text, the tool call, and the kind of answer."""
        tools = _tools(api, body)
        text = "\n".join(texts({k: v for k, v in body.items() if k != "tools"}))
        cwd = working_directory(text)
        step = self.script.step(_tool_results(api, body))
        if not tools:
            if "SEARCH/REPLACE" in text:
                final = self.script.step(len(self.script.steps))
                edits = "".join(aider_edit(s, cwd, text) for s in self.script.steps)
                assert isinstance(final, Final)
                return edits + "\n" + final.text, None, "final"
            aside = gemini.json_aside(body) if api == "gemini" else None
            return aside or self.script.aside, None, "aside"
        call = call_for(step, tools, cwd, text)
        if call is None:
            assert isinstance(step, Final)
            return step.text, None, "final"
        return None, call, "tool"


def _tools(api: Api, body: dict[str, Any]) -> list[Tool]:
    return gemini.declared(body) if api == "gemini" else declared_tools(api, body)


def _tool_results(api: Api, body: dict[str, Any]) -> int:
    if api == "gemini":
        return gemini.tool_results(body)
    if api == "anthropic":
        return anthropic.tool_results(body)
    if api == "chat":
        return openai.chat_tool_results(body)
    return openai.responses_tool_results(body)


def _api_of(method: str, path: str) -> Api | None:
    if method != "POST":
        return None
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    return None


def _handler(standin: ModelStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.serve("GET")

        def do_POST(self) -> None:
            self.serve("POST")

        def do_HEAD(self) -> None:
            self.serve("HEAD")

        def serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            path = urlsplit(self.path).path.rstrip("/")
            api = _api_of(method, path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            standin._record(Received(method, self.path, headers, body, api, time.monotonic()))
            if path.endswith("/models") and method == "GET":
                return self.json(200, openai.models(standin.script.models))
            if path.endswith("/count_tokens") and method == "POST":
                return self.json(200, anthropic.count_tokens(standin.script.usage))
            if path.endswith(":countTokens") and method == "POST":
                return self.json(200, {"totalTokens": standin.script.usage.input_tokens})
            if api is None or not isinstance(body, dict):
                return self.json(404, {"error": {"message": f"no route {method} {path}"}})
            if status := standin._fault() or standin.scripted_failure(api, body):
                shape = (
                    anthropic.error(status) if api == "anthropic"
                    else gemini.error(status) if api == "gemini"
                    else openai.error(status)
                )  # fmt: skip
                standin._record(Given(api, "error", None, status, None, False, time.monotonic()))
                return self.json(status, shape)
            self.model(api, body, path)

        def model(self, api: Api, body: dict[str, Any], path: str) -> None:
            number, ident = standin._ident()
            usage = standin.script.usage_of(number)
            name = str(body.get("model") or "standin")
            if api == "gemini":  # /v1beta/models/{model}:streamGenerateContent
                name = path.rsplit("/", 1)[-1].split(":")[0]
            try:
                text, call, kind = standin.answer(api, body)
            except LookupError as e:
                self.json(400, {"error": {"type": "invalid_request_error", "message": str(e)}})
                return
            streamed = bool(body.get("stream")) or path.endswith(":streamGenerateContent")
            tool = call.name if call else None
            answer: Iterator[bytes] | None = None
            if api == "anthropic":
                if streamed:
                    answer = anthropic.stream(name, ident, text, call, usage)
                else:
                    whole = anthropic.message(name, ident, text, call, usage)
            elif api == "gemini":
                if streamed:
                    answer = gemini.stream(name, ident, text, call, usage)
                else:
                    whole = gemini.response(name, ident, text, call, usage)
            elif api == "chat":
                if streamed:
                    include = bool((body.get("stream_options") or {}).get("include_usage"))
                    answer = openai.chunks(name, ident, text, call, usage, include)
                else:
                    whole = openai.completion(name, ident, text, call, usage)
            elif streamed:
                answer = openai.events(name, ident, text, call, usage)
            else:
                whole = openai.response(name, ident, text, call, usage)
            events = list(answer) if answer is not None else None
            standin._record(Given(api, kind, tool, 200, usage, streamed, time.monotonic()))
            if events is not None:
                self.sse(events)
            else:
                self.json(200, whole)

        def json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", "req_standin")
            self.end_headers()
            self.wfile.write(data)

        def sse(self, events: list[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in events:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler
