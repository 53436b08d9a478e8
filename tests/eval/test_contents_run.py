"""An eval run with contents: trees read from real bare git repositories, one database file
per commit, repositories built in parallel, queried by the flat retriever when it exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bare_repo import BareRepo
from tinybench import instance

from treeseek.eval.contents import ContentsUniverse
from treeseek.eval.datasets import load_instances
from treeseek.eval.records import PER_QUERY_FILE, read_records
from treeseek.eval.runner import RunSettings, run_eval
from treeseek.search.strategy import strategies


def _repos(tmp_path: Path) -> tuple[BareRepo, list[str], BareRepo, list[str]]:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one, two = BareRepo(tmp_path / "one"), BareRepo(tmp_path / "two")
    files = {
        "lib/durations.py": b"def parse_duration(text):\n    return None\n",
        "lib/colors.py": b"def to_rgb(name):\n    return (0, 0, 0)\n",
        "README.md": b"a library\n",
    }
    one_commits = [one.commit(files)]
    one_commits.append(one.commit({"lib/colors.py": b"def to_rgba(name):\n    return 0\n"}))
    two_commits = [two.commit({"pkg/cache.py": b"class FileCache:\n    pass\n", "x.txt": b"x"})]
    return one, one_commits, two, two_commits


@pytest.mark.parametrize("index_jobs", [1, 2])
def test_contents_run_from_bare_mirrors(tmp_path: Path, index_jobs: int) -> None:
    one, one_commits, two, two_commits = _repos(tmp_path)
    rows = [
        instance(
            "one-1", "parse_duration returns None", ["lib/durations.py"], "none", one_commits[0]
        ),
        instance("one-2", "to_rgba of a named color", ["lib/colors.py"], "none", one_commits[1]),
        instance("two-1", "FileCache loses keys", ["pkg/cache.py"], "none", two_commits[0]),
        instance("two-2", "FileCache again", ["pkg/cache.py"], "none", "e" * 40),  # no such commit
    ]
    for row, repo in zip(rows, ["acme/one", "acme/one", "acme/two", "acme/two"], strict=True):
        row["repo"] = repo
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    instances = load_instances(dataset)
    universe = ContentsUniverse(
        {"acme/one": one.git_dir, "acme/two": two.git_dir},
        related=[i.commit_key for i in instances],
    )
    strategy = "flat" if "flat" in strategies() else "block"
    db = tmp_path / "runs" / "eval.db"
    db.parent.mkdir()
    outcome = run_eval(
        instances,
        RunSettings(str(dataset), "contents", strategy=strategy),
        universe,
        db_path=db,
        out_dir=tmp_path / "runs" / "c",
        workers=1,
        index_jobs=index_jobs,
    )
    records = {r.instance_id: r for r in read_records(tmp_path / "runs" / "c" / PER_QUERY_FILE)}
    assert set(records) == {"one-1", "one-2", "two-1", "two-2"}
    assert records["two-2"].error is not None and "not found" in records["two-2"].error
    for name in ("one-1", "one-2", "two-1"):
        assert records[name].error is None, records[name].error
    assert outcome.summary.overall.errors == 1
    # one database file per commit next to the eval database, with opaque names
    files = sorted(p.name for p in db.parent.glob("eval.*.db"))
    assert len(files) == 3 and not any("acme" in name for name in files)
    # a rerun finds every instance done (and builds nothing)
    again = run_eval(
        instances,
        RunSettings(str(dataset), "contents", strategy=strategy),
        universe,
        db_path=db,
        out_dir=tmp_path / "runs" / "c",
        index_jobs=index_jobs,
    )
    assert (again.ran, again.skipped) == (0, 4)
    if strategy == "flat":
        assert records["one-1"].preds[0] == "lib/durations.py"
        assert records["two-1"].preds[0] == "pkg/cache.py"


def test_retry_errors_answers_again_only_the_errored_instances(tmp_path: Path) -> None:
    """An instance that errored (here: its commit was not in the mirror yet, fetched later)
    stays errored on a plain resume, as before; ``retry_errors`` answers it again, and only
    it, leaving one record per instance."""
    one, one_commits, two, two_commits = _repos(tmp_path)
    (tmp_path / "empty").mkdir()
    empty = BareRepo(tmp_path / "empty")  # the mirror before the fetch
    rows = [
        instance(
            "one-1", "parse_duration returns None", ["lib/durations.py"], "none", one_commits[0]
        ),
        instance("two-1", "FileCache loses keys", ["pkg/cache.py"], "none", two_commits[0]),
    ]
    rows[0]["repo"], rows[1]["repo"] = "acme/one", "acme/two"
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    instances = load_instances(dataset)
    strategy = "flat" if "flat" in strategies() else "block"
    settings = RunSettings(str(dataset), "contents", strategy=strategy)
    db = tmp_path / "runs" / "eval.db"
    db.parent.mkdir()
    out = tmp_path / "runs" / "c"
    related = [i.commit_key for i in instances]

    def run(two_dir: Path, retry: bool) -> tuple[int, int, int]:
        universe = ContentsUniverse({"acme/one": one.git_dir, "acme/two": two_dir}, related=related)
        outcome = run_eval(
            instances, settings, universe, db_path=db, out_dir=out, retry_errors=retry
        )
        return outcome.ran, outcome.skipped, outcome.retried

    assert run(empty.git_dir, retry=False) == (2, 0, 0)
    first = {r.instance_id: r for r in read_records(out / PER_QUERY_FILE)}
    assert first["two-1"].error is not None and first["one-1"].error is None
    assert run(two.git_dir, retry=False) == (0, 2, 0)  # a plain resume keeps the error
    assert run(two.git_dir, retry=True) == (1, 1, 1)
    records = read_records(out / PER_QUERY_FILE)
    assert sorted(r.instance_id for r in records) == ["one-1", "two-1"]
    by_id = {r.instance_id: r for r in records}
    assert by_id["two-1"].error is None
    assert by_id["one-1"].to_json() == first["one-1"].to_json()  # kept as it was
    assert run(two.git_dir, retry=True) == (0, 2, 0)  # nothing errored: nothing to do
