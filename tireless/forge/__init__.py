"""Forge clients: read a forge's issues over its HTTP API (tireless.forge.client is the interface,
gitea.py and github.py its two API families, poll.py the loop that hands what they read to the
store)."""

from __future__ import annotations

from tireless.credentials import is_token_variable, token_for, token_variable
from tireless.forge.app_auth import GitHubApp
from tireless.forge.client import ForgeClient
from tireless.forge.gitea import GiteaClient
from tireless.forge.github import GitHubClient
from tireless.forge.http import MAX_BYTES, TIMEOUT

__all__ = ["KINDS", "client_for", "is_token_variable", "token_for", "token_variable"]

KINDS = ("gitea", "forgejo", "github")


def client_for(
    kind: str,
    base_url: str,
    token: str | None,
    *,
    timeout: float = TIMEOUT,
    max_bytes: int = MAX_BYTES,
    app: GitHubApp | None = None,
) -> ForgeClient:
    """The client of a registered forge's kind; a GitHub one with `app` authenticates as its
    installations (tireless.forge.app_auth), `token` unused."""
    if kind in ("gitea", "forgejo"):
        return GiteaClient(base_url, token, timeout=timeout, max_bytes=max_bytes)
    if kind == "github":
        return GitHubClient(base_url, token, timeout=timeout, max_bytes=max_bytes, app=app)
    raise ValueError(f"unknown forge kind {kind!r}: expected one of {', '.join(KINDS)}")
