"""Local bindings read back from Python source: constructor and factory calls, annotations,
``with ... as``, and what functions return, per scope."""

from __future__ import annotations

import textwrap

from treeseek.code.local_types import Binding, ScopeSpan, local_types

SOURCE = textwrap.dedent(
    """\
    import flask
    app = flask.Flask(__name__)

    class Thing:
        def run(self, x: int):
            bp = flask.Blueprint("a")
            bp = other()
            y: "Foo" = make()
            with Session() as s:
                pass
            data = [1, 2]
            return bp

    def factory():
        return build(1)
    """
).encode()
SCOPES = [ScopeSpan("Thing", 4, 12), ScopeSpan("Thing.run", 5, 12), ScopeSpan("factory", 14, 15)]


def test_bindings_per_scope() -> None:
    found = local_types(SOURCE, SCOPES)
    assert found.binding("", "app") == Binding("flask.Flask", call=True)
    assert found.binding("Thing.run", "bp") == Binding("flask.Blueprint", call=True)  # first
    assert found.binding("Thing.run", "y") == Binding("Foo", call=False)
    assert found.binding("Thing.run", "s") == Binding("Session", call=True)
    assert found.binding("Thing.run", "data") is None  # not a call: nothing known
    assert found.binding("", "bp") is None  # a function's locals stay in it


def test_what_functions_return() -> None:
    found = local_types(SOURCE, SCOPES)
    assert found.returned("Thing.run") == Binding("flask.Blueprint", call=True)
    assert found.returned("factory") == Binding("build", call=True)
    assert found.returned("Thing") is None
