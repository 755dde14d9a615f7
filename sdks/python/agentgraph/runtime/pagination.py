"""Cursor auto-pagination over Relay connections as an async generator: the next page is fetched only when every
node of the current one was taken. Once the signal aborts, the generator raises AbortError at its next step and
never requests another page."""
from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable, List, Mapping, Optional

from .clock import AbortSignal
from .errors import InvalidResponseError

FetchPage = Callable[[Optional[str], Optional[AbortSignal]], Awaitable[Mapping[str, Any]]]


def _check(signal: Optional[AbortSignal]) -> None:
    if signal is not None:
        signal.throw_if_aborted()


def _nodes(page: Mapping[str, Any]) -> List[Any]:
    edges = page.get("edges")
    if edges:
        return [e["node"] for e in edges if e is not None]
    return list(page.get("nodes") or [])


def _invalid(message: str) -> InvalidResponseError:
    return InvalidResponseError("INVALID_RESPONSE", message, False)


async def paginate(fetch_page: FetchPage, signal: Optional[AbortSignal] = None) -> AsyncIterator[Any]:
    after: Optional[str] = None
    seen = set()
    while True:
        _check(signal)
        page = await fetch_page(after, signal)
        _check(signal)
        if not isinstance(page, Mapping) or not isinstance(page.get("pageInfo"), Mapping):
            raise _invalid("A page has no pageInfo: the selection must include pageInfo { hasNextPage endCursor }.")
        for node in _nodes(page):
            _check(signal)
            yield node
        info = page["pageInfo"]
        if not info.get("hasNextPage"):
            return
        cursor = info.get("endCursor")
        if not isinstance(cursor, str) or not cursor or cursor in seen:
            raise _invalid(
                "The server says there is a next page but gave no new endCursor; stopping instead of looping. "
                "Select pageInfo { hasNextPage endCursor }."
            )
        seen.add(cursor)
        after = cursor
