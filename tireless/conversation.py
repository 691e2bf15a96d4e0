"""The vocabulary of the conversation on tireless's pull requests and issues: what the poller reads
of a repository's conversation (`tireless.conversation_to_read`) and what `record_conversation`
did."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class PullToRead:
    """One of tireless's pull requests whose conversation the poller reads: the issue it is for,
    its number, the head tireless last pushed, the ETag of its reviews, and whether its head's
    checks are still to read (the repository's policy asks for them and they had not all ended)."""

    number: int
    pull: int
    head: str | None
    reviews_etag: str | None
    read_checks: bool
    seen_reviews: tuple[int, ...]
    """The ids of its reviews already judged: not read again."""
    read_to: datetime | None
    """The `updated_at` the listing showed when its conversation was last read."""


@dataclass(frozen=True, slots=True)
class ConversationToRead:
    """What to read of a repository's conversation (`tireless.conversation_to_read`): the
    comments written or edited since `comments_cursor`, and each open issue's pull request."""

    comments_cursor: datetime
    comments_etag: str | None
    pulls: tuple[PullToRead, ...]
    waiting: bool
    """Asks wait for a job: record_conversation makes it once the issue's live job has ended."""

    @classmethod
    def from_row(
        cls,
        comments_cursor: datetime,
        comments_etag: str | None,
        pulls: list[dict[str, Any]],
        waiting: bool,
    ) -> ConversationToRead:
        read = tuple(
            PullToRead(
                **(
                    pull
                    | {
                        "seen_reviews": tuple(pull["seen_reviews"]),
                        "read_to": None
                        if pull["read_to"] is None
                        else datetime.fromisoformat(pull["read_to"]),
                    }
                )
            )
            for pull in pulls
        )
        return cls(comments_cursor, comments_etag, read, waiting)


@dataclass(frozen=True, slots=True)
class ConversationOutcome:
    """What `record_conversation` did: asks kept (a stop among them), refused, jobs created,
    jobs stopped, and each malformed ask it skipped, said why."""

    asked: int
    refused: int
    created: int
    stopped: int
    skipped: list[str]
