"""The outline level keeps the best file: cut to its first symbols when the whole outline does
not fit the budget (it was skipped, and smaller outlines of worse files took its place)."""

from __future__ import annotations

from pathlib import Path

import treeseek
from treeseek.context.outline import render_file_outline
from treeseek.context.render import render_context
from treeseek.llm.tokens import default_counter


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    funcs = "\n\n".join(
        f'def register_blueprint_{i}(app, name_{i}):\n    """Register blueprint {i}."""\n'
        f"    return app.blueprints.setdefault(name_{i}, {i})\n"
        for i in range(80)
    )
    (root / "pkg" / "blueprints.py").write_text(funcs + "\n")
    (root / "pkg" / "util.py").write_text("def helper():\n    return 'blueprints'\n")
    return root


def test_the_best_file_is_cut_to_fit_not_dropped(tmp_path: Path) -> None:
    with treeseek.open(tmp_path / "t.db") as db:
        db.index(_tree(tmp_path), name="t")
        result = db.query("t", "where is register_blueprint_3 and blueprints registered")
        assert result.files[0].path == "pkg/blueprints.py"
        whole = db.disclose("t", result, "outline", budget=100_000)
        assert whole.outlines[0].omitted == 0 and len(whole.outlines[0].items) == 80
        budget = whole.outlines[0].tokens // 3
        ctx = db.disclose("t", result, "outline", budget=budget)
        best = ctx.outlines[0]
        assert best.path == "pkg/blueprints.py"
        assert 0 < len(best.items) < 80 and best.omitted == 80 - len(best.items)
        assert best.items == whole.outlines[0].items[: len(best.items)]  # its first symbols
        assert ctx.budget.used <= budget
        assert sum(o.tokens for o in ctx.outlines) == ctx.budget.used
        text = render_context(ctx)
        assert f"... {best.omitted} more symbols (over the budget)" in text
        assert ctx.to_dict()["outlines"][0]["omitted"] == best.omitted
        # the cut is the longest prefix that fits: one more item would not have
        n = len(best.items)
        more = render_file_outline(best.path, best.lines, whole.outlines[0].items[: n + 1], 79 - n)
        assert default_counter().count(more) > budget
        tiny = db.disclose("t", result, "outline", budget=3)  # not even the header fits
        assert tiny.outlines == [] and tiny.budget.used == 0


def test_only_the_best_file_is_cut(tmp_path: Path) -> None:
    # when not even the best file's header fits, a worse file was cut in its place (its
    # outline shown with `omitted` > 0, which the schema keeps for the best file)
    with treeseek.open(tmp_path / "t.db") as db:
        root = _tree(tmp_path)
        (root / "a.py").write_text(
            "\n".join(f"def blueprint_{i}():\n    pass\n" for i in range(30))
        )
        db.index(root, name="t")
        result = db.query("t", "where is register_blueprint_3 and blueprints registered")
        assert [h.path for h in result.files][:1] == ["pkg/blueprints.py"]
        assert "a.py" in [h.path for h in result.files]
        counter = default_counter()

        def head(path: str) -> int:
            whole = db.outline("t", path).files[0]
            return counter.count(render_file_outline(path, whole.lines, (), len(whole.items)))

        best_head, other_head = head("pkg/blueprints.py"), head("a.py")
        assert other_head < best_head
        ctx = db.disclose("t", result, "outline", budget=best_head - 1)
        assert all(o.omitted == 0 for o in ctx.outlines)
        assert "a.py" not in [o.path for o in ctx.outlines]
