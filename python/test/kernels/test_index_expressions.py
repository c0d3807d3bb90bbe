"""Loads through index expressions of every shape the axis-info analysis
reasons about: sums, differences, products, C quotients and remainders and
masks of a range, composed at random (seeded, so a failure reproduces).
Each kernel's result is checked against the same expression evaluated by
numpy. An overstated run (a remainder wrapping mid-block, a quotient's
repeats) makes a vector access read the wrong elements, or past the end of
the buffer on the CPU."""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass

import numpy as np
import pytest
import torch

SOURCE_SIZE = 4096
EXPRESSIONS = 60
STEPS = ("add", "subtract", "subtract_from", "multiply", "remainder", "quotient", "mask_bits", "add_program")
CONSTANTS = (1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 128, 256, 512)


@dataclass
class IndexExpression:
    """`start + f(offs)` for offs = arange(0, block), f a chain of steps."""

    block: int
    start: int
    steps: list[tuple[str, int]]

    def source(self) -> str:
        text = "offs"
        for step, constant in self.steps:
            text = {
                "add": f"({text} + {constant})",
                "subtract": f"({text} - {constant})",
                "subtract_from": f"({constant} - {text})",
                "multiply": f"({text} * {constant})",
                "remainder": f"({text} % {constant})",
                "quotient": f"({text} // {constant})",
                "mask_bits": f"({text} & {constant})",
                # The only program is 0: an unknown scalar to the compiler.
                "add_program": f"({text} + pid * {constant})",
            }[step]
        return f"{self.start} + {text}"

    def evaluate(self) -> np.ndarray:
        """The indices, with C's truncating quotient and remainder."""
        values = np.arange(self.block, dtype=np.int64)
        for step, constant in self.steps:
            if step == "add":
                values = values + constant
            elif step == "subtract":
                values = values - constant
            elif step == "subtract_from":
                values = constant - values
            elif step == "multiply":
                values = values * constant
            elif step == "remainder":
                values = np.fmod(values, constant)
            elif step == "quotient":
                values = np.sign(values) * (np.abs(values) // constant)
            elif step == "mask_bits":
                values = values & constant
            elif step == "add_program":
                pass  # the only program is 0
        return self.start + values


def random_expressions(seed: int, count: int) -> list[IndexExpression]:
    generator = random.Random(seed)
    expressions = []
    while len(expressions) < count:
        steps = []
        for _ in range(generator.randint(1, 4)):
            step = generator.choice(STEPS)
            constant = generator.choice(CONSTANTS)
            if step == "multiply":
                constant = generator.choice((1, 2, 3, 4, 8))
            if step == "mask_bits":
                constant = max(constant - 1, 1)
            steps.append((step, constant))
        expression = IndexExpression(generator.choice((64, 256, 1024)), generator.choice((0, 1, 4, 128, 2048)), steps)
        if np.abs(expression.evaluate()).max() < 2**30:
            expressions.append(expression)
    return expressions


def load_kernels(expressions: list[IndexExpression], directory) -> object:
    """A module of one kernel per expression, from a file (kiln.jit reads
    a kernel's source)."""
    lines = ["import kiln", "import kiln.language as kl", ""]
    for number, expression in enumerate(expressions):
        lines += [
            "@kiln.jit",
            f"def gather_{number}(x_ptr, y_ptr, BLOCK: kl.constexpr):",
            "    pid = kl.program_id(0)",
            "    offs = kl.arange(0, BLOCK)",
            f"    index = {expression.source()}",
            f"    inside = (index >= 0) & (index < {SOURCE_SIZE})",
            "    kl.store(y_ptr + offs, kl.load(x_ptr + index, mask=inside, other=-1.0))",
            "",
        ]
    path = directory / "index_kernels.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("index_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [1, 2])
def test_random_index_expressions(arrays, tmp_path, seed):
    expressions = random_expressions(seed, EXPRESSIONS)
    kernels = load_kernels(expressions, tmp_path)
    x = arrays.randn(SOURCE_SIZE, torch.float32, seed=seed)
    source = x.cpu().numpy()
    for number, expression in enumerate(expressions):
        index = expression.evaluate()
        inside = (index >= 0) & (index < SOURCE_SIZE)
        expected = np.where(inside, source[np.clip(index, 0, SOURCE_SIZE - 1)], np.float32(-1.0))
        y = arrays.full(expression.block, float("nan"), torch.float32)
        getattr(kernels, f"gather_{number}")[(1,)](x, y, BLOCK=expression.block)
        got = y.cpu().numpy()
        wrong = int((got != expected).sum())
        assert wrong == 0, f"index {expression.source()} (BLOCK {expression.block}): {wrong} elements wrong"
