"""Benchmarking helpers, with the contract of ``triton.testing.do_bench``.

``do_bench(fn, ..., device="cpu")`` times CPU-backend launches by the wall
clock instead of CUDA events (Triton has no such option: its kernels all run
on a GPU).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Iterable, Optional, Sequence, Union

__all__ = ["do_bench"]

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
             return_mode: str = "mean", device: str = "cuda") -> Union[float, list[float]]:
    """Measures the run time of ``fn()`` in milliseconds, on the GPU by default.

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
        device: "cuda" (CUDA events on the current stream) or "cpu" (the
            wall clock; torch is not needed).

    Raises:
        RuntimeError: for ``device="cuda"`` when torch has no CUDA device.
    """
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
