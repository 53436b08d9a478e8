"""Probe: would a passage-level cosine help the flat ranking? A rerank cross-validation on the
dev split (never the held-out one), affordable where a full fit is not.

A full fit of passage features (``fit.py --vectors minilm`` with them) needs every section of
the tree and every passage embedded: 6,159 section texts and 4,942 passages for Django's docs,
over an hour of MiniLM on a shared 2-core machine (1.6-2.8 texts/s measured). This probe
embeds only what decides recall@1/@5 within the lexical scorer's top ``--k``: for every dev
question whose gold is among the top ``k`` sections of the shipped lexical ranking
(:data:`~treeseek.search.document.ranking.WEIGHTS`, the citing document removed), the question,
those sections' vector texts (:func:`~treeseek.index.section_vectors.section_text`) and their
passages (:func:`passages`). Then, with ``fit.py``'s listwise fit and its 5 folds by citing
document, the top ``k`` are re-ranked by the 21 lexical features refitted there, plus each set
of semantic features. Questions whose gold is not in the top ``k`` are misses for every arm, so
the printed metrics are over all dev questions and comparable across arms (not with the
full-candidate CVs of the README: the re-ranking cannot reach a gold outside the top ``k``, and
the best child's cosine is left out, since it needs the children's vectors).

A section's passages: its own text (adornment lines dropped) cut at paragraph ends into
windows of about 100 words (paragraphs joined up to 60 words, one over 150 cut at 100, a tail
under 20 joined to the window before), every window after the first (the section vector's
opening covers it) up to the 8th, each after the title path the section vector starts with.

    python bench/docs_xref/passage_probe.py DOCS --questions Q.jsonl --db x.db --cache DIR

``--cache`` keeps the embedded arrays (``questions_K10.npy`` ...): a second run only fits.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
from fit import FOLDS, Item, cross_validated  # type: ignore[import-not-found]

import treeseek
from treeseek.embed.neural import MiniLMEmbedder
from treeseek.index.section_vectors import section_text, title_path_words
from treeseek.search.document.corpus import SectionCorpus
from treeseek.search.document.ranking import WEIGHTS

PASSAGE_WORDS = 100
MAX_WINDOWS = 8
_ADORNMENT = re.compile(r"^\s*([=\-~^\"'`#*+_.:<>])\1{2,}\s*$")

Array = npt.NDArray[np.float32]


def windows(text: str) -> list[str]:
    """A section's own text as windows of about :data:`PASSAGE_WORDS` words."""
    size = PASSAGE_WORDS
    lines = [line for line in text.splitlines() if not _ADORNMENT.match(line)]
    paragraphs = [p.split() for p in re.split(r"\n\s*\n", "\n".join(lines))]
    out: list[list[str]] = []
    current: list[str] = []
    for words in paragraphs:
        while len(words) > size * 1.5:
            if current:
                out.append(current)
                current = []
            out.append(words[:size])
            words = words[size:]
        current += words
        if len(current) >= size * 0.6:
            out.append(current)
            current = []
    if current:
        if out and len(current) < size // 5:
            out[-1] = out[-1] + current
        else:
            out.append(current)
    return [" ".join(words) for words in out]


def passages(document: str, path: str, text: str) -> list[str]:
    """The windows after the first, up to the :data:`MAX_WINDOWS`-th, after the title path."""
    title = title_path_words(document, path)
    return [f"{title}. {window}" for window in windows(text)[1:MAX_WINDOWS]]


def embedded(cache: Path, name: str, texts: list[str]) -> Array:
    """MiniLM vectors of ``texts`` (one torch thread: faster than two on a busy machine),
    kept in ``cache``."""
    path = cache / f"{name}.npy"
    if path.exists():
        return np.asarray(np.load(path), dtype=np.float32)
    model = MiniLMEmbedder(threads=1)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), model.dim), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, len(order), 64):
        batch = order[start : start + 64]
        out[batch] = model.embed([texts[i] for i in batch])
    seconds = time.perf_counter() - started
    print(f"{name}: {len(texts)} texts in {seconds:.0f}s ({len(texts) / seconds:.1f}/s)")
    np.save(path, out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--name", default="docs")
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    k = args.k
    qs = [json.loads(x) for x in args.questions.read_text().splitlines() if x.strip()]
    qs = [q for q in qs if q["split"] == "dev"]
    with treeseek.open(args.db, hooks=[]) as db:
        db.index(args.docs, name=args.name, documents=True)
        corpus = SectionCorpus.load(db.store, db.tree(args.name))
    lexical = np.array(list(WEIGHTS.values()))
    tops: list[tuple[int, list[str], npt.NDArray[np.float64], npt.NDArray[np.bool_]]] = []
    for n, q in enumerate(qs):
        paths, feats = corpus.candidate_features(q["question"])
        keep = [
            i
            for i, p in enumerate(paths)
            if corpus.sections[p].info.document != q["citing_document"]
        ]
        paths, feats = [paths[i] for i in keep], feats[keep]
        order = np.lexsort((np.arange(len(paths)), -(feats @ lexical)))[:k]
        gold = np.array([paths[i] == q["gold_section"] for i in order], dtype=bool)
        if gold.any():
            tops.append((n, [paths[i] for i in order], feats[order], gold))
    sections = sorted({p for _, paths, _, _ in tops for p in paths})
    print(
        f"top {k}: {len(tops)} of {len(qs)} dev questions have the gold; {len(sections)} sections"
    )
    args.cache.mkdir(parents=True, exist_ok=True)
    docs = {p: corpus.sections[p] for p in sections}
    question = embedded(args.cache, f"questions_K{k}", [qs[n]["question"] for n, *_ in tops])
    section = embedded(
        args.cache,
        f"sections_K{k}",
        [section_text(s.info.document, p, s.text) for p, s in docs.items()],
    )
    texts: list[str] = []
    owner: list[int] = []
    for j, (p, s) in enumerate(docs.items()):
        for passage in passages(s.info.document, p, s.text):
            texts.append(passage)
            owner.append(j)
    passage = embedded(args.cache, f"passages_K{k}", texts)
    owners = np.array(owner, dtype=np.intp)
    index = {p: j for j, p in enumerate(sections)}
    rows: list[tuple[list[str], npt.NDArray[np.float64], npt.NDArray[np.bool_], Array]] = []
    for m, (_, paths, feats, gold) in enumerate(tops):
        cos = section @ question[m]
        cp = passage @ question[m]
        extra = []
        for p in paths:
            j = index[p]
            mine = np.concatenate([[cos[j]], cp[owners == j]])
            best = float(mine.max())
            top2 = float(np.sort(mine)[::-1][:2].mean())
            extra.append([cos[j], best, top2, best - cos[j], float(len(mine) > 1)])
        rows.append((paths, feats, gold, np.array(extra, dtype=np.float32)))
    folds = [zlib.crc32(qs[n]["citing_document"].encode()) % FOLDS for n, *_ in tops]
    share = len(tops) / len(qs)
    arms = {
        "lexical (refitted in the top k)": [],
        "+ cosine": [0],
        "+ cosine + best passage": [0, 1],
        "+ best passage": [1],
        "+ cosine + top-2 mean": [0, 2],
        "+ cosine + best passage + top-2 mean": [0, 1, 2],
        "+ cosine + passage gain": [0, 3],
        "+ cosine + best passage + has passages": [0, 1, 4],
        "lexical + has passages": [4],
        "+ cosine + has passages": [0, 4],
        "+ best passage + has passages": [1, 4],
    }
    for name, cols in arms.items():
        items: list[Item] = [(p, np.hstack([f, e[:, cols]]), y) for p, f, y, e in rows]
        cv = cross_validated(items, folds) * share
        print(f"top {k} {name}: R@1 {cv[0]:.3f} R@5 {cv[1]:.3f} MRR {cv[2]:.3f}")


if __name__ == "__main__":
    main()
