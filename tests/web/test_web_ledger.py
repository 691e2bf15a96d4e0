"""The ledger on the dashboard (issue 48): `/metrics` has the agents' tokens by kind, cost and
requests per lane, repository and model, matching the store; the job page shows a job's usage per
model with its one line; the overview shows today's spend by lane and repository and its chart."""

from __future__ import annotations

import json
import zlib
from decimal import Decimal
from typing import Any

from starlette.testclient import TestClient

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, claimed, enqueue_jobs
from tests.support.web import scrape, value
from tireless import JobStore


def usage(model: str, requests: int, **tokens: int) -> dict[str, Any]:
    row = {"model": model, "requests": requests, "unread": 0, "input": 0, "output": 0}
    return row | {"cache_read": 0, "cache_write": 0} | tokens


def test_metrics_the_job_page_and_the_overview_show_the_store_s_usage(
    client: TestClient, store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 2)
    first, second = claimed(store), claimed(store, "w2")
    store.record_usage(
        first.id, "w1", first.claim_token,
        [usage("claude-sonnet-4-5", 10, input=70_000, output=10_000, cache_read=4000),
         usage("local", 2, unread=1, input=210)],
    )  # fmt: skip
    store.record_usage(
        second.id, "w2", second.claim_token, [usage("claude-sonnet-4-5", 1, output=5)]
    )
    store.set_model_price("claude-*", Decimal(3), Decimal(15), Decimal("0.30"))

    samples, types = scrape(client)
    assert types["tireless_agent_tokens"] == "counter"
    key = {"lane": "cc", "repository": f"{FORGE}/{OWNER}/{REPO}"}
    with db.connect() as conn:
        stored = conn.execute(
            "SELECT model, sum(requests), sum(unread), sum(input_tokens), sum(output_tokens),"
            " sum(cache_read_tokens), sum(cache_write_tokens) FROM tireless.model_usage GROUP BY model"
        ).fetchall()
    assert len(stored) == 2
    for row in stored:
        model, requests, unread, *tokens = row
        labels = key | {"model": model}
        assert value(samples, "tireless_agent_requests_total", **labels, answer="all") == requests
        assert value(samples, "tireless_agent_requests_total", **labels, answer="unread") == unread
        for kind, count in zip(
            ("input", "output", "cache_read", "cache_write"), tokens, strict=True
        ):
            assert value(samples, "tireless_agent_tokens_total", **labels, kind=kind) == count
    sonnet = key | {"model": "claude-sonnet-4-5"}
    # 70,000 * 3 + 10,005 * 15 + 4,000 * 0.30 per million
    assert value(samples, "tireless_agent_cost_total", **sonnet, kind="input") == 0.21
    assert value(samples, "tireless_agent_cost_total", **sonnet, kind="output") == 0.150075
    assert value(samples, "tireless_agent_cost_total", **sonnet, kind="cache_read") == 0.0012
    assert (
        "tireless_agent_cost_total",
        frozenset((key | {"model": "local", "kind": "input"}).items()),
    ) not in samples, "unpriced"

    request = {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "Fix the bug"}],
    }
    answer = {"content": [{"type": "text", "text": "Done <b>here</b>"},
                          {"type": "tool_use", "name": "Edit", "input": {"path": "a.py"}}],
              "usage": {"input_tokens": 12, "output_tokens": 3}}  # fmt: skip
    store.record_exchange(
        first.id, "w1", first.claim_token,
        {"api": "anthropic", "model": "claude-sonnet-4-5", "status": 200,
         "request": zlib.compress(json.dumps(request).encode()),
         "answer": zlib.compress(json.dumps(answer).encode()), "request_bytes": 90, "answer_bytes": 120},
    )  # fmt: skip
    session = client.get(f"/jobs/{first.id}/transcript").text
    assert "Fix the bug" in session
    assert "Done &lt;b&gt;here&lt;/b&gt;" in session, "the model's text, escaped"
    assert "Edit({&#34;path&#34;: &#34;a.py&#34;})" in session
    assert "12 in, 3 out" in session

    page = client.get(f"/jobs/{first.id}").text
    assert "12 model requests, 84,210 tokens, $0.36 + unpriced (1 with tokens unknown)" in page
    assert "<code>claude-sonnet-4-5</code>" in page
    overview = client.get("/").text
    assert 'id="spend-today"' in overview
    assert "84,215" in overview, "the lane's tokens today, both jobs"
    assert 'id="spend-chart"' in overview
