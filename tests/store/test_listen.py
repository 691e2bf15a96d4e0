"""listen(): an error inside the block is the error the caller sees, even when the connection died
with it and the clean-up (UNLISTEN) cannot run."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import Database
from tireless import AsyncJobStore, JobStore

LISTENER = (
    "SELECT pid FROM pg_stat_activity"
    " WHERE query = 'LISTEN tireless_work' AND datname = current_database()"
)


def kill_the_listener(db: Database) -> None:
    pid = db.scalar(LISTENER)
    assert pid is not None
    assert db.scalar("SELECT pg_terminate_backend(%(pid)s, 10000)", {"pid": pid})


def fail_while_listening(db: Database, store: JobStore) -> None:
    with store.listen(["cc"]):
        kill_the_listener(db)
        raise LookupError("the block's own error")


async def fail_while_listening_async(db: Database) -> None:
    async with AsyncJobStore(db.conninfo) as store, store.listen(["cc"]):
        kill_the_listener(db)
        raise LookupError("the block's own error")


def test_an_error_in_the_block_is_not_replaced_by_the_failed_unlisten(
    db: Database, store: JobStore
) -> None:
    with pytest.raises(LookupError, match="the block's own error"):
        fail_while_listening(db, store)


def test_the_async_listen_keeps_the_blocks_error_too(db: Database) -> None:
    with pytest.raises(LookupError, match="the block's own error"):
        asyncio.run(fail_while_listening_async(db))
