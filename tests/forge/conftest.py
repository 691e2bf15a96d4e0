"""The forge tests' fixture: a stand-in forge of each API family, registered with the store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.support.forge import NAMES, TOKEN, Setup
from tireless import JobStore
from tireless.forge import token_variable


@pytest.fixture(params=["gitea", "github"])
def setup(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    flavour = request.param
    name = NAMES[flavour]
    monkeypatch.setenv(token_variable(name), TOKEN)
    with StandinForge(flavour, token=TOKEN, max_page_size=50) as forge:
        store.add_forge(name, flavour, forge.url)
        yield Setup(db, store, forge, name)
