"""The detector's ONNX graph on PyTorch's CUDA, for GPUs that onnxruntime cannot drive.

Why a second engine: onnxruntime's CUDA build (``onnxruntime-gpu``) links one CUDA and cuDNN
major version, and a GPU machine set up for PyTorch often has another (PyTorch bundles its
own). There the detector would silently fall back to the CPU and the A/B would measure a
detector ten times slower than the paper's. PyTorch runs the very same graph: ``onnx2torch``
converts the ONNX model (one definition of the network, in ``yolo_graph``), so weights, layout and
post-processing stay those of onnxruntime's path.

Used only when onnxruntime has no CUDA provider, and both ``torch`` with a visible GPU and
``onnx2torch`` import (``CUDA_VISIBLE_DEVICES=`` hides the GPU, for a CPU run on the same
machine). Neither is a dependency of the demo: a GPU machine brings PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

__all__ = ["TorchRunner", "unavailable"]


def unavailable() -> str | None:
    """Why the graph cannot run on torch's CUDA here, or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    try:
        import onnx2torch  # noqa: F401
    except ImportError:
        return "onnx2torch is not installed (pip install onnx2torch)"
    return None


class TorchRunner:
    """``runner(tensor)``: the raw network output for one input, computed on the GPU.

    Deterministic kernels only: the HPRM variants must reproduce the floor's control sequence
    exactly, and cuDNN's autotuner picks algorithms (and summation orders) per run.
    """

    def __init__(self, model: onnx.ModelProto) -> None:
        import onnx2torch
        import torch

        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        self._torch = torch
        self._device = torch.device("cuda")
        self._module: Any = onnx2torch.convert(model).to(self._device).eval()
        self.device = f"{torch.cuda.get_device_name(0)} (torch {torch.__version__})"

    def __call__(self, tensor: np.ndarray) -> np.ndarray:
        torch = self._torch
        with torch.inference_mode():
            out = self._module(torch.from_numpy(tensor).to(self._device))
        if isinstance(out, (tuple, list)):
            out = out[0]
        return out.float().cpu().numpy()
