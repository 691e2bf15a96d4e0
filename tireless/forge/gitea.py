"""Gitea and Forgejo (API v1): `GET {base}/api/v1/repos/{owner}/{repo}/issues?type=issues&
state=...&since=...&page=N&limit=M` with `Authorization: token T`.

Gitea clamps `limit` to its `[api] MAX_RESPONSE_ITEMS` (50 by default), so a page shorter than
the limit asked for says nothing about the end: the pages are followed by `Link: rel="next"`
(tireless.forge.paging), and their items (with those skipped as too large) must add up to the
`X-Total-Count` the first page announced.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from tireless.forge.client import BadResponse, ForgeIssue, Listing, WriteRefused
from tireless.forge.http import MAX_BYTES, TIMEOUT, Http, Response
from tireless.forge.paging import read_pages
from tireless.forge.validate import decode_json, full_name, is_pull_request, issue, not_moved

PAGE_SIZE = 50
LABEL_COLOR = "#6a737d"
"""Gitea up to 1.20 wants a color as "#rrggbb" (binding Size(7)); newer ones take that too."""


def rfc3339(when: datetime) -> str:
    """Whole seconds, rounded down: Gitea compares `since` with its updated unix seconds."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GiteaClient:
    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = TIMEOUT,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"token {token}"
        api = base_url.rstrip("/") + "/api/v1"
        self._http = Http(api, headers, timeout=timeout, max_bytes=max_bytes)
        self._label_ids: dict[tuple[str, str], dict[str, int]] = {}

    def close(self) -> None:
        self._http.close()

    def _issues_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/issues")

    def _repo_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}")

    def _labels_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/labels")

    # The mirror. The issue-labels endpoints take label ids (IssueLabelsOption.labels is []int64
    # up to Gitea 1.20; later versions take names too), so names are looked up in the
    # repository's labels, kept per client for the round.
    def _ids(self, owner: str, repo: str, *, fresh: bool = False) -> dict[str, int]:
        if fresh or (owner, repo) not in self._label_ids:
            ids: dict[str, int] = {}
            url: str | None = self._labels_url(owner, repo)
            params: dict[str, str] | None = {"page": "1", "limit": str(PAGE_SIZE)}
            while url is not None:
                response = self._http.get(url, params)
                for item in _json_list(response):
                    if isinstance(item.get("name"), str) and type(item.get("id")) is int:
                        ids[item["name"]] = item["id"]
                url, params = self._http.next_page(response), None
            self._label_ids[(owner, repo)] = ids
        return self._label_ids[(owner, repo)]

    def ensure_label(self, owner: str, repo: str, name: str, description: str) -> None:
        if name in self._ids(owner, repo) or name in self._ids(owner, repo, fresh=True):
            return
        # Not exclusive: an exclusive scoped label would knock the other <prefix>/* labels off.
        body = {"name": name, "color": LABEL_COLOR, "description": description, "exclusive": False}
        try:
            response = self._http.send("POST", self._labels_url(owner, repo), body)
        except WriteRefused:
            if name in self._ids(owner, repo, fresh=True):  # made meanwhile by someone else
                return
            raise
        created = decode_json(
            response.body, response.headers.get("content-type", ""), response.where
        )
        if not isinstance(created, dict) or type(created.get("id")) is not int:
            raise BadResponse(f"{response.where}: the created label has no id")
        self._label_ids[(owner, repo)][name] = created["id"]

    def _id(self, owner: str, repo: str, name: str) -> int:
        ids = self._ids(owner, repo)
        if name not in ids:
            ids = self._ids(owner, repo, fresh=True)
        if name not in ids:
            raise WriteRefused(f"label {name!r} is not a label of {owner}/{repo}")
        return ids[name]

    def add_label(self, owner: str, repo: str, number: int, name: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/labels"
        self._http.send("POST", url, {"labels": [self._id(owner, repo, name)]})

    def remove_label(self, owner: str, repo: str, number: int, name: str) -> None:
        ids = self._ids(owner, repo)
        if name not in ids:
            return  # not a label of the repository, so not on its issue either
        url = f"{self._issues_url(owner, repo)}/{number}/labels/{ids[name]}"
        try:
            self._http.send("DELETE", url)
        except WriteRefused as refused:  # the label went from the repository meanwhile
            if refused.status not in (404, 422):
                raise

    def comment_bodies(self, owner: str, repo: str, number: int) -> list[str]:
        url: str | None = f"{self._issues_url(owner, repo)}/{number}/comments"
        bodies: list[str] = []
        while url is not None:
            response = self._http.get(url)
            bodies += [c["body"] for c in _json_list(response) if isinstance(c.get("body"), str)]
            url = self._http.next_page(response)
        return bodies

    def add_comment(self, owner: str, repo: str, number: int, body: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/comments"
        self._http.send("POST", url, {"body": body}, retry=False)

    def list_issues(
        self,
        owner: str,
        repo: str,
        *,
        since: datetime | None,
        state: str = "all",
        etag: str | None = None,  # Gitea sends no ETag for listings
    ) -> Listing:
        params = {"type": "issues", "state": state, "page": "1", "limit": str(PAGE_SIZE)}
        if since is not None:
            params["since"] = rfc3339(since)
        pages = read_pages(self._http, self._issues_url(owner, repo), params, "limit")
        # Gitea counts every matching item on each page: the first page's count, or another's
        # when the first was too large and read in smaller pages.
        counted = pages.first or pages.last
        total = None if counted is None else _total_count(counted)
        if total is not None and len(pages.items) + len(pages.skipped) != total:
            raise BadResponse(
                f"GET {owner}/{repo} issues: X-Total-Count says {total},"
                f" the {pages.count} page(s) held {len(pages.items)}"
            )
        where = f"GET {owner}/{repo} issues"
        issues = [issue(item, where) for item in pages.items if not is_pull_request(item)]
        moved_to = self.repository_name(owner, repo) if pages.moved else None
        return Listing(tuple(issues), pages.count, moved_to=moved_to, skipped=tuple(pages.skipped))

    def get_issue(self, owner: str, repo: str, number: int) -> ForgeIssue | None:
        response = self._http.get(f"{self._issues_url(owner, repo)}/{number}")
        if response.status in (404, 410):
            return None
        data = _json(response)
        if response.moved:
            not_moved(data, number, self.repository_name(owner, repo), response.where)
        return issue(data, response.where)

    def repository_name(self, owner: str, repo: str) -> str:
        """owner/name as the forge calls the repository now (following a rename's redirect)."""
        response = self._http.get(self._repo_url(owner, repo))
        return full_name(_json(response), response.where)

    def set_deadline(self, seconds: float | None) -> None:
        self._http.set_deadline(seconds)


def _json(response: Response) -> object:
    if response.status != 200:
        raise BadResponse(f"{response.where}: HTTP {response.status}")
    return decode_json(response.body, response.headers.get("content-type", ""), response.where)


def _json_list(response: Response) -> list[dict[str, Any]]:
    data = _json(response)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise BadResponse(f"{response.where}: expected a JSON array of objects")
    return data


def _total_count(response: Response) -> int | None:
    value = response.headers.get("x-total-count")
    if value is None:
        return None
    if not value.strip().isdigit():
        raise BadResponse(f"{response.where}: X-Total-Count {value!r:.20} is not a count")
    return int(value)
