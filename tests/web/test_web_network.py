"""The agent's network on the dashboard (issue 38): a job's page lists the hosts its agent reached
and was refused, and `/metrics` counts each lane's refusals and bytes in and out."""

from __future__ import annotations

import re
from typing import Any

from starlette.testclient import TestClient

from tests.helpers import claimed, enqueue_jobs
from tests.support.roles import Login
from tests.support.web import Client, scrape, value
from tireless import Job, JobStore


def use(host: str, port: int, requests: int, bytes_in: int, bytes_out: int) -> dict[str, Any]:
    """A host the agent reached, as the runner records it."""
    return {
        "host": host,
        "port": port,
        "allowed": True,
        "requests": requests,
        "bytes_in": bytes_in,
        "bytes_out": bytes_out,
        "reason": None,
    }


def refusal(host: str, requests: int, reason: str) -> dict[str, Any]:
    """A host the agent was refused `requests` times."""
    return {
        "host": host,
        "port": 443,
        "allowed": False,
        "requests": requests,
        "bytes_in": 0,
        "bytes_out": 0,
        "reason": reason,
    }


def recorded(store: JobStore, worker: str, lanes: tuple[str, ...], *hosts: dict[str, Any]) -> Job:
    job = claimed(store, worker, lanes)
    store.record_job_network(job.id, worker, job.claim_token, hosts)
    return job


def test_a_job_page_lists_the_hosts_reached_and_refused(
    admin: TestClient,
    connect_as: Client,
    login: Login,
    store: JobStore,
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    assert 'id="network"' not in admin.get(f"/jobs/{job.id}").text, "nothing recorded yet"
    store.record_job_network(
        job.id,
        "w1",
        job.claim_token,
        [use("pypi.org", 443, 3, 5000, 700), refusal("<b>evil</b>.example", 2, "not listed")],
    )
    for viewer in (admin, connect_as(login("tireless_poller"))):
        page = viewer.get(f"/jobs/{job.id}").text
        table = re.search(r'<table id="network">(.*?)</table>', page, re.S)
        assert table is not None
        cells = [
            [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r"<tr class=\"(?:reached|refused)\">(.*?)</tr>", table[1], re.S)
        ]
        assert cells == [
            ["1", "pypi.org", "443", "3", "5000", "700", "-"],
            ["1", "&lt;b&gt;evil&lt;/b&gt;.example", "443", "2", "0", "0", "not listed"],
        ]


def test_metrics_count_each_lanes_refusals_and_bytes(
    client: TestClient,
    store: JobStore,
) -> None:
    enqueue_jobs(store, 2)
    enqueue_jobs(store, 1, "tireless", "tireless/implement", "tireless/agent:oc", first=3)
    recorded(
        store,
        "w1",
        ("cc",),
        use("pypi.org", 443, 3, 5000, 700),
        refusal("evil.example", 2, "not listed"),
    )
    recorded(store, "w2", ("cc",), use("pypi.org", 443, 1, 10, 20), refusal("10.0.0.1", 1, "x"))
    recorded(store, "w3", ("oc",), use("api.example", 443, 1, 1, 2))
    samples, types = scrape(client)
    assert types["tireless_lane_egress_refusals"] == "counter"
    assert types["tireless_lane_egress_bytes"] == "counter"
    assert value(samples, "tireless_lane_egress_refusals_total", lane="cc") == 3
    assert value(samples, "tireless_lane_egress_refusals_total", lane="oc") == 0
    assert value(samples, "tireless_lane_egress_bytes_total", lane="cc", direction="in") == 5010
    assert value(samples, "tireless_lane_egress_bytes_total", lane="cc", direction="out") == 720
    assert value(samples, "tireless_lane_egress_bytes_total", lane="oc", direction="in") == 1
    assert value(samples, "tireless_lane_egress_bytes_total", lane="oc", direction="out") == 2
