"""GitHub (REST): `GET {api}/repos/{owner}/{repo}/issues?state=...&since=...&per_page=100` with
`Authorization: Bearer T`, pages by `Link: rel="next"`. The first page carries an ETag; asking
again with `If-None-Match` answers 304 when nothing changed, and a 304 costs no rate limit.
Pull requests are listed among issues (they carry `pull_request`) and are skipped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

from tireless.forge.client import BadResponse, ForgeIssue, Listing, WriteRefused
from tireless.forge.http import MAX_BYTES, TIMEOUT, Http, Response, rate_limit_reset
from tireless.forge.paging import read_pages
from tireless.forge.validate import decode_json, full_name, is_pull_request, issue, not_moved

PER_PAGE = 100
LABEL_COLOR = "6a737d"


class GitHubClient:
    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = TIMEOUT,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = Http(base_url, headers, timeout=timeout, max_bytes=max_bytes)
        self._known_labels: set[tuple[str, str, str]] = set()

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
        etag: str | None = None,
    ) -> Listing:
        # Newest change first: any change to the listed set changes page 1, so page 1's ETag
        # answers for the whole listing.
        params = {
            "state": state,
            "per_page": str(PER_PAGE),
            "sort": "updated",
            "direction": "desc",
            "page": "1",
        }
        if since is not None:
            params["since"] = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditional = {"If-None-Match": etag} if etag else None
        pages = read_pages(
            self._http, self._issues_url(owner, repo), params, "per_page", conditional
        )
        if pages.first is not None and pages.first.status == 304:
            return Listing((), 1, etag, not_modified=True, limited_until=_limit(pages.first))
        where = f"GET {owner}/{repo} issues"
        issues = [issue(item, where) for item in pages.items if not is_pull_request(item)]
        # A first page too large to read has no ETag to keep: the next read lists again.
        first_etag = None if pages.first is None else pages.first.headers.get("etag")
        last = pages.last or pages.first
        return Listing(
            tuple(issues),
            pages.count,
            first_etag if not pages.skipped else None,
            limited_until=None if last is None else _limit(last),
            moved_to=self.repository_name(owner, repo) if pages.moved else None,
            skipped=tuple(pages.skipped),
        )

    def repository_name(self, owner: str, repo: str) -> str:
        """owner/name as the forge calls the repository now (following a rename's redirect)."""
        response = self._http.get(self._repo_url(owner, repo))
        return full_name(_json(response), response.where)

    def set_deadline(self, seconds: float | None) -> None:
        self._http.set_deadline(seconds)

    def _repo_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}")

    # The mirror: GitHub's issue-labels endpoints take label names.
    def ensure_label(self, owner: str, repo: str, name: str, description: str) -> None:
        if (owner, repo, name) in self._known_labels:
            return
        labels = f"{self._repo_url(owner, repo)}/labels"
        if self._http.get(f"{labels}/{quote(name, safe='')}").status != 200:
            body = {"name": name, "color": LABEL_COLOR, "description": description}
            try:
                self._http.send("POST", labels, body)
            except WriteRefused:  # 422 already_exists: made meanwhile by someone else
                if self._http.get(f"{labels}/{quote(name, safe='')}").status != 200:
                    raise
        self._known_labels.add((owner, repo, name))

    def add_label(self, owner: str, repo: str, number: int, name: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/labels"
        self._http.send("POST", url, {"labels": [name]})

    def remove_label(self, owner: str, repo: str, number: int, name: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/labels/{quote(name, safe='')}"
        try:
            self._http.send("DELETE", url)
        except WriteRefused as refused:  # 404: the label is not on the issue any more
            if refused.status != 404:
                raise

    def comment_bodies(self, owner: str, repo: str, number: int) -> list[str]:
        url: str | None = f"{self._issues_url(owner, repo)}/{number}/comments"
        params: dict[str, str] | None = {"per_page": str(PER_PAGE)}
        bodies: list[str] = []
        while url is not None:
            response = self._http.get(url, params)
            data = _json(response)
            if not isinstance(data, list):
                raise BadResponse(f"{response.where}: expected a JSON array of comments")
            bodies += [
                c["body"] for c in data if isinstance(c, dict) and isinstance(c.get("body"), str)
            ]
            url, params = self._http.next_page(response), None
        return bodies

    def add_comment(self, owner: str, repo: str, number: int, body: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/comments"
        self._http.send("POST", url, {"body": body}, retry=False)

    def get_issue(self, owner: str, repo: str, number: int) -> ForgeIssue | None:
        response = self._http.get(f"{self._issues_url(owner, repo)}/{number}")
        if response.status in (404, 410):
            return None
        data = _json(response)
        if response.moved:
            not_moved(data, number, self.repository_name(owner, repo), response.where)
        return issue(data, response.where)


def _limit(response: Response) -> datetime | None:
    return rate_limit_reset(response.headers)


def _json(response: Response) -> object:
    if response.status != 200:
        raise BadResponse(f"{response.where}: HTTP {response.status}")
    return decode_json(response.body, response.headers.get("content-type", ""), response.where)
