"""Hostile input: arbitrary JSON to enqueue and arbitrary arguments to the other functions. Each
call succeeds or raises one of our errors (never an internal error), and a batch is all or nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, WORK, job_count, tracked
from tireless import JobStore
from tireless.errors import InvalidArgument, MalformedIssue, TirelessError, translated_errors

HOSTILE = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

texts = st.one_of(
    st.text(), st.text(min_size=150, max_size=2000), st.sampled_from(["", " ", "a\x00b", "cc"])
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**40), 10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=30,
)
# Issues that are nearly right: every field present, some replaced by anything at all.
field_values = {
    "forge": st.just(FORGE) | json_values,
    "owner": st.just(OWNER) | json_values,
    "repo": st.just(REPO) | json_values,
    "number": st.integers(1, 2**31 - 1) | json_values,
    "state": st.just("open") | json_values,
    "labels": st.just(list(WORK)) | st.lists(texts, max_size=3) | json_values,
    "title": st.none() | texts,
}
near_issues = st.fixed_dictionaries(field_values)
batches = st.one_of(json_values, st.lists(near_issues | json_values, max_size=6))


OUR_CODES = ("TL001", "TL002", "TL003", "TL004", "TL005", "TL006")


def test_enqueue_takes_any_json_whole_or_not_at_all(db: Database, store: JobStore) -> None:
    tracked(store)

    @HOSTILE
    @given(batch=batches)
    def enqueue_anything(batch: Any) -> None:
        before = job_count(db)
        created, refusal = 0, None
        try:
            with translated_errors(), db.connect() as conn:
                row = conn.execute(
                    "SELECT tireless.enqueue(issues => %s)", [Jsonb(batch)]
                ).fetchone()
                created = row[0] if row else 0
        except TirelessError as error:
            refusal = error
        assert refusal is None or isinstance(refusal, MalformedIssue), refusal
        assert job_count(db) == before + created, "a batch is all or nothing"

    enqueue_anything()


def test_the_other_functions_take_any_arguments(db: Database, store: JobStore) -> None:
    tracked(store).enqueue([])

    @HOSTILE
    @given(
        worker=texts,
        lanes=st.lists(texts | st.none(), max_size=3),
        seconds=st.integers(-(10**6), 10**8),
        job_id=st.integers(-(2**63), 2**63 - 1),
        state=texts | st.sampled_from(["pending", "claimed", "delivered", "failed", "cancelled"]),
        number=st.integers(-(2**31), 2**31 - 1),
        note=st.none() | texts,
    )
    def call_anything(
        worker: str,
        lanes: list[str],
        seconds: int,
        job_id: int,
        state: str,
        number: int,
        note: str | None,
    ) -> None:
        lease = timedelta(seconds=seconds)
        calls: list[Callable[[], object]] = [
            lambda: store.claim_next(worker, lanes, lease),
            lambda: store.renew_claim(job_id, worker, lease),
            lambda: store.transition(job_id, state, worker, note),
            lambda: store.refresh_lane(worker, OWNER, REPO, number, lanes),
            lambda: store.track_repo(worker, state, "x"),
            lambda: store.lane_for(state, lanes),
            lambda: store.pause_lane(worker),
        ]
        for call in calls:
            refusal = ""
            try:
                call()
            except TirelessError as error:
                refusal = error.sqlstate
            assert refusal in ("", *OUR_CODES, "TL008")  # TL008: track_repo of an unknown forge

    call_anything()
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM tireless.job").fetchone() == (0,)


def test_nul_is_refused_as_our_error(store: JobStore) -> None:
    tracked(store)
    labels = {"forge": FORGE, "owner": OWNER, "repo": REPO, "number": 1, "state": "open"}
    with pytest.raises(MalformedIssue, match="Unicode"):
        store.enqueue([labels | {"labels": ["a\x00"]}])
    with pytest.raises(InvalidArgument, match="NUL"):
        store.claim_next("w\x00", ["cc"])
