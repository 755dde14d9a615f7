"""The durable outbox (port of sdk-templates/typescript/src/outbox): ordered, exactly-once-friendly delivery of
mutations on stdlib sqlite3.

- ``enqueue`` persists an entry with its idempotency key made once, here; every send uses that key.
- Rooms are ordering keys: a room's head blocks only that room; up to ``concurrency`` rooms send at once.
- A retryable failure -> RETRYABLE, resent after ``delay_for(attempt, failure)``; any other -> POISON at once; not
  SENT within the TTL (7 days) -> EXPIRED; first sent longer ago than ``key_retention_ms`` -> EXPIRED
  (IDEMPOTENCY_WINDOW_PASSED).
- A failed delivery (the server took the message and failed on it: code INTERNAL_SERVER_ERROR, or HTTP status 500
  under any code) counts in ``failed_deliveries``; at ``max_failed_deliveries`` (default 3) the entry goes to POISON
  with that error as its reason. Offline and wait-for-me answers (NETWORK_ERROR, TIMEOUT, 502/503/504, RATE_LIMITED,
  SERVICE_UNAVAILABLE, IDEMPOTENCY_KEY_IN_PROGRESS) do not count: they retry until the TTL. ``revive`` resets it.
- On open, entries left SENDING by a crash go back to QUEUED with their key.
"""
from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence

from .clock import Clock, system_clock
from .sqlite_util import Target, migrate, open_sqlite

STATES = ("QUEUED", "SENDING", "RETRYABLE", "SENT", "POISON", "EXPIRED")
PENDING_STATES = ("QUEUED", "SENDING", "RETRYABLE")
DEFAULT_OUTBOX_TTL_MS = 7 * 24 * 60 * 60 * 1000
DEFAULT_MAX_FAILED_DELIVERIES = 3


@dataclass
class OutboxError:
    code: str
    message: str


@dataclass
class OutboxEntry:
    id: str
    seq: int
    room: str
    operation: str
    variables: Dict[str, Any]
    idempotency_key: str
    state: str
    attempts: int
    next_attempt_at: Optional[float]
    last_error: Optional[OutboxError]
    created_at: float
    updated_at: float
    expires_at: float
    first_attempt_at: Optional[float]
    failed_deliveries: int = 0


@dataclass
class SendFailure:
    code: str
    message: str
    retryable: bool
    retry_after_ms: Optional[float] = None
    status: Optional[int] = None

    @property
    def failed_delivery(self) -> bool:
        """The server took the message and failed on it (INTERNAL_SERVER_ERROR, or HTTP 500 under any code).
        Offline, timeouts, 502/503/504, rate limits and a key still in progress say nothing about the message."""
        return self.retryable and (self.code == "INTERNAL_SERVER_ERROR" or self.status == 500)


def describe_failure(error: BaseException) -> SendFailure:
    """SDK errors carry code, retryable, retry_after_ms; anything else (a bug in the send function) is not
    retryable, so it lands on the dead-letter list instead of retrying forever."""
    code = getattr(error, "code", None)
    message = str(error)
    retry_after = getattr(error, "retry_after_ms", None)
    status = getattr(error, "status", None)
    return SendFailure(
        code=code if isinstance(code, str) and code else "UNKNOWN_ERROR",
        message=message if len(message) <= 500 else message[:500] + "…",
        retryable=getattr(error, "retryable", False) is True,
        retry_after_ms=retry_after if isinstance(retry_after, (int, float)) and retry_after >= 0 else None,
        status=status if isinstance(status, int) and not isinstance(status, bool) else None,
    )


OutboxDelay = Callable[[int, SendFailure], float]


def exponential_outbox_delay(base_ms: Optional[float] = None, max_ms: Optional[float] = None) -> OutboxDelay:
    """base * 2^(attempt-1) capped at max, never shorter than the server's wait. No jitter (the client's own
    retries inside each send are jittered)."""
    base = 1_000 if base_ms is None else base_ms
    cap = 300_000 if max_ms is None else max_ms

    def delay(attempt: int, failure: SendFailure) -> float:
        backoff = min(cap, base * 2 ** max(0, attempt - 1))
        return max(backoff, failure.retry_after_ms or 0)

    return delay


default_outbox_delay = exponential_outbox_delay()


class OutboxStateError(Exception):
    def __init__(self, id_: str, wanted: str, actual: Optional[str]) -> None:
        super().__init__(
            f"Outbox entry {id_} does not exist (wanted: {wanted})." if actual is None
            else f"Outbox entry {id_} is {actual}; {wanted} is not allowed from there."
        )


MIGRATIONS = [
    """CREATE TABLE outbox_entries (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         id TEXT NOT NULL UNIQUE,
         room TEXT NOT NULL,
         operation TEXT NOT NULL,
         variables TEXT NOT NULL,
         idempotency_key TEXT NOT NULL UNIQUE,
         state TEXT NOT NULL CHECK (state IN ('QUEUED','SENDING','RETRYABLE','SENT','POISON','EXPIRED')),
         attempts INTEGER NOT NULL DEFAULT 0,
         next_attempt_at REAL,
         last_error_code TEXT,
         last_error_message TEXT,
         created_at REAL NOT NULL,
         updated_at REAL NOT NULL,
         expires_at REAL NOT NULL,
         first_attempt_at REAL
       );
       CREATE INDEX outbox_entries_pending ON outbox_entries (room, seq)
         WHERE state IN ('QUEUED', 'SENDING', 'RETRYABLE')""",
    # 2: failed deliveries (poison after max_failed_deliveries); existing entries start at 0.
    "ALTER TABLE outbox_entries ADD COLUMN failed_deliveries INTEGER NOT NULL DEFAULT 0",
]


def _iso(ms: float) -> str:
    """Milliseconds since the epoch as JavaScript's Date.toISOString() writes them (UTC, milliseconds, Z)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _in_list(states: Sequence[str]) -> str:
    return ", ".join(f"'{s}'" for s in states)


def _entry(row: sqlite3.Row) -> OutboxEntry:
    return OutboxEntry(
        id=row["id"], seq=row["seq"], room=row["room"], operation=row["operation"],
        variables=json.loads(row["variables"]), idempotency_key=row["idempotency_key"], state=row["state"],
        attempts=row["attempts"], next_attempt_at=row["next_attempt_at"],
        last_error=None if row["last_error_code"] is None
        else OutboxError(row["last_error_code"], row["last_error_message"] or ""),
        created_at=row["created_at"], updated_at=row["updated_at"], expires_at=row["expires_at"],
        first_attempt_at=row["first_attempt_at"], failed_deliveries=row["failed_deliveries"],
    )


class SqliteOutboxStore:
    """The outbox's table in a SQLite file (or a connection the caller opened, e.g. the inbox's)."""

    def __init__(self, db: sqlite3.Connection, owned: bool) -> None:
        self._db = db
        self._owned = owned

    @classmethod
    def open(cls, target: Target) -> "SqliteOutboxStore":
        db, owned = open_sqlite(target)
        db.row_factory = sqlite3.Row
        migrate(db, "outbox", MIGRATIONS)
        return cls(db, owned)

    def add(self, id_: str, room: str, operation: str, variables: Dict[str, Any], key: str, created_at: float,
            expires_at: float) -> OutboxEntry:
        row = self._db.execute(
            """INSERT INTO outbox_entries (id, room, operation, variables, idempotency_key, state, created_at,
                 updated_at, expires_at) VALUES (?, ?, ?, ?, ?, 'QUEUED', ?, ?, ?) RETURNING *""",
            (id_, room, operation, json.dumps(variables, separators=(",", ":")), key, created_at, created_at,
             expires_at),
        ).fetchone()
        return _entry(row)

    def get(self, id_: str) -> Optional[OutboxEntry]:
        row = self._db.execute("SELECT * FROM outbox_entries WHERE id = ?", (id_,)).fetchone()
        return _entry(row) if row else None

    def list(self, states: Optional[Sequence[str]] = None, room: Optional[str] = None) -> List[OutboxEntry]:
        sql, params = "SELECT * FROM outbox_entries WHERE 1 = 1", []  # type: ignore[var-annotated]
        if states:
            sql += f" AND state IN ({_in_list([s for s in states if s in STATES])})"
        if room is not None:
            sql += " AND room = ?"
            params.append(room)
        return [_entry(r) for r in self._db.execute(sql + " ORDER BY seq", params).fetchall()]

    def heads(self) -> List[OutboxEntry]:
        rows = self._db.execute(
            f"""SELECT e.* FROM outbox_entries e
                  JOIN (SELECT MIN(seq) AS seq FROM outbox_entries WHERE state IN ({_in_list(PENDING_STATES)})
                        GROUP BY room) h ON e.seq = h.seq
                ORDER BY e.seq"""
        ).fetchall()
        return [_entry(r) for r in rows]

    def recover(self, now: float) -> int:
        return self._db.execute(
            "UPDATE outbox_entries SET state = 'QUEUED', updated_at = ? WHERE state = 'SENDING'", (now,)
        ).rowcount

    def expire(self, now: float) -> List[OutboxEntry]:
        rows = self._db.execute(
            """UPDATE outbox_entries SET state = 'EXPIRED', next_attempt_at = NULL, updated_at = ?
                 WHERE state IN ('QUEUED', 'RETRYABLE') AND expires_at <= ? RETURNING *""",
            (now, now),
        ).fetchall()
        return sorted((_entry(r) for r in rows), key=lambda e: e.seq)

    def _move(self, id_: str, from_: Sequence[str], to: str, set_: str, params: Sequence[Any], now: float) -> OutboxEntry:
        row = self._db.execute(
            f"""UPDATE outbox_entries SET state = ?, updated_at = ?, {set_}
                  WHERE id = ? AND state IN ({_in_list(from_)}) RETURNING *""",
            (to, now, *params, id_),
        ).fetchone()
        if row:
            return _entry(row)
        actual = self._db.execute("SELECT state FROM outbox_entries WHERE id = ?", (id_,)).fetchone()
        raise OutboxStateError(id_, f"{'/'.join(from_)} -> {to}", actual[0] if actual else None)

    def mark_sending(self, id_: str, now: float) -> OutboxEntry:
        return self._move(id_, ("QUEUED", "RETRYABLE"), "SENDING",
                          "attempts = attempts + 1, next_attempt_at = NULL, "
                          "first_attempt_at = COALESCE(first_attempt_at, ?)", (now,), now)

    def mark_sent(self, id_: str, now: float) -> OutboxEntry:
        return self._move(id_, ("SENDING",), "SENT", "last_error_code = NULL, last_error_message = NULL", (), now)

    def mark_retryable(self, id_: str, now: float, next_at: float, error: OutboxError,
                       failed_delivery: bool = False) -> OutboxEntry:
        return self._move(id_, ("SENDING",), "RETRYABLE",
                          "next_attempt_at = ?, last_error_code = ?, last_error_message = ?, "
                          "failed_deliveries = failed_deliveries + ?",
                          (next_at, error.code, error.message, 1 if failed_delivery else 0), now)

    def mark_poison(self, id_: str, now: float, error: OutboxError, failed_delivery: bool = False) -> OutboxEntry:
        return self._move(id_, ("SENDING",), "POISON",
                          "last_error_code = ?, last_error_message = ?, failed_deliveries = failed_deliveries + ?",
                          (error.code, error.message, 1 if failed_delivery else 0), now)

    def mark_expired(self, id_: str, now: float, error: OutboxError) -> OutboxEntry:
        return self._move(id_, ("QUEUED", "RETRYABLE"), "EXPIRED",
                          "next_attempt_at = NULL, last_error_code = ?, last_error_message = ?",
                          (error.code, error.message), now)

    def requeue(self, id_: str, now: float) -> OutboxEntry:
        return self._move(id_, ("SENDING",), "QUEUED", "next_attempt_at = NULL", (), now)

    def revive(self, id_: str, now: float, expires_at: float) -> OutboxEntry:
        return self._move(id_, ("POISON", "EXPIRED"), "QUEUED",
                          "next_attempt_at = NULL, last_error_code = NULL, last_error_message = NULL, expires_at = ?, "
                          "failed_deliveries = 0",
                          (expires_at,), now)

    def purge(self, before: float, states: Sequence[str] = ("SENT", "POISON", "EXPIRED")) -> int:
        settled = [s for s in states if s in STATES and s not in PENDING_STATES]
        if not settled:
            return 0
        return self._db.execute(
            f"DELETE FROM outbox_entries WHERE state IN ({_in_list(settled)}) AND updated_at < ?", (before,)
        ).rowcount

    def close(self) -> None:
        if self._owned:
            self._db.close()


OutboxSend = Callable[[OutboxEntry], Awaitable[Any]]


class Outbox:
    def __init__(
        self,
        store: SqliteOutboxStore,
        send: OutboxSend,
        *,
        clock: Clock = system_clock,
        ttl_ms: float = DEFAULT_OUTBOX_TTL_MS,
        concurrency: int = 4,
        delay_for: OutboxDelay = default_outbox_delay,
        new_id: Optional[Callable[[], str]] = None,
        new_key: Optional[Callable[[], str]] = None,
        key_retention_ms: Optional[float] = None,
        on_change: Optional[Callable[[OutboxEntry], None]] = None,
        max_failed_deliveries: int = DEFAULT_MAX_FAILED_DELIVERIES,
    ) -> None:
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError("Outbox: concurrency must be a positive integer.")
        if isinstance(max_failed_deliveries, bool) or not isinstance(max_failed_deliveries, int) \
                or max_failed_deliveries < 1:
            raise ValueError(f"Outbox: max_failed_deliveries must be an integer >= 1 (got {max_failed_deliveries!r}); "
                             "it is how many times the server may fail on one entry before it is poisoned.")
        if not ttl_ms > 0:
            raise ValueError("Outbox: ttl_ms must be positive.")
        self._store = store
        self._send = send
        self._clock = clock
        self._ttl = ttl_ms
        self._concurrency = concurrency
        self._delay_for = delay_for
        self._new_id = new_id or (lambda: str(uuid.uuid4()))
        self._new_key = new_key or (lambda: str(uuid.uuid4()))
        self._key_retention = key_retention_ms
        self._max_failed = max_failed_deliveries
        self._on_change = on_change or (lambda entry: None)
        self._in_flight: Dict[str, asyncio.Task] = {}
        self._sending: Dict[str, asyncio.Task] = {}  # the send function's own task, per room
        self._aborting = False
        self._woken: Optional[asyncio.Future] = None
        self._running: Optional[asyncio.Task] = None
        self._stopping = False
        self._closed = False
        self.counts = {"enqueued": 0, "sends": 0, "sent": 0, "retried": 0, "poisoned": 0, "expired": 0,
                       "recovered": 0}

    @classmethod
    async def open(cls, store: SqliteOutboxStore, send: OutboxSend, **options: Any) -> "Outbox":
        """Opens an outbox on a store: crash recovery (SENDING -> QUEUED, same key), then expiry."""
        outbox = cls(store, send, **options)
        now = outbox._clock.now()
        outbox.counts["recovered"] = store.recover(now)
        outbox._expire_due(now)
        return outbox

    def _wake(self) -> None:
        if self._woken is not None and not self._woken.done():
            self._woken.set_result(None)

    async def enqueue(self, room: str, operation: str, variables: Optional[Dict[str, Any]] = None,
                      idempotency_key: Optional[str] = None) -> OutboxEntry:
        if self._closed:
            raise RuntimeError("Outbox.enqueue: the outbox is closed.")
        for name, value in (("room", room), ("operation", operation)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"Outbox.enqueue: {name} must be a non-empty string.")
        if variables is not None and not isinstance(variables, dict):
            raise ValueError("Outbox.enqueue: variables must be a dict.")
        try:
            stored = json.loads(json.dumps(variables or {}))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Outbox.enqueue: variables must be JSON-serializable ({exc}).") from None
        key = self._new_key() if idempotency_key is None else idempotency_key
        now = self._clock.now()
        entry = self._store.add(self._new_id(), room, operation, stored, key, now, now + self._ttl)
        self.counts["enqueued"] += 1
        self._wake()
        return entry

    async def drain(self) -> None:
        """Sends until nothing is pending: every entry ends SENT, POISON or EXPIRED. Cancelling the awaiting task
        stops starting sends; sends already running finish and are recorded (``stop(abort=True)`` cancels them)."""
        if self._running is not None:
            raise RuntimeError("Outbox.drain: the outbox is already running (start() was called).")
        self._begin_run()
        await self._loop(False)

    def start(self) -> None:
        """Runs in the background until stop()."""
        if self._running is not None:
            raise RuntimeError("Outbox.start: the outbox is already running.")
        self._begin_run()
        self._running = asyncio.ensure_future(self._loop(True))

    async def stop(self, abort: bool = False) -> None:
        """Stops starting sends and waits for the running ones; ``abort=True`` cancels them (their entries go back to
        QUEUED with their key, to be sent again)."""
        self._stopping = True
        if abort:
            self._aborting = True
            for sending in list(self._sending.values()):
                sending.cancel()
        self._wake()
        running, self._running = self._running, None
        if self._in_flight:
            await asyncio.gather(*self._in_flight.values(), return_exceptions=True)
        if running is not None:
            await running

    async def close(self, abort: bool = False) -> None:
        await self.stop(abort)
        self._closed = True
        self._store.close()

    def list(self, states: Optional[Sequence[str]] = None, room: Optional[str] = None) -> List[OutboxEntry]:
        return self._store.list(states, room)

    def dead_letters(self, include_expired: bool = True) -> List[OutboxEntry]:
        """POISON entries (and EXPIRED ones unless ``include_expired=False``), oldest first."""
        return self._store.list(("POISON", "EXPIRED") if include_expired else ("POISON",))

    def export_dead_letters(self, include_expired: bool = True) -> str:
        """The dead-letter list as JSON in the TypeScript SDK's shape (camelCase keys, times as ISO 8601, with
        ``failedDeliveries`` and ``lastError``). Holds the entries' variables: it is the app's own data."""
        return json.dumps({
            "exportedAt": _iso(self._clock.now()),
            "entries": [{
                "id": e.id, "seq": e.seq, "room": e.room, "operation": e.operation, "variables": e.variables,
                "idempotencyKey": e.idempotency_key, "state": e.state, "attempts": e.attempts,
                "failedDeliveries": e.failed_deliveries,
                "lastError": None if e.last_error is None else {"code": e.last_error.code,
                                                                 "message": e.last_error.message},
                "createdAt": _iso(e.created_at), "updatedAt": _iso(e.updated_at), "expiresAt": _iso(e.expires_at),
                "firstAttemptAt": None if e.first_attempt_at is None else _iso(e.first_attempt_at),
            } for e in self.dead_letters(include_expired)],
        }, indent=2, ensure_ascii=False)

    async def revive(self, id_: str) -> OutboxEntry:
        now = self._clock.now()
        entry = self._store.revive(id_, now, now + self._ttl)
        self._wake()
        return entry

    def purge(self, older_than_ms: float) -> int:
        return self._store.purge(self._clock.now() - older_than_ms)

    def _begin_run(self) -> None:
        if self._closed:
            raise RuntimeError("Outbox: the outbox is closed.")
        self._stopping = False
        self._aborting = False

    async def _loop(self, background: bool) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self._stopping:
                return
            woken: asyncio.Future = loop.create_future()
            self._woken = woken
            now = self._clock.now()
            self._expire_due(now)
            next_due = self._start_due_sends(now)
            if self._in_flight:
                await asyncio.wait({*self._in_flight.values(), woken}, return_when=asyncio.FIRST_COMPLETED)
                continue
            if next_due is None:
                if not background:
                    return
                await woken
                continue
            await self._sleep_until(next_due, woken)

    async def _sleep_until(self, at: float, woken: asyncio.Future) -> None:
        ms = at - self._clock.now()
        if ms <= 0:
            return
        sleeper = asyncio.ensure_future(self._clock.sleep(ms))
        try:
            await asyncio.wait({sleeper, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()

    def _expire_due(self, now: float) -> None:
        for entry in self._store.expire(now):
            self.counts["expired"] += 1
            self._on_change(entry)

    def _start_due_sends(self, now: float) -> Optional[float]:
        next_due: Optional[float] = None
        for head in self._store.heads():
            if head.room in self._in_flight or head.state == "SENDING":
                continue
            if (self._key_retention is not None and head.first_attempt_at is not None
                    and now - head.first_attempt_at > self._key_retention):
                expired = self._store.mark_expired(head.id, now, OutboxError(
                    "IDEMPOTENCY_WINDOW_PASSED",
                    f"First sent {round((now - head.first_attempt_at) / 1000)} s ago, longer than the server keeps "
                    "idempotency keys: a resend could apply it twice. Check the server's state, then revive or "
                    "drop it."))
                self.counts["expired"] += 1
                self._on_change(expired)
                continue
            due_at = (head.next_attempt_at if head.next_attempt_at is not None else now) \
                if head.state == "RETRYABLE" else now
            if due_at > now:
                next_due = due_at if next_due is None else min(next_due, due_at)
                continue
            if len(self._in_flight) >= self._concurrency:
                next_due = now if next_due is None else min(next_due, now)
                continue
            self._in_flight[head.room] = asyncio.ensure_future(self._run_send(head))
        return next_due

    async def _run_send(self, head: OutboxEntry) -> None:
        try:
            await self._send_one(head)
        finally:
            # Free the room before waking the loop, so the next pass can start the room's next entry.
            self._in_flight.pop(head.room, None)
            self._wake()

    async def _send_one(self, head: OutboxEntry) -> None:
        try:
            entry = self._store.mark_sending(head.id, self._clock.now())
        except OutboxStateError:
            return  # moved meanwhile (revived, expired): nothing to send
        self.counts["sends"] += 1
        self._on_change(entry)
        failure: Optional[SendFailure] = None
        aborted = False
        sending = asyncio.ensure_future(self._send(entry))
        self._sending[entry.room] = sending
        try:
            await sending
        except asyncio.CancelledError:
            if not (self._aborting and sending.cancelled()):
                raise  # this task itself was cancelled, not the send by stop(abort=True)
            aborted = True
        except Exception as error:  # noqa: BLE001 - every failure is recorded
            failure = describe_failure(error)
        finally:
            self._sending.pop(entry.room, None)
        now = self._clock.now()
        if aborted:
            self._on_change(self._store.requeue(entry.id, now))
        elif failure is None:
            self.counts["sent"] += 1
            self._on_change(self._store.mark_sent(entry.id, now))
        elif failure.retryable and not (failure.failed_delivery
                                        and entry.failed_deliveries + 1 >= self._max_failed):
            delay = max(0.0, self._delay_for(entry.attempts, failure))
            self.counts["retried"] += 1
            self._on_change(self._store.mark_retryable(entry.id, now, now + delay,
                                                       OutboxError(failure.code, failure.message),
                                                       failure.failed_delivery))
        else:
            # Not retryable, or the server failed on it max_failed_deliveries times: the dead-letter list.
            self.counts["poisoned"] += 1
            self._on_change(self._store.mark_poison(entry.id, now, OutboxError(failure.code, failure.message),
                                                    failure.failed_delivery))


def client_send(client: Any, operations: Dict[str, Any]) -> OutboxSend:
    """The usual send function: ``client.execute(operations[entry.operation], entry.variables)`` (an async
    ``AgentGraphClient``, e.g. ``AsyncAgentGraph(...).client``) with the entry's persisted idempotency key."""

    async def send(entry: OutboxEntry) -> Any:
        op = operations.get(entry.operation)
        if op is None:
            raise LookupError(f"Outbox: no operation named {entry.operation!r}; pass it in operations.")
        return await client.execute(op, entry.variables, idempotency_key=entry.idempotency_key)

    return send


__all__ = ["DEFAULT_MAX_FAILED_DELIVERIES", "Outbox", "OutboxEntry", "SendFailure", "SqliteOutboxStore",
           "exponential_outbox_delay", "client_send", "describe_failure"]
