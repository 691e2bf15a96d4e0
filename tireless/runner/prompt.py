"""The prompt a known agent CLI gets (tireless.runner.agents), built from the job and its brief:
the issue's title, URL and body, what a revision answers (the review, the failed checks), and
what the job's kind asks of it (a change in the working copy; a plan or proposals written, as
JSON, to the file TIRELESS_PLAN_FILE or TIRELESS_PROPOSALS_FILE names). It is written to a file
of the job's own and handed to the CLI on its stdin or by that file's name, never on its command
line, where every user of the host could read it (/proc/PID/cmdline)."""

from __future__ import annotations

from tireless.models import Job
from tireless.runner.brief import AgentFiles

IMPLEMENT = """\
## What to do
Make the change the issue asks for in this working copy (the current directory, a git
repository of {repo}). Edit the files; you may commit, but do not push and do not open a pull
request: tireless commits what you leave, pushes it and opens the pull request itself. You have
no credential for the forge and need none. When you are done, answer with a short summary of
what you changed and why: it becomes the pull request's report."""

TASKS = """\
## What to do
Do not change the code. Write {what} as JSON to the file {path} (the variable {variable} names
it too): a list of at most 50 tasks, each an object with only these fields: "title" (1 to 200
characters), "body" (text), optionally "lane" (a lane name) and "depends_on" (a list of indexes
of other tasks of the list, counting from 0, or existing issues as "#N"). For example:
[{{"title": "Build the frame", "body": "The frame first."}},
 {{"title": "Paint it", "body": "Blue.", "depends_on": [0]}}]
tireless opens one issue for each task. Then answer with a short summary: it becomes the
report."""


def prompt(job: Job, files: AgentFiles) -> str:
    """The whole prompt for `job`."""
    brief = files.brief
    where = f"{job.owner}/{job.repo}#{job.number}"
    parts = [
        f"# {job.title or 'Issue ' + where}",
        f"Issue {where}" + (f": {brief.issue_url}" if brief.issue_url else ""),
    ]
    body = (brief.body or "").strip()
    parts.append(body or "(the issue has no description)")
    if brief.body_cut:
        parts.append("(The description was cut; the whole of it is on the issue.)")
    if files.review_file is not None:
        parts.append(
            "## What the revision answers\n" + files.review_file.read_text(encoding="utf-8").strip()
        )
    if job.kind.value == "plan" and files.tasks_file is not None:
        parts.append(
            TASKS.format(what="the plan", path=files.tasks_file, variable="TIRELESS_PLAN_FILE")
        )
    elif job.kind.value == "discover" and files.tasks_file is not None:
        parts.append(
            TASKS.format(
                what="your proposals", path=files.tasks_file, variable="TIRELESS_PROPOSALS_FILE"
            )
        )
    else:
        parts.append(IMPLEMENT.format(repo=f"{job.owner}/{job.repo}"))
    return "\n\n".join(parts) + "\n"
