"""Scripted navigation for the retriever tests: answers chosen by path, mapped to shown ids."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from treeseek.llm.base import RankRequest
from treeseek.llm.scripted import ScriptedNavigator, ScriptedReply

# -- scripted navigation -------------------------------------------------------------------------
#: a script answers one rank request with (paths to return, done); paths are mapped to the ids
#: the request showed (node ids for Beam, block-local aliases for Block)
Script = Callable[[RankRequest], tuple[list[str], bool]]


def shown_ids(request: RankRequest, paths: Sequence[str]) -> list[str]:
    """The ids ``request`` showed for ``paths`` (paths it did not show are skipped)."""
    by_path = {c.path: c.id for c in request.candidates}
    return [by_path[p] for p in paths if p in by_path]


def candidate_paths(request: RankRequest) -> list[str]:
    return [c.path for c in request.candidates]


def scripted(script: Script) -> ScriptedNavigator:
    """A ScriptedNavigator whose replies come from ``script`` (paths -> shown ids)."""

    def reply(request: RankRequest) -> ScriptedReply:
        paths, done = script(request)
        return ScriptedReply(shown_ids(request, paths), done)

    return ScriptedNavigator(reply)
