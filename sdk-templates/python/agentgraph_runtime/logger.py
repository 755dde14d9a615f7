"""Logging with metadata only: operation, kind, event, attempts, latency, bytes, status, code. Never variables,
tokens or response bodies. ``JsonLogger`` writes one JSON object per entry through the ``logging`` module."""
from __future__ import annotations

import json
import logging
from typing import Any, Mapping, Protocol


class Logger(Protocol):
    def log(self, entry: Mapping[str, Any]) -> None: ...


class SilentLogger:
    def log(self, entry: Mapping[str, Any]) -> None:
        return None


class JsonLogger:
    def __init__(self, name: str = "agentgraph", level: int = logging.INFO) -> None:
        self._logger = logging.getLogger(name)
        self._level = level

    def log(self, entry: Mapping[str, Any]) -> None:
        self._logger.log(self._level, json.dumps(dict(entry), separators=(",", ":"), sort_keys=True))


silent_logger = SilentLogger()
