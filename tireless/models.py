"""The vocabulary and the typed rows. The database holds the same vocabulary (enum types);
tests/sql/test_catalog.py proves the two are one."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any
from uuid import UUID, uuid5


class JobState(StrEnum):
    PENDING = "pending"
    CLAIMED = "claimed"
    DELIVERED = "delivered"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """A terminal job never changes again (invariant 2)."""
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset({JobState.DELIVERED, JobState.FAILED, JobState.CANCELLED})


class JobKind(StrEnum):
    """Declared in routing precedence, as in the database: discover, then plan, then implement."""

    DISCOVER = "discover"
    PLAN = "plan"
    IMPLEMENT = "implement"


class Heartbeat(StrEnum):
    """What `heartbeat` answers a holder: keep going, the claim is gone, stop (the issue withdrew
    its request; end the job `cancelled`), or stop because the watchdog says so (the attempt ran
    past its lane's max_run, or made no progress for its stall_after; end it with
    `end_stopped_attempt`, a failure). An answer this version does not know reads as CANCEL."""

    HELD = "held"
    LOST = "lost"
    CANCEL = "cancel"
    TIMEOUT = "timeout"
    STALLED = "stalled"

    @classmethod
    def _missing_(cls, value: object) -> Heartbeat:
        return cls.CANCEL  # DESIGN.md: a runner treats an answer it does not know as cancel

    @property
    def is_watchdog_stop(self) -> bool:
        return self in (Heartbeat.TIMEOUT, Heartbeat.STALLED)


class ForgeKind(StrEnum):
    """The API family a registered forge speaks (the database's enum tireless.forge_kind)."""

    GITEA = "gitea"
    FORGEJO = "forgejo"
    GITHUB = "github"


class PullAction(StrEnum):
    """What the mirror does for a delivery's pull request (`tireless.pull_write`): open one
    (none known for the branch), or update the one last recorded."""

    OPEN = "open"
    UPDATE = "update"


@dataclass(frozen=True, slots=True)
class RepoRef:
    forge: str
    owner: str
    repo: str


@dataclass(frozen=True, slots=True)
class DiscoveredIssue:
    """One issue as the poller saw it; `enqueue` decides whether it expresses work."""

    forge: str
    owner: str
    repo: str
    number: int
    state: str = "open"
    labels: tuple[str, ...] = ()
    title: str | None = None
    parent_id: int | None = None
    url: str | None = None
    updated_at: datetime | None = None
    """The forge's own last change of the issue; aware (with its time zone)."""
    body: str | None = None
    """The issue's text, kept for the agent (cut at 65536 characters); None: not given, the store
    keeps the body it was last shown."""

    def as_json(self) -> dict[str, Any]:
        """The element of `tireless.enqueue`'s JSON array."""
        return {
            "forge": self.forge,
            "owner": self.owner,
            "repo": self.repo,
            "number": self.number,
            "state": self.state,
            "labels": list(self.labels),
            "title": self.title,
            "url": self.url,
            "updated_at": None if self.updated_at is None else self.updated_at.isoformat(),
            "parent_id": self.parent_id,
        } | ({} if self.body is None else {"body": self.body})


ATTEMPT_NAMESPACE = UUID("dc0e7fc0-2427-4556-ba8c-973c7c5ebb87")
"""The UUIDv5 namespace of attempt ids (Job.attempt_id): fixed, so an id is the same wherever made."""


@dataclass(frozen=True, slots=True)
class Job:
    """A row of `tireless.job` as the functions return it."""

    id: int
    forge: str
    owner: str
    repo: str
    number: int
    title: str | None
    labels: tuple[str, ...]
    kind: JobKind
    lane: str
    state: JobState
    parent_id: int | None
    claimed_by: str | None
    claim_expires_at: datetime | None
    claim_token: UUID | None
    attempts: int
    available_at: datetime
    note: str | None
    created_at: datetime
    updated_at: datetime
    cancel_requested_at: datetime | None
    """When the claimed job was asked to stop (its issue withdrew its request, an admin cancelled it);
    the job then ends cancelled."""
    given_back: int = 0
    """How many of `attempts` were given back by a stopping runner (not counted by the budget)."""
    cancel_note: str | None = None
    """Why the claimed job was asked to stop (`cancelled by alice`, `issue closed`): its note when it
    ends cancelled, chosen by whoever asked, not by the runner."""
    waiting_on: tuple[str, ...] | None = None
    """For a pending job: the open dependencies of its issue it waits for (`#3`, `acme/other#7`);
    it is not claimable until they close. None: it waits for nothing."""

    @property
    def attempt_id(self) -> str | None:
        """The claim's own identity, None for a job not claimed: unlike `attempts`, which a claim
        lost in a failover repeats, it differs for every claim. Derived from the claim token
        (UUIDv5, a one-way hash) and not the token itself, which fences the claim and stays out
        of the agent's reach."""
        if self.claim_token is None:
            return None
        return str(uuid5(ATTEMPT_NAMESPACE, str(self.claim_token)))

    @property
    def waiting(self) -> bool:
        """Pending, and waiting for a dependency: not claimable yet."""
        return self.state is JobState.PENDING and bool(self.waiting_on)

    @classmethod
    def from_row(cls, *values: Any) -> Job:
        """Build a Job from the values of a row whose columns are the Job's fields in order
        (tireless.store.calls.JOB_COLUMNS), turning the enum texts into enums. By position, not by
        name: a row factory by name decodes the column names again at every call."""
        (id_, forge, owner, repo, number, title, labels, kind, lane, state, *rest) = values
        if len(rest) > 12 and rest[12] is not None:  # waiting_on: a tuple, so a Job stays hashable
            rest[12] = tuple(rest[12])
        return cls(
            id_,
            forge,
            owner,
            repo,
            number,
            title,
            tuple(labels),
            JobKind(kind),
            lane,
            JobState(state),
            *rest,
        )


@dataclass(frozen=True, slots=True)
class Lane:
    """A row of `tireless.lane`: a lane's settings and circuit-breaker state."""

    name: str
    capacity: int | None
    paused: bool
    consecutive_failures: int
    tripped_until: datetime | None
    max_run: timedelta | None = None
    """An attempt running longer is stopped (heartbeat answers timeout); None: no limit."""
    stall_after: timedelta | None = None
    """An attempt without progress this long is stopped (heartbeat answers stalled); None: none."""
    runs_per_day: int | None = None
    """At most this many claims per UTC day; None: no budget."""
    agent_time_per_day: timedelta | None = None
    """No claim once the attempts ended today held their claims this long; None: no budget."""
    tokens_per_day: int | None = None
    """No claim once its agents used this many tokens today (UTC); None: no budget."""
    cost_per_day: Decimal | None = None
    """No claim once its agents spent this many USD today (UTC); None: no budget."""
    tokens_per_job: int | None = None
    """A job fails once its attempts used this many tokens; None: no budget."""
    cost_per_job: Decimal | None = None
    """A job fails once its attempts spent this many USD; None: no budget."""
    tokens_per_attempt: int | None = None
    cost_per_attempt: Decimal | None = None
    """An attempt fails once it used this many tokens or USD; None: no budget."""
    tokens_per_issue: int | None = None
    cost_per_issue: Decimal | None = None
    """A job fails once the jobs of its issue used this many tokens or USD; None: no budget."""


def size_text(size: int) -> str:
    """A size in bytes as a person reads it, in the largest binary unit that keeps it at least 1:
    512 MiB, 1 GiB, 1.5 GiB, 900 B."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{size} B"


@dataclass(frozen=True, slots=True)
class LaneLimits:
    """What one attempt of a lane may take of its host (tireless.lane_limits); None: no limit."""

    memory: int | None = None
    """Bytes of memory its processes may use together."""
    cpus: float | None = None
    """CPUs its processes may use together (1.5: one and a half)."""
    pids: int | None = None
    """Processes (and threads) it may have alive at once."""
    disk: int | None = None
    """Bytes it may write in its workspace, and in its sandbox's /tmp."""

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> LaneLimits:
        cpus = value.get("cpus")
        return cls(
            memory=value.get("memory"),
            cpus=None if cpus is None else float(cpus),
            pids=value.get("pids"),
            disk=value.get("disk"),
        )

    def any(self) -> bool:
        """Whether the lane has a limit at all."""
        return any(v is not None for v in (self.memory, self.cpus, self.pids, self.disk))


@dataclass(frozen=True, slots=True)
class AttemptUsage:
    """What one attempt used of its host (tireless.record_attempt_usage); None: not measured."""

    peak_memory: int | None = None
    cpu_seconds: float | None = None
    peak_processes: int | None = None
    workspace_bytes: int | None = None
    limit_reached: str | None = None
    """The limit that stopped it: memory, pids or disk; None: none did."""


@dataclass(frozen=True, slots=True)
class RepoLimit:
    """A row of `tireless.repo_limit`: a repository's capacity and daily budgets, all lanes."""

    forge: str
    owner: str
    repo: str
    capacity: int | None
    """At most this many claimed jobs of the repository at once; None: unlimited."""
    runs_per_day: int | None
    """At most this many claims per UTC day; None: no budget."""
    agent_time_per_day: timedelta | None
    """No claim once the attempts ended today held their claims this long; None: no budget."""
    tokens_per_day: int | None = None
    cost_per_day: Decimal | None = None
    tokens_per_job: int | None = None
    cost_per_job: Decimal | None = None
    tokens_per_attempt: int | None = None
    cost_per_attempt: Decimal | None = None
    tokens_per_issue: int | None = None
    cost_per_issue: Decimal | None = None
    """The budgets of tokens and cost, as Lane's; None: no budget."""


@dataclass(frozen=True, slots=True)
class SpendBudget:
    """The budgets of tokens and USD a lane or a repository sets beside those of runs and agent
    time (`tireless.set_lane_budget`, `tireless.set_repo_budget`); None: no budget of that kind."""

    tokens_per_day: int | None = None
    cost_per_day: Decimal | None = None
    tokens_per_job: int | None = None
    cost_per_job: Decimal | None = None
    tokens_per_attempt: int | None = None
    cost_per_attempt: Decimal | None = None
    tokens_per_issue: int | None = None
    cost_per_issue: Decimal | None = None


@dataclass(frozen=True, slots=True)
class JobBrief:
    """What the agent is told about its job besides the row (`tireless.job_brief`): where the issue
    is, the forge's API root, where to clone from, and the issue's body as last polled; and, for the
    runner, what tireless last pushed for the issue and the job's last checkpoint."""

    issue_url: str | None
    api_url: str | None
    clone_url: str | None
    body: str | None
    body_cut: bool
    branch: str | None = None
    """The branch to push to: the one tireless last pushed for the issue, else <prefix>/<number>."""
    branch_head: str | None = None
    """The commit tireless last pushed to `branch` (push with lease over it); None: never pushed."""
    pull_number: int | None = None
    """The pull request the mirror last recorded for `branch` (it may be closed since); None: none."""
    pull_url: str | None = None
    checkpoint_ref: str | None = None
    """Where an earlier attempt of the job saved its commits (`record_checkpoint`); None: nowhere."""
    checkpoint_commit: str | None = None
    protected_paths: tuple[str, ...] = ()
    """The repository's delivery policy (`set_repo_delivery`): globs of paths a change may not touch."""
    allowed_paths: tuple[str, ...] = ()
    """Globs of paths a change may touch all the same (a CI file, a protected path)."""
    allow_ci: bool = False
    """Whether a change may touch the forge's CI definitions."""
    max_files: int | None = None
    """At most this many files changed; None: the runner's default."""
    max_bytes: int | None = None
    """At most this many bytes added or modified; None: the runner's default."""
    applied_max_files: int | None = field(default=None, compare=False)
    """The limit of files that applies (`tireless.delivery_policy`: max_files, else the default);
    derived from max_files by the store's rule, so not compared. None: a brief made by hand."""
    applied_max_bytes: int | None = field(default=None, compare=False)
    """The limit of bytes that applies: max_bytes, else the default (`tireless.delivery_policy`)."""

    @classmethod
    def from_row(cls, **columns: Any) -> JobBrief:
        for name in ("protected_paths", "allowed_paths"):
            columns[name] = tuple(columns[name])
        return cls(**columns)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a holder delivers its job with (`tireless.deliver`): the work pushed to `branch` at
    `head`, made on `base_branch` at `base`, its pull request a draft or not. No branch: the work
    changed nothing (delivered with the note `no change`)."""

    branch: str | None = None
    head: str | None = None
    base_branch: str | None = None
    base: str | None = None
    draft: bool = False


NO_CHANGE = Delivery()
"""The delivery of work that changed nothing."""


@dataclass(frozen=True, slots=True)
class RepoDelivery:
    """A tracked repository's delivery policy (`tireless.set_repo_delivery`), over the runner's
    defaults: what an agent's change may touch, and how much of it."""

    forge: str
    owner: str
    repo: str
    protected: tuple[str, ...]
    """Globs of paths a change may not touch (fnmatch on the whole path; `dir/`: all under it)."""
    allowed: tuple[str, ...]
    """Globs of paths a change may touch all the same, protected or a CI definition."""
    allow_ci: bool
    """Whether a change may touch the forge's CI definitions (`.github/workflows/`, ...)."""
    max_files: int | None
    """At most this many files changed; None: the runner's default."""
    max_bytes: int | None
    """At most this many bytes added or modified; None: the runner's default."""

    @classmethod
    def from_row(cls, **columns: Any) -> RepoDelivery:
        for name in ("protected", "allowed"):
            columns[name] = tuple(columns[name])
        return cls(**columns)


@dataclass(frozen=True, slots=True)
class Forge:
    """A registered forge: `name` is the `forge` of the issue keys it serves."""

    name: str
    kind: ForgeKind
    base_url: str

    @classmethod
    def from_row(cls, name: str, kind: str, base_url: str) -> Forge:
        return cls(name, ForgeKind(kind), base_url)


@dataclass(frozen=True, slots=True)
class ForgeApp:
    """A forge that authenticates as a GitHub App: its id, and the path of its private key's file
    (None: only TIRELESS_APP_KEY_<NAME>[_FILE] names the key). The key itself is never stored."""

    name: str
    app_id: int
    app_key_file: str | None


@dataclass(frozen=True, slots=True)
class RepoToPoll:
    """A repository `claim_repos_to_poll` leased to a poller, with what the read needs."""

    forge: str
    owner: str
    repo: str
    kind: ForgeKind
    base_url: str
    cursor: datetime | None
    etag: str | None
    full_listing: bool
    live_numbers: tuple[int, ...]
    """The issue numbers of the repository's live jobs: a full listing that does not show one
    fetches it on its own."""
    opt_in: str | None = None
    """The opt-in label (the policy's label prefix): the poller reads the forge's dependency
    relations of the changed open issues carrying it (None: of every changed open issue)."""
    waiting_numbers: tuple[int, ...] = ()
    """The issue numbers of the repository's waiting jobs: a full listing reads their forge
    relations again (a change of them need not move the issue's `updated_at`)."""

    @classmethod
    def from_row(cls, **columns: Any) -> RepoToPoll:
        columns["kind"] = ForgeKind(columns["kind"])
        columns["live_numbers"] = tuple(columns["live_numbers"])
        columns["waiting_numbers"] = tuple(columns.get("waiting_numbers") or ())
        return cls(**columns)


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """What `record_poll` did: jobs created, cancelled (or asked to stop), re-routed, issues seen,
    and issues left out as malformed (kept in tireless.issue_skip with the reason)."""

    created: int
    cancelled: int
    rerouted: int
    seen: int
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class MirrorWrite:
    """What one issue should look like on the forge (`tireless.mirror_writes`): the state label
    it shows and the labels to take off; when its job was made, the opt-in and the mode labels (the mirror checks the issue's label events against them: a request made
    again after the job began keeps its labels)."""

    number: int
    job_id: int
    state: JobState
    state_label: str
    drop_labels: tuple[str, ...]
    job_began: datetime
    opt_in: str
    mode_labels: tuple[str, ...]

    @classmethod
    def from_row(cls, **columns: Any) -> MirrorWrite:
        columns["state"] = JobState(columns["state"])
        for name in ("drop_labels", "mode_labels"):
            columns[name] = tuple(columns[name])
        return cls(**columns)


@dataclass(frozen=True, slots=True)
class MirrorComment:
    """A finished job's outcome comment still to write (a write of kind comment, `tireless.comment_write`): the body
    ends with `marker`, which only a comment by the mirror's own forge account counts as.
    `checklist`: the children's checklist the body holds (a delivered plan's or discovery's;
    None when it has none), recorded with the post so that later edits start from it."""

    job_id: int
    number: int
    body: str
    marker: str
    checklist: str | None = None


@dataclass(frozen=True, slots=True)
class MirrorChecklist:
    """An outcome comment whose checklist of children changed since it was last written
    (kind checklist, `tireless.checklist_write`): the whole new `body` (ending with `marker`) replaces the
    one of the mirror's own comment that ends with the marker; `checklist` is what it now shows."""

    job_id: int
    number: int
    body: str
    marker: str
    checklist: str


@dataclass(frozen=True, slots=True)
class CycleReport:
    """The comment that tells an issue it is on a dependency cycle (kind cycle,
    `tireless.cycle_write`), still to write: its body ends with `marker`, counted only in a comment of the mirror's own
    account."""

    report_id: int
    number: int
    body: str
    marker: str


@dataclass(frozen=True, slots=True)
class LabelReport:
    """The comment that tells an issue one of its labels under the prefix names nothing (kind
    label, `tireless.label_write`), still to write: its body names the mode labels and ends with
    `marker`, counted only in a comment of the mirror's own account."""

    report_id: int
    number: int
    body: str
    marker: str


@dataclass(frozen=True, slots=True)
class PlanTask:
    """A task of a delivered plan or discover job whose issue the mirror must open
    (kind task, `tireless.task_write`): its title, body (ending with `marker`) and labels; an issue
    already opened with the marker by the mirror's own account since `since` is the one."""

    job_id: int
    task: int
    parent_number: int
    title: str
    body: str
    labels: list[str]
    marker: str
    since: datetime
    depends_on: list[int] | None = None
    """The numbers of the issues it depends on (its tasks' children, its "#N"): the mirror sets
    them as the forge's own relations too, where the forge has them."""


@dataclass(frozen=True, slots=True)
class MirrorPull:
    """A pull request the mirror must open or update (kind pull, `tireless.pull_write`): the newest
    delivery of issue `number` not yet written. `action` is "open" when no pull request is known for
    the branch, "update" with the `pull_number` last recorded (find it by its head branch either way:
    it may have been closed, or a lost answer may have opened one). The body ends with `marker`."""

    job_id: int
    number: int
    action: PullAction
    pull_number: int | None
    head_branch: str
    head: str
    base_branch: str
    title: str
    body: str
    marker: str
    draft: bool

    @classmethod
    def from_row(cls, **columns: Any) -> MirrorPull:
        columns["action"] = PullAction(columns["action"])
        return cls(**columns)


@dataclass(frozen=True, slots=True)
class RepoStatus:
    """A row of the view `tireless.repo_status`: one tracked repository's poll state."""

    forge: str
    owner: str
    repo: str
    forge_kind: str | None
    registered: bool
    last_poll_at: datetime | None
    last_success_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None
    consecutive_failures: int
    next_poll_at: datetime
    backoff_until: datetime | None
    polled_by: str | None
    cursor: datetime | None
    forge_limited_until: datetime | None
    forge_error: str | None
    pending: int
    claimed: int
    mirror_backlog: int
    """Issues whose forge copy does not show their job's state yet (the mirror's queue)."""
    mirror_error: str | None
    mirror_error_at: datetime | None
    moved_to: str | None
    """owner/name the forge gives the repository now (renamed or transferred); the key stays."""
    last_warning: str | None
    """What the last good read with a warning could not do (an issue skipped as too large)."""
    last_warning_at: datetime | None
    skipped_issues: int = 0
    """Issues the polls leave out as malformed (tireless.issue_skip), each reported, never blocking
    the rest of the repository."""
    skipped_issue: str | None = None
    """The newest of them: `#12: "labels" holds 101 labels, at most 100 are allowed`."""


@dataclass(frozen=True, slots=True)
class ConversationReply:
    """A reply the mirror owes (kind reply, `tireless.reply_write`): `react` (+1 on the command
    `comment_id`) or `comment` (`body`, ending with `marker`) on the issue or pull request
    `number`."""

    ask_id: int
    number: int
    reply: str
    comment_id: int | None
    body: str | None
    marker: str | None


class WriteKind(StrEnum):
    """The kinds of the outbox's forge writes (`tireless.forge_write`), in the order the mirror
    makes them each round: a delivery's pull request before its outcome comment, which names it;
    a plan's children before its comment, which lists them."""

    PULL = "pull"
    TASK = "task"
    COMMENT = "comment"
    CYCLE = "cycle"
    CHECKLIST = "checklist"
    REPLY = "reply"
    UNKNOWN_LABEL = "unknown_label"


Write = (
    MirrorPull
    | PlanTask
    | MirrorComment
    | CycleReport
    | MirrorChecklist
    | ConversationReply
    | LabelReport
)


@dataclass(frozen=True, slots=True)
class ForgeWrite:
    """A forge write of the outbox due now (`tireless.forge_writes_due`): its id (which
    `record_forge_write` takes back), its kind, the issue or pull request it goes to, and what to
    write, rendered by the store for its kind."""

    id: int
    kind: WriteKind
    number: int
    write: Write

    @classmethod
    def from_row(cls, id: int, kind: str, number: int, payload: dict[str, Any]) -> ForgeWrite:
        return cls(id, WriteKind(kind), number, _write(WriteKind(kind), dict(payload)))


def _write(kind: WriteKind, payload: dict[str, Any]) -> Write:
    """The typed write of a `forge_writes_due` payload."""
    match kind:
        case WriteKind.PULL:
            return MirrorPull.from_row(**payload)
        case WriteKind.TASK:
            payload["since"] = datetime.fromisoformat(payload["since"])
            return PlanTask(**payload)
        case WriteKind.COMMENT:
            return MirrorComment(**payload)
        case WriteKind.CYCLE:
            return CycleReport(**payload)
        case WriteKind.CHECKLIST:
            return MirrorChecklist(**payload)
        case WriteKind.REPLY:
            return ConversationReply(**payload)
        case WriteKind.UNKNOWN_LABEL:
            return LabelReport(**payload)


@dataclass(frozen=True, slots=True)
class JobAsk:
    """A review, command or failing set of checks a job answers (`tireless.job_asks`)."""

    ask_id: int
    source: str
    """review, comment or checks."""
    source_id: str
    pull_number: int | None
    verb: str
    author: str | None
    body: str
    detail: list[dict[str, Any]]
    """A review's inline comments ({path, line, body}) or the failed checks ({name, summary, url})."""
    asked_at: datetime
    outcome: str

    def as_json(self) -> dict[str, Any]:
        """The ask as the agent gets it (TIRELESS_REVIEW_FILE, the `review` key of the JSON)."""
        return {
            "source": self.source,
            "id": self.source_id,
            "pull_number": self.pull_number,
            "verb": self.verb,
            "author": self.author,
            "body": self.body,
            "comments" if self.source != "checks" else "checks": self.detail,
            "asked_at": self.asked_at.isoformat(),
        }

    def line(self) -> str:
        """`review 123 by alice`, `comment 456 by bob`, `failed checks on 1a2b3c4d5e6f`."""
        if self.source == "checks":
            return f"failed checks on {self.source_id[:12]}"
        return f"{self.source} {self.source_id} by {self.author}"


@dataclass(frozen=True, slots=True)
class RepoRevisions:
    """A tracked repository's revision policy (`tireless.set_repo_revisions`)."""

    forge: str
    owner: str
    repo: str
    revise_on_failed_checks: bool
    max_revisions: int


@dataclass(frozen=True, slots=True)
class JobNetwork:
    """A host an attempt's agent reached, or was refused, through the runner's proxy or an
    upstream gateway (`tireless.job_network`): counts per host, port and outcome, never a payload."""

    attempt: int
    host: str
    port: int
    allowed: bool
    requests: int
    """Requests (or connections) made when allowed; refusals when not."""
    bytes_in: int
    bytes_out: int
    reason: str | None
    """Why it was refused; None when allowed."""
