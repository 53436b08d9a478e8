"""What reaches a terminal is sanitized; the API edge refuses bad arguments with treeseek
errors; read-only commands create nothing; long questions go through stdin or a file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hostile_llm import TREE, HostileServer
from typer.testing import CliRunner

import treeseek
from treeseek.cli.app import load_commands
from treeseek.cli.common import display_text
from treeseek.errors import ConfigError, PathError, RetrievalError, StoreError, TreeNotFound
from treeseek.llm.scripted import ScriptedNavigator, ScriptedReply
from treeseek.search.base import MAX_QUESTION_CHARS

app = load_commands()
SRC = Path(__file__).resolve().parents[2] / "src"
#: anything a terminal would act on
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def cli_db(hostile_db: treeseek.Database, tmp_path: Path) -> str:
    return str(tmp_path / "faults.db")


def invoke(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), input=input)
    return result.exit_code, result.stdout + (result.stderr if result.stderr_bytes else "")


def test_sanitizer() -> None:
    assert display_text("a\x1b[31mb\nc\rd\x9b\u202e") == "a\\x1b[31mb\\nc\\rd\\x9b\\u202e"
    assert display_text("l1\n\tl2\x07", keep_newlines=True) == "l1\n\tl2\\x07"
    assert display_text("caf\udce9") == "caf\\xe9"


def test_show_and_trees_print_no_control_characters(cli_db: str) -> None:
    code, out = invoke("show", TREE, "--db", cli_db, "--depth", "3")
    assert code == 0
    assert not RAW_CONTROL.search(out)
    assert "evil\\x1b[31mred\\x1b[0m.py" in out and "line\\nfake.py" in out
    assert len([ln for ln in out.splitlines() if "fake.py" in ln]) == 1  # no fake tree line
    code, out = invoke("show", TREE, "--db", cli_db, "--json", "--depth", "3")
    assert code == 0 and "\x1b" not in out
    paths = {n["path"] for n in json.loads(out)["nodes"]}
    assert "pkg/line\nfake.py" in paths and "pkg/\u202eyp.txt" in paths  # exact in JSON


def test_query_trace_prints_no_raw_escape_sequences(
    cli_db: str, hostile_server: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TREESEEK_LLM_RETRIES", "0")
    for mode in ("text_only_injection", "escape_sequences_in_ids", "honest"):
        hostile_server.mode = mode
        code, out = invoke(
            "query", TREE, "q", "--db", cli_db, "--strategy", "beam", "--trace", "--content",
            "--llm", f"openai-compatible:m@{hostile_server.url}/v1",
        )  # fmt: skip
        assert code == 0, out
        assert not RAW_CONTROL.search(out), (mode, out)


def test_llm_retry_warnings_on_stderr_are_sanitized(
    cli_db: str, hostile_server: HostileServer, tmp_path: Path
) -> None:
    """The retry warnings are log records: with no handler, Python's last-resort one wrote
    them raw, so a provider's error message could recolour the terminal or forge an
    ``error:`` line with a newline (the final error line was sanitized already)."""
    hostile_server.mode = "status_500_escapes"
    env = {**os.environ, "PYTHONPATH": str(SRC), "TREESEEK_LLM_RETRIES": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "treeseek", "query", TREE, "q", "--db", cli_db, "--strategy",
         "beam", "--llm", f"openai-compatible:m@{hostile_server.url}/v1"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "attempt 1 failed" in proc.stderr  # the warning is shown
    assert not RAW_CONTROL.search(proc.stderr), proc.stderr
    lines = proc.stderr.splitlines()
    assert [ln for ln in lines if ln.startswith("error:")] == [lines[-1]]  # no forged line


def test_question_from_stdin_and_file(cli_db: str, tmp_path: Path) -> None:
    question = "QuerySet filter " + "padding " * 20_000  # 160 KB: over the CLI's 128 KiB
    code, out = invoke("query", TREE, "-", "--db", cli_db, "--llm", "lexical", input=question)
    assert code == 0, out
    path = tmp_path / "q.txt"
    path.write_text(question)
    code, out = invoke("query", TREE, "--question-file", str(path), "--db", cli_db)
    assert code == 0, out
    path.write_text("x" * (MAX_QUESTION_CHARS + 1))
    code, out = invoke("query", TREE, "--question-file", str(path), "--db", cli_db)
    assert code == 1 and "maximum" in out
    code, out = invoke("query", TREE, "--db", cli_db)
    assert code == 2


def test_read_only_commands_create_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "x.db"
    for args in (["trees"], ["show", "t"], ["cat", "t", "a"], ["rm", "t"], ["query", "t", "q"]):
        code, out = invoke(*args, "--db", str(missing))
        assert code == 1 and "no treeseek database" in out, (args, out)
    assert not (tmp_path / "no").exists()
    with pytest.raises(StoreError):
        treeseek.open(missing, create=False)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda db: db.node(TREE, "\ud800"), PathError),
        (lambda db: db.text(TREE, "a\x00b"), PathError),
        (lambda db: db.children(TREE, None), PathError),
        (lambda db: db.tree("\udcff"), ConfigError),
        (lambda db: db.tree(None), ConfigError),
        (lambda db: db.query(TREE, "q", k="5"), ConfigError),
        (lambda db: db.query(TREE, "q", k=True), ConfigError),
        (lambda db: db.query(TREE, None), ConfigError),
        (lambda db: db.query(TREE, "q", deadline_s="soon"), ConfigError),
        (lambda db: db.query(TREE, "q", llm_timeout_s=0), ConfigError),
        (lambda db: db.query(TREE, "q", cache="yes"), ConfigError),
        (lambda db: db.query(TREE, "x" * (MAX_QUESTION_CHARS + 1)), ConfigError),
        (lambda db: db.index("/tmp/\ud800x", name="u"), PathError),
        (lambda db: db.index("/tmp", name="\ud800"), ConfigError),
        (lambda db: db.delete(5), ConfigError),
    ],
)
def test_api_edge_raises_treeseek_errors(hostile_db: treeseek.Database, call, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        call(hostile_db)


def test_a_lone_surrogate_question_is_answered(hostile_db: treeseek.Database) -> None:
    result = hostile_db.query(TREE, "query \ud800 filter", strategy="beam", navigator=None)
    assert isinstance(result.files, list)


@pytest.mark.parametrize("strategy", ["beam", "block"])
def test_tree_deleted_mid_query_answers_from_its_snapshot_then_is_a_clear_error(
    hostile_db: treeseek.Database, strategy: str
) -> None:
    """Another writer deletes the tree while a query runs: the query reads one version, the
    one it started on, to the end (never "no files found" from half a tree); the next query
    says the tree is gone."""
    deleted = threading.Event()

    def delete_then_open_dirs(request):  # type: ignore[no-untyped-def]
        if not deleted.is_set():
            writer = threading.Thread(target=hostile_db.delete, args=(TREE,))
            writer.start()
            writer.join(timeout=60)
            deleted.set()
        return ScriptedReply([c.id for c in request.candidates if c.type == "directory"])

    def open_dirs(request):  # type: ignore[no-untyped-def]
        return ScriptedReply([c.id for c in request.candidates if c.type == "directory"])

    control = hostile_db.query(TREE, "q", navigator=ScriptedNavigator(open_dirs), strategy=strategy)
    result = hostile_db.query(
        TREE, "q", navigator=ScriptedNavigator(delete_then_open_dirs), strategy=strategy
    )
    assert deleted.is_set()
    assert [f.path for f in result.files] == [f.path for f in control.files]
    assert len(result.trace.rounds) == len(control.trace.rounds) > 1  # it read on, whole
    assert not hostile_db.store.has_tree(TREE)
    with pytest.raises(TreeNotFound):
        hostile_db.query(TREE, "q", strategy=strategy)


def test_directory_emptied_mid_query_is_not_no_files_found(
    hostile_db: treeseek.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that sees a directory without its children (a re-index or a delete in flight)
    makes tree search fail clearly instead of answering "no files found"."""
    real = hostile_db.store.children_many
    calls = {"n": 0}

    def vanishing(tree, ids):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        found = real(tree, ids)
        return found if calls["n"] == 1 else {i: [] for i in ids}

    monkeypatch.setattr(hostile_db.store, "children_many", vanishing)
    nav = ScriptedNavigator(
        lambda r: ScriptedReply([c.id for c in r.candidates if c.type == "directory"])
    )
    with pytest.raises(RetrievalError, match="changed while the query read it"):
        hostile_db.query(TREE, "q", navigator=nav, strategy="beam")
