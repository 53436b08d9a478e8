"""Turning the maintained result set into the retrieval output.

Final filesystem output returns at most k entries of ``top_candidate_ids`` with their contents.
Contents are cut to a per-file byte budget and the whole answer to a total budget; a cut file is
marked ``truncated`` and a file whose content is not stored (binary, too large, path-only tree)
keeps ``content=None`` with its ``content_status`` saying why.
"""

from __future__ import annotations

from collections.abc import Sequence

from treeseek.llm.base import Navigator, Usage, add_usage_spent
from treeseek.llm.prices import estimate_cost
from treeseek.search.base import FileHit, QueryOptions, Result
from treeseek.search.trace import Trace
from treeseek.search.treeview import TreeView
from treeseek.store.base import Store
from treeseek.trees.model import ContentStatus


def _cut(data: bytes, limit: int) -> tuple[str, bool]:
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace"), False
    # drop a partial UTF-8 sequence at the cut instead of rendering a replacement char
    return data[:limit].decode("utf-8", errors="ignore"), True


def attach_contents(
    store: Store, tree: str, hits: list[FileHit], options: QueryOptions
) -> list[FileHit]:
    """Fill the hits' contents in order under the options' byte budgets; the one place every
    retriever applies them. A file over the per-file budget (``max_file_bytes``) or past the
    total (``max_total_bytes``) is cut at a UTF-8 boundary and marked ``truncated``; a file
    without stored content keeps ``content=None`` and says why in ``content_status``."""
    remaining = options.max_total_bytes
    for hit in hits:
        if not options.include_content or hit.content_status != ContentStatus.STORED.value:
            continue
        data = store.content(tree, hit.node_id)
        if data is None:
            hit.content_status = ContentStatus.ABSENT.value
            continue
        if remaining <= 0:
            hit.truncated = True  # the total budget is spent: no content for this file
            continue
        limit = min(options.max_file_bytes, remaining)
        hit.content, hit.truncated = _cut(data, limit)
        remaining -= min(len(data), limit)
    return hits


def file_hits(view: TreeView, node_ids: Sequence[str], options: QueryOptions) -> list[FileHit]:
    """The first ``k`` of ``node_ids`` as hits, with contents (:func:`attach_contents`)."""
    nodes = view.nodes(list(node_ids)[: options.k])
    hits = [
        FileHit(node_id=n.id, path=n.path, content_status=n.content_status.value) for n in nodes
    ]
    return attach_contents(view.store, view.tree, hits, options)


def trace_usage(trace: Trace) -> Usage:
    """What a tree search's LLM calls spent: its rounds', and those of a round the deadline
    cut (:attr:`Trace.cut_usage`)."""
    usage = trace.cut_usage
    for rnd in trace.rounds:
        usage = usage + rnd.usage
    return usage


def failed_search(exc: BaseException, trace: Trace) -> None:
    """Record on ``exc``, a tree search's failure, what its calls had spent
    (:func:`treeseek.llm.base.usage_spent`), so a failed query still reports its cost."""
    add_usage_spent(exc, trace_usage(trace))


def finish(
    view: TreeView,
    top_candidate_ids: Sequence[str],
    options: QueryOptions,
    navigator: Navigator,
    trace: Trace,
) -> Result:
    """Assemble the Result: files with contents, summed usage and the estimated cost."""
    usage = trace_usage(trace)
    trace.usage = usage
    return Result(
        files=file_hits(view, top_candidate_ids, options),
        strategy=trace.strategy,
        navigator=navigator.name,
        trace=trace,
        usage=usage,
        cost_usd=estimate_cost(navigator.name, usage),
    )
