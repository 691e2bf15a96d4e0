"""A stand-in forge for the tests and `make run`: a real HTTP server on 127.0.0.1 that speaks the
parts of the Gitea/Forgejo API v1 or of the GitHub REST API the poller uses, with their quirks,
and faults a test can switch on. Its responses follow Gitea's swagger (templates/swagger/
v1_json.tmpl in go-gitea/gitea) and GitHub's REST description; tests/forge/test_standin_forge.py
checks them against the JSON schemas in tests/forge_schemas/.

    with StandinForge("gitea", token="s3cret") as forge:
        number = forge.create_issue("acme", "widgets", "Add a flag", ["tireless", "tireless/plan"])
        forge.close_issue("acme", "widgets", number)
        forge.fault("500", times=2)

Run on its own (`python -m dev.standin --port 3000 --seed issues.json`) it
serves until SIGINT/SIGTERM, to try the `tireless` command against; `--seed` reads
`{"repos": [{"owner": "acme", "repo": "widgets", "labels": ["tireless"],
"issues": [{"title": "Add a flag", "labels": ["tireless", "tireless/plan"]}]}]}` (see docs/demo.md);
a repository's `"files": {"README.md": "..."}` become its git's first commit on `main`.

It also takes the mirror's writes: repository labels (GET/POST `/repos/{o}/{r}/labels`; GitHub
also GET `/labels/{name}`), an issue's labels (POST to add, DELETE one), and comments (GET/POST
`/issues/{n}/comments`). Gitea's issue-labels endpoints take label ids (`labels: [int64]` up to
1.20; newer ones also take names: `gitea_label_refs="both"`), GitHub's take names; a Gitea label
created `exclusive: true` knocks the other labels of its scope off the issue it is added to.
GitHub's match label names without case and refuse one past 50 characters, and GitHub refuses a
comment, issue or pull request body past 65536 characters (GITHUB_BODY_LIMIT).

And it takes delivery's (issue 33): it serves git at the clone URL tireless computes for it
(`tireless.forge_clone_url`: `{url}/{owner}/{repo}.git`, both flavours) through git's own
`git http-backend` (dev.standin.git_backend), the token checked as each forge checks it,
branch protection a real pre-receive hook; and pull requests (`/repos/{o}/{r}/pulls`: create,
list, get, edit), numbered with the issues. `seed_git`, `branch_head`, `commits_of`,
`protect_branch`, `pulls_of` let tests set the scene and read what happened.

The package by concern, each layer a class built on the one before: records.py (what it keeps,
and the Answer of a route), state.py (the issues, labels, comments, pulls and repositories in
memory, what tests set and read, and `token_accepted`, the one place a token is accepted),
views.py (the JSON both forges share), faults.py (the faults a test switches on, the rate limits),
git_http.py (git over HTTP), mirror.py (labels, comments, events), pulls.py (pull requests),
reviews.py (reviews, permissions), checks.py (commit statuses, check runs), conversation.py
(comments, reactions, the dispatch of those), dependencies.py (the work graph's relations),
rest.py (the poller's reads, token scopes and the dispatch of every API request), forge.py (the
server, StandinForge). The shared routes branch on no flavour: each asks the forge's API object,
`api`, for what is its own, GiteaApi in gitea.py (Gitea and Forgejo) or GitHubApi in github.py
(their parts of the conversation in gitea_conversation.py and github_conversation.py), where each
quirk sits beside its citation.
"""

from __future__ import annotations

from dev.standin.faults import BODY_FAULTS, FAULTS, PRIMARY_LIMIT_FAULTS, STATUS_FAULTS
from dev.standin.forge import StandinForge, issues_of, main, seed
from dev.standin.records import (
    APP_LOGIN,
    MIRROR_LOGIN,
    PERSON,
    Answer,
    Comment,
    Event,
    Flavour,
    PullView,
    RepoLabel,
    Request,
    StoredIssue,
    StoredPull,
)

__all__ = [
    "APP_LOGIN",
    "BODY_FAULTS",
    "FAULTS",
    "MIRROR_LOGIN",
    "PERSON",
    "PRIMARY_LIMIT_FAULTS",
    "STATUS_FAULTS",
    "Answer",
    "Comment",
    "Event",
    "Flavour",
    "PullView",
    "RepoLabel",
    "Request",
    "StandinForge",
    "StoredIssue",
    "StoredPull",
    "issues_of",
    "main",
    "seed",
]
