"""The flat ranking of document sections: what its names (labels, path words) add."""

from __future__ import annotations

from pathlib import Path

from treeseek.database import Database

SIGNALS = """\
=======
Signals
=======

Django includes a signal dispatcher which helps decoupled applications get notified.

{label}
Listening to signals
====================

To receive a signal, register a receiver function with the dispatcher.

Preventing duplicate signals
============================

In some circumstances the code connecting receivers to signals may run multiple times.
"""

DISPATCH = """\
=================
Dispatcher events
=================

Receiver functions are called when the dispatcher sends an event to each receiver.
The receiver functions get the sender and keyword arguments.
"""

QUESTION = "connecting receiver functions to the dispatcher"
LISTENING = "topics/signals.rst/1-signals/1-listening-to-signals"


def _ranked(database: Database, root: Path, name: str, question: str) -> list[str]:
    database.index(root, name=name, documents=True)
    return [f.path for f in database.query(name, question, strategy="flat").files]


def _signals(tmp_path: Path, label: str) -> Path:
    root = tmp_path / label.strip(".: _") / "docs"
    (root / "topics").mkdir(parents=True)
    (root / "ref").mkdir()
    (root / "topics" / "signals.rst").write_text(SIGNALS.format(label=label))
    (root / "ref" / "dispatch.rst").write_text(DISPATCH)
    return root


def test_a_sections_reference_label_words_rank_it(database: Database, tmp_path: Path) -> None:
    # the label restates what authors link the section as; the same text without it is
    # outranked by its chapter
    labelled = _signals(tmp_path, ".. _connecting-receiver-functions:\n")
    assert _ranked(database, labelled, "labelled", QUESTION)[0] == LISTENING
    bare = _signals(tmp_path, "\n")
    assert _ranked(database, bare, "bare", QUESTION)[0] != LISTENING


def test_a_documents_path_words_rank_its_top_section(database: Database, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "howto").mkdir()
    text = "Gunicorn workers serve requests behind a reverse proxy.\n"
    (root / "guide" / "alpha.md").write_text("# Alpha\n\n" + text)
    (root / "howto" / "gunicorn.md").write_text("# Setup\n\n" + text)
    ranked = _ranked(database, root, "docs", "run gunicorn workers to serve requests")
    assert ranked[:2] == ["howto/gunicorn.md/1-setup", "guide/alpha.md/1-alpha"]
