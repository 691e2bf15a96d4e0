"""Gitea's (and Forgejo's) own figures and tables, each with its source: the version the
stand-in reports, the WIP title prefixes of a draft pull request, and the token scope categories
and how a route maps to one, and an exclusive label's scope."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dev.standin.state import RepoLabel

GITEA_WIP_PREFIXES = ("WIP:", "[WIP]")
"""Gitea's `[repository.pull-request] WORK_IN_PROGRESS_PREFIXES` default (modules/setting/
repository.go): a pull request whose title starts with one is a draft."""


GITEA_VERSION = "1.24.0"
"""What the Gitea stand-in says it is (GET /api/v1/version)."""


GITEA_SCOPE_CATEGORIES = (
    "activitypub",
    "admin",
    "issue",
    "misc",
    "notification",
    "organization",
    "package",
    "repository",
    "user",
)
"""Gitea's token scope categories (models/auth/access_token_scope.go): a scope is `read:` or
`write:` and one of them (write implies read), or `all`."""


def _gitea_scope_category(parts: list[str]) -> str | None:
    """The scope category Gitea's router asks of an API path (the parts after /api/v1), None
    for one that needs none (routers/api/v1/api.go, each group's tokenRequiresScopes)."""
    if parts[0] in ("user", "users"):
        return "user"
    if parts[0] in ("orgs", "teams"):
        return "organization"
    if parts[0] == "repositories":
        return "repository"
    if parts[0] != "repos" or len(parts) < 3:
        return None
    if parts[1] == "issues" or (len(parts) > 3 and parts[3] in ("issues", "labels", "milestones")):
        return "issue"
    return "repository"


def exclusive_scope(label: RepoLabel) -> str:
    """Gitea's `Label.ExclusiveScope` (models/issues/label.go): the name up to its last `/` for an
    exclusive label, "" for any other or when the `/` is first or last. Adding an exclusive label
    knocks off the issue's labels of the same exclusive scope only; a label that is not exclusive
    stays whatever its name (RemoveDuplicateExclusiveIssueLabels, models/issues/issue_label.go)."""
    if not label.exclusive:
        return ""
    cut = label.name.rfind("/")
    return "" if cut in (-1, 0, len(label.name) - 1) else label.name[:cut]
