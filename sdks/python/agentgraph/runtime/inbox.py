"""The inbox (port of sdk-templates/typescript/src/inbox) on stdlib sqlite3: what a device receives from a stream,
processed at most once per message and acknowledged.

- ``receive`` stores a message and advances the stream's cursor in one transaction; a message seen before (same
  id, or a seq at or below the stream's last one) is a duplicate and is dropped.
- ``lease`` hands out the oldest available message for ``lease_ms``; an expired lease makes it available again;
  every lease is an attempt; leases expired ``max_attempts`` times are quarantined (LEASE_EXPIRED).
- ``complete`` -> PROCESSED; ``fail`` -> available again, or QUARANTINED at the last attempt. Both give an
  acknowledgement the app delivers to the server and confirms with ``acknowledged``.
"""
from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .clock import Clock, system_clock
from .sqlite_util import Target, migrate, open_sqlite, transaction

DEFAULT_LEASE_MS = 60_000
DEFAULT_MAX_ATTEMPTS = 3


class LeaseLostError(Exception):
    def __init__(self, stream: str, id_: str) -> None:
        super().__init__(f"The lease of inbox message {stream}/{id_} was lost (expired and leased again, or settled).")
        self.stream = stream
        self.id = id_


@dataclass
class InboxError:
    code: str
    message: str


@dataclass
class InboxMessage:
    stream: str
    id: str
    seq: Optional[int]
    payload: Any
    state: str
    attempts: int
    available_at: float
    lease_token: Optional[str]
    lease_until: Optional[float]
    last_error: Optional[InboxError]
    received_at: float
    settled_at: Optional[float]
    acknowledged_at: Optional[float]


@dataclass
class Lease:
    stream: str
    id: str
    seq: Optional[int]
    payload: Any
    attempt: int
    token: str
    lease_until: float


@dataclass
class Acknowledgement:
    stream: str
    id: str
    seq: Optional[int]
    outcome: str  # PROCESSED | QUARANTINED
    at: float
    error: Optional[InboxError] = None


@dataclass
class FailResult:
    outcome: str  # RETRY | QUARANTINED
    attempts: int = 0
    available_at: float = 0
    acknowledgement: Optional[Acknowledgement] = None


MIGRATIONS = [
    """CREATE TABLE inbox_streams (
         stream TEXT PRIMARY KEY, cursor TEXT, last_seq INTEGER, updated_at REAL NOT NULL
       );
       CREATE TABLE inbox_messages (
         position INTEGER PRIMARY KEY AUTOINCREMENT,
         stream TEXT NOT NULL,
         message_id TEXT NOT NULL,
         seq INTEGER,
         payload TEXT NOT NULL,
         state TEXT NOT NULL CHECK (state IN ('AVAILABLE', 'LEASED', 'PROCESSED', 'QUARANTINED')),
         attempts INTEGER NOT NULL DEFAULT 0,
         available_at REAL NOT NULL,
         lease_token TEXT,
         lease_until REAL,
         last_error_code TEXT,
         last_error_message TEXT,
         received_at REAL NOT NULL,
         settled_at REAL,
         acknowledged_at REAL,
         UNIQUE (stream, message_id)
       );
       CREATE INDEX inbox_messages_open ON inbox_messages (position) WHERE state IN ('AVAILABLE', 'LEASED')"""
]


def _message(row: sqlite3.Row) -> InboxMessage:
    return InboxMessage(
        stream=row["stream"], id=row["message_id"], seq=row["seq"], payload=json.loads(row["payload"]),
        state=row["state"], attempts=row["attempts"], available_at=row["available_at"],
        lease_token=row["lease_token"], lease_until=row["lease_until"],
        last_error=None if row["last_error_code"] is None
        else InboxError(row["last_error_code"], row["last_error_message"] or ""),
        received_at=row["received_at"], settled_at=row["settled_at"], acknowledged_at=row["acknowledged_at"],
    )


def acknowledgement_of(m: InboxMessage) -> Acknowledgement:
    if m.state not in ("PROCESSED", "QUARANTINED"):
        raise ValueError(f"Inbox message {m.stream}/{m.id} is {m.state}, not settled.")
    return Acknowledgement(
        m.stream, m.id, m.seq, m.state, m.settled_at if m.settled_at is not None else m.received_at,
        m.last_error if m.state == "QUARANTINED" else None,
    )


def _error_info(error: Any) -> InboxError:
    code = getattr(error, "code", None)
    message = str(error)
    return InboxError(code if isinstance(code, str) and code else "PROCESSING_FAILED",
                      message if len(message) <= 500 else message[:500] + "…")


class SqliteInboxStore:
    def __init__(self, db: sqlite3.Connection, owned: bool) -> None:
        self._db = db
        self._owned = owned

    @classmethod
    def open(cls, target: Target) -> "SqliteInboxStore":
        db, owned = open_sqlite(target)
        db.row_factory = sqlite3.Row
        migrate(db, "inbox", MIGRATIONS)
        return cls(db, owned)

    def cursor(self, stream: str) -> Optional[str]:
        row = self._db.execute("SELECT cursor FROM inbox_streams WHERE stream = ?", (stream,)).fetchone()
        return row["cursor"] if row else None

    def save_cursor(self, stream: str, cursor: str, now: float) -> None:
        self._db.execute(
            """INSERT INTO inbox_streams (stream, cursor, updated_at) VALUES (?, ?, ?)
               ON CONFLICT (stream) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at""",
            (stream, cursor, now),
        )

    def receive(self, stream: str, id_: str, seq: Optional[int], cursor: Optional[str], payload: Any,
                now: float) -> str:
        with transaction(self._db) as db:
            row = db.execute("SELECT last_seq FROM inbox_streams WHERE stream = ?", (stream,)).fetchone()
            last_seq = row["last_seq"] if row else None
            if seq is not None and last_seq is not None and seq <= last_seq:
                return "duplicate"
            inserted = db.execute(
                """INSERT INTO inbox_messages (stream, message_id, seq, payload, state, available_at, received_at)
                   VALUES (?, ?, ?, ?, 'AVAILABLE', ?, ?) ON CONFLICT (stream, message_id) DO NOTHING""",
                (stream, id_, seq, json.dumps(payload, separators=(",", ":")), now, now),
            )
            if inserted.rowcount == 0:
                return "duplicate"
            new_cursor = cursor if cursor is not None else (str(seq) if seq is not None else None)
            db.execute(
                """INSERT INTO inbox_streams (stream, cursor, last_seq, updated_at) VALUES (?, ?, ?, ?)
                   ON CONFLICT (stream) DO UPDATE SET
                     cursor = COALESCE(excluded.cursor, inbox_streams.cursor),
                     last_seq = CASE WHEN excluded.last_seq IS NULL THEN inbox_streams.last_seq
                                     WHEN inbox_streams.last_seq IS NULL THEN excluded.last_seq
                                     ELSE MAX(inbox_streams.last_seq, excluded.last_seq) END,
                     updated_at = excluded.updated_at""",
                (stream, new_cursor, seq, now),
            )
            return "accepted"

    def lease(self, now: float, lease_ms: float, token: str, max_attempts: int,
              stream: Optional[str]) -> Optional[InboxMessage]:
        with transaction(self._db) as db:
            db.execute(
                """UPDATE inbox_messages SET state = 'QUARANTINED', lease_token = NULL, lease_until = NULL,
                     settled_at = ?, last_error_code = 'LEASE_EXPIRED', last_error_message = ?
                   WHERE state = 'LEASED' AND lease_until <= ? AND attempts >= ?""",
                (now, f"Processing did not finish within the lease {max_attempts} times (the processor stopped "
                      "or hung).", now, max_attempts),
            )
            stream_filter = "" if stream is None else "AND stream = ?"
            row = db.execute(
                f"""UPDATE inbox_messages SET state = 'LEASED', attempts = attempts + 1, lease_token = ?,
                      lease_until = ?
                    WHERE position = (
                      SELECT position FROM inbox_messages
                      WHERE ((state = 'AVAILABLE' AND available_at <= ?) OR (state = 'LEASED' AND lease_until <= ?))
                        {stream_filter}
                      ORDER BY position LIMIT 1)
                    RETURNING *""",
                (token, now + lease_ms, now, now, *(() if stream is None else (stream,))),
            ).fetchone()
            return _message(row) if row else None

    def complete(self, stream: str, id_: str, token: str, now: float) -> InboxMessage:
        row = self._db.execute(
            """UPDATE inbox_messages SET state = 'PROCESSED', lease_token = NULL, lease_until = NULL, settled_at = ?
               WHERE stream = ? AND message_id = ? AND state = 'LEASED' AND lease_token = ? RETURNING *""",
            (now, stream, id_, token),
        ).fetchone()
        if row is None:
            raise LeaseLostError(stream, id_)
        return _message(row)

    def fail(self, stream: str, id_: str, token: str, now: float, error: InboxError, quarantine: bool,
             available_at: float = 0) -> InboxMessage:
        if quarantine:
            row = self._db.execute(
                """UPDATE inbox_messages SET state = 'QUARANTINED', lease_token = NULL, lease_until = NULL,
                     settled_at = ?, last_error_code = ?, last_error_message = ?
                   WHERE stream = ? AND message_id = ? AND state = 'LEASED' AND lease_token = ? RETURNING *""",
                (now, error.code, error.message, stream, id_, token),
            ).fetchone()
        else:
            row = self._db.execute(
                """UPDATE inbox_messages SET state = 'AVAILABLE', lease_token = NULL, lease_until = NULL,
                     available_at = ?, last_error_code = ?, last_error_message = ?
                   WHERE stream = ? AND message_id = ? AND state = 'LEASED' AND lease_token = ? RETURNING *""",
                (available_at, error.code, error.message, stream, id_, token),
            ).fetchone()
        if row is None:
            raise LeaseLostError(stream, id_)
        return _message(row)

    def unacknowledged(self) -> List[InboxMessage]:
        rows = self._db.execute(
            """SELECT * FROM inbox_messages WHERE state IN ('PROCESSED', 'QUARANTINED') AND acknowledged_at IS NULL
               ORDER BY position"""
        ).fetchall()
        return [_message(r) for r in rows]

    def mark_acknowledged(self, stream: str, id_: str, now: float) -> None:
        cur = self._db.execute(
            """UPDATE inbox_messages SET acknowledged_at = COALESCE(acknowledged_at, ?)
               WHERE stream = ? AND message_id = ? AND state IN ('PROCESSED', 'QUARANTINED')""",
            (now, stream, id_),
        )
        if cur.rowcount == 0:
            raise ValueError(f"Inbox message {stream}/{id_} is not settled (PROCESSED or QUARANTINED): nothing to "
                             "acknowledge.")

    def list(self, states: Optional[Sequence[str]] = None, stream: Optional[str] = None) -> List[InboxMessage]:
        sql, params = "SELECT * FROM inbox_messages WHERE 1 = 1", []  # type: ignore[var-annotated]
        if states:
            sql += " AND state IN (" + ", ".join("?" for _ in states) + ")"
            params += list(states)
        if stream is not None:
            sql += " AND stream = ?"
            params.append(stream)
        return [_message(r) for r in self._db.execute(sql + " ORDER BY position", params).fetchall()]

    def purge(self, before: float) -> int:
        return self._db.execute(
            """DELETE FROM inbox_messages WHERE acknowledged_at IS NOT NULL AND settled_at < ?
                 AND state IN ('PROCESSED', 'QUARANTINED')""",
            (before,),
        ).rowcount

    def close(self) -> None:
        if self._owned:
            self._db.close()


class Inbox:
    def __init__(
        self,
        store: SqliteInboxStore,
        *,
        clock: Clock = system_clock,
        lease_ms: float = DEFAULT_LEASE_MS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_delay_ms: Callable[[int], float] = lambda attempt: 0,
        new_token: Optional[Callable[[], str]] = None,
    ) -> None:
        if not lease_ms > 0:
            raise ValueError("Inbox: lease_ms must be positive.")
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError("Inbox: max_attempts must be a positive integer.")
        self._store = store
        self._clock = clock
        self._lease_ms = lease_ms
        self._max_attempts = max_attempts
        self._retry_delay_ms = retry_delay_ms
        self._new_token = new_token or (lambda: str(uuid.uuid4()))

    def cursor(self, stream: str) -> Optional[str]:
        return self._store.cursor(stream)

    def save_cursor(self, stream: str, cursor: str) -> None:
        self._store.save_cursor(stream, cursor, self._clock.now())

    def receive(self, stream: str, id: str, payload: Any, seq: Optional[int] = None,
                cursor: Optional[str] = None) -> str:
        """'accepted', or 'duplicate' when seen before (then nothing changes)."""
        for name, value in (("stream", stream), ("id", id)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"Inbox.receive: {name} must be a non-empty string.")
        if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool) or seq < 0):
            raise ValueError("Inbox.receive: seq must be a non-negative integer.")
        return self._store.receive(stream, id, seq, cursor, payload, self._clock.now())

    def lease(self, stream: Optional[str] = None) -> Optional[Lease]:
        token = self._new_token()
        m = self._store.lease(self._clock.now(), self._lease_ms, token, self._max_attempts, stream)
        if m is None:
            return None
        assert m.lease_until is not None
        return Lease(m.stream, m.id, m.seq, m.payload, m.attempts, token, m.lease_until)

    def complete(self, lease: Lease) -> Acknowledgement:
        return acknowledgement_of(self._store.complete(lease.stream, lease.id, lease.token, self._clock.now()))

    def fail(self, lease: Lease, error: Any) -> FailResult:
        now = self._clock.now()
        info = _error_info(error)
        if lease.attempt >= self._max_attempts:
            m = self._store.fail(lease.stream, lease.id, lease.token, now, info, quarantine=True)
            return FailResult("QUARANTINED", acknowledgement=acknowledgement_of(m))
        available_at = now + max(0, self._retry_delay_ms(lease.attempt))
        self._store.fail(lease.stream, lease.id, lease.token, now, info, quarantine=False, available_at=available_at)
        return FailResult("RETRY", attempts=lease.attempt, available_at=available_at)

    async def process(self, handler: Callable[[Any, Lease], Any], stream: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """Leases the next message and runs (async or sync) ``handler`` on it; None when nothing is available."""
        lease = self.lease(stream)
        if lease is None:
            return None
        try:
            result = handler(lease.payload, lease)
            if hasattr(result, "__await__"):
                await result
        except Exception as error:  # noqa: BLE001 - the handler's failure is recorded
            try:
                failed = self.fail(lease, error)
            except LeaseLostError:
                return {"outcome": "LEASE_LOST"}
            return {"outcome": failed.outcome, "result": failed}
        try:
            return {"outcome": "PROCESSED", "acknowledgement": self.complete(lease)}
        except LeaseLostError:
            return {"outcome": "LEASE_LOST"}

    def pending_acknowledgements(self) -> List[Acknowledgement]:
        return [acknowledgement_of(m) for m in self._store.unacknowledged()]

    def acknowledged(self, stream: str, id: str) -> None:
        self._store.mark_acknowledged(stream, id, self._clock.now())

    def list(self, states: Optional[Sequence[str]] = None, stream: Optional[str] = None) -> List[InboxMessage]:
        return self._store.list(states, stream)

    def quarantined(self) -> List[InboxMessage]:
        return self._store.list(("QUARANTINED",))

    def purge(self, older_than_ms: float) -> int:
        return self._store.purge(self._clock.now() - older_than_ms)

    def close(self) -> None:
        self._store.close()


__all__ = ["Inbox", "SqliteInboxStore", "Lease", "Acknowledgement", "LeaseLostError", "Union"]
