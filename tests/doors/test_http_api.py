"""The HTTP API over a real uvicorn server on loopback, driven by httpx."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from doors_helpers import TOKEN, live

import treeseek
from treeseek.errors import ConfigError, DeadlineExceeded, LLMError, StoreError
from treeseek.mcp.server import build_server
from treeseek.server import check_bind, read_token
from treeseek.server.app import create_app
from treeseek.service import Jobs, Limits, Service
from treeseek.service import jobs as jobs_module

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def service(db_path: Path, project: Path) -> Iterator[Service]:
    db = treeseek.open(db_path)
    try:
        yield Service(db, index_roots=[project.parent], freshness_ttl=0)
    finally:
        db.close()


@pytest.fixture
def client(service: Service) -> Iterator[httpx.Client]:
    jobs = Jobs(service)
    with (
        live(create_app(service, token=TOKEN, jobs=jobs)) as url,
        httpx.Client(base_url=url, headers=AUTH, timeout=60) as c,
    ):
        yield c
    jobs.close()


def wait_job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    for _ in range(1200):
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


def error(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()["error"]
    assert "Traceback" not in body["message"] and "\n" not in body["message"]
    return body


# -- auth, OpenAPI, transport ----------------------------------------------------------------


def test_auth_is_required_and_checked(client: httpx.Client) -> None:
    url = str(client.base_url)
    missing = httpx.get(url + "/v1/trees")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert "missing" in error(missing)["message"]
    wrong = httpx.get(url + "/v1/trees", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and "wrong" in error(wrong)["message"]
    basic = httpx.get(url + "/v1/trees", headers={"Authorization": f"Basic {TOKEN}"})
    assert basic.status_code == 401
    assert httpx.get(url + "/v1/openapi.json").status_code == 401
    assert httpx.get(url + "/v1/health").json()["status"] == "ok"  # the only open route
    assert client.get("/v1/trees").status_code == 200


def test_openapi_lists_every_route_with_typed_bodies(client: httpx.Client) -> None:
    spec = client.get("/v1/openapi.json").json()
    paths = spec["paths"]
    for route in (
        "/v1/trees",
        "/v1/trees/{tree}",
        "/v1/trees/{tree}/nodes",
        "/v1/trees/{tree}/index",
        "/v1/jobs/{job_id}",
        "/v1/trees/{tree}/query",
        "/v1/trees/{tree}/files",
        "/v1/trees/{tree}/symbols",
        "/v1/trees/{tree}/graph/{relation}",
        "/v1/retrieve",
    ):
        assert route in paths, route
    assert "delete" in paths["/v1/trees/{tree}"]
    schemas = spec["components"]["schemas"]
    for name in ("QueryRequest", "QueryResponse", "RetrieveRequest", "RetrievalItem", "JobOut"):
        assert name in schemas, name
    query = paths["/v1/trees/{tree}/query"]["post"]
    assert query["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/QueryRequest"
    )
    assert client.get("/docs").status_code == 404  # no interactive docs (no CDN scripts)


def test_cors_is_off(client: httpx.Client) -> None:
    preflight = client.options(
        "/v1/trees",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in preflight.headers
    got = client.get("/v1/trees", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in got.headers


def test_without_a_token_only_loopback_names_are_served(db_path: Path) -> None:
    db = treeseek.open(db_path)
    try:
        with live(create_app(Service(db))) as url:
            assert httpx.get(url + "/v1/trees").status_code == 200  # Host: 127.0.0.1:PORT
            port = url.rpartition(":")[2]
            for host in (f"localhost:{port}", "localhost", f"[::1]:{port}"):
                assert httpx.get(url + "/v1/trees", headers={"Host": host}).status_code == 200
            rebound = httpx.get(url + "/v1/trees", headers={"Host": f"evil.example:{port}"})
            assert rebound.status_code == 421 and error(rebound)["type"] == "misdirected"
    finally:
        db.close()


def test_non_loopback_bind_needs_a_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"refusing to listen on 0\.0\.0\.0 without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ConfigError):
        check_bind("192.168.1.10", None)
    check_bind("0.0.0.0", TOKEN)
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_bind(host, None)
    from typer.testing import CliRunner

    from treeseek.cli.app import load_commands

    monkeypatch.delenv("TREESEEK_TOKEN", raising=False)
    result = CliRunner().invoke(
        load_commands(), ["serve", "--host", "0.0.0.0", "--db", str(tmp_path / "x.db")]
    )
    assert result.exit_code == 1
    assert "without a token" in result.output


def test_a_port_in_use_is_one_error_line_before_any_banner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from typer.testing import CliRunner

    from treeseek.cli.app import load_commands

    monkeypatch.delenv("TREESEEK_TOKEN", raising=False)
    db = str(tmp_path / "x.db")
    treeseek.open(db).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for args in (["serve", "--port", port], ["mcp", "--http", "--port", port]):
            result = CliRunner().invoke(load_commands(), [*args, "--db", db])
            assert result.exit_code == 1, (args, result.output)
            assert result.stderr.splitlines() == [
                f"error: cannot listen on 127.0.0.1:{port}: Address already in use; pick"
                " another --port (or stop what holds this one)"
            ]


def test_tokens_come_from_a_file_or_the_environment(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    assert read_token(token_file, environ={}) == TOKEN
    assert read_token(None, environ={"TREESEEK_TOKEN": TOKEN}) == TOKEN
    assert read_token(None, environ={}) is None
    with pytest.raises(ConfigError, match="at least"):
        read_token(None, environ={"TREESEEK_TOKEN": "short"})
    with pytest.raises(ConfigError, match="cannot read"):
        read_token(tmp_path / "missing", environ={})


# -- trees -------------------------------------------------------------------------------------


def test_unknown_routes_and_methods_answer_in_the_error_shape(client: httpx.Client) -> None:
    missing = client.get("/v1/nope")
    assert missing.status_code == 404 and error(missing) == {
        "type": "not_found",
        "message": "no route /v1/nope; the routes are listed at /v1/openapi.json",
    }
    wrong = client.put("/v1/trees")
    assert wrong.status_code == 405 and error(wrong)["type"] == "method_not_allowed"
    assert wrong.headers["allow"] == "GET"
    assert client.get("/v1/health").status_code == 200  # still serving


def test_trees_show_nodes_and_unknown_tree(client: httpx.Client, project: Path) -> None:
    trees = client.get("/v1/trees").json()["trees"]
    assert [t["name"] for t in trees] == ["demo"]
    demo = trees[0]
    assert demo["source"] == "filesystem" and demo["root"] == str(project.resolve())
    assert demo["freshness"]["stale"] is False
    assert client.get("/v1/trees/demo").json()["files"] == demo["files"]
    nodes = client.get("/v1/trees/demo/nodes", params={"path": "app", "depth": 2}).json()
    paths = [n["path"] for n in nodes["nodes"]]
    assert paths[0] == "app" and "app/api/users.py" in paths
    assert "leak.txt" not in [n["path"] for n in client.get("/v1/trees/demo/nodes").json()["nodes"]]
    unknown = client.get("/v1/trees/nope")
    assert unknown.status_code == 404 and error(unknown)["type"] == "not_found"
    too_deep = client.get("/v1/trees/demo/nodes", params={"depth": 99})
    assert too_deep.status_code == 413 and error(too_deep)["type"] == "limit"


# -- query -------------------------------------------------------------------------------------


def test_query_answers_with_files_and_freshness(client: httpx.Client) -> None:
    answer = client.post(
        "/v1/trees/demo/query", json={"question": "UserService get_user", "k": 3}
    ).json()
    assert answer["files"][0]["path"] in ("app/service.py", "app/api/users.py")
    assert len(answer["files"]) <= 3
    assert answer["strategy"] == "flat"
    assert answer["freshness"]["stale"] is False
    assert answer["files"][0]["content"] is None  # contents only when asked
    with_content = client.post(
        "/v1/trees/demo/query", json={"question": "normalize_name", "k": 1, "content": True}
    ).json()
    assert "def normalize_name" in with_content["files"][0]["content"]


def test_query_limits_and_bad_input_are_4xx(client: httpx.Client, service: Service) -> None:
    def post(body: Any, **kw: Any) -> httpx.Response:
        return client.post("/v1/trees/demo/query", json=body, **kw)

    big_k = post({"question": "x", "k": 10_000})
    assert big_k.status_code == 413 and "limit of 100" in error(big_k)["message"]
    long = post({"question": "x" * (service.limits.max_question_chars + 1)})
    assert long.status_code == 413 and "characters" in error(long)["message"]
    assert post({"question": "  "}).status_code == 400
    zero = post({"question": "x", "k": 0})
    assert zero.status_code == 400 and error(zero) == {
        "type": "bad_request",
        "message": "k must be >= 1, got 0",
    }
    assert post({"question": "x", "budget": -5}).status_code == 400
    assert post({"question": "x", "budget": 10**9}).status_code == 413
    typo = post({"question": "x", "kk": 3})
    assert typo.status_code == 422 and "kk" in error(typo)["message"]
    assert post({"k": 3}).status_code == 422  # no question
    assert post({"question": "x", "k": "many"}).status_code == 422
    assert post({"question": "x", "strategy": "nope"}).status_code == 400
    echoed = post({"question": "x", "strategy": "s" * 50_000})  # the message quotes it
    assert echoed.status_code == 400 and len(error(echoed)["message"]) < 1_100
    assert error(echoed)["message"].endswith("more characters)")
    malformed = client.post(
        "/v1/trees/demo/query",
        content=b'{"question": "x",',
        headers={"Content-Type": "application/json"},
    )
    assert malformed.status_code == 422 and error(malformed) == {
        "type": "invalid_request",
        "message": "malformed JSON body at character 17: Expecting property name enclosed in"
        " double quotes",
    }
    not_object = client.post(
        "/v1/trees/demo/query", content=b"[1, 2]", headers={"Content-Type": "application/json"}
    )
    assert not_object.status_code == 422
    huge = client.post(
        "/v1/trees/demo/query",
        content=b'{"question": "' + b"x" * (2 << 20) + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert huge.status_code == 413
    assert post({"question": "x"}).status_code == 200  # still serving


# -- files, symbols, graph ---------------------------------------------------------------------


def test_files_whole_and_line_ranges(client: httpx.Client) -> None:
    whole = client.get("/v1/trees/demo/files", params={"path": "app/service.py"}).json()
    assert whole["start_line"] == 1 and whole["end_line"] == whole["total_lines"]
    assert whole["text"].startswith('"""The user service."""')
    part = client.get(
        "/v1/trees/demo/files", params={"path": "big.txt", "start": 10, "end": 12}
    ).json()
    assert part["text"] == "line 10\nline 11\nline 12"
    assert (part["start_line"], part["end_line"], part["total_lines"]) == (10, 12, 200)
    tail = client.get("/v1/trees/demo/files", params={"path": "big.txt", "start": 199}).json()
    assert tail["text"] == "line 199\nline 200"
    for bad in ({"start": 0}, {"start": 5, "end": 4}, {"start": 500}):
        response = client.get("/v1/trees/demo/files", params={"path": "big.txt", **bad})
        assert response.status_code == 400, bad
        assert "range" in error(response)["message"] or "past the end" in error(response)["message"]
    directory = client.get("/v1/trees/demo/files", params={"path": "app"})
    assert directory.status_code == 404 and "directory" in error(directory)["message"]


@pytest.mark.parametrize(
    "path",
    ["../outside-secret.txt", "/etc/passwd", "app/../../x", "app/\x00x", "C:/x", "\\\\host\\x"],
)
def test_no_path_leaves_the_tree(client: httpx.Client, path: str) -> None:
    response = client.get("/v1/trees/demo/files", params={"path": path})
    assert response.status_code == 400
    assert error(response)["type"] == "bad_request"


def test_a_symlink_out_of_the_root_is_not_served(client: httpx.Client) -> None:
    response = client.get("/v1/trees/demo/files", params={"path": "leak.txt"})
    assert response.status_code == 404
    assert "not for clients" not in response.text


def test_symbols_and_graph(client: httpx.Client) -> None:
    symbols = client.get("/v1/trees/demo/symbols", params={"path": "app/service.py"}).json()
    by_name = {s["name_path"]: s for s in symbols["symbols"]}
    method = by_name["app/service.py::UserService.get_user"]
    assert method["kind"] == "method" and method["start_line"] < method["end_line"]
    callers = client.get(
        "/v1/trees/demo/graph/callers", params={"name": "app/service.py::normalize_name"}
    ).json()
    assert "app/service.py::UserService.get_user" in [r["id"] for r in callers["results"]]
    assert {r["status"] for r in callers["results"]} <= {"resolved", "candidate"}
    short = client.get("/v1/trees/demo/graph/callers", params={"name": "normalize_name"}).json()
    assert short["node"] == "app/service.py::normalize_name"  # a unique short name resolves
    importers = client.get(
        "/v1/trees/demo/graph/importers", params={"name": "app/service.py"}
    ).json()
    assert "app/api/users.py" in [r["id"] for r in importers["results"]]
    subclasses = client.get(
        "/v1/trees/demo/graph/subclasses", params={"name": "app/service.py::UserService"}
    ).json()
    assert [r["id"] for r in subclasses["results"]] == ["app/service.py::AdminService"]
    entry = client.get("/v1/trees/demo/graph/entrypoints").json()["results"]
    assert entry[0]["route_or_command"].strip("\"'") == "/users/{user_id}"
    assert entry[0]["handler_symbol_id"] == "app/api/users.py::get_user"
    unknown = client.get("/v1/trees/demo/graph/friends", params={"name": "app"})
    assert unknown.status_code == 400 and "unknown relation" in error(unknown)["message"]
    missing = client.get("/v1/trees/demo/graph/callers", params={"name": "nope.py::x"})
    assert missing.status_code == 404


# -- code retrieval ------------------------------------------------------------------------------


def test_retrieve_returns_layer_items_with_the_spec_metadata(client: httpx.Client) -> None:
    body = {"tree": "demo", "query": "which endpoint handles get_user", "limit": 40}
    items = client.post("/v1/retrieve", json=body).json()["items"]
    assert items and len(items) <= 40
    assert "fallback" not in client.post("/v1/retrieve", json=body).json()
    layers = {i["layer"] for i in items}
    assert layers == {
        "C0_SOURCE_CHUNKS",
        "C1_SYMBOL_CATALOG",
        "C2_DEPENDENCY_GRAPH",
        "C3_ENTRYPOINTS",
    }
    need = {
        "C0_SOURCE_CHUNKS": {"chunk_index", "chunk_type", "module_or_unit", "artifact_type"},
        "C1_SYMBOL_CATALOG": {
            "symbol_id",
            "qname",
            "kind",
            "signature",
            "decorators_or_annotations",
            "docstring_or_javadoc",
            "parent_symbol_id",
            "package_or_module",
            "is_entry_candidate",
            "lang_payload",
            "artifact_type",
        },
        "C2_DEPENDENCY_GRAPH": {
            "edge_id",
            "edge_type",
            "src_symbol_id",
            "src_qname",
            "dst_symbol_id",
            "dst_ref",
            "resolution",
            "lang_payload",
            "artifact_type",
        },
        "C3_ENTRYPOINTS": {
            "entry_id",
            "entry_type",
            "framework",
            "route_or_command",
            "handler_symbol_id",
            "lang_payload",
            "artifact_type",
        },
    }
    for item in items:
        assert need[item["layer"]] <= set(item["metadata"]), item["layer"]
        assert item["start_line"] is not None and item["end_line"] is not None
        assert isinstance(item["score"], float)
    entry = next(i for i in items if i["layer"] == "C3_ENTRYPOINTS")
    assert entry["metadata"]["handler_symbol_id"] == "app/api/users.py::get_user"
    assert entry["metadata"]["module_or_unit"] == "app.api.users"
    symbol = next(i for i in items if i["title"] == "UserService.get_user")
    assert symbol["metadata"]["symbol_id"] == "app/service.py::UserService.get_user"
    assert symbol["metadata"]["parent_symbol_id"] == "app/service.py::UserService"
    assert symbol["metadata"]["package_or_module"] == "app.service"
    resolved = [
        i
        for i in items
        if i["layer"] == "C2_DEPENDENCY_GRAPH" and i["metadata"]["dst_ref"] == "UserService"
    ]
    assert resolved and resolved[0]["metadata"]["dst_symbol_id"] == "app/service.py::UserService"
    assert resolved[0]["metadata"]["resolution"] == "resolved"
    scores = {i["score"] for i in items}
    assert len(scores) > 1  # per item, not one per file
    only = client.post(
        "/v1/retrieve",
        json={"project_id": "demo", "query": "get_user", "layers": ["C1_SYMBOL_CATALOG"]},
    ).json()["items"]
    assert only and {i["layer"] for i in only} == {"C1_SYMBOL_CATALOG"}
    assert len(only) <= 8  # the spec's default limit
    bad = client.post("/v1/retrieve", json={"tree": "demo", "query": "x", "layers": ["C9"]})
    assert bad.status_code == 422
    no_tree = client.post("/v1/retrieve", json={"query": "x"})
    assert no_tree.status_code == 400 and "tree" in error(no_tree)["message"]
    # two names of the tree that disagree: which one was meant is not guessed
    both = client.post("/v1/retrieve", json={"tree": "demo", "project_id": "other", "query": "x"})
    assert both.status_code == 400 and "'demo'" in error(both)["message"]
    assert "'other'" in error(both)["message"]
    same = {"tree": "demo", "project_id": "demo", "rag_session_id": "demo", "query": "get_user"}
    assert client.post("/v1/retrieve", json=same).json()["items"]


def test_retrieve_falls_back_to_documentation_sections(tmp_path: Path) -> None:
    """A document tree answers with its sections; a code tree whose requested code layers find
    nothing answers with its README's sections; both say ``fallback: "docs"``, which a code
    answer never carries."""
    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n\nIntro.\n\n## Deployment\n\nUse gunicorn behind nginx.\n")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "README.md").write_text(
        "# Demo\n\nAn adder.\n\n## Deployment\n\nDeploy it with gunicorn workers.\n"
    )
    db = treeseek.open(tmp_path / "docs.db")
    try:
        db.index(guide, name="guide")
        db.index(repo, name="repo")
        with (
            live(create_app(Service(db, freshness_ttl=0))) as url,
            httpx.Client(base_url=url, timeout=60) as c,
        ):
            question = "how do I deploy with gunicorn?"
            doc = c.post("/v1/retrieve", json={"tree": "guide", "query": question})
            assert doc.status_code == 200, doc.text
            body = doc.json()
            assert body["fallback"] == "docs"
            first = body["items"][0]
            assert (first["layer"], first["source"], first["title"]) == (
                "DOCS",
                "guide.md",
                "Guide > Deployment",
            )
            assert (first["start_line"], first["end_line"]) == (5, 7)
            assert first["metadata"]["artifact_type"] == "DOC"
            assert "gunicorn behind nginx" in first["content"]
            code_only = {"tree": "repo", "query": question, "layers": ["C1_SYMBOL_CATALOG"]}
            fell = c.post("/v1/retrieve", json=code_only).json()
            assert fell["fallback"] == "docs"
            top = fell["items"][0]
            assert (top["layer"], top["source"], top["title"]) == (
                "DOCS",
                "README.md",
                "Demo > Deployment",
            )
            assert (top["start_line"], top["end_line"]) == (5, 7)
            code = c.post("/v1/retrieve", json={"tree": "repo", "query": "add"}).json()
            assert code["items"] and "fallback" not in code
            assert {i["metadata"]["artifact_type"] for i in code["items"]} == {"CODE"}
            none = c.post("/v1/retrieve", json={"tree": "guide", "query": "zzzqx"}).json()
            assert none == {"items": []}
            # DOCS asked for by name: the sections, without a fallback (nothing fell back)
            asked = c.post(
                "/v1/retrieve", json={"tree": "repo", "query": question, "layers": ["DOCS"]}
            )
            assert asked.status_code == 200, asked.text
            assert "fallback" not in asked.json()
            assert asked.json()["items"][0]["title"] == "Demo > Deployment"
            mixed = c.post(
                "/v1/retrieve",
                json={"tree": "repo", "query": question, "layers": ["C0_SOURCE_CHUNKS", "DOCS"]},
            )
            assert mixed.status_code == 400 and "DOCS" in error(mixed)["message"]
            empty = c.post("/v1/retrieve", json={"tree": "repo", "query": "x", "layers": []})
            assert empty.status_code == 400 and "no layer" in error(empty)["message"]
    finally:
        db.close()


# -- index jobs, freshness, delete --------------------------------------------------------------


def test_reindex_job_reports_done_after_the_commit_and_freshness_follows(
    client: httpx.Client, project: Path
) -> None:
    (project / "app" / "service.py").write_text(
        (project / "app" / "service.py").read_text() + "\n\ndef fresh_helper():\n    return 1\n"
    )
    stale = client.get("/v1/trees/demo").json()["freshness"]
    assert stale["stale"] is True and "app/service.py" in stale["paths"]
    answer = client.post("/v1/trees/demo/query", json={"question": "fresh_helper"}).json()
    assert answer["freshness"]["stale"] is True
    started = client.post("/v1/trees/demo/index")
    assert started.status_code == 202
    job = wait_job(client, started.json()["id"])
    assert job["state"] == "done" and job["report"]["changed"] == 1
    # done means committed: the new content is readable at once
    text = client.get("/v1/trees/demo/files", params={"path": "app/service.py"}).json()["text"]
    assert "def fresh_helper" in text
    assert client.get("/v1/trees/demo").json()["freshness"]["stale"] is False
    assert job["id"] in [j["id"] for j in client.get("/v1/jobs").json()["jobs"]]
    assert client.get("/v1/jobs/job-999").status_code == 404


def test_a_reindex_job_with_nothing_changed_counts_the_files_it_checked(
    client: httpx.Client,
) -> None:
    """done/total of a finished job are the files it looked at, not the 0 nodes it wrote."""
    files = client.get("/v1/trees/demo").json()["files"]
    assert files > 0
    job = wait_job(client, client.post("/v1/trees/demo/index").json()["id"])
    assert job["state"] == "done"
    assert job["report"]["unchanged"] == files and job["report"]["changed"] == 0
    assert (job["phase"], job["done"], job["total"]) == ("done", files, files)


def test_index_from_another_directory_is_refused_at_once_unless_replace(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root, body in ((a, "def add(a, b):\n    return a + b\n"), (b, "x = 1\n")):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "core.py").write_text(body)
    db = treeseek.open(tmp_path / "http.db")
    db.index(a, name="proj")
    service = Service(db, index_roots=[tmp_path])
    jobs = Jobs(service)
    try:
        with (
            live(create_app(service, jobs=jobs)) as url,
            httpx.Client(base_url=url, timeout=60) as c,
        ):
            refused = c.post("/v1/trees/proj/index", json={"source": str(b)})
            assert refused.status_code == 400
            assert "was indexed from" in refused.json()["error"]["message"]
            same = c.post("/v1/trees/proj/index", json={"source": str(a)})
            assert same.status_code == 202
            started = c.post("/v1/trees/proj/index", json={"source": str(b), "replace": True})
            assert started.status_code == 202
            jobs.get(started.json()["id"])._event.wait(60)
            job = c.get(f"/v1/jobs/{started.json()['id']}").json()
            assert job["state"] == "done", job
            assert c.get("/v1/trees/proj").json()["root"] == str(b.resolve())
    finally:
        jobs.close()
        db.close()


def test_an_outline_over_the_budget_limit_is_refused_with_what_to_ask_instead(
    tmp_path: Path,
) -> None:
    """The outline of a whole tree is unbounded (MBs on a large repository): over the
    server's token limit it is a 413 that says to outline a subdirectory or a file."""
    root = tmp_path / "big"
    for package in ("alpha", "beta"):
        (root / package).mkdir(parents=True)
        body = "".join(f"def {package}_function_{i}(x):\n    return x + {i}\n\n" for i in range(60))
        (root / package / "mod.py").write_text(body)
    db = treeseek.open(tmp_path / "outline.db")
    db.index(root, name="big")
    whole = db.outline("big", "").files
    per_dir = max(f.tokens for f in whole)
    assert sum(f.tokens for f in whole) > per_dir + 50
    service = Service(db, limits=Limits(max_budget=per_dir + 50))
    try:
        with live(create_app(service)) as url, httpx.Client(base_url=url, timeout=60) as c:
            refused = c.get("/v1/trees/big/outline", params={"path": ""})
            assert refused.status_code == 413
            message = error(refused)["message"]
            assert "tokens" in message and "subdirectory" in message
            part = c.get("/v1/trees/big/outline", params={"path": "alpha"})
            assert part.status_code == 200
            assert [f["path"] for f in part.json()["files"]] == ["alpha/mod.py"]
    finally:
        db.close()


def test_an_outline_over_the_limit_stops_reading_once_it_is_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole large tree's outline was built in full (22 s and 1.4 GB on a 47,000-file
    tree) only to be refused: it stops at the first file that takes it over the limit."""
    root = tmp_path / "many"
    (root / "pkg").mkdir(parents=True)
    for n in range(40):
        body = "".join(f"def fn_{n}_{i}(x):\n    return x + {i}\n\n" for i in range(10))
        (root / "pkg" / f"mod_{n:02d}.py").write_text(body)
    with treeseek.open(tmp_path / "many.db") as db:
        db.index(root, name="many")
        one = db.outline("many", "pkg/mod_00.py").files[0].tokens
        reads: list[str] = []
        content = db.store.content

        def counted(tree: str, node_id: str) -> bytes | None:
            reads.append(node_id)
            return content(tree, node_id)

        monkeypatch.setattr(db.store, "content", counted)
        service = Service(db, limits=Limits(max_budget=3 * one + 10))
        with pytest.raises(ConfigError, match="over this server's limit") as refused:
            service.outline("many", "pkg")
        assert "subdirectory" in str(refused.value)
        assert len(reads) <= 4  # files 0-2 fit (0 from the cache), the 4th is over
        assert len(service.outline("many", "pkg/mod_07.py")["files"]) == 1


def test_a_query_says_what_it_could_not_do_as_asked(client: httpx.Client) -> None:
    """The notes the CLI prints on stderr (an option the strategy ignores, vectors the tree
    lacks) reach an HTTP client too, plain and budgeted; a query that did all it was asked
    has none."""
    asked = {"question": "get user", "k": 2, "ranker": "bm25"}
    for body in (asked, {**asked, "budget": 500}):
        answer = client.post("/v1/trees/demo/query", json=body)
        assert answer.status_code == 200, answer.text
        notes = answer.json()["notes"]
        assert len(notes) == 1 and "--ranker bm25" in notes[0], notes
    plain = client.post("/v1/trees/demo/query", json={"question": "get user", "k": 2}).json()
    assert plain["notes"] == []


def test_a_moved_directory_s_tree_is_told_how_to_re_point_it(tmp_path: Path) -> None:
    """Re-indexing a tree whose directory moved says so, and how: the new source with
    replace; that request then re-points the tree (only what changed is written)."""
    old = tmp_path / "old"
    (old / "pkg").mkdir(parents=True)
    (old / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    db = treeseek.open(tmp_path / "moved.db")
    db.index(old, name="proj")
    new = tmp_path / "new"
    old.rename(new)
    service = Service(db, index_roots=[tmp_path])
    jobs = Jobs(service)
    try:
        with (
            live(create_app(service, jobs=jobs)) as url,
            httpx.Client(base_url=url, timeout=60) as c,
        ):
            gone = c.post("/v1/trees/proj/index")
            assert gone.status_code == 404
            message = error(gone)["message"]
            assert "is gone" in message and "replace" in message and "source" in message
            moved = c.post("/v1/trees/proj/index", json={"source": str(new)})
            assert moved.status_code == 400 and "no longer exists" in error(moved)["message"]
            job = wait_job(
                c,
                c.post("/v1/trees/proj/index", json={"source": str(new), "replace": True}).json()[
                    "id"
                ],
            )
            assert job["state"] == "done" and job["report"]["unchanged"] == 1, job
    finally:
        jobs.close()
        db.close()


def test_a_new_tree_s_bad_name_is_refused_at_once_not_as_a_failed_job(
    client: httpx.Client, project: Path
) -> None:
    for name in ("a%E2%80%AEb", "x" * 201):  # a bidi override; over the length limit
        refused = client.post(f"/v1/trees/{name}/index", json={"source": str(project)})
        assert refused.status_code == 400, refused.text
        assert "tree name" in error(refused)["message"]
    assert not any(j["state"] == "failed" for j in client.get("/v1/jobs").json()["jobs"])


def test_index_a_new_directory_only_under_the_index_roots(
    client: httpx.Client, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "mod.py").write_text("def answer():\n    return 42\n")
    started = client.post("/v1/trees/other/index", json={"source": str(other)})
    assert started.status_code == 202
    assert wait_job(client, started.json()["id"])["state"] == "done"
    assert client.get("/v1/trees/other").json()["files"] == 1
    outside = client.post("/v1/trees/etc/index", json={"source": "/etc"})
    assert outside.status_code == 400 and "outside" in error(outside)["message"]
    relative = client.post("/v1/trees/x/index", json={"source": "other"})
    assert relative.status_code == 400
    assert client.post("/v1/trees/nope/index").status_code == 404  # nothing to re-index
    deleted = client.delete("/v1/trees/other")
    assert deleted.json() == {"deleted": "other"}
    assert client.get("/v1/trees/other").status_code == 404
    assert client.delete("/v1/trees/other").status_code == 404


def test_queries_run_while_a_reindex_writes(client: httpx.Client, project: Path) -> None:
    for n in range(40):
        (project / "app" / f"gen_{n}.py").write_text(f"def generated_{n}():\n    return {n}\n")
    statuses: list[int] = []
    failures: list[str] = []
    seen: set[int] = set()
    done = threading.Event()

    def ask() -> None:
        try:
            with httpx.Client(base_url=str(client.base_url), headers=AUTH, timeout=120) as c:
                while not done.is_set():
                    r = c.post(
                        "/v1/trees/demo/query", json={"question": "generated_7 user", "k": 5}
                    )
                    statuses.append(r.status_code)
                    if r.status_code == 200:
                        seen.add(c.get("/v1/trees/demo").json()["files"])
        except Exception as exc:  # recorded, asserted below
            failures.append(repr(exc))

    def wait_for(count: int) -> None:
        for _ in range(2400):  # bounded: at most ~120 s on a loaded machine
            if len(statuses) >= count or failures:
                return
            time.sleep(0.05)

    workers = [threading.Thread(target=ask) for _ in range(4)]
    for w in workers:
        w.start()
    wait_for(4)  # queries are running before the index job starts
    job = wait_job(client, client.post("/v1/trees/demo/index").json()["id"])
    wait_for(len(statuses) + 4)  # ... and after it committed
    done.set()
    for w in workers:
        w.join(timeout=120)
    assert job["state"] == "done"
    assert not failures
    assert len(statuses) >= 8 and set(statuses) == {200}
    before, after = 6, 46  # the old version or the new one, never a part of it
    assert seen <= {before, after} and after in seen
    final = client.post("/v1/trees/demo/query", json={"question": "generated_7", "k": 1}).json()
    assert final["files"][0]["path"] == "app/gen_7.py"


# -- failures never take the server down --------------------------------------------------------


def test_a_database_error_is_one_request_failing(
    client: httpx.Client, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_store(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("database is locked")

    def broken_sqlite(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(service, "read", broken_store)
    locked = client.get("/v1/trees/demo/files", params={"path": "big.txt"})
    assert locked.status_code == 503 and error(locked)["type"] == "unavailable"
    monkeypatch.setattr(service, "read", broken_sqlite)
    crashed = client.get("/v1/trees/demo/files", params={"path": "big.txt"})
    assert crashed.status_code == 500
    assert error(crashed)["message"] == "internal error (OperationalError); see the log"
    assert client.get("/v1/trees").status_code == 200


def test_a_query_past_its_deadline_is_a_gateway_timeout_not_a_bad_request(
    client: httpx.Client, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query that ran out of time waiting for the LLM (TREESEEK_DEADLINE of the server) was
    a 400 bad_request, as if the request had been wrong: it is a 504, as the server's own
    wall-time limit is; a failing provider stays a 502."""

    def late(*args: Any, **kwargs: Any) -> Any:
        raise DeadlineExceeded("the query reached its 30 s deadline (30.2 s elapsed)")

    def down(*args: Any, **kwargs: Any) -> Any:
        raise LLMError("anthropic:m: provider still failing after 5 attempts: HTTP 529")

    monkeypatch.setattr(service, "query", late)
    response = client.post("/v1/trees/demo/query", json={"question": "where is main"})
    assert response.status_code == 504 and error(response)["type"] == "timeout"
    assert "30 s deadline" in error(response)["message"]
    monkeypatch.setattr(service, "query", down)
    response = client.post("/v1/trees/demo/query", json={"question": "where is main"})
    assert response.status_code == 502 and error(response)["type"] == "upstream"


def test_wall_time_limit(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = treeseek.open(db_path)
    service = Service(db, limits=Limits(max_seconds=0.2))
    release = threading.Event()

    def slow(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return {}

    monkeypatch.setattr(service, "tree", slow)
    try:
        with live(create_app(service)) as url:
            response = httpx.get(url + "/v1/trees/demo", timeout=60)
            assert response.status_code == 504 and error(response)["type"] == "timeout"
            release.set()
            assert httpx.get(url + "/v1/trees", timeout=60).status_code == 200
    finally:
        release.set()
        db.close()


# -- budgeted context, outline, symbols by name (the context layer) -----------------------------


def test_query_with_a_budget_answers_spans(client: httpx.Client) -> None:
    answer = client.post(
        "/v1/trees/demo/query", json={"question": "normalize_name strips and titles", "budget": 300}
    ).json()
    assert answer["budget"]["limit"] == 300 and answer["budget"]["used"] <= 300
    span = answer["context"][0]
    assert span["path"] == "app/service.py" and span["start_line"] >= 1
    assert "normalize_name" in span["text"]
    assert answer["files"][0]["path"] == "app/service.py"
    assert answer["freshness"]["stale"] is False


def test_outline_and_find_symbol(client: httpx.Client) -> None:
    outline = client.get("/v1/trees/demo/outline", params={"path": "app/service.py"}).json()
    names = [i["name_path"] for f in outline["files"] for i in f["items"]]
    assert "app/service.py::UserService.get_user" in names
    assert outline["files"][0]["omitted"] == 0 and outline["files"][0]["unit"] == "lines"
    whole = client.get("/v1/trees/demo/outline", params={"path": "app"}).json()
    assert {f["path"] for f in whole["files"]} >= {"app/service.py", "app/api/users.py"}
    found = client.get("/v1/trees/demo/symbols/find", params={"name": "normalize_name"}).json()
    assert found["name_path"] == "app/service.py::normalize_name"
    assert found["text"].startswith("def normalize_name(name):")
    ambiguous = client.get("/v1/trees/demo/symbols/find", params={"name": "get_user"})
    assert ambiguous.status_code == 409
    body = error(ambiguous)
    assert body["type"] == "ambiguous"
    assert "app/service.py::AdminService.get_user" in body["candidates"]
    missing = client.get("/v1/trees/demo/symbols/find", params={"name": "no_such_thing"})
    assert missing.status_code == 404


def test_a_non_utf8_file_name_is_shown_not_a_500(tmp_path: Path) -> None:
    """Stored names keep non-UTF-8 bytes as surrogate escapes, which JSON cannot encode: every
    answer naming one (listings, queries, retrieval, errors) shows the byte as ``\\xNN``."""
    root = tmp_path / "weird"
    root.mkdir()
    (root / os.fsdecode(b"bad\xffname.py")).write_text("def odd_name_handler():\n    return 2\n")
    (root / "ok.py").write_text("x = 1\n")
    db = treeseek.open(tmp_path / "w.db")
    try:
        db.index(root, name="weird")
        with (
            live(create_app(Service(db, freshness_ttl=0))) as url,
            httpx.Client(base_url=url, timeout=60) as c,
        ):
            nodes = c.get("/v1/trees/weird/nodes")
            assert nodes.status_code == 200, nodes.text
            assert "bad\\xffname.py" in [n["path"] for n in nodes.json()["nodes"]]
            for body in ({"question": "odd_name_handler"}, {"question": "odd", "budget": 500}):
                answer = c.post("/v1/trees/weird/query", json=body)
                assert answer.status_code == 200, answer.text
                assert answer.json()["files"][0]["path"] == "bad\\xffname.py"
            items = c.post("/v1/retrieve", json={"tree": "weird", "query": "odd_name_handler"})
            assert items.status_code == 200 and items.json()["items"][0]["source"] == (
                "bad\\xffname.py"
            )
            outline = c.get("/v1/trees/weird/outline")
            assert outline.status_code == 200, outline.text
    finally:
        db.close()


def test_index_jobs_coalesce_while_queued_and_the_queue_is_bounded(
    client: httpx.Client, project: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs_module, "MAX_QUEUED_JOBS", 3, raising=False)
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the first job waits for the write lock, the rest queue
    try:
        first = client.post("/v1/trees/demo/index").json()["id"]
        while client.get(f"/v1/jobs/{first}").json()["state"] == "queued":
            time.sleep(0.05)
        repeats = [client.post("/v1/trees/demo/index") for _ in range(4)]
        assert {r.status_code for r in repeats} == {202}
        assert len({r.json()["id"] for r in repeats} - {first}) == 1  # one queued job, not 4
        others = [
            client.post(f"/v1/trees/copy{n}/index", json={"source": str(project)}) for n in (1, 2)
        ]
        assert [r.status_code for r in others] == [202, 202]
        full = client.post("/v1/trees/copy3/index", json={"source": str(project)})
        assert full.status_code == 413
        assert "3 index jobs are already queued" in error(full)["message"]
    finally:
        holder.rollback()
        holder.close()
    for job_id in [first, repeats[0].json()["id"], *(r.json()["id"] for r in others)]:
        assert wait_job(client, job_id)["state"] == "done"
    assert len(client.get("/v1/jobs").json()["jobs"]) == 4
    assert client.get("/v1/trees/copy3").status_code == 404


def test_a_read_is_bounded_in_characters_and_says_how_to_read_on(tmp_path: Path) -> None:
    """5,000 lines a read left one answer as big as the 1 MiB stored-file cap (a minified
    or long-line data file): a read gives at most ``max_read_chars`` characters, whole lines
    while they fit, and says where it stopped and how to read on."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "rows.csv").write_text("".join(f"{i:04d}," + "x" * 95 + "\n" for i in range(1, 51)))
    (root / "min.js").write_text("var a=1;" * 40_000 + "\n")  # one 320,000-character line
    db_path = tmp_path / "d.db"
    with treeseek.open(db_path) as db:
        db.index(root, name="data")
        service = Service(db, limits=Limits(max_read_chars=1_000), freshness_ttl=0)
        with (
            live(create_app(service, token=TOKEN)) as url,
            httpx.Client(base_url=url, headers=AUTH, timeout=60) as c,
        ):
            whole = c.get("/v1/trees/data/files", params={"path": "rows.csv"}).json()
            assert (whole["start_line"], whole["end_line"], whole["total_lines"]) == (1, 9, 50)
            assert len(whole["text"]) <= 1_000 and whole["text"].endswith("0009," + "x" * 95)
            assert whole["truncated"] is True and "start=10" in whole["note"]
            ranged = c.get(
                "/v1/trees/data/files", params={"path": "rows.csv", "start": 10, "end": 50}
            ).json()
            assert (ranged["start_line"], ranged["end_line"]) == (10, 18)
            assert ranged["truncated"] is True and "start=19" in ranged["note"]
            small = c.get("/v1/trees/data/files", params={"path": "rows.csv", "start": 48}).json()
            assert small["end_line"] == 50 and small["truncated"] is False
            assert small["note"] is None
            line = c.get("/v1/trees/data/files", params={"path": "min.js"}).json()
            assert line["text"] == ("var a=1;" * 125) and line["end_line"] == 1
            assert line["truncated"] is True and "320,000 characters" in line["note"]

        result = anyio.run(
            build_server(service).call_tool, "read", {"tree": "data", "path": "rows.csv"}
        )
        shown = str(result)
        assert "rows.csv:1-9 of 50" in shown and "start=10" in shown


def test_a_file_s_symbols_are_bounded_and_say_how_many_there_are(tmp_path: Path) -> None:
    """/symbols listed every symbol of a file: a generated one (50,000 functions in the 1 MiB
    stored-file cap) made an answer of megabytes. The first ``max_symbols`` come, with the
    total and ``truncated``."""
    root = tmp_path / "gen"
    root.mkdir()
    (root / "gen.py").write_text("".join(f"def f{i}():\n    pass\n" for i in range(30)))
    (root / "small.py").write_text("def one():\n    pass\n")
    with treeseek.open(tmp_path / "g.db") as db:
        db.index(root, name="gen")
        service = Service(db, limits=Limits(max_symbols=20), freshness_ttl=0)
        with (
            live(create_app(service, token=TOKEN)) as url,
            httpx.Client(base_url=url, headers=AUTH, timeout=60) as c,
        ):
            big = c.get("/v1/trees/gen/symbols", params={"path": "gen.py"}).json()
            assert (len(big["symbols"]), big["total_symbols"], big["truncated"]) == (20, 30, True)
            assert big["symbols"][0]["name_path"] == "gen.py::f0"
            small = c.get("/v1/trees/gen/symbols", params={"path": "small.py"}).json()
            assert (len(small["symbols"]), small["total_symbols"], small["truncated"]) == (
                1,
                1,
                False,
            )


def test_find_symbol_of_a_symbol_over_the_read_limits_is_cut_and_says_so(tmp_path: Path) -> None:
    """find_symbol read the symbol's lines as a range: one over the line limit (a 6,000-line
    class) was refused with "read a smaller range" (no range was given), and one cut at the
    characters limit came without a word of it (end_line simply earlier)."""
    root = tmp_path / "big"
    root.mkdir()
    body = "".join(f"    def m{i}(self):\n        return {i}\n" for i in range(20))
    (root / "huge.py").write_text("class Huge:\n" + body)  # lines 1-41
    with treeseek.open(tmp_path / "b.db") as db:
        db.index(root, name="big")
        by_lines = Service(db, limits=Limits(max_lines=10), freshness_ttl=0)
        with (
            live(create_app(by_lines, token=TOKEN)) as url,
            httpx.Client(base_url=url, headers=AUTH, timeout=60) as c,
        ):
            found = c.get("/v1/trees/big/symbols/find", params={"name": "Huge"})
            assert found.status_code == 200, found.text
            data = found.json()
            assert (data["start_line"], data["end_line"], data["symbol_end_line"]) == (1, 10, 41)
            assert data["truncated"] is True and "start=11" in data["note"]
        by_chars = Service(db, limits=Limits(max_read_chars=100), freshness_ttl=0)
        shown = str(
            anyio.run(
                build_server(by_chars).call_tool, "find_symbol", {"tree": "big", "name": "Huge"}
            )
        )
        assert "huge.py:1-" in shown and "read on with start=" in shown
        whole = Service(db, freshness_ttl=0).find_symbol("big", "Huge")
        assert (whole["end_line"], whole["truncated"], whole["note"]) == (41, False, None)
