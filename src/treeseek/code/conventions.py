"""What a file is for, by the conventions repositories follow (tests, vendored code).

Used by the code index (tests get no vectors) and by retrieval (tests are penalized or
filtered out): questions are about the code under test far more often than about its tests.
"""

from __future__ import annotations

import re

#: "test" (singular) is left out on purpose: it names library packages (django/test/)
_TEST_DIR_NAMES = frozenset({"tests", "testing", "__tests__", "spec", "specs"})
_TEST_FILE = re.compile(r"(^test_.*|.*_tests?\.\w+$|^conftest\.py$|.*\.(test|spec)\.\w+$)")


def is_test_path(path: str) -> bool:
    """Tests by the usual conventions: a ``tests``/``testing`` directory, or a
    ``test_*`` / ``*_test`` / ``*.spec`` / ``conftest.py`` file."""
    parts = path.split("/")
    if any(p in _TEST_DIR_NAMES for p in parts[:-1]):
        return True
    return bool(_TEST_FILE.match(parts[-1]))


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
        "external",
        "externals",
        "node_modules",
        "bower_components",
    }
)
_MINIFIED = re.compile(r".*[.-]min\.(js|mjs|cjs)$")


def is_vendored_path(path: str) -> bool:
    """Code copied from another project: a ``vendor``/``third_party``/``extern``/
    ``node_modules`` directory (and the like), or a minified ``*.min.js`` bundle. Decided by
    the path alone, the same way in every language."""
    parts = path.split("/")
    if any(p.lower() in _VENDORED_DIR_NAMES for p in parts[:-1]):
        return True
    return bool(_MINIFIED.match(parts[-1]))


__all__ = ("is_test_path", "is_vendored_path")
