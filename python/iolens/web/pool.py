"""A bounded pool of store connections, one per request at a time.

Starlette runs the portal's (synchronous) page functions in a thread pool; a store connection is not shared
between threads, so each request borrows one here and gives it back. The pool bounds how many connections a
worker holds (PostgreSQL counts them against max_connections) and replaces a connection that broke.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager

from iolens.store.db import StoreError
from iolens.store.queries import NotFound
from iolens.store.store import Store

WAIT_S = 30.0


class PoolExhausted(StoreError):
    pass


class StorePool:
    def __init__(self, url: str, size: int) -> None:
        self.url = url
        self._free: queue.LifoQueue[Store | None] = queue.LifoQueue()
        for _ in range(size):
            self._free.put(None)

    @contextmanager
    def store(self) -> Iterator[Store]:
        try:
            store = self._free.get(timeout=WAIT_S)
        except queue.Empty:
            raise PoolExhausted(f"no database connection free after {WAIT_S:.0f} s") from None
        try:
            if store is None:
                store = Store.open(self.url, create=False)
            yield store
        except NotFound:
            raise
        except StoreError:
            # The connection may be what failed (a restarted server): the next request opens a new one.
            if store is not None:
                store.close()
            store = None
            raise
        finally:
            self._free.put(store)

    def close(self) -> None:
        while True:
            try:
                store = self._free.get_nowait()
            except queue.Empty:
                return
            if store is not None:
                store.close()
