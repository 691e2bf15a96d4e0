"""`tireless web` as a command: it refuses a bad --bind, and `start_dashboard` (what `make run`
calls) leaves a real server running in the background until it is stopped by its pid."""

from __future__ import annotations

import os
import signal
import urllib.request
from pathlib import Path

from tests.conftest import Database
from tests.helpers import tireless_cli
from tireless.web.launch import start_dashboard


def test_a_bad_bind_is_a_usage_error(db: Database) -> None:
    result = tireless_cli(db.url, "web", "--bind", "localhost")
    assert result.returncode == 2
    assert "--bind takes HOST:PORT" in result.stderr


def test_start_dashboard_serves_in_the_background_until_stopped(
    db: Database, tmp_path: Path
) -> None:
    running = start_dashboard(db.url, tmp_path / "web.log", bind="127.0.0.1:0")
    try:
        assert running.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(running.url, timeout=30) as page:
            assert page.status == 200
            assert "Lanes" in page.read().decode()
        with urllib.request.urlopen(running.url + "metrics", timeout=30) as metrics:
            assert b"# TYPE tireless_jobs gauge" in metrics.read()
    finally:
        os.kill(running.pid, signal.SIGTERM)
        os.waitpid(running.pid, 0)
    assert db.url not in (tmp_path / "web.log").read_text()


def test_a_bad_header_timeout_is_a_usage_error(db: Database) -> None:
    for seconds in ("0", "-1", "nan", "86400"):
        result = tireless_cli(db.url, "web", "--header-timeout", seconds)
        assert result.returncode == 2, seconds
        assert "--header-timeout" in result.stderr
