"""GitHub's side of the conversation on a pull request (issue 34), as the stand-in serves it:
reviews and their comments, who may see a collaborator's permission or edit a comment, reactions,
commit statuses and their combined state, and check runs, each beside the GitHub REST doc (or the
client's record of GitHub's answer) that shows it. GitHubApi (dev.standin.github) takes it in; the
shared routes are dev.standin.reviews, checks and conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dev.standin.records import (
    Answer,
    StoredCheckRun,
    StoredReview,
    StoredStatus,
    _time,
    latest,
)

if TYPE_CHECKING:
    from dev.standin.forge import StandinForge

GITHUB_REVIEW_STATES = {
    "changes_requested": "CHANGES_REQUESTED",
    "approved": "APPROVED",
    "commented": "COMMENTED",
    "pending": "PENDING",
    "dismissed": "DISMISSED",
}
"""docs.github.com/en/rest/pulls/reviews; a requested review is no review there (the pull
request's `requested_reviewers` say it), so it is not listed."""


GITHUB_STATUS_STATES = ("pending", "success", "error", "failure")
"""A commit status's states: docs.github.com/en/rest/commits/statuses#create-a-commit-status."""


CHECK_RUN_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CHECK_RUN_CONCLUSIONS = (
    "success",
    "failure",
    "neutral",
    "cancelled",
    "skipped",
    "timed_out",
    "action_required",
    "stale",
    "startup_failure",
)
"""A check run's statuses and conclusions: docs.github.com/en/rest/checks/runs#create-a-check-run."""


PUSH_ROLES = ("admin", "owner", "maintain", "write")
"""The roles with push access (docs.github.com/en/organizations/managing-user-access-to-your-
organizations-repositories/managing-repository-roles/repository-roles-for-an-organization)."""


GITHUB_LEGACY_PERMISSION = {"maintain": "write", "triage": "read", "owner": "admin"}
"""GitHub's `permission` is a base role: "the maintain role is mapped to write and the triage role
is mapped to read" (docs.github.com/en/rest/collaborators/collaborators#get-repository-
permissions-for-a-user); `role_name` names the role itself."""


class GitHubConversation:
    """The conversation's part of GitHubApi (which provides the names declared under
    TYPE_CHECKING)."""

    status_states = GITHUB_STATUS_STATES
    default_context = "default"
    """A status posted without `context` is "default" (docs.github.com/en/rest/commits/
    statuses#create-a-commit-status)."""
    has_check_runs = True

    if TYPE_CHECKING:
        forge: StandinForge

        def error(self, status: int, message: str) -> Answer: ...
        def not_found(self) -> Answer: ...
        def too_long(self, resource: str, text: object) -> Answer | None: ...
        def user_json(self, login: str) -> dict[str, Any]: ...
        def pull_web_url(self, owner: str, repo: str, number: int) -> str: ...
        def page(
            self, items: list[Any], query: dict[str, str], path: str, *, counted: bool = True
        ) -> tuple[list[Any], dict[str, str]]: ...

    def repo_comments_sort(self, found: list[tuple[int, Any]], query: dict[str, str]) -> None:
        """`sort` created (default) or updated, `direction` (docs.github.com/en/rest/issues/
        comments#list-issue-comments-for-a-repository)."""
        if query.get("sort") == "updated":
            found.sort(
                key=lambda nc: (nc[1].updated_at or nc[1].created_at, nc[1].id),
                reverse=query.get("direction") == "desc",
            )
        else:
            found.sort(
                key=lambda nc: (nc[1].created_at, nc[1].id),
                reverse=query.get("direction") == "desc",
            )

    def reaction_refused(self, content: object) -> Answer:
        """An unknown reaction: 422 (docs.github.com/en/rest/reactions/reactions#create-reaction-
        for-an-issue-comment)."""
        return self.error(422, "Validation Failed")

    def reaction_json(self, made: dict[str, Any], login: str, content: str) -> dict[str, Any]:
        ident = 7000 + sum(f"{login}{content}".encode())
        return {"id": ident, "node_id": f"REA_{ident}"} | made

    def comment_edit(self, mine: bool, role: str, text: object) -> str | Answer:
        """The body an edit stores, or its refusal. The comment's author or anyone with write
        access may edit it (docs.github.com
        "Managing disruptive comments": 403 "Must have admin rights to Repository." otherwise);
        an empty body is 422, as one past GITHUB_BODY_LIMIT (docs.github.com/rest/issues/
        comments#update-an-issue-comment)."""
        if not (mine or role in PUSH_ROLES):
            return self.error(403, "Must have admin rights to Repository.")
        if not isinstance(text, str) or not text:
            return self.error(422, "Validation Failed")
        return self.too_long("IssueComment", text) or text

    def shows_review(self, review: StoredReview) -> bool:
        """A requested review is no review on GitHub (GITHUB_REVIEW_STATES)."""
        return review.state != "review_requested"

    def review_json(self, owner: str, repo: str, pull: int, review: StoredReview) -> dict[str, Any]:
        """GitHub's pull-request-review: no `submitted_at` while pending."""
        web = self.pull_web_url(owner, repo, pull)
        api = f"{self.forge.url}/repos/{owner}/{repo}/pulls/{pull}"
        shaped: dict[str, Any] = {
            "id": review.id,
            "node_id": f"PRR_{review.id}",
            "user": self.user_json(review.author),
            "body": review.body,
            "state": GITHUB_REVIEW_STATES[review.state],
            "html_url": f"{web}#pullrequestreview-{review.id}",
            "pull_request_url": api,
            "author_association": "COLLABORATOR",
            "_links": {"html": {"href": f"{web}#pullrequestreview-{review.id}"}},
            "commit_id": review.commit_id,
        }
        if review.state != "pending":
            shaped["submitted_at"] = _time(review.submitted_at)
        return shaped

    def review_comments(
        self,
        review: StoredReview,
        common: list[dict[str, Any]],
        query: dict[str, str],
        path: str,
    ) -> Answer:
        """Paged by Link, `line` and `original_line` the file's lines, `position` the diff's
        (docs.github.com/en/rest/pulls/reviews#list-comments-for-a-pull-request-review)."""
        items = [
            item
            | {
                "node_id": f"PRRC_{c.id}",
                "position": 1,
                "original_position": 1,
                "line": c.line,
                "original_line": c.line,
                "side": "RIGHT",
                "start_line": None,
                "author_association": "COLLABORATOR",
            }
            for item, c in zip(common, review.comments, strict=True)
        ]
        chosen, headers = self.page(items, query, path)
        return Answer(200, headers, chosen)

    def permission_answer(
        self, owner: str, repo: str, login: str, roles: dict[str, str], asker: str
    ) -> Answer:
        """403 "Must have push access to view collaborator permission." (yegor256/rultor#1407);
        404 for a login that is not a collaborator (tokens-studio/figma-plugin#819) or no user;
        `permission` the base role (GITHUB_LEGACY_PERMISSION), `role_name` the role."""
        if asker not in PUSH_ROLES:
            return self.error(403, "Must have push access to view collaborator permission.")
        given = roles.get(login.lower()) or ("admin" if login.lower() == owner.lower() else None)
        if given is None:
            known = login.lower() in self.forge._known_users(owner, repo)
            return self.error(404, "Not Found" if known else f"{login} is not a user")
        base = GITHUB_LEGACY_PERMISSION.get(given, given)
        return Answer(
            200, {}, {"permission": base, "role_name": given, "user": self.user_json(login)}
        )

    def status_json(self, owner: str, repo: str, sha: str, status: StoredStatus) -> dict[str, Any]:
        """GitHub's status names its state `state`, a null description or target_url when
        none."""
        return {
            "url": f"{self.forge.url}/repos/{owner}/{repo}/statuses/{sha}",
            "avatar_url": None,
            "id": status.id,
            "node_id": f"SC_{status.id}",
            "state": status.state,
            "description": status.description or None,
            "target_url": status.target_url,
            "context": status.context,
            "created_at": _time(status.created_at),
            "updated_at": _time(status.created_at),
        }

    def no_statuses(self) -> Answer | None:
        """With no status the combined status is served as any other (pending, none listed)."""
        return None

    def combined_state(self, states: list[str]) -> str:
        """failure if any is error or failure, success if all are, else pending (docs.github.com/
        en/rest/commits/statuses#get-the-combined-status-for-a-specific-reference)."""
        if any(s in ("error", "failure") for s in states):
            return "failure"
        return "success" if states and all(s == "success" for s in states) else "pending"

    def status_total(self, shown: int, every: int) -> int:
        """`total_count` counts every context's latest status."""
        return every

    def check_runs(
        self, owner: str, repo: str, sha: str, query: dict[str, str], path: str
    ) -> Answer:
        """GET .../commits/{ref}/check-runs (docs.github.com/en/rest/checks/runs#list-check-runs-
        for-a-git-reference): the latest run of each name, paged by Link."""
        runs = latest(self.forge._check_runs.get((owner, repo, sha), []), lambda run: run.name)
        chosen, headers = self.page(runs, query, path)
        items = [self._check_run_json(owner, repo, sha, run) for run in chosen]
        return Answer(200, headers, {"total_count": len(runs), "check_runs": items})

    def _check_run_json(
        self, owner: str, repo: str, sha: str, run: StoredCheckRun
    ) -> dict[str, Any]:
        url = self.forge.url
        web = f"{url}/{owner}/{repo}/runs/{run.id}"
        return {
            "id": run.id,
            "head_sha": sha,
            "node_id": f"CR_{run.id}",
            "external_id": "",
            "url": f"{url}/repos/{owner}/{repo}/check-runs/{run.id}",
            "html_url": web,
            "details_url": run.details_url or web,
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": _time(run.started_at),
            "completed_at": _time(run.completed_at),
            "output": {
                "title": run.title,
                "summary": run.summary,
                "text": None,
                "annotations_count": 0,
                "annotations_url": f"{url}/repos/{owner}/{repo}/check-runs/{run.id}/annotations",
            },
            "name": run.name,
            "check_suite": {"id": 9000 + run.id},
            "app": {"id": 1, "slug": "standin-ci", "name": "Stand-in CI"},
            "pull_requests": [],
        }
