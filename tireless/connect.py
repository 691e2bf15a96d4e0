"""Every connection tireless opens: the deadlines and keepalives it adds to the operator's DSN, so
a dead or unreachable host is given up within seconds, and the backoff between reconnects."""

from __future__ import annotations

import os
import random

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

CONNECTION_DEFAULTS: dict[str, str] = {
    "connect_timeout": "10",  # seconds per host tried: a multi-host DSN moves on to the next
    "keepalives": "1",
    "keepalives_idle": "10",  # an idle connection (a LISTEN) is probed after 10 s of silence,
    "keepalives_interval": "3",  # then every 3 s,
    "keepalives_count": "3",  # and dropped after 3 probes unanswered: a dead host in ~19 s
    "tcp_user_timeout": "15000",  # ms: data sent and not acknowledged for 15 s drops the connection
}
"""What tireless adds to a DSN that does not set it (libpq ignores the TCP ones on a unix socket)."""

ENVIRONMENT = {"connect_timeout": "PGCONNECT_TIMEOUT"}
"""A default the operator's environment already sets for libpq is not added either."""


def with_defaults(conninfo: str) -> str:
    """The DSN (URL or key=value, one host or several) with CONNECTION_DEFAULTS added where the
    operator set neither the parameter nor its environment variable; theirs always win."""
    given = conninfo_to_dict(conninfo)
    added = {
        key: value
        for key, value in CONNECTION_DEFAULTS.items()
        if key not in given and not os.environ.get(ENVIRONMENT.get(key, ""))
    }
    return make_conninfo(conninfo, **added) if added else conninfo


class Backoff:
    """The waits between reconnects: 0.2 s doubling up to 5 s, each jittered by up to a fifth so
    a fleet that lost its database does not come back in step; `reset` after a success."""

    FIRST = 0.2
    MOST = 5.0

    def __init__(self) -> None:
        self.tries = 0
        """Waits since the last success: 0 when an outage is only beginning."""

    def next(self) -> float:
        """Seconds to wait before the next try."""
        delay = min(self.MOST, self.FIRST * 2.0 ** min(self.tries, 10))
        self.tries += 1
        return min(self.MOST, delay * random.uniform(0.8, 1.2))

    def reset(self) -> None:
        self.tries = 0


def answer_lost(error: BaseException) -> bool:
    """Whether a call may have reached the database without its answer reaching us: the connection
    broke or could not be had (OperationalError: a failover, a cut network, a client deadline), or
    it led to a host that can no longer write (25006: a demoted primary). Such a call is sent
    again; the store's fenced functions answer one that did commit as done."""
    return isinstance(error, psycopg.OperationalError) or (
        isinstance(error, psycopg.Error) and error.sqlstate == "25006"
    )
