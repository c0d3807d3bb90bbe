"""kiln.testing.do_bench: argument checks, the CPU's wall-clock timing and
the statistics it reports."""

import time

import pytest
import torch

from kiln import testing


def test_do_bench_validates_its_arguments():
    with pytest.raises(TypeError, match="fn must be callable"):
        testing.do_bench(42)
    with pytest.raises(ValueError, match="warmup must be a positive number"):
        testing.do_bench(lambda: None, warmup=0)
    with pytest.raises(ValueError, match="rep must be a positive number"):
        testing.do_bench(lambda: None, rep=-5)
    with pytest.raises(ValueError, match="return_mode must be one of"):
        testing.do_bench(lambda: None, return_mode="average")
    with pytest.raises(ValueError, match="each quantile must be a float in"):
        testing.do_bench(lambda: None, quantiles=[0.5, 1.5])
    with pytest.raises(ValueError, match="quantiles must be a non-empty list"):
        testing.do_bench(lambda: None, quantiles=0.5)
    with pytest.raises(TypeError, match="grad_to_none must be an iterable"):
        testing.do_bench(lambda: None, grad_to_none=3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_do_bench_without_cuda():
    """Without a GPU the active driver is the CPU backend's, and so is the
    default device (Triton's do_bench times on the active driver's device);
    asking for CUDA is an error."""
    calls = []
    with pytest.raises(RuntimeError, match="do_bench needs a CUDA device"):
        testing.do_bench(lambda: calls.append(1), device="cuda")
    assert calls == []
    assert testing.do_bench(lambda: calls.append(1), warmup=1, rep=2) >= 0.0
    assert len(calls) >= 8


def test_do_bench_rejects_an_unknown_device():
    with pytest.raises(ValueError, match="device must be one of cuda, cpu"):
        testing.do_bench(lambda: None, device="tpu")


def test_do_bench_on_the_cpu_times_by_the_wall_clock():
    calls = []

    def sleep_2ms():
        calls.append(1)
        time.sleep(0.002)

    low, median, high = testing.do_bench(sleep_2ms, warmup=4, rep=20, quantiles=[0.2, 0.5, 0.8], device="cpu")
    assert 2.0 <= low <= median <= high < 50.0
    # One call, five for the estimate, then about warmup / 2 ms and rep / 2 ms.
    assert 6 + 1 + 1 <= len(calls) <= 6 + 2 + 10
    times = testing.do_bench(sleep_2ms, warmup=1, rep=10, return_mode="all", device="cpu")
    assert 1 <= len(times) <= 5 and all(t >= 2.0 for t in times)


def test_do_bench_statistics():
    times = [4.0, 1.0, 3.0, 2.0]
    assert testing._summarize(times, None, "min") == 1.0
    assert testing._summarize(times, None, "max") == 4.0
    assert testing._summarize(times, None, "mean") == 2.5
    assert testing._summarize(times, None, "median") == 2.0  # the lower middle, as torch.median
    assert testing._summarize(times, None, "all") == times
    assert testing._summarize(times, [0.5], "mean") == 2.5
    assert testing._summarize(times, [0.0, 0.25, 1.0], "mean") == [1.0, 1.75, 4.0]
    expected = torch.quantile(torch.tensor(times), torch.tensor([0.2, 0.8])).tolist()
    assert testing._summarize(times, [0.2, 0.8], "mean") == pytest.approx(expected)
