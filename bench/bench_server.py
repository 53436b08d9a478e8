"""Load benchmark of the doors (not a test; loopback only; bounded in time and requests).

1. HTTP: ``treeseek serve`` in a subprocess on 127.0.0.1; ``--clients`` concurrent clients
   (asyncio + httpx) ask the django issues of the dev split (flat, k=10) for ``--seconds``
   while the tree is re-indexed again and again through the API (alternating between two
   commits, so every run writes ~50 changed files and their code index); reports throughput,
   p50/p90/p99 latency and errors (any non-200 or transport error).
2. MCP: ``treeseek mcp`` over stdio (a subprocess, the SDK's client) against the same tree:
   ``search`` latency per call vs the in-process Python call the tool makes
   (``Service.query``) and the plain ``Database.query``, sequential, p50/p90.

    python bench/bench_server.py --db /tmp/dj.db --tree django        # builds it if missing
    python bench/bench_server.py --db /tmp/dj.db --tree django --clients 8 --seconds 20

The tree is built from the bare django mirror (``--git``, HEAD) when the database lacks it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

import treeseek
from treeseek.service import Service

DATASET = Path("/work/shared/bench/swebench-verified-dev.jsonl")
MIRROR = Path("/work/.mirror/apprent1c3+django/repo")
SRC = str(Path(treeseek.__file__).resolve().parents[1])


def questions(limit_chars: int = 4000) -> list[str]:
    rows = [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]
    return [r["query"][:limit_chars] for r in rows if r["repo"] == "django/django"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TREESEEK_LLM": "lexical",
    }


def ensure_tree(db: Path, tree: str, git: Path, rev: str) -> None:
    with treeseek.open(db) as database:
        if any(t.name == tree for t in database.trees()):
            return
        print(f"indexing {git}@{rev} as {tree} (once) ...", flush=True)
        started = time.perf_counter()
        database.index(git, name=tree, rev=rev)
        print(f"  {time.perf_counter() - started:.1f}s", flush=True)


# -- HTTP -------------------------------------------------------------------------------------


async def http_load(
    url: str, tree: str, qs: list[str], clients: int, seconds: float, max_requests: int
) -> tuple[list[float], int, dict[str, int]]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    deadline = time.monotonic() + seconds
    sent = 0

    async def client(n: int) -> None:
        nonlocal sent
        async with httpx.AsyncClient(base_url=url, timeout=120) as c:
            i = n
            while time.monotonic() < deadline and sent < max_requests:
                sent += 1
                body = {"question": qs[i % len(qs)], "k": 10}
                i += clients
                started = time.perf_counter()
                try:
                    r = await c.post(f"/v1/trees/{tree}/query", json=body)
                    ok = r.status_code == 200
                    kind = f"HTTP {r.status_code}"
                except httpx.HTTPError as exc:
                    ok, kind = False, type(exc).__name__
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors[kind] = errors.get(kind, 0) + 1

    await asyncio.gather(*(client(n) for n in range(clients)))
    return latencies, sent, errors


async def reindexer(url: str, tree: str, revs: list[str], stop: asyncio.Event) -> list[float]:
    """Re-index the tree through the API, alternating commits, until ``stop``."""
    durations: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as c:
        n = 0
        while not stop.is_set():
            rev = revs[n % len(revs)]
            n += 1
            started = time.perf_counter()
            job = (await c.post(f"/v1/trees/{tree}/index", json={"rev": rev})).json()
            while True:
                job = (await c.get(f"/v1/jobs/{job['id']}")).json()
                if job["state"] in ("done", "failed"):
                    break
                await asyncio.sleep(0.2)
            if job["state"] == "failed":
                print(f"  re-index failed: {job['error']}", flush=True)
                break
            durations.append(time.perf_counter() - started)
            print(f"  re-index to {rev}: {job['report']}", flush=True)
    return durations


def bench_http(args: argparse.Namespace, qs: list[str]) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "treeseek", "serve", "--port", str(port), "--db", str(args.db)],
        env=env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        # warm the server (tree tables load once per process)
        httpx.post(
            f"{url}/v1/trees/{args.tree}/query", json={"question": qs[0], "k": 10}, timeout=120
        ).raise_for_status()

        async def run() -> tuple[list[float], int, dict[str, int], list[float]]:
            stop = asyncio.Event()
            re = asyncio.create_task(reindexer(url, args.tree, args.revs, stop))
            started = time.perf_counter()
            lat, sent, errors = await http_load(
                url, args.tree, qs, args.clients, args.seconds, args.max_requests
            )
            args.wall = time.perf_counter() - started
            stop.set()
            durations = await re
            return lat, sent, errors, durations

        latencies, sent, errors, durations = asyncio.run(run())
    finally:
        server.terminate()
        server.wait(timeout=60)
    return {
        "clients": args.clients,
        "seconds": round(args.wall, 1),
        "requests": sent,
        "ok": len(latencies),
        "errors": errors,
        "throughput_rps": round(len(latencies) / args.wall, 1),
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 1),
        "p90_ms": round(percentile(latencies, 0.90) * 1000, 1),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "reindexes": len(durations),
        "reindex_s": [round(d, 1) for d in durations],
    }


# -- MCP vs in-process --------------------------------------------------------------------------


def bench_mcp(args: argparse.Namespace, qs: list[str]) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    sample = qs[: args.mcp_calls]
    with treeseek.open(args.db) as db:
        service = Service(db)
        db.query(args.tree, sample[0], k=5)  # warm: tree tables
        direct, via_service = [], []
        for q in sample:
            started = time.perf_counter()
            db.query(args.tree, q, k=5, include_content=False)
            direct.append(time.perf_counter() - started)
            started = time.perf_counter()
            service.query(args.tree, q, k=5)
            via_service.append(time.perf_counter() - started)

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "treeseek", "mcp", "--db", str(args.db)], env=env()
    )
    over_mcp: list[float] = []

    async def session() -> None:
        async with Client(params, read_timeout_seconds=300) as client:
            await client.call_tool("search", {"tree": args.tree, "question": sample[0], "k": 5})
            for q in sample:
                started = time.perf_counter()
                result = await client.call_tool(
                    "search", {"tree": args.tree, "question": q, "k": 5}
                )
                over_mcp.append(time.perf_counter() - started)
                assert not result.is_error

    asyncio.run(session())

    def stats(values: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(statistics.median(values) * 1000, 1),
            "p90_ms": round(percentile(values, 0.9) * 1000, 1),
        }

    out = {
        "calls": len(sample),
        "db_query": stats(direct),
        "service_query": stats(via_service),
        "mcp_stdio_search": stats(over_mcp),
    }
    out["mcp_over_service_p50"] = round(
        out["mcp_stdio_search"]["p50_ms"] / out["service_query"]["p50_ms"], 2
    )
    out["mcp_over_db_query_p50"] = round(
        out["mcp_stdio_search"]["p50_ms"] / out["db_query"]["p50_ms"], 2
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--tree", default="django")
    parser.add_argument("--git", type=Path, default=MIRROR)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=100_000)
    parser.add_argument(
        "--revs",
        nargs="+",
        default=["HEAD~30", "HEAD"],
        help="commits the re-index alternates between (the tree starts at the last)",
    )
    parser.add_argument("--mcp-calls", type=int, default=40)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-mcp", action="store_true")
    args = parser.parse_args()
    if not 1 <= args.clients <= 256 or not 0 < args.seconds <= 600:
        parser.error("--clients 1..256 and --seconds 0..600 (the run is bounded)")
    ensure_tree(args.db, args.tree, args.git, args.revs[-1])
    qs = questions()
    print(f"{len(qs)} django questions; load average {os.getloadavg()}", flush=True)
    results: dict[str, Any] = {}
    if not args.skip_http:
        results["http"] = bench_http(args, qs)
        print(json.dumps(results["http"]), flush=True)
    if not args.skip_mcp:
        results["mcp"] = bench_mcp(args, qs)
        print(json.dumps(results["mcp"]), flush=True)
    results["load_average_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
