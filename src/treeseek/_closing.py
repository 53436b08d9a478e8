"""A base for objects that own a resource and release it with ``close()``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class Closing(ABC):
    """``with obj: ...`` closes ``obj`` on the way out, whatever happened inside."""

    @abstractmethod
    def close(self) -> None:
        """Release the resource; safe to call more than once."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
