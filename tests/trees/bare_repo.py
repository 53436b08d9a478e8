"""A real bare git repository built commit by commit (shared by the git and eval tests)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


class BareRepo:
    """``git init --bare`` plus a scratch work tree that commits go through."""

    def __init__(self, root: Path) -> None:
        self.git_dir = root / "repo.git"
        self.work = root / "work"
        self.work.mkdir()
        self._tick = 1_700_000_000
        self._git("init", "--bare", "-q", str(self.git_dir), bare=False)

    def _git(self, *args: str, bare: bool = True) -> str:
        prefix = ["--git-dir", str(self.git_dir), "--work-tree", str(self.work)] if bare else []
        env = {**_ENV, "GIT_AUTHOR_DATE": f"{self._tick} +0000"}
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
        done = subprocess.run(
            ["git", *prefix, *args], capture_output=True, text=True, env=env, check=True
        )
        return done.stdout.strip()

    def commit(
        self,
        files: Mapping[str, bytes | None],
        message: str = "c",
        symlinks: Mapping[str, str] | None = None,
    ) -> str:
        """Write (or delete, with None) files, commit everything, return the commit id."""
        for rel, data in files.items():
            target = self.work / rel
            if data is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for rel, link in (symlinks or {}).items():
            target = self.work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(link)
        self._tick += 60
        self._git("add", "-A")
        self._git("commit", "-q", "--allow-empty", "-m", message)
        return self._git("rev-parse", "HEAD")

    def commit_with_submodule(self, path: str, target_commit: str) -> str:
        """Commit a gitlink (submodule) entry at ``path`` pointing at ``target_commit``."""
        self._tick += 60
        self._git("update-index", "--add", "--cacheinfo", f"160000,{target_commit},{path}")
        self._git("commit", "-q", "-m", "submodule")
        return self._git("rev-parse", "HEAD")

    def git(self, *args: str) -> str:
        return self._git(*args)
