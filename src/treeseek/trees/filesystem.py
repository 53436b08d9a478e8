"""The filesystem builder: the files of a directory on disk, minus what is ignored.

Two ways to decide what is ignored, with the same result on ordinary repositories:

- **git checkout** (``git`` is installed and the directory is inside a work tree): ask git,
  ``git ls-files -z --cached --others --exclude-standard``, which applies every rule git applies
  (nested ``.gitignore`` files, negations, ``.git/info/exclude``, ``core.excludesFile``) and lists
  tracked files even when a pattern matches them. ``.treeseekignore`` files of the listed
  directories (listed by git or not) are then applied on top, scoped to their directory.
  Empty directories are not listed (git has no notion of them).
- **plain directory**: walk with :func:`os.scandir` and apply nested ``.gitignore`` files,
  ``.git/info/exclude`` and ``.treeseekignore`` files per directory, decided as git decides
  them (see :mod:`treeseek.trees.ignore`). Empty directories are listed.

In both, ``.git`` is never entered, and symlinks are handled the same way: a symlink to a
regular file inside the root is kept as a file (its content is the target's); a symlink that
points outside the root, dangles, or loops is skipped with a warning; a symlink to a directory
is never descended (so symlink loops cannot happen) and is skipped with a warning. Special
files (FIFOs, sockets, devices) are skipped with a warning; unreadable directories are skipped
with a warning; an unreadable file keeps its node without content. Names that are not UTF-8
arrive surrogate-escaped (``os.fsdecode``) and are stored and shown losslessly.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from treeseek.errors import BuildError
from treeseek.trees.ignore import (
    GITIGNORE,
    TREESEEKIGNORE,
    IgnoreStack,
    load_ignore_file,
)
from treeseek.trees.model import NodeType, TreeSource
from treeseek.trees.source import SourceEntry, SourceWarnings, TreeBuilder

GIT_DIR = ".git"


def read_regular_file(path: str) -> bytes:
    """Read a file's bytes, refusing anything that is not a regular file (a FIFO would block)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _reader(path: str) -> Callable[[], bytes]:
    return lambda: read_regular_file(path)


def _signature(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}"


class FilesystemBuilder(TreeBuilder):
    """Entries of a directory on disk (git-aware when it is a checkout)."""

    source = TreeSource.FILESYSTEM

    def __init__(self, root: str | Path, *, use_git: bool | None = None) -> None:
        """``use_git``: None asks git when the directory is a checkout; False always walks."""
        path = Path(root).expanduser()
        if not path.exists():
            raise BuildError(f"{path} does not exist; give the directory to index")
        if not path.is_dir():
            raise BuildError(f"{path} is not a directory; give a directory (or --paths-from)")
        self._root = os.path.realpath(path)
        self.root = self._root
        self._use_git = use_git
        #: root-relative paths never listed (the database's own files when it lives inside)
        self.skip: set[str] = set()
        #: how the last listing was made: "git" or "walk"
        self.mode = ""

    def skip_files(self, paths: Iterable[str | Path]) -> None:
        """Never list these files (absolute paths; those outside the root are ignored)."""
        for path in paths:
            real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
            if real.startswith(self._root + os.sep):
                self.skip.add(real[len(self._root) + 1 :].replace(os.sep, "/"))

    # -- listing -------------------------------------------------------------------------
    def entries(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        listed = self._git_listing(warnings) if self._use_git is not False else None
        if listed is not None:
            self.mode = "git"
            yield from self._git_entries(listed, warnings)
        else:
            self.mode = "walk"
            yield from self._walk(warnings)

    def _git_listing(self, warnings: SourceWarnings) -> list[str] | None:
        """Paths git lists for the root, or None when this is not a usable checkout."""
        git = shutil.which("git")
        if git is None:
            if self._use_git:
                raise BuildError("git is not installed; install it or index without use_git")
            return None
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        probe = subprocess.run(
            [git, "-C", self._root, "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            env=env,
            check=False,
        )
        if probe.returncode != 0 or probe.stdout.strip() != b"true":
            message = probe.stderr.decode("utf-8", "replace").strip()
            if "dubious ownership" in message or "safe.directory" in message:
                warnings.add(
                    f"git refuses {self._root} (dubious ownership); walked the directory"
                    " instead. `git config --global --add safe.directory DIR` makes git trust it"
                )
            if self._use_git:
                raise BuildError(f"{self._root} is not a git checkout: {message}")
            return None
        if self._ignored_by_enclosing_checkout(git, env):
            if self._use_git:
                raise BuildError(f"{self._root} is ignored by the git checkout around it")
            return None
        listing = subprocess.run(
            [git, "-C", self._root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            env=env,
            check=False,
        )
        if listing.returncode != 0:
            message = listing.stderr.decode("utf-8", "replace").strip()
            warnings.add(f"git ls-files failed ({message}); walked the directory instead")
            return None
        return list(dict.fromkeys(os.fsdecode(p) for p in listing.stdout.split(b"\0") if p))

    def _ignored_by_enclosing_checkout(self, git: str, env: dict[str, str]) -> bool:
        """A root inside a checkout but ignored by it (a build or cache directory): git would
        list nothing, so it is walked as a plain directory instead."""
        top = subprocess.run(
            [git, "-C", self._root, "rev-parse", "--show-toplevel"],
            capture_output=True,
            env=env,
            check=False,
        )
        toplevel = os.path.realpath(os.fsdecode(top.stdout.strip()))
        if top.returncode != 0 or toplevel == self._root:
            return False
        relative = os.path.relpath(self._root, toplevel)
        check = subprocess.run(
            [git, "-C", toplevel, "check-ignore", "-q", "--", relative + "/"],
            capture_output=True,
            env=env,
            check=False,
        )
        return check.returncode == 0

    def _git_entries(self, paths: list[str], warnings: SourceWarnings) -> Iterator[SourceEntry]:
        # every directory git lists something in, asked on disk: a .treeseekignore that git
        # ignores (kept out of the repository in .git/info/exclude, say) is not in the
        # listing, and its rules apply all the same, as they do in a plain directory
        directories = {""}
        for path in paths:
            parent = path.rpartition("/")[0]
            while parent not in directories:
                directories.add(parent)
                parent = parent.rpartition("/")[0]
        ignore_files = sorted(
            name
            for d in directories
            if os.path.isfile(os.path.join(self._root, name := _join(d, TREESEEKIGNORE)))
        )
        stacks: dict[str, IgnoreStack] = {}
        loaded = {
            p.rpartition("/")[0]: load_ignore_file(
                Path(self._root, p), p.rpartition("/")[0], warnings, label=p
            )
            for p in ignore_files
        }

        def stack_for(directory: str) -> IgnoreStack:
            if directory in stacks:
                return stacks[directory]
            parent = IgnoreStack() if directory == "" else stack_for(directory.rpartition("/")[0])
            stacks[directory] = parent.push(loaded.get(directory))
            return stacks[directory]

        def excluded(path: str, is_dir: bool) -> bool:
            parent = path.rpartition("/")[0]
            return stack_for(parent).ignored(path, is_dir)

        decided_dirs: dict[str, bool] = {}

        def dir_excluded(directory: str) -> bool:
            if directory == "":
                return False
            if directory not in decided_dirs:
                parent = directory.rpartition("/")[0]
                decided_dirs[directory] = dir_excluded(parent) or excluded(directory, True)
            return decided_dirs[directory]

        for path in paths:
            if dir_excluded(path.rpartition("/")[0]) or excluded(path, False):
                continue
            entry = self._entry(path, warnings, in_git=True)
            if entry is not None:
                yield entry

    def _entry(self, path: str, warnings: SourceWarnings, *, in_git: bool) -> SourceEntry | None:
        """A file entry for ``path`` (symlinks resolved inside the root), or None to skip."""
        if path in self.skip:
            return None
        full = os.path.join(self._root, path)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return None  # listed by git but deleted from the working tree
        except OSError as exc:
            warnings.add(f"{path}: cannot stat ({exc.strerror}); skipped")
            return None
        if stat.S_ISLNK(st.st_mode):
            target = self._inside_target(path, warnings)
            if target is None:
                return None
            try:
                st = os.stat(full)
            except OSError as exc:
                warnings.add(f"{path}: symlink target cannot be read ({exc.strerror}); skipped")
                return None
            if stat.S_ISDIR(st.st_mode):
                warnings.add(f"{path}: symlink to a directory, not followed")
                return None
        if stat.S_ISDIR(st.st_mode):
            if in_git:  # a submodule or nested repository: listed, not descended
                return SourceEntry(path, NodeType.DIRECTORY)
            return None
        if not stat.S_ISREG(st.st_mode):
            warnings.add(f"{path}: not a regular file (fifo, socket or device); skipped")
            return None
        return SourceEntry(
            path, NodeType.FILE, size=st.st_size, signature=_signature(st), read=_reader(full)
        )

    def _inside_target(self, path: str, warnings: SourceWarnings) -> str | None:
        """The resolved target of a symlink if it stays inside the root, else None (warned)."""
        full = os.path.join(self._root, path)
        try:
            target = os.path.realpath(full, strict=True)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                warnings.add(f"{path}: symlink loop; skipped")
            else:
                warnings.add(f"{path}: dangling symlink; skipped")
            return None
        if target != self._root and not target.startswith(self._root + os.sep):
            warnings.add(f"{path}: symlink points outside the tree root; not followed")
            return None
        return target

    # -- walking -------------------------------------------------------------------------
    def _walk(self, warnings: SourceWarnings) -> Iterator[SourceEntry]:
        git_rules = IgnoreStack().push(
            load_ignore_file(
                Path(self._root, GIT_DIR, "info", "exclude"),
                "",
                warnings,
                label=".git/info/exclude",
            )
        )
        ts_rules = IgnoreStack()
        seen_dirs: set[tuple[int, int]] = set()
        stack: list[tuple[str, IgnoreStack, IgnoreStack]] = [("", git_rules, ts_rules)]
        while stack:
            directory, git_rules, ts_rules = stack.pop()
            full_dir = os.path.join(self._root, directory) if directory else self._root
            try:
                st = os.stat(full_dir)
                key = (st.st_dev, st.st_ino)
                if key in seen_dirs:
                    warnings.add(f"{directory}: directory already visited (loop); skipped")
                    continue
                seen_dirs.add(key)
                with os.scandir(full_dir) as it:
                    children = list(it)
            except OSError as exc:
                if not directory:  # the root: an empty listing would remove every file
                    raise BuildError(
                        f"cannot list {self._root} ({exc.strerror or exc}); nothing was written"
                        " (give this user read and search permission on it)"
                    ) from exc
                warnings.add(f"{directory}: cannot list directory ({exc.strerror}); skipped")
                continue
            names = {c.name for c in children}
            if GITIGNORE in names:
                git_rules = git_rules.push(
                    load_ignore_file(
                        Path(full_dir, GITIGNORE),
                        directory,
                        warnings,
                        label=_join(directory, GITIGNORE),
                    )
                )
            if TREESEEKIGNORE in names:
                ts_rules = ts_rules.push(
                    load_ignore_file(
                        Path(full_dir, TREESEEKIGNORE),
                        directory,
                        warnings,
                        label=_join(directory, TREESEEKIGNORE),
                    )
                )
            if directory:
                yield SourceEntry(directory, NodeType.DIRECTORY)
            for child in children:
                if child.name == GIT_DIR:
                    continue
                path = _join(directory, child.name)
                try:
                    is_dir = child.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if git_rules.ignored(path, is_dir) or ts_rules.ignored(path, is_dir):
                    continue
                if is_dir:
                    stack.append((path, git_rules, ts_rules))
                    continue
                entry = self._entry(path, warnings, in_git=False)
                if entry is not None:
                    yield entry


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name
