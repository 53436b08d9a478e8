"""The same call-site gold, answered by jedi's ``get_references`` (the comparison that decided
against adding jedi as a dependency; see README, "Code graph: call-site recall").

jedi is not a treeseek dependency: run this with a Python that has it
(``python -m venv /tmp/jv && /tmp/jv/bin/pip install jedi``). It needs checkouts of the gold
commits, one directory per tree under ROOT (``ROOT/flask``, ``ROOT/requests``, e.g. ``git -C
MIRROR archive COMMIT | tar -x -C ROOT/flask``).

    /tmp/jv/bin/python bench/graph_callsites_jedi.py ROOT

A gold site counts as found when jedi returns a reference at its file and line; precision is
over the references other than the definition itself.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

GOLD = Path(__file__).parent / "data" / "graph-callsites.jsonl"


def _definition(source: str, qname: str) -> tuple[int, int]:
    """(line, column) of ``def method`` inside ``class Class`` of a module's source."""
    cls, method = qname.rsplit(".", 1)
    short = cls.rsplit(".", 1)[-1]
    inside = False
    for number, text in enumerate(source.splitlines(), 1):
        if text.startswith((f"class {short}(", f"class {short}:")):
            inside = True
        elif text.startswith("class "):
            inside = False
        if inside and text.strip().startswith(f"def {method}("):
            return number, text.index("def ") + 4
    raise SystemExit(f"no def {qname}")


def main() -> None:
    try:
        import jedi  # type: ignore[import-not-found]
    except ImportError as missing:
        message = "this comparison needs jedi: pip install jedi (not a treeseek dependency)"
        raise SystemExit(message) from missing
    root = Path(sys.argv[1])
    gold = [json.loads(line) for line in GOLD.read_text().splitlines() if line.strip()]
    targets = sorted({(g["tree"], g["target"]) for g in gold if g["target"]})
    found_all = gold_all = refs_all = right_all = 0
    started = time.perf_counter()
    for tree, target in targets:
        path, qname = target.split("::")
        base = root / tree
        source = (base / path).read_text()
        line, column = _definition(source, qname)
        t = time.perf_counter()
        script = jedi.Script(source, path=str(base / path), project=jedi.Project(str(base)))
        refs = script.get_references(line, column, scope="project")
        wall = time.perf_counter() - t
        at = {(str(r.module_path.relative_to(base)), r.line) for r in refs if r.module_path}
        at.discard((path, line))
        sites = {(g["path"], g["line"]) for g in gold if g["target"] == target}
        found = len(at & sites)
        found_all += found
        gold_all += len(sites)
        refs_all += len(at)
        right_all += found
        print(f"{target:<66} {found:>3}/{len(sites):<3} refs {len(at):>3}  {wall:6.2f}s")
    print(
        f"recall {found_all / gold_all:.3f} ({found_all}/{gold_all}), precision "
        f"{right_all / max(refs_all, 1):.3f} ({refs_all} refs), "
        f"{time.perf_counter() - started:.1f}s in all"
    )


if __name__ == "__main__":
    main()
