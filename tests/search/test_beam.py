"""Algorithm 1 (FilesystemBeam), line by line, with a scripted navigator."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from scripting import candidate_paths, scripted

from treeseek.database import Database
from treeseek.llm.base import RankRequest
from treeseek.search.base import QueryOptions, Result
from treeseek.search.strategy import run_query
from treeseek.trees.model import TreeInfo

TreeFactory = Callable[[Sequence[str]], TreeInfo]

TREE = [
    "src/app/main.py",
    "src/app/util.py",
    "src/lib/core.py",
    "src/lib/extra/more.py",
    "docs/index.md",
    "tests/test_app.py",
    "README.md",
    "empty/",
]


def beam(db: Database, info: TreeInfo, nav: object, **opts: object) -> Result:
    options = QueryOptions(strategy="beam", **opts)  # type: ignore[arg-type]
    return run_query(db.store, info, "question", options, nav)  # type: ignore[arg-type]


def test_first_turn_offers_the_roots_children(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    nav = scripted(lambda r: (["README.md"], True))
    result = beam(db, info, nav, k=1)
    (request,) = nav.requests
    assert candidate_paths(request) == ["docs", "empty", "src", "tests", "README.md"]
    assert request.segments == ()  # Beam sends one dynamic message
    assert [f.path for f in result.files] == ["README.md"]


def test_pick_limit_is_max_of_beam_width_and_k(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    for b, k, expected in ((2, 5, 5), (4, 1, 4), (3, 3, 3)):
        nav = scripted(lambda r: (["README.md"], True))
        beam(db, info, nav, k=k, beam_width=b)
        assert nav.requests[0].pick_limit == expected
        assert f"(pick up to {expected}, most relevant first)" in nav.requests[0].message


def test_leaf_beam_is_kept_as_its_own_candidate(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    nav = scripted(lambda r: (["empty"], False))
    result = beam(db, info, nav, k=2, max_depth=1)
    assert len(nav.requests) == 2
    # "empty" has no children: the next candidate set is the beam itself
    assert candidate_paths(nav.requests[1]) == ["empty"]
    assert result.trace.stop_reason == "depth limit reached"


def test_done_with_only_directories_is_forced_false(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)

    def script(r: RankRequest) -> tuple[list[str], bool]:
        if "src" in candidate_paths(r):
            return ["src"], True  # done, but only a directory
        if "src/app" in candidate_paths(r):
            return ["src/app"], True
        return ["src/app/main.py"], True

    nav = scripted(script)
    result = beam(db, info, nav, k=3)
    first = result.trace.rounds[0]
    assert (first.done_before_override, first.done_after_override) == (True, False)
    assert len(nav.requests) == 3  # exploration continued into src and src/app
    assert result.trace.stop_reason == "done"
    assert [f.path for f in result.files] == ["src/app/main.py"]


def test_files_accumulate_across_turns_truncated_to_k(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)

    def script(r: RankRequest) -> tuple[list[str], bool]:
        paths = candidate_paths(r)
        if "README.md" in paths:
            return ["README.md", "src"], False
        if "src/app" in paths:
            return ["src/app", "src/lib"], False
        return ["src/app/util.py", "src/app/main.py", "src/lib/core.py"], False

    nav = scripted(script)
    result = beam(db, info, nav, k=3, beam_width=2)
    assert [f.path for f in result.files] == ["README.md", "src/app/util.py", "src/app/main.py"]
    assert result.trace.stop_reason == "k files collected"
    assert [len(r.top_candidate_ids) for r in result.trace.rounds] == [1, 1, 3]
    # A travels in the prompt as "Already top candidates"
    readme = result.files[0].node_id
    assert f"Already top candidates:\n- {readme}\n" in nav.requests[1].message


def test_next_beams_are_the_first_b_expandable_ids(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    nav = scripted(
        lambda r: (
            (["README.md", "tests", "src", "docs"], False)
            if "README.md" in candidate_paths(r)
            else ([], False)
        )
    )
    result = beam(db, info, nav, k=5, beam_width=2)
    # README.md is a file (not a beam); the first two directories in L are tests and src
    assert candidate_paths(nav.requests[1]) == ["tests/test_app.py", "src/app", "src/lib"]
    assert [result.trace.paths[i] for i in result.trace.rounds[0].next_frontier] == ["tests", "src"]


def test_stops_when_the_llm_says_done_with_a_file(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    nav = scripted(lambda r: (["README.md", "src"], True))
    result = beam(db, info, nav, k=5)
    assert len(nav.requests) == 1 and result.trace.stop_reason == "done"


def test_stops_when_no_candidates_remain(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(TREE)
    nav = scripted(lambda r: (["README.md"], False))  # only a file: no next beams
    result = beam(db, info, nav, k=5)
    assert len(nav.requests) == 1 and result.trace.stop_reason == "no candidates"


def test_stops_at_the_depth_limit(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree(["a/b/c/d/e.py"])
    nav = scripted(lambda r: (candidate_paths(r), False))
    result = beam(db, info, nav, k=1)
    # MAXDEPTH(T) = 5: turns 0..5 -> but the walk reaches the file at turn 4
    assert [f.path for f in result.files] == ["a/b/c/d/e.py"]
    nav = scripted(lambda r: ([p for p in candidate_paths(r) if not p.endswith(".py")], False))
    result = beam(db, info, nav, k=1, max_depth=2)
    assert len(nav.requests) == 3 and result.trace.stop_reason == "depth limit reached"


@pytest.mark.parametrize("k", [1, 2])
def test_trace_vocabulary(db: Database, make_tree: TreeFactory, k: int) -> None:
    info = make_tree(TREE)
    nav = scripted(lambda r: (["src", "README.md"], False))
    result = beam(db, info, nav, k=k)
    first = result.trace.rounds[0]
    assert first.pick_limit == max(3, k)
    assert first.blocks[0].candidate_set == [c.id for c in nav.requests[0].candidates]
    assert [result.trace.paths[i] for i in first.merged_ids] == ["src", "README.md"]
    assert first.ordered_ids == first.merged_ids
    assert result.strategy == "beam" and result.navigator == nav.name
    assert first.overhead_s >= 0.0 and result.usage.calls == len(nav.requests)


def test_empty_tree_asks_nothing(db: Database, make_tree: TreeFactory) -> None:
    info = make_tree([])
    nav = scripted(lambda r: ([], True))
    result = beam(db, info, nav, k=3)
    assert nav.requests == [] and result.files == []
    assert result.trace.stop_reason == "no candidates"
    block_nav = scripted(lambda r: ([], True))
    options = QueryOptions(strategy="block", k=3)
    result = run_query(db.store, info, "question", options, block_nav)
    assert block_nav.requests == [] and result.trace.stop_reason == "no candidates"
