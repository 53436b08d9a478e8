"""Record an MCP session for the README: the SDK's client over stdio against ``treeseek mcp``.

Indexes this checkout's ``src/treeseek`` as tree ``treeseek-src`` into a scratch database
(removed after), starts ``python -m treeseek mcp --db DB`` as the SDK's stdio client does, lists
the tools with their arguments, then makes two real calls and prints their answers verbatim.

    python bench/record_mcp_session.py [--db /tmp/rec.db] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import treeseek

ROOT = Path(__file__).resolve().parent.parent
CALLS: list[tuple[str, dict[str, Any]]] = [
    (
        "search",
        {
            "tree": "treeseek-src",
            "question": "where does the server refuse to bind a public address without a token",
            "k": 3,
            "budget": 400,
        },
    ),
    ("read", {"tree": "treeseek-src", "path": "service/security.py", "start": 62, "end": 70}),
]


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _session(params: StdioServerParameters) -> None:
    async with Client(params, read_timeout_seconds=300) as client:
        tools = await client.list_tools()
        for tool in tools.tools:
            args = ", ".join((tool.input_schema or {}).get("properties", {}))
            print(f"{tool.name}({args})")
        for name, args in CALLS:
            result = await client.call_tool(name, args)
            print(f"\n> {name} {args}")
            print(_text(result) + ("  [tool error]" if result.is_error else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="treeseek-mcp-")
    db = args.db or Path(scratch) / "rec.db"
    with treeseek.open(db) as database:
        database.index(ROOT / "src" / "treeseek", name="treeseek-src")
    env = {
        "PYTHONPATH": str(ROOT / "src"),
        "PATH": os.environ.get("PATH", ""),
        "HOME": scratch,
        "TREESEEK_LLM": "lexical",
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "treeseek", "mcp", "--db", str(db)], env=env
    )
    try:
        anyio.run(_session, params)
    finally:
        if not args.keep:
            for side in db.parent.glob(f"{db.name}*"):
                side.unlink()
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
