"""``kl.map_elementwise``: a scalar ``@kiln.jit`` function applied to every
element of blocks, as Triton's ``tl.map_elementwise``.

Kiln compiles the scalar function once, on whole blocks (each operation of
its body is element-wise on blocks), in the frontend's element-wise mode:
an ``if`` whose condition depends on the elements runs both branches and
picks each element's result from the branch its condition chose (so each
element gets the value the scalar function gives it), and the branches'
returns are merged the same way. See ``CodeGenerator.call_elementwise``.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import CompilationError
from kiln.language import semantic, shapes
from kiln.language.core import _unwrap, builtin, tensor

__all__ = ["map_elementwise"]

Builder = Any
Generator = Any


def _lanes(x: tensor, levels: int, b: Builder, generator: Generator) -> list[tensor]:
    """The 2**levels lanes of `x`, whose last `levels` axes have size 2:
    lane j holds the elements whose index along those axes spells j in
    binary (the last axis is the lowest bit)."""
    if levels == 0:
        return [x]
    low, high = shapes.split_impl(x, b, generator)
    evens, odds = _lanes(low, levels - 1, b, generator), _lanes(high, levels - 1, b, generator)
    return [lane for pair in zip(evens, odds) for lane in pair]


def _unlanes(lanes: list[tensor], levels: int, b: Builder) -> tensor:
    """The inverse of :func:`_lanes`."""
    if levels == 0:
        return lanes[0]
    return shapes.join_impl(_unlanes(lanes[0::2], levels - 1, b), _unlanes(lanes[1::2], levels - 1, b), b)


@builtin
def map_elementwise(scalar_fn: Any, *args: Any, pack: Any = 1, _builder: Builder = None,
                    _generator: Generator = None) -> Any:
    """Applies the ``@kiln.jit`` function ``scalar_fn`` to each element of
    ``args`` (broadcast to one shape), as Triton's ``tl.map_elementwise``.

    ``scalar_fn`` takes one scalar per argument and returns one value or a
    tuple of values; the result is a block (or a tuple of blocks) of the
    arguments' shape. It may branch on its arguments' values (``if x < y:
    return -1``). With ``pack=n``, each call takes ``n`` consecutive
    elements (along the last axis) of every argument, all of the first
    argument's before the second's, and returns ``n`` values per result,
    in the same order.
    """
    from kiln.compiler.frontend import is_kernel_source

    fn = _unwrap(scalar_fn)
    if not is_kernel_source(fn):
        raise CompilationError(f"kl.map_elementwise maps a @kiln.jit function, got {type(fn).__name__}")
    pack = _unwrap(pack)
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1 or pack & (pack - 1):
        raise CompilationError(f"kl.map_elementwise's pack must be a constexpr power of two, got {pack!r}")
    if not args:
        raise CompilationError("kl.map_elementwise needs at least one argument to map over")
    values = [semantic.to_tensor(_unwrap(a), _builder) for a in args]
    shape: list[int] = []
    for value in values:
        shape = semantic.broadcast_shapes(shape, list(value.shape))
    values = [semantic.broadcast_to(v, shape, _builder) for v in values]
    levels = pack.bit_length() - 1
    if pack > 1:
        if not shape or shape[-1] % pack:
            raise CompilationError(f"kl.map_elementwise with pack={pack} needs a last dimension divisible by "
                                   f"{pack}, got shape {shape}")
        grouped = shape[:-1] + [shape[-1] // pack] + [2] * levels
        lanes = [lane for v in values
                 for lane in _lanes(shapes.reshape_impl(v, grouped, _builder), levels, _builder, _generator)]
    else:
        lanes = values
    result = _generator.call_elementwise(fn, lanes)
    results = list(result) if isinstance(result, tuple) else [result]
    if len(results) % pack:
        raise CompilationError(f"{fn.__name__} returns {len(results)} values; with pack={pack} it must return "
                               f"{pack} values per result")
    lane_shape = shape[:-1] + [shape[-1] // pack] if pack > 1 else shape
    blocks = []
    for value in results:
        value = _unwrap(value)
        if isinstance(value, tuple) or (not isinstance(value, tensor) and not isinstance(value, (bool, int, float))):
            raise CompilationError(f"{fn.__name__} must return scalars for kl.map_elementwise, got {value!r}")
        value = semantic.to_tensor(value, _builder)
        if list(value.shape) != lane_shape:
            if value.shape:
                raise CompilationError(f"{fn.__name__} must return scalars for kl.map_elementwise, got a block "
                                       f"of shape {value.shape}")
            value = semantic.broadcast_to(value, lane_shape, _builder)  # a constant result
        blocks.append(value)
    if pack > 1:
        blocks = [shapes.reshape_impl(_unlanes(blocks[i:i + pack], levels, _builder), shape, _builder)
                  for i in range(0, len(blocks), pack)]
    return blocks[0] if len(blocks) == 1 else tuple(blocks)
