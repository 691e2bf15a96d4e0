"""A scripted model for the tests, the demo and the bench: a real HTTP server on 127.0.0.1 that
speaks the Anthropic Messages API (POST /v1/messages, streaming or not; count_tokens) and
OpenAI's Chat Completions (POST /v1/chat/completions) and Responses (POST /v1/responses), with
GET /v1/models, and Google's Gemini API (POST /v1beta/models/M:generateContent and
:streamGenerateContent, for Gemini CLI), as their documentation describes them (the citations are
in anthropic.py, openai.py and gemini.py).

A test gives it a script: the steps the model takes with the CLI's own tools, picked by name and
schema from the tools the CLI declares (script.py), then a final message; the usage each answer
reports; faults (`fail(529)`, `fail(401, times=1)`, or a `Fail(401)` step the conversation
reaches) answered in each vendor's shape. It records
every request it received (`received`) and every answer it gave (`given`).

    script = Script([Write("NOTES.md", "hello\\n"), Final("Wrote NOTES.md.")], usage=Usage(120, 30))
    with ModelStandin(script) as model:
        env = {"ANTHROPIC_BASE_URL": model.url, "OPENAI_BASE_URL": model.url + "/v1"}
        ...
        assert [g.kind for g in model.given if g.kind != "aside"] == ["tool", "final"]

`python -m dev.model_standin --port 8090 --script script.json` serves a script from a JSON file
(`{"steps": [{"write": {"path": "F", "content": "C"}}, {"final": "M"}], "usage": {...}}`).
"""

from __future__ import annotations

from dev.model_standin.script import Edit, Fail, Final, Read, Script, Shell, Step, Usage, Write
from dev.model_standin.server import Given, ModelStandin, Received

__all__ = [
    "Edit",
    "Fail",
    "Final",
    "Given",
    "ModelStandin",
    "Read",
    "Received",
    "Script",
    "Shell",
    "Step",
    "Usage",
    "Write",
]
