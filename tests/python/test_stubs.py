"""The type stubs (.pyi) cover the public API, and every public function has a docstring (what
help() shows)."""
import ast
import inspect
import os

import pytest

import pld

PACKAGE = os.path.dirname(pld.__file__)
SUBMODULES = ["system", "tensor", "tile", "worker"]


def stub_names(stub):
    """Names a stub file defines at module level (functions, classes, assignments, imports)."""
    with open(os.path.join(PACKAGE, stub)) as f:
        tree = ast.parse(f.read(), stub)
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def public(module):
    """A submodule's own public names (not modules, not helpers it imports from the top level)."""
    return [n for n in dir(module) if not n.startswith("_") and not inspect.ismodule(getattr(module, n))
            and not (module is not pld and getattr(pld, n, None) is getattr(module, n) and n not in
                     getattr(module, "__all__", ()) and n not in ("get_comm_ctx", "rank", "nranks"))]


def test_package_is_typed():
    assert os.path.exists(os.path.join(PACKAGE, "py.typed"))


def test_top_level_names_are_stubbed():
    stubbed = stub_names("_pld.pyi") | stub_names("worker.pyi") | stub_names("_run.pyi") | stub_names("_host.pyi") \
        | stub_names("_shared_numpy.pyi")
    missing = [n for n in pld.__all__ if n not in stubbed and not inspect.ismodule(getattr(pld, n))]
    assert not missing, f"public names without a stub: {missing}"


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodule_names_are_stubbed(name):
    module = getattr(pld, name)
    stubbed = stub_names(f"{name}.pyi")
    missing = [n for n in public(module) if n not in stubbed]
    assert not missing, f"pld.{name}: names without a stub: {missing}"


@pytest.mark.parametrize("name", ["system", "tensor", "tile"])
def test_kernel_functions_have_docstrings(name):
    module = getattr(pld, name)
    undocumented = [n for n in public(module) if callable(getattr(module, n)) and not inspect.isclass(getattr(module, n))
                    and not (getattr(module, n).__doc__ or "").strip()]
    assert not undocumented, f"pld.{name}: functions without a docstring: {undocumented}"


def test_help_shows_the_docstring():
    assert "every rank's target becomes" in pld.tensor.allreduce.__doc__
    for cls in (pld.DistributedWorker, pld.TaskGraph, pld.DeviceTensor, pld.RunHandle):
        assert (cls.__doc__ or "").strip(), f"{cls.__name__} has no docstring"
    for method in ("run", "submit", "benchmark", "alloc_tensor", "copy_to", "copy_from", "close"):
        assert getattr(pld.DistributedWorker, method).__doc__
