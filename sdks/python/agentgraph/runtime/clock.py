"""Injected time and cancellation. The retry loop reads ``now()`` for its budget and waits with ``sleep()``, so
tests drive both with a fake clock. ``AbortController``/``AbortSignal`` mirror the web API the other SDKs use."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, List, Optional, Protocol

from .errors import AbortError


class AbortSignal:
    def __init__(self) -> None:
        self.aborted = False
        self.reason: Any = None
        self._listeners: List[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def throw_if_aborted(self) -> None:
        if self.aborted:
            raise AbortError(self.reason)


class AbortController:
    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        if self.signal.aborted:
            return
        self.signal.aborted = True
        self.signal.reason = reason
        for listener in list(self.signal._listeners):
            listener()


class Clock(Protocol):
    def now(self) -> float:
        """Milliseconds since the epoch."""

    async def sleep(self, ms: float, signal: Optional[AbortSignal] = None) -> None:
        """Returns after ``ms``; raises AbortError as soon as ``signal`` aborts."""


class SystemClock:
    def now(self) -> float:
        return time.time() * 1000

    async def sleep(self, ms: float, signal: Optional[AbortSignal] = None) -> None:
        if signal is not None:
            signal.throw_if_aborted()
        if signal is None:
            await asyncio.sleep(ms / 1000)
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future = loop.create_future()

        def on_abort() -> None:
            if not done.done():
                done.set_exception(AbortError(signal.reason))

        handle = loop.call_later(ms / 1000, lambda: done.done() or done.set_result(None))
        signal.add_listener(on_abort)
        try:
            await done
        finally:
            handle.cancel()
            signal.remove_listener(on_abort)


system_clock = SystemClock()
