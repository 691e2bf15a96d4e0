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
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tireless.forge.client import (
    BadResponse,
    Check,
    ForgeComment,
    ForgeIssue,
    ForgeNote,
    IssueMoved,
    IssueRef,
    OddIssue,
    Review,
    ReviewComment,
)

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


def pull_updates(items: list[dict[str, Any]], where: str) -> tuple[tuple[int, datetime], ...]:
    """Each pull request among listed issues: its number and `updated_at` (one without a positive
    integer number or a time is left out: it is only a hint to read its conversation)."""
    found = []
    for item in items:
        number = item.get("number")
        if not is_pull_request(item) or not isinstance(number, int) or isinstance(number, bool):
            continue
        try:
            found.append((number, timestamp(item.get("updated_at"), where)))
        except BadResponse:
            continue
    return tuple((number, at) for number, at in found if number > 0)


def listed_issues(
    items: list[dict[str, Any]], where: str
) -> tuple[list[ForgeIssue], list[OddIssue]]:
    """The issues (not pull requests) of a listing, and those left out as odd: one issue whose
    number is sound but another field is not never refuses the listing (issue 36). An item with
    no sound number does: nothing could report or key it."""
    found: list[ForgeIssue] = []
    odd: list[OddIssue] = []
    for item in items:
        if is_pull_request(item):
            continue
        try:
            found.append(issue(item, where))
        except OddIssue as left_out:
            odd.append(left_out)
    return found, odd


def issue(item: Any, where: str) -> ForgeIssue:
    """One issue object, every field the poller uses checked: BadResponse when it has no positive
    integer number, OddIssue (naming it) when another field is wrong."""
    if not isinstance(item, dict):
        raise BadResponse(f"{where}: an issue is {type(item).__name__}, not an object")
    number = item.get("number")
    if type(number) is not int or number <= 0:
        raise BadResponse(f"{where}: an item has no positive integer number: {number!r:.40}")

    def odd(problem: str) -> OddIssue:
        return OddIssue(f"{where}: issue {number}: {problem}", number, problem)

    state = item.get("state")
    if state not in ("open", "closed"):
        raise odd(f"state {state!r:.40} is neither open nor closed")
    labels = item.get("labels")
    if not isinstance(labels, list) or not all(
        isinstance(label, dict) and isinstance(label.get("name"), str) for label in labels
    ):
        raise odd("labels are not a list of objects with a name")
    names = tuple(label["name"] for label in labels)
    title = item.get("title")
    if not isinstance(title, str):
        raise odd("title is not a string")
    url = item.get("html_url")
    if url is not None and not isinstance(url, str):
        raise odd("html_url is not a string")
    body = item.get("body") or ""
    if not isinstance(body, str):
        raise odd("body is not a string")
    for field, text in (("title", title), ("html_url", url or ""), *(("label", n) for n in names)):
        if _UNSAFE.search(text):
            raise odd(f"its {field} holds NUL or an unpaired surrogate")
    # The body is the agent's reading, not a key: a character the database refuses is replaced.
    body = _UNSAFE.sub("\ufffd", body)
    try:
        updated_at = timestamp(item.get("updated_at"), where)
    except BadResponse as error:
        raise odd(str(error).removeprefix(f"{where}: ")) from error
    return ForgeIssue(
        number,
        state,
        names,
        title,
        url,
        updated_at,
        body,
        _summary_says(item, "issue_dependencies_summary", "total_blocked_by"),
        _summary_says(item, "sub_issues_summary", "total"),
    )


def _summary_says(item: dict[str, Any], summary: str, total: str) -> bool | None:
    """Whether GitHub's summary of an issue's relations counts any (`issue_dependencies_summary`
    {blocked_by, blocking, total_blocked_by, total_blocking}: docs.github.com/rest/issues/
    issue-dependencies; `sub_issues_summary` {total, completed, percent_completed}: docs.github.com/
    rest/issues/sub-issues); None when it is missing or not a count (Gitea, an older GitHub
    Enterprise Server): the relations are then read."""
    counts = item.get(summary)
    value = counts.get(total) if isinstance(counts, dict) else None
    if type(value) is not int or value < 0:
        return None
    return value > 0


def issue_ref(item: Any, where: str) -> IssueRef | None:
    """The issue a relation names: its `number` and its repository, from `repository`
    ({owner, name} on Gitea, whose `owner` is a login; an object with `owner.login` on GitHub)
    or GitHub's `repository_url` (.../repos/{owner}/{name}). None for an entry the forge hides
    (Gitea shows an issue the token may not read as {"title": "HIDDEN"} with no number or
    repository: routers/api/v1/repo/issue_dependency.go GetIssueDependencies)."""
    if not isinstance(item, dict):
        raise BadResponse(f"{where}: a dependency is {type(item).__name__}, not an object")
    number = item.get("number")
    if type(number) is not int or number <= 0:
        return None
    owner = name = None
    repository = item.get("repository")
    if isinstance(repository, dict):
        found = repository.get("owner")
        owner = found.get("login") if isinstance(found, dict) else found
        name = repository.get("name")
        full = repository.get("full_name")
        if not (isinstance(owner, str) and isinstance(name, str)) and isinstance(full, str):
            owner, _, name = full.partition("/")
    url = item.get("repository_url")
    if not (isinstance(owner, str) and isinstance(name, str)) and isinstance(url, str):
        parts = url.rstrip("/").split("/")
        if len(parts) >= 3 and parts[-3] == "repos":
            owner, name = parts[-2], parts[-1]
    if not (isinstance(owner, str) and isinstance(name, str)):
        return None
    if not (0 < len(owner) <= 200 and 0 < len(name) <= 200) or _UNSAFE.search(owner + name):
        raise BadResponse(f"{where}: dependency #{number} names no repository owner/name")
    return IssueRef(owner, name, number)


def timestamp(value: Any, where: str, field: str = "updated_at") -> datetime:
    """An RFC 3339 time with its offset (`Z` or `+02:00`), as both APIs write `updated_at`."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None:
                return parsed
    raise BadResponse(f"{where}: {field} {value!r:.40} is not an RFC 3339 time")


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


def login_of(item: dict[str, Any], key: str) -> str | None:
    """The `login` of the user object under `key` (a comment's `user`, an event's `actor`)."""
    user = item.get(key)
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


def comment(item: Any, where: str) -> ForgeComment:
    """One comment object: its author's login, its body and its id (both APIs: `user.login`,
    `body`, `id`; an id that is not a positive integer is left out, as if none was given)."""
    if not isinstance(item, dict) or not isinstance(item.get("body"), str):
        raise BadResponse(f"{where}: a comment is not an object with a body")
    ident = item.get("id")
    known = ident if type(ident) is int and ident > 0 else None
    return ForgeComment(login_of(item, "user"), item["body"], known)


def _positive_id(item: Any, what: str, where: str) -> int:
    ident = item.get("id") if isinstance(item, dict) else None
    if type(ident) is not int or ident <= 0:
        raise BadResponse(f"{where}: {what} has no positive integer id: {ident!r:.40}")
    return ident


def _text(item: dict[str, Any], key: str, at: str) -> str:
    """A text field a person wrote (null or missing: ""); a character the database refuses is
    replaced, as in an issue's body."""
    text = item.get(key) or ""
    if not isinstance(text, str):
        raise BadResponse(f"{at}: {key} is not a string")
    return _UNSAFE.sub("\ufffd", text)


def note(item: Any, where: str) -> ForgeNote:
    """One comment of a repository's comment listing: `id`, `user.login`, `body`, `created_at`,
    `updated_at`, and the number of its issue or pull request, the last part of `issue_url`
    (GitHub: the API's .../issues/N for both) or, when that is empty, of `pull_request_url`
    (Gitea: a pull request's comment has `issue_url` "" and `pull_request_url` .../pulls/N,
    models/issues/comment.go IssueURL and PRURL)."""
    ident = _positive_id(item, "a comment", where)
    at = f"{where}: comment {ident}"
    url = item.get("issue_url") or item.get("pull_request_url")
    last = url.rstrip("/").rpartition("/")[2] if isinstance(url, str) else ""
    if not last.isdigit() or int(last) <= 0:
        raise BadResponse(f"{at}: neither issue_url nor pull_request_url ends in a number")
    return ForgeNote(
        ident,
        int(last),
        login_of(item, "user"),
        _text(item, "body", at),
        timestamp(item.get("created_at"), at, "created_at"),
        timestamp(item.get("updated_at"), at),
    )


def in_order(notes: list[ForgeNote]) -> list[ForgeNote]:
    """Each comment once (one edited while the pages were read can be on two), oldest change
    first."""
    return sorted({n.id: n for n in notes}.values(), key=lambda n: (n.updated_at, n.id))


def review(item: Any, where: str, states: Mapping[str, str]) -> Review:
    """One review: `id`, `user.login` (Gitea: null for a review requested of a team), `state`
    normalised by `states` (an unknown one is refused), `body`, `submitted_at` (GitHub leaves it
    out of a pending review), `commit_id`. Gitea keeps a dismissed review's state and says
    `dismissed: true` (modules/structs/pull_review.go PullReview.Dismissed): "dismissed"."""
    ident = _positive_id(item, "a review", where)
    at = f"{where}: review {ident}"
    state = states.get(str(item.get("state")))
    if state is None:
        raise BadResponse(f"{at}: state {item.get('state')!r:.40} is not a review state")
    if item.get("dismissed") is True:
        state = "dismissed"
    submitted = item.get("submitted_at")
    commit = item.get("commit_id")
    return Review(
        ident,
        login_of(item, "user"),
        state,
        _text(item, "body", at),
        None if submitted is None else timestamp(submitted, at, "submitted_at"),
        commit if isinstance(commit, str) and commit and not _UNSAFE.search(commit) else None,
    )


def review_comment(item: Any, where: str, line_keys: tuple[str, ...]) -> ReviewComment:
    """One inline comment of a review: `path`, `body`, and the first of `line_keys` the forge
    gives as a positive line number (GitHub: `line`, then `original_line`; Gitea: `position`,
    then `original_position`, 0 when not given)."""
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        raise BadResponse(f"{where}: a review comment is not an object with a path")
    lines = [item.get(key) for key in line_keys]
    line = next((n for n in lines if type(n) is int and n > 0), None)
    return ReviewComment(_UNSAFE.sub("\ufffd", item["path"]), line, _text(item, "body", where))


# A collaborator's permission. Gitea: the access mode's name, none, read, write, admin or owner
# (models/perm/access_mode.go ToString; services/convert/user.go ToUserAndPermission). GitHub:
# admin, write, read or none, "where the maintain role is mapped to write and the triage role is
# mapped to read" (docs.github.com/en/rest/collaborators/collaborators#get-repository-
# permissions-for-a-user); maintain and triage are taken too, should they come.
_PERMISSIONS = {
    "owner": "admin",
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}


def permission_level(data: Any, where: str) -> str:
    """The `permission` of a collaborator-permission answer, normalised to admin, write, read
    or none."""
    given = data.get("permission") if isinstance(data, dict) else None
    found = _PERMISSIONS.get(given) if isinstance(given, str) else None
    if found is None:
        raise BadResponse(f"{where}: permission {given!r:.40} is not one we know")
    return found


def check(name: Any, state: str, summary: Any, url: Any, where: str) -> Check:
    """A check of a commit from a status's or check run's fields: its name (a status's context, a
    run's name) must be text (Gitea takes a status without a context: ""); a summary or URL that
    is not text is none."""
    if not isinstance(name, str):
        raise BadResponse(f"{where}: a check has no name")
    return Check(
        _UNSAFE.sub("\ufffd", name),
        state,
        _UNSAFE.sub("\ufffd", summary) if isinstance(summary, str) else "",
        url if isinstance(url, str) and url and not _UNSAFE.search(url) else None,
    )


def is_own(author: str | None, login: str | None) -> bool:
    """Whether `author` is the account tireless writes as, `login` (logins compared without case,
    as both forges compare them). While the login is unknown (None: the token may not read its
    own account and no write of its own named it yet), a GitHub App's account counts: `...[bot]`,
    a login no person can have (GitHub's hold letters, digits and hyphens only, Gitea's no
    brackets), so that a person who pastes a marker never passes for tireless; a person's token
    finds nothing of its own then, and writes (docs/forges.md says what that costs)."""
    if author is None:
        return False
    if login is None:
        return author.endswith("[bot]")
    return author.lower() == login.lower()


def marked_issue(items: list[dict[str, Any]], marker: str, author: str | None) -> int | None:
    """The oldest (lowest number) issue of a listing opened by `author` (is_own) whose body ends
    with `marker` (a marker in anyone else's issue counts for nothing); pull requests are passed
    over."""
    found = [
        item["number"]
        for item in items
        if not is_pull_request(item)
        and is_own(login_of(item, "user"), author)
        and isinstance(item.get("body"), str)
        and item["body"].rstrip().endswith(marker)
        and type(item.get("number")) is int
    ]
    return min(found, default=None)


def created_number(answer: object, where: str) -> int:
    """The number of the issue a create answered with; BadResponse when it has none."""
    number = answer.get("number") if isinstance(answer, dict) else None
    if type(number) is not int or number < 1:
        raise BadResponse(f"{where}: the created issue has no number")
    return number
