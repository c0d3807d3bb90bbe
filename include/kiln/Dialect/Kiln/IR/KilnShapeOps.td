//===- KilnShapeOps.td - Ops that rearrange a block's elements -*- tablegen -*-===//
//
// Reshapes, transposes, joins and splits, concatenation, flips and gathers:
// ops whose result elements are elements of their operands, moved. Each has
// a static map from a result element's coordinates to the row-major index of
// the element it takes (the lowerings share it: ShapeOps.h); only
// kiln.gather adds a run-time index to that map.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SHAPE_OPS
#define KILN_SHAPE_OPS

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure, SameOperandsAndResultElementType]> {
  let summary = "The same elements in row-major order, in another shape";
  let description = [{
    Returns a block of the result shape whose elements, in row-major order,
    are the source's in row-major order. Source and result have the same
    number of elements.

    Example:
    ```mlir
    %b = kiln.reshape %a : tensor<4x8xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$src);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TransOp : Kiln_Op<"trans", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Permute the dimensions of a block";
  let description = [{
    Dimension `i` of the result is dimension `order[i]` of the source: the
    result element at coordinates `c` is the source element whose
    coordinate along `order[i]` is `c[i]`. `order` is a permutation of the
    source's dimensions.

    Example:
    ```mlir
    %t = kiln.trans %a {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$src, DenseI32ArrayAttr:$order);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_JoinOp : Kiln_Op<"join", [Pure, SameTypeOperands,
    SameOperandsAndResultElementType]> {
  let summary = "Join two blocks along a new minor dimension of size two";
  let description = [{
    Returns the block of the operands' shape with a dimension of size two
    appended: element `[..., 0]` is `lhs[...]`, element `[..., 1]` is
    `rhs[...]`.

    Example:
    ```mlir
    %j = kiln.join %a, %b : tensor<16xf32> -> tensor<16x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$lhs, Kiln_Block:$rhs);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_SplitOp : Kiln_Op<"split", [Pure, SameOperandsAndResultElementType,
    AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "Split a block along its minor dimension of size two";
  let description = [{
    The inverse of `kiln.join`: `lhs[...]` is `src[..., 0]` and `rhs[...]`
    is `src[..., 1]`. The source has rank two or more and a last dimension
    of size two.

    Example:
    ```mlir
    %l, %r = kiln.split %j : tensor<16x2xf32> -> tensor<16xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$src);
  let results = (outs Kiln_Block:$lhs, Kiln_Block:$rhs);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($lhs)";
  let hasVerifier = 1;
}

def Kiln_CatOp : Kiln_Op<"cat", [Pure, SameTypeOperands,
    SameOperandsAndResultElementType]> {
  let summary = "Concatenate two blocks along their first dimension";
  let description = [{
    Returns `lhs` followed by `rhs` along dimension 0: in row-major order,
    the elements of `lhs` then those of `rhs`. The operands have one type.

    Example:
    ```mlir
    %c = kiln.cat %a, %b : tensor<16xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$lhs, Kiln_Block:$rhs);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_FlipOp : Kiln_Op<"flip", [Pure, AllTypesMatch<["src", "result"]>]> {
  let summary = "Reverse a block along one dimension";
  let description = [{
    The result element at coordinate `i` along `axis` is the source element
    at `n - 1 - i`, with `n` the size of `axis`.

    Example:
    ```mlir
    %f = kiln.flip %a {axis = 1 : i32} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$src, I32Attr:$axis);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
  let hasVerifier = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure]> {
  let summary = "Gather elements of a block along one axis at run-time indices";
  let description = [{
    The result has the index's shape; its element at coordinates `c` is the
    source element at `c` with the coordinate along `axis` replaced by
    `index[c]`. Source and index have one rank and the same size along
    every dimension but `axis`. An index outside `[0, n)` reads an
    unspecified element of the source (the lowerings clamp it).

    Example:
    ```mlir
    %g = kiln.gather %src[%idx] {axis = 0 : i32} : (tensor<16x4xf32>, tensor<8x4xi32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Block:$src, RankedTensorOf<[Kiln_Int]>:$index, I32Attr:$axis);
  let results = (outs Kiln_Block:$result);
  let assemblyFormat = [{
    $src `[` $index `]` attr-dict `:` `(` type($src) `,` type($index) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_HistogramOp : Kiln_Op<"histogram", [Pure]> {
  let summary = "Count the values of a 1-D integer block in bins";
  let description = [{
    Element `b` of the result is the number of elements of `src` equal to
    `b`, counting only those whose `mask` element is set when a mask is
    given. The elements of `src` are read as signed integers; values
    outside `[0, n)`, with `n` the result's length, are not counted. `n`
    is a power of two.

    The CPU lowering counts element by element into a stack array; targets
    without a lowering of their own expand the op into a comparison against
    every bin and a sum (kiln-expand-histograms).

    Example:
    ```mlir
    %h = kiln.histogram %x : tensor<1024xi32> -> tensor<128xi32>
    %hm = kiln.histogram %x, %m : tensor<1024xi32>, tensor<1024xi1> -> tensor<128xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[Kiln_Int]>:$src, Optional<RankedTensorOf<[I1]>>:$mask);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $src (`,` $mask^)? attr-dict `:` type($src) (`,` type($mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // KILN_SHAPE_OPS
