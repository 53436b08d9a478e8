"""The LLM layer: navigators that answer `rank` calls (see docs/llm.md).

- :mod:`treeseek.llm.base`: the Navigator seam and its data types;
- :mod:`treeseek.llm.select`: ``navigator_from_spec`` (``--llm``, env vars, config);
- adapters :mod:`treeseek.llm.anthropic`, :mod:`treeseek.llm.openai` (official SDKs) over the
  shared plumbing in ``_protocol`` (retries, validation) and ``_limits`` (concurrency);
- :mod:`treeseek.llm.lexical` (no LLM), :mod:`treeseek.llm.scripted` and
  :mod:`treeseek.llm.replay` (tests, replays);
- :mod:`treeseek.llm.tokens` (offline token counts), :mod:`treeseek.llm.prices` (cost).

The SDKs are imported only by their adapters, so importing this package stays cheap.
"""

from treeseek.llm._limits import set_concurrency_limit
from treeseek.llm._protocol import RetryPolicy

__all__ = ["RetryPolicy", "set_concurrency_limit"]
