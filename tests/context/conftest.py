"""A small real repository written to a temp dir and indexed (with the code index) into a real
SQLite file, shared by the context tests of a session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.database import Database

#: payments/retry.py: two adjacent methods, a long function, module code
RETRY = (
    '''"""Retry policies for payment calls."""

import random

MAX_ATTEMPTS = 5


class Backoff:
    """Exponential backoff with jitter."""

    base = 0.5

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt``."""
        return min(60.0, self.base * 2**attempt)

    def jitter(self, attempt: int) -> float:
        """The delay with random jitter added."""
        return self.delay(attempt) + random.random()


def retry_payment(call, attempts=MAX_ATTEMPTS):
    """Call ``call`` until it succeeds or the attempts run out."""
    policy = Backoff()
'''
    + "".join(
        f"    step_{i} = policy.jitter({i})  # "
        + ("settle the ledger here" if i == 77 else f"waiting step {i}")
        + "\n"
        for i in range(120)
    )
    + '''    return call()


def refund(invoice):
    """Refund an invoice."""
    return invoice.total
'''
)

INVOICE = '''"""Invoices."""


class Invoice:
    """A bill for a customer."""

    total = 0

    def add_line(self, amount):
        """Add one line to the invoice total."""
        self.total += amount
        return self.total


def delay(seconds):
    """An unrelated helper that shares a name with Backoff.delay."""
    return seconds
'''

PROFILE = '''class Profile:
    """A user's profile."""

    def rename(self, name):
        self.name = name


def delay(seconds):
    return seconds
'''

REPO = {
    "payments/retry.py": RETRY,
    "payments/invoice.py": INVOICE,
    "users/profile.py": PROFILE,
    "archive/users/profile.py": "def archived():\n    return None\n",
    "README.md": "# Shop\n\nPayments with retries and invoices.\n",
}


@pytest.fixture(scope="session")
def shop_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    source = root / "shop"
    for rel, text in REPO.items():
        path = source / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    db_path = root / "shop.db"
    with treeseek.open(db_path) as db:
        db.index(source, name="shop")
    return db_path


@pytest.fixture
def shop(shop_db: Path) -> Iterator[Database]:
    with treeseek.open(shop_db) as db:
        yield db
