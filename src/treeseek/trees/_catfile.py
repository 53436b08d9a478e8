"""One long-lived ``git cat-file --batch`` process that reads blobs by id.

Starting a git process per file costs a few milliseconds each; a repository has thousands of
files. One batch process answers every read of a builder over a pipe instead. Reads are
serialized by a lock, so the reader can be shared by indexer threads.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from pathlib import Path

from treeseek._closing import Closing
from treeseek.errors import BuildError


class BlobUnreadable(BuildError, OSError):
    """A git object could not be read. An ``OSError`` too, so the indexer keeps the file
    without content (``unreadable``) instead of failing the whole tree, as for a file on
    disk that vanished (a partial clone's missing blob, a pipe that broke)."""


class CatFileBatch(Closing):
    """Reads objects of one git repository through a single ``git cat-file --batch``."""

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        #: how many objects were read (tests use it to prove unchanged files are not re-read)
        self.reads = 0

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                ["git", "--git-dir", str(self._git_dir), "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        return self._process

    def read(self, object_id: str) -> bytes:
        """The raw bytes of one object; :class:`BlobUnreadable` if git cannot give it."""
        with self._lock:
            process = self._ensure_started()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(object_id.encode("ascii") + b"\n")
                process.stdin.flush()
                header = process.stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                self._discard()
                raise BlobUnreadable(f"git cat-file in {self._git_dir} stopped: {exc}") from exc
            parts = header.split()
            if len(parts) != 3:
                text = header.decode("utf-8", "replace").strip() or "no answer"
                if not header:
                    self._discard()
                raise BlobUnreadable(
                    f"git object {object_id} unreadable in {self._git_dir}: {text}"
                )
            size = int(parts[2])
            data = process.stdout.read(size)
            process.stdout.read(1)  # the newline git writes after each object
            if len(data) != size:
                self._discard()
                raise BlobUnreadable(f"git object {object_id} cut short in {self._git_dir}")
            self.reads += 1
            return data

    def _discard(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()

    def close(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
