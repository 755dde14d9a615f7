"""Executor of `inbox` vectors (port of ts/inbox.ts; see its header for the fields)."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from agentgraph_runtime.inbox import Acknowledgement, Inbox, LeaseLostError, SqliteInboxStore

from .harness import FakeClock, ScriptedRandom, fail, json_equal


class _Failure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


async def run(vector: Dict[str, Any], file: str, clock: FakeClock, random: ScriptedRandom) -> None:
    directory = tempfile.mkdtemp(prefix="conformance-inbox-")
    path = str(Path(directory) / "inbox.db")
    start = clock.now()
    config = vector.get("config") or {}
    problems: List[str] = []
    leases: Dict[str, Any] = {}
    tokens = {"n": 0}

    def rel(ms: float) -> float:
        return ms - start

    def rel_ack(ack: Acknowledgement) -> Dict[str, Any]:
        out: Dict[str, Any] = {"stream": ack.stream, "id": ack.id, "seq": ack.seq, "outcome": ack.outcome,
                               "at": rel(ack.at)}
        if ack.error is not None:
            out["error"] = {"code": ack.error.code, "message": ack.error.message}
        return out

    def new_token() -> str:
        tokens["n"] += 1
        return f"lease-{tokens['n']}"

    def open_inbox() -> Inbox:
        options: Dict[str, Any] = {"clock": clock, "new_token": new_token,
                                   "retry_delay_ms": lambda attempt: config.get("retryDelayMs", 0)}
        if "leaseMs" in config:
            options["lease_ms"] = config["leaseMs"]
        if "maxAttempts" in config:
            options["max_attempts"] = config["maxAttempts"]
        return Inbox(SqliteInboxStore.open(path), **options)

    inbox = open_inbox()

    def compare(where: str, want: Any, got: Any) -> None:
        if not json_equal(want, got):
            problems.append(f"{where}: expected {json.dumps(want)}, got {json.dumps(got)}")

    def settle(label: str, action: Any) -> Any:
        lease = leases.get(label)
        if lease is None:
            raise AssertionError(f"{file}: no lease labelled {label!r}")
        try:
            return action(lease)
        except LeaseLostError:
            return {"error": "LEASE_LOST"}

    def check_state(where: str, want: Dict[str, Any]) -> None:
        if "messages" in want:
            got = [{"stream": m.stream, "id": m.id, "state": m.state, "attempts": m.attempts,
                    "lastError": {"code": m.last_error.code} if m.last_error else None} for m in inbox.list()]
            compare(f"{where} messages", [{"lastError": None, **m} for m in want["messages"]], got)
        for stream, cursor in (want.get("cursors") or {}).items():
            compare(f"{where} cursor of {stream}", cursor, inbox.cursor(stream))
        if "pendingAcknowledgements" in want:
            compare(f"{where} pendingAcknowledgements", want["pendingAcknowledgements"],
                    [rel_ack(a) for a in inbox.pending_acknowledgements()])

    def fail_action(step: Dict[str, Any]) -> Any:
        def act(lease: Any) -> Any:
            result = inbox.fail(lease, _Failure(step["error"]["code"], step["error"]["message"]))
            if result.outcome == "RETRY":
                return {"outcome": "RETRY", "attempts": result.attempts, "availableAt": rel(result.available_at)}
            return {"outcome": "QUARANTINED", "acknowledgement": rel_ack(result.acknowledgement)}
        return act

    try:
        for index, s in enumerate(vector["steps"]):
            where = f"step {index + 1}"
            if "receive" in s:
                r = s["receive"]
                compare(where, s["expect"], inbox.receive(r["stream"], r["id"], r["payload"], r.get("seq"),
                                                          r.get("cursor")))
            elif "lease" in s:
                lease = inbox.lease((s["lease"] or {}).get("stream"))
                if lease is not None and "as" in s:
                    leases[s["as"]] = lease
                compare(where, s["expect"], lease and {"stream": lease.stream, "id": lease.id,
                                                       "attempt": lease.attempt, "leaseUntil": rel(lease.lease_until)})
            elif "complete" in s:
                compare(where, s["expect"], settle(s["complete"], lambda lease: rel_ack(inbox.complete(lease))))
            elif "fail" in s:
                compare(where, s["expect"], settle(s["fail"], fail_action(s)))
            elif "acknowledged" in s:
                inbox.acknowledged(s["acknowledged"]["stream"], s["acknowledged"]["id"])
            elif "advance" in s:
                clock.advance(s["advance"])
            elif "restart" in s:
                inbox.close()
                inbox = open_inbox()
            else:
                check_state(where, s["check"])
        check_state("expect", vector["expect"])
    finally:
        inbox.close()
        shutil.rmtree(directory, ignore_errors=True)
    fail(file, problems)
