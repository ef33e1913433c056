"""Linear types as fms registers them: a name -> module factory, and a name -> TP sharding function."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

import torch.nn.functional as F
from torch import nn


class FloatLinear(nn.Linear):
    """nn.Linear computing in float32 (the host's torch 1.13 has no half matmul)."""

    def forward(self, x):
        bias = None if self.bias is None else self.bias.float()
        return F.linear(x.float(), self.weight.float(), bias)


type_factory: Dict[str, Callable] = {"torch_linear": lambda i, o, bias, config=None: FloatLinear(i, o, bias)}
type_sharding: Dict[str, Callable] = {"torch_linear": lambda *args: None}


def register_linear_type_to_module_map(name: str, factory: Callable) -> None:
    type_factory[name] = factory


def register_linear_type_to_sharding_map(name: str, function: Callable) -> None:
    type_sharding[name] = function


def get_linear_type(linear_config: Optional[Mapping[str, Any]], module_name: Optional[str] = None) -> str:
    if not linear_config or not linear_config.get("linear_type"):
        return "torch_linear"
    linear_type = linear_config["linear_type"]
    if callable(linear_type):
        try:
            chosen = linear_type(module_name)
        except Exception as error:
            raise RuntimeError("Error in user-provided function linear_type, while receiving "
                               f"module_name={module_name if module_name is not None else 'None'}.") from error
        return "torch_linear" if chosen is None else chosen.lower()
    return linear_type.lower()


def get_linear(in_features: int, out_features: int, bias: bool, linear_config, module_name: str):
    chosen = get_linear_type(linear_config, module_name)
    if chosen not in type_factory:
        raise KeyError(f"Unsupported linear type `{chosen}`")
    return type_factory[chosen](in_features, out_features, bias, dict(linear_config or {}, module_name=module_name))
