"""The MCP server for coding agents: ``treeseek mcp`` (stdio) or ``treeseek mcp --http``
(streamable HTTP), with the official ``mcp`` SDK (the optional ``mcp`` extra).

:func:`build_server` (in :mod:`treeseek.mcp.server`) registers the tools over a
:class:`~treeseek.service.Service`; :func:`run` serves them.
"""

from treeseek.mcp.run import run

__all__ = ["run"]
