"""The runner tests' fixtures: a test's own working directory for its workers, and a directory any
user may write."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def in_the_tests_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker runs in the test's own directory, COMMAND's working directory: the sandbox
    (bwrap: a private /tmp) leaves it writable, so the files an agent leaves for the test are
    where both sides see them."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory any user may read and write (the agent user's dump goes there)."""
    path = Path(tempfile.mkdtemp(prefix="tireless-agent-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)
