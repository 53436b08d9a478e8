"""Gitignore-style rules, scoped per directory, through pathspec's gitignore implementation.

An :class:`IgnoreStack` holds the ignore files that apply at one directory, outermost first.
A path is decided by the innermost file with a matching pattern; within one file the last
matching pattern wins, so ``!negations`` work as in git. Directories are matched with a trailing
``/`` so that ``build/`` patterns only hit directories. Excluded directories are not walked at
all, which gives git's rule that a file cannot be re-included when its parent is excluded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from treeseek.trees.source import SourceWarnings

GITIGNORE = ".gitignore"
TREESEEKIGNORE = ".treeseekignore"


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The patterns of one ignore file, relative to the directory ``base`` ("" = the root)."""

    base: str
    spec: GitIgnoreSpec
    origin: str  # where the patterns came from, for messages


@dataclass(frozen=True, slots=True)
class IgnoreStack:
    files: tuple[IgnoreFile, ...] = ()

    def push(self, file: IgnoreFile | None) -> IgnoreStack:
        return self if file is None else IgnoreStack((*self.files, file))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (repo-relative) is excluded by these files."""
        for file in reversed(self.files):
            if file.base:
                if not path.startswith(file.base + "/"):
                    continue
                relative = path[len(file.base) + 1 :]
            else:
                relative = path
            result = file.spec.check_file(relative + "/" if is_dir else relative)
            if result.include is not None:
                return bool(result.include)
        return False


def parse_ignore_lines(lines: list[str], base: str, origin: str) -> IgnoreFile | None:
    patterns = [line for line in lines if line.strip() and not line.startswith("#")]
    if not patterns:
        return None
    return IgnoreFile(base, GitIgnoreSpec.from_lines(lines), origin)


def load_ignore_file(
    file: Path, base: str, warnings: SourceWarnings, *, label: str | None = None
) -> IgnoreFile | None:
    """Parse one ignore file; missing or empty gives None, unreadable gives a warning."""
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.add(
            f"{label or file}: cannot read ignore file ({exc.strerror}); its rules are not applied"
        )
        return None
    text = raw.decode("utf-8", "surrogateescape")
    return parse_ignore_lines(text.splitlines(), base, label or str(file))
