"""What the runner's commit of the agent's work says (docs/runners.md, "The commit"): a subject a
reviewer reads (`Fix #12: <the issue's title>`, or the agent's own last commit's subject), the
agent's report as its body, and the trailers `Tireless-Job` and `Tireless-Attempt`. The title, the
report and the agent's subject are untrusted text: each is cleaned of control characters and
bounded before it goes into a commit."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from tireless.git import Identity

SUBJECT_LIMIT = 72
"""The most characters of a subject (git's own advice; longer ones are cut with `…`)."""
BODY_LIMIT = 4000
"""The most characters of the report kept in the body (cut, saying so)."""
BODY_LINES = 80
"""The most lines of the report kept in the body."""
UNCOMMITTED = "What the agent left uncommitted, committed by tireless."
CHECKPOINT = (
    "Work in progress: saved by tireless as a checkpoint of the attempt; the next attempt starts"
    " from it."
)
CUT = "(cut here: the whole report is on the issue)"


def _visible(char: str) -> str:
    """A character as it may stand in a commit message: controls and format characters (bidi
    overrides, zero-width ones) dropped, tabs and other spaces made plain spaces."""
    if char == "\n":
        return char
    category = unicodedata.category(char)
    if category in ("Zs", "Zl", "Zp") or char == "\t":
        return " "
    return "" if category in ("Cc", "Cf", "Cs", "Co", "Cn") else char


def one_line(text: str, limit: int = SUBJECT_LIMIT) -> str:
    """Untrusted text as one line: its first non-blank line, cleaned, spaces collapsed, at most
    `limit` characters ("" when nothing visible is left)."""
    cleaned = "".join(_visible(c) for c in text.replace("\r", "\n"))
    line = next((line for line in cleaned.split("\n") if line.strip()), "")
    line = re.sub(r" +", " ", line).strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def paragraphs(text: str, limit: int = BODY_LIMIT, lines: int = BODY_LINES) -> str:
    """Untrusted text as a commit body: cleaned, trailing spaces and runs of blank lines gone, at
    most `lines` lines and about `limit` characters, cut saying so."""
    cleaned = "".join(_visible(c) for c in text.replace("\r\n", "\n").replace("\r", "\n"))
    kept: list[str] = []
    size = 0
    for line in cleaned.split("\n"):
        line = line.rstrip()
        if not line and (not kept or not kept[-1]):
            continue
        if len(kept) == lines or size + len(line) + 1 > limit:
            if len(kept) < lines and (room := limit - size - 1) > 0:  # the start of a long line
                kept.append(line[:room].rstrip() + "…")
            while kept and not kept[-1]:
                kept.pop()
            return "\n".join([*kept, "", CUT]).strip()
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept).strip()


@dataclass(frozen=True, slots=True)
class CommitMessage:
    """Who the runner's commit is by and what it says: for job `job_id`'s claim `attempt_id`
    (Job.attempt_id, TIRELESS_ATTEMPT_ID), on issue `number` titled `title`, the agent's report
    `summary` (masked by the runner); `checkpoint` for a commit saved mid-attempt."""

    identity: Identity
    job_id: int
    attempt_id: str
    number: int | None = None
    title: str | None = None
    summary: str | None = None
    checkpoint: bool = False

    def subject(self, agent_subject: str | None = None) -> str:
        """The agent's own last commit's subject when it made one, else `Fix #N: <title>`; a
        checkpoint's starts `Checkpoint: `."""
        subject = one_line(agent_subject or "", 1000)
        if not subject:
            title = one_line(self.title or "", 1000)
            issue = f"#{self.number}" if self.number is not None else f"tireless job {self.job_id}"
            subject = f"Fix {issue}: {title}" if title else f"Fix {issue}"
        return one_line(f"Checkpoint: {subject}" if self.checkpoint else subject)

    def text(self, agent_subject: str | None = None) -> str:
        """The whole message: subject, body, trailers (the last paragraph, so that no line of
        the report can pass for one)."""
        body = CHECKPOINT if self.checkpoint else paragraphs(self.summary or "") or UNCOMMITTED
        trailers = f"Tireless-Job: {self.job_id}\nTireless-Attempt: {self.attempt_id}"
        return f"{self.subject(agent_subject)}\n\n{body}\n\n{trailers}\n"
