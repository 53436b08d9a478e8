"""The fault suite's long run: 10,000 fuzzed replies and 10,000 fuzzed returned paths.

Runs the ``long`` properties of ``tests/faults/test_fuzz.py`` (hypothesis, 10,000 examples
each) and counts the cases: a crash is any exception other than the parser's
LLMResponseError; an escape is a resolved path that is not a candidate, a normalized path
outside the root, or a file reached by its basename alone. Then the hostile-server suite once.

    python bench/bench_faults.py [--examples 10000] [--skip-server]
    python bench/bench_faults.py --skip-fuzz --skip-server --kills 60 --reads 40

``--kills N``: the long kill -9 run (``tests/faults/test_kill_index.py``, N kills at random
moments of first indexes and re-indexes, half of them a few milliseconds into a COMMIT);
``--reads R``: readers (threads and CLI processes) during R re-indexes on SQLite and
PostgreSQL (``tests/faults/test_reads_during_writes.py``).

Prints a markdown summary; exits 1 on any crash or escape.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAULTS = ROOT / "tests" / "faults"


def _counting(fn: Callable[..., None], counts: dict[str, int], key: str) -> Callable[..., None]:
    def wrapped(*args: object) -> None:
        counts[key] += 1
        try:
            fn(*args)
        except AssertionError:
            counts[f"{key} escapes"] += 1
            raise
        except Exception:
            counts[f"{key} crashes"] += 1
            raise

    return wrapped


def run_fuzz(examples: int) -> dict[str, int]:
    sys.path[:0] = [str(FAULTS), str(ROOT / "tests" / "llm")]
    os.environ["TREESEEK_FUZZ_EXAMPLES"] = str(examples)
    import test_fuzz  # type: ignore[import-not-found]
    from hypothesis import HealthCheck, given, settings

    counts = {k: 0 for k in ("replies", "replies crashes", "replies escapes")}
    counts |= {k: 0 for k in ("paths", "paths crashes", "paths escapes")}
    test_fuzz.check_parse = _counting(test_fuzz.check_parse, counts, "replies")
    test_fuzz.check_path = _counting(test_fuzz.check_path, counts, "paths")
    fuzz = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )

    @fuzz
    @given(test_fuzz._payloads)
    def replies(payload: object) -> None:
        test_fuzz.check_parse(payload)

    @fuzz
    @given(test_fuzz._ids, test_fuzz._roots, test_fuzz._prefixes)
    def paths(raw: str, root: str | None, prefix: str | None) -> None:
        test_fuzz.check_path(raw, root, prefix)

    for prop in (replies, paths):
        try:
            prop()
        except Exception as exc:  # reported through the counts
            print(f"FAILED: {type(exc).__name__}: {exc}"[:2000])
    return counts


def run_long(test: str, env_name: str, value: int, tag: str) -> tuple[list[str], bool]:
    """Run one long fault test with ``env_name=value``; its ``tag`` lines and success."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TREESEEK_LONG="1")
    env[env_name] = str(value)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", str(FAULTS / test)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(tag)]
    if done.returncode != 0:
        print(done.stdout[-3000:])
    return lines, done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--skip-fuzz", action="store_true")
    parser.add_argument("--kills", type=int, default=0, help="kill -9 trials (0: none)")
    parser.add_argument("--reads", type=int, default=0, help="re-indexes under readers")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    print(f"# fault suite long run ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {os.getloadavg()[0]:.1f})\n")  # fmt: skip
    bad = 0
    if not args.skip_fuzz:
        started = time.perf_counter()
        counts = run_fuzz(args.examples)
        fuzz_s = time.perf_counter() - started
        print("| property | cases | crashes | escapes |")
        print("| --- | ---: | ---: | ---: |")
        for key, label in (("replies", "fuzzed replies (parser + validation)"),
                           ("paths", "fuzzed returned paths (resolution)")):  # fmt: skip
            print(f"| {label} | {counts[key]:,} | {counts[key + ' crashes']} | "
                  f"{counts[key + ' escapes']} |")  # fmt: skip
        print(f"\nfuzzing took {fuzz_s:.0f} s")
        bad += sum(v for k, v in counts.items() if k.endswith(("crashes", "escapes")))
    if args.kills:
        started = time.perf_counter()
        lines, ok = run_long("test_kill_index.py", "TREESEEK_KILLS", args.kills, "KILLS")
        found = "; ".join(line.removeprefix("KILLS ") for line in lines) or "no result"
        print(f"\nkill -9 during index ({time.perf_counter() - started:.0f} s): {found}")
        bad += not ok
    if args.reads:
        started = time.perf_counter()
        lines, ok = run_long(
            "test_reads_during_writes.py", "TREESEEK_READS_ROUNDS", args.reads, "READS"
        )
        print(f"\nreads during writes, SQLite then PostgreSQL ({time.perf_counter() - started:.0f}"
              " s):")  # fmt: skip
        for line in lines:
            print(f"- {line.removeprefix('READS ')}")
        bad += not ok
    if not args.skip_server:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(FAULTS)]
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        tail = done.stdout.strip().splitlines()[-1:] or ["?"]
        print(f"\nhostile-server suite (`{' '.join(cmd[1:])}`): {tail[0]}")
        bad += done.returncode != 0
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
