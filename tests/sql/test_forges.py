"""The forge registry: add_forge creates or changes an entry and says whether it did, bad names,
kinds and URLs are refused naming the value, remove_forge removes, forges() lists; a forge's
trouble (a rate limit, an auth failure) stops its repositories until it ends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import Database
from tireless import Forge, ForgeKind, JobStore
from tireless.errors import InvalidArgument, UnknownRepository

GITEA = "https://gitea.example.com"


def test_add_forge_says_whether_it_created_or_changed_the_entry(store: JobStore) -> None:
    assert store.add_forge("gitea", "gitea", GITEA)
    assert not store.add_forge("gitea", "gitea", GITEA)
    assert not store.add_forge("gitea", ForgeKind.GITEA, GITEA + "/"), "a trailing slash is dropped"
    assert store.add_forge("gitea", "forgejo", GITEA)
    assert store.add_forge("gitea", "forgejo", GITEA + "/sub")
    assert store.add_forge("github", "github", "https://api.github.com")
    assert store.forges() == [
        Forge("gitea", ForgeKind.FORGEJO, GITEA + "/sub"),
        Forge("github", ForgeKind.GITHUB, "https://api.github.com"),
    ]


def test_remove_forge_says_whether_it_removed_one(store: JobStore) -> None:
    store.add_forge("gitea", "gitea", GITEA)
    assert store.remove_forge("gitea")
    assert not store.remove_forge("gitea")
    assert not store.remove_forge("never-added")
    assert store.forges() == []


@pytest.mark.parametrize(
    ("name", "kind", "base_url", "names"),
    [
        ("gitea", "gitlab", GITEA, "unknown forge kind 'gitlab'"),
        ("gitea", "GITEA", GITEA, "unknown forge kind 'GITEA'"),
        ("gitea", None, GITEA, "unknown forge kind null"),
        ("gitea", "gitea", "ftp://gitea.example.com", "got 'ftp://gitea.example.com'"),
        ("gitea", "gitea", "gitea.example.com", "got 'gitea.example.com'"),
        ("gitea", "gitea", "https://", "got 'https://'"),
        ("gitea", "gitea", "https://x.test/?token=1", "got 'https://x.test/?token=1'"),
        ("gitea", "gitea", "https://x .test", "got 'https://x .test'"),
        ("gitea", "gitea", None, "got null"),
        ("", "gitea", GITEA, "forge name must be"),
        ("two words", "gitea", GITEA, "got 'two words'"),
        ("f" * 101, "gitea", GITEA, "forge name must be"),
        (None, "gitea", GITEA, "got null"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_value_and_changes_nothing(
    store: JobStore, name: str, kind: str, base_url: str, names: str
) -> None:
    store.add_forge("gitea", "gitea", GITEA)
    with pytest.raises(InvalidArgument) as refused:
        store.add_forge(name, kind, base_url)
    assert names in str(refused.value)
    assert store.forges() == [Forge("gitea", ForgeKind.GITEA, GITEA)]


def test_forge_trouble_stops_every_repository_of_the_forge_until_it_ends(
    store: JobStore, db: Database
) -> None:
    store.add_forge("gitea", "gitea", GITEA)
    store.add_forge("other", "github", "https://api.github.com")
    for forge, repo in (("gitea", "a"), ("gitea", "b"), ("other", "c")):
        store.track_repo(forge, "acme", repo)
    until = datetime.now(UTC) + timedelta(hours=1)
    store.record_forge_trouble("gitea", "401 Unauthorized: check TIRELESS_TOKEN_GITEA", until)
    assert [r.repo for r in store.claim_repos_to_poll("p1")] == ["c"]
    status = {s.repo: s for s in store.repo_status()}
    assert status["a"].forge_limited_until == until
    assert status["a"].forge_error == "401 Unauthorized: check TIRELESS_TOKEN_GITEA"
    assert status["c"].forge_error is None
    store.record_forge_trouble("gitea", None, None)
    assert sorted(r.repo for r in store.claim_repos_to_poll("p1")) == ["a", "b"]
    assert {s.forge_error for s in store.repo_status()} == {None}


def test_forge_trouble_that_has_ended_stops_nothing(store: JobStore) -> None:
    store.add_forge("gitea", "gitea", GITEA)
    store.track_repo("gitea", "acme", "a")
    store.record_forge_trouble("gitea", "rate limited", datetime.now(UTC) - timedelta(seconds=1))
    assert [r.repo for r in store.claim_repos_to_poll("p1")] == ["a"]


def test_forge_trouble_needs_a_registered_forge_and_an_end(store: JobStore) -> None:
    with pytest.raises(UnknownRepository, match="forge 'nowhere' is not registered"):
        store.record_forge_trouble("nowhere", "rate limited", datetime.now(UTC))
    store.add_forge("gitea", "gitea", GITEA)
    with pytest.raises(InvalidArgument, match="until must say when"):
        store.record_forge_trouble("gitea", "rate limited", None)


def test_a_repository_of_an_unregistered_forge_is_not_tracked(store: JobStore) -> None:
    """track_repo refuses it as `tireless track` does (TL008), naming the command that registers it."""
    with pytest.raises(UnknownRepository, match="forge 'gitea' is not registered") as refused:
        store.track_repo("gitea", "acme", "a")
    assert "tireless forge add gitea" in str(refused.value.hint)
    assert store.tracked_repos() == []


def test_the_repositories_of_a_removed_forge_stay_tracked_but_are_not_polled(
    store: JobStore,
) -> None:
    store.add_forge("gitea", "gitea", GITEA)
    store.track_repo("gitea", "acme", "a")
    store.remove_forge("gitea")
    assert store.claim_repos_to_poll("p1") == []
    (status,) = store.repo_status()
    assert (status.registered, status.forge_kind) == (False, None)
    store.add_forge("gitea", "forgejo", GITEA)
    (status,) = store.repo_status()
    assert (status.registered, status.forge_kind) == (True, "forgejo")
    assert [r.kind for r in store.claim_repos_to_poll("p1")] == [ForgeKind.FORGEJO]
