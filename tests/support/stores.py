"""The async store behind a blocking facade, so one test body runs against both stores."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Coroutine
from typing import Any


class Blocking:
    """Any object with async methods, driven from sync code: each call runs on `loop`."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target = target
        self._loop = loop

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    def wrap(self, value: Any) -> Any:
        if hasattr(value, "__aenter__"):
            return BlockingContext(value, self)
        public = (name for name in dir(value) if not name.startswith("_"))
        if any(inspect.iscoroutinefunction(getattr(value, name, None)) for name in public):
            return Blocking(value, self._loop)
        return value

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            return self.wrap(self.run(result) if inspect.iscoroutine(result) else result)

        return call


class BlockingContext:
    """An async context manager used with `with`; its attributes read through."""

    def __init__(self, manager: Any, blocking: Blocking) -> None:
        self._manager = manager
        self._blocking = blocking

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._manager, name)  # say a lease's `finished`
        if not inspect.iscoroutinefunction(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:  # say a lease's `finish`
            return self._blocking.run(value(*args, **kwargs))

        return call

    def __enter__(self) -> Any:
        return self._blocking.wrap(self._blocking.run(self._manager.__aenter__()))

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> bool:
        return bool(self._blocking.run(self._manager.__aexit__(kind, error, tb)))
