"""Run the cross-reference benchmark (see build.py) on one documentation set.

Indexes DOCS as a document tree (``treeseek index DOCS --documents``), then answers every
question of the chosen split with: flat BM25 over sections, the collapsed-tree walk, Block with
the lexical navigator (no LLM), and a plain BM25 over whole files (the baseline). The citing
document is removed from every ranking before scoring. Metrics: recall@1, recall@5 and MRR
(rank of the first correct hit in the top 10) at section level (the gold section itself) and at
document level (any hit inside the gold document; the only level a whole-file method has), and
context tokens per query (cl100k tokens of the top-5 results' texts).

    python bench/docs_xref/run.py DOCS --questions Q.jsonl --split dev --db x.db
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections import Counter
from pathlib import Path

import treeseek
from treeseek.llm.lexical import LexicalNavigator
from treeseek.llm.tokens import count_tokens
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.document.corpus import K1, B, terms
from treeseek.search.document.retriever import DocumentRetriever

TOP = 5
DEPTH = 10


class FileBM25:
    """The baseline: BM25 over whole files, same tokens and parameters as the sections'."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.tf = {p: Counter(terms(t)) for p, t in texts.items()}
        self.len = {p: sum(c.values()) for p, c in self.tf.items()}
        self.avg = sum(self.len.values()) / max(1, len(self.len))
        self.df: Counter[str] = Counter()
        for c in self.tf.values():
            self.df.update(c.keys())
        self.n = len(self.tf)

    def rank(self, query: str) -> list[str]:
        q = Counter(terms(query))
        scores: dict[str, float] = {}
        for p, tf in self.tf.items():
            s = 0.0
            for t, qn in q.items():
                f = tf.get(t)
                if not f:
                    continue
                idf = math.log(1 + (self.n - self.df[t] + 0.5) / (self.df[t] + 0.5))
                norm = f * (K1 + 1) / (f + K1 * (1 - B + B * self.len[p] / self.avg))
                s += idf * norm * (1 + math.log(qn))
            if s > 0:
                scores[p] = s
        return sorted(scores, key=lambda p: (-scores[p], p))


def doc_of(path: str, docs: set[str]) -> str:
    cur = path
    while cur and cur not in docs:
        cur = cur.rpartition("/")[0]
    return cur


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", choices=["dev", "heldout"], required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--name", default="docs")
    ap.add_argument("--limit", type=int, default=0, help="first N questions only (0: all)")
    ap.add_argument("--methods", default="flat,collapsed,block,files")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    qs = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    qs = [q for q in qs if q["split"] == args.split]
    if args.limit:
        qs = qs[: args.limit]
    methods = args.methods.split(",")
    with treeseek.open(args.db, hooks=[]) as db:
        started = time.perf_counter()
        report = db.index(args.docs, name=args.name, documents=True)
        print(
            f"indexed {report.tree.file_count} nodes in {time.perf_counter() - started:.1f}s;"
            f" {len(report.warnings)} warnings"
        )
        info = db.tree(args.name)
        ctx = SearchContext(db.store, info, LexicalNavigator())
        retriever = DocumentRetriever()
        corpus = retriever.corpus(ctx)
        docset = set(corpus.outlines)
        texts = {p: (args.docs / p).read_text(errors="replace") for p in docset}
        baseline = FileBM25(texts) if "files" in methods else None
        tokens_of: dict[str, int] = {}

        def tokens(path: str) -> int:
            if path not in tokens_of:
                text = texts[path] if path in texts else corpus.sections[path].text
                tokens_of[path] = count_tokens(text)
            return tokens_of[path]

        rows: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
        for q in qs:
            for m in methods:
                if m == "files":
                    assert baseline is not None
                    ranked = baseline.rank(q["question"])
                else:
                    k = 60 if m != "block" else 15
                    opts = QueryOptions(strategy=m, k=k, include_content=False)
                    ranked = [f.path for f in retriever.retrieve(ctx, q["question"], opts).files]
                ranked = [p for p in ranked if doc_of(p, docset) != q["citing_document"]][:DEPTH]
                sec_rank = next(
                    (i for i, p in enumerate(ranked, 1) if p == q["gold_section"]), None
                )
                doc_rank = next(
                    (i for i, p in enumerate(ranked, 1) if doc_of(p, docset) == q["gold_document"]),
                    None,
                )
                row = {
                    "s_r1": float(sec_rank == 1),
                    "s_r5": float(sec_rank is not None and sec_rank <= TOP),
                    "s_mrr": 1.0 / sec_rank if sec_rank else 0.0,
                    "d_r1": float(doc_rank == 1),
                    "d_r5": float(doc_rank is not None and doc_rank <= TOP),
                    "d_mrr": 1.0 / doc_rank if doc_rank else 0.0,
                    "tokens": float(sum(tokens(p) for p in ranked[:TOP])),
                }
                if m == "files":
                    row.update(s_r1=math.nan, s_r5=math.nan, s_mrr=math.nan)
                rows[m].append(row)
        summary = {
            m: {k: round(statistics.fmean(r[k] for r in rs), 3) for k in rs[0]}
            for m, rs in rows.items()
            if rs
        }
        print(f"{args.split}: {len(qs)} questions")
        print(
            "| method | section R@1 | section R@5 | section MRR | doc R@1 | doc R@5 | doc MRR |"
            " tokens/query (top 5) |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for m, s in summary.items():
            print(
                f"| {m} | {s['s_r1']} | {s['s_r5']} | {s['s_mrr']} | {s['d_r1']} | {s['d_r5']} |"
                f" {s['d_mrr']} | {s['tokens']:.0f} |"
            )
        if args.out:
            args.out.write_text(json.dumps({"split": args.split, "n": len(qs), "summary": summary}))


if __name__ == "__main__":
    main()
