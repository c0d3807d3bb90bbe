"""kiln.autotune, kiln.heuristics and kiln.Config on the CPU backend: real
kernels tuned over real configs (one of them deliberately uncompilable),
results checked against float64 references on fresh random inputs, and the
contract's details: tuning keys, reset_to_zero, restore_value, hooks,
pruning, the printed report and the disk cache."""

import glob
import json
import os
import re
import warnings

import numpy as np
import pytest
import torch

import kiln
import kiln.language as kl
from kiln.errors import AutotunerError, CompilationError, OutOfBoundsError, OutOfResources
from kiln.runtime import jit as jit_module
from kiln.testing import do_bench as kiln_do_bench


@kiln.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) + kl.load(y_ptr + offs, mask=mask), mask=mask)


@kiln.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: kl.constexpr):
    """Accumulates into out[0]: right only when out starts at zero."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    x = kl.load(x_ptr + offs, mask=offs < n, other=0)
    kl.atomic_add(out_ptr, kl.sum(x, axis=0))


@kiln.jit
def increment_kernel(x_ptr, n, BLOCK: kl.constexpr):
    """x += 1 in place: right only when run once."""
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    mask = offs < n
    kl.store(x_ptr + offs, kl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@kiln.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: kl.constexpr, EVEN: kl.constexpr):
    offs = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
    if EVEN:
        kl.store(out_ptr + offs, kl.load(x_ptr + offs) * scale)
    else:
        mask = offs < n
        kl.store(out_ptr + offs, kl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


# Lengths of 64 and 1024 compile; 100 is no power of two, so kl.arange rejects it.
VALID = [64, 256, 1024]
INVALID = 100
CONFIGS = [kiln.Config({"BLOCK": 64}), kiln.Config({"BLOCK": 256}, num_warps=2),
           kiln.Config({"BLOCK": INVALID}), kiln.Config({"BLOCK": 1024}, num_warps=8)]
FAST = {"warmup": 1, "rep": 3}


def grid(meta):
    return (kiln.cdiv(meta["n"], meta["BLOCK"]),)


def random_inputs(n, seed, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=generator).to(dtype)
    y = torch.randn(n, generator=generator).to(dtype)
    return x, y, torch.full((n,), float("nan"), dtype=dtype)


def reference_add(x, y):
    """x + y computed in float64; fp32 and fp16 addition round it correctly."""
    return (x.double() + y.double()).to(x.dtype)


class CountingBench:
    """A do_bench that counts its calls and times on the CPU."""

    def __init__(self):
        self.calls = 0

    def __call__(self, fn, quantiles):
        self.calls += 1
        return kiln_do_bench(fn, warmup=1, rep=3, quantiles=quantiles, device="cpu")


def tuned_add(**options):
    return kiln.autotune(configs=CONFIGS, key=["n"], **{**FAST, **options})(add_kernel)


def blocks(configs):
    return sorted(config.kwargs["BLOCK"] for config in configs)


# -- Config ------------------------------------------------------------------------


def test_config_attributes_and_text():
    config = kiln.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3)
    assert config.kwargs == {"BLOCK_M": 128, "BLOCK_N": 64}
    assert (config.num_warps, config.num_stages, config.num_ctas, config.maxnreg, config.pre_hook) == (4, 3, 1, None,
                                                                                                         None)
    assert str(config) == "BLOCK_M: 128, BLOCK_N: 64, num_warps: 4, num_stages: 3"
    assert config.all_kwargs() == {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_ctas": 1, "num_stages": 3}
    assert config == kiln.Config({"BLOCK_M": 128, "BLOCK_N": 64})
    assert hash(config) == hash(kiln.Config({"BLOCK_M": 128, "BLOCK_N": 64}))
    assert config != kiln.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8)
    capped = kiln.Config({"BLOCK": 64}, num_warps=2, maxnreg=128)
    assert str(capped) == "BLOCK: 64, num_warps: 2, num_stages: 3, maxnreg: 128"
    assert capped.launch_kwargs() == {"BLOCK": 64, "num_warps": 2, "num_stages": 3, "maxnreg": 128}
    assert capped != kiln.Config({"BLOCK": 64}, num_warps=2)
    assert kiln.runtime.Config is kiln.Config


@pytest.mark.parametrize("options, message", [
    ({"num_warps": 3}, "num_warps must be a power of 2"),
    ({"num_stages": 0}, "num_stages must be a positive int"),
    ({"num_ctas": 0}, "num_ctas must be a positive int"),
    ({"maxnreg": 0}, "maxnreg must be None or an int from 1 to 255"),
    ({"maxnreg": 512}, "maxnreg must be None or an int from 1 to 255"),
])
def test_config_rejects_what_kiln_cannot_launch(options, message):
    with pytest.raises(ValueError, match=message):
        kiln.Config({"BLOCK": 64}, **options)


# -- tuning and launching ------------------------------------------------------------


def test_tunes_skips_the_uncompilable_config_and_computes_the_sum():
    tuned = tuned_add()
    n = 10_007
    x, y, out = random_inputs(n, seed=1)
    with pytest.warns(UserWarning, match=r"config \{BLOCK: 100, num_warps: 4, num_stages: 3\} skipped: "
                                         r"CompilationError: .*test_autotune.py:\d+:\d+: arange's range must "
                                         r"be a power of 2"):
        tuned[grid](x, y, out, n)
    assert torch.equal(out, reference_add(x, y))
    assert tuned.best_config.kwargs["BLOCK"] in VALID
    assert blocks(tuned.configs_timings) == sorted(VALID + [INVALID])
    assert tuned.configs_timings[CONFIGS[2]] == [float("inf")] * 3
    for config in (CONFIGS[0], CONFIGS[1], CONFIGS[3]):
        median, p20, p80 = tuned.configs_timings[config]
        assert 0 < p20 <= median <= p80 < float("inf")
    assert list(tuned.configs_errors) == [CONFIGS[2]]
    assert isinstance(tuned.configs_errors[CONFIGS[2]], CompilationError)
    key = (n, "torch.float32", "torch.float32", "torch.float32", "cpu")
    assert tuned.cache == {key: tuned.best_config}

    # A second launch with the same key launches the tuned config directly.
    x, y, out = random_inputs(n, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tuned[grid](x, y, out, n)
    assert torch.equal(out, reference_add(x, y))
    assert len(tuned.cache) == 1


def test_the_grid_sees_the_config_and_the_fastest_config_wins():
    # Invented timings make the choice deterministic; the kernel still runs.
    invented = {64: 3.0, 256: 1.0, 1024: 2.0}
    seen_blocks = []
    grid_blocks = []

    def pre_hook(args, reset_only=False):
        seen_blocks.append(args["BLOCK"])

    def fake_bench(fn, quantiles):
        fn()
        return [invented[seen_blocks[-1]]] * len(quantiles)

    def recording_grid(meta):
        grid_blocks.append(meta["BLOCK"])
        return (kiln.cdiv(meta["n"], meta["BLOCK"]),)

    configs = [kiln.Config({"BLOCK": block}) for block in invented]
    tuned = kiln.autotune(configs, key=["n"], pre_hook=pre_hook, do_bench=fake_bench)(add_kernel)
    n = 3000
    x, y, out = random_inputs(n, seed=3)
    tuned[recording_grid](x, y, out, n)
    assert tuned.best_config is configs[1]
    assert torch.equal(out, reference_add(x, y))
    # One compile (warmup) and one timed launch per config, then the launch.
    assert grid_blocks == [64, 64, 256, 256, 1024, 1024, 256]
    assert seen_blocks[:3] == [64, 256, 1024]


def test_a_new_key_retunes_and_an_old_one_does_not():
    bench = CountingBench()
    tuned = kiln.autotune(CONFIGS, key=["n"], do_bench=bench)(add_kernel)
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n, dtype in [(4096, torch.float32), (4096, torch.float32), (5000, torch.float32),
                         (4096, torch.float16), (5000, torch.float32)]:
            x, y, out = random_inputs(n, seed=n, dtype=dtype)
            tuned[grid](x, y, out, n)
            assert torch.equal(out, reference_add(x, y))
            runs.append(bench.calls)
    # Three valid configs are timed per tuning: new n, new dtype, then nothing new.
    assert runs == [3, 3, 6, 9, 9]
    assert sorted(key[0] for key in tuned.cache) == [4096, 4096, 5000]
    assert {key[1] for key in tuned.cache} == {"torch.float32", "torch.float16"}


def test_numpy_arrays_are_tuned_by_their_dtype():
    tuned = kiln.autotune([kiln.Config({"BLOCK": 64}), kiln.Config({"BLOCK": 512})], key=["n"], **FAST)(add_kernel)
    rng = np.random.default_rng(7)
    n = 777
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    tuned[grid](x, y, out, n)
    np.testing.assert_array_equal(out, (x.astype(np.float64) + y.astype(np.float64)).astype(np.float32))
    assert list(tuned.cache) == [(n, "float32", "float32", "float32", "cpu")]


def test_a_single_config_is_launched_without_benchmarking():
    bench = CountingBench()
    only = kiln.Config({"BLOCK": 128}, num_warps=2)
    tuned = kiln.autotune([only], key=["n"], do_bench=bench)(add_kernel)
    x, y, out = random_inputs(1000, seed=4)
    tuned[grid](x, y, out, 1000)
    assert torch.equal(out, reference_add(x, y))
    assert bench.calls == 0 and tuned.best_config is only


def test_a_config_with_maxnreg_launches_on_the_cpu_which_ignores_it():
    only = kiln.Config({"BLOCK": 128}, maxnreg=40)
    tuned = kiln.autotune([only], key=["n"], do_bench=CountingBench())(add_kernel)
    x, y, out = random_inputs(1000, seed=5)
    tuned[grid](x, y, out, 1000)
    assert torch.equal(out, reference_add(x, y))
    assert tuned.best_config is only


def test_a_config_with_num_ctas_is_refused_at_launch_naming_the_kernel():
    clustered = kiln.Config({"BLOCK": 128}, num_ctas=2)
    assert str(clustered) == "BLOCK: 128, num_warps: 4, num_stages: 3, num_ctas: 2"
    assert clustered.all_kwargs()["num_ctas"] == 2
    tuned = kiln.autotune([clustered], key=["n"], do_bench=CountingBench())(add_kernel)
    x, y, out = random_inputs(1000, seed=5)
    with pytest.raises(ValueError, match="kernel add_kernel: num_ctas=2: thread-block clusters are not supported yet"):
        tuned[grid](x, y, out, 1000)
    one = kiln.autotune([kiln.Config({"BLOCK": 128}, num_ctas=1)], key=["n"], do_bench=CountingBench())(add_kernel)
    one[grid](x, y, out, 1000)
    assert torch.equal(out, reference_add(x, y))


def test_every_config_failing_is_an_error_listing_why():
    configs = [kiln.Config({"BLOCK": 100}), kiln.Config({"BLOCK": 48}, num_warps=2)]
    tuned = kiln.autotune(configs, key=["n"], **FAST)(add_kernel)
    x, y, out = random_inputs(500, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AutotunerError) as info:
            tuned[grid](x, y, out, 500)
    text = str(info.value)
    assert "kernel add_kernel: no config could run for key (500," in text
    assert "BLOCK: 100, num_warps: 4, num_stages: 3: CompilationError:" in text
    assert "BLOCK: 48, num_warps: 2, num_stages: 3: CompilationError:" in text
    assert "CompilationError: " + __file__ in text and "arange's range must be a power of 2" in text


def test_out_of_resources_skips_the_config(monkeypatch):
    compile_original = jit_module._compile_jit_function

    def compile_or_run_out(jit_fn, signature, constexprs, *args, **options):
        if constexprs.get("BLOCK") == 1024:
            raise OutOfResources(2 * 232448, 232448, "shared memory")
        return compile_original(jit_fn, signature, constexprs, *args, **options)

    monkeypatch.setattr(jit_module, "_compile_jit_function", compile_or_run_out)
    configs = [kiln.Config({"BLOCK": 1024}), kiln.Config({"BLOCK": 128})]
    fresh_kernel = kiln.jit(add_kernel.fn)  # nothing compiled yet
    tuned = kiln.autotune(configs, key=["n"], **FAST)(fresh_kernel)
    x, y, out = random_inputs(4099, seed=6)
    with pytest.warns(UserWarning, match="BLOCK: 1024.*skipped: OutOfResources: out of resources: shared memory"):
        tuned[grid](x, y, out, 4099)
    assert tuned.best_config is configs[1]
    assert torch.equal(out, reference_add(x, y))


def test_a_caller_value_for_a_tuned_meta_parameter_conflicts():
    tuned = tuned_add()
    x, y, out = random_inputs(100, seed=8)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        tuned[grid](x, y, out, 100, BLOCK=64)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        tuned[grid](x, y, out, 100, 64)


def test_decoration_checks_names_and_what_it_decorates():
    with pytest.raises(ValueError, match="key names 'size', which is not a parameter of kernel add_kernel"):
        kiln.autotune(CONFIGS, key=["size"])(add_kernel)
    with pytest.raises(ValueError, match="names 'BLOKC', which is not a parameter"):
        kiln.autotune([kiln.Config({"BLOKC": 64})], key=["n"])(add_kernel)
    with pytest.raises(ValueError, match="reset_to_zero names 'output'"):
        kiln.autotune(CONFIGS, key=["n"], reset_to_zero=["output"])(add_kernel)
    with pytest.raises(TypeError, match="must decorate a @kiln.jit kernel"):
        kiln.autotune(CONFIGS, key=["n"])(lambda x: x)
    with pytest.raises(TypeError, match="must decorate a @kiln.jit kernel"):
        kiln.heuristics({"BLOCK": lambda args: 64})(lambda x: x)


def test_passthrough_attributes_and_direct_calls():
    tuned = tuned_add()
    assert tuned.fn is add_kernel and tuned.kernel is add_kernel
    assert tuned.base_fn is add_kernel.fn
    assert tuned.src == add_kernel.src and "kl.arange(0, BLOCK)" in tuned.src
    assert tuned.__name__ == "add_kernel" and tuned.arg_names == add_kernel.arg_names
    assert isinstance(tuned, kiln.Autotuner)
    with pytest.raises(RuntimeError, match="cannot be called directly"):
        tuned(1, 2)


def test_warmup_compiles_every_config_without_launching():
    configs = [kiln.Config({"BLOCK": 32}), kiln.Config({"BLOCK": 2048}, num_warps=8)]
    tuned = kiln.autotune(configs, key=["n"], **FAST)(add_kernel)
    x, y, out = random_inputs(64, seed=9)
    compiled = tuned.warmup(x, y, out, 64, grid=(1,))
    assert [kernel.metadata["num_warps"] for kernel in compiled] == [4, 8]
    assert torch.isnan(out).all()
    assert tuned.cache == {}


def test_launch_options_reach_the_kernel():
    tuned = tuned_add()
    x, y, out = random_inputs(3000, seed=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tuned[grid](x, y, out, 3000, backend="cpu", num_threads=2)
    assert kernel.metadata["backend"] == "cpu"
    assert kernel.metadata["num_warps"] == tuned.best_config.num_warps
    assert torch.equal(out, reference_add(x, y))
    assert list(tuned.cache)[0][-1] == "backend=cpu"


# -- reset_to_zero, restore_value and hooks ---------------------------------------------


def snapshot_bench(snapshots, array):
    """A do_bench running the launch three times, keeping ``array`` after each."""

    def bench(fn, quantiles):
        for _ in range(3):
            fn()
            snapshots.append(array.clone())
        return [1.0] * len(quantiles)

    return bench


SUM_CONFIGS = [kiln.Config({"BLOCK": 64}), kiln.Config({"BLOCK": 512})]


@pytest.mark.parametrize("reset", [True, False])
def test_reset_to_zero_zeroes_before_every_benchmark_run(reset):
    n = 20_000
    x = torch.randint(-1000, 1000, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(11))
    expected = int(x.double().sum())
    out = torch.zeros(1, dtype=torch.int32)
    snapshots = []
    tuned = kiln.autotune(SUM_CONFIGS, key=["n"], reset_to_zero=["out_ptr"] if reset else None,
                          do_bench=snapshot_bench(snapshots, out))(sum_kernel)
    tuned[grid](x, out, n)
    values = [int(s[0]) for s in snapshots]
    if reset:
        assert values == [expected] * 6
        assert int(out[0]) == expected
    else:  # Without the reset the benchmark runs accumulate: the test can tell.
        assert values == [expected * k for k in range(1, 7)]
        assert int(out[0]) == 7 * expected


def test_reset_to_zero_with_the_real_timer():
    n = 50_001
    x = torch.randint(-1000, 1000, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(12))
    out = torch.full((1,), 12345, dtype=torch.int32)
    tuned = kiln.autotune(SUM_CONFIGS, key=["n"], reset_to_zero=["out_ptr"], **FAST)(sum_kernel)
    tuned[grid](x, out, n)
    assert int(out[0]) == int(x.double().sum())


@pytest.mark.parametrize("restore", [True, False])
def test_restore_value_restores_after_every_benchmark_run(restore):
    n = 3333
    x0 = torch.randint(-10**6, 10**6, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(13))
    x = x0.clone()
    snapshots = []
    tuned = kiln.autotune(SUM_CONFIGS, key=["n"], restore_value=["x_ptr"] if restore else None,
                          do_bench=snapshot_bench(snapshots, x))(increment_kernel)
    tuned[grid](x, n)
    assert len(snapshots) == 6
    if restore:
        # Restored after each benchmark run; the real launch adds one once.
        assert all(torch.equal(s, x0) for s in snapshots)
        assert torch.equal(x, x0 + 1)
    else:
        assert all(torch.equal(s, x0 + k) for k, s in enumerate(snapshots, 1))
        assert torch.equal(x, x0 + 7)


def test_restore_value_on_numpy_arrays():
    n = 1000
    x0 = np.random.default_rng(14).standard_normal(n).astype(np.float32)
    x = x0.copy()
    tuned = kiln.autotune(SUM_CONFIGS, key=["n"], restore_value=["x_ptr"], **FAST)(increment_kernel)
    tuned[grid](x, n)
    np.testing.assert_array_equal(x, x0 + np.float32(1))


def test_user_hooks_and_config_pre_hooks():
    events = []

    def config_hook(args):
        events.append(("config", args["BLOCK"]))

    def pre_hook(args, reset_only=False):
        events.append(("pre", args["BLOCK"], reset_only))

    def post_hook(args, exception):
        events.append(("post", args["BLOCK"], exception))

    def one_run(fn, quantiles):
        fn()
        return [1.0] * len(quantiles)

    configs = [kiln.Config({"BLOCK": 64}, pre_hook=config_hook), kiln.Config({"BLOCK": 128})]
    tuned = kiln.autotune(configs, key=["n"], pre_hook=pre_hook, post_hook=post_hook, do_bench=one_run)(add_kernel)
    x, y, out = random_inputs(300, seed=15)
    tuned[grid](x, y, out, 300)
    assert torch.equal(out, reference_add(x, y))
    assert events == [("config", 64),  # before the compile: it may change what is compiled
                      ("config", 64), ("pre", 64, False), ("post", 64, None),
                      ("pre", 128, False), ("post", 128, None),
                      ("pre", 64, True),  # the reset after tuning, with the chosen config
                      ("config", 64)]  # the chosen config's own hook, before the launch


@kiln.jit
def descriptor_copy_kernel(src_desc, dst_desc, BLOCK: kl.constexpr):
    off = kl.program_id(0) * BLOCK
    dst_desc.store([off, 0], src_desc.load([off, 0]) * 2.0)


def test_config_pre_hook_sets_descriptor_block_shapes_before_the_compile():
    # As Triton's tutorial 06 does: each config's hook gives the host
    # descriptors the block shape of its BLOCK, which the kernel is
    # specialized on; a shape left over from another config would not fit.
    def set_blocks(args):
        for name in ("src_desc", "dst_desc"):
            args[name].block_shape = [args["BLOCK"], 16]

    def one_run(fn, quantiles):
        fn()
        return [float(len(seen))] * len(quantiles)

    seen = []
    configs = [kiln.Config({"BLOCK": b}, pre_hook=set_blocks) for b in (32, 16, 64)]
    tuned = kiln.autotune(configs, key=[], do_bench=lambda fn, quantiles: (seen.append(1), one_run(fn, quantiles))[1])(
        descriptor_copy_kernel)
    from kiln.tools.tensor_descriptor import TensorDescriptor
    x = torch.randn(128, 16, generator=torch.Generator().manual_seed(3))
    out = torch.full_like(x, float("nan"))
    tuned[lambda meta: (128 // meta["BLOCK"],)](TensorDescriptor(x, [128, 16], [16, 1], [1, 1]),
                                                TensorDescriptor(out, [128, 16], [16, 1], [1, 1]))
    assert len(tuned.configs_errors) == 0
    torch.testing.assert_close(out, x * 2.0, rtol=0, atol=0)


@kiln.jit(checked=True)
def overrun_kernel(x_ptr, n, BLOCK: kl.constexpr):
    offs = kl.arange(0, BLOCK)
    kl.store(x_ptr + offs, kl.load(x_ptr + offs) * 2)  # no mask: overruns when n < BLOCK


def test_post_hook_sees_the_launch_error_and_it_propagates():
    seen = []
    tuned = kiln.autotune([kiln.Config({"BLOCK": 64}), kiln.Config({"BLOCK": 128})], key=["n"],
                          post_hook=lambda args, exception: seen.append(exception), **FAST)(overrun_kernel)
    with pytest.raises(OutOfBoundsError):
        tuned[(1,)](torch.zeros(32), 32)
    assert len(seen) == 1 and isinstance(seen[0], OutOfBoundsError)


# -- pruning ------------------------------------------------------------------------------


def test_early_config_prune_sees_the_arguments():
    calls = []

    def early_prune(configs, named_args, **kwargs):
        calls.append((len(configs), named_args["n"], sorted(kwargs)))
        return [config for config in configs if config.kwargs["BLOCK"] <= named_args["n"] // 8]

    tuned = kiln.autotune(CONFIGS, key=["n"], prune_configs_by={"early_config_prune": early_prune}, **FAST)(add_kernel)
    x, y, out = random_inputs(2048, seed=16)
    with pytest.warns(UserWarning, match="BLOCK: 100"):
        tuned[grid](x, y, out, 2048)
    assert calls == [(4, 2048, ["grid"])]
    assert blocks(tuned.configs_timings) == [64, 100, 256]
    assert torch.equal(out, reference_add(x, y))

    tuned = kiln.autotune(CONFIGS, key=["n"], prune_configs_by={"early_config_prune": lambda c, a, **k: []})(add_kernel)
    with pytest.raises(AutotunerError, match="early_config_prune left no config"):
        tuned[grid](x, y, out, 2048)


@pytest.mark.parametrize("top_k", [2, 0.5])
def test_perf_model_keeps_the_top_k(top_k):
    estimates = []

    def perf_model(**args):
        estimates.append((args["n"], args["BLOCK"], args["num_warps"]))
        return -args["BLOCK"]  # the model favours big blocks

    tuned = kiln.autotune(CONFIGS, key=["n"], prune_configs_by={"perf_model": perf_model, "top_k": top_k},
                          **FAST)(add_kernel)
    x, y, out = random_inputs(5000, seed=17)
    tuned[grid](x, y, out, 5000)
    assert sorted(estimates) == [(5000, 64, 4), (5000, 100, 4), (5000, 256, 2), (5000, 1024, 8)]
    assert blocks(tuned.configs_timings) == [256, 1024]
    assert torch.equal(out, reference_add(x, y))


# -- heuristics -----------------------------------------------------------------------


def test_heuristics_compute_constexprs_from_the_arguments():
    seen = []

    def block_for(args):
        seen.append(sorted(args))
        return min(1024, 1 << (args["n"] - 1).bit_length())

    scaled = kiln.heuristics({"BLOCK": block_for,
                              "EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(scale_kernel)
    assert isinstance(scaled, kiln.Heuristics) and scaled.src == scale_kernel.src
    for n in (1000, 1024, 4096, 5000):
        x = torch.randn(n, generator=torch.Generator().manual_seed(n))
        out = torch.full((n,), float("nan"))
        kernel = scaled[grid](x, out, n, 0.5)
        assert torch.equal(out, (x.double() * 0.5).float())
        block = min(1024, 1 << (n - 1).bit_length())
        assert kernel.metadata["constexprs"] == {"BLOCK": block, "EVEN": n % block == 0}
    assert seen[0] == ["grid", "n", "out_ptr", "scale", "x_ptr"]


def test_autotune_above_heuristics():
    evens = []

    def even(args):
        evens.append((args["BLOCK"], args["n"] % args["BLOCK"] == 0))
        return args["n"] % args["BLOCK"] == 0

    configs = [kiln.Config({"BLOCK": 128}), kiln.Config({"BLOCK": 512}), kiln.Config({"BLOCK": 96})]
    tuned = kiln.autotune(configs, key=["n"], **FAST)(kiln.heuristics({"EVEN": even})(scale_kernel))
    assert tuned.kernel is scale_kernel and tuned.base_fn is scale_kernel.fn
    n = 1536  # a multiple of 128 and 512: the unmasked path
    x = torch.randn(n, generator=torch.Generator().manual_seed(18))
    out = torch.full((n,), float("nan"))
    with pytest.warns(UserWarning, match="BLOCK: 96") as record:
        tuned[grid](x, out, n, 3.0)
    # The warning names the launch line, not a line inside Kiln.
    assert record[0].filename == __file__
    assert torch.equal(out, (x.double() * 3.0).float())
    assert (128, True) in evens and (512, True) in evens and (96, True) in evens
    n = 1500
    x = torch.randn(n, generator=torch.Generator().manual_seed(19))
    out = torch.full((n,), float("nan"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tuned[grid](x, out, n, -2.0)
    assert torch.equal(out, (x.double() * -2.0).float())
    assert evens[-1] == (tuned.best_config.kwargs["BLOCK"], False)


# -- the printed report --------------------------------------------------------------------


def test_print_autotuning_reports_key_choice_and_timings(monkeypatch, capsys):
    monkeypatch.setenv("KILN_PRINT_AUTOTUNING", "1")
    tuned = tuned_add()
    n = 2500
    x, y, out = random_inputs(n, seed=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # printed instead of warned
        tuned[grid](x, y, out, n)
    assert torch.equal(out, reference_add(x, y))
    text = capsys.readouterr().out
    for config in CONFIGS:
        assert f"Autotuning kernel add_kernel with config {config}\n" in text
    assert "Autotuning kernel add_kernel: config {BLOCK: 100, num_warps: 4, num_stages: 3} skipped: " \
           "CompilationError:" in text
    assert "Kiln autotuning for function add_kernel,\n" in text
    assert f"with key as ({n}, 'torch.float32', 'torch.float32', 'torch.float32', 'cpu'),\n" in text
    assert f"best config selected: {tuned.best_config};\n" in text
    assert re.search(r"\n   config +median +p20 +p80 +regs +spills +shared", text)
    assert re.search(r"\n   BLOCK: 100, num_warps: 4, num_stages: 3 +failed: CompilationError: ", text)
    for config in CONFIGS:
        if config.kwargs["BLOCK"] != INVALID:
            median, p20, p80 = tuned.configs_timings[config]
            mark = "*" if config is tuned.best_config else " "
            # The CPU backend reports no registers, spills or shared memory.
            row = rf"\n {re.escape(mark)} {re.escape(str(config))} +{median:.4f} +{p20:.4f} +{p80:.4f} +- +- +-\n"
            assert re.search(row, text), row
    # Nothing is printed once the key is tuned.
    tuned[grid](x, y, out, n)
    assert capsys.readouterr().out == ""


def test_print_autotuning_says_why_configs_were_pruned(monkeypatch, capsys):
    monkeypatch.setenv("KILN_PRINT_AUTOTUNING", "1")
    configs = [kiln.Config({"BLOCK": block}) for block in (32, 64, 128, 256, 512)]
    prune = {"early_config_prune": lambda configs, named, **kwargs: [c for c in configs if c.kwargs["BLOCK"] != 32],
             "perf_model": lambda BLOCK, **kwargs: 1.0 / BLOCK, "top_k": 2}
    tuned = kiln.autotune(configs, key=["n"], prune_configs_by=prune, **FAST)(add_kernel)
    n = 3000
    x, y, out = random_inputs(n, seed=23)
    tuned[grid](x, y, out, n)
    assert torch.equal(out, reference_add(x, y))
    assert tuned.best_config.kwargs["BLOCK"] in (256, 512)
    text = capsys.readouterr().out
    assert "pruned before benchmarking:\n" in text
    assert "   BLOCK: 32, num_warps: 4, num_stages: 3: left out by early_config_prune\n" in text
    # 1/BLOCK ranks 512 and 256 first: 128 is third of four, 64 fourth.
    assert ("   BLOCK: 128, num_warps: 4, num_stages: 3: perf_model estimate 0.007812 ranks 3 of 4, "
            "outside top_k=2") in text
    assert ("   BLOCK: 64, num_warps: 4, num_stages: 3: perf_model estimate 0.01562 ranks 4 of 4, "
            "outside top_k=2") in text
    assert set(tuned.configs_timings) == {configs[3], configs[4]}


# -- the disk cache --------------------------------------------------------------------------


def cache_files():
    return glob.glob(os.path.join(os.environ["KILN_CACHE_DIR"], "autotune", "*.json"))


def run_cached(bench, n=6000, **options):
    tuned = kiln.autotune(CONFIGS, key=["n"], do_bench=bench, **options)(add_kernel)
    x, y, out = random_inputs(n, seed=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tuned[grid](x, y, out, n)
    assert torch.equal(out, reference_add(x, y))
    return tuned


def test_disk_cache_keeps_the_timings_and_retunes_a_corrupt_entry():
    bench = CountingBench()
    first = run_cached(bench, cache_results=True)
    assert bench.calls == 3
    [path] = cache_files()
    assert os.path.basename(path).startswith("add_kernel-")

    # A fresh autotuner reads the timings instead of benchmarking.
    second = run_cached(bench, cache_results=True)
    assert bench.calls == 3
    assert second.best_config == first.best_config
    assert second.configs_timings == first.configs_timings

    # Another key is another entry.
    run_cached(bench, n=6016, cache_results=True)
    assert bench.calls == 6 and len(cache_files()) == 2

    for damage in ("{not json", json.dumps({"format": 1, "timings": [["BLOCK: 64", [1.0]]]}),
                   json.dumps({"format": 1, "timings": [[str(c), "fast"] for c in CONFIGS]}), ""):
        with open(path, "w") as f:
            f.write(damage)
        calls = bench.calls
        retuned = run_cached(bench, cache_results=True)
        assert bench.calls == calls + 3
        with open(path) as f:
            entry = json.load(f)
        assert [name for name, _ in entry["timings"]] == [str(c) for c in CONFIGS]
        assert entry["timings"][2][1] == [float("inf")] * 3
        assert retuned.best_config.kwargs["BLOCK"] in VALID
        # ... and the rewritten entry is used again.
        run_cached(bench, cache_results=True)
        assert bench.calls == calls + 3


def test_disk_cache_by_environment_and_not_without_it(monkeypatch):
    bench = CountingBench()
    run_cached(bench)
    assert cache_files() == []
    monkeypatch.setenv("KILN_CACHE_AUTOTUNING", "1")
    run_cached(bench)
    run_cached(bench)
    assert bench.calls == 6 and len(cache_files()) == 1
    monkeypatch.setenv("KILN_DISABLE_CACHE", "1")
    run_cached(bench)
    assert bench.calls == 9


def test_disk_cache_skips_configs_with_pre_hooks():
    bench = CountingBench()
    configs = [kiln.Config({"BLOCK": 64}, pre_hook=lambda args: None), kiln.Config({"BLOCK": 128})]
    for _ in range(2):
        tuned = kiln.autotune(configs, key=["n"], do_bench=bench, cache_results=True)(add_kernel)
        x, y, out = random_inputs(700, seed=21)
        tuned[grid](x, y, out, 700)
    assert bench.calls == 4 and cache_files() == []


# -- the native launch path -----------------------------------------------------------


class AutotunerRuns:
    """Counts the launches that went through Autotuner.run."""

    def __init__(self, monkeypatch):
        from kiln.runtime.autotuner import Autotuner

        self.count = 0
        original = Autotuner.run

        def counted(tuner, *args, **kwargs):
            self.count += 1
            return original(tuner, *args, **kwargs)

        monkeypatch.setattr(Autotuner, "run", counted)


def fresh_add_tuner(**options):
    return kiln.autotune([kiln.Config({"BLOCK": 64}), kiln.Config({"BLOCK": 256}, num_warps=2)], key=["n"],
                         **options)(add_kernel)


def test_tuned_launches_take_the_native_path(monkeypatch):
    """Once a key is tuned, kernel[grid](...) launches the chosen config's
    kernel without Autotuner.run: the config's values reach the kernel and
    the grid function, and it becomes best_config. A new tuning-key value
    tunes again."""
    tuner = fresh_add_tuner()
    runs = AutotunerRuns(monkeypatch)
    blocks = []

    def grid(meta):
        blocks.append(meta["BLOCK"])
        return (kiln.cdiv(meta["n"], meta["BLOCK"]),)

    for seed, n in enumerate([1000, 1000, 1000, 700, 700]):
        generator = torch.Generator().manual_seed(seed)
        x, y = torch.randn(n, generator=generator), torch.randn(n, generator=generator)
        out = torch.full((n,), float("nan"))
        tuner[grid](x, y, out, n)
        torch.testing.assert_close(out, (x.double() + y.double()).float(), rtol=0, atol=0)
        assert blocks[-1] == tuner.best_config.kwargs["BLOCK"]
    assert runs.count == 2  # n = 1000 tuned (then native), n = 700 tuned (then native)
    tuner.best_config = None
    tuner[grid](x, y, out, 700)
    assert runs.count == 2 and tuner.best_config is not None


def test_tuned_launches_that_need_run_still_take_it(monkeypatch):
    """A meta-parameter the configs set, passed by the caller, is still the
    autotuner's error after a native hit; a config's pre_hook runs before
    every launch, so such a key stays on run."""
    n = 512
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    tuner = fresh_add_tuner()
    tuner[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    tuner[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        tuner[(8,)](x, y, out, n, BLOCK=64)

    calls = []
    hooked = kiln.autotune([kiln.Config({"BLOCK": 64}, pre_hook=lambda args: calls.append(args["n"]))],
                           key=["n"])(add_kernel)
    for _ in range(3):
        hooked[(8,)](x, y, out, n)
    assert calls == [n, n, n]
    torch.testing.assert_close(out, x + y)


def test_heuristics_launches_take_the_native_path(monkeypatch):
    """kiln.heuristics over a jit function: the native path calls the
    heuristic on every launch (in order, with the arguments by name and
    the grid) and keys by what it returns, so a value that changes picks
    another kernel; after the first launch of a key, Heuristics.run is not
    called. A value passed by keyword is replaced, and a heuristic that
    raises is the caller's error, as through run."""
    from kiln.runtime.autotuner import Heuristics

    seen = []

    def even(args):
        seen.append((args["n"], args["BLOCK"], "grid" in args, "EVEN" in args))
        return args["n"] % args["BLOCK"] == 0

    kernel = kiln.heuristics(values={"EVEN": even})(scale_kernel)
    calls = []
    original = Heuristics.run
    monkeypatch.setattr(Heuristics, "run", lambda self, *a, **k: (calls.append(1), original(self, *a, **k))[1])
    for seed, n in enumerate([256, 256, 200, 200, 256]):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(n, generator=generator)
        out = torch.full((n,), float("nan"))
        kernel[(kiln.cdiv(n, 64),)](x, out, n, 2.5, BLOCK=64)
        torch.testing.assert_close(out, (x.double() * 2.5).float(), rtol=0, atol=0)
    assert len(calls) == 2  # the first launch of EVEN True and of EVEN False
    assert seen[0] == (256, 64, True, False) and len(seen) == 5 + len(calls)
    x, out = torch.randn(200), torch.empty(200)
    kernel[(4,)](x, out, 200, 1.0, BLOCK=64, EVEN=True)  # replaced by the heuristic: masked, right
    torch.testing.assert_close(out, x)
    broken = kiln.heuristics(values={"EVEN": lambda args: 1 // 0})(scale_kernel)
    for _ in range(2):
        with pytest.raises(ZeroDivisionError):
            broken[(4,)](x, out, 200, 1.0, BLOCK=64)
