"""Run the cross-reference benchmark (see build.py) on one documentation set.

Indexes DOCS as a document tree (``treeseek index DOCS --documents``), then answers every
question of the chosen split with: flat BM25 over sections, the collapsed-tree walk, Block with
the lexical navigator (no LLM), and a plain BM25 over whole files (the baseline). The citing
document is removed from every ranking before scoring.

Scoring rule. The gold is a *section*, so every method is scored on a ranked list of
sections (the first :data:`DEPTH` after removing the citing document): recall@1, recall@5 and
MRR of the gold section. A section method's list is its results. A whole file is not a
section, so the baseline's file ranking is read as sections in the two ways a user of a file
answer can get one, both reported:

* ``files (document order)``: each file stands for its sections in document order, the way a
  reader meets them reading the file from the top: the list is file 1's sections, then file
  2's, ... (a gold that is file 1's third section is at rank 3). The literal reading.
* ``files (first section)``: a file is a hit at its own rank when the gold is the file's first
  section (its title section; the preamble, if any, is skipped), a miss otherwise: a file
  answer points at its top and at nothing deeper. The generous reading for a file method
  whose ranks are not diluted by its files' lengths (and 57% of the golds are a first
  section).

Document-level metrics (any hit inside the gold's document: for a section method its first
section in the gold document, for a file its rank) are reported beside them. Tokens per
query: cl100k tokens of what the top 5 answers hand a caller: the sections' own texts, or the
whole files' texts for the baseline (a file answer is the file).

    python bench/docs_xref/run.py DOCS --questions Q.jsonl --split dev --db x.db [--vectors minilm]

``--vectors minilm``: DOCS is indexed with section vectors of that embedder and flat ranks with
them (``QueryOptions.vectors``: the question's cosines join the linear scorer).
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
from treeseek.embed.base import Embedder
from treeseek.embed.neural import load_embedder
from treeseek.index.code_hook import CodeIndexHook
from treeseek.index.run import IndexHook
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
    ap.add_argument("--vectors", default=None, help="flat with section vectors (minilm)")
    args = ap.parse_args()
    qs = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    qs = [q for q in qs if q["split"] == args.split]
    if args.limit:
        qs = qs[: args.limit]
    methods = args.methods.split(",")
    hooks: list[IndexHook] = []
    embedders: dict[str, Embedder] = {}
    if args.vectors is not None:
        embedders[args.vectors] = load_embedder(args.vectors)  # one model for index and query
        hooks = [CodeIndexHook(embedders[args.vectors])]
    with treeseek.open(args.db, hooks=hooks) as db:
        started = time.perf_counter()
        report = db.index(args.docs, name=args.name, documents=True)
        print(
            f"indexed {report.tree.file_count} nodes in {time.perf_counter() - started:.1f}s;"
            f" {len(report.warnings)} warnings"
        )
        info = db.tree(args.name)
        ctx = SearchContext(db.store, info, LexicalNavigator())
        retriever = DocumentRetriever(embedders)
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

        # each document's sections in document order, and its first (title) section
        doc_sections: dict[str, list[str]] = {d: [] for d in docset}
        for path, sec in corpus.sections.items():
            doc_sections[sec.info.document].append(path)
        first_section = {
            d: next((p for p in ps if corpus.sections[p].info.level > 0), ps[0] if ps else "")
            for d, ps in doc_sections.items()
        }
        names = [m for m in methods if m != "files"]
        if "files" in methods:
            names += ["files-order", "files-first"]
        rows: dict[str, list[dict[str, float]]] = {m: [] for m in names}

        def scored(sections: list[str], docs: list[str], q: dict[str, str]) -> dict[str, float]:
            sec_rank = next((i for i, p in enumerate(sections, 1) if p == q["gold_section"]), None)
            doc_rank = next((i for i, d in enumerate(docs, 1) if d == q["gold_document"]), None)
            return {
                "s_r1": float(sec_rank == 1),
                "s_r5": float(sec_rank is not None and sec_rank <= TOP),
                "s_mrr": 1.0 / sec_rank if sec_rank else 0.0,
                "d_r1": float(doc_rank == 1),
                "d_r5": float(doc_rank is not None and doc_rank <= TOP),
                "d_mrr": 1.0 / doc_rank if doc_rank else 0.0,
            }

        for q in qs:
            for m in methods:
                if m == "files":
                    assert baseline is not None
                    files = [p for p in baseline.rank(q["question"]) if p != q["citing_document"]]
                    files = files[:DEPTH]
                    tok = float(sum(tokens(p) for p in files[:TOP]))
                    order = [s for f in files for s in doc_sections[f]][:DEPTH]
                    rows["files-order"].append({**scored(order, files, q), "tokens": tok})
                    first = scored([first_section[f] for f in files], files, q)
                    rows["files-first"].append({**first, "tokens": tok})
                    continue
                k = 60 if m != "block" else 15
                opts = QueryOptions(strategy=m, k=k, include_content=False, vectors=args.vectors)
                ranked = [f.path for f in retriever.retrieve(ctx, q["question"], opts).files]
                ranked = [p for p in ranked if doc_of(p, docset) != q["citing_document"]][:DEPTH]
                docs = [doc_of(p, docset) for p in ranked]
                row = scored(ranked, docs, q)
                row["tokens"] = float(sum(tokens(p) for p in ranked[:TOP]))
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
