"""The trusted push (tireless.runner.extract, policy and push): the agent's workspace is read as
data, its work committed and checked in a repository of the runner's, and pushed with a lease over
tireless's own last push. Local bare repositories stand in for the forge; every git is real."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import threading
import zlib
from pathlib import Path

import pytest

from tests.support.workspace import AGENT_ENV, NOBODY, Forge, forge_commit, make_remote, sh
from tireless import git as git_module
from tireless.git import GitAuth, Identity
from tireless.runner import workspace as workspace_module
from tireless.runner.extract import PublishRefused
from tireless.runner.message import CommitMessage
from tireless.runner.policy import PublishPolicy, take_change
from tireless.runner.push import (
    Checkpoint,
    NoChange,
    Published,
    PushFailed,
    checkpoint_ref,
    publish,
    push_change,
    save_checkpoint,
)
from tireless.runner.workspace import RepoCache, Workspace, prepare_workspace

BOT = Identity("tireless[bot]", "bot@tireless.example")
FIRST, SECOND = "7e1b6a52-5f0e-5c1e-9d1c-0a4f2b9e8c11", "0c3d9f4e-8a27-5b61-b0f3-6d2e5a1c7b94"
"""Two attempt ids (Job.attempt_id) of one job's claims that had the same attempt number."""
COMMIT = CommitMessage(BOT, 41, FIRST, 7, "Paint the widgets blue")
"""What the runner's commits of job 41 (issue #7) say."""


@pytest.fixture
def forge(tmp_path: Path) -> Forge:
    (tmp_path / "jobs").mkdir()
    return Forge(
        make_remote(tmp_path / "remote.git"),
        RepoCache(tmp_path / "cache", allow_file_urls=True),
        tmp_path / "jobs",
    )


def deliver(ws: Workspace, expected: str | None = None, **options: object) -> Published | NoChange:
    return publish(
        ws, auth=None, branch="tireless/7", expected=expected, commit=COMMIT,
        **options,  # type: ignore[arg-type]
    )  # fmt: skip


def agent(ws: Workspace, *args: str) -> str:
    """The agent's git in its workspace (the test runs it as root, the workspace may be nobody's)."""
    return sh("-c", "safe.directory=*", "-C", str(ws.path), *args)


def on_forge(forge: Forge, *args: str) -> str:
    return sh(f"--git-dir={forge.remote}", *args)


def test_the_agents_commits_and_what_it_left_uncommitted_are_pushed(forge: Forge) -> None:
    with forge.workspace(owner=(NOBODY, NOBODY)) as ws:  # the agent's user owns it
        (ws.path / "src/app.py").write_text("print(2)\n")
        agent(ws, "commit", "-qam", "agent's commit")
        (ws.path / ".gitignore").write_text("*.log\nbuild/\n")
        (ws.path / "new.txt").write_text("untracked, not ignored\n")
        (ws.path / "notes").mkdir()
        (ws.path / "notes/deep.md").write_text("deep\n")
        (ws.path / "debug.log").write_text("ignored\n")
        (ws.path / "build").mkdir()
        (ws.path / "build/out.bin").write_text("ignored\n")
        (ws.path / "run.sh").write_text("#!/bin/sh\n")
        (ws.path / "run.sh").chmod(0o755)
        (ws.path / "README.md").unlink()
        os.symlink("src/app.py", ws.path / "app-link")

        published = deliver(ws)

    assert isinstance(published, Published)
    assert published.branch == "tireless/7"
    assert published.base_commit == ws.base_commit
    assert on_forge(forge, "rev-parse", "refs/heads/tireless/7") == published.head_commit
    assert len(published.commits) == 2
    files = on_forge(forge, "ls-tree", "-r", "--name-only", published.head_commit).split("\n")
    assert sorted(files) == [
        ".gitignore",
        "app-link",
        "new.txt",
        "notes/deep.md",
        "run.sh",
        "src/app.py",
    ]
    assert "100755" in on_forge(forge, "ls-tree", published.head_commit, "run.sh")
    assert on_forge(forge, "cat-file", "-p", f"{published.head_commit}:app-link") == "src/app.py"
    message = on_forge(forge, "log", "-1", "--format=%an <%ae>%n%cn%n%B", published.head_commit)
    assert message.startswith("tireless[bot] <bot@tireless.example>\ntireless[bot]\n")
    assert f"Tireless-Job: 41\nTireless-Attempt: {FIRST}" in message
    first = on_forge(forge, "log", "-1", "--format=%an %s", published.commits[0])
    assert first == "Agent agent's commit"


def test_the_work_of_an_agent_that_packed_its_repository_is_read_from_its_packs(
    forge: Forge,
) -> None:
    with forge.workspace() as ws:
        for n in range(3):
            (ws.path / f"step{n}.txt").write_text(f"{n}\n")
            agent(ws, "add", "-A")
            agent(ws, "commit", "-qm", f"step {n}")
        agent(ws, "gc", "--quiet")  # its objects in a pack, its branch in packed-refs
        assert not (ws.path / ".git/refs/heads/main").exists()
        assert list((ws.path / ".git/objects/pack").glob("*.pack"))
        published = deliver(ws)
        assert isinstance(published, Published)
        assert published.head_commit == agent(ws, "rev-parse", "HEAD")
        assert len(published.commits) == 3


def test_nothing_changed_is_no_change_and_nothing_is_pushed(forge: Forge) -> None:
    with forge.workspace() as ws:
        assert deliver(ws) == NoChange(ws.base_commit)
        (ws.path / "tmp.txt").write_text("x")
        agent(ws, "add", "tmp.txt")
        agent(ws, "commit", "-qm", "add")
        agent(ws, "rm", "-q", "tmp.txt")
        agent(ws, "commit", "-qm", "and take back")
        assert deliver(ws) == NoChange(ws.base_commit)  # commits whose tree is the base's
    assert on_forge(forge, "for-each-ref", "refs/heads/tireless") == ""


def planted_program(markers: Path, name: str, output: str = "") -> str:
    """A program that leaves a marker file when anything runs it."""
    program = markers / f"{name}.sh"
    program.write_text(f'#!/bin/sh\ntouch "{markers}/{name}.ran"\n{output}\n')
    program.chmod(0o755)
    return str(program)


def test_planted_hooks_config_and_filters_never_run(forge: Forge, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    with forge.workspace() as ws:
        (ws.path / ".gitattributes").write_text("* filter=x diff=x\n")
        (ws.path / "src/app.py").write_text("print('committed')\n")
        agent(ws, "add", "-A")
        agent(ws, "commit", "-qm", "agent's commit")
        # Now the agent plants what a careless runner would run or read.
        hooks = ws.path / ".git/hooks"
        hooks.mkdir(exist_ok=True)
        for hook in (
            "pre-push",
            "post-commit",
            "pre-commit",
            "reference-transaction",
            "post-checkout",
        ):
            os.symlink(planted_program(markers, hook), hooks / hook)
        included = tmp_path / "included.config"
        included.write_text(f"[core]\n\tpager = {planted_program(markers, 'included')}\n")
        with open(ws.path / ".git/config", "a") as config:
            config.write(
                f"[core]\n\tfsmonitor = {planted_program(markers, 'fsmonitor')}\n"
                f"\tsshCommand = {planted_program(markers, 'ssh')}\n"
                f"\thooksPath = {hooks}\n"
                f"[credential]\n\thelper = !{planted_program(markers, 'credential')}\n"
                f"[include]\n\tpath = {included}\n"
                f'[filter "x"]\n\tclean = {planted_program(markers, "clean", "echo CLEANED")}\n'
                f"\tsmudge = {planted_program(markers, 'smudge', 'cat')}\n\trequired = true\n"
                f'[diff "x"]\n\ttextconv = {planted_program(markers, "textconv", "cat")}\n'
                f"[uploadpack]\n\tpackObjectsHook = {planted_program(markers, 'packobjects')}\n"
            )
        (ws.path / ".git/info").mkdir(exist_ok=True)
        (ws.path / ".git/info/attributes").write_text("* filter=x diff=x\n")
        (ws.path / "src/app.py").write_text("print('left uncommitted')\n")
        (ws.path / "fresh.txt").write_text("raw content\n")

        published = deliver(ws)

        assert sorted(p.name for p in markers.glob("*.ran")) == []
        assert isinstance(published, Published)
        head = published.head_commit
        assert on_forge(forge, "cat-file", "-p", f"{head}:fresh.txt") == "raw content"  # no filter
        assert (
            on_forge(forge, "cat-file", "-p", f"{head}:src/app.py") == "print('left uncommitted')"
        )
        # The plants are live: the agent's own git runs them.
        agent(ws, "commit", "-qam", "the agent commits again")
        assert {"clean.ran", "fsmonitor.ran", "post-commit.ran"} <= {
            p.name for p in markers.glob("*.ran")
        }


def test_objects_behind_a_planted_alternates_file_are_not_used(
    forge: Forge, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.git"
    sh("init", "--quiet", "--bare", str(elsewhere))
    blob = sh(f"--git-dir={elsewhere}", "hash-object", "-w", "--stdin", stdin=b"from elsewhere\n")
    with forge.workspace() as ws:
        with open(ws.path / ".git/objects/info/alternates", "a") as alternates:
            alternates.write(f"{elsewhere}/objects\n")
        agent(ws, "update-index", "--add", "--cacheinfo", f"100644,{blob},elsewhere.txt")
        agent(ws, "commit", "-qm", "a file whose content is elsewhere")
        with pytest.raises(PublishRefused, match=f"objects it does not hold.*{blob}"):
            deliver(ws)
    assert on_forge(forge, "for-each-ref", "refs/heads/tireless") == ""


def test_a_forged_object_cannot_stand_in_for_one_of_the_base(forge: Forge) -> None:
    with forge.workspace() as ws:
        base_tree = agent(ws, "rev-parse", "HEAD^{tree}")
        (ws.path / "src/app.py").write_text("print(3)\n")
        agent(ws, "commit", "-qam", "change")
        head_tree = agent(ws, "rev-parse", "HEAD^{tree}")
        # A loose object named as the base's tree, holding the head's tree: a diff against the
        # base would then show nothing.
        data = agent_bytes(ws, "cat-file", "tree", head_tree)
        forged = ws.path / f".git/objects/{base_tree[:2]}/{base_tree[2:]}"
        forged.parent.mkdir(exist_ok=True)
        forged.write_bytes(zlib.compress(b"tree %d\0" % len(data) + data))
        with pytest.raises(PublishRefused, match="objects are broken"):
            deliver(ws)


def agent_bytes(ws: Workspace, *args: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(ws.path), *args], env=AGENT_ENV, capture_output=True, check=False
    ).stdout


def test_the_token_never_reaches_the_workspace_or_a_command_line(
    forge: Forge, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    execute = git_module._execute

    def recording(argv: list[str], env: dict[str, str], *rest: object) -> object:
        calls.append((argv, env))
        return execute(argv, env, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(git_module, "_execute", recording)
    auth = GitAuth("tireless-bot", "tok-2718281828")
    secrets = [s.encode() for s in auth.secrets()]
    ws = prepare_workspace(forge.cache, forge.remote, auth, forge.jobs / "ws")
    with ws:
        (ws.path / "new.txt").write_text("x\n")
        published = publish(ws, auth=auth, branch="tireless/7", expected=None, commit=COMMIT)
        assert isinstance(published, Published)
        for directory, _, files in os.walk(ws.path):
            for name in files:
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    content = Path(path).read_bytes()
                    assert not any(secret in content for secret in secrets), path
        assert agent(ws, "remote", "get-url", "origin") == forge.remote
        assert agent_bytes(ws, "config", "--get-regexp", "extraheader|credential") == b""
    for argv, env in calls:
        assert not any(secret.decode() in arg for arg in argv for secret in secrets)
        if any(secret.decode() in value for value in env.values() for secret in secrets):
            assert {"fetch", "ls-remote", "push"} & set(argv)
    assert any("push" in argv for argv, _ in calls)


def test_someone_elses_commit_on_the_branch_is_never_overwritten(forge: Forge) -> None:
    main = on_forge(forge, "rev-parse", "main")
    theirs = forge_commit(forge.remote, "tireless/7", {"theirs.txt": "mine\n"}, parent=main)
    with forge.workspace() as ws:
        (ws.path / "ours.txt").write_text("ours\n")
        with pytest.raises(
            PublishRefused, match=f"tireless/7 has commit {theirs[:12]} that tireless did not push"
        ):
            deliver(ws)
        first = deliver(ws, expected=theirs)  # what tireless pushed last: now it may replace it
        assert isinstance(first, Published)
        later = forge_commit(
            forge.remote, "tireless/7", {"later.txt": "x\n"}, parent=first.head_commit
        )
        (ws.path / "more.txt").write_text("more\n")
        with pytest.raises(PublishRefused, match=f"has commit {later[:12]}"):
            deliver(ws, expected=first.head_commit)
    assert on_forge(forge, "rev-parse", "refs/heads/tireless/7") == later


def test_a_retry_publishes_again_with_the_lease_of_tireless_last_push(forge: Forge) -> None:
    with forge.workspace() as ws:
        (ws.path / "one.txt").write_text("1\n")
        first = deliver(ws)
        assert isinstance(first, Published)
    with forge.workspace("again", start="tireless/7", base="main") as ws:
        (ws.path / "two.txt").write_text("2\n")
        with take_change(ws, commit=COMMIT) as change:
            ref = "refs/heads/tireless/7"
            pushed = push_change(change, auth=None, ref=ref, expected=first.head_commit)
            # The answer was lost: pushing again, with the old lease, finds its own commit there.
            assert push_change(change, auth=None, ref=ref, expected=first.head_commit) == pushed
        assert change.commits[0] == first.head_commit  # measured from main: the branch's history
        assert pushed == change.head
    assert on_forge(forge, "rev-parse", "refs/heads/tireless/7") == pushed
    assert on_forge(forge, "merge-base", "--is-ancestor", first.head_commit, pushed) == ""
    # The branch deleted on the forge (merged, say): pushed again, nothing of anyone's is lost.
    on_forge(forge, "update-ref", "-d", "refs/heads/tireless/7")
    with forge.workspace("third") as ws:
        (ws.path / "three.txt").write_text("3\n")
        assert isinstance(deliver(ws, expected=pushed), Published)


def test_a_push_whose_delivery_was_never_recorded_is_tireless_own_and_pushed_over(
    forge: Forge,
) -> None:
    with forge.workspace() as ws:
        (ws.path / "one.txt").write_text("1\n")
        first = deliver(ws)  # pushed; then the runner died before the store recorded it
        assert isinstance(first, Published)
    with forge.workspace("again") as ws:
        (ws.path / "two.txt").write_text("2\n")
        with take_change(ws, commit=COMMIT) as change:
            ref = "refs/heads/tireless/7"
            with pytest.raises(PublishRefused, match="that tireless did not push"):
                push_change(change, auth=None, ref=ref, expected=None)
            pushed = push_change(
                change, auth=None, ref=ref, expected=None, ours={first.head_commit}
            )
    assert on_forge(forge, "rev-parse", "refs/heads/tireless/7") == pushed


def test_ci_definitions_and_protected_paths_are_refused_and_named(forge: Forge) -> None:
    with forge.workspace() as ws:
        (ws.path / ".github/workflows").mkdir(parents=True)
        (ws.path / ".github/workflows/ci.yml").write_text("on: push\n")
        (ws.path / ".forgejo/workflows").mkdir(parents=True)
        (ws.path / ".forgejo/workflows/steal.yml").write_text("on: push\n")
        with pytest.raises(
            PublishRefused,
            match=r"CI definitions.*\.forgejo/workflows/steal\.yml, \.github/workflows/ci\.yml",
        ):
            deliver(ws)
        allowed = PublishPolicy(allowed=(".github/workflows/ci.yml",))
        with pytest.raises(PublishRefused, match=r"steal\.yml$"):
            deliver(ws, policy=allowed)
        assert isinstance(deliver(ws, policy=PublishPolicy(allow_ci=True)), Published)
    with forge.workspace("protected") as ws:
        (ws.path / "src/app.py").write_text("changed\n")
        agent(ws, "commit", "-qam", "touch a protected file")
        (ws.path / "src/app.py").write_text("print(1)\n")  # undone since: still refused
        (ws.path / "README.md").write_text("another change\n")
        with pytest.raises(PublishRefused, match=r"protects: src/app\.py"):
            deliver(ws, policy=PublishPolicy(protected=("src/*.py",)))


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("abs", "/etc/passwd"),
        ("up", "../outside"),
        ("deep", "src/../../outside"),
        ("chain", "via/../.."),
    ],
)
def test_a_symbolic_link_out_of_the_tree_is_refused(forge: Forge, link: str, target: str) -> None:
    with forge.workspace() as ws:
        os.symlink(".", ws.path / "via")  # inside the tree, but `via/..` is the tree's parent
        os.symlink(target, ws.path / link)
        with pytest.raises(PublishRefused, match=f"point out of the tree: {link}$"):
            deliver(ws)


def test_a_symbolic_link_inside_the_tree_is_published(forge: Forge) -> None:
    with forge.workspace() as ws:
        (ws.path / "docs").mkdir()
        os.symlink("../src/app.py", ws.path / "docs/app.py")
        assert isinstance(deliver(ws), Published)


@pytest.mark.parametrize("replacement", ["file", "symlink", "removed"])
def test_a_removed_or_replaced_dot_git_is_refused(
    forge: Forge, tmp_path: Path, replacement: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    sh("clone", "--quiet", forge.remote, str(elsewhere))
    with forge.workspace() as ws:
        (ws.path / "new.txt").write_text("x\n")
        workspace_module.remove_tree(ws.path / ".git")
        if replacement == "file":
            (ws.path / ".git").write_text(f"gitdir: {elsewhere}/.git\n")
        elif replacement == "symlink":
            os.symlink(elsewhere / ".git", ws.path / ".git")
        with pytest.raises(
            PublishRefused, match=r"\.git was (removed|replaced by a (file|symbolic link))"
        ):
            deliver(ws)


def test_commits_that_do_not_descend_from_the_base_are_refused(forge: Forge) -> None:
    with forge.workspace() as ws:
        agent(ws, "checkout", "-q", "--orphan", "elsewhere")
        (ws.path / "other.txt").write_text("another history\n")
        agent(ws, "add", "-A")
        agent(ws, "commit", "-qm", "another history")
        with pytest.raises(PublishRefused, match="does not descend from the base commit"):
            deliver(ws)
        agent(ws, "checkout", "-q", "--detach", "main")  # detached, on the base: nothing new
        assert isinstance(deliver(ws), NoChange)


def test_a_change_over_the_limits_is_refused(forge: Forge) -> None:
    with forge.workspace() as ws:
        for n in range(3):
            (ws.path / f"file{n}.txt").write_text("x" * 1000)
        with pytest.raises(PublishRefused, match="touches 3 files: at most 2"):
            deliver(ws, policy=PublishPolicy(max_files=2))
        with pytest.raises(PublishRefused, match="adds or modifies 3000 bytes: at most 2999"):
            deliver(ws, policy=PublishPolicy(max_bytes=2999))
        with pytest.raises(
            PublishRefused, match=r"file0\.txt is 1000 bytes: over 999, the forge would refuse it"
        ):
            deliver(ws, policy=PublishPolicy(max_file_bytes=999))
        agent(ws, "add", "-A")
        agent(ws, "commit", "-qm", "big files")
        agent(ws, "rm", "-q", "file0.txt", "file1.txt", "file2.txt")
        (ws.path / "small.txt").write_text("x")
        agent(ws, "add", "-A")
        agent(ws, "commit", "-qm", "and gone again")  # still pushed in the first commit
        with pytest.raises(PublishRefused, match="in one of its commits of 1000 bytes"):
            deliver(ws, policy=PublishPolicy(max_file_bytes=999))


def test_a_refused_push_names_the_forges_words_and_a_transient_one_says_so(
    forge: Forge, tmp_path: Path
) -> None:
    hook = Path(forge.remote) / "hooks/pre-receive"
    hook.write_text(
        "#!/bin/sh\necho 'GH006: Protected branch update failed for tireless/7.'\nexit 1\n"
    )
    hook.chmod(0o755)
    with forge.workspace() as ws:
        (ws.path / "new.txt").write_text("x\n")
        with pytest.raises(
            PublishRefused, match=r"pre-receive hook declined\); GH006: Protected branch"
        ):
            deliver(ws)
        with take_change(ws, commit=COMMIT) as change:
            with socket.socket() as closed:
                closed.bind(("127.0.0.1", 0))
                port = closed.getsockname()[1]
            with pytest.raises(PushFailed) as refused:
                push_change(change, auth=None, ref="refs/heads/t/1", expected=None,
                            url=f"http://127.0.0.1:{port}/o/r.git")  # fmt: skip
            assert refused.value.transient
            with unavailable_forge() as url, pytest.raises(PushFailed, match="503") as failed:
                push_change(
                    change,
                    auth=GitAuth("bot", "tok-1414"),
                    ref="refs/heads/t/1",
                    expected=None,
                    url=url,
                )
            assert failed.value.transient
            assert "tok-1414" not in failed.value.note


class Unavailable(http.server.BaseHTTPRequestHandler):
    """A forge answering 503 to everything (a deploy, an outage)."""

    def do_GET(self) -> None:
        self.send_response(503)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class unavailable_forge:
    def __enter__(self) -> str:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/o/r.git"

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def checkpoint(ws: Workspace, last: str | None, attempt_id: str = FIRST) -> Checkpoint | NoChange:
    return save_checkpoint(
        ws,
        auth=None,
        last=last,
        commit=CommitMessage(BOT, 41, attempt_id, 7, "Paint", checkpoint=True),
    )


def test_two_attempts_of_the_same_number_checkpoint_to_refs_of_their_own(forge: Forge) -> None:
    """A claim lost in a failover: its agent runs on until its next heartbeat while the job's new
    claim, with the same attempt number, starts from the checkpoint the store recorded. Each
    pushes its checkpoints to its own ref, over its own pushes only; nothing is overwritten."""
    with forge.workspace("lost") as lost:
        (lost.path / "lost.txt").write_text("the lost claim, first\n")
        recorded = checkpoint(lost, None, FIRST)
        assert isinstance(recorded, Checkpoint)
        with forge.workspace("again", start=recorded.ref) as again:
            (again.path / "again.txt").write_text("the new claim\n")
            mine = checkpoint(again, recorded.head_commit, SECOND)
            assert isinstance(mine, Checkpoint)
            (lost.path / "lost.txt").write_text("the lost claim, second\n")
            late = checkpoint(lost, recorded.head_commit, FIRST)
            assert isinstance(late, Checkpoint)
            (again.path / "again.txt").write_text("the new claim, second\n")
            mine_again = checkpoint(again, mine.head_commit, SECOND)
            assert isinstance(mine_again, Checkpoint)
    assert (recorded.ref, mine.ref) == (checkpoint_ref(41, FIRST), checkpoint_ref(41, SECOND))
    assert on_forge(forge, "rev-parse", recorded.ref) == late.head_commit
    assert on_forge(forge, "rev-parse", mine.ref) == mine_again.head_commit
    files = on_forge(forge, "ls-tree", "--name-only", mine_again.head_commit).split("\n")
    assert {"lost.txt", "again.txt"} <= set(files)  # the new claim started from the recorded one
    assert on_forge(forge, "show", f"{mine_again.head_commit}:lost.txt") == "the lost claim, first"


def test_a_checkpoint_is_where_the_next_attempt_starts(forge: Forge) -> None:
    with forge.workspace() as ws:
        (ws.path / "src/app.py").write_text("print('step 1')\n")
        agent(ws, "commit", "-qam", "step 1")
        (ws.path / "wip.txt").write_text("half done\n")
        saved = checkpoint(ws, None)
        assert isinstance(saved, Checkpoint)
        assert saved.ref == checkpoint_ref(41, FIRST) == f"refs/tireless/checkpoints/41-{FIRST}"
        again = checkpoint(ws, saved.head_commit)
        assert again == NoChange(ws.base_commit, "no change since the last checkpoint")
    assert on_forge(forge, "rev-parse", saved.ref) == saved.head_commit
    assert on_forge(forge, "for-each-ref", "refs/heads/tireless") == ""  # never the PR's branch
    main = on_forge(forge, "rev-parse", "main")
    forge_commit(forge.remote, "main", {"upstream.txt": "moved on\n"}, parent=main)
    with forge.workspace("attempt2", start=saved.ref, base="main", branch="tireless/7") as ws:
        assert (ws.start_commit, ws.base_commit) == (saved.head_commit, main)
        assert (ws.path / "wip.txt").read_text() == "half done\n"
        assert agent(ws, "log", "--format=%s", f"{main}..HEAD").splitlines() == [
            "Checkpoint: step 1",
            "step 1",
        ]
        (ws.path / "wip.txt").write_text("done\n")
        published = deliver(ws)
    assert isinstance(published, Published)
    assert published.base_commit == main
    assert len(published.commits) == 3
