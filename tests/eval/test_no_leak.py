"""The harness gives a retriever the query and the tree, nothing else.

A scripted navigator records every request it receives; no request may carry an instance id,
the repository name, or a gold path that the tree itself does not show.
"""

from __future__ import annotations

from pathlib import Path

from tinybench import COMMIT_A, REPO, instance, write_bench

import treeseek
from treeseek.eval.datasets import load_instances, load_path_lists
from treeseek.eval.records import PER_QUERY_FILE, read_records
from treeseek.eval.runner import RunSettings, run_eval
from treeseek.eval.universes import PathUniverse
from treeseek.llm.base import RankReply, RankRequest
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.scripted import ScriptedNavigator

LISTING = [
    "quokka/models/fields.py",
    "quokka/models/query.py",
    "quokka/utils/dateparse.py",
    "docs/index.rst",
]
GHOST = "quokka/models/ghostly_phantom_module.py"  # gold, but not in the tree


def _request_text(request: RankRequest) -> str:
    parts = [s.text for s in request.segments]
    parts += [request.message, request.query, request.tree_root or ""]
    parts += [f"{c.id} {c.path} {c.type}" for c in request.candidates]
    return "\n".join(parts)


def test_requests_carry_no_ids_repo_names_or_unlisted_gold(tmp_path: Path) -> None:
    instances = [
        instance(
            "zebracorp__quokkalib-7001",
            "dateparse fails on negative durations",
            ["quokka/utils/dateparse.py"],
        ),
        instance(
            "zebracorp__quokkalib-7002",
            "query and model fields disagree on nulls",
            ["quokka/models/query.py", GHOST],
        ),
    ]
    bench = write_bench(tmp_path, instances, {(REPO, COMMIT_A): LISTING})
    lexical = LexicalNavigator()

    def respond(request: RankRequest) -> RankReply:
        return lexical.rank(request)

    navigator = ScriptedNavigator(respond, name="recorder")
    for strategy in ("beam", "block"):
        out = tmp_path / strategy
        run_eval(
            load_instances(bench.dataset),
            RunSettings(str(bench.dataset), "paths", strategy=strategy, llm="scripted"),
            PathUniverse(load_path_lists(bench.trees)),
            db_path=tmp_path / "eval.db",
            out_dir=out,
            navigator=navigator,
        )
        assert all(r.error is None for r in read_records(out / PER_QUERY_FILE))
    assert navigator.requests, "the navigator was never asked"
    secrets = ["zebracorp", "quokkalib", "7001", "7002", COMMIT_A[:10], GHOST, "ghostly"]
    for request in navigator.requests:
        text = _request_text(request)
        for secret in secrets:
            assert secret not in text, f"{secret!r} leaked into a rank request"
        assert request.query in {i["query"] for i in instances}
        assert {c.path for c in request.candidates} <= set(LISTING) | {
            "quokka",
            "quokka/models",
            "quokka/utils",
            "docs",
        }
    with treeseek.open(tmp_path / "eval.db") as db:
        for info in db.trees():
            for secret in secrets:
                assert secret not in info.name and secret not in info.root
