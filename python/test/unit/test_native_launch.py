"""kernel[grid](*args) through the native launch path (kiln._C.launch).

The path must launch exactly what JITFunction.run would: the same loaded
kernel for every specialization its key covers, a new compile where run's
key differs (an int's 1 / divisible-by-16 class, a tensor's alignment or
dtype, a constexpr value, the environment), and run itself for whatever it
does not cover. Checked on the CPU backend, whose launches are real.
"""

import pytest
import torch

import kiln
import kiln.language as kl
from kiln.runtime import jit as jit_module


@kiln.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, alpha * kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


@kiln.jit(do_not_specialize=["n"])
def axpy_plain(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, alpha * kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    for kernel in (axpy, axpy_plain):
        monkeypatch.setattr(kernel, "_routes", {})
        monkeypatch.setattr(kernel, "_compiled", {})
        monkeypatch.setattr(kernel, "cache", {})
    for name in ("KILN_BACKEND", "KILN_CHECKED", "KILN_CPU_CHECKED", "KILN_DEBUG"):
        monkeypatch.delenv(name, raising=False)


class Runs:
    """Counts the launches that went through JITFunction.run."""

    def __init__(self, monkeypatch):
        self.count = 0
        original = jit_module.JITFunction.run

        def counted(kernel, *args, **kwargs):
            self.count += 1
            return original(kernel, *args, **kwargs)

        monkeypatch.setattr(jit_module.JITFunction, "run", counted)


def operands(n, seed, dtype=torch.float32, offset=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n + offset, generator=generator).to(dtype)[offset:]
    y = torch.randn(n, generator=generator).to(dtype)
    return x, y, torch.full((n,), float("nan"), dtype=dtype)


def check(kernel, n, alpha, seed, block=128, **kwargs):
    x, y, out = operands(n, seed, **kwargs)
    compiled = kernel[(kiln.cdiv(n, block),)](x, y, out, n, alpha, block)
    expected = (alpha * x.double() + y.double()).to(out.dtype)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)
    return compiled


def test_repeated_launches_skip_run_and_reuse_the_kernel(monkeypatch):
    runs = Runs(monkeypatch)
    first = check(axpy, 1000, 0.5, seed=1)
    assert runs.count == 1
    for seed in range(2, 6):
        assert check(axpy, 1000, -1.5, seed=seed) is first  # same key: native hits
    assert runs.count == 1


@pytest.mark.parametrize("change", ["n equal to 1", "n divisible by 16", "n beyond i32", "misaligned x", "fp64",
                                    "another BLOCK", "alpha an int", "environment"])
def test_what_changes_run_s_key_compiles_again(change, monkeypatch):
    runs = Runs(monkeypatch)
    base = check(axpy, 1000, 0.5, seed=1)
    assert runs.count == 1
    n, alpha, block, options = 1000, 0.5, 128, {}
    if change == "n equal to 1":
        n = 1
    elif change == "n divisible by 16":
        n = 1008
    elif change == "misaligned x":
        options = {"offset": 1}
    elif change == "fp64":
        options = {"dtype": torch.float64}
    elif change == "another BLOCK":
        block = 256
    elif change == "alpha an int":
        alpha = 2
    elif change == "environment":
        monkeypatch.setenv("KILN_CPU_CHECKED", "1")
    if change == "n beyond i32":
        x, y, out = operands(16, seed=2)
        other = axpy[(1,)](x, y, out, 2**40, 1.0, 16)  # n only bounds the mask here
        torch.testing.assert_close(out, x + y)
    else:
        other = check(axpy, n, alpha, seed=2, block=block, **options)
    assert other is not base and runs.count == 2
    # And that specialization is a native hit from then on.
    if change != "n beyond i32":
        check(axpy, n, alpha, seed=3, block=block, **options)
        assert runs.count == (2 if change != "environment" else 3)  # checked launches always take run


def test_keyword_arguments_and_grid_functions_are_covered(monkeypatch):
    """Arguments by keyword bind as in Python (defaults included), and a
    grid function gets them by name on every launch: after the first
    launch of a key, neither takes run."""
    runs = Runs(monkeypatch)
    x, y, out = operands(300, seed=4)
    axpy[(3,)](x, y, out, 300, 1.0, BLOCK=128)
    assert runs.count == 1
    for seed, (n, alpha) in enumerate([(300, 2.0), (250, -1.0)], start=5):
        x, y, out = operands(n, seed=seed)
        grids = []

        def grid(meta):
            grids.append(dict(meta))
            return (kiln.cdiv(meta["n"], meta["BLOCK"]),)

        axpy[grid](x, y, out_ptr=out, alpha=alpha, n=n, BLOCK=128)
        torch.testing.assert_close(out, (alpha * x.double() + y.double()).float(), rtol=1e-6, atol=1e-6)
        assert [sorted(meta) for meta in grids] == [["BLOCK", "alpha", "n", "out_ptr", "x_ptr", "y_ptr"]]
        assert grids[0]["n"] == n and grids[0]["BLOCK"] == 128
    assert runs.count == 1


def test_calls_it_does_not_cover_take_run(monkeypatch):
    runs = Runs(monkeypatch)
    x, y, out = operands(100, seed=4)
    axpy[(1,)](x, y, out, 100, 1.0, BLOCK=128, num_warps=4)  # a launch option
    axpy[(1,)](x, y, out, 100, 1.0, BLOCK=128, num_warps=4)
    axpy[[1]](x, y, out, 100, 1.0, 128)  # a grid that is a list
    axpy[(1,)](x.numpy(), y.numpy(), out.numpy(), 100, 1.0, 128)  # numpy arrays
    check(axpy_plain, 100, 1.0, seed=5)  # do_not_specialize
    check(axpy_plain, 100, 1.0, seed=6)
    assert runs.count == 6


class TaggedTensor(torch.Tensor):
    """A tensor subclass: its attributes may differ from torch.Tensor's."""


def test_tensor_subclasses_take_run_and_each_launch_reads_the_tensors_afresh(monkeypatch):
    runs = Runs(monkeypatch)
    x, y, out = operands(100, seed=9)
    for _ in range(2):
        axpy[(1,)](x.as_subclass(TaggedTensor), y, out, 100, 2.0, 128)
    assert runs.count == 2
    torch.testing.assert_close(out, 2.0 * x + y)
    check(axpy, 100, 1.0, seed=10)
    check(axpy, 100, 1.0, seed=11)
    assert runs.count == 3  # the second is a native hit
    # The same tensor objects, their storage swapped between two native hits:
    # the addresses (and dtypes) are read at each launch, not remembered.
    x, y, out = operands(100, seed=12)
    axpy[(1,)](x, y, out, 100, 1.0, 128)
    other_x, other_y, _ = operands(100, seed=13)
    x.set_(other_x)
    y.data = other_y
    axpy[(1,)](x, y, out, 100, 1.0, 128)
    assert runs.count == 3
    torch.testing.assert_close(out, other_x + other_y)


@pytest.mark.parametrize("call, message", [
    (lambda x, y, out: axpy[(1,)](x, y, out, 100, 1.0, BLOCK=128, bogus=1), "unexpected keyword argument 'bogus'"),
    (lambda x, y, out: axpy[(1,)](x, y, out, 100, 1.0, 128, BLOCK=128), "multiple values for argument 'BLOCK'"),
    (lambda x, y, out: axpy[(1,)](x, y, out, 100, BLOCK=128), "missing required argument: 'alpha'"),
    (lambda x, y, out: axpy[lambda meta: (1.5,)](x, y, out, 100, 1.0, BLOCK=128), "grid"),
    (lambda x, y, out: axpy[lambda meta: 1 / 0](x, y, out, 100, 1.0, BLOCK=128), "division by zero"),
])
def test_bad_calls_after_a_native_hit_are_reported_as_by_run(call, message):
    """A call the native path cannot bind, or whose grid function fails,
    is explained as run explains it, also once the key has a route."""
    x, y, out = operands(100, seed=8)
    axpy[(1,)](x, y, out, 100, 1.0, BLOCK=128)
    axpy[(1,)](x, y, out, 100, 1.0, BLOCK=128)
    with pytest.raises((TypeError, ValueError, ZeroDivisionError), match=message):
        call(x, y, out)


def test_an_evicted_kernel_is_not_launched_natively(monkeypatch):
    """The CPU backend's code cache evicts kernels; the native route to an
    evicted kernel goes with it, and the next launch compiles again."""
    runs = Runs(monkeypatch)
    first = check(axpy, 500, 2.0, seed=7)
    routes = [value for value in axpy._routes.values() if value.__class__ is tuple]
    assert len(routes) == 1
    loaded = routes[0][0]
    key = next(key for key, value in axpy._routes.items() if value is loaded)
    axpy._forget(key, "cpu", loaded)
    assert not any(value.__class__ is tuple for value in axpy._routes.values())
    second = check(axpy, 500, 2.0, seed=8)
    assert runs.count == 2 and second is not first


def test_grid_errors_name_the_kernel():
    x, y, out = operands(100, seed=9)
    check(axpy, 100, 1.0, seed=9)
    with pytest.raises(ValueError, match=r"^kernel axpy: grid "):
        axpy[(-1,)](x, y, out, 100, 1.0, 128)


def test_errors_of_the_arguments_are_run_s():
    x, y, out = operands(100, seed=10)
    check(axpy, 100, 1.0, seed=10)
    with pytest.raises(TypeError, match="takes 6 arguments but 7 were given"):
        axpy[(1,)](x, y, out, 100, 1.0, 128, 5)
    with pytest.raises(TypeError, match="missing required argument"):
        axpy[(1,)](x, y, out, 100, 1.0)


def test_launchers_are_kept_per_grid():
    """kernel[grid] with a grid of ints, or a grid function, returns the
    launcher made the first time; a grid that is not all ints gets its own,
    which reports it."""
    grid = lambda meta: (1,)  # noqa: E731 - a grid function as users write them
    assert axpy[(4,)] is axpy[(4,)] and axpy[(4, 1)] is not axpy[(4,)]
    assert axpy[grid] is axpy[grid]
    x, y, out = operands(100, seed=9)
    axpy[(1,)](x, y, out, 100, 1.0, 128)
    with pytest.raises(TypeError, match="grid x must be an int"):
        axpy[(1.0,)](x, y, out, 100, 1.0, 128)


def test_a_dropped_kernel_and_its_launchers_are_collected():
    """A launcher refers to its kernel, which keeps it: the garbage
    collector frees both once nothing else refers to them. (Launched, a
    kernel is also kept by its backend's cache of loaded kernels, which
    is bounded: not launched here.)"""
    import gc
    import weakref

    def make():
        @kiln.jit
        def fill(out_ptr, value, BLOCK: kl.constexpr):
            kl.store(out_ptr + kl.arange(0, BLOCK), kl.full((BLOCK,), value, kl.float32))

        assert fill[(1,)] is fill[(1,)]
        return weakref.ref(fill)

    kernel = make()
    gc.collect()
    assert kernel() is None


@kiln.jit
def pair_sum(pair, out_ptr, n, BLOCK: kl.constexpr):
    """out = pair[0][offs] * pair[1] (a tensor and a scalar in one tuple)."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(pair[0] + offs, mask=mask) * pair[1], mask=mask)


@kiln.jit
def copy_block(desc, out_ptr, BLOCK_ROWS: kl.constexpr, BLOCK_COLS: kl.constexpr):
    """Copies the descriptor's first block into out (row-major)."""
    block = desc.load([0, 0])
    rows = kl.arange(0, BLOCK_ROWS)[:, None]
    cols = kl.arange(0, BLOCK_COLS)[None, :]
    kl.store(out_ptr + rows * BLOCK_COLS + cols, block)


def test_tuples_take_the_native_path_and_their_structure_is_in_the_key(monkeypatch):
    monkeypatch.setattr(pair_sum, "_routes", {})
    runs = Runs(monkeypatch)
    generator = torch.Generator().manual_seed(14)
    for scale in (2.0, -0.5, 3.0):  # one compile: floats share a code
        x = torch.randn(100, generator=generator)
        out = torch.empty(100)
        pair_sum[(1,)]((x, scale), out, 100, 128)
        torch.testing.assert_close(out, x * scale)
    assert runs.count == 1
    x = torch.randn(100, generator=generator)
    out = torch.empty(100)
    pair_sum[(1,)]((x, 3), out, 100, 128)  # an int in the tuple: another key
    torch.testing.assert_close(out, x * 3)
    pair_sum[(1,)]((x.double(), 2.0), out, 100, 128)  # a tensor of another dtype
    torch.testing.assert_close(out, (x.double() * 2.0).float())
    assert runs.count == 3
    pair_sum[(1,)]((x, 3), out, 100, 128)
    assert runs.count == 3


def test_host_tensor_descriptors_take_the_native_path_and_a_bad_layout_is_still_refused(monkeypatch):
    from kiln.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setattr(copy_block, "_routes", {})
    runs = Runs(monkeypatch)
    generator = torch.Generator().manual_seed(15)
    for _ in range(3):
        x = torch.randn(32, 64, generator=generator)
        out = torch.empty(16, 32)
        copy_block[(1,)](TensorDescriptor(x, [32, 64], [64, 1], [16, 32]), out, 16, 32)
        torch.testing.assert_close(out, x[:16, :32])
    assert runs.count == 1
    # Shape, strides and block shape given as tuples instead of lists key alike.
    x = torch.randn(32, 64, generator=generator)
    out = torch.empty(16, 32)
    copy_block[(1,)](TensorDescriptor(x, (32, 64), (64, 1), (16, 32)), out, 16, 32)
    torch.testing.assert_close(out, x[:16, :32])
    assert runs.count == 1
    # Strides that are not multiples of 16 bytes: refused, also after hits.
    wide = torch.randn(32, 66, generator=generator)
    with pytest.raises(Exception, match="16"):
        copy_block[(1,)](TensorDescriptor(wide, [32, 64], [66, 1], [16, 32]), out, 16, 32)


@kiln.jit
def scale_by(x_ptr, out_ptr, SCALE: kl.constexpr, SHIFT: kl.constexpr, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(out_ptr + offs, kl.load(x_ptr + offs) * SCALE + SHIFT)


def test_one_launcher_tells_apart_more_keys_than_it_remembers(monkeypatch):
    """A launcher remembers the routes of a few keys by their words (values
    of ints, addresses of other objects): constexpr values made afresh on
    every call (equal objects at new addresses, ints beyond 64 bits), more
    keys than it remembers, and `_routes` changing under it each launch the
    kernel of their own values."""
    monkeypatch.setattr(scale_by, "_routes", {})
    runs = Runs(monkeypatch)
    generator = torch.Generator().manual_seed(16)
    x = torch.randn(64, generator=generator)
    out = torch.empty(64)
    launch = scale_by[(1,)]
    values = [(float(text), int(shift)) for text, shift in
              [("0.5", "0"), ("-2.0", "3"), ("3.0", str(2**70)), ("0.25", str(2**70 + 1)), ("5.0", "-7"),
               ("1.5", "1")]]
    for _ in range(3):
        for scale, shift in values:
            # float(str(...)) and int(str(...)): a new object for each call.
            launch(x, out, float(repr(scale)), int(str(shift)), 64)
            torch.testing.assert_close(out, x * scale + float(shift))
    assert runs.count == len(values)
    # Another key's route added, and one taken away: both are seen.
    scale_by[(1,)](x, out, 9.0, 0, 64)
    assert runs.count == len(values) + 1
    for _ in range(2):  # the launcher has this key's route at hand again
        launch(x, out, 0.5, 0, 64)
    assert runs.count == len(values) + 1
    key = next(key for key, route in scale_by._routes.items()
               if route.__class__ is tuple and 0.5 in key)
    del scale_by._routes[key]
    launch(x, out, 0.5, 0, 64)
    torch.testing.assert_close(out, x * 0.5)
    assert runs.count == len(values) + 2
