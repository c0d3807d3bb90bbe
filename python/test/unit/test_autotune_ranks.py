"""Autotuning under torch.distributed: every rank runs rank 0's choice.

Each test starts two processes that form a gloo process group on this
machine and tune one kernel on the CPU backend. Their ``do_bench`` is a
stand-in that makes each rank prefer another config, so the choice each
rank ends with shows whose tuning it is.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

RANK_SCRIPT = textwrap.dedent("""
    import json, os, sys, warnings
    import torch
    import torch.distributed as dist
    import kiln
    import kiln.language as kl

    rank, world, init_file, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)

    @kiln.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.constexpr):
        offsets = kl.program_id(0) * BLOCK + kl.arange(0, BLOCK)
        mask = offsets < n
        kl.store(out_ptr + offsets, kl.load(x_ptr + offsets, mask=mask) + kl.load(y_ptr + offsets, mask=mask),
                 mask=mask)

    timed = []
    preferred = 256 if rank == 0 else 128  # each rank's own benchmark would pick another config
    configs = [kiln.Config({"BLOCK": block}) for block in (64, 128, 256)]

    def bench(fn, quantiles=None):
        fn()
        timed.append(current[0])
        ms = 0.5 if current[0] == preferred else 1.0
        return [ms, ms, ms]

    current = [None]
    tuned = kiln.autotune(configs, key=["n"], do_bench=bench)(add_kernel)
    original_bench = tuned._bench

    def tracking_bench(config, *args):
        current[0] = config.kwargs["BLOCK"]
        return original_bench(config, *args)

    tuned._bench = tracking_bench
    if mode == "all_fail":
        tuned.configs = [kiln.Config({"BLOCK": 100}), kiln.Config({"BLOCK": 300})]  # not powers of 2

    # Rank 0 tunes another size than rank 1 when the test asks it to (rank 1 then waits in vain).
    n = 1000 if (mode != "rank0_elsewhere" or rank == 1) else 2000
    generator = torch.Generator().manual_seed(rank)
    x, y = torch.randn(n, generator=generator), torch.randn(n, generator=generator)
    out = torch.empty(n)
    result = {"rank": rank}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tuned[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
            result["correct"] = bool(torch.equal(out, x + y))
            result["best"] = tuned.best_config.kwargs["BLOCK"]
        except kiln.AutotunerError as error:
            result["error"] = str(error)
    result["timed"] = timed
    result["warnings"] = [str(w.message) for w in caught]
    print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()
""")


def run_ranks(tmp_path, mode="normal", env=None):
    """Starts two ranks; returns their results by rank."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    init_file = tmp_path / "init"
    environment = {name: value for name, value in os.environ.items() if not name.startswith("KILN_AUTOTUNE_")}
    environment.update({"KILN_CACHE_DIR": str(tmp_path / "cache"), **(env or {})})
    processes = [subprocess.Popen([sys.executable, str(script), str(rank), "2", str(init_file), mode],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
                 for rank in range(2)]
    results = {}
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        line = next(line for line in out.splitlines() if line.startswith("RESULT "))
        result = json.loads(line[len("RESULT "):])
        results[result["rank"]] = result
    return results


def test_every_rank_runs_rank_0s_choice(tmp_path):
    results = run_ranks(tmp_path)
    assert results[0]["best"] == 256 and results[1]["best"] == 256
    assert results[0]["correct"] and results[1]["correct"]
    assert sorted(results[0]["timed"]) == [64, 128, 256]
    assert results[1]["timed"] == []  # rank 1 did not benchmark: it waited for rank 0


def test_sharing_can_be_turned_off(tmp_path):
    results = run_ranks(tmp_path, env={"KILN_AUTOTUNE_SHARE_RANKS": "0"})
    assert results[0]["best"] == 256 and results[1]["best"] == 128
    assert sorted(results[1]["timed"]) == [64, 128, 256]


def test_a_rank_that_waits_in_vain_tunes_itself(tmp_path):
    results = run_ranks(tmp_path, mode="rank0_elsewhere", env={"KILN_AUTOTUNE_RANK_TIMEOUT": "2"})
    assert results[1]["best"] == 128 and results[1]["correct"]
    assert any("got no tuning result from rank 0 within 2 s" in message for message in results[1]["warnings"])


def test_rank_0s_failure_reaches_the_other_ranks(tmp_path):
    results = run_ranks(tmp_path, mode="all_fail", env={"KILN_AUTOTUNE_RANK_TIMEOUT": "120"})
    assert "no config could run" in results[0]["error"]
    assert "no config could run for key" in results[1]["error"] and "on rank 0" in results[1]["error"]
    assert results[1]["timed"] == []


def test_bad_timeout_is_a_clear_error(monkeypatch):
    from kiln.runtime import autotune_ranks

    monkeypatch.setenv("KILN_AUTOTUNE_RANK_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="KILN_AUTOTUNE_RANK_TIMEOUT='soon' is not a positive number"):
        autotune_ranks.rank_timeout()


def test_entry_name_ignores_device_indices():
    from kiln.runtime import autotune_ranks

    rank0 = autotune_ranks.entry_name("src", (1000, "torch.float32", "cuda:0"), ["BLOCK: 64"])
    rank1 = autotune_ranks.entry_name("src", (1000, "torch.float32", "cuda:1"), ["BLOCK: 64"])
    other = autotune_ranks.entry_name("src", (2000, "torch.float32", "cuda:1"), ["BLOCK: 64"])
    assert rank0 == rank1 and rank0 != other
