"""Ctrl-C while indexing: the terminal sends SIGINT to the whole process group, the parse
workers of the code index included. The command says ``interrupted`` (exit 130), prints no
traceback (not the parent's, not a worker's), and leaves an intact database without the
half-built tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import treeseek
from treeseek.store import check_store

SRC = Path(__file__).resolve().parents[2] / "src"

FILE = '''"""Module {n}."""


class Thing{n}:
    """A thing."""

    def method_{n}(self, value: int) -> int:
        return helper_{n}(value) + {n}

''' + "\n".join(
    f"def helper_{{n}}_{i}(value: int) -> int:\n    return value * {i}\n" for i in range(120)
)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime + stime


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
def test_ctrl_c_during_parallel_parse_prints_no_worker_tracebacks(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for n in range(400):  # far above PARALLEL_MIN_FILES: the parse runs in a process pool
        (root / f"mod_{n}.py").write_text(FILE.format(n=n))
    db = tmp_path / "t.db"
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = [sys.executable, "-m", "treeseek", "index", str(root), "--name", "t", "--db", str(db)]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    own = b"".join(os.fsencode(a) + b"\0" for a in args)

    # the pool's workers are forks of the command: same command line (git's are not); wait
    # until they are busy parsing
    def busy() -> bool:
        workers = [c for c in _children(proc.pid) if _cmdline(c) == own]
        return len(workers) >= 2 and all(_cpu_ticks(c) >= 5 for c in workers)

    while proc.poll() is None and not busy():
        pass
    assert proc.poll() is None, "the index finished before its parse pool was seen"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-3000:]
    assert "KeyboardInterrupt" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == "interrupted", err[-2000:]
    assert check_store(db).ok
    with treeseek.open(db, create=False) as database:
        assert not database.store.has_tree("t")
