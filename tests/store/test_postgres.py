"""The PostgreSQL store on a real server: the same answers as SQLite, one transaction per
write, writers serialized per tree, killed writers, migrations, copies between backends."""

from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli import app
from treeseek.cli.app import load_commands
from treeseek.database import Database
from treeseek.errors import ConfigError, SchemaError
from treeseek.index.code_hook import CodeIndexHook
from treeseek.index.transfer import copy_trees
from treeseek.store import open_store
from treeseek.store.code_base import VectorKey
from treeseek.store.migrations import POSTGRES_MIGRATIONS, PostgresMigration
from treeseek.store.postgres import PostgresStore
from treeseek.trees.model import node_id_for_path

SRC = Path(__file__).resolve().parents[2] / "src" / "treeseek"
#: a small real repository: treeseek's own store, trees and text packages
PACKAGES = ("store", "trees", "text")
QUESTIONS = (
    "where are node ids derived from paths",
    "migration that adds per content term counts of chunks and symbols",
    "sibling order directories first then case-insensitive name",
    "advisory lock serializes two writers of one tree",
    "TreeNotFound raised when a tree name is unknown",
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    for package in PACKAGES:
        shutil.copytree(SRC / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _open(location: str | Path) -> Database:
    return treeseek.open(location, hooks=[CodeIndexHook(workers=1)])


def _answers(db: Database, tree: str) -> list[list[tuple[str, float, Any]]]:
    out = []
    for question in QUESTIONS:
        result = db.query(tree, question, strategy="flat", k=20, include_content=False)
        out.append([(h.path, h.score or 0.0, h.evidence.chunk) for h in result.files])
    return out


def _same(a: list[list[tuple[str, float, Any]]], b: list[list[tuple[str, float, Any]]]) -> None:
    assert [[h[0] for h in q] for q in a] == [[h[0] for h in q] for q in b]  # same ranking
    assert [[h[2] for h in q] for q in a] == [[h[2] for h in q] for q in b]  # same evidence
    for qa, qb in zip(a, b, strict=True):
        assert np.allclose([h[1] for h in qa], [h[1] for h in qb], rtol=0, atol=1e-6)


def test_flat_results_are_identical_on_sqlite_and_postgres(
    repo: Path, tmp_path: Path, postgres_url: Callable[[], str]
) -> None:
    with _open(tmp_path / "lite.db") as lite:
        lite.index(repo, name="repo")
        expected = _answers(lite, "repo")
    url = postgres_url()
    with _open(url) as pg:
        pg.index(repo, name="repo")
        pg.index(repo, name="other")  # another tree changes nothing
        assert _answers(pg, "repo") == _answers(pg, "repo")
        got = _answers(pg, "repo")
    assert any(expected)
    _same(expected, got)


def test_copy_sqlite_to_postgres_and_back_keeps_answers(
    repo: Path, tmp_path: Path, postgres_url: Callable[[], str]
) -> None:
    with _open(tmp_path / "a.db") as lite:
        lite.index(repo, name="repo")
        expected = _answers(lite, "repo")
        nodes = [(n.path, n.order, n.content_hash) for n in lite.subtree("repo")]
    url = postgres_url()
    source, target = open_store(tmp_path / "a.db"), open_store(url)
    try:
        [copied] = copy_trees(source, target)
        assert copied.code_files > 0 and copied.new_contents == copied.contents
        [again] = copy_trees(source, target)  # replaces the tree, adds no content
        assert again.new_contents == 0
    finally:
        source.close()
        target.close()
    with _open(url) as pg:
        assert [(n.path, n.order, n.content_hash) for n in pg.subtree("repo")] == nodes
        _same(expected, _answers(pg, "repo"))
    load_commands()
    result = CliRunner().invoke(app, ["db", "copy", url, str(tmp_path / "b.db"), "--json"])
    assert result.exit_code == 0, result.output
    with _open(tmp_path / "b.db") as back:
        _same(expected, _answers(back, "repo"))
        # unchanged files are recognised: re-indexing from the copy parses nothing
        report = back.index(repo, name="repo")
        assert report.added == report.changed == report.removed == 0


def _files(store: Any, tree: str) -> list[str]:
    return sorted(n.path for n in store.subtree(tree))


def _write_one(store: PostgresStore, tree: str, path: str) -> None:
    from treeseek.trees.model import ContentStatus, Node, NodeType

    with store.write_tree(tree) as writer:
        writer.upsert_nodes(
            [
                Node(node_id_for_path(""), "", NodeType.DIRECTORY, None, 0, 0, 1),
                Node(
                    node_id_for_path(path),
                    path,
                    NodeType.FILE,
                    node_id_for_path(""),
                    1,
                    0,
                    content_status=ContentStatus.ABSENT,
                ),
            ],
            {},
        )


def test_writers_of_one_tree_wait_for_each_other_and_of_two_trees_do_not(
    postgres_url: Callable[[], str],
) -> None:
    url = postgres_url()
    store = PostgresStore(url)
    other = PostgresStore(url)  # another "process": its own pool
    try:
        _write_one(store, "t", "a.txt")
        entered = threading.Event()
        release = threading.Event()
        order: list[str] = []

        def first() -> None:
            with store.write_tree("t") as writer:
                writer.delete_nodes([node_id_for_path("a.txt")])
                entered.set()
                release.wait()
                order.append("first")

        def same_tree() -> None:
            with other.write_tree("t"):
                order.append("second")

        holder = threading.Thread(target=first)
        holder.start()
        entered.wait()
        waiter = threading.Thread(target=same_tree)
        waiter.start()
        _write_one(other, "u", "b.txt")  # another tree: not blocked by the held lock
        assert _files(other, "u") == ["", "b.txt"]
        assert _files(other, "t") == ["", "a.txt"]  # readers see the committed version
        assert order == []
        release.set()
        holder.join()
        waiter.join()
        assert order == ["first", "second"]
        assert _files(other, "t") == [""]
    finally:
        store.close()
        other.close()


KILLED_WRITER = """
import sys
from treeseek.store.postgres import PostgresStore
from treeseek.trees.model import node_id_for_path
store = PostgresStore(sys.argv[1])
with store.write_tree("t") as writer:
    writer.delete_nodes([node_id_for_path("a.txt")])
    writer.put_contents([("f" * 64, b"half")])
    print("inside", flush=True)
    sys.stdin.read()  # killed here
"""


def test_a_killed_writer_leaves_the_previous_version(postgres_url: Callable[[], str]) -> None:
    url = postgres_url()
    store = PostgresStore(url)
    try:
        _write_one(store, "t", "a.txt")
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
        assert _files(store, "t") == ["", "a.txt"]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _files(store, "t") == ["", "a.txt"]
        assert store.contents(["f" * 64]) == {}
        _write_one(store, "t", "c.txt")  # the lock went with the dead connection
        assert _files(store, "t") == ["", "a.txt", "c.txt"]
    finally:
        store.close()


def _write_shared(store: PostgresStore, tree: str, data: bytes, hold: Any = None) -> None:
    """Tree ``tree`` with one file of ``data``; inside the write, waits for ``hold`` (a pair
    of events: set the first when inside, wait for the second) before committing."""
    from treeseek.trees.model import ContentStatus, Node, NodeType

    digest = hashlib.sha256(data).hexdigest()
    with store.write_tree(tree) as writer:
        writer.put_contents([(digest, data)])
        writer.upsert_nodes(
            [
                Node(node_id_for_path(""), "", NodeType.DIRECTORY, None, 0, 0, 1),
                Node(
                    node_id_for_path("f.txt"),
                    "f.txt",
                    NodeType.FILE,
                    node_id_for_path(""),
                    1,
                    0,
                    content_hash=digest,
                    content_status=ContentStatus.STORED,
                    size=len(data),
                ),
            ],
            {},
        )
        if hold is not None:
            hold[0].set()
            hold[1].wait()


def test_removing_a_tree_while_another_writer_takes_up_its_contents(
    postgres_url: Callable[[], str],
) -> None:
    """`treeseek rm OLD` while CI indexes NEW, which shares OLD's contents (two commits of
    one repository): the removal deleted the contents NEW's open transaction had just taken
    up, and failed with psycopg's ForeignKeyViolation once NEW committed. It now leaves the
    contents an open writer holds, and both succeed."""
    url = postgres_url()
    data = b"shared by two commits\n"
    digest = hashlib.sha256(data).hexdigest()
    writer, remover = PostgresStore(url), PostgresStore(url)  # two processes' pools
    try:
        _write_shared(writer, "old", data)
        hold = (threading.Event(), threading.Event())
        indexing = threading.Thread(target=_write_shared, args=(writer, "new", data, hold))
        indexing.start()
        hold[0].wait()
        outcome: list[str] = []

        def remove() -> None:
            try:
                remover.delete_tree("old")
                outcome.append("removed")
            except Exception as exc:  # the failure under test, reported below
                outcome.append(f"{type(exc).__name__}: {exc}")

        removing = threading.Thread(target=remove)
        removing.start()
        removing.join(timeout=30)  # it used to wait here for the writer (then fail)
        hold[1].set()
        indexing.join()
        removing.join()
        assert outcome == ["removed"]
        assert [t.name for t in remover.trees()] == ["new"]
        assert remover.contents([digest]) == {digest: data}
        assert not [p for p in remover.check().problems if "content is missing" in p]
    finally:
        writer.close()
        remover.close()


def test_migrations_are_versioned_and_a_failed_one_changes_nothing(
    postgres_url: Callable[[], str],
) -> None:
    url = postgres_url()
    store = PostgresStore(url)
    assert store.schema_version == POSTGRES_MIGRATIONS[-1].version
    store.close()
    broken = PostgresMigration(
        POSTGRES_MIGRATIONS[-1].version + 1, "broken", "CREATE TABLE x (a int); NOT SQL;"
    )
    with pytest.raises(SchemaError, match="broken"):
        PostgresStore(url, migrations=[*POSTGRES_MIGRATIONS, broken])
    extra = PostgresMigration(
        POSTGRES_MIGRATIONS[-1].version + 1, "notes", "CREATE TABLE notes (a int)"
    )
    newer = PostgresStore(url, migrations=[*POSTGRES_MIGRATIONS, extra])
    assert newer.schema_version == extra.version
    newer.close()
    with pytest.raises(SchemaError, match="newer than this treeseek"):
        PostgresStore(url)
    load_commands()
    fresh = postgres_url()
    result = CliRunner().invoke(app, ["db", "migrate", "--db", fresh, "--json"])
    assert result.exit_code == 0, result.output
    assert f'"schema_version": {POSTGRES_MIGRATIONS[-1].version}' in result.output


def test_vectors_live_in_pgvector_and_their_changes_are_logged(
    postgres_url: Callable[[], str],
) -> None:
    """Vectors are a pgvector column without an index (search is exact: a tree's vectors
    are scored in the process); a database of schema 4 loses its HNSW index at migration 5;
    every transaction that changes vectors of a (model, kind) counts one in
    ``code_vector_changes`` (a row each, folded by the next writer of the (model, kind)
    into its own row: migration 6), and a rolled back one none."""
    url = postgres_url()
    old = PostgresStore(url, migrations=POSTGRES_MIGRATIONS[:4])
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((50, 8)).astype(np.float32)
    hashes = [VectorKey(f"{i:064x}", f"m{i}.py") for i in range(50)]
    try:
        with old.write_tree("t") as writer:
            writer.put_contents((h.content_hash, h.content_hash.encode()) for h in hashes)
            writer.code().put_vectors("m", "file", list(zip(hashes, vecs, strict=True)))
        with old._connection() as conn:  # the index schema 4 created at the first write
            conn.execute(
                "CREATE INDEX code_vectors_hnsw_0123456789ab ON code_vectors USING hnsw"
                " ((vec::vector(8)) vector_cosine_ops) WHERE model = 'm' AND kind = 'file'"
                " AND vector_dims(vec) = 8"
            )
    finally:
        old.close()
    store = PostgresStore(url)

    def changes() -> list[tuple[str, str, int]]:
        with store._connection() as conn:
            rows = conn.execute("SELECT model, kind, n FROM code_vector_changes ORDER BY xid")
            return [(str(m), str(k), int(n)) for m, k, n in rows]

    try:
        got = store.code().vectors("m", "file", hashes)
        assert all(np.array_equal(got[h], v) for h, v in zip(hashes, vecs, strict=True))
        assert store.code().vector_kinds() == [("m", "file")]
        query = vecs[3]
        top = store.code().nearest("m", "file", query, 5, hashes[:40])
        assert top[0][0] == hashes[3] and top[0][1] == pytest.approx(1.0, abs=1e-5)
        with store._connection() as conn:
            indexes = [
                r[0]
                for r in conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()"
                )
            ]
        assert indexes and not any("hnsw" in i for i in indexes), indexes
        assert changes() == [("m", "file", 1)]  # the vectors written before: one change
        with store.write_tree("t") as writer:  # statements of two kinds: a row each
            writer.code().put_vectors("m", "file", [(hashes[0], vecs[1])])
            writer.code().put_vectors("m", "outline", [(hashes[0], vecs[1])])
            writer.code().put_vectors("m", "file", [(hashes[1], vecs[2])])
        # the earlier change of (m, file) folded into this transaction's row
        assert sorted(changes()) == [("m", "file", 2), ("m", "outline", 1)]
        with pytest.raises(RuntimeError), store.write_tree("t") as writer:
            writer.code().put_vectors("m", "file", [(hashes[0], vecs[0])])
            raise RuntimeError("rolled back")
        assert sorted(changes()) == [("m", "file", 2), ("m", "outline", 1)]
        with store._connection() as conn:
            conn.execute("DELETE FROM code_vectors WHERE kind = 'outline'")
        assert sorted(changes()) == [("m", "file", 2), ("m", "outline", 2)]
        with store._connection() as conn:
            conn.execute("TRUNCATE code_vectors")
        assert sorted(changes()) == [("m", "file", 3), ("m", "outline", 3)]
    finally:
        store.close()


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigError, match=r"treeseek\[postgres\]"):
        open_store("postgresql://nobody@localhost/none")
