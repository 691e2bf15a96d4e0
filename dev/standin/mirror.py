"""The mirror's endpoints: repository and organisation labels, an issue's labels (Gitea's by id,
GitHub's by name), its events and timeline, and its comments, each forge's quirks cited where
they are served."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote, urlencode

from dev.standin.faults import STATUS_FAULTS
from dev.standin.git_http import GitOverHttp
from dev.standin.gitea import exclusive_scope
from dev.standin.github import GITHUB_LABEL_NAME_LIMIT
from dev.standin.state import Answer, Comment, Flavour, RepoLabel, _now, _time


def _is_color(color: str, flavour: Flavour) -> bool:
    """Gitea up to 1.20 wants "#rrggbb" (binding Size(7)); GitHub wants "rrggbb" without "#"."""
    if flavour == "gitea":
        if not color.startswith("#"):
            return False
        color = color[1:]
    return len(color) == 6 and all(c in "0123456789abcdefABCDEF" for c in color)


class MirrorRoutes(GitOverHttp):
    """The stand-in's labels, events and comments routes."""

    # The mirror's endpoints
    def _mirror_route(self, path: str) -> tuple[str, str, int | None, str, str | None] | None:
        """(owner, repo, issue number or None, "labels" or "comments", the label reference)."""
        parts = path.strip("/").split("/")
        if self.flavour == "gitea":
            if parts[:2] != ["api", "v1"]:
                return None
            parts = parts[2:]
        if len(parts) < 4 or parts[0] != "repos":
            return None
        owner, repo, rest = parts[1], parts[2], parts[3:]
        if rest[0] == "labels" and len(rest) <= 2:
            return owner, repo, None, "labels", unquote(rest[1]) if len(rest) == 2 else None
        if rest[0] == "issues" and len(rest) >= 3 and rest[1].isdigit():
            if rest[2] == "labels" and len(rest) <= 4:
                ref = unquote(rest[3]) if len(rest) == 4 else None  # a name may hold "/" as %2F
                return owner, repo, int(rest[1]), "labels", ref
            if rest[2] == "comments" and len(rest) == 3:
                return owner, repo, int(rest[1]), "comments", None
            if rest[2] in ("events", "timeline") and len(rest) == 3:
                return owner, repo, int(rest[1]), "events", None
        return None

    def _mirror_answer(
        self,
        method: str,
        route: tuple[str, str, int | None, str, str | None],
        query: dict[str, str],
        body: Any,
        authorized: bool,
    ) -> Answer:
        owner, repo, number, what, ref = route
        fault = self._take_fault(owner, repo, number, write=method != "GET")
        if fault is not None and fault.name in STATUS_FAULTS:
            return self._status_fault(fault)
        if not authorized:
            message = "token is required" if self.flavour == "gitea" else "Bad credentials"
            return self._error(401, message)
        with self._lock:
            if (owner, repo) not in self._repos:
                return self._error(404, "Not Found")
            if number is not None and number not in self._repos[(owner, repo)]:
                # A deleted issue's labels and comments: GitHub 410 Gone (docs.github.com/en/rest/
                # issues/comments#create-an-issue-comment and issues/labels#add-labels-to-an-issue
                # list 410), Gitea 404 (GetIssueByIndex: IsErrIssueNotExist, NotFound).
                if self.flavour == "github" and (owner, repo, number) in self._deleted:
                    return self._error(410, "This issue was deleted")
                return self._error(404, "Not Found")
            if number is None:
                answer = self._repo_labels_answer(method, owner, repo, ref, body, query)
            elif what == "labels":
                answer = self._issue_labels_answer(method, owner, repo, number, ref, body)
            elif what == "events":
                answer = self._events_answer(method, owner, repo, number, query)
            else:
                answer = self._comments_answer(method, owner, repo, number, query, body)
        if fault is not None and fault.name == "applied-then-reset":
            return replace(answer, drop=True)
        if fault is not None and fault.name == "applied-then-slow":
            time.sleep(fault.seconds)
        return self._count_rate(answer, query)

    def _repo_labels_answer(
        self, method: str, owner: str, repo: str, ref: str | None, body: Any, query: dict[str, str]
    ) -> Answer:
        labels = self._labels.setdefault((owner, repo), {})
        if method == "GET" and ref is None:
            every = [*labels.values(), *self._duplicate_labels.get((owner, repo), [])]
            items = [self._label_json(owner, repo, label) for label in every]
            if self.flavour == "gitea":
                return self._label_page(items, query)
            return Answer(200, {}, items)  # GitHub: the client asks for its label by name
        if method == "GET" and self.flavour == "github" and ref is not None:
            label = self._github_label(labels, ref)
            if label is None:
                return self._error(404, "Not Found")
            return Answer(200, {}, self._label_json(owner, repo, label))
        if method == "DELETE" and ref is not None:
            # Gitea: DELETE .../labels/{id}, 204 (DeleteLabel, routers/api/v1/repo/label.go);
            # GitHub: DELETE .../labels/{name}, 204, 404 when there is none (docs.github.com/en/
            # rest/issues/labels#delete-a-label). Both take the label off every issue.
            key = (
                ref
                if self.flavour == "github"
                else next((n for n, label in labels.items() if str(label.id) == ref), None)
            )
            if key is None or key not in labels:
                return (
                    Answer(204, {}, None, raw=b"") if self.flavour == "gitea" else self._not_found()
                )
            del labels[key]
            for number, stored in self._repos.get((owner, repo), {}).items():
                if key in stored.labels:
                    self._repos[(owner, repo)][number] = replace(
                        stored, labels=[n for n in stored.labels if n != key]
                    )
            return Answer(204, {}, None, raw=b"")
        if method != "POST" or ref is not None:
            return self._error(405, "Method Not Allowed")
        name = body.get("name") if isinstance(body, dict) else None
        color = str(body.get("color", "")) if isinstance(body, dict) else ""
        if not isinstance(name, str) or not name or not _is_color(color, self.flavour):
            return self._error(422, "Validation Failed")
        if self.flavour == "github" and len(name) > GITHUB_LABEL_NAME_LIMIT:
            return self._github_invalid(
                {"resource": "Label", "code": "custom", "field": "name",
                 "message": f"name is too long (maximum is {GITHUB_LABEL_NAME_LIMIT} characters)"},
                docs="https://docs.github.com/rest/issues/labels#create-a-label",
            )  # fmt: skip
        if self.flavour == "github" and self._github_label(labels, name) is not None:
            # Another case of an existing name is that label (git-bug/git-bug#176, hackebrot/labels#15).
            return self._github_invalid(
                {"resource": "Label", "code": "already_exists", "field": "name"},
                docs="https://docs.github.com/rest/issues/labels#create-a-label",
            )
        if name in labels:
            # Gitea stores a second label of the same name: CreateLabel checks no name
            # (routers/api/v1/repo/label.go CreateLabel -> issues_model.NewLabel).
            duplicate = RepoLabel(self._next_id, name, color.lstrip("#"))
            self._next_id += 1
            self._duplicate_labels.setdefault((owner, repo), []).append(duplicate)
            return Answer(201, {}, self._label_json(owner, repo, duplicate))
        label = self._repo_label(
            owner,
            repo,
            name,
            color.lstrip("#"),
            description=str(body.get("description") or ""),
            exclusive=bool(body.get("exclusive", False)) and self.flavour == "gitea",
        )
        return Answer(201, {}, self._label_json(owner, repo, label))

    def _issue_labels_answer(
        self, method: str, owner: str, repo: str, number: int, ref: str | None, body: Any
    ) -> Answer:
        stored = self._repos[(owner, repo)][number]
        labels = self._labels.setdefault((owner, repo), {})
        # An issue takes the repository's labels and its organisation's, by id (Gitea:
        # services/issue/label.go; routers/api/v1/repo/issue_label.go DeleteIssueLabel looks the
        # id up with GetLabelByID, any label the issue may carry).
        org = self._org_labels.get(owner, {})
        extra = self._duplicate_labels.get((owner, repo), [])
        by_id = {label.id: label for label in [*labels.values(), *org.values(), *extra]}
        if method == "GET" and ref is None:
            return self._issue_labels_list(owner, repo, number)
        if method == "DELETE" and ref is not None:
            if self.flavour == "gitea":
                # DELETE /issues/{index}/labels/{id}: an id.
                label = by_id.get(int(ref)) if ref.isdigit() else None
                if label is None:
                    return self._error(422, "label not found")
            else:
                label = labels.get(ref)
                if label is None or ref not in stored.labels:
                    return self._error(404, "Label does not exist")
            self._set_issue_labels(
                owner, repo, number, [n for n in stored.labels if n != label.name]
            )
            if self.flavour == "gitea":
                return Answer(204, {}, None, raw=b"")
            return self._issue_labels_list(owner, repo, number)
        if method not in ("POST", "PUT") or ref is not None:
            return self._error(405, "Method Not Allowed")
        refs = body.get("labels") if isinstance(body, dict) else None
        if not isinstance(refs, list):
            return self._error(422, "Validation Failed")
        names: list[str] = []
        for item in refs:
            if self.flavour == "gitea" and isinstance(item, int) and item in by_id:
                names.append(by_id[item].name)
            elif (
                self.flavour == "gitea" and isinstance(item, str) and self.gitea_label_refs == "ids"
            ):
                # Gitea up to 1.20: IssueLabelsOption.labels is []int64.
                return self._error(422, "json: cannot unmarshal string into Go value of type int64")
            elif isinstance(item, str) and (item in labels or item in org):
                names.append(item)
            elif self.flavour == "github" and isinstance(item, str):
                found = self._github_label(labels, item)
                if found is None and len(item) > GITHUB_LABEL_NAME_LIMIT:
                    return self._github_invalid(
                        {"value": item, "resource": "Label", "field": "name", "code": "invalid"},
                        docs="https://docs.github.com/rest/issues/labels#add-labels-to-an-issue",
                    )
                # GitHub adds the existing label of another case, else makes it.
                made = found or self._repo_label(owner, repo, item, "ededed")
                names.append(made.name)
            else:
                return self._error(422, "label not found")
        current = [] if method == "PUT" else list(stored.labels)
        for name in names:
            label = self._label_named(owner, repo, name)
            scope = exclusive_scope(label)
            if scope:  # Gitea's scoped labels: one exclusive label per scope on an issue
                current = [
                    n
                    for n in current
                    if exclusive_scope(self._label_named(owner, repo, n)) != scope
                ]
            if name not in current:
                current.append(name)
        if current != stored.labels:
            self._set_issue_labels(owner, repo, number, current)
        return self._issue_labels_list(owner, repo, number)

    def _set_issue_labels(self, owner: str, repo: str, number: int, labels: list[str]) -> None:
        issues = self._repos[(owner, repo)]
        stored = issues[number]
        stamp = max(_now(), stored.updated_at + timedelta(seconds=1))
        issues[number] = replace(stored, labels=labels, updated_at=stamp)
        self._record_events(owner, repo, stored, issues[number], self.login)

    def _issue_labels_list(self, owner: str, repo: str, number: int) -> Answer:
        names = self._repos[(owner, repo)][number].labels
        return Answer(
            200,
            {},
            [self._label_json(owner, repo, self._label_named(owner, repo, n)) for n in names],
        )

    def _events_answer(
        self, method: str, owner: str, repo: str, number: int, query: dict[str, str]
    ) -> Answer:
        """GitHub: GET .../issues/{n}/events (docs.github.com/rest/issues/events), oldest first,
        paged by Link. Gitea: GET .../issues/{index}/timeline (routers/api/v1/repo/
        issue_comment.go ListIssueCommentsAndTimeline), a label change a comment of type
        "label" with body "1" when added and "" when removed, "close" and "reopen"; `since`."""
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        events = self._events.get((owner, repo, number), [])
        if self.flavour == "gitea":
            return self._timeline_page(owner, repo, number, query)
        size = min(int(query.get("per_page", "30") or 30), 100)
        page = max(int(query.get("page", "1") or 1), 1)
        last = max((len(events) + size - 1) // size, 1)
        chosen_events = events[(page - 1) * size : page * size]
        headers = {}
        if page < last:
            path = f"/repos/{owner}/{repo}/issues/{number}/events"
            headers["Link"] = (
                f'<{self.url}{path}?{urlencode(query | {"page": str(page + 1)})}>; rel="next"'
            )
        api = f"{self.url}/repos/{owner}/{repo}/issues"
        items = [
            {
                "id": e.id,
                "node_id": f"E_{e.id}",
                "url": f"{api}/events/{e.id}",
                "actor": {"id": 1, "login": e.actor},
                "event": e.kind,
                "commit_id": None,
                "commit_url": None,
                "created_at": _time(e.at),
                "performed_via_github_app": None,
            }
            | ({"label": {"name": e.label.name, "color": e.label.color}} if e.label else {})
            for e in chosen_events
        ]
        return Answer(200, headers, items)

    def _timeline_page(self, owner: str, repo: str, number: int, query: dict[str, str]) -> Answer:
        """Gitea's timeline (routers/api/v1/repo/issue_comment.go ListIssueCommentsAndTimeline):
        every comment of the issue, plain ones and label and state changes alike, oldest created
        first (models/issues/comment.go FindComments: created_unix, then id), `since` against
        their updated time; paged by page/limit, `limit` clamped (`_gitea_page_size`). Its
        X-Total-Count is the count of THIS page (SetTotalCountHeader(len(apiComments))), and a
        page with nothing on it is `null`: `var apiComments []*api.TimelineComment` stays a nil
        slice, which Go's JSON writes as null."""
        since = datetime.fromisoformat(query["since"]) if "since" in query else None
        entries: list[tuple[datetime, int, dict[str, Any]]] = []
        for comment in self._comments.get((owner, repo, number), []):
            if since is None or (comment.updated_at or comment.created_at) >= since:
                item = self._timeline_comment_json(owner, repo, number, comment)
                entries.append((comment.created_at, comment.id, item))
        for event in self._events.get((owner, repo, number), []):
            if since is None or event.at >= since:
                item = self._timeline_json(owner, repo, number, event)
                entries.append((event.at, event.id, item))
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        size = self._gitea_page_size(query)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = [item for _, _, item in entries[(page - 1) * size : page * size]]
        return Answer(200, {"X-Total-Count": str(len(chosen))}, chosen or None)

    def _comments_answer(
        self, method: str, owner: str, repo: str, number: int, query: dict[str, str], body: Any
    ) -> Answer:
        comments = self._comments.setdefault((owner, repo, number), [])
        if method == "GET":
            size = min(
                int(query.get("per_page" if self.flavour == "github" else "limit", "30") or 30), 100
            )
            page = max(int(query.get("page", "1") or 1), 1)
            last = max((len(comments) + size - 1) // size, 1)
            chosen = comments[(page - 1) * size : page * size]
            items = [self._comment_json(owner, repo, number, c) for c in chosen]
            path = f"{'/api/v1' if self.flavour == 'gitea' else ''}/repos/{owner}/{repo}/issues/{number}/comments"
            headers = {}
            if page < last:
                nxt = f"{self.url}{path}?" + urlencode(query | {"page": str(page + 1)})
                headers["Link"] = f'<{nxt}>; rel="next"'
            return Answer(200, headers, items)
        if method != "POST":
            return self._error(405, "Method Not Allowed")
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text:
            return self._error(422, "Validation Failed")
        too_long = self._github_too_long("IssueComment", text)
        if too_long is not None:
            return too_long
        comment = Comment(self._next_id, text, author=self.login)
        self._next_id += 1
        comments.append(comment)
        stored = self._repos[(owner, repo)][number]
        self._repos[(owner, repo)][number] = replace(
            stored, updated_at=max(_now(), stored.updated_at + timedelta(seconds=1))
        )
        return Answer(201, {}, self._comment_json(owner, repo, number, comment))

    def _label_page(self, items: list[dict[str, Any]], query: dict[str, str]) -> Answer:
        """Gitea's label lists: sorted by name, `limit` clamped (`_gitea_page_size`),
        X-Total-Count the count of every label and NO Link header (routers/api/v1/repo/label.go
        and org/label.go ListLabels: SetTotalCountHeader(CountLabelsByRepoID/OrgID) only;
        go-gitea/gitea issue #21158); no count at all up to 1.15 (`gitea_label_totals`)."""
        items = sorted(items, key=lambda item: (str(item["name"]), int(item["id"])))
        size = self._gitea_page_size(query)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = items[(page - 1) * size : page * size]
        headers = {"X-Total-Count": str(len(items))} if self.gitea_label_totals else {}
        return Answer(200, headers, chosen)

    def _gitea_page_size(self, query: dict[str, str]) -> int:
        """The items Gitea puts on a page for `limit` (services/convert/utils.go
        ToCorrectPageSize): none or below 1 is `[api] DEFAULT_PAGING_NUM` (30), above `[api]
        MAX_RESPONSE_ITEMS` (`max_page_size`) is that."""
        asked = int(query.get("limit", "0") or 0)
        return 30 if asked <= 0 else min(asked, self.max_page_size)
