"""SampleSink: what `iolens monitor --db` stores its samples through, from a thread of its own.

A node's monitor hands over one record per interval; the sink turns it into narrow samples and a writer thread
stores them in one transaction every `flush_s` seconds (and at close). The sampler never waits for the
database: a slow server, a checkpoint, a lost connection or a full disk delays storing, not sampling.

Nodes' batches are spread in time (the first comes after a random 0.5-1.5 intervals). A batch that cannot
be stored stays in memory and is tried again (the connection reopened first, when the
sink can reopen it) after `retry_s`, doubling up to 5 minutes. What is kept waiting is bounded
(`max_buffered` samples, about 10 minutes of a Lustre client's at 1 Hz): past it the oldest samples are
dropped and counted. The owner is told once when storing stops (`on_error`) and once when it works again
(`on_resume`); close() makes a last attempt and says what could not be stored.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from iolens.store.db import StoreError
from iolens.store.records import Sample
from iolens.store.samples import record_samples
from iolens.store.store import Store

MAX_RETRY_S = 300.0


class SampleSink:
    def __init__(
        self,
        store: Store,
        host: str,
        flush_s: float = 10.0,
        on_error: Callable[[str], None] | None = None,
        on_resume: Callable[[int], None] | None = None,
        reopen: Callable[[], Store] | None = None,
        retry_s: float = 10.0,
        max_buffered: int = 400_000,
    ) -> None:
        self.store = store
        self.host = host
        self.flush_s = flush_s
        self.on_error = on_error
        self.on_resume = on_resume
        self.reopen = reopen
        self.retry_s = retry_s
        self.max_buffered = max_buffered
        self.stored = 0  # samples committed
        self.dropped = 0  # samples given up (the buffer was full while storing failed, or at close)
        self.failed: str | None = None  # why the last attempt failed; None while storing works
        self._pending: deque[Sample] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closing = False
        self._delay = retry_s
        self._thread = threading.Thread(target=self._writer, name="iolens-sample-sink", daemon=True)
        self._thread.start()

    def __call__(self, record: dict[str, Any]) -> None:
        if record.get("type", "sample") != "sample":
            return
        batch = list(record_samples(record, self.host))
        with self._lock:
            self._pending.extend(batch)
            over = len(self._pending) - self.max_buffered
            for _ in range(max(0, over)):
                self._pending.popleft()
            self.dropped += max(0, over)

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop the writer after a last attempt to store everything buffered; what is left is dropped."""
        with self._lock:
            self._closing = True
            self._wake.notify()
        self._thread.join(timeout_s)
        with self._lock:
            # A writer still inside a transaction after the timeout (a server that does not answer) keeps the
            # store: what is left is dropped rather than stored beside it.
            if self._pending and not self._thread.is_alive():
                self._store_pending(last=True)
            left = len(self._pending)
            self._pending.clear()
            self.dropped += left

    # --- the writer thread ---------------------------------------------------------------------------

    def _writer(self) -> None:
        with self._lock:
            # The first batch at a random point of 0.5-1.5 intervals: a center that starts every node's
            # monitor at once (at boot, from one pdsh) would otherwise have all nodes commit in the same
            # instant every interval, a burst the server takes far slower than the same rows spread out.
            due = time.monotonic() + self.flush_s * random.uniform(0.5, 1.5)
            while not self._closing:
                self._wake.wait(max(0.0, due - time.monotonic()))
                if self._closing:
                    break
                if time.monotonic() < due:
                    continue
                ok = self._store_pending()
                due = time.monotonic() + (self.flush_s if ok else self._delay)

    def _store_pending(self, last: bool = False) -> bool:
        """Store the buffered samples (called with the lock held; released while the database works, so the
        sampler can go on handing records over). True when they were stored."""
        if not self._pending:
            return True
        batch = list(self._pending)
        self._pending.clear()
        self._lock.release()
        try:
            err = self._put(batch)
        finally:
            self._lock.acquire()
        if err is None:
            if self.failed is not None:
                self.failed = None
                self._delay = self.retry_s
                if self.on_resume is not None:
                    self.on_resume(self.dropped)
            self.stored += len(batch)
            return True
        # Put back in front of what came meanwhile, the oldest dropped past the bound.
        self._pending.extendleft(reversed(batch))
        over = len(self._pending) - self.max_buffered
        for _ in range(max(0, over)):
            self._pending.popleft()
        self.dropped += max(0, over)
        first = self.failed is None
        self.failed = err
        self._delay = min(MAX_RETRY_S, self._delay * (1 if first else 2))
        if first and self.on_error is not None and not last:
            self.on_error(err)
        return False

    def _put(self, batch: list[Sample]) -> str | None:
        if self.failed is not None and self.reopen is not None:
            try:
                self.store.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is replaced anyway
                pass
            try:
                self.store = self.reopen()
            except StoreError as exc:
                return str(exc)
            except Exception as exc:  # noqa: BLE001 - as below
                return f"{type(exc).__name__}: {str(exc).strip()}"
        first = min(s.t for s in batch)
        try:
            self.store.put_samples(batch, f"monitor:{self.host}:{first!r}:{len(batch)}")
        except StoreError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - a driver's own error (a session ended by the server, say)
            # escapes the store's wrapping: the writer must live on, or storing would stop without a word.
            return f"{type(exc).__name__}: {str(exc).strip()}"
        return None
