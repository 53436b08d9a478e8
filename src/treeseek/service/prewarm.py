"""Keep a server's trees warm: build a changed tree's tables in the background.

A query reads per-tree tables (the tree's files, chunk, symbol and file BM25, the symbol
catalog) that are built for one *version* of a tree and kept in the database's caches
(:mod:`treeseek.search.caches`). A re-index (``treeseek watch`` beside the server, an index
job, another process sharing the database) makes a new version, and the next query pays for
building them again: 0.5-1 s on django, ~12 s on a 50,000-file monorepo, against tens of
milliseconds warm. An agent edits a file, the watcher re-indexes it, and its next question
stalls.

The :class:`Prewarmer` polls the versions of the trees this server has answered queries for
(a one-row read per tree, every ``interval`` seconds) and builds a tree's tables as soon as a
new version shows (:meth:`treeseek.database.Database.warm`), on its own thread, so the next
question finds them built. Answers do not change: the tables are a function of the tree
version, built by the code a query runs, and a query that arrives while they are being built
waits for that build instead of starting its own (single flight).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from treeseek.database import Database
from treeseek.errors import TreeNotFound
from treeseek.search.caches import DEFAULT_TREES, tree_key

log = logging.getLogger(__name__)
log.addHandler(logging.NullHandler())

#: seconds between two looks at the trees' versions
POLL_INTERVAL_S = 1.0
#: the longest wait before a failed warm-up of an unchanged version is tried again
MAX_RETRY_S = 300.0


class Prewarmer:
    """Builds the tables of the trees a server answers for whenever one of them changes.

    :meth:`note` records a tree a query asked for (the ``max_trees`` most recent are
    watched, as many as the caches keep); :meth:`check` warms every watched tree whose
    version changed and returns their names; :meth:`start` runs :meth:`check` every
    ``interval`` seconds on a daemon thread until :meth:`stop` (a server starts it when it
    starts: with no tree asked for yet, a poll reads nothing). A warm-up that failed is tried
    again at once for a new version, and for the same version after a wait that doubles with
    each failure (``interval`` * 2, 4, 8 ... up to :data:`MAX_RETRY_S`): a failure that
    repeats does not rebuild a large tree's tables every second for ever.
    """

    def __init__(
        self,
        db: Database,
        *,
        warm: Callable[[str], object] | None = None,
        interval: float = POLL_INTERVAL_S,
        max_trees: int = DEFAULT_TREES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        #: what warming a tree does (default :meth:`Database.warm`; a Service adds its own)
        self.warm = warm or db.warm
        self.interval = interval
        self.max_trees = max_trees
        #: watched trees, least recently asked first -> the version last seen warm
        self._trees: OrderedDict[str, tuple[str, str, str] | None] = OrderedDict()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._clock = clock
        #: tree -> the version whose warm-up failed last, so a failure is logged once per
        #: version, not every poll
        self._failed: dict[str, tuple[str, str, str]] = {}
        #: tree -> (failures of that version in a row, when it may be tried again)
        self._retry: dict[str, tuple[int, float]] = {}

    def note(self, tree: str) -> None:
        """A query asked ``tree``: watch it (the next check finds its version built)."""
        with self._lock:
            if tree in self._trees:
                self._trees.move_to_end(tree)
            else:
                self._trees[tree] = None
                while len(self._trees) > max(1, self.max_trees):
                    self._trees.popitem(last=False)

    def watched(self) -> list[str]:
        """The watched trees, least recently asked first."""
        with self._lock:
            return list(self._trees)

    def check(self) -> list[str]:
        """Warm every watched tree whose version is not the one last seen; the names warmed.
        A tree that no longer exists is no longer watched."""
        warmed = []
        for name in self.watched():
            if self._stop.is_set():
                break
            try:
                key = tree_key(self.db.tree(name))
            except TreeNotFound:
                with self._lock:
                    self._trees.pop(name, None)
                self._failed.pop(name, None)
                self._retry.pop(name, None)
                continue
            with self._lock:
                if self._trees.get(name, key) == key:
                    continue  # unchanged (or forgotten meanwhile)
            same = self._failed.get(name) == key
            failures, not_before = self._retry.get(name, (0, 0.0)) if same else (0, 0.0)
            if same and self._clock() < not_before:
                continue  # failed on this version: waiting before the next try
            try:
                self.warm(name)
            except Exception as exc:  # a warm-up never takes the server down
                if not same:
                    self._failed[name] = key
                    log.warning("warming tree %r failed: %r", name, str(exc)[:500])
                wait = min(MAX_RETRY_S, self.interval * 2 ** (failures + 1))
                self._retry[name] = (failures + 1, self._clock() + wait)
                continue
            self._failed.pop(name, None)
            self._retry.pop(name, None)
            with self._lock:
                if name in self._trees:
                    self._trees[name] = key
            warmed.append(name)
        return warmed

    def start(self) -> None:
        """Poll on a daemon thread (idempotent; nothing after :meth:`stop`)."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._loop, name="treeseek-prewarm", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop polling; waits up to ``timeout`` seconds for a warm-up under way to end."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception as exc:  # the database closed under us, a server gone, ...
                if self._stop.is_set():
                    return
                log.warning("tree warm-up check failed: %r", str(exc)[:500])


__all__ = ["MAX_RETRY_S", "POLL_INTERVAL_S", "Prewarmer"]
