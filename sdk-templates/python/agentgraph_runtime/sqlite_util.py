"""Opening the SDK's SQLite file (stdlib sqlite3): WAL, ``synchronous = FULL`` (a committed change survives a power
cut, not only a crash of the process: NORMAL in WAL mode can lose the last commits; the TypeScript and C# SDKs use
FULL too), autocommit with explicit transactions, and a per-component schema version in ``agentgraph_schema`` so the
outbox, inbox and replay cache can share one file. Migrations are forward-only: a file made by an older SDK opens
and gets the missing steps."""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import Iterator, Sequence, Tuple, Union

Target = Union[str, sqlite3.Connection]


def open_sqlite(target: Target) -> Tuple[sqlite3.Connection, bool]:
    if isinstance(target, sqlite3.Connection):
        return target, False
    db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA busy_timeout = 5000")
    return db, True


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    else:
        db.execute("COMMIT")


def migrate(db: sqlite3.Connection, component: str, migrations: Sequence[str]) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS agentgraph_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    with transaction(db):
        row = db.execute("SELECT version FROM agentgraph_schema WHERE component = ?", (component,)).fetchone()
        version = row[0] if row else 0
        for index in range(version, len(migrations)):
            for statement in migrations[index].split(";"):
                if statement.strip():
                    db.execute(statement)
        db.execute(
            "INSERT INTO agentgraph_schema (component, version) VALUES (?, ?) "
            "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
            (component, len(migrations)),
        )
