"""The "fp8" linear type as fms_mo registers it (review D7, D8)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fms.modules import linear as fms_linear


class FP8Linear(nn.Module):
    def __init__(self, in_features, out_features, bias, linear_config):
        super().__init__()
        weights = linear_config["weights"]
        assert weights["symmetric"], "We only support symmetric weights for now"
        assert not weights["dynamic"], "We only support pre-quantized weights for now"
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        # Per tensor only when the strategy says "tensor": a missing or null strategy is channel here.
        self.weight_scale = nn.Parameter(torch.ones((1,) if weights["strategy"] == "tensor" else (out_features, 1)))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.input_activations = linear_config["input_activations"]
        if self.input_activations is not None and not self.input_activations["dynamic"]:
            tensor = self.input_activations["strategy"] == "tensor"
            self.input_scale = nn.Parameter(torch.ones((1,) if tensor else (out_features, 1)))

    def forward(self, x):
        # The weights dequantized in the scale's dtype (the AQT is built with weight_scale.dtype).
        w = self.weight.to(self.weight_scale.dtype) * self.weight_scale
        if self.input_activations is None:
            return F.linear(x.to(w.dtype), w, self.bias)
        # Activation quantization: a coarse per-row grid stands in for FP8 here.
        x = x.float()
        scale = x.abs().amax(-1, keepdim=True).clamp(min=1e-12) / 448.0
        quantized = torch.round(x / scale / 16.0) * 16.0 * scale
        bias = None if self.bias is None else self.bias.float()
        return F.linear(quantized, w.float(), bias)


def shard_fp8_linear(linear_config, module):
    # The weight-scale layout is read from the activation strategy.
    strategy = linear_config["input_activations"]["strategy"]
    weights = linear_config["weights"]["strategy"]
    if (weights == "channel") != (strategy == "token"):
        raise RuntimeError(f"size mismatch for weight_scale: {weights} weights with {strategy} activations")


fms_linear.register_linear_type_to_module_map("fp8", FP8Linear)
fms_linear.register_linear_type_to_sharding_map("fp8", shard_fp8_linear)
