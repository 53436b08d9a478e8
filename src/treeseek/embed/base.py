"""The Embedder seam: texts in, L2-normalized float32 vectors out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class Embedder(ABC):
    """Embeds texts with a model that ships in an installed package (never downloaded)."""

    #: identifies the model; stored next to vectors so a model change invalidates them
    name: str = "embedder"
    dim: int = 0

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return an array of shape (len(texts), dim), each row L2-normalized."""
