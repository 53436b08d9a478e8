"""Command-line interface. ``treeseek.cli:main`` is the console script."""

from treeseek.cli.app import app, main

__all__ = ["app", "main"]
