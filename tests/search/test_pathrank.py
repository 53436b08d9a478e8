"""Path scorers: tokenization, BM25 fields and weights, the exact-path boost, declining."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeseek.embed.hashing import HashingEmbedder
from treeseek.rank.paths import (
    BM25PathScorer,
    PathCorpusStats,
    VectorPathScorer,
    exact_mention_mask,
    field_tokens,
    path_fields,
)
from treeseek.text.tokens import query_terms, word_tokens


def test_word_tokens_split_on_separators_and_camel_case() -> None:
    assert word_tokens("django/db/models/query_utils.py") == [
        "django", "db", "models", "query", "utils", "queryutils", "py",
    ]  # fmt: skip
    assert word_tokens("HTTPServerError") == ["http", "server", "error", "httpservererror"]
    assert word_tokens("my-lib.v2") == ["my", "lib", "v", "2", "v2"]


def test_query_terms_drop_stopwords_short_tokens_and_duplicates() -> None:
    terms = query_terms("The QuerySet is broken when the queryset is a QuerySet")
    assert terms == ["query", "set", "queryset", "broken"]


def test_extension_tokens_are_not_query_terms_unless_asked() -> None:
    assert query_terms("error in query.py and utils.js") == ["error", "query", "utils"]
    assert query_terms("query.py", drop_extensions=False) == ["query", "py"]
    paths = ["setup.py", "docs"]
    assert BM25PathScorer().score("see query.py", paths) is None
    kept = BM25PathScorer(drop_extensions=False).score("see query.py", paths)
    assert kept is not None and kept[0] > 0


def test_path_fields() -> None:
    assert path_fields("django/db/models/query.py") == (
        "query.py",
        "django/db/models",
        "django/db/models/query.py",
    )
    assert path_fields("setup.py") == ("setup.py", "", "setup.py")


def _bm25(
    tf: int, dl: int, avgdl: float, n: int, df: int, k1: float = 1.2, b: float = 0.75
) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def test_bm25_fields_carry_the_spec_weights() -> None:
    # "alpha" only in one basename, "beta" and "gamma" only in parent paths
    paths = ["x/alpha.txt", "beta/y.txt", "gamma/z/w.txt", "q/r.txt"]
    scorer = BM25PathScorer()
    stats = PathCorpusStats.from_paths(paths)
    base_avg, parent_avg, path_avg = stats.avgdl
    n = len(paths)

    s_alpha = scorer.score("alpha", paths)
    assert s_alpha is not None
    # basename field: tokens [alpha, txt]; path field: [x, alpha, txt]
    expect = 3 * _bm25(1, 2, base_avg, n, 1) + 1 * _bm25(1, 3, path_avg, n, 1)
    assert s_alpha[0] == pytest.approx(expect)
    assert s_alpha[1:] == [0.0, 0.0, 0.0]

    s_beta = scorer.score("beta", paths)
    assert s_beta is not None
    expect = 1.5 * _bm25(1, 1, parent_avg, n, 1) + 1 * _bm25(1, 3, path_avg, n, 1)
    assert s_beta[1] == pytest.approx(expect)

    s_gamma = scorer.score("gamma", paths)
    assert s_gamma is not None
    # parent field of gamma/z/w.txt is "gamma/z" (2 tokens)
    expect = 1.5 * _bm25(1, 2, parent_avg, n, 1) + 1 * _bm25(1, 4, path_avg, n, 1)
    assert s_gamma[2] == pytest.approx(expect)


def test_basename_match_beats_parent_match() -> None:
    paths = ["a/cache/x.py", "a/b/cache.py", "a/b/x.py"]
    scores = BM25PathScorer().score("cache", paths)
    assert scores is not None
    assert scores[1] > scores[0] > scores[2] == 0  # basename (3) > parent (1.5) > no match


def test_idf_from_candidates_downweights_shared_terms() -> None:
    paths = ["models/query.py", "models/fields.py", "models/base.py"]
    scores = BM25PathScorer().score("models query", paths)
    assert scores is not None
    assert scores[0] == max(scores)
    assert scores[1] == scores[2] > 0  # "models" matches all, weakly


def test_corpus_stats_override_candidate_idf() -> None:
    corpus = ["lib/query.py"] + [f"lib/query{i}/query.py" for i in range(20)] + ["lib/rare.py"]
    cands = ["lib/query.py", "lib/rare.py"]
    local = BM25PathScorer().score("query rare", cands)
    tree = BM25PathScorer(stats=PathCorpusStats.from_paths(corpus)).score("query rare", cands)
    assert local is not None and tree is not None
    assert local[0] == pytest.approx(local[1])  # both terms are equally rare among 2 candidates
    assert tree[1] > tree[0]  # tree-wide, "query" is common


def test_exact_path_mention_boost() -> None:
    paths = ["django/db/models/sql/query.py", "django/db/models/query.py", "django/db", "docs"]
    q = "Crash in django/db/models/query.py when filtering"
    mask = exact_mention_mask(q, paths)
    assert mask.tolist() == [False, True, True, False]
    scores = BM25PathScorer().score(q, paths)
    assert scores is not None
    assert scores[1] > 100 > scores[0]
    assert max(range(4), key=lambda i: scores[i]) in (1, 2)


@pytest.mark.parametrize(
    "query",
    [
        "see ./django/db/models/query.py.",
        "see `django\\db\\models\\query.py`",
        "see /django/db/models/query.py:120",
        "(django/db/models/query.py)",
    ],
)
def test_exact_mention_is_normalized(query: str) -> None:
    assert exact_mention_mask(query, ["django/db/models/query.py"]).tolist() == [True]


@pytest.mark.parametrize(
    "query", ["see xdjango/db/models/query.py", "see django/db/models/query.pyc", "query.py"]
)
def test_partial_path_mentions_get_no_boost(query: str) -> None:
    assert exact_mention_mask(query, ["django/db/models/query.py"]).tolist() == [False]


def test_scorer_declines_without_path_evidence() -> None:
    paths = ["src/app.py", "docs/index.md"]
    assert BM25PathScorer().score("the of and", paths) is None
    assert BM25PathScorer().score("unrelated words entirely", paths) is None
    assert BM25PathScorer().score("", paths) is None
    assert BM25PathScorer().score("anything", []) == []


def test_vector_scorer_weights_and_boost() -> None:
    emb = HashingEmbedder(dim=256)
    scorer = VectorPathScorer(emb)
    paths = ["pkg/serializers.py", "serializers/other.py", "pkg/views.py"]
    q = "serializers"
    scores = scorer.score(q, paths)
    assert scores is not None
    qv = emb.embed([q])[0]

    def cos(text: str) -> float:
        return float(emb.embed([text])[0] @ qv) if text else 0.0

    for p, s in zip(paths, scores, strict=True):
        base, parent, full = path_fields(p)
        assert s == pytest.approx(3 * cos(base) + 1.5 * cos(parent) + cos(full), rel=1e-5)
    assert scores[0] > scores[2] and scores[1] > scores[2]
    boosted = scorer.score("look at pkg/views.py", paths)
    assert boosted is not None
    assert boosted[2] > 10 > max(boosted[0], boosted[1])


def test_vector_scorer_caches_field_embeddings() -> None:
    class Counting(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__(dim=64)
            self.texts: list[str] = []

        def embed(self, texts):  # type: ignore[no-untyped-def]
            self.texts.extend(texts)
            return super().embed(texts)

    emb = Counting()
    scorer = VectorPathScorer(emb)
    scorer.score("alpha", ["a/b.py", "a/c.py"])
    first = len(emb.texts)
    scorer.score("beta", ["a/b.py", "a/c.py"])
    assert len(emb.texts) == first + 1  # only the new query
    scorer.score("beta", ["a/b.py", "a/d.py"])
    assert len(emb.texts) == first + 3  # d.py and a/d.py; the query embedding is kept
    assert scorer.score("the", ["a/b.py"]) is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.from_regex(r"[a-z]{1,6}(/[a-zA-Z_]{1,8}){0,3}(\.py)?", fullmatch=True),
        min_size=1,
        max_size=12,
    ),
    st.text(max_size=40),
)
def test_bm25_scores_are_finite_nonnegative_and_aligned(paths: list[str], query: str) -> None:
    scores = BM25PathScorer().score(query, paths)
    if scores is None:
        return
    assert len(scores) == len(paths)
    arr = np.asarray(scores)
    assert np.all(np.isfinite(arr)) and np.all(arr >= 0)
    # identical paths score identically
    for i, p in enumerate(paths):
        for j, r in enumerate(paths):
            if p == r:
                assert scores[i] == scores[j]


@given(st.from_regex(r"[A-Za-z0-9_.\- ]{1,8}(/[A-Za-z0-9_.\- ]{1,8}){0,4}", fullmatch=True))
def test_path_field_tokens_contain_the_other_fields(path: str) -> None:
    # BM25PathScorer skips a path whose full-path tokens miss every query term
    base, parent, full = field_tokens(path)
    assert set(base) | set(parent) <= set(full)


_PATH_PART = st.text(alphabet=st.sampled_from("abcXYZ_-.09é日 "), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PATH_PART, min_size=1, max_size=5))
def test_field_tokens_are_each_fields_own_word_tokens(parts: list[str]) -> None:
    """The full path's tokens are built from the parent's and the basename's (shared per
    directory); they must be what tokenizing the whole path gives."""
    path = "/".join(parts)
    base, parent, full = path_fields(path)
    assert field_tokens(path) == (
        tuple(word_tokens(base)),
        tuple(word_tokens(parent)),
        tuple(word_tokens(full)),
    )


_SEGMENT = st.sampled_from(
    ["lib", "query", "Query", "utils", "a.b", "x_y", "é", "q2", "", "lib.py"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join), max_size=30))
def test_corpus_stats_count_each_file_once_per_field(paths: list[str]) -> None:
    """Counted by distinct basename and parent, the statistics are those of counting every
    file's three fields one by one (a term once per file and field)."""
    stats = PathCorpusStats.from_paths(paths)
    dfs: list[dict[str, int]] = [{}, {}, {}]
    lengths = [0, 0, 0]
    for p in paths:
        for f, toks in enumerate(field_tokens(p)):
            lengths[f] += len(toks)
            for t in set(toks):
                dfs[f][t] = dfs[f].get(t, 0) + 1
    assert stats.n_docs == len(paths)
    assert [{t: n for t, n in df.items() if n} for df in stats.df] == dfs
    assert stats.avgdl == tuple(lengths[f] / len(paths) if paths else 0.0 for f in range(3))


def _word_tokens_one_by_one(text: str) -> list[str]:
    """word_tokens as its doc says, without its per-word cache."""
    import re

    out: list[str] = []
    for word in re.findall(r"\w+", text):
        if word.isascii():
            found = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", word)
            parts = [p.lower() for p in found]
        else:
            parts = [p.lower() for p in word.split("_") if p]
        out.extend(parts)
        if len(parts) > 1:
            out.append("".join(parts))
    return out


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aAbBzZ09_-/. é日\n", max_size=40))
def test_word_tokens_of_cached_words_are_those_of_each_word(text: str) -> None:
    assert word_tokens(text) == _word_tokens_one_by_one(text)
    assert word_tokens(text) == _word_tokens_one_by_one(text)  # again, from the cache
