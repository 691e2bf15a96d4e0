"""`tireless show` and `tireless jobs --json` show what a job delivered: its branch and head, the
pull request once the mirror recorded it, no change, and the job's last checkpoint."""

from __future__ import annotations

from tests import outbox
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, claimed, cli_json, issue, tireless_cli, tracked
from tireless import JobStore

HEAD, BASE = "a1" * 20, "b2" * 20
URL = "https://git.example.com/acme/widgets/pulls/12"


def test_show_and_jobs_show_what_each_job_delivered(store: JobStore, db: Database) -> None:
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store).enqueue([issue(1), issue(2), issue(3)])
    job, unchanged = claimed(store), claimed(store)
    store.record_checkpoint(job.id, "w1", "refs/tireless/checkpoints/1", BASE)
    store.deliver(job.id, "w1", "tireless/1", HEAD, "main", BASE)
    store.claim_repos_to_poll("p1")
    outbox.record(store, "pull", FORGE, OWNER, REPO, "p1", job.id, result=outbox.pull(12, URL))
    store.deliver(unchanged.id, "w1")
    shown = cli_json(db.url, "show", str(job.id))
    assert {k: shown["delivery"][k] for k in ("branch", "head", "pull_number", "pull_url")} == {
        "branch": "tireless/1",
        "head": HEAD,
        "pull_number": 12,
        "pull_url": URL,
    }
    assert (shown["checkpoint"]["ref"], shown["checkpoint"]["attempt"]) == (
        "refs/tireless/checkpoints/1",
        1,
    )
    listed = {j["id"]: j["delivery"] for j in cli_json(db.url, "jobs")}
    assert (listed[job.id]["branch"], listed[job.id]["pull_number"]) == ("tireless/1", 12)
    assert (listed[unchanged.id]["changed"], listed[unchanged.id]["branch"]) == (False, None)
    assert list(listed.values())[2] is None, "a pending job delivered nothing"
    text = tireless_cli(db.url, "show", str(job.id)).stdout
    assert f"         delivery: tireless/1 at {HEAD}\n" in text
    assert f"             base: main at {BASE}\n" in text
    assert f"     pull request: #12 {URL}\n" in text
    assert f"       checkpoint: refs/tireless/checkpoints/1 at {BASE} (attempt 1, " in text
