"""ONNX Runtime as a `ferry bench` peer (see common.py for the protocol): CPU execution provider,
intra-op threads = ferry's threads, inter-op 1, sequential execution, all graph optimizations -- the
settings that make ONNX Runtime fastest for one request at a time on the CPU. Its CPU provider computes
float models in fp32 whatever ferry's --precision: the settings say so when ferry ran lower."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

try:
    import onnxruntime as ort
except ImportError as e:
    common.fail("cannot import onnxruntime in %s: %s" % (sys.executable, e), 3)


def main():
    job = common.load_job()
    threads = int(job["threads"])

    def make_runner(batch, inputs):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(job["model"], so, providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        missing = names - set(inputs)
        if missing:
            common.fail("inputs %s are not in %s" % (sorted(missing), list(inputs)))
        feeds = {k: v for k, v in inputs.items() if k in names}
        names = [o.name for o in sess.get_outputs()]
        return (lambda: sess.run(None, feeds)), (lambda: dict(zip(names, sess.run(None, feeds))))

    settings = ("CPUExecutionProvider, intra_op_num_threads=%d, inter_op_num_threads=1, ORT_SEQUENTIAL, "
                "ORT_ENABLE_ALL" % threads)
    if job.get("precision", "fp32") != "fp32":
        settings += ", fp32 (the CPU provider has no %s mode)" % job["precision"]
    common.bench_batches(job, "onnxruntime", ort.__version__, settings, make_runner)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the last stderr line becomes ferry's error message
        common.fail("%s: %s" % (type(e).__name__, e))
