"""Limits through `tireless work` with real processes under bwrap (issue 47): a memory hog past
its lane's limit is stopped with a note naming it while a job on a second worker is delivered, and
its worker goes on; a fork loop never has more processes alive than its limit, counted from the
host; two busy loops under one CPU use about one CPU-second per second and are not failed; a
worker that cannot enforce a lane's limits does not serve it (exit 2); and a SIGKILLed worker
leaves no process, and no control group once a worker starts again. Each bounded: a hog takes at
most 2 GiB, a fork loop starts at most 1,000 processes."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs, rows, tireless_cli, wait_until, wait_until_sql
from tests.support.work import (
    MARKER,
    agent,
    marked,
    processes_marked,
    skip_unless_available,
    start_worker,
    work_args,
)
from tireless import JobStore
from tireless.runner.limits import TREE, Cgroups, Unenforceable, own_cgroups, worker_directory

pytestmark = pytest.mark.usefixtures("in_public_dir", "cgroups")

AS_NOBODY = ("--sandbox", "bwrap", "--agent-user", "nobody")


@pytest.fixture
def in_public_dir(public_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker runs in a directory the agent user may write (COMMAND's working directory,
    which bwrap leaves writable), so the files an agent leaves for the test are where both see
    them."""
    monkeypatch.chdir(public_dir)


@pytest.fixture
def cgroups() -> None:
    skip_unless_available("bwrap")
    if os.geteuid() != 0:
        pytest.skip("the tests' workers run COMMAND as nobody, which needs root")
    try:
        Cgroups.find().close()
    except Unenforceable as lacking:
        pytest.skip(f"this host cannot make control groups: {lacking}")


def job_row(db: Database, number: int) -> tuple[str, str]:
    """The job's state and the first line of its note ("" for none)."""
    ((state, note),) = rows(
        db, "SELECT state::text, note FROM tireless.job WHERE number = %(n)s", {"n": number}
    )
    return state, (note or "").split("\n")[0]


HOG = """
import os, sys, time
out, chunks = sys.argv[1], []
def take(mib):
    for _ in range(mib // 16):
        chunks.append(b"x" * (16 << 20))
take(160)
open(out + "/holding", "w").close()
while not os.path.exists(out + "/go"):
    time.sleep(0.02)
take(2048)
"""


def test_a_memory_hog_is_stopped_at_its_limit_while_other_jobs_go_on(
    store: JobStore,
    db: Database,
    public_dir: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    """Issue 1 hogs memory in lane cc (256 MiB); while it holds 160 MiB, worker 2 delivers lane
    oc's job; then it goes past the limit and is stopped, and its worker delivers issue 2."""
    store.set_lane_limits("cc", memory="256M")
    enqueue_jobs(store, 2)
    enqueue_jobs(store, 1, "tireless", "tireless/implement", "tireless/agent:oc", first=3)
    (public_dir / "hog.py").write_text(HOG)
    script = 'if [ "$TIRELESS_NUMBER" = 1 ]; then exec python3 "$OUT/hog.py" "$OUT"; fi\necho fine'
    hog = start_worker(
        db, worker_process, *work_args(*AS_NOBODY, "--poll", "1s", "--"),
        *agent(public_dir, script),
    )  # fmt: skip
    wait_until((public_dir / "holding").exists, "the hog to hold 160 MiB")
    other = tireless_cli(
        db.url, "work", "--worker", "runner-2", "--lane", "oc", "--once", *AS_NOBODY, "--",
        *agent(public_dir, "echo fine"),
    )  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert job_row(db, 3) == ("delivered", "")
    (public_dir / "go").touch()
    wait_until_sql(db.url, "(SELECT state = 'delivered' FROM tireless.job WHERE number = 2)")
    assert job_row(db, 1) == ("pending", "out of memory: limit 256 MiB"), "the agent's failure"
    peak, reached = db.scalar(
        "SELECT row(u.peak_memory, u.limit_reached) FROM tireless.job_usage u"
        " JOIN tireless.job j ON j.id = u.job_id WHERE j.number = 1"
    )
    assert (int(peak) <= 256 << 20, reached) == (True, "memory")
    assert hog.poll() is None, "the worker lives on"
    hog.send_signal(signal.SIGTERM)
    hog.communicate(timeout=30)


def test_a_fork_loop_never_has_more_processes_alive_than_its_limit(
    store: JobStore, db: Database, public_dir: Path
) -> None:
    store.set_lane_limits("cc", pids="64")
    enqueue_jobs(store, 1)
    marker = marked()
    script = "i=0\nwhile [ $i -lt 1000 ]; do sleep 30 & i=$((i + 1)); done\nwait"
    counts: list[int] = []
    done = threading.Event()

    def count() -> None:
        while not done.is_set():
            counts.append(len(processes_marked(marker[MARKER])))
            time.sleep(0.005)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        result = tireless_cli(
            db.url, *work_args("--once", *AS_NOBODY, "--"), *agent(public_dir, script), **marker
        )
    finally:
        done.set()
        counter.join()
    assert result.returncode == 0, result.stderr
    assert job_row(db, 1) == ("pending", "process limit 64 reached")
    assert max(counts) <= 64 + 2, "the worker and the fork loop's 64 at most"
    assert processes_marked(marker[MARKER]) == []
    assert db.scalar("SELECT peak_processes FROM tireless.job_usage") <= 64


def cpu_ticks(pids: list[int]) -> int:
    """The user and system clock ticks the processes used so far."""
    total = 0
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])
    return total


def test_two_busy_loops_under_one_cpu_use_about_one_cpu_second_per_second(
    store: JobStore, db: Database, public_dir: Path, worker_process: list[subprocess.Popen[str]]
) -> None:
    store.set_lane_limits("cc", cpus="1")
    enqueue_jobs(store, 1)
    marker = marked()
    loop = "python3 -c 'while True: pass' &"
    script = (
        f'{loop}\n{loop}\ntouch "$OUT/busy"\n'
        'while [ ! -e "$OUT/done" ]; do sleep 0.05; done\nkill %1 %2\necho slowed, not failed'
    )
    worker = start_worker(
        db, worker_process, *work_args("--once", *AS_NOBODY, "--"), *agent(public_dir, script),
        extra=marker,
    )  # fmt: skip
    wait_until((public_dir / "busy").exists, "the busy loops to run")
    loops = [
        pid
        for pid in processes_marked(marker[MARKER])
        if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"python3\0-c\0while True")
    ]
    assert len(loops) == 2
    ticks, began = cpu_ticks(loops), time.monotonic()
    time.sleep(2)  # the window measured, not a wait for an event
    seconds = (cpu_ticks(loops) - ticks) / os.sysconf("SC_CLK_TCK")
    used = seconds / (time.monotonic() - began)
    (public_dir / "done").touch()
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    # At most one CPU: never two. The floor is low: on a host busy with others' work (7 helpers on
    # 2 cores here) the loops get less than their share, and a CPU limit never fails them.
    assert 0.1 <= used <= 1.25, f"{used:.2f} CPU-seconds per second"
    assert job_row(db, 1) == ("delivered", "")
    assert db.scalar("SELECT cpu_seconds FROM tireless.job_usage") >= seconds * 0.9


def test_a_lane_with_limits_is_not_served_by_a_worker_that_cannot_enforce_them(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    store.set_lane_limits("cc", memory="512M", pids="128")
    enqueue_jobs(store, 1)
    result = tireless_cli(
        db.url, *work_args("--once", "--sandbox", "none", "--"), *agent(tmp_path, "echo ran")
    )
    assert result.returncode == 2
    assert (
        "lane cc has limits (memory 512 MiB, pids 128) this worker cannot enforce: --sandbox none"
        in result.stderr
    )
    assert db.scalar("SELECT row(state, attempts)::text FROM tireless.job") == "(pending,0)"


def test_a_sigkilled_worker_leaves_no_process_and_no_control_group(
    store: JobStore, db: Database, public_dir: Path, worker_process: list[subprocess.Popen[str]]
) -> None:
    store.set_lane_limits("cc", memory="256M", pids="64")
    enqueue_jobs(store, 1)
    marker = marked()
    script = 'sleep 60 &\ntouch "$OUT/started"\nexec sleep 60'
    worker = start_worker(
        db, worker_process, *work_args(*AS_NOBODY, "--"), *agent(public_dir, script), extra=marker
    )
    wait_until((public_dir / "started").exists, "the agent to run")
    _, own = own_cgroups()
    left = [base / TREE / worker_directory(worker.pid) for base in own.values()]
    assert all(path.is_dir() for path in left), "the attempt's group, under the worker's"
    worker.kill()
    worker.wait()
    wait_until(lambda: processes_marked(marker[MARKER]) == [], "the job's processes to end", 2)
    again = tireless_cli(db.url, *work_args("--once", *AS_NOBODY, "--"), "true")
    assert again.returncode == 3, again.stderr  # nothing to claim: its job is still held
    assert [path for path in left if path.exists()] == []


def test_a_v1_hosts_controllers_are_found_mounted_alone_or_together(tmp_path: Path) -> None:
    """Debian's cpu and cpuacct share a mount (/sys/fs/cgroup/cpu,cpuacct); here each has its own."""
    if (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():
        pytest.skip("a cgroup v2 host")
    (tmp_path / "cgroup").write_text(
        "9:pids:/a\n4:memory:/b/c\n2:cpu,cpuacct:/\n1:name=systemd:/d\n0::/\n"
    )
    (tmp_path / "mountinfo").write_text(
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    )
    version, found = own_cgroups(tmp_path)
    assert version == 1
    assert found == {
        "cpu": Path("/sys/fs/cgroup/cpu,cpuacct"),
        "cpuacct": Path("/sys/fs/cgroup/cpu,cpuacct"),
        "memory": Path("/sys/fs/cgroup/memory/b/c"),
        "pids": Path("/sys/fs/cgroup/pids/a"),
    }
