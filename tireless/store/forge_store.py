"""JobStore's forge methods (mixed into it): the forge registry, the poller's lease on the
repositories it polls and what it records of each poll, and the mirror's writes. Each runs one
call of tireless.store.forge_calls as JobStore runs its own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from tireless.models import (
    DiscoveredIssue,
    Forge,
    ForgeApp,
    ForgeKind,
    ForgeWrite,
    MirrorWrite,
    PollOutcome,
    RepoStatus,
    RepoToPoll,
    WriteKind,
)
from tireless.store import forge_calls
from tireless.store.calls import DEFAULT_POLL_LEASE, Call

Answer = TypeVar("Answer")


class ForgeMethods:
    """JobStore's forges, polls and mirror writes: each method one call of forge_calls."""

    def _run(self, call: Call[Any, Answer]) -> Answer:
        raise NotImplementedError  # JobStore's

    def add_forge(self, name: str, kind: ForgeKind | str, base_url: str) -> bool:
        return self._run(forge_calls.add_forge(name, kind, base_url))

    def remove_forge(self, name: str) -> bool:
        return self._run(forge_calls.remove_forge(name))

    def forges(self) -> list[Forge]:
        return self._run(forge_calls.forges())

    def set_forge_app(self, name: str, app_id: int | None, app_key_file: str | None = None) -> bool:
        """(admin) The forge's GitHub App (None: a token again); true when the entry changed."""
        return self._run(forge_calls.set_forge_app(name, app_id, app_key_file))

    def forge_apps(self) -> list[ForgeApp]:
        """The forges that authenticate as a GitHub App."""
        return self._run(forge_calls.forge_apps())

    def check_forge(self, name: str) -> None:
        """TL008 (UnknownRepository) unless the forge is registered."""
        return self._run(forge_calls.check_forge(name))

    def retry_forge(self, name: str) -> int:
        """(admin) Clear the forge's stop and make its repositories due now; how many they are."""
        return self._run(forge_calls.retry_forge(name))

    def claim_repos_to_poll(
        self, poller: str, lease: timedelta = DEFAULT_POLL_LEASE, max_repos: int = 100
    ) -> list[RepoToPoll]:
        return self._run(forge_calls.claim_repos_to_poll(poller, lease, max_repos))

    def record_poll(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        issues: Iterable[DiscoveredIssue | Mapping[str, Any]],
        cursor: datetime | None,
        etag: str | None,
        full_listing: bool,
        deleted: Sequence[int] = (),
        next_poll_in: timedelta = timedelta(0),
        odd: Sequence[tuple[int, str]] = (),
    ) -> PollOutcome:
        """`odd`: the issues the poller read but could not take as issues (number, why): kept
        in tireless.issue_skip beside those the store itself leaves out, the rest recorded."""
        call = forge_calls.record_poll(
            forge, owner, repo, poller, issues, cursor, etag, full_listing, deleted, next_poll_in,
            odd,
        )  # fmt: skip
        return self._run(call)

    def record_poll_failure(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        error: str,
        retry_after: timedelta | None = None,
    ) -> datetime:
        call = forge_calls.record_poll_failure(forge, owner, repo, poller, error, retry_after)
        return self._run(call)

    def renew_poll_leases(self, poller: str, lease: timedelta) -> int:
        return self._run(forge_calls.renew_poll_leases(poller, lease))

    def record_poll_notice(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        moved_to: str | None,
        warning: str | None,
    ) -> None:
        return self._run(
            forge_calls.record_poll_notice(forge, owner, repo, poller, moved_to, warning)
        )

    def record_issue_moved(
        self, forge: str, owner: str, repo: str, poller: str, number: int, note: str
    ) -> int:
        return self._run(forge_calls.record_issue_moved(forge, owner, repo, poller, number, note))

    def record_issue_gone(
        self, forge: str, owner: str, repo: str, poller: str, number: int, note: str
    ) -> int:
        """The forge says the issue is gone (deleted, or moved: `note` says how): its live jobs
        end and the mirror writes to it no more. Returns how many jobs it ended."""
        return self._run(forge_calls.record_issue_gone(forge, owner, repo, poller, number, note))

    def record_repo_archived(self, forge: str, owner: str, repo: str, poller: str) -> datetime:
        """The forge refused a write because the repository is archived: no mirror write to it
        for a day. Returns when one is tried again."""
        return self._run(forge_calls.record_repo_archived(forge, owner, repo, poller))

    def record_forge_trouble(self, name: str, error: str | None, until: datetime | None) -> None:
        return self._run(forge_calls.record_forge_trouble(name, error, until))

    def mirror_writes(
        self, forge: str, owner: str, repo: str, poller: str, max_writes: int = 100
    ) -> list[MirrorWrite]:
        return self._run(forge_calls.mirror_writes(forge, owner, repo, poller, max_writes))

    def record_mirror_write(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        write: MirrorWrite,
        issue: DiscoveredIssue | Mapping[str, Any] | None = None,
    ) -> bool:
        call = forge_calls.record_mirror_write(forge, owner, repo, poller, write, issue)
        return self._run(call)

    def record_mirror_failure(
        self, forge: str, owner: str, repo: str, poller: str, write: MirrorWrite, error: str
    ) -> datetime:
        call = forge_calls.record_mirror_failure(forge, owner, repo, poller, write, error)
        return self._run(call)

    def forge_writes_due(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        kinds: Sequence[WriteKind],
        max_writes: int = 100,
        now: datetime | None = None,
    ) -> list[ForgeWrite]:
        """The outbox's writes of `kinds` due now (or at `now`), in the order of `kinds`."""
        return self._run(
            forge_calls.forge_writes_due(forge, owner, repo, poller, kinds, max_writes, now)
        )

    def record_forge_write(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        write_id: int,
        error: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> datetime | None:
        """The forge's answer to write `write_id`: it landed (`result`, as its kind needs; None
        back), or it failed (`error`; when it is tried again)."""
        return self._run(
            forge_calls.record_forge_write(forge, owner, repo, poller, write_id, error, result)
        )

    def set_mirror_comments(self, enabled: bool) -> bool:
        return self._run(forge_calls.set_mirror_comments(enabled))

    def poll_soon(self, forge: str, owner: str, repo: str) -> bool:
        return self._run(forge_calls.poll_soon(forge, owner, repo))

    def repo_status(self) -> list[RepoStatus]:
        return self._run(forge_calls.repo_status())
