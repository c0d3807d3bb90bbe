"""The tutorials of docs/tutorials, on the CPU backend.

Each tutorial is imported from its file and run as ``python <tutorial>
--device cpu --save-path DIR`` runs it: its correctness check against torch
at the CPU sizes, then its benchmark, whose tables must be saved with a
positive, finite number in every cell. Each check must also reject a
result that is slightly wrong, and each tutorial's comparison with Triton
runs once with Kiln standing in for Triton (the real one runs on GPUs
only), so that the code a GPU run takes for it is exercised here as well.
Each tutorial also runs as the README says, ``python <tutorial>``, in a
process of its own: that is how it finds tutorial_support.py, the code
the tutorials share. docs/tutorials/README.md must describe every
tutorial, with the command that makes its figure.
"""

from __future__ import annotations

import contextlib
import csv
import importlib
import importlib.util
import math
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Iterator

import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
import kiln.language as kl  # noqa: E402

TUTORIALS_DIR = Path(__file__).resolve().parents[3] / "docs" / "tutorials"

#: Each tutorial and the host function whose result its check compares.
TUTORIALS = {
    "01-vector-add": "add",
    "02-fused-softmax": "softmax",
    "03-matrix-multiplication": "matmul",
    "04-low-memory-dropout": "seeded_dropout",
    "05-layer-norm": "layer_norm",
    "06-fused-attention": "attention",
}

_LOADED: dict[str, types.ModuleType] = {}


@contextlib.contextmanager
def tutorials_on_path() -> Iterator[None]:
    """The tutorials' folder first on sys.path while importing, as it is for
    a tutorial run as a script, so that ``import tutorial_support`` finds
    the file next to the tutorials."""
    sys.path.insert(0, str(TUTORIALS_DIR))
    try:
        yield
    finally:
        sys.path.remove(str(TUTORIALS_DIR))


def tutorial(name: str) -> types.ModuleType:
    """The tutorial's module, imported once per session so that the tests
    share its compiled kernels."""
    if name not in _LOADED:
        spec = importlib.util.spec_from_file_location("kiln_tutorial_" + name.replace("-", "_"),
                                                      TUTORIALS_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        with tutorials_on_path():
            spec.loader.exec_module(module)
        _LOADED[name] = module
    return _LOADED[name]


def tutorial_support() -> types.ModuleType:
    """docs/tutorials/tutorial_support.py, as the tutorials import it."""
    with tutorials_on_path():
        return importlib.import_module("tutorial_support")


def test_every_tutorial_is_tested():
    assert sorted(path.stem for path in TUTORIALS_DIR.glob("[0-9]*.py")) == sorted(TUTORIALS)


@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_runs_on_cpu(name, tmp_path, capsys):
    tutorial(name).main(["--device", "cpu", "--save-path", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "device: cpu" in printed
    tables = sorted(tmp_path.glob("*.csv"))
    assert tables, f"{name} saved no benchmark table"
    for table in tables:
        assert table.stem.endswith("-cpu"), table.name
        with open(table, newline="") as f:
            header, *rows = list(csv.reader(f))
        assert any(column.startswith("Kiln") for column in header), header
        assert not any("Triton" in column for column in header), header
        assert rows, f"{table.name} has no rows"
        for row in rows:
            for cell in row:
                value = float(cell)
                assert math.isfinite(value) and value > 0, f"{table.name}: {row}"


@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_runs_as_a_script(name, tmp_path):
    # From another folder, so that only the script's own folder on sys.path
    # can find tutorial_support.py.
    run = subprocess.run([sys.executable, str(TUTORIALS_DIR / f"{name}.py"), "--device", "cpu", "--check-only"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("device: cpu\n"), run.stdout
    assert not list(tmp_path.iterdir()), "--check-only wrote files"


def test_save_path_comes_from_the_environment_unless_given(tmp_path, monkeypatch):
    support = tutorial_support()
    monkeypatch.setenv("KILN_TUTORIAL_SAVE_PATH", str(tmp_path))
    assert support.parse_args(["--device", "cpu"], "test").save_path == str(tmp_path)
    assert support.parse_args(["--device", "cpu", "--save-path", "elsewhere"], "test").save_path == "elsewhere"
    monkeypatch.delenv("KILN_TUTORIAL_SAVE_PATH")
    assert support.parse_args(["--device", "cpu"], "test").save_path == ""


def test_device_cuda_without_a_usable_gpu_is_a_usage_error(monkeypatch, capsys):
    support = tutorial_support()
    monkeypatch.setattr(support, "default_device", lambda: "cpu")
    assert support.parse_args([], "test").device == "cpu"
    with pytest.raises(SystemExit) as exit_info:
        support.parse_args(["--device", "cuda"], "test")
    assert exit_info.value.code == 2
    assert "no CUDA GPU that both torch and Kiln can use" in capsys.readouterr().err


@pytest.mark.parametrize("name", TUTORIALS)
def test_check_rejects_a_wrong_result(name, monkeypatch):
    module = tutorial(name)
    correct = getattr(module, TUTORIALS[name])

    def half_off(*args: Any, **kwargs: Any) -> Any:
        result = correct(*args, **kwargs)
        bump = torch.zeros_like(result)
        bump.view(-1)[0] = 0.5
        return result + bump  # out of place: autograd still reaches the kernels

    monkeypatch.setattr(module, TUTORIALS[name], half_off)
    with pytest.raises(AssertionError):
        module.check("cpu")


@pytest.mark.parametrize("name", TUTORIALS)
def test_triton_comparison_runs_with_kiln_standing_in(name, monkeypatch):
    module = tutorial(name)
    monkeypatch.setattr(module, "comparison_triton", lambda device: (kiln, kl))
    report = module.make_benchmark("cpu")
    benchmarks = report.benchmarks if isinstance(report.benchmarks, list) else [report.benchmarks]
    bench = benchmarks[0]
    assert "triton" in bench.line_vals
    first = bench.x_vals[0]
    sizes = dict(zip(bench.x_names, first if isinstance(first, (list, tuple)) else [first] * len(bench.x_names)))
    middle, low, high = report.fn(**sizes, provider="triton", **bench.args)
    assert all(math.isfinite(value) and value > 0 for value in (middle, low, high))


def test_readme_describes_every_tutorial():
    readme = (TUTORIALS_DIR / "README.md").read_text()
    for name in TUTORIALS:
        assert f"({name}.py)" in readme, f"README.md does not link {name}.py"
        command = f"python docs/tutorials/{name}.py --device cuda --save-path docs/tutorials/figures"
        assert command in readme, f"README.md lacks the figure command of {name}"
