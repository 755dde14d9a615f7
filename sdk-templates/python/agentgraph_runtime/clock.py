"""Injected time. The retry loop reads ``now()`` for its budget and waits with ``sleep()``, so tests drive both with
a fake clock. The async client takes a ``Clock`` (``await sleep(ms)``, cancelled with its task), the sync client a
``SyncClock`` (blocking ``sleep(ms)``)."""
from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Milliseconds since the epoch."""

    async def sleep(self, ms: float) -> None:
        """Returns after ``ms``; cancelling the awaiting task ends it at once."""


class SyncClock(Protocol):
    def now(self) -> float:
        """Milliseconds since the epoch."""

    def sleep(self, ms: float) -> None:
        """Blocks for ``ms``."""


class SystemClock:
    def now(self) -> float:
        return time.time() * 1000

    async def sleep(self, ms: float) -> None:
        await asyncio.sleep(ms / 1000)


class SystemSyncClock:
    def now(self) -> float:
        return time.time() * 1000

    def sleep(self, ms: float) -> None:
        time.sleep(ms / 1000)


system_clock = SystemClock()
system_sync_clock = SystemSyncClock()
