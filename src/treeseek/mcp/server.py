"""The MCP server: treeseek's tools for coding agents (the official ``mcp`` SDK).

Tools answer in compact text an agent reads directly (paths, line numbers, numbered lines);
every failure is an MCP tool error with a one-line reason (unknown tree, ambiguous symbol
with its candidates, bad range...), never a crash of the server. Database work runs on a
worker thread, so a long index run never blocks the other tools.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import ValidationError

import treeseek
from treeseek.errors import ConfigError, TreeseekError
from treeseek.llm.tokens import count_tokens
from treeseek.service import Jobs, Service, error_kind
from treeseek.service.core import error_message, number_lines
from treeseek.service.encoding import utf8_text

T = TypeVar("T")

INSTRUCTIONS = """\
treeseek answers questions about indexed code repositories. Start with `trees` (what is
indexed, and whether it is stale), then `search` a tree with a question (an issue's text
works); `outline` a file to see its symbols, `read` exact line ranges, `find_symbol` by
name path (path::Class.method) or a unique short name, and `references` to follow callers,
callees and importers. `index` a directory to add or refresh a tree."""

#: the strategies an LLM navigates (``auto`` is one of them); the lexical stand-in matches
#: words of paths only
LLM_SEARCHES = ("beam", "block")
REFERENCE_KINDS = ("callers", "callees", "importers", "imports", "subclasses", "superclasses")
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


#: what the library's errors advise on the command line -> what an MCP client can call
_CLI_HINTS = (
    (re.compile(r"; run `treeseek trees` to list the indexed trees$"), "; call trees to list them"),
    (
        re.compile(r"; use `treeseek show [^`]*`(?: to (?:see its paths|list it))?$"),
        "; outline a directory (path '' for the whole tree) or search to find its paths",
    ),
    (
        re.compile(r" is a directory, not a file; list it instead$"),
        " is a directory, not a file; outline it to see its files and symbols",
    ),
)


def _mcp_hint(message: str) -> str:
    for pattern, hint in _CLI_HINTS:
        message = pattern.sub(hint, message)
    return message


async def _call(fn: Callable[[], T]) -> T:
    """Run database work on a worker thread; errors become one-line tool errors."""
    try:
        return await anyio.to_thread.run_sync(fn)
    except TreeseekError as exc:
        kind = error_kind(exc)
        prefix = {"not_found": "not found", "ambiguous": "ambiguous", "limit": "too large"}
        message = _mcp_hint(error_message(exc))
        raise ToolError(f"{prefix.get(kind, 'error')}: {message}") from exc
    except Exception as exc:  # never take the server down
        raise ToolError(f"internal error ({type(exc).__name__}): {error_message(exc)}") from exc


def _reference_line(row: dict[str, Any]) -> str:
    """A graph row: its id, and for call sites their status and where the call is."""
    if "status" not in row:
        return str(row["id"])
    return f"{row['id']}  [{row['status']}: {row['callee']} at {row['path']}:{row['line']}]"


def _where(evidence: dict[str, Any] | None) -> str:
    chunk = (evidence or {}).get("chunk") or {}
    if not chunk.get("start_line"):
        return ""
    symbol = f" {chunk['symbol']}" if chunk.get("symbol") else ""
    return f"  best:{symbol} L{chunk['start_line']}-{chunk['end_line']}"


def _fresh_note(freshness: dict[str, Any]) -> str:
    if freshness.get("missing_root"):  # index would fail: it re-reads where it was built
        return (
            f"indexed {freshness.get('indexed_at')}; {freshness.get('root')} no longer exists"
            " (answers come from the stored copy)"
        )
    if freshness.get("stale"):
        parts = [f"{freshness[k]} {k}" for k in ("changed", "removed") if freshness.get(k)]
        if freshness.get("dirs_changed"):
            parts.append(f"{freshness['dirs_changed']} dirs with new/removed entries")
        return f"STALE since {freshness['indexed_at']} ({', '.join(parts)}): call index"
    if freshness.get("source") == "git":
        return f"commit {str(freshness.get('commit'))[:12]}"
    return f"indexed {freshness.get('indexed_at')}"


def render_search(answer: dict[str, Any]) -> str:
    """A query answer as compact text: one line per file, or the budgeted spans."""
    head = (
        f"{answer['tree']} · {answer.get('strategy') or 'search'} · "
        f"{_fresh_note(answer['freshness'])}"
    )
    lines = [head]
    lines += [f"note: {note}" for note in answer.get("notes") or ()]
    if answer.get("context") is not None:
        limit = (answer.get("budget") or {}).get("limit", "?")
        for span in answer["context"]:
            symbol = f"  {span['symbol']}" if span.get("symbol") else ""
            lines.append(f"\n== {span['path']}:{span['start_line']}-{span['end_line']}{symbol}")
            if span.get("text") is not None:
                lines.append(number_lines(span["text"], span["start_line"]))
        if not answer["context"] and answer.get("files"):
            lines.append(f"no span fits in {limit} tokens: raise budget (budget=0: the files)")
        elif not answer["context"]:
            lines.append("no matching code")
        # the tokens of the whole answer as shown (first counted with the limit in the
        # count's place: no fewer digits, so no fewer tokens)
        head, used = lines[0], limit
        for _ in range(2):  # then exact, with the count in its place
            lines[0] = f"{head} · {used}/{limit} tokens"
            used = count_tokens("\n".join(lines))
        lines[0] = f"{head} · {used}/{limit} tokens"
        return "\n".join(lines)
    for rank, hit in enumerate(answer["files"], 1):
        score = f" ({hit['score']:.3f})" if hit.get("score") is not None else ""
        lines.append(f"{rank}. {hit['path']}{score}{_where(hit.get('evidence'))}")
    if not answer["files"]:
        lines.append("no files found")
    return "\n".join(lines)


def _outline_lines(file: dict[str, Any]) -> list[str]:
    lines = [f"{file['path']}{_disk_note(file)}"]
    for item in file["items"]:
        indent = "  " * (1 + item.get("depth", 0))
        doc = f"  # {item['doc']}" if item.get("doc") else ""
        lines.append(
            f"{indent}L{item['start_line']}-{item['end_line']} {item['kind']} "
            f"{item['signature'] or item['name_path'].split('::')[-1]}{doc}"
        )
    return lines


def render_outline(data: dict[str, Any], budget: int) -> str:
    """An outline as text within ``budget`` tokens: whole files while they fit (the first
    cut to its first symbols when it alone does not), then one line naming what was left
    out and what to ask for instead."""
    base = data.get("path") or ""
    # the files outlined, then those the service did not read (past its own limit): named only
    files = [*data["files"], *({"path": p, "items": []} for p in data.get("unread", ()))]
    outlined = len(data["files"])
    blocks = [_outline_lines(file) for file in data["files"]]
    costs = [count_tokens("\n".join(block)) + 1 for block in blocks]
    taken, used = 0, 0
    while taken < outlined and used + costs[taken] <= budget:
        used += costs[taken]
        taken += 1
    if taken == len(files):
        return "\n".join(line for block in blocks for line in block)
    while taken and used + count_tokens(_left_out(base, files[taken:], budget)) > budget:
        taken -= 1  # room for the line that says what was left out
        used -= costs[taken]
    out = [line for block in blocks[:taken] for line in block]
    if taken == 0:  # the first file alone does not fit: its first symbols, and where on
        items = files[0]["items"]
        room = budget - count_tokens(_left_out(base, files[1:], budget)) if files[1:] else budget
        keep = len(items)
        while keep > 0:
            rest = items[keep:]
            shown = [*blocks[0][: 1 + keep], _more_symbols(rest)]
            if count_tokens("\n".join(shown)) + 1 <= room:
                break
            keep -= 1
        out = [*blocks[0][: 1 + keep], _more_symbols(items[keep:])]
        taken = 1
    if files[taken:]:
        out.append(_left_out(base, files[taken:], budget - count_tokens("\n".join(out)) - 1))
    return "\n".join(out)


def _more_symbols(rest: list[dict[str, Any]]) -> str:
    if not rest:
        return "  ... (raise budget for the other files)"
    return (
        f"  ... {len(rest)} more symbols from L{rest[0]['start_line']} on: raise budget, or"
        " read from there"
    )


def _left_out(base: str, files: list[dict[str, Any]], room: int) -> str:
    """One line: the files an outline left out, grouped by their first directory under
    ``base`` (``audit/ (3), report/ (3), ledger_5.py``), and what to ask for instead; as
    many groups as fit ``room`` tokens."""
    prefix = base.strip("/") + "/" if base.strip("/") else ""
    groups: dict[str, int] = {}
    for file in files:
        rel = file["path"].removeprefix(prefix)
        head, sep, _ = rel.partition("/")
        key = f"{head}/" if sep else head
        groups[key] = groups.get(key, 0) + 1
    names = [f"{key} ({count})" if key.endswith("/") else key for key, count in groups.items()]
    line = ""
    for shown in range(min(len(names), 20), -1, -1):
        more = f", ... {len(names) - shown} more" if shown < len(names) else ""
        listed = f": {', '.join(names[:shown])}{more}" if shown else ""
        line = (
            f"... {len(files)} more files not shown (outline one of these, or raise budget){listed}"
        )
        if count_tokens(line) <= room:
            break
    return line


def render_read(data: dict[str, Any], budget: int) -> str:
    """read's answer: a header (the lines shown, of how many) and the numbered lines,
    within ``budget`` tokens (cut at a whole line, saying where to read on)."""
    lines = data["text"].split("\n")

    def render(shown: int | None) -> str:
        end = data["end_line"] if shown is None else data["start_line"] + shown - 1
        head = f"{data['path']}:{data['start_line']}-{end} of {data['total_lines']}"
        if data["first_line"] != 1:  # a document section, in its document's line numbers
            head += f" (lines {data['first_line']}-{data['first_line'] + data['total_lines'] - 1})"
        if shown is not None:
            head += f" (cut at line {end} to fit {budget} tokens: read on with start={end + 1})"
        elif data["note"]:
            head += f" ({data['note']})"
        elif data["truncated"]:
            head += " (truncated: ask for a range)"
        body = lines if shown is None else lines[:shown]
        return head + _disk_note(data) + "\n" + number_lines("\n".join(body), data["start_line"])

    return _fit(render, len(lines), budget)


def _fit(render: Callable[[int | None], str], total: int, budget: int) -> str:
    """``render(None)`` (all ``total`` lines) when it fits ``budget`` tokens, else
    ``render(n)`` for the most lines ``n`` that fit (at least one)."""
    whole = render(None)
    if count_tokens(whole) <= budget:
        return whole
    low, high = 0, total - 1  # lines shown: low fits, high + 1 does not
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(render(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return render(max(low, 1))


def render_symbol(data: dict[str, Any], code: bool, budget: int) -> str:
    """find_symbol's answer: the name path and span, and the code within ``budget`` tokens
    (cut at a whole line, saying where to read on)."""

    def render(shown: int | None) -> str:
        end = data["end_line"] if shown is None else data["start_line"] + shown - 1
        head = f"{data['name_path']}  {data['path']}:{data['start_line']}-{end}"
        if data.get("kind"):
            head += f"  {data['kind']}"
        if shown is not None:
            head += (
                f" (cut at line {end} to fit {budget} tokens: read on with start={end + 1}"
                f" (it ends at line {data['symbol_end_line']}), or outline the file)"
            )
        elif code and data.get("note"):
            head += f" ({data['note']})"
        head += _disk_note(data)
        if not code or data.get("text") is None:
            return head
        lines = data["text"].split("\n")
        body = lines if shown is None else lines[:shown]
        return head + "\n" + number_lines("\n".join(body), data["start_line"])

    if not code or data.get("text") is None:
        return render(None)
    return _fit(render, len(data["text"].split("\n")), budget)


def bad_arguments(exc: ValidationError) -> str:
    """The arguments a tool call got wrong, on one line (``question: Field required; k: ...``),
    without pydantic's multi-line report, its documentation links or the rejected values."""
    problems = [
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors()[:5]
    ]
    return "bad arguments: " + "; ".join(problems)


class TreeseekMCPServer(MCPServer):
    """The SDK's server, with argument validation failures as one-line tool errors."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        schema = self._tool_input_schema(name)
        if schema is not None and isinstance(arguments, dict):
            # a misspelt argument (top_k, max_tokens) would silently be its default
            known = list(schema.get("properties") or {})
            unknown = sorted(str(key) for key in arguments if key not in known)
            if unknown:
                takes = ", ".join(known) if known else "none"
                raise ToolError(
                    f"Error executing tool {name}: bad arguments: unknown argument"
                    f"{'s' if len(unknown) > 1 else ''} {', '.join(unknown)[:200]}; this tool"
                    f" takes {takes}"
                )
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                if utf8_text(str(exc)) == str(exc):
                    raise
                # a non-UTF-8 name in the message: the client's stream could not carry it
                raise type(exc)(utf8_text(str(exc))) from cause
            raise ToolError(f"Error executing tool {name}: {bad_arguments(cause)}") from cause
        if isinstance(result, CallToolResult):  # non-UTF-8 names would end the session
            for item in result.content:
                if isinstance(item, TextContent):
                    item.text = utf8_text(item.text)
        return result


def build_server(service: Service, jobs: Jobs | None = None) -> MCPServer:
    """The MCP server over ``service`` (tools: search, outline, read, find_symbol,
    references, trees, index)."""
    jobs = jobs or Jobs(service)
    server: MCPServer = TreeseekMCPServer(
        name="treeseek",
        version=treeseek.__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def trees() -> str:
        """List the indexed trees: name, files, what each was built from, and whether the
        source changed since (stale trees need `index`)."""
        rows = await _call(service.trees)
        if not rows:
            return "no trees yet: call index with a directory"
        return "\n".join(
            f"{r['name']}: {r['files']} files, {r['source']} {r['root']} · "
            f"{_fresh_note(r['freshness'])}"
            for r in rows
        )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def search(
        tree: str,
        question: str,
        k: int = 5,
        budget: int = 4000,
        strategy: str | None = None,
        path: str | None = None,
        language: str | None = None,
    ) -> str:
        """Find the code that answers a question (an issue's text works) in a tree: the
        line spans that answer it, numbered, from the k best files, the whole answer within
        `budget` tokens (default 4000; its header says how many it took); `budget=0` lists
        the files with their best line range instead. `path` keeps files under a directory,
        `language` files of one language (python, ...). Leave `strategy` unset (flat
        retrieval, or auto with the server's LLM): auto, beam and block are tree searches an
        LLM navigates, and without an LLM they match words of paths only."""
        if budget < 0:
            raise ToolError(f"error: budget must be >= 0 (0: the file list), got {budget}")
        filtered = bool(path or language)
        spans = budget if budget > 0 else None

        def scope(paths: list[str]) -> list[str]:
            """The ranked paths under `path`, of `language`, the first k."""
            parsed = service.languages(tree, paths) if language else {}
            kept = _filter([{"path": p} for p in paths], path, language, parsed)
            return [hit["path"] for hit in kept[:k]]

        def run() -> dict[str, Any]:
            _check_filters(service, tree, path, language)
            wanted = min(service.limits.max_k, k * 5) if filtered else k
            # flat ranks the files under `path`, of `language` (the others filter afterwards)
            prefix = (path or "").strip("/") or None
            answer = service.query(
                tree,
                question,
                k=wanted,
                budget=spans,
                shown=lambda data: count_tokens(render_search(data)),
                scope=scope if filtered else None,
                strategy=strategy,
                content=False,
                path_prefix=prefix,
                language=language or None,
            )
            if filtered and answer.get("context") is None:
                kept = set(scope([hit["path"] for hit in answer["files"]]))
                answer["files"] = [hit for hit in answer["files"] if hit["path"] in kept]
            if answer.get("navigator") == "lexical" and answer.get("strategy") in LLM_SEARCHES:
                answer["notes"] = [
                    *answer.get("notes", []),
                    f"no LLM on this server: {answer['strategy']} search navigated by words of"
                    " paths only; leave strategy unset for flat retrieval",
                ]
            return answer

        return render_search(await _call(run))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def read(
        tree: str,
        path: str,
        start: int | None = None,
        end: int | None = None,
        budget: int = 8000,
    ) -> str:
        """Read a file of a tree (as indexed), or lines start..end (1-based, inclusive), with
        line numbers, within `budget` tokens (default 8000); a longer answer is cut at a
        whole line (also at 5,000 lines, 100,000 characters) and its header says where to
        read on."""
        if budget < 100:
            raise ToolError(f"error: budget must be at least 100 tokens, got {budget}")
        data = await _call(lambda: _with_disk(service, tree, service.read(tree, path, start, end)))
        return render_read(data, budget)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def outline(tree: str, path: str, budget: int = 8000) -> str:
        """The symbols of a file (or of every file under a directory, path "" for the whole
        tree): kinds, signatures and line ranges, nested by class, without the code. The
        answer stays within `budget` tokens (default 8000); what does not fit is named at
        the end (files left out, by subdirectory) with what to ask for instead."""
        if budget < 100:
            raise ToolError(f"error: budget must be at least 100 tokens, got {budget}")
        budget = min(budget, service.limits.max_budget)  # a server's own, lower, bound

        def run() -> dict[str, Any]:
            data = service.outline(tree, path, whole=False)  # cut to the budget below
            for file in data["files"]:
                file["disk"] = service.on_disk(tree, file["path"])
            return data

        data = await _call(run)
        if not data["files"]:
            where = data.get("path") or "the tree"
            return f"no code files under {where}: read a file, or search"
        if len(data["files"]) == 1 and not data["files"][0]["items"]:
            return (
                f"{data['files'][0]['path']}  (no symbols: read it){_disk_note(data['files'][0])}"
            )
        return render_outline(data, budget)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def find_symbol(tree: str, name: str, code: bool = True, budget: int = 8000) -> str:
        """Find a symbol by name path (`path/to/file.py::Class.method`) or a unique short name
        (`Class.method`, `function`), and show its code with line numbers, within `budget`
        tokens (default 8000: a longer symbol is cut at a whole line and says where to read
        on). An ambiguous name lists the candidates."""
        if budget < 100:
            raise ToolError(f"error: budget must be at least 100 tokens, got {budget}")
        data = await _call(lambda: _with_disk(service, tree, service.find_symbol(tree, name)))
        return render_symbol(data, code, budget)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def references(tree: str, name: str, kind: str = "callers", limit: int = 50) -> str:
        """Follow the code graph from a symbol or file: kind is callers, callees, importers
        (of a file or module), imports, subclasses or superclasses. `name`: a name path
        (path::Class.method), a path, a dotted module, module.qname or a unique short name
        (`Class.method`). Callers/callees are call sites marked resolved, candidate (the
        receiver's type is unknown) or unresolved (outside the tree)."""
        if kind not in REFERENCE_KINDS:
            raise ToolError(
                f"error: unknown kind {kind!r}; use one of {', '.join(REFERENCE_KINDS)}"
            )
        data = await _call(lambda: service.graph(tree, kind, name, limit=limit))
        lines = [f"{kind} of {data['node']}: {data['total']}"]
        lines.extend(_reference_line(row) for row in data["results"])
        if data["total"] > len(data["results"]):
            lines.append(f"... {data['total'] - len(data['results'])} more (raise limit)")
        return "\n".join(lines)

    @server.tool(
        annotations=ToolAnnotations(
            read_only_hint=False, idempotent_hint=True, open_world_hint=False
        ),
        structured_output=False,
    )
    async def index(
        ctx: Context,
        path: str | None = None,
        tree: str | None = None,
        rev: str | None = None,
        replace: bool = False,
    ) -> str:
        """Index a directory (absolute path; a bare git repository indexes its HEAD or
        `rev`) as `tree`, or re-index `tree` from where it was built (only changed files are
        read). An existing `tree` built from another directory is an error unless `replace`
        is true. Sends progress while it runs; returns only after the new version is
        committed and searchable."""
        job = await _call(lambda: jobs.submit(tree=tree, source=path, rev=rev, replace=replace))
        last: tuple[str, int] | None = None
        while not job._event.is_set():
            await anyio.to_thread.run_sync(job._event.wait, 0.25)
            now = (job.phase, job.done)
            if now != last and job.state == "running":
                last = now
                total = float(job.total) if job.total else None
                await ctx.report_progress(float(job.done), total, f"{job.phase} {job.tree}")
        if job.state == "failed":
            raise ToolError(f"index failed: {job.error}")
        report = job.report or {}
        await ctx.report_progress(1.0, 1.0, f"committed {job.tree}")
        return (
            f"indexed {job.tree}: {report.get('files')} files ({report.get('added')} added,"
            f" {report.get('changed')} changed, {report.get('removed')} removed,"
            f" {report.get('unchanged')} unchanged) in {report.get('seconds')}s;"
            " committed and searchable now"
        )

    from treeseek.code.languages import SUPPORTED

    # what the tools accept, in their schemas (the checks are the tools' own)
    from treeseek.search.strategy import strategies

    choices = {
        ("references", "kind"): REFERENCE_KINDS,
        ("search", "language"): sorted(SUPPORTED),
        ("search", "strategy"): strategies(),
    }
    for tool in server._tool_manager.list_tools():
        tool.parameters["additionalProperties"] = False  # what call_tool enforces
        for (name, argument), allowed in choices.items():
            if tool.name == name:
                _add_enum(tool.parameters["properties"][argument], list(allowed))
    return server


def _with_disk(service: Service, tree: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a file's answer) with ``disk``: whether its file changed since indexed."""
    data["disk"] = service.on_disk(tree, data["path"])
    return data


def _disk_note(data: dict[str, Any]) -> str:
    """What a file's answer says when the file changed on disk since it was indexed (the
    answer is the stored copy: its lines may no longer be the file's)."""
    state = {"changed": "changed on disk", "gone": "is gone from disk"}.get(data.get("disk") or "")
    if state is None:
        return ""
    return f" (stored copy: the file {state} since it was indexed; call index)"


def _add_enum(schema: dict[str, Any], allowed: list[str]) -> None:
    """List ``allowed`` as the values of a string argument (of its string branch when it may
    also be null)."""
    for branch in schema.get("anyOf") or [schema]:
        if branch.get("type") == "string":
            branch["enum"] = allowed


def _check_filters(service: Service, tree: str, path: str | None, language: str | None) -> None:
    """A filter that cannot match is the caller's mistake, not "no files found": a path that
    is not a directory or file of the tree, a language the code index does not parse."""
    from treeseek.code.languages import SUPPORTED

    if language and language not in SUPPORTED:
        raise ConfigError(
            f"unknown language {language!r:.80}; one of: {', '.join(sorted(SUPPORTED))}"
        )
    if path and path.strip("/"):
        service.node(tree, path.strip("/"))  # NodeNotFound / PathError when not in it


def _filter(
    files: list[dict[str, Any]],
    path: str | None,
    language: str | None,
    parsed: dict[str, str | None],
) -> list[dict[str, Any]]:
    """The hits under ``path`` and of ``language`` (``parsed``: each hit's language as the
    code index parsed it, what flat's scope goes by: a C++ header named ``.h`` is cpp)."""
    prefix = (path or "").strip("/")
    out = []
    for hit in files:
        p = hit["path"]
        if prefix and not (p == prefix or p.startswith(prefix + "/")):
            continue
        if language and parsed.get(p) != language:
            continue
        out.append(hit)
    return out
