"""Commit statuses and GitHub's check runs (issue 34): what a CI posts (tests set them, the token
may post a status) and the combined status the forge answers for a commit; each forge's states,
shapes and combining rule are its API's (dev.standin.gitea, dev.standin.github), cited there.

    forge.set_status("acme", "widgets", sha, "ci/tests", "failure", "3 tests failed")
    forge.set_check_run("acme", "widgets", sha, "build", conclusion="success")  # GitHub
"""

from __future__ import annotations

from dev.standin.github_conversation import CHECK_RUN_CONCLUSIONS, CHECK_RUN_STATUSES
from dev.standin.records import (
    MIRROR_LOGIN,
    Answer,
    RepoRequest,
    StoredCheckRun,
    StoredStatus,
    _now,
    latest,
)
from dev.standin.reviews import ReviewRoutes


class CheckRoutes(ReviewRoutes):
    """The statuses' and check runs' state, what tests set, and their routes."""

    def _init_checks(self) -> None:
        self._statuses: dict[tuple[str, str, str], list[StoredStatus]] = {}
        self._check_runs: dict[tuple[str, str, str], list[StoredCheckRun]] = {}

    # What tests set
    def set_status(
        self,
        owner: str,
        repo: str,
        sha: str,
        context: str,
        state: str,
        description: str = "",
        target_url: str | None = None,
    ) -> int:
        """A commit status, as a CI posts it (the latest of a context is the one shown); its id."""
        if state not in self.api.status_states:
            raise ValueError(f"{self.flavour} has no commit status state {state!r}")
        with self._lock:
            made = StoredStatus(
                self._new_id(), context, state, description, target_url, _now(), "ci"
            )
            self._statuses.setdefault((owner, repo, sha), []).append(made)
            return made.id

    def set_check_run(
        self,
        owner: str,
        repo: str,
        sha: str,
        name: str,
        status: str = "completed",
        conclusion: str | None = None,
        title: str | None = None,
        summary: str | None = None,
        details_url: str | None = None,
    ) -> int:
        """A GitHub check run on the commit (a run of the same name again is a re-run: the
        latest is the one listed); its id."""
        if not self.api.has_check_runs:
            raise ValueError("check runs are GitHub's; Gitea and Forgejo have commit statuses")
        if status not in CHECK_RUN_STATUSES or (
            conclusion is not None and conclusion not in CHECK_RUN_CONCLUSIONS
        ):
            raise ValueError(f"unknown check run status {status!r} or conclusion {conclusion!r}")
        with self._lock:
            done = _now() if status == "completed" else None
            made = StoredCheckRun(
                self._new_id(), name, status, conclusion, title, summary, details_url, _now(), done
            )
            self._check_runs.setdefault((owner, repo, sha), []).append(made)
            return made.id

    # Serving (called under the lock)
    def _status_create(self, asked: RepoRequest) -> Answer:
        """POST .../statuses/{sha} `{state, target_url, description, context}`: 201 with the
        status (Gitea: NewCommitStatus, routers/api/v1/repo/status.go; GitHub: docs.github.com/
        en/rest/commits/statuses#create-a-commit-status), `context` the forge's default unless
        given. The stand-in does not check that the commit exists."""
        form = asked.body if isinstance(asked.body, dict) else {}
        state = form.get("state")
        if state not in self.api.status_states:
            return self.api.error(422, "Validation Failed")
        made = StoredStatus(
            self._new_id(),
            str(form.get("context") or self.api.default_context),
            str(state),
            str(form.get("description") or ""),
            form.get("target_url") or None,
            _now(),
            MIRROR_LOGIN,
        )
        owner, repo, sha = asked.owner, asked.repo, asked.rest[1]
        self._statuses.setdefault((owner, repo, sha), []).append(made)
        return Answer(201, {}, self.api.status_json(owner, repo, sha, made))

    def _checks_answer(self, asked: RepoRequest) -> Answer:
        """GET .../commits/{ref}/status, the combined status: the latest status of each context
        (a branch name is its head commit), combined by the forge's rule (Gitea:
        GetCombinedCommitStatusByRef, routers/api/v1/repo/status.go, pages by page/limit with
        X-Total-Count, no Link; GitHub: docs.github.com/en/rest/commits/statuses#get-the-
        combined-status-for-a-specific-reference, paged by Link). GET .../commits/{ref}/check-runs
        is GitHub's (`api.check_runs`)."""
        owner, repo, query = asked.owner, asked.repo, asked.query
        _, ref, kind = asked.rest  # commits/{ref}/status or commits/{ref}/check-runs
        sha = self.git.branch_head(owner, repo, ref) or ref
        path = f"{self.api.prefix}/repos/{owner}/{repo}/commits/{ref}/{kind}"
        if kind == "check-runs":
            return self.api.check_runs(owner, repo, sha, query, path)
        statuses = latest(self._statuses.get((owner, repo, sha), []), lambda s: s.context)
        if not statuses:
            empty = self.api.no_statuses()
            if empty is not None:
                return empty
        chosen, headers = self.api.page(statuses, query, path)
        return Answer(
            200,
            headers,
            {
                "state": self.api.combined_state([s.state for s in statuses]),
                "sha": sha,
                "total_count": self.api.status_total(len(chosen), len(statuses)),
                "statuses": [self.api.status_json(owner, repo, sha, s) for s in chosen],
                "repository": self._repo_json(owner, repo),
                "commit_url": f"{self.url}{self.api.prefix}/repos/{owner}/{repo}/commits/{sha}",
                "url": f"{self.url}{path}",
            },
        )
