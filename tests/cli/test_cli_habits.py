"""What a new user expects of a CLI: --version, stdin, a config file, clear errors for a file
or a bare repository given to `index`, freshness, and `watch`."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import treeseek
from treeseek.cli.app import load_commands
from treeseek.cli.common import ONE_SHOT_GC
from treeseek.config import load_config, resolve_db_path
from treeseek.database import Database
from treeseek.errors import ConfigError
from treeseek.trees.pathlist import PathListBuilder

app = load_commands()
SRC = str(Path(treeseek.__file__).resolve().parents[1])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "retry.py").write_text("def backoff(attempt):\n    return 2 ** attempt\n")
    (root / "pkg" / "io.py").write_text("def read_all(path):\n    return open(path).read()\n")
    return root


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"treeseek {treeseek.__version__}"


def test_query_reads_the_question_from_stdin(project: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "q.db")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(project), "--db", db]).exit_code == 0
    result = runner.invoke(
        app, ["query", "project", "-", "--db", db, "-k", "1", "--json"], input="backoff attempt\n"
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["query"] == "backoff attempt\n"
    assert answer["files"][0]["path"] == "pkg/retry.py"
    empty = runner.invoke(app, ["query", "project", "-", "--db", db], input="  \n")
    assert empty.exit_code == 1 and "empty" in empty.output


def test_config_file_sets_the_database(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TREESEEK_DB", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    work = tmp_path / "work"
    (work / "deep").mkdir(parents=True)
    (work / "treeseek.toml").write_text('db = "state/index.db"\n[query]\nk = 3\n')
    monkeypatch.chdir(work / "deep")  # found in a parent directory
    assert resolve_db_path() == (work / "state" / "index.db").resolve()
    assert load_config()["query"] == {"k": 3}
    (work / "state").mkdir()
    result = CliRunner().invoke(app, ["index", str(project)])
    assert result.exit_code == 0, result.output
    assert (work / "state" / "index.db").is_file()
    # the environment and --db win over the file
    assert resolve_db_path(tmp_path / "x.db") == tmp_path / "x.db"
    monkeypatch.setenv("TREESEEK_DB", str(tmp_path / "env.db"))
    assert resolve_db_path() == tmp_path / "env.db"


def test_config_query_table_sets_the_query_defaults(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: treeseek.toml's ``[query]`` sets the query defaults; the command line wins."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.chdir(tmp_path)
    db = ["--db", str(tmp_path / "q.db")]
    assert CliRunner().invoke(app, ["index", str(project), "--name", "p", *db]).exit_code == 0
    question = ["query", "p", "backoff attempt read_all path", *db]

    def ranked(*extra: str) -> list[str]:
        result = CliRunner().invoke(app, [*question, *extra])
        assert result.exit_code == 0, result.output
        return [line for line in result.stdout.splitlines() if line.strip()]

    assert len(ranked()) == 2
    (tmp_path / "treeseek.toml").write_text("[query]\nk = 1\n")
    assert len(ranked()) == 1  # the file's default
    assert len(ranked("-k", "2")) == 2  # the command line wins
    (tmp_path / "treeseek.toml").write_text("[query]\nbudget = 50\n")
    budgeted = CliRunner().invoke(app, question)
    assert budgeted.exit_code == 0 and "of 50 tokens" in budgeted.stderr
    for bad, message in (("k = 'many'", "k = 'many'; give an int"), ("kk = 3", "unknown")):
        (tmp_path / "treeseek.toml").write_text(f"[query]\n{bad}\n")
        result = CliRunner().invoke(app, question)
        assert result.exit_code == 1 and message in result.stderr, result.stderr


def test_user_config_dir_and_bad_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    user = tmp_path / "cfg" / "treeseek"
    user.mkdir(parents=True)
    (user / "treeseek.toml").write_text('[llm]\nspec = "lexical"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert load_config()["llm"] == {"spec": "lexical"}
    (user / "treeseek.toml").write_text("db = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config()
    (user / "treeseek.toml").write_text('colour = "red"\n')
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config()
    monkeypatch.delenv("TREESEEK_DB", raising=False)
    result = CliRunner().invoke(app, ["trees"])
    assert result.exit_code == 1
    assert "unknown setting(s) colour" in result.output


def test_index_a_file_is_a_clear_error(project: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["index", str(project / "pkg" / "retry.py"), "--db", str(tmp_path / "f.db")]
    )
    assert result.exit_code == 1
    assert "is a file, not a directory" in result.output
    assert "--paths-from" in result.output


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_index_a_bare_repository_indexes_its_head(project: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str, cwd: Path = project) -> str:
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
        )
        return done.stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-qm", "one")
    first = git("rev-parse", "HEAD")
    (project / "pkg" / "new.py").write_text("X = 1\n")
    git("add", ".")
    git("commit", "-qm", "two")
    bare = tmp_path / "mirror.git"
    git("clone", "-q", "--bare", str(project), str(bare), cwd=tmp_path)
    db = str(tmp_path / "g.db")
    runner = CliRunner()
    result = runner.invoke(app, ["index", str(bare), "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["tree"]["name"] == "mirror" and report["tree"]["source"] == "git"
    assert report["tree"]["file_count"] == 3  # HEAD, not pack files
    old = runner.invoke(
        app, ["index", str(bare), "--rev", first, "--name", "old", "--db", db, "--json"]
    )
    assert old.exit_code == 0, old.output
    assert json.loads(old.stdout)["tree"]["file_count"] == 2
    with treeseek.open(db) as database:
        fresh = database.freshness("old")
        assert fresh.stale is False and fresh.commit == first


def test_freshness_of_a_directory_tree(project: Path, tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "f.db") as db:
        db.index(project, name="p")
        assert db.freshness("p").stale is False
        time.sleep(0.01)
        (project / "pkg" / "retry.py").write_text("def backoff(attempt):\n    return 3\n")
        changed = db.freshness("p")
        assert changed.stale is True and changed.changed == 1
        assert changed.paths == ["pkg/retry.py"]
        assert "1 changed" in changed.summary
        (project / "pkg" / "io.py").unlink()
        (project / "pkg" / "added.py").write_text("Y = 2\n")
        both = db.freshness("p")
        assert (both.changed, both.removed) == (1, 1) and both.dirs_changed >= 1
        db.index(project, name="p")
        assert db.freshness("p").stale is False


def test_a_database_inside_the_tree_does_not_make_it_stale(project: Path) -> None:
    """A database kept in the directory it indexes (``db = "treeseek.db"`` in a project's
    treeseek.toml): SQLite removes its -wal and -shm files when the last connection closes,
    which touches the directory, and the tree was STALE (1 dirs) after every index. A file
    really added there still makes it stale."""
    db = project / "treeseek.db"
    with treeseek.open(db) as database:
        database.index(project, name="p")
    assert not Path(f"{db}-wal").exists()  # closed: the side files are gone
    with treeseek.open(db) as database:
        assert database.freshness("p").stale is False, database.freshness("p")
    (project / "added.py").write_text("ADDED = 1\n")
    with treeseek.open(db) as database:
        stale = database.freshness("p")
        assert stale.stale is True and stale.dirs_changed == 1, stale


needs_watchfiles = pytest.mark.skipif(
    __import__("importlib").util.find_spec("watchfiles") is None, reason="needs watchfiles"
)


def _watch(root: Path, db: Path, *more: str) -> subprocess.Popen[str]:
    """``treeseek watch ROOT --db DB`` in a child process, its output (both streams) piped."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, "-m", "treeseek", "watch", str(root), "--db", str(db), *more],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


@needs_watchfiles
def test_watch_reindexes_on_change(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    proc = _watch(project, db)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "indexed project" in first, first
        assert "watching" in proc.stdout.readline()
        (project / "pkg" / "late.py").write_text("def latecomer():\n    return 1\n")
        second = proc.stdout.readline()  # blocks until the re-index (pytest-timeout bounds it)
        assert "indexed project: 1 added" in second, second
        with treeseek.open(db) as database:
            assert database.text("project", "pkg/late.py") is not None
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@needs_watchfiles
def test_watch_of_another_directory_under_a_tree_s_name_needs_replace(
    project: Path, tmp_path: Path
) -> None:
    """The error tells to --replace: watch takes it (and without it ends at once)."""
    db = tmp_path / "w.db"
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "x.py").write_text("x = 1\n")
    with treeseek.open(db) as database:
        database.index(other, name="project")
    refused = _watch(project, db)
    out, _ = refused.communicate(timeout=120)
    assert refused.returncode == 1 and "was indexed from" in out and "--replace" in out, out
    proc = _watch(project, db, "--replace")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "indexed project" in first, first
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with treeseek.open(db) as database:
        assert database.tree("project").root == str(project.resolve())


@needs_watchfiles
def test_watch_survives_a_failed_reindex_and_retries(project: Path, tmp_path: Path) -> None:
    """A re-index that fails (here: the database marked damaged, as a busy lock or a vanished
    file would fail it) is one error line; the watcher goes on and indexes the change once the
    database takes writes again, without another change on disk."""
    db = tmp_path / "w.db"
    proc = _watch(project, db)
    marker = Path(f"{db}-corrupt")
    try:
        assert proc.stdout is not None
        assert "indexed project" in proc.stdout.readline()
        assert "watching" in proc.stdout.readline()
        marker.write_text("damaged for the test\n")
        (project / "pkg" / "late.py").write_text("def latecomer():\n    return 1\n")
        error = proc.stdout.readline()  # blocks until the failed re-index (pytest-timeout)
        assert error.startswith("error: the database ") and "still watching" in error, error
        marker.unlink()
        again = proc.stdout.readline()  # the retry, with nothing else changed on disk
        assert "indexed project: 1 added" in again, again
        assert proc.poll() is None
        with treeseek.open(db) as database:
            assert database.text("project", "pkg/late.py") is not None
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@needs_watchfiles
def test_watch_ends_with_an_error_when_its_directory_is_removed(tmp_path: Path) -> None:
    root = tmp_path / "gone"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("A = 1\n")
    proc = _watch(root, tmp_path / "w.db")
    try:
        assert proc.stdout is not None
        assert "indexed gone" in proc.stdout.readline()
        assert "watching" in proc.stdout.readline()
        shutil.rmtree(root)
        assert proc.wait(timeout=60) == 1  # it used to retry for ever
        rest = proc.stdout.read()
        assert (
            rest.splitlines()[-1]
            == f"error: {root} does not exist; give a directory or a git repository"
        )
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


@needs_watchfiles
@pytest.mark.timeout(120)
def test_watch_follows_a_directory_replaced_under_its_path(project: Path, tmp_path: Path) -> None:
    """A checkout swapped in by rename (a fresh clone or a deploy moved over the old one): the
    watcher re-indexes the new directory and keeps seeing its changes, rather than watching
    the old one, moved away, and letting the tree go stale without a word."""
    db = tmp_path / "w.db"
    proc = _watch(project, db)
    try:
        assert proc.stdout is not None
        assert "indexed project" in proc.stdout.readline()
        assert "watching" in proc.stdout.readline()
        fresh = tmp_path / "fresh"
        shutil.copytree(project, fresh)
        (fresh / "pkg" / "swapped.py").write_text("def swapped():\n    return 1\n")
        project.rename(tmp_path / "old")
        fresh.rename(project)
        again = proc.stdout.readline()  # blocks until it notices (the timeout bounds it)
        assert "watching" in again and "again: the directory was replaced" in again, again
        swapped = proc.stdout.readline()
        assert "indexed project: 1 added" in swapped, swapped
        (project / "pkg" / "late.py").write_text("def latecomer():\n    return 1\n")
        late = proc.stdout.readline()
        assert "indexed project: 1 added" in late, late
        with treeseek.open(db) as database:
            assert database.text("project", "pkg/late.py") is not None
            assert database.text("project", "pkg/swapped.py") is not None
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_watch_debounce_is_bounded(project: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from treeseek.cli.app import load_commands

    args = ["watch", str(project), "--debounce", str(10**20), "--db", str(tmp_path / "w.db")]
    result = CliRunner().invoke(load_commands(), args)
    assert result.exit_code == 2 and "--debounce" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_watch_filter_ignores_the_database_and_paths_through_symlinks(tmp_path: Path) -> None:
    from treeseek.cli.server_commands import watch_filter

    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "up").symlink_to(tmp_path)  # watchfiles follows it; the indexer never does
    db = tmp_path / "w.db"
    relevant = watch_filter(root, db)
    assert relevant(None, str(root / "pkg" / "a.py"))
    assert not relevant(None, str(db) + "-wal")
    assert not relevant(None, str(root / "up" / "w.db"))  # the database, seen through the link
    assert not relevant(None, str(root / "up" / "w.db-wal"))
    assert not relevant(None, str(root / "up" / "elsewhere.py"))  # outside the root
    assert not relevant(None, str(root / ".git" / "index"))


@needs_watchfiles
def test_watch_does_not_reindex_for_writes_inside_an_ignored_directory(
    project: Path, tmp_path: Path
) -> None:
    """A log appended under an ignored ``logs/`` (a dev server, a test run's cache) made
    the watcher re-index the tree after every write ("0 added, 0 changed, 0 removed" twice a
    second, a full listing each time); it now waits for a change the tree can hold."""
    (project / ".gitignore").write_text("logs/\n")
    (project / "logs").mkdir()
    (project / "logs" / "app.log").write_text("start\n")
    db = tmp_path / "w.db"
    proc = _watch(project, db, "--debounce", "50")
    try:
        assert proc.stdout is not None
        assert "indexed project" in proc.stdout.readline()
        assert "watching" in proc.stdout.readline()
        for n in range(5):
            with (project / "logs" / "app.log").open("a") as log:
                log.write(f"line {n}\n")
            time.sleep(0.3)  # each write its own batch of changes
        (project / "pkg" / "retry.py").write_text("def backoff(attempt):\n    return 3\n")
        line = proc.stdout.readline()
        assert "indexed project: 0 added, 1 changed, 0 removed" in line, line
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_left_out_is_what_the_last_index_left_out(tmp_path: Path) -> None:
    from treeseek.cli.server_commands import Indexed, left_out

    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "logs" / "old").mkdir(parents=True)
    listed = Indexed(frozenset({"", "pkg"}), time.time_ns())
    assert left_out(root, str(root / "logs" / "app.log"), listed)
    assert left_out(root, str(root / "logs" / "old" / "x.log"), listed)
    assert not left_out(root, str(root / "pkg" / "a.py"), listed)  # a tree directory's
    assert not left_out(root, str(root / "new.py"), listed)  # a new entry of the root
    assert not left_out(root, str(root / "logs"), listed)  # the directory itself
    assert not left_out(root, str(root / "gone" / "x.py"), listed)  # not there: re-index
    assert not left_out(root, str(root / "logs" / "app.log"), Indexed())  # never indexed
    coarse = 5  # CLOCK_REALTIME_COARSE: the clock inode times are stamped from
    ticked = time.time_ns()
    while time.clock_gettime_ns(coarse) <= ticked:  # the next clock tick
        pass
    (root / "later").mkdir()  # created after the listing (an empty directory git skipped)
    (root / "later" / "b.py").write_text("B = 1\n")
    assert not left_out(root, str(root / "later" / "b.py"), listed)
    (root / "logs" / "old" / "new.py").write_text("N = 1\n")  # a new entry, down inside
    assert not left_out(root, str(root / "logs" / "old" / "new.py"), listed)


@needs_watchfiles
def test_watch_goes_on_after_a_non_utf8_file_name(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    proc = _watch(project, db)
    try:
        assert proc.stdout is not None
        assert "indexed project" in proc.stdout.readline()
        assert "watching" in proc.stdout.readline()
        with open(os.fsencode(project / "pkg") + b"/bad\xffname.py", "w") as fh:
            fh.write("BAD = 1\n")
        line = proc.stdout.readline()  # watchfiles cannot decode the name: watched again
        assert "indexed project: 1 added" in line, line
        (project / "pkg" / "late.py").write_text("LATE = 1\n")
        while "indexed project: 1 added" not in (line := proc.stdout.readline()):
            assert "indexed project: 0 added, 0 changed, 0 removed" in line, line
        assert proc.poll() is None
        with treeseek.open(db) as database:
            assert database.text("project", "pkg/late.py") == "LATE = 1\n"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@needs_watchfiles
def test_watch_says_a_new_warning_once(project: Path, tmp_path: Path) -> None:
    proc = _watch(project, tmp_path / "w.db")
    try:
        assert proc.stdout is not None
        assert "indexed project" in proc.stdout.readline()
        assert "watching" in proc.stdout.readline()
        os.mkfifo(project / "pkg" / "pipe")
        assert "indexed project" in proc.stdout.readline()
        (project / "pkg" / "late.py").write_text("LATE = 1\n")  # (its line comes after)
        warning = "warning: pkg/pipe: not a regular file (fifo, socket or device); skipped\n"
        assert proc.stdout.readline() == warning
        assert "indexed project: 1 added" in proc.stdout.readline()
        (project / "pkg" / "later.py").write_text("LATER = 1\n")
        assert "indexed project: 1 added" in proc.stdout.readline()  # not said again
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_config_file_and_path_lists_with_a_byte_order_mark(tmp_path: Path) -> None:
    config = tmp_path / "treeseek.toml"
    config.write_bytes(b"\xef\xbb\xbf[query]\nk = 3\n")  # Notepad's UTF-8
    assert load_config(config)["query"] == {"k": 3}
    lists = {
        "utf8-mark.txt": b"\xef\xbb\xbfsrc/a.py\nsrc/b.py\n",
        "utf16.txt": "src/a.py\r\nsrc/b.py\r\n".encode("utf-16"),  # PowerShell's `>`
        "utf16.json": '["src/a.py", "src/b.py"]'.encode("utf-16"),
    }
    with treeseek.open(tmp_path / "p.db") as db:
        for n, (name, data) in enumerate(lists.items()):
            (tmp_path / name).write_bytes(data)
            db.index(PathListBuilder.from_file(tmp_path / name), name=f"list{n}")
            assert [c.path for c in db.children(f"list{n}", "")] == ["src"]
            assert [c.path for c in db.children(f"list{n}", "src")] == ["src/a.py", "src/b.py"]


def test_a_question_given_twice_is_told_not_both(project: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "q.db")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(project), "--db", db]).exit_code == 0
    file = tmp_path / "q.txt"
    file.write_text("backoff attempt\n")
    both = runner.invoke(
        app, ["query", "project", "backoff", "--question-file", str(file), "--db", db]
    )
    assert both.exit_code == 2 and "not both" in both.output, both.output
    neither = runner.invoke(app, ["query", "project", "--db", db])
    assert neither.exit_code == 2 and "--question-file" in neither.output, neither.output


def test_a_query_collects_garbage_less_often_and_restores_the_thresholds(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command-line query builds its tree's tables under fewer collections
    (ONE_SHOT_GC), and the process's thresholds are what they were after it, even when the
    query fails."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.chdir(tmp_path)
    db = ["--db", str(tmp_path / "q.db")]
    assert CliRunner().invoke(app, ["index", str(project), "--name", "p", *db]).exit_code == 0
    seen: list[tuple[int, ...]] = []
    query = Database.query

    def spy(self: Database, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_threshold())
        return query(self, *args, **kwargs)

    monkeypatch.setattr(Database, "query", spy)
    before = gc.get_threshold()
    assert before != ONE_SHOT_GC
    result = CliRunner().invoke(app, ["query", "p", "backoff attempt", *db])
    assert result.exit_code == 0, result.output
    assert seen == [ONE_SHOT_GC] and gc.get_threshold() == before
    result = CliRunner().invoke(app, ["query", "nosuchtree", "backoff", *db])
    assert result.exit_code == 1 and gc.get_threshold() == before
