"""The label protocol, answered by the database's one implementation (tireless.job_kind_for and
tireless.lane_for), called from psql and through JobStore: opt-in and a mode label ask for work,
discover beats plan beats implement, labels match exactly, an agent label picks the lane."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Database
from tireless import JobKind, JobStore
from tireless.errors import InvalidArgument

AGENT = "tireless/agent:"
LANE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


class Routing(Protocol):
    def job_kind_for(self, labels: Sequence[str]) -> str | None: ...

    def lane_for(self, kind: str, labels: Sequence[str]) -> str: ...


class SqlRouting:
    """The two functions as a psql user calls them."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def _call(self, query: str, params: dict[str, Any]) -> Any:
        row = self.conn.execute(query, params).fetchone()
        assert row is not None
        return row[0]

    def job_kind_for(self, labels: Sequence[str]) -> str | None:
        kind: str | None = self._call(
            "SELECT tireless.job_kind_for(labels => %(labels)s)", {"labels": list(labels)}
        )
        return kind

    def lane_for(self, kind: str, labels: Sequence[str]) -> str:
        lane: str = self._call(
            "SELECT tireless.lane_for(kind => %(kind)s, labels => %(labels)s)",
            {"kind": kind, "labels": list(labels)},
        )
        return lane


@pytest.fixture(params=["sql", "store"])
def routing(request: pytest.FixtureRequest, db: Database) -> Iterator[Routing]:
    if request.param == "sql":
        with db.connect() as conn:
            yield SqlRouting(conn)
    else:
        with JobStore(db.conninfo) as store:
            yield store


def expected_kind(labels: Sequence[str]) -> JobKind | None:
    """The oracle: the opt-in and a mode label; the first kind in precedence order wins."""
    if "tireless" not in labels:
        return None
    return next((kind for kind in JobKind if f"tireless/{kind}" in labels), None)


def expected_lane(labels: Sequence[str], default: str = "cc") -> str:
    """The oracle: the first well-formed agent label's lane in byte order, else the default."""
    lanes = [label.removeprefix(AGENT) for label in labels if label.startswith(AGENT)]
    valid = [lane for lane in lanes if LANE_NAME.fullmatch(lane)]
    return min(valid, key=str.encode, default=default)


@pytest.mark.parametrize("opted_in", [True, False], ids=["opted-in", "no-opt-in"])
def test_precedence_is_discover_then_plan_then_implement_for_every_set_of_modes(
    routing: Routing, opted_in: bool
) -> None:
    modes_in_precedence = ["tireless/discover", "tireless/plan", "tireless/implement"]
    expected_first = "discover" if opted_in else None
    assert (
        routing.job_kind_for(["tireless", *modes_in_precedence][not opted_in :]) == expected_first
    )
    for present in itertools.product([False, True], repeat=len(JobKind)):
        modes = [kind for kind, here in zip(JobKind, present, strict=True) if here]
        labels = [f"tireless/{kind}" for kind in modes] + (["tireless"] if opted_in else [])
        expected = modes[0] if opted_in and modes else None
        assert routing.job_kind_for(labels) == expected, labels
        assert routing.job_kind_for(labels[::-1]) == expected, labels[::-1]


@pytest.mark.parametrize(
    "labels",
    [
        [],
        ["tireless"],
        ["tireless", "bug", "tireless/agent:oc"],
        ["tireless/implement"],
        ["tireless/discover", "tireless/plan", "tireless/implement", "tireless/agent:oc"],
    ],
)
def test_opt_in_and_a_mode_label_are_both_needed(routing: Routing, labels: list[str]) -> None:
    assert routing.job_kind_for(labels) is None


NEAR_MISSES = [
    ["Tireless", "tireless/plan"],
    ["TIRELESS", "TIRELESS/PLAN"],
    ["tireless", "tireless/Plan"],
    [" tireless", "tireless/plan"],
    ["tireless ", "tireless/plan"],
    ["tireless", "tireless/plan "],
    ["tireless", "tireless/ plan"],
    ["tireless", "tireless/plans"],
    ["tireless", "tireless:plan"],
    ["tireless", "Tireless/plan"],
]


def test_labels_match_exactly_case_and_whitespace_included(routing: Routing) -> None:
    assert routing.job_kind_for(["tireless", "tireless/plan"]) == "plan"
    for labels in NEAR_MISSES:
        assert routing.job_kind_for(labels) is None, labels


@pytest.mark.parametrize("kind", list(JobKind))
def test_an_agent_label_overrides_the_lane_of_every_kind(routing: Routing, kind: JobKind) -> None:
    labels = ["tireless", f"tireless/{kind}"]
    assert routing.lane_for(kind, labels) == "cc"
    assert routing.lane_for(kind, [*labels, "tireless/agent:oc"]) == "oc"


def test_of_several_agent_labels_the_first_in_byte_order_wins(routing: Routing) -> None:
    agents = ["tireless/agent:oc", "tireless/agent:b", "tireless/agent:Zed", "tireless/agent:cc2"]
    for order in (agents, agents[::-1]):
        assert routing.lane_for("implement", ["tireless", "tireless/implement", *order]) == "Zed"


MALFORMED_AGENT_LABELS = [
    "tireless/agent:",
    "tireless/agent:two words",
    "tireless/agent:-oc",
    "tireless/agent:" + "x" * 64,
    "tireless/agent:oc/x",
    "tireless/agent:oc:x",
    "tireless/Agent:oc",
    "Tireless/agent:oc",
    "tireless/agent oc",
]


def test_a_malformed_agent_label_is_ignored(routing: Routing) -> None:
    for malformed in MALFORMED_AGENT_LABELS:
        assert routing.lane_for("plan", ["tireless", "tireless/plan", malformed]) == "cc", malformed
        assert routing.lane_for("plan", [malformed, "tireless/agent:oc"]) == "oc", malformed


def test_the_default_lane_of_each_kind_comes_from_set_kind_policy(
    routing: Routing, db: Database
) -> None:
    db.scalar("SELECT tireless.set_kind_policy(kind => 'plan', default_lane => 'planner')")
    assert routing.lane_for("plan", ["tireless", "tireless/plan"]) == "planner"
    assert routing.lane_for("implement", ["tireless", "tireless/implement"]) == "cc"
    assert routing.lane_for("discover", []) == "cc"
    assert routing.lane_for("plan", ["tireless/agent:oc"]) == "oc"


def test_a_changed_label_prefix_is_the_whole_protocol(routing: Routing, db: Database) -> None:
    db.scalar("SELECT tireless.set_policy(label_prefix => 'bot')")
    assert routing.job_kind_for(["bot", "bot/plan", "bot/implement"]) == "plan"
    assert routing.job_kind_for(["tireless", "tireless/plan"]) is None
    assert routing.job_kind_for(["bot", "tireless/plan"]) is None
    assert routing.lane_for("plan", ["bot/agent:oc"]) == "oc"
    assert routing.lane_for("plan", ["tireless/agent:oc"]) == "cc"


def test_an_unknown_kind_is_an_invalid_argument(db: Database) -> None:
    with db.connect() as conn, JobStore(db.conninfo) as store:
        for kind in ["deploy", "Plan", "plan ", ""]:
            with pytest.raises(psycopg.Error) as refused:
                SqlRouting(conn).lane_for(kind, [])
            assert refused.value.sqlstate == "TL005"
            assert f"unknown job kind '{kind}'" in str(refused.value)
            with pytest.raises(InvalidArgument, match=f"unknown job kind '{kind}'"):
                store.lane_for(kind, [])


LABEL = st.one_of(
    st.sampled_from(
        [
            "tireless",
            "Tireless",
            "tireless/discover",
            "tireless/plan",
            "tireless/implement",
            "tireless/Plan",
            "tireless/implement ",
            "tireless/agent:oc",
            "tireless/agent:cc",
            "bug",
        ]
    ),
    st.text(alphabet="abZ09._- /:é", max_size=6).map(lambda name: AGENT + name),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(labels=st.lists(LABEL, max_size=8))
def test_routing_agrees_with_a_small_oracle_on_any_set_of_labels(
    routing: Routing, labels: list[str]
) -> None:
    kind = expected_kind(labels)
    assert routing.job_kind_for(labels) == kind
    assert routing.lane_for(kind or "implement", labels) == expected_lane(labels)
