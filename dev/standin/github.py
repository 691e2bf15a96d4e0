"""GitHub's own figures and tables, each with its source: the body and label name limits, and the
fine-grained token permissions and how a route maps to one."""

from __future__ import annotations

GITHUB_BODY_LIMIT = 65536
"""The most characters GitHub takes in a comment's, an issue's or a pull request's body: past it,
422 "Validation Failed" with the error {resource, code: "custom", field: "body", message: "body
is too long (maximum is 65536 characters)"} (GitHub's answer as cockroachdb/cockroach records it,
pkg/cmd/github-post/main.go; github.com/orgs/community/discussions/27190). Gitea sets none."""


GITHUB_LABEL_NAME_LIMIT = 50
"""The most characters of a GitHub label's name: POST .../labels answers 422 {resource: "Label",
code: "custom", field: "name", message: "name is too long (maximum is 50 characters)"}
(github/docs#32156); adding a new such name to an issue, 422 {value, resource: "Label", field:
"name", code: "invalid"} (semantic-release/github#518). Gitea allows 255."""


GITHUB_PERMISSIONS = ("checks", "contents", "issues", "metadata", "pull_requests", "statuses")
"""The fine-grained repository permissions the stand-in's routes need, each `name:read` or
`name:write` (write implies read). `metadata:read` every fine-grained token has (docs.github.com/
en/rest/authentication/permissions-required-for-fine-grained-personal-access-tokens)."""


def _github_permission(parts: list[str]) -> str | None:
    """The fine-grained repository permission a GitHub API path needs, None for one outside a
    repository (docs.github.com/en/rest/authentication/permissions-required-for-fine-grained-
    personal-access-tokens: issues, labels and milestones `issues`; pulls and their reviews
    `pull_requests`; commit statuses `statuses`; check runs `checks`; git, contents, branches
    and commits `contents`; the repository itself and its collaborators `metadata`)."""
    if parts[0] == "repositories" and len(parts) >= 2:
        rest = parts[2:]
    elif parts[0] == "repos" and len(parts) >= 3:
        rest = parts[3:]
    else:
        return None
    first = rest[0] if rest else ""
    if first in ("issues", "labels", "milestones"):
        return "issues"
    if first == "pulls":
        return "pull_requests"
    if first == "statuses" or (first == "commits" and rest[2:3] in (["status"], ["statuses"])):
        return "statuses"
    if first in ("check-runs", "check-suites") or rest[2:3] in (["check-runs"], ["check-suites"]):
        return "checks"
    if first in ("contents", "git", "branches", "commits", "compare"):
        return "contents"
    return "metadata"
