"""Parse throughput of the code index on a real source tree (one process, one core).

    python bench/bench_parse.py /tmp/djx --repeat 3 [--ext .py] [--resolve] [--profile]

Extract a tree first, e.g. django at a commit:
    mkdir -p /tmp/djx && git --git-dir /work/.mirror/apprent1c3+django/repo archive HEAD \
        | tar -x -C /tmp/djx

Prints files, lines, median seconds and files/s for ``index_file`` over every file with a
known extension (reading is done before timing), and with ``--resolve`` the median time of
cross-file resolution and graph building over the results.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path


def _collect(root: Path, exts: tuple[str, ...]) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(exts):
                full = Path(dirpath) / name
                out.append((full.relative_to(root).as_posix(), full.read_bytes()))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ext", action="append", default=None, help="file suffix (repeatable)")
    ap.add_argument("--resolve", action="store_true", help="also time resolve + graph")
    ap.add_argument("--profile", action="store_true", help="cProfile one parse pass")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (index_many)")
    args = ap.parse_args()

    from treeseek.code.graph import CodeGraph
    from treeseek.code.languages import _EXTENSIONS
    from treeseek.code.parse import index_file, index_many
    from treeseek.code.resolve import resolve_tree

    exts = tuple(args.ext) if args.ext else tuple(_EXTENSIONS)
    files = _collect(args.root, exts)
    n_lines = sum(data.count(b"\n") for _, data in files)
    n_bytes = sum(len(data) for _, data in files)
    print(f"{len(files)} files, {n_lines} lines, {n_bytes / 1e6:.1f} MB under {args.root}")
    index_file("warmup.py", b"def f():\n    return 1\n")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for path, data in files:
            index_file(path, data)
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
        return 0

    times: list[float] = []
    cpu: list[float] = []
    indexes = {}
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        results = index_many(files, workers=args.workers)
        indexes = {path: ix for (path, _), ix in zip(files, results, strict=True)}
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    med = statistics.median(times)
    n_sym = sum(len(ix.symbols) for ix in indexes.values())
    n_edge = sum(len(ix.edges) for ix in indexes.values())
    n_chunk = sum(len(ix.chunks) for ix in indexes.values())
    n_ep = sum(len(ix.entrypoints) for ix in indexes.values())
    n_err = sum(1 for ix in indexes.values() if ix.parse_error)
    print(
        f"parse ({args.workers} worker(s)): median {med:.2f} s wall, "
        f"{statistics.median(cpu):.2f} s CPU of this process over {args.repeat} "
        f"runs ({len(files) / med:.0f} files/s, "
        f"{n_lines / med / 1000:.0f} klines/s); {n_sym} symbols, {n_edge} edges, "
        f"{n_chunk} chunks, {n_ep} entrypoints, {n_err} files with parse_error"
    )
    if args.resolve:
        rtimes: list[float] = []
        gtimes: list[float] = []
        resolved = None
        for _ in range(args.repeat):
            c0 = time.process_time()
            resolved = resolve_tree(indexes)
            c1 = time.process_time()
            CodeGraph.build(indexes, resolved)
            gtimes.append(time.process_time() - c1)
            rtimes.append(c1 - c0)
        assert resolved is not None
        stats = resolved.stats()
        print(
            f"resolve: median {statistics.median(rtimes):.2f} s CPU; graph build median "
            f"{statistics.median(gtimes):.2f} s CPU; {stats['resolved']}/{stats['edges']} edges "
            f"resolved, {stats['with_destination']} with a destination in the tree"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
