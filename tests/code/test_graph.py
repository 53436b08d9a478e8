"""CodeGraph traversal API over a resolved Python tree."""

from __future__ import annotations

import textwrap

from treeseek.code.graph import CodeGraph
from treeseek.code.parse import index_file

FILES = {
    "pkg/__init__.py": "from .base import Base\n",
    "pkg/base.py": """\
        class Base:
            def run(self):
                return self.step()

            def step(self):
                return 1
        """,
    "pkg/impl.py": """\
        from .base import Base

        class Impl(Base):
            def step(self):
                return helper()

        class Deeper(Impl):
            pass

        def helper():
            return Impl().run()
        """,
    "pkg/cycle_a.py": "from . import cycle_b\n\ndef a():\n    return cycle_b.b()\n",
    "pkg/cycle_b.py": "from . import cycle_a\n\ndef b():\n    return cycle_a.a()\n",
    "main.py": "from pkg.impl import helper\n\nhelper()\n",
}


def _graph() -> CodeGraph:
    return CodeGraph.build(
        {p: index_file(p, textwrap.dedent(t).encode()) for p, t in FILES.items()}
    )


def test_callers_callees_and_module_level_callers() -> None:
    g = _graph()
    assert g.callees("pkg/impl.py::Impl.step") == ["pkg/impl.py::helper"]
    assert g.callees("pkg/impl.py::helper") == ["pkg/base.py::Base.run", "pkg/impl.py::Impl"]
    assert g.callers("pkg/impl.py::helper") == ["main.py", "pkg/impl.py::Impl.step"]
    assert g.callers("pkg/base.py::Base.step") == ["pkg/base.py::Base.run"]


def test_importers_imports_by_path_and_module() -> None:
    g = _graph()
    assert g.importers("pkg/base.py") == ["pkg/__init__.py", "pkg/impl.py"]
    assert g.importers("pkg.base") == g.importers("pkg/base.py")
    assert g.imports("pkg/impl.py") == ["pkg/base.py"]
    assert g.imports("main.py") == ["pkg/impl.py"]
    assert g.importers("pkg/cycle_a.py") == ["pkg/cycle_b.py"]


def test_class_hierarchy() -> None:
    g = _graph()
    base = g.node("pkg.base.Base")
    assert base == "pkg/base.py::Base"
    assert g.subclasses(base) == ["pkg/impl.py::Impl"]
    assert g.subclasses(base, transitive=True) == ["pkg/impl.py::Deeper", "pkg/impl.py::Impl"]
    assert g.superclasses("pkg/impl.py::Deeper", transitive=True) == [
        "pkg/base.py::Base",
        "pkg/impl.py::Impl",
    ]
    assert g.members("pkg/base.py") == ["pkg/base.py::Base"]
    assert g.members("pkg/base.py::Base") == ["pkg/base.py::Base.run", "pkg/base.py::Base.step"]


def test_neighbours_by_hops_kinds_and_direction_terminate_on_cycles() -> None:
    g = _graph()
    one = g.neighbours("pkg/cycle_a.py::a", hops=1, kinds=("calls",))
    assert one == {"pkg/cycle_b.py::b": 1}
    many = g.neighbours("pkg/cycle_a.py::a", hops=50, kinds=("calls",))
    assert many == {"pkg/cycle_b.py::b": 1}  # the cycle back to a is not revisited
    near = g.neighbours("pkg/impl.py::helper", hops=2)
    assert near["pkg/impl.py"] == 1  # contains
    assert near["main.py"] == 1  # called from module level
    assert near["pkg/base.py::Base.run"] == 1
    assert near["pkg/base.py"] == 2
    assert "pkg/impl.py::helper" not in near
    out_only = g.neighbours("main.py", hops=1, direction="out")
    assert out_only == {"pkg/impl.py": 1, "pkg/impl.py::helper": 1}
    assert len(g.neighbours("pkg/impl.py", hops=10, limit=3)) <= 3
