"""The mirror's endpoints: repository and organisation labels, an issue's labels (Gitea's by id,
GitHub's by name), its events and timeline, and its comments; each forge's quirks are its API's
(dev.standin.gitea, dev.standin.github), cited there."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta
from typing import Any
from urllib.parse import unquote, urlencode

from dev.standin.faults import STATUS_FAULTS
from dev.standin.git_http import GitOverHttp
from dev.standin.records import Answer, Comment, RepoLabel, _now


class MirrorRoutes(GitOverHttp):
    """The stand-in's labels, events and comments routes."""

    # The mirror's endpoints
    def _mirror_route(self, path: str) -> tuple[str, str, int | None, str, str | None] | None:
        """(owner, repo, issue number or None, "labels" or "comments", the label reference)."""
        parts = self._api_route_parts(path)
        if parts is None or len(parts) < 4 or parts[0] != "repos":
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
            return self.api.unauthorized()
        with self._lock:
            if (owner, repo) not in self._repos:
                return self.api.error(404, "Not Found")
            if number is not None and number not in self._repos[(owner, repo)]:
                return self.api.issue_gone(owner, repo, number)  # its labels and comments
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
            return self.api.label_list(items, query)
        if method == "GET" and ref is not None:
            found = self.api.label_get(owner, repo, labels, ref)
            if found is not None:
                return found
        if method == "DELETE" and ref is not None:
            # DELETE .../labels/{ref} (the forge's `label_key`): 204, and the label is taken off
            # every issue on both forges.
            key = self.api.label_key(labels, ref)
            if key is None or key not in labels:
                return self.api.label_delete_missing()
            del labels[key]
            for number, stored in self._repos.get((owner, repo), {}).items():
                if key in stored.labels:
                    self._repos[(owner, repo)][number] = replace(
                        stored, labels=[n for n in stored.labels if n != key]
                    )
            return Answer(204, {}, None, raw=b"")
        if method != "POST" or ref is not None:
            return self.api.error(405, "Method Not Allowed")
        name = body.get("name") if isinstance(body, dict) else None
        color = str(body.get("color", "")) if isinstance(body, dict) else ""
        if not isinstance(name, str) or not name or not self.api.valid_color(color):
            return self.api.error(422, "Validation Failed")
        refused = self.api.label_create_refusal(labels, name)
        if refused is not None:
            return refused
        if name in labels:
            # A second label of the same name, where the forge stores one (Gitea's
            # label_create_refusal says why).
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
            exclusive=self.api.exclusive(body),
        )
        return Answer(201, {}, self._label_json(owner, repo, label))

    def _issue_labels_answer(
        self, method: str, owner: str, repo: str, number: int, ref: str | None, body: Any
    ) -> Answer:
        stored = self._repos[(owner, repo)][number]
        labels = self._labels.setdefault((owner, repo), {})
        # An issue takes the repository's labels and its organisation's (Gitea by id).
        org = self._org_labels.get(owner, {})
        extra = self._duplicate_labels.get((owner, repo), [])
        by_id = {label.id: label for label in [*labels.values(), *org.values(), *extra]}
        if method == "GET" and ref is None:
            return self._issue_labels_list(owner, repo, number)
        if method == "DELETE" and ref is not None:
            found = self.api.issue_label_to_remove(ref, by_id, labels, stored.labels)
            if isinstance(found, Answer):
                return found
            self._set_issue_labels(
                owner, repo, number, [n for n in stored.labels if n != found.name]
            )
            return self.api.issue_label_removed(owner, repo, number)
        if method not in ("POST", "PUT") or ref is not None:
            return self.api.error(405, "Method Not Allowed")
        refs = body.get("labels") if isinstance(body, dict) else None
        if not isinstance(refs, list):
            return self.api.error(422, "Validation Failed")
        names: list[str] = []
        for item in refs:
            named = self.api.issue_label_name(item, by_id, labels, org, owner, repo)
            if isinstance(named, Answer):
                return named
            names.append(named)
        current = [] if method == "PUT" else list(stored.labels)
        for name in names:
            label = self._label_named(owner, repo, name)
            scope = self.api.exclusive_scope(label)
            if scope:  # Gitea's scoped labels: one exclusive label per scope on an issue
                current = [
                    n
                    for n in current
                    if self.api.exclusive_scope(self._label_named(owner, repo, n)) != scope
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
        """An issue's label and state changes, as the forge lists them (`api.events_answer`:
        GitHub's events, Gitea's timeline)."""
        if method != "GET":
            return self.api.error(405, "Method Not Allowed")
        return self.api.events_answer(owner, repo, number, query)

    def _comments_answer(
        self, method: str, owner: str, repo: str, number: int, query: dict[str, str], body: Any
    ) -> Answer:
        comments = self._comments.setdefault((owner, repo, number), [])
        if method == "GET":
            size = min(int(query.get(self.api.size_key, "30") or 30), 100)
            page = max(int(query.get("page", "1") or 1), 1)
            last = max((len(comments) + size - 1) // size, 1)
            chosen = comments[(page - 1) * size : page * size]
            items = [self._comment_json(owner, repo, number, c) for c in chosen]
            path = f"{self.api.prefix}/repos/{owner}/{repo}/issues/{number}/comments"
            headers = {}
            if page < last:
                nxt = f"{self.url}{path}?" + urlencode(query | {"page": str(page + 1)})
                headers["Link"] = f'<{nxt}>; rel="next"'
            return Answer(200, headers, items)
        if method != "POST":
            return self.api.error(405, "Method Not Allowed")
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text:
            return self.api.error(422, "Validation Failed")
        too_long = self.api.too_long("IssueComment", text)
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
