"""The dashboard's test clients and what they read: a client that asks as the dashboard's pages do,
a database holding jobs in every state (populate), the pages' forms and rows, and /metrics
scraped."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient
from starlette.types import Receive

from tests.conftest import Database
from tests.helpers import claimed, end_lease, issue, tracked
from tireless import JobStore
from tireless.web.guard import (
    Guard,
)

Client = Callable[[str], TestClient]


SITE = "http://localhost"


def browser(app: Guard) -> TestClient:
    """A client that asks as the dashboard's own pages do: for localhost, with its Origin."""
    return TestClient(app, base_url=SITE, headers={"Origin": SITE})


@dataclass(frozen=True)
class Jobs:
    """The ids of a database holding jobs in every state, in two lanes and several kinds."""

    pending: int
    claimed: int
    past_lease: int
    delivered: int
    failed: int
    cancelled: int
    child: int
    other_repo: int


def populate(store: JobStore, db: Database) -> Jobs:
    tracked(store)
    tracked(store, "gadgets")
    store.enqueue([issue(n) for n in range(1, 7)])
    store.enqueue(
        [issue(7, "tireless", "tireless/plan", "tireless/agent:oc", title="Plan <b>it</b>")]
    )
    first = claimed(store, "runner-a")
    second = claimed(store, "runner-b")
    third = claimed(store, "runner-c")
    fourth = claimed(store, "runner-d")
    # After the claims: acme/widgets' jobs 1 to 4 are claimed, the repositories' turns aside.
    store.enqueue([issue(1, repo="gadgets")])
    store.transition(
        first.id, "delivered", "runner-a", note="opened PR #3", token=first.claim_token
    )
    store.transition(second.id, "failed", "runner-b", note="tests failed", token=second.claim_token)
    end_lease(db, fourth.id)
    pending = 5
    store.transition(6, "cancelled", note="not needed")
    plan = 7
    store.enqueue([issue(8, parent_id=plan)])
    child: int = db.scalar("SELECT id FROM tireless.job WHERE number = 8")
    store.pause_lane("oc")
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.lane SET consecutive_failures = 3,"
            " tripped_until = now() + interval '5 minutes' WHERE name = 'oc'"
        )
    return Jobs(pending, third.id, fourth.id, first.id, second.id, 6, child, 8)


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert match is not None, "the page has no action form"
    return match.group(1)


def job_ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'<td class="n"><a href="/jobs/(\d+)">', page)]


def lane_row(db: Database, lane: str) -> tuple[Any, ...]:
    with db.connect() as conn:
        row = conn.execute(
            "SELECT paused, consecutive_failures, tripped_until IS NOT NULL FROM tireless.lane"
            " WHERE name = %s",
            [lane],
        ).fetchone()
    assert row is not None
    return tuple(row)


def asgi_post(
    app: Guard, path: str, headers: list[tuple[bytes, bytes]], receive: Receive
) -> list[dict[str, Any]]:
    """POST straight through ASGI (no lifespan, so no pool): what the app sends back."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"localhost"), (b"origin", SITE.encode()), *headers],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 12345),
    }
    answers: list[dict[str, Any]] = []

    async def answer(message: dict[str, Any]) -> None:
        answers.append(message)

    asyncio.run(app(scope, receive, answer))  # type: ignore[arg-type]
    return answers


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: TestClient) -> tuple[Samples, dict[str, str]]:
    """Every sample by (name, labels), and each family's type."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(response.text):
        types[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples, types


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]
