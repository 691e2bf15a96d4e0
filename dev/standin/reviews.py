"""Reviews of a pull request and who may do what (issue 34): the reviews and their inline
comments tests submit and the forge lists, and a collaborator's permission; each forge's shapes
and rules are its API's (dev.standin.gitea, dev.standin.github), cited there.

    forge.submit_review("acme", "widgets", 2, "carol", "changes_requested", "Please rename it",
                        comments=[("src/app.py", 12, "this one")])
    forge.set_permission("acme", "widgets", "carol", "maintain")
"""

from __future__ import annotations

from collections.abc import Iterable

from dev.standin.pulls import PullRoutes
from dev.standin.records import (
    MIRROR_LOGIN,
    PERSON,
    Answer,
    RepoRequest,
    StoredReview,
    StoredReviewComment,
    _now,
    _time,
)

REVIEW_STATES = (
    "changes_requested",
    "approved",
    "commented",
    "pending",
    "dismissed",
    "review_requested",
)
"""The states submit_review takes (the client's normalised names, and a review requested)."""


class ReviewRoutes(PullRoutes):
    """The reviews' and permissions' state, what tests set, and their routes."""

    def _init_reviews(self) -> None:
        self._reviews: dict[tuple[str, str, int], list[StoredReview]] = {}
        self._permissions: dict[tuple[str, str], dict[str, str]] = {}

    # What tests set
    def submit_review(
        self,
        owner: str,
        repo: str,
        pull: int,
        author: str,
        state: str,
        body: str = "",
        comments: Iterable[tuple[str, int, str]] = (),
    ) -> int:
        """A review of the pull request by `author`, in one of REVIEW_STATES, with its inline
        comments (path, line, text), on the pull request's head as it is now; its id. It moves
        the pull request's updated_at on, as a review does on both forges."""
        if state not in REVIEW_STATES:
            raise ValueError(f"unknown review state {state!r}: one of {', '.join(REVIEW_STATES)}")
        with self._lock:
            stored = self._pulls[(owner, repo, pull)]
            head = self.git.branch_head(owner, repo, stored.head) or ""
            ident = self._new_id()
            inline = [StoredReviewComment(self._new_id(), p, n, t) for p, n, t in comments]
            made = StoredReview(ident, author, state, body, _now(), head, inline)
            self._reviews.setdefault((owner, repo, pull), []).append(made)
        self._change(owner, repo, pull, author)
        return ident

    def set_permission(self, owner: str, repo: str, login: str, permission: str) -> None:
        """`login`'s role on the repository in the forge's words (Gitea: read, write, admin;
        GitHub also maintain, triage); "none" takes it away. The token's account, `tireless-bot`,
        is an admin unless set otherwise."""
        with self._lock:
            roles = self._permissions.setdefault((owner, repo), {})
            if permission == "none":
                roles.pop(login.lower(), None)
            else:
                roles[login.lower()] = permission

    # Serving (called under the lock)
    def _reviews_answer(self, asked: RepoRequest) -> Answer:
        """GET .../pulls/{n}/reviews, oldest first. A pending review is shown to its author
        only (Gitea: ToPullReviewList, services/convert/pull_review.go; GitHub likewise): the
        token's account is `tireless-bot`; the forge says which others it lists
        (`api.shows_review`). Gitea pages with X-Total-Count and no Link (ListPullReviews) and
        sends no ETag; GitHub pages by Link, and its ETag and 304 come with every GET the
        stand-in answers."""
        owner, repo, pull = asked.owner, asked.repo, int(asked.rest[1])
        if (owner, repo, pull) not in self._pulls:
            return self.api.not_found()
        shown = [
            review
            for review in self._reviews.get((owner, repo, pull), [])
            if (review.state != "pending" or review.author == MIRROR_LOGIN)
            and self.api.shows_review(review)
        ]
        path = f"{self.api.prefix}/repos/{owner}/{repo}/pulls/{pull}/reviews"
        chosen, headers = self.api.page(shown, asked.query, path)
        return Answer(200, headers, [self.api.review_json(owner, repo, pull, r) for r in chosen])

    def _review_comments_answer(self, asked: RepoRequest) -> Answer:
        """GET .../pulls/{n}/reviews/{id}/comments: the keys both forges share, each forge's
        own and its paging from `api.review_comments`."""
        owner, repo = asked.owner, asked.repo
        pull, ident = int(asked.rest[1]), int(asked.rest[3])
        found = [r for r in self._reviews.get((owner, repo, pull), []) if r.id == ident]
        if not found:
            return self.api.not_found()
        review = found[0]
        web = self.api.pull_web_url(owner, repo, pull)
        common = [
            {
                "id": c.id,
                "body": c.body,
                "user": self.api.user_json(review.author),
                "pull_request_review_id": review.id,
                "created_at": _time(review.submitted_at),
                "updated_at": _time(review.submitted_at),
                "path": c.path,
                "commit_id": review.commit_id,
                "original_commit_id": review.commit_id,
                "diff_hunk": f"@@ -{c.line},1 +{c.line},1 @@",
                "html_url": f"{web}/files#issuecomment-{c.id}",
                "pull_request_url": web,
            }
            for c in review.comments
        ]
        path = f"/repos/{owner}/{repo}/pulls/{pull}/reviews/{ident}/comments"
        return self.api.review_comments(review, common, asked.query, path)

    def _permission_answer(self, asked: RepoRequest) -> Answer:
        """GET .../collaborators/{login}/permission, asked as the token's account, answered by
        the forge's rules (`api.permission_answer`)."""
        roles = self._permissions.get((asked.owner, asked.repo), {})
        asker = roles.get(MIRROR_LOGIN, "admin")
        return self.api.permission_answer(asked.owner, asked.repo, asked.rest[1], roles, asker)

    def _known_users(self, owner: str, repo: str) -> set[str]:
        """The logins the stand-in knows (lower case): its two accounts, the owner, and whoever
        has a role, wrote a comment, a review or a pull request."""
        known = {MIRROR_LOGIN, PERSON, owner.lower()}
        known |= set(self._permissions.get((owner, repo), {}))
        for comments in self._comments.values():
            known |= {str(c.author).lower() for c in comments}
        for reviews in self._reviews.values():
            known |= {r.author.lower() for r in reviews}
        known |= {str(p.author).lower() for p in self._pulls.values()}
        return known
