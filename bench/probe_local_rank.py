"""Does a local model rank? 20 file paths of a made-up app, four questions that each name one
file's subject plainly; prints each call's ids, KV-cache use and CPU seconds, and the top-1 hits.

A model that does not read the question returns the first ids of the list (``n1, n2, n3``).
Usage::

    PYTHONPATH=src TREESEEK_LOCAL_THREADS=1 python bench/probe_local_rank.py smollm2-135m
"""

from __future__ import annotations

import resource
import sys

from treeseek.llm.base import Candidate, RankRequest, Segment
from treeseek.llm.local import LocalNavigator

PATHS = [
    "docs/conf.py",
    "setup.py",
    "README.rst",
    "src/app/__init__.py",
    "src/app/cli.py",
    "src/app/config.py",
    "src/app/db/models.py",
    "src/app/db/session.py",
    "src/app/http/server.py",
    "src/app/http/routes.py",
    "src/app/auth/tokens.py",
    "src/app/auth/passwords.py",
    "src/app/mail/smtp.py",
    "src/app/cache/redis.py",
    "src/app/utils/dates.py",
    "src/app/utils/strings.py",
    "tests/test_auth.py",
    "tests/test_mail.py",
    "tests/test_dates.py",
    "src/app/logging.py",
]
QUESTIONS = {
    "Password hashing uses a weak algorithm; passwords must be hashed with bcrypt": "n12",
    "Sending mail over SMTP fails with a timeout when the server is slow": "n13",
    "Parsing ISO dates with timezone offsets gives the wrong day": "n15",
    "The redis cache never expires keys": "n14",
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else "smollm2-135m"
    candidates = tuple(Candidate(f"n{i}", p, "file") for i, p in enumerate(PATHS, 1))
    listing = "".join(f"- id: n{i}\n  path: {p}\n" for i, p in enumerate(PATHS, 1))
    segment = Segment(
        "=== FILES ===\n" + listing + "\nSelect the files most relevant to the query.\n"
    )
    nav = LocalNavigator(model)
    hits = 0
    for question, want in QUESTIONS.items():
        request = RankRequest(
            segments=(segment,),
            message=f"Query: {question}\n\nPick up to 3 ids, best first.",
            query=question,
            candidates=candidates,
            pick_limit=3,
        )
        cpu0 = _cpu()
        reply = nav.rank(request)
        cpu = _cpu() - cpu0
        hits += reply.ranked_ids[:1] == [want]
        u = reply.usage
        print(
            f"{question[:40]!r} want {want} got {reply.ranked_ids} evaluated={u.input_tokens}"
            f" from_kv_cache={u.cache_read_tokens} out={u.output_tokens} cpu={cpu:.1f}s",
            flush=True,
        )
    print(f"{nav.name}: top-1 correct {hits}/{len(QUESTIONS)}")


if __name__ == "__main__":
    main()
