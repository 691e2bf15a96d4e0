"""Reading a listing page by page, both API families: follow `Link: rel="next"`; a page past the
response-size limit is asked for again in smaller pages covering the same items (a page of 100
GitHub issues with long bodies fits in pages of 10); an item too large even alone is skipped and
said so, never the whole listing. Both forges page by `page` and a size (`limit` on Gitea,
`per_page` on GitHub) and keep the items' order for a given size, so items (p-1)*s+1 .. p*s of
pages of size s are pages (p-1)*s/d+1 .. p*s/d of size d when d divides s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tireless.forge.client import NOT_FOUND_PAUSE, BadResponse, NotFound, Response, TooLarge
from tireless.forge.http import Http
from tireless.forge.validate import decode_json, issue_list

MAX_PAGES = 2000
SMALLER_SIZES = (10, 1)
"""The page sizes a page too large is asked for again in, each dividing the one before."""


@dataclass(slots=True)
class Pages:
    """What a listing's pages held. `first` is the first page's answer (its ETag), None when it
    was too large and read in smaller pages; `last` the last page read (its rate-limit headers,
    Gitea's X-Total-Count)."""

    items: list[dict[str, Any]] = field(default_factory=list)
    count: int = 0
    first: Response | None = None
    last: Response | None = None
    moved: bool = False
    skipped: list[str] = field(default_factory=list)


def read_pages(
    http: Http,
    url: str,
    params: dict[str, str],
    size_key: str,
    headers: dict[str, str] | None = None,
) -> Pages:
    """Every page of a listing from `url` with `params` (which hold `page` and `size_key`);
    `headers` go with the first request only (If-None-Match). A 304 first page ends it there."""
    pages = Pages()
    next_url: str | None = _with_query(url, params)
    first = True
    while next_url is not None:
        if pages.count >= MAX_PAGES:
            raise BadResponse(f"GET {urlsplit(url).path}: more than {MAX_PAGES} pages")
        try:
            response = http.get(next_url, None, headers if first else None)
        except TooLarge as error:  # a first page too large leaves `first` None: no ETag to keep
            first = False
            continues = _read_smaller(http, next_url, size_key, pages, error)
            next_url = _page_after(next_url, size_key) if continues else None
            continue
        if first:
            first, pages.first = False, response
            if response.status == 304:
                return pages
        _take(pages, response)
        next_url = http.next_page(response)
    return pages


def _take(pages: Pages, response: Response) -> None:
    if response.status == 404:
        raise NotFound(
            f"{response.where}: HTTP 404: repository not found, or the token cannot see it:"
            " check its owner and name (`tireless repos`; `tireless untrack` it and `tireless"
            " track` the right one), or give the token read access to it; asked again in"
            f" {NOT_FOUND_PAUSE.seconds // 60} minutes"
        )
    if response.status != 200:
        raise BadResponse(f"{response.where}: HTTP {response.status}")
    data = decode_json(response.body, response.headers.get("content-type", ""), response.where)
    pages.items += issue_list(data, response.where)
    pages.count += 1
    pages.last = response
    pages.moved = pages.moved or response.moved


def _read_smaller(http: Http, url: str, size_key: str, pages: Pages, error: TooLarge) -> bool:
    """Reads the items of the page at `url` (too large) in pages of the next smaller size;
    whether the listing goes on after them."""
    page, size = _page_and_size(url, size_key)
    smaller = [d for d in SMALLER_SIZES if d < size and size % d == 0]
    if not smaller:  # one item alone is past the limit: leave it out, say so, go on
        pages.skipped.append(f"item {(page - 1) * size + 1} of the listing skipped: {error}")
        return True
    step = smaller[0]
    continues = True
    for sub_page in range((page - 1) * size // step + 1, page * size // step + 1):
        sub_url = _with_query(url, {"page": str(sub_page), size_key: str(step)})
        try:
            response = http.get(sub_url)
        except TooLarge as too_large:
            continues = _read_smaller(http, sub_url, size_key, pages, too_large)
            continue
        _take(pages, response)
        continues = http.next_page(response) is not None
        if not continues:
            break
    return continues


def _page_and_size(url: str, size_key: str) -> tuple[int, int]:
    query = dict(parse_qsl(urlsplit(url).query))
    page, size = query.get("page", "1"), query.get(size_key, "")
    if not page.isdigit() or not size.isdigit() or int(size) < 1:
        raise BadResponse(f"GET {urlsplit(url).path}: a page without page and {size_key}")
    return max(int(page), 1), int(size)


def _page_after(url: str, size_key: str) -> str:
    page, _ = _page_and_size(url, size_key)
    return _with_query(url, {"page": str(page + 1)})


def _with_query(url: str, changes: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query)) | changes
    return urlunsplit(parts._replace(query=urlencode(query)))
