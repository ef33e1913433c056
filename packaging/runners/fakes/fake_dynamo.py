"""torch.compile and torch._dynamo for torch 1.13 (see README.md): caches, recompile limit, eager
fallback, backends. install() patches them in for the duration of a test."""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Any, Callable, Dict, List
from unittest import mock


class FailOnRecompileLimitHit(RuntimeError):
    pass


class Config:
    def __init__(self):
        self.reset()

    def reset(self):
        object.__setattr__(self, "values", dict(
            recompile_limit=8, accumulated_recompile_limit=256, fail_on_recompile_limit_hit=False,
            assume_static_by_default=True, automatic_dynamic_shapes=True))

    # cache_size_limit is torch's old name of recompile_limit.
    def __getattr__(self, name):
        values = object.__getattribute__(self, "values")
        name = "recompile_limit" if name == "cache_size_limit" else name
        if name not in values:
            raise AttributeError(name)
        return values[name]

    def __setattr__(self, name, value):
        name = "recompile_limit" if name == "cache_size_limit" else name
        if name not in self.values:
            raise AttributeError(f"torch._dynamo.config has no {name}")
        self.values[name] = value


config = Config()
backends: Dict[str, Any] = {}
caches: Dict[Any, List[Any]] = {}
events: List[Dict[str, Any]] = []


def reset():
    caches.clear()
    events.append({"kind": "reset"})


def _guard(value):
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("tensor", tuple(value.shape), str(value.dtype))
    return ("value", value)


def _tensor_outputs(value) -> int:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return 1
    if isinstance(value, (list, tuple)):
        return sum(_tensor_outputs(v) for v in value)
    if isinstance(value, dict):
        return sum(_tensor_outputs(v) for v in value.values())
    return 0


def compile(function: Callable, backend=None, **options):  # noqa: A001 (torch's name)
    if backend not in backends:
        raise RuntimeError(f"torch.compile: backend {backend!r} is not registered")
    code = getattr(function, "__func__", function).__code__
    owner = id(getattr(function, "__self__", None))

    def compiled(*args):
        key = (owner,) + tuple(_guard(a) for a in args)
        entries = caches.setdefault(code, [])
        if key not in entries:
            if len(entries) >= config.recompile_limit:
                if config.fail_on_recompile_limit_hit:
                    raise FailOnRecompileLimitHit(f"{code.co_name}: recompile limit {config.recompile_limit} hit")
                events.append({"kind": "eager_fallback", "code": code.co_name, "key": key})
                return function(*args)
            entries.append(key)
            result = function(*args)
            events.append({"kind": "graph", "code": code.co_name, "key": key, "outputs": _tensor_outputs(result)})
            backends[backend].new_graph(code.co_name, key)
            return result
        backends[backend].call(code.co_name, key)
        return function(*args)

    return compiled


class Eager:
    """A backend that compiles nothing (like torch's "eager")."""

    def new_graph(self, code, key):
        pass

    def call(self, code, key):
        pass


@contextlib.contextmanager
def install(torch):
    """torch.compile and torch._dynamo as above, until the block ends."""
    module = types.ModuleType("torch._dynamo")
    module.config = config
    module.reset = reset
    module.exc = types.SimpleNamespace(FailOnRecompileLimitHit=FailOnRecompileLimitHit)
    config.reset()
    caches.clear()
    events.clear()
    backends.clear()
    backends["eager"] = Eager()
    with mock.patch.dict(sys.modules, {"torch._dynamo": module}), \
            mock.patch.object(torch, "compile", compile, create=True):
        yield sys.modules[__name__]
