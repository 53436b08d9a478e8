"""The spec's prompt payloads (Appendix A), rendered from Jinja templates shipped with the package.

``beam_fs.jinja`` is the Beam prompt; ``block_fs_cache_prefix.jinja`` is the cached block prefix
(header, blocks, instructions) and ``block_fs.jinja`` the dynamic block message. Hints from
flat retrieval (an extension, off by default) go only into the dynamic texts. The block
prefix template exposes its parts as macros so the cache method can send them as separate
cache segments whose concatenation is exactly the template's own rendering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import jinja2

from treeseek.llm.base import Candidate

ROOT_DISPLAY = "."  # how the repository root is shown as a path


@dataclass(frozen=True, slots=True)
class PromptSet:
    """The three templates of one kind of tree: Beam prompt, cached block prefix (with the
    ``header``/``entry``/``block``/``instructions`` macros) and dynamic block message."""

    beam: str
    block_prefix: str
    block_message: str


#: the spec's Appendix A prompts (a repository's directory tree)
FILESYSTEM_PROMPTS = PromptSet("beam_fs.jinja", "block_fs_cache_prefix.jinja", "block_fs.jinja")
#: the same payloads for a document's outline (sections instead of files and directories)
DOCUMENT_PROMPTS = PromptSet("beam_doc.jinja", "block_doc_cache_prefix.jinja", "block_doc.jinja")


@dataclass(frozen=True, slots=True)
class RenderedEntry:
    id: str  # block-local alias, e.g. "n3"
    path: str  # path as shown (relative to the block's Path prefix when there is one)
    type: str


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("treeseek", "prompts"),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


@cache
def _template(name: str) -> jinja2.Template:
    return _environment().get_template(name)


@cache
def _prefix_macros(prompts: PromptSet = FILESYSTEM_PROMPTS) -> Any:
    return _template(prompts.block_prefix).make_module({"blocks": []})


def display_path(path: str) -> str:
    return path if path else ROOT_DISPLAY


def render_beam_prompt(
    query: str,
    top_candidate_ids: Sequence[str],
    candidates: Sequence[Candidate],
    pick_limit: int,
    hints: Sequence[str] = (),
    prompts: PromptSet = FILESYSTEM_PROMPTS,
) -> str:
    """The Beam prompt; ``hints`` (paths) add an optional list after the query."""
    return _template(prompts.beam).render(
        query=query,
        hints=[display_path(p) for p in hints],
        top_candidate_ids=list(top_candidate_ids),
        candidates=[Candidate(c.id, display_path(c.path), c.type) for c in candidates],
        pick_limit=pick_limit,
    )


def tree_header(prompts: PromptSet = FILESYSTEM_PROMPTS) -> str:
    return str(_prefix_macros(prompts).header())


def render_entry(
    alias: str, path: str, node_type: str, prompts: PromptSet = FILESYSTEM_PROMPTS
) -> str:
    return str(_prefix_macros(prompts).entry(alias, path, node_type))


def render_block(
    prefix: str | None, entries: Sequence[RenderedEntry], prompts: PromptSet = FILESYSTEM_PROMPTS
) -> str:
    """One block: an optional ``Path prefix`` line, its entries, and a blank separator line."""
    return str(_prefix_macros(prompts).block(prefix, list(entries)))


def block_instructions(prompts: PromptSet = FILESYSTEM_PROMPTS) -> str:
    return str(_prefix_macros(prompts).instructions())


@dataclass(frozen=True, slots=True)
class _BlockView:
    prefix: str | None
    entries: list[RenderedEntry]


def render_cache_prefix(
    blocks: Sequence[tuple[str | None, Sequence[RenderedEntry]]],
    prompts: PromptSet = FILESYSTEM_PROMPTS,
) -> str:
    """The whole cached prefix in one piece (header, blocks in order, instructions)."""
    views = [_BlockView(prefix, list(entries)) for prefix, entries in blocks]
    return _template(prompts.block_prefix).render(blocks=views)


def render_block_message(
    query: str,
    top_candidate_paths: Sequence[str],
    frontier_paths: Sequence[str],
    allowed_ids: Sequence[str],
    pick_limit: int,
    hints: Sequence[str] = (),
    prompts: PromptSet = FILESYSTEM_PROMPTS,
) -> str:
    """The dynamic block message; ``hints`` (paths) add an optional list after the query.
    Without hints it is exactly the spec's text."""
    return _template(prompts.block_message).render(
        query=query,
        hints=[display_path(p) for p in hints],
        top_candidate_paths=[display_path(p) for p in top_candidate_paths],
        frontier_paths=[display_path(p) for p in frontier_paths],
        allowed_ids=list(allowed_ids),
        pick_limit=pick_limit,
    )
