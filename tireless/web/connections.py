"""How `tireless web` holds its connections: uvicorn's h11 protocol with a header deadline,
which uvicorn lacks (its keep-alive timer stops at the first byte, so a client that trickles
its headers held a connection forever), and a bound on the connections still waiting for their
headers: past it, the one that has waited longest is closed. A crowd of half-sent requests
therefore never keeps a whole request from being answered."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0  # seconds from connecting (or the last answer) to a whole request header
MOST_WAITING = 64  # connections waiting for their headers at once
MAX_HEADER_BYTES = 16 * 1024  # the request line and headers (h11's incomplete-event limit)
MAX_CONNECTIONS = 256  # past it, uvicorn answers 503
KEEP_ALIVE = 5  # seconds an idle connection stays open after an answer


class DeadlineH11Protocol(H11Protocol):
    """H11Protocol that closes a connection whose request header is not whole in time."""

    header_timeout: ClassVar[float] = HEADER_TIMEOUT
    waiting: ClassVar[OrderedDict[DeadlineH11Protocol, None]]
    deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.await_header()

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop_waiting()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the header is in (or the connection is over)
            self.stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.await_header()  # the next request of a kept-alive connection

    def await_header(self) -> None:
        self.stop_waiting()
        self.waiting[self] = None
        self.deadline = self.loop.call_later(self.header_timeout, self.cut_off)
        while len(self.waiting) > MOST_WAITING:
            next(iter(self.waiting)).cut_off()

    def stop_waiting(self) -> None:
        self.waiting.pop(self, None)
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def cut_off(self) -> None:
        self.stop_waiting()
        self.transport.close()


def deadline_protocol(header_timeout: float) -> type[DeadlineH11Protocol]:
    """The protocol class of one server: its own deadline and its own waiting list."""
    return type(
        "ServerH11Protocol",
        (DeadlineH11Protocol,),
        {"header_timeout": header_timeout, "waiting": OrderedDict()},
    )
