"""Name paths in and out: full, short, unique, ambiguous (the candidates, never a guess);
line ranges and their errors; expand() of a symbol, a range with margin, a file."""

from __future__ import annotations

import pytest

from treeseek.context.names import parse_range
from treeseek.database import Database
from treeseek.errors import AmbiguousSymbol, ConfigError, NodeNotFound, PathError, TreeseekError

RETRY = "payments/retry.py"


@pytest.mark.parametrize(
    "ref",
    [
        f"{RETRY}::Backoff.jitter",  # full
        "retry.py::Backoff.jitter",  # a unique path suffix
        f"{RETRY}::jitter",  # a unique name within the file
        "Backoff.jitter",  # no path: looked up in the tree
        "jitter",  # a short name unique in the tree
    ],
)
def test_name_paths_resolve(shop: Database, ref: str) -> None:
    found = shop.resolve_symbol("shop", ref)
    assert found.name_path == f"{RETRY}::Backoff.jitter"
    assert (found.symbol.start_line, found.symbol.end_line) == (17, 19)


def test_an_ambiguous_short_name_lists_the_candidates(shop: Database) -> None:
    with pytest.raises(AmbiguousSymbol) as info:
        shop.resolve_symbol("shop", "delay")
    assert info.value.candidates == [
        "payments/invoice.py::delay",
        "payments/retry.py::Backoff.delay",
        "users/profile.py::delay",
    ]
    assert isinstance(info.value, TreeseekError)
    assert "payments/invoice.py::delay" in str(info.value)
    # the name path picks one
    assert shop.resolve_symbol("shop", "invoice.py::delay").symbol.qname == "delay"
    assert shop.resolve_symbol("shop", f"{RETRY}::delay").symbol.qname == "Backoff.delay"


def test_an_ambiguous_path_suffix_lists_the_files(shop: Database) -> None:
    with pytest.raises(AmbiguousSymbol) as info:
        shop.resolve_symbol("shop", "profile.py::rename")
    assert info.value.candidates == ["archive/users/profile.py", "users/profile.py"]
    assert shop.resolve_symbol("shop", "users/profile.py::rename").symbol.qname == (
        "Profile.rename"
    )


def test_unknown_names_are_clear_errors(shop: Database) -> None:
    with pytest.raises(NodeNotFound, match=r"no symbol 'nope' in payments/retry\.py"):
        shop.resolve_symbol("shop", f"{RETRY}::nope")
    with pytest.raises(NodeNotFound, match="no symbol named 'nope'"):
        shop.resolve_symbol("shop", "nope")
    with pytest.raises(NodeNotFound, match="no file"):
        shop.resolve_symbol("shop", "nowhere.py::x")


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("a/b.py:40-90", ("a/b.py", 40, 90)),
        ("a/b.py:7", ("a/b.py", 7, 7)),
        ("a/b.py:7-", ("a/b.py", 7, None)),
        ("a/b.py:-5", ("a/b.py", 1, 5)),
        ("a/b.py", ("a/b.py", None, None)),
        ("a/new\nline.py:3-4", ("a/new\nline.py", 3, 4)),  # any byte of a name, newlines too
    ],
)
def test_parse_range(spec: str, parsed: tuple[str, int | None, int | None]) -> None:
    assert parse_range(spec) == parsed


def test_lines_and_their_bounds(shop: Database) -> None:
    span = shop.lines("shop", RETRY, 13, 15)
    assert span.text.splitlines()[0] == "    def delay(self, attempt: int) -> float:"
    assert span.symbol == f"{RETRY}::Backoff.delay"
    assert shop.lines("shop", RETRY, 148).end_line == 151 - 1  # to the end: 150 lines
    with pytest.raises(PathError, match=r"past the end of payments/retry\.py \(150 lines\)"):
        shop.lines("shop", RETRY, 149, 400)
    with pytest.raises(PathError, match="the end is before the start"):
        shop.lines("shop", RETRY, 20, 10)
    with pytest.raises(PathError, match="line numbers start at 1"):
        shop.lines("shop", RETRY, 0, 3)
    with pytest.raises(PathError, match="line 500 is past the end"):
        shop.lines("shop", RETRY, 500, 501)


def test_expand_a_symbol_a_range_with_margin_and_a_file(shop: Database) -> None:
    sym = shop.expand("shop", "Backoff.jitter").context[0]
    assert (sym.start_line, sym.end_line, sym.symbol) == (17, 19, f"{RETRY}::Backoff.jitter")
    wider = shop.expand("shop", "Backoff.jitter", margin=2).context[0]
    assert (wider.start_line, wider.end_line) == (15, 21)
    rng = shop.expand("shop", f"{RETRY}:13-15", margin=1).context[0]
    assert (rng.start_line, rng.end_line) == (12, 16)
    top = shop.expand("shop", f"{RETRY}:1-2", margin=5).context[0]
    assert top.start_line == 1  # margins clip to the file
    whole = shop.expand("shop", "invoice.py").context[0]
    assert (whole.path, whole.start_line, whole.end_line) == ("payments/invoice.py", 1, 17)
    cut = shop.expand("shop", RETRY, budget=50)
    assert cut.context[0].start_line == 1 and cut.budget.used <= 50
    with pytest.raises(AmbiguousSymbol):
        shop.expand("shop", "delay")


def test_expand_of_a_directory_says_it_is_one(shop: Database) -> None:
    for item in ("payments", "payments/"):
        with pytest.raises(NodeNotFound, match=r"^payments is a directory: expand takes a file"):
            shop.expand("shop", item)


def test_a_start_past_the_end_with_no_end_says_past_the_end(shop: Database) -> None:
    # not "bad line range 500-None: the end is before the start"
    with pytest.raises(PathError, match=r"^line 500 is past the end of payments/retry\.py"):
        shop.lines("shop", RETRY, 500)


def test_a_budget_too_small_for_the_first_line_is_an_error_not_an_empty_span(
    shop: Database,
) -> None:
    # a span ending before it starts (start_line 13, end_line 12, "") was returned
    with pytest.raises(ConfigError, match="cannot hold the first line"):
        shop.expand("shop", "Backoff.delay", budget=1)


@pytest.mark.parametrize("margin", ["3", 2.5, True, -1])
def test_a_margin_that_is_not_a_count_of_lines_is_a_config_error(
    shop: Database, margin: object
) -> None:
    with pytest.raises(ConfigError, match="a margin is a number of lines"):
        shop.expand("shop", "Backoff.delay", margin=margin)  # type: ignore[arg-type]


def test_a_start_before_line_1_with_no_end_names_the_range_as_typed(shop: Database) -> None:
    with pytest.raises(PathError, match=r"^bad line range 0-: line numbers start at 1$"):
        shop.lines("shop", RETRY, 0)
