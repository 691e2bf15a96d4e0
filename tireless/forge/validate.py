"""Turn what a forge sent into typed issues, or refuse it as a whole (BadResponse).

Gitea's swagger (templates/swagger/v1_json.tmpl, definition `Issue`) and GitHub's REST
description (schema `issue`) agree on the fields the poller reads: `number` (a positive integer),
`state` (`open` or `closed`), `title`, `labels` (a list of objects with a `name`), `html_url`,
`updated_at` (RFC 3339), `body` (GitHub: a string or null when empty), and `pull_request` on the
items that are pull requests.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from tireless.forge.client import BadResponse, ForgeIssue, IssueMoved

# A code point the database's text type refuses (NUL) or that is no character at all (a lone
# surrogate, which json.loads makes from an escaped "\ud800").
_UNSAFE = re.compile("[\x00\ud800-\udfff]")


def decode_json(body: bytes, content_type: str, where: str) -> Any:
    """The body as JSON; an HTML page (a proxy's error page, a login form) or invalid JSON is
    refused, naming where it came from."""
    media = content_type.split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        shown = media or "no content type"
        raise BadResponse(f"{where}: expected JSON, got {shown} ({len(body)} bytes)")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadResponse(f"{where}: invalid JSON: {error}") from error


def issue_list(data: Any, where: str) -> list[dict[str, Any]]:
    """A page of a listing: a JSON array of objects."""
    if not isinstance(data, list):
        raise BadResponse(f"{where}: expected a JSON array of issues, got {type(data).__name__}")
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise BadResponse(f"{where}: item {index} is {type(item).__name__}, not an object")
    return data


def is_pull_request(item: dict[str, Any]) -> bool:
    """GitHub lists pull requests among issues, marked by a `pull_request` key."""
    return item.get("pull_request") is not None


def issue(item: Any, where: str) -> ForgeIssue:
    """One issue object, every field the poller uses checked."""
    if not isinstance(item, dict):
        raise BadResponse(f"{where}: an issue is {type(item).__name__}, not an object")
    number = item.get("number")
    if type(number) is not int or number <= 0:
        raise BadResponse(f"{where}: an item has no positive integer number: {number!r:.40}")
    at = f"{where}: issue {number}"
    state = item.get("state")
    if state not in ("open", "closed"):
        raise BadResponse(f"{at}: state {state!r:.40} is neither open nor closed")
    labels = item.get("labels")
    if not isinstance(labels, list) or not all(
        isinstance(label, dict) and isinstance(label.get("name"), str) for label in labels
    ):
        raise BadResponse(f"{at}: labels are not a list of objects with a name")
    names = tuple(label["name"] for label in labels)
    title = item.get("title")
    if not isinstance(title, str):
        raise BadResponse(f"{at}: title is not a string")
    url = item.get("html_url")
    if url is not None and not isinstance(url, str):
        raise BadResponse(f"{at}: html_url is not a string")
    body = item.get("body") or ""
    if not isinstance(body, str):
        raise BadResponse(f"{at}: body is not a string")
    for field, text in (("title", title), ("html_url", url or ""), *(("label", n) for n in names)):
        if _UNSAFE.search(text):
            raise BadResponse(f"{at}: its {field} holds NUL or an unpaired surrogate")
    # The body is the agent's reading, not a key: a character the database refuses is replaced.
    body = _UNSAFE.sub("\ufffd", body)
    updated_at = timestamp(item.get("updated_at"), at)
    return ForgeIssue(number, state, names, title, url, updated_at, body)


def timestamp(value: Any, where: str) -> datetime:
    """An RFC 3339 time with its offset (`Z` or `+02:00`), as both APIs write `updated_at`."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None:
                return parsed
    raise BadResponse(f"{where}: updated_at {value!r:.40} is not an RFC 3339 time")


def full_name(data: Any, where: str) -> str:
    """A repository's `full_name` (owner/name), as both APIs give it."""
    name = data.get("full_name") if isinstance(data, dict) else None
    if not isinstance(name, str) or name.count("/") != 1 or _UNSAFE.search(name):
        raise BadResponse(f"{where}: the repository has no full_name owner/name")
    return name


def not_moved(item: Any, number: int, repository: str, where: str) -> None:
    """An issue the forge redirected us to is the one asked for, in the repository under its
    current name (`repository`: a renamed repository redirects its issues too); else IssueMoved.
    Where it lives is read from its `html_url` (.../owner/name/issues/N on both forges)."""
    url = item.get("html_url") if isinstance(item, dict) else None
    parts = url.rstrip("/").split("/") if isinstance(url, str) else []
    if len(parts) < 4 or not parts[-1].isdigit():
        raise BadResponse(f"{where}: the issue we were redirected to has no html_url")
    home, at = f"{parts[-4]}/{parts[-3]}", int(parts[-1])
    if home.lower() != repository.lower() or at != number:
        raise IssueMoved(f"{where}: issue moved to {home}#{at}", f"{home}#{at}")
