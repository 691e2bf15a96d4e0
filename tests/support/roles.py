"""The group roles, the type of the `login` fixture (tests/conftest.py) and a login's name."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

GROUPS = ("tireless_runner", "tireless_poller", "tireless_admin")


Login = Callable[[str | None], str]


def login_name(conninfo: str) -> str:
    return str(psycopg.conninfo.conninfo_to_dict(conninfo)["user"])
