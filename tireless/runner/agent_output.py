"""What a known agent CLI says on its structured output, read line by line while it runs: each
tool call becomes a progress step, and at its end the final message (the report), the usage it
reports, the turns it spent and its own error (a model request refused, an API error, turns run
out), from which the attempt's note is made.

The formats, as each CLI writes them: Claude Code's `--output-format stream-json --verbose` (one
JSON object a line: `assistant` messages with `tool_use` blocks, with `--include-hook-events` a
`hook_response` for each hook that ran, whose `::checkpoint::` asks for a checkpoint, and a last
`result` with `result`, `usage`, `num_turns`, `is_error`, `subtype`, `api_error_status`); `codex exec --json`
(`item.started`/`item.completed` items `command_execution`, `file_change`, `agent_message`,
`error`; `turn.completed` with `usage`; `turn.failed` and `error`); OpenCode's `run --format json`
(`tool_use` parts, `text` parts, `step_finish` with `tokens`, `error`); Gemini CLI's
`--output-format stream-json` (`tool_use`, `message`, `result` with `stats`, `error`); aider
writes plain text: its errors read from its lines, its report from its chat history
(tireless.runner.agents)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

STEP_LIMIT = 200
CHECKPOINT = "::checkpoint::"
"""What `line` answers for an event that asks for a checkpoint (a Claude Code hook's output)."""


@dataclass
class Usage:
    """The tokens the CLI says it spent (summed over its turns where it reports each turn)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __str__(self) -> str:
        return (
            f"{self.input_tokens} input, {self.output_tokens} output, {self.cache_read_tokens}"
            f" cache-read, {self.cache_write_tokens} cache-write tokens"
        )


@dataclass
class Reader:
    """Fed the CLI's output a line at a time (`line`, which answers the progress step that line
    names, if any)."""

    profile: str
    report: str | None = None
    usage: Usage | None = None
    turns: int | None = None
    error: str | None = None
    """The CLI's own error (an API error, a refused request, turns run out), in a line."""
    tools: list[str] = field(default_factory=list)
    finished: bool = False
    """Whether the CLI said its run ended (a result, a completed turn)."""

    def line(self, raw: bytes) -> str | None:
        text = raw.strip()
        if not text.startswith(b"{"):
            return None
        try:
            event = json.loads(text)
        except ValueError:
            return None
        if not isinstance(event, dict):
            return None
        step = self.event(event)
        if step == CHECKPOINT:
            return step
        if step is not None:
            self.tools.append(step)
            return step[:STEP_LIMIT]
        return None

    def event(self, event: dict[str, Any]) -> str | None:
        """One JSON event: the step it names (a tool call), else None."""
        return None

    def note(self, code: int) -> str | None:
        """The attempt's note when the CLI failed (its exit status, its own error), else None."""
        if self.error is not None:
            status = f"exit {code}" if code else "exit 0"
            return f"{self.profile}: {self.error} ({status}{self._spent()})"
        if code != 0:
            return f"{self.profile} exited with {code}{self._spent()}"
        return None

    def _spent(self) -> str:
        return f", {self.turns} turn(s)" if self.turns is not None else ""

    def summary(self) -> str:
        """One line: what it did and spent (the last progress step, the log)."""
        parts = [f"{self.profile}: {len(self.tools)} tool call(s)"]
        if self.turns is not None:
            parts.append(f"{self.turns} turn(s)")
        if self.usage is not None:
            parts.append(str(self.usage))
        return ", ".join(parts)


def tool_step(name: str, arguments: Any) -> str:
    """A tool call as a step: its name and the argument that says most (a path, a command)."""
    if isinstance(arguments, dict):
        for key in ("file_path", "filePath", "path", "command", "cmd", "pattern", "url", "query"):
            value = arguments.get(key)
            if isinstance(value, list):
                value = " ".join(map(str, value))
            if isinstance(value, str) and value:
                return f"{name} {value.splitlines()[0] if value.strip() else value}"
    return name


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class ClaudeCode(Reader):
    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "hook_response":
            printed = str(event.get("stdout") or "").splitlines()
            return CHECKPOINT if CHECKPOINT in (line.strip() for line in printed) else None
        if kind == "assistant":
            content = _dict(event.get("message")).get("content") or []
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    return tool_step(str(block.get("name")), block.get("input"))
        elif kind == "result":
            self.finished = True
            self.report = event.get("result") if isinstance(event.get("result"), str) else None
            self.turns = event.get("num_turns") if isinstance(event.get("num_turns"), int) else None
            usage = _dict(event.get("usage"))
            self.usage = Usage(
                _int(usage.get("input_tokens")),
                _int(usage.get("output_tokens")),
                _int(usage.get("cache_read_input_tokens")),
                _int(usage.get("cache_creation_input_tokens")),
            )
            if event.get("is_error") or event.get("subtype") != "success":
                status = event.get("api_error_status")
                said = (self.report or str(event.get("subtype") or "error")).strip()
                self.error = (
                    f"the model's API answered {status}: {said}" if status else said.splitlines()[0]
                )
                self.report = None
        return None


class Codex(Reader):
    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        item = _dict(event.get("item"))
        if kind == "item.started" and item.get("type") == "command_execution":
            return tool_step("shell", {"command": item.get("command")})
        if kind == "item.completed":
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                self.report = item["text"]
            elif item.get("type") == "file_change":
                paths = [c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)]
                return tool_step("apply_patch", {"path": " ".join(map(str, paths))})
        elif kind == "turn.completed":
            self.finished = True
            usage = _dict(event.get("usage"))
            self.turns = (self.turns or 0) + 1
            self.usage = Usage(
                _int(usage.get("input_tokens")),
                _int(usage.get("output_tokens")),
                _int(usage.get("cached_input_tokens")),
                _int(usage.get("cache_write_input_tokens")),
            )
        elif kind == "turn.failed":
            self.error = str(_dict(event.get("error")).get("message") or event.get("error"))
        elif kind == "error" and self.error is None:
            self.error = str(event.get("message"))
        return None


class OpenCode(Reader):
    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        part = _dict(event.get("part"))
        if kind == "tool_use":
            state = _dict(part.get("state"))
            return tool_step(str(part.get("tool")), state.get("input"))
        if kind == "text" and isinstance(part.get("text"), str):
            self.report = part["text"]
        elif kind == "step_finish":
            tokens = _dict(part.get("tokens"))
            cache = _dict(tokens.get("cache"))
            usage = self.usage or Usage()
            usage.input_tokens += _int(tokens.get("input"))
            usage.output_tokens += _int(tokens.get("output"))
            usage.cache_read_tokens += _int(cache.get("read"))
            usage.cache_write_tokens += _int(cache.get("write"))
            self.usage = usage
            self.turns = (self.turns or 0) + 1
            self.finished = part.get("reason") == "stop"
        elif kind == "error":
            error = _dict(event.get("error"))
            data = _dict(error.get("data"))
            status = data.get("statusCode")
            message = data.get("message") or error.get("name") or "error"
            self.error = f"the model's API answered {status}: {message}" if status else str(message)
        return None


class Gemini(Reader):
    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if kind == "tool_use":
            return tool_step(str(event.get("tool_name")), event.get("parameters"))
        if kind == "message" and event.get("role") == "assistant":
            self.report = (self.report or "") + str(event.get("content") or "")
        elif kind == "result":
            self.finished = True
            stats = _dict(event.get("stats"))
            self.usage = Usage(_int(stats.get("input_tokens")), _int(stats.get("output_tokens")))
            if event.get("status") == "error":
                self.error = str(_dict(event.get("error")).get("message") or "error")
        elif kind == "error":
            self.error = str(event.get("message"))
        return None


LITELLM_STATUSES = {
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "RateLimitError": 429,
    "InternalServerError": 500,
    "ServiceUnavailableError": 503,
}
"""The HTTP status each of litellm's exceptions (aider's client) stands for (litellm/exceptions.py)."""


class Aider(Reader):
    """aider writes plain text: no step; the report is read from its chat history afterwards,
    its model errors (litellm's exceptions, which it prints and then exits 0) from its lines."""

    def line(self, raw: bytes) -> str | None:
        text = raw.decode(errors="replace").strip()
        if match := re.search(r"litellm\.(\w+Error)\b.*", text):
            status = LITELLM_STATUSES.get(match.group(1))
            answered = f"answered {status}" if status else "failed"
            self.error = self.error or f"the model's API {answered}: {match.group(0)[:300]}"
        elif text.startswith("Tokens: ") and "sent" in text:
            self.turns = (self.turns or 0) + 1
        return None


READERS: dict[str, type[Reader]] = {
    "claude-code": ClaudeCode,
    "codex": Codex,
    "opencode": OpenCode,
    "gemini": Gemini,
    "aider": Aider,
}
