"""The tutorials of docs/tutorials, on the CPU backend.

Each tutorial is imported from its file and run as ``python <tutorial>
--device cpu --save-path DIR`` runs it: its correctness check against torch
at the CPU sizes, then its benchmark, whose tables must be saved with a
positive, finite number in every cell. Each check must also reject a
result that is slightly wrong, and each tutorial's comparison with Triton
runs once with Kiln standing in for Triton (the real one runs on GPUs
only), so that the code a GPU run takes for it is exercised here as well.
docs/tutorials/README.md must describe every tutorial, with the command
that makes its figure.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import types
from pathlib import Path
from typing import Any

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


def tutorial(name: str) -> types.ModuleType:
    """The tutorial's module, imported once per session so that the tests
    share its compiled kernels."""
    if name not in _LOADED:
        spec = importlib.util.spec_from_file_location("kiln_tutorial_" + name.replace("-", "_"),
                                                      TUTORIALS_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[name] = module
    return _LOADED[name]


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
