"""A worker's own record in the store (tireless.worker_state), for the workers page: it says it
started, beats while it runs (a thread, every third of its lease, whether it holds a job or
not) and says how it stopped when it ends cleanly. A worker that dies without a word (SIGKILL,
its host gone) shows lost once its last beat's lease lapses."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

import psycopg

from tireless.errors import TirelessError
from tireless.runner.config import WorkConfig
from tireless.store import JobStore

log = logging.getLogger("tireless.work")


class Presence:
    """`with Presence(store, config) as presence:` the worker registered and beating until the
    block ends; `presence.stopped(how)` says it stopped (a block left without it says nothing:
    the worker is lost once its beat lapses). Beats that fail (the database away) are retried at
    the next beat, and do not stop the worker."""

    def __init__(self, store: JobStore, config: WorkConfig) -> None:
        self.store = store
        self.config = config
        self._every = max(config.lease.total_seconds() / 3, 0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="presence")
        self._failing = False

    def __enter__(self) -> Presence:
        self._start()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def stopped(self, how: str) -> None:
        """Say how the worker stopped (its record then says stopped, not lost); no more beats."""
        self._stop.set()
        self._thread.join()
        try:
            self.store.worker_stopped(self.config.name, how)
        except (psycopg.Error, TirelessError) as error:
            log.warning("%s: could not record that it stopped: %s", self.config.name, error)

    def _start(self) -> None:
        self.store.worker_started(self.config.name, self.config.lanes, self.config.lease)

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            try:
                if not self.store.worker_beat(self.config.name, self.config.lease):
                    self._start()  # no record that runs (a store restored, a namesake stopped)
            except (psycopg.Error, TirelessError) as error:
                if not self._failing:  # one line per outage
                    log.info("%s: its beat is not recorded: %s", self.config.name, error)
                self._failing = True
                continue
            self._failing = False
