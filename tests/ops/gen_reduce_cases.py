#!/usr/bin/env python3
"""Extra cases for the ops-reduce ops (reductions, softmax family, normalizations, TopK, Einsum, losses...)
that the ONNX node tests do not cover: older opsets, other dtypes, noop/empty axes, ties, ellipsis.
Expected outputs come from onnx.reference.ReferenceEvaluator, or numpy / onnxruntime where the reference
is wrong (pre-13 Softmax family: the reference ignores the 2D coercion; LRN: it walks the wrong axis). Writes the standard
node-test layout, so the conformance runner runs them:
  gen_reduce_cases.py OUT_DIR && ferry_conformance --data OUT_DIR
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(0)
CASES = []


def case(name, op, inputs, opset, outputs=1, expected=None, tol=None, **attrs):
    """inputs: list of (name, array or None for an omitted optional input)."""
    CASES.append((name, op, inputs, opset, outputs, expected, tol, attrs))


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def write(out_dir, name, op, inputs, opset, n_out, expected, tol, attrs):
    in_names = [n if a is not None else "" for n, a in inputs]
    out_names = [f"y{i}" for i in range(n_out)] if isinstance(n_out, int) else n_out
    node = helper.make_node(op, in_names, out_names, **attrs)
    graph_inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for n, a in inputs if a is not None
    ]
    feeds = {n: a for n, a in inputs if a is not None}
    if isinstance(expected, str) and expected == "ort":
        import onnxruntime  # noqa: PLC0415 - only some cases need it
        probe = helper.make_model(
            helper.make_graph([node], name, graph_inputs,
                              [helper.make_value_info(o, onnx.TypeProto()) for o in out_names]),
            opset_imports=[helper.make_opsetid("", opset)])
        sess = onnxruntime.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = sess.run(None, feeds)
    elif expected is None:
        probe = helper.make_model(
            helper.make_graph([node], name, graph_inputs,
                              [helper.make_value_info(o, onnx.TypeProto()) for o in out_names]),
            opset_imports=[helper.make_opsetid("", opset)])
        expected = ReferenceEvaluator(probe).run(None, feeds)
    expected = [np.asarray(e) for e in expected]
    graph_outputs = [
        helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(e.dtype), e.shape)
        for o, e in zip(out_names, expected)
    ]
    model = helper.make_model(helper.make_graph([node], name, graph_inputs, graph_outputs),
                              opset_imports=[helper.make_opsetid("", opset)])
    d = os.path.join(out_dir, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate((n, a) for n, a in inputs if a is not None):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, e in enumerate(expected):
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(e, out_names[i]).SerializeToString())
    if tol:
        with open(os.path.join(d, "tolerance.txt"), "w") as f:
            f.write(f"{tol[0]} {tol[1]}\n")


def reduce_cases():
    x = f32(3, 4, 5)
    xi = rng.integers(-20, 20, size=(3, 4, 5)).astype(np.int32)
    xpos = np.abs(f32(3, 4, 5)) + 0.1
    ax = np.array([0, -1], dtype=np.int64)
    for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]:
        data = xpos if op == "ReduceLogSum" else x
        stem = "ext_" + op.lower()
        case(f"{stem}_attr_opset11", op, [("x", data)], 11, axes=[1], keepdims=0)
        case(f"{stem}_attr_all_opset11", op, [("x", data)], 11)
        if op != "ReduceSum":
            case(f"{stem}_attr_opset13", op, [("x", data)], 13, axes=[0, 2], keepdims=1)
        case(f"{stem}_input_opset18", op, [("x", data), ("axes", ax)], 18, keepdims=0)
        case(f"{stem}_noop_opset18", op, [("x", data), ("axes", np.array([], dtype=np.int64))], 18,
             noop_with_empty_axes=1)
        case(f"{stem}_absent_axes_opset18", op, [("x", data)], 18, keepdims=0)
        # (the reference's ReduceSumSquare returns int64 for int32 input)
        if op not in ("ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"):
            case(f"{stem}_int32_opset18", op, [("x", xi if op != "ReduceProd" else (xi % 3).astype(np.int32)),
                                               ("axes", np.array([1], dtype=np.int64))], 18)
        case(f"{stem}_f16_opset18", op, [("x", data.astype(np.float16)), ("axes", np.array([2], dtype=np.int64))],
             18, tol=(5e-3, 1e-3))
        case(f"{stem}_f64_opset18", op, [("x", data.astype(np.float64)), ("axes", np.array([1], dtype=np.int64))], 18)
    case("ext_reducesum_input_opset13", "ReduceSum", [("x", x), ("axes", np.array([1], dtype=np.int64))], 13)
    case("ext_reducesum_noop_opset13", "ReduceSum", [("x", x)], 13, noop_with_empty_axes=1)
    case("ext_reducemax_int8_opset13", "ReduceMax", [("x", xi.astype(np.int8))], 13, axes=[2])
    case("ext_reducemin_uint8_opset13", "ReduceMin", [("x", (xi + 20).astype(np.uint8))], 13, axes=[0])
    case("ext_reducemin_bool_opset20", "ReduceMin", [("x", xi > 0), ("axes", np.array([1], dtype=np.int64))], 20)
    case("ext_reducemean_int64_opset18", "ReduceMean", [("x", xi.astype(np.int64)), ("axes", np.array([1], dtype=np.int64))], 18)
    case("ext_reducesum_scalar_opset13", "ReduceSum", [("x", np.array(3.5, dtype=np.float32))], 13, keepdims=0)
    empty = np.zeros((2, 0, 3), dtype=np.float32)
    for op, ident in [("ReduceSum", 0), ("ReduceProd", 1), ("ReduceMax", -np.inf), ("ReduceMin", np.inf),
                      ("ReduceLogSumExp", -np.inf), ("ReduceL2", 0)]:
        case(f"ext_{op.lower()}_empty_keep0_opset18", op, [("x", empty), ("axes", np.array([1], dtype=np.int64))], 18,
             keepdims=0, expected=[np.full((2, 3), ident, dtype=np.float32)])
    case("ext_reducemax_empty_int32_opset18", "ReduceMax",
         [("x", np.zeros((2, 0), dtype=np.int32)), ("axes", np.array([1], dtype=np.int64))], 18,
         expected=[np.full((2, 1), np.iinfo(np.int32).min, dtype=np.int32)])


def softmax_cases():
    x = f32(2, 3, 4)
    for op in ["Softmax", "LogSoftmax", "Hardmax"]:
        s = "ext_" + op.lower()
        case(f"{s}_opset11_axis1", op, [("x", x)], 11, axis=1, expected="ort")  # coerced to 2D [2, 12]
        case(f"{s}_opset11_default", op, [("x", x)], 11, expected="ort")
        case(f"{s}_opset11_axis0", op, [("x", x)], 11, axis=0, expected="ort")
        case(f"{s}_opset11_axis_neg1", op, [("x", x)], 11, axis=-1)
        case(f"{s}_opset13_axis1", op, [("x", x)], 13, axis=1)
        case(f"{s}_opset13_f16", op, [("x", x.astype(np.float16))], 13, axis=0, tol=(5e-3, 1e-3))
        case(f"{s}_opset13_f64", op, [("x", x.astype(np.float64))], 13)
    ties = np.array([[1, 3, 3, 2], [5, 5, 5, 5]], dtype=np.float32)
    case("ext_hardmax_ties", "Hardmax", [("x", ties)], 13)


def arg_cases():
    x = rng.integers(0, 3, size=(3, 4, 5)).astype(np.int32)  # many ties
    for op in ["ArgMax", "ArgMin"]:
        s = "ext_" + op.lower()
        case(f"{s}_opset11_axis2", op, [("x", x)], 11, axis=2, keepdims=0)
        case(f"{s}_opset12_last", op, [("x", x)], 12, axis=1, select_last_index=1)
        case(f"{s}_opset13_first_f16", op, [("x", x.astype(np.float16))], 13, axis=-1)
        case(f"{s}_opset13_uint8", op, [("x", x.astype(np.uint8))], 13, axis=0, keepdims=0)


def topk_cases():
    x = rng.integers(0, 4, size=(3, 6)).astype(np.float32)  # ties
    case("ext_topk_opset7", "TopK", [("x", x)], 7, outputs=2, axis=1, k=3)
    case("ext_topk_opset10", "TopK", [("x", x), ("k", np.array([2], dtype=np.int64))], 10, outputs=2, axis=0)
    case("ext_topk_opset11_smallest_int32", "TopK", [("x", x.astype(np.int32)), ("k", np.array([4], dtype=np.int64))],
         11, outputs=2, largest=0)
    case("ext_topk_opset11_k0", "TopK", [("x", x), ("k", np.array([0], dtype=np.int64))], 11, outputs=2)
    case("ext_topk_opset11_3d_axis1", "TopK", [("x", f32(2, 5, 3)), ("k", np.array([5], dtype=np.int64))], 11,
         outputs=2, axis=1)


def norm_cases():
    x = f32(2, 6, 3, 2)
    case("ext_groupnorm_opset18", "GroupNormalization", [("x", x), ("s", f32(3)), ("b", f32(3))], 18, num_groups=3)
    case("ext_groupnorm_opset21_g1", "GroupNormalization", [("x", x), ("s", f32(6)), ("b", f32(6))], 21,
         num_groups=1, epsilon=1e-3)
    case("ext_instancenorm_f16", "InstanceNormalization",
         [("x", x.astype(np.float16)), ("s", f32(6).astype(np.float16)), ("b", f32(6).astype(np.float16))], 7,
         tol=(5e-3, 2e-3))
    case("ext_instancenorm_3d", "InstanceNormalization", [("x", f32(2, 3, 7)), ("s", f32(3)), ("b", f32(3))], 7)
    case("ext_layernorm_nobias_stats", "LayerNormalization", [("x", x), ("s", f32(3, 2))], 17, outputs=3, axis=2)
    case("ext_layernorm_bcast_scale", "LayerNormalization", [("x", x), ("s", f32(1, 2)), ("b", f32(2))], 17, axis=-2)
    case("ext_layernorm_f16", "LayerNormalization",
         [("x", x.astype(np.float16)), ("s", f32(2).astype(np.float16)), ("b", f32(2).astype(np.float16))], 17,
         tol=(5e-3, 2e-3))
    case("ext_rmsnorm_axis1", "RMSNormalization", [("x", x), ("s", f32(6, 3, 2))], 23, axis=1, epsilon=1e-3)
    xl = f32(2, 7, 3, 3)
    # The reference's LRN walks the batch instead of the channels, so numpy gives the expectation.
    case("ext_lrn_even_size", "LRN", [("x", xl)], 13, size=4, alpha=0.01, beta=0.6, bias=1.5,
         expected=[lrn_numpy(xl, 4, 0.01, 0.6, 1.5)])
    case("ext_mvn_axes1", "MeanVarianceNormalization", [("x", x)], 13, axes=[1, 3])
    case("ext_lpnorm_axis0_p2", "LpNormalization", [("x", x)], 22, axis=0, p=2)
    case("ext_batchnorm_opset15", "BatchNormalization",
         [("x", x), ("s", f32(6)), ("b", f32(6)), ("m", f32(6)), ("v", np.abs(f32(6)) + 0.5)], 15, epsilon=1e-3)
    case("ext_batchnorm_f16_mixed_opset15", "BatchNormalization",
         [("x", x.astype(np.float16)), ("s", f32(6)), ("b", f32(6)), ("m", f32(6)), ("v", np.abs(f32(6)) + 0.5)], 15,
         tol=(5e-3, 2e-3))


def lrn_numpy(x, size, alpha, beta, bias):
    sq = np.zeros_like(x)
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    for ch in range(c):
        sq[:, ch] = np.sum(x[:, max(0, ch - lo):min(c, ch + hi + 1)] ** 2, axis=1)
    return (x / (bias + alpha / size * sq) ** beta).astype(x.dtype)


def cum_cases():
    x = f32(2, 3, 4)
    xi = rng.integers(-5, 5, size=(2, 3, 4)).astype(np.int64)
    for op, opset in [("CumSum", 14), ("CumProd", 26)]:
        s = "ext_" + op.lower()
        case(f"{s}_3d_axis1_excl_rev", op, [("x", x), ("axis", np.array(1, dtype=np.int32))], opset,
             exclusive=1, reverse=1)
        case(f"{s}_3d_int64_axis_neg1_rev", op, [("x", xi), ("axis", np.array(-1, dtype=np.int64))], opset,
             reverse=1)
        case(f"{s}_f16_axis0", op, [("x", x.astype(np.float16)), ("axis", np.array(0, dtype=np.int64))], opset,
             tol=(5e-3, 2e-3))


def einsum_cases():
    a, b = f32(3, 4), f32(4, 5)
    eqs = [
        ("matmul", "ij,jk->ik", [a, b]),
        ("implicit_matmul", "ij,jk", [a, b]),
        ("trace", "ii", [f32(4, 4)]),
        ("diag", "ii->i", [f32(4, 4)]),
        ("diag_3", "iij->ji", [f32(3, 3, 2)]),
        ("outer", "i,j->ij", [f32(3), f32(4)]),
        ("sum_all", "ijk->", [f32(2, 3, 4)]),
        ("batch_ellipsis_bcast", "...ij,...jk->...ik", [f32(2, 1, 3, 4), f32(5, 4, 2)]),
        ("ellipsis_middle", "i...j->j...i", [f32(2, 3, 4, 5)]),
        ("implicit_ellipsis", "...ij", [f32(2, 3, 4)]),
        ("upper_lower", "Ab,bA", [f32(2, 3), f32(3, 2)]),
        ("implicit_order", "ba", [f32(2, 3)]),
        ("three_operands", "ij,jk,kl->il", [f32(2, 3), f32(3, 4), f32(4, 2)]),
        ("attention", "bhqd,bhkd->bhqk", [f32(1, 2, 3, 4), f32(1, 2, 5, 4)]),
        ("spaces", " ij , jk -> ki ", [a, b]),
    ]
    for name, eq, ops in eqs:
        case(f"ext_einsum_{name}", "Einsum", [(f"x{i}", o) for i, o in enumerate(ops)], 12, equation=eq,
             expected=[np.einsum(eq.replace(" ", ""), *ops).astype(np.float32)], tol=(1e-4, 1e-6))
    ai, bi = rng.integers(-5, 5, (3, 4)).astype(np.int32), rng.integers(-5, 5, (4, 2)).astype(np.int32)
    case("ext_einsum_int32", "Einsum", [("x0", ai), ("x1", bi)], 12, equation="ij,jk->ik",
         expected=[np.einsum("ij,jk->ik", ai, bi).astype(np.int32)])


def misc_cases():
    case("ext_det_batch_f64", "Det", [("x", rng.standard_normal((2, 3, 4, 4)))], 11)
    case("ext_det_singular", "Det", [("x", np.array([[1, 2], [2, 4]], dtype=np.float32))], 11,
         expected=[np.array(0, dtype=np.float32)])
    x = f32(3, 5, 2)
    t = rng.integers(0, 5, (3, 2)).astype(np.int64)
    t[0, 0] = 1
    w = np.abs(f32(5))
    case("ext_nll_ii_noweight_mean", "NegativeLogLikelihoodLoss", [("x", x), ("t", t)], 13, ignore_index=1,
         expected=[np.array(-np.mean([x[n, t[n, d], d] for n in range(3) for d in range(2) if t[n, d] != 1]),
                            dtype=np.float32)])
    case("ext_nll_weight_sum", "NegativeLogLikelihoodLoss", [("x", x), ("t", t), ("w", w)], 13, reduction="sum")
    case("ext_nll_weight_none_f64", "NegativeLogLikelihoodLoss",
         [("x", x.astype(np.float64)), ("t", t.astype(np.int32)), ("w", w.astype(np.float64))], 13, reduction="none")
    case("ext_sce_f64_none_logprob", "SoftmaxCrossEntropyLoss", [("x", x.astype(np.float64)), ("t", t)], 13,
         outputs=2, reduction="none")
    case("ext_sce_ii_weight_mean", "SoftmaxCrossEntropyLoss", [("x", x), ("t", t), ("w", w)], 13, ignore_index=1)


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for gen in [reduce_cases, softmax_cases, arg_cases, topk_cases, norm_cases, cum_cases, einsum_cases, misc_cases]:
        gen()
    failed = 0
    for name, op, inputs, opset, n_out, expected, tol, attrs in CASES:
        try:
            write(out, name, op, inputs, opset, n_out, expected, tol, attrs)
        except Exception as e:  # noqa: BLE001 - report reference failures and go on
            failed += 1
            shutil.rmtree(os.path.join(out, name), ignore_errors=True)
            print(f"skipped {name}: {type(e).__name__}: {str(e)[:200]}")
    print(f"wrote {len(CASES) - failed} cases to {out}")


if __name__ == "__main__":
    main()
