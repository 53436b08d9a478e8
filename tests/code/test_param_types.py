"""Parameter types read back from signatures, per signature style."""

from __future__ import annotations

from treeseek.code.param_types import parameter_types


def test_colon_style_python_typescript_rust() -> None:
    sig = 'charge(order: Order, *, n: int = 1, cb: Optional[Cb] = None, x: "Fwd" | None = None)'
    assert parameter_types(sig, "python") == {"order": "Order", "n": "int", "cb": "Cb", "x": "Fwd"}
    assert parameter_types("charge(self, *args, **kw) -> int", "python") == {}
    ts = "public async find(id: string, repo?: Repo<User>, cb: (x: A) => B): Promise<User>"
    assert parameter_types(ts, "typescript") == {"id": "string", "repo": "Repo"}
    rs = "fn get(&self, k: &str, store: &mut Store, m: crate::a::Map<K, V>) -> Option<&It>"
    assert parameter_types(rs, "rust") == {"k": "str", "store": "Store", "m": "crate.a.Map"}


def test_type_first_and_go_styles() -> None:
    java = "@Override public void run(final Repo repo, List<String> xs, @Nullable Other o)"
    assert parameter_types(java, "java") == {"repo": "Repo", "xs": "List", "o": "Other"}
    assert parameter_types("void Run(Repo repo, ref int x)", "csharp") == {
        "repo": "Repo",
        "x": "int",
    }
    assert parameter_types("int area(const Shape *s)", "cpp") == {"s": "Shape"}
    go = "func (s *Server) Start(ctx context.Context, h *Handler) error"
    assert parameter_types(go, "go") == {"s": "Server", "ctx": "context.Context", "h": "Handler"}
    assert parameter_types("no parens", "python") == {}
