"""The filesystem builder on real directories: ignore rules, git checkouts, symlinks, odd names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database
from treeseek.errors import BuildError
from treeseek.trees.filesystem import FilesystemBuilder
from treeseek.trees.model import ContentStatus, NodeType
from treeseek.trees.source import SourceWarnings

HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")

_GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=_GIT_ENV)


def listing(root: Path, *, use_git: bool | None) -> tuple[list[str], list[str], str]:
    """(file paths, warnings, mode) as the builder lists them."""
    builder = FilesystemBuilder(root, use_git=use_git)
    warnings = SourceWarnings()
    files = sorted(e.path for e in builder.entries(warnings) if e.type is NodeType.FILE)
    return files, warnings.messages, builder.mode


IGNORE_LAYOUT: dict[str, str | bytes] = {
    ".gitignore": "*.log\n!keep.log\nbuild/\n/top-only.txt\n",
    ".treeseekignore": "secrets/\n*.tmp\n!important.tmp\n",
    "app.py": "x = 1\n",
    "debug.log": "log\n",
    "keep.log": "kept by negation\n",
    "top-only.txt": "anchored: ignored at the root only\n",
    "build/out.txt": "ignored dir\n",
    "scratch.tmp": "treeseekignored\n",
    "important.tmp": "re-included\n",
    "secrets/key.txt": "hidden\n",
    "pkg/top-only.txt": "not anchored here\n",
    "pkg/.gitignore": "generated.py\n!debug.log\n",
    "pkg/generated.py": "nested ignore\n",
    "pkg/debug.log": "re-included by the nested file\n",
    "pkg/mod.py": "y = 2\n",
    "pkg/build/x.txt": "build/ matches at any depth\n",
    "pkg/deep/.treeseekignore": "*.csv\n",
    "pkg/deep/data.csv": "a,b\n",
    "pkg/deep/code.py": "z = 3\n",
    "other/data.csv": "nested .treeseekignore does not apply here\n",
}

EXPECTED_FILES = [
    ".gitignore",
    ".treeseekignore",
    "app.py",
    "important.tmp",
    "keep.log",
    "other/data.csv",
    "pkg/.gitignore",
    "pkg/debug.log",
    "pkg/deep/.treeseekignore",
    "pkg/deep/code.py",
    "pkg/mod.py",
    "pkg/top-only.txt",
]


def test_plain_directory_applies_nested_gitignore_negation_and_treeseekignore(
    tmp_path: Path,
) -> None:
    write(tmp_path, IGNORE_LAYOUT)
    files, warnings, mode = listing(tmp_path, use_git=None)
    assert mode == "walk"
    assert files == EXPECTED_FILES
    assert warnings == []


def test_plain_directory_with_git_dir_applies_info_exclude_and_skips_dot_git(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"a.py": "", "local.txt": "", ".git/info/exclude": "local.txt\n"})
    write(tmp_path, {".git/HEAD": "ref: refs/heads/main\n", "sub/.git": "gitdir: elsewhere\n"})
    files, _, mode = listing(tmp_path, use_git=False)
    assert mode == "walk"
    assert files == ["a.py"]


@needs_git
def test_git_checkout_is_listed_by_git_with_the_same_rules(tmp_path: Path) -> None:
    write(tmp_path, IGNORE_LAYOUT)
    git(tmp_path, "init", "-q")
    files, _, mode = listing(tmp_path, use_git=None)
    assert mode == "git"
    assert files == EXPECTED_FILES
    assert listing(tmp_path, use_git=False)[0] == EXPECTED_FILES


@needs_git
def test_git_checkout_lists_tracked_files_even_if_ignored_and_honours_info_exclude(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"a.py": "", "forced.log": "", ".gitignore": "*.log\n"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-f", "a.py", "forced.log", ".gitignore")
    git(tmp_path, "commit", "-q", "-m", "c")
    write(tmp_path, {"untracked.py": "", "new.log": "", "mine.txt": ""})
    write(tmp_path, {".git/info/exclude": "mine.txt\n"})
    (tmp_path / "a.py").unlink()  # deleted in the work tree: gone from the index too
    files, _, mode = listing(tmp_path, use_git=None)
    assert mode == "git"
    assert files == [".gitignore", "forced.log", "untracked.py"]


@needs_git
def test_empty_git_repository_and_empty_directory(tmp_path: Path, database: Database) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    report = database.index(repo, name="repo")
    assert (report.tree.file_count, report.tree.node_count) == (0, 1)
    assert database.children("repo") == []
    empty = tmp_path / "empty"
    empty.mkdir()
    report = database.index(FilesystemBuilder(empty, use_git=False), name="empty")
    assert report.tree.node_count == 1


def test_plain_walk_lists_empty_directories(tmp_path: Path) -> None:
    (tmp_path / "empty" / "deeper").mkdir(parents=True)
    builder = FilesystemBuilder(tmp_path, use_git=False)
    entries = list(builder.entries(SourceWarnings()))
    assert sorted((e.path, e.type) for e in entries) == [
        ("empty", NodeType.DIRECTORY),
        ("empty/deeper", NodeType.DIRECTORY),
    ]


@pytest.mark.parametrize("use_git", [False, pytest.param(None, marks=needs_git)])
def test_symlinks_inside_outside_dangling_and_loops(
    tmp_path: Path, database: Database, use_git: bool | None
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the root\n")
    root = tmp_path / "root"
    write(root, {"real/target.txt": "inside\n"})
    (root / "link-in.txt").symlink_to("real/target.txt")
    (root / "link-out.txt").symlink_to(outside / "secret.txt")
    (root / "link-out-dir").symlink_to(outside)
    (root / "dangling.txt").symlink_to("does-not-exist")
    (root / "loop-a").symlink_to("loop-b")
    (root / "loop-b").symlink_to("loop-a")
    (root / "real" / "up").symlink_to("..")  # a directory loop
    if use_git is None:
        git(root, "init", "-q")
    report = database.index(FilesystemBuilder(root, use_git=use_git), name="t")
    files = sorted(n.path for n in database.subtree("t") if n.is_file)
    assert files == ["link-in.txt", "real/target.txt"]
    assert database.text("t", "link-in.txt") == "inside\n"
    joined = "\n".join(report.warnings)
    assert "link-out.txt: symlink points outside the tree root" in joined
    assert "link-out-dir: symlink points outside the tree root" in joined
    assert "dangling.txt: dangling symlink" in joined
    assert "loop-a: symlink loop" in joined
    assert "real/up: symlink to a directory, not followed" in joined


def test_fifo_is_skipped_without_blocking(tmp_path: Path, database: Database) -> None:
    write(tmp_path, {"a.txt": "a\n"})
    os.mkfifo(tmp_path / "pipe")
    report = database.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
    assert [n.path for n in database.subtree("t") if n.is_file] == ["a.txt"]
    assert any("pipe: not a regular file" in w for w in report.warnings)


def test_file_that_vanishes_after_listing_is_kept_unreadable(
    tmp_path: Path, database: Database
) -> None:
    write(tmp_path, {"a.txt": "a\n", "gone.txt": "soon gone\n"})
    builder = FilesystemBuilder(tmp_path, use_git=False)

    class VanishingBuilder(FilesystemBuilder):
        def entries(self, warnings: SourceWarnings):  # type: ignore[no-untyped-def]
            listed = list(builder.entries(warnings))
            (tmp_path / "gone.txt").unlink()
            yield from listed

    report = database.index(VanishingBuilder(tmp_path, use_git=False), name="t")
    node = database.node("t", "gone.txt")
    assert node.content_status is ContentStatus.UNREADABLE
    assert database.content("t", node) is None
    assert report.unreadable == 1
    assert any("gone.txt: cannot read" in w for w in report.warnings)
    assert database.text("t", "a.txt") == "a\n"


def _permissions_bite() -> bool:
    return os.geteuid() != 0


@pytest.mark.skipif(
    not _permissions_bite(), reason="running as root: chmod 000 does not block reads"
)
def test_unreadable_file_and_directory_warn_and_continue(
    tmp_path: Path, database: Database
) -> None:
    write(tmp_path, {"ok.txt": "ok\n", "locked.txt": "no\n", "closed/inner.txt": "no\n"})
    (tmp_path / "locked.txt").chmod(0)
    (tmp_path / "closed").chmod(0)
    try:
        report = database.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
    finally:
        (tmp_path / "locked.txt").chmod(0o644)
        (tmp_path / "closed").chmod(0o755)
    assert database.node("t", "locked.txt").content_status is ContentStatus.UNREADABLE
    assert any("closed: cannot list directory" in w for w in report.warnings)
    assert database.text("t", "ok.txt") == "ok\n"


def test_binary_and_huge_files_keep_their_node_without_content(
    tmp_path: Path, database: Database
) -> None:
    write(
        tmp_path,
        {
            "img.png": b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(40)),
            "late-nul.bin": b"a" * 9000 + b"\x00",  # NUL after the sniffed 8 KiB: text
            "big.txt": "x" * 101,
            "limit.txt": "y" * 100,
        },
    )
    report = database.index(
        FilesystemBuilder(tmp_path, use_git=False), name="t", max_file_bytes=100
    )
    assert database.node("t", "img.png").content_status is ContentStatus.BINARY
    assert database.content("t", "img.png") is None
    big = database.node("t", "big.txt")
    assert big.content_status is ContentStatus.TOO_LARGE and big.size == 101
    assert database.content("t", big) is None
    assert database.text("t", "limit.txt") == "y" * 100
    assert (report.binary, report.too_large) == (1, 2)  # late-nul.bin is too large too
    # a higher limit later stores what was too large, without anything else changing on disk
    again = database.index(
        FilesystemBuilder(tmp_path, use_git=False), name="t", max_file_bytes=1 << 20
    )
    assert database.text("t", "big.txt") == "x" * 101
    assert database.node("t", "late-nul.bin").content_status is ContentStatus.STORED
    assert (again.changed, again.too_large) == (2, 0)


@pytest.mark.parametrize("use_git", [False, pytest.param(None, marks=needs_git)])
def test_odd_names_round_trip(tmp_path: Path, database: Database, use_git: bool | None) -> None:
    root = tmp_path / "root"
    root.mkdir()
    raw_name = b"caf\xe9-latin1.txt"  # not valid UTF-8
    with open(os.path.join(os.fsencode(root), raw_name), "wb") as handle:
        handle.write(b"latin-1 name\n")
    write(
        root,
        {
            "with space/and more.txt": "spaces\n",
            "ünïcödé/日本語.md": "unicode\n",
            "[brackets] & $dollar.txt": "markup-ish\n",
            "new\nline.txt": "a newline in the name\n",
        },
    )
    if use_git is None:
        git(root, "init", "-q")
    database.index(FilesystemBuilder(root, use_git=use_git), name="t")
    odd = os.fsdecode(raw_name)
    files = sorted(n.path for n in database.subtree("t") if n.is_file)
    assert files == sorted(
        [
            "[brackets] & $dollar.txt",
            odd,
            "new\nline.txt",
            "with space/and more.txt",
            "ünïcödé/日本語.md",
        ]
    )
    assert database.text("t", odd) == "latin-1 name\n"
    assert database.node("t", odd).path.encode("utf-8", "surrogateescape") == raw_name
    assert database.text("t", "ünïcödé/日本語.md") == "unicode\n"
    assert [n.path for n in database.subtree("t", "ünïcödé")] == ["ünïcödé", "ünïcödé/日本語.md"]


def test_missing_or_non_directory_root_is_a_build_error(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="does not exist"):
        FilesystemBuilder(tmp_path / "nope")
    (tmp_path / "f").write_text("")
    with pytest.raises(BuildError, match="not a directory"):
        FilesystemBuilder(tmp_path / "f")


@needs_git
def test_a_directory_ignored_by_the_enclosing_checkout_is_walked(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "cache/\n", "cache/project/a.py": "", "src/b.py": ""})
    git(tmp_path, "init", "-q")
    files, _, mode = listing(tmp_path / "cache" / "project", use_git=None)
    assert (files, mode) == (["a.py"], "walk")
    files, _, mode = listing(tmp_path / "src", use_git=None)  # a plain subdirectory: git
    assert (files, mode) == (["b.py"], "git")


def test_cp1252_text_is_stored_as_utf8_and_utf8_is_left_byte_for_byte(
    tmp_path: Path, database: Database
) -> None:
    """A Latin-1 / Windows-1252 file was stored as it was and decoded with replacement
    characters, so "café" was unsearchable and shown as "caf\ufffd": such text is stored as
    UTF-8. Valid UTF-8 (with a stray byte or two, too) and binary data are left as they were."""
    latin = "/* Résumé of the café: naïve “quotes” – 10 €. */\nint menu(void);\n"
    utf8 = "Ω café — valid UTF-8\n"
    write(
        tmp_path,
        {
            "menu.c": latin.encode("cp1252"),
            "utf8.txt": utf8.encode("utf-8"),
            "bom.txt": b"\xef\xbb\xbf" + utf8.encode("utf-8"),
            "stray.txt": "ééé ".encode() + b"\xff" + "Ω\n".encode(),  # UTF-8, one bad byte
            "undefined.txt": b"caf\xe9 \x81\n",  # 0x81 is not a Windows-1252 character
            "controls.dat": bytes(range(1, 32)) * 20 + b"\xe9",  # no NUL, but not text
            # other scripts' legacy encodings decode as cp1252 too, to nonsense: left alone
            "ru.txt": "Привет, мир: это тест кодировки\n".encode("cp1251"),
            "zh.md": "# 说明\n这是一个中文文件，用于测试编码。\n".encode("gbk"),
        },
    )
    database.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
    assert database.text("t", "menu.c") == latin
    assert database.content("t", "menu.c") == latin.encode("utf-8")
    kept = ("utf8.txt", "bom.txt", "stray.txt", "undefined.txt", "controls.dat", "ru.txt", "zh.md")
    for path in kept:
        assert database.content("t", path) == (tmp_path / path).read_bytes(), path
    again = database.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
    assert again.changed == 0
    with treeseek.open(tmp_path.parent / "search.db") as full:  # searched as it is shown
        full.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
        hits = full.query("t", "café résumé", k=3).files
        assert hits and hits[0].path == "menu.c"
        assert "Résumé of the café" in (hits[0].content or "")


def test_utf16_and_utf32_text_with_a_byte_order_mark_is_stored_as_utf8(
    tmp_path: Path, database: Database
) -> None:
    code = "def flux_capacitor():\n    return 'Ω'\n"
    write(
        tmp_path,
        {
            "wide.py": code.encode("utf-16"),  # with its mark, native order
            "be.py": code.encode("utf-16-be").join([b"\xfe\xff", b""]),
            "wide32.txt": b"\xff\xfe\x00\x00" + "hello wide world\n".encode("utf-32-le"),
            "utf8.py": b"\xef\xbb\xbf" + code.encode("utf-8"),  # UTF-8 stays as it is
            "fake.bin": b"\xff\xfe" + b"\x00\x00\x00\x00",  # a mark, then NUL characters
        },
    )
    database.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
    for path in ("wide.py", "be.py"):
        assert database.node("t", path).content_status is ContentStatus.STORED
        assert database.content("t", path) == code.encode("utf-8")
    assert database.text("t", "wide32.txt") == "hello wide world\n"
    assert database.content("t", "utf8.py") == b"\xef\xbb\xbf" + code.encode("utf-8")
    assert database.node("t", "fake.bin").content_status is ContentStatus.BINARY
    again = database.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
    assert again.changed == 0 and again.unchanged == 5
    with treeseek.open(tmp_path.parent / "code.db") as coded:  # the code index parses it too
        coded.index(FilesystemBuilder(tmp_path, use_git=False), name="t")
        (wide,) = coded.outline("t", "wide.py").files
        assert [i.name_path for i in wide.items] == ["wide.py::flux_capacitor"]


UNREADABLE_ROOT = """
import json, os, sys
import treeseek
base = sys.argv[1]
src = os.path.join(base, "src")
out = {}
with treeseek.open(os.path.join(base, "t.db")) as db:
    db.index(src, name="t")
    for mode in (0o311, 0o000):  # listing refused; everything refused
        os.chmod(src, mode)
        try:
            report = db.index(src, name="t")
            out[oct(mode)] = f"indexed: {report.removed} removed"
        except treeseek.TreeseekError as exc:
            out[oct(mode)] = f"{type(exc).__name__}: {exc}"
        finally:
            os.chmod(src, 0o755)
    out["files"] = db.tree("t").file_count
print(json.dumps(out))
"""


def _unprivileged() -> list[str] | None:
    """How to run a child without the right to bypass file permissions: as it is (not
    root), or as nobody through setpriv (root); None when neither is possible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_a_root_that_cannot_be_listed_is_an_error_not_an_empty_tree() -> None:
    """A directory tree whose root lost its read permission (a watch, an MCP or HTTP
    re-index) was re-indexed as an empty tree, every file removed, with one warning
    ('.: cannot list directory'); with no permission at all the error named a HEAD file the
    directory never had. Both are now a BuildError naming the directory, nothing written."""
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("root without setpriv: cannot drop the right to read any directory")
    base = Path(tempfile.mkdtemp(prefix="treeseek-perm-", dir="/tmp"))
    try:
        (base / "src" / "pkg").mkdir(parents=True)
        for n in range(3):
            (base / "src" / "pkg" / f"m{n}.py").write_text(f"VALUE_{n} = {n}\n")
        base.chmod(0o755)
        if prefix:
            for path in [base, *base.rglob("*")]:
                os.chown(path, 65534, 65534)
        env = {**os.environ, "PYTHONPATH": str(Path(treeseek.__file__).parents[1])}
        done = subprocess.run(
            [*prefix, sys.executable, "-c", UNREADABLE_ROOT, str(base)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        out = json.loads(done.stdout)
        src = str(base / "src")
        for mode in ("0o311", "0o0"):
            assert out[mode].startswith("BuildError: "), out
            assert f"cannot list {src}" in out[mode] and "HEAD" not in out[mode], out
        assert out["files"] == 3  # the stored tree is as it was
    finally:
        shutil.rmtree(base, ignore_errors=True)
