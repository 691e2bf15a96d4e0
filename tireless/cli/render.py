"""Text and JSON for people: the tables and lines the commands print, shared with the demo."""

from __future__ import annotations

import dataclasses
import json
import textwrap
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from tireless.credentials import app_key_variable
from tireless.forge import token_variable
from tireless.forge.check import Finding
from tireless.forge.poll import Report
from tireless.models import Forge, ForgeApp, Job, RepoDelivery, RepoLimit, RepoStatus, size_text


def as_json(value: Any) -> str:
    def plain(item: Any) -> Any:
        if isinstance(item, datetime):
            return item.isoformat()
        if isinstance(item, timedelta):
            return item.total_seconds()
        if isinstance(item, UUID | Decimal):  # an amount of USD as written, to the last digit
            return str(item)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return dataclasses.asdict(item)
        raise TypeError(f"not JSON: {item!r}")

    return json.dumps(value, default=plain, indent=2)


# Unicode's control (Cc: C0, DEL, C1), format (Cf: bidi overrides and isolates, zero-width
# characters) and line/paragraph separator (Zl, Zp) categories: what a terminal may act on instead of
# showing (ESC starts an escape sequence, BEL rings, OSC 52 writes the clipboard, U+202E reverses
# the text after it).
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def visible(text: str, *, newlines: bool = False) -> str:
    """The text with every control, format and separator character shown as a Python-style escape
    (`\\x1b`, `\\u202e`), never raw: titles, notes and names come from forges and agents. `newlines` keeps
    line feeds as they are (a text of several lines); everything else printable is unchanged."""

    def shown(char: str) -> str:
        if unicodedata.category(char) not in INVISIBLE_CATEGORIES or (newlines and char == "\n"):
            return char
        code = ord(char)
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"

    return "".join(map(shown, text)) if not text.isprintable() else text


def table(
    rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Callable[[Any], str]]]
) -> str:
    """A plain text table: each column is (header, the cell's text from a row)."""
    cells = [[header for header, _ in columns]] + [
        [visible(cell(row)) for _, cell in columns] for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    total = int(seconds)
    if total < 120:
        return f"{total}s"
    if total < 7200:
        return f"{total // 60}m"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


def clock(value: datetime | None) -> str:
    return "-" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def last_line(note: str | None) -> str:
    """A note in a table cell: its last line, cut to 60 characters."""
    return note.splitlines()[-1][:60] if note and note.strip() else "-"


def describe(job: Job) -> str:
    """One line about a job."""
    text = (
        f"job {job.id} {job.owner}/{job.repo}#{job.number} {job.kind} lane {job.lane}: {job.state}"
    )
    text += f", attempt {job.attempts}"
    if job.waiting and job.waiting_on:
        text += f", waiting on {', '.join(job.waiting_on)}"
    if job.claimed_by is not None:
        text += f", held by {job.claimed_by} until {clock(job.claim_expires_at)} (token {job.claim_token})"
    return text + (f"\n  note: {job.note}" if job.note else "")


def render_status(rows: Sequence[dict[str, Any]]) -> str:
    def count(key: str) -> Callable[[dict[str, Any]], str]:
        return lambda row: str(row[key])

    def flags(row: dict[str, Any]) -> str:
        marks = ["paused"] if row["paused"] else []
        if row["breaker"] != "closed":
            marks.append(
                f"breaker {row['breaker']}"
                + (f" until {clock(row['tripped_until'])}" if row["breaker"] == "open" else "")
            )
        if row["capacity"] is not None:
            marks.append(f"capacity {row['capacity']}")
        if row["runs_per_day"] is not None:
            marks.append(f"runs today {row['runs_today']}/{row['runs_per_day']}")
        if row["agent_seconds_per_day"] is not None:
            spent, budget = row["agent_seconds_today"], row["agent_seconds_per_day"]
            marks.append(f"agent time today {age(spent)}/{age(budget)}")
        if row["budget_resets_at"] is not None:
            marks.append(f"budget spent until {clock(row['budget_resets_at'])}")
        if row["max_run"] is not None:
            marks.append(f"max run {age(row['max_run'].total_seconds())}")
        if row["stall_after"] is not None:
            marks.append(f"stall after {age(row['stall_after'].total_seconds())}")
        return ", ".join(marks) or "-"

    columns: list[tuple[str, Callable[[dict[str, Any]], str]]] = [("LANE", count("lane"))]
    columns += [
        (key.upper().replace("_", "-"), count(key))
        for key in (
            "pending",
            "ready",
            "waiting",
            "claimed",
            "past_lease",
            "delivered",
            "failed",
            "cancelled",
        )
    ]
    columns += [
        ("OLDEST-PENDING", lambda row: age(row["oldest_pending_seconds"])),
        ("LANE-STATE", flags),
        ("EGRESS", lambda row: egress_text(row["egress"])),
    ]
    if any(limits_text(row) != "-" for row in rows):  # only where a lane has limits
        columns.append(("LIMITS", limits_text))
    live = sum(row["pending"] + row["claimed"] for row in rows)
    summary = f"{live} live job(s)" if live else "settled: no pending or claimed job"
    window = "delivered, failed, cancelled: jobs that finished in the last 24 hours"
    return (
        "\n".join([table(rows, columns), window, summary]) if rows else "no lanes and no jobs yet"
    )


def limits_text(row: Mapping[str, Any]) -> str:
    """A lane's limits on one attempt (memory_limit, cpu_limit, pids_limit, disk_limit), or -."""
    parts = []
    if row.get("memory_limit") is not None:
        parts.append(f"memory {size_text(row['memory_limit'])}")
    if row.get("cpu_limit") is not None:
        parts.append(f"cpus {float(row['cpu_limit']):g}")
    if row.get("pids_limit") is not None:
        parts.append(f"pids {row['pids_limit']}")
    if row.get("disk_limit") is not None:
        parts.append(f"disk {size_text(row['disk_limit'])}")
    return ", ".join(parts) or "-"


def egress_text(entries: Sequence[str] | None) -> str:
    """A lane's egress allowlist for a person: `host network` without one, `none` when empty."""
    if entries is None:
        return "host network"
    return ", ".join(entries) or "none"


def network_table(rows: Sequence[dict[str, Any]]) -> str:
    """What a job's attempts reached and were refused (rows of tireless.job_network)."""
    return table(
        rows,
        [
            ("ATTEMPT", lambda n: str(n["attempt"])),
            ("HOST", lambda n: n["host"]),
            ("PORT", lambda n: str(n["port"])),
            ("REQUESTS", lambda n: str(n["requests"])),
            ("BYTES-IN", lambda n: str(n["bytes_in"])),
            ("BYTES-OUT", lambda n: str(n["bytes_out"])),
            ("REFUSED", lambda n: "-" if n["allowed"] else n["reason"]),
        ],
    )


def job_state(row: dict[str, Any]) -> str:
    """A job's state in a table cell: `waiting` (not claimable) for a pending job with open
    dependencies, which its note names."""
    return "waiting" if row["state"] == "pending" and row.get("waiting_on") else str(row["state"])


def job_table(jobs: Sequence[Job], spend: Mapping[int, str] | None = None) -> str:
    """The jobs, one line each; with `spend` (tireless.spend_text by job id) a SPEND column when
    some job made model requests."""
    rows = [dataclasses.asdict(job) for job in jobs]
    columns: list[tuple[str, Callable[[Any], str]]] = [
        ("ID", lambda r: str(r["id"])),
        ("ISSUE", lambda r: f"{r['forge']}/{r['owner']}/{r['repo']}#{r['number']}"),
        ("KIND", lambda r: str(r["kind"])),
        ("LANE", lambda r: r["lane"]),
        ("STATE", job_state),
        ("ATTEMPTS", lambda r: str(r["attempts"])),
        ("HOLDER", lambda r: r["claimed_by"] or "-"),
    ]
    if spend:
        columns.append(("SPEND", lambda r: spend.get(r["id"]) or "-"))
    return table(rows, [*columns, ("NOTE", lambda r: last_line(r["note"]))])


def render_label_reports(reports: Sequence[dict[str, Any]]) -> str:
    """The open issues' labels under the prefix that name nothing (tireless.label_reports), each
    with whether the issue was told so."""
    lines = [
        f"  {r['forge']}/{r['owner']}/{r['repo']}#{r['number']}: {r['label']} ("
        + ("said on the issue" if r["written_at"] else "to be said on the issue")
        + (f"; last error: {r['last_error']}" if r["last_error"] else "")
        + ")"
        for r in reports
    ]
    return "labels that name nothing (no mode, agent or state; they ask for no work):\n" + (
        "\n".join(lines)
    )


def render_repos(repos: Sequence[RepoStatus]) -> str:
    """Each tracked repository's last poll, next poll and backlog (tireless.repo_status), then
    each one's errors in full, wrapped."""
    rows = [dataclasses.asdict(repo) | {"status": repo} for repo in repos]
    shown = table(
        rows,
        [
            ("REPO", lambda r: repo_name(r["status"])),
            ("KIND", lambda r: r["forge_kind"] or "unregistered"),
            ("LAST-POLL", lambda r: clock(r["last_poll_at"])),
            ("LAST-SUCCESS", lambda r: clock(r["last_success_at"])),
            (
                "NEXT-POLL",
                lambda r: clock(max(filter(None, [r["next_poll_at"], r["backoff_until"]]))),
            ),
            ("FAILURES", lambda r: str(r["consecutive_failures"])),
            ("LIVE", lambda r: str(r["pending"] + r["claimed"])),
            ("MIRROR-BACKLOG", lambda r: str(r["mirror_backlog"])),
            ("ERRORS", lambda r: "below" if repo_errors(r["status"]) else "-"),
        ],
    )
    errors = [
        f"{repo.forge}/{repo.owner}/{repo.repo} {what}:\n{wrapped(text)}"
        for repo in repos
        for what, text in repo_errors(repo)
    ]
    return "\n\n".join([shown, *errors])


def repo_name(repo: RepoStatus) -> str:
    """forge/owner/repo, and the name the forge gives it now when it was renamed."""
    moved = f" (moved to {repo.moved_to})" if repo.moved_to else ""
    return f"{repo.forge}/{repo.owner}/{repo.repo}{moved}"


def repo_errors(repo: RepoStatus) -> list[tuple[str, str]]:
    """A repository's errors, whole: its forge's stop, its last read's, its mirror's."""
    found = [
        (f"forge stopped until {clock(repo.forge_limited_until)}", repo.forge_error),
        ("last error", repo.last_error),
        ("last mirror error", repo.mirror_error),
        (f"last warning ({clock(repo.last_warning_at)})", repo.last_warning),
        (f"{repo.skipped_issues} malformed issue(s) left out, the newest", repo.skipped_issue),
    ]
    return [(what, text) for what, text in found if text]


def wrapped(text: str) -> str:
    """A long message, whole, wrapped at 100 columns and indented."""
    return "\n".join(
        textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="  ") or "  "
        for line in text.splitlines()
    )


def as_plain(report: Report) -> dict[str, Any]:
    plain: dict[str, Any] = json.loads(as_json(report))
    return {"repository": report.name, **plain}


def render_job(
    job: Job,
    history: Sequence[dict[str, Any]],
    attempt: dict[str, Any] | None = None,
    delivery: dict[str, Any] | None = None,
    checkpoint: dict[str, Any] | None = None,
    asks: Sequence[dict[str, Any]] = (),
    network: Sequence[dict[str, Any]] = (),
    usage: Sequence[dict[str, Any]] = (),
) -> str:
    """A job's fields, its newest attempt's progress (tireless.job_attempt) when it has a record,
    what it delivered (tireless.deliveries) and its last checkpoint (tireless.checkpoints) when it
    has them, what each attempt used of its host (tireless.job_usage), the hosts its agent reached
    and was refused (tireless.job_network), then its history (tireless.job_event), oldest
    first."""
    fields = "\n".join(
        f"{name:>17}: {field_text(value)}" for name, value in dataclasses.asdict(job).items()
    )
    if attempt is not None:
        fields += "\n" + "\n".join(
            f"{name:>17}: {field_text(value)}"
            for name, value in (
                ("step", attempt["step"] or "-"),
                ("last progress", clock(attempt["progress_at"])),
                ("stopped", attempt["stop_note"] or "-"),
                ("report", "attached" if attempt["reported"] else "-"),
            )
        )
    if delivery is not None:
        fields += "\n" + "\n".join(
            f"{name:>17}: {field_text(value)}" for name, value in delivery_lines(delivery)
        )
    if checkpoint is not None:
        saved = f"{checkpoint['ref']} at {checkpoint['commit']}"
        when = f"attempt {checkpoint['attempt']}, {clock(checkpoint['recorded_at'])}"
        fields += f"\n{'checkpoint':>17}: {saved} ({when})"
    if asks:
        fields += f"\n{'asked in':>17}: " + "; ".join(ask_text(ask) for ask in asks)
    for used in usage:
        fields += f"\n{'usage':>17}: attempt {used['attempt']}: {usage_text(used)}"
    events = table(
        history,
        [
            ("AT", lambda e: clock(e["at"])),
            ("FROM", lambda e: e["from_state"] or "-"),
            ("TO", lambda e: e["to_state"]),
            ("WORKER", lambda e: e["worker"] or "-"),
            ("ATTEMPT", lambda e: str(e["attempt"])),
            ("NOTE", lambda e: last_line(e["note"])),
        ],
    )
    reached = f"\n\nnetwork:\n{network_table(network)}" if network else ""
    return f"{fields}{reached}\n\nhistory:\n{events}"


def usage_text(used: Mapping[str, Any]) -> str:
    """What an attempt used (a row of tireless.job_usage), for a person."""
    parts = [
        "peak memory " + ("-" if used["peak_memory"] is None else size_text(used["peak_memory"])),
        "CPU " + ("-" if used["cpu_seconds"] is None else f"{used['cpu_seconds']:.2f} s"),
        "peak processes "
        + ("-" if used["peak_processes"] is None else str(used["peak_processes"])),
        "workspace "
        + ("-" if used["workspace_bytes"] is None else size_text(used["workspace_bytes"])),
    ]
    if used["limit_reached"] is not None:
        parts.append(f"stopped by its {used['limit_reached']} limit")
    return ", ".join(parts)


def delivery_lines(delivery: dict[str, Any]) -> list[tuple[str, str]]:
    """What a job delivered (a row of tireless.deliveries), as `tireless show` prints it."""
    if not delivery["changed"]:
        return [("delivery", "no change")]
    pushed = f"{delivery['branch']} at {delivery['head']}"
    base = f"{delivery['base_branch']} at {delivery['base']}"
    if delivery["pull_number"] is not None:
        pull = f"#{delivery['pull_number']} {delivery['pull_url']}"
    elif delivery["pull_queued_at"] is None:
        pull = "none (the repository was not tracked)"
    elif delivery["pull_error"]:
        pull = f"not written yet ({delivery['pull_failures']} failures; {delivery['pull_error']})"
    else:
        pull = "not written yet"
    return [
        ("delivery", pushed),
        ("base", base),
        ("pull request", pull + (" (draft)" if delivery["draft"] else "")),
    ]


def field_text(value: Any) -> str:
    """A job's field for a person: `-` for none, labels comma-separated, times on the clock."""
    if value is None or value == ():
        return "-"
    if isinstance(value, datetime):
        return clock(value)
    if isinstance(value, tuple | list):
        return ", ".join(str(item) for item in value)
    return str(value)


def render_forges(forges: Sequence[Forge], apps: Sequence[ForgeApp] = ()) -> str:
    """The registered forges and the variable each one's token is read from (a GitHub App's:
    its id and where its key is read from)."""
    by_name = {app.name: app for app in apps}

    def credentials(name: str) -> str:
        app = by_name.get(name)
        if app is None:
            return token_variable(name)
        key = f"{app_key_variable(name)}_FILE" + (
            f" or {app.app_key_file}" if app.app_key_file else ""
        )
        return f"GitHub App {app.app_id}, key: {key}"

    return table(
        [dataclasses.asdict(f) for f in forges],
        [
            ("NAME", lambda r: r["name"]),
            ("KIND", lambda r: str(r["kind"])),
            ("URL", lambda r: r["base_url"]),
            ("TOKEN-VARIABLE", lambda r: credentials(r["name"])),
        ],
    )


def span(length: timedelta) -> str:
    """A duration as the command line writes it: `90d`, `2h`, `15m`, `90s`, `1d12h`."""
    seconds = int(length.total_seconds())
    parts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "m")]
    text = "".join(f"{n}{unit}" for n, unit in [*parts, (seconds % 60, "s")] if n)
    return text or f"{length.total_seconds():g}s"


def render_repo_limit(limits: RepoLimit) -> str:
    """A repository's capacity and daily budgets, one line."""

    def shown(value: object, what: str) -> str:
        return f"{what} {value}" if value is not None else f"no {what}"

    agent_time = limits.agent_time_per_day
    return (
        f"{limits.forge}/{limits.owner}/{limits.repo}: {shown(limits.capacity, 'capacity')}, "
        f"{shown(limits.runs_per_day, 'runs a day')}, "
        f"{shown(None if agent_time is None else age(agent_time.total_seconds()), 'agent time a day')}"
    )


def render_repo_delivery(policy: RepoDelivery) -> str:
    """A repository's delivery policy, a line per setting."""

    def shown(value: object) -> str:
        return "the runner's default" if value is None else str(value)

    return "\n".join(
        [
            f"{policy.forge}/{policy.owner}/{policy.repo}:",
            f"  protected: {', '.join(policy.protected) or 'none'}",
            f"  allowed: {', '.join(policy.allowed) or 'none'}",
            f"  CI definitions: {'may change' if policy.allow_ci else 'may not change'}",
            f"  max files: {shown(policy.max_files)}",
            f"  max bytes: {shown(policy.max_bytes)}",
        ]
    )


def ask_text(ask: dict[str, Any]) -> str:
    """`review 123 by alice on #12`, `comment 456 by bob on #7`, `failed checks on 1a2b3c4d5e6f`
    (a row of tireless.job_asks)."""
    if ask["source"] == "checks":
        return f"failed checks on {ask['source_id'][:12]}"
    where = f" on #{ask['pull_number']}" if ask["pull_number"] else ""
    return f"{ask['source']} {ask['source_id']} by {ask['author']}{where}"


def render_findings(forge: str, findings: Sequence[Finding]) -> str:
    """`tireless forge check`: a line per capability (ok, FAIL: needed and missing, warn: optional
    and missing) with its fix, then the verdict."""
    lines = []
    for found in findings:
        mark = "ok" if found.ok else "FAIL" if found.required else "warn"
        fix = f" -- fix: {found.fix}" if found.fix and not found.ok else ""
        lines.append(f"{mark:<4}  {found.capability}: {found.detail}{fix}")
    missing = sum(f.required and not f.ok for f in findings)
    warned = sum(not f.required and not f.ok for f in findings)
    warnings = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
    if missing:
        lines.append(f"forge {forge}: {missing} capability(ies) tireless needs missing{warnings}")
    else:
        lines.append(f"forge {forge}: everything tireless needs works{warnings}")
    return "\n".join(lines)
