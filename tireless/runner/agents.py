"""The coding-agent CLIs tireless knows (`tireless work --agent PROFILE`), as data: each one's
program, its non-interactive flags (no permission asked: the sandbox is the boundary), how it
gets the prompt (stdin or a file, never argv), the home and config directory of the attempt's
own it is given, how it reaches the lane's upstream gateway (a base URL and a placeholder key,
in its variables or its config file), its telemetry, update and error-reporting switches, and
the reader of its structured output (tireless.runner.agent_output). docs/agents.md says what each
sets and how to add one.

`AgentRun` is one attempt's use of a profile: it makes the fresh home (inside the job's own
directory, removed with it), writes the prompt (tireless.runner.prompt) and the CLI's config
files there, and gives the command line, the environment and the stdin."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import Template

from tireless.models import Job
from tireless.runner.agent_output import READERS, Reader
from tireless.runner.brief import AgentFiles
from tireless.runner.gateway import variable
from tireless.runner.prompt import prompt

COMMAND = "command"
"""The profile of a worker given COMMAND itself: today's contract, the default."""

PLACEHOLDER_KEY = "set-by-the-gateway"
"""The key a CLI is given: it must send one, and the gateway replaces it with the real one."""


@dataclass(frozen=True)
class Via:
    """How a CLI reaches one kind of upstream: the variables and config files (relative to its
    home) it is given, templates of $url (the gateway's base URL), $key and $home."""

    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    """A known CLI: its program, where it comes from, its arguments (`args`, then the
    operator's extra arguments, then `tail`), whether the prompt goes on stdin (else its file is
    in the arguments as $prompt_file), its variables and config files (templates of $home,
    $prompt_file), and, by upstream name in order of preference, how it reaches each (`vias`)."""

    name: str
    program: str
    package: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    vias: Mapping[str, Via]
    tail: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    stdin_prompt: bool = True
    report_from: str | None = None
    """A file of its home holding its conversation, the report read from it (aider)."""

    def upstream(self, env: Mapping[str, str]) -> tuple[str, str] | None:
        """The upstream it takes among those the job's network offers (name, URL), if any."""
        for name in self.vias:
            if url := env.get(variable(name)):
                return name, url
        return None

    def needs(self) -> str:
        names = " or ".join(f"--upstream {n}=URL" for n in self.vias)
        return f"{names}, and a lane allowlist (tireless lane allow-net LANE --none at least)"


HOME_ENV = {
    "HOME": "$home",
    "XDG_CONFIG_HOME": "$home/.config",
    "XDG_DATA_HOME": "$home/.local/share",
    "XDG_STATE_HOME": "$home/.local/state",
    "XDG_CACHE_HOME": "$home/.cache",
}
"""Every profile's home: the attempt's own, writable in the sandbox, fresh each attempt."""

CLAUDE_SETTINGS = """{
  "hooks": {"PostToolUse": [{"matcher": "Write|Edit|MultiEdit|NotebookEdit",
                             "hooks": [{"type": "command", "command": "echo ::checkpoint::"}]}]}
}
"""
"""Claude Code's user settings: after each edit a hook says `::checkpoint::`, which its
`--include-hook-events` output carries to the runner (a checkpoint of the work so far)."""

OPENCODE_CONFIG = """{
  "$$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
  "model": "$model",
  "provider": {"$provider": {"options": {"baseURL": "$base", "apiKey": "$key"}}}
}
"""

CODEX_CONFIG = """check_for_update_on_startup = false
model = "gpt-5"
model_provider = "tireless"

[model_providers.tireless]
name = "the lane's upstream, through tireless's gateway"
base_url = "$url"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
"""

GEMINI_SETTINGS = """{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "telemetry": {"enabled": false},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true}
}
"""

PROFILES: dict[str, Profile] = {
    "claude-code": Profile(
        name="claude-code",
        program="claude",
        package="npm @anthropic-ai/claude-code",
        args=(
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
            "--dangerously-skip-permissions",
        ),
        files={".claude/settings.json": CLAUDE_SETTINGS},
        env={
            "CLAUDE_CONFIG_DIR": "$home/.claude",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "IS_SANDBOX": "1",  # bubblewrap is the boundary: skip-permissions as root too
        },
        vias={"anthropic": Via(env={"ANTHROPIC_BASE_URL": "$url", "ANTHROPIC_API_KEY": "$key"})},
    ),
    "codex": Profile(
        name="codex",
        program="codex",
        package="npm @openai/codex",
        args=(
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
        ),
        tail=("-",),  # the prompt from stdin
        env={"CODEX_HOME": "$home/.codex"},
        files={".codex/config.toml": "check_for_update_on_startup = false\n"},
        vias={
            "openai": Via(
                env={"OPENAI_API_KEY": "$key"}, files={".codex/config.toml": CODEX_CONFIG}
            )
        },
    ),
    "opencode": Profile(
        name="opencode",
        program="opencode",
        package="npm opencode-ai",
        args=("run", "--format", "json", "--pure"),
        env={
            "OPENCODE_CONFIG": "$home/.config/opencode/opencode.json",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_SHARE": "1",
        },
        vias={
            "anthropic": Via(
                files={
                    ".config/opencode/opencode.json": Template(OPENCODE_CONFIG).safe_substitute(
                        model="anthropic/claude-sonnet-4-5", provider="anthropic", base="$url/v1"
                    )
                }
            ),
            "openai": Via(
                files={
                    ".config/opencode/opencode.json": Template(OPENCODE_CONFIG).safe_substitute(
                        model="openai/gpt-5", provider="openai", base="$url"
                    )
                }
            ),
        },
    ),
    "gemini": Profile(
        name="gemini",
        program="gemini",
        package="npm @google/gemini-cli",
        args=("--output-format", "stream-json", "--yolo"),
        env={"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_TELEMETRY_ENABLED": "false"},
        files={".gemini/settings.json": GEMINI_SETTINGS},
        vias={"gemini": Via(env={"GOOGLE_GEMINI_BASE_URL": "$url", "GEMINI_API_KEY": "$key"})},
    ),
    "aider": Profile(
        name="aider",
        program="aider",
        package="pypi aider-chat",
        args=(
            "--yes-always",
            "--no-auto-commits",
            "--no-dirty-commits",
            "--no-gitignore",
            "--no-check-update",
            "--analytics-disable",
            "--no-show-release-notes",
            "--no-show-model-warnings",
            "--no-pretty",
            "--no-stream",
            "--no-fancy-input",
            "--no-detect-urls",
            "--map-tokens",
            "0",
            "--edit-format",
            "diff",
            "--input-history-file",
            "$home/aider.input.history",
            "--chat-history-file",
            "$home/aider.chat.history.md",
            "--message-file",
            "$prompt_file",
        ),
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_ANALYTICS": "false"},
        stdin_prompt=False,
        report_from="aider.chat.history.md",
        vias={
            "openai": Via(
                env={
                    "OPENAI_API_BASE": "$url",
                    "OPENAI_API_KEY": "$key",
                    "AIDER_MODEL": "openai/gpt-4.1",
                }
            ),
            "anthropic": Via(
                env={
                    "ANTHROPIC_API_BASE": "$url",
                    "ANTHROPIC_API_KEY": "$key",
                    "AIDER_MODEL": "anthropic/claude-sonnet-4-5",
                }
            ),
        },
    ),
}

CHOICES = (COMMAND, *PROFILES)


def find_program(profile: Profile, given: str | None) -> str | None:
    """The CLI's program: `given` (`--agent-bin`) made absolute, else its name on PATH."""
    if given is not None:
        return os.path.abspath(given)
    return shutil.which(profile.program)


def version_of(program: str) -> str | None:
    """What `PROGRAM --version` says, in a line; None when it does not answer."""
    try:
        done = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=30, check=False,
            env={"PATH": os.environ.get("PATH", os.defpath), "HOME": "/nonexistent"},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


class AgentRun:
    """One attempt's use of a profile. `prepare` makes the home and writes the prompt and the
    config files; `command`, `environment` and `stdin` are what the sandbox starts."""

    def __init__(
        self,
        profile: Profile,
        program: str,
        extra: Sequence[str],
        job: Job,
        files: AgentFiles,
        offered: Mapping[str, str],
    ) -> None:
        self.profile = profile
        self.program = program
        self.extra = tuple(extra)
        self.job = job
        self.files = files
        self.home = files.body_file.parent / "home"
        self.prompt_file = files.body_file.parent / "prompt.md"
        self.upstream = profile.upstream(offered)
        self.reader: Reader = READERS[profile.name](profile.name)
        url = "" if self.upstream is None else self.upstream[1].rstrip("/")
        self._values = {
            "home": str(self.home), "prompt_file": str(self.prompt_file), "url": url,
            "key": PLACEHOLDER_KEY,
        }  # fmt: skip

    def _filled(self, template: str) -> str:
        return Template(template).safe_substitute(self._values)

    def _via(self) -> Via:
        return Via() if self.upstream is None else self.profile.vias[self.upstream[0]]

    def prepare(self, owner: tuple[int, int] | None) -> None:
        """The fresh home with the CLI's config files, and the prompt file; all owned by the
        agent's user (`owner`: uid, gid) when it has one."""
        self.prompt_file.write_text(prompt(self.job, self.files), encoding="utf-8")
        self.home.mkdir()
        for relative, template in {**self.profile.files, **self._via().files}.items():
            path = self.home / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self._filled(template), encoding="utf-8")
        if owner is not None:
            for path in [self.prompt_file, self.home, *self.home.rglob("*")]:
                os.chown(path, *owner, follow_symlinks=False)

    def command(self) -> list[str]:
        args = [self._filled(a) for a in self.profile.args]
        return [self.program, *args, *self.extra, *self.profile.tail]

    def environment(self) -> dict[str, str]:
        """The variables it is given over the job's: its home, its switches, its upstream."""
        env = {**HOME_ENV, **self.profile.env, **self._via().env}
        return {name: self._filled(value) for name, value in env.items()}

    def stdin(self) -> bytes:
        return self.prompt_file.read_bytes() if self.profile.stdin_prompt else b""

    def report(self) -> str | None:
        """Its final message: from its structured output, else from its conversation's file."""
        if self.reader.report is not None and self.reader.report.strip():
            return self.reader.report
        if self.profile.report_from is None:
            return None
        try:
            history = (self.home / self.profile.report_from).read_text(errors="replace")
        except OSError:
            return None
        return last_answer(history)

    def note(self, code: int) -> str | None:
        """The attempt's note when the CLI failed, else None; a missing upstream is said."""
        note = self.reader.note(code)
        if note is not None and self.upstream is None:
            note += f"; the lane offers it no upstream ({self.profile.needs()})"
        return note


def last_answer(history: str) -> str | None:
    """The last answer in aider's chat history (markdown: each user message a `#### ` line, the
    model's answer the lines after it, aider's own lines quoted with `> `)."""
    answer: list[str] = []
    for line in history.splitlines():
        if line.startswith("#### "):
            answer = []
        elif not line.startswith(">") and not line.startswith("# aider chat started"):
            answer.append(line)
    text = "\n".join(answer).strip()
    return text or None
