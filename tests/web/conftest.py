"""The dashboard tests' fixtures: apps over a chosen connection, as an admin, and a plain client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import Database
from tests.support.web import (
    Client,
    browser,
)
from tireless.web.app import create_app


@pytest.fixture
def connect_as(db: Database) -> Iterator[Client]:
    """connect_as(conninfo) -> a TestClient of an app over that connection (closed at the end)."""
    clients: list[TestClient] = []

    def make(conninfo: str) -> TestClient:
        client = browser(create_app(conninfo))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def admin(db: Database, connect_as: Client) -> TestClient:
    return connect_as(db.conninfo)


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    with browser(create_app(db.conninfo)) as test_client:
        yield test_client
