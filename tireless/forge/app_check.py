"""`tireless forge check` of a forge registered with a GitHub App: the App itself (GET /app with
its JWT), and for each repository tried the owner's installation and the permissions its token
answered with, against what tireless needs (app_auth.NEEDED_PERMISSIONS), each fix naming the
App's settings page and the permission."""

from __future__ import annotations

from collections.abc import Sequence

from tireless.forge import client_for
from tireless.forge.app_auth import NEEDED_PERMISSIONS, GitHubApp, NoInstallation
from tireless.forge.check import Checker, Finding, Target
from tireless.forge.client import ForgeClient, ReadFailed
from tireless.forge.http import TIMEOUT
from tireless.models import Forge

LEVELS = {"read": 1, "write": 2, "admin": 3}
DELIVERY_ONLY = ("contents",)
"""Needed only by runners that deliver (`--deliver`): pushes of the branch."""


def check_app_forge(
    forge: Forge,
    web_root: str,
    repos: Sequence[Target],
    *,
    app: GitHubApp,
    write: bool = False,
    deliver: bool = False,
    timeout: float = TIMEOUT,
) -> list[Finding]:
    """tireless.forge.check.check_forge for a forge of a GitHub App: the App's findings stand
    for the token's, and every probe after them is sent with the installations' tokens."""
    client = client_for(forge.kind, forge.base_url, None, timeout=timeout, app=app)
    try:
        return AppChecker(forge, web_root, client, timeout, app, repos, deliver).run(
            repos, write, deliver
        )
    finally:
        client.close()


class AppChecker(Checker):
    """The probes of a forge of a GitHub App: the App and its installations instead of a token."""

    def __init__(
        self,
        forge: Forge,
        web_root: str,
        client: ForgeClient,
        timeout: float,
        app: GitHubApp,
        repos: Sequence[Target],
        deliver: bool,
    ) -> None:
        super().__init__(forge, web_root, client, True, timeout)
        self.app, self.repos, self.deliver = app, repos, deliver

    def token(self) -> list[Finding]:
        return app_findings(self.app, self.repos, self.deliver)


def app_findings(app: GitHubApp, repos: Sequence[Target], deliver: bool) -> list[Finding]:
    """The App's findings: "app" (its JWT taken, its name), then per owner "installation OWNER"
    and "permissions OWNER"; the App failing is the only finding (the others would fail alike)."""
    try:
        described = app.app()
    except ReadFailed as failure:
        fix = (
            f"check the App id ({app.app_id}) and the key ({app.key_source}): GitHub's App settings"
            " page (github.com/settings/apps/SLUG) shows the id and makes a new private key"
        )
        return [Finding("app", False, True, str(failure), fix)]
    slug = str(described["slug"])
    settings = f"{described.get('html_url') or 'https://github.com/apps/' + slug}"
    found = [
        Finding("app", True, True, f"GitHub App {described.get('name', slug)!r} ({slug}[bot])")
    ]
    seen: set[str] = set()
    for target in repos:
        if target.owner.lower() in seen:
            continue
        seen.add(target.owner.lower())
        found += _installation(app, target, settings, deliver)
    return found


def _installation(app: GitHubApp, target: Target, settings: str, deliver: bool) -> list[Finding]:
    owner, repo = target.owner, target.repo
    try:
        installation = app.installation(owner, repo)
        granted = app.granted(owner, repo)
    except NoInstallation as missing:
        fix = f"install the App on {owner}: {settings}/installations/new"
        return [Finding(f"installation {owner}", False, True, str(missing), fix)]
    except ReadFailed as failure:
        return [Finding(f"installation {owner}", False, True, str(failure))]
    found = [
        Finding(
            f"installation {owner}",
            True,
            True,
            f"installation {installation.id} on {installation.account} ({owner}/{repo})",
        )
    ]
    short = [
        f"{name}: {level}"
        for name, level in NEEDED_PERMISSIONS.items()
        if (deliver or name not in DELIVERY_ONLY)
        and LEVELS.get(granted.get(name, ""), 0) < LEVELS[level]
    ]
    shown = ", ".join(f"{name}: {level}" for name, level in sorted(granted.items()))
    if short:
        fix = (
            f"give the App {', '.join(short)} on its settings page ({settings}, Permissions &"
            f" events), then have {owner} accept the new permissions"
        )
        return [*found, Finding(f"permissions {owner}", False, True, f"granted {shown}", fix)]
    return [*found, Finding(f"permissions {owner}", True, True, f"granted {shown}")]
