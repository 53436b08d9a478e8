"""Ignore rules decide as git does: the walk of a plain directory (``.gitignore``) and the
``.treeseekignore`` files of a checkout list exactly what ``git ls-files --others
--exclude-standard`` lists for the same rules in a scratch repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeseek.trees.filesystem import FilesystemBuilder
from treeseek.trees.ignore import GITIGNORE, TREESEEKIGNORE, parse_rule
from treeseek.trees.model import NodeType
from treeseek.trees.source import SourceWarnings

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

_GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _ours(root: Path, *, use_git: bool) -> list[str]:
    builder = FilesystemBuilder(root, use_git=use_git)
    entries = builder.entries(SourceWarnings())
    files = sorted(e.path for e in entries if e.type is NodeType.FILE)
    assert builder.mode == ("git" if use_git else "walk")
    return files


def _gits(root: Path) -> list[str]:
    """What git lists as not ignored in a repository with nothing tracked."""
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=_GIT_ENV)
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
        env=_GIT_ENV,
    ).stdout
    return sorted(os.fsdecode(p) for p in out.split(b"\0") if p)


def _compare(tmp_path: Path, files: dict[str, str], ignore_files: dict[str, str]) -> None:
    """The walk with ``ignore_files`` as .gitignore files, and a checkout with them as
    .treeseekignore files, both against git with them as .gitignore files."""
    plain, checkout, reference = tmp_path / "plain", tmp_path / "checkout", tmp_path / "git"
    for root, name in ((plain, GITIGNORE), (checkout, TREESEEKIGNORE), (reference, GITIGNORE)):
        _write(root, files)
        _write(root, {f"{d}/{name}".lstrip("/"): text for d, text in ignore_files.items()})
    subprocess.run(["git", "init", "-q", str(checkout)], check=True, env=_GIT_ENV)
    expected = _gits(reference)
    assert _ours(plain, use_git=False) == expected
    # the .treeseekignore files themselves are listed in the checkout (git does not ignore them)
    listed = [p for p in _ours(checkout, use_git=True) if not p.endswith(TREESEEKIGNORE)]
    assert listed == [p for p in expected if not p.endswith(GITIGNORE)]


FILES = {
    "top.py": "",
    "top.txt": "",
    "a/y.py": "",
    "a/x.txt": "",
    "a/b/z.py": "",
    "a/b/z.txt": "",
    "sub/a/a.txt": "",
    "sub/keep.py": "",
    "deep/x.py": "",
    "deep/more/x.py": "",
    "deep/more/y.txt": "",
    "build/out.txt": "",
    "src/build/gen.py": "",
}


@pytest.mark.parametrize(
    "rules",
    [
        {"": "*\n!*/\n!*.py\n"},  # keep only Python files, at any depth
        {"": "a/\n!sub/\n"},  # sub/a is a directory named a: excluded, !sub/ is not about it
        {"": "deep/**\n!deep/x.py\n"},  # deep/** matches what is inside deep, not deep
        {"": "/build\n*.txt\n!a/*.txt\n"},
        {"": "**/build/\n", "a": "!*.txt\nb/\n"},
        {"": "*.py\n", "a": "!y.py\n", "a/b": "!*.py\n*.txt\n"},
        {"": "a/**/z.*\n!a/b/z.py\n"},
        {"": "[a-c]/\n[!s]*.txt\n"},
        {"": "**/**/z.py\n/**/**/more/\n", "a": "**/**\n!**/**/\n!*.py\n"},
    ],
)
def test_rules_decide_as_git(tmp_path: Path, rules: dict[str, str]) -> None:
    _compare(tmp_path, FILES, rules)


_NAMES = ["a", "b", "build", "keep.py", "x.py", "x.log", "doc", "Foo", "sub", "a.txt", "#h"]
_PATTERNS = [
    "*.py", "!keep.py", "build/", "/build", "**/Foo", "a/**/b", "doc/*", "!doc/keep.py",
    "*.log", "!*.log", "sub/", "/a", "a", "Foo/", "*", "!*/", "!sub/", "doc/**", "!doc/x.py",
    "**/x.py", "b/", "/sub/x.py", "x.*", "\\#h", "*.txt", "!a.txt", "a/", "**", "!**/",
    "sub/**/keep.py", "!/a", "[ab]", "?", "[!a]*", "*/", "!a/*/", "a/*", "b/**/",
]  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4).map("/".join),
        min_size=1,
        max_size=20,
    ),
    st.dictionaries(
        st.sampled_from(["", "a", "sub", "a/b", "doc"]),
        st.lists(st.sampled_from(_PATTERNS), min_size=1, max_size=5).map("\n".join),
        min_size=1,
        max_size=3,
    ),
)
def test_random_rules_decide_as_git(
    tmp_path_factory: pytest.TempPathFactory, paths: list[str], rules: dict[str, str]
) -> None:
    files: dict[str, str] = {}
    for path in sorted(paths, key=len):  # a file's path never passes through another file
        parts = path.split("/")
        if any("/".join(parts[:i]) in files for i in range(1, len(parts))):
            continue
        if not any(p.startswith(path + "/") for p in files):
            files[path] = ""
    dirs = {p.rpartition("/")[0] for p in files}
    ignore_files = {d: t + "\n" for d, t in rules.items() if d == "" or d in dirs}
    if any(d + "/.gitignore" in files or (d and d in files) for d in ignore_files):
        return
    _compare(tmp_path_factory.mktemp("rules"), files, ignore_files)


def test_a_treeseekignore_that_git_ignores_still_applies(tmp_path: Path) -> None:
    """A .treeseekignore kept out of the repository (in .git/info/exclude, a global
    excludes file or a .gitignore) is not in git's listing: its rules applied in a plain
    directory and were skipped in a checkout."""
    _write(tmp_path, {"main.py": "", "gen/big.py": "", "pkg/a.py": "", "pkg/out/b.py": ""})
    _write(tmp_path, {TREESEEKIGNORE: "gen/\n", f"pkg/{TREESEEKIGNORE}": "out/\n"})
    walked = _ours(tmp_path, use_git=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=_GIT_ENV)
    _write(tmp_path, {".git/info/exclude": f"{TREESEEKIGNORE}\n"})
    listed = _ours(tmp_path, use_git=True)
    assert walked == [TREESEEKIGNORE, "main.py", "pkg/.treeseekignore", "pkg/a.py"]
    assert listed == ["main.py", "pkg/a.py"]  # the rules apply; git leaves the files out


def test_repeated_double_stars_are_one() -> None:
    """`**/**` is `**`: each one more made a `(?:.*/)?` to try at every slash (a path 60
    directories deep took 2 s against `**/**/**/**/**/**/x`, for each path of the tree)."""
    for many, one in (("**/**/**/x", "**/x"), ("a/**/**/b", "a/**/b"), ("/**/**", "/**")):
        ruled, single = parse_rule(many), parse_rule(one)
        assert ruled is not None and single is not None
        assert ruled.regex.pattern == single.regex.pattern
