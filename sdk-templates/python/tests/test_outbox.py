"""The outbox beyond the shared vectors: the SQLite file's durability pragma, the forward migration of a file made
by the first schema, poison after max_failed_deliveries (which failures count), revive resetting the counter, and
the dead-letter export."""
from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any, List

import pytest

from agentgraph_runtime import AgentGraphError
from agentgraph_runtime.outbox import MIGRATIONS, Outbox, SqliteOutboxStore, describe_failure
from conformance.harness import FakeClock

NOW = 1_700_000_000_000.0


def test_the_outbox_file_is_opened_with_synchronous_full(tmp_path: Path) -> None:
    store = SqliteOutboxStore.open(str(tmp_path / "outbox.db"))
    try:
        # 2 = FULL (0 OFF, 1 NORMAL, 3 EXTRA): a committed entry survives a power cut, not only a crash.
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


def test_a_file_made_by_the_first_schema_opens_and_keeps_its_entries(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("CREATE TABLE agentgraph_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for statement in MIGRATIONS[0].split(";"):
        old.execute(statement)
    old.execute("INSERT INTO agentgraph_schema VALUES ('outbox', 1)")
    old.execute(
        """INSERT INTO outbox_entries (id, room, operation, variables, idempotency_key, state, attempts,
             next_attempt_at, last_error_code, last_error_message, created_at, updated_at, expires_at,
             first_attempt_at)
           VALUES ('e-1', 'room-a', 'PostMessage', '{"body":"kept"}', 'key-1', 'RETRYABLE', 2, ?, 'NETWORK_ERROR',
                   'offline', ?, ?, ?, ?)""",
        (NOW + 1000, NOW, NOW, NOW + 86_400_000, NOW),
    )
    old.close()

    store = SqliteOutboxStore.open(path)
    try:
        (entry,) = store.list()
        assert (entry.id, entry.idempotency_key, entry.state, entry.attempts) == ("e-1", "key-1", "RETRYABLE", 2)
        assert entry.variables == {"body": "kept"} and entry.last_error is not None
        assert entry.last_error.code == "NETWORK_ERROR" and entry.failed_deliveries == 0
        version = store._db.execute("SELECT version FROM agentgraph_schema WHERE component = 'outbox'").fetchone()
        assert version[0] == len(MIGRATIONS) == 2
    finally:
        store.close()
    # Opening again runs nothing twice (the ALTER TABLE would fail on an existing column).
    SqliteOutboxStore.open(path).close()


@pytest.mark.parametrize(
    "code, status, counts",
    [
        ("INTERNAL_SERVER_ERROR", 500, True),
        ("INTERNAL_SERVER_ERROR", None, True),
        ("HTTP_ERROR", 500, True),
        ("NETWORK_ERROR", None, False),
        ("TIMEOUT", None, False),
        ("HTTP_ERROR", 502, False),
        ("SERVICE_UNAVAILABLE", 503, False),
        ("HTTP_ERROR", 504, False),
        ("RATE_LIMITED", 429, False),
        ("IDEMPOTENCY_KEY_IN_PROGRESS", 409, False),
    ],
)
def test_which_retryable_failures_are_failed_deliveries(code: str, status: Any, counts: bool) -> None:
    failure = describe_failure(AgentGraphError(code, "scripted", True, status=status))
    assert failure.failed_delivery is counts
    # A non-retryable answer is poisoned at once anyway; it is never counted as a delivery to retry.
    assert describe_failure(AgentGraphError(code, "scripted", False, status=status)).failed_delivery is False


def test_max_failed_deliveries_must_be_at_least_one(tmp_path: Path) -> None:
    store = SqliteOutboxStore.open(str(tmp_path / "outbox.db"))
    try:
        for bad in (0, -1, 1.5, True, "3"):
            with pytest.raises(ValueError, match="max_failed_deliveries must be an integer >= 1"):
                Outbox(store, lambda entry: asyncio.sleep(0), max_failed_deliveries=bad)  # type: ignore
    finally:
        store.close()


def test_poison_after_the_limit_then_revive_resets_the_counter_and_the_export_shows_it(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    answers: List[Any] = [
        AgentGraphError("INTERNAL_SERVER_ERROR", "boom 1", True, status=500),
        AgentGraphError("NETWORK_ERROR", "offline", True),
        AgentGraphError("HTTP_ERROR", "boom 2", True, status=500),
        AgentGraphError("INTERNAL_SERVER_ERROR", "after revive", True, status=500),
        "ok",
    ]
    sent: List[float] = []

    async def send(entry: Any) -> Any:
        sent.append(clock.now() - NOW)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return {"ok": True}

    async def run() -> None:
        store = SqliteOutboxStore.open(str(tmp_path / "outbox.db"))
        outbox = await Outbox.open(store, send, clock=clock, max_failed_deliveries=2,
                                   new_id=iter(["e-1"]).__next__, new_key=iter(["key-1"]).__next__)
        await outbox.enqueue("room-a", "PostMessage", {"body": "hello"})
        await outbox.drain()
        (entry,) = outbox.dead_letters()
        assert (entry.state, entry.attempts, entry.failed_deliveries) == ("POISON", 3, 2)
        assert entry.last_error is not None
        assert (entry.last_error.code, entry.last_error.message) == ("HTTP_ERROR", "boom 2")
        exported = json.loads(outbox.export_dead_letters())
        assert exported["exportedAt"] == "2023-11-14T22:13:23.000Z"  # NOW + 1000 + 2000 ms of backoff
        (row,) = exported["entries"]
        assert row["idempotencyKey"] == "key-1" and row["failedDeliveries"] == 2
        assert row["lastError"] == {"code": "HTTP_ERROR", "message": "boom 2"} and row["state"] == "POISON"
        assert row["createdAt"] == "2023-11-14T22:13:20.000Z" and row["variables"] == {"body": "hello"}

        revived = await outbox.revive("e-1")
        assert (revived.state, revived.failed_deliveries, revived.last_error) == ("QUEUED", 0, None)
        await outbox.drain()
        (done,) = outbox.list()
        # One more failed delivery after the revive, below the limit again, then sent.
        assert (done.state, done.failed_deliveries, done.idempotency_key) == ("SENT", 1, "key-1")
        assert outbox.dead_letters() == [] and json.loads(outbox.export_dead_letters())["entries"] == []
        await outbox.close()

    asyncio.run(run())
    # revive keeps the attempt count (only failed_deliveries resets): the 4th attempt waits 1000 * 2^3 ms.
    assert sent == [0, 1000, 3000, 3000, 11000]
