"""The per-host cache and the job's workspace (tireless.runner.workspace), with real git and local
bare repositories standing in for the forge (local paths are allowed by `allow_file_urls`, as
only tests and the benchmark do)."""

from __future__ import annotations

import multiprocessing
import os
import stat
import tempfile
from pathlib import Path

import pytest

from tests.support.workspace import NOBODY, Forge, forge_commit, make_remote, sh
from tireless import git as git_module
from tireless.git import GitAuth
from tireless.runner.workspace import (
    RepoCache,
    WorkspaceError,
    cache_key,
    prepare_workspace,
    remove_tree,
)

"""The environment of the git the tests run as the agent or as the forge (not the runner's)."""


@pytest.fixture
def forge(tmp_path: Path) -> Forge:
    (tmp_path / "jobs").mkdir()
    return Forge(
        make_remote(tmp_path / "remote.git"),
        RepoCache(tmp_path / "cache", allow_file_urls=True),
        tmp_path / "jobs",
    )


def test_a_workspace_is_the_default_branch_read_from_the_cache(forge: Forge) -> None:
    main = sh(f"--git-dir={forge.remote}", "rev-parse", "main")
    with forge.workspace() as ws:
        assert (ws.path / "README.md").read_text() == "hello\n"
        assert (ws.base_commit, ws.start_commit, ws.branch) == (main, main, "main")
        assert sh("-C", str(ws.path), "rev-parse", "HEAD") == main
        assert sh("-C", str(ws.path), "symbolic-ref", "--short", "HEAD") == "main"
        # No full clone: the objects are the mirror's, through the alternates.
        alternates = (ws.path / ".git/objects/info/alternates").read_text().strip()
        assert alternates == str(forge.cache.mirror(forge.remote) / "objects")
        assert not list((ws.path / ".git/objects/pack").glob("*.pack"))
        assert sh("-C", str(ws.path), "remote", "get-url", "origin") == forge.remote
        # The cache is the runner's and nobody else can write it; its locks nobody else can open.
        assert stat.S_IMODE(forge.cache.state.stat().st_mode) == 0o700
        for directory, dirs, files in os.walk(forge.cache.root):
            if directory != str(forge.cache.state):
                for name in [".", *dirs, *files]:
                    found = os.lstat(os.path.join(directory, name))
                    assert found.st_uid == os.geteuid()
                    assert not found.st_mode & 0o022  # readable by the agent, never writable
    assert not ws.path.exists()


def test_a_workspace_starts_at_a_branch_or_a_commit_with_its_base(forge: Forge) -> None:
    main = sh(f"--git-dir={forge.remote}", "rev-parse", "main")
    feature = forge_commit(forge.remote, "tireless/7", {"a.txt": "a\n"}, parent=main)
    forge_commit(forge.remote, "main", {"b.txt": "b\n"}, parent=main)  # main moved on
    with forge.workspace("pr", start="tireless/7", base="main") as ws:
        assert (ws.start_commit, ws.base_commit, ws.branch) == (feature, main, "tireless/7")
        assert (ws.path / "a.txt").exists()
        assert not (ws.path / "b.txt").exists()
    with forge.workspace("commit", start=main, branch="tireless/8") as ws:
        assert (ws.start_commit, ws.base_commit, ws.branch) == (main, main, "tireless/8")
    with pytest.raises(WorkspaceError, match="no commit"):
        forge.workspace("missing", start="no-such-branch")
    assert not (forge.jobs / "missing").exists()


def test_a_workspace_belongs_to_the_agents_user_and_the_cache_does_not(forge: Forge) -> None:
    with forge.workspace(owner=(NOBODY, NOBODY)) as ws:
        for directory, dirs, files in os.walk(ws.path):
            for name in [".", *dirs, *files]:
                found = os.lstat(os.path.join(directory, name))
                assert (found.st_uid, found.st_gid) == (NOBODY, NOBODY)
        assert forge.cache.mirror(forge.remote).stat().st_uid == os.geteuid()


def test_remove_copes_with_what_the_agent_made_read_only(forge: Forge) -> None:
    """Removed by a runner that is not root (the agent's own user here), whose permissions the
    agent's chmod can stop; as root (the runner's usual user) nothing can."""
    parent = Path(tempfile.mkdtemp())
    try:
        os.chmod(parent, 0o755)
        os.chown(parent, NOBODY, NOBODY)
        ws = prepare_workspace(
            forge.cache, forge.remote, None, parent / "ws", owner=(NOBODY, NOBODY)
        )
        locked = ws.path / "src" / "locked"
        locked.mkdir()
        (locked / "file").write_text("x")
        os.chown(locked, NOBODY, NOBODY)
        os.chmod(locked / "file", 0o400)
        os.chmod(locked, 0o500)
        os.chmod(ws.path / "src", 0o000)

        def remove_as_nobody() -> None:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            ws.remove()

        child = multiprocessing.get_context("fork").Process(target=remove_as_nobody)
        child.start()
        child.join(30)
        assert child.exitcode == 0
        assert not ws.path.exists()
        ws.remove()  # the runner's own handle: the cache's use lock released, nothing left to do
    finally:
        remove_tree(parent)


def test_the_runners_git_is_hardened_and_its_token_kept_out_of_sight(
    forge: Forge, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    execute = git_module._execute

    def recording(argv: list[str], env: dict[str, str], *rest: object) -> object:
        calls.append((argv, env))
        return execute(argv, env, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(git_module, "_execute", recording)
    monkeypatch.setenv("GIT_DIR", "/elsewhere")  # the runner's own GIT_* variables are not passed
    auth = GitAuth("tireless-bot", "tok-3141592653")
    assert "tok-3141592653" not in repr(auth)
    assert "tok-3141592653" not in str(auth)
    with prepare_workspace(forge.cache, forge.remote, auth, forge.jobs / "ws"):
        pass
    assert calls
    for argv, env in calls:
        for option in ("core.hooksPath=/dev/null", "core.fsmonitor=false", "credential.helper=",
                       "submodule.recurse=false", "protocol.allow=never"):  # fmt: skip
            assert option in argv
        assert env["GIT_CONFIG_NOSYSTEM"] == "1"
        assert env["GIT_CONFIG_GLOBAL"] == "/dev/null"
        assert env["GIT_TERMINAL_PROMPT"] == "0"
        assert "GIT_DIR" not in env
        assert not any(auth.token in arg or auth.secrets()[1] in arg for arg in argv)
        if any(auth.token in value or auth.secrets()[1] in value for value in env.values()):
            assert {"fetch", "ls-remote"} & set(
                argv
            )  # the header goes only where the forge is read


def test_a_clone_url_with_credentials_is_refused(forge: Forge) -> None:
    for url in ("https://bot:tok@forge.example/o/r.git", "ssh://forge.example/o/r.git", "/local"):
        with pytest.raises(ValueError, match="clone URL"):
            prepare_workspace(RepoCache(forge.cache.root), url, None, forge.jobs / "ws")
    assert cache_key("https://Forge.example/o/r.git/") == cache_key("https://forge.example/o/r.git")


def _prepare_at_once(root: str, remote: str, dest: str, barrier: object, rounds: int) -> None:
    cache = RepoCache(Path(root), allow_file_urls=True)
    for round_ in range(rounds):
        barrier.wait()  # type: ignore[attr-defined]
        with prepare_workspace(cache, remote, None, Path(f"{dest}-{round_}")) as ws:
            assert (ws.path / "README.md").read_text() == "hello\n"
            assert sh("-C", str(ws.path), "fsck", "--connectivity-only", "--no-progress") == ""


def test_two_workers_share_the_cache_at_once(forge: Forge) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    workers = [
        context.Process(
            target=_prepare_at_once,
            args=(str(forge.cache.root), forge.remote, str(forge.jobs / f"w{n}"), barrier, 4),
        )
        for n in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert [p.name for p in forge.cache.mirrors.iterdir()] == [
        forge.cache.mirror(forge.remote).name
    ]


def test_eviction_keeps_the_cache_under_its_bound_least_recently_used_first(
    forge: Forge, tmp_path: Path
) -> None:
    remotes = {name: make_remote(tmp_path / f"{name}.git") for name in "abcd"}
    unbounded = forge.cache
    with prepare_workspace(unbounded, remotes["a"], None, forge.jobs / "sizing"):
        pass
    one = unbounded.sizes()[cache_key(remotes["a"])]
    cache = RepoCache(unbounded.root, max_bytes=int(2.5 * one), allow_file_urls=True)

    def kept() -> set[str]:
        sizes = cache.sizes()
        assert sum(sizes.values()) <= cache.max_bytes  # type: ignore[operator]
        return {name for name, remote in remotes.items() if cache_key(remote) in sizes}

    held = prepare_workspace(cache, remotes["a"], None, forge.jobs / "a")  # a stays in use
    for name in "bc":
        with prepare_workspace(cache, remotes[name], None, forge.jobs / name):
            pass
    assert kept() == {"a", "c"}  # a is the least recently used, but in use: b went
    held.remove()
    with prepare_workspace(cache, remotes["d"], None, forge.jobs / "d"):
        pass
    assert kept() == {"c", "d"}
