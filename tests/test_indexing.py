"""Indexing: path lists, incremental re-indexing, hooks, atomicity."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import treeseek
from treeseek.database import Database
from treeseek.errors import BuildError, NodeNotFound, PathError, TreeNotFound
from treeseek.index.run import ChangedFile
from treeseek.store.base import TreeWriter
from treeseek.trees.filesystem import FilesystemBuilder
from treeseek.trees.model import (
    ContentStatus,
    Node,
    NodeType,
    TreeInfo,
    TreeSource,
    node_id_for_path,
    sibling_sort_key,
)
from treeseek.trees.pathlist import PathListBuilder
from treeseek.trees.source import SourceEntry, SourceWarnings, TreeBuilder


def test_path_list_builds_directories_order_and_counts(database: Database) -> None:
    report = database.index(
        PathListBuilder(["src/b.py", "src/A.py", "src/a.py", "README.md", "src/sub/x.txt"]),
        name="t",
    )
    assert (report.added, report.changed, report.removed) == (5, 0, 0)
    info = database.tree("t")
    assert info.source is TreeSource.PATH_LIST
    assert (info.file_count, info.dir_count, info.node_count, info.max_depth) == (5, 3, 8, 3)
    top = database.children("t")
    assert [n.path for n in top] == ["src", "README.md"]
    assert [n.order for n in top] == [0, 1]
    # directories first, then case-insensitive name, ties by exact name
    assert [n.name for n in database.children("t", "src")] == ["sub", "A.py", "a.py", "b.py"]
    node = database.node("t", "src/a.py")
    assert node.id == node_id_for_path("src/a.py")
    assert node.type is NodeType.FILE and node.content_status is ContentStatus.ABSENT
    assert database.content("t", node) is None
    assert database.node("t", node.id) == node


@pytest.mark.parametrize("bad", ["../etc/passwd", "/etc/passwd", "a/../../b", "C:/x"])
def test_path_list_rejects_paths_that_escape(database: Database, bad: str) -> None:
    with pytest.raises(PathError):
        database.index(PathListBuilder(["ok.py", bad]), name="t")
    assert not database.store.has_tree("t")


def test_path_list_file_and_json(database: Database, tmp_path: Path) -> None:
    text = tmp_path / "paths.txt"
    text.write_text("a/b.py\r\n./c.py\n\nd//e.py\nempty/\n")
    database.index(paths_from=text, name="text")
    assert sorted(n.path for n in database.subtree("text")) == [
        "",
        "a",
        "a/b.py",
        "c.py",
        "d",
        "d/e.py",
        "empty",
    ]
    js = tmp_path / "paths.json"
    js.write_text('["x/y.py", "z.py"]')
    with pytest.raises(BuildError, match="is a file, not a directory"):
        database.index(js)  # only paths_from reads a path list (`treeseek index FILE.py`)
    database.index(paths_from=js)  # the name is the file's stem
    assert sorted(n.path for n in database.subtree("paths")) == ["", "x", "x/y.py", "z.py"]


def test_file_and_directory_clash_is_an_error(database: Database) -> None:
    with pytest.raises(BuildError):
        database.index(PathListBuilder(["a", "a/b"]), name="t")


def test_reindex_path_list_is_incremental(database: Database) -> None:
    database.index(PathListBuilder(["a/x.py", "a/y.py", "b/z.py"]), name="t")
    before = {n.path: n.id for n in database.subtree("t")}
    report = database.index(PathListBuilder(["a/x.py", "a/w.py", "b/z.py"]), name="t")
    assert (report.added, report.removed, report.unchanged) == (1, 1, 2)
    after = {n.path: n.id for n in database.subtree("t")}
    assert after["a/x.py"] == before["a/x.py"]
    assert "a/y.py" not in after
    assert [n.name for n in database.children("t", "a")] == ["w.py", "x.py"]


# -- incremental re-indexing of a directory -----------------------------------------------


class RecordingHook:
    """An index hook that records what each run handed it (and can fail on demand)."""

    def __init__(self) -> None:
        self.runs: list[tuple[list[str], list[str], list[bool]]] = []
        self.fail = False

    def apply(
        self,
        writer: TreeWriter,
        tree: TreeInfo,
        changed: Sequence[ChangedFile],
        removed: Sequence[Node],
    ) -> None:
        assert isinstance(writer, TreeWriter)
        self.runs.append(
            (
                sorted(c.node.path for c in changed),
                sorted(n.path for n in removed),
                [c.full for c in changed],
            )
        )
        if self.fail:
            raise RuntimeError("hook failed")


class CountingBuilder(TreeBuilder):
    """Wraps a builder and counts the file reads the indexer asks for."""

    def __init__(self, inner: TreeBuilder) -> None:
        self.inner = inner
        self.source = inner.source
        self.root = inner.root
        self.reads: list[str] = []

    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        for entry in self.inner.entries(warnings):
            if entry.read is None:
                yield entry
                continue
            read = entry.read

            def counted(read: Callable[[], bytes] = read, path: str = entry.path) -> bytes:
                self.reads.append(path)
                return read()

            yield replace(entry, read=counted)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _builder(root: Path) -> CountingBuilder:
    return CountingBuilder(FilesystemBuilder(root, use_git=False))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write(
        root,
        {f"pkg/m{i}.py": f"value = {i}\n" for i in range(10)}
        | {"README.md": "# r\n", "dup1.txt": "same\n", "dup2.txt": "same\n"},
    )
    return root


def test_reindex_touches_only_what_changed(tmp_path: Path, repo: Path) -> None:
    hook = RecordingHook()
    db = treeseek.open(tmp_path / "db.sqlite", hooks=[hook])
    first = _builder(repo)
    report = db.index(first, name="r")
    assert report.added == 13 and len(first.reads) == 13
    assert db.store.content_count() == 12  # dup1 and dup2 share one content
    assert hook.runs[0][2] == [True] * 12 + [True]
    ids = {n.path: n.id for n in db.subtree("r")}

    (repo / "pkg/m1.py").write_text("value = 'one'\n")  # content change
    os.utime(repo / "pkg/m2.py", ns=(1, 1))  # signature change only
    (repo / "pkg/m3.py").unlink()
    _write(repo, {"pkg/new.py": "fresh\n"})
    second = _builder(repo)
    report = db.index(second, name="r")
    assert sorted(second.reads) == ["pkg/m1.py", "pkg/m2.py", "pkg/new.py"]
    assert (report.added, report.changed, report.removed, report.unchanged) == (1, 1, 1, 11)
    assert hook.runs[1][:2] == (["pkg/m1.py", "pkg/new.py"], ["pkg/m3.py"])
    assert hook.runs[1][2] == [False, False]
    after = {n.path: n.id for n in db.subtree("r")}
    assert all(after[p] == i for p, i in ids.items() if p in after)
    assert db.text("r", "pkg/m1.py") == "value = 'one'\n"
    assert db.store.content_count() == 12  # old m1 and m3 contents were dropped, new ones added

    third = _builder(repo)
    report = db.index(third, name="r")
    assert third.reads == [] and report.unchanged == 13
    assert hook.runs[2][:2] == ([], [])
    db.close()


def test_a_failing_hook_rolls_back_the_whole_tree(tmp_path: Path, repo: Path) -> None:
    hook = RecordingHook()
    db = treeseek.open(tmp_path / "db.sqlite", hooks=[hook])
    db.index(_builder(repo), name="r")
    (repo / "pkg/m1.py").write_text("changed\n")
    (repo / "README.md").unlink()
    hook.fail = True
    with pytest.raises(RuntimeError, match="hook failed"):
        db.index(_builder(repo), name="r")
    assert db.text("r", "pkg/m1.py") == "value = 1\n"
    assert db.node("r", "README.md").is_file
    assert db.store.contents([hashlib.sha256(b"changed\n").hexdigest()]) == {}
    hook.fail = False
    report = db.index(_builder(repo), name="r")
    assert (report.changed, report.removed) == (1, 1)
    db.close()


def test_base_copy_then_only_the_differences(tmp_path: Path, repo: Path) -> None:
    hook = RecordingHook()
    db = treeseek.open(tmp_path / "db.sqlite", hooks=[hook])
    db.index(_builder(repo), name="v1")
    (repo / "pkg/m4.py").write_text("value = 'four'\n")
    (repo / "pkg/m5.py").unlink()
    second = _builder(repo)
    report = db.index(second, name="v2", base="v1")
    assert second.reads == ["pkg/m4.py"]
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 1, 1, 11)
    assert hook.runs[-1][:2] == (["pkg/m4.py"], ["pkg/m5.py"])
    assert db.text("v1", "pkg/m4.py") == "value = 4\n"
    assert db.text("v2", "pkg/m4.py") == "value = 'four'\n"
    assert db.node("v1", "pkg/m5.py").is_file
    with pytest.raises(NodeNotFound):
        db.node("v2", "pkg/m5.py")
    with pytest.raises(TreeNotFound):
        db.index(_builder(repo), name="v3", base="nope")
    db.close()


def test_readers_never_see_half_a_tree(tmp_path: Path, repo: Path) -> None:
    """A reader in another thread, during the hook (inside the write), sees the old version."""
    db = treeseek.open(tmp_path / "db.sqlite", hooks=[])
    db.index(_builder(repo), name="r")
    seen: list[int] = []

    class PeekingHook:
        def apply(
            self,
            writer: TreeWriter,
            tree: TreeInfo,
            changed: Sequence[ChangedFile],
            removed: Sequence[Node],
        ) -> None:
            worker = threading.Thread(target=lambda: seen.append(db.tree("r").file_count))
            worker.start()
            worker.join()

    db.hooks = [PeekingHook()]
    for i in range(5):
        (repo / f"pkg/m{i}.py").unlink()
    db.index(_builder(repo), name="r")
    assert seen == [13]
    assert db.tree("r").file_count == 8
    db.close()


_KILLED_INDEXER = """
import sys, time
from pathlib import Path
import treeseek
from treeseek.trees.filesystem import FilesystemBuilder

class SlowHook:
    def apply(self, writer, tree, changed, removed):
        Path(sys.argv[3]).write_text("inside the transaction")
        time.sleep(600)

db = treeseek.open(sys.argv[1], hooks=[SlowHook()])
db.index(FilesystemBuilder(sys.argv[2], use_git=False), name="r")
"""


def test_killed_indexer_leaves_the_previous_version_and_the_next_run_completes(
    tmp_path: Path, repo: Path
) -> None:
    db_path = tmp_path / "db.sqlite"
    with treeseek.open(db_path, hooks=[]) as db:
        db.index(FilesystemBuilder(repo, use_git=False), name="r")
        before = sorted((n.path, n.content_hash) for n in db.subtree("r"))
    for i in range(10):
        (repo / f"pkg/m{i}.py").write_text(f"rewritten {i}\n")
    (repo / "README.md").unlink()
    marker = tmp_path / "marker"
    process = subprocess.Popen(
        [sys.executable, "-c", _KILLED_INDEXER, str(db_path), str(repo), str(marker)]
    )
    try:
        # no deadline of our own (no wall-time assertion): pytest-timeout ends a hung run
        while not marker.exists():
            assert process.poll() is None, "the indexer exited early"
            time.sleep(0.05)
        # a reader in another process sees the committed version while the write is open
        with treeseek.open(db_path, hooks=[]) as reader:
            assert sorted((n.path, n.content_hash) for n in reader.subtree("r")) == before
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    with treeseek.open(db_path, hooks=[]) as db:
        assert sorted((n.path, n.content_hash) for n in db.subtree("r")) == before
        assert db.text("r", "pkg/m3.py") == "value = 3\n"
        report = db.index(FilesystemBuilder(repo, use_git=False), name="r")
        assert (report.changed, report.removed) == (10, 1)
        assert db.text("r", "pkg/m3.py") == "rewritten 3\n"


def test_fast_node_construction_equals_the_constructor() -> None:
    from treeseek.index.run import _make_node

    args = (
        "abcdefghij",
        "a/b.py",
        NodeType.FILE,
        "klmnopqrst",
        2,
        3,
        0,
        10,
        "h" * 64,
        ContentStatus.STORED,
    )
    fast, slow = _make_node(*args), Node(*args)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)


def test_windows_style_and_messy_listings_normalize(database: Database) -> None:
    database.index(PathListBuilder(["pkg\\mod.py", "./a//b.py", "x:y.txt", "dir/sub/"]), name="t")
    assert sorted(n.path for n in database.subtree("t")) == [
        "",
        "a",
        "a/b.py",
        "dir",
        "dir/sub",
        "pkg",
        "pkg/mod.py",
        "x:y.txt",
    ]
    assert database.node("t", "dir/sub").is_dir


def test_fast_path_list_entries_equal_the_constructor() -> None:
    from treeseek.trees.pathlist import _file_entry

    assert _file_entry("a/b.py", NodeType.FILE) == SourceEntry("a/b.py", NodeType.FILE)


@settings(deadline=None)  # each example opens a database file: slow on a loaded machine
@given(
    st.lists(
        st.text(alphabet="aAbBß_.-é1", min_size=1, max_size=4).filter(
            lambda s: s not in (".", "..")
        ),
        min_size=1,
        max_size=12,
        unique=True,
    ),
    st.data(),
)
def test_stored_sibling_order_is_the_documented_sort_key(
    names: list[str], data: st.DataObject
) -> None:
    from treeseek.index.run import sort_siblings

    is_dir = {n: data.draw(st.booleans()) for n in names}
    assert sort_siblings(list(names)) == sorted(names, key=lambda n: (n.casefold(), n))
    listing = [f"p/{n}/" if is_dir[n] else f"p/{n}" for n in names]
    with (
        tempfile.TemporaryDirectory() as scratch,
        treeseek.open(Path(scratch) / "order.db", hooks=[]) as db,
    ):
        db.index(PathListBuilder(listing), name="t")
        children = db.children("t", "p")
    expected = sorted(
        names,
        key=lambda n: sibling_sort_key(n, NodeType.DIRECTORY if is_dir[n] else NodeType.FILE),
    )
    assert [c.name for c in children] == expected
    assert [c.order for c in children] == list(range(len(names)))


def test_walk_is_depth_first_in_sibling_order(database: Database) -> None:
    database.index(PathListBuilder(["b.py", "a/z.py", "a/b/c.py", "A.txt"]), name="t")
    assert [n.path for n in database.walk("t")] == [
        "",
        "a",
        "a/b",
        "a/b/c.py",
        "a/z.py",
        "A.txt",
        "b.py",
    ]
    assert [n.path for n in database.walk("t", "a/b")] == ["a/b", "a/b/c.py"]


def test_query_delegates_to_the_search_strategies(database: Database) -> None:
    from treeseek.errors import ConfigError
    from treeseek.llm.select import navigator_from_spec

    database.index(
        PathListBuilder(["src/retry/backoff.py", "src/http/client.py", "docs/index.md"]), name="t"
    )
    result = database.query(
        "t", "where is the retry backoff computed?", k=2, navigator=navigator_from_spec("lexical")
    )
    assert result.files and result.files[0].path == "src/retry/backoff.py"
    assert result.strategy == "flat"  # the CLI's default without an LLM
    tree_search = database.query("t", "where is the retry backoff computed?", strategy="auto")
    assert tree_search.strategy == "beam" and tree_search.navigator == "lexical"
    with pytest.raises(ConfigError, match="unknown query option"):
        database.query("t", "q", bogus=1)


class InterferingBuilder(TreeBuilder):
    """Another indexer writes the same tree while this one reads a file."""

    source = TreeSource.PATH_LIST
    root = "<interfering>"

    def __init__(self, db_path: Path, name: str) -> None:
        self.db_path, self.name = db_path, name

    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        def read() -> bytes:
            with treeseek.open(self.db_path, hooks=[]) as other:
                other.index(PathListBuilder(["other.py"]), name=self.name)
            return b"mine\n"

        yield SourceEntry("mine.py", NodeType.FILE, size=5, signature="s", read=read)


@pytest.mark.parametrize("existing", [False, True])
def test_a_concurrent_writer_is_detected_not_overwritten(tmp_path: Path, existing: bool) -> None:
    from treeseek.errors import StoreError

    db_path = tmp_path / "db.sqlite"
    with treeseek.open(db_path, hooks=[]) as db:
        if existing:
            db.index(PathListBuilder(["first.py"]), name="t")
        with pytest.raises(StoreError, match="another indexer"):
            db.index(InterferingBuilder(db_path, "t"), name="t")
        assert [n.path for n in db.subtree("t") if n.is_file] == ["other.py"]
        db.index(PathListBuilder(["mine.py"]), name="t")  # the next run completes
        assert [n.path for n in db.subtree("t") if n.is_file] == ["mine.py"]


def test_progress_reports_reading_and_writing(tmp_path: Path, repo: Path) -> None:
    from treeseek.index.run import IndexProgress

    events: list[IndexProgress] = []
    with treeseek.open(tmp_path / "db.sqlite", hooks=[]) as db:
        db.index(_builder(repo), name="r", progress=events.append)
    reads = [e for e in events if e.phase == "read"]
    assert reads and reads[-1].done == reads[-1].total == 13
    writes = [e for e in events if e.phase == "write"]
    assert [w.done for w in writes] == [0, writes[0].total] and writes[0].total == 13 + 2


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's coarse real-time clock")
def test_a_file_created_while_the_index_reads_leaves_the_tree_stale(tmp_path: Path) -> None:
    """A file created in a directory after the index listed it (while it reads and hashes
    the files) is not in the new version, so the tree must say it is stale. Freshness took
    the commit's time for 'indexed at', after the reads: the directory's newer entry looked
    older than the index and the tree was called fresh for good."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("A = 1\n")
    coarse = 5  # CLOCK_REALTIME_COARSE: the clock file times are stamped from

    def create_late(progress: treeseek.IndexProgress) -> None:
        if progress.phase == "read" and progress.done == progress.total:
            listed_before = time.time_ns()
            while time.clock_gettime_ns(coarse) <= listed_before:  # the next clock tick
                pass
            (root / "pkg" / "late.py").write_text("LATE = 2\n")

    with treeseek.open(tmp_path / "t.db") as db:
        db.index(root, name="t", progress=create_late)
        assert db.content("t", "pkg/a.py") == b"A = 1\n"
        with pytest.raises(NodeNotFound):
            db.node("t", "pkg/late.py")
        fresh = db.freshness("t")
        assert fresh.stale is True and fresh.dirs_changed == 1, fresh
        db.index(root, name="t")
        assert db.content("t", "pkg/late.py") == b"LATE = 2\n"
        assert db.freshness("t").stale is False
