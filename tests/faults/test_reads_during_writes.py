"""Readers racing a re-index: every query and every listing sees one version, whole.

A writer re-indexes one tree back and forth between two versions (disjoint file names, each
file saying which version it belongs to) while readers query it and list it: in-process
threads through the Database API, and ``treeseek show`` / ``treeseek query`` CLI processes.
No read may fail (``NodeNotFound`` from a ranking read in one version and contents in
another) and no answer may mix the two versions' files. On both backends.

``TREESEEK_READS_ROUNDS`` raises the writer's rounds (``bench/bench_faults.py --reads``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import treeseek
from treeseek.index.code_hook import CodeIndexHook

SRC = str(Path(__file__).resolve().parents[2] / "src")
ROUNDS = int(os.environ.get("TREESEEK_READS_ROUNDS", "8"))
DIRS = ("core", "util", "web")


def _version(root: Path, tag: str, per_dir: int) -> set[str]:
    """A checkout of version ``tag``: its file names and contents all carry the tag."""
    paths: set[str] = set()
    for d in DIRS:
        for i in range(per_dir):
            rel = f"{d}/{tag}_{i}.py"
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f'"""version {tag}: shared retry logic {i}"""\n\n'
                f"def retry_{tag}_{i}(attempts):\n    return attempts * {i}  # {tag}\n",
                encoding="utf-8",
            )
            paths.add(rel)
    return paths


def _one_version(files: set[str], versions: dict[str, set[str]], what: str) -> str:
    """The version ``files`` all belong to (the assertion that no answer mixes two)."""
    owners = {tag for tag, paths in versions.items() if files & paths}
    assert len(owners) == 1, f"{what} mixes versions {sorted(owners)}: {sorted(files)[:6]}"
    tag = owners.pop()
    assert files <= versions[tag], f"{what} has files of no version: {files - versions[tag]}"
    return tag


def _listing_files(nodes: list[dict[str, Any]] | list[Any]) -> set[str]:
    out = set()
    for n in nodes:
        path, kind = (n["path"], n["type"]) if isinstance(n, dict) else (n.path, n.type.value)
        if kind == "file":
            out.add(path)
    return out


def _cli(location: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", "from treeseek.cli import main; main()", *args, "--db", location],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.timeout(max(300, ROUNDS * 60))
def test_queries_and_listings_see_one_version_while_a_writer_reindexes(
    db_location: Callable[[str], Any], tmp_path: Path
) -> None:
    versions = {
        "alpha": _version(tmp_path / "alpha", "alpha", 12),
        "beta": _version(tmp_path / "beta", "beta", 9),
    }
    location = str(db_location("reads"))
    hooks = [CodeIndexHook(workers=1)]
    with treeseek.open(location, hooks=hooks) as setup:
        setup.index(tmp_path / "alpha", name="t")
    failures: list[str] = []
    seen: dict[str, int] = {"alpha": 0, "beta": 0}
    reads = {"in-process": 0, "cli": 0}
    done = threading.Event()
    lock = threading.Lock()

    def record(kind: str, tag: str) -> None:
        with lock:
            seen[tag] += 1
            reads[kind] += 1

    def writer() -> None:
        try:
            with treeseek.open(location, hooks=hooks) as db:
                for r in range(ROUNDS):
                    db.index(tmp_path / ("beta" if r % 2 == 0 else "alpha"), name="t", replace=True)
        except Exception as exc:  # a failed writer fails the test below
            failures.append(f"writer: {exc!r}")
        finally:
            done.set()

    def reader() -> None:
        with treeseek.open(location, create=False, hooks=hooks) as db:
            while not done.is_set():
                try:
                    listing = db.listing("t", "", depth=3)
                    nodes = [listing.start, *(c for g in listing.children.values() for c in g)]
                    files = _listing_files(nodes)
                    assert all(
                        len(listing.children.get(n.id, [])) == n.child_count
                        for n in nodes
                        if n.is_dir
                    ), "a directory's children are not the ones its count says"
                    record("in-process", _one_version(files, versions, "a listing"))
                    result = db.query("t", "shared retry logic attempts", strategy="flat", k=50)
                    tag = _one_version({h.path for h in result.files}, versions, "a query")
                    for hit in result.files:
                        assert hit.content is not None and f"version {tag}" in hit.content
                    context = db.query("t", "retry attempts", budget=600)
                    spans = {s.path for s in context.context} | {f.path for f in context.files}
                    _one_version(spans, versions, "a context")
                    record("in-process", tag)
                except Exception as exc:
                    failures.append(f"reader: {exc!r}")
                    return

    def cli_reader() -> None:
        while not done.is_set():
            shown = _cli(location, "show", "t", "--depth", "3", "--json")
            queried = _cli(location, "query", "t", "shared retry logic", "--json", "-k", "50")
            for proc in (shown, queried):
                if proc.returncode != 0:
                    failures.append(f"cli: {proc.stderr.strip()[-300:]}")
                    return
            try:
                listed = _listing_files(json.loads(shown.stdout)["nodes"])
                record("cli", _one_version(listed, versions, "treeseek show"))
                answer = {f["path"] for f in json.loads(queried.stdout)["files"]}
                record("cli", _one_version(answer, versions, "treeseek query"))
            except AssertionError as exc:
                failures.append(f"cli: {exc}")
                return

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    threads += [threading.Thread(target=cli_reader) for _ in range(1 if ROUNDS <= 8 else 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    assert not any(t.is_alive() for t in threads), "a reader or the writer hung"
    assert failures == []
    assert reads["in-process"] > 0 and reads["cli"] > 0
    print(  # read by bench/bench_faults.py --reads
        f"\nREADS {reads['in-process']} in-process and {reads['cli']} CLI reads during"
        f" {ROUNDS} re-indexes, 0 failures, 0 mixed (versions seen: {seen})",
        flush=True,
    )
    with treeseek.open(location, create=False, hooks=hooks) as db:
        final = _listing_files(list(db.walk("t")))
    assert final == versions["alpha" if ROUNDS % 2 == 0 else "beta"]
