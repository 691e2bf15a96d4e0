"""Who the runner's commits are by (docs/runners.md, "The commit"): the forge's account that the
token belongs to, as the forge links a commit to it, read once per forge with GET /user; or the
operator's `tireless work --git-identity "NAME <EMAIL>"`.

- GitHub: the account's `login`, and its noreply address `<id>+<login>@users.noreply.github.com`
  (docs.github.com, "Setting your commit email address"; `users.noreply.<host>` on GitHub
  Enterprise Server), which GitHub links to the account whatever its e-mail settings.
- Gitea and Forgejo: the `login` and the `email` GET /api/v1/user answers (for the token's own
  account its primary address: services/convert/user.go toUser), else the placeholder Gitea itself
  gives a private address, `<login>@<NO_REPLY_ADDRESS>`, whose default is `noreply.<DOMAIN>`
  (models/user/user.go GetPlaceholderEmail; modules/setting/service.go).
- A forge registered with a GitHub App (`forge add --app-id`): the App's bot, `<slug>[bot]` from
  GET /app, and `<id>+<slug>[bot]@users.noreply.<host>`, the bot user's id from GET /users/<login>.
A token with no account (an installation token given as TIRELESS_TOKEN_<NAME>: GET /user is
refused "by integration") or a forge that cannot say gets tireless.git.BOT, said once in the log
with the fix.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from tireless.forge import client_for, token_for
from tireless.forge.app_auth import app_of
from tireless.forge.client import ReadFailed
from tireless.forge.validate import decode_json
from tireless.git import BOT, Identity
from tireless.models import Forge, ForgeKind

log = logging.getLogger(__name__)


def account_identity(kind: ForgeKind | str, base_url: str, account: object) -> Identity | None:
    """The commit identity of a forge's GET /user answer; None when it names no login."""
    if not isinstance(account, dict):
        return None
    login, number, email = account.get("login"), account.get("id"), account.get("email")
    if not isinstance(login, str) or not login:
        return None
    host = (urlsplit(base_url).hostname or "localhost").lower()
    if kind == "github":
        noreply = "github.com" if host in ("api.github.com", "github.com") else host
        user = f"{number}+{login}" if type(number) is int else login
        return Identity(login, f"{user}@users.noreply.{noreply}")
    if isinstance(email, str) and "@" in email and not any(c in email for c in "<> \n"):
        return Identity(login, email)
    return Identity(login, f"{login.lower()}@noreply.{host}")


def forge_identity(forge: Forge, timeout: float = 30.0) -> Identity:
    """The forge's account of the runner's token (TIRELESS_TOKEN_<NAME>); ReadFailed when the
    forge could not be asked (unreachable, a 5xx); LookupError saying why when it answered with
    no account (no token, a refusal, an App installation's token)."""
    if (app := app_of(forge.name)) is not None:  # the App's bot: GET /app, GET /users/<bot>
        return Identity(app.bot_login(), app.bot_email())
    token = token_for(forge.name)
    if token is None:
        raise LookupError(f"no token for forge {forge.name}")
    client = client_for(forge.kind, forge.base_url, token, timeout=timeout)
    try:
        answer = client.probe("GET", "user")
    finally:
        client.close()
    if answer.status != 200:
        raise LookupError(f"{answer.where}: HTTP {answer.status}")
    account = decode_json(answer.body, answer.headers.get("content-type", ""), answer.where)
    try:
        found = account_identity(forge.kind, forge.base_url, account)
    except ValueError as odd:  # a login with a control character in it
        raise LookupError(f"{answer.where}: {odd}") from None
    if found is None:
        raise LookupError(f"{answer.where}: no login")
    return found


class Identities:
    """The identity of each forge's commits, looked up once per forge (`forges` lists the store's
    forges) unless `given` (`--git-identity`) stands for all. A forge that could not be asked is
    asked again at its next commit; one that answered with no account gets BOT."""

    def __init__(
        self, given: Identity | None = None, forges: Callable[[], Sequence[Forge]] = tuple
    ) -> None:
        self.given = given
        self.forges = forges
        self._known: dict[str, Identity] = {}
        self._lock = threading.Lock()

    def of(self, forge_name: str) -> Identity:
        if self.given is not None:
            return self.given
        with self._lock:
            if forge_name in self._known:
                return self._known[forge_name]
        forge = next((f for f in self.forges() if f.name == forge_name), None)
        fix = "give `tireless work --git-identity 'NAME <EMAIL>'`"
        try:
            if forge is None:
                raise LookupError(f"forge {forge_name} is not registered")
            found = forge_identity(forge)
        except ReadFailed as failure:
            log.warning("forge %s: its account is unknown (%s): this commit is by %s", forge_name,
                        failure, BOT)  # fmt: skip
            return BOT
        except LookupError as why:
            log.warning("forge %s: the token's account is unknown (%s): its commits are by %s;"
                        " %s", forge_name, why, BOT, fix)  # fmt: skip
            found = BOT
        with self._lock:
            self._known[forge_name] = found
        log.info("forge %s: commits are by %s", forge_name, found)
        return found
