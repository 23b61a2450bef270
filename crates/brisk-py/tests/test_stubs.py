"""The type stubs describe the module as built: every class and method in `_brisk.pyi` exists, and
every public method of the module is in the stubs, with a docstring."""

from __future__ import annotations

import ast
from pathlib import Path

import brisk
import brisk._brisk as native

STUBS = Path(brisk.__file__).with_name("_brisk.pyi")


def stub_classes() -> dict[str, set[str]]:
    tree = ast.parse(STUBS.read_text())
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):  # not typing helpers
            classes[node.name] = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef)
            } | {
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            }
    return classes


def test_every_stubbed_name_exists():
    for cls, members in stub_classes().items():
        assert hasattr(native, cls), cls
        for m in members - {"__buffer__", "__release_buffer__", "__init__"}:
            assert hasattr(getattr(native, cls), m), f"{cls}.{m} is in the stubs but not in the module"


def test_every_public_method_is_stubbed_and_documented():
    stubs = stub_classes()
    for cls in ("Client", "Buffer", "ObjectReader", "ObjectWriter", "AsyncObjectReader", "AsyncObjectWriter",
                "ManyIterator", "AsyncManyIterator"):
        for name in dir(getattr(native, cls)):
            if name.startswith("_"):
                continue
            assert name in stubs[cls], f"{cls}.{name} is missing from _brisk.pyi"
    for name in dir(native.Client):
        if not name.startswith("_"):
            assert getattr(native.Client, name).__doc__, f"Client.{name} has no docstring"
