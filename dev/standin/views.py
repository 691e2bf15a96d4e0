"""What both forges' objects share: the JSON of issues, repositories, labels, comments and pull
requests as far as Gitea and GitHub agree (each forge's own keys come from its API module,
dev.standin.gitea or dev.standin.github), and the Link header of a listing's page."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from dev.standin.dependencies import DependencyRoutes
from dev.standin.records import Comment, RepoLabel, StoredIssue, _time
from dev.standin.state import ForgeState


class ForgeViews(ForgeState, DependencyRoutes):
    """The JSON each forge answers, built from the state."""

    def _link(self, owner: str, repo: str, query: dict[str, str], page: int, last: int) -> str:
        def to(number: int) -> str:
            # Gitea writes its Link headers from ROOT_URL, not from the address it was asked at:
            # genAPILinks (services/context/api.go) is setting.AppURL + the request URI.
            return f"{self.root_url or self.url}{self._issues_path(owner, repo)}?" + urlencode(
                query | {"page": str(number)}
            )

        rels = []
        if page < last:
            rels += [f'<{to(page + 1)}>; rel="next"', f'<{to(last)}>; rel="last"']
        if page > 1:
            rels += [f'<{to(1)}>; rel="first"', f'<{to(page - 1)}>; rel="prev"']
        return ", ".join(rels)

    def _pull_json(
        self,
        owner: str,
        repo: str,
        number: int,
        heads: dict[str, str] | None = None,
        repo_json: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A pull request as each forge serves it (called under the lock): the keys both share
        here, each forge's own from its `pull_json`."""
        issue = self._repos[(owner, repo)][number]
        pull = self._pulls[(owner, repo, number)]
        web = self.api.pull_web_url(owner, repo, number)
        repo_json = repo_json or self._repo_json(owner, repo)
        heads = self.git.branches(owner, repo) if heads is None else heads
        head_sha, base_sha = heads.get(pull.head), heads.get(pull.base, "")
        user = {"id": 2 if pull.author == self.login else 3, "login": pull.author}
        common: dict[str, Any] = {
            "id": 5000 + number,
            "number": number,
            "user": user,
            "title": issue.title,
            "state": issue.state,
            "labels": [],
            "milestone": None,
            "assignee": None,
            "html_url": web,
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "merged_at": _time(issue.merged_at),
            "merge_commit_sha": None,
            "draft": self.api.is_draft(issue.title, pull),
            "created_at": _time(issue.created_at),
            "updated_at": _time(issue.updated_at),
            "closed_at": _time(issue.closed_at),
        }
        return common | self.api.pull_json(
            owner, repo, issue, pull, repo_json, head_sha or "", base_sha
        )

    def _comment_json(self, owner: str, repo: str, number: int, comment: Comment) -> dict[str, Any]:
        web = f"{self.url}/{owner}/{repo}/issues/{number}#issuecomment-{comment.id}"
        user = {"id": 2 if comment.author == self.login else 3, "login": comment.author}
        common = {
            "id": comment.id,
            "html_url": web,
            "body": comment.body,
            "user": user,
            "created_at": _time(comment.created_at),
            "updated_at": _time(comment.updated_at or comment.created_at),
        }
        return common | self.api.comment_json(owner, repo, number, comment)

    def _label_json(self, owner: str, repo: str, label: RepoLabel) -> dict[str, Any]:
        return self.api.label_json(
            f"{self.url}{self.api.prefix}/repos/{owner}/{repo}/labels", label
        )

    def _api_parts(self, path: str) -> tuple[str, list[str]]:
        """The forge's API prefix and the parts of the path after it."""
        prefix = self.api.prefix
        return prefix, path[len(prefix) :].strip("/").split("/")

    def _api_route_parts(self, path: str) -> list[str] | None:
        """The parts of an API path after the forge's prefix, None for a path outside it."""
        parts = path.strip("/").split("/")
        prefix = self.api.prefix.strip("/").split("/") if self.api.prefix else []
        return parts[len(prefix) :] if parts[: len(prefix)] == prefix else None

    def _repo_json(self, owner: str, repo: str) -> dict[str, Any]:
        with self._lock:
            repo_id = self._repo_id(owner, repo)
        return (
            {
                "id": repo_id,
                "name": repo,
                "full_name": f"{owner}/{repo}",
                "owner": {"id": 1, "login": owner} | self.api.owner_extra(owner),
                "private": self.token is not None,
                "html_url": f"{self.url}/{owner}/{repo}",
                "clone_url": self.clone_url(owner, repo),
                "default_branch": self.git.default_branch(owner, repo),
            }
            | (  # the caller's access: none shown to an anonymous one
                {"permissions": dict(self.repo_permissions)} if self.token is not None else {}
            )
            | self.api.repo_extra()
        )

    def _issue_json(self, owner: str, repo: str, issue: StoredIssue) -> dict[str, Any]:
        web = f"{self.url}/{owner}/{repo}/issues/{issue.number}"
        if issue.pull_request:
            web = self.api.pull_web_url(owner, repo, issue.number)
        api = f"{self.url}{self._issues_path(owner, repo)}/{issue.number}"
        user = {"id": 2 if issue.author == self.login else 1, "login": issue.author}
        ids = {name: label.id for name, label in self._org_labels.get(owner, {}).items()}
        ids |= {name: label.id for name, label in self._labels.get((owner, repo), {}).items()}
        common: dict[str, Any] = {
            "id": 1000 + issue.number,
            "url": api,
            "html_url": web,
            "number": issue.number,
            "user": user,
            "title": issue.title,
            "body": issue.body,
            "state": issue.state,
            "comments": 0,
            "created_at": _time(issue.created_at),
            "updated_at": _time(issue.updated_at),
            "closed_at": _time(issue.closed_at),
            "assignee": None,
            "milestone": None,
        }
        return common | self.api.issue_json(owner, repo, issue, ids, api, web)
