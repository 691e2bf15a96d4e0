"""`tireless lane allow-net` (issue 38) through the real command: a list, --off (no list: the
host's network) and --none (no egress), exactly one form, a bad entry refused by name; `tireless
status` shows each lane's egress, and `tireless show` the hosts a job's agent reached and was
refused."""

from __future__ import annotations

import pytest

from tests.conftest import Database
from tests.helpers import claimed, cli_json, enqueue_jobs, tireless_cli
from tireless import JobStore


def egress_column(text: str, lane: str) -> str:
    """The EGRESS cell of the lane's row in `tireless status`'s table."""
    header, *lines = text.splitlines()
    start = header.index("EGRESS")
    (row,) = [line for line in lines if line.split()[:1] == [lane]]
    return row[start:].strip()


def test_allow_net_sets_clears_and_empties_a_lanes_list_and_prints_it(db: Database) -> None:
    result = tireless_cli(db.url, "lane", "allow-net", "cc", "PyPI.org", "*.example.com:8443")
    assert result.returncode == 0, result.stderr
    assert egress_column(result.stdout, "cc") == "pypi.org, *.example.com:8443"
    (row,) = cli_json(db.url, "lane", "show", "cc")
    assert row["egress"] == ["pypi.org", "*.example.com:8443"]

    result = tireless_cli(db.url, "lane", "allow-net", "cc", "--none")
    assert egress_column(result.stdout, "cc") == "none"
    assert cli_json(db.url, "lane", "show", "cc")[0]["egress"] == []

    result = tireless_cli(db.url, "lane", "allow-net", "cc", "--off")
    assert egress_column(result.stdout, "cc") == "host network"
    assert cli_json(db.url, "lane", "show", "cc")[0]["egress"] is None
    assert egress_column(tireless_cli(db.url, "status").stdout, "cc") == "host network"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("cc",), "lane allow-net needs HOST[:PORT]..., --off or --none"),
        (("cc", "pypi.org", "--off"), "lane allow-net takes hosts or --off, not both: pypi.org"),
        (("cc", "pypi.org", "--none"), "lane allow-net takes hosts or --none, not both: pypi.org"),
        (("cc", "--off", "--none"), "argument --none: not allowed with argument --off"),
    ],
)
def test_allow_net_takes_exactly_one_form(
    db: Database, args: tuple[str, ...], message: str
) -> None:
    result = tireless_cli(db.url, "lane", "allow-net", *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_a_bad_entry_is_refused_by_name_and_the_list_stays(db: Database) -> None:
    tireless_cli(db.url, "lane", "allow-net", "cc", "pypi.org")
    result = tireless_cli(db.url, "lane", "allow-net", "cc", "pypi.org", "example.com:99999")
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "tireless: TL005: egress entry 'example.com:99999' of lane 'cc' is not HOST[:PORT]"
    )
    assert cli_json(db.url, "lane", "show", "cc")[0]["egress"] == ["pypi.org"]


def test_show_prints_the_hosts_a_jobs_agent_reached_and_was_refused(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    quiet = tireless_cli(db.url, "show", str(job.id)).stdout
    assert "network:" not in quiet, "a job without a record shows no network section"
    store.record_job_network(
        job.id,
        "w1",
        job.claim_token,
        [
            {
                "host": "pypi.org",
                "port": 443,
                "allowed": True,
                "requests": 3,
                "bytes_in": 5000,
                "bytes_out": 700,
                "reason": None,
            },
            {
                "host": "169.254.169.254",
                "port": 80,
                "allowed": False,
                "requests": 2,
                "bytes_in": 0,
                "bytes_out": 0,
                "reason": "a link-local address",
            },
        ],
    )
    text = tireless_cli(db.url, "show", str(job.id)).stdout
    network = text.split("network:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split() for line in network] == [
        ["ATTEMPT", "HOST", "PORT", "REQUESTS", "BYTES-IN", "BYTES-OUT", "REFUSED"],
        ["1", "pypi.org", "443", "3", "5000", "700", "-"],
        ["1", "169.254.169.254", "80", "2", "0", "0", "a", "link-local", "address"],
    ]
    shown = cli_json(db.url, "show", str(job.id))
    assert [(n["host"], n["allowed"], n["reason"]) for n in shown["network"]] == [
        ("pypi.org", True, None),
        ("169.254.169.254", False, "a link-local address"),
    ]
