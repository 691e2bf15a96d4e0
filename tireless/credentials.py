"""The secrets of tireless's processes: where they are read from, which variables hold them, and
keeping them out of the environment block that other processes of the same user can read.

A process's environment block (`/proc/PID/environ`) is the one it was started with: removing a
variable from `os.environ` afterwards does not change what `/proc` shows. So `tireless work`,
started with a secret in its environment, executes itself again at once with those variables
moved into an inherited pipe (`TIRELESS_SECRETS_FD` names it), reads them back into its own
environment (which `/proc` does not show) and closes the pipe. The documented setup needs none of
this: the secrets are in files only the worker's user reads (`DATABASE_URL_FILE`,
`TIRELESS_TOKEN_<NAME>_FILE`, a pgpass file), and the agent runs as another Unix user
(`--agent-user`), which can read neither the files nor the worker's `/proc`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

SECRETS_FD = "TIRELESS_SECRETS_FD"
"""The descriptor of the pipe `tireless work`, executed again, reads its moved variables from."""

CREDENTIAL_VARIABLE = re.compile(
    r"DATABASE_URL|PG[A-Z_]*|TIRELESS_[A-Z0-9_]*(TOKEN|SECRET|PASSWORD)[A-Z0-9_]*"
    r"|TIRELESS_APP_KEY_[A-Z0-9_]*"
)
"""Variables that hold a secret, or tell libpq where to find one, moved out of the worker's
environment block: DATABASE_URL, every libpq variable (PGPASSWORD, PGPASSFILE, PGSERVICE, ...),
forge tokens (TIRELESS_TOKEN_<NAME>), webhook secrets (TIRELESS_WEBHOOK_SECRET_<NAME>), GitHub
Apps' private keys (TIRELESS_APP_KEY_<NAME>) and any other TIRELESS_ token, secret or password. Their `_FILE` forms hold a path, not a secret."""

SECRET_VARIABLE = re.compile(
    r"DATABASE_URL|PGPASSWORD|TIRELESS_[A-Z0-9_]*(TOKEN|SECRET|PASSWORD)[A-Z0-9_]*"
    r"|TIRELESS_APP_KEY_[A-Z0-9_]*"
)
"""The credential variables whose value is itself a secret, masked wherever it appears (not
PGHOST or PGUSER: masking a host name or a port would mask ordinary text)."""

PIPE_CAPACITY = 65536
"""Linux's default pipe capacity: the moved variables are written before anyone reads them."""


def is_credential_variable(name: str) -> bool:
    return bool(CREDENTIAL_VARIABLE.fullmatch(name)) and not name.endswith("_FILE")


def secret_from_environment(variable: str) -> str | None:
    """The secret in `variable`, else in the file `variable_FILE` names (its content without the
    final line break); None when neither is set or the value is empty. A file that cannot be read
    is an OSError naming the variable as well as the file."""
    if value := os.environ.get(variable):
        return value
    if path := os.environ.get(variable + "_FILE"):
        try:
            return Path(path).read_text().rstrip("\r\n") or None
        except OSError as error:
            why = f"{variable}_FILE names a file that cannot be read: {error.strerror}"
            raise OSError(error.errno, why, path) from error
    return None


def token_variable(forge: str) -> str:
    """`TIRELESS_TOKEN_<NAME>`: the forge name upper-cased, every other character than a letter or
    digit as `_` (DESIGN.md)."""
    return "TIRELESS_TOKEN_" + re.sub(r"[^A-Za-z0-9]", "_", forge).upper()


def secret_variable(forge: str) -> str:
    """`TIRELESS_WEBHOOK_SECRET_<NAME>`: the forge's webhook secret, named as its token is (the
    dashboard checks the forge's webhooks with it; `tireless forge check` says whether it is set)."""
    return "TIRELESS_WEBHOOK_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", forge).upper()


def app_key_variable(forge: str) -> str:
    """`TIRELESS_APP_KEY_<NAME>`: the PEM of the forge's GitHub App key (or, as `_FILE`, its
    path), named as the forge's token is."""
    return "TIRELESS_APP_KEY_" + re.sub(r"[^A-Za-z0-9]", "_", forge).upper()


def app_key_for(forge: str, registered: str | None) -> tuple[bytes, str]:
    """The PEM of the forge's GitHub App key and where it was read from: TIRELESS_APP_KEY_<NAME>,
    else the file TIRELESS_APP_KEY_<NAME>_FILE names, else the file the registry names
    (`forge add --app-key-file`; the environment wins: each host may keep the key elsewhere).
    LookupError when none is set; an OSError naming the variable or the file when it cannot be
    read. The key itself is never in a message."""
    variable = app_key_variable(forge)
    if pem := secret_from_environment(variable):
        source = variable if os.environ.get(variable) else f"{variable}_FILE"
        return pem.encode(), source
    if registered is None:
        raise LookupError(
            f"forge {forge}: no key for its GitHub App: set {variable}_FILE (or {variable}), or"
            " give `tireless forge add --app-key-file`"
        )
    try:
        return Path(registered).read_bytes(), registered
    except OSError as error:
        why = f"forge {forge}: the App's key file cannot be read: {error.strerror}"
        raise OSError(error.errno, why, registered) from error


def is_token_variable(name: str) -> bool:
    """Whether an environment variable may hold a forge token (kept from every agent)."""
    return name.startswith("TIRELESS_TOKEN_")


def token_for(forge: str) -> str | None:
    """The forge's token from the environment, else from the file TIRELESS_TOKEN_<NAME>_FILE
    names; None (unauthenticated reads) when neither is set or the token is empty. The poller
    reads the forge with it, and the runner's own git fetches and pushes with it."""
    return secret_from_environment(token_variable(forge))


def without_database_flag(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """The command line without `--database URL` (the world can read a command line:
    /proc/PID/cmdline), and that URL."""
    kept: list[str] = []
    url: str | None = None
    arguments = iter(argv)
    for argument in arguments:
        if argument == "--":
            kept += [argument, *arguments]
        elif argument == "--database":
            url = next(arguments, None)
        elif argument.startswith("--database="):
            url = argument.removeprefix("--database=")
        else:
            kept.append(argument)
    return kept, url


def keep_secrets_out_of_environment_block(arguments: Sequence[str]) -> None:
    """For `tireless ARGUMENTS` (this process's command line): when its environment block or
    command line holds a secret, execute it again (same process id) with the secret variables and
    a `--database URL` moved into an inherited pipe, and never return. In the process executed
    again, read them back into the process's own environment and close the pipe."""
    if (descriptor := os.environ.pop(SECRETS_FD, None)) is not None:
        with os.fdopen(int(descriptor), "rb") as pipe:
            os.environ.update(json.loads(pipe.read()))
        return
    kept, url = without_database_flag(arguments)
    moved = {name: value for name, value in os.environ.items() if is_credential_variable(name)}
    if url is not None:
        moved["DATABASE_URL"] = url
    if not moved:
        return
    payload = json.dumps(moved).encode()
    if len(payload) >= PIPE_CAPACITY:
        raise OSError(f"the secret variables take {len(payload)} bytes; at most {PIPE_CAPACITY}")
    reader, writer = os.pipe()
    os.write(writer, payload)
    os.close(writer)
    os.set_inheritable(reader, True)
    environment = {k: v for k, v in os.environ.items() if k not in moved}
    sys.stdout.flush()
    sys.stderr.flush()
    command = [sys.executable, "-m", "tireless", *kept]
    os.execve(sys.executable, command, environment | {SECRETS_FD: str(reader)})


def pgpass_passwords(path: Path) -> Iterator[str]:
    """The passwords of a pgpass file (host:port:database:user:password, `\\:` and `\\\\`
    escaped); nothing when it cannot be read."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return
    for line in lines:
        if line.strip() and not line.lstrip().startswith("#"):
            fields = re.split(r"(?<!\\):", line, maxsplit=4)
            if len(fields) == 5:
                yield fields[4].replace("\\:", ":").replace("\\\\", "\\")


def known_secrets(conninfo: str) -> list[str]:
    """Every secret value this process can know: the database URL and its password, the
    passwords of the pgpass file libpq would read, and every secret variable's value (or its
    `_FILE`'s content)."""
    values = [conninfo, str(conninfo_to_dict(conninfo).get("password") or "")]
    passfile = os.environ.get("PGPASSFILE") or str(Path.home() / ".pgpass")
    values += pgpass_passwords(Path(passfile))
    names = {name.removesuffix("_FILE") for name in os.environ}
    values += [
        secret_from_environment(name) or "" for name in names if SECRET_VARIABLE.fullmatch(name)
    ]
    return [value for value in values if value]
