"""The ``symbols`` of an answer: the functions, methods and classes it points to, best first.

Every function, method and class of the plan's ranked files is a candidate. Its score is the
evidence the question gives for it, times a prior of its file's rank:

    score = (1 + file rank) ** -FILE_POWER
            * (W_BM25 * best BM25 of its own chunks / best chunk BM25 of all the files
               + W_MENTION * the strength of an identifier of the question naming it
               + W_FRAME * [a stack frame of the question names it]
               + W_CHUNK * [it holds the chunk that ranked its file])
            * (CLASS_FACTOR for a class)

- a symbol's *own* chunks are those the chunker gave it (a class's header, a method, a
  top-level function), so a class does not inherit the text of its methods; a function nested
  in a function has no chunk (it stays in the outer one's) and is scored over its own lines
  instead, the same way (``select._unchunked_scores``);
- a mention is an identifier of the question (``extract_mentions``: backticked, called,
  dotted, snake_case, CamelCase) equal to the symbol's name or a dotted suffix of its
  qualified name (``QuerySet.delete``), or a symbol the retriever matched exactly; a name the
  question uses in the title weighs TITLE_FACTOR more; a name that several candidates share
  (``__init__``, ``encode``) is weak evidence for each: divided by the count ** AMBIGUITY_POWER
  (frames likewise);
- an enclosing symbol (a method's class, a nested function's outer one) scores at least
  PARENT_SHARE of its best member: a fix inside a method often touches the class around it
  too.

Ties keep file order, then line order. The weights were set on the dev split by hand (a flat
plateau around them; see the README's budgeted-context section), never per instance.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from treeseek.code.model import Symbol, SymbolKind, symbol_id
from treeseek.context._deps import QueryMentions

FILE_POWER = 0.5
W_BM25 = 1.0
W_MENTION = 0.5
TITLE_FACTOR = 1.5
AMBIGUITY_POWER = 0.5
W_FRAME = 0.5
W_CHUNK = 0.3
CLASS_FACTOR = 0.3
PARENT_SHARE = 0.5

_KINDS = (SymbolKind.FUNCTION, SymbolKind.METHOD, SymbolKind.CLASS)


@dataclass(frozen=True, slots=True)
class FileEvidence:
    """What the ranking reads of one ranked file."""

    path: str
    rank: int  # 0-based
    symbols: list[Symbol]
    #: the best BM25 score of the chunks of each symbol (qualified name), for the question
    chunk_scores: dict[str, float]
    #: symbols the retriever matched exactly (mentions, frames): qualified name -> kind
    matched: dict[str, str]
    ranking_chunk: str | None  # the symbol of the chunk that ranked the file


def _mentions_by_name(mentions: QueryMentions) -> dict[str, list[tuple[str, float]]]:
    """The question's identifiers by their last dotted part: (identifier, strength)."""
    out: dict[str, list[tuple[str, float]]] = {}
    for ident, strength in mentions.identifiers.items():
        out.setdefault(ident.rsplit(".", 1)[-1], []).append((ident, min(strength, 1.0)))
    return out


def _mention_strength(
    by_name: dict[str, list[tuple[str, float]]], title: frozenset[str], sym: Symbol
) -> float:
    best = 0.0
    for ident, strength in by_name.get(sym.name, ()):
        if ident == sym.name or ident == sym.qname or ident.endswith("." + sym.qname):
            best = max(best, strength * (TITLE_FACTOR if ident in title else 1.0))
        else:  # a dotted name whose owner is not this symbol's
            best = max(best, strength)
    return best


def rank_symbols(files: list[FileEvidence], mentions: QueryMentions, limit: int) -> list[str]:
    """Name paths (``path::Qual.name``) best first, at most ``limit`` (see the module)."""
    candidates = [(f, s) for f in files for s in f.symbols if s.kind in _KINDS]
    if not candidates:
        return []
    names = Counter(s.name for _, s in candidates)
    frames = {fr.function for fr in mentions.frames if fr.function}
    by_name = _mentions_by_name(mentions)
    best_bm25 = max((v for f in files for v in f.chunk_scores.values()), default=0.0) or 1.0
    scores: dict[str, float] = {}
    order: dict[str, int] = {}
    parents: list[tuple[str, str]] = []  # (member name path, class name path)
    for f, sym in candidates:
        ambiguity = names[sym.name] ** AMBIGUITY_POWER
        mention = _mention_strength(by_name, mentions.title_identifiers, sym)
        matched = f.matched.get(sym.qname)
        if matched in ("symbol", "qname", "mention"):
            mention = max(mention, 1.0)
        frame = 1.0 if sym.name in frames or matched == "frame" else 0.0
        evidence = (
            W_BM25 * f.chunk_scores.get(sym.qname, 0.0) / best_bm25
            + (W_MENTION * mention + W_FRAME * frame) / ambiguity
            + (W_CHUNK if f.ranking_chunk == sym.qname else 0.0)
        )
        if sym.kind is SymbolKind.CLASS:
            evidence *= CLASS_FACTOR
        name = symbol_id(f.path, sym.qname)
        scores[name] = evidence * (1 + f.rank) ** -FILE_POWER
        order[name] = len(order)
        if sym.parent:
            parents.append((name, symbol_id(f.path, sym.parent)))
    for member, parent in parents:
        if parent in scores:
            scores[parent] = max(scores[parent], PARENT_SHARE * scores[member])
    ranked = sorted((n for n in scores if scores[n] > 0), key=lambda n: (-scores[n], order[n]))
    return ranked[:limit]
