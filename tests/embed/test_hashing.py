"""HashingEmbedder: deterministic, normalized, similarity follows shared tokens/n-grams."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeseek.embed.hashing import HashingEmbedder


def test_shape_dtype_and_unit_norm() -> None:
    emb = HashingEmbedder(dim=128)
    vecs = emb.embed(["django/db/models/query.py", "QuerySet filter", ""])
    assert vecs.shape == (3, 128) and vecs.dtype == np.float32
    assert np.linalg.norm(vecs[0]) == pytest.approx(1.0, abs=1e-5)
    assert np.linalg.norm(vecs[1]) == pytest.approx(1.0, abs=1e-5)
    assert not vecs[2].any()  # empty text: zero vector
    assert emb.embed([]).shape == (0, 128)


def test_similar_spellings_are_closer_than_unrelated_text() -> None:
    emb = HashingEmbedder()
    a, b, c = emb.embed(["QuerySet", "query_set.py", "templates/admin/base.html"])
    assert float(a @ b) > 0.5
    assert float(a @ b) > float(a @ c) + 0.3
    s1, s2 = emb.embed(["serializers", "serializer"])
    assert float(s1 @ s2) > 0.4  # shared character n-grams


def test_deterministic_across_processes() -> None:
    code = (
        "from treeseek.embed.hashing import HashingEmbedder\n"
        "print(HashingEmbedder(dim=64).embed(['alpha/beta_gamma.py'])[0].round(6).tolist())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1
    here = HashingEmbedder(dim=64).embed(["alpha/beta_gamma.py"])[0].round(6).tolist()
    assert runs.pop().strip() == str(here)


def test_name_identifies_configuration_and_bad_config_is_rejected() -> None:
    assert HashingEmbedder(dim=64).name != HashingEmbedder(dim=128).name
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=4)
    with pytest.raises(ValueError, match="ngram_range"):
        HashingEmbedder(ngram_range=(4, 2))


@given(st.lists(st.text(max_size=30), max_size=5))
def test_rows_are_unit_or_zero(texts: list[str]) -> None:
    vecs = HashingEmbedder(dim=32).embed(texts)
    norms = np.linalg.norm(vecs, axis=1)
    assert np.all((np.abs(norms - 1.0) < 1e-5) | (norms == 0.0))
