"""ferry.torch.export and the module map: both exporters (dynamo, TorchScript) on resnet18, a
transformer encoder and a module called twice; what is stored in the model and read back."""
import json
import os

import pytest

torch = pytest.importorskip("torch", reason="ferry.torch's tests need PyTorch in the venv (scripts/setup.sh)")
torchvision = pytest.importorskip("torchvision", reason="ferry.torch's tests need torchvision in the venv")
onnx = pytest.importorskip("onnx")

import ferry.torch as ft  # noqa: E402
from ferry.torch.module_map import METADATA_KEY  # noqa: E402

nn = torch.nn


def resnet18():
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()


class Twice(nn.Module):
    """``fc`` is called twice: one module, two calls."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(self.fc(self.fc(x)))


@pytest.fixture(scope="module")
def resnet_exports(tmp_path_factory):
    """resnet18 exported once by each exporter: {True: dynamo ExportResult, False: TorchScript's}."""
    folder = tmp_path_factory.mktemp("resnet")
    model, x = resnet18(), torch.randn(1, 3, 32, 32)
    return {dynamo: ft.export(model, (x,), str(folder / f"r_{dynamo}.onnx"), dynamo=dynamo) for dynamo in (True, False)}


@pytest.fixture(scope="module")
def encoder_export(tmp_path_factory):
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), 2, enable_nested_tensor=False)
    return ft.export(enc, torch.randn(6, 2, 16), str(tmp_path_factory.mktemp("enc") / "enc.onnx"))


def test_dynamo_nodes_name_module_paths_and_classes(resnet_exports):
    mm = resnet_exports[True].module_map
    assert mm.exporter == "dynamo"
    paths = dict(resnet18().named_modules())
    for name in mm.nodes:
        assert mm.module_of_node(name) in paths, name
    relu = next(n for n in mm.nodes if mm.module_of_node(n) == "layer3.1.relu")
    info = mm.node_info(relu)
    assert info["class"] == "ReLU" and info["op"] == "aten.relu.default"
    assert info["source"].rsplit(":", 1)[0].endswith(os.path.join("torchvision", "models", "resnet.py"))
    assert mm.module_class("layer3.1") == "BasicBlock" and mm.module_class("") == "ResNet"


def test_dynamo_batchnorm_folded_into_conv_is_filed_under_the_batchnorm(resnet_exports):
    mm = resnet_exports[True].module_map
    # The optimizer merged conv2 with bn2: one Conv node, under bn2's scope, reading conv2's (folded) weight.
    (node,) = mm.nodes_of_module("layer3.1.bn2")
    assert mm.node_info(node)["fused"] == ["layer3.1.conv2"]
    assert mm.absorbed_into("layer3.1.conv2") == "layer3.1.bn2"
    assert "layer3.1.conv2" not in mm.modules
    assert mm.node_names_for(["layer3.1.conv2"]) == [node]
    assert mm.initializer_info("layer3.1.conv2.weight") == {"key": "layer3.1.conv2.weight", "match": "folded"}
    assert mm.initializer_info("fc.weight")["match"] == "name"


def test_boundaries_and_execution_order(resnet_exports):
    mm = resnet_exports[True].module_map
    # BasicBlock's relu is called twice; the block ends with its second call.
    assert mm.boundary_tensor("layer3.1") == mm.boundary_tensor("layer3.1.relu")
    assert mm.module_of_tensor(mm.boundary_tensor("layer3.1.bn2")) == "layer3.1.bn2"
    order = mm.modules
    assert order.index("layer3.1.bn1") < order.index("layer3.1.bn2") < order.index("layer3.1.relu") \
        < order.index("layer3.1") < order.index("layer3") < order.index("layer4.0.bn1")
    assert order[-1] == "" and mm.boundary_tensor("") == resnet_exports[True].output_names[0]
    assert set(mm.nodes_of_module("layer3.1")) < set(mm.nodes_of_module("layer3"))
    assert len(mm.nodes_of_module("")) == len(mm.nodes)


def test_torchscript_scopes_resolve_against_the_module(resnet_exports):
    mm = resnet_exports[False].module_map
    assert mm.exporter == "torchscript"
    assert mm.module_of_node("/layer3/layer3.1/conv2/Conv") == "layer3.1.conv2"
    assert mm.node_info("/layer3/layer3.1/conv2/Conv")["class"] == "Conv2d"
    # nn.Sequential children are named from the Sequential's parent: "downsample.0".
    assert mm.module_of_node("/layer2/layer2.0/downsample/downsample.0/Conv") == "layer2.0.downsample.0"
    # Constant folding is off, so BatchNorm keeps a node and conv2 its own output.
    assert mm.module_class("layer3.1.bn2") == "BatchNorm2d" and mm.absorbed_into("layer3.1.conv2") is None
    assert mm.boundary_tensor("layer3.1.relu") == "/layer3/layer3.1/relu_1/Relu_output_0"
    assert mm.state_dict_key("layer3.1.conv2.weight") == "layer3.1.conv2.weight"
    paths = dict(resnet18().named_modules())
    assert all(mm.module_of_node(n) in paths for n in mm.nodes)


def test_module_called_twice_both_exporters(tmp_path):
    torch.manual_seed(0)
    model, x = Twice(), torch.randn(3, 4)
    dyn = ft.export(model, x, str(tmp_path / "d.onnx")).module_map
    ts = ft.export(model, x, str(tmp_path / "t.onnx"), dynamo=False).module_map
    for mm in (dyn, ts):
        assert mm.modules == ["fc", "out", ""]
        assert len(mm.nodes_of_module("fc")) == 2
    assert ts.nodes_of_module("fc") == ["/fc/Gemm", "/fc_1/Gemm"]  # "fc_1": TorchScript's second call
    assert ts.boundary_tensor("fc") == "/fc_1/Gemm_output_0"


def test_encoder_weights_matched_by_value(encoder_export):
    mm = encoder_export.module_map
    inits = mm.to_dict()["initializers"]
    # The exporter pre-transposes Linear weights for MatMul ("val_N") and merges the two layers' copies.
    linear1 = [v for v in inits.values() if v["key"] == "layers.0.linear1.weight"]
    assert linear1 and linear1[0]["match"] == "transposed" and linear1[0]["also"] == ["layers.1.linear1.weight"]
    assert mm.module_class("layers.1.self_attn") == "MultiheadAttention"
    assert mm.modules.index("layers.0.norm2") < mm.modules.index("layers.0") < mm.modules.index("layers.1.self_attn")


def test_map_is_stored_in_the_model_and_reads_back(resnet_exports):
    result = resnet_exports[True]
    model = onnx.load(result.path, load_external_data=False)
    stored = [p.value for p in model.metadata_props if p.key == METADATA_KEY]
    assert len(stored) == 1 and json.loads(stored[0])["version"] == 1
    for source in (result.path, model):
        assert ft.load_module_map(source).to_dict() == result.module_map.to_dict()
    assert ft.ModuleMap.from_json(result.module_map.to_json()).modules == result.module_map.modules
    onnx.checker.check_model(model)
    assert result.opset == 18 and model.opset_import[0].version == 18


def test_model_without_a_map_and_unknown_keep_entries(tmp_path, resnet_exports):
    bare = onnx.load(resnet_exports[True].path)
    del bare.metadata_props[:]
    with pytest.raises(ValueError, match="no ferry module map"):
        ft.load_module_map(bare)
    with pytest.raises(ValueError, match="neither a module path nor an ONNX node"):
        resnet_exports[True].module_map.node_names_for(["layer9"])


def test_export_leaves_the_module_in_training_mode_if_it_was(tmp_path):
    model = Twice().train()
    ft.export(model, torch.randn(3, 4), str(tmp_path / "m.onnx"))
    assert model.training and model.fc.training
