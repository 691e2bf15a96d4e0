"""`tireless lane limits` (issue 47) through the real command: sizes, CPUs and processes parsed and
checked by the store, a bad value refused by name (TL005) with nothing changed, a limit left as it
was when not named, `none` and --off clearing; `lane show` and `status` show them; the holder's
record of what an attempt used is fenced by its claim and read back by `tireless show`."""

from __future__ import annotations

import pytest

from tests.conftest import Database
from tests.helpers import claimed, cli_json, enqueue_jobs, tireless_cli
from tireless import JobStore
from tireless.errors import InvalidArgument, NotHolder
from tireless.models import AttemptUsage, LaneLimits


def limits_column(text: str, lane: str) -> str:
    """The LIMITS cell of the lane's row in `tireless status`'s table."""
    header, *lines = text.splitlines()
    start = header.index("LIMITS")
    (row,) = [line for line in lines if line.split()[:1] == [lane]]
    return row[start:].strip()


def test_limits_are_set_kept_cleared_and_shown(db: Database) -> None:
    result = tireless_cli(
        db.url, "lane", "limits", "cc", "--memory", "512M", "--cpus", "1.5", "--pids", "128"
    )
    assert result.returncode == 0, result.stderr
    assert limits_column(result.stdout, "cc") == "memory 512 MiB, cpus 1.5, pids 128"
    result = tireless_cli(db.url, "lane", "limits", "cc", "--disk", "1.5GiB", "--cpus", "none")
    assert limits_column(result.stdout, "cc") == "memory 512 MiB, pids 128, disk 1.5 GiB"
    (row,) = cli_json(db.url, "lane", "show", "cc")
    assert (row["memory_limit"], row["cpu_limit"], row["pids_limit"], row["disk_limit"]) == (
        512 << 20, None, 128, 3 << 29,
    )  # fmt: skip
    tireless_cli(db.url, "lane", "limits", "oc", "--pids", "64")
    assert limits_column(tireless_cli(db.url, "status").stdout, "oc") == "pids 64"
    assert "LIMITS" not in tireless_cli(db.url, "lane", "limits", "cc", "--off").stdout
    assert limits_column(tireless_cli(db.url, "status").stdout, "cc") == "-"
    tireless_cli(db.url, "lane", "limits", "oc", "--off")
    assert "LIMITS" not in tireless_cli(db.url, "status").stdout, "shown where a lane has some"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--memory", "banana"),
            "TL005: memory limit of lane 'cc' must be a size from 16 MiB to 1 PiB (512M, 2GiB)"
            " or none, got 'banana'",
        ),
        (
            ("--pids", "0"),
            "TL005: process limit of lane 'cc' must be a count from 8 to 4194304 or none, got '0'",
        ),
        (("--cpus", "-1"), "TL005: CPU limit of lane 'cc' must be a number of CPUs"),
        (("--disk", "10K"), "TL005: disk limit of lane 'cc' must be a size from 1 MiB to 1 PiB"),
    ],
)
def test_a_bad_value_is_refused_by_name_and_nothing_changes(
    db: Database, store: JobStore, args: tuple[str, ...], message: str
) -> None:
    store.set_lane_limits("cc", memory="1G", pids="64")
    result = tireless_cli(db.url, "lane", "limits", "cc", "--cpus", "2", *args)
    assert result.returncode == 1
    assert message in result.stderr.splitlines()[0]
    assert store.lane_limits("cc") == LaneLimits(memory=1 << 30, pids=64)


def test_limits_take_a_value_or_off(db: Database) -> None:
    assert "needs --memory, --cpus, --pids, --disk or --off" in (
        tireless_cli(db.url, "lane", "limits", "cc").stderr
    )
    both = tireless_cli(db.url, "lane", "limits", "cc", "--off", "--pids", "9")
    assert both.returncode == 2
    assert "lane limits takes limits or --off, not both: --pids" in both.stderr


def test_the_holder_records_what_an_attempt_used_and_show_prints_it(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    used = AttemptUsage(268435456, 1.25, 64, 4096, "memory")
    with pytest.raises(NotHolder):
        store.record_attempt_usage(job.id, "someone-else", used, job.claim_token)
    with pytest.raises(InvalidArgument, match="limit_reached must be memory, pids, disk or null"):
        store.record_attempt_usage(job.id, "w1", AttemptUsage(limit_reached="cpu"), job.claim_token)
    store.record_attempt_usage(job.id, "w1", used, job.claim_token)
    shown = tireless_cli(db.url, "show", str(job.id)).stdout
    assert "usage: attempt 1: peak memory 256 MiB, CPU 1.25 s, peak processes 64," in shown
    assert "workspace 4 KiB, stopped by its memory limit" in shown
    (listed,) = cli_json(db.url, "jobs")
    assert listed["usage"] == {
        "attempt": 1, "peak_memory": 268435456, "cpu_seconds": 1.25, "peak_processes": 64,
        "workspace_bytes": 4096, "limit_reached": "memory",
    }  # fmt: skip
