"""Section vectors of document trees: what a section's vector embeds, and embedding the
sections a tree lacks (``treeseek index docs/ --documents --vectors minilm``).

A section's vector is stored in the code index's vector layer under the section node's key,
(content hash of its own text, section path) (:class:`~treeseek.store.code_base.VectorKey`),
with kind :data:`SECTION_KIND`. So the embedded text must be a function of that pair alone, or
one tree's vectors would depend on what another tree stored first: it is the title path *read
from the section path* (the document path's words, then every section's slug words:
``howto/deployment/checklist.txt/1-deployment-checklist/2-critical-settings`` ->
``howto deployment checklist / deployment checklist / critical settings``), then the opening of
the section's own text (which begins with its heading in Markdown and reST) with heading
underlines dropped and whitespace collapsed, cut at :data:`SECTION_CHARS`. The outline's exact
titles are not used: they are the document's, not the pair's (a parent's title can change
without the section's path or text changing). Rows go with their content, like every vector.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from treeseek.embed.base import Embedder
from treeseek.store.code_base import CodeStore, VectorKey

#: the vector kind of section texts; a new :func:`section_text` needs a new kind
SECTION_KIND = "section-v1"
#: characters of a section's own text embedded after its title path (MiniLM reads at most 256
#: word pieces, about 1,000 characters of prose)
SECTION_CHARS = 600
#: texts per embedder call (sorted by length: a batch is padded to its longest text)
EMBED_BATCH = 64

#: a reST heading's over/underline (a run of one punctuation character), a Markdown rule
_ADORNMENT = re.compile(r"^\s*([=\-~^\"'`#*+_.:<>])\1{2,}\s*$")


@dataclass(frozen=True, slots=True)
class SectionToEmbed:
    """One section node: its vector's key, its document's path and its own text."""

    key: VectorKey
    document: str
    text: str


def title_path_words(document: str, path: str) -> str:
    """The title path as the section path spells it: the document path's words (no
    extension), then each section's slug as words (its ordinal dropped), joined by `` / ``."""
    stem = document.rsplit(".", 1)[0] if "." in document.rpartition("/")[2] else document
    parts = [" ".join(re.split(r"[/_\-]+", stem)).strip()]
    rel = path[len(document) + 1 :] if path.startswith(document + "/") else ""
    for part in rel.split("/") if rel else []:
        parts.append(part.split("-", 1)[1].replace("-", " ") if "-" in part else part)
    return " / ".join(parts)


def section_text(document: str, path: str, text: str) -> str:
    """What the vector of section ``path`` (of ``document``, own text ``text``) embeds."""
    lines = [line for line in text.splitlines() if not _ADORNMENT.match(line)]
    opening = " ".join(" ".join(lines).split())[:SECTION_CHARS]
    return f"{title_path_words(document, path)}. {opening}"


def embed_missing(
    code: CodeStore, embedder: Embedder, sections: Sequence[SectionToEmbed]
) -> list[tuple[VectorKey, npt.NDArray[np.float32]]]:
    """Vectors for the ``sections`` that have none of ``embedder``'s model stored (read
    through ``code``; nothing is written here, so the caller can embed before its write
    transaction and store them inside it)."""
    keys = list(dict.fromkeys(s.key for s in sections))
    have = set(code.vectors(embedder.name, SECTION_KIND, keys)) if keys else set()
    todo: dict[VectorKey, str] = {}
    for s in sections:
        if s.key not in have and s.key not in todo:
            todo[s.key] = section_text(s.document, s.key.path, s.text)
    items = sorted(todo.items(), key=lambda item: (len(item[1]), item[0]))
    out: list[tuple[VectorKey, npt.NDArray[np.float32]]] = []
    for start in range(0, len(items), EMBED_BATCH):
        batch = items[start : start + EMBED_BATCH]
        vecs = embedder.embed([text for _, text in batch])
        out.extend((key, vecs[i]) for i, (key, _) in enumerate(batch))
    return out
