"""The stand-in forge registered with a store (Setup), and the issues, rounds and jobs the forge
tests make of it: shared by the poller's, the mirror's and the worker's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import rows, tireless_cli
from tireless import JobStore
from tireless.forge import token_variable
from tireless.forge.poll import Report, client_factory, poll_round
from tireless.models import Job

TOKEN = "tok-poll-7d2e1b9c"
OWNER = "acme"
REPO = "widgets"
PLAN = ["tireless", "tireless/plan"]
MODE = "tireless/plan"
STATE = "tireless/state/"
NAMES = {"gitea": "gitea", "github": "gh"}


class Setup:
    """A stand-in forge registered under `name`, its token in the environment, and helpers."""

    def __init__(self, db: Database, store: JobStore, forge: StandinForge, name: str) -> None:
        self.db, self.store, self.forge, self.name = db, store, forge, name

    def track(self, *repos: str) -> None:
        for repo in repos:
            self.forge.create_repo(OWNER, repo)
            self.store.track_repo(self.name, OWNER, repo)

    def round(self, poller: str = "poller-1", **options: Any) -> list[Report]:
        return poll_round(self.store, poller, clients=client_factory(timeout=2.0), **options)

    def jobs(self, repo: str = "widgets") -> dict[int, tuple[str, str | None]]:
        found = rows(
            self.db,
            "SELECT number, state::text, note FROM tireless.job"
            " WHERE forge = %(f)s AND owner = %(o)s AND repo = %(r)s ORDER BY id",
            {"f": self.name, "o": OWNER, "r": repo},
        )
        return {number: (state, note) for number, state, note in found}

    def poll_state(self, repo: str = "widgets") -> dict[str, Any]:
        (state,) = rows(
            self.db,
            "SELECT to_jsonb(s) FROM tireless.repo_status s"
            " WHERE forge = %(f)s AND owner = %(o)s AND repo = %(r)s",
            {"f": self.name, "o": OWNER, "r": repo},
        )
        found: dict[str, Any] = state[0]
        return found

    def snapshot(self, repo: str = "widgets") -> list[list[tuple[Any, ...]]]:
        """Every job, issue and event row of the repository, and its cursor and ETag."""
        key = {"f": self.name, "o": OWNER, "r": repo}
        where = "forge = %(f)s AND owner = %(o)s AND repo = %(r)s"
        return [
            rows(
                self.db,
                f"SELECT j::text, xmin::text FROM tireless.job j WHERE {where} ORDER BY id",
                key,
            ),
            rows(
                self.db,
                f"SELECT i::text, xmin::text FROM tireless.issue i WHERE {where} ORDER BY number",
                key,
            ),
            rows(
                self.db,
                "SELECT e::text FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id"
                f" WHERE j.{where.replace(' AND ', ' AND j.')} ORDER BY e.id",
                key,
            ),
            rows(self.db, f"SELECT cursor, etag FROM tireless.repo_poll WHERE {where}", key),
        ]

    def due_now(self, repo: str = "widgets") -> None:
        """End a backoff (the test's stand-in for waiting it out)."""
        with self.db.connect() as conn:
            conn.execute(
                "UPDATE tireless.repo_poll SET backoff_until = now(), next_poll_at = now()"
                " WHERE forge = %(f)s AND owner = %(o)s AND repo = %(r)s",
                {"f": self.name, "o": OWNER, "r": repo},
            )
            conn.execute("UPDATE tireless.forge SET limited_until = NULL, last_error = NULL")

    def full_listing_next(self, repo: str = "widgets") -> None:
        with self.db.connect() as conn:
            conn.execute(
                "UPDATE tireless.repo_poll SET reads_since_full = 9"
                " WHERE forge = %(f)s AND owner = %(o)s AND repo = %(r)s",
                {"f": self.name, "o": OWNER, "r": repo},
            )


def one_round(setup: Setup) -> Report:
    (report,) = setup.round()
    assert report.error is None, report.error
    return report


def asked(setup: Setup, title: str = "asks", labels: list[str] = PLAN) -> int:
    """An issue that asks for work, its job made and its `pending` label shown."""
    number = setup.forge.create_issue(OWNER, REPO, title, labels)
    one_round(setup)  # the poll makes the job
    one_round(setup)  # the mirror shows it
    return number


def claim(store: JobStore, worker: str = "host1-3") -> Job:
    job = store.claim_next(worker, ["cc"])
    assert job is not None
    return job


def labels(setup: Setup, number: int) -> list[str]:
    return setup.forge.labels_of(OWNER, REPO, number)


def comments(setup: Setup, number: int) -> list[str]:
    return setup.forge.comments_of(OWNER, REPO, number)


def jobs(setup: Setup, number: int) -> list[str]:
    found = rows(
        setup.db,
        "SELECT state::text FROM tireless.job WHERE forge = %(f)s AND number = %(n)s ORDER BY id",
        {"f": setup.name, "n": number},
    )
    return [state for (state,) in found]


def began_earlier(setup: Setup, number: int) -> None:
    """The live job began two seconds ago: a person's later edit is stamped (in the forge's whole
    seconds) after it, as it is when a person edits an issue some time after its job was made."""
    with setup.db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET created_at = created_at - interval '2 seconds'"
            " WHERE number = %(n)s AND state IN ('pending', 'claimed')",
            {"n": number},
        )
        conn.execute(
            "UPDATE tireless.issue SET asks_since = asks_since - interval '2 seconds'"
            " WHERE number = %(n)s",
            {"n": number},
        )


def claimed_a_while_ago(setup: Setup) -> tuple[int, Job]:
    """An issue that asked, its job made two seconds ago and claimed."""
    setup.track(REPO)
    number = asked(setup)
    began_earlier(setup, number)
    return number, claim(setup.store)


def ask_again(setup: Setup, number: int) -> None:
    """The person takes the mode label off and puts it back: a new request."""
    now = setup.forge.labels_of(OWNER, REPO, number)
    setup.forge.set_labels(OWNER, REPO, number, [n for n in now if n != MODE])
    setup.forge.set_labels(OWNER, REPO, number, [*[n for n in now if n != MODE], MODE])


TASKS: list[dict[str, Any]] = [
    {"title": "Build the frame", "body": "The frame first."},
    {"title": "Paint it", "body": "Blue.", "depends_on": [0], "lane": "gpu"},
    {"title": "Ship it", "body": "", "depends_on": [1, "#40"]},
]


def delivered(setup: Setup, mode: list[str] = PLAN, tasks: list[dict[str, Any]] = TASKS) -> int:
    """A plan (or discover) job made, claimed, handed its tasks and delivered; its id."""
    setup.forge.create_issue(OWNER, REPO, "Plan the widget", mode)
    one_round(setup)
    job = claim(setup.store)
    assert setup.store.attach_plan(job.id, "host1-3", tasks) == len(tasks)
    setup.store.transition(job.id, "delivered", "host1-3", "planned")
    return job.id


def work(setup: Setup, tmp_path: Path, script: str) -> None:
    """One job run by `tireless work --once --deliver` with `script` as its agent."""
    result = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
        "--state-dir", str(tmp_path / "state"), "--", "sh", "-c", script,
        **{token_variable(setup.name): TOKEN},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def pushed_and_delivered(setup: Setup, job: Job, change: str, worker: str = "host1-3") -> str:
    """The job's work pushed to its branch on the stand-in's git and delivered; its head commit."""
    brief = setup.store.job_brief(job.id)
    assert brief.branch == f"tireless/{job.number}"
    base = setup.forge.branch_head(OWNER, REPO, "main")
    assert base is not None
    head = setup.forge.seed_git(OWNER, REPO, {"fix.txt": change}, branch=brief.branch)
    setup.store.deliver(
        job.id, worker, branch=brief.branch, head=head, base_branch="main", base=base,
        token=job.claim_token, note="fixed it",
    )  # fmt: skip
    return head
