"""Tests of the AIU runner's protocol side, with a stand-in model (no fms, no AIU needed).

Run: python3 -m unittest discover -s packaging/runners -p "test_*.py"

FakeAdapter below is also the model ScaleScope's C++ test_runner plugs into aiu_runner.py
(`--adapter test_aiu_runner:FakeAdapter`) to check the two sides of the protocol against each other.
Its outputs are simple functions of the input, so the expected values are known by hand:
start_logits = 0.5 * id (+ 1000 * token type), end_logits = -id, MaskedLM logits[v] = 1 where v == id else 0, and the
capture point with index k in execution order holds k + t / 4 at token t.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import hashlib
import importlib.util
import io
import json
import math
import os
import queue
import random
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Any, Dict, List, Optional
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aiu_runner  # noqa: E402
from aiu_runner import (  # noqa: E402
    Collective,
    ModelAdapter,
    RequestError,
    RunnerServer,
    capture_points,
    follow,
    hf_module_name,
    module_of,
    write_safetensors,
)

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aiu_runner.py")
HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_FMS = importlib.util.find_spec("fms") is not None

QA_ARCHITECTURE = "RobertaForQuestionAnswering"
MLM_ARCHITECTURE = "RobertaForMaskedLM"
BERT_MLM_ARCHITECTURE = "BertForMaskedLM"
BERT_QA_ARCHITECTURE = "BertForQuestionAnswering"


class FakeAdapter(ModelAdapter):
    """A model whose outputs are hand-checkable functions of the input (see the module docstring)."""

    device = "fake"
    name = "fake model for tests"

    def __init__(self, options: Any = None):
        self.options = options
        self.loads: List[tuple] = []
        self.forwards: List[Dict[str, Any]] = []
        self.fail_next_forward: Optional[Exception] = None

    def load(self, checkpoint: str, mode: str) -> str:
        with open(os.path.join(checkpoint, "config.json"), encoding="utf-8") as file:
            config = json.load(file)
        # Libraries print; the runner must keep this off the protocol stream.
        print("noise from a library on stdout")
        os.write(1, b"noise from C code on fd 1\n")
        self.loads.append((checkpoint, mode))
        self.architecture = config["architectures"][0]
        self.num_layers = int(config["num_hidden_layers"])
        self.vocab_size = int(config["vocab_size"])
        self.pad_id = int(config.get("pad_token_id", 1))
        self.max_tokens = int(config["max_position_embeddings"]) - self.pad_id - 1
        return self.architecture

    def forward(self, input_ids, attention_mask, capture, logit_positions, token_type_ids=None, overrides=None):
        self.forwards.append(dict(input_ids=input_ids, attention_mask=attention_mask, capture=capture,
                                  logit_positions=logit_positions, token_type_ids=token_type_ids,
                                  overrides=overrides))
        if self.fail_next_forward is not None:
            failure, self.fail_next_forward = self.fail_next_forward, None
            raise failure
        result: Dict[str, Any] = {}
        if self.architecture == QA_ARCHITECTURE:
            types = token_type_ids or [[0] * len(row) for row in input_ids]
            result["start_logits"] = [[0.5 * token + 1000.0 * kind for token, kind in zip(row, kinds)]
                                      for row, kinds in zip(input_ids, types)]
            result["end_logits"] = [[-float(token) for token in row] for row in input_ids]
        else:
            def one_hot(token):
                return [1.0 if v == token else 0.0 for v in range(self.vocab_size)]

            if logit_positions:
                result["logits"] = [one_hot(input_ids[r][p]) for r, p in logit_positions]
            else:
                result["logits"] = [[one_hot(token) for token in row] for row in input_ids]
        points = capture_points(self.architecture, self.num_layers)
        for point in capture:
            k = points.index(point)
            result[point] = [[k + t / 4 for t in range(len(row))] for row in input_ids]
        return result


def lines_of(out: io.BytesIO) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().decode("utf-8").splitlines()]


def read_safetensors(path):
    """An independent reader: (header dict, {name: (shape, [floats])}) of an F32 file (a path or
    the bytes themselves)."""
    if isinstance(path, bytes):
        data = path
    else:
        with open(path, "rb") as file:
            data = file.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        count = (end - begin) // 4
        tensors[name] = (entry["shape"], list(struct.unpack("<%df" % count, body[begin:end])))
    return header, tensors, length


def write_config(folder: str, architecture: str = QA_ARCHITECTURE, layers: int = 2, vocab: int = 50) -> str:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as file:
        json.dump({"architectures": [architecture], "num_hidden_layers": layers, "vocab_size": vocab,
                   "max_position_embeddings": 20, "pad_token_id": 1, "hidden_size": 8,
                   "num_attention_heads": 2, "intermediate_size": 16}, file)
    return folder


class ServerTestCase(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.root = self.folder.name
        self.qa = write_config(os.path.join(self.root, "qa"))
        self.mlm = write_config(os.path.join(self.root, "mlm"), MLM_ARCHITECTURE, layers=1, vocab=12)
        self.adapter = FakeAdapter()
        self.log = io.StringIO()
        self.server = RunnerServer(self.adapter, self.log)
        self.stdout = sys.stdout
        # FakeAdapter prints; keep the test output clean.
        sys.stdout = io.StringIO()
        self.saved_fd = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)

    def tearDown(self):
        os.dup2(self.saved_fd, 1)
        os.close(self.saved_fd)
        sys.stdout = self.stdout
        self.folder.cleanup()

    def load(self, folder=None, mode="fp8", request_id=1):
        response = self.server.handle({"id": request_id, "op": "load", "checkpoint": folder or self.qa, "mode": mode})
        self.assertTrue(response["ok"], response)
        return response

    def output(self, name="out.safetensors"):
        return os.path.join(self.root, name)


class ProtocolRoundTrips(ServerTestCase):
    def test_hello(self):
        self.assertEqual(self.server.handle({"id": 1, "op": "hello"}),
                         {"id": 1, "ok": True, "protocol": 1, "device": "fake", "name": "fake model for tests"})
        for offered, chosen in (([1, 2], 2), ([2, 1], 2), ([1], 1), ([1, 2, 7], 2), ([2], 2)):
            with self.subTest(offered):
                self.assertEqual(self.server.handle({"id": 2, "op": "hello", "protocols": offered})["protocol"], chosen)
        for offered in ([7], "2", [True]):
            with self.subTest(offered):
                answer = self.server.handle({"id": 3, "op": "hello", "protocols": offered})
                self.assertFalse(answer["ok"])
                self.assertIn("rotocol", answer["error"])

    def test_load_reports_architecture_and_reloads_only_on_change(self):
        self.assertEqual(self.load(request_id=7), {"id": 7, "ok": True, "architecture": QA_ARCHITECTURE})
        self.load()
        self.load(mode="dequant")
        self.assertEqual(self.load(self.mlm)["architecture"], MLM_ARCHITECTURE)
        self.assertEqual(self.adapter.loads, [(self.qa, "fp8"), (self.qa, "dequant"), (self.mlm, "fp8")])

    def test_forward_writes_logits_and_captures(self):
        self.load()
        out = self.output()
        capture = ["roberta.embeddings.output", "qa_outputs", "roberta.encoder.layer.1.output"]
        response = self.server.handle({"id": 3, "op": "forward", "input_ids": [[0, 7, 9, 2], [0, 5, 2]],
                                       "attention_mask": [[1, 1, 1, 1], [1, 1, 1]], "capture": capture,
                                       "output": out})
        self.assertTrue(response["ok"], response)
        self.assertEqual(response["id"], 3)
        self.assertEqual(response["output"], out)
        self.assertGreaterEqual(response["elapsed_ms"], 0.0)

        header, tensors, header_length = read_safetensors(out)
        self.assertEqual(header_length % 8, 0)
        self.assertEqual(header["__metadata__"]["mode"], "fp8")
        # Outputs first, then captures in execution order; contiguous data.
        names = [name for name in header if name != "__metadata__"]
        self.assertEqual(names, ["start_logits", "end_logits", "roberta.embeddings.output",
                                 "roberta.encoder.layer.1.output", "qa_outputs.input", "qa_outputs.output"])
        offset = 0
        for name in names:
            self.assertEqual(header[name]["dtype"], "F32")
            self.assertEqual(header[name]["data_offsets"][0], offset)
            offset = header[name]["data_offsets"][1]
        # The shorter row was padded with the pad id (1) and masked out.
        self.assertEqual(self.adapter.forwards[0]["input_ids"], [[0, 7, 9, 2], [0, 5, 2, 1]])
        self.assertEqual(self.adapter.forwards[0]["attention_mask"], [[1, 1, 1, 1], [1, 1, 1, 0]])
        self.assertEqual(tensors["start_logits"], ([2, 4], [0.0, 3.5, 4.5, 1.0, 0.0, 2.5, 1.0, 0.5]))
        self.assertEqual(tensors["end_logits"][1], [-0.0, -7.0, -9.0, -2.0, -0.0, -5.0, -2.0, -1.0])
        # 2 layers: embeddings 0, layer 1 output at 1 + 13 + 13 - 1 = 26, qa_outputs.input 27.
        self.assertEqual(tensors["roberta.encoder.layer.1.output"][1][:4], [26.0, 26.25, 26.5, 26.75])
        self.assertEqual(tensors["qa_outputs.output"][1][1], 28.25)
        self.assertEqual(os.listdir(self.root).count("out.safetensors"), 1)
        self.assertFalse([f for f in os.listdir(self.root) if f.endswith(".partial")])

    def test_forward_with_all_captures_and_default_mask(self):
        self.load()
        out = self.output()
        response = self.server.handle({"id": 4, "op": "forward", "input_ids": [[0, 3, 2]], "capture": "all",
                                       "output": out})
        self.assertTrue(response["ok"], response)
        _, tensors, _ = read_safetensors(out)
        self.assertEqual(len(tensors), 2 + 1 + 2 * 13 + 2)
        self.assertEqual(self.adapter.forwards[0]["attention_mask"], [[1, 1, 1]])

    def test_masked_lm_logit_positions(self):
        self.load(self.mlm)
        out = self.output()
        response = self.server.handle({"id": 5, "op": "forward", "input_ids": [[0, 4, 11, 2], [0, 6, 2]],
                                       "logit_positions": [[0, 2], [1, 1]], "output": out})
        self.assertTrue(response["ok"], response)
        _, tensors, _ = read_safetensors(out)
        shape, values = tensors["logits"]
        self.assertEqual(shape, [2, 12])
        self.assertEqual(values[11], 1.0)  # row 0, position 2 holds id 11
        self.assertEqual(values[12 + 6], 1.0)  # row 1, position 1 holds id 6
        self.assertEqual(sum(values), 2.0)

    def test_shutdown_ends_serving(self):
        lines = [b'{"id":1,"op":"hello"}\n', b"\n", b'{"id":2,"op":"shutdown"}\n', b'{"id":3,"op":"hello"}\n']
        source = io.BytesIO(b"".join(lines))
        out = io.BytesIO()
        self.assertEqual(self.server.serve(source, out), 0)
        answers = lines_of(out)
        self.assertEqual([a["id"] for a in answers], [1, 2])
        self.assertEqual(answers[1], {"id": 2, "ok": True})
        self.assertEqual(source.read(), b'{"id":3,"op":"hello"}\n')  # never read

    def test_end_of_input_ends_serving(self):
        out = io.BytesIO()
        self.assertEqual(self.server.serve(io.BytesIO(b""), out), 0)
        self.assertEqual(out.getvalue(), b"")


class MalformedRequests(ServerTestCase):
    CASES = [
        # (name, load first, request, expected id, phrase)
        ("not an object", False, [1, 2], None, "not a JSON object"),
        ("no op", False, {"id": 2}, 2, 'no "op"'),
        ("op not a string", False, {"id": 3, "op": 4}, 3, 'no "op"'),
        ("unknown op", False, {"id": 4, "op": "launch"}, 4, 'Unknown op "launch"'),
        ("forward before load", False, {"id": 5, "op": "forward", "input_ids": [[0, 2]], "output": "OUT"}, 5,
         "No checkpoint is loaded"),
        ("load without folder", False, {"id": 6, "op": "load"}, 6, '"checkpoint"'),
        ("load bad mode", False, {"id": 7, "op": "load", "checkpoint": "QA", "mode": "int4"}, 7,
         'mode "int4" is not fp8 or dequant'),
        ("load fp16 twin mode", False, {"id": 7, "op": "load", "checkpoint": "QA", "mode": "fp16"}, 7,
         'which runs the checkpoint\'s own dtypes (only bf16 is cast, to fp16; fp32 stays fp32)'),
        ("load missing folder", False, {"id": 8, "op": "load", "checkpoint": "/no/such/folder"}, 8,
         "/no/such/folder is not a folder"),
        ("ids not rows", True, {"id": 9, "op": "forward", "input_ids": [0, 2], "output": "OUT"}, 9,
         "list of lists"),
        ("negative id", True, {"id": 10, "op": "forward", "input_ids": [[0, -1]], "output": "OUT"}, 10,
         "non-negative integers"),
        ("boolean id", True, {"id": 11, "op": "forward", "input_ids": [[0, True]], "output": "OUT"}, 11,
         "non-negative integers"),
        ("float id", True, {"id": 12, "op": "forward", "input_ids": [[0, 2.5]], "output": "OUT"}, 12,
         "non-negative integers"),
        ("no ids", True, {"id": 13, "op": "forward", "output": "OUT"}, 13, '"input_ids"'),
        ("empty rows", True, {"id": 14, "op": "forward", "input_ids": [[]], "output": "OUT"}, 14,
         "no input tokens"),
        ("outside vocabulary", True, {"id": 15, "op": "forward", "input_ids": [[0, 50]], "output": "OUT"}, 15,
         "outside the vocabulary (size 50)"),
        ("too long", True, {"id": 16, "op": "forward", "input_ids": [[5] * 19], "output": "OUT"}, 16,
         "takes at most 18"),
        ("mask shape", True, {"id": 17, "op": "forward", "input_ids": [[0, 2]], "attention_mask": [[1]],
                              "output": "OUT"}, 17, "shape of"),
        ("unknown capture", True, {"id": 18, "op": "forward", "input_ids": [[0, 2]], "capture": ["bogus"],
                                   "output": "OUT"}, 18, 'Unknown capture point "bogus"'),
        ("capture not a list", True, {"id": 19, "op": "forward", "input_ids": [[0, 2]], "capture": 5,
                                      "output": "OUT"}, 19, '"capture" must be'),
        ("no output", True, {"id": 20, "op": "forward", "input_ids": [[0, 2]]}, 20, '"output"'),
        ("output folder missing", True, {"id": "x", "op": "forward", "input_ids": [[0, 2]],
                                         "output": "/no/such/dir/f.safetensors"}, "x", "does not exist"),
        ("logit position outside", True, {"id": 21, "op": "forward", "input_ids": [[0, 2]],
                                          "logit_positions": [[0, 5]], "output": "OUT"}, 21, "outside the input"),
    ]

    def test_each_gets_one_sentence_and_serving_goes_on(self):
        for name, load_first, request, expected_id, phrase in self.CASES:
            with self.subTest(name):
                self.server = RunnerServer(FakeAdapter(), self.log)
                if load_first:
                    self.assertTrue(self.server.handle({"id": 0, "op": "load", "checkpoint": self.qa})["ok"])
                text = json.dumps(request).replace('"OUT"', json.dumps(self.output())).replace('"QA"', json.dumps(self.qa))
                out = io.BytesIO()
                self.server.serve(io.BytesIO(text.encode() + b"\n" + b'{"id":99,"op":"hello"}\n'), out)
                answer, hello = lines_of(out)
                self.assertFalse(answer["ok"])
                self.assertEqual(answer["id"], expected_id)
                self.assertIn(phrase, answer["error"])
                self.assertTrue(answer["error"].endswith("."))
                self.assertNotIn("\n", answer["error"])
                self.assertTrue(hello["ok"])
                self.assertFalse(os.path.exists(self.output()))

    def test_not_json(self):
        # A line that is not JSON may have announced a payload: one answer, then nothing is read.
        for line, phrase in ((b'{"id":1,"op":', "not valid JSON"), (b"\xff\xfe garbage", "not valid JSON"),
                             (b'{"id":NaN,"op":"hello"}', "NaN is not a JSON number")):
            with self.subTest(line):
                out = io.BytesIO()
                status = RunnerServer(FakeAdapter(), self.log).serve(io.BytesIO(line + b'\n{"id":2,"op":"hello"}\n'), out)
                answers = lines_of(out)
                self.assertEqual(status, 1)
                self.assertEqual(len(answers), 1)
                self.assertEqual((answers[0]["id"], answers[0]["ok"]), (None, False))
                self.assertIn(phrase, answers[0]["error"])

    def test_adapter_failure_is_reported_and_serving_goes_on(self):
        self.load()
        self.adapter.fail_next_forward = ValueError("card 3 is\nunwell")
        response = self.server.handle({"id": 4, "op": "forward", "input_ids": [[0, 2]], "output": self.output()})
        self.assertEqual(response["ok"], False)
        self.assertEqual(response["error"], "The runner failed: ValueError: card 3 is unwell.")
        self.assertIn("Traceback", self.log.getvalue())
        self.assertTrue(self.server.handle({"id": 5, "op": "forward", "input_ids": [[0, 2]],
                                            "output": self.output()})["ok"])


def file_entry(path: str) -> Dict[str, Any]:
    with open(path, "rb") as file:
        data = file.read()
    return {"name": os.path.basename(path), "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def manifest_of(folder: str) -> List[Dict[str, Any]]:
    """The manifest as a client computes it, written independently of aiu_runner's helpers."""
    return [file_entry(os.path.join(folder, name)) for name in sorted(os.listdir(folder))]


def hash_of(manifest: List[Dict[str, Any]]) -> str:
    text = "".join("%s %d %s\n" % (f["name"], f["size"], f["sha256"]) for f in sorted(manifest, key=lambda f: f["name"]))
    return hashlib.sha256(text.encode()).hexdigest()


def upload_lines(folder: str, checkpoint_hash: str, first_id: int, corrupt: Optional[str] = None) -> bytes:
    """upload requests with their payloads, then commit_checkpoint, as protocol 2 frames them."""
    stream = b""
    manifest = manifest_of(folder)
    for number, entry in enumerate(manifest):
        with open(os.path.join(folder, entry["name"]), "rb") as file:
            data = file.read()
        if entry["name"] == corrupt:
            data = data[:-1] + bytes([data[-1] ^ 1])
        request = dict(id=first_id + number, op="upload", hash=checkpoint_hash, name=entry["name"],
                       sha256=entry["sha256"], bytes=len(data))
        stream += json.dumps(request).encode() + b"\n" + data
    commit = dict(id=first_id + len(manifest), op="commit_checkpoint", hash=checkpoint_hash, files=manifest)
    return stream + json.dumps(commit).encode() + b"\n"


def read_responses(data: bytes) -> List[Dict[str, Any]]:
    """Response lines, each with its blob (under "blob") when it announces "bytes"."""
    responses = []
    stream = io.BytesIO(data)
    while True:
        line = stream.readline()
        if not line:
            return responses
        response = json.loads(line)
        if "bytes" in response:
            response["blob"] = stream.read(response["bytes"])
            assert len(response["blob"]) == response["bytes"]
        responses.append(response)


class ProtocolTwo(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.root, "cache")
        self.server = RunnerServer(self.adapter, self.log, cache_folder=self.cache, heartbeat_seconds=0)
        self.assertEqual(self.server.handle({"id": 0, "op": "hello", "protocols": [1, 2]})["protocol"], 2)
        with open(os.path.join(self.qa, "model.safetensors"), "wb") as file:
            file.write(bytes(range(256)) * 40)
        self.manifest = manifest_of(self.qa)
        self.hash = hash_of(self.manifest)

    def serve(self, data: bytes) -> List[Dict[str, Any]]:
        out = io.BytesIO()
        self.server.finished = False
        self.server.serve(io.BytesIO(data), out)
        return read_responses(out.getvalue())

    def test_upload_commit_load_and_forward_blob(self):
        answers = self.serve(json.dumps({"id": 1, "op": "has_checkpoint", "hash": self.hash}).encode() + b"\n"
                             + upload_lines(self.qa, self.hash, 2)
                             + json.dumps({"id": 9, "op": "load", "hash": self.hash}).encode() + b"\n"
                             + json.dumps({"id": 10, "op": "forward", "input_ids": [[0, 7, 9, 2], [0, 5, 2]],
                                           "token_type_ids": [[0, 0, 1, 1], [0, 1, 1]],
                                           "capture": ["qa_outputs"]}).encode() + b"\n")
        self.assertEqual([a["ok"] for a in answers], [True] * len(answers), answers)
        self.assertFalse(answers[0]["cached"])
        folder = os.path.join(self.cache, self.hash)
        self.assertEqual(sorted(os.listdir(self.cache)), [self.hash])  # no .partial folder left
        self.assertEqual(manifest_of(folder), self.manifest)
        self.assertEqual(self.adapter.loads, [(folder, "fp8")])
        forward = answers[-1]
        self.assertNotIn("output", forward)
        header, tensors, _ = read_safetensors(forward["blob"])
        self.assertEqual(list(header)[1:], ["start_logits", "end_logits", "qa_outputs.input", "qa_outputs.output"])
        # 0.5 * id + 1000 * token type, the short row padded with pad id 1 and type 0.
        self.assertEqual(tensors["start_logits"], ([2, 4], [0.0, 3.5, 1004.5, 1001.0, 0.0, 1002.5, 1001.0, 0.5]))
        self.assertEqual(self.adapter.forwards[0]["token_type_ids"], [[0, 0, 1, 1], [0, 1, 1, 0]])
        self.assertTrue(self.server.handle({"id": 11, "op": "has_checkpoint", "hash": self.hash})["cached"])

    def test_corrupted_or_incomplete_uploads_are_refused(self):
        answers = self.serve(upload_lines(self.qa, self.hash, 1, corrupt="model.safetensors"))
        names = [entry["name"] for entry in self.manifest]
        refused = answers[names.index("model.safetensors")]
        self.assertFalse(refused["ok"])
        self.assertIn("model.safetensors arrived with SHA-256", refused["error"])
        self.assertIn("not the announced " + self.manifest[names.index("model.safetensors")]["sha256"], refused["error"])
        self.assertFalse(answers[-1]["ok"])  # the commit
        self.assertIn("was not uploaded", answers[-1]["error"])
        self.assertEqual(os.listdir(self.cache), [])  # the session's partial folder is gone at the end
        load = self.server.handle({"id": 5, "op": "load", "hash": self.hash})
        self.assertIn("is not in this runner's cache", load["error"])

    def test_manifest_must_hash_to_the_announced_hash(self):
        other = "0" * 64
        answers = self.serve(upload_lines(self.qa, other, 1))
        self.assertTrue(all(a["ok"] for a in answers[:-1]))
        self.assertIn(f"The manifest's hash is {self.hash}, not the announced {other}", answers[-1]["error"])
        self.assertFalse(os.path.exists(os.path.join(self.cache, other)))

    def test_bad_upload_fields_keep_the_stream_framed(self):
        payload = b"x" * 100
        cases = [("../config.json", "not a plain file name"), (".hidden", "not a plain file name"),
                 ("a b", "not a plain file name"), ("", "not a plain file name"), ("a/b", "not a plain file name")]
        stream = b""
        for number, (name, _) in enumerate(cases):
            stream += json.dumps({"id": number, "op": "upload", "hash": self.hash, "name": name,
                                  "sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)}).encode()
            stream += b"\n" + payload
        stream += json.dumps({"id": 50, "op": "upload", "hash": "ABC", "name": "x", "sha256": "0" * 64,
                              "bytes": 3}).encode() + b"\nabc"
        stream += json.dumps({"id": 51, "op": "forward", "input_ids": [[0]], "bytes": 2}).encode() + b"\n{}"
        stream += b'{"id":52,"op":"hello","protocols":[2]}\n'
        answers = self.serve(stream)
        self.assertEqual([a["id"] for a in answers], list(range(len(cases))) + [50, 51, 52])
        for answer, (_, phrase) in zip(answers, cases):
            self.assertIn(phrase, answer["error"])
        self.assertIn("64 lower-case hex digits", answers[-3]["error"])
        self.assertIn('carries no "bytes"', answers[-2]["error"])
        self.assertTrue(answers[-1]["ok"])
        self.assertFalse(os.path.exists(os.path.join(self.root, "config.json")))

    def test_two_sessions_uploading_the_same_checkpoint_at_once(self):
        # Several runners on one host share the cache: each session uploads into its own folder.
        other = RunnerServer(FakeAdapter(), self.log, cache_folder=self.cache, heartbeat_seconds=0)
        other.handle({"id": 0, "op": "hello", "protocols": [2]})
        stream = upload_lines(self.qa, self.hash, 1)
        commit = json.dumps(dict(id=1 + len(self.manifest), op="commit_checkpoint", hash=self.hash,
                                 files=self.manifest)).encode() + b"\n"
        self.assertTrue(stream.endswith(commit))
        uploads = stream[:-len(commit)]
        out_a, out_b = io.BytesIO(), io.BytesIO()
        self.server.out, other.out = out_a, out_b
        for server, out in ((self.server, out_a), (other, out_b)):
            source = io.BytesIO(uploads)
            while True:
                line = source.readline()
                if not line:
                    break
                server._serve_line(line, source)
        self.assertEqual(len([n for n in os.listdir(self.cache) if ".partial-" in n]), 2)
        for server in (self.server, other):
            server._serve_line(commit, io.BytesIO())
        answers = lines_of(out_a) + lines_of(out_b)
        self.assertTrue(all(a["ok"] for a in answers), answers)
        self.assertEqual(os.listdir(self.cache), [self.hash])
        self.assertEqual(manifest_of(os.path.join(self.cache, self.hash)), self.manifest)

    def test_uploads_of_killed_sessions_are_swept_and_nothing_else(self):
        # A runner killed during an upload leaves its staging folder; the next session on this host
        # removes it once its owner is gone, and touches nothing it cannot prove it made.
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        host = aiu_runner.this_host_tag()
        os.makedirs(self.cache, mode=0o700)
        leftover = f"{self.hash}.partial-{host}-{dead.pid}-Ab12Cd"
        kept = {
            f"{self.hash}.partial-{host}-{os.getppid()}-Ab12Cd": "dir",   # its owner still runs
            f"{self.hash}.partial-{'0' * 16}-{dead.pid}-Ab12Cd": "dir",   # another host's (or container's)
            f"{self.hash}.partial-Ab12Cd": "dir",                       # an older runner's, owner unknown
            f"{self.hash}.partial-{host}-{dead.pid}-Ab12Cd.bak": "dir", # not the exact form
            f"{'f' * 64}.partial-{host}-{dead.pid}-Xy34Zw": "file",     # a file of that name
            f"{'e' * 64}.partial-{host}-{dead.pid}-Xy34Zw": "link",     # a link to a folder outside
            "model.safetensors": "file",
        }
        outside = os.path.join(self.root, "outside")
        os.makedirs(outside)
        with open(os.path.join(outside, "user.txt"), "w") as file:
            file.write("mine")
        os.makedirs(os.path.join(self.cache, leftover))
        with open(os.path.join(self.cache, leftover, "model.safetensors"), "wb") as file:
            file.write(b"half")
        for name, kind in kept.items():
            path = os.path.join(self.cache, name)
            if kind == "dir":
                os.makedirs(path)
            elif kind == "file":
                with open(path, "w") as file:
                    file.write("x")
            else:
                os.symlink(outside, path)
        server = RunnerServer(FakeAdapter(), self.log, cache_folder=self.cache, heartbeat_seconds=0)
        server.handle({"id": 0, "op": "hello", "protocols": [2]})
        self.assertFalse(server.handle({"id": 1, "op": "has_checkpoint", "hash": self.hash})["cached"])
        self.assertEqual(sorted(os.listdir(self.cache)), sorted(kept))
        self.assertEqual(os.listdir(outside), ["user.txt"])

    def test_upload_folders_carry_their_owner(self):
        # The form the C++ runner writes and sweeps (io/temporary_owner.h), so either runner sweeps
        # the other's leftovers in a shared cache.
        out = io.BytesIO()
        self.server.out = out
        stream = upload_lines(self.qa, self.hash, 1)
        source = io.BytesIO(stream)
        self.server._serve_line(source.readline(), source)
        [name] = os.listdir(self.cache)
        self.assertRegex(name, rf"^{self.hash}\.partial-{aiu_runner.this_host_tag()}-{os.getpid()}-[A-Za-z0-9]{{6}}$")
        self.assertEqual(aiu_runner.staging_owner(name), (aiu_runner.this_host_tag(), os.getpid()))

    def test_checkpoint_ops_need_protocol_two(self):
        server = RunnerServer(FakeAdapter(), self.log, cache_folder=self.cache)
        answer = server.handle({"id": 1, "op": "has_checkpoint", "hash": self.hash})
        self.assertIn("protocol 2", answer["error"])

    def test_overrides_refused_unless_the_adapter_runs_them(self):
        self.load()
        request = {"id": 3, "op": "forward", "input_ids": [[0, 2]],
                   "overrides": {"roberta.encoder.layer.1.output.dense": "float"}}
        answer = self.server.handle(request)
        self.assertEqual(answer["error"], "fake model for tests cannot run per-module overrides; run them with the "
                                          "CPU runner.")
        self.assertEqual(self.adapter.forwards, [])
        self.adapter.supports_overrides = True
        self.assertTrue(self.server.handle(request)["ok"])
        self.assertEqual(self.adapter.forwards[0]["overrides"], {"roberta.encoder.layer.1.output.dense": "float"})
        bad = self.server.handle(dict(request, overrides={"roberta.encoder.layer.9.output.dense": "float"}))
        self.assertIn("no such Linear module", bad["error"])
        bad = self.server.handle(dict(request, overrides={"qa_outputs": "int4"}))
        self.assertIn('"float" or "fp8"', bad["error"])

    def test_token_types_must_fit(self):
        self.load()
        self.adapter.type_vocab_size = 2
        for types, phrase in (([[0, 2]], "outside this model's 2 token types"), ([[0]], "shape of"),
                              ([[0, -1]], "non-negative")):
            with self.subTest(types):
                answer = self.server.handle({"id": 1, "op": "forward", "input_ids": [[0, 2]], "token_type_ids": types})
                self.assertIn(phrase, answer["error"])


class Bounds(ServerTestCase):
    def serve(self, data: bytes, server=None):
        out = io.BytesIO()
        status = (server or self.server).serve(io.BytesIO(data), out)
        return status, read_responses(out.getvalue())

    def test_deep_nesting_gets_one_sentence(self):
        deep = b'{"id":' + b"[" * 100_000 + b"]" * 100_000 + b',"op":"hello"}\n'
        status, answers = self.serve(deep + b'{"id":2,"op":"hello"}\n')
        self.assertEqual(status, 1)
        self.assertEqual(answers, [{"id": None, "ok": False, "error": "A request nests JSON deeper than 64 levels; "
                                                                      "the runner stops reading this input."}])
        # 64 levels are fine; brackets inside strings do not count.
        ok = json.dumps({"id": 1, "op": "hello", "x": "[[[[{{{{" * 100, "y": json.loads("[" * 62 + "]" * 62)})
        status, answers = self.serve(ok.encode() + b"\n")
        self.assertEqual((status, answers[0]["ok"]), (0, True))

    def test_depth_is_measured_in_linear_time(self):
        # An unterminated string of escaped quotes made an earlier, regex-based measure quadratic.
        for text, expected in (('{"a":"' + '\\"' * 400_000, 1), ('["\\"[", [[]]]', 3), ("[" * 65, 65),
                               ('{"a":"]]]]","b":[{"c":"\\\\"}]}', 3), ("[]" * 500_000, 1)):
            self.assertEqual(aiu_runner.json_nesting_depth(text, 64), expected)

        # Linear, not quadratic: eight times the input costs about eight times the time, where a
        # quadratic measure costs 64 times. A ratio, not a wall-clock bound, so that a loaded machine
        # (which slows both runs alike) does not fail it; the fastest of three runs of each.
        def fastest(text):
            times = []
            for _ in range(3):
                started = time.perf_counter()
                aiu_runner.json_nesting_depth(text, 64)
                times.append(time.perf_counter() - started)
            return min(times)

        for unit in ('\\"', "[]"):
            prefix = '{"a":"' if unit == '\\"' else ""
            small, large = fastest(prefix + unit * 50_000), fastest(prefix + unit * 400_000)
            self.assertLess(large / small, 24, f"{unit!r}: {small:.4f} s for 50,000, {large:.4f} s for 400,000")

    def test_long_line_is_refused(self):
        self.server.max_line_bytes = 1000
        status, answers = self.serve(b'{"id":1,"op":"hello","pad":"' + b"x" * 2000 + b'"}\n{"id":2,"op":"hello"}\n')
        self.assertEqual(status, 1)
        self.assertEqual(len(answers), 1)
        self.assertIn("longer than 1000 bytes", answers[0]["error"])

    def test_payload_framing_errors_stop_reading(self):
        server = RunnerServer(FakeAdapter(), self.log, cache_folder=os.path.join(self.root, "c"))
        server.handle({"id": 0, "op": "hello", "protocols": [2]})
        status, answers = self.serve(b'{"id":1,"op":"upload","bytes":-4}\n{"id":2,"op":"hello"}\n', server)
        self.assertEqual((status, len(answers)), (1, 1))
        self.assertIn('"bytes" must be a byte count (a non-negative integer), not -4', answers[0]["error"])
        self.assertEqual(answers[0]["id"], 1)
        server = RunnerServer(FakeAdapter(), self.log, cache_folder=os.path.join(self.root, "c"))
        server.handle({"id": 0, "op": "hello", "protocols": [2]})
        request = {"id": 1, "op": "upload", "hash": "a" * 64, "name": "x", "sha256": "b" * 64, "bytes": 10}
        status, answers = self.serve(json.dumps(request).encode() + b"\nshort", server)
        self.assertEqual(status, 1)
        self.assertIn("ended 5 bytes before the end of a 10-byte payload", answers[-1]["error"])
        self.assertEqual(os.listdir(os.path.join(self.root, "c")), [])


class TrustBoundary(ServerTestCase):
    """Issue 30: what the runner accepts from a peer it cannot trust (PROTOCOL.md "What the runner
    trusts"), the same cases as tests/test_runner_boundary.cpp holds the CPU runner to."""

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.root, "cache")
        with open(os.path.join(self.qa, "config.json"), "w", encoding="utf-8") as file:
            json.dump({"architectures": [QA_ARCHITECTURE], "num_hidden_layers": 4, "vocab_size": 50,
                       "max_position_embeddings": 20, "pad_token_id": 1}, file)
        with open(os.path.join(self.qa, "model.safetensors"), "wb") as file:
            file.write(bytes(range(256)) * 40)
        self.manifest = manifest_of(self.qa)
        self.hash = hash_of(self.manifest)

    def server_on(self, cache: str, adapter: Optional[FakeAdapter] = None) -> RunnerServer:
        server = RunnerServer(adapter or FakeAdapter(), self.log, cache_folder=cache, heartbeat_seconds=0)
        self.assertEqual(server.handle({"id": 0, "op": "hello", "protocols": [1, 2]})["protocol"], 2)
        return server

    def serve(self, server: RunnerServer, data: bytes):
        out = io.BytesIO()
        status = server.serve(io.BytesIO(data), out)
        return status, read_responses(out.getvalue())

    @staticmethod
    def upload(request_id: int, checkpoint_hash: str, name: str, data: bytes) -> bytes:
        request = dict(id=request_id, op="upload", hash=checkpoint_hash, name=name,
                       sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
        return json.dumps(request).encode() + b"\n" + data

    def uploads_and_commit(self, first_id: int, replaced: Optional[Dict[str, bytes]] = None) -> bytes:
        stream = b""
        for number, entry in enumerate(self.manifest):
            with open(os.path.join(self.qa, entry["name"]), "rb") as file:
                data = file.read()
            data = (replaced or {}).get(entry["name"], data)
            stream += self.upload(first_id + number, self.hash, entry["name"], data)
        commit = dict(id=first_id + len(self.manifest), op="commit_checkpoint", hash=self.hash, files=self.manifest)
        return stream + json.dumps(commit).encode() + b"\n"

    # -- the cache --

    def test_commit_of_other_bytes_under_a_genuine_hash_is_refused(self):
        with open(os.path.join(self.qa, "config.json"), "rb") as file:
            genuine = file.read()
        forged = genuine.replace(b'"num_hidden_layers": 4', b'"num_hidden_layers": 1')
        self.assertNotEqual(forged, genuine)
        self.assertEqual(len(forged), len(genuine))
        commit_id = 1 + len(self.manifest)
        _, answers = self.serve(self.server_on(self.cache), self.uploads_and_commit(1, {"config.json": forged}))
        commit = {a["id"]: a for a in answers}[commit_id]
        self.assertFalse(commit["ok"], commit)
        self.assertIn("config.json", commit["error"])
        self.assertFalse(os.path.exists(os.path.join(self.cache, self.hash)))
        # A later session uploads the genuine files, and loads the genuine model.
        adapter = FakeAdapter()
        later = self.server_on(self.cache, adapter)
        self.assertFalse(later.handle({"id": 1, "op": "has_checkpoint", "hash": self.hash})["cached"])
        _, answers = self.serve(later, self.uploads_and_commit(2) + json.dumps(
            {"id": 50, "op": "load", "hash": self.hash}).encode() + b"\n")
        self.assertTrue(all(a["ok"] for a in answers), answers)
        self.assertEqual(adapter.num_layers, 4)
        self.assertEqual(manifest_of(os.path.join(self.cache, self.hash)), self.manifest)

    def test_commit_publishes_only_the_manifests_files(self):
        stream = self.upload(1, self.hash, "planted.sh", b"#!/bin/sh\nrm -rf ~\n") + self.uploads_and_commit(2)
        _, answers = self.serve(self.server_on(self.cache), stream)
        self.assertTrue(all(a["ok"] for a in answers), answers)
        published = []
        for folder, folders, files in os.walk(self.cache):
            published += [os.path.relpath(os.path.join(folder, name), self.cache) for name in folders + files]
        self.assertEqual(sorted(published), sorted([self.hash] + [os.path.join(self.hash, f["name"])
                                                                   for f in self.manifest]))

    def test_default_cache_is_private(self):
        self.assertEqual(aiu_runner.runner_cache_folder({"XDG_CACHE_HOME": "/x"}), "/x/scalescope-runner")
        self.assertEqual(aiu_runner.runner_cache_folder({"SCALESCOPE_RUNNER_CACHE": "/y"}), "/y")
        _, answers = self.serve(self.server_on(self.cache), self.uploads_and_commit(1))
        self.assertTrue(all(a["ok"] for a in answers), answers)
        self.assertEqual(os.stat(self.cache).st_mode & 0o7777, 0o700)
        self.assertEqual(os.stat(os.path.join(self.cache, self.hash)).st_mode & 0o7777, 0o700)
        for entry in self.manifest:
            self.assertEqual(os.stat(os.path.join(self.cache, self.hash, entry["name"])).st_mode & 0o077, 0)

    def test_cache_writable_by_others_is_refused(self):
        os.makedirs(self.cache)
        os.chmod(self.cache, 0o777)
        stream = (self.upload(1, self.hash, "config.json", b'{"id":2,"op":"shutdown"}\n')
                  + json.dumps({"id": 3, "op": "has_checkpoint", "hash": self.hash}).encode() + b"\n"
                  + b'{"id":4,"op":"hello"}\n')
        status, answers = self.serve(self.server_on(self.cache), stream)
        self.assertEqual([a["id"] for a in answers], [1, 3, 4])
        for answer in answers[:2]:
            self.assertIn(self.cache, answer["error"])
            self.assertIn("other users", answer["error"])
        self.assertTrue(answers[2]["ok"])
        self.assertEqual(os.listdir(self.cache), [])

    # -- framing --

    def test_a_bad_byte_count_stops_reading(self):
        for count in ('"26"', "-26", "26.5", "true", "null", str(2 ** 64 + 26), str(2 ** 63)):
            with self.subTest(count):
                bad = ('{"id":1,"op":"upload","hash":"%s","name":"config.json","sha256":"%s","bytes":%s}\n'
                       % ("a" * 64, "b" * 64, count)).encode()
                status, answers = self.serve(self.server_on(self.cache),
                                             bad + b'{"id":2,"op":"shutdown"}\n{"id":3,"op":"hello"}\n')
                self.assertEqual((status, [a["id"] for a in answers]), (1, [1]))
                self.assertIn("byte count", answers[0]["error"])
                self.assertIn("stops reading", answers[0]["error"])

    def test_an_unreadable_line_stops_reading(self):
        cases = [(b'{"id":2,"op":', "not valid JSON"), (b'{"id":2,"op":"upload","bytes":24', "not valid JSON"),
                 (b'{"id":NaN,"op":"hello"}', "NaN is not a JSON number"),
                 (b'{"id":2,"op":"hello","x":' + b"[" * 100 + b"]" * 100 + b"}", "64 levels"),
                 (b'{"id":2,"op":"hello","x":[0' + b",0" * (8 << 20) + b"]}", "8388608 values"),
                 (b'{"id":2,"op":"hello","x":[{}' + b",{}" * ((1 << 20) + 1) + b"]}", "1048576 arrays or objects")]
        for line, phrase in cases:
            with self.subTest(phrase):
                status, answers = self.serve(self.server_on(self.cache),
                                             line + b'\n{"id":3,"op":"shutdown"}\n{"id":4,"op":"hello"}\n')
                self.assertEqual(status, 1)
                self.assertEqual(len(answers), 1, answers)
                self.assertEqual((answers[0]["id"], answers[0]["ok"]), (None, False))
                self.assertIn(phrase, answers[0]["error"])
                self.assertIn("stops reading", answers[0]["error"])

    def test_an_unusable_cache_still_consumes_the_payload(self):
        parent = os.path.join(self.root, "a-file")
        with open(parent, "w", encoding="utf-8") as file:
            file.write("not a folder")
        cache = os.path.join(parent, "cache")
        stream = (self.upload(1, "c" * 64, "config.json", b'{"id":2,"op":"shutdown"}\n')
                  + b'{"id":3,"op":"hello","protocols":[1,2]}\n')
        status, answers = self.serve(self.server_on(cache), stream)
        self.assertEqual((status, [a["id"] for a in answers]), (0, [1, 3]))
        self.assertIn(cache, answers[0]["error"])
        self.assertNotIn("\n", answers[0]["error"])
        self.assertTrue(answers[1]["ok"])

    def test_integers_are_range_checked_as_64_bit(self):
        cases = [("logit_positions", [[0, 2 ** 32 + 1]], str(2 ** 32 + 1)),
                 ("logit_positions", [[2 ** 32, 1]], str(2 ** 32)),
                 ("logit_positions", [[0, 2 ** 63]], str(2 ** 63)),
                 ("input_ids", [[0, 2 ** 64 + 5, 2]], str(2 ** 64 + 5)),
                 ("input_ids", [[0, -2 ** 63 - 1, 2]], str(-2 ** 63 - 1)),
                 ("token_type_ids", [[0, 2 ** 64, 0]], str(2 ** 64))]
        self.load(self.mlm)
        for field, value, phrase in cases:
            with self.subTest(field=field, value=phrase):
                request = {"id": 3, "op": "forward", "input_ids": [[0, 5, 2]], "output": self.output()}
                request[field] = value
                answer = self.server.handle(request)
                self.assertFalse(answer["ok"], answer)
                self.assertIn(phrase, answer["error"])
        self.assertEqual(self.adapter.forwards, [])


class SlowAdapter(FakeAdapter):
    """Loads for a while, reporting a stage, as a compile warm-up does."""

    def load(self, checkpoint, mode):
        self.progress(0.25, "Compiling for AIU")
        time.sleep(0.6)
        return super().load(checkpoint, mode)


class Progress(ServerTestCase):
    def test_progress_lines_and_heartbeats_precede_the_response(self):
        adapter = SlowAdapter()
        server = RunnerServer(adapter, self.log, heartbeat_seconds=0.1)
        out = io.BytesIO()
        server.serve(io.BytesIO(json.dumps({"id": 7, "op": "load", "checkpoint": self.qa}).encode() + b"\n"), out)
        answers = lines_of(out)
        self.assertEqual(answers[-1], {"id": 7, "ok": True, "architecture": QA_ARCHITECTURE})
        progress = answers[:-1]
        self.assertGreaterEqual(len(progress), 3)  # the stage, then heartbeats during the 0.6 s
        for line in progress:
            self.assertEqual(line, {"id": 7, "progress": 0.25, "stage": "Compiling for AIU"})


class SafetensorsWriter(unittest.TestCase):
    def test_nested_lists_little_endian_and_aligned(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "t.safetensors")
            write_safetensors(path, [("a", [[1.0, -2.0, 0.5]]), ("b", [3.25])], {"k": "v"})
            with open(path, "rb") as file:
                data = file.read()
            (length,) = struct.unpack("<Q", data[:8])
            self.assertEqual(length % 8, 0)
            header = json.loads(data[8:8 + length])
            self.assertEqual(header["a"], {"dtype": "F32", "shape": [1, 3], "data_offsets": [0, 12]})
            self.assertEqual(header["b"], {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]})
            self.assertEqual(header["__metadata__"], {"k": "v"})
            # 1.0 as little-endian IEEE float32 is 00 00 80 3f.
            self.assertEqual(data[8 + length:8 + length + 4], b"\x00\x00\x80\x3f")
            self.assertEqual(len(data), 8 + length + 16)

    def test_failure_leaves_no_file(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "t.safetensors")
            with self.assertRaises(ValueError):
                write_safetensors(path, [("a", [[1.0, 2.0], [3.0]])])  # ragged
            self.assertEqual(os.listdir(folder), [])

    @unittest.skipUnless(HAVE_TORCH, "torch is not installed")
    def test_torch_and_numpy_tensors(self):
        import numpy
        import torch

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "t.safetensors")
            half = torch.tensor([[1.5, -0.25], [2.0, 4.0]], dtype=torch.float16)
            big_endian = numpy.array([1.0, 2.0], dtype=">f4")
            write_safetensors(path, [("half", half), ("be", big_endian), ("t", half.t())])
            _, tensors, _ = read_safetensors(path)
            self.assertEqual(tensors["half"], ([2, 2], [1.5, -0.25, 2.0, 4.0]))
            self.assertEqual(tensors["be"], ([2], [1.0, 2.0]))
            self.assertEqual(tensors["t"], ([2, 2], [1.5, 2.0, -0.25, 4.0]))  # made contiguous


class Names(unittest.TestCase):
    def test_fms_to_hugging_face_module_names(self):
        cases = {
            "base_model.enc_norm": "roberta.embeddings",
            "base_model.layers.3": "roberta.encoder.layer.3",
            "base_model.layers.3.attn.in_proj.query": "roberta.encoder.layer.3.attention.self.query",
            "base_model.layers.0.attn.in_proj.key": "roberta.encoder.layer.0.attention.self.key",
            "base_model.layers.0.attn.in_proj.value": "roberta.encoder.layer.0.attention.self.value",
            "base_model.layers.11.attn.dense": "roberta.encoder.layer.11.attention.output.dense",
            "base_model.layers.2.ff_sub_layer.w1": "roberta.encoder.layer.2.intermediate.dense",
            "base_model.layers.2.ff_sub_layer.w2": "roberta.encoder.layer.2.output.dense",
            "qa_head": "qa_outputs",
            "classification_head.dense": None,  # not a head of a QA model
            "base_model.layers.2.ln": None,
            "base_model.layers.2.ff_sub_layer": None,
            "base_model.embedding": None,
            "base_model.layers.x.attn.dense": None,
            "": None,
        }
        for fms_name, expected in cases.items():
            with self.subTest(fms_name):
                self.assertEqual(hf_module_name(fms_name, QA_ARCHITECTURE), expected)
        self.assertEqual(hf_module_name("classification_head.dense", MLM_ARCHITECTURE), "lm_head.dense")
        self.assertEqual(hf_module_name("classification_head.head", MLM_ARCHITECTURE), "lm_head.decoder")
        self.assertEqual(hf_module_name("classification_head.dense", BERT_MLM_ARCHITECTURE),
                         "cls.predictions.transform.dense")
        self.assertEqual(hf_module_name("base_model.layers.1.ff_sub_layer.w2", BERT_MLM_ARCHITECTURE),
                         "bert.encoder.layer.1.output.dense")

    def test_capture_points_in_execution_order(self):
        points = capture_points(QA_ARCHITECTURE, 2)
        self.assertEqual(len(points), 1 + 2 * (12 + 1) + 2)
        self.assertEqual(points[:3], ["roberta.embeddings.output", "roberta.encoder.layer.0.attention.self.query.input",
                                      "roberta.encoder.layer.0.attention.self.query.output"])
        self.assertEqual(points[13], "roberta.encoder.layer.0.output")
        self.assertEqual(points[-2:], ["qa_outputs.input", "qa_outputs.output"])
        self.assertEqual(capture_points(MLM_ARCHITECTURE, 1)[-4:],
                         ["lm_head.dense.input", "lm_head.dense.output", "lm_head.decoder.input", "lm_head.decoder.output"])


def runner_copy(folder: str, families_text: Optional[str]):
    """aiu_runner.py copied into folder, beside families_text as encoder_families.json (none when
    None), imported as a module of its own."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "aiu_runner.py")
    with open(RUNNER, "rb") as source, open(path, "wb") as target:
        target.write(source.read())
    if families_text is not None:
        with open(os.path.join(folder, "encoder_families.json"), "w", encoding="utf-8") as file:
            file.write(families_text)
    spec = importlib.util.spec_from_file_location(f"aiu_runner_copy_{abs(hash(folder))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def with_third_family() -> str:
    """The committed table plus a made-up family (ELECTRA-like names), for tests only."""
    with open(os.path.join(os.path.dirname(RUNNER), "encoder_families.json"), encoding="utf-8") as file:
        table = json.load(file)
    third = copy.deepcopy(table["families"][0])
    third.update(family="electra", prefix="electra", positions_after_pad=False,
                 classes=[{"name": "ElectraForMaskedLM", "head": "masked-lm", "fms_architecture": "roberta"}],
                 embeddings_module="electra.embeddings", layer_module="electra.encoder.layer.{layer}",
                 heads={"masked-lm": [
                     {"role": "lm_dense", "hf": "generator_predictions.dense", "fms": "classification_head.dense"},
                     {"role": "lm_decoder", "hf": "generator_lm_head", "fms": "classification_head.head",
                      "tied_weight": "electra.embeddings.word_embeddings.weight"}]},
                 pooler_module=None, quantize_ignore=["generator_lm_head"])
    table["families"].append(third)
    return json.dumps(table)


class Families(unittest.TestCase):
    def test_the_table_has_the_agreed_schema(self):
        with open(os.path.join(os.path.dirname(RUNNER), "encoder_families.json"), encoding="utf-8") as file:
            table = json.load(file)
        self.assertEqual(table["generated_by"], "scalescope-cli families --json")
        self.assertEqual([f["family"] for f in table["families"]], ["roberta", "bert", "xlm-roberta"])
        keys = {"family", "prefix", "tokenizer", "positions_after_pad", "config_defaults", "special_tokens", "classes",
                "embeddings_module", "fms_embeddings_module", "layer_module", "fms_layer_module", "encoder_linears",
                "heads", "decoder_bias_tensors", "pooler_module", "quantize_ignore"}
        for family in table["families"]:
            self.assertEqual(set(family), keys)
            self.assertEqual([l["role"] for l in family["encoder_linears"]],
                             ["query", "key", "value", "attention_output", "intermediate", "output"])
        self.assertIsNone(table["families"][1]["classes"][0]["fms_architecture"])

    def test_a_third_family_needs_no_code_change(self):
        with tempfile.TemporaryDirectory() as root:
            runner, _ = runner_copy(root, with_third_family())
            points = runner.capture_points("ElectraForMaskedLM", 1)
            self.assertEqual(points[:2], ["electra.embeddings.output", "electra.encoder.layer.0.attention.self.query.input"])
            self.assertEqual(points[-2:], ["generator_lm_head.input", "generator_lm_head.output"])
            self.assertEqual(runner.hf_module_name("base_model.layers.0.ff_sub_layer.w1", "ElectraForMaskedLM"),
                             "electra.encoder.layer.0.intermediate.dense")
            self.assertEqual(runner.hf_module_name("classification_head.dense", "ElectraForMaskedLM"),
                             "generator_predictions.dense")
            self.assertFalse(runner.is_question_answering("ElectraForMaskedLM"))
            self.assertEqual(runner.capture_points(MLM_ARCHITECTURE, 1), capture_points(MLM_ARCHITECTURE, 1))
            # The consumer rules read the same names: an FMS-named keep-float entry of the new family.
            w1 = "electra.encoder.layer.0.intermediate.dense"
            dtypes = {m + ".weight": "F8_E4M3" for m in runner.encoder_linear_modules("ElectraForMaskedLM", 1)}
            dtypes.update({w1 + ".weight": "F16", "electra.embeddings.word_embeddings.weight": "F16"})
            plan = runner.plan_fms_load(fp8_config(ignore=["base_model.layers.0.ff_sub_layer.w1"]),
                                        "ElectraForMaskedLM", 1, dtypes, "config.json", 1, "fp8", False, True)
            self.assertEqual(plan.kept_float, [w1])
            self.assertEqual(plan.linear_types["base_model.layers.0.ff_sub_layer.w1"], "torch_linear")

    @unittest.skipUnless(HAVE_TORCH and not HAVE_FMS, "needs torch, and the fakes rather than a real fms")
    def test_a_third_family_loads_and_captures_through_the_fake_stack(self):
        with tempfile.TemporaryDirectory() as root, contextlib.ExitStack() as stack:
            import torch

            stack.enter_context(mock.patch.object(sys, "path", [FAKES] + sys.path))
            stack.enter_context(mock.patch.dict(sys.modules))
            stack.enter_context(torch.no_grad())
            runner, _ = runner_copy(os.path.join(root, "runner"), with_third_family())
            with mock.patch.object(aiu_runner, "family_of", runner.family_of):
                checkpoint = write_checkpoint(os.path.join(root, "electra"), "ElectraForMaskedLM", layers=1)
            adapter = runner.FmsAdapter(runner.parse_arguments(["--device-type", "cpu"]))
            self.assertEqual(adapter.load(checkpoint, "fp8"), "ElectraForMaskedLM")
            fms = importlib.import_module("fms.models")
            self.assertEqual(fms.calls[-1]["architecture"], "roberta")
            self.assertEqual(fms.calls[-1]["kwargs"]["tie_heads"], False)  # generator_lm_head.weight is stored
            points = ["electra.encoder.layer.0.output", "generator_lm_head.output"]
            result = adapter.forward([[5, 7, 9]], [[1, 1, 1]], points, None)
            self.assertEqual(tuple(result["generator_lm_head.output"].shape), (1, 3, 50))
            self.assertTrue(torch.equal(result["generator_lm_head.output"], result["logits"]))

    def test_a_missing_or_malformed_table_is_one_sentence_naming_the_file(self):
        for text, phrase in ((None, "is missing"), ("{", "is not readable JSON"),
                             ('{"families": [{"family": "x"}]}', "is malformed: a family lacks or misstates"),
                             ('{"generated_by": "x"}', 'holds no "families" list')):
            with self.subTest(phrase), tempfile.TemporaryDirectory() as root:
                runner, path = runner_copy(root, text)
                table = os.path.join(root, "encoder_families.json")
                with self.assertRaises(runner.RequestError) as raised:
                    runner.capture_points(QA_ARCHITECTURE, 1)
                message = aiu_runner.sentence(str(raised.exception))
                self.assertIn(table, message)
                self.assertIn(phrase, message)
                # The program stops at start, with that sentence on stderr.
                done = subprocess.run([sys.executable, "-B", path], input=b"", capture_output=True, timeout=60)
                self.assertEqual(done.returncode, 2)
                self.assertEqual(done.stdout, b"")
                self.assertIn(table, done.stderr.decode())


class QueueCollective(Collective):
    """Ranks as threads: the leader's commands go to every follower's queue; errors come back."""

    def __init__(self, rank: int, world_size: int, commands: List[queue.Queue], errors: queue.Queue):
        self.rank, self.world_size, self.commands, self.errors = rank, world_size, commands, errors

    def share(self, command):
        if self.rank == 0:
            for q in self.commands:
                q.put(command)
            return command
        return self.commands[self.rank - 1].get(timeout=10)

    def gather_errors(self, error):
        if self.rank != 0:
            self.errors.put((self.rank, error))
            return []
        gathered = [error] + [None] * (self.world_size - 1)
        for _ in range(self.world_size - 1):
            rank, message = self.errors.get(timeout=10)
            gathered[rank] = message
        return gathered


class RankCoordination(ServerTestCase):
    def test_every_rank_runs_load_and_forward_and_a_follower_error_fails_the_request(self):
        commands = [queue.Queue(), queue.Queue()]
        errors: queue.Queue = queue.Queue()
        followers = [FakeAdapter(), FakeAdapter()]
        threads = [threading.Thread(target=follow, args=(followers[i], QueueCollective(i + 1, 3, commands, errors),
                                                         io.StringIO()))
                   for i in range(2)]
        for thread in threads:
            thread.start()
        server = RunnerServer(self.adapter, self.log, QueueCollective(0, 3, commands, errors))
        followers[1].fail_next_forward = RequestError("AIU card 2 timed out.")
        out = io.BytesIO()
        forward = json.dumps({"op": "forward", "input_ids": [[0, 3, 2]], "output": self.output()})
        lines = [
            json.dumps({"id": 1, "op": "hello"}).encode(),
            json.dumps({"id": 2, "op": "load", "checkpoint": self.qa}).encode(),
            forward.replace('"op"', '"id": 3, "op"').encode(),
            forward.replace('"op"', '"id": 4, "op"').encode(),
        ]
        server.serve(io.BytesIO(b"\n".join(lines) + b"\n"), out)  # end of input shuts the followers down
        for thread in threads:
            thread.join(timeout=10)
            self.assertFalse(thread.is_alive())
        answers = lines_of(out)
        self.assertEqual([a["ok"] for a in answers], [True, True, False, True])
        self.assertEqual(answers[2]["error"], "Rank 2: AIU card 2 timed out.")
        for follower in followers:
            self.assertEqual(follower.loads, [(self.qa, "fp8")])
            self.assertEqual(len(follower.forwards), 2)  # hello is rank 0's alone
            self.assertEqual(follower.forwards[0]["input_ids"], [[0, 3, 2]])


class Program(unittest.TestCase):
    """aiu_runner.py as a child process, the way the workbench runs it."""

    def run_runner(self, lines: List[str], *arguments: str):
        # No __pycache__ in the source tree from the child's import of this module.
        environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        return subprocess.run([sys.executable, RUNNER, "--adapter", "test_aiu_runner:FakeAdapter", *arguments],
                              input="".join(line + "\n" for line in lines), capture_output=True, text=True,
                              timeout=60, env=environment)

    def test_stdout_carries_only_protocol_lines(self):
        with tempfile.TemporaryDirectory() as root:
            qa = write_config(os.path.join(root, "qa"))
            out = os.path.join(root, "f.safetensors")
            result = self.run_runner([
                json.dumps({"id": 1, "op": "hello"}),
                json.dumps({"id": 2, "op": "load", "checkpoint": qa, "mode": "dequant"}),
                json.dumps({"id": 3, "op": "forward", "input_ids": [[0, 4, 2]], "output": out}),
                json.dumps({"id": 4, "op": "launch"}),
                json.dumps({"id": 5, "op": "shutdown"}),
            ], "--device-type", "cpu")
            self.assertEqual(result.returncode, 0, result.stderr)
            answers = [json.loads(line) for line in result.stdout.splitlines()]
            self.assertEqual([(a["id"], a["ok"]) for a in answers], [(1, True), (2, True), (3, True), (4, False)] +
                             [(5, True)])
            self.assertIn("noise from a library on stdout", result.stderr)
            self.assertIn("noise from C code on fd 1", result.stderr)
            _, tensors, _ = read_safetensors(out)
            self.assertEqual(tensors["start_logits"], ([1, 3], [0.0, 2.0, 1.0]))

    def test_end_of_input_exits(self):
        result = self.run_runner([json.dumps({"id": 1, "op": "hello"})])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout)["protocol"], 1)  # no "protocols" offered


class ProtocolTwoEndToEnd(unittest.TestCase):
    """aiu_runner.py as child processes sharing nothing with the test but a cache folder of their
    own: the checkpoint travels in-band, once."""

    def session(self, stream: bytes, cache: str) -> List[Dict[str, Any]]:
        environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", SCALESCOPE_RUNNER_CACHE=cache)
        result = subprocess.run([sys.executable, RUNNER, "--device-type", "cpu", "--adapter",
                                 "test_aiu_runner:FakeAdapter"], input=stream, capture_output=True, timeout=60,
                                env=environment, cwd=tempfile.gettempdir())
        self.assertEqual(result.returncode, 0, result.stderr.decode())
        return read_responses(result.stdout)

    def test_upload_once_then_cached_and_blobs_exact(self):
        with tempfile.TemporaryDirectory() as root:
            checkpoint = write_config(os.path.join(root, "client", "mlm"), MLM_ARCHITECTURE, layers=1, vocab=12)
            with open(os.path.join(checkpoint, "model.safetensors"), "wb") as file:
                file.write(os.urandom(300_000))
            manifest = manifest_of(checkpoint)
            checkpoint_hash = hash_of(manifest)
            cache = os.path.join(root, "runner-cache")
            hello = b'{"id":1,"op":"hello","protocols":[1,2]}\n'
            has = json.dumps({"id": 2, "op": "has_checkpoint", "hash": checkpoint_hash}).encode() + b"\n"
            forward = {"op": "forward", "input_ids": [[0, 4, 11, 2], [0, 6, 2]], "logit_positions": [[0, 2], [1, 1]],
                       "capture": ["roberta.embeddings.output"]}
            tail = (json.dumps({"id": 20, "op": "load", "hash": checkpoint_hash, "mode": "dequant"}).encode() + b"\n"
                    + json.dumps(dict(forward, id=21)).encode() + b"\n" + b'{"id":22,"op":"shutdown"}\n')

            # A corrupted upload is refused and leaves nothing in the cache.
            answers = self.session(hello + has + upload_lines(checkpoint, checkpoint_hash, 3, "config.json") + tail,
                                   cache)
            by_id = {a["id"]: a for a in answers}
            self.assertIn("config.json arrived with SHA-256", by_id[3]["error"])
            self.assertFalse(by_id[20]["ok"])
            self.assertEqual(os.listdir(cache), [])

            answers = self.session(hello + has + upload_lines(checkpoint, checkpoint_hash, 3) + tail, cache)
            self.assertEqual([a["ok"] for a in answers], [True] * len(answers), answers)
            self.assertEqual(answers[0]["protocol"], 2)
            self.assertFalse(answers[1]["cached"])
            self.assertEqual(os.listdir(cache), [checkpoint_hash])
            first_blob = answers[-2]["blob"]

            # Second session: the runner has it; the client sends no upload at all.
            answers = self.session(hello + has + tail, cache)
            self.assertEqual([a["ok"] for a in answers], [True] * 5, answers)
            self.assertTrue(answers[1]["cached"])
            self.assertEqual(answers[2]["architecture"], MLM_ARCHITECTURE)
            blob = answers[3]["blob"]
            self.assertEqual(blob, first_blob)
            header, tensors, _ = read_safetensors(blob)
            self.assertEqual(header["__metadata__"]["mode"], "dequant")
            shape, values = tensors["logits"]
            self.assertEqual(shape, [2, 12])
            self.assertEqual([i for i, v in enumerate(values) if v], [11, 12 + 6])
            self.assertEqual(tensors["roberta.embeddings.output"], ([2, 4], [0.0, 0.25, 0.5, 0.75] * 2))

            # Protocol 1 on the same folder gives the same bytes in its output file.
            out = os.path.join(root, "p1.safetensors")
            answers = self.session(b'{"id":1,"op":"hello"}\n'
                                   + json.dumps({"id": 2, "op": "load", "checkpoint": checkpoint,
                                                 "mode": "dequant"}).encode() + b"\n"
                                   + json.dumps(dict(forward, id=3, output=out)).encode() + b"\n", cache)
            self.assertEqual(answers[0]["protocol"], 1)
            self.assertEqual(answers[2]["output"], out)
            with open(out, "rb") as file:
                self.assertEqual(file.read(), blob)


def can_unshare_tmp() -> bool:
    try:
        return subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /tmp"], capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@unittest.skipIf(RUNNER.startswith(tempfile.gettempdir() + os.sep), "the runner itself lives under the temporary folder")
class ProtocolTwoWithNothingShared(unittest.TestCase):
    """The runner in a mount namespace of its own with an empty /tmp: the client's checkpoint under
    /tmp does not exist for it, and protocol 2 still works."""

    @unittest.skipUnless(can_unshare_tmp(), "unshare -m with a tmpfs mount is not permitted here")
    def test_runner_that_cannot_see_the_checkpoint(self):
        with tempfile.TemporaryDirectory(dir=tempfile.gettempdir()) as root:
            checkpoint = write_config(os.path.join(root, "qa"))
            with open(os.path.join(checkpoint, "model.safetensors"), "wb") as file:
                file.write(os.urandom(50_000))
            manifest = manifest_of(checkpoint)
            checkpoint_hash = hash_of(manifest)
            runner = " ".join([sys.executable, "-B", RUNNER, "--device-type", "cpu", "--adapter",
                               "test_aiu_runner:FakeAdapter"])
            stream = (b'{"id":1,"op":"hello","protocols":[1,2]}\n'
                      + json.dumps({"id": 2, "op": "load", "checkpoint": checkpoint}).encode() + b"\n"
                      + upload_lines(checkpoint, checkpoint_hash, 3)
                      + json.dumps({"id": 10, "op": "load", "hash": checkpoint_hash}).encode() + b"\n"
                      + json.dumps({"id": 11, "op": "forward", "input_ids": [[0, 7, 9, 2]]}).encode() + b"\n")
            result = subprocess.run(
                ["unshare", "-m", "sh", "-c", f"mount -t tmpfs none /tmp && SCALESCOPE_RUNNER_CACHE=/tmp/cache exec {runner}"],
                input=stream, capture_output=True, timeout=60, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
            self.assertEqual(result.returncode, 0, result.stderr.decode())
            answers = {a["id"]: a for a in read_responses(result.stdout)}
            self.assertEqual(answers[2]["error"], f"{checkpoint} is not a folder on this host.")
            self.assertTrue(all(answers[i]["ok"] for i in range(3, 12) if i in answers), answers)
            self.assertEqual(answers[10]["architecture"], QA_ARCHITECTURE)
            _, tensors, _ = read_safetensors(answers[11]["blob"])
            self.assertEqual(tensors["start_logits"], ([1, 4], [0.0, 3.5, 4.5, 1.0]))
            self.assertFalse(os.path.exists(os.path.join(tempfile.gettempdir(), "cache")))

class FmsAdapterWithoutCards(unittest.TestCase):
    def test_cards_need_their_pcie_address(self):
        options = aiu_runner.parse_arguments([])
        saved = dict(os.environ)
        try:
            os.environ.pop("AIU_WORLD_RANK_0", None)
            with self.assertRaises(RequestError) as raised:
                aiu_runner.FmsAdapter(options).prepare_environment()
            self.assertIn("AIU_WORLD_RANK_0", str(raised.exception))
            os.environ["AIU_WORLD_RANK_0"] = "0000:1e:00.0"
            os.environ.pop("FLEX_COMPUTE", None)
            os.environ["FLEX_DEVICE"] = "PF"
            aiu_runner.FmsAdapter(options).prepare_environment()
            self.assertEqual(os.environ["FLEX_COMPUTE"], "SENTIENT")
            self.assertEqual(os.environ["FLEX_DEVICE"], "PF")  # what the host set is kept
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_options(self):
        self.assertEqual(aiu_runner.parse_arguments([]).seq_buckets, [64, 128, 256, 384, 512])
        self.assertEqual(aiu_runner.parse_arguments([]).batch_buckets, [1, 4, 16])
        self.assertEqual(aiu_runner.parse_arguments(["--device-type", "cpu"]).seq_buckets, [])
        self.assertEqual(aiu_runner.parse_arguments(["--seq-buckets", "128,64"]).seq_buckets, [64, 128])
        self.assertEqual(aiu_runner.parse_arguments(["--device-type", "cpu", "--seq-buckets", "32,16"]).seq_buckets,
                         [16, 32])
        # fms parses data_type with getattr(torch, ...): torch attribute names, not fp16/bf16/fp32 (D3).
        self.assertEqual(aiu_runner.parse_arguments(["--dtype", "float16"]).dtype, "float16")
        stderr = io.StringIO()
        for refused, phrase in ((["--seq-buckets", "32,16"], "multiples of 64"),
                                (["--device-type", "senulator", "--seq-buckets", "100"], "multiples of 64"),
                                (["--seq-buckets", ""], "cannot be empty on AIU"),
                                (["--dtype", "bfloat16"], "do not compute in bfloat16"),
                                (["--batch-buckets", "0,4"], "must be positive")):
            with self.subTest(refused), self.assertRaises(SystemExit), mock.patch.object(sys, "stderr", stderr):
                aiu_runner.parse_arguments(refused)
            self.assertIn(phrase, stderr.getvalue())

    def test_flex_device_defaults_to_pf(self):
        # aiu-fms-testing-utils and vllm-spyre use PF since mid 2025 (D9).
        with mock.patch.dict(os.environ, {"AIU_WORLD_RANK_0": "0000:1e:00.0"}, clear=True):
            aiu_runner.FmsAdapter(aiu_runner.parse_arguments([])).prepare_environment()
            self.assertEqual(os.environ["FLEX_DEVICE"], "PF")
            self.assertNotIn("TORCH_SENDNN_CACHE_ENABLE", os.environ)
        with mock.patch.dict(os.environ, {"AIU_WORLD_RANK_0": "0000:1e:00.0"}, clear=True):
            aiu_runner.FmsAdapter(aiu_runner.parse_arguments(["--compile-cache", "/var/cache/sendnn"])).prepare_environment()
            self.assertEqual((os.environ["TORCH_SENDNN_CACHE_ENABLE"], os.environ["TORCH_SENDNN_CACHE_DIR"]),
                             ("1", "/var/cache/sendnn"))

    @unittest.skipUnless(HAVE_TORCH, "torch is not installed")
    def test_process_group_outlives_an_idle_workbench(self):
        # gloo's default timeout is 30 min; followers wait in a broadcast between requests (D4).
        import torch.distributed

        options = aiu_runner.parse_arguments([])
        with mock.patch.object(torch.distributed, "init_process_group") as init, \
                mock.patch.object(aiu_runner, "TorchCollective", lambda: "collective"):
            self.assertEqual(aiu_runner.init_ranks(options, 1, 4), "collective")
        self.assertEqual(init.call_args.kwargs["backend"], "gloo")
        self.assertEqual(init.call_args.kwargs["timeout"], datetime.timedelta(days=7))
        self.assertEqual((init.call_args.kwargs["rank"], init.call_args.kwargs["world_size"]), (1, 4))
        self.assertIsInstance(aiu_runner.init_ranks(options, 0, 1), Collective)

    @unittest.skipUnless(HAVE_TORCH and not HAVE_FMS, "needs torch without fms")
    def test_missing_fms_is_one_sentence(self):
        with tempfile.TemporaryDirectory() as root:
            qa = write_config(os.path.join(root, "qa"))
            adapter = aiu_runner.FmsAdapter(aiu_runner.parse_arguments(["--device-type", "cpu"]))
            with self.assertRaises(RequestError) as raised:
                adapter.load(qa, "fp8")
            self.assertIn("(fms) is not installed", str(raised.exception))


FAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakes")
SCALESCOPE_IGNORE = ["lm_head", "re:lm_head\\..*", "qa_outputs"]  # what ScaleScope's quantize writes


def fp8_config(weights="channel", activations="token", ignore=None, **group):
    activation_args = None if activations is None else {
        "num_bits": 8, "type": "float", "strategy": activations, "symmetric": True, "dynamic": activations == "token"}
    body = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": weights, "symmetric": True,
                                               "dynamic": False},
            "input_activations": activation_args, "output_activations": None}
    body.update(group)
    return {"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
            "config_groups": {"group_0": body}, "ignore": SCALESCOPE_IGNORE if ignore is None else ignore,
            "kv_cache_scheme": None}


def encoder_modules(architecture: str, layers: int, role: Optional[str] = None) -> List[str]:
    """The encoder Linears' HF names, from the families table (optionally those of one role)."""
    family = aiu_runner.family_of(architecture)
    return [f"{family.layer(layer)}.{linear.hf}" for layer in range(layers) for linear in family.encoder_linears
            if role in (None, linear.role)]


def write_checkpoint(folder: str, architecture: str = QA_ARCHITECTURE, quantization=None, dtypes=None,
                     layers: int = 2, float_dtype: str = "F32", hidden: int = 8, heads: int = 2,
                     kept_float: Optional[Dict[str, str]] = None, extra: Optional[Dict[str, str]] = None) -> str:
    """config.json and a model.safetensors with every tensor a Hugging Face checkpoint of this class
    holds, at its real shape, filled with seeded random bytes (the fakes read the header only).
    Quantized: encoder weights F8_E4M3 with float32 scales ([out, 1] for channel weights, [1] for
    tensor; input_scale [1] for static activations). kept_float maps encoder modules to the float
    dtype they are stored in, without scales; dtypes overrides single tensors (None removes one);
    extra adds tensors at shape [hidden]."""
    os.makedirs(folder, exist_ok=True)
    family = aiu_runner.family_of(architecture)
    defaults = family.config_defaults
    intermediate, vocab = 2 * hidden, 50
    config = {"architectures": [architecture], "num_hidden_layers": layers, "vocab_size": vocab,
              "hidden_size": hidden, "num_attention_heads": heads, "intermediate_size": intermediate,
              "max_position_embeddings": 140 if family.positions_after_pad else 128,
              "pad_token_id": defaults["pad_token_id"], "type_vocab_size": defaults["type_vocab_size"],
              "hidden_act": "gelu"}
    if quantization is not None:
        config["quantization_config"] = quantization
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as file:
        json.dump(config, file)
    embeddings = family.embeddings_module
    shapes = {f"{embeddings}.word_embeddings.weight": ([vocab, hidden], float_dtype),
              f"{embeddings}.position_embeddings.weight": ([config["max_position_embeddings"], hidden], float_dtype),
              f"{embeddings}.token_type_embeddings.weight": ([config["type_vocab_size"], hidden], float_dtype),
              f"{embeddings}.LayerNorm.weight": ([hidden], float_dtype),
              f"{embeddings}.LayerNorm.bias": ([hidden], float_dtype)}
    group = (quantization or {}).get("config_groups", {}).get("group_0", {})
    weight_strategy = (group.get("weights") or {}).get("strategy")
    activations = group.get("input_activations") or {}
    kept_float = kept_float or {}
    for layer in range(layers):
        for linear in family.encoder_linears:
            module = f"{family.layer(layer)}.{linear.hf}"
            rows = intermediate if linear.role == "intermediate" else hidden
            columns = intermediate if linear.role == "output" else hidden
            if quantization and module not in kept_float:
                shapes[module + ".weight"] = ([rows, columns], "F8_E4M3")
                shapes[module + ".weight_scale"] = ([1] if weight_strategy == "tensor" else [rows, 1], "F32")
                if activations.get("dynamic") is False:
                    shapes[module + ".input_scale"] = ([1], "F32")
            else:
                shapes[module + ".weight"] = ([rows, columns], kept_float.get(module, float_dtype))
            shapes[module + ".bias"] = ([rows], kept_float.get(module, float_dtype))
    for head in family.head_linears(architecture):
        rows = 2 if head["role"] == "qa_outputs" else vocab if head.get("tied_weight") else hidden
        shapes[head["hf"] + ".weight"] = ([rows, hidden], float_dtype)
        shapes[head["hf"] + ".bias"] = ([rows], float_dtype)
    for name, dtype in (extra or {}).items():
        shapes[name] = ([hidden], dtype)
    for name, dtype in (dtypes or {}).items():
        if dtype is None:
            shapes.pop(name, None)
        else:
            shapes[name] = (shapes.get(name, ([1], dtype))[0], dtype)
    sizes = {"F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1}
    header, offset = {}, 0
    for name, (shape, dtype) in shapes.items():
        count = sizes[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + count]}
        offset += count
    data = json.dumps(header).encode()
    data += b" " * (-len(data) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as file:
        file.write(struct.pack("<Q", len(data)) + data + random.Random(0).randbytes(offset))
    return folder


@unittest.skipUnless(HAVE_TORCH and not HAVE_FMS, "needs torch, and the fakes rather than a real fms")
class FmsAdapterOnFakes(unittest.TestCase):
    """FmsAdapter against fakes/ (see fakes/README.md): each test names the review defect it covers
    and, where it helps, first shows that the fake reproduces the upstream failure."""

    def setUp(self):
        import torch

        self.torch = torch
        torch.manual_seed(0)  # the fake models initialise their weights randomly: keep each test's numbers fixed
        self.folder = tempfile.TemporaryDirectory()
        self.root = self.folder.name
        stack = contextlib.ExitStack()
        self.addCleanup(stack.close)
        self.addCleanup(self.folder.cleanup)
        stack.enter_context(mock.patch.object(sys, "path", [FAKES] + sys.path))
        stack.enter_context(mock.patch.dict(sys.modules))
        stack.enter_context(mock.patch.dict(os.environ))
        stack.enter_context(torch.no_grad())
        import fake_dynamo

        self.dynamo = stack.enter_context(fake_dynamo.install(torch))
        import torch_sendnn

        torch_sendnn.reset_state()
        self.sendnn = torch_sendnn.state
        self.fms = importlib.import_module("fms.models")
        self.fms.calls.clear()
        self.stages: List[tuple] = []

    def adapter(self, *arguments: str, world_size: int = 1, device: str = "senulator"):
        options = aiu_runner.parse_arguments(["--device-type", device, "--seq-buckets", "64,128",
                                              "--batch-buckets", "1,4", *arguments])
        adapter = aiu_runner.FmsAdapter(options, 0, world_size)
        adapter.prepare_environment()
        adapter.progress = lambda fraction, stage: self.stages.append((fraction, stage))
        return adapter

    def checkpoint(self, name="qa", **kwargs):
        return write_checkpoint(os.path.join(self.root, name), **kwargs)

    def direct(self, adapter, ids, types=None):
        """The loaded fake model run eagerly on the unpadded batch, without the runner's machinery."""
        torch = self.torch
        ids = torch.tensor(ids)
        mask = (ids != adapter.pad_id).unsqueeze(1).expand(ids.shape[0], ids.shape[1], ids.shape[1])
        types = torch.zeros_like(ids) if types is None else torch.tensor(types)
        return adapter.model(ids, token_type_ids=types, mask=mask, attn_name="sdpa_bidirectional")

    def random_batch(self, rows, length, seed=0):
        generator = self.torch.Generator().manual_seed(seed)
        return self.torch.randint(3, 50, (rows, length), generator=generator).tolist()

    def assert_close(self, actual, expected, tolerance=1e-5):
        self.assertEqual(tuple(actual.shape), tuple(expected.shape))
        self.assertLess(float((actual.float() - expected.float()).abs().max()), tolerance)

    def refusal(self, adapter, checkpoint, mode="fp8"):
        with self.assertRaises(RequestError) as raised:
            adapter.load(checkpoint, mode)
        self.assertEqual(self.fms.calls, [], "get_model must not run for a refused checkpoint")
        return str(raised.exception)

    # -- D1, D5: compile at load, fixed shapes, no CPU fallback --

    def test_load_compiles_every_shape_and_forwards_never_compile(self):
        adapter = self.adapter()
        server = RunnerServer(adapter, io.StringIO(), heartbeat_seconds=0)
        out = io.BytesIO()
        server.serve(io.BytesIO(json.dumps({"id": 4, "op": "load", "checkpoint": self.checkpoint(
            quantization=fp8_config())}).encode() + b"\n"), out)
        answers = lines_of(out)
        self.assertEqual(answers[-1], {"id": 4, "ok": True, "architecture": QA_ARCHITECTURE})
        stages = [a["stage"] for a in answers[:-1]]
        self.assertTrue(all(a["id"] == 4 and 0 <= a["progress"] <= 1 for a in answers[:-1]))
        self.assertIn("Compiling for AIU (fp8): tracing batch 4 x 128 tokens", stages)
        self.assertIn("Deploying to AIU (fp8): batch 1 x 64 tokens", stages)
        # Traced inside warmup_mode, compiled at its exit: 2 sequence x 2 batch buckets.
        compiles = list(self.sendnn["compiles"])
        self.assertEqual(len(compiles), 4)
        self.assertFalse(any(c["lazy"] for c in compiles))
        self.assertEqual({c["key"][1][1] for c in compiles}, {(1, 64), (4, 64), (1, 128), (4, 128)})
        self.assertTrue(self.dynamo.config.fail_on_recompile_limit_hit)
        self.assertGreaterEqual(self.dynamo.config.recompile_limit, adapter.compile_budget())

        for rows, length in ((3, 70), (6, 20), (1, 128), (9, 64)):
            with self.subTest(rows=rows, length=length):
                batch = self.random_batch(rows, length, seed=rows)
                result = adapter.forward(batch, [[1] * length] * rows, [], None)
                start, end = self.direct(adapter, batch)
                self.assert_close(result["start_logits"], start)
                self.assert_close(result["end_logits"], end)
        self.assertEqual(self.sendnn["compiles"], compiles, "a forward compiled")
        self.assertFalse([e for e in self.dynamo.events if e["kind"] == "eager_fallback"])
        # Plain graphs carry the two logits only: no capture point became a graph output.
        self.assertEqual({e["outputs"] for e in self.dynamo.events if e["kind"] == "graph"}, {2})
        with self.assertRaises(RequestError) as raised:
            adapter.forward(self.random_batch(1, 129), [[1] * 129], [], None)
        self.assertIn("has 129 tokens; this runner pads to the sequence buckets 64,128", str(raised.exception))

    def test_fake_dynamo_falls_back_to_eager_past_the_limit_unless_told_not_to(self):
        self.dynamo.config.recompile_limit = 2
        compiled = self.torch.compile(lambda x: x + 1, backend="eager")
        for size in range(1, 5):
            compiled(self.torch.zeros(size))
        self.assertEqual(len([e for e in self.dynamo.events if e["kind"] == "eager_fallback"]), 2)
        self.dynamo.config.fail_on_recompile_limit_hit = True
        with self.assertRaises(self.dynamo.FailOnRecompileLimitHit):
            compiled(self.torch.zeros(9))

    def test_capture_sets_beyond_the_budget_are_refused_and_a_new_checkpoint_resets_dynamo(self):
        adapter = self.adapter()
        qa = self.checkpoint(quantization=fp8_config())
        adapter.load(qa, "fp8")
        points = capture_points(QA_ARCHITECTURE, 2)
        batch = self.random_batch(1, 10)
        with self.assertRaises(RequestError) as raised:
            for point in points:
                adapter.forward(batch, [[1] * 10], [point], None)
        self.assertIn("past the limit of 24; restart the runner or capture fewer distinct sets", str(raised.exception))
        self.assertFalse([e for e in self.dynamo.events if e["kind"] == "eager_fallback"])
        adapter.load(self.checkpoint("other", quantization=fp8_config()), "fp8")
        self.assertIn({"kind": "reset"}, self.dynamo.events)
        self.assertEqual(len(adapter.compiled_shapes), 4)  # the new checkpoint's warm-up only

    # -- hooks under torch.compile --

    def test_captures_record_only_the_requested_points_through_their_own_graph(self):
        adapter = self.adapter()
        adapter.load(self.checkpoint(quantization=fp8_config()), "fp8")
        graphs_before = len([e for e in self.dynamo.events if e["kind"] == "graph"])
        batch = self.random_batch(2, 30)
        wanted = ["roberta.encoder.layer.0.attention.self.query", "roberta.encoder.layer.1.output"]
        self.stages.clear()
        result = adapter.forward(batch, [[1] * 30] * 2, [p for p in capture_points(QA_ARCHITECTURE, 2)
                                                         if module_of(p) == wanted[0] or p == wanted[1]], None)
        self.assertEqual(self.stages, [(0.0, "Compiling for AIU: first recording forward of batch 4 x 64 tokens")])
        graphs = [e for e in self.dynamo.events if e["kind"] == "graph"][graphs_before:]
        self.assertEqual([(g["code"], g["outputs"]) for g in graphs], [("recording", 2 + 3)])

        # Independent hooks on the same fms modules, model run eagerly on the unpadded batch.
        seen = {}
        modules = dict(adapter.model.named_modules())
        handles = [modules["base_model.layers.0.attn.in_proj.query"].register_forward_hook(
            lambda m, i, o: seen.update(query_in=i[0], query_out=o)),
            modules["base_model.layers.1"].register_forward_hook(lambda m, i, o: seen.update(layer=o))]
        self.direct(adapter, batch)
        for handle in handles:
            handle.remove()
        self.assert_close(result["roberta.encoder.layer.0.attention.self.query.input"], seen["query_in"])
        self.assert_close(result["roberta.encoder.layer.0.attention.self.query.output"], seen["query_out"])
        self.assert_close(result["roberta.encoder.layer.1.output"], seen["layer"])
        self.assertEqual(adapter._wanted, ())  # the plain graph records nothing afterwards
        adapter.forward(batch, [[1] * 30] * 2, [], None)
        self.assertEqual(len([e for e in self.dynamo.events if e["kind"] == "graph"]), graphs_before + 1)

    def test_warmup_capture_all_compiles_the_recording_graph_at_load(self):
        adapter = self.adapter("--warmup-capture", "all")
        adapter.load(self.checkpoint(quantization=fp8_config()), "fp8")
        self.assertEqual(len(self.sendnn["compiles"]), 8)
        points = capture_points(QA_ARCHITECTURE, 2)
        result = adapter.forward(self.random_batch(2, 40), [[1] * 40] * 2, points, None)
        self.assertEqual(len(self.sendnn["compiles"]), 8)
        self.assertEqual(len(result), 2 + len(points))

    # -- D2, D7: tensor parallelism --

    def test_tensor_parallel_fp8_load_survives_the_unnamed_linear_type(self):
        from fms_mo.aiu_addons import _infer_quantization_config

        upstream = _infer_quantization_config(fp8_config())
        with self.assertRaises(RuntimeError) as raised:  # what fms + fms_mo do without the runner's fix
            self.fms.get_model("roberta_question_answering", "base", model_path=self.root, distributed_strategy="tp",
                               linear_config=upstream, src_vocab_size=50, emb_dim=8, nheads=2, nlayers=1,
                               hidden_grow_factor=2.0, max_pos=64, norm_eps=1e-5, pad_id=1, type_vocab_size=1)
        self.assertIn("module_name=None", str(raised.exception))
        self.assertIsInstance(raised.exception.__cause__, TypeError)
        self.fms.calls.clear()

        adapter = self.adapter(world_size=2, device="cpu")
        self.assertEqual(adapter.load(self.checkpoint(quantization=fp8_config()), "fp8"), QA_ARCHITECTURE)
        self.assertEqual(self.fms.calls[0]["distributed_strategy"], "tp")
        fp8 = [n for n, m in adapter.model.named_modules() if type(m).__name__ == "FP8Linear"]
        self.assertEqual(len(fp8), 12)
        self.assertFalse(any(self.torch.isnan(p).any() for p in adapter.model.parameters()))

    def test_tensor_parallel_refuses_what_fms_mo_cannot_shard(self):
        from fms_mo.aiu_addons import _infer_quantization_config

        garbage = dict(_infer_quantization_config(fp8_config(activations=None)))
        garbage["linear_type"] = aiu_runner.tolerate_unnamed_linear(garbage["linear_type"], "fp8")
        model = self.fms.get_model("roberta", "base", model_path=self.root, distributed_strategy="tp",
                                   linear_config=garbage, src_vocab_size=50, emb_dim=8, nheads=2, nlayers=1,
                                   hidden_grow_factor=2.0, max_pos=64, norm_eps=1e-5, pad_id=1, type_vocab_size=1)
        self.assertTrue(self.torch.isnan(model.base_model.layers[0].ff_sub_layer.w1.weight).all())  # upstream: garbage
        self.fms.calls.clear()

        adapter = self.adapter(world_size=2, device="cpu")
        w1 = "roberta.encoder.layer.0.intermediate.dense"
        cases = [(fp8_config(), "dequant", None, "mode dequant (weight-only FP8) cannot run under tensor parallelism"),
                 (fp8_config(activations=None), "fp8", None, "weight-only FP8 cannot run under tensor parallelism"),
                 (fp8_config(weights="tensor", activations="token"), "fp8", None,
                  "tensor weights with token activations cannot be sharded"),
                 (fp8_config(weights="channel", activations="tensor"), "fp8", None,
                  "channel weights with tensor activations fail at the first forward"),
                 # fms asks for w1's type with no name: a kept-float Linear cannot be honoured (D2).
                 (fp8_config(ignore=SCALESCOPE_IGNORE + ["base_model.layers.0.ff_sub_layer.w1"]), "fp8",
                  {w1: "F32"}, f"encoder Linears kept float ({w1}, ...) cannot run under tensor parallelism")]
        for number, (quantization, mode, kept, phrase) in enumerate(cases):
            with self.subTest(phrase):
                self.assertIn(phrase, self.refusal(adapter, self.checkpoint(f"tp{number}", quantization=quantization,
                                                                            kept_float=kept), mode))
        # Under TP the encoder Linears' own points are shards; layer outputs are whole.
        adapter.load(self.checkpoint("tp-ok", quantization=fp8_config()), "fp8")
        self.assertIsNone(adapter.capture_unavailable("roberta.encoder.layer.1.output"))
        self.assertIn("tensor-parallel shard", adapter.capture_unavailable("roberta.encoder.layer.1.output.dense.input"))

    # -- D3, D8, D11: dtypes --

    def test_dtype_names_fms_parses(self):
        with self.assertRaises(ValueError) as raised:  # the old "fp16" strings
            self.fms.get_model("roberta", "base", model_path=self.root, data_type="fp16")
        self.assertIn("Data type `fp16` is not a supported torch dtype", str(raised.exception))
        self.fms.calls.clear()
        adapter = self.adapter("--dtype", "float16", device="cpu")
        adapter.load(self.checkpoint(), "fp8")
        self.assertEqual(self.fms.calls[0]["data_type"], "float16")
        self.assertEqual({p.dtype for p in adapter.model.parameters()}, {self.torch.float16})
        # FP8 checkpoints keep their dtypes.
        adapter.load(self.checkpoint("fp8", quantization=fp8_config()), "fp8")
        self.assertIsNone(self.fms.calls[-1]["data_type"])

    def test_bf16_checkpoints_run_in_fp16_on_aiu(self):
        adapter = self.adapter()
        adapter.load(self.checkpoint(float_dtype="BF16"), "fp8")
        self.assertEqual({p.dtype for p in adapter.model.parameters()}, {self.torch.float16})
        result = adapter.forward(self.random_batch(1, 12), [[1] * 12], [], None)
        self.assertTrue(self.torch.isfinite(result["start_logits"]).all())
        host = self.adapter(device="cpu")  # eager on the host keeps what the checkpoint has
        host.load(self.checkpoint("bf16-host", float_dtype="BF16"), "fp8")
        self.assertEqual({p.dtype for p in host.model.parameters()}, {self.torch.bfloat16})

    def test_dequant_with_float32_scales_and_16_bit_biases(self):
        biases = {module + ".bias": "F16" for module in encoder_modules(QA_ARCHITECTURE, 2)}
        qa = self.checkpoint(quantization=fp8_config(), dtypes=biases)
        from fms_mo.aiu_addons import _infer_quantization_config

        weight_only = _infer_quantization_config(fp8_config(activations=None))
        model = self.fms.get_model("roberta_question_answering", "base", model_path=qa, linear_config=weight_only,
                                   src_vocab_size=50, emb_dim=8, nheads=2, nlayers=2, hidden_grow_factor=2.0,
                                   max_pos=138, norm_eps=1e-5, pad_id=1, type_vocab_size=1)
        ids = self.torch.tensor([[0, 5, 2]])
        with self.assertRaises(RuntimeError) as raised:  # upstream's weight-only F.linear
            model(ids, mask=self.torch.ones(1, 3, 3, dtype=self.torch.bool), attn_name="sdpa_bidirectional")
        self.assertIn("same dtype", str(raised.exception))
        self.fms.calls.clear()

        adapter = self.adapter(device="cpu")
        adapter.load(qa, "dequant")
        result = adapter.forward([[0, 5, 2]], [[1, 1, 1]], [], None)
        self.assertTrue(self.torch.isfinite(result["start_logits"]).all())
        self.assertIsNone(self.fms.calls[0]["kwargs"]["linear_config"]["input_activations"])

    # -- D6: what fms_mo cannot represent --

    def test_configs_fms_mo_would_misread_are_refused_with_one_sentence(self):
        """Each rule of ARCHITECTURE's "How each consumer loads a checkpoint" (AIU) that a checkpoint can
        break: refused before get_model, in one sentence naming the file and the problem."""
        def config(**changes):
            quantization = fp8_config(**{k: v for k, v in changes.items() if k in ("weights", "activations", "ignore")})
            group = quantization["config_groups"]["group_0"]
            for key, value in changes.items():
                if key.startswith("weights_"):
                    group["weights"][key[len("weights_"):]] = value
                elif key.startswith("activations_"):
                    group["input_activations"][key[len("activations_"):]] = value
                elif key.startswith("drop_"):
                    (group if key != "drop_ignore" else quantization).pop(key[len("drop_"):])
                elif key in ("quant_method", "quantization_status", "kv_cache_scheme"):
                    quantization[key] = value
                elif key == "targets":
                    group["targets"] = value
            return quantization

        two_groups = fp8_config()
        two_groups["config_groups"]["group_1"] = copy.deepcopy(two_groups["config_groups"]["group_0"])
        renamed = fp8_config()
        renamed["config_groups"] = {"attention": renamed["config_groups"]["group_0"]}
        key, w2 = "roberta.encoder.layer.0.attention.self.key", "roberta.encoder.layer.1.output.dense"
        fms_key, fms_w2 = "base_model.layers.0.attn.in_proj.key", "base_model.layers.1.ff_sub_layer.w2"
        pooler = {"roberta.pooler.dense.weight": "F32", "roberta.pooler.dense.bias": "F32"}
        # (quantization, checkpoint arguments, adapter options, mode, phrase)
        cases = [
            (config(quantization_status="frozen"), {}, (), "fp8", "only when quantization_status is exactly "
                                                                  "\"compressed\", not 'frozen'"),
            (config(quant_method="fp8"), {}, (), "fp8", "only for quant_method compressed-tensors, not 'fp8'"),
            (two_groups, {}, (), "fp8", "reads only config_groups.group_0; group_1 would be ignored"),
            (renamed, {}, (), "fp8", "reads only config_groups.group_0, which this config lacks (it has attention)"),
            (config(drop_input_activations=True), {}, (), "fp8",
             "config_groups.group_0.input_activations must be present"),
            (config(drop_output_activations=True), {}, (), "fp8",
             "config_groups.group_0.output_activations must be present"),
            (config(drop_ignore=True), {}, (), "fp8", "ignore must be present"),
            (config(targets=["re:.*dense"]), {}, (), "fp8", "group_0 targets ['re:.*dense']"),
            (config(weights_symmetric=False), {}, (), "fp8", "weights with symmetric False and dynamic False"),
            (config(weights_dynamic=True), {}, (), "fp8", "weights with symmetric True and dynamic True"),
            (config(weights=None), {}, (), "fp8", "gives no weights strategy; compressed-tensors then infers it"),
            (config(weights="block"), {}, (), "fp8", "has block weights"),
            (config(activations="tensor", activations_dynamic=True), {}, (), "fp8",
             "dynamic tensor input activations; fms-model-optimizer takes dynamic activations per token only"),
            (config(activations="token", activations_dynamic=False), {}, (), "fp8",
             "static token input activations; fms-model-optimizer takes static activations per tensor only"),
            (config(activations="tensor"), {}, (), "fp8", "channel weights with tensor activations fail at the "
                                                          "first forward"),
            (config(kv_cache_scheme={"num_bits": 8, "type": "float", "strategy": "tensor"}), {}, (), "fp8",
             "fms-model-optimizer drops it"),
            (config(), {"architecture": MLM_ARCHITECTURE, "extra": pooler}, (), "fp8",
             "still holds roberta.pooler.dense (roberta.pooler.dense.weight), which fms loads into "
             "classification_head.dense like lm_head.dense"),
            (config(), {"architecture": BERT_MLM_ARCHITECTURE, "extra": {"bert.pooler.dense.weight": "F32"}}, (),
             "fp8", "still holds bert.pooler.dense"),
            (config(), {"dtypes": {"qa_outputs.weight": "F8_E4M3"}}, (), "fp8", "head qa_outputs is stored in FP8"),
            # keep-float: HF names do not count, FMS names must not keep FP8 weights, dtypes must match
            (config(ignore=SCALESCOPE_IGNORE + [w2]), {"kept_float": {w2: "F32"}}, (), "fp8",
             f"encoder Linear {w2} is stored as F32, but no ignore entry contains its FMS name {fms_w2}"),
            (config(ignore=["base_model.layers.0.attn.dense.extra"]), {}, (), "fp8",
             "ignore entry 'base_model.layers.0.attn.dense.extra' keeps base_model.layers.0.attn.dense "
             "(roberta.encoder.layer.0.attention.output.dense) a plain Linear, but its weight is stored in FP8"),
            (config(ignore=[fms_w2]), {"float_dtype": "F16", "kept_float": {w2: "F32"}}, (), "fp8",
             f"encoder Linear {w2} is kept float in F32 next to F16 activations"),
            (config(ignore=[fms_w2]), {"float_dtype": "BF16", "kept_float": {w2: "F16"}}, (), "fp8",
             f"encoder Linear {w2} is kept float in F16 next to BF16 activations"),  # on the host: no cast
            # fused q/k/v
            (config(ignore=[fms_key]), {"float_dtype": "F16", "kept_float": {key: "F16"}}, ("--fused-weights", "on"),
             "fp8", "with --fused-weights on, q, k and v of layer 0 are one Linear, but only attention.self.key is "
                    "stored float"),
            (config(weights="tensor", activations="tensor"), {}, ("--fused-weights", "on"), "fp8",
             "the per-tensor scales of q, k and v of layer 0 concatenate to shape [3]"),
            (config(activations="tensor"), {}, ("--fused-weights", "on"), "dequant",
             "the per-tensor scales of q, k and v of layer 0 concatenate to shape [3]"),
        ]
        for number, (quantization, arguments, options, mode, phrase) in enumerate(cases):
            with self.subTest(phrase):
                adapter = self.adapter(*options, device="cpu")
                message = self.refusal(adapter, self.checkpoint(f"c{number}", quantization=quantization, **arguments),
                                       mode)
                self.assertIn(phrase, message)
                self.assertIn("config.json", message)
                self.assertTrue(message.endswith("."), message)
                self.assertEqual(message.count("\n"), 0)
                self.assertEqual(aiu_runner.sentence(message), message)

    def test_kept_bf16_weights_are_accepted_on_aiu_where_bf16_becomes_fp16(self):
        w2 = "roberta.encoder.layer.1.output.dense"
        adapter = self.adapter()
        adapter.load(self.checkpoint(quantization=fp8_config(ignore=["base_model.layers.1.ff_sub_layer.w2"]),
                                     float_dtype="F16", kept_float={w2: "BF16"}), "fp8")
        modules = dict(adapter.model.named_modules())
        self.assertEqual(modules["base_model.layers.1.ff_sub_layer.w2"].weight.dtype, self.torch.float16)
        self.assertIn("bf16 parameters cast to fp16, other dtypes as stored", adapter.load_log[-1])

    def test_tensor_weights_with_token_activations_load_with_a_warning(self):
        adapter = self.adapter(device="cpu")
        adapter.load(self.checkpoint(quantization=fp8_config(weights="tensor", activations="token")), "fp8")
        self.assertIn("warning: tensor weights with per-token activations are accepted, but fms-model-optimizer "
                      "has no test of them", adapter.load_log)

    # -- keeping Linears float: what fms + fms_mo build --

    def module_types(self, model) -> Dict[str, str]:
        """FMS name -> "fp8" or "plain" for every Linear of the encoder layers."""
        from fms_mo.aiu_addons.fp8.fp8_linear import FP8Linear

        types = {}
        for name, module in model.named_modules():
            if name.startswith("base_model.layers.") and isinstance(module, (FP8Linear, self.torch.nn.Linear)):
                types[name] = "fp8" if isinstance(module, FP8Linear) else "plain"
                self.assertTrue(isinstance(module, FP8Linear) != isinstance(module, self.torch.nn.Linear))
        return types

    def test_fms_named_ignore_entries_keep_exactly_those_linears_float_unfused(self):
        key, w2 = "roberta.encoder.layer.0.attention.self.key", "roberta.encoder.layer.1.output.dense"
        fms_key, fms_w2 = "base_model.layers.0.attn.in_proj.key", "base_model.layers.1.ff_sub_layer.w2"
        # Both names of each kept Linear, as a checkpoint meant for every consumer lists them.
        ignore = SCALESCOPE_IGNORE + [key, fms_key, w2, fms_w2]
        adapter = self.adapter(device="cpu")
        adapter.load(self.checkpoint(quantization=fp8_config(ignore=ignore), float_dtype="F16",
                                     kept_float={key: "F16", w2: "F16"}), "fp8")
        self.assertIs(self.fms.calls[0]["kwargs"]["fused_weights"], False)
        self.assertIn("fused_weights=False (--fused-weights off, as aiu-fms-testing-utils loads encoders), "
                      "2 encoder Linear(s) kept float", adapter.load_log[0])
        types = self.module_types(adapter.model)
        self.assertEqual(len(types), 12)
        self.assertEqual(sorted(n for n, t in types.items() if t == "plain"), [fms_key, fms_w2])
        modules = dict(adapter.model.named_modules())
        self.assertEqual(modules[fms_key].weight.dtype, self.torch.float16)
        self.assertFalse(any(self.torch.isnan(p).any() for p in adapter.model.parameters()))
        batch = self.random_batch(2, 9)
        result = adapter.forward(batch, [[1] * 9] * 2, [key + ".output"], None)
        self.assertTrue(self.torch.isfinite(result["start_logits"]).all())
        self.assert_close(result["start_logits"], self.direct(adapter, batch)[0])

    def test_fms_named_ignore_entry_keeps_fused_qkv_float(self):
        layer0 = [f"roberta.encoder.layer.0.attention.self.{n}" for n in ("query", "key", "value")]
        fused = "base_model.layers.0.attn.in_proj.qkv_fused"
        adapter = self.adapter("--fused-weights", "on", device="cpu")
        adapter.load(self.checkpoint(quantization=fp8_config(ignore=SCALESCOPE_IGNORE + layer0 + [fused]),
                                     float_dtype="F16", kept_float={m: "F16" for m in layer0}), "fp8")
        self.assertIs(self.fms.calls[0]["kwargs"]["fused_weights"], True)
        self.assertIn("fused_weights=True (--fused-weights on)", adapter.load_log[0])
        types = self.module_types(adapter.model)
        self.assertEqual(len(types), 2 * 4)  # qkv_fused, attn.dense, w1, w2 per layer
        self.assertEqual([n for n, t in types.items() if t == "plain"], [fused])
        self.assertEqual(types["base_model.layers.1.attn.in_proj.qkv_fused"], "fp8")
        self.assertFalse(any(self.torch.isnan(p).any() for p in adapter.model.parameters()))
        batch = self.random_batch(1, 7)
        result = adapter.forward(batch, [[1] * 7], ["roberta.encoder.layer.0.attention.output.dense.output"],
                                None)
        self.assert_close(result["start_logits"], self.direct(adapter, batch)[0])
        reason = adapter.capture_unavailable(layer0[1] + ".output")
        self.assertIn(f"inside the fused Linear {fused}; load with --fused-weights off", reason)

    def test_one_of_qkv_kept_alone_loads_unfused(self):
        value = "roberta.encoder.layer.1.attention.self.value"
        adapter = self.adapter(device="cpu")  # the default: unfused
        adapter.load(self.checkpoint(quantization=fp8_config(ignore=["base_model.layers.1.attn.in_proj.value"]),
                                     float_dtype="F16", kept_float={value: "F16"}), "fp8")
        self.assertIs(self.fms.calls[0]["kwargs"]["fused_weights"], False)
        types = self.module_types(adapter.model)
        self.assertEqual([n for n, t in types.items() if t == "plain"], ["base_model.layers.1.attn.in_proj.value"])
        self.assertEqual(list(types.values()).count("fp8"), 11)

    def test_hf_only_ignore_entry_is_refused_because_upstream_builds_it_fp8_with_garbage_scale(self):
        w1 = "roberta.encoder.layer.0.intermediate.dense"
        quantization = fp8_config(ignore=SCALESCOPE_IGNORE + [w1])  # the HF name only
        qa = self.checkpoint(quantization=quantization, float_dtype="F16", kept_float={w1: "F16"})
        # Upstream, bypassing the runner: fms_mo builds w1 as FP8 and the float weight gets an
        # uninitialised weight_scale, silently; the logits are garbage.
        from fms_mo.aiu_addons import _infer_quantization_config

        model = self.fms.get_model("roberta_question_answering", "base", model_path=qa, fused_weights=False,
                                   linear_config=_infer_quantization_config(quantization), src_vocab_size=50,
                                   emb_dim=8, nheads=2, nlayers=2, hidden_grow_factor=2.0, max_pos=138,
                                   norm_eps=1e-5, pad_id=1, type_vocab_size=1)
        self.assertEqual(set(self.module_types(model).values()), {"fp8"})
        w1_module = dict(model.named_modules())["base_model.layers.0.ff_sub_layer.w1"]
        self.assertTrue(self.torch.isnan(w1_module.weight_scale).all())
        ids = self.torch.tensor([[0, 5, 7, 2]])
        start, _ = model(ids, mask=self.torch.ones(1, 4, 4, dtype=self.torch.bool), attn_name="sdpa_bidirectional")
        self.assertFalse(self.torch.isfinite(start).any())
        self.fms.calls.clear()
        # The runner says so before loading.
        message = self.refusal(self.adapter(device="cpu"), qa)
        self.assertIn(f"encoder Linear {w1} is stored as F16, but no ignore entry contains its FMS name "
                      "base_model.layers.0.ff_sub_layer.w1", message)
        self.assertTrue(message.endswith("would be built as FP8 with an uninitialised weight_scale."), message)

    def test_fused_per_tensor_scales_fail_to_load_upstream(self):
        from fms_mo.aiu_addons import _infer_quantization_config

        quantization = fp8_config(weights="tensor", activations="token")
        qa = self.checkpoint(quantization=quantization)
        with self.assertRaises(RuntimeError) as raised:  # fms's fused loading, bypassing the runner
            self.fms.get_model("roberta_question_answering", "base", model_path=qa, fused_weights=True,
                               linear_config=_infer_quantization_config(quantization), src_vocab_size=50, emb_dim=8,
                               nheads=2, nlayers=2, hidden_grow_factor=2.0, max_pos=138, norm_eps=1e-5, pad_id=1,
                               type_vocab_size=1)
        self.assertIn("qkv_fused.weight_scale: copying a param with shape [3]", str(raised.exception))
        self.fms.calls.clear()
        # Per-channel scales concatenate to [3 * out, 1] and load fused.
        adapter = self.adapter("--fused-weights", "on", device="cpu")
        adapter.load(self.checkpoint("channel", quantization=fp8_config()), "fp8")
        self.assertEqual(set(self.module_types(adapter.model).values()), {"fp8"})
        self.assertFalse(any(self.torch.isnan(p).any() for p in adapter.model.parameters()))

    # -- fms's K/V transpose at a length equal to the number of heads --

    def test_cpu_batches_never_have_as_many_tokens_as_heads(self):
        adapter = self.adapter(device="cpu")
        adapter.load(self.checkpoint("heads12", hidden=24, heads=12), "fp8")
        self.assertEqual(adapter.num_heads, 12)
        batch = self.random_batch(2, 12, seed=3)
        result = adapter.forward(batch, [[1] * 12] * 2, ["roberta.encoder.layer.1.output"], None)
        self.assertEqual(tuple(result["start_logits"].shape), (2, 12))
        fms_attention = importlib.import_module("fms.models")
        buggy = self.direct(adapter, batch)[0]  # what fms computes at exactly 12 tokens
        with mock.patch.object(fms_attention, "TRANSPOSE_KV_ONLY_WHEN_LENGTH_DIFFERS_FROM_HEADS", False):
            reference = self.direct(adapter, batch)[0]
        self.assertGreater(float((buggy - reference).abs().max()), 1e-3, "the fake reproduces the fms bug")
        self.assert_close(result["start_logits"], reference)
        # The same as the 13-token padded batch run directly (the pad masked), trimmed back.
        padded = self.direct(adapter, [row + [adapter.pad_id] for row in batch])[0][:, :12]
        self.assert_close(result["start_logits"], padded)
        # 11 tokens are not padded and agree with the reference too.
        short = adapter.forward([row[:11] for row in batch], [[1] * 11] * 2, [], None)
        with mock.patch.object(fms_attention, "TRANSPOSE_KV_ONLY_WHEN_LENGTH_DIFFERS_FROM_HEADS", False):
            self.assert_close(short["start_logits"], self.direct(adapter, [row[:11] for row in batch])[0])

    # -- BERT --

    def test_bert_masked_lm_through_fms_bert(self):
        adapter = self.adapter(device="cpu")
        self.assertEqual(adapter.load(self.checkpoint("bert", architecture=BERT_MLM_ARCHITECTURE),
                                      "fp8"), BERT_MLM_ARCHITECTURE)
        call = self.fms.calls[0]
        self.assertEqual((call["architecture"], call["kwargs"]["max_pos"], call["kwargs"]["pad_id"],
                          call["kwargs"]["type_vocab_size"], call["kwargs"]["tie_heads"]), ("bert", 128, 0, 2, False))
        self.assertEqual(adapter.max_tokens, 128)
        batch = [[5, 7, 9, 11], [5, 8, 12, 0]]
        types = [[0, 0, 1, 1], [0, 1, 1, 0]]
        points = ["bert.embeddings.output", "cls.predictions.decoder.input", "cls.predictions.decoder.output"]
        result = adapter.forward(batch, [[1, 1, 1, 1], [1, 1, 1, 0]], points, None, token_type_ids=types)
        self.assert_close(result["logits"], self.direct(adapter, batch, types))
        self.assert_close(result["cls.predictions.decoder.output"], result["logits"])
        without_types = adapter.forward(batch, [[1, 1, 1, 1], [1, 1, 1, 0]], [], None)
        # token types must reach the model: any change at all shows it (the size depends on the random init)
        self.assertGreater(float((without_types["logits"] - result["logits"]).abs().max()), 1e-6)
        self.assertEqual(self.fms.calls[0]["kwargs"].get("pos_emb"), None)  # fms's "bert" variant sets it

    def test_bert_question_answering_is_refused(self):
        message = self.refusal(self.adapter(device="cpu"),
                               self.checkpoint("bqa", architecture=BERT_QA_ARCHITECTURE))
        self.assertIn("BertForQuestionAnswering, which fms does not build", message)


if __name__ == "__main__":
    unittest.main()
