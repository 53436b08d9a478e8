"""The rendered payloads are exactly the spec's Appendix A texts."""

from __future__ import annotations

from treeseek.llm.base import Candidate
from treeseek.search.tree.prompts import (
    RenderedEntry,
    block_instructions,
    render_beam_prompt,
    render_block,
    render_block_message,
    render_cache_prefix,
    tree_header,
)

BEAM = """\
You are navigating a source code repository to find files relevant to this query:

Query: fix the parser

Already top candidates:
- abc123

Current candidates (pick up to 3, most relevant first):
- id: id1
  path: src/parser.py
  type: file
- id: id2
  path: src/lexer
  type: directory

RULES:
- Select directories to explore deeper, or files if they match the query
- set done=true ONLY when you've found specific source files that answer the query
- set done=false if you returned directories that need further exploration

Return ONE tool call "rank" with:
- ranked_ids: list of candidate ids in best-to-worst order
- done: true or false
"""

PREFIX = """\
=== REPOSITORY DIRECTORY TREE ===

Path prefix: src/pkg/
- id: n1
  path: core.py
  type: file
- id: n2
  path: util
  type: directory

You are navigating a source code repository's directory tree to find files relevant to a query.
Each entry above has:
- id: a unique node identifier
- path: relative file/directory path
- type: file or directory

RULES:
- Select directories to drill deeper into, or files if they directly match the query
- set done=false if returned directories need further exploration
- Select ONLY ids from the allowed list provided below

Return ONE tool call "rank" with:
- ranked_ids: list of candidate ids in best-to-worst order
- done: true ONLY when the returned ids are specific source files
"""

MESSAGE = """\
Query: fix the parser

Top candidates so far:
- src/pkg/core.py

Current exploration path:
- src/pkg

The LAST BLOCK above is the CURRENT BLOCK.
IDs in each block are local to that block.
Return only ids from the CURRENT BLOCK.

Selectable ids in the CURRENT BLOCK:
- n1
- n2

Pick up to 2 candidates most relevant to the query, best first.
"""

ENTRIES = [RenderedEntry("n1", "core.py", "file"), RenderedEntry("n2", "util", "directory")]


def test_beam_prompt_is_appendix_a21() -> None:
    candidates = [
        Candidate("id1", "src/parser.py", "file"),
        Candidate("id2", "src/lexer", "directory"),
    ]
    assert render_beam_prompt("fix the parser", ["abc123"], candidates, 3) == BEAM


def test_beam_prompt_without_top_candidates_says_none() -> None:
    text = render_beam_prompt("q", [], [Candidate("id1", "a.py", "file")], 1)
    assert "Already top candidates:\n- (none)\n\n" in text


def test_block_prefix_is_appendix_a22() -> None:
    assert render_cache_prefix([("src/pkg", ENTRIES)]) == PREFIX


def test_block_prefix_parts_concatenate_to_the_template() -> None:
    plain = [RenderedEntry("n1", "README.md", "file")]
    whole = render_cache_prefix([("src/pkg", ENTRIES), (None, plain)])
    parts = tree_header() + render_block("src/pkg", ENTRIES) + render_block(None, plain)
    assert whole == parts + block_instructions()
    assert "\n\n- id: n1\n  path: README.md\n  type: file\n\nYou are navigating" in whole


def test_block_without_prefix_has_no_prefix_line() -> None:
    text = render_block(None, [RenderedEntry("n1", "a/b.py", "file")])
    assert text == "- id: n1\n  path: a/b.py\n  type: file\n\n"


def test_block_message_is_appendix_a22() -> None:
    text = render_block_message("fix the parser", ["src/pkg/core.py"], ["src/pkg"], ["n1", "n2"], 2)
    assert text == MESSAGE


def test_block_message_shows_root_as_dot_and_no_top_candidates() -> None:
    text = render_block_message("q", [], [""], ["n1"], 1)
    assert "Top candidates so far:\n- (none)\n" in text
    assert "Current exploration path:\n- .\n" in text
