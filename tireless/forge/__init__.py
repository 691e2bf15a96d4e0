"""Forge clients: read a forge's issues over its HTTP API (tireless.forge.client is the interface,
gitea.py and github.py its two API families, poll.py the loop that hands what they read to the
store)."""

from __future__ import annotations

import re

from tireless.forge.client import ForgeClient
from tireless.forge.gitea import GiteaClient
from tireless.forge.github import GitHubClient
from tireless.forge.http import MAX_BYTES, TIMEOUT
from tireless.runner.credentials import secret_from_environment

KINDS = ("gitea", "forgejo", "github")


def token_variable(forge: str) -> str:
    """`TIRELESS_TOKEN_<NAME>`: the forge name upper-cased, every other character than a letter or
    digit as `_` (DESIGN.md)."""
    return "TIRELESS_TOKEN_" + re.sub(r"[^A-Za-z0-9]", "_", forge).upper()


def is_token_variable(name: str) -> bool:
    """Whether an environment variable may hold a forge token (kept from every agent)."""
    return name.startswith("TIRELESS_TOKEN_")


def token_for(forge: str) -> str | None:
    """The forge's token from the environment, else from the file TIRELESS_TOKEN_<NAME>_FILE
    names; None (unauthenticated reads) when neither is set or the token is empty."""
    return secret_from_environment(token_variable(forge))


def client_for(
    kind: str,
    base_url: str,
    token: str | None,
    *,
    timeout: float = TIMEOUT,
    max_bytes: int = MAX_BYTES,
) -> ForgeClient:
    """The client of a registered forge's kind."""
    if kind in ("gitea", "forgejo"):
        return GiteaClient(base_url, token, timeout=timeout, max_bytes=max_bytes)
    if kind == "github":
        return GitHubClient(base_url, token, timeout=timeout, max_bytes=max_bytes)
    raise ValueError(f"unknown forge kind {kind!r}: expected one of {', '.join(KINDS)}")
