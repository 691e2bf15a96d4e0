"""What `tireless work` hands COMMAND beside the job row, and what COMMAND hands back.

The brief (tireless.job_brief): the issue's web URL, the forge's API root, the repository's clone
URL and the issue's body as last polled, in TIRELESS_* variables and in the stdin JSON. The body
goes in a file (TIRELESS_ISSUE_BODY_FILE): an environment variable holds at most 128 KiB on Linux.
A revision (a review, a `/tireless revise` or failed checks asked for it: tireless.job_asks) also
gets what it answers, as markdown in TIRELESS_REVIEW_FILE (review.md) and as a list under the
`review` key of the JSON; a job asked for by its labels gets an empty variable and null.
The report: COMMAND may write its outcome summary (markdown) to TIRELESS_REPORT_FILE; the worker
attaches it to the attempt (tireless.attach_report) and the mirror posts it as the outcome comment.
A plan job may write its tasks to TIRELESS_PLAN_FILE, a discover job its proposals to
TIRELESS_PROPOSALS_FILE (JSON, docs/runners.md); the worker hands them to the store
(tireless.attach_plan), which checks them, and the mirror opens an issue for each once the job is
delivered. The files live in a directory of the job's own, removed when COMMAND ends; without
--deliver, where COMMAND may not write in the worker's directory, an empty `workspace` directory
in it is COMMAND's working directory and TIRELESS_WORKSPACE. No token is given."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tireless.models import JobAsk, JobBrief

REPORT_READ_LIMIT = 4 * 60000 + 4
"""Bytes of the report file read: the store keeps 60000 characters (a UTF-8 character is at most 4
bytes) and flags a longer report as cut."""

TASKS_READ_LIMIT = 50 * 4 * (65536 + 200 + 64 * 12) + 65536
"""Bytes of a plan or proposals file read: 50 tasks of the largest title and body the store takes
(a UTF-8 character is at most 4 bytes) with their dependencies; a larger file is refused."""
TASKS_FILES = {"plan": "plan.json", "discover": "proposals.json"}
"""The job kinds that may hand back tasks, and the name of the file each writes them to."""


class AgentFiles:
    """`with AgentFiles(job_id, brief) as files:` a directory holding the issue's body
    (issue.md) and the place for the report (report.md, which COMMAND creates if it reports)."""

    def __init__(
        self, job_id: int, brief: JobBrief, asks: Sequence[JobAsk] = (), kind: str | None = None
    ) -> None:
        self.brief = brief
        self.kind = kind
        self.asks = tuple(asks)
        self._directory = tempfile.TemporaryDirectory(prefix=f"tireless-job-{job_id}-")
        self.directory = Path(self._directory.name)
        """The job's directory (0700, the agent user's when there is one): COMMAND may write it."""
        self.body_file = Path(self._directory.name) / "issue.md"
        self.report_file = Path(self._directory.name) / "report.md"
        self.review_file = Path(self._directory.name) / "review.md" if self.asks else None
        tasks = TASKS_FILES.get(kind or "")
        self.tasks_file = None if tasks is None else Path(self._directory.name) / tasks
        """plan.json for a plan job, proposals.json for a discover job; None for another job."""
        self.body_file.write_text(brief.body or "", encoding="utf-8")
        if self.review_file is not None:
            self.review_file.write_text(review_text(self.asks), encoding="utf-8")

    def __enter__(self) -> AgentFiles:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._directory.cleanup()

    def own_directory(self) -> Path:
        """An empty directory of the job's own, in its directory (made on first use, removed
        with it): COMMAND's working directory and TIRELESS_WORKSPACE without --deliver, when
        COMMAND may not write in the worker's."""
        own = self.directory / "workspace"
        own.mkdir(mode=0o700, exist_ok=True)
        return own

    def environment(self) -> dict[str, str]:
        """The brief's TIRELESS_* variables (an unknown URL is empty)."""
        brief = self.brief
        return {
            "TIRELESS_ISSUE_URL": brief.issue_url or "",
            "TIRELESS_API_URL": brief.api_url or "",
            "TIRELESS_CLONE_URL": brief.clone_url or "",
            "TIRELESS_ISSUE_BODY_FILE": str(self.body_file),
            "TIRELESS_ISSUE_BODY_CUT": "true" if brief.body_cut else "false",
            "TIRELESS_REPORT_FILE": str(self.report_file),
            "TIRELESS_REVIEW_FILE": "" if self.review_file is None else str(self.review_file),
            "TIRELESS_PLAN_FILE": self._tasks_path("plan") or "",
            "TIRELESS_PROPOSALS_FILE": self._tasks_path("discover") or "",
        }

    def _tasks_path(self, kind: str) -> str | None:
        return str(self.tasks_file) if self.tasks_file is not None and self.kind == kind else None

    def json_fields(self) -> dict[str, Any]:
        """The brief's fields of the stdin JSON."""
        brief = self.brief
        return {
            "issue_url": brief.issue_url,
            "api_url": brief.api_url,
            "clone_url": brief.clone_url,
            "body": brief.body,
            "body_cut": brief.body_cut,
            "report_file": str(self.report_file),
            "review": [ask.as_json() for ask in self.asks] if self.asks else None,
            "plan_file": self._tasks_path("plan"),
            "proposals_file": self._tasks_path("discover"),
        }

    def report(self) -> str | None:
        """What COMMAND wrote to its report file; None when it wrote nothing, or left anything but a
        regular file there: a symbolic link could name a file of the worker's (its credentials)
        and a FIFO would never end."""
        data = _read_regular(self.report_file, REPORT_READ_LIMIT)
        if data is None:
            return None
        text = data.decode(errors="replace").replace("\x00", "")
        return text if text.strip() else None

    def tasks(self) -> object:
        """The tasks COMMAND wrote to its plan or proposals file, parsed (the store checks them);
        None when it wrote none (or anything but a regular file, as for the report). ValueError
        saying why when the file is too large or not JSON."""
        if self.tasks_file is None:
            return None
        data = _read_regular(self.tasks_file, TASKS_READ_LIMIT + 1)
        if data is None:
            return None
        name = "TIRELESS_PLAN_FILE" if self.kind == "plan" else "TIRELESS_PROPOSALS_FILE"
        if len(data) > TASKS_READ_LIMIT:
            raise ValueError(f"{name} is larger than {TASKS_READ_LIMIT} bytes")
        try:
            return json.loads(data.decode())
        except (UnicodeDecodeError, ValueError) as error:
            raise ValueError(f"{name} is not JSON: {error}") from None


def _read_regular(path: Path, limit: int) -> bytes | None:
    """Up to `limit` bytes of the file at `path`; None when there is none, or anything but a regular
    file: a symbolic link could name a file of the worker's (its credentials) and a FIFO would never
    end."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # none, a directory, or a symbolic link (ELOOP)
        return None
    with open(descriptor, "rb") as opened:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return opened.read(limit)


def review_text(asks: Sequence[JobAsk]) -> str:
    """What a revision answers, as markdown for the agent: each review with its inline comments,
    each command's instruction, each failed check with its summary and link."""
    parts: list[str] = []
    for ask in asks:
        if ask.source == "checks":
            lines = [f"## Failed checks on {ask.source_id}"]
            lines += [
                f"- {check.get('name')}: {check.get('summary') or 'failed'}"
                + (f" ({check['url']})" if check.get("url") else "")
                for check in ask.detail
            ]
        else:
            what = "Review" if ask.source == "review" else "Comment"
            where = f" on pull request #{ask.pull_number}" if ask.pull_number else ""
            lines = [
                f"## {what} {ask.source_id} by {ask.author}{where}",
                "",
                ask.body or "(no text)",
            ]
            for comment in ask.detail:
                line = f":{comment['line']}" if comment.get("line") is not None else ""
                lines += ["", f"### {comment.get('path')}{line}", "", str(comment.get("body", ""))]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
