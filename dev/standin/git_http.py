"""Git over HTTP at the clone URL tireless computes (`{url}/{owner}/{repo}.git`), through git's own
`git http-backend` (dev.standin.git_backend): each forge's way of taking a token, branch
protection, and what tests set and read of the repositories."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs

from dev.standin.faults import ForgeFaults
from dev.standin.git_backend import SERVICES, CgiAnswer, GitCommit
from dev.standin.records import MIRROR_LOGIN, Request, _granted


class GitOverHttp(ForgeFaults):
    """The stand-in's git over HTTP and its repositories' public side."""

    def seed_git(
        self,
        owner: str,
        repo: str,
        files: dict[str, str],
        commits: int = 1,
        *,
        branch: str | None = None,
        message: str = "seed",
    ) -> str:
        """Commits in the repository's git (made, with the repository, when missing): the first
        writes `files`, each further one appends a line to every file; on `branch` (default: the
        default branch) on top of its head. Returns the new head commit."""
        self.create_repo(owner, repo)
        return self.git.seed(owner, repo, files, commits=commits, branch=branch, message=message)

    def branch_head(self, owner: str, repo: str, branch: str) -> str | None:
        """The branch's head commit in the stand-in's git, None when there is no such branch."""
        return self.git.branch_head(owner, repo, branch)

    def branches(self, owner: str, repo: str) -> dict[str, str]:
        """Every branch of the repository's git and its head commit."""
        return self.git.branches(owner, repo)

    def commits_of(self, owner: str, repo: str, ref: str) -> list[GitCommit]:
        """The commits reachable from a branch (or any ref or commit), newest first."""
        return self.git.commits(owner, repo, ref)

    def file_at(self, owner: str, repo: str, ref: str, path: str) -> str | None:
        """A file's text at a branch or commit, None when it has no such file."""
        return self.git.file_at(owner, repo, ref, path)

    def protect_branch(self, owner: str, repo: str, branch: str) -> None:
        """A push that updates or deletes `branch` is refused, in the forge's words, by git
        itself (a pre-receive hook in the bare repository)."""
        self.create_repo(owner, repo)
        self.git.protect(owner, repo, branch)

    def unprotect_branch(self, owner: str, repo: str, branch: str) -> None:
        self.git.unprotect(owner, repo, branch)

    def set_default_branch(self, owner: str, repo: str, branch: str) -> None:
        """The repository's default branch (its git HEAD, and `default_branch` in the API)."""
        self.create_repo(owner, repo)
        self.git.set_default_branch(owner, repo, branch)

    def _git_token_refusal(
        self, owner: str, repo: str, service: str, query: str
    ) -> CgiAnswer | None:
        """A git fetch needs the token to read the repository, a push to write it, in the
        forge's scope for git (`api.git_scope`), refused in its words (`api.git_refused`)."""
        if self.scopes is None:
            return None
        pushing = service == "git-receive-pack" or "service=git-receive-pack" in query
        level = "write" if pushing else "read"
        if _granted(self.scopes, self.api.git_scope, level):
            return None
        return self.api.git_refused(owner, repo)

    # Git over HTTP (issue 33)
    def git_route(self, path: str) -> tuple[str, str, str] | None:
        """(owner, repo, service) of a smart-HTTP path `/{owner}/{repo}.git/{service}`, the
        clone URL's own paths; None for the API's."""
        parts = path.strip("/").split("/")
        if len(parts) < 3 or not parts[1].endswith(".git") or len(parts[1]) <= 4:
            return None
        service = "/".join(parts[2:])
        if service not in SERVICES:
            return None
        return parts[0], parts[1][: -len(".git")], service

    def _git_account(self, authorization: str | None) -> str | None:
        """The account whose token a git request carries, None when refused. Both forges take
        the token over HTTP Basic, each in its own places (`api.git_tokens`); whether it is
        accepted is `token_accepted`'s to say."""
        user, password = "", ""
        if authorization and authorization[:6].lower() == "basic ":
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                return None
            user, _, password = decoded.partition(":")
        if self.token is None:  # the stand-in takes any token, or none
            return user or MIRROR_LOGIN
        if any(self.token_accepted(token) for token in self.api.git_tokens(user, password)):
            return MIRROR_LOGIN
        return None

    def git_answer(
        self,
        owner: str,
        repo: str,
        service: str,
        method: str,
        query: str,
        headers: dict[str, str],
        body: bytes,
    ) -> CgiAnswer:
        """One smart-HTTP request: the credentials checked, then git-http-backend."""
        account = self._git_account(headers.get("authorization"))
        if self.app is not None:  # a GitHub App's installation token (dev.standin.apps)
            account = self.app.git_account(headers.get("authorization"), f"{service}?{query}")
        with self._lock:
            asked = {k: v[-1] for k, v in parse_qs(query).items()}
            path = f"/{owner}/{repo}.git/{service}"
            self.git_requests.append(Request(method, path, asked, account is not None))
            known = (owner, repo) in self._repos
        if account is None:
            # A fetch or push without the right credentials: 401 and a Basic challenge in the
            # forge's realm (`api.realm`), so git asks its credential helper or GIT_ASKPASS.
            challenge = f'Basic realm="{self.api.realm}"'
            return CgiAnswer(
                401,
                {"WWW-Authenticate": challenge, "Content-Type": "text/plain"},
                b"Unauthorized\n",
            )
        refused = self._git_token_refusal(owner, repo, service, query)
        if refused is not None:
            return refused
        if not known:
            return CgiAnswer(404, {"Content-Type": "text/plain"}, b"Repository not found\n")
        with self._lock:  # (reentrant) two first requests at once initialise it once
            if not self.git.exists(owner, repo):
                # A repository made with its issues and no git yet: initialised with a README,
                # as the forges' "Initialize repository" (Gitea's and GitHub's auto_init) does.
                self.seed_git(owner, repo, {"README.md": f"# {repo}\n"}, message="Initial commit")
        return self.git.serve(
            owner,
            repo,
            service,
            method=method,
            query=query,
            content_type=headers.get("content-type"),
            body=body,
            remote_user=account,
            content_encoding=headers.get("content-encoding"),
            git_protocol=headers.get("git-protocol"),
        )
