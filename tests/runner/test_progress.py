"""The worker's progress reports (tireless.runner.progress), without a database: output is
progress, a `::progress::` line names the step, and writes are throttled without losing the last
step."""

from __future__ import annotations

import threading

from tireless.runner.progress import AT_MOST_EVERY, ProgressReporter, last_step


def test_the_last_progress_line_names_the_step() -> None:
    lines = [b"cloning", b"  ::progress:: ran the tests  ", b"::progress::", b"more output"]
    assert last_step(lines) == "ran the tests"
    assert last_step([b"no step here", b"progress:: not a step"]) is None


class Blocked:
    """A reporter whose first write (of the step `one`) stays under way until `release` is set;
    `written` holds the steps written, `again` is set by any later write."""

    def __init__(self, every: float) -> None:
        self.written: list[str | None] = []
        self.release, self.again = threading.Event(), threading.Event()
        writing = threading.Event()

        def report(step: str | None) -> None:
            self.written.append(step)
            if writing.is_set():
                self.again.set()
                return
            writing.set()
            assert self.release.wait(10)

        self.reporter = ProgressReporter(report, every)
        self.reporter.saw(b"::progress:: one\n")
        assert writing.wait(10), "the first output is written at once"


def test_writes_are_throttled_and_the_last_step_is_written_at_close() -> None:
    blocked = Blocked(every=3600)
    blocked.reporter.saw(b"::progress:: two\n")
    blocked.reporter.saw(b"::progress:: three\nplain output")
    blocked.release.set()
    blocked.reporter.close()  # the next write was not due yet: close writes the last step
    assert blocked.written == ["one", "three"]


def test_a_long_interval_still_writes_once_a_second() -> None:
    """The lane's stall_after, which the runner cannot read, may be a few seconds."""
    blocked = Blocked(every=3600)
    blocked.reporter.saw(b"::progress:: two\n")
    blocked.release.set()
    assert blocked.again.wait(AT_MOST_EVERY + 5), "the next write came within the second"
    blocked.reporter.close()
    assert blocked.written == ["one", "two"]


def test_the_step_seen_while_throttled_is_written_when_allowed() -> None:
    blocked = Blocked(every=0)
    blocked.reporter.saw(b"::progress:: two\n")
    blocked.reporter.saw(b"::progress:: thr")
    blocked.reporter.saw(b"ee\nplain output")  # a line split across chunks
    blocked.release.set()
    assert blocked.again.wait(10)
    blocked.reporter.close()
    assert blocked.written == ["one", "three"]
