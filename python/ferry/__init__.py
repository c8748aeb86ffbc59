"""ferry: check, compile, run, compare and benchmark deep-learning models for another device.

The Python face of the ferry toolkit (the same C++ library as the ``ferry`` command):

    import ferry
    sess = ferry.Session("model.onnx", target="ascend310p")     # onnxruntime.InferenceSession's habits
    logits, = sess.run(None, {"input": x})
    report = ferry.check("model.onnx", target="ascend310p")     # typed reports; .to_dict() is the CLI's JSON

``ferry.torch`` speaks the terms of an ``nn.Module`` (module paths, state_dict keys). docs/python.md.
"""
from ._ferry import (  # noqa: F401  (re-exported)
    Error,
    InternalError,
    InvalidArgument,
    IOError,
    NotSupported,
    OutOfRange,
    __version__,
)
from .reports import BenchReport, CheckReport, CompareReport, CompileReport, EvaluateReport, Report
from .session import NodeArg, Session
from .tools import bench, check, compare, compile
from .evaluation import evaluate, merge_evaluations, preprocess_image

__all__ = [
    "__version__",
    "Error", "InvalidArgument", "NotSupported", "IOError", "OutOfRange", "InternalError",
    "Session", "NodeArg",
    "check", "compile", "compare", "bench", "evaluate", "merge_evaluations", "preprocess_image",
    "Report", "CheckReport", "CompileReport", "CompareReport", "BenchReport", "EvaluateReport",
]
