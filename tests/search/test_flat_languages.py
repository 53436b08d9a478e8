"""Language-neutral flat ranking (issue 15): no signal drops or penalizes a file for being
in a minority language of its tree.

Three trees: a monorepo (a Python service that is most of the code, a TypeScript frontend,
Go tools, docs, config), a TypeScript library whose JavaScript examples outnumber its
sources, and a Python-majority tree holding one file in each of the ten languages the code
index parses, each defining a symbol that a question names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import treeseek
from treeseek.code.conventions import is_config_path, is_test_path, is_vendored_path
from treeseek.database import Database
from treeseek.index.code_hook import CodeIndexHook
from treeseek.llm.lexical import LexicalNavigator
from treeseek.search.base import QueryOptions, SearchContext
from treeseek.search.flat.flat import FlatRetriever


def _py_module(topic: str, words: str) -> str:
    """A plausible service module: a class and functions about ``topic``."""
    name = "".join(w.capitalize() for w in topic.split("_"))
    return (
        f'"""{topic.replace("_", " ").capitalize()}: {words}."""\n\n'
        "from __future__ import annotations\n\n\n"
        f"class {name}Service:\n"
        f'    """Handles {words} for the api."""\n\n'
        "    def __init__(self, repository, clock):\n"
        "        self.repository = repository\n"
        "        self.clock = clock\n\n"
        f"    def load(self, {topic}_id):\n"
        f"        return self.repository.get({topic}_id)\n\n"
        f"    def update(self, {topic}_id, payload):\n"
        f"        record = self.load({topic}_id)\n"
        "        record.update(payload)\n"
        "        record['updated_at'] = self.clock.now()\n"
        "        return self.repository.save(record)\n\n\n"
        f"def validate_{topic}(payload):\n"
        "    if not payload:\n"
        "        raise ValueError('empty payload')\n"
        "    return payload\n"
    )


_SERVICE_TOPICS = {
    "billing": "invoices, payments, refunds and card charges",
    "orders": "orders, order lines, checkout totals and cart items",
    "customers": "customer accounts, addresses and login sessions",
    "inventory": "stock levels, warehouses and product availability",
    "shipping": "shipments, carriers, tracking numbers and delivery dates",
    "notifications": "email and sms notifications, templates and retries",
    "reports": "sales reports, exports and monthly summaries",
    "auth": "tokens, passwords, permissions and roles",
    "search": "product search, filters and ranking",
    "discounts": "coupons, promotions and discount codes",
    "webhooks": "webhook deliveries, signatures and retries",
    "migrations_runner": "schema migrations applied at startup",
}

MONOREPO: dict[str, str] = {
    **{f"services/api/app/{t}.py": _py_module(t, w) for t, w in _SERVICE_TOPICS.items()},
    "services/api/app/__init__.py": "",
    "services/api/app/main.py": (
        "from fastapi import FastAPI\n\napp = FastAPI()\n\n\n"
        "@app.get('/health')\ndef health():\n    return {'ok': True}\n"
    ),
    "services/api/tests/test_billing.py": (
        "def test_refund_card_charge():\n    assert refund(charge(100)) == 0\n"
    ),
    "web/src/components/CheckoutForm.tsx": (
        "import { useState } from 'react';\n"
        "import { submitPayment } from '../api/payments';\n\n"
        "export function CheckoutForm({ total }: { total: number }) {\n"
        "  const [cardError, setCardError] = useState<string | null>(null);\n"
        "  async function onSubmit(card: string) {\n"
        "    const result = await submitPayment(card, total);\n"
        "    if (result.declined) {\n"
        "      setCardError(result.message);\n"
        "    }\n"
        "  }\n"
        "  return <form onSubmit={() => onSubmit('')}>{cardError}</form>;\n"
        "}\n"
    ),
    "web/src/components/ProductGrid.tsx": (
        "export function ProductGrid({ products }: { products: string[] }) {\n"
        "  return <ul>{products.map((p) => <li key={p}>{p}</li>)}</ul>;\n"
        "}\n"
    ),
    "web/src/api/payments.ts": (
        "export interface PaymentResult { declined: boolean; message: string }\n\n"
        "export async function submitPayment(card: string, total: number):"
        " Promise<PaymentResult> {\n"
        "  const res = await fetch('/api/payments', { method: 'POST',"
        " body: JSON.stringify({ card, total }) });\n"
        "  return res.json();\n"
        "}\n"
    ),
    "web/src/hooks/useDarkMode.ts": (
        "export function useDarkMode(): boolean {\n"
        "  const query = window.matchMedia('(prefers-color-scheme: dark)');\n"
        "  return query.matches;\n"
        "}\n"
    ),
    "web/package.json": '{"name": "web", "dependencies": {"react": "18"}}\n',
    "web/tsconfig.json": '{"compilerOptions": {"jsx": "react-jsx", "strict": true}}\n',
    "tools/migrate/main.go": (
        "package main\n\n"
        'import (\n\t"fmt"\n\t"os"\n\t"sort"\n\t"strconv"\n)\n\n'
        "// migrationVersion parses the numeric prefix of a migration file name.\n"
        "func migrationVersion(name string) (int, error) {\n"
        "\treturn strconv.Atoi(name[:4])\n"
        "}\n\n"
        "func sortMigrations(names []string) {\n"
        "\tsort.Strings(names)\n"
        "}\n\n"
        "func main() {\n"
        "\tfmt.Println(os.Args)\n"
        "}\n"
    ),
    "tools/lint/lint.go": (
        "package lint\n\n"
        "// CheckImports reports imports that cross service boundaries.\n"
        "func CheckImports(files []string) []string {\n"
        "\tvar bad []string\n"
        "\treturn bad\n"
        "}\n"
    ),
    "tools/go.mod": "module example.com/tools\n\ngo 1.22\n",
    "docs/architecture.md": (
        "# Architecture\n\nThe api service handles billing, orders and customers. The web"
        " frontend renders the checkout form. Tools migrate the database.\n"
    ),
    "docs/payments.md": "# Payments\n\nCard payments can be declined; the form shows why.\n",
    "docker-compose.yml": "services:\n  api:\n    build: services/api\n  web:\n    build: web\n",
    "services/api/pyproject.toml": '[project]\nname = "api"\nversion = "1.0"\n',
    "README.md": "# Shop monorepo\n\nPython api, TypeScript web, Go tools.\n",
}

#: one question per language of the monorepo and the file that answers it
MONOREPO_QUESTIONS = [
    # the frontend: 4 TypeScript files in a tree of 13 Python ones
    (
        "The checkout form does not show the card error when a payment is declined",
        "web/src/components/CheckoutForm.tsx",
    ),
    (
        "Dark mode is ignored: prefers-color-scheme media query never matches",
        "web/src/hooks/useDarkMode.ts",
    ),
    ("submitPayment sends the total as a string", "web/src/api/payments.ts"),
    # the Go tools
    (
        "The migration tool fails to parse the version of a migration file name"
        " shorter than four characters",
        "tools/migrate/main.go",
    ),
    ("CheckImports misses imports that cross service boundaries", "tools/lint/lint.go"),
    # the Python service, the majority language: unchanged
    (
        "Refunds of card charges are recorded twice on invoices",
        "services/api/app/billing.py",
    ),
    (
        "Tracking numbers of shipments are lost when the carrier changes",
        "services/api/app/shipping.py",
    ),
]


def _index(tmp_path: Path, files: dict[str, str], name: str) -> Database:
    root = tmp_path / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    database = treeseek.open(tmp_path / f"{name}.db", hooks=[CodeIndexHook()])
    database.index(root, name=name)
    return database


def _paths(db: Database, tree: str, query: str, k: int = 5) -> list[str]:
    ctx = SearchContext(store=db.store, tree=db.tree(tree), navigator=LexicalNavigator())
    result = FlatRetriever().retrieve(ctx, query, QueryOptions(k=k))
    return [f.path for f in result.files]


@pytest.fixture(scope="module")
def monorepo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = _index(tmp_path_factory.mktemp("mono"), MONOREPO, "mono")
    try:
        yield db
    finally:
        db.close()


@pytest.mark.parametrize(("question", "answer"), MONOREPO_QUESTIONS)
def test_monorepo_questions_find_their_language(
    monorepo: Database, question: str, answer: str
) -> None:
    assert _paths(monorepo, "mono", question)[0] == answer


def test_frontend_question_keeps_frontend_files_on_top(monorepo: Database) -> None:
    """A question about the frontend: its files outrank the majority-language service."""
    top = _paths(monorepo, "mono", "React checkout form component shows payment errors", k=3)
    assert top[0] == "web/src/components/CheckoutForm.tsx"
    assert "web/src/api/payments.ts" in top


# -- a TypeScript library whose JavaScript examples outnumber its sources ---------------

TSLIB: dict[str, str] = {
    "src/parser.ts": (
        "export class DurationParser {\n"
        "  /** Parses '1h30m' style durations into milliseconds. */\n"
        "  parse(text: string): number {\n"
        "    const match = /^(\\d+)h(\\d+)m$/.exec(text);\n"
        "    if (!match) throw new RangeError(`invalid duration: ${text}`);\n"
        "    return (Number(match[1]) * 60 + Number(match[2])) * 60_000;\n"
        "  }\n"
        "}\n"
    ),
    "src/format.ts": (
        "export function formatDuration(ms: number): string {\n"
        "  const minutes = Math.floor(ms / 60_000);\n"
        "  return `${Math.floor(minutes / 60)}h${minutes % 60}m`;\n"
        "}\n"
    ),
    "src/index.ts": "export * from './parser';\nexport * from './format';\n",
    **{
        f"examples/example{i}.js": (
            "const { DurationParser, formatDuration } = require('../dist');\n"
            f"// example {i}: parse a duration and print it\n"
            f"const ms = new DurationParser().parse('{i}h{i}m');\n"
            "console.log(formatDuration(ms));\n"
        )
        for i in range(12)
    },
    "package.json": '{"name": "durations", "main": "dist/index.js"}\n',
}


def test_typescript_sources_are_not_demoted_by_javascript_examples(tmp_path: Path) -> None:
    db = _index(tmp_path, TSLIB, "durations")
    try:
        top = _paths(db, "durations", "Parsing a duration throws RangeError for hours over 99")
        assert top[0] == "src/parser.ts"
        top = _paths(db, "durations", "formatting durations pads minutes wrongly")
        assert top[0] == "src/format.ts"
    finally:
        db.close()


# -- ten languages, one named symbol each, in a Python-majority tree --------------------

SYMBOL_FILES: dict[str, str] = {
    "hooks/webhook_signature_verifier.rb": (
        "class WebhookSignatureVerifier\n"
        "  def initialize(secret)\n    @secret = secret\n  end\n\n"
        "  def verify(payload, signature)\n"
        "    OpenSSL::HMAC.hexdigest('SHA256', @secret, payload) == signature\n"
        "  end\nend\n"
    ),
    "web/ratelimit.js": (
        "export class TokenBucketLimiter {\n"
        "  constructor(rate) { this.rate = rate; this.tokens = rate; }\n"
        "  tryAcquire() { if (this.tokens > 0) { this.tokens -= 1; return true; }"
        " return false; }\n"
        "}\n"
    ),
    "web/session_store.ts": (
        "export class SessionStore {\n"
        "  private sessions = new Map<string, number>();\n"
        "  expireIdleSessions(now: number): void {\n"
        "    for (const [id, seen] of this.sessions) {"
        " if (now - seen > 3600) this.sessions.delete(id); }\n"
        "  }\n"
        "}\n"
    ),
    "cmd/healthcheck/probe.go": (
        "package healthcheck\n\n"
        "// ProbeUpstream reports whether the upstream answers within the timeout.\n"
        "func ProbeUpstream(url string, timeoutMs int) bool {\n\treturn timeoutMs > 0\n}\n"
    ),
    "native/checksum/src/lib.rs": (
        "pub struct ChecksumWriter { state: u32 }\n\n"
        "impl ChecksumWriter {\n"
        "    pub fn finalize_crc(&self) -> u32 { self.state ^ 0xffff_ffff }\n"
        "}\n"
    ),
    "android/app/src/main/java/com/shop/ReceiptPrinter.java": (
        "package com.shop;\n\n"
        "public class ReceiptPrinter {\n"
        "    public String printReceiptFooter(int total) {\n"
        '        return "Total: " + total;\n'
        "    }\n"
        "}\n"
    ),
    "native/ringbuf/ringbuf.c": (
        "#include <stddef.h>\n\n"
        "int ringbuf_push_overwrite(char *buf, size_t cap, size_t *head, char byte) {\n"
        "    buf[*head % cap] = byte;\n    *head += 1;\n    return 0;\n}\n"
    ),
    "native/geo/haversine.cpp": (
        "#include <cmath>\n\n"
        "namespace geo {\n"
        "double HaversineDistanceKm(double lat1, double lon1, double lat2, double lon2) {\n"
        "    return std::acos(std::sin(lat1) * std::sin(lat2)) * 6371.0 + lon1 - lon2;\n"
        "}\n"
        "}  // namespace geo\n"
    ),
    "desktop/Exporter/CsvExporter.cs": (
        "namespace Shop.Desktop {\n"
        "    public class CsvExporter {\n"
        "        public string EscapeCsvField(string field) {\n"
        '            return field.Replace("\\"", "\\"\\"");\n'
        "        }\n"
        "    }\n"
        "}\n"
    ),
    "services/api/app/export_jobs.py": (
        "class ExportJobScheduler:\n"
        "    def schedule_nightly_export(self, when):\n"
        "        return when\n"
    ),
}

#: (language, question naming a symbol, its defining file)
SYMBOL_QUESTIONS = [
    (
        "ruby",
        "WebhookSignatureVerifier#verify accepts every payload",
        "hooks/webhook_signature_verifier.rb",
    ),
    ("javascript", "TokenBucketLimiter.tryAcquire never refills tokens", "web/ratelimit.js"),
    (
        "typescript",
        "SessionStore.expireIdleSessions deletes active sessions",
        "web/session_store.ts",
    ),
    ("go", "ProbeUpstream ignores the timeout", "cmd/healthcheck/probe.go"),
    ("rust", "ChecksumWriter::finalize_crc returns the wrong crc", "native/checksum/src/lib.rs"),
    (
        "java",
        "ReceiptPrinter.printReceiptFooter shows the total without currency",
        "android/app/src/main/java/com/shop/ReceiptPrinter.java",
    ),
    ("c", "ringbuf_push_overwrite writes past the buffer", "native/ringbuf/ringbuf.c"),
    (
        "cpp",
        "geo::HaversineDistanceKm is off for distances near the poles",
        "native/geo/haversine.cpp",
    ),
    (
        "csharp",
        "CsvExporter.EscapeCsvField does not quote commas",
        "desktop/Exporter/CsvExporter.cs",
    ),
    (
        "python",
        "ExportJobScheduler.schedule_nightly_export runs twice",
        "services/api/app/export_jobs.py",
    ),
]


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    # the Python service is most of the tree; its modules share the questions' words
    files = {**{k: v for k, v in MONOREPO.items() if k.endswith(".py")}, **SYMBOL_FILES}
    db = _index(tmp_path_factory.mktemp("poly"), files, "poly")
    try:
        yield db
    finally:
        db.close()


def test_the_ten_languages_are_covered() -> None:
    assert len({lang for lang, _, _ in SYMBOL_QUESTIONS}) == 10


@pytest.mark.parametrize(("language", "question", "answer"), SYMBOL_QUESTIONS)
def test_named_symbol_ranks_its_defining_file_first_in_every_language(
    polyglot: Database, language: str, question: str, answer: str
) -> None:
    assert _paths(polyglot, "poly", question)[0] == answer, language


def test_vendored_code_is_recognized_by_path_in_any_language() -> None:
    assert is_vendored_path("django/contrib/admin/static/admin/js/vendor/jquery/jquery.js")
    assert is_vendored_path("cextern/wcslib/C/wcs.c")
    assert is_vendored_path("third_party/abseil/strings.cc")
    assert is_vendored_path("web/node_modules/react/index.js")
    assert is_vendored_path("static/app.min.js")
    assert is_vendored_path("sphinx/themes/basic/static/jquery-3.5.1.js")
    assert is_vendored_path("static/underscore-1.13.1.js")
    assert is_vendored_path("sphinx/search/minified-js/french-stemmer.js")
    assert is_vendored_path("sphinx/locale/fr/LC_MESSAGES/sphinx.js")  # a gettext catalog
    assert not is_vendored_path("sphinx/search/non-minified-js/french-stemmer.js")
    assert not is_vendored_path("django/db/migrations/0001_initial.py")
    assert not is_vendored_path("src/v4/core/versions.ts")
    assert not is_vendored_path("web/src/components/CheckoutForm.tsx")
    assert not is_vendored_path("src/vendors.py")  # a module about vendors
    assert not is_vendored_path("lib/external_api.rb")
    assert not is_vendored_path("sympy/external/gmpy.py")  # the project's own adapters


def test_test_conventions_of_other_languages() -> None:
    assert is_test_path("gson/src/test/java/com/google/gson/JsonArrayTest.java")
    assert is_test_path("extras/src/main/java/com/x/FooTest.java")  # a JUnit test class
    assert is_test_path("test/format-test.cc")
    assert is_test_path("test/test-fs.c")  # a top-level test directory (libuv, fmt, rack)
    assert is_test_path("lib/rack/utils_spec.rb")
    assert is_test_path("src/components/Form.test.tsx")
    assert is_test_path("js_tests/qunit/qunit.js")
    assert not is_test_path("django/test/utils.py")  # a library package named "test"
    assert not is_test_path("src/main/java/com/x/TestUtils.java")
    assert not is_test_path("include/fmt/format.h")


def test_tool_configuration_in_code_files() -> None:
    assert is_config_path(".eslintrc.js")
    assert is_config_path("packages/treeshake/rollup.config.js")
    assert is_config_path("web/vite.config.ts")
    assert is_config_path("Gruntfile.js")
    assert is_config_path("karma.conf.js")
    assert not is_config_path("src/config.ts")  # the application's own configuration code
    assert not is_config_path("django/conf/global_settings.py")
