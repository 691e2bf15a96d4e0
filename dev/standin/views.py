"""How each forge shows its objects: the JSON of issues, repositories, labels, comments, timeline
events and pull requests, Gitea's and GitHub's shapes side by side, and the Link header of a
page."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from dev.standin.dependencies import DependencyRoutes
from dev.standin.github import GITHUB_BODY_LIMIT
from dev.standin.state import (
    MIRROR_LOGIN,
    Answer,
    Comment,
    Event,
    ForgeState,
    RepoLabel,
    StoredIssue,
    _time,
)


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

    def _github_too_long(self, resource: str, text: object) -> Answer | None:
        """GitHub's 422 for a body past GITHUB_BODY_LIMIT characters (where it is cited); None
        when the body fits, or on Gitea."""
        if self.flavour != "github" or not isinstance(text, str) or len(text) <= GITHUB_BODY_LIMIT:
            return None
        return self._github_invalid(
            {"resource": resource, "code": "custom", "field": "body",
             "message": f"body is too long (maximum is {GITHUB_BODY_LIMIT} characters)"},
            docs="https://docs.github.com/rest",
        )  # fmt: skip

    def _github_invalid(
        self,
        *errors: dict[str, str],
        docs: str = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
    ) -> Answer:
        """GitHub's 422 for a request it understood but refuses: "Validation Failed" and why, in
        `errors` (docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api)."""
        return Answer(
            422,
            {},
            {"message": "Validation Failed", "errors": list(errors), "documentation_url": docs},
        )

    def _pull_web_url(self, owner: str, repo: str, number: int) -> str:
        # A pull request's page: Gitea's is .../pulls/N (Issue.HTMLURL, models/issues/issue.go),
        # GitHub's .../pull/N (singular, the `html_url` of its pull-request schema).
        kind = "pulls" if self.flavour == "gitea" else "pull"
        return f"{self.url}/{owner}/{repo}/{kind}/{number}"

    def _pull_json(
        self,
        owner: str,
        repo: str,
        number: int,
        heads: dict[str, str] | None = None,
        repo_json: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A pull request as each forge serves it (called under the lock). Gitea's
        `PullRequest` (modules/structs/pull.go; services/convert/pull.go ToAPIPullRequest):
        `url` is the web page too, `head.label` is the branch name, `head.ref` the branch when
        it exists and `refs/pull/N/head` when it is gone. GitHub's `pull-request`: `head.label`
        is `owner:branch`, `head.ref` the branch, `body` null when empty, `draft` a flag."""
        issue = self._repos[(owner, repo)][number]
        pull = self._pulls[(owner, repo, number)]
        web = self._pull_web_url(owner, repo, number)
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
            "merged_at": None,
            "merge_commit_sha": None,
            "draft": self._is_draft(issue.title, pull),
            "created_at": _time(issue.created_at),
            "updated_at": _time(issue.updated_at),
            "closed_at": _time(issue.closed_at),
        }
        if self.flavour == "gitea":
            branch = {"repo_id": repo_json["id"], "repo": repo_json}
            return common | {
                "url": web,
                "body": issue.body,
                "assignees": None,
                "is_locked": False,
                "comments": 0,
                "mergeable": True,
                "merged": False,
                "merged_by": None,
                "allow_maintainer_edit": False,
                "merge_base": base_sha,
                "due_date": None,
                "head": branch
                | {
                    "label": pull.head,
                    "ref": pull.head if head_sha else f"refs/pull/{number}/head",
                    "sha": head_sha or "",
                },
                "base": branch | {"label": pull.base, "ref": pull.base, "sha": base_sha},
            }
        api = f"{self.url}/repos/{owner}/{repo}"
        owner_json = {"login": owner, "id": 1}
        return common | {
            "url": f"{api}/pulls/{number}",
            "node_id": f"PR_{number}",
            "issue_url": f"{api}/issues/{number}",
            "body": issue.body or None,
            "locked": False,
            "active_lock_reason": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "author_association": "OWNER",
            "auto_merge": None,
            "merged": False,
            "mergeable": None,
            "head": {
                "label": f"{owner}:{pull.head}",
                "ref": pull.head,
                "sha": head_sha or "",
                "user": owner_json,
                "repo": repo_json,
            },
            "base": {
                "label": f"{owner}:{pull.base}",
                "ref": pull.base,
                "sha": base_sha,
                "user": owner_json,
                "repo": repo_json,
            },
        }

    def _timeline_comment_json(
        self, owner: str, repo: str, number: int, comment: Comment
    ) -> dict[str, Any]:
        """A plain comment as the timeline shows it (services/convert/issue_comment.go
        ToTimelineComment): type "comment", its text the body, no label."""
        web = f"{self.url}/{owner}/{repo}/issues/{number}"
        return {
            "id": comment.id,
            "type": "comment",
            "body": comment.body,
            "user": {"id": 2 if comment.author == MIRROR_LOGIN else 3, "login": comment.author},
            "label": None,
            "created_at": _time(comment.created_at),
            "updated_at": _time(comment.updated_at or comment.created_at),
            "html_url": f"{web}#issuecomment-{comment.id}",
            "issue_url": web,
            "pull_request_url": "",
        }

    def _timeline_json(self, owner: str, repo: str, number: int, event: Event) -> dict[str, Any]:
        kind = {"labeled": "label", "unlabeled": "label", "closed": "close", "reopened": "reopen"}
        web = f"{self.url}/{owner}/{repo}/issues/{number}"
        return {
            "id": event.id,
            "type": kind[event.kind],
            "body": "1" if event.kind == "labeled" else "",
            "user": {"id": 1, "login": event.actor},
            "label": None if event.label is None else self._label_json(owner, repo, event.label),
            "created_at": _time(event.at),
            "updated_at": _time(event.at),
            "html_url": f"{web}#issuecomment-{event.id}",
            "issue_url": web,
            "pull_request_url": "",
        }

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
        if self.flavour == "gitea":
            # A pull request's comment has no issue_url but a pull_request_url, both web pages
            # (models/issues/comment.go IssueURL, PRURL).
            issue = self._repos.get((owner, repo), {}).get(number)
            pull = issue is not None and issue.pull_request
            web = f"{self.url}/{owner}/{repo}/issues/{number}"
            return common | {
                "issue_url": "" if pull else web,
                "pull_request_url": self._pull_web_url(owner, repo, number) if pull else "",
                "original_author": "",
                "original_author_id": 0,
                "assets": [],
            }
        api = f"{self.url}/repos/{owner}/{repo}/issues"
        return common | {
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/comments/{comment.id}",
            "issue_url": f"{api}/{number}",
            "author_association": "NONE",
        }

    def _github_label(self, labels: dict[str, RepoLabel], name: str) -> RepoLabel | None:
        """The repository's label GitHub takes `name` for: it matches label names without case
        (GET .../labels/Bug answers `bug`; POST .../issues/{n}/labels ["Bug"] adds `bug`; creating
        `Bug` is 422 already_exists: rust-lang/triagebot#1915, git-bug/git-bug#176,
        intuit/auto#548). str.lower stands in for GitHub's collation."""
        return labels.get(name) or next(
            (label for key, label in labels.items() if key.lower() == name.lower()), None
        )

    def _label_json(self, owner: str, repo: str, label: RepoLabel) -> dict[str, Any]:
        api = (
            f"{self.url}{'/api/v1' if self.flavour == 'gitea' else ''}/repos/{owner}/{repo}/labels"
        )
        if self.flavour == "gitea":
            return {
                "id": label.id,
                "name": label.name,
                "exclusive": label.exclusive,
                "is_archived": False,
                "color": label.color,
                "description": label.description,
                "url": f"{api}/{label.id}",
            }
        return {
            "id": label.id,
            "node_id": f"LA_{label.id}",
            "url": f"{api}/{label.name}",
            "name": label.name,
            "color": label.color,
            "default": False,
            "description": label.description or None,
        }

    def _api_parts(self, path: str) -> tuple[str, list[str]]:
        """The API prefix of the flavour and the parts after it."""
        prefix = "/api/v1" if self.flavour == "gitea" else ""
        return prefix, path[len(prefix) :].strip("/").split("/")

    def _repo_json(self, owner: str, repo: str) -> dict[str, Any]:
        with self._lock:
            repo_id = self._repo_id(owner, repo)
        owner_json = {"id": 1, "login": owner} | (
            {"username": owner} if self.flavour == "gitea" else {}
        )
        return (
            {
                "id": repo_id,
                "name": repo,
                "full_name": f"{owner}/{repo}",
                "owner": owner_json,
                "private": self.token is not None,
                "html_url": f"{self.url}/{owner}/{repo}",
                "clone_url": self.clone_url(owner, repo),
                "default_branch": self.git.default_branch(owner, repo),
            }
            | (  # the caller's access: none shown to an anonymous one
                {"permissions": dict(self.repo_permissions)} if self.token is not None else {}
            )
            | ({"has_pull_requests": self.has_pull_requests} if self.flavour == "gitea" else {})
        )

    def _issue_json(self, owner: str, repo: str, issue: StoredIssue) -> dict[str, Any]:
        web = f"{self.url}/{owner}/{repo}/issues/{issue.number}"
        if issue.pull_request:
            web = self._pull_web_url(owner, repo, issue.number)
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
        if self.flavour == "gitea":
            labels = [
                {
                    "id": ids.get(name, n),
                    "name": name,
                    "color": "00aabb",
                    "description": "",
                    "url": "",
                }
                for n, name in enumerate(issue.labels, 1)
            ]
            pr = {"merged": False, "merged_at": None} if issue.pull_request else None
            return common | {
                "labels": labels,
                "assignees": None,
                "is_locked": False,
                "ref": "",
                "original_author": "",
                "original_author_id": 0,
                "due_date": None,
                "pull_request": pr,
                "repository": {
                    "id": 1,
                    "name": repo,
                    "owner": owner,
                    "full_name": f"{owner}/{repo}",
                },
            }
        labels = [
            {
                "id": ids.get(name, n),
                "node_id": f"L{n}",
                "url": "",
                "name": name,
                "color": "00aabb",
                "default": False,
                "description": None,
            }
            for n, name in enumerate(issue.labels, 1)
        ]
        shaped = common | {
            "node_id": f"I_{issue.number}",
            "repository_url": f"{self.url}/repos/{owner}/{repo}",
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "labels": labels,
            "assignees": [],
            "locked": False,
            "active_lock_reason": None,
            "author_association": "OWNER",
            "state_reason": "completed" if issue.state == "closed" else None,
        }
        if issue.pull_request:  # GitHub lists pull requests among issues, marked by this key
            shaped["pull_request"] = {
                "url": api,
                "html_url": web,
                "diff_url": web + ".diff",
                "patch_url": web + ".patch",
                "merged_at": None,
            }
        return shaped | self._relation_summaries(owner, repo, issue.number)
