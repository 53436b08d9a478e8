"""The stores on real databases: schema, migrations, trees, reads, contents.

Every test of the Store protocol takes the ``store`` fixture and runs against both backends
(a SQLite file and a PostgreSQL schema on the session's server, see ``tests/conftest.py``);
the tests of SQLite's own schema machinery open SQLiteStore directly.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from treeseek.errors import NodeNotFound, SchemaError, StoreError, TreeNotFound
from treeseek.store._sql import BATCH, fetch_decoded
from treeseek.store.base import Store, TreeWriter
from treeseek.store.migrations import MIGRATIONS, Migration, split_statements
from treeseek.store.postgres import PostgresStore
from treeseek.store.sqlite import SQLiteStore
from treeseek.trees.model import ContentStatus, Node, NodeType, TreeInfo, node_id_for_path


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


AnyStore = SQLiteStore | PostgresStore


def _tree(store: AnyStore, name: str, files: dict[str, bytes | None]) -> None:
    """Write a small tree straight through the writer (directories derived from the paths)."""
    dirs = {""}
    for path in files:
        parts = path.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    nodes: list[Node] = []
    by_parent: dict[str, list[str]] = {}
    for path in (*dirs, *files):
        if path:
            by_parent.setdefault(path.rpartition("/")[0], []).append(path)
    order = {p: i for group in by_parent.values() for i, p in enumerate(sorted(group))}
    for path in sorted(dirs):
        nodes.append(
            Node(
                id=node_id_for_path(path),
                path=path,
                type=NodeType.DIRECTORY,
                parent_id=node_id_for_path(path.rpartition("/")[0]) if path else None,
                depth=path.count("/") + 1 if path else 0,
                order=order.get(path, 0),
                child_count=len(by_parent.get(path, [])),
            )
        )
    contents: list[tuple[str, bytes]] = []
    for path, data in files.items():
        digest = _digest(data) if data is not None else None
        if data is not None and digest is not None:
            contents.append((digest, data))
        nodes.append(
            Node(
                id=node_id_for_path(path),
                path=path,
                type=NodeType.FILE,
                parent_id=node_id_for_path(path.rpartition("/")[0]),
                depth=path.count("/") + 1,
                order=order[path],
                size=None if data is None else len(data),
                content_hash=digest,
                content_status=ContentStatus.STORED if data is not None else ContentStatus.ABSENT,
            )
        )
    now = datetime.now(UTC)
    with store.write_tree(name) as writer:
        old = {n.path for n in store.subtree(name)}
        writer.delete_nodes(node_id_for_path(p) for p in old - {n.path for n in nodes})
        writer.put_contents(contents)
        writer.upsert_nodes(nodes, {n.id: f"sig-{n.path}" for n in nodes if n.is_file})
        writer.set_info(
            TreeInfo(
                name,
                __import__("treeseek").TreeSource.PATH_LIST,
                "<test>",
                len(nodes),
                len(files),
                len(dirs),
                max(n.depth for n in nodes),
                now,
                now,
            )
        )


@pytest.fixture
def store(store_factory: Callable[..., AnyStore]) -> AnyStore:
    return store_factory()


def test_the_store_implements_the_protocols(store: AnyStore) -> None:
    assert isinstance(store, Store)
    with store.write_tree("t") as writer:
        assert isinstance(writer, TreeWriter)


def test_wal_foreign_keys_and_schema_version(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn().execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.schema_version == MIGRATIONS[-1].version
    conn.close()
    store.close()


def test_migration_from_an_older_schema_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = SQLiteStore(path, migrations=MIGRATIONS[:1])
    _tree(old, "t", {"a/b.py": b"print(1)\n"})
    assert old.schema_version == 1
    old.close()
    extra = Migration(
        version=MIGRATIONS[-1].version + 1,
        description="a derived per-tree table",
        sql="""
        CREATE TABLE notes (
            tree_id INTEGER NOT NULL REFERENCES trees(id) ON DELETE CASCADE,
            node_id TEXT NOT NULL,
            note TEXT NOT NULL,
            PRIMARY KEY (tree_id, node_id),
            FOREIGN KEY (tree_id, node_id) REFERENCES nodes(tree_id, node_id) ON DELETE CASCADE
        );
        CREATE TRIGGER notes_upper AFTER INSERT ON notes BEGIN
            UPDATE notes SET note = upper(NEW.note)
            WHERE tree_id = NEW.tree_id AND node_id = NEW.node_id;
        END;
        """,
        tree_tables=("notes",),
    )
    new = SQLiteStore(path, migrations=[*MIGRATIONS, extra])
    assert new.schema_version == extra.version
    assert new.node_by_path("t", "a/b.py") is not None
    with new.write_tree("t") as writer:
        writer.connection.execute(  # type: ignore[attr-defined]
            "INSERT INTO notes VALUES (?, ?, 'hello')",
            (writer.tree_id, node_id_for_path("a/b.py")),  # type: ignore[attr-defined]
        )
    new.copy_tree("t", "copy")  # registered per-tree tables are copied too
    rows = (
        new._conn()
        .execute(
            "SELECT t.name, n.note FROM notes n JOIN trees t ON t.id = n.tree_id ORDER BY t.name"
        )
        .fetchall()
    )
    assert rows == [("copy", "HELLO"), ("t", "HELLO")]
    new.delete_tree("t")
    assert new._conn().execute("SELECT count(*) FROM notes").fetchone()[0] == 1
    new.close()
    # an older treeseek refuses the newer schema instead of corrupting it
    with pytest.raises(SchemaError, match="newer than this treeseek"):
        SQLiteStore(path, migrations=MIGRATIONS)


def test_a_failing_migration_leaves_the_previous_version(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    SQLiteStore(path).close()
    broken = Migration(MIGRATIONS[-1].version + 1, "broken", "CREATE TABLE x (a);\nNOT SQL;")
    with pytest.raises(SchemaError, match="broken"):
        SQLiteStore(path, migrations=[*MIGRATIONS, broken])
    store = SQLiteStore(path)
    assert store.schema_version == MIGRATIONS[-1].version
    tables = {r[0] for r in store._conn().execute("SELECT name FROM sqlite_master")}
    assert "x" not in tables
    store.close()


def test_split_statements_keeps_trigger_bodies() -> None:
    parts = split_statements(
        "CREATE TABLE a (x);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
        "  SELECT 1;\n  SELECT 2;\nEND;\n-- trailing comment\n"
    )
    assert len(parts) == 2 and parts[1].endswith("END;")


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        SQLiteStore(bogus)


def test_several_trees_share_contents_and_delete_removes_only_orphans(
    store: AnyStore,
) -> None:
    _tree(store, "one", {"shared.txt": b"same\n", "only-one.txt": b"one\n"})
    _tree(store, "two", {"dir/shared.txt": b"same\n", "only-two.txt": b"two\n"})
    assert [t.name for t in store.trees()] == ["one", "two"]
    assert store.content_count() == 3  # "same" is stored once
    store.delete_tree("one")
    assert not store.has_tree("one")
    assert store.content_count() == 2
    node = store.node_by_path("two", "dir/shared.txt")
    assert node is not None and store.content("two", node.id) == b"same\n"
    with pytest.raises(TreeNotFound):
        store.tree("one")
    with pytest.raises(TreeNotFound):
        store.delete_tree("one")


def test_updating_a_tree_drops_contents_nobody_uses(store: AnyStore) -> None:
    _tree(store, "t", {"a.txt": b"v1\n", "b.txt": b"keep\n"})
    _tree(store, "t", {"a.txt": b"v2\n", "b.txt": b"keep\n"})
    assert store.content_count() == 2
    assert store.contents([_digest(b"v1\n")]) == {}
    _tree(store, "t", {"b.txt": b"keep\n"})
    assert store.content_count() == 1


def test_subtree_is_a_path_range_that_does_not_leak_to_siblings(store: AnyStore) -> None:
    _tree(
        store,
        "t",
        {"a/b/c.py": None, "a/b/d/e.py": None, "a/b.txt": None, "a/bc/x.py": None, "a/b0": None},
    )
    assert [n.path for n in store.subtree("t", "a/b")] == ["a/b", "a/b/c.py", "a/b/d", "a/b/d/e.py"]
    assert [n.path for n in store.subtree("t", "a/b/c.py")] == ["a/b/c.py"]
    assert len(list(store.subtree("t"))) == 10
    assert list(store.subtree("t", "missing")) == []


def test_batched_multi_gets_cross_the_chunk_size(store: AnyStore) -> None:
    files: dict[str, bytes | None] = {
        f"d{i % 3}/f{i:04}.txt": f"{i}\n".encode() for i in range(1200)
    }
    _tree(store, "t", files)
    paths = sorted(files)
    ids = [node_id_for_path(p) for p in reversed(paths)] + ["nosuchid00"]
    got = store.nodes("t", ids)
    assert [n.path for n in got] == list(reversed(paths))  # in the order asked, unknowns skipped
    assert len(ids) > 2 * BATCH
    by_path = store.nodes_by_paths("t", [*paths, "nope"])
    assert set(by_path) == set(paths)
    kids = store.children_many("t", [node_id_for_path(f"d{i}") for i in range(3)])
    assert sum(len(v) for v in kids.values()) == 1200
    assert all(
        [n.order for n in group] == sorted(n.order for n in group) for group in kids.values()
    )
    blobs = store.contents([n.content_hash for n in got if n.content_hash])
    assert len(blobs) == 1200 and blobs[_digest(b"7\n")] == b"7\n"
    states = store.file_states("t")
    assert states["d1/f0001.txt"].signature == "sig-d1/f0001.txt"


def test_children_are_in_stored_order_and_unknowns_raise(store: AnyStore) -> None:
    _tree(store, "t", {"b.py": None, "a/x.py": None, "c.py": None})
    root = store.root("t")
    assert [n.path for n in store.children("t", root.id)] == ["a", "b.py", "c.py"]
    with pytest.raises(NodeNotFound):
        store.node("t", "nosuchid00")
    with pytest.raises(TreeNotFound):
        store.children("nope", root.id)
    assert store.node_by_path("t", "zzz") is None


def test_node_id_collision_is_an_error_not_a_merge(store: AnyStore) -> None:
    _tree(store, "t", {"a.py": None})
    fake = Node(
        id=node_id_for_path("a.py"),
        path="other.py",
        type=NodeType.FILE,
        parent_id=node_id_for_path(""),
        depth=1,
        order=1,
        content_status=ContentStatus.ABSENT,
    )
    with pytest.raises(StoreError, match="collision"), store.write_tree("t") as writer:
        writer.upsert_nodes([fake], {})
    node = store.node_by_path("t", "a.py")
    assert node is not None and store.node_by_path("t", "other.py") is None


def test_a_failed_write_rolls_back_everything(store: AnyStore) -> None:
    _tree(store, "t", {"a.txt": b"a\n"})
    with pytest.raises(RuntimeError), store.write_tree("t") as writer:
        writer.put_contents([(_digest(b"new\n"), b"new\n")])
        writer.delete_nodes([node_id_for_path("a.txt")])
        raise RuntimeError("killed half-way")
    assert store.node_by_path("t", "a.txt") is not None
    assert store.content_count() == 1
    with pytest.raises(RuntimeError), store.write_tree("brand-new"):
        raise RuntimeError("killed before anything")
    assert not store.has_tree("brand-new")


def test_readers_in_other_threads_see_the_last_committed_version(store: AnyStore) -> None:
    _tree(store, "t", {"a.txt": b"a\n"})
    seen: list[list[str]] = []

    def read() -> None:
        seen.append(sorted(n.path for n in store.subtree("t")))

    with store.write_tree("t") as writer:
        writer.delete_nodes([node_id_for_path("a.txt")])
        worker = threading.Thread(target=read)
        worker.start()
        worker.join()
    read()
    assert seen == [["", "a.txt"], [""]]


def test_non_utf8_paths_round_trip_and_range_read(store: AnyStore) -> None:
    odd = b"d\xff/f\xe9.txt".decode("utf-8", "surrogateescape")
    _tree(store, "t", {odd: b"x\n", "d/plain.txt": b"y\n"})
    node = store.node_by_path("t", odd)
    assert node is not None and node.path == odd
    assert [n.path for n in store.subtree("t", odd.split("/")[0])] == [odd.split("/")[0], odd]
    assert set(store.nodes_by_paths("t", [odd, "d/plain.txt"])) == {odd, "d/plain.txt"}


def test_whole_tree_reads_keep_non_utf8_names(store: AnyStore) -> None:
    """The bulk reads decode text in C and read again with the surrogate-escaping decoder
    when a name is not UTF-8: the names come back as written either way."""
    odd = b"d\xff/f\xe9.txt".decode("utf-8", "surrogateescape")
    _tree(store, "t", {odd: b"x\n", "\u00e9/plain.txt": b"y\n"})
    _tree(store, "u", {"\u00e9/plain.txt": b"y\n"})
    want = ["", "d\udcff", odd, "\u00e9", "\u00e9/plain.txt"]
    assert sorted(n.path for n in store.subtree("t")) == sorted(want)
    assert set(store.file_states("t")) == {odd, "\u00e9/plain.txt"}
    assert sorted(n.path for n in store.subtree("u")) == ["", "\u00e9", "\u00e9/plain.txt"]
    assert store.node_by_path("t", odd) is not None  # the connection decodes as before


def test_file_nodes_signatures_and_directories_are_what_the_node_reads_hold(
    store: AnyStore,
) -> None:
    """What a freshness check reads (a tree's file signatures and its directories), two
    columns each, agrees with file_states and subtree: values, order, odd names."""
    odd = b"d\xff/f\xe9.txt".decode("utf-8", "surrogateescape")
    _tree(store, "t", {odd: b"x\n", "b/c/d.txt": b"y\n", "a.txt": None, "b/e.txt": b"z\n"})
    states = store.file_states("t")
    signatures = store.file_signatures("t")
    assert list(signatures.items()) == [(p, s.signature) for p, s in states.items()]
    assert signatures[odd] == f"sig-{odd}"
    dirs = [n.path for n in store.subtree("t") if n.type is NodeType.DIRECTORY]
    assert store.directory_paths("t") == dirs == ["", "b", "b/c", "d\udcff"]
    assert store.file_nodes("t") == [n for n in store.subtree("t") if n.is_file]
    assert [n.path for n in store.file_nodes("t")] == ["a.txt", "b/c/d.txt", "b/e.txt", odd]
    with pytest.raises(TreeNotFound):
        store.file_signatures("nope")
    with pytest.raises(TreeNotFound):
        store.directory_paths("nope")
    with pytest.raises(TreeNotFound):
        store.file_nodes("nope")


def test_fetch_decoded_reads_again_with_the_factory_when_text_is_not_utf8() -> None:
    conn = sqlite3.connect(":memory:")
    calls: list[bytes] = []

    def factory(raw: bytes) -> str:
        calls.append(raw)
        return raw.decode("utf-8", "surrogateescape")

    conn.text_factory = factory
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.execute("INSERT INTO t VALUES ('pl\u00e4in')")
    assert fetch_decoded(conn, "SELECT x FROM t") == [("pl\u00e4in",)]
    assert calls == [] and conn.text_factory is factory  # decoded by sqlite3's str
    conn.execute("INSERT INTO t VALUES (CAST(? AS TEXT))", (b"bad\xff",))
    assert fetch_decoded(conn, "SELECT x FROM t ORDER BY x") == [("bad\udcff",), ("pl\u00e4in",)]
    assert calls == [b"bad\xff", "pl\u00e4in".encode()] and conn.text_factory is factory
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        fetch_decoded(conn, "SELECT x FROM missing")
    assert conn.text_factory is factory


def test_copy_tree_shares_contents(store: AnyStore) -> None:
    _tree(store, "t", {"a/b.txt": b"b\n"})
    store.copy_tree("t", "u")
    assert store.content_count() == 1
    assert [n.path for n in store.subtree("u")] == [n.path for n in store.subtree("t")]
    store.delete_tree("t")
    node = store.node_by_path("u", "a/b.txt")
    assert node is not None and store.content("u", node.id) == b"b\n"
    with pytest.raises(TreeNotFound):
        store.copy_tree("missing", "v")


def test_closed_store_refuses_work(store: AnyStore) -> None:
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.trees()
