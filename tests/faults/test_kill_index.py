"""kill -9 while indexing: at random points of a first index and of a re-index, and in the
middle of a COMMIT. After every kill the database is intact (``quick_check`` and the
cross-table invariants), the tree is one whole version (the old one, or the new one when the
commit got through; none for a killed first index), and the next index succeeds.

The normal run kills a few times; ``-m long`` (``bench/bench_faults.py --kills N``) many times,
``TREESEEK_KILLS`` of them.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import treeseek
from treeseek.store import check_store

SRC = Path(__file__).resolve().parents[2] / "src"
#: the first version indexes these packages of treeseek's own source, the second adds more
V1 = ("trees", "text")
V2 = ("trees", "text", "store")
LONG_KILLS = int(os.environ.get("TREESEEK_KILLS", "60"))

CHILD = """
import os, random, signal, sys, threading
import treeseek
db, source, mode, seed = sys.argv[1:]
rnd = random.Random(int(seed))
database = treeseek.open(db)
if mode == "commit":
    # kill -9 a few milliseconds into a COMMIT (the statement runs without the GIL)
    def trace(sql):
        if sql.lstrip().upper().startswith("COMMIT"):
            delay = rnd.uniform(0.0, 0.004)
            threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
    database.store._conn().set_trace_callback(trace)
print("start", flush=True)
database.index(source, name="t", replace=True)  # v1 -> v2: another directory
print("done", flush=True)
"""


@dataclass
class Trial:
    mode: str  # "time" (a random moment) or "commit"
    first: bool  # a first index (else a re-index of the other version)
    killed: bool = False
    completed: bool = False


def _checkout(root: Path, packages: tuple[str, ...]) -> Path:
    for package in packages:
        shutil.copytree(
            SRC / "treeseek" / package,
            root / package,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    return root


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _run(db: Path, source: Path, trial: Trial, rnd: random.Random) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(db),
            str(source),
            trial.mode,
            str(rnd.randrange(1 << 30)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "start"
    if trial.mode == "time":
        time.sleep(rnd.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    trial.killed = proc.returncode == -signal.SIGKILL
    trial.completed = "done" in out
    assert trial.killed or trial.completed, err[-2000:]


def _verify(db: Path, versions: dict[str, set[str]], expected: tuple[str, ...]) -> None:
    """The database is intact and tree ``t`` is absent or one of ``expected``, whole."""
    report = check_store(db)
    assert report.ok, report.problems
    with treeseek.open(db, create=False) as database:
        if not database.store.has_tree("t"):
            assert "none" in expected
            return
        info = database.tree("t")
        nodes = list(database.walk("t"))
        assert len(nodes) == info.node_count
        files = {n.path for n in nodes if n.type.value == "file"}
        assert any(files == versions[v] for v in expected if v != "none"), sorted(files)[:5]
        for node in nodes:
            if node.type.value == "file":
                assert database.content("t", node) is not None or node.size == 0


def kill_trials(tmp_path: Path, trials: list[Trial], seed: int) -> list[Trial]:
    rnd = random.Random(seed)
    sources = {"v1": _checkout(tmp_path / "v1", V1), "v2": _checkout(tmp_path / "v2", V2)}
    versions = {k: _files(v) for k, v in sources.items()}
    for n, trial in enumerate(trials):
        db = tmp_path / f"k{n}.db"
        if not trial.first:
            with treeseek.open(db) as database:
                database.index(sources["v1"], name="t")
        _run(db, sources["v2"], trial, rnd)
        before = ("none",) if trial.first else ("v1",)
        _verify(db, versions, (*before, "v2"))
        with treeseek.open(db, create=False) as database:  # the next index succeeds
            database.index(sources["v2"], name="t", replace=True)
        _verify(db, versions, ("v2",))
        for side in db.parent.glob(f"{db.name}*"):
            side.unlink()
    return trials


def test_kill_9_during_index_leaves_an_intact_database(tmp_path: Path) -> None:
    trials = [Trial(mode, first) for mode in ("time", "commit") for first in (True, False)]
    done = kill_trials(tmp_path, trials, seed=13)
    killed = sum(t.killed for t in done)
    print(f"killed {killed} of {len(done)}: {[(t.mode, t.first, t.killed) for t in done]}")
    assert killed >= 2  # a run that never got killed tests nothing


@pytest.mark.long
@pytest.mark.timeout(6 * 3600)
def test_kill_9_many_times(tmp_path: Path) -> None:
    rnd = random.Random(1311)
    trials = [Trial(rnd.choice(("time", "commit")), rnd.random() < 0.5) for _ in range(LONG_KILLS)]
    done = kill_trials(tmp_path, trials, seed=1311)
    killed = sum(t.killed for t in done)
    commit = sum(t.killed and t.mode == "commit" for t in done)
    first = sum(t.killed and t.first for t in done)
    print(  # read by bench/bench_faults.py --kills
        f"\nKILLS {killed} kills survived of {len(done)} tried ({commit} in a COMMIT, {first}"
        f" of first indexes; {len(done) - killed} runs finished before the kill): every database"
        " intact, every tree one whole version, every next index succeeded",
        flush=True,
    )
    assert killed >= len(done) // 2
