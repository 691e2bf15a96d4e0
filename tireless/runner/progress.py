"""The progress of a running COMMAND, as `tireless work` reports it to the store
(tireless.report_progress): any output is progress, and a line `::progress:: TEXT` names the step
the agent is at now (a known agent CLI's tool calls too: tireless.runner.agent_output). Writes are throttled, at most one per `every` seconds but never fewer than one
a second while output comes (the lane's stall_after, which the runner cannot read, may be a few
seconds); output seen meanwhile is written when the throttle allows (a timer), and a step still
unwritten when COMMAND ends is written then, so the last step is never lost."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

PROGRESS_PREFIX = b"::progress::"
"""A line of COMMAND's output starting with this (after blanks) names its current step."""

DRAFT_LINE = b"::draft::"
"""A line of COMMAND's output that is this (blanks aside) asks for its pull request as a draft."""

CHECKPOINT_LINE = b"::checkpoint::"
"""A line of COMMAND's output that is this (blanks aside) asks the runner to save its work so far."""

AT_MOST_EVERY = 1.0
"""Seconds: the longest throttle, whatever `every` says, so that an agent's output reaches the store
well before any stall_after of two seconds or more runs out."""

LONGEST_LINE = 4096
"""Bytes of an unfinished line kept while waiting for its end; a step is cut to 500 characters
by the store anyway."""


def last_step(lines: list[bytes]) -> str | None:
    """The step the last `::progress::` line among complete lines names, if any."""
    step = None
    for line in lines:
        text = line.strip()
        if text.startswith(PROGRESS_PREFIX):
            step = text[len(PROGRESS_PREFIX) :].strip().decode(errors="replace") or step
    return step


class ProgressReporter:
    """Fed COMMAND's output chunk by chunk (`saw`); calls `report(step)` (step None: output
    without a new step) at most once per `every` seconds (at most AT_MOST_EVERY) until `close`.
    The writes run on a timer thread, never on the caller's: the reader of COMMAND's output never
    waits for the database."""

    def __init__(
        self,
        report: Callable[[str | None], object],
        every: float,
        checkpoint: Callable[[], object] | None = None,
        read: Callable[[bytes], str | None] | None = None,
    ) -> None:
        self._report = report
        self._checkpoint = checkpoint
        self._read = read
        """A known agent CLI's reader (tireless.runner.agent_output): the step a line names, or
        `::checkpoint::` for an event asking for one."""
        """Called (on the reader's thread: it must not wait) for each `::checkpoint::` line."""
        self._every = min(every, AT_MOST_EVERY)
        self._lock = threading.Lock()
        self._last_write = -float("inf")
        self._pending = False
        self._step: str | None = None
        self._partial = b""
        self._timer: threading.Timer | None = None
        self._closed = False
        self.draft = False
        """Whether COMMAND asked for a draft pull request (a line `::draft::`)."""

    def saw(self, chunk: bytes) -> None:
        """COMMAND wrote `chunk`: progress, and maybe a new step."""
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()[-LONGEST_LINE:]
        step = last_step(lines)
        asked = any(line.strip() == CHECKPOINT_LINE for line in lines)
        if self._read is not None:  # a known CLI's events: its steps, its checkpoints
            for line in lines:
                said = self._read(line)
                asked = asked or said == CHECKPOINT_LINE.decode()
                step = said if said and said != CHECKPOINT_LINE.decode() else step
        self.draft = self.draft or any(line.strip() == DRAFT_LINE for line in lines)
        if self._checkpoint is not None and asked:
            self._checkpoint()
        with self._lock:
            self._pending = True
            self._step = step or self._step
            self._schedule()

    def close(self) -> None:
        """COMMAND ended: a write under way is waited for, a step not written yet is written now
        (on the caller's thread), and no write follows, so none comes after the job's finish."""
        with self._lock:
            self._closed = True
            timer = self._timer
        if timer is not None:
            timer.cancel()
            timer.join()
        with self._lock:
            step, self._step = self._step, None
        if step is not None:
            self._call(step)

    def _schedule(self) -> None:
        """With the lock held: a write when the throttle allows, unless one is already due."""
        if self._timer is None and self._pending and not self._closed:
            wait = max(0.0, self._last_write + self._every - time.monotonic())
            self._timer = threading.Timer(wait, self._write)
            self._timer.daemon = True
            self._timer.start()

    def _write(self) -> None:
        """On the timer's thread: report what was seen since the last write."""
        with self._lock:
            step, self._step, self._pending = self._step, None, False
            self._last_write = time.monotonic()
        self._call(step)
        with self._lock:
            self._timer = None
            self._schedule()

    def _call(self, step: str | None) -> None:
        try:
            self._report(step)
        except Exception:  # the claim may be gone; the heartbeat is what notices that
            log.warning("reporting progress failed", exc_info=True)
