"""The MoE ops of the table beyond topk_softmax: topk_sigmoid, grouped_topk,
moe_sorting, fused_moe and fused_moe_fp8 (their scalars go to the C function in an
``aiter_fused_moe_params`` struct, which ``_params`` fills)."""
from .types import MUTATED, Arg, Op, Out, enum_to_c as _enum

SCORING = {"softmax": 0, "sigmoid": 1}  # aiter_moe_scoring
ACTIVATIONS = {"silu": 0, "gelu": 1, "gelu_tanh": 2}  # aiter_moe_activation
VARIANTS = {"auto": 0, "portable": 1, "mma": 2}


def _params(a, outs, dl):
    from .._lib import ffi, lib
    p = ffi.new("aiter_fused_moe_params *")
    lib.aiter_fused_moe_params_init(p)
    p.activation = _enum(ACTIVATIONS, "activation")(a.get("activation", "silu"))
    p.weights_on_input = 1 if a.get("weights_on_input", False) else 0
    p.block_size = int(a.get("block_size", 0))
    p.variant = _enum(VARIANTS, "variant")(a.get("variant", "auto"))
    return p


def _topk_shape(a):
    return (a["gating"].shape[0] if len(a["gating"].shape) else 0, a["k"])


def _topk_outs():
    return [Out("topk_weights", _topk_shape, lambda a: "float32"), Out("topk_ids", _topk_shape, lambda a: "int32")]


def _sorted_rows(a):
    from .._lib import lib
    shape = tuple(a["topk_ids"].shape)
    tokens, k = shape if len(shape) == 2 else (0, 1)
    return max(0, int(lib.aiter_moe_sorting_max_rows(tokens, k, a["num_experts"], a["block_size"])))


def moe_ops():
    routing_order = ["topk_weights", "topk_ids", "gating"]
    return [
        Op("topk_sigmoid", "aiter_topk_sigmoid",
           [Arg("gating"), Arg("k", "int"), Arg("renormalize", "bool", default=False, to_c=int)],
           _topk_outs(), routing_order + ["renormalize"]),
        Op("grouped_topk", "aiter_grouped_topk",
           [Arg("gating"), Arg("k", "int"), Arg("num_expert_group", "int"), Arg("topk_group", "int"),
            Arg("correction_bias", optional=True),
            Arg("scoring_func", "str", default="softmax", to_c=_enum(SCORING, "scoring_func")),
            Arg("renormalize", "bool", default=True, to_c=int), Arg("routed_scaling_factor", "float", default=1.0)],
           _topk_outs(), routing_order + ["correction_bias", "num_expert_group", "topk_group", "scoring_func",
                                          "renormalize", "routed_scaling_factor"]),
        Op("moe_sorting", "aiter_moe_sorting",
           [Arg("topk_ids"), Arg("num_experts", "int"), Arg("block_size", "int"),
            Arg("expert_mask", optional=True)],
           [Out("sorted_ids", lambda a: (_sorted_rows(a),), lambda a: "int32"),
            Out("block_experts", lambda a: (_sorted_rows(a) // max(1, a["block_size"]),), lambda a: "int32"),
            Out("num_valid", lambda a: (1,), lambda a: "int32")],
           ["sorted_ids", "block_experts", "num_valid", "topk_ids", "expert_mask", "num_experts", "block_size"]),
        Op("fused_moe", "aiter_fused_moe",
           [Arg("x"), Arg("w1"), Arg("w2"), Arg("topk_weights"), Arg("topk_ids"), Arg("workspace", MUTATED),
            Arg("expert_mask", optional=True), Arg("activation", "str", default="silu"),
            Arg("weights_on_input", "bool", default=False), Arg("block_size", "int", default=0),
            Arg("variant", "str", default="auto")],
           [Out.same_as("out", "x")],
           ["out", "workspace", "x", "w1", "w2", "topk_weights", "topk_ids", "expert_mask", "@params"],
           params=_params),
        Op("fused_moe_fp8", "aiter_fused_moe_fp8",
           [Arg("x"), Arg("w1"), Arg("w2"), Arg("w1_scale"), Arg("w2_scale"), Arg("topk_weights"), Arg("topk_ids"),
            Arg("workspace", MUTATED), Arg("expert_mask", optional=True), Arg("activation", "str", default="silu"),
            Arg("weights_on_input", "bool", default=False), Arg("block_size", "int", default=0),
            Arg("variant", "str", default="auto")],
           [Out.same_as("out", "x")],
           ["out", "workspace", "x", "w1", "w2", "w1_scale", "w2_scale", "topk_weights", "topk_ids", "expert_mask",
            "@params"], params=_params),
    ]
