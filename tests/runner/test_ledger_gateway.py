"""The ledger at the gateway (issue 48), with real sockets on loopback in front of the scripted
model stand-in and the real store: the usage of every answer, streamed or not, of the three APIs
is read as it passes and recorded per model; a Chat Completions stream is asked for its usage,
and the extra chunk is kept from an agent that did not ask; a spent budget per job is answered in
the vendor's own error shape and the stand-in never sees the request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

import httpx

from dev.model_standin import ModelStandin, Script, Usage
from tests.helpers import claimed, enqueue_jobs
from tireless import JobStore
from tireless.models import Job, SpendBudget
from tireless.runner.gateway import Upstream, UpstreamGateway
from tireless.runner.ledger import Ledger
from tireless.usage import Api, UsageReader

SECRET = "sk-ledger-test-secret-0123456789"
SONNET, GPT = "claude-sonnet-4-5", "gpt-5"
USAGE = Usage(input_tokens=1000, output_tokens=200, cache_read_input_tokens=400,
              cache_creation_input_tokens=50)  # fmt: skip


@contextmanager
def gateway(store: JobStore, job: Job, model: ModelStandin) -> Iterator[tuple[Ledger, str]]:
    ledger = Ledger(
        lambda rows: store.record_usage(job.id, "w1", job.claim_token, rows),
        lambda: store.usage_allowance(job.id, "w1", job.claim_token),
    ).start()
    upstream = Upstream("model", model.url, "x-api-key", SECRET)
    try:
        with UpstreamGateway(upstream, ("127.0.0.1", 0), ledger) as running:
            address = running.address
            assert isinstance(address, tuple)
            yield ledger, f"http://{address[0]}:{address[1]}"
    finally:
        ledger.close()


def anthropic(client: httpx.Client, base: str, stream: bool) -> httpx.Response:
    body = {"model": SONNET, "max_tokens": 100, "stream": stream,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    return client.post(f"{base}/v1/messages", json=body)


def chat(client: httpx.Client, base: str, stream: bool, include: bool = False) -> httpx.Response:
    body: dict[str, object] = {"model": GPT, "stream": stream,
                               "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    if include:
        body["stream_options"] = {"include_usage": True}
    return client.post(f"{base}/v1/chat/completions", json=body)


def responses(client: httpx.Client, base: str, stream: bool) -> httpx.Response:
    return client.post(f"{base}/v1/responses", json={"model": GPT, "stream": stream, "input": "hi"})


def test_a_mixed_attempt_is_counted_exactly_per_model_and_kind_and_priced(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    with (
        ModelStandin(Script(usage=USAGE)) as model,
        gateway(store, job, model) as (_, base),
        httpx.Client(timeout=30) as client,
    ):
        for stream in (True, False):
            assert anthropic(client, base, stream).status_code == 200
            assert responses(client, base, stream).status_code == 200
        plain = chat(client, base, True)
        assert "prompt_tokens" not in plain.text, "the agent did not ask for the usage chunk"
        assert plain.text.rstrip().endswith("data: [DONE]")
        asked = chat(client, base, True, include=True)
        assert '"prompt_tokens":1000' in asked.text.replace(" ", ""), "it asked: it gets it"
        assert chat(client, base, False).status_code == 200
        forwarded = [r.body for r in model.model_requests() if r.path.endswith("/completions")]
        assert forwarded[0]["stream_options"] == {"include_usage": True}
        assert client.get(f"{base}/v1/models").status_code == 200  # not a model request
    by_model = {u.model: u for u in store.job_model_usage(job.id)}
    assert set(by_model) == {SONNET, GPT}
    sonnet, gpt = by_model[SONNET], by_model[GPT]
    assert (sonnet.requests, sonnet.unread) == (2, 0)
    assert (sonnet.input_tokens, sonnet.output_tokens) == (2000, 400)
    assert (sonnet.cache_read_tokens, sonnet.cache_write_tokens) == (800, 100)
    # OpenAI's input counts include the cached tokens: 1000 of which 400 cached, five answers.
    assert (gpt.requests, gpt.unread) == (5, 0)
    assert (gpt.input_tokens, gpt.cache_read_tokens, gpt.output_tokens) == (3000, 2000, 1000)
    assert gpt.cache_write_tokens == 0
    assert (sonnet.cost, gpt.cost) == (None, None), "unpriced"
    store.set_model_price("claude-*", Decimal(3), Decimal(15), Decimal("0.30"), Decimal("3.75"))
    store.set_model_price(GPT, Decimal("1.25"), Decimal(10), Decimal("0.125"))
    by_model = {u.model: u for u in store.job_model_usage(job.id)}
    # 2000 * 3 + 400 * 15 + 800 * 0.30 + 100 * 3.75 = 12,615 per million: $0.01
    assert round(by_model[SONNET].cost or 0, 2) == Decimal("0.01")
    assert by_model[SONNET].cost == Decimal("0.012615")
    # 3000 * 1.25 + 1000 * 10 + 2000 * 0.125 = 14,000 per million
    assert by_model[GPT].cost == Decimal("0.014")


def test_error_answers_are_requests_of_no_tokens(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    with (
        ModelStandin() as model,
        gateway(store, job, model) as (_, base),
        httpx.Client(timeout=30) as client,
    ):
        model.fail(529, times=1)
        assert anthropic(client, base, False).status_code == 529
    (usage,) = store.job_model_usage(job.id)
    assert (usage.model, usage.requests, usage.unread, usage.tokens) == (SONNET, 1, 0, 0)


def test_usage_is_read_across_any_split_of_the_stream_and_unread_when_absent() -> None:
    start = {"type": "message_start", "message": {"model": SONNET, "usage": {
        "input_tokens": 7, "output_tokens": 1, "cache_read_input_tokens": 3}}}  # fmt: skip
    delta = {"type": "message_delta", "usage": {"output_tokens": 42}}
    stream = (
        f"event: message_start\ndata: {json.dumps(start)}\n\n"
        'event: content_block_delta\ndata: {"type": "content_block_delta"}\n\n'
        f"event: message_delta\ndata: {json.dumps(delta)}\n\n"
    ).encode()
    for size in (1, 5, 64, len(stream)):
        reader = UsageReader(Api.ANTHROPIC, True, "unknown")
        passed = b"".join(reader.feed(stream[i : i + size]) for i in range(0, len(stream), size))
        rest, usage = reader.end()
        assert passed + rest == stream
        assert (usage.model, usage.read, usage.input, usage.output, usage.cache_read) == (
            SONNET, True, 7, 42, 3,
        )  # fmt: skip
    chunk = {"model": GPT, "choices": [{"delta": {"content": "hi"}}], "usage": None}
    last = {"model": GPT, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}
    kept = f"data: {json.dumps(chunk)}\n\n" * 3 + "data: [DONE]\n\n"
    stream = (kept.removesuffix("data: [DONE]\n\n") + f"data: {json.dumps(last)}\n\n"
              + "data: [DONE]\n\n").encode()  # fmt: skip
    for size in (1, 7, 100, len(stream)):
        reader = UsageReader(Api.CHAT, True, GPT, strip_usage_chunk=True)
        passed = b"".join(reader.feed(stream[i : i + size]) for i in range(0, len(stream), size))
        rest, usage = reader.end()
        assert passed + rest == kept.encode(), "the usage chunk taken out, nothing else"
        assert (usage.read, usage.input, usage.output) == (True, 9, 2)
    reader = UsageReader(Api.CHAT, False, GPT)
    reader.feed(b"<html>a proxy's page</html>")
    assert reader.end()[1].read is False, "unread: its tokens are unknown, not zero"


def test_a_spent_budget_per_job_is_answered_in_the_vendors_shape_and_never_forwarded(
    store: JobStore,
) -> None:
    enqueue_jobs(store, 1)
    store.set_lane_budget("cc", None, None, SpendBudget(tokens_per_job=3000))
    job = claimed(store)
    with (
        ModelStandin(Script(usage=Usage(1000, 204))) as model,
        gateway(store, job, model) as (ledger, base),
        httpx.Client(timeout=30) as client,
    ):
        for _ in range(3):  # 1,204 tokens each: the third passes the budget
            assert anthropic(client, base, True).status_code == 200
        seen = len(model.model_requests())
        refused = anthropic(client, base, True)
        assert refused.status_code == 400
        note = "token budget spent: 3,612 of 3,000 tokens for the job (lane cc)"
        assert refused.json() == {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": f"tireless: {note}"},
        }
        openai = chat(client, base, True)
        assert openai.json()["error"]["code"] == "insufficient_quota"
        assert note in openai.json()["error"]["message"]
        assert len(model.model_requests()) == seen, "the stand-in never saw them"
        assert ledger.spent is not None
        assert ledger.spent["spent"] == "job"
    assert sum(u.requests for u in store.job_model_usage(job.id)) == 3
