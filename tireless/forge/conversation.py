"""Reading the conversation on tireless's pull requests and issues (docs/conversation.md), and the
mirror's replies to it.

After a repository's issues are recorded, the poller reads what may ask for work and hands it to
the store (`record_conversation`), which judges each ask: whether it is a command or a review that
requests changes, whether its author may ask, whether the issue has had its revisions. This module
only reads, economically:

- the comments written or edited since the last read, one listing for the whole repository, only
  when the issue listing showed an issue, or one of tireless's open pull requests (both forges
  list pull requests among issues, and every comment or review moves a pull request's
  `updated_at`): a round where nothing changed reads nothing more;
- the reviews of each open pull request the listing showed (GitHub: conditional, a 304 costs
  nothing), the inline comments only of a new review that requests changes;
- the checks of a pull request's head only while the repository's policy asks for them and they
  have not all finished;
- the permission of an author only for a command or a review that requests changes, once per read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tireless.conversation import PullToRead
from tireless.forge.client import ForgeClient, ForgeStopped, ReadFailed, WriteRefused
from tireless.forge.validate import is_own
from tireless.models import ConversationReply, RepoToPoll
from tireless.store import JobStore

OVERLAP = timedelta(minutes=1)
"""Comments are listed from the cursor minus this much: one stamped a little late is still read; the
store keeps each once."""

RESOLUTION = timedelta(seconds=1)
"""How finely the forges stamp `updated_at` (Gitea and GitHub: whole seconds, while the cursor has
the store's fractions): a stamp in the cursor's own second may be later than the cursor."""

COMMAND = "/tireless"


@dataclass(slots=True)
class ConversationRead:
    """What one read of a repository's conversation did, for the poll's report."""

    requests: int = 0
    asked: int = 0
    refused: int = 0
    created: int = 0
    stopped: int = 0
    skipped: list[str] = field(default_factory=list)


def read_conversation(
    store: JobStore,
    poller: str,
    client: ForgeClient,
    target: RepoToPoll,
    *,
    issues_updated: Iterable[datetime],
    pulls_changed: Iterable[tuple[int, datetime]],
) -> ConversationRead:
    """Reads what may ask for work in the repository's conversation and records it. `issues_changed`:
    the `updated_at` of the issues the listing showed (one newer than the last comments read may have a
    new comment); `pulls_changed`: the pull requests it showed (a comment or a
    review moves a pull request's `updated_at` on both forges). ForgeStopped (a rate limit,
    refused credentials) and ReadFailed are raised for the poller to handle. A pull request is read
    again only when the listing shows it changed after the last read (`read_to`)."""
    owner, repo = target.owner, target.repo
    done = ConversationRead()
    to_read = store.conversation_to_read(target.forge, owner, repo, poller)
    listed = dict(pulls_changed)
    changed = [
        pull
        for pull in to_read.pulls
        if pull.pull in listed and (pull.read_to is None or listed[pull.pull] > pull.read_to)
    ]
    newer = [at for at in issues_updated if at > to_read.comments_cursor - RESOLUTION]
    newer += [listed[pull.pull] for pull in changed]
    read_comments = bool(newer)
    if not (read_comments or to_read.waiting or any(p.read_checks for p in to_read.pulls)):
        return done
    login = mirror_login(client)
    asks: list[dict[str, Any]] = []
    permissions: dict[str, str | None] = {}

    def permission(author: str | None) -> str | None:
        """The author's permission; None when the token may not read it (the ask is left out)."""
        if author is None:
            return "none"
        if author not in permissions:
            done.requests += 1
            try:
                permissions[author] = client.permission(owner, repo, author)
            except WriteRefused as refused:  # 403: only this read is refused, not the forge
                permissions[author] = None
                done.skipped.append(
                    f"{author}'s permission could not be read ({refused}): what they asked is"
                    " left out; the token needs to read the repository's collaborators"
                )
        return permissions[author]

    # Every comment is older than its issue's updated_at: once read, the cursor may move past their
    # seconds, but not past the time the read began (a second not over may stamp more).
    started = datetime.now(UTC)
    newest = max(newer, default=to_read.comments_cursor)
    if read_comments:
        done.requests += 1
        for note in client.comments_since(owner, repo, to_read.comments_cursor - OVERLAP):
            newest = max(newest, note.updated_at)
            if not note.body.lstrip().lower().startswith(COMMAND) or _is(note.author, login):
                continue
            asks.append(
                {
                    "source": "comment",
                    "id": note.id,
                    "number": note.number,
                    "author": note.author,
                    "permission": permission(note.author),
                    "created_at": note.created_at.isoformat(),
                    "updated_at": note.updated_at.isoformat(),
                    "body": note.body,
                }
            )
    pulls: list[dict[str, Any]] = []
    for pull in to_read.pulls:
        read: dict[str, Any] = {"pull": pull.pull}
        if pull in changed:
            read["read_to"] = listed[pull.pull].isoformat()
            read["reviews_etag"] = _reviews(
                client, owner, repo, pull, login, permission, asks, done
            )
        if pull.read_checks and pull.head is not None:
            done.requests += 1
            checks = client.checks(owner, repo, pull.head)
            if checks and all(check.state != "pending" for check in checks):
                read["checks_head"] = pull.head
            asks.append(
                {
                    "source": "checks",
                    "id": pull.head,
                    "number": pull.pull,
                    "head": pull.head,
                    "created_at": datetime.now(UTC).isoformat(),
                    "checks": [
                        {"name": c.name, "state": c.state, "summary": c.summary, "url": c.url}
                        for c in checks
                    ],
                }
            )
        pulls.append(read)
    asks = [ask for ask in asks if ask["source"] == "checks" or ask["permission"] is not None]
    cursor = max(to_read.comments_cursor, min(newest + RESOLUTION, started))
    outcome = store.record_conversation(
        target.forge, owner, repo, poller, login, asks, cursor, None, pulls
    )
    done.asked, done.refused = outcome.asked, outcome.refused
    done.created, done.stopped = outcome.created, outcome.stopped
    done.skipped += outcome.skipped
    return done


def _reviews(
    client: ForgeClient,
    owner: str,
    repo: str,
    pull: PullToRead,
    login: str | None,
    permission: Callable[[str | None], str | None],
    asks: list[dict[str, Any]],
    done: ConversationRead,
) -> str | None:
    """Adds the pull request's new reviews that request changes to `asks`; returns the ETag."""
    done.requests += 1
    reviews = client.pull_reviews(owner, repo, pull.pull, etag=pull.reviews_etag)
    for review in reviews.reviews:
        if review.state != "changes_requested" or review.id in pull.seen_reviews:
            continue
        if _is(review.author, login):
            continue
        done.requests += 1
        comments = client.review_comments(owner, repo, pull.pull, review.id)
        asks.append(
            {
                "source": "review",
                "id": review.id,
                "number": pull.pull,
                "author": review.author,
                "permission": permission(review.author),
                "state": review.state,
                "created_at": (review.submitted_at or datetime.now(UTC)).isoformat(),
                "body": review.body,
                "comments": [{"path": c.path, "line": c.line, "body": c.body} for c in comments],
            }
        )
    return reviews.etag


def mirror_login(client: ForgeClient) -> str | None:
    """The account tireless writes as; None when the forge will not say (a GitHub App's token is
    refused `GET /user`): the store then excludes no login, and tireless never writes a command
    or a review itself."""
    try:
        return client.whoami()
    except ForgeStopped:
        raise
    except ReadFailed:
        return None


def _is(author: str | None, login: str | None) -> bool:
    return author is not None and login is not None and author.lower() == login.lower()


def post_reply(
    client: ForgeClient, owner: str, repo: str, reply: ConversationReply, login: str | None
) -> None:
    """A +1 on the command tireless acted on, or the comment that answers a refused ask, posted
    unless tireless's own account (is_own: `login` None while unknown) already did (found by its
    marker)."""
    if reply.reply == "react":
        assert reply.comment_id is not None
        client.add_reaction(owner, repo, reply.comment_id, "+1")
        return
    assert reply.body is not None
    assert reply.marker is not None
    for found in client.comments(owner, repo, reply.number):
        if is_own(found.author, login) and found.body.rstrip().endswith(reply.marker):
            return
    client.add_comment(owner, repo, reply.number, reply.body)
