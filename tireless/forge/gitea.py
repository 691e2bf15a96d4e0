"""Gitea and Forgejo (API v1): `GET {base}/api/v1/repos/{owner}/{repo}/issues?type=issues&
state=...&since=...&page=N&limit=M` with `Authorization: token T`.

Gitea clamps `limit` to its `[api] MAX_RESPONSE_ITEMS` (50 by default), so a page shorter than
the limit asked for says nothing about the end: the pages are followed by `Link: rel="next"`, and
their items must add up to the `X-Total-Count` the first page announced.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

from tireless.forge.client import BadResponse, ForgeIssue, Listing
from tireless.forge.http import MAX_BYTES, TIMEOUT, Http, Response
from tireless.forge.validate import decode_json, is_pull_request, issue, issue_list

PAGE_SIZE = 50
MAX_PAGES = 2000


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

    def close(self) -> None:
        self._http.close()

    def _issues_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/issues")

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
        url: str | None = self._issues_url(owner, repo)
        issues: list[ForgeIssue] = []
        pages = items = 0
        total: int | None = None
        while url is not None:
            response = self._http.get(url, params if pages == 0 else None)
            data = issue_list(_json(response), response.where)
            if pages == 0:
                total = _total_count(response)
            pages += 1
            items += len(data)
            issues += [issue(item, response.where) for item in data if not is_pull_request(item)]
            if pages >= MAX_PAGES:
                raise BadResponse(f"{response.where}: more than {MAX_PAGES} pages")
            url = self._http.next_page(response)
        if total is not None and items != total:
            raise BadResponse(
                f"GET {owner}/{repo} issues: X-Total-Count says {total},"
                f" the {pages} page(s) held {items}"
            )
        return Listing(tuple(issues), pages)

    def get_issue(self, owner: str, repo: str, number: int) -> ForgeIssue | None:
        response = self._http.get(f"{self._issues_url(owner, repo)}/{number}")
        if response.status in (404, 410):
            return None
        return issue(_json(response), response.where)


def _json(response: Response) -> object:
    if response.status != 200:
        raise BadResponse(f"{response.where}: HTTP {response.status}")
    return decode_json(response.body, response.headers.get("content-type", ""), response.where)


def _total_count(response: Response) -> int | None:
    value = response.headers.get("x-total-count")
    if value is None:
        return None
    if not value.strip().isdigit():
        raise BadResponse(f"{response.where}: X-Total-Count {value!r:.20} is not a count")
    return int(value)
