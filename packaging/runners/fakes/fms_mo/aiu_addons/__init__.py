"""fms_mo's config inference as it behaves upstream (review D2, D6): only group_0 is read, ignore
entries are compared as `fms_name in entry` with only lm_head translated to head."""

from __future__ import annotations


def _infer_quantization_config(quant_config: dict):
    if quant_config["quant_method"] != "compressed-tensors" or quant_config["quantization_status"] != "compressed":
        return None
    group = quant_config["config_groups"]["group_0"]
    if group["weights"]["type"] != "float" or group["weights"]["num_bits"] != 8:
        return None
    import fms_mo.aiu_addons.fp8.fp8_linear  # noqa: F401

    renamed = {"lm_head": "head"}

    def fp8_linear_type(name):
        for entry in quant_config["ignore"]:
            if name in renamed.get(entry, entry):  # TypeError when name is None
                return "torch_linear"
        for target in group["targets"]:
            if target == "Linear" or name in renamed.get(target, target):
                return "fp8"
        return "torch_linear"

    return {"linear_type": fp8_linear_type, "input_activations": group["input_activations"],
            "output_activations": group["output_activations"], "weights": group["weights"]}
