"""The delivery calls behave the same through JobStore and AsyncJobStore: a holder's checkpoint and
delivery, the brief that carries them, the mirror's pull request and its record, and TL009 as
MalformedDelivery."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests import outbox
from tests.helpers import FORGE, OWNER, REPO, claimed, issue, tracked
from tireless import JobState, JobStore
from tireless.errors import MalformedDelivery
from tireless.models import MirrorPull, PullAction

HEAD, BASE = "a1" * 20, "b2" * 20
URL = "https://git.example.com/acme/widgets/pulls/12"


def test_a_holder_checkpoints_and_delivers_and_the_mirror_records_the_pull_request(
    any_store: JobStore,
) -> None:
    any_store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(any_store).enqueue([issue(1, title="Widgets break")])
    job = claimed(any_store)
    checkpoint = "refs/tireless/checkpoints/1"
    saved = any_store.record_checkpoint(job.id, "w1", checkpoint, HEAD, job.claim_token)
    assert isinstance(saved, datetime)
    brief = any_store.job_brief(job.id)
    assert (brief.branch, brief.checkpoint_ref, brief.checkpoint_commit) == (
        "tireless/1",
        checkpoint,
        HEAD,
    )
    with pytest.raises(MalformedDelivery) as refusal:
        any_store.deliver(job.id, "w1", "tireless/1", "HEAD", "main", BASE, job.claim_token)
    assert refusal.value.sqlstate == "TL009"
    done = any_store.deliver(job.id, "w1", "tireless/1", HEAD, "main", BASE, job.claim_token)
    assert done.state is JobState.DELIVERED
    any_store.claim_repos_to_poll("p1")
    (pull,) = outbox.due(any_store, "pull", FORGE, OWNER, REPO, "p1")
    assert isinstance(pull, MirrorPull)
    assert (pull.job_id, pull.action, pull.head_branch, pull.title) == (
        job.id,
        PullAction.OPEN,
        "tireless/1",
        "Fix #1: Widgets break",
    )
    retry = outbox.record(any_store, "pull", FORGE, OWNER, REPO, "p1", job.id, error="HTTP 502")
    assert isinstance(retry, datetime)
    assert (
        outbox.record(
            any_store, "pull", FORGE, OWNER, REPO, "p1", job.id, result=outbox.pull(12, URL)
        )
        is None
    )
    assert outbox.due(any_store, "pull", FORGE, OWNER, REPO, "p1") == []
    any_store.rerun(FORGE, OWNER, REPO, 1)
    again = any_store.job_brief(claimed(any_store, "w2").id)
    assert (again.branch_head, again.pull_number, again.pull_url, again.checkpoint_ref) == (
        HEAD,
        12,
        URL,
        None,
    )
