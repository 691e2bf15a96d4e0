"""JobStore and AsyncJobStore open the pool they own the same way: with `with`/`async with`, with
`open()`, or at the first call; a pool passed in stays the caller's."""

from __future__ import annotations

import asyncio

from psycopg_pool import ConnectionPool

from tests.conftest import Database
from tests.helpers import FORGE, TEST_REPO
from tireless import AsyncJobStore, JobStore

FORGE_ENTRY = (FORGE, "gitea", "https://gitea.example.com")


def test_a_sync_store_opens_its_pool_at_the_first_call(db: Database) -> None:
    store = JobStore(db.conninfo)
    try:
        assert store.add_forge(*FORGE_ENTRY) is True
        assert store.track_repo(*TEST_REPO) is True
    finally:
        store.close()


def test_an_async_store_opens_its_pool_at_the_first_call(db: Database) -> None:
    async def first_call() -> bool:
        store = AsyncJobStore(db.conninfo)
        try:
            return await store.add_forge(*FORGE_ENTRY) and await store.track_repo(*TEST_REPO)
        finally:
            await store.close()

    assert asyncio.run(first_call()) is True


def test_a_pool_passed_in_is_opened_and_closed_by_its_owner(db: Database) -> None:
    with ConnectionPool(db.conninfo, min_size=1, max_size=1) as pool:
        with JobStore(pool) as store:
            assert store.add_forge(*FORGE_ENTRY) is True
            assert store.track_repo(*TEST_REPO) is True
        assert not pool.closed, "the store leaves the caller's pool open"
