"""The `tireless` command (also `python -m tireless`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from tireless.migrate import migrate


def database_url(given: str | None) -> str:
    url = given or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit("tireless: no database: pass --database URL or set DATABASE_URL")
    return url


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tireless", description=__doc__)
    parser.add_argument(
        "--database", help="libpq URL or connection string (default: $DATABASE_URL)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="apply the migrations not yet applied")
    args = parser.parse_args(argv)
    if args.command == "migrate":
        applied = migrate(database_url(args.database))
        print(
            f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
