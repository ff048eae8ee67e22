"""The attention ops of the table.  Their scalars go to the C function in an
``aiter_attention_params`` struct, which ``_params`` fills from the arguments."""
from .types import MUTATED, Arg, Op, Out


_native = []  # cffi's new, the struct's pointer type, its init function: at the first call (the table loads
# without the library), not looked up again by each call (two imports and a type look-up: 1-2 us)


def _params(a, outs, dl):
    """The params struct of one call: ``a`` the arguments, ``outs`` the outputs,
    ``dl`` a tensor's DLTensor pointer.  Returned with what it points to."""
    if not _native:
        from .._call import arg_type
        from .._lib import ffi, lib
        p_type = arg_type("aiter_attention_params_init", "aiter_attention_params *")  # no parse of the type string
        _native.extend((ffi.new, p_type, lib.aiter_attention_params_init))
    new, p_type, init = _native
    p = new(p_type)
    init(p)
    scale = a.get("softmax_scale")
    p.softmax_scale = 0.0 if scale is None else float(scale)
    p.causal = 1 if a.get("causal", True) else 0
    p.window_left = int(a.get("window_left", -1))
    p.k_scale, p.v_scale = float(a.get("k_scale", 1.0)), float(a.get("v_scale", 1.0))
    p.softcap = float(a.get("softcap", 0.0))
    if "lse" in outs:
        p.lse = dl(outs["lse"])
    return p


def _scale():
    return Arg("softmax_scale", "float", optional=True, keyword=True)


def _kw(name, kind, default):
    return Arg(name, kind, default=default, keyword=True)


def _paged_scalars():
    return [_scale(), _kw("window_left", "int", -1), _kw("k_scale", "float", 1.0), _kw("v_scale", "float", 1.0),
            _kw("softcap", "float", 0.0)]


def _tokens_heads(a):
    return tuple(a["q"].shape[:2])


def _f32(a):
    return "float32"


def _split_kv_workspace(a):
    """paged_decode_attention_split_kv's workspace for these shapes, in bytes."""
    from .._lib import lib
    from ._shapes import query
    return query(lib.aiter_paged_decode_attention_workspace_size, [a["q"], a["k_cache"], a["block_table"]])


def attention_ops():
    paged = [Arg("q"), Arg("k_cache"), Arg("v_cache"), Arg("block_table"), Arg("context_lens")]
    paged_order = ["out", "q", "k_cache", "v_cache", "block_table", "context_lens"]
    q_like = Out.same_as("out", "q")
    return [
        Op("prefill_attention", "aiter_prefill_attention",
           [Arg("q"), Arg("k"), Arg("v"), Arg("cu_seqlens_q"),
            Arg("cu_seqlens_k", optional=True, same_as="cu_seqlens_q"), _scale(), _kw("causal", "bool", True),
            _kw("window_left", "int", -1), _kw("softcap", "float", 0.0)],
           [Out("out", lambda a: _tokens_heads(a) + (a["v"].shape[-1],), lambda a: a["q"]),
            Out("lse", _tokens_heads, _f32, optional=True)],
           ["out", "q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "@params"], params=_params),
        Op("paged_decode_attention", "aiter_paged_decode_attention", paged + _paged_scalars(), [q_like],
           paged_order + ["@params"], params=_params),
        Op("paged_decode_attention_split_kv", "aiter_paged_decode_attention_split_kv",
           paged + [Arg("workspace", MUTATED, keyword=True)] + _paged_scalars(), [q_like],
           paged_order + ["workspace", "@params"], params=_params,
           scratch={"workspace": _split_kv_workspace}),
        Op("paged_prefill_attention", "aiter_paged_prefill_attention",
           paged + [Arg("cu_seqlens_q"), _scale(), _kw("causal", "bool", True), _kw("window_left", "int", -1),
                    _kw("softcap", "float", 0.0), _kw("k_scale", "float", 1.0), _kw("v_scale", "float", 1.0)],
           [q_like, Out("lse", _tokens_heads, _f32, optional=True)], paged_order + ["cu_seqlens_q", "@params"],
           params=_params),
        Op("reshape_and_cache", "aiter_reshape_and_cache",
           [Arg("key"), Arg("value"), Arg("k_cache", MUTATED), Arg("v_cache", MUTATED), Arg("slot_mapping"),
            _kw("k_scale", "float", 1.0), _kw("v_scale", "float", 1.0)],
           [], ["k_cache", "v_cache", "key", "value", "slot_mapping", "k_scale", "v_scale"]),
    ]
