"""The agent's network for one job: the egress proxy and the upstream gateways the runner serves
while COMMAND runs, the variables that point COMMAND at them, and what they saw
(docs/runners.md, "The agent's network")."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from tireless.runner import relay
from tireless.runner.egress import AllowEntry, EgressProxy, NetworkReport
from tireless.runner.gateway import Upstream, UpstreamGateway
from tireless.runner.ledger import Ledger
from tireless.runner.sandbox import RELAY, Isolation

PROXY_PORT = 3128
"""The proxy's port on the loopback of COMMAND's network namespace."""
FIRST_UPSTREAM_PORT = 4000
"""The first upstream gateway's port there; the next ones follow, in the order given."""
NO_PROXY = "127.0.0.1,localhost"
"""What COMMAND reaches without the proxy: the gateways, on its loopback."""


class AgentNetwork:
    """A lane's allowlist (`allow`, even empty) made real: a private directory of unix sockets
    (the proxy's, one per upstream gateway) and the relay's file, which the sandbox shows COMMAND
    behind the relay (`isolation`), run by `python`. A lane without a list gets none of this, and
    no upstream: a gateway on the host's loopback would lend its secret to every local user."""

    def __init__(
        self,
        allow: Sequence[AllowEntry],
        upstreams: Sequence[Upstream],
        python: str,
        ledger: Ledger | None = None,
    ) -> None:
        self._allow = allow
        self._ledger = ledger
        self._upstreams = list(upstreams)
        self._python = python
        self._proxy: EgressProxy | None = None
        self._gateways: list[UpstreamGateway] = []
        self._directory: Path | None = None
        self.isolation: Isolation | None = None

    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop()

    def _start(self) -> None:
        # A directory no other user may list, holding one whose name is unguessable: the agent
        # of another job (the unshare sandbox shows it the host's /tmp) finds neither.
        self._directory = Path(tempfile.mkdtemp(prefix="tireless-net-"))
        self._directory.chmod(0o711)
        sockets = self._directory / secrets.token_hex(8)
        sockets.mkdir()
        sockets.chmod(0o711)
        shutil.copyfile(relay.__file__, sockets / RELAY)
        (sockets / RELAY).chmod(0o644)
        self._proxy = EgressProxy(self._allow, str(sockets / "proxy.sock")).start()
        ports = [(PROXY_PORT, "proxy.sock")]
        for offset, upstream in enumerate(self._upstreams):
            name = f"upstream-{upstream.name}.sock"
            self._gateways.append(
                UpstreamGateway(upstream, str(sockets / name), self._ledger).start()
            )
            ports.append((FIRST_UPSTREAM_PORT + offset, name))
        self.isolation = Isolation(sockets, tuple(ports), self._python)

    def _stop(self) -> None:
        """Every connection closed, nothing of the job's network left on disk."""
        if self._proxy is not None:
            self._proxy.stop()
        for gateway in self._gateways:
            gateway.stop()
        if self._directory is not None:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(self._directory)

    def environment(self) -> dict[str, str]:
        """COMMAND's variables: the proxy (with an allowlist), and each upstream's base URL."""
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        env = dict.fromkeys(("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"), proxy)
        env["NO_PROXY"] = env["no_proxy"] = NO_PROXY
        for offset, gateway in enumerate(self._gateways):
            env[gateway.upstream.variable] = f"http://127.0.0.1:{FIRST_UPSTREAM_PORT + offset}"
        return env

    def rows(self) -> list[dict[str, Any]]:
        """What `tireless.record_job_network` keeps: the proxy's hosts and refusals, and each
        gateway's upstream host (allowed: the runner's own configuration)."""
        report = self._proxy.report() if self._proxy is not None else NetworkReport([], [])
        report.hosts += [gateway.report() for gateway in self._gateways]
        return report.as_json()
