#!/usr/bin/env python3
"""ScaleScope AIU runner: serves ScaleScope's runner protocol on an IBM AIU host.

NOT RUN ON AIU HARDWARE: this program has not been run on AIU cards (nor with the AIU software
stack) from this repository. Its protocol handling is tested with a stand-in model
(test_aiu_runner.py, and ScaleScope's C++ test_runner talks to it); the model side follows the
public Foundation Model Stack (fms), fms-model-optimizer (fms_mo) and aiu-fms-testing-utils code,
and may need adjusting to the versions installed on your host. Check its results against the CPU
runner (`scalescope-cli compare`, or the workbench's error charts) before trusting them.

What it does: the workbench (or scalescope-cli) starts it through a command line and sends one JSON
request per line on stdin; it answers one JSON line per request on stdout and logs on stderr.

    -> {"id":1,"op":"hello"}
    <- {"id":1,"ok":true,"protocol":1,"device":"aiu","name":"..."}
    -> {"id":2,"op":"load","checkpoint":"/models/roberta-fp8","mode":"fp8"}
    <- {"id":2,"ok":true,"architecture":"RobertaForQuestionAnswering"}
    -> {"id":3,"op":"forward","input_ids":[[0,31414,2]],"attention_mask":[[1,1,1]],
        "capture":["roberta.encoder.layer.0.output"],"output":"/shared/x.safetensors"}
    <- {"id":3,"ok":true,"output":"/shared/x.safetensors","elapsed_ms":12.5}
    -> {"id":4,"op":"shutdown"}
    <- {"id":4,"ok":true}

The output file holds "start_logits"/"end_logits" (QA) or "logits" (MaskedLM) and one tensor per
requested capture point, named by Hugging Face module names ("<module>.input", "<module>.output",
"roberta.embeddings.output", "roberta.encoder.layer.N.output"), float32, little-endian.

Running it:

    # one card
    AIU_WORLD_RANK_0=0000:1e:00.0 python3 aiu_runner.py
    # several cards, tensor parallel; rank 0 talks to the workbench, the others follow
    torchrun --nproc-per-node 4 aiu_runner.py
    # from the workbench or the CLI on another machine (the checkpoint and the exchange folder
    # must be visible at the same paths on both hosts, e.g. a shared mount):
    scalescope-cli qa CKPT --question ... --context ... \\
        --device 'runner:ssh aiu-host torchrun --nproc-per-node 4 /opt/scalescope/aiu_runner.py'

Environment (set up the way aiu-fms-testing-utils does it; anything already set is kept):
FLEX_COMPUTE=SENTIENT and FLEX_DEVICE=VFIO (or PF) for cards, AIU_WORLD_RANK_<rank>=<PCIe address>
per rank, DTLOG_LEVEL=error to keep the compiler quiet; `--device-type senulator` uses
FLEX_COMPUTE=SENULATOR, FLEX_DEVICE=MOCK; `--device-type cpu` runs the fms model eagerly on the
host CPU (useful to check the runner without cards).

Structure: RunnerServer handles the protocol (parsing, validation, rank coordination, the output
file); a ModelAdapter loads and runs the model. FmsAdapter is the AIU one; tests plug in others
with `--adapter module:Class`.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import struct
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

PROTOCOL_VERSION = 1

QA_ARCHITECTURE = "RobertaForQuestionAnswering"
MLM_ARCHITECTURE = "RobertaForMaskedLM"

# The six Linears of an encoder layer, Hugging Face names, in execution order.
ENCODER_LINEARS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


class RequestError(Exception):
    """A request the runner refuses; the message is one sentence for the user."""


def unexpected_failure(error: BaseException) -> str:
    return f"The runner failed: {type(error).__name__}: {error}"


def sentence(text: str) -> str:
    """One line, ending with a period."""
    text = " ".join(str(text).split())
    if not text:
        text = "Unknown error"
    return text if text.endswith((".", "!", "?")) else text + "."


# ---- capture points --------------------------------------------------------------------------


def linear_modules(architecture: str, num_layers: int) -> List[str]:
    modules = [
        f"roberta.encoder.layer.{layer}.{linear}" for layer in range(num_layers) for linear in ENCODER_LINEARS
    ]
    if architecture == QA_ARCHITECTURE:
        modules.append("qa_outputs")
    else:
        modules += ["lm_head.dense", "lm_head.decoder"]
    return modules


def capture_points(architecture: str, num_layers: int) -> List[str]:
    """Every capture point in execution order, as ScaleScope's engine lists them."""
    points = ["roberta.embeddings.output"]
    for layer in range(num_layers):
        for linear in ENCODER_LINEARS:
            module = f"roberta.encoder.layer.{layer}.{linear}"
            points += [module + ".input", module + ".output"]
        points.append(f"roberta.encoder.layer.{layer}.output")
    heads = ["qa_outputs"] if architecture == QA_ARCHITECTURE else ["lm_head.dense", "lm_head.decoder"]
    for module in heads:
        points += [module + ".input", module + ".output"]
    return points


def module_of(point: str) -> str:
    return point.rsplit(".", 1)[0]


# fms's RoBERTa module names (unfused attention) -> Hugging Face module names.
_FMS_LAYER_LINEARS = {
    "attn.in_proj.query": "attention.self.query",
    "attn.in_proj.key": "attention.self.key",
    "attn.in_proj.value": "attention.self.value",
    "attn.dense": "attention.output.dense",
    "ff_sub_layer.w1": "intermediate.dense",
    "ff_sub_layer.w2": "output.dense",
}
_FMS_HEADS = {
    "qa_head": "qa_outputs",
    "classification_head.dense": "lm_head.dense",
    "classification_head.head": "lm_head.decoder",
}


def hf_module_name(fms_name: str) -> Optional[str]:
    """The Hugging Face name of an fms RoBERTa module, or None for modules without a capture point."""
    if fms_name == "base_model.enc_norm":
        return "roberta.embeddings"
    if fms_name in _FMS_HEADS:
        return _FMS_HEADS[fms_name]
    prefix = "base_model.layers."
    if not fms_name.startswith(prefix):
        return None
    rest = fms_name[len(prefix):]
    layer, _, inner = rest.partition(".")
    if not layer.isdigit():
        return None
    if not inner:
        return f"roberta.encoder.layer.{layer}"
    if inner in _FMS_LAYER_LINEARS:
        return f"roberta.encoder.layer.{layer}.{_FMS_LAYER_LINEARS[inner]}"
    return None


# ---- safetensors -----------------------------------------------------------------------------


def _flatten(value: Any) -> Tuple[List[int], List[float]]:
    if isinstance(value, (list, tuple)):
        if not value:
            return [0], []
        shapes_and_values = [_flatten(item) for item in value]
        inner = shapes_and_values[0][0]
        if any(shape != inner for shape, _ in shapes_and_values):
            raise ValueError("a nested list tensor is ragged")
        return [len(value)] + inner, [v for _, values in shapes_and_values for v in values]
    return [], [float(value)]


def float32_payload(value: Any) -> Tuple[List[int], bytes]:
    """(shape, little-endian float32 bytes) of a torch tensor, a numpy array or nested lists.

    Little-endian on every host: AIU hosts include big-endian IBM Z (s390x).
    """
    if hasattr(value, "detach"):  # torch.Tensor
        import torch

        tensor = value.detach().to(device="cpu", dtype=torch.float32).contiguous()
        value = tensor.numpy()
    if hasattr(value, "astype") and hasattr(value, "shape"):  # numpy.ndarray
        import numpy

        array = numpy.ascontiguousarray(value, dtype="<f4")
        return [int(d) for d in array.shape], array.tobytes()
    shape, values = _flatten(value)
    return shape, struct.pack("<%df" % len(values), *values)


def write_safetensors(path: str, tensors: Sequence[Tuple[str, Any]], metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes float32 tensors in the given order; atomically (temporary file, then rename)."""
    header: Dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    payloads = []
    offset = 0
    for name, value in tensors:
        if name in header:
            raise ValueError(f"tensor {name} is written twice")
        shape, data = float32_payload(value)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        payloads.append(data)
        offset += len(data)
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)  # data starts 8-byte aligned
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, ".%s.%d.partial" % (os.path.basename(path), os.getpid()))
    try:
        with open(temporary, "wb") as file:
            file.write(struct.pack("<Q", len(header_bytes)))
            file.write(header_bytes)
            for data in payloads:
                file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


# ---- the model side --------------------------------------------------------------------------


class ModelAdapter:
    """What the protocol needs from a model. Tests replace it; FmsAdapter is the AIU one."""

    device = "cpu"
    name = "model adapter"
    # Set by load(): the Hugging Face architecture, encoder layers, vocabulary size.
    architecture: Optional[str] = None
    num_layers = 0
    vocab_size = 0
    max_tokens = 0

    def load(self, checkpoint: str, mode: str) -> str:
        """Loads a checkpoint folder in mode "fp8" or "dequant"; returns the architecture."""
        raise NotImplementedError

    def forward(
        self,
        input_ids: List[List[int]],
        attention_mask: List[List[int]],
        capture: List[str],
        logit_positions: Optional[List[Tuple[int, int]]],
    ) -> Dict[str, Any]:
        """Returns the outputs ("start_logits"/"end_logits" [batch, seq] or "logits") and the
        requested capture points (each [batch, seq, features]) by name; input rows are padded to
        the longest with the pad id already."""
        raise NotImplementedError

    def capture_unavailable(self, point: str) -> Optional[str]:
        """Why a capture point cannot be recorded (one sentence), or None when it can."""
        return None


def _read_json(path: str) -> Dict[str, Any]:
    try:
        with open(path, "r", encoding="utf-8") as file:
            return json.load(file)
    except FileNotFoundError:
        raise RequestError(f"{path} does not exist.")
    except (OSError, ValueError) as error:
        raise RequestError(f"Cannot read {path}: {error}")


def _safetensors_names(checkpoint: str) -> List[str]:
    """Tensor names of a checkpoint folder from the safetensors headers (no data read)."""
    index = os.path.join(checkpoint, "model.safetensors.index.json")
    if os.path.exists(index):
        return list(_read_json(index).get("weight_map", {}).keys())
    path = os.path.join(checkpoint, "model.safetensors")
    try:
        with open(path, "rb") as file:
            (length,) = struct.unpack("<Q", file.read(8))
            if length > 100_000_000:
                raise RequestError(f"{path} has an implausible header length.")
            header = json.loads(file.read(length))
    except FileNotFoundError:
        raise RequestError(f"{checkpoint} has neither model.safetensors nor model.safetensors.index.json.")
    except (OSError, ValueError, struct.error) as error:
        raise RequestError(f"Cannot read the header of {path}: {error}")
    return [name for name in header if name != "__metadata__"]


class FmsAdapter(ModelAdapter):
    """RoBERTa on AIU cards through fms, fms_mo's FP8 addons and torch.compile(backend="sendnn").

    Captures are forward hooks on the fms modules, renamed to Hugging Face names. The hooks stay
    registered and record only while a forward asks for captures, so torch.compile sees two
    variants of the graph (with and without recording) rather than one per capture set.
    Under tensor parallelism (several ranks) the Linears inside the encoder layers hold shards on
    each rank, so their capture points are refused; embeddings, layer outputs and heads are whole.
    """

    device = "aiu"

    def __init__(self, options: argparse.Namespace, rank: int = 0, world_size: int = 1):
        self.options = options
        self.rank = rank
        self.world_size = world_size
        self.device = "cpu" if options.device_type == "cpu" else "aiu"
        cards = f"{world_size} card{'s' if world_size > 1 else ''}"
        self.name = {
            "aiu": f"AIU runner (fms, sendnn, {cards})",
            "senulator": f"AIU runner (fms, sendnn on the senulator, {world_size} rank(s))",
            "cpu": f"AIU runner script on host CPU (fms eager, {world_size} rank(s))",
        }[options.device_type]
        self.model = None
        self.compiled = None
        # Both modes of the current checkpoint stay loaded: evaluation without a reference
        # alternates fp8 and dequant per batch, and a recompilation per switch would take minutes.
        self.loaded_models: Dict[Tuple[str, str], Tuple[Any, Any]] = {}
        self.pad_id = 1
        self._recording = False
        self._records: Dict[str, Any] = {}
        self._torch = None

    # The AIU environment as aiu-fms-testing-utils sets it up, before torch_sendnn is imported.
    def prepare_environment(self) -> None:
        kind = self.options.device_type
        if kind == "aiu":
            if "AIU_WORLD_RANK_0" not in os.environ:
                raise RequestError(
                    "AIU_WORLD_RANK_0 is not set; set AIU_WORLD_RANK_<rank> to each card's PCIe address."
                )
            os.environ.setdefault("FLEX_COMPUTE", "SENTIENT")
            os.environ.setdefault("FLEX_DEVICE", "VFIO")
        elif kind == "senulator":
            os.environ["FLEX_COMPUTE"] = "SENULATOR"
            os.environ["FLEX_DEVICE"] = "MOCK"
        os.environ.setdefault("DTLOG_LEVEL", "error")
        # fms's tensor-parallel embeddings use a collective gloo does not have; the testing
        # utilities keep the embeddings whole for that reason.
        os.environ.setdefault("DISTRIBUTED_STRATEGY_IGNORE_MODULES", "WordEmbedding,Embedding")

    def load(self, checkpoint: str, mode: str) -> str:
        import torch

        self._torch = torch
        config = _read_json(os.path.join(checkpoint, "config.json"))
        architectures = config.get("architectures") or []
        architecture = architectures[0] if architectures else None
        if architecture not in (QA_ARCHITECTURE, MLM_ARCHITECTURE):
            raise RequestError(
                f"{checkpoint} is {architecture or 'of no architecture'}; this runner runs "
                f"{QA_ARCHITECTURE} and {MLM_ARCHITECTURE}."
            )
        try:
            from fms.models import get_model
        except ImportError as error:
            raise RequestError(f"The Foundation Model Stack (fms) is not installed here: {error}")

        linear_config = None
        quantization = config.get("quantization_config")
        if quantization:
            try:
                # Registers the "fp8" linear type (and, on AIU, its custom op) with fms.
                import fms_mo.aiu_addons.fp8.fp8_linear  # noqa: F401
                from fms_mo.aiu_addons import _infer_quantization_config
            except ImportError as error:
                raise RequestError(f"fms-model-optimizer's FP8 addons are not installed here: {error}")
            try:
                import fms_mo.aiu_addons.fp8.fp8_spyre_op  # noqa: F401
            except ImportError:
                pass  # older fms_mo: the op is registered by fp8_linear
            quantization = copy.deepcopy(quantization)
            if mode == "dequant":
                # Weight-only FP8: fms_mo's FP8Linear then dequantizes the weights and runs a
                # plain matmul on unquantized activations, which is what `dequant` means.
                for group in quantization.get("config_groups", {}).values():
                    group["input_activations"] = None
            linear_config = _infer_quantization_config(quantization)
            if linear_config is None:
                raise RequestError(
                    f"fms-model-optimizer does not run the quantization_config of {checkpoint} "
                    "(it loads compressed-tensors float-quantized checkpoints with one group)."
                )

        names = set(_safetensors_names(checkpoint))
        hidden = int(config["hidden_size"])
        overrides = dict(
            src_vocab_size=int(config["vocab_size"]),
            emb_dim=hidden,
            nheads=int(config["num_attention_heads"]),
            nlayers=int(config["num_hidden_layers"]),
            hidden_grow_factor=int(config["intermediate_size"]) / hidden,
            # Hugging Face RoBERTa keeps two unused position rows that fms drops at load.
            max_pos=int(config["max_position_embeddings"]) - 2,
            norm_eps=float(config.get("layer_norm_eps", 1e-5)),
            pad_id=int(config.get("pad_token_id", 1)),
            type_vocab_size=int(config.get("type_vocab_size", 1)),
            p_dropout=0.0,
        )
        if architecture == MLM_ARCHITECTURE:
            overrides["tie_heads"] = "lm_head.decoder.weight" not in names
        kwargs: Dict[str, Any] = dict(
            model_path=checkpoint,
            source="hf",
            device_type="cpu",  # sendnn takes the model from the host
            fused_weights=False,  # per-Linear modules: FP8 needs them, and so do the hooks
            linear_config=linear_config,
            **overrides,
        )
        if not quantization and self.options.dtype:
            kwargs["data_type"] = self.options.dtype
        if self.world_size > 1:
            kwargs["distributed_strategy"] = "tp"
            kwargs["group"] = torch.distributed.group.WORLD
        fms_architecture = "roberta_question_answering" if architecture == QA_ARCHITECTURE else "roberta"

        self.model = None
        self.compiled = None
        if any(loaded_checkpoint != checkpoint for loaded_checkpoint, _ in self.loaded_models):
            self.loaded_models.clear()
        if (checkpoint, mode) not in self.loaded_models:
            model = get_model(fms_architecture, "base", **kwargs)
            model.eval()
            torch.set_grad_enabled(False)
            if self.options.device_type != "cpu" and quantization:
                # The AIU runs FP8 models with fp16 around the FP8 matmuls; bf16 parameters are
                # cast the way aiu-fms-testing-utils' --cast_bf16_to_fp16 does.
                for parameter in model.parameters():
                    if parameter.dtype == torch.bfloat16:
                        parameter.data = parameter.data.to(torch.float16)
            self._register_hooks(model)
            self.loaded_models[(checkpoint, mode)] = (model, self._compile(model))
        self.model, self.compiled = self.loaded_models[(checkpoint, mode)]
        self.architecture = architecture
        self.num_layers = overrides["nlayers"]
        self.vocab_size = overrides["src_vocab_size"]
        self.pad_id = overrides["pad_id"]
        self.max_tokens = int(config["max_position_embeddings"]) - self.pad_id - 1
        return architecture

    def _compile(self, model):
        torch = self._torch
        backend = self.options.compile_backend
        if self.options.device_type in ("aiu", "senulator"):
            from torch_sendnn import torch_sendnn  # noqa: F401  (registers the "sendnn" backend)

            backend = "sendnn"
            # Static shapes: every bucketed shape compiles once (see --seq-buckets).
            torch._dynamo.config.assume_static_by_default = True
            torch._dynamo.config.dynamic_shapes = False
            torch._dynamo.config.automatic_dynamic_shapes = False
            torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        if not backend or backend == "none":
            return model
        if not hasattr(torch, "compile"):
            raise RequestError(f"torch {torch.__version__} has no torch.compile; install torch 2.x.")
        return torch.compile(model, backend=backend)

    def _register_hooks(self, model) -> None:
        def make_hook(hf_module: str, is_linear: bool):
            def hook(module, inputs, output):
                if not self._recording:
                    return
                if is_linear:
                    self._records[hf_module + ".input"] = inputs[0].detach().to("cpu")
                self._records[hf_module + ".output"] = output.detach().to("cpu")

            return hook

        for fms_name, module in model.named_modules():
            hf_module = hf_module_name(fms_name)
            if hf_module is None:
                continue
            is_linear = hf_module != "roberta.embeddings" and not hf_module.split(".")[-1].isdigit()
            module.register_forward_hook(make_hook(hf_module, is_linear))

    def capture_unavailable(self, point: str) -> Optional[str]:
        if self.world_size > 1 and point.startswith("roberta.encoder.layer.") and not point.endswith(
            tuple(f"layer.{i}.output" for i in range(self.num_layers))
        ):
            return (
                f"Capture point {point} holds a tensor-parallel shard on each of the {self.world_size} ranks; "
                "capture it with one rank."
            )
        return None

    def _bucket(self, length: int) -> int:
        for bucket in self.options.seq_buckets:
            if bucket >= length:
                return min(bucket, self.max_tokens)
        return length

    def forward(self, input_ids, attention_mask, capture, logit_positions):
        torch = self._torch
        if self.compiled is None:
            raise RequestError("No checkpoint is loaded; send a load request first.")
        batch, seq = len(input_ids), len(input_ids[0])
        padded = self._bucket(seq)
        ids = torch.full((batch, padded), self.pad_id, dtype=torch.long)
        mask = torch.zeros((batch, padded), dtype=torch.bool)
        for row, (tokens, real) in enumerate(zip(input_ids, attention_mask)):
            ids[row, :seq] = torch.tensor(tokens, dtype=torch.long)
            mask[row, :seq] = torch.tensor(real, dtype=torch.bool)
        # fms's SDPA attention takes a [batch, q_len, k_len] boolean mask (True attends): every
        # query sees the real keys of its row, as Hugging Face's additive key mask does.
        mask3d = mask.unsqueeze(1).expand(batch, padded, padded).contiguous()

        self._records = {}
        self._recording = bool(capture)
        try:
            output = self.compiled(ids, mask=mask3d, attn_name="sdpa_bidirectional")
        finally:
            self._recording = False
        records, self._records = self._records, {}

        def unpad(tensor):
            tensor = tensor.detach().to("cpu")
            if tensor.dim() >= 2 and tensor.shape[0] == batch and tensor.shape[1] == padded:
                tensor = tensor[:, :seq]
            return tensor

        result: Dict[str, Any] = {}
        if self.architecture == QA_ARCHITECTURE:
            start, end = output
            result["start_logits"] = unpad(start)
            result["end_logits"] = unpad(end)
        else:
            logits = unpad(output)
            if logit_positions:
                rows = torch.tensor([r for r, _ in logit_positions], dtype=torch.long)
                cols = torch.tensor([p for _, p in logit_positions], dtype=torch.long)
                logits = logits[rows, cols]
            result["logits"] = logits
        for point in capture:
            if point not in records:
                raise RequestError(f"The model did not record capture point {point}.")
            result[point] = unpad(records[point])
        return result


# ---- rank coordination -----------------------------------------------------------------------


class Collective:
    """How rank 0 shares a command with the other ranks and learns how they fared. One process:
    nothing to share."""

    rank = 0
    world_size = 1

    def share(self, command: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        return command

    def gather_errors(self, error: Optional[str]) -> List[Optional[str]]:
        return [error]


class TorchCollective(Collective):
    def __init__(self):
        import torch.distributed as dist

        self.dist = dist
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()

    def share(self, command):
        box = [command]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather_errors(self, error):
        errors: List[Optional[str]] = [None] * self.world_size
        self.dist.all_gather_object(errors, error)
        return errors


# ---- the protocol ----------------------------------------------------------------------------


def _int_rows(value: Any, field: str) -> List[List[int]]:
    message = f'"{field}" must be a list of lists of non-negative integers.'
    if not isinstance(value, list):
        raise RequestError(message)
    rows = []
    for row in value:
        if not isinstance(row, list):
            raise RequestError(message)
        for item in row:
            if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                raise RequestError(message)
        rows.append(row)
    return rows


class RunnerServer:
    """The protocol over a ModelAdapter. handle() answers one request (a dict) with a response dict;
    serve() reads lines and writes lines. On rank 0 with several ranks, load and forward run on
    every rank (the command is broadcast) and an error on any rank fails the request."""

    def __init__(self, adapter: ModelAdapter, log: TextIO = sys.stderr, collective: Optional[Collective] = None):
        self.adapter = adapter
        self.log = log
        self.collective = collective or Collective()
        self.loaded: Optional[Tuple[str, str]] = None
        self.finished = False

    def _log(self, message: str) -> None:
        print(f"[aiu-runner rank {self.collective.rank}] {message}", file=self.log, flush=True)

    # -- one request --

    def handle(self, request: Any) -> Dict[str, Any]:
        request_id = request.get("id") if isinstance(request, dict) else None
        try:
            if not isinstance(request, dict):
                raise RequestError("The request is not a JSON object.")
            op = request.get("op")
            if not isinstance(op, str):
                raise RequestError('The request has no "op" string.')
            if op == "hello":
                body = {"protocol": PROTOCOL_VERSION, "device": self.adapter.device, "name": self.adapter.name}
            elif op == "load":
                body = self._load(request)
            elif op == "forward":
                body = self._forward(request)
            elif op == "shutdown":
                self.finished = True
                body = {}
            else:
                raise RequestError(f'Unknown op "{op}"; expected hello, load, forward or shutdown.')
            response = {"id": request_id, "ok": True}
            response.update(body)
            return response
        except RequestError as error:
            self._log(f"refused: {error}")
            return {"id": request_id, "ok": False, "error": sentence(str(error))}
        except MemoryError:
            return {"id": request_id, "ok": False, "error": "The runner ran out of memory."}
        except Exception as error:  # the runner stays up; the user gets one sentence
            self._log(traceback.format_exc())
            return {"id": request_id, "ok": False, "error": sentence(unexpected_failure(error))}

    def _on_every_rank(self, command: Dict[str, Any]) -> Any:
        """Runs a command here and, through the collective, on every other rank."""
        self.collective.share(command)
        result, error = None, None
        try:
            result = execute(self.adapter, command)
        except RequestError as failure:
            error = str(failure)
        except Exception as failure:
            self._log(traceback.format_exc())
            error = unexpected_failure(failure)
        errors = self.collective.gather_errors(error)
        for rank, message in enumerate(errors):
            if message:
                prefix = f"Rank {rank}: " if self.collective.world_size > 1 else ""
                raise RequestError(prefix + message)
        return result

    def _load(self, request: Dict[str, Any]) -> Dict[str, Any]:
        checkpoint = request.get("checkpoint")
        if not isinstance(checkpoint, str) or not checkpoint:
            raise RequestError('The load request has no "checkpoint" folder.')
        mode = request.get("mode", "fp8")
        if mode not in ("fp8", "dequant"):
            raise RequestError(f'The load request\'s mode "{mode}" is not fp8 or dequant.')
        if not os.path.isdir(checkpoint):
            raise RequestError(f"{checkpoint} is not a folder on this host.")
        if self.loaded != (checkpoint, mode) or self.adapter.architecture is None:
            started = time.perf_counter()
            self.loaded = None
            self._on_every_rank({"op": "load", "checkpoint": checkpoint, "mode": mode})
            self.loaded = (checkpoint, mode)
            self._log(f"loaded {checkpoint} ({mode}) in {time.perf_counter() - started:.1f} s")
        return {"architecture": self.adapter.architecture}

    def _forward(self, request: Dict[str, Any]) -> Dict[str, Any]:
        adapter = self.adapter
        if self.loaded is None or adapter.architecture is None:
            raise RequestError("No checkpoint is loaded; send a load request first.")
        if "input_ids" not in request:
            raise RequestError('The forward request has no "input_ids" field.')
        input_ids = _int_rows(request["input_ids"], "input_ids")
        if not input_ids or not any(input_ids):
            raise RequestError("The forward request has no input tokens.")
        mask = request.get("attention_mask")
        if mask is None:
            mask = [[1] * len(row) for row in input_ids]
        mask = _int_rows(mask, "attention_mask")
        if len(mask) != len(input_ids) or any(len(m) != len(r) for m, r in zip(mask, input_ids)):
            raise RequestError('"attention_mask" must have the shape of "input_ids".')
        seq = max(len(row) for row in input_ids)
        if adapter.max_tokens and seq > adapter.max_tokens:
            raise RequestError(f"The input has {seq} tokens; this model takes at most {adapter.max_tokens}.")
        for row in input_ids:
            for token in row:
                if adapter.vocab_size and token >= adapter.vocab_size:
                    raise RequestError(f"Token id {token} is outside the vocabulary (size {adapter.vocab_size}).")

        output = request.get("output")
        if not isinstance(output, str) or not output:
            raise RequestError('The forward request has no "output" file path.')
        folder = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(folder):
            raise RequestError(f"The folder of {output} does not exist on this host.")

        points = capture_points(adapter.architecture, adapter.num_layers)
        capture = request.get("capture") or []
        if capture == "all":
            selected = points
        elif isinstance(capture, list) and all(isinstance(name, str) for name in capture):
            known = set(points) | {module_of(p) for p in points}
            unknown = [name for name in capture if name not in known]
            if unknown:
                raise RequestError(f'Unknown capture point "{unknown[0]}".')
            wanted = set(capture)
            selected = [p for p in points if p in wanted or module_of(p) in wanted]
        else:
            raise RequestError('"capture" must be a list of capture point or module names, or "all".')
        for point in selected:
            reason = adapter.capture_unavailable(point)
            if reason:
                raise RequestError(reason)

        positions = None
        if request.get("logit_positions") is not None:
            pairs = _int_rows(request["logit_positions"], "logit_positions")
            if any(len(pair) != 2 for pair in pairs):
                raise RequestError('"logit_positions" must hold [row, position] pairs.')
            if any(row >= len(input_ids) or position >= seq for row, position in pairs):
                raise RequestError("A logit position is outside the input.")
            if adapter.architecture == MLM_ARCHITECTURE:
                positions = [(row, position) for row, position in pairs]

        # Rows of different lengths are padded with the pad id, masked out.
        pad = getattr(adapter, "pad_id", 1)
        padded_ids = [row + [pad] * (seq - len(row)) for row in input_ids]
        padded_mask = [m + [0] * (seq - len(m)) for m in mask]
        started = time.perf_counter()
        result = self._on_every_rank(
            {"op": "forward", "input_ids": padded_ids, "attention_mask": padded_mask, "capture": selected,
             "logit_positions": positions}
        )
        elapsed_ms = (time.perf_counter() - started) * 1000.0

        names = ["start_logits", "end_logits"] if adapter.architecture == QA_ARCHITECTURE else ["logits"]
        tensors = []
        for name in names + selected:
            if name not in result:
                raise RequestError(f"The model returned no {name}.")
            tensors.append((name, result[name]))
        write_safetensors(output, tensors, {"producer": "scalescope aiu_runner", "mode": self.loaded[1]})
        self._log(f"forward {len(input_ids)} x {seq} tokens, {len(selected)} capture(s), {elapsed_ms:.1f} ms")
        return {"output": output, "elapsed_ms": elapsed_ms}

    # -- the line loop --

    def serve(self, lines: Callable[[], bytes], out: TextIO) -> int:
        """Serves until end of input (lines() returns b"") or a shutdown request."""
        while not self.finished:
            raw = lines()
            if not raw:
                break
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                request = json.loads(text)
            except ValueError as error:
                response = {"id": None, "ok": False, "error": sentence(f"The request is not valid JSON ({error})")}
            else:
                response = self.handle(request)
            out.write(json.dumps(response, separators=(",", ":")) + "\n")
            out.flush()
        # The other ranks wait for a command; this one tells them to stop.
        self.collective.share({"op": "shutdown"})
        return 0


def execute(adapter: ModelAdapter, command: Dict[str, Any]) -> Any:
    """A shared command, as every rank runs it."""
    if command["op"] == "load":
        return adapter.load(command["checkpoint"], command["mode"])
    if command["op"] == "forward":
        return adapter.forward(
            command["input_ids"], command["attention_mask"], command["capture"], command["logit_positions"]
        )
    raise RequestError(f"Unknown shared command {command['op']}.")


def follow(adapter: ModelAdapter, collective: Collective, log: TextIO = sys.stderr) -> int:
    """Ranks other than 0: run what rank 0 shares until it says shutdown."""
    while True:
        command = collective.share(None)
        if command is None or command.get("op") == "shutdown":
            return 0
        error = None
        try:
            execute(adapter, command)
        except Exception as failure:
            print(f"[aiu-runner rank {collective.rank}] {traceback.format_exc()}", file=log, flush=True)
            error = str(failure) if isinstance(failure, RequestError) else unexpected_failure(failure)
        collective.gather_errors(error)


# ---- program ---------------------------------------------------------------------------------


def parse_arguments(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="ScaleScope runner for IBM AIU cards (see the module docstring).")
    parser.add_argument("--device-type", choices=["aiu", "senulator", "cpu"], default="aiu",
                        help="aiu cards (default), the senulator, or fms eager on the host CPU")
    parser.add_argument("--compile-backend", default="none",
                        help="torch.compile backend off AIU (e.g. inductor); on AIU it is always sendnn")
    parser.add_argument("--dtype", default=None, choices=[None, "float16", "bfloat16", "float32"],
                        help="data type for float (unquantized) checkpoints; FP8 checkpoints keep theirs")
    parser.add_argument("--seq-buckets", default="64,128,256,384,512",
                        help="sequence lengths inputs are padded up to, so that AIU compiles a few shapes "
                             "only ('' for exact lengths)")
    parser.add_argument("--adapter", default=None,
                        help="module:Class of another ModelAdapter (tests), constructed with the options")
    options = parser.parse_args(argv)
    try:
        options.seq_buckets = sorted(int(b) for b in options.seq_buckets.split(",") if b.strip())
    except ValueError:
        parser.error("--seq-buckets must be comma-separated integers")
    if options.device_type == "cpu" and options.seq_buckets == [64, 128, 256, 384, 512]:
        options.seq_buckets = []  # no compilation to spare on the host: exact lengths
    if options.dtype:
        options.dtype = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}[options.dtype]
    return options


def make_adapter(options: argparse.Namespace, rank: int, world_size: int) -> ModelAdapter:
    if not options.adapter:
        adapter = FmsAdapter(options, rank, world_size)
        adapter.prepare_environment()
        return adapter
    module_name, _, class_name = options.adapter.partition(":")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    module = importlib.import_module(module_name)
    return getattr(module, class_name)(options)


def main(argv: Optional[Sequence[str]] = None) -> int:
    # The protocol owns the real stdout; anything else that prints (fms, the AIU compiler, C
    # libraries) goes to stderr, so it can never corrupt a response line.
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    options = parse_arguments(argv)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    collective: Collective = Collective()
    if world_size > 1:
        import torch.distributed

        torch.distributed.init_process_group(backend="gloo", rank=rank, world_size=world_size)
        collective = TorchCollective()
    try:
        adapter = make_adapter(options, rank, world_size)
    except RequestError as error:
        print(f"[aiu-runner rank {rank}] {error}", file=sys.stderr, flush=True)
        return 2
    if rank != 0:
        protocol.close()
        return follow(adapter, collective)
    server = RunnerServer(adapter, sys.stderr, collective)
    print(f"[aiu-runner rank 0] serving protocol {PROTOCOL_VERSION} as {adapter.name}", file=sys.stderr, flush=True)
    return server.serve(sys.stdin.buffer.readline, protocol)


if __name__ == "__main__":
    sys.exit(main())
