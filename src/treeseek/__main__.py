"""``python -m treeseek``: the command-line app."""

from treeseek.cli import main

main()
