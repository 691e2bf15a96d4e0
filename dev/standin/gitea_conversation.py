"""Gitea's (and Forgejo's) side of the conversation on a pull request (issue 34), as the stand-in
serves it: reviews and their comments, who may see a collaborator's permission or edit a comment,
reactions, commit statuses and their combined state, each beside the go-gitea/gitea source that
shows it. GiteaApi (dev.standin.gitea) takes it in; the shared routes are dev.standin.reviews,
checks and conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dev.standin.records import MIRROR_LOGIN, Answer, StoredReview, StoredStatus, _time

if TYPE_CHECKING:
    from dev.standin.forge import StandinForge

GITEA_REVIEW_STATES = {
    "changes_requested": "REQUEST_CHANGES",
    "approved": "APPROVED",
    "commented": "COMMENT",
    "pending": "PENDING",
    "dismissed": "REQUEST_CHANGES",  # Gitea keeps the state and sets `dismissed: true`
    "review_requested": "REQUEST_REVIEW",
}
"""modules/structs/pull_review.go ReviewStateType; services/convert/pull_review.go ToPullReview."""


GITEA_STATUS_STATES = ("pending", "success", "error", "failure", "warning", "skipped")
"""A commit status's states: modules/structs/commit_status.go (skipped in newer versions)."""


GITEA_STATUS_RANK = ("error", "failure", "warning", "pending", "success", "skipped")
"""The combined state is the worst of these (modules/structs/commit_status.go priorities)."""


class GiteaConversation:
    """The conversation's part of GiteaApi (which provides the names declared under
    TYPE_CHECKING)."""

    status_states = GITEA_STATUS_STATES
    default_context = ""
    """A status posted without `context` keeps it empty (NewCommitStatus, routers/api/v1/repo/
    status.go)."""
    has_check_runs = False
    """Check runs are GitHub's; Gitea and Forgejo have commit statuses."""

    if TYPE_CHECKING:
        forge: StandinForge

        def error(self, status: int, message: str) -> Answer: ...
        def not_found(self) -> Answer: ...
        def user_json(self, login: str) -> dict[str, Any]: ...
        def pull_web_url(self, owner: str, repo: str, number: int) -> str: ...

    def repo_comments_sort(self, found: list[tuple[int, Any]], query: dict[str, str]) -> None:
        """ListRepoIssueComments (routers/api/v1/repo/issue_comment.go): oldest created first."""
        found.sort(key=lambda nc: (nc[1].created_at, nc[1].id))

    def reaction_refused(self, content: object) -> Answer:
        """An unknown reaction: 403 (ErrForbiddenIssueReaction, PostIssueCommentReaction,
        routers/api/v1/repo/issue_reaction.go)."""
        return self.error(403, f"'{content}' is not an allowed reaction")

    def reaction_json(self, made: dict[str, Any], login: str, content: str) -> dict[str, Any]:
        return made

    def comment_edit(self, mine: bool, role: str, text: object) -> str | Answer:
        """The body an edit stores, or its refusal. EditIssueComment (routers/api/v1/repo/
        issue_comment.go): the comment's author or the repository's admin may edit it
        (`ctx.Doer.ID != comment.PosterID && !ctx.Repo.IsAdmin()`: 403 with no body); an empty
        body is stored."""
        if not (mine or role in ("admin", "owner")):
            return Answer(403, {}, None)
        return text if isinstance(text, str) else self.error(422, "Validation Failed")

    def shows_review(self, review: StoredReview) -> bool:
        """A requested review is listed, as REQUEST_REVIEW."""
        return True

    def review_json(self, owner: str, repo: str, pull: int, review: StoredReview) -> dict[str, Any]:
        """Gitea's PullReview (modules/structs/pull_review.go): `dismissed` a flag beside the
        state."""
        web = self.pull_web_url(owner, repo, pull)
        return {
            "id": review.id,
            "user": self.user_json(review.author),
            "team": None,
            "state": GITEA_REVIEW_STATES[review.state],
            "body": review.body,
            "commit_id": review.commit_id,
            "stale": False,
            "official": review.state in ("approved", "changes_requested", "dismissed"),
            "dismissed": review.state == "dismissed",
            "comments_count": len(review.comments),
            "submitted_at": _time(review.submitted_at),
            "updated_at": _time(review.submitted_at),
            "html_url": f"{web}#issuecomment-{review.id}",
            "pull_request_url": web,
        }

    def review_comments(
        self,
        review: StoredReview,
        common: list[dict[str, Any]],
        query: dict[str, str],
        path: str,
    ) -> Answer:
        """One unpaged array, the line as `position` (new side; `original_position` the old
        side, 0 here): GetPullReviewComments and services/convert/pull_review.go."""
        items = [
            item | {"resolver": None, "position": c.line, "original_position": 0}
            for item, c in zip(common, review.comments, strict=True)
        ]
        return Answer(200, {}, items)

    def permission_answer(
        self, owner: str, repo: str, login: str, roles: dict[str, str], asker: str
    ) -> Answer:
        """GetRepoPermissions (routers/api/v1/repo/collaborators.go): 403 unless the asker is a
        site admin, the repository's admin or asks about itself; 404 for no such user; else the
        user's access mode (services/convert/user.go ToUserAndPermission: `permission` and
        `role_name` alike), "owner" for the repository's owner, "read" for anyone on a public
        repository, "none" on a private one."""
        forge = self.forge
        if asker not in ("admin", "owner") and login.lower() != MIRROR_LOGIN:
            return self.error(
                403,
                "Only admins can query all permissions, repo admins can query all repo"
                " permissions, collaborators can query only their own",
            )
        if login.lower() not in forge._known_users(owner, repo):
            return self.error(404, f"user does not exist [uid: 0, name: {login}]")
        public = forge.token is None  # the stand-in's repositories are private with a token
        role = roles.get(login.lower()) or (
            "owner" if login.lower() == owner.lower() else ("read" if public else "none")
        )
        return Answer(
            200, {}, {"permission": role, "role_name": role, "user": self.user_json(login)}
        )

    def status_json(self, owner: str, repo: str, sha: str, status: StoredStatus) -> dict[str, Any]:
        """Gitea's CommitStatus names its state `status` (modules/structs/status.go)."""
        return {
            "id": status.id,
            "status": status.state,
            "target_url": status.target_url or "",
            "description": status.description,
            "url": f"{self.forge.url}/api/v1/repos/{owner}/{repo}/statuses/{sha}",
            "context": status.context,
            "creator": self.user_json(status.creator),
            "created_at": _time(status.created_at),
            "updated_at": _time(status.created_at),
        }

    def no_statuses(self) -> Answer | None:
        """GetCombinedCommitStatusByRef (routers/api/v1/repo/status.go) with no status: an empty
        CombinedStatus, `statuses` null."""
        empty = {"state": "", "sha": "", "total_count": 0, "statuses": None}
        return Answer(200, {}, empty | {"repository": None, "commit_url": "", "url": ""})

    def combined_state(self, states: list[str]) -> str:
        """The worst state (GITEA_STATUS_RANK)."""
        return min(states, key=GITEA_STATUS_RANK.index)

    def status_total(self, shown: int, every: int) -> int:
        """`total_count` counts the page's statuses."""
        return shown

    def check_runs(
        self, owner: str, repo: str, sha: str, query: dict[str, str], path: str
    ) -> Answer:
        return self.not_found()
