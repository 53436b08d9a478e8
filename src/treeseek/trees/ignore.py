"""Gitignore-style rules, scoped per directory, through pathspec's gitignore implementation.

An :class:`IgnoreStack` holds the ignore files that apply at one directory, outermost first.
A path is decided by the innermost file with a matching pattern; within one file the last
matching pattern wins, so ``!negations`` work as in git. Directories are matched with a trailing
``/`` so that ``build/`` patterns only hit directories. Excluded directories are not walked at
all, which gives git's rule that a file cannot be re-included when its parent is excluded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec
from pathspec.pattern import RegexPattern

from treeseek.trees.source import SourceWarnings

GITIGNORE = ".gitignore"
TREESEEKIGNORE = ".treeseekignore"


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The patterns of one ignore file, relative to the directory ``base`` ("" = the root)."""

    base: str
    spec: GitIgnoreSpec
    origin: str  # where the patterns came from, for messages
    #: one regex matching wherever any pattern matches (None: could not be combined); most
    #: paths match no pattern, and one search is ~10x cheaper than asking every pattern
    any_pattern: re.Pattern[str] | None = None


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
            if is_dir:
                relative += "/"
            if file.any_pattern is not None and file.any_pattern.search(relative) is None:
                continue  # no pattern matches: this file does not decide
            result = file.spec.check_file(relative)
            if result.include is not None:
                return bool(result.include)
        return False


def parse_ignore_lines(lines: list[str], base: str, origin: str) -> IgnoreFile | None:
    patterns = [line for line in lines if line.strip() and not line.startswith("#")]
    if not patterns:
        return None
    spec = GitIgnoreSpec.from_lines(lines)
    return IgnoreFile(base, spec, origin, _any_pattern(spec))


def _any_pattern(spec: GitIgnoreSpec) -> re.Pattern[str] | None:
    """The alternation of the spec's pattern regexes (pathspec searches each one; a path no
    alternative matches gets no decision from the spec), or None if they cannot be joined."""
    parts: list[str] = []
    flags: set[int] = set()
    for pattern in spec.patterns:
        if pattern.include is None:
            continue  # blank lines and comments never match
        regex = getattr(pattern, "regex", None)
        if not isinstance(pattern, RegexPattern) or not isinstance(regex, re.Pattern):
            return None
        if not isinstance(regex.pattern, str):
            return None
        # group names would clash across alternatives; they do not change what matches
        parts.append("(?:" + re.sub(r"\(\?P<\w+>", "(?:", regex.pattern) + ")")
        flags.add(regex.flags)
    if len(flags) > 1:
        return None
    try:
        return re.compile("|".join(parts) or "(?!)", flags.pop() if flags else 0)
    except re.error:
        return None


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
