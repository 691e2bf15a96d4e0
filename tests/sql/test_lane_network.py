"""The agent's network in the store (issue 38): a lane's egress allowlist is checked entry by entry
(TL005 naming the entry and the lane), null is no list and empty is no egress; the holder records
what its attempt reached and was refused, fenced by its claim token, replacing what the attempt
recorded before; job_network and the lane_egress view read it back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import claimed, end_lease, enqueue_jobs, make_available, rows
from tests.support.roles import Login
from tireless import JobStore
from tireless.errors import InvalidArgument, NotHolder, PermissionDenied, UnknownJob
from tireless.models import JobNetwork

PYPI = {
    "host": "pypi.org",
    "port": 443,
    "allowed": True,
    "requests": 3,
    "bytes_in": 5000,
    "bytes_out": 700,
    "reason": None,
}
REFUSED = {
    "host": "169.254.169.254",
    "port": 80,
    "allowed": False,
    "requests": 2,
    "bytes_in": 0,
    "bytes_out": 0,
    "reason": "a link-local address",
}


def network_use(db: Database) -> list[tuple[Any, ...]]:
    """Every recorded row, as the superuser reads the private table."""
    return rows(
        db,
        "SELECT job_id, attempt, lane, host, port, allowed, requests, bytes_in, bytes_out, reason"
        " FROM tireless.network_use ORDER BY job_id, attempt, host",
    )


def test_an_allowlist_is_stored_names_lower_cased_ipv6_in_brackets_and_repeats_dropped(
    store: JobStore,
) -> None:
    given = [
        "PyPI.org",
        "*.Example.com:8443",
        "192.0.2.1",
        "[2001:DB8:0::1]:443",
        "2001:db8::2",
        "api.anthropic.com:443",
        "pypi.org",
    ]
    expected = [
        "pypi.org",
        "*.example.com:8443",
        "192.0.2.1",
        "[2001:db8::1]:443",
        "[2001:db8::2]",
        "api.anthropic.com:443",
    ]
    assert store.set_lane_network("cc", given) == expected
    assert store.lane_network("cc") == expected


def test_null_is_no_list_and_an_empty_list_is_no_egress(store: JobStore) -> None:
    assert store.lane_network("never-set") is None, "a lane without a row has no list"
    store.set_lane_capacity("cc", 2)
    assert store.lane_network("cc") is None, "other settings leave the list as it was"
    assert store.set_lane_network("cc", []) == []
    assert store.lane_network("cc") == []
    assert store.set_lane_network("cc", None) is None
    assert store.lane_network("cc") is None


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "*",
        "*.",
        "*.*.example.com",
        "foo.*.example.com",
        "a..example.com",
        "-a.example.com",
        "a-.example.com",
        "ex_ample.com",
        "example.com.",
        "a" * 64 + ".com",
        "example.com:0",
        "example.com:65536",
        "example.com:",
        "example.com:080",
        "example.com:https",
        "http://example.com",
        "example.com/path",
        "exa mple.com",
        "1.2.3.999",
        "192.0.2",
        "[192.0.2.1]",
        "[2001:db8::1",
        "[fe80::1%eth0]",
        "2001:db8::zz",
        "x:y:z",
    ],
)
def test_a_bad_entry_is_refused_naming_it_and_the_lane_and_changes_nothing(
    store: JobStore, entry: str
) -> None:
    store.set_lane_network("cc", ["pypi.org"])
    with pytest.raises(InvalidArgument) as refusal:
        store.set_lane_network("cc", ["files.pythonhosted.org", entry])
    assert str(refusal.value).startswith(f"egress entry '{entry}' of lane 'cc' is not HOST[:PORT]")
    assert store.lane_network("cc") == ["pypi.org"]


def test_a_null_entry_is_refused(store: JobStore, db: Database) -> None:
    with db.connect() as conn, pytest.raises(psycopg.DatabaseError) as refusal:
        conn.execute("SELECT tireless.set_lane_network('cc', ARRAY['pypi.org', NULL])")
    assert refusal.value.sqlstate == "TL005"
    assert "egress entry null of lane 'cc'" in str(refusal.value)


def test_a_lane_lists_at_most_100_hosts(store: JobStore) -> None:
    hosts = [f"h{n}.example.com" for n in range(101)]
    with pytest.raises(InvalidArgument, match="lane 'cc' may list at most 100 hosts, got 101"):
        store.set_lane_network("cc", hosts)
    assert store.set_lane_network("cc", hosts[:100]) == hosts[:100]


def test_a_bad_lane_name_is_refused_as_by_the_other_lane_settings(store: JobStore) -> None:
    for call in (
        lambda: store.set_lane_network("no lane", ["pypi.org"]),
        lambda: store.lane_network("no lane"),
        lambda: store.set_lane_capacity("no lane", 1),
    ):
        with pytest.raises(InvalidArgument, match="lane must be 1 to 63 letters"):
            call()


def test_the_holder_records_its_attempt_and_job_network_reads_it_back(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    gateway = {**PYPI, "requests": 1, "bytes_in": 10, "bytes_out": 20}
    assert store.record_job_network(job.id, "w1", job.claim_token, [PYPI, REFUSED, gateway]) == 2
    assert store.job_network(job.id) == [
        JobNetwork(1, "pypi.org", 443, True, 4, 5010, 720, None),
        JobNetwork(1, "169.254.169.254", 80, False, 2, 0, 0, "a link-local address"),
    ], "rows of one host, port and outcome add up; reached hosts first"
    assert network_use(db)[0][2] == "cc", "each row keeps the attempt's lane"


def test_recording_again_replaces_what_the_attempt_recorded(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.record_job_network(job.id, "w1", job.claim_token, [PYPI, REFUSED])
    later = {**PYPI, "requests": 9, "bytes_in": 9000}
    assert store.record_job_network(job.id, "w1", job.claim_token, [later]) == 1
    assert store.job_network(job.id) == [JobNetwork(1, "pypi.org", 443, True, 9, 9000, 700, None)]
    assert store.record_job_network(job.id, "w1", job.claim_token, []) == 0
    assert store.job_network(job.id) == []


def test_a_stale_token_is_refused_and_changes_nothing_and_each_attempt_keeps_its_rows(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    first = claimed(store)
    store.record_job_network(first.id, "w1", first.claim_token, [PYPI])
    end_lease(db, first.id)
    assert store.expire_stale_claims() == 1
    make_available(db, first.id)
    second = claimed(store)  # the same worker name, a new claim
    before = network_use(db)
    with pytest.raises(NotHolder) as refusal:
        store.record_job_network(first.id, "w1", first.claim_token, [REFUSED])
    assert refusal.value.detail == "The claim was lost and the job claimed again."
    with pytest.raises(NotHolder):
        store.record_job_network(first.id, "w2", None, [REFUSED])
    assert network_use(db) == before
    store.record_job_network(second.id, "w1", second.claim_token, [REFUSED])
    assert [(n.attempt, n.host) for n in store.job_network(first.id)] == [
        (1, "pypi.org"),
        (2, "169.254.169.254"),
    ]
    store.transition(second.id, "failed", "w1", token=second.claim_token)
    with pytest.raises(NotHolder):
        store.record_job_network(second.id, "w1", second.claim_token, [PYPI])


def test_a_long_host_or_reason_is_cut_never_refused(store: JobStore) -> None:
    """The host and the reason come from what the agent asked for: one long name must not keep
    the attempt's other refusals out of the record."""
    enqueue_jobs(store, 1)
    job = claimed(store)
    long_host = "a" * 300 + ".example"
    recorded_rows = [{**REFUSED, "host": long_host, "reason": "not listed: " + "x" * 600}, REFUSED]
    assert store.record_job_network(job.id, "w1", job.claim_token, recorded_rows) == 2
    cut = [n for n in store.job_network(job.id) if n.host.startswith("a")]
    assert [(len(n.host), len(n.reason or "")) for n in cut] == [(255, 500)]


def test_an_unknown_job_is_tl001_and_an_unknown_jobs_network_is_empty(store: JobStore) -> None:
    with pytest.raises(UnknownJob, match="no job with id 999"):
        store.record_job_network(999, "w1", None, [PYPI])
    assert store.job_network(999) == []


@pytest.mark.parametrize(
    "row",
    [
        {**PYPI, "host": ""},
        {**PYPI, "host": None},
        {**PYPI, "port": 65536},
        {**PYPI, "port": -1},
        {**PYPI, "requests": -1},
        {**PYPI, "bytes_in": 1.5},
        {**PYPI, "allowed": "yes"},
        {**PYPI, "reason": "why"},
        {**REFUSED, "reason": None},
        {**REFUSED, "reason": ""},
        {key: value for key, value in PYPI.items() if key != "bytes_out"},
    ],
)
def test_a_malformed_row_is_refused_naming_it_and_nothing_is_recorded(
    store: JobStore, row: dict[str, Any]
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.record_job_network(job.id, "w1", job.claim_token, [PYPI])
    with pytest.raises(InvalidArgument, match=r"^hosts\[1\] is not \{host, port"):
        store.record_job_network(job.id, "w1", job.claim_token, [PYPI, row])
    assert store.job_network(job.id) == [JobNetwork(1, "pypi.org", 443, True, 3, 5000, 700, None)]


def test_lane_egress_adds_up_the_refusals_and_bytes_of_each_lane(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 2)
    one, two = claimed(store), claimed(store, "w2")
    store.record_job_network(one.id, "w1", one.claim_token, [PYPI, REFUSED])
    store.record_job_network(two.id, "w2", two.claim_token, [PYPI, {**REFUSED, "port": 443}])
    assert rows(db, "SELECT * FROM tireless.lane_egress") == [("cc", 4, 10000, 1400)]
    store.transition(one.id, "failed", "w1", token=one.claim_token)
    assert store.prune(timedelta(0)) == 1, "a pruned job's network use goes with it"
    assert rows(db, "SELECT * FROM tireless.lane_egress") == [("cc", 2, 5000, 700)]


def test_runners_read_and_record_admins_set_and_the_table_is_private(
    store: JobStore,
    login: Login,
) -> None:
    enqueue_jobs(store, 1)
    with (
        JobStore(login("tireless_runner")) as runner,
        JobStore(login("tireless_poller")) as poller,
        JobStore(login("tireless_admin")) as admin,
    ):
        assert admin.set_lane_network("cc", ["pypi.org"]) == ["pypi.org"]
        assert runner.lane_network("cc") == ["pypi.org"]
        with pytest.raises(PermissionDenied):
            runner.set_lane_network("cc", None)
        with pytest.raises(PermissionDenied):
            poller.lane_network("cc")
        job = claimed(runner)
        assert runner.record_job_network(job.id, "w1", job.claim_token, [PYPI]) == 1
        with pytest.raises(PermissionDenied):
            poller.record_job_network(job.id, "w1", job.claim_token, [PYPI])
        assert len(poller.job_network(job.id)) == len(admin.job_network(job.id)) == 1
    for group in ("tireless_runner", "tireless_poller", "tireless_admin"):
        with psycopg.connect(login(group), autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT FROM tireless.network_use")
            conn.execute("SELECT FROM tireless.lane_egress")
