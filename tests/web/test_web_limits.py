"""Limits on the dashboard (issue 47): the overview's lane table shows each lane's limits, a job's
page what each attempt used, and `/metrics` the limits and the usage per lane."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from tests.helpers import claimed, enqueue_jobs
from tests.support.web import scrape, value
from tireless import JobStore
from tireless.models import AttemptUsage


def test_lanes_limits_and_attempts_usage_are_shown_and_exported(
    admin: TestClient, client: TestClient, store: JobStore
) -> None:
    store.set_lane_limits("cc", memory="512M", cpus="1.5", pids="128", disk="1G")
    enqueue_jobs(store, 2)
    first, second = claimed(store, "w1"), claimed(store, "w2")
    store.record_attempt_usage(
        first.id, "w1", AttemptUsage(536870912, 2.5, 120, 1 << 20, "memory"), first.claim_token
    )
    store.record_attempt_usage(
        second.id, "w2", AttemptUsage(1 << 20, 0.5, 3, 0), second.claim_token
    )

    overview = admin.get("/").text
    assert "memory 512 MiB, cpus 1.5, pids 128, disk 1 GiB" in overview
    page = admin.get(f"/jobs/{first.id}").text
    table = re.search(r'<table id="usage">(.*?)</table>', page, re.S)
    assert table is not None
    cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", table[1], re.S)]
    assert cells == ["1", "512 MiB", "2.50", "120", "1 MiB", "its memory limit"]

    samples, types = scrape(client)
    assert types["tireless_lane_limit"] == "gauge"
    assert value(samples, "tireless_lane_limit", lane="cc", resource="memory_bytes") == 512 << 20
    assert value(samples, "tireless_lane_limit", lane="cc", resource="cpus") == 1.5
    assert value(samples, "tireless_lane_limit", lane="cc", resource="processes") == 128
    assert value(samples, "tireless_lane_attempt_cpu_seconds_total", lane="cc") == 3.0
    assert value(samples, "tireless_lane_attempt_peak_memory_bytes", lane="cc") == 536870912
    assert value(samples, "tireless_lane_attempt_peak_processes", lane="cc") == 120
    assert value(samples, "tireless_lane_limit_stops_total", lane="cc", limit="memory") == 1
    assert value(samples, "tireless_lane_limit_stops_total", lane="cc", limit="pids") == 0
