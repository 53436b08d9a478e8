"""The migration to vectors per (content, path), on both backends: a database written with
vectors per content keeps none of them (which path each was computed from is not recorded),
and re-indexing with vectors on gives exactly the vectors of a fresh database."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

import treeseek
from treeseek.database import Database
from treeseek.embed.hashing import HashingEmbedder
from treeseek.index.code_hook import OUTLINE_KIND, CodeIndexHook
from treeseek.store.base import Store
from treeseek.store.code_base import VectorKey
from treeseek.store.migrations import MIGRATIONS, POSTGRES_MIGRATIONS
from treeseek.store.postgres import PostgresStore
from treeseek.store.sqlite import SQLiteStore

FILES = {
    "shop/billing/currency.py": "def convert(amount, rate):\n    return amount * rate\n",
    "shop/cart.py": "class Cart:\n    def add(self, item):\n        self.items.append(item)\n",
}
EMBEDDER = HashingEmbedder(dim=32)
#: what an old database stored for a content: a vector of some other path's text
FOREIGN = np.ones(EMBEDDER.dim, dtype=np.float32) / np.sqrt(EMBEDDER.dim)


def _repo(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _keys(db: Database) -> list[VectorKey]:
    return [
        VectorKey(n.content_hash, n.path)
        for n in db.store.subtree("shop", "")
        if n.is_file and n.content_hash
    ]


def _old_database(old: Store, repo: Path, put_old_vector: Callable[[str], None]) -> None:
    """A tree indexed by an earlier schema, with a per-content vector for each content."""
    with Database(old, hooks=[CodeIndexHook(workers=1)]) as db:
        db.index(repo, name="shop")
        hashes = {key.content_hash for key in _keys(db)}
    for digest in sorted(hashes):
        put_old_vector(digest)


def _migrated_then_reindexed(
    location: str | Path, repo: Path, fresh: str | Path
) -> tuple[dict[VectorKey, npt.NDArray[np.float32]], dict[VectorKey, npt.NDArray[np.float32]]]:
    """(vectors right after the migration, vectors after re-indexing), and asserts the
    re-indexed ones equal those of a fresh database."""
    hook = [CodeIndexHook(EMBEDDER, workers=1)]
    with treeseek.open(location, hooks=[CodeIndexHook(workers=1)]) as db:
        migrated = db.store.code().vectors(EMBEDDER.name, OUTLINE_KIND, _keys(db))
    with treeseek.open(location, hooks=hook) as db:
        report = db.index(repo, name="shop")  # nothing changed on disk
        assert report.changed == report.added == 0
        again = db.store.code().vectors(EMBEDDER.name, OUTLINE_KIND, _keys(db))
    with treeseek.open(fresh, hooks=[CodeIndexHook(EMBEDDER, workers=1)]) as db:
        db.index(repo, name="shop")
        expected = db.store.code().vectors(EMBEDDER.name, OUTLINE_KIND, _keys(db))
    assert again.keys() == expected.keys() and len(expected) == len(FILES)
    for key, vec in expected.items():
        assert np.array_equal(again[key], vec)
        assert not np.allclose(vec, FOREIGN)
    return migrated, again


def test_sqlite_migration_drops_per_content_vectors(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    path = tmp_path / "old.db"

    def put(digest: str) -> None:
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO code_vectors(content_hash, model, kind, vec) VALUES (?, ?, ?, ?)",
                (digest, EMBEDDER.name, OUTLINE_KIND, FOREIGN.tobytes()),
            )

    old = SQLiteStore(path, migrations=MIGRATIONS[:5])
    with sqlite3.connect(path) as conn:  # what today's writer writes (migration 8 keeps it)
        conn.execute("ALTER TABLE code_files ADD COLUMN parser_revision INTEGER DEFAULT 0")
    _old_database(old, repo, put)
    migrated, _ = _migrated_then_reindexed(path, repo, tmp_path / "fresh.db")
    assert migrated == {}


def test_postgres_migration_drops_per_content_vectors(
    tmp_path: Path, postgres_url: Callable[[], str]
) -> None:
    import psycopg

    repo = _repo(tmp_path / "repo")
    url = postgres_url()

    def put(digest: str) -> None:
        literal = "[" + ",".join(str(float(x)) for x in FOREIGN) + "]"
        with psycopg.connect(url) as conn:
            conn.execute(
                "INSERT INTO code_vectors(content_hash, model, kind, vec)"
                " VALUES (%s, %s, %s, %s::vector)",
                (digest, EMBEDDER.name, OUTLINE_KIND, literal),
            )

    old = PostgresStore(url, migrations=POSTGRES_MIGRATIONS[:1])
    with psycopg.connect(url) as conn:  # what today's writer writes (migration 8 keeps it)
        conn.execute("ALTER TABLE code_files ADD COLUMN parser_revision INTEGER DEFAULT 0")
    _old_database(old, repo, put)
    migrated, _ = _migrated_then_reindexed(url, repo, postgres_url())
    assert migrated == {}
