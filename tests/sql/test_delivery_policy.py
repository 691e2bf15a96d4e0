"""A repository's delivery policy (tireless.set_repo_delivery): the admin sets what an agent's change
may touch and how much, a null leaving a setting as it is; bad globs and limits and untracked
repositories are refused and change nothing; the job's brief carries the policy to the runner;
only an admin sets it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, cli_json, issue, rows, tireless_cli, tracked
from tests.support.roles import Login
from tireless import JobStore, RepoDelivery
from tireless.errors import InvalidArgument, PermissionDenied, UnknownRepository
from tireless.runner.policy import PublishPolicy


def stored(db: Database) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT * FROM tireless.repo_delivery ORDER BY forge, owner, repo")


def test_the_admin_sets_the_policy_and_a_null_leaves_a_setting_as_it_is(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    defaults = RepoDelivery(FORGE, OWNER, REPO, (), (), False, None, None)
    assert store.set_repo_delivery(FORGE, OWNER, REPO) == defaults
    assert stored(db) == [], "nothing to change writes nothing"
    policy = store.set_repo_delivery(
        FORGE, OWNER, REPO, protected=["secrets/", "*.pem"], allow_ci=True, max_files=20
    )
    assert policy == RepoDelivery(FORGE, OWNER, REPO, ("secrets/", "*.pem"), (), True, 20, None)
    policy = store.set_repo_delivery(FORGE, OWNER, REPO, allowed=[".github/workflows/lint.yml"])
    assert (policy.protected, policy.allowed, policy.allow_ci, policy.max_files) == (
        ("secrets/", "*.pem"),
        (".github/workflows/lint.yml",),
        True,
        20,
    )
    policy = store.set_repo_delivery(
        FORGE, OWNER, REPO, protected=[], max_files=0, max_bytes=1 << 20
    )
    assert (policy.protected, policy.max_files, policy.max_bytes) == ((), None, 1 << 20), (
        "an empty list empties it; a limit of 0 goes back to the runner's default"
    )
    assert store.set_repo_delivery(FORGE, OWNER, REPO) == policy


@pytest.mark.parametrize(
    ("arguments", "refusal", "message"),
    [
        (
            {"protected": [""]},
            InvalidArgument,
            "protected glob must be 1 to 255 characters.*got ''",
        ),
        ({"protected": ["/etc/"]}, InvalidArgument, "not starting with /, got '/etc/'"),
        ({"allowed": ["a\nb"]}, InvalidArgument, "allowed glob .* got 'a\nb'"),
        ({"allowed": ["ok", None]}, InvalidArgument, "allowed glob .* got null"),
        ({"protected": ["x" * 256]}, InvalidArgument, "got 'x{256}'"),
        (
            {"protected": [f"{n}/" for n in range(101)]},
            InvalidArgument,
            "at most 100 globs, got 101",
        ),
        ({"max_files": -1}, InvalidArgument, "max_files .* got -1"),
        ({"max_bytes": -5}, InvalidArgument, "max_bytes .* got -5"),
        ({"repo": "untracked", "allow_ci": True}, UnknownRepository, "gitea/acme/untracked"),
    ],
)
def test_bad_values_and_untracked_repositories_are_refused_and_change_nothing(
    store: JobStore, db: Database, arguments: dict[str, Any], refusal: type, message: str
) -> None:
    tracked(store).set_repo_delivery(FORGE, OWNER, REPO, protected=["secrets/"], max_files=5)
    before = stored(db)
    settings = {name: value for name, value in arguments.items() if name != "repo"}
    with pytest.raises(refusal, match=message):
        store.set_repo_delivery(FORGE, OWNER, arguments.get("repo", REPO), **settings)
    assert stored(db) == before


def test_the_table_holds_only_path_globs_and_positive_limits(store: JobStore, db: Database) -> None:
    """The rules hold for a write past the setter too (the superuser's)."""
    with db.connect() as conn:
        for values, rule in [
            ("protected => '{\"\"}'", "protected_globs_are_path_globs"),
            ("allowed => '{/abs}'", "allowed_globs_are_path_globs"),
            ("allowed => '{{a,b}}'", "allowed_globs_are_path_globs"),
            ("protected => '{a,NULL}'", "protected_globs_are_path_globs"),
            (f"protected => '{{{'x' * 256}}}'", "protected_globs_are_path_globs"),
            (f"allowed => '{{{','.join(['a'] * 101)}}}'", "at_most_100_allowed_globs"),
            ("max_files => 0", "delivery_max_files_positive"),
            ("max_bytes => -1", "delivery_max_bytes_positive"),
        ]:
            column, value = values.split(" => ")
            with pytest.raises(psycopg.errors.CheckViolation) as broken:
                conn.execute(
                    f"INSERT INTO tireless.repo_delivery (forge, owner, repo, {column})"
                    f" VALUES ('gitea', 'acme', 'widgets', {value})"
                )
            assert broken.value.diag.constraint_name == rule, values
        conn.execute(
            "INSERT INTO tireless.repo_delivery (forge, owner, repo, protected, allowed)"
            " VALUES ('gitea', 'acme', 'widgets', %s, %s)",
            [["x" * 255, "docs/*.md", "a b/ü"], [f"{n}" for n in range(100)]],
        )


def test_the_brief_carries_the_repositorys_policy_and_another_repository_gets_the_defaults(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    tracked(store, "gadgets").enqueue([issue(1), issue(2, repo="gadgets")])
    store.set_repo_delivery(
        FORGE, OWNER, REPO, protected=["secrets/"], allowed=[".github/workflows/lint.yml"],
        allow_ci=True, max_files=3, max_bytes=4096,
    )  # fmt: skip
    ids = dict(rows(db, "SELECT repo, id FROM tireless.job"))
    brief = store.job_brief(ids[REPO])
    assert (
        brief.protected_paths,
        brief.allowed_paths,
        brief.allow_ci,
        brief.max_files,
        brief.max_bytes,
    ) == (("secrets/",), (".github/workflows/lint.yml",), True, 3, 4096)
    other = store.job_brief(ids["gadgets"])
    assert (
        other.protected_paths,
        other.allowed_paths,
        other.allow_ci,
        other.max_files,
        other.max_bytes,
    ) == ((), (), False, None, None)


def test_only_an_admin_sets_the_policy_and_a_runner_reads_it_in_the_brief(
    store: JobStore,
    db: Database,
    login: Login,
) -> None:
    tracked(store).enqueue([issue(1)])
    job_id = db.scalar("SELECT id FROM tireless.job")
    with (
        JobStore(login("tireless_runner")) as runner,
        JobStore(login("tireless_poller")) as poller,
        JobStore(login("tireless_admin")) as admin,
    ):
        for refused in (runner, poller):
            with pytest.raises(PermissionDenied):
                refused.set_repo_delivery(FORGE, OWNER, REPO, allow_ci=True)
        assert stored(db) == []
        assert admin.set_repo_delivery(FORGE, OWNER, REPO, protected=["secrets/"]).protected == (
            "secrets/",
        )
        assert runner.job_brief(job_id).protected_paths == ("secrets/",)
    for group in ("tireless_runner", "tireless_poller", "tireless_admin"):  # private, as all tables
        with (
            psycopg.connect(login(group), autocommit=True) as conn,
            pytest.raises(psycopg.errors.InsufficientPrivilege),
        ):
            conn.execute("UPDATE tireless.repo_delivery SET allow_ci = true")


def test_the_command_line_sets_and_prints_the_policy(store: JobStore, db: Database) -> None:
    tracked(store)
    policy = cli_json(
        db.url, "repo", "delivery", FORGE, OWNER, REPO, "--protect", "secrets/",
        "--protect", "*.pem", "--allow-ci", "--max-files", "20", "--max-bytes", "10M",
    )  # fmt: skip
    assert (policy["protected"], policy["allow_ci"], policy["max_files"], policy["max_bytes"]) == (
        ["secrets/", "*.pem"],
        True,
        20,
        10 << 20,
    )
    shown = tireless_cli(
        db.url, "repo", "delivery", FORGE, OWNER, REPO, "--no-protect", "--no-allow-ci",
        "--max-files", "default",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        f"{FORGE}/{OWNER}/{REPO}:",
        "  protected: none",
        "  allowed: none",
        "  CI definitions: may not change",
        "  max files: the runner's default",
        f"  max bytes: {10 << 20}",
    ]
    refused = tireless_cli(db.url, "repo", "delivery", FORGE, OWNER, "untracked", "--allow-ci")
    assert (refused.returncode, "TL008" in refused.stderr) == (1, True)


def test_the_policy_that_applies_has_the_defaults_filled_in_and_the_brief_carries_it(
    store: JobStore,
    db: Database,
    login: Login,
) -> None:
    tracked(store).enqueue([issue(1)])
    job_id = db.scalar("SELECT id FROM tireless.job")
    defaults = RepoDelivery(FORGE, OWNER, REPO, (), (), False, 1000, 50 << 20)
    assert store.delivery_policy(FORGE, OWNER, REPO) == defaults
    assert rows(db, "SELECT * FROM tireless.delivery_policy('gitea', 'acme', 'widgets')") == [
        ("gitea", "acme", "widgets", [], [], False, 1000, 52428800)
    ], "psql shows what applies"
    assert store.delivery_policy(FORGE, OWNER, "gadgets") == replace(defaults, repo="gadgets")
    store.set_repo_delivery(FORGE, OWNER, REPO, protected=["secrets/"], max_bytes=4096)
    applied = RepoDelivery(FORGE, OWNER, REPO, ("secrets/",), (), False, 1000, 4096)
    with JobStore(login("tireless_runner")) as runner:
        assert runner.delivery_policy(FORGE, OWNER, REPO) == applied
        brief = runner.job_brief(job_id)
    assert (brief.max_files, brief.max_bytes) == (None, 4096), "as set"
    assert (brief.applied_max_files, brief.applied_max_bytes) == (1000, 4096), "as it applies"
    store.set_repo_delivery(FORGE, OWNER, REPO, max_files=7, max_bytes=0)  # 0: the default again
    again = store.delivery_policy(FORGE, OWNER, REPO)
    assert (again.max_files, again.max_bytes) == (7, 50 << 20)
    # The publishing module's own defaults, for a caller without a store, are the store's.
    assert (PublishPolicy().max_files, PublishPolicy().max_bytes) == (1000, 50 << 20)
