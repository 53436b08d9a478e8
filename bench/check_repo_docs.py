"""Documentation inside a code repository: does a usage question reach the docs section?

Indexes a commit of a bare mirror (default: flask at HEAD) with the code index and asks flat
retrieval a few questions, printing the top hits with their best chunk (a docs hit's chunk is
its section: title path and line span).

    python bench/check_repo_docs.py                     # flask, the issue's acceptance check
    python bench/check_repo_docs.py --git-dir D --commit C --question "..." --expect docs/x.rst
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import treeseek
from treeseek.trees.git import GitTreeBuilder

QUESTIONS = {
    "how do I deploy flask with gunicorn": "docs/deploying/gunicorn.rst",
    "how to run flask behind nginx reverse proxy": "docs/deploying/nginx.rst",
    "url_for builds a url for an endpoint": None,  # a code question: code files first
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--git-dir", default="/work/.mirror/pallets+flask/repo")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--question", action="append", default=[])
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("-k", type=int, default=5)
    args = ap.parse_args()
    questions = dict(zip(args.question, args.expect, strict=False)) or QUESTIONS
    with tempfile.TemporaryDirectory() as tmp, treeseek.open(Path(tmp) / "r.db") as db:
        with GitTreeBuilder(args.git_dir, args.commit) as builder:
            db.index(builder, name="repo")
        for question, expected in questions.items():
            result = db.query("repo", question, k=args.k, strategy="flat")
            paths = [h.path for h in result.files]
            rank = paths.index(expected) + 1 if expected in paths else None
            note = f"expected {expected} at rank {rank}" if expected else "code question"
            print(f"{question!r}: {note}")
            for h in result.files:
                c = h.evidence.chunk
                where = f"{c.symbol} lines {c.start_line}-{c.end_line}" if c else ""
                print(f"   {h.path}  [{where}]")


if __name__ == "__main__":
    main()
