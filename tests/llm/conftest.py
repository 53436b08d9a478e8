"""Fixtures of the LLM tests: a loopback provider server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_wire import LoopbackServer


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer().start()
    yield srv
    srv.stop()
