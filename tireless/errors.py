"""Every SQLSTATE the store raises, and the one exception class each maps to.

The codes are listed once in the SQL (db/migrations/0003_policy.sql; TL009 in 0027_delivery.sql, TL010 in
0031_conversation.sql, TL011 in 0033_plans.sql, TL012 in db/agents.sql, TL015 in
0044_ledger.sql) and
mirrored in `SQLSTATE_TO_ERROR` below; the adapter translates by `sqlstate`, never by message text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg


class TirelessError(Exception):
    """Base of every refusal of the store. `sqlstate` is the code the database raised; `detail`
    and `hint` are its DETAIL and HINT (None when it gave none), `constraint` the rule it broke."""

    sqlstate: str = ""

    def __init__(
        self,
        message: str,
        *,
        constraint: str | None = None,
        detail: str | None = None,
        hint: str | None = None,
        sqlstate: str | None = None,
    ) -> None:
        super().__init__(message)
        self.constraint = constraint
        self.detail = detail
        self.hint = hint
        if sqlstate is not None:
            self.sqlstate = sqlstate


class UnknownJob(TirelessError):
    """TL001: no job has that id."""

    sqlstate = "TL001"


class IllegalTransition(TirelessError):
    """TL002: the state machine has no such move (e.g. pending -> delivered, anything -> claimed)."""

    sqlstate = "TL002"


class JobIsTerminal(TirelessError):
    """TL003: the job is delivered, failed or cancelled and never changes again."""

    sqlstate = "TL003"


class NotHolder(TirelessError):
    """TL004: the worker (or token) does not hold the job's current claim."""

    sqlstate = "TL004"


class InvalidArgument(TirelessError):
    """TL005: an argument is null, empty, out of range or names nothing known."""

    sqlstate = "TL005"


class MalformedIssue(TirelessError):
    """TL006: an element of an enqueue batch is malformed; nothing was enqueued."""

    sqlstate = "TL006"


class HistoryIsAppendOnly(TirelessError):
    """TL007: job_event rows are never updated, deleted or truncated."""

    sqlstate = "TL007"


class UnknownRepository(TirelessError):
    """TL008: the repository is not tracked, or the forge is not registered."""

    sqlstate = "TL008"


class MalformedDelivery(TirelessError):
    """TL009: a branch, ref, commit, pull request number or URL given for a delivery or a
    checkpoint is not one (the message names it); nothing was recorded."""

    sqlstate = "TL009"


class MalformedConversation(TirelessError):
    """TL010: what a poller read of a repository's conversation is not a list of asks (one malformed
    ask in a good list is skipped and reported instead); nothing was recorded."""

    sqlstate = "TL010"


class MalformedPlan(TirelessError):
    """TL011: a plan (or proposals) file is not a list of at most 50 well-formed tasks without a
    cycle; the message names the task and the field. The runner fails the attempt with it."""

    sqlstate = "TL011"


class UnknownAgent(TirelessError):
    """TL012: a lane is given an agent profile tireless does not know (tireless.agent_profiles);
    the message names it, the detail lists the profiles; nothing changed."""

    sqlstate = "TL012"


class MalformedPrice(TirelessError):
    """TL015: a model price names no model (a name or a prefix*), or a price is missing, negative
    or above a million USD per million tokens; the message names the model and the price."""

    sqlstate = "TL015"


class InvariantViolated(TirelessError):
    """23514: a row broke a named check constraint; `constraint` names it. Also every other
    integrity violation (class 23: a unique index other than one_live_job_per_issue, a foreign
    key, a not-null column), whose own code is then the instance's `sqlstate`."""

    sqlstate = "23514"


class DuplicateLiveJob(TirelessError):
    """23505 raised by the index one_live_job_per_issue: a second live job for one issue."""

    sqlstate = "23505"


class PermissionDenied(TirelessError):
    """42501: the database role may not do this."""

    sqlstate = "42501"


ERROR_CLASSES: tuple[type[TirelessError], ...] = (
    UnknownJob,
    IllegalTransition,
    JobIsTerminal,
    NotHolder,
    InvalidArgument,
    MalformedIssue,
    HistoryIsAppendOnly,
    UnknownRepository,
    MalformedDelivery,
    MalformedConversation,
    MalformedPlan,
    UnknownAgent,
    MalformedPrice,
    InvariantViolated,
    DuplicateLiveJob,
    PermissionDenied,
)
SQLSTATE_TO_ERROR: dict[str, type[TirelessError]] = {cls.sqlstate: cls for cls in ERROR_CLASSES}
LIVE_JOB_INDEX = "one_live_job_per_issue"

# Input refused before our functions run, mapped to the rule it breaks. jsonb cannot hold \u0000
# (22P05 in an enqueue batch); text cannot hold NUL, which psycopg refuses before sending (no SQLSTATE).
INPUT_REFUSALS: dict[str, type[TirelessError]] = {"22P05": MalformedIssue, "": InvalidArgument}


def translate(error: psycopg.Error) -> TirelessError | None:
    """The TirelessError for a database error, or None when its SQLSTATE is not ours. A unique
    violation is a DuplicateLiveJob only when one_live_job_per_issue raised it."""
    code = error.sqlstate or ""
    cls = SQLSTATE_TO_ERROR.get(code)
    if (code == DuplicateLiveJob.sqlstate and error.diag.constraint_name != LIVE_JOB_INDEX) or (
        cls is None and code.startswith("23")
    ):
        cls = InvariantViolated
    if cls is None and isinstance(error, psycopg.DataError):
        cls = INPUT_REFUSALS.get(code)
    if cls is None:
        return None
    return cls(
        error.diag.message_primary or str(error),
        constraint=error.diag.constraint_name,
        detail=error.diag.message_detail,
        hint=error.diag.message_hint,
        sqlstate=code or None,
    )


@contextmanager
def translated_errors() -> Iterator[None]:
    """Re-raise a database refusal as its TirelessError (the original stays as __cause__)."""
    try:
        yield
    except psycopg.Error as error:
        mapped = translate(error)
        if mapped is None:
            raise
        raise mapped from error
