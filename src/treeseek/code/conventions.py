"""What a file is for, by the conventions repositories follow (tests, vendored code).

Used by the code index (tests get no vectors) and by retrieval (tests are penalized or
filtered out): questions are about the code under test far more often than about its tests.
"""

from __future__ import annotations

import re

#: "test" (singular) is left out on purpose: it names library packages (django/test/)
_TEST_DIR_NAMES = frozenset({"tests", "testing", "__tests__", "spec", "specs"})
_TEST_FILE = re.compile(r"(^test_.*|.*_tests?\.\w+$|^conftest\.py$|.*\.(test|spec)\.\w+$)")


#: JUnit-style test classes (``FooTest.java``, ``FooTests.kt``, ``FooIT.java``)
_TEST_CLASS = re.compile(r".*(Tests?|IT)\.(java|kt|scala|groovy|cs)$")
#: Ruby specs and C/C++ test sources named with a dash (``format-test.cc``)
_TEST_FILE_MORE = re.compile(r"(.*_spec\.rb$|^spec_.*\.rb$|.*-test\.(c|cc|cpp|cxx)$)")


def is_test_path(path: str) -> bool:
    """Tests by the usual conventions of each language: a ``tests``/``testing``/``spec``
    (or ``*_tests``) directory, a top-level ``test`` directory or a ``src/test`` one (Maven,
    Gradle); a ``test_*`` / ``*_test`` / ``*.spec`` / ``*.test`` / ``conftest.py`` /
    ``*_spec.rb`` / ``*-test.cc`` file or a ``*Test.java``-style test class."""
    parts = path.split("/")
    if any(p in _TEST_DIR_NAMES for p in parts[:-1]):
        return True
    for i, p in enumerate(parts[:-1]):
        if p == "test" and (i == 0 or parts[i - 1] == "src"):
            return True
        if p.endswith(("_tests", "-tests")):  # js_tests, integration-tests
            return True
    name = parts[-1]
    return bool(_TEST_FILE.match(name) or _TEST_CLASS.match(name) or _TEST_FILE_MORE.match(name))


#: directories that hold someone else's code copied into the tree (any language)
_VENDORED_DIR_NAMES = frozenset(
    {
        "vendor",
        "vendored",
        "third_party",
        "thirdparty",
        "3rdparty",
        "third-party",
        "extern",
        "cextern",
        "node_modules",
        "bower_components",
    }
)
_MINIFIED = re.compile(r".*[.-]min\.(js|mjs|cjs)$")
#: directories of generated code: minified bundles, gettext catalogs (``LC_MESSAGES``)
_GENERATED_DIR = re.compile(r"^(min|minified)([-_.].*)?$|^LC_MESSAGES$", re.IGNORECASE)
#: a release number in a code file's name (``jquery-3.5.1.js``, ``underscore-1.13.1.js``): a
#: copied library; no language's modules have dots in their names
_VERSIONED = re.compile(r".+[-_]v?\d+(\.\d+)+([-.][a-z]+\d*)?\.\w+$", re.IGNORECASE)


def is_vendored_path(path: str) -> bool:
    """Code copied from another project: a ``vendor``/``third_party``/``extern``/
    ``node_modules`` directory (and the like), a minified ``*.min.js`` bundle, or a release
    number in the file name (``jquery-3.5.1.js``). Decided by the path alone, the same way in
    every language."""
    parts = path.split("/")
    if any(p.lower() in _VENDORED_DIR_NAMES or _GENERATED_DIR.match(p) for p in parts[:-1]):
        return True
    return bool(_MINIFIED.match(parts[-1]) or _VERSIONED.match(parts[-1]))


#: tool configuration written in a programming language (``webpack.config.js``, dotfiles)
_CONFIG_FILE = re.compile(
    r"(^\..+|.+\.(config|conf)\.(js|cjs|mjs|ts|cts|mts)$|^(gruntfile|gulpfile|jakefile)\.(js|ts)$)",
    re.IGNORECASE,
)


def is_config_path(path: str) -> bool:
    """Tool configuration in a code file: a dotfile (``.eslintrc.js``), ``*.config.js`` /
    ``*.config.ts`` / ``*.conf.js`` (webpack, rollup, vite, jest, karma ...), a Gruntfile or
    Gulpfile. Like YAML or
    TOML configuration, it is seldom what a question about behaviour is about."""
    return bool(_CONFIG_FILE.match(path.rsplit("/", 1)[-1]))


#: release notes by name: ``CHANGES.rst``, ``changelog.md``, ``HISTORY.txt``, ``NEWS``,
#: ``release-notes.md`` ...
_RELEASE_FILE = re.compile(
    r"^(changes|changelog|history|news|releases?([-_ ]?notes)?)([-_]?v?\d.*|\..*)?$", re.IGNORECASE
)
#: ... or by directory: ``docs/releases/1.6.txt``, ``changelog/3.2.md``
_RELEASE_DIR_NAMES = frozenset(
    {"releases", "release-notes", "release_notes", "releasenotes", "changes", "changelog", "news"}
)


def is_release_notes_path(path: str) -> bool:
    """Release notes: a file named ``CHANGES``, ``changelog``, ``HISTORY``, ``NEWS``,
    ``releases`` or ``release-notes`` (any suffix, or a version after the name:
    ``changes-2.0.md``), or any file under a ``releases``/``changelog``/``changes``/``news``
    directory. Sections by version that mention a bit of everything: they match most
    questions' words and answer few."""
    parts = path.split("/")
    if any(p.lower() in _RELEASE_DIR_NAMES for p in parts[:-1]):
        return True
    return bool(_RELEASE_FILE.match(parts[-1]))


#: contents that are data, not source or prose: translation catalogs, vector images, tables,
#: source maps, lock files. Their nodes stay in the tree (paths still match); the code index
#: does not parse them, so their text is not chunked into the full-text index, where it would
#: only add noise and size (in a django checkout, .po catalogs are a third of all text).
DATA_SUFFIXES = (
    ".po",
    ".pot",
    ".svg",
    ".csv",
    ".tsv",
    ".min.js",
    ".min.css",
    ".map",
    ".lock",
)


def is_data_file(path: str) -> bool:
    """A data file by its path (:data:`DATA_SUFFIXES`): the code index never parses it."""
    return path.lower().endswith(DATA_SUFFIXES)


def code_content(path: str, content_hash: str | None) -> str | None:
    """The content whose code rows (chunks, symbols, edges, term counts) the file at ``path``
    reads: its content hash, or None for a data file. Code rows are kept per content, and a
    data file's bytes may have been parsed at another path of another tree (``app.min.js``
    in one, the same bytes as ``app.js`` in another): joining a tree's files to their code
    rows through this keeps a tree's results independent of the other trees."""
    return None if content_hash is None or is_data_file(path) else content_hash


__all__ = (
    "DATA_SUFFIXES",
    "code_content",
    "is_config_path",
    "is_data_file",
    "is_release_notes_path",
    "is_test_path",
    "is_vendored_path",
)
