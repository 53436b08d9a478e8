"""Build the cross-reference benchmark from a Sphinx documentation set.

The documents' authors wrote the gold: every ``:ref:`label``` / ``:ref:`text <label>``` and
``:doc:`path``` in a paragraph ties that paragraph to the section the target names. The
question is the paragraph with the reference (role, target and link text) removed and the
other roles reduced to their text; the gold is the target section (its path in the document
tree ``treeseek index DOCS --documents`` builds).

Kept: references whose target resolves to a section title (a label directly above a title, or
a document's top section for ``:doc:``) in ANOTHER document than the citing one (the citing
document is removed from every method's ranking, so the question cannot find itself).
Dropped: paragraphs that name the target's title verbatim (case-insensitive), questions under
8 words, paragraphs inside the target section. Split: by citing document (a stable hash of
its path), so a document's questions are all in one split.

    python bench/docs_xref/build.py DOCS_DIR --out /work/runs/docs/xref/django.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

from treeseek.trees.documents import parse_document
from treeseek.trees.documents.layout import section_paths

SUFFIXES = (".txt", ".rst")
_REF = re.compile(r":(ref|doc):`([^`]+)`")
_ROLE = re.compile(r":[\w:.-]+:`([^`]+)`")
_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")


def _target_and_text(body: str) -> tuple[str, str | None]:
    m = re.match(r"^(.*?)\s*<([^<>]+)>$", body.strip(), re.S)
    if m:
        return m.group(2).strip(), m.group(1).strip()
    return body.strip(), None


def _role_text(m: re.Match[str]) -> str:
    target, text = _target_and_text(m.group(1))
    if text:
        return text
    return target.lstrip("~!").rpartition(".")[2] if "." in target else target.lstrip("~!")


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """(offset line, text) of the plain paragraphs of a section's own text."""
    out: list[tuple[int, str]] = []
    block: list[str] = []
    start = 0
    lines = text.split("\n")
    for i, line in enumerate([*lines, ""]):
        if line.strip():
            if not block:
                start = i
            block.append(line)
            continue
        if block:
            first = block[0]
            plain = (
                not first[:1].isspace()
                and not first.startswith("..")
                and not any(_ADORN.match(x) for x in block)
            )
            if plain:
                out.append((start, " ".join(x.strip() for x in block)))
            block = []
    return out


def split_of(doc_path: str, salt: str) -> str:
    digest = hashlib.sha256(f"{salt}:{doc_path}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "heldout"


def build(root: Path, name: str) -> list[dict[str, object]]:
    docs: dict[str, list[tuple[str, object]]] = {}
    labels: dict[str, tuple[str, str, str]] = {}  # label -> (doc, section path, title)
    tops: dict[str, tuple[str, str]] = {}  # doc path without suffix -> (section path, title)
    for path in sorted(root.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        doc = parse_document(rel, path.read_bytes(), fmt="rst")
        parts = section_paths(rel, doc)
        docs[rel] = [(p, s) for p, s, _ in parts]
        for p, s, _ in parts:
            for label in s.labels:
                labels.setdefault(label, (rel, p, s.title))
        firsts = [(p, s) for p, s, parent in parts if parent == rel and s is not doc.preamble]
        if firsts:
            tops[rel.rsplit(".", 1)[0]] = (firsts[0][0], firsts[0][1].title)
    items: list[dict[str, object]] = []
    for rel, sections in docs.items():
        here = rel.rsplit("/", 1)[0] if "/" in rel else ""
        for section_path, section in sections:
            for _, para in _paragraphs(section.text):  # type: ignore[attr-defined]
                for m in _REF.finditer(para):
                    role, body = m.group(1), m.group(2)
                    target, _link_text = _target_and_text(body)
                    if role == "ref":
                        found = labels.get(re.sub(r"\s+", " ", target.lower()))
                        if found is None:
                            continue
                        gold_doc, gold, title = found
                    else:
                        key = (
                            target.lstrip("/")
                            if target.startswith("/")
                            else (f"{here}/{target}" if here else target)
                        )
                        key = str(Path(key)).replace("\\", "/")
                        parts = []
                        for part in key.split("/"):
                            if part == "..":
                                if parts:
                                    parts.pop()
                            elif part != ".":
                                parts.append(part)
                        top = tops.get("/".join(parts))
                        if top is None:
                            continue
                        gold, title = top
                        gold_doc = _doc_of(gold, docs)
                    if gold_doc == rel:
                        continue  # same document: the question would find its own source
                    if section_path == gold or section_path.startswith(gold + "/"):
                        continue
                    question = para[: m.start()] + " " + para[m.end() :]
                    question = _ROLE.sub(_role_text, question)
                    question = re.sub(r"``([^`]*)``", r"\1", question)
                    question = re.sub(r"\s+", " ", question).strip()
                    plain_title = re.sub(r"`+", "", _ROLE.sub(_role_text, title)).strip().lower()
                    if plain_title and plain_title in question.lower():
                        continue
                    if len(question.split()) < 8:
                        continue
                    items.append(
                        {
                            "id": f"{name}:{len(items)}",
                            "set": name,
                            "split": split_of(rel, name),
                            "question": question,
                            "citing_document": rel,
                            "citing_section": section_path,
                            "gold_section": gold,
                            "gold_document": gold_doc,
                            "gold_title": title,
                            "role": role,
                        }
                    )
    return items


def _doc_of(section_path: str, docs: dict[str, list[tuple[str, object]]]) -> str:
    for rel in docs:
        if section_path.startswith(rel + "/"):
            return rel
    return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--name", default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    name = args.name or args.docs.name
    items = build(args.docs, name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")
    dev = sum(1 for i in items if i["split"] == "dev")
    print(f"{len(items)} questions ({dev} dev, {len(items) - dev} held-out) -> {args.out}")


if __name__ == "__main__":
    main()
