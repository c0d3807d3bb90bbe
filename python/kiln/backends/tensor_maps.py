"""TMA tensor maps that the launcher encodes (sm_90a).

A kernel takes a tensor map (128 bytes, launch code ``T``) for each host
``TensorDescriptor`` argument, and for each descriptor it makes itself from
its arguments alone (``kl.make_tensor_descriptor(q, shape=[Z * H * N_CTX,
HEAD_DIM], ...)``), which the compiler made a parameter after the kernel's
own (kiln-hoist-tensor-maps) and whose recipe it recorded in
``metadata["derived_tensor_maps"]``. Both are encoded here, with the box that
the kernel's copies use (``metadata["tensor_maps"]``, by parameter name); a
map that no copy reads is passed as zero bytes, without a driver call. So is
a guarded map (one the compiler gave a loop's pointer loads, which the
kernel reads only after checking the same limits) that the TMA unit would
refuse for a launch's arguments.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from kiln.runtime import arrays as _arrays
from kiln.runtime import driver as _driver

__all__ = ["DerivedTensorMaps", "TensorMapEncoder", "derived_map_name", "evaluate"]

# The TMA unit's limits on a tensor (cuTensorMapEncodeTiled's).
_MAX_EXTENT = 1 << 32
_MAX_STRIDE_BYTES = 1 << 40


def derived_map_name(index: int) -> str:
    """The name of the kernel's ``index``-th derived tensor map, under which
    its box is recorded (no parameter of a Python function has it)."""
    return f"<tensor map {index}>"


class TensorMapEncoder:
    """Encodes a kernel's tensor maps with the boxes its copies use. The last
    few encodings are kept: a loop launching on the same tensors encodes once."""

    _UNUSED = bytes(128)

    _KEEP = 16

    def __init__(self, boxes: Mapping[str, Sequence[int]]) -> None:
        self.boxes = dict(boxes)
        self.cache: dict[tuple, bytes] = {}

    def encode(self, name: str, descriptor: Any) -> bytes:
        """The map of host descriptor ``descriptor`` for parameter ``name``."""
        if name not in self.boxes:
            return self._UNUSED
        base = descriptor.base
        return self.encode_tensor(name, base.data_ptr(), base.element_size(), str(base.dtype) == "torch.bfloat16",
                                  descriptor.shape, descriptor.strides, descriptor.padding == "nan")

    def encode_tensor(self, name: str, address: int, element_bytes: int, bfloat16: bool, shape: tuple,
                      strides: tuple, nan: bool) -> bytes:
        """The map for parameter ``name`` of the row-major tensor at
        ``address`` with ``shape`` and ``strides`` (in elements; tuples of
        integers, read as ints only when the map is encoded)."""
        box = self.boxes.get(name)
        if box is None:
            return self._UNUSED
        key = (name, address, element_bytes, bfloat16, shape, strides, nan)
        encoded = self.cache.get(key)
        if encoded is not None:
            return encoded
        rows, cols, swizzle = box
        encoded = _driver.encode_tensor_map(address, [int(d) for d in shape], [int(s) * element_bytes for s in strides],
                                            [rows, cols], element_bytes, bfloat16, swizzle, nan)
        if len(self.cache) >= self._KEEP:
            self.cache.pop(next(iter(self.cache)))
        self.cache[key] = encoded
        return encoded


def _wrap(value: int, width: int) -> int:
    """``value`` as a signed integer of ``width`` bits, wrapped around as the
    kernel's arithmetic wraps."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def evaluate(recipe: Sequence[Any], arguments: Sequence[Any]) -> int:
    """The value of a recipe of kiln-hoist-tensor-maps (``["arg", width,
    index]``, ``["const", width, value]``, ``["sext" | "zext" | "trunc",
    width, x]``, ``["add" | "sub" | "mul", width, x, y]``) for the kernel
    arguments ``arguments`` (by the kernel's parameter number), as the
    kernel computes it: each result wrapped to its width, read as signed."""
    op, width, *operands = recipe
    if op == "arg":
        value = int(arguments[operands[0]])
    elif op == "const":
        value = operands[0]
    elif op in ("sext", "trunc"):
        value = evaluate(operands[0], arguments)
    elif op == "zext":
        value = evaluate(operands[0], arguments) & ((1 << operands[0][1]) - 1)
    elif op in ("add", "sub", "mul"):
        lhs, rhs = evaluate(operands[0], arguments), evaluate(operands[1], arguments)
        value = lhs + rhs if op == "add" else lhs - rhs if op == "sub" else lhs * rhs
    else:
        raise ValueError(f"unknown tensor map recipe operation {op!r}")
    return _wrap(value, width)


class DerivedTensorMaps:
    """Encodes, at each launch, the tensor maps of the descriptors a kernel
    makes from its arguments, which it takes after its own parameters."""

    def __init__(self, recipes: Sequence[Mapping[str, Any]], encoder: TensorMapEncoder,
                 runtime_positions: Sequence[int], kernel_name: str) -> None:
        """
        Args:
            recipes: ``metadata["derived_tensor_maps"]``, in parameter order.
            encoder: the kernel's encoder (its boxes name these maps
                :func:`derived_map_name`).
            runtime_positions: for each kernel parameter, the position of
                its value among a launch's bound arguments.
            kernel_name: for error messages.
        """
        self.recipes = list(recipes)
        self.encoder = encoder
        self.runtime_positions = list(runtime_positions)
        self.kernel_name = kernel_name

    def encode(self, bound: Sequence[Any]) -> list[bytes]:
        """The maps for a launch with bound arguments ``bound``."""
        arguments = [bound[position] for position in self.runtime_positions]  # by kernel parameter
        maps = []
        for index, recipe in enumerate(self.recipes):
            name = derived_map_name(index)
            if name not in self.encoder.boxes:
                maps.append(TensorMapEncoder._UNUSED)
                continue
            shape = tuple(evaluate(extent, arguments) for extent in recipe["shape"])
            strides = tuple(evaluate(stride, arguments) for stride in recipe["strides"]) + (1,)
            base = arguments[recipe["base"]]
            address = base if isinstance(base, int) else _arrays.address_of(
                base, _arrays.array_kind(base.__class__) or _arrays.ArrayKind.TORCH)
            element_bytes = recipe["element_bits"] // 8
            if recipe.get("guarded") and self._refusal(shape, strides, element_bytes) is not None:
                # The kernel checks the same limits before it reads this map
                # (kiln-tensor-map-pointer-loads), and reads through its
                # pointers instead: no map to encode.
                maps.append(TensorMapEncoder._UNUSED)
                continue
            self._check(recipe, shape, strides, element_bytes)
            maps.append(self.encoder.encode_tensor(name, address, element_bytes, recipe["bfloat16"], shape, strides,
                                                   recipe["nan"]))
        return maps

    @staticmethod
    def _refusal(shape: tuple[int, ...], strides: tuple[int, ...], element_bytes: int) -> Optional[str]:
        """Why the TMA unit refuses a tensor of this shape and strides (in
        elements), as the end of a sentence; None where it takes it."""
        for axis, extent in enumerate(shape):
            if not 1 <= extent <= _MAX_EXTENT:
                return f"has shape[{axis}] = {extent} in this launch; the TMA unit that reads it takes extents " \
                       f"from 1 to 2**32"
        for axis, stride in enumerate(strides[:-1]):
            if stride <= 0 or stride * element_bytes >= _MAX_STRIDE_BYTES:
                return f"has strides[{axis}] = {stride} in this launch; the TMA unit that reads it takes positive " \
                       f"strides below 2**40 bytes"
        return None

    def _check(self, recipe: Mapping[str, Any], shape: tuple[int, ...], strides: tuple[int, ...],
               element_bytes: int) -> None:
        """Raises ValueError, located at the descriptor's source line, for a
        tensor the TMA unit cannot describe."""
        refusal = self._refusal(shape, strides, element_bytes)
        if refusal is not None:
            raise ValueError(f"{recipe['loc']}: kernel {self.kernel_name}: the tensor descriptor made here {refusal}")
