"""What every `tireless` command shares: the exit codes and the errors that choose them, the
database connection, printing text or JSON, and stopping a long-running command on a signal."""

from __future__ import annotations

import argparse
import os
import re
import select
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from tireless.cli.render import as_json, visible
from tireless.connect import CALL_DEADLINE, Backoff, DeadlineConnection, with_defaults
from tireless.credentials import secret_from_environment
from tireless.store.sync import Notifications

OK, REFUSED, USAGE, NOTHING_TO_DO, UNREACHABLE = 0, 1, 2, 3, 4
PRUNE_MAX = 100
"""`tireless prune` deletes more jobs than this only with --yes (its --max)."""


class Unreachable(Exception):
    """The database cannot be reached (exit 4)."""


class UsageError(Exception):
    """The arguments or the input are wrong (exit 2)."""


def database_url(args: argparse.Namespace) -> str:
    """--database, else the file --database-file names, else $DATABASE_URL, else the file
    $DATABASE_URL_FILE names (a file keeps the password out of the environment)."""
    url: str | None = args.database
    if not url and args.database_file:
        url = Path(args.database_file).read_text().rstrip("\r\n")
    url = url or secret_from_environment("DATABASE_URL")
    if not url:
        raise UsageError(
            "no database: pass --database URL or --database-file PATH, or set DATABASE_URL"
            " or DATABASE_URL_FILE"
        )
    return url


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[psycopg.Connection[Any]]:
    """One autocommit connection for a command; each store call is its own transaction."""
    with open_connection(checked_url(args)) as conn:
        yield conn


def open_connection(url: str, deadline: float | None = None) -> psycopg.Connection[Any]:
    """An autocommit connection with tireless's timeouts and keepalives, each call ending by
    `deadline` seconds (None: a command's call, such as a prune, may take as long as it needs);
    Unreachable (exit 4) when it cannot be made."""
    try:
        return deadline_connection(url, deadline)
    except psycopg.OperationalError as error:
        raise Unreachable(str(error).strip()) from error


def deadline_connection(url: str, deadline: float | None) -> DeadlineConnection:
    """open_connection, raising psycopg.OperationalError when it cannot be made."""
    conn = DeadlineConnection.connect(with_defaults(url), autocommit=True)
    conn.deadline = deadline
    return conn


def reconnecting(
    args: argparse.Namespace,
    stop: StopSignals,
    serve: Callable[[psycopg.Connection[Any]], None],
    *,
    deadline: float = CALL_DEADLINE,
    reconnect_every: float | None = None,
) -> None:
    """`serve` on a connection until a stop signal, for the commands that run until stopped
    (`sweep --every`, `poll --every`): a connection lost after the start is made again after a
    short, growing pause (Backoff; with `reconnect_every`, every that many seconds at most, as a
    worker's pool does), with one line on stderr when it is lost and one when it is back. Only
    the first connection failing is Unreachable (exit 4). Each call ends by `deadline`, so a
    host that hangs is left as one that died."""
    url = checked_url(args)
    conn = open_connection(url, deadline)
    backoff = Backoff()
    while True:
        try:
            with conn:
                serve(conn)
            return
        except psycopg.OperationalError as error:
            if not (conn.broken or conn.closed):  # a lock timeout or cancelled statement
                raise
            lost = (
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            )
        print(
            f"tireless: database connection lost ({lost}); reconnecting",
            file=sys.stderr,
            flush=True,
        )
        since = time.monotonic()
        while True:
            pause = backoff.next()
            stop.wait(pause if reconnect_every is None else min(pause, reconnect_every))
            if stop.stopped:
                return
            try:
                conn = deadline_connection(url, deadline)
                break
            except psycopg.OperationalError:
                continue
        backoff.reset()
        print(
            f"tireless: database reached again after {time.monotonic() - since:.1f}s",
            file=sys.stderr,
            flush=True,
        )


def checked_url(args: argparse.Namespace) -> str:
    """The database URL, refused as a usage error when it does not parse."""
    url = database_url(args)
    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as error:  # a malformed URL or connection string
        raise UsageError(f"bad --database or DATABASE_URL: {error}") from error
    return url


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(as_json(data) if args.json else visible(text, newlines=True))


class Stop(BaseException):
    """SIGTERM or SIGINT asked a long-running command to stop."""


def stop_on_signals() -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


class StopSignals:
    """SIGTERM or SIGINT, for a loop that stops at its next turn: a flag and a byte in a pipe that
    `wait` watches, not an exception (a signal handler that raises may land in a weakref callback
    or a finaliser, where Python prints the exception and drops it, and the loop never stops)."""

    def __init__(self) -> None:
        self.stopped = False
        self._wakeup, self._wake = os.pipe()
        os.set_blocking(self._wake, False)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopped = True
        with suppress(BlockingIOError):
            os.write(self._wake, b"\0")

    def wait(self, seconds: float) -> None:
        """Sleep `seconds`, or less when a stop signal comes."""
        if not self.stopped:
            select.select([self._wakeup], [], [], seconds)

    def listen(self, heard: Notifications, seconds: float) -> str | None:
        """Wait `seconds` for a notification (returns its payload), or less when a stop signal
        comes (returns None)."""
        return None if self.stopped else heard.wait(seconds, wakeup=self._wakeup)


UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def duration(text: str) -> timedelta:
    """`500ms`, `90s`, `15m`, `2h`, `30d`: a lease or an interval, always with its unit (a bare
    `90` or `2mo` is refused: `m` is minutes, and a guess costs jobs)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r}: give a number and its unit, e.g. 90s, 15m, 2h or 30d"
            " (ms, s, m, h, d)"
        )
    return timedelta(**{UNITS[match.group(2)]: float(match.group(1))})
