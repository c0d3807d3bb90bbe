"""``kiln.autotune`` and ``kiln.Config``, with Triton 3.x's contract.

``@kiln.autotune(configs, key)`` stacked above ``@kiln.jit`` (or above
``@kiln.heuristics``) returns an :class:`Autotuner`. On a launch it computes
the tuning key (the values of the arguments named in ``key``, the dtypes of
every array argument, and where the launch runs); the first launch with a
new key benchmarks every config (after ``prune_configs_by``), each run being
a real launch with the config's meta-parameters and ``num_warps`` /
``num_stages``, keeps the fastest in ``cache[key]`` and launches with it.
Later launches with that key launch the cached config directly.

Configs that fail to compile (:class:`kiln.CompilationError`) or do not fit
the device (:class:`kiln.OutOfResources`) are skipped with a warning and
timed as infinity; when every config fails, :class:`kiln.AutotunerError`
lists each config and why. ``KILN_PRINT_AUTOTUNING=1`` prints each config as
it is benchmarked, then the key, the chosen config and the timing table
(printed instead of the warnings).

With ``cache_results=True`` (or ``KILN_CACHE_AUTOTUNING=1``) the timings are
kept in ``<kiln cache dir>/autotune/<digest>.json``, keyed by the compiler
build, the kernel's source hash, the tuning key and the configs; an entry
that cannot be read or does not match is ignored, re-tuned and rewritten.

``kiln.heuristics`` (heuristics.py) is importable from here too, where
Triton has it (``triton.runtime.autotuner.Heuristics``).

Timing uses :func:`kiln.testing.do_bench`: CUDA events for GPU launches, the
wall clock for CPU-backend launches. See docs/design/autotuning.md.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from kiln.errors import AutotunerError, CompilationError, LaunchOptionError, OutOfResources
from kiln.runtime import autotune_ranks as _ranks
from kiln.runtime import autotune_cache as _timings_cache
from kiln.runtime.autotune_cache import median_ms as _median_ms
from kiln.runtime import launch_settings as _settings
from kiln.runtime.heuristics import Heuristics, heuristics
from kiln.runtime.jit import launch_compile_options
from kiln.runtime.kernel_wrapper import _KernelWrapper, _Unbound, _check_names, _jit_function, _named_arguments

__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics", "CACHE_ENV", "PRINT_ENV"]

PRINT_ENV = "KILN_PRINT_AUTOTUNING"
CACHE_ENV = "KILN_CACHE_AUTOTUNING"

# The quantiles Triton's autotuner asks do_bench for: the median decides.
_QUANTILES = (0.5, 0.2, 0.8)
_FAILED = [float("inf")] * len(_QUANTILES)
# Errors that make a config unusable for these arguments, not the launch wrong.
_SKIPPED_ERRORS = (CompilationError, OutOfResources)


class Config:
    """One point of the search space: meta-parameter values and launch options.

    Args:
        kwargs: constexpr arguments of the kernel, by name (``{"BLOCK": 128}``).
        num_warps: warps per program (a power of two from 1 to 32).
        num_stages: software pipelining stages.
        num_ctas: Triton's thread-block cluster size, a positive int; a
            launch with a config whose num_ctas is not 1 raises a ValueError
            naming the kernel (Kiln launches no clusters yet).
        maxnreg: the most registers per thread the kernel may use (NVIDIA
            GPUs; the CPU backend ignores it), or None to leave it to ptxas.
        pre_hook: called with the launch's arguments (a dict, meta-parameters
            included) before each launch with this config.
    """

    def __init__(self, kwargs: Mapping[str, Any], num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: Optional[int] = None, pre_hook: Optional[Callable[[dict], Any]] = None) -> None:
        if not isinstance(kwargs, Mapping):
            raise TypeError(f"kiln.Config: kwargs must be a dict of meta-parameters, got {type(kwargs).__name__}")
        if (not isinstance(num_warps, int) or isinstance(num_warps, bool) or not 1 <= num_warps <= 32
                or num_warps & (num_warps - 1)):
            raise LaunchOptionError(f"kiln.Config: num_warps must be a power of 2 between 1 and 32, got "
                                    f"{num_warps!r}")
        if not isinstance(num_stages, int) or isinstance(num_stages, bool) or num_stages < 1:
            raise LaunchOptionError(f"kiln.Config: num_stages must be a positive int, got {num_stages!r}")
        if not isinstance(num_ctas, int) or isinstance(num_ctas, bool) or num_ctas < 1:
            raise ValueError(f"kiln.Config: num_ctas must be a positive int, got {num_ctas!r}")
        _settings.check_maxnreg(maxnreg, "kiln.Config")
        if pre_hook is not None and not callable(pre_hook):
            raise TypeError(f"kiln.Config: pre_hook must be callable, got {type(pre_hook).__name__}")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """The meta-parameters with ``num_warps``, ``num_ctas``, ``num_stages``
        (and ``maxnreg`` when set), as Triton's ``Config.all_kwargs``."""
        options = {"num_warps": self.num_warps, "num_ctas": self.num_ctas, "num_stages": self.num_stages}
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return {**self.kwargs, **options}

    def launch_kwargs(self) -> dict[str, Any]:
        """What a launch with this config adds to the caller's keyword arguments:
        the meta-parameters, ``num_warps``, ``num_stages``, and ``num_ctas``
        and ``maxnreg`` when set (not 1 and not None)."""
        options = {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.num_ctas != 1:
            options["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return options

    def __str__(self) -> str:
        parts = [f"{name}: {value}" for name, value in self.kwargs.items()]
        parts.append(f"num_warps: {self.num_warps}")
        parts.append(f"num_stages: {self.num_stages}")
        if self.num_ctas != 1:
            parts.append(f"num_ctas: {self.num_ctas}")
        if self.maxnreg is not None:
            parts.append(f"maxnreg: {self.maxnreg}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Config({self})"

    def _identity(self) -> tuple:
        return (*self.all_kwargs().items(), self.pre_hook)

    def __hash__(self) -> int:
        return hash(self._identity())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return self._identity() == other._identity()


# -- helpers -------------------------------------------------------------------------------

_TUNED = _Unbound("set by the autotuner's config")


def _print_enabled() -> bool:
    return _settings.parse_flag(os.environ.get(PRINT_ENV), PRINT_ENV)


def _first_line(error: BaseException) -> str:
    if isinstance(error, CompilationError):
        return f"{type(error).__name__}: {error.summary()}"
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def _zero(value: Any) -> None:
    if hasattr(value, "zero_"):
        value.zero_()
    else:
        value[...] = 0


def _copy(value: Any) -> Any:
    return value.clone() if hasattr(value, "clone") else value.copy()


def _restore(value: Any, saved: Any) -> None:
    if hasattr(value, "copy_"):
        value.copy_(saved)
    else:
        value[...] = saved


# -- the autotuner -----------------------------------------------------------------------


class Autotuner(_KernelWrapper):
    """A kernel launched with the fastest of several :class:`Config`s per tuning key.

    Launch it as the kernel: ``kernel[grid](*args, **kwargs)``, where a
    callable ``grid`` receives the arguments with the config's
    meta-parameters merged in. Built by :func:`autotune`.

    Attributes:
        fn: the decorated object (a JITFunction or a Heuristics).
        base_fn: the kernel's Python function.
        kernel: the JITFunction at the bottom.
        configs: every config; keys: the names of the key parameters.
        cache: tuning key -> the chosen Config.
        best_config: the config of the latest launch.
        configs_timings: Config -> its timing (do_bench's [median, p20,
            p80] ms, [inf, inf, inf] when it failed) of the latest tuning.
        configs_errors: Config -> the error that skipped it, latest tuning.
        bench_time: seconds the latest tuning took.
    """

    def __init__(self, fn: Any, arg_names: Sequence[str], configs: Optional[Sequence[Config]], key: Sequence[str],
                 reset_to_zero: Optional[Iterable[str]] = None, restore_value: Optional[Iterable[str]] = None,
                 pre_hook: Optional[Callable[..., Any]] = None, post_hook: Optional[Callable[..., Any]] = None,
                 prune_configs_by: Optional[Mapping[str, Any]] = None, warmup: Optional[float] = None,
                 rep: Optional[float] = None, use_cuda_graph: bool = False,
                 do_bench: Optional[Callable[..., Any]] = None, cache_results: bool = False) -> None:
        self.fn = fn
        self.kernel = _jit_function(fn, "kiln.autotune")
        self.base_fn = self.kernel.fn
        self.arg_names = list(arg_names)
        self.__name__ = self.kernel.__name__
        self.__qualname__ = self.kernel.__qualname__
        self.__module__ = self.kernel.__module__
        self.__doc__ = self.kernel.__doc__
        name = f"kiln.autotune({self.__name__})"

        configs = list(configs) if configs else [Config({})]
        for config in configs:
            if not isinstance(config, Config):
                raise TypeError(f"{name}: configs must be kiln.Config objects, got {type(config).__name__}")
            _check_names(self.kernel, config.kwargs, f"{name}: config {{{config}}}")
        self.configs = configs
        self.keys = _check_names(self.kernel, key, f"{name}: key")
        self.reset_to_zero = _check_names(self.kernel, reset_to_zero or [], f"{name}: reset_to_zero")
        self.restore_value = _check_names(self.kernel, restore_value or [], f"{name}: restore_value")
        self._tuned_names = frozenset(name for config in configs for name in config.kwargs)

        # Triton's rule: a user pre_hook (post_hook) replaces the one that
        # implements reset_to_zero and restore_value.
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.pre_hook: Callable[..., Any] = pre_hook if pre_hook is not None else self._default_pre_hook
        self.post_hook: Callable[..., Any] = post_hook if post_hook is not None else self._default_post_hook
        self.restore_copies: dict[str, Any] = {}

        prune_configs_by = dict(prune_configs_by or {})
        unknown = set(prune_configs_by) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise ValueError(f"{name}: prune_configs_by takes perf_model, top_k and early_config_prune; got "
                             f"{', '.join(sorted(unknown))}")
        self.perf_model: Optional[Callable[..., float]] = prune_configs_by.get("perf_model")
        self.configs_top_k: Union[int, float] = prune_configs_by.get("top_k", 1.0)
        self.early_config_prune: Optional[Callable[..., list]] = prune_configs_by.get("early_config_prune")

        self.num_warmups = warmup
        self.num_reps = rep
        # GPU configs are then timed by replaying CUDA graphs
        # (kiln.testing.do_bench_cudagraph); CPU-backend ones by the clock.
        self.use_cuda_graph = use_cuda_graph
        self._do_bench = do_bench
        self.cache_results = cache_results

        self.cache: dict[tuple, Config] = {}
        self.configs_timings: dict[Config, Any] = {}
        self.configs_errors: dict[Config, BaseException] = {}
        # Why prune_configs left a config out, and what each benchmarked
        # config's kernel uses (registers, spills, shared memory), for the
        # KILN_PRINT_AUTOTUNING report.
        self.configs_pruned: dict[Config, str] = {}
        self.configs_resources: dict[Config, tuple[Optional[int], Optional[int], Optional[int]]] = {}
        self.best_config: Optional[Config] = None
        self.bench_time = 0.0
        self.nargs: Optional[dict[str, Any]] = None
        # The native launch path: the parameters the configs set are kind 2
        # (filled by the route), the runtime tuning-key ones kind 3 (keyed
        # by value).
        self._set_native_signature(lambda name, kind: 2 if name in self._tuned_names else
                                   3 if kind == 0 and name in self.keys else kind, _TUNED)

    # -- what the wrapped kernel offers ------------------------------------------------

    def __repr__(self) -> str:
        return f"Autotuner({self.__module__}:{self.__qualname__}, {len(self.configs)} configs)"

    # -- reset_to_zero and restore_value -------------------------------------------------

    def _default_pre_hook(self, kwargs: dict[str, Any], reset_only: bool = False) -> None:
        for name in self.reset_to_zero:
            _zero(kwargs[name])
        if not reset_only:
            self.restore_copies = {name: _copy(kwargs[name]) for name in self.restore_value}

    def _default_post_hook(self, kwargs: dict[str, Any], exception: Optional[BaseException]) -> None:
        for name in self.restore_value:
            if name in self.restore_copies:
                _restore(kwargs[name], self.restore_copies[name])
        self.restore_copies = {}

    # -- launching ---------------------------------------------------------------------------

    def _register_fast_route(self, native_key: tuple, bound: tuple) -> None:
        """Called by the native launch path after ``run`` launched ``bound``
        (the kernel's arguments, _TUNED for those the configs set): makes
        ``native_key`` lead to the kernel the chosen config launched, with
        the config's values and the config itself. Not for a config with a
        pre_hook (which must run before each launch) or other than one CTA,
        nor for keys routed by the current device: those go to ``run``."""
        names = self.kernel.arg_names
        named = {name: value for name, value in zip(names, bound) if value is not _TUNED}
        if len(self.configs) > 1:
            config = self.cache.get(self._tuning_key(named, {}))
            if config is None:
                return
        else:
            config = self.configs[0]
        full = tuple(config.kwargs.get(name, self.kernel._defaults.get(name, value)) if value is _TUNED else value
                     for name, value in zip(names, bound))
        if config.pre_hook is not None or config.num_ctas != 1 or any(value is _TUNED for value in full):
            self._routes[native_key] = False
            return
        found = self.kernel._native_route(full, config.num_warps, config.num_stages,
                                         launch_compile_options(config.maxnreg))
        if found is None:
            return
        native, device = found
        if native is False or device is not None:
            self._routes[native_key] = False
            return
        fills = tuple((position, full[position]) for position, value in enumerate(bound) if value is _TUNED)
        self._routes[native_key] = (*native, fills, config)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Launches with the tuned config for these arguments, tuning first on a new key.

        ``kwargs`` hold the kernel's other arguments and the launch options
        (``grid``, ``backend``, ...); a config's ``num_warps`` and
        ``num_stages`` replace the caller's. ``warmup=True`` compiles every
        (pruned) config instead, as :meth:`warmup`.

        Raises:
            ValueError: when the caller passes a meta-parameter a config sets.
            AutotunerError: when no config could run.
        """
        if _settings.launches_skipped():
            return None
        if kwargs.pop("warmup", False):
            return self.warmup(*args, **kwargs)
        named = _named_arguments(self.kernel, args, kwargs)
        given = set(self.kernel.arg_names[:len(args)]) | set(kwargs)
        conflicts = sorted(given & self._tuned_names)
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure that you don't "
                             f"re-define auto-tuned symbols.")
        self.nargs = named
        try:
            key: Optional[tuple] = None
            origin = None
            if len(self.configs) > 1:
                key = self._tuning_key(named, kwargs)
                if key not in self.cache:
                    origin = self._tune(key, args, kwargs, named)
                config = self.cache[key]
            else:
                config = self.configs[0]
            self.best_config = config
            if origin is not None and _print_enabled():
                self._print_result(key, config, origin)
            if config.pre_hook is not None:
                config.pre_hook({**named, **kwargs, **config.all_kwargs()})
            return self.fn.run(*args, **{**kwargs, **config.launch_kwargs()})
        finally:
            self.nargs = None

    def warmup(self, *args: Any, **kwargs: Any) -> list[Any]:
        """Compiles every (pruned) config for these arguments without launching;
        returns the compiled kernels."""
        named = _named_arguments(self.kernel, args, kwargs)
        self.nargs = named
        try:
            return [self.fn.warmup(*args, **{**kwargs, **config.launch_kwargs()})
                    for config in self.prune_configs(kwargs, named)]
        finally:
            self.nargs = None

    def _tuning_key(self, named: dict[str, Any], kwargs: Mapping[str, Any]) -> tuple:
        """The key arguments' values, every array argument's dtype (Triton's
        key), then where the launch runs (a forced backend, else the arrays'
        devices), so CPU and GPU launches are tuned separately."""
        key: list[Any] = []
        for name in self.keys:
            value = named.get(name)
            if hasattr(value, "dtype") and hasattr(value, "shape"):
                value = (tuple(value.shape), str(value.dtype))  # an array: its shape, not its identity
            key.append(value)
        devices = []
        for name in self.kernel.arg_names:
            value = named.get(name)
            if hasattr(value, "dtype"):
                key.append(str(value.dtype))
                device = _settings.array_device(value)
                if device is not None and device not in devices:
                    devices.append(device)
        from_env = _settings.environment()[0]
        if isinstance(from_env, bytes):
            from_env = from_env.decode(errors="replace")
        forced = kwargs.get("backend") or self.kernel.backend or from_env
        key.append(f"backend={forced}" if forced else ",".join(sorted(devices)))
        return tuple(key)

    # -- pruning -------------------------------------------------------------------------------

    def prune_configs(self, kwargs: dict[str, Any], named: Optional[dict[str, Any]] = None) -> list[Config]:
        """The configs worth benchmarking: ``early_config_prune``, then the
        ``top_k`` best by ``perf_model``.

        Raises:
            AutotunerError: when ``early_config_prune`` leaves no config.
        """
        named = named if named is not None else (self.nargs or {})
        pruned = list(self.configs)
        self.configs_pruned = {}
        if self.early_config_prune is not None:
            pruned = list(self.early_config_prune(self.configs, named, **kwargs))
            if not pruned:
                raise AutotunerError(f"kernel {self.__name__}: prune_configs_by's early_config_prune left no "
                                     f"config to run")
            kept = set(map(id, pruned))
            self.configs_pruned = {config: "left out by early_config_prune" for config in self.configs
                                   if id(config) not in kept}
        if self.perf_model is not None:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(self.configs) * top_k)
            elif isinstance(top_k, bool) or not isinstance(top_k, int):
                raise TypeError(f"kernel {self.__name__}: prune_configs_by's top_k must be an int, or a float "
                                f"<= 1.0 (a fraction of the configs), got {top_k!r}")
            top_k = max(top_k, 1)
            if len(pruned) > top_k:
                estimates = {config: self.perf_model(**{**named, **kwargs, **config.all_kwargs()})
                             for config in pruned}
                ranked = sorted(pruned, key=lambda config: estimates[config])
                for place, config in enumerate(ranked[top_k:], start=top_k + 1):
                    self.configs_pruned[config] = (f"perf_model estimate {estimates[config]:.4g} ranks {place} of "
                                                   f"{len(ranked)}, outside top_k={top_k}")
                pruned = ranked[:top_k]
        return pruned

    # -- tuning --------------------------------------------------------------------------------

    def _tune(self, key: tuple, args: tuple, kwargs: dict[str, Any], named: dict[str, Any]) -> str:
        """Fills ``cache[key]``; returns where the choice came from:
        "benchmark", "disk" (the timings cache) or "rank 0" (another rank's
        choice, see :mod:`kiln.runtime.autotune_ranks`)."""
        configs = self.prune_configs(kwargs, named)
        group = _ranks.current_group()
        entry = _ranks.entry_name(self.kernel.cache_key, key, configs) if group is not None else None
        if group is not None and group.rank != 0:
            choice = group.receive(entry, self.__name__)
            if choice == _ranks.NO_CONFIG:
                raise AutotunerError(f"kernel {self.__name__}: no config could run for key {key} on rank 0 "
                                     f"(its error lists each config)")
            chosen = next((config for config in configs if str(config) == choice), None)
            if chosen is not None:
                self.cache[key] = chosen
                self.configs_timings, self.configs_errors, self.configs_resources = {}, {}, {}
                self.bench_time = 0.0
                return "rank 0"
            if choice is not None:
                warnings.warn(f"kiln.autotune: kernel {self.__name__}: rank 0 chose {{{choice}}}, which is not "
                              f"among this rank's configs; tuning this key on this rank",
                              stacklevel=_settings.user_stacklevel())
        try:
            from_disk = self._tune_here(key, configs, args, kwargs, named)
        except AutotunerError:
            if group is not None and group.rank == 0:
                group.publish(entry, _ranks.NO_CONFIG)
            raise
        if group is not None and group.rank == 0:
            group.publish(entry, str(self.cache[key]))
        return "disk" if from_disk else "benchmark"

    def _tune_here(self, key: tuple, configs: list[Config], args: tuple, kwargs: dict[str, Any],
                   named: dict[str, Any]) -> bool:
        """Times ``configs`` in this process (or reads their timings from
        disk) and fills ``cache[key]``; True when the timings came from disk."""
        use_disk = ((self.cache_results or _settings.parse_flag(os.environ.get(CACHE_ENV), CACHE_ENV))
                    and not any(config.pre_hook is not None for config in configs))
        path = _timings_cache.path(self.__name__, self.kernel.cache_key, key, configs) if use_disk else None
        timings = _timings_cache.read(path, configs) if path is not None else None
        from_disk = timings is not None
        start = time.perf_counter()
        if timings is None:
            timings = {}
            errors: dict[Config, BaseException] = {}
            self.configs_resources = {}
            for config in configs:
                try:
                    timings[config] = self._bench(config, args, kwargs, named)
                except _SKIPPED_ERRORS as error:
                    timings[config] = list(_FAILED)
                    errors[config] = error
                    self._note_skipped(config, error)
            self.configs_errors = errors
            if all(_median_ms(timing) == float("inf") for timing in timings.values()):
                self.configs_timings = timings
                listed = "\n".join(f"  {config}: {_first_line(errors[config]) if config in errors else 'no time'}"
                                   for config in configs)
                raise AutotunerError(f"kernel {self.__name__}: no config could run for key {key}:\n{listed}")
            if path is not None:
                _timings_cache.write(path, configs, timings)
        else:
            self.configs_errors = {}
        self.bench_time = time.perf_counter() - start
        self.configs_timings = timings
        best = min(configs, key=lambda config: _median_ms(timings[config]))
        self.cache[key] = best
        if not from_disk:
            # The benchmark runs left their traces in reset_to_zero's arrays.
            self.pre_hook({**named, **kwargs, **best.all_kwargs()}, reset_only=True)
        return from_disk

    def _bench(self, config: Config, args: tuple, kwargs: dict[str, Any], named: dict[str, Any]) -> Any:
        """Times launches with ``config``: do_bench's [median, p20, p80] in ms.

        Compiles first (after the config's own pre_hook), so a config that
        cannot compile raises before the autotuner's reset and restore
        hooks run.
        """
        if _print_enabled():
            print(f"Autotuning kernel {self.__name__} with config {config}")
        current = {**kwargs, **config.launch_kwargs()}
        full_nargs = {**named, **kwargs, **config.all_kwargs()}
        # The config's own hook may change what the kernel is compiled for
        # (Triton's tutorial 06 sets its tensor descriptors' block shapes
        # there), so it runs before the compile, as in Triton.
        if config.pre_hook is not None:
            config.pre_hook(full_nargs)
        compiled = self.fn.run(*args, **{**current, "warmup": True})
        metadata = getattr(compiled, "metadata", None) or {}
        on_gpu = metadata.get("backend") not in (None, _settings.CPU)
        self.configs_resources[config] = (getattr(compiled, "n_regs", None), getattr(compiled, "n_spills", None),
                                          metadata.get("shared") if on_gpu else None)

        def kernel_call() -> None:
            if config.pre_hook is not None:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)
            except Exception as error:
                self.post_hook(full_nargs, error)
                raise
            self.post_hook(full_nargs, None)

        if self._do_bench is not None:
            return self._do_bench(kernel_call, quantiles=_QUANTILES)
        from kiln.testing import do_bench, do_bench_cudagraph

        device = "cpu" if metadata.get("backend") == _settings.CPU else "cuda"
        if self.use_cuda_graph and device == "cuda":
            return do_bench_cudagraph(kernel_call, rep=self.num_reps if self.num_reps is not None else 100,
                                      quantiles=_QUANTILES)
        return do_bench(kernel_call, warmup=self.num_warmups if self.num_warmups is not None else 25,
                        rep=self.num_reps if self.num_reps is not None else 100, quantiles=_QUANTILES, device=device)

    def _note_skipped(self, config: Config, error: BaseException) -> None:
        message = f"kernel {self.__name__}: config {{{config}}} skipped: {_first_line(error)}"
        if _print_enabled():
            print(f"Autotuning {message}")
        else:
            warnings.warn(f"kiln.autotune: {message}", stacklevel=_settings.user_stacklevel())

    def _print_result(self, key: Optional[tuple], config: Config, origin: str) -> None:
        """The KILN_PRINT_AUTOTUNING report: the key, the choice, then a
        table of every config with its times and what its kernel uses, and
        why the pruned ones were not run."""
        how = {"disk": "read from the autotuning disk cache", "rank 0": "chosen by rank 0 (not benchmarked here)",
               }.get(origin, f"finished after {self.bench_time:.2f}s")
        lines = [f"Kiln autotuning for function {self.__name__},", f"with key as {key},", f"{how},",
                 f"best config selected: {config};"]
        if self.configs_timings:
            lines.append(_report_table(self.configs_timings, self.configs_errors, self.configs_resources, config))
        if self.configs_pruned:
            lines.append("pruned before benchmarking:")
            lines.extend(f"   {candidate}: {why}" for candidate, why in self.configs_pruned.items())
        print("\n".join(lines))


def _report_table(timings: Mapping[Config, Any], errors: Mapping[Config, BaseException],
                  resources: Mapping[Config, tuple], best: Config) -> str:
    """The report's table: a row per benchmarked config (``*`` marks the
    choice) with do_bench's median, p20 and p80 in ms, and the kernel's
    registers per thread, spilled bytes and shared memory in bytes ("-"
    where the backend does not say, as on the CPU); a config that could not
    run says why instead."""
    def cell(value: Any) -> str:
        return "-" if value is None else str(value)

    width = max(len(str(candidate)) for candidate in timings)
    lines = [f"   {'config':<{width}}  {'median':>8}  {'p20':>8}  {'p80':>8}  {'regs':>5}  {'spills':>6}  "
             f"{'shared':>7}  (ms; shared memory in bytes)"]
    for candidate, timing in timings.items():
        head = f" {'*' if candidate is best else ' '} {str(candidate):<{width}}"
        if candidate in errors:
            lines.append(f"{head}  failed: {_first_line(errors[candidate])}")
            continue
        values = list(timing) if isinstance(timing, (list, tuple)) else [timing]
        values += [None] * (len(_QUANTILES) - len(values))
        times = "  ".join("-".rjust(8) if value is None else f"{float(value):8.4f}" for value in values)
        regs, spills, shared = resources.get(candidate, (None, None, None))
        lines.append(f"{head}  {times}  {cell(regs):>5}  {cell(spills):>6}  {cell(shared):>7}")
    return "\n".join(lines)


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: Optional[Mapping[str, Any]] = None,
             reset_to_zero: Optional[Iterable[str]] = None, restore_value: Optional[Iterable[str]] = None,
             pre_hook: Optional[Callable[..., Any]] = None, post_hook: Optional[Callable[..., Any]] = None,
             warmup: Optional[float] = None, rep: Optional[float] = None, use_cuda_graph: bool = False,
             do_bench: Optional[Callable[..., Any]] = None,
             cache_results: bool = False) -> Callable[[Any], Autotuner]:
    """Decorates a ``@kiln.jit`` kernel (or a ``@kiln.heuristics`` one) to
    pick the fastest config per key, as ``triton.autotune``::

        @kiln.autotune(configs=[kiln.Config({"BLOCK": 256}), kiln.Config({"BLOCK": 1024}, num_warps=8)],
                       key=["n"])
        @kiln.jit
        def kernel(x_ptr, n, BLOCK: kl.constexpr): ...

        kernel[lambda meta: (kiln.cdiv(n, meta["BLOCK"]),)](x, n)

    Args:
        configs: the configs to choose from (none: one default Config).
        key: parameter names whose values start a new tuning when they change
            (with the dtypes of the array arguments and the device).
        prune_configs_by: ``{"early_config_prune": fn(configs, named_args,
            **kwargs) -> configs, "perf_model": fn(**args, **meta) -> estimate,
            "top_k": int, or float fraction of the configs}``.
        reset_to_zero: array arguments zeroed before each benchmark run and
            once after tuning.
        restore_value: array arguments saved before each benchmark run and
            restored after it.
        pre_hook: ``fn(kwargs, reset_only=False)`` before each benchmark run
            (replaces the reset_to_zero / restore_value hook).
        post_hook: ``fn(kwargs, exception)`` after each benchmark run
            (replaces the restore_value hook).
        warmup, rep: do_bench's budgets in ms (default 25 and 100).
        use_cuda_graph: not supported (a warning; do_bench is used).
        do_bench: ``fn(kernel_call, quantiles) -> ms`` replacing
            :func:`kiln.testing.do_bench`.
        cache_results: keep the timings on disk (also ``KILN_CACHE_AUTOTUNING=1``).
    """

    def decorator(fn: Any) -> Autotuner:
        kernel = _jit_function(fn, "kiln.autotune")
        return Autotuner(fn, kernel.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

    return decorator
