"""The git builder against a real bare repository made in the test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bare_repo import BareRepo

from treeseek.errors import BuildError
from treeseek.trees.filesystem import FilesystemBuilder
from treeseek.trees.git import GitTreeBuilder, resolve_commit
from treeseek.trees.model import NodeType, TreeSource
from treeseek.trees.source import SourceWarnings


def _list(builder: GitTreeBuilder) -> tuple[dict[str, bytes], dict[str, str], SourceWarnings]:
    warnings = SourceWarnings()
    contents: dict[str, bytes] = {}
    signatures: dict[str, str] = {}
    for entry in builder.entries(warnings):
        assert entry.type is NodeType.FILE
        assert entry.read is not None and entry.signature is not None
        contents[entry.path] = entry.read()
        signatures[entry.path] = entry.signature
        assert entry.size == len(contents[entry.path])
    return contents, signatures, warnings


def test_lists_each_commit_with_blob_ids_and_contents(bare_repo: BareRepo) -> None:
    first = bare_repo.commit({"a.py": b"print(1)\n", "pkg/b.py": b"x = 2\n", "bin.dat": b"\0\1"})
    second = bare_repo.commit({"pkg/b.py": b"x = 3\n", "a.py": None, "pkg/c/d.txt": b"d"})

    with GitTreeBuilder(bare_repo.git_dir, first) as builder:
        contents, signatures, warnings = _list(builder)
        assert builder.source is TreeSource.GIT
        assert builder.root == f"{bare_repo.git_dir.resolve()}@{first}"
    assert contents == {"a.py": b"print(1)\n", "pkg/b.py": b"x = 2\n", "bin.dat": b"\0\1"}
    assert signatures["a.py"] == bare_repo.git("rev-parse", f"{first}:a.py")
    assert warnings.messages == []

    with GitTreeBuilder(bare_repo.git_dir, second) as builder:
        contents2, signatures2, _ = _list(builder)
    assert contents2 == {"pkg/b.py": b"x = 3\n", "bin.dat": b"\0\1", "pkg/c/d.txt": b"d"}
    assert signatures2["bin.dat"] == signatures["bin.dat"]  # unchanged file: same signature
    assert signatures2["pkg/b.py"] != signatures["pkg/b.py"]


def test_one_cat_file_process_serves_every_read(bare_repo: BareRepo) -> None:
    files = {f"f{i:02d}.txt": f"file {i}\n".encode() for i in range(30)}
    commit = bare_repo.commit(files)
    with GitTreeBuilder(bare_repo.git_dir, commit) as builder:
        warnings = SourceWarnings()
        entries = list(builder.entries(warnings))
        assert builder.blob_reads == 0  # listing reads no contents
        pids = set()
        for entry in entries:
            assert entry.read is not None
            assert entry.read() == files[entry.path]
            process = builder._blobs._process
            assert process is not None
            pids.add(process.pid)
        assert len(pids) == 1
        assert builder.blob_reads == 30
        # the process is still alive between reads and gone after close
        assert process.poll() is None
    assert process.poll() is not None


def test_symlinks_read_their_target_and_submodules_are_skipped(bare_repo: BareRepo) -> None:
    base = bare_repo.commit({"real.txt": b"hello"}, symlinks={"link.txt": "real.txt"})
    commit = bare_repo.commit_with_submodule("vendor/lib", base)
    with GitTreeBuilder(bare_repo.git_dir, commit) as builder:
        contents, signatures, warnings = _list(builder)
    assert contents == {"real.txt": b"hello", "link.txt": b"hello"}
    assert signatures["link.txt"] == signatures["real.txt"]  # the target's blob id
    assert any("vendor/lib" in m and "submodule" in m for m in warnings.messages)


#: symlinks of every kind the filesystem builder decides (see test_filesystem.py)
LINKS = {
    "README.md": "docs/guide.md",  # a root README that is the package's, as zod's
    "docs/alias.md": "guide.md",
    "docs/up.py": "../pkg/real.py",
    "chain.md": "README.md",  # a link to a link
    "via_dir.py": "pkgdir/real.py",  # through a link to a directory
    "pkgdir": "pkg",  # a directory: not followed
    "trail": "pkg/",
    "outside.txt": "../" * 20 + "bin/sh",
    "absolute.txt": "/bin/sh",
    "dangling.txt": "missing.txt",
    "loop_a": "loop_b",
    "loop_b": "loop_a",
}


def test_symlinks_are_decided_as_in_a_checkout_of_the_commit(bare_repo: BareRepo) -> None:
    """A commit lists what the filesystem builder lists for its checkout: a symlink to a file
    inside the tree reads as that file (zod's root README.md links to its package's), the
    others are left out with a warning, so a bare repository's tree and its checkout's agree."""
    commit = bare_repo.commit(
        {"docs/guide.md": b"# Guide\n", "pkg/real.py": b"def real():\n    return 1\n"},
        symlinks=LINKS,
    )
    with GitTreeBuilder(bare_repo.git_dir, commit) as builder:
        contents, _, warnings = _list(builder)
    checkout = FilesystemBuilder(bare_repo.work, use_git=False)
    expected_warnings = SourceWarnings()
    expected = {e.path: e.read() for e in checkout.entries(expected_warnings) if e.read is not None}
    assert contents == expected
    assert contents["README.md"] == contents["chain.md"] == b"# Guide\n"
    assert contents["via_dir.py"] == contents["docs/up.py"] == b"def real():\n    return 1\n"
    assert sorted(warnings.messages) == sorted(expected_warnings.messages)
    assert len(warnings.messages) == 7


def test_non_utf8_and_spaced_names_survive(bare_repo: BareRepo) -> None:
    if os.uname().sysname == "Darwin":
        pytest.skip("macOS filesystems reject non-UTF-8 names")
    name = b"dir with space/caf\xe9.txt"
    target = bare_repo.work / os.fsdecode(name)
    target.parent.mkdir(parents=True)
    target.write_bytes(b"x")
    commit = bare_repo.commit({"tab\tname.txt": b"t"})
    with GitTreeBuilder(bare_repo.git_dir, commit) as builder:
        contents, _, _ = _list(builder)
    assert set(contents) == {"dir with space/caf\udce9.txt", "tab\tname.txt"}


def test_resolves_branch_names_and_rejects_bad_input(bare_repo: BareRepo, tmp_path: Path) -> None:
    commit = bare_repo.commit({"a": b"a"})
    branch = bare_repo.git("symbolic-ref", "--short", "HEAD")
    assert resolve_commit(bare_repo.git_dir, branch) == commit
    with GitTreeBuilder(bare_repo.git_dir, commit[:10], root="opaque") as builder:
        assert builder.commit == commit
        assert builder.root == "opaque"
    with pytest.raises(BuildError, match="not found"):
        GitTreeBuilder(bare_repo.git_dir, "0" * 40)
    with pytest.raises(BuildError, match="not a commit"):
        GitTreeBuilder(bare_repo.git_dir, "--all")
    with pytest.raises(BuildError, match="does not exist"):
        GitTreeBuilder(tmp_path / "missing", commit)
    (tmp_path / "plain").mkdir()
    with pytest.raises(BuildError, match="not a git directory"):
        GitTreeBuilder(tmp_path / "plain", commit)


def test_missing_object_read_is_a_build_error(bare_repo: BareRepo) -> None:
    commit = bare_repo.commit({"a": b"a"})
    with GitTreeBuilder(bare_repo.git_dir, commit) as builder:
        with pytest.raises(BuildError, match="unreadable"):
            builder._blobs.read("1" * 40)
        # the process survives a missing object and keeps serving reads
        entry = next(iter(builder.entries(SourceWarnings())))
        assert entry.read is not None and entry.read() == b"a"


def test_indexing_a_commit_from_its_neighbour_reads_only_changed_blobs(
    bare_repo: BareRepo, tmp_path: Path
) -> None:
    import treeseek

    files = {f"pkg/m{i}.py": f"value = {i}\n".encode() for i in range(40)}
    first = bare_repo.commit(files)
    second = bare_repo.commit({"pkg/m3.py": b"value = 'three'\n", "pkg/extra.py": b"e = 1\n"})
    with treeseek.open(tmp_path / "t.db") as db:
        with GitTreeBuilder(bare_repo.git_dir, first) as builder:
            report = db.index(builder, name="first")
            assert builder.blob_reads == 40 and report.added == 40
        with GitTreeBuilder(bare_repo.git_dir, second) as builder:
            report = db.index(builder, name="second", base="first")
            # the copy of "first" keeps 39 files whose blob id did not change: not read again
            assert builder.blob_reads == 2
        assert (report.added, report.changed, report.unchanged) == (1, 1, 39)
        assert db.text("second", "pkg/m3.py") == "value = 'three'\n"
        assert db.text("second", "pkg/m7.py") == "value = 7\n"
        assert db.text("first", "pkg/m3.py") == "value = 3\n"
        assert db.tree("second").root == f"{bare_repo.git_dir.resolve()}@{second}"


def test_a_missing_blob_keeps_the_file_without_content(bare_repo: BareRepo, tmp_path: Path) -> None:
    import treeseek

    commit = bare_repo.commit({"a.py": b"a = 1\n", "b.py": b"b = 2\n", "c.py": b"c = 3\n"})
    blob_b = bare_repo.git("rev-parse", f"{commit}:b.py")
    blob_c = bare_repo.git("rev-parse", f"{commit}:c.py")
    # a partial clone misses blobs: ls-tree then prints the size as "BAD"
    (bare_repo.git_dir / "objects" / blob_b[:2] / blob_b[2:]).unlink()
    with GitTreeBuilder(bare_repo.git_dir, commit) as builder:
        warnings = SourceWarnings()
        entries = {e.path: e for e in builder.entries(warnings)}
        assert entries["b.py"].problem == "blob missing" and entries["b.py"].read is None
        assert any("b.py" in m for m in warnings.messages)
        # a blob that disappears after listing is an OSError the indexer tolerates
        (bare_repo.git_dir / "objects" / blob_c[:2] / blob_c[2:]).unlink()
        read_c = entries["c.py"].read
        assert read_c is not None
        with pytest.raises(OSError, match="unreadable"):
            read_c()
    with (
        GitTreeBuilder(bare_repo.git_dir, commit) as builder,
        treeseek.open(tmp_path / "t.db") as db,
    ):
        report = db.index(builder, name="partial")
        assert report.unreadable == 2
        assert db.text("partial", "a.py") == "a = 1\n"
        assert db.content("partial", "b.py") is None


def test_a_linked_worktree_or_submodule_checkout_names_its_git_dir(
    bare_repo: BareRepo, tmp_path: Path
) -> None:
    """``treeseek index CHECKOUT --rev REV`` where CHECKOUT/.git is a file (``git worktree
    add``, a submodule): the builder follows its ``gitdir:`` line."""
    first = bare_repo.commit({"a.py": b"one"})
    second = bare_repo.commit({"a.py": b"two"})
    checkout = tmp_path / "linked"
    bare_repo.git("worktree", "add", "-q", "--detach", str(checkout), second)
    assert (checkout / ".git").is_file()
    with GitTreeBuilder(checkout, "HEAD~1") as builder:
        assert builder.commit == first
        assert _list(builder)[0] == {"a.py": b"one"}
