"""What every `tireless` command shares: the exit codes and the errors that choose them, the
database connection, printing text or JSON, and stopping a long-running command on a signal."""

from __future__ import annotations

import argparse
import os
import select
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from tireless.cli.render import as_json, visible
from tireless.runner.credentials import secret_from_environment
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
    url = checked_url(args)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as error:
        raise Unreachable(str(error).strip()) from error
    with conn:
        yield conn


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
