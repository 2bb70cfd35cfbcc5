"""An ONNX graph written node by node: what the detector's two graph makers share.

``yolo_graph`` writes YOLOv8n with seeded random weights, ``yolov5_graph`` writes YOLOv5 with
a checkpoint's weights; both emit the same few operators (a convolution, SiLU, nearest
upsampling, concatenation, max pooling) and finish a model the same way. The learned
parameters become the graph's initializers and nothing else does (constants are Constant
nodes), so a graph's initializers are exactly its model's parameters.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["OPSET", "Graph"]

OPSET = 17
_IR_VERSION = 8  # the IR that goes with opset 17: loadable by any onnxruntime >= 1.11


class Graph:
    """Nodes and initializers in the order written; every output named after its layer."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def _name(self, prefix: str) -> str:
        self._count += 1
        return f"/{prefix}/out{self._count}"

    def node(self, op: str, inputs: list[str], prefix: str, n_out: int = 1, **attrs) -> list[str]:
        outputs = [self._name(prefix) for _ in range(n_out)]
        self.nodes.append(
            helper.make_node(op, inputs, outputs, name=f"/{prefix}/{op}{self._count}", **attrs)
        )
        return outputs

    def param(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def const(self, array: np.ndarray, prefix: str) -> str:
        (out,) = self.node("Constant", [], prefix, value=numpy_helper.from_array(array))
        return out

    def conv2d(
        self, x: str, weight: np.ndarray, bias: np.ndarray, stride: int, pad: int, name: str,
        groups: int = 1,
    ) -> str:  # fmt: skip
        """A Conv2d with these parameters (named ``name.weight``, ``name.bias``)."""
        k = weight.shape[2]
        inputs = [x, self.param(f"{name}.weight", weight), self.param(f"{name}.bias", bias)]
        grouped = {"group": groups} if groups != 1 else {}
        (y,) = self.node(
            "Conv", inputs, name, kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad] * 4, **grouped,
        )  # fmt: skip
        return y

    def silu(self, x: str, name: str) -> str:
        (sig,) = self.node("Sigmoid", [x], name)
        (out,) = self.node("Mul", [x, sig], name)
        return out

    def maxpool(self, x: str, k: int, name: str) -> str:
        """Stride 1, same size out (SPPF's pooling)."""
        (y,) = self.node(
            "MaxPool", [x], name, kernel_shape=[k, k], strides=[1, 1], pads=[k // 2] * 4
        )
        return y

    def upsample(self, x: str, name: str) -> str:
        """Nearest, twice the height and width (torch's nn.Upsample(scale_factor=2))."""
        scales = self.const(np.array([1, 1, 2, 2], dtype=np.float32), name)
        (y,) = self.node(
            "Resize", [x, "", scales], name, mode="nearest",
            coordinate_transformation_mode="asymmetric", nearest_mode="floor",
        )  # fmt: skip
        return y

    def concat(self, xs: list[str], name: str, axis: int = 1) -> str:
        (y,) = self.node("Concat", xs, name, axis=axis)
        return y

    def model(
        self, out: str, name: str, input_size: int, n_anchors: int, n_outputs: int, doc: str,
        props: dict[str, str],
    ) -> onnx.ModelProto:  # fmt: skip
        """The finished model: input "images" (1, 3, S, S), output "output0"
        (1, n_outputs, n_anchors) taken from ``out``."""
        self.nodes.append(helper.make_node("Identity", [out], ["output0"], name="/output0"))
        images = helper.make_tensor_value_info(
            "images", TensorProto.FLOAT, [1, 3, input_size, input_size]
        )
        output = helper.make_tensor_value_info(
            "output0", TensorProto.FLOAT, [1, n_outputs, n_anchors]
        )
        graph = helper.make_graph(self.nodes, name, [images], [output], self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="carla_demo.yolo",
            doc_string=doc,
        )
        model.ir_version = _IR_VERSION
        helper.set_model_props(model, props)
        return model
