"""Testing and benchmarking helpers, as ``triton.testing``'s.

``do_bench`` times a function; ``do_bench(fn, ..., device="cpu")`` times
CPU-backend launches by the wall clock instead of CUDA events (Triton has no
such option: its kernels all run on a GPU). ``assert_close`` compares
results. ``Benchmark`` and ``perf_report`` make the tables (and, with
matplotlib, the plots) of Triton's tutorials; the tables print without
pandas, which only ``run(return_df=True)`` needs.
"""

from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence, Union

__all__ = ["Benchmark", "Mark", "assert_close", "do_bench", "do_bench_cudagraph", "perf_report"]

_RETURN_MODES = ("min", "max", "mean", "median", "all")
_DEVICES = ("cuda", "cpu")
# Zeroing a buffer larger than any GPU's L2 between repetitions makes every
# repetition start from a cold cache, as real workloads would.
_L2_FLUSH_BYTES = 256 * 1024 * 1024


def _validate(fn: Any, warmup: Any, rep: Any, grad_to_none: Any, quantiles: Any, return_mode: Any,
              device: Any = "cuda") -> None:
    if device not in _DEVICES:
        raise ValueError(f"do_bench: device must be one of {', '.join(_DEVICES)}; got {device!r}")
    if not callable(fn):
        raise TypeError(f"do_bench: fn must be callable, got {type(fn).__name__}")
    for name, value in (("warmup", warmup), ("rep", rep)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
            raise ValueError(f"do_bench: {name} must be a positive number of milliseconds, got {value!r}")
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"do_bench: return_mode must be one of {', '.join(_RETURN_MODES)}; got {return_mode!r}")
    if quantiles is not None:
        if not isinstance(quantiles, (list, tuple)) or not quantiles:
            raise ValueError(f"do_bench: quantiles must be a non-empty list of floats in [0, 1], got {quantiles!r}")
        for q in quantiles:
            if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1:
                raise ValueError(f"do_bench: each quantile must be a float in [0, 1], got {q!r}")
    if grad_to_none is not None:
        try:
            iter(grad_to_none)
        except TypeError:
            raise TypeError(f"do_bench: grad_to_none must be an iterable of tensors, got "
                            f"{type(grad_to_none).__name__}") from None


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (torch.quantile's default)."""
    position = q * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def _summarize(times: Sequence[float], quantiles: Optional[Sequence[float]],
               return_mode: str) -> Union[float, list[float]]:
    """Reduces per-repetition times (ms) the way triton.testing.do_bench does."""
    if not times:
        raise ValueError("do_bench: no timings were recorded")
    ordered = sorted(times)
    if quantiles is not None:
        values = [_quantile(ordered, q) for q in quantiles]
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return list(times)
    if return_mode == "min":
        return ordered[0]
    if return_mode == "max":
        return ordered[-1]
    if return_mode == "mean":
        return sum(times) / len(times)
    # torch.median (and so Triton) returns the lower of the two middle values.
    return ordered[(len(ordered) - 1) // 2]


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100,
             grad_to_none: Optional[Iterable[Any]] = None, quantiles: Optional[Sequence[float]] = None,
             return_mode: str = "mean", device: Optional[str] = None) -> Union[float, list[float]]:
    """Measures the run time of ``fn()`` in milliseconds, on the device of the
    active driver (``kiln.runtime.driver.active``, as Triton's ``do_bench``):
    the GPU where there is one, else the CPU backend's host.

    Runs ``fn`` a few times to estimate its duration, then warms up for about
    ``warmup`` ms and times about ``rep`` ms worth of repetitions, each with a
    pair of CUDA events and each after flushing the L2 cache (zeroing a 256 MB
    buffer). With ``device="cpu"`` each repetition is timed by the wall clock
    instead (``time.perf_counter``) and no cache is flushed: CPU-backend
    launches return only when their work is done.

    Args:
        fn: the function to time; it launches work on the current stream.
        warmup: warm-up budget in milliseconds.
        rep: measurement budget in milliseconds.
        grad_to_none: tensors whose ``.grad`` is reset to None before each
            repetition (so backward passes do not accumulate).
        quantiles: if given, return these quantiles of the times instead
            (a float for one quantile, else a list).
        return_mode: "min", "max", "mean", "median" or "all" (every time).
        device: "cuda" (CUDA events on the current stream), "cpu" (the
            wall clock; torch is not needed), or None (the default): the
            active driver's, "cuda" if it uses a GPU, else "cpu".

    Raises:
        RuntimeError: for ``device="cuda"`` when torch has no CUDA device.
    """
    if device is None:
        from kiln.runtime import driver

        device = driver.active.get_current_target().backend
    _validate(fn, warmup, rep, grad_to_none, quantiles, return_mode, device)
    if device == "cpu":
        return _do_bench_cpu(fn, warmup, rep, grad_to_none, quantiles, return_mode)
    try:
        import torch
    except ImportError as error:
        raise RuntimeError(f"do_bench needs torch with CUDA ({error})") from None
    if not torch.cuda.is_available():
        raise RuntimeError("do_bench needs a CUDA device, and torch sees none")

    fn()
    torch.cuda.synchronize()
    flush = torch.empty(_L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")

    # Estimate one call's time (with the flush, as it will be measured).
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    grads = list(grad_to_none) if grad_to_none is not None else []
    for i in range(n_repeat):
        for tensor in grads:
            tensor.grad = None
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return _summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn: Callable[[], Any], rep: float = 20, grad_to_none: Optional[Iterable[Any]] = None,
                       quantiles: Optional[Sequence[float]] = None,
                       return_mode: str = "mean") -> Union[float, list[float]]:
    """Measures the run time of ``fn()`` in milliseconds by replaying it from
    a CUDA graph, as Triton's ``do_bench_cudagraph``: the host's launch cost
    drops out, leaving the GPU time of the work ``fn`` launches.

    ``fn`` runs once outside the capture (so that its kernels are compiled
    and loaded: a compile cannot happen inside a capture), then a graph of
    one call estimates its time, then a graph of about ``rep`` ms worth of
    calls is replayed ten times, each replay timed by a pair of CUDA events
    and divided by its number of calls. Everything runs on a side stream,
    as graph capture requires.

    Args:
        fn: the function to time; it launches work on the current stream
            and must be capturable (no host synchronization, no allocation
            that a replay would not repeat).
        rep: measurement budget in milliseconds (per replay).
        grad_to_none: tensors whose ``.grad`` is reset to None before each
            call inside the graph.
        quantiles, return_mode: as :func:`do_bench`.

    Raises:
        RuntimeError: when torch has no CUDA device.
    """
    _validate(fn, 1, rep, grad_to_none, quantiles, return_mode)
    try:
        import torch
    except ImportError as error:
        raise RuntimeError(f"do_bench_cudagraph needs torch with CUDA ({error})") from None
    if not torch.cuda.is_available():
        raise RuntimeError("do_bench_cudagraph needs a CUDA device, and torch sees none")
    grads = list(grad_to_none) if grad_to_none is not None else []

    def call() -> None:
        for tensor in grads:
            tensor.grad = None
        fn()

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        call()  # compiles and loads outside the capture
        stream.synchronize()

        def capture(calls: int) -> Any:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                for _ in range(calls):
                    call()
            stream.synchronize()
            return graph

        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        single = capture(1)
        single.replay()  # the first replay uploads the graph
        start.record(stream)
        for _ in range(5):
            single.replay()
        end.record(stream)
        stream.synchronize()
        estimate_ms = max(start.elapsed_time(end) / 5, 1e-6)
        calls = max(1, int(rep / estimate_ms))
        graph = capture(calls)
        graph.replay()
        stream.synchronize()
        times = []
        for _ in range(10):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            graph.replay()
            end.record(stream)
            stream.synchronize()
            times.append(start.elapsed_time(end) / calls)
    return _summarize(times, quantiles, return_mode)


def _do_bench_cpu(fn: Callable[[], Any], warmup: float, rep: float, grad_to_none: Optional[Iterable[Any]],
                  quantiles: Optional[Sequence[float]], return_mode: str) -> Union[float, list[float]]:
    """``do_bench`` by the wall clock, for work that is done when ``fn`` returns."""
    clock = time.perf_counter
    fn()
    start = clock()
    for _ in range(5):
        fn()
    estimate_ms = max((clock() - start) * 1000 / 5, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    grads = list(grad_to_none) if grad_to_none is not None else []
    times = []
    for _ in range(n_repeat):
        for tensor in grads:
            tensor.grad = None
        start = clock()
        fn()
        times.append((clock() - start) * 1000)
    return _summarize(times, quantiles, return_mode)


# -- comparing results -------------------------------------------------------------


def assert_close(x: Any, y: Any, atol: Any = None, rtol: Any = None, err_msg: str = "") -> None:
    """Raises AssertionError unless ``|x - y| <= atol + rtol * |y|`` everywhere,
    as ``triton.testing.assert_close``: ``atol`` defaults to 1e-2 and
    ``rtol`` to 0, either may be a function of x's dtype, NaNs in the same
    places compare equal, and ``err_msg`` starts the message of a scalar
    mismatch. ``x`` and ``y`` are tensors, arrays or Python numbers.
    """
    import numpy as np

    def as_array(value: Any) -> Any:
        if hasattr(value, "detach"):  # a torch tensor: numpy has no bfloat16
            value = value.detach()
            if str(value.dtype) == "torch.bfloat16":
                value = value.float()
            return value.cpu().numpy()
        return np.asarray(value)

    dtype = getattr(x, "dtype", None)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    atol = atol(dtype) if callable(atol) else atol
    rtol = rtol(dtype) if callable(rtol) else rtol
    x, y = as_array(x), as_array(y)
    if x.size > 1 or y.size > 1:
        np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {x} is not close to {y} (atol={atol}, rtol={rtol})".lstrip())


# -- benchmark tables ----------------------------------------------------------------


@dataclass
class Benchmark:
    """One table of measurements, as ``triton.testing.Benchmark``.

    Each value of ``x_vals`` (one value for every name in ``x_names``, or a
    tuple of one per name) makes a row; each value of ``line_vals``, passed
    as the argument ``line_arg``, makes a column named by ``line_names``.
    ``args`` are passed to every call. ``plot_name`` names the table, and
    the files ``save_path`` gets; the labels, log scales and ``styles``
    (colour, line style) pairs are the plot's.
    """

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any]
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: Optional[list[tuple[str, str]]] = None


class Mark:
    """A function decorated by :func:`perf_report`: ``run`` makes its tables."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Union[Benchmark, list[Benchmark]]) -> None:
        self.fn = fn
        self.benchmarks = benchmarks

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs: Any) -> Any:
        """Calls the function for every cell of every benchmark's table.

        The function returns a number, or a (middle, low, high) triple whose
        bounds become the columns ``<line name>-min`` and ``-max``. Extra
        ``kwargs`` reach every call.

        Args:
            show_plots: show each table as a plot (needs matplotlib).
            print_data: print each table, under its plot name.
            save_path: a directory for ``<plot_name>.csv`` (and, with
                matplotlib, ``<plot_name>.png``).
            return_df: return each table as a pandas DataFrame (needs pandas):
                one, or a list when the report has several benchmarks.
        """
        benchmarks = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        tables = [self._run(bench, show_plots, print_data, save_path, kwargs) for bench in benchmarks]
        if not return_df:
            return None
        try:
            import pandas
        except ImportError:
            raise ImportError("perf_report: run(return_df=True) needs pandas, which is not installed") from None
        frames = [pandas.DataFrame(rows, columns=columns) for columns, rows in tables]
        return frames if isinstance(self.benchmarks, list) else frames[0]

    def _run(self, bench: Benchmark, show_plots: bool, print_data: bool, save_path: str,
             kwargs: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
        """One benchmark's (columns, rows), printed, plotted and saved as asked."""
        names = list(bench.x_names)
        lines = list(bench.line_names)
        if len(lines) != len(bench.line_vals):
            raise ValueError(f"benchmark {bench.plot_name!r}: {len(bench.line_vals)} line_vals but "
                             f"{len(lines)} line_names")
        columns = names + lines + [f"{line}-min" for line in lines] + [f"{line}-max" for line in lines]
        rows = []
        for x in bench.x_vals:
            values = list(x) if isinstance(x, (list, tuple)) else [x] * len(names)
            if len(values) != len(names):
                raise ValueError(f"benchmark {bench.plot_name!r}: x value {x!r} does not give one value for "
                                 f"each of {names}")
            middles, lows, highs = [], [], []
            for line_value in bench.line_vals:
                result = self.fn(**dict(zip(names, values)), **{bench.line_arg: line_value}, **bench.args, **kwargs)
                if isinstance(result, (list, tuple)):
                    middle, low, high = result
                else:
                    middle, low, high = result, None, None
                middles.append(middle)
                lows.append(low)
                highs.append(high)
            rows.append(values + middles + lows + highs)
        shown = len(names) + len(lines)
        if print_data:
            print(bench.plot_name + ":")
            print(_text_table(columns[:shown], [row[:shown] for row in rows]))
        if save_path:
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(columns[:shown])
                writer.writerows(row[:shown] for row in rows)
        if show_plots or save_path:
            self._plot(bench, rows, show_plots, save_path)
        return columns, rows

    @staticmethod
    def _plot(bench: Benchmark, rows: list[list[Any]], show: bool, save_path: str) -> None:
        """Each line against the first x name, with its low-high band."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            if show:
                raise ImportError("perf_report: run(show_plots=True) needs matplotlib, which is not "
                                  "installed") from None
            return  # save_path still has the table
        figure, axes = plt.subplots()
        count = len(bench.x_names)
        lines = len(bench.line_names)
        xs = [row[0] for row in rows]
        for i, name in enumerate(bench.line_names):
            style = bench.styles[i] if bench.styles else (None, None)
            axes.plot(xs, [row[count + i] for row in rows], label=name, color=style[0], linestyle=style[1])
            lows = [row[count + lines + i] for row in rows]
            highs = [row[count + 2 * lines + i] for row in rows]
            if None not in lows and None not in highs:
                axes.fill_between(xs, lows, highs, alpha=0.15, color=style[0])
        axes.legend()
        axes.set_xlabel(bench.xlabel or bench.x_names[0])
        axes.set_ylabel(bench.ylabel)
        if bench.x_log:
            axes.set_xscale("log")
        if bench.y_log:
            axes.set_yscale("log")
        if show:
            plt.show()
        if save_path:
            figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        plt.close(figure)


def _text_table(columns: list[str], rows: list[list[Any]]) -> str:
    """Right-aligned columns under their names, with a row index, as pandas prints."""
    cells = [[""] + columns] + [[str(i)] + [_cell(value) for value in row] for i, row in enumerate(rows)]
    widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in cells)


def _cell(value: Any) -> str:
    return f"{value:.6f}" if isinstance(value, float) else str(value)


def perf_report(benchmarks: Union[Benchmark, list[Benchmark]]) -> Callable[[Callable[..., Any]], Mark]:
    """Decorates a benchmark function, as ``triton.testing.perf_report``:
    ``fn.run(print_data=True)`` then measures and prints its tables."""

    def decorate(fn: Callable[..., Any]) -> Mark:
        return Mark(fn, benchmarks)

    return decorate
