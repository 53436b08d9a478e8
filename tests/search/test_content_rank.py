"""Flat retrieval lent to the tree search: the content ranker, hints, the content navigator.

A small real repository is indexed with the code hook into a SQLite file; its words are chosen
so that the file answering the queries (``shop/net/transport.py``) shares no word with them in
its path, only in its contents.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scripting import candidate_paths, scripted

import treeseek
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.rank.paths import BM25PathScorer
from treeseek.search.base import QueryOptions, Result, SearchContext
from treeseek.search.flat.content_rank import (
    ContentPathScorer,
    FirstAnswer,
    FlatContent,
    aggregate_dirs,
)
from treeseek.search.strategy import run_query
from treeseek.search.tree.order import constrained_path_order
from treeseek.search.tree.prompts import render_beam_prompt, render_block_message

FILES = {
    "shop/net/transport.py": (
        "def retry_backoff(attempt):\n"
        '    """Exponential backoff with jitter between attempts."""\n'
        "    return min(60, 2 ** attempt)\n"
    ),
    "shop/net/sockets.py": "def open_socket(host, port):\n    return (host, port)\n",
    "shop/billing/invoice.py": (
        "class InvoiceBuilder:\n"
        "    def apply_tax(self, order, rate):\n"
        "        return order.total * (1 + rate)\n"
    ),
    "shop/billing/currency.py": "def convert(amount, rate):\n    return amount * rate\n",
    "shop/catalog/search.py": "def search_products(query):\n    return []\n",
    "docs/index.md": "# Documentation\n\nHow to install.\n",
    "tools/release.py": "def bump_version(v):\n    return v\n",
}
#: no word of this query occurs in any path of the tree
QUERY = "How long do we wait between attempts? The exponential jitter looks wrong"
ANSWER = "shop/net/transport.py"


def _write_repo(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = treeseek.open(tmp_path / "content.db", hooks=[CodeIndexHook()])
    database.index(_write_repo(tmp_path / "repo"), name="shop")
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[Database]:
    """The same files indexed without the code hook: contents, but no content index."""
    database = treeseek.open(tmp_path / "plain.db", hooks=[])
    database.index(_write_repo(tmp_path / "repo2"), name="shop")
    try:
        yield database
    finally:
        database.close()


def _ctx(db: Database) -> SearchContext:
    return SearchContext(store=db.store, tree=db.tree("shop"), navigator=LexicalNavigator())


def _run(db: Database, navigator: object, query: str = QUERY, **opts: object) -> Result:
    options = QueryOptions(**opts)  # type: ignore[arg-type]
    return run_query(db.store, db.tree("shop"), query, options, navigator)  # type: ignore[arg-type]


# -- the content scorer --------------------------------------------------------------------------


def test_aggregate_is_max_plus_a_share_of_the_top_files_sum() -> None:
    ranked = [("a/x/1.py", 4.0), ("a/y/2.py", 3.0), ("a/x/3.py", 2.0), ("b/4.py", 1.0)]
    dirs = aggregate_dirs(ranked, share=0.5, top_files=3)
    assert dirs["a/x"] == 4.0 + 0.5 * (4.0 + 2.0)
    assert dirs["a/y"] == 3.0 + 0.5 * 3.0
    assert dirs["a"] == 4.0 + 0.5 * (4.0 + 3.0 + 2.0)
    assert dirs["b"] == 1.0  # its only file is outside the top 3: max only
    assert dirs[""] == 4.0 + 0.5 * 9.0
    assert "a/x/1.py" not in dirs


def test_files_score_their_flat_score_and_directories_aggregate(db: Database) -> None:
    content = FlatContent(_ctx(db))
    s = content.scores(QUERY)
    assert s.usable and s.ranked[0] == ANSWER
    paths = ["shop", "docs", "tools", "shop/net", "shop/billing", ANSWER, "shop/net/sockets.py"]
    scores = dict(zip(paths, ContentPathScorer(content).score(QUERY, paths) or [], strict=True))
    assert scores[ANSWER] == s.files[ANSWER] > 0.0
    under_net = [v for p, v in s.files.items() if p.startswith("shop/net/")]
    assert scores["shop/net"] == pytest.approx(max(under_net) + 0.25 * sum(under_net))
    assert scores["shop"] >= scores["shop/net"] > scores["shop/billing"]
    assert scores["shop"] > scores["docs"] and scores["shop"] > scores["tools"]
    # computed once per query: later rounds read the same object
    assert content.scores(QUERY) is s


def test_declines_without_a_content_index_or_when_nothing_scores(
    db: Database, plain: Database
) -> None:
    no_index = FlatContent(_ctx(plain))
    assert not no_index.scores(QUERY).usable
    assert ContentPathScorer(no_index).score(QUERY, ["shop", "docs"]) is None
    assert no_index.top(QUERY, 3) == []
    indexed = ContentPathScorer(FlatContent(_ctx(db)))
    assert indexed.score("zzzqqq xxyyzz", ["shop", "docs"]) is None
    assert indexed.score(QUERY, ["docs", "tools/release.py"]) is None  # no candidate scores
    chain = FirstAnswer([ContentPathScorer(no_index), BM25PathScorer()])
    assert chain.name == "flat>bm25"
    assert chain.score("release tools", ["docs", "tools"]) == BM25PathScorer().score(
        "release tools", ["docs", "tools"]
    )


def test_only_group_heads_compete(db: Database) -> None:
    scorer = ContentPathScorer(FlatContent(_ctx(db)))
    low, mid, high = "docs", ANSWER, "shop"
    raw = scorer.score(QUERY, [low, mid, high]) or []
    assert raw[0] < raw[1] < raw[2]
    groups = [["a", "c"], ["b"]]  # the best path sits behind the worst one in its block
    paths = {"a": low, "b": mid, "c": high}
    ordered = constrained_path_order(groups, QUERY, paths, scorer.score)
    assert ordered.ranked and ordered.ids == ["b", "a", "c"]


def test_block_orders_by_content_with_ranker_flat(db: Database) -> None:
    nav = scripted(lambda r: (candidate_paths(r), False))  # every block: its entries, in order
    result = _run(db, nav, strategy="block", k=50, block_tokens=15, max_rounds=1, ranker="flat")
    rnd = result.trace.rounds[0]
    assert len(rnd.blocks) > 1 and rnd.ranker == "flat"
    paths = result.trace.paths
    holder = next(bt for bt in rnd.blocks if any(paths[i] == "shop" for i in bt.ranked_ids))
    assert paths[rnd.ordered_ids[0]] == paths[holder.ranked_ids[0]]
    for bt in rnd.blocks:  # block-internal order unchanged
        assert [i for i in rnd.ordered_ids if i in bt.ranked_ids] == bt.ranked_ids
    assert result.trace.params["content"]["usable"] is True


# -- hints ---------------------------------------------------------------------------------------

HINTED_MESSAGE = """\
Query: fix the parser

Hints from a lexical search (may be wrong):
- src/parse.py
- src/lex.py

Top candidates so far:
- (none)

Current exploration path:
- .

The LAST BLOCK above is the CURRENT BLOCK.
IDs in each block are local to that block.
Return only ids from the CURRENT BLOCK.

Selectable ids in the CURRENT BLOCK:
- n1

Pick up to 2 candidates most relevant to the query, best first.
"""


def test_hints_render_only_when_given() -> None:
    plain = render_block_message("fix the parser", [], [""], ["n1"], 2)
    assert render_block_message("fix the parser", [], [""], ["n1"], 2, ()) == plain
    assert "Hints" not in plain
    hinted = render_block_message(
        "fix the parser", [], [""], ["n1"], 2, ["src/parse.py", "src/lex.py"]
    )
    assert hinted == HINTED_MESSAGE
    assert (
        hinted.replace(
            "Hints from a lexical search (may be wrong):\n- src/parse.py\n- src/lex.py\n\n", ""
        )
        == plain
    )
    beam = render_beam_prompt("q", [], [], 1, ["a.py"])
    assert "Query: q\n\nHints from a lexical search (may be wrong):\n- a.py\n\nAlready" in beam
    assert "Hints" not in render_beam_prompt("q", [], [], 1)


def test_hints_go_to_the_dynamic_message_never_to_cached_segments(db: Database) -> None:
    nav = scripted(lambda r: (candidate_paths(r)[:1], False))
    result = _run(db, nav, strategy="block", k=2, hints=2, block_tokens=60, max_rounds=3)
    assert nav.requests and result.trace.params["hints"][0] == ANSWER
    for request in nav.requests:
        assert f"Hints from a lexical search (may be wrong):\n- {ANSWER}\n" in request.message
        assert all("Hints" not in seg.text and ANSWER not in seg.text for seg in request.segments)
    off = scripted(lambda r: (candidate_paths(r)[:1], False))
    _run(db, off, strategy="block", k=2, block_tokens=60, max_rounds=3)
    assert off.requests and all("Hints" not in r.message for r in off.requests)
    beam_nav = scripted(lambda r: (candidate_paths(r)[:1], False))
    _run(db, beam_nav, strategy="beam", k=2, hints=1)
    assert all(f"may be wrong):\n- {ANSWER}\n" in r.message for r in beam_nav.requests)


def test_hints_are_empty_without_a_content_index(plain: Database) -> None:
    nav = scripted(lambda r: (candidate_paths(r)[:1], False))
    result = _run(plain, nav, strategy="block", k=2, hints=2)
    assert result.trace.params["hints"] == []
    assert result.trace.params["content"]["usable"] is False
    assert all("Hints" not in r.message for r in nav.requests)


# -- the content-aware lexical navigator ---------------------------------------------------------


def test_lexical_navigator_finds_a_file_by_its_content(db: Database) -> None:
    path_only = _run(db, LexicalNavigator(), strategy="block", k=3)
    assert ANSWER not in [f.path for f in path_only.files]
    aided = _run(db, LexicalNavigator(), strategy="block", k=3, hints=3)
    assert [f.path for f in aided.files][:1] == [ANSWER]
    assert aided.navigator == "lexical:flat>bm25"
    assert aided.trace.params["navigator_scorer"] == "flat>bm25"
    assert "hints" not in aided.trace.params  # the lexical navigator reads scores, not text
    beam = _run(db, LexicalNavigator(), strategy="beam", k=3, hints=3)
    assert [f.path for f in beam.files][:1] == [ANSWER]


def test_without_a_content_index_the_aided_navigator_is_the_path_navigator(
    plain: Database,
) -> None:
    query = "the release script in tools is broken"
    path_only = _run(plain, LexicalNavigator(), query, strategy="block", k=3)
    aided = _run(plain, LexicalNavigator(), query, strategy="block", k=3, hints=3)
    assert [f.path for f in aided.files] == [f.path for f in path_only.files]
    assert "tools/release.py" in [f.path for f in aided.files]
    assert aided.trace.params["content"]["reason"] == "the tree has no content index"


def test_negative_hints_are_rejected(db: Database) -> None:
    with pytest.raises(treeseek.errors.ConfigError, match="hints"):
        _run(db, LexicalNavigator(), strategy="block", hints=-1)
