"""A tree's results depend only on that tree and the question (issue 9), on both backends.

Two trees indexed into one database must rank and score exactly as each does in a database
holding it alone: every statistic (document counts, document frequencies, average lengths)
is the tree's own, and no cache is shared between databases. Every test runs on SQLite files
and on PostgreSQL databases (one schema each, on the session's server).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import treeseek
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import SearchContext
from treeseek.search.flat.flat import TREE_FILES, FlatConfig, FlatRetriever

#: shared by both trees byte for byte: one content (and one set of code rows) in a database
#: holding both, so per-tree statistics must count it in each tree
COMPAT = '''"""Compatibility helpers."""

import sys

is_py3 = sys.version_info[0] == 3


def to_native_string(value, encoding="ascii"):
    """Return a native string, decoding bytes."""
    if isinstance(value, bytes):
        return value.decode(encoding)
    return value
'''

REQUESTS = {
    "requests/__init__.py": '"""HTTP for humans."""\nfrom .api import get, request\n',
    "requests/compat.py": COMPAT,
    "requests/api.py": (
        "from . import sessions\n\n\n"
        "def request(method, url, **kwargs):\n"
        '    """Send a request and follow redirects."""\n'
        "    with sessions.Session() as session:\n"
        "        return session.request(method=method, url=url, **kwargs)\n\n\n"
        "def get(url, params=None, **kwargs):\n"
        '    return request("get", url, params=params, **kwargs)\n'
    ),
    "requests/sessions.py": (
        "from .models import Request\n\n\n"
        "class SessionRedirectMixin:\n"
        "    def get_redirect_target(self, resp):\n"
        '        """Receives a Response. Returns a redirect URI or None."""\n'
        "        if resp.is_redirect:\n"
        '            return resp.headers["location"]\n'
        "        return None\n\n"
        "    def resolve_redirects(self, resp, req, stream=False):\n"
        '        """Receives a Response. Returns a generator of Responses or Requests."""\n'
        "        url = self.get_redirect_target(resp)\n"
        "        while url:\n"
        "            prepared = req.copy()\n"
        "            resp = self.send(prepared, allow_redirects=False)\n"
        "            url = self.get_redirect_target(resp)\n"
        "            yield resp\n\n\n"
        "class Session(SessionRedirectMixin):\n"
        "    max_redirects = 30\n\n"
        "    def request(self, method, url, allow_redirects=True):\n"
        "        req = Request(method, url)\n"
        "        return self.send(req.prepare(), allow_redirects=allow_redirects)\n"
    ),
    "requests/models.py": (
        "REDIRECT_STATI = (301, 302, 303, 307, 308)\n\n\n"
        "class Request:\n"
        "    def __init__(self, method, url):\n"
        "        self.method, self.url = method, url\n\n"
        "    def prepare(self):\n"
        "        return self\n\n\n"
        "class Response:\n"
        "    @property\n"
        "    def is_redirect(self):\n"
        '        """True if this Response is a well-formed HTTP redirect."""\n'
        '        return "location" in self.headers and self.status_code in REDIRECT_STATI\n'
    ),
    "requests/utils.py": (
        "def requote_uri(uri):\n"
        '    """Re-quote the given URI (after a redirect)."""\n'
        "    return uri\n\n\n"
        "def get_auth_from_url(url):\n"
        '    return ("", "")\n'
    ),
    "tests/test_requests.py": (
        "def test_redirect_history():\n"
        "    r = requests.get(httpbin('redirect/3'))\n"
        "    assert r.status_code == 200\n"
    ),
    "README.md": "# Requests\n\nHTTP for humans: sessions, redirects, cookies.\n",
}

FLASK = {
    "flask/__init__.py": '"""A microframework."""\nfrom .app import Flask\n',
    "flask/compat.py": COMPAT,
    "flask/app.py": (
        "from .sessions import SecureCookieSessionInterface\n"
        "from .helpers import redirect\n\n\n"
        "class Flask:\n"
        "    session_interface = SecureCookieSessionInterface()\n\n"
        "    def route(self, rule, **options):\n"
        '        """Register a view function for a URL rule."""\n'
        "        def decorator(f):\n"
        "            return f\n"
        "        return decorator\n\n"
        "    def make_response(self, rv):\n"
        "        return rv\n"
    ),
    "flask/helpers.py": (
        "def redirect(location, code=302):\n"
        '    """Return a response object that redirects the client to the target location."""\n'
        "    return location, code\n\n\n"
        "def url_for(endpoint, **values):\n"
        '    """Generate a URL to the given endpoint."""\n'
        "    return endpoint\n"
    ),
    "flask/sessions.py": (
        "class SessionInterface:\n"
        "    def open_session(self, app, request):\n"
        "        raise NotImplementedError()\n\n\n"
        "class SecureCookieSessionInterface(SessionInterface):\n"
        "    def open_session(self, app, request):\n"
        '        """Load the session from the signed cookie of the request."""\n'
        "        return {}\n"
    ),
    "tests/test_helpers.py": (
        "def test_redirect():\n    rv = flask.redirect('http://example.com/', 301)\n"
    ),
}

QUESTIONS = [
    "which function handles redirects in requests",
    "Session cookie not saved after redirect\n\nThe session interface loses the cookie when"
    " a view returns redirect(url_for('index')).",
    "to_native_string fails on bytes with a non-ascii encoding",
    "SessionRedirectMixin.resolve_redirects ignores max_redirects",
]

#: every signal on (symbols is off by default): each must be per tree
ALL_SIGNALS = FlatConfig(symbols=True, w_symbols=0.6)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


Location = Callable[[str], Any]


def _open(location: Path | str) -> Database:
    return treeseek.open(location, hooks=[CodeIndexHook(workers=1)])


def _answers(db: Database, tree: str) -> list[Any]:
    """Everything a question returns that could leak another tree's statistics: the ranked
    paths, their fused scores, their evidence (best chunk and its BM25 score, matched
    symbols, the rank of each signal) and the query terms chosen by their IDF."""
    out: list[Any] = []
    for question in QUESTIONS:
        result = db.query(tree, question, strategy="flat", k=50, include_content=False)
        out.append(
            (
                result.trace.params["terms"],
                [(h.path, h.score, h.evidence) for h in result.files],
            )
        )
        ctx = SearchContext(
            store=db.store, tree=db.tree(tree), navigator=LexicalNavigator(), caches=db.caches
        )
        ranking = FlatRetriever(ALL_SIGNALS).rank(ctx, question, 50)
        out.append((ranking.terms, [(h.path, h.score, h.evidence) for h in ranking.hits]))
    return out


def test_two_trees_in_one_database_rank_and_score_as_each_alone(
    tmp_path: Path, db_location: Location
) -> None:
    requests_repo = _write(tmp_path / "requests", REQUESTS)
    flask_repo = _write(tmp_path / "flask", FLASK)
    alone: dict[str, list[Any]] = {}
    for name, repo in (("requests", requests_repo), ("flask", flask_repo)):
        with _open(db_location(name)) as db:
            db.index(repo, name=name)
            alone[name] = _answers(db, name)
    with _open(db_location("both")) as db:
        db.index(requests_repo, name="requests")
        db.index(flask_repo, name="flask")
        for name in ("requests", "flask"):
            assert _answers(db, name) == alone[name], name
        # the shared file is one content with one set of code rows, counted in both trees
        compat = {
            n.content_hash
            for t in ("requests", "flask")
            for n in db.subtree(t)
            if n.path.endswith("compat.py")
        }
        assert len(compat) == 1
    top = alone["requests"][0][1][0]
    assert top[0] == "requests/sessions.py" and top[2].chunk is not None


def test_indexing_another_tree_later_changes_nothing(tmp_path: Path, db_location: Location) -> None:
    """The same database before and after another tree arrives (caches rebuilt or not)."""
    requests_repo = _write(tmp_path / "requests", REQUESTS)
    flask_repo = _write(tmp_path / "flask", FLASK)
    with _open(db_location("grow")) as db:
        db.index(requests_repo, name="requests")
        before = _answers(db, "requests")
        db.index(flask_repo, name="flask")
        assert _answers(db, "requests") == before
        db.caches.clear()
        assert _answers(db, "requests") == before


def test_two_databases_in_one_process_share_no_cache(tmp_path: Path, db_location: Location) -> None:
    """Same tree name, different contents, one process: each database answers from its own
    tree, and closing a database frees what it cached."""
    question = "which function handles redirects"
    with _open(db_location("a")) as a, _open(db_location("b")) as b:
        a.index(_write(tmp_path / "requests", REQUESTS), name="repo")
        b.index(_write(tmp_path / "flask", FLASK), name="repo")
        for _ in range(2):  # the second round answers from each database's caches
            from_a = [h.path for h in a.query("repo", question, strategy="flat").files]
            from_b = [h.path for h in b.query("repo", question, strategy="flat").files]
            assert from_a and all(p.startswith(("requests/", "tests/", "README")) for p in from_a)
            assert from_b and all(p.startswith(("flask/", "tests/")) for p in from_b)
        assert a.caches is not b.caches
        cached = a.caches.peek(TREE_FILES, a.tree("repo"))
        assert cached is not None and a.caches.entries() > 0
        assert b.caches.peek(TREE_FILES, b.tree("repo")) is not cached
        assert cached.chunk_index is not None  # the biggest table a query builds
        ref = weakref.ref(cached.chunk_index)
        del cached
    assert a.caches.entries() == 0 and b.caches.entries() == 0  # closing frees them
    gc.collect()
    assert ref() is None, "a closed database's tree tables are still referenced"


@pytest.mark.parametrize("strategy", ["traverse"])
def test_graph_strategies_keep_their_graphs_per_database(
    tmp_path: Path, db_location: Location, strategy: str
) -> None:
    with _open(db_location("a")) as a, _open(db_location("b")) as b:
        a.index(_write(tmp_path / "requests", REQUESTS), name="repo")
        b.index(_write(tmp_path / "flask", FLASK), name="repo")
        ra = a.query("repo", "resolve redirects", strategy=strategy, include_content=False)
        rb = b.query("repo", "resolve redirects", strategy=strategy, include_content=False)
        assert ra.trace.params["graph_built"] and rb.trace.params["graph_built"]
        assert all(not h.path.startswith("flask/") for h in ra.files)
        assert all(not h.path.startswith("requests/") for h in rb.files)
        again = a.query("repo", "resolve redirects", strategy=strategy, include_content=False)
        assert not again.trace.params["graph_built"]
