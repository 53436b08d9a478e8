"""The document prompts: the Appendix A payloads with sections instead of files, pinned."""

from __future__ import annotations

from treeseek.llm.base import Candidate
from treeseek.search.tree.prompts import (
    DOCUMENT_PROMPTS,
    RenderedEntry,
    block_instructions,
    render_beam_prompt,
    render_block,
    render_block_message,
    render_cache_prefix,
    tree_header,
)

BEAM = """\
You are navigating the outline of a document collection to find the sections that answer this query:

Query: how do I tune the knobs

Already top candidates:
- abc123

Current candidates (pick up to 3, most relevant first):
- id: id1
  title: guide.md/Tuning
  type: section
- id: id2
  title: manuals
  type: folder

RULES:
- Select sections that answer the query; a section's subsections are shown when you select it
- set done=true ONLY when you've found specific sections that answer the query
- set done=false if you returned folders or sections whose subsections need further exploration

Return ONE tool call "rank" with:
- ranked_ids: list of candidate ids in best-to-worst order
- done: true or false
"""

PREFIX = """\
=== DOCUMENT OUTLINE ===

Title prefix: guide.md/Tuning/
- id: n1
  title: Knobs
  type: section
- id: n2
  title: Dials
  type: section

You are navigating the outline of a document collection to find the sections that answer a query.
Each entry above has:
- id: a unique node identifier
- title: the document and section titles leading to the entry, separated by /
- type: section (it may have subsections) or folder

RULES:
- Select sections that answer the query, or sections and folders to drill deeper into
- set done=false if returned entries need further exploration
- Select ONLY ids from the allowed list provided below

Return ONE tool call "rank" with:
- ranked_ids: list of candidate ids in best-to-worst order
- done: true ONLY when the returned ids are specific sections that answer the query
"""

MESSAGE = """\
Query: how do I tune the knobs

Top sections so far:
- guide.md/Install

Current exploration path (sections):
- guide.md/Tuning

The LAST BLOCK above is the CURRENT BLOCK.
IDs in each block are local to that block.
Return only ids from the CURRENT BLOCK.

Selectable ids in the CURRENT BLOCK:
- n1
- n2

Pick up to 3 candidates most relevant to the query, best first.
"""

ENTRIES = [RenderedEntry("n1", "Knobs", "file"), RenderedEntry("n2", "Dials", "file")]


def test_document_beam_prompt_is_pinned() -> None:
    candidates = [
        Candidate("id1", "guide.md/Tuning", "file"),
        Candidate("id2", "manuals", "directory"),
    ]
    text = render_beam_prompt(
        "how do I tune the knobs", ["abc123"], candidates, 3, prompts=DOCUMENT_PROMPTS
    )
    assert text == BEAM


def test_document_block_prefix_is_pinned_and_its_parts_concatenate() -> None:
    whole = render_cache_prefix([("guide.md/Tuning", ENTRIES)], DOCUMENT_PROMPTS)
    assert whole == PREFIX
    parts = (
        tree_header(DOCUMENT_PROMPTS)
        + render_block("guide.md/Tuning", ENTRIES, DOCUMENT_PROMPTS)
        + block_instructions(DOCUMENT_PROMPTS)
    )
    assert parts == whole


def test_document_block_message_is_pinned() -> None:
    text = render_block_message(
        "how do I tune the knobs",
        ["guide.md/Install"],
        ["guide.md/Tuning"],
        ["n1", "n2"],
        3,
        prompts=DOCUMENT_PROMPTS,
    )
    assert text == MESSAGE
