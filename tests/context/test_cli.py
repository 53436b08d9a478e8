"""The CLI: budgeted answers with path:start-end headers and numbered lines, never wrapped;
JSON with the schema; no cost footer without an LLM unless asked; outline; expand; cat ranges
and their one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from treeseek.cli.app import load_commands

RETRY = "payments/retry.py"
HEADER = re.compile(r"^(?P<path>\S+):(?P<start>\d+)-(?P<end>\d+)  \(.*\d+ tokens\)$")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(load_commands(), list(args))
    return result.exit_code, result.stdout, result.stderr


def parse_text(out: str) -> list[tuple[str, int, int, list[tuple[int, str]]]]:
    """Blocks of a text answer: (path, start, end, [(line number, text), ...])."""
    blocks: list[tuple[str, int, int, list[tuple[int, str]]]] = []
    for line in out.splitlines():
        m = HEADER.match(line)
        if m:
            blocks.append((m["path"], int(m["start"]), int(m["end"]), []))
        elif line and blocks:
            number, _, text = line.partition(":")
            blocks[-1][3].append((int(number), text))
    return blocks


def test_budgeted_text_answer_has_headers_and_numbered_lines(shop_db: Path) -> None:
    code, out, err = run(
        "query", "shop", "Backoff delay with jitter", "--budget", "300", "--db", str(shop_db)
    )
    assert code == 0, err
    blocks = parse_text(out)
    assert blocks and blocks[0][0] == RETRY
    source = (shop_db.parent / "shop" / RETRY).read_text().split("\n")
    for path, start, end, lines in blocks:
        if path != RETRY:
            continue
        assert [n for n, _ in lines] == list(range(start, end + 1))
        for n, text in lines:
            assert text == source[n - 1]  # exact lines, never wrapped
    assert "of 300 tokens" in err
    assert "calls" not in err  # no cost footer without an LLM


def test_the_cost_footer_when_asked(shop_db: Path) -> None:
    code, _, err = run("query", "shop", "refund", "--stats", "--db", str(shop_db))
    assert code == 0 and "flat via none · 0 calls" in err
    code, _, err = run("query", "shop", "refund", "--db", str(shop_db))
    assert code == 0 and "0 calls" not in err


def test_long_lines_are_not_wrapped(tmp_path: Path) -> None:
    import treeseek

    long_line = "VALUE = '" + "x" * 300 + "'"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "wide.py").write_text(f"{long_line}\n\ndef wide():\n    return VALUE\n")
    db = tmp_path / "w.db"
    with treeseek.open(db) as database:
        database.index(tmp_path / "src", name="w")
    code, out, err = run("query", "w", "wide VALUE", "--budget", "500", "--db", str(db))
    assert code == 0, err
    assert f"1:{long_line}" in out.splitlines()


def test_json_answer(shop_db: Path) -> None:
    code, out, err = run(
        "query", "shop", "invoice add line", "--budget", "800", "--json", "--db", str(shop_db)
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["schema"] == "treeseek.context/1" and data["level"] == "spans"
    assert data["budget"]["limit"] == 800 and data["budget"]["used"] <= 800
    assert data["context"][0]["path"] == "payments/invoice.py"
    assert data["context"][0]["text"]
    assert all("::" in s for s in data["symbols"])


def test_disclose_levels(shop_db: Path) -> None:
    code, out, _ = run(
        "query", "shop", "invoice", "--disclose", "paths", "--db", str(shop_db)
    )  # fmt: skip
    assert code == 0 and out.splitlines()[0].startswith(" 1. payments/invoice.py")
    code, out, _ = run("query", "shop", "invoice", "--disclose", "outline", "--db", str(shop_db))
    assert code == 0 and "class Invoice  # A bill for a customer." in out
    code, out, _ = run("query", "shop", "invoice", "--disclose", "full", "--db", str(shop_db))
    assert code == 0 and parse_text(out)[0][:2] == ("payments/invoice.py", 1)
    code, _, err = run("query", "shop", "invoice", "--disclose", "nope", "--db", str(shop_db))
    assert code == 1 and "unknown disclosure level 'nope'" in err
    code, _, err = run("query", "shop", "invoice", "--budget", "0", "--db", str(shop_db))
    assert code == 1 and "positive number of tokens" in err


def test_outline_and_expand_commands(shop_db: Path) -> None:
    code, out, err = run("outline", "shop", RETRY, "--db", str(shop_db))
    assert code == 0, err
    assert "  13-15    def delay(self, attempt: int) -> float  # Seconds to wait" in out
    code, out, _ = run("outline", "shop", RETRY, "--json", "--db", str(shop_db))
    assert json.loads(out)["files"][0]["items"][1]["name_path"] == f"{RETRY}::Backoff"
    code, out, err = run("expand", "shop", "Backoff.jitter", "--margin", "1", "--db", str(shop_db))
    assert code == 0, err
    assert parse_text(out)[0][:3] == (RETRY, 16, 20)
    code, _, err = run("expand", "shop", "delay", "--db", str(shop_db))
    assert code == 1 and "matches 3 symbols" in err and "users/profile.py::delay" in err


def test_cat_ranges_and_their_errors(shop_db: Path) -> None:
    code, out, err = run("cat", "shop", f"{RETRY}:13-15", "--db", str(shop_db))
    assert code == 0, err
    lines = out.splitlines()
    assert re.fullmatch(rf"{RETRY}:13-15  \(Backoff\.delay, \d+ tokens\)", lines[0])
    assert lines[1:] == [
        "13:    def delay(self, attempt: int) -> float:",
        '14:        """Seconds to wait before retry number ``attempt``."""',
        "15:        return min(60.0, self.base * 2**attempt)",
    ]
    code, out, _ = run("cat", "shop", f"{RETRY}:13-14", "--json", "--db", str(shop_db))
    assert json.loads(out)["end_line"] == 14
    for spec, message in [
        (f"{RETRY}:140-400", "run past the end of payments/retry.py (150 lines)"),
        (f"{RETRY}:500", "line 500 is past the end of payments/retry.py (150 lines)"),
        (f"{RETRY}:20-10", "the end is before the start"),
        (f"{RETRY}:0-3", "line numbers start at 1"),
    ]:
        code, _, err = run("cat", "shop", spec, "--db", str(shop_db))
        assert code == 1, spec
        assert message in err, err
        assert len(err.strip().splitlines()) == 1  # one line, never wrapped
    code, out, _ = run("cat", "shop", "payments/invoice.py", "--db", str(shop_db))
    assert code == 0 and out.startswith('"""Invoices."""')  # a plain path: the raw file


def test_paths_that_do_not_fit_the_budget_are_not_no_files_found(shop_db: Path) -> None:
    code, out, err = run(
        "query", "shop", "Backoff delay with jitter", "--disclose", "paths", "--budget", "2",
        "--db", str(shop_db),
    )  # fmt: skip
    assert code == 0
    assert "nothing fits the budget" in out + err and "no files found" not in out + err
