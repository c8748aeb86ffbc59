"""OpenVINO as a `ferry bench` peer (see common.py for the protocol): the CPU plugin with
INFERENCE_NUM_THREADS = ferry's threads, one stream, the LATENCY hint, and ferry's precision as
INFERENCE_PRECISION_HINT: f32 when ferry runs fp32 (on CPUs with AVX-512 BF16 or AMX OpenVINO would
otherwise silently compute in bfloat16, which is not the fp32 comparison the benchmark makes), bf16 when
ferry runs bf16 or mixed-bf16, f16 for fp16 and mixed-fp16 (OpenVINO's CPU plugin computes in f16 only
where the CPU has it, and in f32 elsewhere). Dynamic dims are fixed to the batch's input shapes before
compiling."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

try:
    import openvino as ov
except ImportError as e:
    common.fail("cannot import openvino in %s: %s" % (sys.executable, e), 3)

# ferry's --precision -> OpenVINO's inference precision hint.
PRECISION_HINT = {"fp32": "f32", "bf16": "bf16", "mixed-bf16": "bf16", "fp16": "f16", "mixed-fp16": "f16"}


def main():
    job = common.load_job()
    threads = int(job["threads"])
    precision = PRECISION_HINT.get(job.get("precision", "fp32"), "f32")
    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY",
              "INFERENCE_PRECISION_HINT": precision}

    def make_runner(batch, inputs):
        model = core.read_model(job["model"])
        shapes = {}
        for port in model.inputs:
            name = port.get_any_name()
            if name not in inputs:
                common.fail("input %r is not in %s" % (name, list(inputs)))
            shapes[port] = ov.PartialShape(list(inputs[name].shape))
        model.reshape(shapes)
        compiled = core.compile_model(model, "CPU", config)
        req = compiled.create_infer_request()
        feeds = {name: inputs[name] for name in (p.get_any_name() for p in model.inputs)}
        def outputs():
            res = req.infer(feeds)
            return {port.get_any_name(): res[port] for port in compiled.outputs}
        return (lambda: req.infer(feeds)), outputs

    settings = ("CPU plugin, INFERENCE_NUM_THREADS=%d, NUM_STREAMS=1, LATENCY hint, INFERENCE_PRECISION_HINT=%s"
                % (threads, precision))
    version = getattr(ov, "__version__", None) or ov.get_version()
    common.bench_batches(job, "openvino", version.split("-")[0],
                         settings, make_runner)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        common.fail("%s: %s" % (type(e).__name__, e))
