"""kiln.testing's report and comparison helpers, as triton.testing's:
perf_report/Benchmark tables and assert_close (do_bench: test_runtime.py)."""

import importlib.util

import numpy as np
import pytest
import torch

from kiln import testing

HAVE_PANDAS = importlib.util.find_spec("pandas") is not None
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def make_report(calls):
    @testing.perf_report([
        testing.Benchmark(x_names=["M", "N"], x_vals=[128, (256, 512)], line_arg="provider",
                          line_vals=["kiln", "torch"], line_names=["Kiln", "Torch"], plot_name="speed",
                          args={"dtype": "fp16"}, ylabel="GB/s"),
        testing.Benchmark(x_names=["size"], x_vals=[3], line_arg="provider", line_vals=["kiln"],
                          line_names=["Kiln"], plot_name="second", args={}),
    ])
    def speed(provider, dtype="none", scale=1, **sizes):
        calls.append((provider, dtype, scale, sizes))
        value = sum(sizes.values()) * scale
        return (value, value - 1, value + 1) if provider == "kiln" else value / 2

    return speed


def test_perf_report_calls_every_cell_and_prints(capsys, tmp_path):
    calls = []
    report = make_report(calls)
    assert isinstance(report, testing.Mark)
    report.run(print_data=True, save_path=str(tmp_path), scale=2)
    assert calls == [
        ("kiln", "fp16", 2, {"M": 128, "N": 128}), ("torch", "fp16", 2, {"M": 128, "N": 128}),
        ("kiln", "fp16", 2, {"M": 256, "N": 512}), ("torch", "fp16", 2, {"M": 256, "N": 512}),
        ("kiln", "none", 2, {"size": 3}),
    ]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "speed:"
    assert printed[1].split() == ["M", "N", "Kiln", "Torch"]
    assert printed[2].split() == ["0", "128", "128", "512", "256.000000"]
    assert printed[3].split() == ["1", "256", "512", "1536", "768.000000"]
    assert printed[4] == "second:"
    assert (tmp_path / "speed.csv").read_text().splitlines() == ["M,N,Kiln,Torch", "128,128,512,256.0",
                                                                 "256,512,1536,768.0"]
    assert (tmp_path / "second.png").exists() == HAVE_MATPLOTLIB


def test_perf_report_data_frames():
    report = make_report([])
    if not HAVE_PANDAS:
        with pytest.raises(ImportError, match=r"run\(return_df=True\) needs pandas"):
            report.run(return_df=True)
        return
    speed, second = report.run(return_df=True)
    assert list(speed.columns) == ["M", "N", "Kiln", "Torch", "Kiln-min", "Torch-min", "Kiln-max", "Torch-max"]
    assert speed["Kiln-max"].tolist() == [257, 769]
    assert second["Kiln"].tolist() == [3]


@pytest.mark.skipif(HAVE_MATPLOTLIB, reason="matplotlib is installed: plots are shown")
def test_show_plots_without_matplotlib_says_so():
    with pytest.raises(ImportError, match=r"run\(show_plots=True\) needs matplotlib"):
        make_report([]).run(show_plots=True)


def test_perf_report_bad_tables():
    def fn(**kwargs):
        return 1.0

    lines = testing.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1, 2], line_names=["one"],
                              plot_name="lines", args={})
    with pytest.raises(ValueError, match="benchmark 'lines': 2 line_vals but 1 line_names"):
        testing.perf_report(lines)(fn).run()
    xs = testing.Benchmark(x_names=["m", "n"], x_vals=[(1, 2, 3)], line_arg="p", line_vals=[1], line_names=["one"],
                           plot_name="xs", args={})
    with pytest.raises(ValueError, match=r"x value \(1, 2, 3\) does not give one value for each of \['m', 'n'\]"):
        testing.perf_report(xs)(fn).run()


def test_assert_close():
    x = torch.randn(100, generator=torch.Generator().manual_seed(1))
    testing.assert_close(x, x + 0.005)  # atol 1e-2 by default
    testing.assert_close(x.to(torch.bfloat16), x.to(torch.bfloat16))
    testing.assert_close(np.array([1.0, float("nan")]), np.array([1.0, float("nan")]))
    testing.assert_close(x, x * 1.1, atol=0, rtol=lambda dtype: 0.2 if dtype == torch.float32 else 0)
    with pytest.raises(AssertionError):
        testing.assert_close(x, x + 0.05)
    with pytest.raises(AssertionError, match=r"^row 3: 1\.0 is not close to 1\.5 \(atol=0\.01, rtol=0\.0\)$"):
        testing.assert_close(1.0, 1.5, err_msg="row 3:")


def test_reachable_as_in_triton():
    """`import kiln` reaches what `import triton` does: kiln.testing,
    kiln.runtime.driver.active, kiln.cdiv and kiln.next_power_of_2."""
    import kiln

    assert kiln.testing is testing
    assert kiln.runtime.driver.active.get_current_target().backend in ("cuda", "cpu")
    assert [kiln.next_power_of_2(n) for n in (-3, 0, 1, 2, 3, 1000, 1024, 1025)] == [0, 0, 1, 2, 4, 1024, 1024, 2048]
    assert kiln.cdiv(1025, 1024) == 2
