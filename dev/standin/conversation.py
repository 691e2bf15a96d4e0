"""The stand-in forge's side of the conversation on a pull request (issue 34): the dispatch of its
routes (the reviews and permissions of dev.standin.reviews, the statuses and check runs of
dev.standin.checks), a repository's comment listing, reactions on comments, and the edit of a
comment (PATCH .../issues/comments/{id}: the checklist of a plan's outcome comment, issue 35).
StandinForge (dev.standin) hands it each API request before its own routes; each forge's quirks
are its API's (dev.standin.gitea, dev.standin.github), cited there with the source the client
that copes with it cites (tireless/forge/gitea.py, github.py). The stand-in's faults (`fault`)
do not reach these routes.

    forge.edit_comment("acme", "widgets", comment_id, "the checklist, ticked")
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote

from dev.standin.checks import CheckRoutes
from dev.standin.records import MIRROR_LOGIN, Answer, Comment, RepoRequest, _now, _time
from dev.standin.records import PERSON as PERSON

ACCOUNT = MIRROR_LOGIN
"""The token's account, the one who asks, reacts and edits here (PERSON: the person)."""

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
"""GitHub's reactions (docs.github.com/en/rest/reactions), Gitea's `[ui] REACTIONS` default
(modules/setting/ui.go)."""


Route = tuple[Callable[[RepoRequest], Answer], str | None]
"""A route's method, and the one HTTP method it answers (others: 405, before anything else is
looked at); None when the route's method tells the HTTP methods apart itself."""


class ConversationRoutes(CheckRoutes):
    """The conversation's state and routes."""

    def _init_conversation(self) -> None:
        self._init_reviews()
        self._init_checks()
        self._reactions: dict[tuple[str, str, int], list[tuple[str, str]]] = {}

    # What tests set and read
    def edit_comment(self, owner: str, repo: str, comment_id: int, body: str) -> None:
        """A person edits a comment: its body, and its updated_at moved on (at least a second)."""
        with self._lock:
            found = self._comment(owner, repo, comment_id)
            if found is None:
                raise KeyError(f"no comment {comment_id} in {owner}/{repo}")
            _, comment = found
            before = comment.updated_at or comment.created_at
            comment.body = body
            comment.updated_at = max(_now(), before + timedelta(seconds=1))

    def reactions_of(self, owner: str, repo: str, comment_id: int) -> list[tuple[str, str]]:
        """(login, content) of each reaction on the comment, oldest first."""
        with self._lock:
            return list(self._reactions.get((owner, repo, comment_id), []))

    def _comment(self, owner: str, repo: str, comment_id: int) -> tuple[int, Comment] | None:
        """(issue number, comment) of a comment of the repository (called under the lock)."""
        for (o, r, number), comments in self._comments.items():
            if (o, r) == (owner, repo):
                for comment in comments:
                    if comment.id == comment_id:
                        return number, comment
        return None

    # Serving
    def _conversation_answer(
        self, method: str, path: str, query: dict[str, str], body: Any, authorized: bool
    ) -> Answer | None:
        """The answer to a request on one of these routes; None for any other path."""
        prefix = self.api.prefix
        if not path.startswith(f"{prefix}/repos/"):
            return None
        parts = [unquote(part) for part in path[len(prefix) :].strip("/").split("/")]
        if len(parts) < 4:
            return None
        owner, repo, rest = parts[1], parts[2], parts[3:]
        route = self._route_of(rest)
        if route is None:
            return None
        if not authorized:
            return self.api.unauthorized()
        handler, only = route
        with self._lock:
            if (owner, repo) not in self._repos:
                return self.api.error(404, "Not Found")
            if only is not None and method != only:
                return self.api.error(405, "Method Not Allowed")
            return handler(RepoRequest(method, owner, repo, rest, query, body))

    def _route_of(self, rest: list[str]) -> Route | None:
        """The route serving `rest` (the path after /repos/{o}/{r}/), None when not ours."""
        shape = tuple("#" if part.isdigit() else part for part in rest)
        if shape == ("issues", "comments"):
            return self._repo_comments, "GET"
        if shape == ("issues", "comments", "#", "reactions"):
            return self._reactions_answer, None
        if shape == ("issues", "comments", "#"):
            return self._comment_answer, None
        if shape == ("pulls", "#", "reviews"):
            return self._reviews_answer, "GET"
        if shape == ("pulls", "#", "reviews", "#", "comments"):
            return self._review_comments_answer, "GET"
        if len(rest) == 3 and rest[0] == "collaborators" and rest[2] == "permission":
            return self._permission_answer, "GET"
        if len(rest) == 3 and rest[0] == "commits" and rest[2] in ("status", "check-runs"):
            return self._checks_answer, "GET"
        if len(rest) == 2 and rest[0] == "statuses":
            return self._status_create, "POST"
        return None

    def _repo_comments(self, asked: RepoRequest) -> Answer:
        """GET .../issues/comments: every issue's and pull request's plain comments, `since`
        against their updated time, in the forge's order (`api.repo_comments_sort`)."""
        owner, repo, query = asked.owner, asked.repo, asked.query
        issues = self._repos[(owner, repo)]
        found = [
            (number, comment)
            for (o, r, number), comments in self._comments.items()
            if (o, r) == (owner, repo) and number in issues
            for comment in comments
        ]
        if "since" in query:
            since = datetime.fromisoformat(query["since"])
            found = [(n, c) for n, c in found if (c.updated_at or c.created_at) >= since]
        self.api.repo_comments_sort(found, query)
        path = f"{self.api.prefix}/repos/{owner}/{repo}/issues/comments"
        chosen, headers = self.api.page(found, query, path)
        return Answer(200, headers, [self._comment_json(owner, repo, n, c) for n, c in chosen])

    def _reactions_answer(self, asked: RepoRequest) -> Answer:
        """POST .../issues/comments/{id}/reactions `{"content": "+1"}` as the token's account:
        201 when made, 200 when there already (GitHub: docs.github.com/en/rest/reactions/
        reactions#create-reaction-for-an-issue-comment; Gitea: PostIssueCommentReaction,
        routers/api/v1/repo/issue_reaction.go). An unknown reaction is refused in the forge's
        way (`api.reaction_refused`). GET lists them."""
        owner, repo, comment_id = asked.owner, asked.repo, int(asked.rest[2])
        if self._comment(owner, repo, comment_id) is None:
            return self.api.not_found()
        given = self._reactions.setdefault((owner, repo, comment_id), [])
        if asked.method == "GET":
            return Answer(200, {}, [self._reaction_json(login, what) for login, what in given])
        if asked.method != "POST":
            return self.api.error(405, "Method Not Allowed")
        content = asked.body.get("content") if isinstance(asked.body, dict) else None
        if content not in REACTIONS:
            return self.api.reaction_refused(content)
        mine = (ACCOUNT, str(content))
        if mine in given:
            return Answer(200, {}, self._reaction_json(*mine))
        given.append(mine)
        return Answer(201, {}, self._reaction_json(*mine))

    def _comment_answer(self, asked: RepoRequest) -> Answer:
        """GET and PATCH .../issues/comments/{id} `{"body": "..."}`, as the token's account: 200
        with the comment, its body replaced and its updated_at moved on (the issue's is not). 404
        for an id that is no comment of the repository (Gitea: EditIssueComment, routers/api/v1/
        repo/issue_comment.go, also for one of another repository; GitHub: docs.github.com/rest/
        issues/comments#update-an-issue-comment). Who may edit, and which body it takes, is the
        forge's to say (`api.comment_edit`)."""
        owner, repo = asked.owner, asked.repo
        found = self._comment(owner, repo, int(asked.rest[2]))
        if found is None:
            return self.api.not_found()
        number, comment = found
        if asked.method == "GET":
            return Answer(200, {}, self._comment_json(owner, repo, number, comment))
        if asked.method != "PATCH":
            return self.api.error(405, "Method Not Allowed")
        role = self._permissions.get((owner, repo), {}).get(ACCOUNT, "admin")
        mine = str(comment.author).lower() == ACCOUNT
        text = asked.body.get("body") if isinstance(asked.body, dict) else None
        edited = self.api.comment_edit(mine, role, text)
        if isinstance(edited, Answer):
            return edited
        before = comment.updated_at or comment.created_at
        comment.body = edited
        comment.updated_at = max(_now(), before + timedelta(seconds=1))
        return Answer(200, {}, self._comment_json(owner, repo, number, comment))

    def _reaction_json(self, login: str, content: str) -> dict[str, Any]:
        made = {"user": self.api.user_json(login), "content": content, "created_at": _time(_now())}
        return self.api.reaction_json(made, login, content)
