"""LexicalNavigator: rank calls answered by the BM25 path scorer, no LLM."""

from __future__ import annotations

from treeseek.llm.base import Candidate, RankRequest
from treeseek.llm.lexical import LexicalNavigator


def _req(query: str, cands: list[tuple[str, str, str]], pick_limit: int = 3) -> RankRequest:
    return RankRequest(
        segments=(),
        message=query,
        query=query,
        candidates=tuple(Candidate(i, p, t) for i, p, t in cands),
        pick_limit=pick_limit,
    )


CANDS = [
    ("n1", "docs", "directory"),
    ("n2", "django", "directory"),
    ("n3", "tests", "directory"),
    ("n4", "setup.py", "file"),
    ("n5", "django_settings.py", "file"),
]


def test_returns_scoring_candidates_best_first_within_pick_limit() -> None:
    nav = LexicalNavigator()
    reply = nav.rank(_req("django settings are ignored", CANDS))
    assert reply.ranked_ids[0] == "n5"
    assert reply.ranked_ids == ["n5", "n2"]  # zero-score candidates are not returned
    assert reply.done  # best returned id is a file
    assert reply.usage.calls == 1 and reply.usage.total_input_tokens == 0
    assert nav.name == "lexical"


def test_pick_limit_truncates() -> None:
    reply = LexicalNavigator().rank(_req("django settings", CANDS, pick_limit=1))
    assert reply.ranked_ids == ["n5"]


def test_directory_first_means_not_done() -> None:
    reply = LexicalNavigator().rank(_req("failing tests", CANDS))
    assert reply.ranked_ids == ["n3"]
    assert reply.done is False


def test_ties_keep_candidate_order() -> None:
    cands = [("a", "x/util.py", "file"), ("b", "y/util.py", "file"), ("c", "z/util.py", "file")]
    reply = LexicalNavigator().rank(_req("util", cands))
    assert reply.ranked_ids == ["a", "b", "c"]


def test_no_evidence_explores_directories_in_order_never_files() -> None:
    reply = LexicalNavigator().rank(_req("why is it slow", CANDS, pick_limit=2))
    assert reply.ranked_ids == ["n1", "n2"]
    assert reply.done is False
    assert reply.notes


def test_exact_path_mention_wins() -> None:
    cands = [("a", "pkg/core/query.py", "file"), ("b", "pkg/query.py", "file")]
    reply = LexicalNavigator().rank(_req("bug in pkg/query.py around query building", cands))
    assert reply.ranked_ids[0] == "b"


def test_empty_candidates() -> None:
    reply = LexicalNavigator().rank(_req("anything", []))
    assert reply.ranked_ids == [] and reply.done is False


def test_files_weaker_than_the_best_candidate_are_not_returned() -> None:
    cands = [
        ("d", "coordinates", "directory"),  # BM25 1.93
        ("f", "coordinates_setup.py", "file"),  # 1.20
        ("g", "sky.py", "file"),  # 3.12
        ("h", "sky_coordinates.py", "file"),  # 3.54: the best
    ]
    q = "sky coordinates transform is wrong"
    assert LexicalNavigator().rank(_req(q, cands, 5)).ranked_ids == ["h", "d"]
    assert LexicalNavigator(file_ratio=0.8).rank(_req(q, cands, 5)).ranked_ids == ["h", "g", "d"]
    loose = LexicalNavigator(file_ratio=0.0).rank(_req(q, cands, 5))
    assert loose.ranked_ids == ["h", "g", "d", "f"]
