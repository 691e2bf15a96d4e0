"""`tireless forge check`: what a forge's token can and cannot do of what tireless needs, tried
before any poll, one finding per capability with the fix for a failure (the scope or permission
the forge's refusal names, the variable, the URL). Without `write` only GETs are sent, and, with
`deliver`, git: a `git ls-remote`, and a scratch ref of tireless's own (`refs/tireless/check/...`)
pushed and deleted again: nothing else on the forge changes. docs/forges.md says more."""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

from tireless.credentials import secret_variable
from tireless.forge import client_for, token_for, token_variable
from tireless.forge.app_auth import forge_git_auth
from tireless.forge.client import ForgeClient, ReadFailed, Response
from tireless.forge.gitea import LABEL_COLOR as GITEA_COLOR
from tireless.forge.github import LABEL_COLOR as GITHUB_COLOR
from tireless.forge.http import TIMEOUT, rate_limit_of
from tireless.forge.validate import decode_json
from tireless.git import BOT, GitAuth, GitError, git
from tireless.models import Forge

MAX_REPOS = 3
"""Without --repo, the reads are tried on at most this many tracked repositories of the forge."""
SCRATCH_TITLE = "tireless forge check: a scratch issue (closed at once, safe to delete)"
SCRATCH_BODY = (
    "`tireless forge check --write` opened this issue to try what the mirror writes (a label on"
    " it, a comment) and closed it at once. Nothing asks for work here."
)
CHECK_LABEL = "tireless/check-"
"""The scratch label's name starts so, and ends in a random part: a second run never meets the
first's label."""
CHECK_BRANCH = "tireless/check-"
"""The scratch branch's name starts so (deleted again at once)."""
CHECK_REF = "refs/tireless/check/"
"""`--deliver`'s scratch ref starts so, in tireless's own namespace beside its checkpoints
(refs/tireless/checkpoints/): no branch, no pull request, no CI run; deleted again at once."""

UNREACHABLE_FIX = "check that the forge is up and reachable from here, then check again"
GITEA_SCOPE_REFUSAL = re.compile(r"required scope\(s\): \[([^\]]*)\]")
"""Gitea's and Forgejo's refusal of a token's scopes names what the route needed: 403 "token does
not have at least one of required scope(s): [read:issue]" (routers/api/v1/api.go
tokenRequiresScopes)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One capability: whether the token has it, whether tireless needs it (`required`; an
    optional one missing is a warning), what was seen, and how to fix a failure."""

    capability: str
    ok: bool
    required: bool
    detail: str
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class Need:
    """What a request needs of the token, per forge family: a Gitea/Forgejo scope
    (`read:issue`) and a GitHub fine-grained permission (`issues=read`, the form of
    X-Accepted-GitHub-Permissions)."""

    gitea: str
    github: str


READ_ISSUES = Need("read:issue", "issues=read")
WRITE_ISSUES = Need("write:issue", "issues=write")
READ_USER = Need("read:user", "read:user")
"""GitHub: a fine-grained token may always read its account, a classic one with read:user."""
READ_ORG = Need("read:organization", "")
"""Gitea only: GitHub has no organisation labels."""
READ_CODE = Need("read:repository", "contents=read")
WRITE_CODE = Need("write:repository", "contents=write")
READ_PULLS = Need("read:repository", "pull_requests=read")
WRITE_PULLS = Need("write:repository", "pull_requests=write")


@dataclass(frozen=True, slots=True)
class Target:
    """A repository the check tries, with the URL the runner fetches and pushes it at: the
    store's tireless.forge_clone_url, so git is tried where the runner goes."""

    owner: str
    repo: str
    clone_url: str


def check_forge(
    forge: Forge,
    web_root: str,
    repos: Sequence[Target],
    *,
    write: bool = False,
    deliver: bool = False,
    timeout: float = TIMEOUT,
) -> list[Finding]:
    """Every finding for the forge, its token read as the poller reads it (TIRELESS_TOKEN_<NAME>
    or its _FILE), tried on `repos` (the reads on each, the writes on the first); `web_root` is
    the store's tireless.forge_web_root, under which the fixes name the token page."""
    token = token_for(forge.name)
    client = client_for(forge.kind, forge.base_url, token, timeout=timeout)
    try:
        checker = Checker(forge, web_root, client, token is not None, timeout)
        return checker.run(repos, write, deliver)
    finally:
        client.close()


class Checker:
    """The probes of one forge, each turning what the forge answered into a Finding."""

    def __init__(
        self, forge: Forge, web_root: str, client: ForgeClient, has_token: bool, timeout: float
    ) -> None:
        self.forge = forge
        self.web_root = web_root
        self.client = client
        self.has_token = has_token
        self.timeout = timeout
        self.variable = token_variable(forge.name)
        self.gitea = forge.kind != "github"
        self.size = "limit" if self.gitea else "per_page"

    def run(self, repos: Sequence[Target], write: bool, deliver: bool) -> list[Finding]:
        found = [self.api()]
        if not found[0].ok:
            return found
        token = self.token()
        found += token
        if not token[0].ok:
            return found  # no token, or a refused one: every other request fails the same way
        if not repos:
            found.append(
                Finding(
                    "repositories",
                    False,
                    True,
                    f"no repository of forge {self.forge.name} is tracked, and no --repo given",
                    f"tireless track {self.forge.name} OWNER REPO, or --repo OWNER/REPO",
                )
            )
        owners: list[str] = []
        for target in repos:
            found += self.reads(target.owner, target.repo)
            if self.gitea and target.owner not in owners:
                owners.append(target.owner)
                found.append(self.organisation_labels(target.owner))
            if deliver:
                found += [self.git_read(target), *self.git_push(target)]
                found += [
                    self.pulls_read(target.owner, target.repo),
                    self.pull_permission(target.owner, target.repo),
                ]
        if write and repos:
            first = repos[0]
            found += self.writes(first.owner, first.repo)
            if deliver:
                found += self.delivery_writes(first)
        if not deliver:
            found.append(
                Finding(
                    "delivery",
                    True,
                    False,
                    "not checked: git (a push too) and pull requests are tried with --deliver"
                    " (for runners that run `tireless work --deliver`)",
                )
            )
        found.append(self.webhook_secret())
        return found

    def git_auth(self, target: Target) -> GitAuth | None:
        """The runner's git credentials for the repository (none when its App could not mint)."""
        try:
            return forge_git_auth(self.forge.name, target.owner, target.repo)
        except ReadFailed:
            return None

    # What each answer means
    def _ask(self, method: str, path: str, body: object = None) -> Response | str:
        """The forge's answer, or why there was none (unreachable, a 5xx, a timeout)."""
        try:
            return self.client.probe(method, path, body)
        except ReadFailed as failure:
            return str(failure)

    def _judge(
        self,
        capability: str,
        answer: Response | str,
        need: Need,
        *,
        required: bool = True,
        done: Callable[[Response], str],
    ) -> Finding:
        """A Finding from an answer: `done` says what a 2xx showed; a refusal is explained by what
        the forge names (Gitea's scope, GitHub's X-Accepted-GitHub-Permissions or
        X-Accepted-OAuth-Scopes), else by `need`."""
        if isinstance(answer, str):
            return Finding(capability, False, required, answer, UNREACHABLE_FIX)
        status = answer.status
        if 200 <= status < 300:
            return Finding(capability, True, required, done(answer))
        said = f"{answer.where}: HTTP {status}{_message(answer)}"
        if status == 401:
            return Finding(capability, False, required, said, self._new_token())
        limited = rate_limit_of(answer)
        if limited is not None:
            return Finding(capability, False, required, str(limited), "wait, then check again")
        if status == 403:
            return Finding(capability, False, required, said, self._grant(answer, need))
        if status == 404:
            return Finding(
                capability,
                False,
                required,
                f"{said} (no such repository, or the token cannot see it)",
                f"check the name; else {self._needed(need)}",
            )
        return Finding(capability, False, required, said, self._needed(need))

    def _grant(self, answer: Response, need: Need) -> str:
        """The fix of a 403: the scope or permission the forge says the route wanted."""
        if self.gitea:
            named = GITEA_SCOPE_REFUSAL.search(_message(answer))
            scope = named.group(1) if named else need.gitea
            return f"give the token the scope {scope} ({self._token_page()})"
        permissions = answer.headers.get("x-accepted-github-permissions")
        if permissions:
            return self._needed(Need(need.gitea, permissions.strip()))
        scopes = answer.headers.get("x-accepted-oauth-scopes")
        if scopes:
            return f"give the classic token one of the scopes {scopes.strip()}"
        return self._needed(need)

    def _needed(self, need: Need) -> str:
        """The fix when the forge named nothing: what tireless knows the request needs."""
        if self.gitea:
            return f"give the token the scope {need.gitea} ({self._token_page()})"
        return (
            f"give the token the permission {need.github} (a fine-grained token:"
            f" {self._token_page()}; a GitHub App: its repository permissions)"
        )

    def _token_page(self) -> str:
        """Where a token of the forge is made: Gitea's and Forgejo's applications settings,
        GitHub's fine-grained tokens."""
        if self.gitea:
            return f"{self.web_root}/user/settings/applications"
        return f"{self.web_root}/settings/personal-access-tokens"

    def _new_token(self) -> str:
        return (
            f"put a valid token in {self.variable} (or a file named by {self.variable}_FILE);"
            f" make one at {self._token_page()}"
        )

    # The probes
    def api(self) -> Finding:
        """The URL answers as the forge's API: Gitea's GET /version (no token needed,
        routers/api/v1/misc/version.go); GitHub's GET /meta (docs.github.com/en/rest/meta/meta),
        with `installed_version` on GitHub Enterprise Server."""
        path = "version" if self.gitea else "meta"
        answer = self._ask("GET", path)
        fix = f"tireless forge add {self.forge.name} --kind {self.forge.kind} --url URL:" + (
            " the web root" if self.gitea else " the API root (https://api.github.com)"
        )
        if isinstance(answer, str) or answer.status != 200:
            shown = answer if isinstance(answer, str) else f"HTTP {answer.status}"
            return Finding("api", False, True, f"{self.forge.base_url}: {shown}", fix)
        try:
            data = decode_json(answer.body, answer.headers.get("content-type", ""), answer.where)
        except ReadFailed as failure:
            return Finding("api", False, True, f"{self.forge.base_url}: {failure}", fix)
        data = data if isinstance(data, dict) else {}
        if self.gitea:
            version = f"Gitea/Forgejo API v1, version {data.get('version', 'unknown')}"
        elif "installed_version" in data:
            version = f"GitHub Enterprise Server {data['installed_version']}"
        else:
            version = "GitHub"
        return Finding("api", True, True, f"{self.forge.base_url}: {version}")

    def token(self) -> list[Finding]:
        """The token's validity (401: refused), its account (GET /user) and, for a GitHub classic
        token, its scopes (X-OAuth-Scopes: docs.github.com/en/apps/oauth-apps/building-oauth-apps/
        scopes-for-oauth-apps). A fine-grained or App token's permissions, and a Gitea token's
        scopes, show in what the probes after it are refused."""
        if not self.has_token:
            return [
                Finding(
                    "token",
                    False,
                    True,
                    f"{self.variable} is not set: the forge is read anonymously, and written not"
                    " at all",
                    self._new_token(),
                )
            ]
        answer = self._ask("GET", "user")
        if isinstance(answer, str):
            return [Finding("token", False, True, answer, UNREACHABLE_FIX)]
        if answer.status == 401:
            return [
                Finding(
                    "token",
                    False,
                    True,
                    f"the forge refused the token in {self.variable} (GET /user: HTTP 401"
                    f"{_message(answer)})",
                    self._new_token(),
                )
            ]
        found = [Finding("token", True, True, f"{self.variable} is accepted")]
        message = _message(answer)
        if answer.status == 403 and "by integration" in message:
            found.append(
                Finding(
                    "identity",
                    True,
                    False,
                    "a GitHub App installation token: it has no account of its own (GET /user:"
                    f" HTTP 403{message})",
                )
            )
        else:
            found.append(self._judge("identity", answer, READ_USER, required=False, done=_login))
        scopes = answer.headers.get("x-oauth-scopes")
        if scopes is not None:
            given = {scope.strip() for scope in scopes.split(",") if scope.strip()}
            enough = bool(given & {"repo", "public_repo"})
            found.append(
                Finding(
                    "scopes",
                    enough,
                    True,
                    f"a classic token with the scopes: {', '.join(sorted(given)) or 'none'}",
                    None if enough else "give it the scope repo (public_repo: public ones only)",
                )
            )
        return found

    def reads(self, owner: str, repo: str) -> list[Finding]:
        """What the poller and the mirror read of a repository: its issues, its labels, its
        comments."""
        base = f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}"
        name = f"{owner}/{repo}"
        one = f"{self.size}=1"
        return [
            self._judge(
                f"list issues {name}",
                self._ask("GET", f"{base}/issues?state=all&{one}"),
                READ_ISSUES,
                done=lambda a: "listed" + _counted(a),
            ),
            self._judge(
                f"read labels {name}",
                self._ask("GET", f"{base}/labels?{one}"),
                READ_ISSUES,
                done=lambda a: "listed" + _counted(a),
            ),
            self._judge(
                f"read comments {name}",
                self._ask("GET", f"{base}/issues/comments?{one}"),
                READ_ISSUES,
                done=lambda a: "listed",
            ),
        ]

    def organisation_labels(self, owner: str) -> Finding:
        """Gitea: the organisation's labels, which the mirror looks a label up in too; refused
        unless the token has read:organization (routers/api/v1/api.go: /orgs needs it before the
        owner is looked up, a user's name too); without it the mirror sees the repository's
        labels only."""
        answer = self._ask("GET", f"orgs/{quote(owner, safe='')}/labels?limit=1")
        capability = f"organisation labels {owner}"
        if isinstance(answer, Response) and answer.status == 404:
            return Finding(capability, True, False, f"{owner} is no organisation: none to read")
        return self._judge(
            capability,
            answer,
            READ_ORG,
            required=False,
            done=lambda a: "listed" + _counted(a),
        )

    def pulls_read(self, owner: str, repo: str) -> Finding:
        """Delivery finds the pull request it opened among the open ones."""
        base = f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}"
        return self._judge(
            f"read pull requests {owner}/{repo}",
            self._ask("GET", f"{base}/pulls?state=open&{self.size}=1"),
            READ_PULLS,
            done=lambda a: "listed",
        )

    def git_read(self, target: Target) -> Finding:
        """`git ls-remote` of the clone URL the runner uses, the token given to git as the runner
        gives it (tireless.git.GitAuth: a header in git's own environment, never on a command
        line)."""
        capability = f"git read {target.owner}/{target.repo}"
        url = target.clone_url
        auth = self.git_auth(target)
        try:
            branch, head = self._default_head(url, auth)
        except GitError as failed:
            return self._git_failed(capability, url, failed, READ_CODE)
        return Finding(capability, True, True, f"{url}: {branch} at {head[:12]}")

    def git_push(self, target: Target) -> list[Finding]:
        """A push as the runner's (a token that may only read fails here, not at its first
        job): the default branch's head pushed to a scratch ref of tireless's own, then the ref
        deleted. No commit is made and no branch touched."""
        name, url = f"{target.owner}/{target.repo}", target.clone_url
        auth = self.git_auth(target)
        ref = CHECK_REF + secrets.token_hex(4)
        with tempfile.TemporaryDirectory(prefix="tireless-check-") as scratch:
            bare = Path(scratch) / "check.git"
            try:
                base, head = self._default_head(url, auth)
                git("init", "-q", "--bare", str(bare), timeout=self.timeout)
                self._git(
                    "fetch", "-q", "--depth=1", url, f"refs/heads/{base}", bare=bare, auth=auth
                )
                self._git("push", "-q", url, f"{head}:{ref}", bare=bare, auth=auth)
            except GitError as failed:
                return [self._git_failed(f"git push scratch ref {name}", url, failed, WRITE_CODE)]
            pushed = f"pushed {ref} at {head[:12]}"
            found = [Finding(f"git push scratch ref {name}", True, True, pushed)]
            try:
                self._git("push", "-q", url, f":{ref}", bare=bare, auth=auth)
            except GitError as failed:
                left = self._git_failed(f"delete scratch ref {name}", url, failed, WRITE_CODE)
                return [*found, replace(left, detail=f"{left.detail} ({ref} is left: delete it)")]
        return [*found, Finding(f"delete scratch ref {name}", True, True, f"deleted {ref}")]

    def pull_permission(self, owner: str, repo: str) -> Finding:
        """Whether the token's account may open the pull request, as far as the forge says so
        without one being opened: the repository's `permissions.push` (GET /repos/{owner}/{repo}:
        GitHub's full-repository, Gitea's Repository with the caller's `permissions`) and,
        on Gitea, `has_pull_requests`. A fine-grained token's own pull_requests permission shows
        only when a pull request is opened: --write does."""
        capability = f"pull request permission {owner}/{repo}"
        answer = self._ask("GET", f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}")
        judged = self._judge(capability, answer, WRITE_PULLS, done=lambda a: "")
        if not judged.ok or not isinstance(answer, Response):
            return judged
        try:
            data = decode_json(answer.body, answer.headers.get("content-type", ""), answer.where)
        except ReadFailed as failure:
            return Finding(capability, False, True, str(failure), UNREACHABLE_FIX)
        data = data if isinstance(data, dict) else {}
        permissions = data.get("permissions")
        if not isinstance(permissions, dict):
            return Finding(
                capability, False, False,
                f"{answer.where} gives no permissions for this token: not proved (--write opens"
                " and closes a draft pull request)",
            )  # fmt: skip
        if data.get("has_pull_requests") is False:
            return Finding(
                capability, False, True, "the repository has pull requests turned off",
                f"turn them on in the repository's settings ({self.web_root}/{owner}/{repo}"
                "/settings)",
            )  # fmt: skip
        if permissions.get("push") is not True:
            shown = ", ".join(sorted(k for k, v in permissions.items() if v is True)) or "none"
            return Finding(
                capability, False, True,
                f"the token's account may not write {owner}/{repo} (its permissions: {shown}): it can push no"
                " branch to open a pull request from",
                f"give the account write access to {owner}/{repo} (a collaborator with write, or"
                " a team that has it)",
            )  # fmt: skip
        more = (
            "" if self.gitea else "; a fine-grained token's pull_requests=write shows with --write"
        )
        return Finding(capability, True, True, f"may push, and so open pull requests{more}")

    def _default_head(self, url: str, auth: GitAuth | None) -> tuple[str, str]:
        """The default branch and its head commit, by `git ls-remote --symref URL HEAD` in git's
        protocol v0: one GET of info/refs (v2 would POST its ls-refs command: a read, but the
        check promises GETs alone without --write)."""
        shown = git(
            "ls-remote", "--symref", url, "HEAD",
            auth=auth, config=["protocol.version=0"], timeout=self.timeout,
        )  # fmt: skip
        branch, head = "", ""
        for line in shown.stdout.decode(errors="replace").splitlines():
            ref, _, name = line.partition("\t")
            if ref.startswith("ref: refs/heads/") and name == "HEAD":
                branch = ref.removeprefix("ref: refs/heads/")
            elif name == "HEAD":
                head = ref
        if not branch or not head:
            raise GitError(["ls-remote", url], 0, "the repository has no default branch (empty?)")
        return branch, head

    def _git_failed(self, capability: str, url: str, failed: GitError, need: Need) -> Finding:
        """What git said, and its fix: git reports a refusal by its HTTP status only ("The
        requested URL returned error: 403"), so the scope is the one `need` names."""
        if "403" in failed.stderr:
            fix = self._needed(need)
        elif "401" in failed.stderr or "Authentication failed" in failed.stderr:
            fix = self._new_token()
        else:
            fix = f"check that this host reaches {self.web_root} as the runners do"
        lines = [line for line in failed.stderr.strip().splitlines() if line.strip()]
        said = (lines[-1] if lines else f"git exited {failed.returncode}")[:300]
        return Finding(capability, False, True, f"{url}: {said}", fix)

    def writes(self, owner: str, repo: str) -> list[Finding]:
        """What the mirror writes, tried on a scratch label and a scratch issue, both removed or
        closed again: a label made and deleted; an issue opened (a plan opens its children so),
        the label put on it and taken off, a comment, the issue closed."""
        name = f"{owner}/{repo}"
        base = f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}"
        label = CHECK_LABEL + secrets.token_hex(4)
        found: list[Finding] = []
        made = self._ask(
            "POST",
            f"{base}/labels",
            {"name": label, "color": GITEA_COLOR if self.gitea else GITHUB_COLOR,
             "description": "made and deleted by tireless forge check"},
        )  # fmt: skip
        label_ref = _created_id(made) if self.gitea else quote(label, safe="")
        created = self._judge(
            f"create label {name}", made, WRITE_ISSUES, done=lambda a: f"created {label}"
        )
        found.append(created)
        opened = self._ask("POST", f"{base}/issues", {"title": SCRATCH_TITLE, "body": SCRATCH_BODY})
        number = _created_number(opened)
        found.append(
            self._judge(
                f"open issue {name}", opened, WRITE_ISSUES, done=lambda a: f"opened #{number}"
            )
        )
        if number is not None:
            issue = f"{base}/issues/{number}"
            if created.ok and label_ref is not None:
                put = self._ask(
                    "POST", f"{issue}/labels", {"labels": [int(label_ref) if self.gitea else label]}
                )
                found.append(
                    self._judge(
                        f"label an issue {name}",
                        put,
                        WRITE_ISSUES,
                        done=lambda a: f"put {label} on #{number}",
                    )
                )
                off = f"{issue}/labels/{label_ref}"
                found.append(
                    self._judge(
                        f"unlabel an issue {name}",
                        self._ask("DELETE", off),
                        WRITE_ISSUES,
                        done=lambda a: f"took {label} off #{number}",
                    )
                )
            said = self._ask(
                "POST", f"{issue}/comments", {"body": "tireless forge check: a comment."}
            )
            found.append(
                self._judge(
                    f"comment {name}", said, WRITE_ISSUES, done=lambda a: f"commented on #{number}"
                )
            )
            closed = self._ask("PATCH", issue, {"state": "closed"})
            found.append(
                self._judge(
                    f"close issue {name}",
                    closed,
                    WRITE_ISSUES,
                    done=lambda a: f"closed #{number}",
                )
            )
        if created.ok and label_ref is not None:
            gone = self._ask("DELETE", f"{base}/labels/{label_ref}")
            found.append(
                self._judge(
                    f"delete label {name}",
                    gone,
                    WRITE_ISSUES,
                    done=lambda a: f"deleted {label}",
                )
            )
        return found

    def delivery_writes(self, target: Target) -> list[Finding]:
        """What delivery writes, on a scratch branch deleted again: an empty commit on the default
        branch's head pushed to it, a draft pull request from it opened and closed."""
        owner, repo, url = target.owner, target.repo, target.clone_url
        name = f"{owner}/{repo}"
        auth = self.git_auth(target)
        branch = CHECK_BRANCH + secrets.token_hex(4)
        with tempfile.TemporaryDirectory(prefix="tireless-check-") as scratch:
            bare = Path(scratch) / "check.git"
            try:
                base, commit = self._scratch_commit(url, auth, bare)
                self._git("push", "-q", url, f"{commit}:refs/heads/{branch}", bare=bare, auth=auth)
            except GitError as failed:
                return [self._git_failed(f"git push {name}", url, failed, WRITE_CODE)]
            found = [Finding(f"git push {name}", True, True, f"pushed {branch}")]
            pulls = f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/pulls"
            body = {
                "head": branch, "base": base, "title": "tireless forge check (closed at once)",
                "body": "`tireless forge check --write --deliver` opened this and closed it.",
                "draft": True,
            }  # fmt: skip
            opened = self._ask("POST", pulls, body)
            number = _created_number(opened)
            found.append(
                self._judge(
                    f"open pull request {name}",
                    opened,
                    WRITE_PULLS,
                    done=lambda a: f"opened #{number}",
                )
            )
            if number is not None:
                found.append(
                    self._judge(
                        f"close pull request {name}",
                        self._ask("PATCH", f"{pulls}/{number}", {"state": "closed"}),
                        WRITE_PULLS,
                        done=lambda a: f"closed #{number}",
                    )
                )
            try:
                self._git("push", "-q", url, f":refs/heads/{branch}", bare=bare, auth=auth)
            except GitError as failed:
                found.append(self._git_failed(f"delete branch {name}", url, failed, WRITE_CODE))
            else:
                found.append(Finding(f"delete branch {name}", True, True, f"deleted {branch}"))
        return found

    def _scratch_commit(self, url: str, auth: GitAuth | None, bare: Path) -> tuple[str, str]:
        """(the default branch, an empty commit on its head) in a new bare repository `bare`
        that fetched that head alone (--depth 1)."""
        base, head = self._default_head(url, auth)
        git("init", "-q", "--bare", str(bare), timeout=self.timeout)
        self._git("fetch", "-q", "--depth=1", url, f"refs/heads/{base}", bare=bare, auth=auth)
        made = git(
            "commit-tree", f"{head}^{{tree}}", "-p", head, "-m", "tireless forge check",
            git_dir=bare, env=BOT.environment(), timeout=self.timeout,
        )  # fmt: skip
        return base, made.stdout.decode().strip()

    def _git(self, *args: str, bare: Path, auth: GitAuth | None) -> None:
        """A `git fetch` or `git push` between `bare` and the forge, with the token."""
        git(*args, git_dir=bare, auth=auth, timeout=self.timeout)

    def webhook_secret(self) -> Finding:
        """The webhook secret `tireless web` checks the forge's webhooks with (tireless.web.hooks):
        optional, since polling alone finds every change (later)."""
        variable = secret_variable(self.forge.name)
        if os.environ.get(variable):
            return Finding("webhook secret", True, False, f"{variable} is set")
        return Finding(
            "webhook secret",
            False,
            False,
            f"{variable} is not set: webhooks are refused, polling alone finds changes",
            f"set {variable} where `tireless web` runs, and the same secret in the forge's webhook",
        )


def _message(answer: Response) -> str:
    """The forge's own `message`, quoted briefly (`: ...`), or ""."""
    try:
        data = decode_json(answer.body, answer.headers.get("content-type", ""), answer.where)
    except ReadFailed:
        return ""
    message = data.get("message") if isinstance(data, dict) else None
    return f": {message:.200}" if isinstance(message, str) and message else ""


def _login(answer: Response) -> str:
    try:
        data = decode_json(answer.body, answer.headers.get("content-type", ""), answer.where)
    except ReadFailed:
        return "its account could not be read"
    login = data.get("login") if isinstance(data, dict) else None
    return f"account {login}" if isinstance(login, str) else "its account has no login"


def _counted(answer: Response) -> str:
    """` (N in all)` from Gitea's X-Total-Count, or ""."""
    total = answer.headers.get("x-total-count", "").strip()
    return f" ({total} in all)" if total.isdigit() else ""


def _created(answer: Response | str, key: str) -> int | None:
    if isinstance(answer, str) or not 200 <= answer.status < 300:
        return None
    try:
        data = decode_json(answer.body, answer.headers.get("content-type", ""), answer.where)
    except ReadFailed:
        return None
    value = data.get(key) if isinstance(data, dict) else None
    return value if type(value) is int else None


def _created_id(answer: Response | str) -> str | None:
    made = _created(answer, "id")
    return None if made is None else str(made)


def _created_number(answer: Response | str) -> int | None:
    return _created(answer, "number")


def failed_required(findings: Sequence[Finding]) -> bool:
    """Whether something tireless needs is missing (the command exits 1)."""
    return any(f.required and not f.ok for f in findings)
