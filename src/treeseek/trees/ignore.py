"""Gitignore rules, scoped per directory, decided as git decides them.

An :class:`IgnoreStack` holds the ignore files that apply at one directory, outermost first.
A path is decided by the innermost file with a matching pattern; within one file the last
matching pattern wins, so ``!negations`` work as in git. Excluded directories are not walked
at all, which gives git's rule that a file cannot be re-included when its parent is excluded.

A pattern matches a path itself, never the paths below it, as git's ``dir.c`` applies it
(the walk asks for every directory on the way, so what is below an excluded directory is
never asked about): a pattern without a slash matches a file or directory name at any depth;
one with a slash matches the path relative to its file's directory (a leading ``/`` only
anchors); a trailing ``/`` matches directories only; ``*``, ``?`` and ``[...]`` never match a
``/``; ``**/`` matches any leading directories, ``/**/`` zero or more directories, a trailing
``/**`` everything inside; any other ``**`` is a ``*``. So ``*`` / ``!*/`` / ``!*.py`` keeps
the Python files at every depth, and in ``a/`` / ``!sub/`` the directory ``sub/a`` stays
excluded (pathspec's gitignore implementation, used before, matches a directory pattern
against every path below it: the first kept no directory, the second re-included
``sub/a``; ``tests/trees/test_ignore_git.py`` compares with git itself).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from treeseek.trees.source import SourceWarnings

GITIGNORE = ".gitignore"
TREESEEKIGNORE = ".treeseekignore"

#: POSIX bracket classes of git's wildmatch, as Python character-set members
_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """One pattern line: ``regex`` matches a whole path relative to its file's directory."""

    text: str
    regex: re.Pattern[str]
    exclude: bool  # False: a ``!`` negation (re-includes)
    dir_only: bool  # a trailing ``/``: matches directories only


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The patterns of one ignore file, relative to the directory ``base`` ("" = the root)."""

    base: str
    rules: tuple[IgnoreRule, ...]
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
        """Whether ``path`` (repo-relative, no trailing ``/``) is excluded by these files."""
        for file in reversed(self.files):
            if file.base:
                if not path.startswith(file.base + "/"):
                    continue
                relative = path[len(file.base) + 1 :]
            else:
                relative = path
            if file.any_pattern is not None and file.any_pattern.fullmatch(relative) is None:
                continue  # no pattern matches: this file does not decide
            for rule in reversed(file.rules):
                if (is_dir or not rule.dir_only) and rule.regex.fullmatch(relative):
                    return rule.exclude
        return False


def _bracket(pattern: str, start: int) -> tuple[str, int] | None:
    """The character set of the ``[...]`` at ``pattern[start]`` as a regex (never matching
    ``/``) and the index after it; None when it does not close or names an unknown class
    (git's wildmatch then matches nothing)."""
    i = start + 1
    negated = i < len(pattern) and pattern[i] in "!^"
    i += negated
    members: list[str] = []
    first = True
    while i < len(pattern):
        ch = pattern[i]
        if ch == "]" and not first:
            body = "".join(members)
            regex = f"[^/{body}]" if negated else f"(?!/)[{body}]"
            return regex, i + 1
        first = False
        if ch == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            if end < 0:
                return None
            name = pattern[i + 2 : end]
            if name not in _CLASSES:
                return None
            members.append(_CLASSES[name])
            i = end + 2
            continue
        if ch == "\\" and i + 1 < len(pattern):
            i += 1
            ch = pattern[i]
        low = ch
        i += 1
        if i + 1 < len(pattern) and pattern[i] == "-" and pattern[i + 1] != "]":
            high = pattern[i + 1]
            i += 2
            if high == "\\" and i < len(pattern):
                high = pattern[i]
                i += 1
            # git's wildmatch matches a range's first character on its own, so a backwards
            # range matches just that one
            high = max(high, low)
            members.append(f"{re.escape(low)}-{re.escape(high)}")
        else:
            members.append(re.escape(low))
    return None


def _segment(segment: str) -> str | None:
    """The regex of one path segment's glob (``*``, ``?``, ``[...]``, ``\\`` escapes)."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            found = _bracket(segment, i)
            if found is None:
                return None
            regex, i = found
            out.append(regex)
            continue
        elif ch == "\\":
            i += 1
            if i == len(segment):
                return None  # a trailing backslash: git's wildmatch matches nothing
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _trim(line: str) -> str:
    """``line`` without its trailing spaces, except one escaped by a backslash (as git)."""
    end = len(line)
    while end > 0 and line[end - 1] == " ":
        backslashes = len(line[: end - 1]) - len(line[: end - 1].rstrip("\\"))
        if backslashes % 2:
            break
        end -= 1
    return line[:end]


def parse_rule(line: str) -> IgnoreRule | None:
    """One ignore-file line as a rule; None for blanks, comments and patterns that can match
    nothing."""
    text = _trim(line.rstrip("\r"))
    if not text or text.startswith("#"):
        return None
    exclude = not text.startswith("!")
    pattern = text if exclude else text[1:]
    dir_only = pattern.endswith("/")
    if dir_only:
        pattern = pattern[:-1]
    if not pattern:
        return None
    if "/" not in pattern:  # a name, at any depth
        glob = _segment(pattern.replace("**", "*"))
        if glob is None:
            return None
        return IgnoreRule(text, re.compile(r"(?:.*/)?" + glob, re.S), exclude, dir_only)
    segments: list[str] = []
    for segment in pattern.removeprefix("/").split("/"):
        if not (segment == "**" and segments and segments[-1] == "**"):
            segments.append(segment)  # `**/**` is `**` (and no stack of `(?:.*/)?` to try)
    out: list[str] = []
    slash = ""
    for i, segment in enumerate(segments):
        if segment == "**":
            if i == len(segments) - 1:
                out.append(slash + ".*")  # a trailing /**: everything inside
            else:
                out.append(slash + "(?:.*/)?")  # leading **/ or inner /**/: any directories
                slash = ""
            continue
        glob = _segment(segment.replace("**", "*"))
        if glob is None:
            return None
        out.append(slash + glob)
        slash = "/"
    return IgnoreRule(text, re.compile("".join(out), re.S), exclude, dir_only)


def parse_ignore_lines(lines: list[str], base: str, origin: str) -> IgnoreFile | None:
    rules = tuple(rule for rule in map(parse_rule, lines) if rule is not None)
    if not rules:
        return None
    return IgnoreFile(base, rules, origin, _any_pattern(rules))


def _any_pattern(rules: tuple[IgnoreRule, ...]) -> re.Pattern[str] | None:
    """The alternation of the rules' regexes (a path it does not match gets no decision from
    the file), or None if they cannot be joined."""
    try:
        return re.compile("|".join(f"(?:{r.regex.pattern})" for r in rules), re.S)
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
    return parse_ignore_lines(text.split("\n"), base, label or str(file))
