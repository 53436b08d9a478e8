"""The fault suite's long run: 10,000 fuzzed replies and 10,000 fuzzed returned paths.

Runs the ``long`` properties of ``tests/faults/test_fuzz.py`` (hypothesis, 10,000 examples
each) and counts the cases: a crash is any exception other than the parser's
LLMResponseError; an escape is a resolved path that is not a candidate, a normalized path
outside the root, or a file reached by its basename alone. Then the hostile-server suite once.

    python bench/bench_faults.py [--examples 10000] [--skip-server]

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    started = time.perf_counter()
    counts = run_fuzz(args.examples)
    fuzz_s = time.perf_counter() - started
    print(f"# fault suite long run ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {os.getloadavg()[0]:.1f})\n")  # fmt: skip
    print("| property | cases | crashes | escapes |")
    print("| --- | ---: | ---: | ---: |")
    for key, label in (("replies", "fuzzed replies (parser + validation)"),
                       ("paths", "fuzzed returned paths (resolution)")):  # fmt: skip
        print(f"| {label} | {counts[key]:,} | {counts[key + ' crashes']} | "
              f"{counts[key + ' escapes']} |")  # fmt: skip
    print(f"\nfuzzing took {fuzz_s:.0f} s")
    bad = sum(v for k, v in counts.items() if k.endswith(("crashes", "escapes")))
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
