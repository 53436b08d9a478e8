"""Wrong-typed arguments to the public Python API are a one-line TreeseekError naming what was
expected, never an AttributeError or TypeError from deep inside (a real database and tree)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import treeseek
from treeseek import Database


@pytest.fixture
def shop(database: Database, tmp_path: Path) -> Database:
    root = tmp_path / "shop"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "cart.py").write_text(
        "class Cart:\n    def total(self):\n        return sum(self.items)\n", encoding="utf-8"
    )
    database.index(root, name="shop")
    return database


BAD: dict[str, Callable[[Database], Any]] = {
    "disclose: a list of strings": lambda db: db.disclose("shop", ["pkg/cart.py"]),
    "disclose: a string": lambda db: db.disclose("shop", "pkg/cart.py"),
    "disclose: None": lambda db: db.disclose("shop", None),
    "select: a list of strings": lambda db: db.select("shop", ["pkg/cart.py"], 100),
    "expand: None": lambda db: db.expand("shop", None),
    "expand: an int": lambda db: db.expand("shop", 3),
    "lines: a string start": lambda db: db.lines("shop", "pkg/cart.py", "1", 2),
    "lines: a float end": lambda db: db.lines("shop", "pkg/cart.py", 1, 2.5),
    "resolve_symbol: None": lambda db: db.resolve_symbol("shop", None),
    "call_sites: None": lambda db: db.call_sites("shop", "callers", None),
    "code_relation: an int": lambda db: db.code_relation("shop", "imports", 3),
    "query: a navigator that is not one": lambda db: db.query(
        "shop", "cart total", navigator=3, strategy="beam"
    ),
    "index: an int source": lambda db: db.index(3, name="x"),
    "index: a string max_file_bytes": lambda db: db.index(
        db.tree("shop").root, name="shop", max_file_bytes="5"
    ),
    "index: an int rev": lambda db: db.index(db.tree("shop").root, name="shop", rev=3),
    "freshness: an int tree": lambda db: db.freshness(3),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_wrong_typed_argument_is_a_one_line_treeseek_error(shop: Database, case: str) -> None:
    with pytest.raises(treeseek.TreeseekError) as caught:
        BAD[case](shop)
    message = str(caught.value)
    assert "\n" not in message
    assert "got" in message or "not" in message
    assert not isinstance(caught.value, treeseek.TreeNotFound)  # a wrong type, not a lookup


def test_a_navigator_spec_string_is_accepted_as_the_cli_takes_it(shop: Database) -> None:
    result = shop.query("shop", "cart total", navigator="lexical", strategy="beam", k=1)
    assert result.navigator == "lexical"
    assert [hit.path for hit in result.files] == ["pkg/cart.py"]


def test_disclose_still_takes_a_result_or_its_files(shop: Database) -> None:
    result = shop.query("shop", "cart total", k=1)
    assert shop.disclose("shop", result).files[0].path == "pkg/cart.py"
    assert shop.disclose("shop", tuple(result.files), "paths").files[0].path == "pkg/cart.py"


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_symbol_name_is_bad_input_not_a_symbol_not_found(
    shop: Database, name: str
) -> None:
    """Nothing to look up is the caller's mistake (HTTP 400), not a lookup that failed (404)."""
    with pytest.raises(treeseek.ConfigError, match="give a symbol name"):
        shop.resolve_symbol("shop", name)
    with pytest.raises(treeseek.ConfigError, match="give a symbol name"):
        shop.expand("shop", name)
    with pytest.raises(treeseek.ConfigError, match="give a name"):
        shop.call_sites("shop", "callers", name)
    with pytest.raises(treeseek.ConfigError, match="give a name"):
        shop.code_relation("shop", "members", name)
