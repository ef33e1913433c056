#!/usr/bin/env python3
"""ScaleScope AIU runner: serves ScaleScope's runner protocol on an IBM AIU host.

NOT RUN ON AIU HARDWARE: this program has not been run on AIU cards (nor with the AIU software
stack) from this repository. Its protocol handling is tested with a stand-in model, and its model
side against fakes of fms, fms_mo, torch_sendnn and torch's dynamo that reproduce the upstream
behaviour it works around (test_aiu_runner.py, fakes/; README.md says exactly what that covers).
Check its results against the CPU runner (`scalescope-cli compare`) before trusting them.

What it does: the workbench (or scalescope-cli) starts it through a command line and sends one JSON
request per line on stdin; it answers one JSON line per request on stdout and logs on stderr.
PROTOCOL.md next to this file is the contract (versions 1 and 2):

    -> {"id":1,"op":"hello","protocols":[1,2]}
    <- {"id":1,"ok":true,"protocol":2,"device":"aiu","name":"..."}
    -> {"id":2,"op":"has_checkpoint","hash":H}             (version 2: the checkpoint by content
    -> {"id":3,"op":"upload",...,"bytes":K} + K bytes        hash, sent once, cached here)
    -> {"id":7,"op":"commit_checkpoint","hash":H,"files":[...]}
    -> {"id":8,"op":"load","hash":H,"mode":"fp8"}          (version 1: "checkpoint": DIR)
    <- {"id":8,"progress":0.3,"stage":"Compiling for AIU: batch 4 x 128 tokens"}   (any number)
    <- {"id":8,"ok":true,"architecture":"RobertaForQuestionAnswering"}
    -> {"id":9,"op":"forward","input_ids":[[0,31414,2]],"attention_mask":[[1,1,1]],"capture":[...]}
    <- {"id":9,"ok":true,"elapsed_ms":12.5,"bytes":K} + K bytes of safetensors  (version 1 writes
                                                                               the "output" file)
    -> {"id":10,"op":"shutdown"}

The outputs are "start_logits"/"end_logits" (QA) or "logits" (MaskedLM) and one tensor per
requested capture point, named by Hugging Face module names ("<module>.input", "<module>.output",
"roberta.embeddings.output", "roberta.encoder.layer.N.output"; "bert." for BERT), float32,
little-endian.

Running it (README.md has the details: torchrun, ssh / oc exec, the compile cache):

    AIU_WORLD_RANK_0=0000:1e:00.0 python3 aiu_runner.py          # one card
    torchrun --nproc-per-node 4 aiu_runner.py                     # tensor parallel, rank 0 talks

Structure: RunnerServer handles the protocol (framing, validation, the checkpoint cache, rank
coordination, the outputs); a ModelAdapter loads and runs the model. FmsAdapter is the AIU one;
tests plug in others with `--adapter module:Class`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import hashlib
import importlib
import json
import os
import re
import secrets
import shutil
import struct
import sys
import threading
import time
import traceback
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

PROTOCOL_VERSIONS = (1, 2)
PROTOCOL_VERSION = max(PROTOCOL_VERSIONS)
MAX_JSON_DEPTH = 64
MAX_LINE_BYTES = 64 * 1024 * 1024

QA_ARCHITECTURE = "RobertaForQuestionAnswering"
MLM_ARCHITECTURE = "RobertaForMaskedLM"
BERT_MLM_ARCHITECTURE = "BertForMaskedLM"
BERT_QA_ARCHITECTURE = "BertForQuestionAnswering"
ARCHITECTURES = (QA_ARCHITECTURE, MLM_ARCHITECTURE, BERT_MLM_ARCHITECTURE, BERT_QA_ARCHITECTURE)

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


class StopReading(Exception):
    """The input can no longer be trusted to be framed (too long, too deep, short payload): the
    runner answers once and stops reading from this peer."""


def unexpected_failure(error: BaseException) -> str:
    return f"The runner failed: {type(error).__name__}: {error}"


def sentence(text: str) -> str:
    """One line, ending with a period."""
    text = " ".join(str(text).split())
    if not text:
        text = "Unknown error"
    return text if text.endswith((".", "!", "?")) else text + "."


# ---- capture points --------------------------------------------------------------------------


def is_question_answering(architecture: str) -> bool:
    return architecture.endswith("QuestionAnswering")


def model_prefix(architecture: str) -> str:
    return "bert" if architecture.startswith("Bert") else "roberta"


def head_modules(architecture: str) -> List[str]:
    if is_question_answering(architecture):
        return ["qa_outputs"]
    if architecture == BERT_MLM_ARCHITECTURE:
        return ["cls.predictions.transform.dense", "cls.predictions.decoder"]
    return ["lm_head.dense", "lm_head.decoder"]


def linear_modules(architecture: str, num_layers: int) -> List[str]:
    prefix = model_prefix(architecture)
    modules = [f"{prefix}.encoder.layer.{layer}.{linear}" for layer in range(num_layers) for linear in ENCODER_LINEARS]
    return modules + head_modules(architecture)


def capture_points(architecture: str, num_layers: int) -> List[str]:
    """Every capture point in execution order, as ScaleScope's engine lists them."""
    prefix = model_prefix(architecture)
    points = [f"{prefix}.embeddings.output"]
    for layer in range(num_layers):
        for linear in ENCODER_LINEARS:
            module = f"{prefix}.encoder.layer.{layer}.{linear}"
            points += [module + ".input", module + ".output"]
        points.append(f"{prefix}.encoder.layer.{layer}.output")
    for module in head_modules(architecture):
        points += [module + ".input", module + ".output"]
    return points


def module_of(point: str) -> str:
    return point.rsplit(".", 1)[0]


# fms's RoBERTa/BERT module names (unfused attention) -> Hugging Face module names.
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
_FMS_BERT_HEADS = {
    "classification_head.dense": "cls.predictions.transform.dense",
    "classification_head.head": "cls.predictions.decoder",
}


def hf_module_name(fms_name: str, architecture: str = QA_ARCHITECTURE) -> Optional[str]:
    """The Hugging Face name of an fms RoBERTa/BERT module, or None for modules without a capture
    point."""
    prefix = model_prefix(architecture)
    if fms_name == "base_model.enc_norm":
        return f"{prefix}.embeddings"
    heads = _FMS_BERT_HEADS if prefix == "bert" else _FMS_HEADS
    if fms_name in heads:
        return heads[fms_name]
    layers = "base_model.layers."
    if not fms_name.startswith(layers):
        return None
    rest = fms_name[len(layers):]
    layer, _, inner = rest.partition(".")
    if not layer.isdigit():
        return None
    if not inner:
        return f"{prefix}.encoder.layer.{layer}"
    if inner in _FMS_LAYER_LINEARS:
        return f"{prefix}.encoder.layer.{layer}.{_FMS_LAYER_LINEARS[inner]}"
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


def safetensors_bytes(tensors: Sequence[Tuple[str, Any]], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """A safetensors file of float32 tensors in the given order, as bytes."""
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
    return b"".join([struct.pack("<Q", len(header_bytes)), header_bytes] + payloads)


def write_safetensors(path: str, tensors: Sequence[Tuple[str, Any]], metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes float32 tensors in the given order; atomically (temporary file, then rename)."""
    data = safetensors_bytes(tensors, metadata)
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, ".%s.%d.partial" % (os.path.basename(path), os.getpid()))
    try:
        with open(temporary, "wb") as file:
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


# ---- JSON lines with bounds ------------------------------------------------------------------

# The characters that matter for nesting: quotes, brackets, and backslash escapes (an escape is
# consumed with the character it escapes, so \" inside a string does not end it).
_JSON_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


def json_nesting_depth(text: str, limit: int) -> int:
    """The nesting depth of a JSON text, counted up to limit + 1 (enough to refuse it). Python's
    json module recurses per level: a deep enough line would end in RecursionError or worse, so
    the depth is measured without parsing, in one linear pass."""
    depth = deepest = 0
    in_string = False
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token == '"':
            in_string = not in_string
        elif in_string or token[0] == "\\":
            continue
        elif token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def _refuse_constant(name: str):
    # NaN and Infinity are not JSON; echoed back in an "id" they would break the client's parser.
    raise ValueError(f"{name} is not a JSON number")


class Payload:
    """The K raw bytes that follow a JSON line announcing "bytes": K (protocol 2)."""

    def __init__(self, source: BinaryIO, size: int):
        self.source = source
        self.size = size
        self.remaining = size

    def read(self, count: int) -> bytes:
        count = min(count, self.remaining)
        if count <= 0:
            return b""
        data = self.source.read(count)
        if not data:
            raise StopReading(f"The input ended {self.remaining} bytes before the end of a {self.size}-byte payload.")
        self.remaining -= len(data)
        return data

    def drain(self) -> None:
        while self.remaining > 0:
            self.read(1 << 20)


class Response(dict):
    """A response line; blob, when set, is sent right after it (protocol 2, "bytes")."""

    blob: Optional[bytes] = None


# ---- the checkpoint cache (protocol 2) -------------------------------------------------------

_HEX64 = re.compile(r"[0-9a-f]{64}")


def runner_cache_folder(environment: Optional[Dict[str, str]] = None) -> str:
    environment = os.environ if environment is None else environment
    if environment.get("SCALESCOPE_RUNNER_CACHE"):
        return environment["SCALESCOPE_RUNNER_CACHE"]
    base = environment.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "scalescope-runner")


def manifest_text(files: Sequence[Tuple[str, int, str]]) -> str:
    """One line per file, "NAME SIZE SHA256", sorted by name (PROTOCOL.md)."""
    return "".join(f"{name} {size} {sha}\n" for name, size, sha in sorted(files))


def manifest_hash(files: Sequence[Tuple[str, int, str]]) -> str:
    return hashlib.sha256(manifest_text(files).encode("utf-8")).hexdigest()


def plain_file_name(name: Any) -> bool:
    """A name that stays inside the cache folder and keeps the manifest one line per file."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 255
        and not name.startswith(".")
        and "/" not in name
        and "\\" not in name
        and not any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in name)
    )


def _hex_field(request: Dict[str, Any], field: str) -> str:
    value = request.get(field)
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise RequestError(f'"{field}" must be a SHA-256 in 64 lower-case hex digits.')
    return value


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---- the model side --------------------------------------------------------------------------


class ModelAdapter:
    """What the protocol needs from a model. Tests replace it; FmsAdapter is the AIU one."""

    device = "cpu"
    name = "model adapter"
    # Per-module float/fp8 overrides; an adapter that cannot run them says so (PROTOCOL.md).
    supports_overrides = False
    # Set by load(): the Hugging Face architecture, encoder layers, vocabulary size, token types.
    architecture: Optional[str] = None
    num_layers = 0
    vocab_size = 0
    max_tokens = 0
    type_vocab_size = 0

    def progress(self, fraction: float, stage: str) -> None:
        """Reports how far a long load or compile is; the server sends it as a progress line."""

    def load(self, checkpoint: str, mode: str) -> str:
        """Loads a checkpoint folder in mode "fp8" or "dequant"; returns the architecture."""
        raise NotImplementedError

    def forward(
        self,
        input_ids: List[List[int]],
        attention_mask: List[List[int]],
        capture: List[str],
        logit_positions: Optional[List[Tuple[int, int]]],
        token_type_ids: Optional[List[List[int]]] = None,
        overrides: Optional[Dict[str, str]] = None,
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
            value = json.load(file)
    except FileNotFoundError:
        raise RequestError(f"{path} does not exist.")
    except (OSError, ValueError, RecursionError) as error:
        raise RequestError(f"Cannot read {path}: {error}")
    if not isinstance(value, dict):
        raise RequestError(f"{path} does not hold a JSON object.")
    return value


def _safetensors_header(path: str) -> Dict[str, Any]:
    try:
        with open(path, "rb") as file:
            (length,) = struct.unpack("<Q", file.read(8))
            if length > 100_000_000:
                raise RequestError(f"{path} has an implausible header length.")
            header = json.loads(file.read(length))
    except FileNotFoundError:
        raise RequestError(f"{path} does not exist.")
    except (OSError, ValueError, struct.error, RecursionError) as error:
        raise RequestError(f"Cannot read the header of {path}: {error}")
    if not isinstance(header, dict):
        raise RequestError(f"The header of {path} is not a JSON object.")
    return header


def safetensors_dtypes(checkpoint: str) -> Dict[str, str]:
    """Tensor name -> safetensors dtype of a checkpoint folder, from the headers (no data read)."""
    index = os.path.join(checkpoint, "model.safetensors.index.json")
    if os.path.exists(index):
        weight_map = _read_json(index).get("weight_map", {})
        shards = sorted({shard for shard in weight_map.values() if isinstance(shard, str)})
        paths = []
        for shard in shards:
            if not plain_file_name(shard):
                raise RequestError(f"{index} names a shard outside the checkpoint folder ({shard}).")
            paths.append(os.path.join(checkpoint, shard))
    else:
        paths = [os.path.join(checkpoint, "model.safetensors")]
        if not os.path.exists(paths[0]):
            raise RequestError(f"{checkpoint} has neither model.safetensors nor model.safetensors.index.json.")
    dtypes: Dict[str, str] = {}
    for path in paths:
        for name, entry in _safetensors_header(path).items():
            if name != "__metadata__" and isinstance(entry, dict):
                dtypes[name] = str(entry.get("dtype"))
    return dtypes


def _hf_rule_matches(entry: str, module: str) -> bool:
    """compressed-tensors' matching of a target/ignore entry against a Hugging Face module name:
    the class name "Linear" (every module here is one), an exact name, or "re:" with re.match."""
    if entry == "Linear":
        return True
    if entry.startswith("re:"):
        try:
            return re.match(entry[3:], module) is not None
        except re.error:
            return False
    return entry == module


def check_quantization_for_fms_mo(
    quantization: Dict[str, Any], architecture: str, num_layers: int, dtypes: Dict[str, str], where: str,
    tensor_parallel: bool, mode: str,
) -> Dict[str, Any]:
    """Refuses, with one sentence, a quantization_config fms_mo's `_infer_quantization_config`
    would misread. It reads only config_groups["group_0"], builds every Linear fms asks about as
    FP8 unless `fms_name in ignore_entry` (substring, HF names unmapped but lm_head), leaves
    weight_scale uninitialised when an FP8-built Linear gets float weights, and under tensor
    parallelism shards weight scales by the activation strategy. Returns the group."""
    if quantization.get("quant_method") != "compressed-tensors":
        raise RequestError(f"{where}: fms-model-optimizer loads only compressed-tensors checkpoints, "
                           f"not quant_method {quantization.get('quant_method')!r}.")
    if quantization.get("quantization_status") != "compressed":
        raise RequestError(f"{where}: fms-model-optimizer loads only checkpoints with quantization_status "
                           f"\"compressed\", not {quantization.get('quantization_status')!r}.")
    groups = quantization.get("config_groups")
    if not isinstance(groups, dict) or list(groups) != ["group_0"]:
        names = ", ".join(groups) if isinstance(groups, dict) else "none"
        raise RequestError(f"{where}: fms-model-optimizer reads exactly one quantization group named group_0; "
                           f"this config has {names}.")
    group = groups["group_0"]
    if not isinstance(group, dict):
        raise RequestError(f"{where}: quantization group group_0 is not an object.")
    if group.get("targets") != ["Linear"]:
        raise RequestError(f"{where}: quantization group group_0 targets {group.get('targets')!r}; "
                           "fms-model-optimizer builds FP8 Linears correctly only for targets [\"Linear\"].")
    weights = group.get("weights")
    if not isinstance(weights, dict) or weights.get("type") != "float" or weights.get("num_bits") != 8:
        raise RequestError(f"{where}: quantization group group_0 does not hold 8-bit float weights.")
    weight_strategy = weights.get("strategy") or "tensor"
    if weight_strategy not in ("tensor", "channel"):
        raise RequestError(f"{where}: quantization group group_0 has {weight_strategy} weights; "
                           "the AIU FP8 Linear takes tensor or channel weights only.")
    activations = group.get("input_activations")
    if activations is not None:
        if not isinstance(activations, dict) or activations.get("type") != "float" or activations.get("num_bits") != 8:
            raise RequestError(f"{where}: quantization group group_0 does not hold 8-bit float input activations.")
        activation_strategy = activations.get("strategy") or "tensor"
        if activation_strategy not in ("tensor", "token"):
            raise RequestError(f"{where}: quantization group group_0 has {activation_strategy} activations; "
                               "the AIU FP8 Linear takes tensor or token activations only.")
    ignore = quantization.get("ignore") or []
    if not isinstance(ignore, list) or not all(isinstance(entry, str) for entry in ignore):
        raise RequestError(f"{where}: \"ignore\" must be a list of module names.")
    prefix = model_prefix(architecture)
    encoder = [m for m in linear_modules(architecture, num_layers) if m.startswith(prefix + ".")]
    for module in encoder:
        for entry in ignore:
            if _hf_rule_matches(entry, module):
                raise RequestError(f"{where}: ignore entry {entry!r} keeps encoder Linear {module} in float, "
                                   "which fms-model-optimizer cannot load (it would build it as FP8 with an "
                                   "uninitialised weight_scale).")
        if dtypes.get(module + ".weight", "F8_E4M3") != "F8_E4M3":
            raise RequestError(f"{where}: encoder Linear {module} is stored as {dtypes[module + '.weight']}, "
                               "not F8_E4M3; fms-model-optimizer loads only all-FP8 encoders.")
    for module in head_modules(architecture):
        if dtypes.get(module + ".weight") == "F8_E4M3":
            raise RequestError(f"{where}: head {module} is stored in FP8, but fms builds heads as plain "
                               "Linears; this runner cannot load it.")
    if tensor_parallel:
        # fms_mo's shard_fp8_linear picks the weight-scale layout from input_activations["strategy"].
        if activations is None or mode == "dequant":
            what = "weight-only FP8" if activations is None else "mode dequant (weight-only FP8)"
            raise RequestError(f"{where}: {what} cannot run under tensor parallelism (fms-model-optimizer "
                               "shards its weight scales by the activation strategy); run it on one card.")
        if (weight_strategy == "channel") != (activation_strategy == "token"):
            raise RequestError(f"{where}: {weight_strategy} weights with {activation_strategy} activations "
                               "cannot be sharded by fms-model-optimizer; run this checkpoint on one card.")
    return group


def tolerate_unnamed_linear(linear_type: Callable[[Optional[str]], Any], encoder_type: str) -> Callable:
    """fms's TPFeedForwardBlock asks for the linear type with module_name=None, and fms_mo's
    function then does `None in entry` (TypeError). The config was checked to make every encoder
    Linear the same type, so an unnamed one gets that type."""

    def linear_type_for(name: Optional[str]):
        if name is None:
            return encoder_type
        return linear_type(name)

    return linear_type_for


FMS_ARCHITECTURES = {
    QA_ARCHITECTURE: "roberta_question_answering",
    MLM_ARCHITECTURE: "roberta",
    BERT_MLM_ARCHITECTURE: "bert",
}


class _Variants:
    """One loaded model behind two entry points with their own code objects, so that dynamo keeps
    their caches and recompile limits apart: `plain` records nothing (no hook output becomes a
    graph output), `recording` takes the capture set as an argument (dynamo guards on its value,
    not on hidden state) and returns the recorded tensors as outputs."""

    def __init__(self, adapter: "FmsAdapter", model: Any):
        self.adapter = adapter
        self.model = model

    def plain(self, ids, mask, token_types):
        return self.model(ids, token_type_ids=token_types, mask=mask, attn_name="sdpa_bidirectional")

    def recording(self, ids, mask, token_types, wanted):
        adapter = self.adapter
        adapter._wanted = wanted
        adapter._records = {}
        try:
            output = self.model(ids, token_type_ids=token_types, mask=mask, attn_name="sdpa_bidirectional")
        finally:
            adapter._wanted = ()
        records, adapter._records = adapter._records, {}
        return output, records


class FmsAdapter(ModelAdapter):
    """RoBERTa (QA, MaskedLM) and BERT (MaskedLM) on AIU cards through fms, fms_mo's FP8 addons
    and torch.compile(backend="sendnn").

    Compilation happens in load, never in a forward: every (sequence bucket x batch bucket) shape
    is traced inside torch_sendnn.warmup_mode() (whose exit compiles) and then run once more to
    deploy it, as vllm-spyre does; forwards pad to those shapes. Past torch's recompile limit
    dynamo would silently run the model eagerly on the host CPU, so the limit is made an error.
    Captures are forward hooks on the fms modules, renamed to Hugging Face names, recorded only
    through the `recording` entry point and only for the requested points.
    Under tensor parallelism the Linears inside the encoder layers hold shards on each rank, so
    their capture points are refused; embeddings, layer outputs and heads are whole.
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
        self.variants: Optional[_Variants] = None
        self.compiled_plain: Optional[Callable] = None
        self.compiled_recording: Optional[Callable] = None
        # Both modes of the current checkpoint stay loaded: evaluation without a reference
        # alternates fp8 and dequant per batch, and a recompilation per switch would take minutes.
        self.loaded_models: Dict[Tuple[str, str], Tuple[Any, _Variants, Callable, Callable]] = {}
        self.compiled_shapes: set = set()
        self.checkpoint: Optional[str] = None
        self.pad_id = 1
        self._wanted: Tuple[str, ...] = ()
        self._records: Dict[str, Any] = {}
        self._torch = None

    @property
    def compiling(self) -> bool:
        return self.options.device_type in ("aiu", "senulator") or self.options.compile_backend not in ("", "none")

    # The AIU environment as aiu-fms-testing-utils sets it up, before torch_sendnn is imported.
    def prepare_environment(self) -> None:
        kind = self.options.device_type
        if kind == "aiu":
            if "AIU_WORLD_RANK_0" not in os.environ:
                raise RequestError(
                    "AIU_WORLD_RANK_0 is not set; set AIU_WORLD_RANK_<rank> to each card's PCIe address."
                )
            os.environ.setdefault("FLEX_COMPUTE", "SENTIENT")
            # aiu-fms-testing-utils and vllm-spyre attach the cards as physical functions since mid 2025.
            os.environ.setdefault("FLEX_DEVICE", "PF")
        elif kind == "senulator":
            os.environ["FLEX_COMPUTE"] = "SENULATOR"
            os.environ["FLEX_DEVICE"] = "MOCK"
        os.environ.setdefault("DTLOG_LEVEL", "error")
        if self.options.compile_cache:
            # torch_sendnn reads these when it is imported; a restart then loads instead of compiling.
            os.environ["TORCH_SENDNN_CACHE_ENABLE"] = "1"
            os.environ["TORCH_SENDNN_CACHE_DIR"] = self.options.compile_cache
        # fms's tensor-parallel embeddings use a collective gloo does not have; the testing
        # utilities keep the embeddings whole for that reason.
        os.environ.setdefault("DISTRIBUTED_STRATEGY_IGNORE_MODULES", "WordEmbedding,Embedding")

    def _model_arguments(self, checkpoint: str, config: Dict[str, Any], architecture: str,
                         names: Sequence[str]) -> Dict[str, Any]:
        hidden = int(config["hidden_size"])
        activation = config.get("hidden_act", "gelu")
        if activation != "gelu":
            raise RequestError(f"{checkpoint} uses activation {activation!r}; fms's encoders run gelu.")
        bert = model_prefix(architecture) == "bert"
        pad_id = config.get("pad_token_id")
        overrides = dict(
            src_vocab_size=int(config["vocab_size"]),
            emb_dim=hidden,
            nheads=int(config["num_attention_heads"]),
            nlayers=int(config["num_hidden_layers"]),
            hidden_grow_factor=int(config["intermediate_size"]) / hidden,
            # Hugging Face RoBERTa keeps two unused position rows that fms drops at load; BERT's
            # positions start at 0 and fms keeps them all.
            max_pos=int(config["max_position_embeddings"]) - (0 if bert else 2),
            norm_eps=float(config.get("layer_norm_eps", 1e-12 if bert else 1e-5)),
            pad_id=int(pad_id if pad_id is not None else (0 if bert else 1)),
            type_vocab_size=int(config.get("type_vocab_size", 2 if bert else 1)),
            p_dropout=0.0,
        )
        if not is_question_answering(architecture):
            decoder = "cls.predictions.decoder.weight" if bert else "lm_head.decoder.weight"
            overrides["tie_heads"] = decoder not in names
        return overrides

    def load(self, checkpoint: str, mode: str) -> str:
        import torch

        self._torch = torch
        config = _read_json(os.path.join(checkpoint, "config.json"))
        architectures = config.get("architectures") or []
        architecture = architectures[0] if isinstance(architectures, list) and architectures else None
        if architecture == BERT_QA_ARCHITECTURE:
            raise RequestError(
                f"{checkpoint} is {BERT_QA_ARCHITECTURE}, which fms does not build (it registers BERT "
                "only for masked LM and classification); run it with the CPU runner."
            )
        if architecture not in FMS_ARCHITECTURES:
            raise RequestError(
                f"{checkpoint} is {architecture or 'of no architecture'}; this runner runs "
                f"{', '.join(FMS_ARCHITECTURES)}."
            )
        try:
            from fms.models import get_model
        except ImportError as error:
            raise RequestError(f"The Foundation Model Stack (fms) is not installed here: {error}")

        dtypes = safetensors_dtypes(checkpoint)
        try:
            num_layers = int(config["num_hidden_layers"])
            overrides = self._model_arguments(checkpoint, config, architecture, list(dtypes))
        except (KeyError, TypeError, ValueError) as error:
            raise RequestError(f"{checkpoint}/config.json lacks or misstates a model size ({error}).")

        linear_config = None
        quantization = config.get("quantization_config") or config.get("compression_config")
        if quantization:
            if not isinstance(quantization, dict):
                raise RequestError(f"{checkpoint}/config.json: quantization_config is not an object.")
            check_quantization_for_fms_mo(quantization, architecture, num_layers, dtypes,
                                          f"{checkpoint}/config.json", self.world_size > 1, mode)
            try:
                # Registers the "fp8" linear type (and, on AIU, its custom op) with fms.
                import fms_mo.aiu_addons.fp8.fp8_linear  # noqa: F401
                from fms_mo.aiu_addons import _infer_quantization_config
            except ImportError as error:
                raise RequestError(f"fms-model-optimizer's FP8 addons are not installed here: {error}")
            quantization = copy.deepcopy(quantization)
            if mode == "dequant":
                # Weight-only FP8: fms_mo's FP8Linear then dequantizes the weights and runs a
                # plain matmul on unquantized activations, which is what `dequant` means.
                quantization["config_groups"]["group_0"]["input_activations"] = None
            linear_config = _infer_quantization_config(quantization)
            if linear_config is None:
                raise RequestError(f"fms-model-optimizer does not run the quantization_config of {checkpoint}.")
            for module in linear_modules(architecture, num_layers)[: 6 * num_layers]:
                fms_name = _fms_linear_name(module)
                chosen = linear_config["linear_type"](fms_name)
                if chosen != "fp8":
                    raise RequestError(f"{checkpoint}/config.json: fms-model-optimizer would build {module} as {chosen}, "
                                       "not fp8, from this quantization_config.")
            linear_config = dict(linear_config)
            linear_config["linear_type"] = tolerate_unnamed_linear(linear_config["linear_type"], "fp8")

        kwargs: Dict[str, Any] = dict(
            model_path=checkpoint,
            source="hf",
            device_type="cpu",  # sendnn takes the model from the host
            fused_weights=False,  # per-Linear modules: FP8 needs them, and so do the hooks
            linear_config=linear_config,
            **overrides,
        )
        if not quantization and self.options.dtype:
            kwargs["data_type"] = self.options.dtype  # a torch attribute name, as fms parses it
        if self.world_size > 1:
            kwargs["distributed_strategy"] = "tp"
            kwargs["group"] = torch.distributed.group.WORLD

        self.model = None
        self.variants = None
        if self.checkpoint != checkpoint:
            self.loaded_models.clear()
            self.compiled_shapes.clear()
            if self.compiling:
                # The previous checkpoint's graphs would otherwise count against the recompile limit.
                _dynamo().reset()
            self.checkpoint = checkpoint
        self.architecture = None
        if (checkpoint, mode) not in self.loaded_models:
            self.progress(0.0, f"Loading {os.path.basename(checkpoint.rstrip('/')) or checkpoint} ({mode})")
            model = get_model(FMS_ARCHITECTURES[architecture], "base", **kwargs)
            model.eval()
            torch.set_grad_enabled(False)
            if self.options.device_type != "cpu":
                # AIU cards have no bf16: vllm-spyre casts every model, aiu-fms-testing-utils has
                # --cast_bf16_to_fp16.
                for parameter in model.parameters():
                    if parameter.dtype == torch.bfloat16:
                        parameter.data = parameter.data.to(torch.float16)
            if quantization:
                _match_bias_to_scale(model, torch)
            self._register_hooks(model, architecture)
            variants = _Variants(self, model)
            entry = (model, variants, self._compile(variants.plain), self._compile(variants.recording))
            self.loaded_models[(checkpoint, mode)] = entry
        self.model, self.variants, self.compiled_plain, self.compiled_recording = self.loaded_models[(checkpoint, mode)]
        self.num_layers = overrides["nlayers"]
        self.vocab_size = overrides["src_vocab_size"]
        self.type_vocab_size = overrides["type_vocab_size"]
        self.pad_id = overrides["pad_id"]
        self.max_tokens = int(config["max_position_embeddings"]) - (
            0 if model_prefix(architecture) == "bert" else self.pad_id + 1)
        self.architecture = architecture
        self._warm_up(mode)
        return architecture

    def _compile(self, function: Callable) -> Callable:
        torch = self._torch
        backend = self.options.compile_backend
        if self.options.device_type in ("aiu", "senulator"):
            from torch_sendnn import torch_sendnn  # noqa: F401  (registers the "sendnn" backend)

            backend = "sendnn"
        if not backend or backend == "none":
            return function
        if not hasattr(torch, "compile"):
            raise RequestError(f"torch {torch.__version__} has no torch.compile; install torch 2.x.")
        config = _dynamo().config
        # Static shapes: every bucketed shape compiles once, at load.
        config.assume_static_by_default = True
        config.automatic_dynamic_shapes = False
        # Past the limit dynamo would run the frame eagerly: on the host CPU, labelled "aiu".
        limit = self.compile_budget()
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(config, name):
                setattr(config, name, max(getattr(config, name), limit))
        if hasattr(config, "accumulated_recompile_limit"):
            config.accumulated_recompile_limit = max(config.accumulated_recompile_limit, 4 * limit)
        if not hasattr(config, "fail_on_recompile_limit_hit"):
            raise RequestError(f"torch {torch.__version__} cannot make dynamo's recompile limit an error (it "
                               "would fall back to the host CPU silently); install the torch aiu-fms-testing-utils pins (2.10).")
        config.fail_on_recompile_limit_hit = True
        return torch.compile(function, backend=backend)

    def compile_budget(self) -> int:
        """Compiled shapes per entry point: both modes of the warm-up shapes, and room for a few
        capture sets on the recording one."""
        shapes = max(1, len(self.options.seq_buckets)) * max(1, len(self.options.batch_buckets))
        return 2 * shapes + 16

    # -- shapes --

    def seq_buckets(self) -> List[int]:
        return [b for b in self.options.seq_buckets if b <= self.max_tokens]

    def _seq_bucket(self, length: int) -> int:
        if not self.compiling or not self.options.seq_buckets:
            return length
        for bucket in self.seq_buckets():
            if bucket >= length:
                return bucket
        raise RequestError(
            f"The input has {length} tokens; this runner pads to the sequence buckets "
            f"{','.join(map(str, self.seq_buckets()))} (--seq-buckets) and takes at most {max(self.seq_buckets() or [0])}."
        )

    def _batch_chunks(self, batch: int) -> List[Tuple[int, int, int]]:
        """(first row, rows, padded rows) per forward: fixed batch sizes, so that a new batch size
        never means a new compile."""
        buckets = self.options.batch_buckets if self.compiling else []
        if not buckets:
            return [(0, batch, batch)]
        largest = buckets[-1]
        chunks = []
        for first in range(0, batch, largest):
            rows = min(largest, batch - first)
            chunks.append((first, rows, next(b for b in buckets if b >= rows)))
        return chunks

    def _warm_up(self, mode: str) -> None:
        """Compiles every warm-up shape now, during load, and deploys it; a forward then never
        compiles (the client would time out, and sendnn compiles for minutes)."""
        if not self.compiling:
            return
        shapes = [(batch, seq) for seq in self.seq_buckets() for batch in self.options.batch_buckets]
        variants: List[Tuple[str, Tuple[str, ...]]] = [("plain", ())]
        if self.options.warmup_capture == "all":
            points = tuple(p for p in capture_points(self.architecture, self.num_layers)
                           if not self.capture_unavailable(p))
            variants.append(("recording", points))
        todo = [(v, wanted, b, s) for v, wanted in variants for b, s in shapes
                if (id(self.model), v, b, s, wanted) not in self.compiled_shapes]
        if not todo:
            return
        steps = 2 * len(todo) + 1
        warmup = contextlib.nullcontext
        if self.options.device_type in ("aiu", "senulator"):
            try:
                from torch_sendnn import warmup_mode as warmup  # type: ignore
            except ImportError:
                pass  # an older torch_sendnn: the traced call compiles, the second deploys
        with warmup():
            for step, (variant, wanted, batch, seq) in enumerate(todo):
                self.progress(step / steps, f"Compiling for AIU ({mode}): tracing batch {batch} x {seq} tokens")
                self._run_dummy(variant, wanted, batch, seq)
            self.progress(len(todo) / steps, f"Compiling for AIU ({mode}): {len(todo)} shape(s)")
        for step, (variant, wanted, batch, seq) in enumerate(todo):
            self.progress((len(todo) + 1 + step) / steps, f"Deploying to AIU ({mode}): batch {batch} x {seq} tokens")
            self._run_dummy(variant, wanted, batch, seq)
            self.compiled_shapes.add((id(self.model), variant, batch, seq, wanted))

    def _run_dummy(self, variant: str, wanted: Tuple[str, ...], batch: int, seq: int):
        torch = self._torch
        ids = torch.full((batch, seq), self.pad_id, dtype=torch.long)
        ids[:, 0] = 0 if self.pad_id != 0 else 1
        mask = torch.zeros((batch, seq), dtype=torch.bool)
        mask[:, 0] = True
        mask3d = mask.unsqueeze(1).expand(batch, seq, seq).contiguous()
        types = torch.zeros((batch, seq), dtype=torch.long)
        if variant == "plain":
            return self.compiled_plain(ids, mask3d, types)
        return self.compiled_recording(ids, mask3d, types, wanted)

    # -- hooks --

    def _register_hooks(self, model, architecture: str) -> None:
        def make_hook(hf_module: str, is_linear: bool):
            input_point, output_point = hf_module + ".input", hf_module + ".output"

            def hook(module, inputs, output):
                wanted = self._wanted
                if is_linear and input_point in wanted:
                    self._records[input_point] = inputs[0].detach()
                if output_point in wanted:
                    self._records[output_point] = output.detach()

            return hook

        for fms_name, module in model.named_modules():
            hf_module = hf_module_name(fms_name, architecture)
            if hf_module is None:
                continue
            is_linear = not hf_module.endswith(".embeddings") and not hf_module.split(".")[-1].isdigit()
            module.register_forward_hook(make_hook(hf_module, is_linear))

    def capture_unavailable(self, point: str) -> Optional[str]:
        prefix = model_prefix(self.architecture or QA_ARCHITECTURE)
        if self.world_size > 1 and point.startswith(prefix + ".encoder.layer.") and not point.endswith(
            tuple(f"layer.{i}.output" for i in range(self.num_layers))
        ):
            return (
                f"Capture point {point} holds a tensor-parallel shard on each of the {self.world_size} ranks; "
                "capture it with one rank."
            )
        return None

    # -- forward --

    def forward(self, input_ids, attention_mask, capture, logit_positions, token_type_ids=None, overrides=None):
        torch = self._torch
        if self.compiled_plain is None:
            raise RequestError("No checkpoint is loaded; send a load request first.")
        if overrides:
            raise RequestError("The AIU runner cannot run per-module overrides; run them with the CPU runner.")
        batch, seq = len(input_ids), len(input_ids[0])
        padded = self._seq_bucket(seq)
        wanted = tuple(capture)
        variant = "recording" if wanted else "plain"
        pieces: List[Tuple[Any, Dict[str, Any], int]] = []
        for first, rows, padded_rows in self._batch_chunks(batch):
            key = (id(self.model), variant, padded_rows, padded, wanted)
            if self.compiling and key not in self.compiled_shapes:
                used = sum(1 for k in self.compiled_shapes if k[1] == variant)
                if used >= self.compile_budget():
                    raise RequestError(
                        f"This forward would be compile number {used + 1} of the {variant} graph, past the "
                        f"limit of {self.compile_budget()}; restart the runner or capture fewer distinct sets."
                    )
                self.progress(0.0, f"Compiling for AIU: first {variant} forward of batch {padded_rows} x {padded} "
                                   "tokens")
            ids = torch.full((padded_rows, padded), self.pad_id, dtype=torch.long)
            mask = torch.zeros((padded_rows, padded), dtype=torch.bool)
            types = torch.zeros((padded_rows, padded), dtype=torch.long)
            for row in range(padded_rows):
                # Rows past the real ones repeat the first: valid input whose outputs are dropped.
                source = first + (row if row < rows else 0)
                ids[row, :seq] = torch.tensor(input_ids[source], dtype=torch.long)
                mask[row, :seq] = torch.tensor(attention_mask[source], dtype=torch.bool)
                if token_type_ids is not None:
                    types[row, :seq] = torch.tensor(token_type_ids[source], dtype=torch.long)
            # fms's SDPA attention takes a [batch, q_len, k_len] boolean mask (True attends): every
            # query sees the real keys of its row, as Hugging Face's additive key mask does.
            mask3d = mask.unsqueeze(1).expand(padded_rows, padded, padded).contiguous()
            if wanted:
                output, records = self.compiled_recording(ids, mask3d, types, wanted)
            else:
                output, records = self.compiled_plain(ids, mask3d, types), {}
            self.compiled_shapes.add(key)
            pieces.append((output, records, rows))

        def trim(tensor, rows):
            tensor = tensor.detach().to("cpu")[:rows]
            if tensor.dim() >= 2 and tensor.shape[1] == padded:
                tensor = tensor[:, :seq]
            return tensor

        result: Dict[str, Any] = {}
        if is_question_answering(self.architecture):
            result["start_logits"] = torch.cat([trim(out[0], rows) for out, _, rows in pieces])
            result["end_logits"] = torch.cat([trim(out[1], rows) for out, _, rows in pieces])
        else:
            logits = torch.cat([trim(out, rows) for out, _, rows in pieces])
            if logit_positions:
                row_index = torch.tensor([r for r, _ in logit_positions], dtype=torch.long)
                col_index = torch.tensor([p for _, p in logit_positions], dtype=torch.long)
                logits = logits[row_index, col_index]
            result["logits"] = logits
        for point in capture:
            if any(point not in records for _, records, _ in pieces):
                raise RequestError(f"The model did not record capture point {point}.")
            result[point] = torch.cat([trim(records[point], rows) for _, records, rows in pieces])
        return result


def _dynamo():
    return importlib.import_module("torch._dynamo")


def _fms_linear_name(hf_module: str) -> str:
    """The fms name of an encoder Linear (the inverse of hf_module_name for those)."""
    parts = hf_module.split(".")
    layer, inner = parts[3], ".".join(parts[4:])
    fms_inner = {v: k for k, v in _FMS_LAYER_LINEARS.items()}[inner]
    return f"base_model.layers.{layer}.{fms_inner}"


def _match_bias_to_scale(model, torch) -> None:
    """fms_mo's weight-only path computes F.linear(x.to(w.dtype), w, bias) with w in the scale's
    dtype; float32 scales next to a 16-bit bias fail there. The bias takes the scale's dtype (the
    wider one, as ScaleScope writes float32 scales)."""
    for module in model.modules():
        scale = getattr(module, "weight_scale", None)
        bias = getattr(module, "bias", None)
        if isinstance(scale, torch.Tensor) and isinstance(bias, torch.Tensor) and bias.dtype != scale.dtype:
            bias.data = bias.data.to(scale.dtype)


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
    """The protocol over a ModelAdapter. handle() answers one request (a dict) with a Response;
    serve() reads lines (and payloads) and writes lines (and blobs). On rank 0 with several ranks,
    load and forward run on every rank (the command is broadcast) and an error on any rank fails
    the request. While a request runs, the latest progress line is repeated every
    heartbeat_seconds, so that a client's idle timeout does not fire during a long compile."""

    def __init__(self, adapter: ModelAdapter, log: TextIO = sys.stderr, collective: Optional[Collective] = None,
                 cache_folder: Optional[str] = None, heartbeat_seconds: float = 10.0):
        self.adapter = adapter
        self.log = log
        self.collective = collective or Collective()
        self.cache_folder = cache_folder or runner_cache_folder()
        self.heartbeat_seconds = heartbeat_seconds
        self.max_line_bytes = MAX_LINE_BYTES
        self.protocol = 1
        self.loaded: Optional[Tuple[str, str]] = None
        self.finished = False
        self.out: Optional[BinaryIO] = None
        self._write_lock = threading.Lock()
        self._request_id: Any = None
        self._last_progress: Optional[Dict[str, Any]] = None
        self._last_emit = 0.0
        # This session's unfinished uploads: hash -> (folder, {name: (size, sha256)}).
        self._uploads: Dict[str, Tuple[str, Dict[str, Tuple[int, str]]]] = {}
        adapter.progress = self._progress  # type: ignore[method-assign]

    def _log(self, message: str) -> None:
        print(f"[aiu-runner rank {self.collective.rank}] {message}", file=self.log, flush=True)

    # -- output --

    def _emit(self, message: Dict[str, Any], blob: Optional[bytes] = None) -> None:
        if self.out is None:
            return
        line = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        with self._write_lock:
            self.out.write(line)
            if blob is not None:
                self.out.write(blob)
            self.out.flush()
            self._last_emit = time.monotonic()

    def _progress(self, fraction: float, stage: str) -> None:
        message = {"id": self._request_id, "progress": round(min(max(float(fraction), 0.0), 1.0), 4),
                   "stage": " ".join(str(stage).split())}
        self._last_progress = message
        self._emit(message)

    @contextlib.contextmanager
    def _heartbeat(self):
        """Repeats the latest progress line while a request runs and nothing else was sent."""
        stop = threading.Event()

        def beat():
            while not stop.wait(self.heartbeat_seconds / 4):
                if time.monotonic() - self._last_emit >= self.heartbeat_seconds:
                    self._emit(self._last_progress or {"id": self._request_id, "progress": 0.0, "stage": "Working"})

        thread = None
        if self.out is not None and self.heartbeat_seconds > 0:
            self._last_emit = time.monotonic()
            thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread is not None:
                thread.join()

    # -- one request --

    def handle(self, request: Any, payload: Optional[Payload] = None) -> Response:
        request_id = request.get("id") if isinstance(request, dict) else None
        self._request_id = request_id
        self._last_progress = None
        try:
            if not isinstance(request, dict):
                raise RequestError("The request is not a JSON object.")
            op = request.get("op")
            if not isinstance(op, str):
                raise RequestError('The request has no "op" string.')
            if payload is not None and op != "upload":
                raise RequestError(f'A {op} request carries no "bytes".')
            blob = None
            if op == "hello":
                body = self._hello(request)
            elif op == "load":
                body = self._load(request)
            elif op == "forward":
                body, blob = self._forward(request)
            elif op in ("has_checkpoint", "upload", "commit_checkpoint"):
                if self.protocol < 2:
                    raise RequestError(f'"{op}" is protocol 2; send hello with "protocols":[1,2] first.')
                body = getattr(self, "_" + op)(request, payload) if op == "upload" else getattr(self, "_" + op)(request)
            elif op == "shutdown":
                self.finished = True
                body = {}
            else:
                raise RequestError(
                    f'Unknown op "{op}"; expected hello, load, forward, has_checkpoint, upload, commit_checkpoint '
                    "or shutdown."
                )
            response = Response(id=request_id, ok=True)
            response.update(body)
            if blob is not None:
                response["bytes"] = len(blob)
                response.blob = blob
            return response
        except StopReading:
            raise
        except RequestError as error:
            self._log(f"refused: {error}")
            return Response(id=request_id, ok=False, error=sentence(str(error)))
        except MemoryError:
            return Response(id=request_id, ok=False, error="The runner ran out of memory.")
        except Exception as error:  # the runner stays up; the user gets one sentence
            self._log(traceback.format_exc())
            return Response(id=request_id, ok=False, error=sentence(unexpected_failure(error)))

    def _hello(self, request: Dict[str, Any]) -> Dict[str, Any]:
        offered = request.get("protocols")
        if offered is None:
            self.protocol = 1
        elif isinstance(offered, list):
            common = [v for v in offered if isinstance(v, int) and not isinstance(v, bool) and v in PROTOCOL_VERSIONS]
            if not common:
                raise RequestError(f"This runner speaks protocol {' or '.join(map(str, PROTOCOL_VERSIONS))}, "
                                   f"none of those offered ({offered}).")
            self.protocol = max(common)
        else:
            raise RequestError('"protocols" must be a list of protocol versions.')
        return {"protocol": self.protocol, "device": self.adapter.device, "name": self.adapter.name}

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

    # -- the checkpoint cache --

    def _cached_folder(self, checkpoint_hash: str) -> str:
        return os.path.join(self.cache_folder, checkpoint_hash)

    def _has_checkpoint(self, request: Dict[str, Any]) -> Dict[str, Any]:
        return {"cached": os.path.isdir(self._cached_folder(_hex_field(request, "hash")))}

    def _upload(self, request: Dict[str, Any], payload: Optional[Payload]) -> Dict[str, Any]:
        if payload is None:
            raise RequestError('The upload request announces no "bytes".')
        checkpoint_hash = _hex_field(request, "hash")
        sha = _hex_field(request, "sha256")
        name = request.get("name")
        if not plain_file_name(name):
            raise RequestError(f"The upload's file name {json.dumps(name)[:80]} is not a plain file name "
                               "(no /, no leading dot, no spaces).")
        if checkpoint_hash not in self._uploads:
            os.makedirs(self.cache_folder, exist_ok=True)
            # One folder per session: two runners on one host may upload the same checkpoint.
            folder = os.path.join(self.cache_folder,
                                  f"{checkpoint_hash}.partial-{os.getpid()}-{secrets.token_hex(4)}")
            os.makedirs(folder)
            self._uploads[checkpoint_hash] = (folder, {})
        folder, received = self._uploads[checkpoint_hash]
        received.pop(name, None)
        incoming = os.path.join(folder, ".incoming-" + name)
        digest = hashlib.sha256()
        done, reported = 0, time.monotonic()
        try:
            with open(incoming, "wb") as file:
                while payload.remaining:
                    block = payload.read(1 << 20)
                    digest.update(block)
                    file.write(block)
                    done += len(block)
                    if time.monotonic() - reported > 0.5:
                        reported = time.monotonic()
                        self._progress(done / payload.size, f"Receiving {name}")
            if digest.hexdigest() != sha:
                raise RequestError(f"{name} arrived with SHA-256 {digest.hexdigest()}, not the announced {sha}; "
                                   "the upload is refused.")
            os.replace(incoming, os.path.join(folder, name))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(incoming)
            raise
        received[name] = (payload.size, sha)
        return {}

    def _commit_checkpoint(self, request: Dict[str, Any]) -> Dict[str, Any]:
        checkpoint_hash = _hex_field(request, "hash")
        files = request.get("files")
        message = '"files" must list {"name","size","sha256"} for every file of the checkpoint.'
        if not isinstance(files, list) or not files:
            raise RequestError(message)
        manifest = []
        for entry in files:
            if not isinstance(entry, dict):
                raise RequestError(message)
            name, size = entry.get("name"), entry.get("size")
            if not plain_file_name(name) or isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise RequestError(message)
            manifest.append((name, size, _hex_field(entry, "sha256")))
        if len({name for name, _, _ in manifest}) != len(manifest):
            raise RequestError("The manifest names a file twice.")
        actual = manifest_hash(manifest)
        if actual != checkpoint_hash:
            raise RequestError(f"The manifest's hash is {actual}, not the announced {checkpoint_hash}.")
        final = self._cached_folder(checkpoint_hash)
        if os.path.isdir(final):
            self._discard_upload(checkpoint_hash)
            return {}
        folder, received = self._uploads.get(checkpoint_hash, (None, {}))
        for name, size, sha in manifest:
            if received.get(name) != (size, sha):
                raise RequestError(f"{name} of checkpoint {checkpoint_hash[:12]} was not uploaded with size {size} "
                                   f"and SHA-256 {sha}.")
        assert folder is not None
        for leftover in set(os.listdir(folder)) - {name for name, _, _ in manifest}:
            os.unlink(os.path.join(folder, leftover))
        try:
            os.rename(folder, final)
        except OSError:
            if not os.path.isdir(final):  # else another session committed the same content first
                raise
            shutil.rmtree(folder, ignore_errors=True)
        del self._uploads[checkpoint_hash]
        self._log(f"cached checkpoint {checkpoint_hash} ({len(manifest)} files)")
        return {}

    def _discard_upload(self, checkpoint_hash: str) -> None:
        folder, _ = self._uploads.pop(checkpoint_hash, (None, None))
        if folder:
            shutil.rmtree(folder, ignore_errors=True)

    def discard_uploads(self) -> None:
        for checkpoint_hash in list(self._uploads):
            self._discard_upload(checkpoint_hash)

    # -- load and forward --

    def _load(self, request: Dict[str, Any]) -> Dict[str, Any]:
        if "hash" in request:
            checkpoint_hash = _hex_field(request, "hash")
            checkpoint = self._cached_folder(checkpoint_hash)
            if not os.path.isdir(checkpoint):
                raise RequestError(f"Checkpoint {checkpoint_hash} is not in this runner's cache; upload it first.")
        else:
            checkpoint = request.get("checkpoint")
            if not isinstance(checkpoint, str) or not checkpoint:
                raise RequestError('The load request has no "checkpoint" folder.')
            if not os.path.isdir(checkpoint):
                raise RequestError(f"{checkpoint} is not a folder on this host.")
        mode = request.get("mode", "fp8")
        if mode == "fp16":
            raise RequestError('Mode "fp16" is the workbench\'s CPU twin of this device; the AIU already keeps '
                               'everything but the FP8 codes in float16, so load mode "fp8" here.')
        if mode not in ("fp8", "dequant"):
            raise RequestError(f'The load request\'s mode "{mode}" is not fp8 or dequant.')
        if self.loaded != (checkpoint, mode) or self.adapter.architecture is None:
            started = time.perf_counter()
            self.loaded = None
            with self._heartbeat():
                self._on_every_rank({"op": "load", "checkpoint": checkpoint, "mode": mode})
            self.loaded = (checkpoint, mode)
            self._log(f"loaded {checkpoint} ({mode}) in {time.perf_counter() - started:.1f} s")
        return {"architecture": self.adapter.architecture}

    def _forward(self, request: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[bytes]]:
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
        token_types = request.get("token_type_ids")
        if token_types is not None:
            token_types = _int_rows(token_types, "token_type_ids")
            if len(token_types) != len(input_ids) or any(len(t) != len(r) for t, r in zip(token_types, input_ids)):
                raise RequestError('"token_type_ids" must have the shape of "input_ids".')
            limit = adapter.type_vocab_size
            if limit and any(t >= limit for row in token_types for t in row):
                raise RequestError(f"A token type id is outside this model's {limit} token types.")
        seq = max(len(row) for row in input_ids)
        if adapter.max_tokens and seq > adapter.max_tokens:
            raise RequestError(f"The input has {seq} tokens; this model takes at most {adapter.max_tokens}.")
        for row in input_ids:
            for token in row:
                if adapter.vocab_size and token >= adapter.vocab_size:
                    raise RequestError(f"Token id {token} is outside the vocabulary (size {adapter.vocab_size}).")

        output = None
        if self.protocol < 2:
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

        overrides = request.get("overrides") or None
        if overrides is not None:
            modules = set(linear_modules(adapter.architecture, adapter.num_layers))
            if not isinstance(overrides, dict) or not all(
                    isinstance(k, str) and v in ("float", "fp8") for k, v in overrides.items()):
                raise RequestError('"overrides" must map Linear module names to "float" or "fp8".')
            unknown = sorted(set(overrides) - modules)
            if unknown:
                raise RequestError(f'Override of "{unknown[0]}": no such Linear module in this model.')
            if not adapter.supports_overrides:
                raise RequestError(f"{adapter.name} cannot run per-module overrides; run them with the CPU runner.")

        positions = None
        if request.get("logit_positions") is not None:
            pairs = _int_rows(request["logit_positions"], "logit_positions")
            if any(len(pair) != 2 for pair in pairs):
                raise RequestError('"logit_positions" must hold [row, position] pairs.')
            if any(row >= len(input_ids) or position >= seq for row, position in pairs):
                raise RequestError("A logit position is outside the input.")
            if not is_question_answering(adapter.architecture):
                positions = [(row, position) for row, position in pairs]

        # Rows of different lengths are padded with the pad id, masked out.
        pad = getattr(adapter, "pad_id", 1)
        padded_ids = [row + [pad] * (seq - len(row)) for row in input_ids]
        padded_mask = [m + [0] * (seq - len(m)) for m in mask]
        command = {"op": "forward", "input_ids": padded_ids, "attention_mask": padded_mask, "capture": selected,
                   "logit_positions": positions}
        if token_types is not None:
            command["token_type_ids"] = [t + [0] * (seq - len(t)) for t in token_types]
        if overrides:
            command["overrides"] = overrides
        started = time.perf_counter()
        with self._heartbeat():
            result = self._on_every_rank(command)
        elapsed_ms = (time.perf_counter() - started) * 1000.0

        names = ["start_logits", "end_logits"] if is_question_answering(adapter.architecture) else ["logits"]
        tensors = []
        for name in names + selected:
            if name not in result:
                raise RequestError(f"The model returned no {name}.")
            tensors.append((name, result[name]))
        metadata = {"producer": "scalescope aiu_runner", "mode": self.loaded[1]}
        self._log(f"forward {len(input_ids)} x {seq} tokens, {len(selected)} capture(s), {elapsed_ms:.1f} ms")
        if output is not None:
            write_safetensors(output, tensors, metadata)
            return {"output": output, "elapsed_ms": elapsed_ms}, None
        return {"elapsed_ms": elapsed_ms}, safetensors_bytes(tensors, metadata)

    # -- the line loop --

    def serve(self, source: BinaryIO, out: BinaryIO) -> int:
        """Serves until end of input, a shutdown request, or input it cannot frame (then 1)."""
        self.out = out
        status = 0
        try:
            while not self.finished:
                raw = source.readline(self.max_line_bytes + 1)
                if not raw:
                    break
                try:
                    self._serve_line(raw, source)
                except StopReading as stop:
                    self._log(f"stopped reading: {stop}")
                    self._emit({"id": None, "ok": False, "error": sentence(str(stop))})
                    status = 1
                    break
        finally:
            self.discard_uploads()
            # The other ranks wait for a command; this one tells them to stop.
            self.collective.share({"op": "shutdown"})
        return status

    def _serve_line(self, raw: bytes, source: BinaryIO) -> None:
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if len(body) > self.max_line_bytes:
            raise StopReading(f"A request line is longer than {self.max_line_bytes} bytes; the runner stops "
                              "reading this input.")
        text = body.decode("utf-8", errors="replace").strip()
        if not text:
            return
        if json_nesting_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
            raise StopReading(f"A request nests JSON deeper than {MAX_JSON_DEPTH} levels; the runner stops "
                              "reading this input.")
        try:
            request = json.loads(text, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as error:
            self._emit({"id": None, "ok": False, "error": sentence(f"The request is not valid JSON ({error})")})
            return
        payload = None
        if isinstance(request, dict) and "bytes" in request:
            size = request["bytes"]
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise StopReading('A request announces "bytes" that are not a byte count; the runner stops '
                                  "reading this input.")
            payload = Payload(source, size)
        response = self.handle(request, payload)
        if payload is not None:
            payload.drain()  # a refused upload still keeps the stream framed
        self._emit(dict(response), response.blob)


def execute(adapter: ModelAdapter, command: Dict[str, Any]) -> Any:
    """A shared command, as every rank runs it."""
    if command["op"] == "load":
        return adapter.load(command["checkpoint"], command["mode"])
    if command["op"] == "forward":
        extra = {key: command[key] for key in ("token_type_ids", "overrides") if command.get(key) is not None}
        return adapter.forward(
            command["input_ids"], command["attention_mask"], command["capture"], command["logit_positions"], **extra
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


def _int_list(text: str, option: str, parser: argparse.ArgumentParser) -> List[int]:
    try:
        values = sorted({int(b) for b in text.split(",") if b.strip()})
    except ValueError:
        parser.error(f"{option} must be comma-separated integers")
    if any(v <= 0 for v in values):
        parser.error(f"{option} must be positive")
    return values


def parse_arguments(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="ScaleScope runner for IBM AIU cards (see README.md).")
    parser.add_argument("--device-type", choices=["aiu", "senulator", "cpu"], default="aiu",
                        help="aiu cards (default), the senulator, or fms eager on the host CPU")
    parser.add_argument("--compile-backend", default="none",
                        help="torch.compile backend off AIU (e.g. inductor); on AIU it is always sendnn")
    parser.add_argument("--dtype", default=None, choices=["float16", "bfloat16", "float32"],
                        help="data type for float (unquantized) checkpoints; FP8 checkpoints keep theirs")
    parser.add_argument("--seq-buckets", default="64,128,256,384,512",
                        help="sequence lengths inputs are padded up to (multiples of 64 on AIU), each compiled at "
                             "load ('' off AIU for exact lengths)")
    parser.add_argument("--batch-buckets", default="1,4,16",
                        help="batch sizes forwards are padded up to (larger batches are split), each compiled at load")
    parser.add_argument("--warmup-capture", choices=["none", "all"], default="none",
                        help="also compile the graph that records every capture point at load")
    parser.add_argument("--compile-cache", default=None, metavar="DIR",
                        help="persistent sendnn compile cache (TORCH_SENDNN_CACHE_ENABLE=1, TORCH_SENDNN_CACHE_DIR)")
    parser.add_argument("--dist-timeout-hours", type=float, default=24.0 * 7,
                        help="how long ranks wait for the next request under torchrun (gloo's default is 30 min)")
    parser.add_argument("--heartbeat-seconds", type=float, default=10.0,
                        help="repeat the latest progress line this often while a request runs")
    parser.add_argument("--adapter", default=None,
                        help="module:Class of another ModelAdapter (tests), constructed with the options")
    options = parser.parse_args(argv)
    options.seq_buckets = _int_list(options.seq_buckets, "--seq-buckets", parser)
    options.batch_buckets = _int_list(options.batch_buckets, "--batch-buckets", parser) or [1]
    on_aiu = options.device_type in ("aiu", "senulator")
    if on_aiu:
        if not options.seq_buckets:
            parser.error("--seq-buckets cannot be empty on AIU: every new length would compile for minutes")
        odd = [b for b in options.seq_buckets if b % 64]
        if odd:
            parser.error(f"--seq-buckets must be multiples of 64 on AIU (as aiu-fms-testing-utils pads), not {odd[0]}")
        if options.dtype == "bfloat16":
            parser.error("AIU cards do not compute in bfloat16; use --dtype float16")
    if options.device_type == "cpu" and options.seq_buckets == [64, 128, 256, 384, 512]:
        options.seq_buckets = []  # no compilation to spare on the host: exact lengths
    if options.dist_timeout_hours <= 0:
        parser.error("--dist-timeout-hours must be positive")
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


def init_ranks(options: argparse.Namespace, rank: int, world_size: int) -> Collective:
    if world_size <= 1:
        return Collective()
    import torch.distributed

    # Followers block in a broadcast between requests; with gloo's default 30 min timeout an idle
    # workbench would bring the whole torchrun job down.
    torch.distributed.init_process_group(backend="gloo", rank=rank, world_size=world_size,
                                         timeout=datetime.timedelta(hours=options.dist_timeout_hours))
    return TorchCollective()


def main(argv: Optional[Sequence[str]] = None) -> int:
    # The protocol owns the real stdout; anything else that prints (fms, the AIU compiler, C
    # libraries) goes to stderr, so it can never corrupt a response line.
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    options = parse_arguments(argv)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    collective = init_ranks(options, rank, world_size)
    try:
        adapter = make_adapter(options, rank, world_size)
    except RequestError as error:
        print(f"[aiu-runner rank {rank}] {error}", file=sys.stderr, flush=True)
        return 2
    if rank != 0:
        protocol.close()
        return follow(adapter, collective)
    server = RunnerServer(adapter, sys.stderr, collective, heartbeat_seconds=options.heartbeat_seconds)
    print(f"[aiu-runner rank 0] serving protocols {PROTOCOL_VERSIONS} as {adapter.name}", file=sys.stderr, flush=True)
    return server.serve(sys.stdin.buffer, protocol)


if __name__ == "__main__":
    sys.exit(main())
