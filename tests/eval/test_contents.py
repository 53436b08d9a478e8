"""The with-contents universe: one database file per commit, chained from the nearest commit."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import MappingProxyType

import pytest
from bare_repo import BareRepo

import treeseek
from treeseek.code import revisions
from treeseek.errors import BuildError, ConfigError
from treeseek.eval.contents import CONTENTS_TREE, ContentsUniverse
from treeseek.index.code_hook import CodeIndexHook
from treeseek.trees.model import TreeSource

REPO = "acme/widgets"


def _history(repo: BareRepo) -> list[str]:
    base = {f"pkg/m{i}.py": f"x = {i}\n".encode() for i in range(20)}
    commits = [repo.commit({**base, "README": b"v0"})]
    commits.append(repo.commit({"pkg/m1.py": b"x = 'one'\n"}))
    commits.append(repo.commit({"pkg/m2.py": b"x = 'two'\n", "pkg/new.py": b"new"}))
    commits.append(repo.commit({"pkg/m3.py": None}))
    return commits


def _text(path: Path | None, file: str) -> str | None:
    assert path is not None
    with treeseek.open(path) as db:
        return db.text(CONTENTS_TREE, file)


def test_each_commit_is_copied_from_its_nearest_built_neighbour(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    c0, c1, c2, c3 = _history(repo)
    every = [(REPO, c) for c in (c0, c1, c2, c3)]
    universe = ContentsUniverse({REPO: repo.git_dir}, related=every, hooks=[])
    db_path = tmp_path / "runs" / "eval.db"
    db_path.parent.mkdir()
    # the newest first, to show the build order is by commit time, not request order
    first = list(universe.build(db_path, [(REPO, c3), (REPO, c0)]))
    assert [b.key[1] for b in first] == [c0, c3]
    assert first[0].base is None and first[0].report is not None
    assert first[0].report.added == 21
    assert first[0].db_path is not None and first[1].db_path is not None
    assert first[1].base == first[0].db_path.name  # c3 copied from c0, then re-indexed
    report = first[1].report
    assert report is not None
    assert (report.unchanged, report.removed, report.changed, report.added) == (18, 1, 2, 1)

    # c1 and c2 lie between: each starts from its nearest built neighbour, also when that was
    # built by an earlier run (found through ``related``)
    second = {b.key[1]: b for b in universe.build(db_path, [(REPO, c1), (REPO, c2)])}
    assert second[c1].base == first[0].db_path.name
    assert second[c1].report is not None
    assert (second[c1].report.changed, second[c1].report.unchanged) == (1, 20)

    files = {b.db_path for b in [*first, *second.values()]}
    assert len(files) == 4 and all(p is not None and p.is_file() for p in files)
    assert not list(db_path.parent.glob("*.partial*"))
    for built in [*first, *second.values()]:
        assert built.db_path is not None
        with treeseek.open(built.db_path) as db:
            assert [t.name for t in db.trees()] == [CONTENTS_TREE]  # one tree per file
            info = db.tree(CONTENTS_TREE)
            assert info.source is TreeSource.GIT
            assert "acme" not in info.root and str(repo.git_dir) not in info.root
            assert info.root.startswith("eval-")
        assert "acme" not in built.db_path.name
    assert _text(second[c1].db_path, "pkg/m1.py") == "x = 'one'\n"
    assert _text(second[c1].db_path, "pkg/m2.py") == "x = 2\n"
    assert _text(first[1].db_path, "pkg/new.py") == "new"
    assert first[1].db_path is not None
    with treeseek.open(first[1].db_path) as db:
        assert db.store.node_by_path(CONTENTS_TREE, "pkg/m3.py") is None  # deleted in c3
    assert _text(first[0].db_path, "pkg/m3.py") == "x = 3\n"  # the base file is untouched

    cached = list(universe.build(db_path, every))
    assert all(b.report is None and b.ok for b in cached)


def test_a_missing_commit_is_an_error_of_that_commit_only(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    c0 = repo.commit({"a.py": b"a"})
    universe = ContentsUniverse({REPO: repo.git_dir}, hooks=[])
    built = list(universe.build(tmp_path / "eval.db", [(REPO, c0), (REPO, "f" * 40)]))
    assert [b.ok for b in built] == [False, True]  # the missing one is reported first
    assert built[0].error is not None and "not found" in built[0].error
    assert built[1].report is not None and built[1].report.added == 1


class _CountingHook:
    """A derived layer that counts the files it was given (a real IndexHook)."""

    def __init__(self, fail: bool = False) -> None:
        self.files = 0
        self.fail = fail

    def apply(self, writer: object, tree: object, changed: list[object], removed: object) -> None:
        self.files += len(changed)
        if self.fail:
            raise BuildError("the layer broke")


def test_adding_an_index_layer_rebuilds_cached_trees(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    c0 = repo.commit({"a.py": b"a", "b.py": b"b"})
    plain = list(
        ContentsUniverse({REPO: repo.git_dir}, hooks=[]).build(tmp_path / "e.db", [(REPO, c0)])
    )
    hook = _CountingHook()
    layered = ContentsUniverse({REPO: repo.git_dir}, hooks=[hook])  # type: ignore[list-item]
    first = list(layered.build(tmp_path / "e.db", [(REPO, c0)]))
    again = list(layered.build(tmp_path / "e.db", [(REPO, c0)]))
    assert plain[0].db_path != first[0].db_path
    assert first[0].report is not None and hook.files == 2
    assert again[0].report is None and again[0].db_path == first[0].db_path


def test_a_failed_build_leaves_no_file_that_looks_complete(tmp_path: Path) -> None:
    repo = BareRepo(tmp_path)
    c0 = repo.commit({"a.py": b"a"})
    broken = ContentsUniverse({REPO: repo.git_dir}, hooks=[_CountingHook(fail=True)])  # type: ignore[list-item]
    built = list(broken.build(tmp_path / "e.db", [(REPO, c0)]))
    assert not built[0].ok and built[0].error is not None and "the layer broke" in built[0].error
    assert [p.name for p in tmp_path.glob("e.*")] == []


def test_missing_mirror_mapping_is_a_config_error(tmp_path: Path) -> None:
    universe = ContentsUniverse({REPO: tmp_path / "nowhere"}, hooks=[])
    with pytest.raises(ConfigError, match="--repo other/thing="):
        universe.check([("other/thing", "a" * 40)])
    with pytest.raises(ConfigError, match="does not exist"):
        universe.check([(REPO, "a" * 40)])


def test_a_checkout_serves_as_a_mirror_and_a_plain_directory_is_refused(tmp_path: Path) -> None:
    """--repo OWNER/NAME=DIR with DIR a checkout (a clone with a work tree) builds its commits;
    every instance failed with "commit ... not found" while the commits were there. A
    directory that is no git repository is a ConfigError at once, not one error per instance."""
    repo = BareRepo(tmp_path)
    c0 = repo.commit({"a.py": b"def a():\n    return 1\n"})
    checkout = tmp_path / "checkout"
    subprocess.run(
        ["git", "clone", "-q", str(repo.git_dir), str(checkout)], check=True, capture_output=True
    )
    universe = ContentsUniverse({REPO: checkout}, hooks=[])
    [built] = list(universe.build(tmp_path / "eval.db", [(REPO, c0)]))
    assert built.ok, built.error
    assert built.report is not None and built.report.added == 1
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ConfigError, match=r"plain for acme/widgets is not a git repository"):
        ContentsUniverse({REPO: plain}, hooks=[]).check([(REPO, c0)])


def test_a_commit_being_built_by_another_process_is_waited_for_and_reused(
    tmp_path: Path,
) -> None:
    """Two runs sharing one directory: the second waits on the first's build lock and takes
    the finished file instead of building the same commit into the same ``.partial``."""
    import shutil
    import threading

    from treeseek.eval.contents import _build_lock

    repo = BareRepo(tmp_path)
    c0, c1, *_ = _history(repo)
    universe = ContentsUniverse({REPO: repo.git_dir}, hooks=[])
    db_path = tmp_path / "runs" / "eval.db"
    db_path.parent.mkdir()
    (built_c0,) = universe.build(db_path, [(REPO, c0)])
    assert built_c0.db_path is not None
    target = universe.file_for(db_path, (REPO, c1))

    results: list[object] = []
    with _build_lock(target):  # "another process" is building c1
        worker = threading.Thread(
            target=lambda: results.extend(universe.build(db_path, [(REPO, c1)]))
        )
        worker.start()
        worker.join(timeout=0.5)
        assert not results  # blocked on the lock, not building
        shutil.copyfile(built_c0.db_path, target)  # the other process finishes
    worker.join()
    (second,) = results
    assert isinstance(second, type(built_c0))
    assert second.ok and second.report is None and second.db_path == target
    assert not list(db_path.parent.glob("*.partial*"))


def test_layers_name_the_files_an_older_hook_version_built(tmp_path: Path) -> None:
    """``layers`` (``treeseek eval run --layers``) names the per-commit files by the layer
    string they were built with: a universe whose hooks have a newer version uses them as
    built, where without it every tree would be built again under a new name."""
    repo = BareRepo(tmp_path)
    c0, c1, _, _ = _history(repo)
    keys = [(REPO, c0), (REPO, c1)]
    db_path = tmp_path / "runs" / "eval.db"
    db_path.parent.mkdir()
    old = ContentsUniverse({REPO: repo.git_dir}, hooks=[])  # layers "" (no hooks)
    built = list(old.build(db_path, keys))
    assert all(b.ok and b.report is not None for b in built)
    newer = ContentsUniverse({REPO: repo.git_dir}, hooks=[CodeIndexHook()])
    named = ContentsUniverse({REPO: repo.git_dir}, hooks=[CodeIndexHook()], layers="")
    for key, first in zip(keys, built, strict=True):
        assert named.file_for(db_path, key) == first.db_path
        assert newer.file_for(db_path, key) != first.db_path
    reused = list(named.build(db_path, keys))
    assert [b.db_path for b in reused] == [b.db_path for b in built]
    assert all(b.ok and b.report is None for b in reused)  # used as built: no indexing
    assert sorted(p.name for p in db_path.parent.glob("eval.*.db")) == sorted(
        b.db_path.name for b in built if b.db_path is not None
    )


def test_a_built_commit_an_older_parser_made_is_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached commit database is reused as it is, unless a language's parser revision was
    raised since it was built: then it is indexed again, and only its stale files parsed."""
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({}))
    repo = BareRepo(tmp_path)
    c0 = repo.commit({"a.py": b"def f():\n    return 1\n", "b.js": b"function g() {}\n"})
    hook = CodeIndexHook(workers=1)
    universe = ContentsUniverse({REPO: repo.git_dir}, hooks=[hook])
    [first] = universe.build(tmp_path / "e.db", [(REPO, c0)])
    [cached] = universe.build(tmp_path / "e.db", [(REPO, c0)])
    assert first.report is not None and cached.report is None and hook.stats.reparsed == 0
    monkeypatch.setattr(revisions, "PARSER_REVISIONS", MappingProxyType({"python": 1}))
    [again] = universe.build(tmp_path / "e.db", [(REPO, c0)])
    assert again.report is not None and again.db_path == first.db_path
    assert hook.stats.reparsed == 1  # a.py; b.js kept
    [cached] = universe.build(tmp_path / "e.db", [(REPO, c0)])
    assert cached.report is None
