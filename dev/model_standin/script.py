"""What the scripted model says: a Script's steps (write or edit a file with the CLI's own tool,
read one, run a shell command, answer a final message), the usage each answer reports, and the
choice of the CLI's tool from the tools its request declares.

A step is picked by the conversation, not by a counter: a request carrying n tool results gets
step n (the last step, the final message, once the steps run out). Retries, side requests (a
title, a summary, a quota probe) and parallel sessions therefore never shift the script. A
request that declares no tools gets the aside text (a CLI's title or summary request), except
aider's, which edits in text (SEARCH/REPLACE blocks) and gets its edit and final message at once.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["anthropic", "chat", "responses", "gemini"]


@dataclass(frozen=True)
class Usage:
    """The tokens one answer reports (Anthropic's names; OpenAI's prompt/completion tokens are
    input/output, its cached tokens cache_read)."""

    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class Write:
    """Write `content` to `path` with the CLI's write tool (or its patch or shell tool). A
    relative path is taken from the working directory the CLI names in its request; `find`, a
    regular expression whose first group is the path, takes it from the request's text instead
    (the plan file the prompt names, say)."""

    path: str = ""
    content: str = ""
    find: str | None = None


@dataclass(frozen=True)
class Edit:
    """Replace `old` by `new` in `path` with the CLI's edit tool."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Read:
    """Read `path` with the CLI's read tool (Claude Code edits only a file it has read)."""

    path: str


@dataclass(frozen=True)
class Shell:
    """Run `command` with the CLI's shell tool."""

    command: str


@dataclass(frozen=True)
class Final:
    """Answer the final message `text` (no tool call): the CLI's turn ends."""

    text: str


@dataclass(frozen=True)
class Fail:
    """Answer this turn with an HTTP error `status` in the API's own shape (401, 529, ...)."""

    status: int


Step = Write | Edit | Read | Shell | Final | Fail


@dataclass
class Script:
    """The steps, in order, the usage each answer reports (`usage`, or `usages[i]` for the i-th
    answer the stand-in gives, side requests included), the aside text, and the model names
    `/v1/models` lists."""

    steps: list[Step] = field(default_factory=lambda: [Final("Done.")])
    usage: Usage = field(default_factory=Usage)
    usages: list[Usage] = field(default_factory=list)
    aside: str = "Scripted work"
    models: list[str] = field(
        default_factory=lambda: ["claude-sonnet-4-5", "gpt-5", "gpt-4.1", "standin"]
    )

    def usage_of(self, answer: int) -> Usage:
        return self.usages[answer] if answer < len(self.usages) else self.usage

    def step(self, tool_results: int) -> Step:
        if tool_results < len(self.steps):
            return self.steps[tool_results]
        last = self.steps[-1] if self.steps else Final("Done.")
        return last if isinstance(last, Final) else Final("Done.")


@dataclass(frozen=True)
class Tool:
    """A tool as the request declares it: its name, its kind (`function`, or Responses' `custom`
    freeform tools such as Codex's apply_patch) and its parameters' property names."""

    name: str
    kind: str
    properties: frozenset[str]


@dataclass(frozen=True)
class Call:
    """A tool call to answer with: the tool's name, its kind, and its input (a JSON object, or a
    custom tool's text)."""

    name: str
    kind: str
    arguments: dict[str, Any] | str

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


def declared_tools(api: Api, body: dict[str, Any]) -> list[Tool]:
    """The tools a request declares. Anthropic: `tools[].name` and `input_schema`; Chat
    Completions: `tools[].function.name` and `parameters`; Responses: `tools[]` flat, `name` and
    `parameters`, or `type: "custom"` with a grammar. (Gemini's: dev.model_standin.gemini.)"""
    tools = []
    for raw in body.get("tools") or []:
        if not isinstance(raw, dict):
            continue
        if api == "anthropic":
            name, kind, schema = raw.get("name"), "function", raw.get("input_schema")
        elif api == "chat":
            function = raw.get("function") or {}
            name, kind, schema = function.get("name"), "function", function.get("parameters")
        else:
            name, kind, schema = raw.get("name"), raw.get("type", "function"), raw.get("parameters")
        if not isinstance(name, str):
            continue
        props = (schema or {}).get("properties") or {} if isinstance(schema, dict) else {}
        tools.append(Tool(name, "custom" if kind == "custom" else "function", frozenset(props)))
    return tools


PATH_KEYS = ("file_path", "filePath", "path", "filename", "absolute_path")
CONTENT_KEYS = ("content", "contents", "text", "file_text")
OLD_KEYS = ("old_string", "oldString", "old_str", "search")
NEW_KEYS = ("new_string", "newString", "new_str", "replace")
COMMAND_KEYS = ("command", "cmd")


def _key(tool: Tool, keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in tool.properties), None)


def _named(tools: list[Tool], words: tuple[str, ...]) -> list[Tool]:
    return [t for t in tools if any(w in t.name.lower() for w in words)]


def call_for(step: Step, tools: list[Tool], cwd: str | None, text: str) -> Call | None:
    """The call that carries out `step` with the CLI's own tools, or None for a final message.
    A write goes to a tool named write/create with a path and a content parameter (Claude Code's
    Write, OpenCode's write, Gemini's write_file), else to apply_patch (Codex), else to a shell
    tool; an edit to a tool with old/new string parameters."""
    if isinstance(step, Final | Fail):
        return None
    if isinstance(step, Write):
        path = _resolve(_path_of(step, text), cwd)
        for tool in _named(tools, ("write", "create")):
            pk, ck = _key(tool, PATH_KEYS), _key(tool, CONTENT_KEYS)
            if pk and ck:
                return Call(tool.name, tool.kind, {pk: path, ck: step.content})
        patch = _patch(path, cwd, step.content)
        if patched := _apply_patch(tools, patch):
            return patched
        return _shell(tools, _heredoc(path, step.content))
    if isinstance(step, Edit):
        path = _resolve(step.path, cwd)
        for tool in tools:
            pk, ok, nk = _key(tool, PATH_KEYS), _key(tool, OLD_KEYS), _key(tool, NEW_KEYS)
            if pk and ok and nk:
                return Call(tool.name, tool.kind, {pk: path, ok: step.old, nk: step.new})
        raise LookupError(f"no edit tool among {[t.name for t in tools]}")
    if isinstance(step, Read):
        path = _resolve(step.path, cwd)
        for tool in _named(tools, ("read", "view")):
            if pk := _key(tool, PATH_KEYS):
                return Call(tool.name, tool.kind, {pk: path})
        return _shell(tools, f"cat {path}")
    return _shell(tools, step.command)


def _path_of(step: Write, text: str) -> str:
    if step.find is None:
        return step.path
    match = re.search(step.find, text)
    if match is None:
        raise LookupError(f"no match for {step.find!r} in the request")
    return match.group(1)


def _resolve(path: str, cwd: str | None) -> str:
    return path if posixpath.isabs(path) or cwd is None else posixpath.join(cwd, path)


def _apply_patch(tools: list[Tool], patch: str) -> Call | None:
    for tool in tools:
        if tool.name == "apply_patch":
            if tool.kind == "custom":
                return Call(tool.name, "custom", patch)
            key = next(iter(sorted(tool.properties)), "input")
            return Call(tool.name, "function", {key: patch})
    return None


def _patch(path: str, cwd: str | None, content: str) -> str:
    # Codex's apply_patch format (codex-rs/apply-patch/apply_patch_tool_instructions.md): paths
    # relative to the working directory, each added line prefixed with "+".
    relative = posixpath.relpath(path, cwd) if cwd and posixpath.isabs(path) else path
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {relative}\n{lines}*** End Patch\n"


def _heredoc(path: str, content: str) -> str:
    body = content if content.endswith("\n") else content + "\n"
    return f"mkdir -p \"$(dirname '{path}')\" && cat > '{path}' <<'STANDIN_EOF'\n{body}STANDIN_EOF"


def _shell(tools: list[Tool], command: str) -> Call:
    for tool in _named(tools, ("shell", "bash", "exec", "run")) or tools:
        if key := _key(tool, COMMAND_KEYS):
            # Codex's shell tool takes argv (`command: [..]`); others a string.
            value: Any = ["bash", "-lc", command] if tool.name == "shell" else command
            return Call(tool.name, tool.kind, {key: value})
    raise LookupError(f"no shell tool among {[t.name for t in tools]}")


CWD_PATTERNS = (
    r"<cwd>\s*([^<\s]+)\s*</cwd>",  # Codex's environment_context
    r"Working directory:\s*(/\S+)",  # Claude Code, OpenCode
    r"working in the directory:?\s*`?(/[^\s`]+)",  # Gemini CLI
    r"[Cc]urrent working directory[^/\n]*?(/[^\s'\"`]+)",
)


def working_directory(text: str) -> str | None:
    """The working directory a CLI names in its request's text, if it names one."""
    for pattern in CWD_PATTERNS:
        if match := re.search(pattern, text):
            return match.group(1).rstrip(".,;:")
    return None


def aider_edit(step: Step, cwd: str | None, text: str) -> str:
    """A step as aider's text edit: a SEARCH/REPLACE block with an empty SEARCH creates a file
    (aider/coders/editblock_prompts.py); paths relative to the repository."""
    if isinstance(step, Write):
        path = _path_of(step, text)
        if cwd and posixpath.isabs(path):
            path = posixpath.relpath(path, cwd)
        body = step.content if step.content.endswith("\n") else step.content + "\n"
        return f"{path}\n```\n<<<<<<< SEARCH\n=======\n{body}>>>>>>> REPLACE\n```\n"
    if isinstance(step, Edit):
        return (
            f"{step.path}\n```\n<<<<<<< SEARCH\n{step.old}\n=======\n{step.new}\n"
            ">>>>>>> REPLACE\n```\n"
        )
    if isinstance(step, Shell):  # aider offers to run the shell commands an answer suggests
        return f"```bash\n{step.command}\n```\n"
    return ""


def script_from_json(data: dict[str, Any]) -> Script:
    """A Script from its JSON form: `{"steps": [{"write": {"path", "content"}}, {"edit": {...}},
    {"read": {"path"}}, {"shell": {"command"}}, {"fail": {"status"}}, {"final": "text"}], "usage": {...}, "aside": ...}`."""
    kinds: dict[str, Any] = {
        "write": Write, "edit": Edit, "read": Read, "shell": Shell, "fail": Fail,
    }  # fmt: skip
    steps: list[Step] = []
    for raw in data.get("steps", []):
        ((kind, value),) = raw.items()
        steps.append(Final(value) if kind == "final" else kinds[kind](**value))
    script = Script(steps=steps or [Final("Done.")], usage=Usage(**data.get("usage", {})))
    if "aside" in data:
        script.aside = data["aside"]
    return script
