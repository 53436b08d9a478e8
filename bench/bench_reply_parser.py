"""How long handling one hostile LLM reply can take, by its size, and how long a query can run.

(a) The worst case over pathological reply shapes of N bytes (10 KB .. 10 MB), through the
    adapter's whole reading path: the body's size and nesting checks and decoding
    (``decode_body``), the defensive field extraction (``raw_reply``), the tool input or the
    reply text read by the bounded parser (``ProviderNavigator._parse``) and validation
    against a 400-candidate request (``build_reply``). Twice: with the default limits (a body
    over 1 MiB is refused at the cap) and with the byte cap lifted to 16 MB, which shows the
    parser itself is linear. Shapes: deep nesting in the tool arguments and in the body,
    ``{`` repeated in the text, ``{"a": `` repeated (a valid prefix that never closes),
    ``{}`` pairs, escaped quotes, 60k unknown ids, one huge id.
(b) The longest a query can run with the default deadline, on a fake clock (no waiting):
    Block on a 3-level tree with a provider that never answers (every attempt takes the whole
    per-call timeout), one that answers each call just before the timeout, and one that
    rate-limits with a long Retry-After; then one real run over loopback HTTP with a short
    deadline, to measure the real overshoot past it.

    python bench/bench_reply_parser.py [--max-mb 10] [--repeat 3]

Prints a markdown report.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from treeseek.errors import TreeseekError
from treeseek.llm._limits import ConcurrencyLimiter
from treeseek.llm._protocol import (
    ProviderNavigator,
    RetryPolicy,
    TransientProviderError,
    decode_body,
)
from treeseek.llm._validate import DEFAULT_LIMITS, ReplyLimits, build_reply
from treeseek.llm.base import Candidate, RankRequest, Usage
from treeseek.llm.deadline import DEFAULT_DEADLINE_S, resolve_deadline_s
from treeseek.llm.openai import OpenAINavigator, raw_reply

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)


def _body(arguments: str | None = None, content: str | None = None) -> bytes:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if arguments is not None:
        message["tool_calls"] = [
            {"id": "c", "type": "function", "function": {"name": "rank", "arguments": arguments}}
        ]
    return json.dumps({"choices": [{"message": message}], "usage": {}}).encode()


def shapes(n: int) -> dict[str, bytes]:
    """Pathological bodies of about ``n`` bytes."""
    half = n // 2
    return {
        "args nested": _body(arguments='{"ranked_ids": ' + "[" * half + "]" * half + "}"),
        "body nested": b'{"choices": [{"message": {"content": '
        + b"[" * half
        + b"]" * half
        + b"}}]}",
        "text {": _body(content="{" * n),
        'text {"a":': _body(content='{"a": ' * (n // 6)),
        "text {}": _body(content="{}" * half),
        'text \\"': _body(content='{"' + '\\"' * half),
        "unknown ids": _body(
            arguments=json.dumps({"ranked_ids": [f"z{i}" for i in range(n // 9)]})
        ),
        "one huge id": _body(arguments=json.dumps({"ranked_ids": ["a/" * half]})),
    }


def _request() -> RankRequest:
    cands = tuple(Candidate(f"n{i}", f"pkg{i % 20}/mod{i}.py", "file") for i in range(400))
    return RankRequest((), "m", "q", cands, 10, tree_root="/repo")


def handle(nav: ProviderNavigator, data: bytes, request: RankRequest) -> None:
    """What an adapter does with one reply body (the HTTP read aside)."""
    try:
        raw = raw_reply(decode_body(data, nav.limits))
    except TreeseekError:
        return  # refused (over the cap, too deep): an unusable reply
    except TransientProviderError:
        return
    parsed = nav._parse(raw, [])
    if parsed is not None:
        build_reply(request, parsed, usage=Usage(1), limits=nav.limits)


def bench_parser(max_bytes: int, repeat: int) -> None:
    request = _request()
    configs = (("default limits (1 MiB cap)", DEFAULT_LIMITS), ("cap lifted to 16 MB", None))
    print("## (a) worst-case time to handle one reply of N bytes\n")
    print("| N | limits | worst shape | worst ms | ms per MB | all shapes (ms) |")
    print("| ---: | --- | --- | ---: | ---: | --- |")
    for n in [s for s in SIZES if s <= max_bytes]:
        bodies = shapes(n)
        for label, limits in configs:
            lim = limits or ReplyLimits(max_bytes=16_000_000)
            nav = OpenAINavigator("m", api_key=None, base_url="http://127.0.0.1:9/v1", limits=lim,
                                  limiter=ConcurrencyLimiter(1))  # fmt: skip
            times: dict[str, float] = {}
            for name, data in bodies.items():
                best = float("inf")
                for _ in range(repeat):
                    started = time.perf_counter()
                    handle(nav, data, request)
                    best = min(best, time.perf_counter() - started)
                times[name] = best * 1000
            worst = max(times, key=times.__getitem__)
            per_mb = times[worst] / (n / 1_000_000)
            detail = ", ".join(f"{k} {v:.1f}" for k, v in times.items())
            print(f"| {n:,} | {label} | {worst} | {times[worst]:.1f} | {per_mb:.0f} | {detail} |")
    print()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def _simulated_query(kind: str) -> tuple[float, str]:
    """Block over a small tree against a fake provider; simulated seconds and the outcome."""
    import treeseek
    import treeseek.llm.deadline as deadline_mod

    clock = _Clock()
    deadline_mod.default_clock = clock
    policy = RetryPolicy()  # the defaults: 60 s per attempt, 4 retries

    class Fake(ProviderNavigator):
        name = f"fake-{kind}"

        def _send(self, request, correction, timeout_s):  # type: ignore[no-untyped-def]
            if kind == "never answers":
                clock.now += timeout_s
                raise TransientProviderError("timeout")
            if kind == "rate limited":
                clock.now += 0.1
                raise TransientProviderError("HTTP 429", retry_after=100.0)
            answer_at = policy.timeout_s - 1.0  # just in time, every call
            if timeout_s < answer_at:
                clock.now += timeout_s
                raise TransientProviderError("timeout")
            clock.now += answer_at
            files = [c.id for c in request.candidates if c.type == "file"][:1]
            dirs = [c.id for c in request.candidates if c.type == "directory"]
            return raw_reply_for(files + dirs)

    def raw_reply_for(ids: list[str]):  # type: ignore[no-untyped-def]
        from treeseek.llm._protocol import RawReply

        return RawReply({"ranked_ids": ids, "done": False}, "", Usage(1))

    nav = Fake(policy=policy, limiter=ConcurrencyLimiter(8), seed=1, clock=clock,
               sleep=clock.sleep)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        for i in range(4):
            for j in range(4):
                deep = root / f"d{i}" / f"e{j}"
                for level in range(6):
                    deep.mkdir(parents=True, exist_ok=True)
                    (deep / f"f{level}.py").write_text("x = 1\n")
                    (deep / "g").mkdir(exist_ok=True)
                    (deep / "h").mkdir(exist_ok=True)
                    (deep / "h" / "x.py").write_text("y = 1\n")
                    deep = deep / "g"
        with treeseek.open(Path(tmp) / "x.db", hooks=[]) as db:
            db.index(root, name="t")
            try:
                result = db.query("t", "q", navigator=nav, strategy="block", k=50)
                outcome = f"{len(result.files)} files, stop: {result.trace.stop_reason}"
            except TreeseekError as exc:
                outcome = f"{type(exc).__name__}"
    deadline_mod.default_clock = time.monotonic
    return clock.now, outcome


def _real_overshoot(deadline_s: float) -> tuple[float, str]:
    """One real query over loopback HTTP against a server that answers after 30 s."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "llm"))
    from llm_wire import LoopbackServer, Reply  # type: ignore[import-not-found]

    import treeseek

    server = LoopbackServer()
    server.responder = lambda body: Reply({"choices": []}, delay_s=30.0)
    server.httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
    server.start()
    nav = OpenAINavigator("m", api_key=None, base_url=server.url + "/v1",
                          limiter=ConcurrencyLimiter(4))  # fmt: skip
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "src"
            (root / "a").mkdir(parents=True)
            (root / "a" / "b.py").write_text("x = 1\n")
            with treeseek.open(Path(tmp) / "x.db", hooks=[]) as db:
                db.index(root, name="t")
                started = time.perf_counter()
                try:
                    db.query("t", "q", navigator=nav, strategy="beam", deadline_s=deadline_s)
                    outcome = "answered"
                except TreeseekError as exc:
                    outcome = type(exc).__name__
                return time.perf_counter() - started, outcome
    finally:
        server.stop()


def bench_deadline() -> None:
    default = resolve_deadline_s(None, {})
    print("## (b) the longest a query can run with the default deadline\n")
    print(f"Default deadline {DEFAULT_DEADLINE_S:g} s (resolved: {default}), per call 60 s, 4 "
          "retries. Simulated on a fake clock:\n")  # fmt: skip
    print("| provider | query time (simulated) | outcome |")
    print("| --- | ---: | --- |")
    for kind in ("never answers", "answers after 59 s", "rate limited"):
        seconds, outcome = _simulated_query(kind)
        print(f"| {kind} | {seconds:.1f} s | {outcome} |")
    wall, outcome = _real_overshoot(2.0)
    print(f"\nReal loopback HTTP, a server answering after 30 s, deadline 2 s: the query ended "
          f"after {wall:.2f} s wall ({outcome}): overshoot {wall - 2.0:.2f} s.\n")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mb", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-deadline", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    load = os.getloadavg()[0]
    print(f"# reply handling and deadlines (load average {load:.1f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n")  # fmt: skip
    bench_parser(int(args.max_mb * 1_000_000), args.repeat)
    if not args.skip_deadline:
        bench_deadline()


if __name__ == "__main__":
    main()
