"""Fake torch_sendnn (see ../README.md): graphs traced inside warmup_mode() compile when it exits;
a shape never warmed up compiles lazily at its first call."""

from __future__ import annotations

from typing import Any, Dict

state: Dict[str, Any] = {"in_warmup": False, "traced": [], "compiled": set(), "compiles": [], "calls": 0}


def reset_state():
    state.update(in_warmup=False, traced=[], compiled=set(), compiles=[], calls=0)


class SendnnBackend:
    def new_graph(self, code, key):
        if state["in_warmup"]:
            state["traced"].append((code, key))
        else:
            # Lazy: the compile happens inside this call (minutes on a real card).
            state["compiled"].add((code, key))
            state["compiles"].append({"code": code, "key": key, "lazy": True})

    def call(self, code, key):
        state["calls"] += 1
        if state["in_warmup"]:
            return
        if (code, key) not in state["compiled"]:
            state["compiled"].add((code, key))
            state["compiles"].append({"code": code, "key": key, "lazy": True})


class warmup_mode:  # noqa: N801 (torch_sendnn's name)
    def __enter__(self):
        state["in_warmup"] = True
        return self

    def __exit__(self, *exc):
        state["in_warmup"] = False
        for code, key in state["traced"]:
            state["compiled"].add((code, key))
            state["compiles"].append({"code": code, "key": key, "lazy": False})
        state["traced"] = []
        return False
