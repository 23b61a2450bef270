"""Every asyncio form of a `brisk.Client` call takes the same parameters as its blocking form, in the
stubs (`_brisk.pyi`) and in the module as built (`__text_signature__`), and the two agree: a
parameter added to one form and not the other fails here rather than reaching users."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import brisk
import brisk._brisk as native

STUBS = Path(brisk.__file__).with_name("_brisk.pyi")

# (name, kind, default, annotation) of a parameter; the default and annotation as source text.
Param = tuple[str, str, str | None, str | None]


def _stub_params(fn: ast.FunctionDef) -> list[Param]:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)

    def param(arg: ast.arg, kind: str, default: ast.expr | None) -> Param:
        annotation = ast.unparse(arg.annotation) if arg.annotation else None
        return (arg.arg, kind, ast.unparse(default) if default else None, annotation)

    params = [param(arg, "positional", d) for arg, d in zip(positional, defaults)]
    params += [param(arg, "keyword", d) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    assert a.vararg is None and a.kwarg is None, fn.name
    assert params and params[0][0] == "self", fn.name
    return params[1:]


def stub_methods() -> dict[str, list[Param]]:
    """Client's methods in the stubs; of an overloaded one, the implementation's signature (the
    definition without @overload)."""
    tree = ast.parse(STUBS.read_text())
    (client,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Client"]
    methods = {}
    for node in client.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        decorators = {ast.unparse(d) for d in node.decorator_list}
        if "property" in decorators or "overload" in decorators:
            continue
        methods[node.name] = _stub_params(node)
    return methods


def _kind(p: inspect.Parameter) -> str:
    return "keyword" if p.kind is inspect.Parameter.KEYWORD_ONLY else "positional"


def module_methods() -> dict[str, list[Param]]:
    """Client's methods as built, from the signatures PyO3 writes into `__text_signature__`."""
    methods = {}
    for name in dir(native.Client):
        if name.startswith("_"):
            continue
        method = getattr(native.Client, name)
        if not callable(method):
            continue  # a property
        assert method.__text_signature__, f"Client.{name} has no __text_signature__"
        params = list(inspect.signature(method).parameters.values())
        assert params[0].name == "self", name
        methods[name] = [
            (p.name, _kind(p), None if p.default is p.empty else repr(p.default), None)
            for p in params[1:]
        ]
    return methods


def twins(methods: dict[str, list[Param]]) -> list[str]:
    """The blocking names that have an `_async` form; every `_async` name has a blocking form."""
    for name in methods:
        if name.endswith("_async"):
            assert name.removesuffix("_async") in methods, f"{name} has no blocking form"
    return sorted(name for name in methods if f"{name}_async" in methods)


def test_async_forms_take_the_blocking_forms_parameters_in_the_stubs():
    methods = stub_methods()
    names = twins(methods)
    assert len(names) >= 20, names
    differ = {n: (methods[n], methods[f"{n}_async"]) for n in names if methods[f"{n}_async"] != methods[n]}
    assert not differ, f"blocking and _async forms differ in _brisk.pyi: {differ}"


def test_async_forms_take_the_blocking_forms_parameters_in_the_module():
    methods = module_methods()
    names = twins(methods)
    assert len(names) >= 20, names
    differ = {n: (methods[n], methods[f"{n}_async"]) for n in names if methods[f"{n}_async"] != methods[n]}
    assert not differ, f"blocking and _async forms differ in the module: {differ}"


def test_stub_signatures_are_the_modules():
    """Names, kinds and order of the parameters; whether each has a default (the stub's `3600` is
    the module's `3600.0`)."""
    stubs, built = stub_methods(), module_methods()
    assert set(stubs) == set(built)
    for name, params in built.items():
        shape = [(n, k, d is not None) for n, k, d, _ in params]
        stub_shape = [(n, k, d is not None) for n, k, d, _ in stubs[name]]
        assert stub_shape == shape, f"Client.{name}: the stub says {stub_shape}, the module {shape}"
