"""The statements inside claim_next, expire_stale_claims and the work rule (enqueue) read tireless.job through its
indexes, never by a sequential scan, on a table with a history and fresh statistics.

Each statement below is a copy of the function's own text with its PL/pgSQL variables as $n
parameters; test_copied_statements_still_appear_in_their_functions fails when a function changes
and its copy here does not. The plans are taken both as PL/pgSQL runs them after a few calls (a
generic plan) and with the values planned in (a custom plan)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tests.conftest import SERVER
from tireless import migrate

FINISHED, PENDING, CLAIMED, EXPIRED = 30_000, 8_000, 2_000, 20


@dataclass(frozen=True)
class Statement:
    function: str  # regprocedure of the function that holds the statement
    text: str  # the statement as it is written in the function
    variables: tuple[str, ...]  # its PL/pgSQL variables, in the order of the parameters below
    types: tuple[str, ...]
    values: tuple[Any, ...]
    wrap: str = "{}"  # how the test runs it: the statement in a query that supplies its outer rows

    def prepared(self) -> str:
        text = self.text.replace(" INTO next_job", "")  # PL/pgSQL's target, not SQL
        for n, variable in enumerate(self.variables, start=1):
            text = re.sub(rf"\b{re.escape(variable)}\b", f"${n}", text)
        return self.wrap.format(text)


CLAIM_LANE_ORDER = """SELECT l.name FROM unnest(open_lanes) AS l(name)
         ORDER BY (SELECT j.id FROM tireless.job j
                    WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[l.name]) AND j.available_at <= now() AND j.waiting_on IS NULL
                        ORDER BY j.lane, j.id LIMIT 1) NULLS LAST"""
CLAIM_IN_TURN = """SELECT j.id INTO next_job FROM tireless.job j
             WHERE j.state = 'pending' AND j.available_at <= now() AND j.waiting_on IS NULL
               AND (j.lane, j.forge, j.owner, j.repo) >= (turn.lane, turn.forge, turn.owner, turn.repo)
               AND (j.lane, j.forge, j.owner, j.repo) <= (turn.lane, turn.forge, turn.owner, turn.repo)
             ORDER BY j.lane, j.forge, j.owner, j.repo, j.id
             LIMIT 1
               FOR UPDATE SKIP LOCKED"""
CLAIM_ANY_TURN = """SELECT j.id INTO next_job FROM tireless.job j
         WHERE j.state = 'pending' AND j.lane = ANY (ARRAY[claim_in_turn.lane]) AND j.available_at <= now() AND j.waiting_on IS NULL
           AND NOT EXISTS (SELECT FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (j.forge, j.owner, j.repo))
         ORDER BY j.lane, j.id
         LIMIT 1
           FOR UPDATE OF j SKIP LOCKED"""
CAPACITY_COUNT = (
    "SELECT count(*) FROM tireless.job j WHERE j.state = 'claimed' AND j.lane = capped.name"
)
EXPIRED_LANES = """SELECT DISTINCT j.lane FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now()"""
STALE_SCAN = """SELECT j.id FROM tireless.job j
             WHERE j.state = 'claimed' AND j.claim_expires_at < now() AND j.lane = ANY (sweep_lanes)
             ORDER BY j.claim_expires_at
               FOR UPDATE SKIP LOCKED"""
ONE_LIVE_JOB = """SELECT j.id FROM tireless.job j
                              WHERE (j.forge, j.owner, j.repo, j.number) = (sh.forge, sh.owner, sh.repo, sh.number)
                                AND j.state IN ('pending', 'claimed')"""

CLAIM_NEXT = "tireless.claim_next(text,text[],interval)"
CLAIM_IN_TURN_FUNCTION = "tireless.claim_in_turn(text,text,interval)"
EXPIRE = "tireless.expire_stale_claims()"
WORK_RULE = "tireless.apply_work_rule(jsonb)"
STATEMENTS = {
    "claim lane order, one lane": Statement(
        CLAIM_NEXT, CLAIM_LANE_ORDER, ("open_lanes",), ("text[]",), (["cc"],)
    ),
    "claim lane order, several lanes": Statement(
        CLAIM_NEXT, CLAIM_LANE_ORDER, ("open_lanes",), ("text[]",), (["cc", "oc", "zz"],)
    ),
    "claim candidate, in turn": Statement(
        CLAIM_IN_TURN_FUNCTION,
        CLAIM_IN_TURN,
        ("turn.lane", "turn.forge", "turn.owner", "turn.repo"),
        ("text", "text", "text", "text"),
        ("oc", "gitea", "acme", "widgets"),
    ),
    "claim candidate, every turn taken": Statement(
        CLAIM_IN_TURN_FUNCTION,
        CLAIM_ANY_TURN,
        ("claim_in_turn.lane",),
        ("text",),
        ("oc",),
    ),
    "capacity count": Statement(CLAIM_NEXT, CAPACITY_COUNT, ("capped.name",), ("text",), ("cc",)),
    "lanes with expired claims": Statement(EXPIRE, EXPIRED_LANES, (), (), ()),
    "stale claims": Statement(EXPIRE, STALE_SCAN, ("sweep_lanes",), ("text[]",), (["cc", "oc"],)),
    "one live job per issue": Statement(
        WORK_RULE,
        ONE_LIVE_JOB,
        (),
        ("jsonb",),
        (
            psycopg.types.json.Jsonb(
                [
                    {"forge": "gitea", "owner": "acme", "repo": "widgets", "number": n}
                    for n in (7, 9)
                ]
            ),
        ),
        wrap="SELECT sh.* FROM jsonb_to_recordset($1) AS sh(forge text, owner text, repo text, number integer)"
        " WHERE NOT EXISTS ({})",
    ),
}

LOAD_JOBS = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, claimed_by,
                          claim_expires_at, claim_token, attempts)
SELECT 'gitea', 'acme', 'widgets', g, 'implement', (ARRAY['cc', 'oc', 'zz'])[1 + g %% 3], s.state,
       CASE WHEN s.state = 'claimed' THEN 'runner' END,
       CASE WHEN s.state = 'claimed' THEN now() + CASE WHEN g %% 100 < %(expired_percent)s
                                                       THEN interval '-1 minute' ELSE interval '5 minutes' END END,
       CASE WHEN s.state = 'claimed' THEN gen_random_uuid() END,
       CASE WHEN s.state = 'pending' THEN 0 ELSE 1 END
  FROM generate_series(1, %(total)s) g
 CROSS JOIN LATERAL (SELECT CASE WHEN g <= %(finished)s THEN 'delivered'
                                 WHEN g <= %(finished)s + %(claimed)s THEN 'claimed'
                                 ELSE 'pending' END::tireless.job_state AS state) s"""


@pytest.fixture(scope="module")
def conninfo(request: pytest.FixtureRequest) -> Iterator[str]:
    """One migrated database for the module: finished jobs first (the oldest ids), then claimed
    jobs (some past their lease), then pending ones across three lanes; statistics fresh."""
    server = request.config.stash[SERVER]
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS tireless_plans")
        admin.execute("CREATE DATABASE tireless_plans")
    info = server.conninfo("tireless_plans")
    migrate(info)
    with psycopg.connect(info, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")  # bulk load, no history
            conn.execute(
                LOAD_JOBS,
                {
                    "total": FINISHED + CLAIMED + PENDING,
                    "finished": FINISHED,
                    "claimed": CLAIMED,
                    "expired_percent": 100 * EXPIRED // CLAIMED,
                },
            )
        conn.execute("VACUUM (ANALYZE) tireless.job")
    yield info
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE tireless_plans WITH (FORCE)")


def job_reads(node: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(node type, index name) of every plan node that reads tireless.job."""
    if node.get("Relation Name") == "job":
        yield node["Node Type"], node.get("Index Name", "")
    for child in node.get("Plans", []):
        yield from job_reads(child)


def plan(conninfo: str, statement: Statement, mode: str) -> dict[str, Any]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"SET plan_cache_mode = {mode}")
        types = f"({', '.join(statement.types)})" if statement.types else ""
        conn.execute(f"PREPARE copied{types} AS {statement.prepared()}")
        arguments = sql.SQL("({})").format(sql.SQL(", ").join(map(sql.Literal, statement.values)))
        explain = sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE copied{}").format(
            arguments if statement.values else sql.SQL("")
        )
        row = conn.execute(explain).fetchone()
        assert row is not None
        top: dict[str, Any] = row[0][0]["Plan"]
        return top


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
@pytest.mark.parametrize("name", STATEMENTS)
def test_statement_reads_the_job_table_through_an_index(
    conninfo: str, name: str, mode: str
) -> None:
    reads = list(job_reads(plan(conninfo, STATEMENTS[name], mode)))
    assert reads, f"{name}: the plan does not read tireless.job"
    for node_type, index in reads:
        assert node_type in {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}, (name, reads)
        assert node_type == "Bitmap Heap Scan" or index, (name, reads)


@pytest.mark.parametrize(
    "name",
    [
        "claim lane order, one lane",
        "claim lane order, several lanes",
        "claim candidate, every turn taken",
    ],
)
def test_claim_reads_each_lane_in_order_from_the_pending_index(conninfo: str, name: str) -> None:
    """The oldest ready job of a lane comes from an ordered scan of that lane's part of the pending
    index, stopped at the first match: no sort of pending jobs, no walk through finished jobs or
    through the backlog of other lanes."""
    top = plan(conninfo, STATEMENTS[name], "force_generic_plan")
    assert list(job_reads(top)) == [("Index Scan", "pending_jobs_in_claim_order")]
    assert "'Index Cond': '(lane = " in str(top), "the lane is an index condition, not a filter"
    sorts = [n for n in re.findall(r"'Node Type': '(\w+)'", str(top)) if n == "Sort"]
    assert len(sorts) == (1 if "lane order" in name else 0), "only the lanes are sorted"


def test_a_turn_reads_its_repository_oldest_job_first_from_the_repository_pending_index(
    conninfo: str,
) -> None:
    """The oldest ready job of one repository in a lane: an ordered scan of that repository's part
    of the pending index, stopped at the first match, whatever the backlog of other repositories."""
    top = plan(conninfo, STATEMENTS["claim candidate, in turn"], "force_generic_plan")
    assert list(job_reads(top)) == [("Index Scan", "pending_jobs_in_repo_order")]
    assert "'Index Cond': '((ROW(lane, forge, owner, repo) >=" in str(top)
    assert "Sort" not in re.findall(r"'Node Type': '(\w+)'", str(top))


@pytest.mark.parametrize("function", sorted({s.function for s in STATEMENTS.values()}))
def test_copied_statements_still_appear_in_their_functions(conninfo: str, function: str) -> None:
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT pg_get_functiondef(%s::regprocedure)", [function]).fetchone()
    assert row is not None
    body = " ".join(row[0].split())
    for name, statement in STATEMENTS.items():
        if statement.function == function:
            assert " ".join(statement.text.split()) in body, f"{name} changed in {function}"
