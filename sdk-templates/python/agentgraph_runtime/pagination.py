"""Cursor auto-pagination over Relay connections, as an async generator and as a plain generator for the sync
client: the next page is fetched only when every node of the current one was taken, so a consumer that stops
(``break``, ``aclose()``/``close()``, a cancelled task) never causes another request. ``item`` turns each node into
what the caller gets (the generated SDK passes the node's dataclass decoder)."""
from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, List, Mapping, Optional, Set, TypeVar

from .errors import InvalidResponseError

T = TypeVar("T")
FetchPage = Callable[[Optional[str]], Awaitable[Mapping[str, Any]]]
FetchPageSync = Callable[[Optional[str]], Mapping[str, Any]]


def _nodes(page: Mapping[str, Any]) -> List[Any]:
    if not isinstance(page, Mapping) or not isinstance(page.get("pageInfo"), Mapping):
        raise _invalid("A page has no pageInfo: the selection must include pageInfo { hasNextPage endCursor }.")
    edges = page.get("edges")
    if edges:
        return [e["node"] for e in edges if e is not None]
    return list(page.get("nodes") or [])


def _next_cursor(page: Mapping[str, Any], seen: Set[str]) -> Optional[str]:
    """The cursor of the next page; None when this was the last one."""
    info = page["pageInfo"]
    if not info.get("hasNextPage"):
        return None
    cursor = info.get("endCursor")
    if not isinstance(cursor, str) or not cursor or cursor in seen:
        raise _invalid(
            "The server says there is a next page but gave no new endCursor; stopping instead of looping. "
            "Select pageInfo { hasNextPage endCursor }."
        )
    seen.add(cursor)
    return cursor


def _invalid(message: str) -> InvalidResponseError:
    return InvalidResponseError("INVALID_RESPONSE", message, False)


async def paginate(fetch_page: FetchPage, item: Callable[[Any], T]) -> AsyncIterator[T]:
    after: Optional[str] = None
    seen: Set[str] = set()
    while True:
        page = await fetch_page(after)
        for node in _nodes(page):
            yield item(node)
        after = _next_cursor(page, seen)
        if after is None:
            return


def paginate_sync(fetch_page: FetchPageSync, item: Callable[[Any], T]) -> Iterator[T]:
    after: Optional[str] = None
    seen: Set[str] = set()
    while True:
        page = fetch_page(after)
        for node in _nodes(page):
            yield item(node)
        after = _next_cursor(page, seen)
        if after is None:
            return
