"""A stand-in forge registered and tracked through the CLI, as an operator would, and its token."""

from __future__ import annotations

from datetime import timedelta

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import cli_json
from tireless.forge.client import RateLimited

TOKEN = "tok-real-4c1d9e"


def registered(db: Database, forge: StandinForge, name: str, *repos: str) -> dict[str, str]:
    """The stand-in registered as `name` with `repos` of acme tracked; its token variable."""
    cli_json(db.url, "forge", "add", name, "--kind", forge.flavour, "--url", forge.url)
    for repo in repos:
        forge.create_repo("acme", repo)
        cli_json(db.url, "track", name, "acme", repo)
    return {f"TIRELESS_TOKEN_{name.upper()}": TOKEN}


def wait_of(limited: RateLimited) -> timedelta:
    assert limited.retry_after is not None
    return limited.retry_after
