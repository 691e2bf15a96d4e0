"""The `tireless` command (also `python -m tireless`), thin: `parse` reads the arguments,
`commands` runs one, `render` turns rows into text; `main` here maps what went wrong to an exit
code and one line (or a few) on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import psycopg

from tireless.cli.parse import parser
from tireless.cli.session import REFUSED, UNREACHABLE, USAGE, Unreachable, UsageError
from tireless.errors import TirelessError


def connection_failed(error: psycopg.Error) -> bool:
    """The connection failed or was lost (no SQLSTATE: libpq could not connect; class 08; the
    server shutting down or starting): not a refusal, nor a lock timeout or cancelled statement."""
    code = error.sqlstate
    if code is None:
        return isinstance(error, psycopg.OperationalError)
    return code.startswith("08") or code in ("57P01", "57P02", "57P03")


NOT_MIGRATED = frozenset({"3F000", "42P01", "42883", "42703"})
"""A schema, table, function or column tireless needs is missing: the store was never migrated, or
by an older tireless."""


def report(code: str | None, message: str, detail: str | None, hint: str | None) -> str:
    """A database error for a person: `tireless: SQLSTATE: message`, then DETAIL and HINT lines."""
    lines = [f"tireless: {code}: {message}" if code else f"tireless: {message}"]
    lines += [f"DETAIL: {detail}"] if detail else []
    lines += [f"HINT: {hint}"] if hint else []
    return "\n".join(lines)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    command_line = parser()
    args = command_line.parse_args(argv)
    if args.command_name is None:  # a bare `tireless`: what it can do
        command_line.print_help()
        return USAGE
    args.command_line = sys.argv[1:] if argv is None else None  # this process is the command
    try:
        code: int = args.run(args)
        return code
    except UsageError as error:
        print(f"tireless: {error}", file=sys.stderr)
        return USAGE
    except OSError as error:  # a file named on the command line
        print(f"tireless: {error}", file=sys.stderr)
        return USAGE
    except Unreachable as error:
        print(f"tireless: cannot reach the database: {error}", file=sys.stderr)
        return UNREACHABLE
    except TirelessError as error:
        print(report(error.sqlstate, str(error), error.detail, error.hint), file=sys.stderr)
        return REFUSED
    except psycopg.Error as error:
        if connection_failed(error):
            print(f"tireless: cannot reach the database: {first_line(error)}", file=sys.stderr)
            return UNREACHABLE
        diag = error.diag
        message = diag.message_primary or first_line(error)
        if error.sqlstate in NOT_MIGRATED:
            print(
                "tireless: the store is not migrated: run `tireless migrate`"
                f" ({error.sqlstate}: {message})",
                file=sys.stderr,
            )
            return REFUSED
        print(
            report(error.sqlstate, message, diag.message_detail, diag.message_hint), file=sys.stderr
        )
        return REFUSED
