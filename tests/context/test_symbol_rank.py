"""rank_symbols(): the answer's symbols ranked by the question's evidence for each; and the
ranked symbols of a real plan (they do not depend on the budget)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import treeseek
from treeseek.code.model import Symbol, SymbolKind
from treeseek.context import TreeSource, plan, select
from treeseek.context.symbol_rank import FileEvidence, rank_symbols
from treeseek.database import Database
from treeseek.search.base import FileHit
from treeseek.search.flat.understanding import extract_mentions

A = "pkg/a.py"
B = "pkg/b.py"


def sym(qname: str, kind: SymbolKind, start: int, end: int) -> Symbol:
    parent, _, name = qname.rpartition(".")
    return Symbol(qname, name, kind, start, end, parent=parent or None)


CLASS_A = [
    sym("Session", SymbolKind.CLASS, 1, 40),
    sym("Session.send", SymbolKind.METHOD, 5, 20),
    sym("Session.close", SymbolKind.METHOD, 22, 40),
]
MODULE_B = [
    sym("send", SymbolKind.FUNCTION, 1, 10),
    sym("helper", SymbolKind.FUNCTION, 12, 30),
    sym("helper.inner", SymbolKind.FUNCTION, 14, 20),
]


def evidence(
    path: str,
    rank: int,
    symbols: list[Symbol],
    chunks: dict[str, float] | None = None,
    matched: dict[str, str] | None = None,
    ranking_chunk: str | None = None,
) -> FileEvidence:
    return FileEvidence(path, rank, symbols, chunks or {}, matched or {}, ranking_chunk)


def test_chunk_scores_rank_symbols_and_a_class_follows_its_best_member() -> None:
    files = [evidence(A, 0, CLASS_A, {"Session.close": 8.0, "Session.send": 2.0})]
    ranked = rank_symbols(files, extract_mentions("connections stay open"), 10)
    assert ranked == [f"{A}::Session.close", f"{A}::Session", f"{A}::Session.send"]


def test_a_better_ranked_file_wins_at_equal_evidence_and_ties_keep_file_order() -> None:
    files = [evidence(A, 0, CLASS_A, {"Session.send": 5.0}), evidence(B, 1, MODULE_B)]
    files[1] = evidence(B, 1, MODULE_B, {"send": 5.0})
    ranked = rank_symbols(files, extract_mentions("nothing named"), 10)
    assert ranked.index(f"{A}::Session.send") < ranked.index(f"{B}::send")
    # the same evidence in both files of equal rank: file order, then line order
    same = [evidence(A, 0, CLASS_A, {"Session.send": 5.0}), evidence(B, 0, MODULE_B, {"send": 5.0})]
    assert rank_symbols(same, extract_mentions(""), 2) == [f"{A}::Session.send", f"{B}::send"]


def test_a_name_the_question_uses_ranks_its_symbol_up() -> None:
    files = [
        evidence(A, 0, CLASS_A, {"Session.send": 4.0, "Session.close": 8.0}),
        evidence(B, 0, MODULE_B),
    ]
    ranked = rank_symbols(files, extract_mentions("`helper.inner` drops the last item"), 10)
    # close: BM25 1.0; helper.inner and helper (the dotted name names both): 0.5 x 1.5 (in
    # the title), in line order; Session (half of close) ties with send (BM25 0.5)
    assert ranked == [
        f"{A}::Session.close",
        f"{B}::helper",
        f"{B}::helper.inner",
        f"{A}::Session",
        f"{A}::Session.send",
    ]
    # a name several candidates share is weaker evidence than a unique one
    bare = [evidence(A, 0, CLASS_A), evidence(B, 0, MODULE_B)]
    shared = rank_symbols(bare, extract_mentions("`send()` and `helper()` fail"), 10)
    assert shared.index(f"{B}::helper") < shared.index(f"{B}::send")


def test_a_stack_frame_names_its_function() -> None:
    files = [evidence(A, 0, CLASS_A, {"Session.send": 6.0}), evidence(B, 0, MODULE_B)]
    query = 'Traceback:\n  File "pkg/b.py", line 15, in helper\n    boom()\n'
    ranked = rank_symbols(files, extract_mentions(query), 10)
    assert f"{B}::helper" in ranked
    assert f"{B}::helper" not in rank_symbols(files, extract_mentions("boom() fails"), 10)


def test_no_evidence_no_symbols() -> None:
    assert rank_symbols([evidence(A, 0, CLASS_A)], extract_mentions("unrelated words"), 10) == []
    assert rank_symbols([], extract_mentions("x"), 10) == []


def test_the_limit_cuts_the_list() -> None:
    files = [evidence(A, 0, CLASS_A, {"Session.send": 1.0, "Session.close": 2.0})]
    assert len(rank_symbols(files, extract_mentions(""), 1)) == 1


def hit(path: str, **ev: Any) -> FileHit:
    return FileHit(node_id="x", path=path, evidence=ev)


def test_a_plans_symbols_are_the_same_at_every_budget(shop: Database) -> None:
    source = TreeSource(shop.store, "shop")
    hits = [hit("payments/retry.py"), hit("payments/invoice.py")]
    p = plan(source, hits, "Backoff.jitter adds random jitter to the retry delay")
    assert p.symbols[0] == "payments/retry.py::Backoff.jitter"
    assert select(p, 100).symbols == select(p, 8000).symbols == p.symbols


LINKCHECK = '''"""Checks links."""


class Checker:
    """Runs the checks."""

    def run(self, urls):
        """Check every url in a worker."""
        results = []

        def check_anchor(url):
            anchor = url.partition("#")[2]
            if not anchor:
                return "ok"
            return "anchor not found: " + anchor

        def check_local(url):
            return "local"

        for url in urls:
            results.append(check_anchor(url))
        return results

    def report(self, results):
        for line in results:
            print(line)
'''


def test_a_function_nested_in_a_method_has_evidence_of_its_own(tmp_path: Path) -> None:
    """A nested function shares its outer method's chunk; it is scored on its own lines, so
    a question about what it does points at it, not only at the method around it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "linkcheck.py").write_text(LINKCHECK)
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(tmp_path / "src", name="t")
        source = TreeSource(db.store, "t")
        p = plan(source, [hit("linkcheck.py")], "the anchor partition reports anchor not found")
    assert p.symbols[:2] == [
        "linkcheck.py::Checker.run.check_anchor",
        "linkcheck.py::Checker.run",
    ]
    assert "linkcheck.py::Checker.run.check_local" not in p.symbols  # no term of its own
