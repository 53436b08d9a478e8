"""Request and response bodies of the HTTP API (pydantic models; they make the OpenAPI)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: a layer: a code layer, or documentation sections (the fallback, or asked for alone)
Layer = Literal[
    "C0_SOURCE_CHUNKS", "C1_SYMBOL_CATALOG", "C2_DEPENDENCY_GRAPH", "C3_ENTRYPOINTS", "DOCS"
]
ItemLayer = Layer


class Strict(BaseModel):
    """Unknown fields are an error (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    type: str = Field(description="not_found, ambiguous, bad_request, limit, unauthorized, ...")
    message: str = Field(description="One line: what went wrong and what to do.")
    candidates: list[str] | None = Field(
        default=None, description="ambiguous: the full name paths to choose from"
    )


class ErrorResponse(BaseModel):
    error: ErrorBody


class Freshness(BaseModel):
    tree: str
    source: str
    root: str
    indexed_at: str
    commit: str | None = None
    stale: bool | None = Field(
        description="true: the directory changed since indexing (re-index); null: unknown"
    )
    changed: int = 0
    removed: int = 0
    dirs_changed: int = 0
    missing_root: bool = False
    paths: list[str] = Field(default_factory=list)


class Tree(BaseModel):
    name: str
    source: str
    root: str
    files: int
    dirs: int
    nodes: int
    depth: int
    built_at: str
    updated_at: str
    freshness: Freshness | None = None


class TreeList(BaseModel):
    trees: list[Tree]


class NodeOut(BaseModel):
    id: str
    path: str
    type: str
    parent_id: str | None
    depth: int
    size: int | None
    child_count: int
    content_status: str


class NodesResponse(BaseModel):
    tree: str
    path: str
    depth: int
    nodes: list[NodeOut]


class Deleted(BaseModel):
    deleted: str


class IndexRequest(Strict):
    source: str | None = Field(
        default=None,
        description="Absolute directory (or bare git repository) under the server's index "
        "roots; omit to re-index the tree from where it was built.",
    )
    rev: str | None = Field(default=None, description="git: the commit, branch or tag")
    replace: bool = Field(
        default=False,
        description="An existing tree of this name built from another source becomes this "
        "source's (else that is a 400).",
    )


class JobOut(BaseModel):
    id: str
    tree: str
    source: str
    rev: str | None
    state: Literal["queued", "running", "done", "failed"]
    phase: str = Field(description="queued, scan, read, write, done")
    done: int = Field(description="progress in the phase; once done: the files checked")
    total: int | None = Field(description="the phase's total if known; once done: the files")
    error: str | None
    report: dict[str, Any] | None = Field(description="done: what the index run changed")


class JobList(BaseModel):
    jobs: list[JobOut]


class QueryRequest(Strict):
    question: str = Field(description="The question, e.g. an issue's text.")
    k: int = Field(default=10, description="How many files.")
    strategy: str | None = Field(
        default=None, description="auto, beam, block, flat, traverse (default: flat w/o LLM)"
    )
    ranker: Literal["none", "bm25", "vector", "flat"] = "none"
    hints: int = Field(default=0, ge=0, le=100)
    beam_width: int | None = Field(default=None, ge=1, le=10)
    block_tokens: int = Field(default=4000, ge=500, le=64_000)
    top_layer_tokens: int = Field(default=0, ge=0, le=64_000)
    vectors: str | None = Field(default=None, description="flat: embedder of stored vectors")
    content: bool = Field(default=False, description="Include the files' contents.")
    budget: int | None = Field(
        default=None, description="Tokens: answer as budgeted context (line spans) instead."
    )
    disclose: Literal["paths", "outline", "spans", "full"] | None = None


class QueryFile(BaseModel):
    path: str
    node_id: str | None = None
    score: float | None = None
    content: str | None = None
    truncated: bool = False
    content_status: str | None = None
    evidence: dict[str, Any] | None = None
    rank: int | None = None
    why: dict[str, Any] | None = None
    spans: int | None = None


class Span(BaseModel):
    path: str
    start_line: int
    end_line: int
    symbol: str | None = None
    tokens: int | None = None
    text: str | None = None
    reason: str | None = None
    model_config = ConfigDict(extra="allow")


class QueryResponse(BaseModel):
    tree: str
    query: str
    strategy: str = ""
    navigator: str = ""
    files: list[QueryFile]
    usage: dict[str, Any] = Field(default_factory=dict)
    cost_usd: float | None = None
    freshness: Freshness
    budget: dict[str, Any] | None = None
    context: list[Span] | None = None
    symbols: list[str] | None = None
    outlines: list[dict[str, Any]] | None = None
    level: str | None = None
    notes: list[str] = Field(
        default_factory=list,
        description="what the answer could not do as asked: vectors the tree lacks, an option "
        "the strategy ignores (empty when none)",
    )


class FileResponse(BaseModel):
    tree: str
    path: str
    start_line: int
    end_line: int
    first_line: int = 1  # a document section's lines are its document's: it starts there
    total_lines: int
    truncated: bool
    note: str | None = None  # what was cut (over the characters limit) and how to read on
    text: str


class SymbolOut(BaseModel):
    name_path: str
    qname: str
    kind: str
    signature: str
    start_line: int
    end_line: int
    parent: str | None = None
    doc: str | None = None


class SymbolsResponse(BaseModel):
    tree: str
    path: str
    total_symbols: int = 0  # the file's symbols; over the server's limit only the first come
    truncated: bool = False
    symbols: list[SymbolOut]


class OutlineItem(BaseModel):
    name_path: str
    kind: str
    signature: str
    start_line: int
    end_line: int
    doc: str | None = None
    depth: int = 0


class FileOutline(BaseModel):
    path: str
    language: str | None = None
    lines: int | None = None
    tokens: int | None = None
    items: list[OutlineItem]
    omitted: int = Field(0, description="items left out to fit a budget")
    unit: str = Field(
        "lines", description='what "lines" and the spans count: "lines", or "pages" (a PDF)'
    )


class OutlineResponse(BaseModel):
    tree: str
    path: str
    files: list[FileOutline]


class ResolvedSymbolOut(BaseModel):
    tree: str
    name_path: str
    path: str
    kind: str | None = None
    signature: str | None = None
    start_line: int
    end_line: int  # the last line given: before symbol_end_line when the answer was cut
    symbol_end_line: int | None = None
    truncated: bool = False
    note: str | None = None  # what was cut (over a read's limits) and how to read on
    text: str | None = None


class GraphResponse(BaseModel):
    tree: str
    relation: str
    node: str | None = Field(description="the graph node the name resolved to")
    results: list[dict[str, Any]]
    total: int


class RetrieveRequest(Strict):
    """The code-retrieval endpoint of code-retrieval-layers.json."""

    tree: str | None = Field(default=None, description="The tree to search.")
    project_id: str | None = Field(default=None, description="Alias of tree (the spec's name).")
    rag_session_id: str | None = Field(default=None, description="Alias of tree.")
    query: str
    layers: list[Layer] | None = Field(
        default=None,
        description="Default: the four code layers. DOCS (alone): documentation sections "
        "directly, without a fallback.",
    )
    limit: int = Field(default=8, description="How many items (the spec's default: 8).")


class RetrievalItem(BaseModel):
    source: str = Field(description="repo-relative path")
    content: str
    layer: ItemLayer
    title: str
    metadata: dict[str, Any] = Field(
        description="C0: chunk_index, chunk_type, module_or_unit, symbol_id; C1: symbol_id, "
        "qname, kind, signature, decorators_or_annotations, docstring_or_javadoc, "
        "parent_symbol_id, package_or_module, is_entry_candidate, lang_payload; C2: edge_id, "
        "edge_type, src_symbol_id, src_qname, dst_symbol_id, dst_ref, resolution, "
        "lang_payload; C3: entry_id, entry_type, framework, route_or_command, handler, "
        "handler_symbol_id, lang_payload; DOCS: section_path, title_path, level (document "
        "trees), chunk_index (code trees), unit, span, truncated; all: artifact_type (CODE, "
        "DOC)"
    )
    score: float | None
    start_line: int | None
    end_line: int | None


class RetrieveResponse(BaseModel):
    items: list[RetrievalItem]
    fallback: Literal["docs"] | None = Field(
        default=None,
        description='"docs" (present only then) when the requested code layers found nothing '
        "and the items are documentation sections (layer DOCS); always so on a document tree",
    )


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    worker: int  # the process id of the worker that answered (``serve --workers N``)
