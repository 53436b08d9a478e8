"""The small repository the context tests index (helpers for conftest.py and the tests)."""

from __future__ import annotations

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
