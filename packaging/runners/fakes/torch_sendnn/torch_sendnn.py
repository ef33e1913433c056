"""Importing this registers the "sendnn" backend, as `from torch_sendnn import torch_sendnn` does."""

import sys

from torch_sendnn import SendnnBackend

dynamo = sys.modules.get("torch._dynamo")
if dynamo is None:
    raise ImportError("fake torch_sendnn needs fake_dynamo installed")
import fake_dynamo  # noqa: E402

fake_dynamo.backends["sendnn"] = SendnnBackend()
