"""Outlines of each of the 10 languages the code index parses: name paths, kinds, line
spans (1-based, inclusive), signatures and first doc lines, from a real indexed tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.context.render import render_outline
from treeseek.database import Database

SOURCES = {
    "F.java": 'package greet;\n\n/** Greets people. */\npublic class Greeter {\n    /** Say hello. */\n    public String greet(String name) {\n        return "hi " + name;\n    }\n}\n',
    "a.py": '"""Module doc."""\nimport os\n\n\nclass Greeter:\n    """Greets people."""\n\n    def greet(self, name: str) -> str:\n        """Say hello."""\n        return "hi " + name\n\n\ndef main():\n    return Greeter().greet("x")\n',
    "b.js": '/** Greets people. */\nclass Greeter {\n  greet(name) { return "hi " + name; }\n}\n\n/** Entry point. */\nfunction main() {\n  return new Greeter().greet("x");\n}\n',
    "c.ts": '/** Greets people. */\nexport class Greeter {\n  greet(name: string): string { return "hi " + name; }\n}\n\n/** Entry point. */\nexport function main(): string {\n  return new Greeter().greet("x");\n}\n',
    "d.go": 'package greet\n\n// Greeter greets people.\ntype Greeter struct {\n\tname string\n}\n\n// Greet says hello.\nfunc (g *Greeter) Greet(name string) string {\n\treturn "hi " + name\n}\n\n// Main is the entry point.\nfunc Main() string {\n\treturn (&Greeter{}).Greet("x")\n}\n',
    "e.rs": '/// Greets people.\npub struct Greeter {\n    name: String,\n}\n\nimpl Greeter {\n    /// Say hello.\n    pub fn greet(&self, name: &str) -> String {\n        format!("hi {}", name)\n    }\n}\n\n/// Entry point.\npub fn main() {\n    let _ = Greeter { name: String::new() }.greet("x");\n}\n',
    "g.c": '#include <stdio.h>\n\n/* Greets people. */\nstruct greeter {\n    int n;\n};\n\n/* Say hello. */\nint greet(const char *name) {\n    return printf("hi %s", name);\n}\n',
    "h.cpp": '#include <string>\n\n// Greets people.\nclass Greeter {\npublic:\n    // Say hello.\n    std::string greet(const std::string& name) { return "hi " + name; }\n};\n\n// Entry point.\nint main() {\n    return Greeter().greet("x").size();\n}\n',
    "i.rb": '# Greets people.\nclass Greeter\n  # Say hello.\n  def greet(name)\n    "hi " + name\n  end\nend\n\n# Entry point.\ndef main\n  Greeter.new.greet("x")\nend\n',
    "j.cs": 'namespace Greet {\n    /// <summary>Greets people.</summary>\n    public class Greeter {\n        /// <summary>Say hello.</summary>\n        public string Greet(string name) {\n            return "hi " + name;\n        }\n    }\n}\n',
}

#: path -> (language, [(qualified name, kind, start, end, first doc line), ...])
EXPECTED = {
    "F.java": (
        "java",
        [
            ("Greeter", "class", 4, 9, "Greets people."),
            ("Greeter.greet", "method", 6, 8, "Say hello."),
        ],
    ),
    "a.py": (
        "python",
        [
            ("Greeter", "class", 5, 10, "Greets people."),
            ("Greeter.greet", "method", 8, 10, "Say hello."),
            ("main", "function", 13, 14, None),
        ],
    ),
    "b.js": (
        "javascript",
        [
            ("Greeter", "class", 2, 4, "Greets people."),
            ("Greeter.greet", "method", 3, 3, None),
            ("main", "function", 7, 9, "Entry point."),
        ],
    ),
    "c.ts": (
        "typescript",
        [
            ("Greeter", "class", 2, 4, "Greets people."),
            ("Greeter.greet", "method", 3, 3, None),
            ("main", "function", 7, 9, "Entry point."),
        ],
    ),
    "d.go": (
        "go",
        [
            ("Greeter", "class", 4, 6, "Greeter greets people."),
            ("Greeter.Greet", "method", 9, 11, "Greet says hello."),
            ("Main", "function", 14, 16, "Main is the entry point."),
        ],
    ),
    "e.rs": (
        "rust",
        [
            ("Greeter", "class", 2, 4, "Greets people."),
            ("Greeter.greet", "method", 8, 10, "Say hello."),
            ("main", "function", 14, 16, "Entry point."),
        ],
    ),
    "g.c": (
        "c",
        [("greeter", "class", 4, 6, "Greets people."), ("greet", "function", 9, 11, "Say hello.")],
    ),
    "h.cpp": (
        "cpp",
        [
            ("Greeter", "class", 4, 8, "Greets people."),
            ("Greeter.greet", "method", 7, 7, "Say hello."),
            ("main", "function", 11, 13, "Entry point."),
        ],
    ),
    "i.rb": (
        "ruby",
        [
            ("Greeter", "class", 2, 7, "Greets people."),
            ("Greeter.greet", "method", 4, 6, "Say hello."),
            ("main", "function", 10, 12, "Entry point."),
        ],
    ),
    "j.cs": (
        "csharp",
        [
            ("Greeter", "class", 3, 8, "Greets people."),
            ("Greeter.Greet", "method", 5, 7, "Say hello."),
        ],
    ),
}


@pytest.fixture(scope="module")
def langs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    root = tmp_path_factory.mktemp("langs")
    for name, text in SOURCES.items():
        (root / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "src" / name).write_text(text)
    with treeseek.open(root / "langs.db") as db:
        db.index(root / "src", name="langs")
        yield db


def test_ten_languages() -> None:
    assert len({lang for lang, _ in EXPECTED.values()}) == 10


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_outline_of_each_language(langs: Database, path: str) -> None:
    language, items = EXPECTED[path]
    outline = langs.outline("langs", path)
    assert outline.path == path and len(outline.files) == 1
    f = outline.files[0]
    assert f.language == language
    assert f.lines == len(SOURCES[path].splitlines())
    got = [(i.name_path, i.kind, i.start_line, i.end_line, i.doc) for i in f.items]
    assert got == [(f"{path}::{q}", kind, s, e, doc) for q, kind, s, e, doc in items]
    for item in f.items:
        assert item.signature  # every symbol shows a signature
        assert item.depth == item.name_path.count(".") - path.count(".")
        # the span is the symbol's own lines: its name is on one of them
        name = item.name_path.rpartition("::")[2].rpartition(".")[2]
        lines = SOURCES[path].splitlines()[item.start_line - 1 : item.end_line]
        assert any(name in line for line in lines)
    assert f.tokens > 0


def test_outline_of_a_directory_and_its_text(langs: Database) -> None:
    outline = langs.outline("langs", "")
    assert [f.path for f in outline.files] == sorted(EXPECTED)
    text = render_outline(langs.outline("langs", "a.py"))
    assert text.splitlines() == [
        "a.py (14 lines)",
        "   5-10 class Greeter  # Greets people.",
        "   8-10   def greet(self, name: str) -> str  # Say hello.",
        "  13-14 def main()",
    ]
    data = outline.to_dict()
    assert data["schema"] == "treeseek.context/1"
    assert data["files"][0]["items"][0]["name_path"] == "F.java::Greeter"
