"""``text/event-stream`` parsing exactly per the HTML standard (§9.2.6): CR, LF or CRLF line ends (also split
across chunks), a leading BOM, ``:`` comments, multi-line ``data``, ``id`` without NUL, ``retry`` digits only; an
event is dispatched at a blank line when its data buffer is not empty."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str
    last_event_id: str


@dataclass(frozen=True)
class SseRetry:
    ms: int


class SseParser:
    def __init__(self) -> None:
        self._buffer = ""
        self._bom_checked = False
        self._pending_cr = False
        self._data: List[str] = []
        self._event = ""
        self.last_event_id = ""
        self._decoder_tail = b""

    def feed(self, chunk: bytes) -> List[object]:
        data = self._decoder_tail + chunk
        try:
            text = data.decode("utf-8")
            self._decoder_tail = b""
        except UnicodeDecodeError as exc:
            if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
                text = data[: exc.start].decode("utf-8")
                self._decoder_tail = data[exc.start:]
            else:
                text = data.decode("utf-8", errors="replace")
                self._decoder_tail = b""
        return self.feed_text(text)

    def feed_text(self, text: str) -> List[object]:
        if not self._bom_checked and text:
            self._bom_checked = True
            if text.startswith("\ufeff"):
                text = text[1:]
        out: List[object] = []
        for ch in text:
            if self._pending_cr:
                self._pending_cr = False
                if ch == "\n":
                    continue
            if ch == "\r" or ch == "\n":
                self._pending_cr = ch == "\r"
                item = self._line(self._buffer)
                self._buffer = ""
                if item is not None:
                    out.append(item)
            else:
                self._buffer += ch
        return out

    def _line(self, line: str) -> Optional[object]:
        if line == "":
            data, event = self._data, self._event
            self._data, self._event = [], ""
            if not data:
                return None
            return SseEvent(event or "message", "\n".join(data), self.last_event_id)
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry":
            if value.isdigit() and value.isascii():
                return SseRetry(int(value))
        return None
