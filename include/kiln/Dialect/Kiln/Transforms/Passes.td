//===- Passes.td - Transformations of the kiln dialect -----*- tablegen -*-===//
//
// Hardware-neutral rewrites of kiln kernels, used by the targets' pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_PASSES
#define KILN_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def KilnStripMine : Pass<"kiln-strip-mine", "mlir::ModuleOp"> {
  let summary = "Split a kernel over 1-D blocks into loops over chunks of its blocks";
  let description = [{
    When every block of a kernel is 1-D with the same length N, and every op
    that touches blocks works element by element (ranges, splats, constants,
    arith and math, addptr, load, store, atomics, also inside loops over
    scalars) or reduces whole blocks to scalars, the program's result does
    not depend on how its N elements are grouped. (Elements of one program
    that access the same address are ordered only by a `debug_barrier`, as
    on the GPU, where they are threads; a barrier makes this pass leave the
    kernel alone.) This pass then runs the
    kernel chunk by chunk, with blocks of `chunk-size` elements: on a CPU, a
    chunk fits in registers where a whole block would spill, and LLVM's code
    generation time stays flat instead of growing with N. When every block
    of the kernel lies in one `scf.for` over scalars (a persistent kernel's
    loop over rows), that loop's body is what runs chunk by chunk, once per
    iteration; block constants used there are copied into it.

    Reductions split the kernel into phases. Each phase is one `scf.for`
    over the chunks that computes the blocks its reductions and stores
    need, recomputing those of earlier phases from their loads rather than
    keeping them; it carries its reductions' partial results, started from
    the first chunk's (a combine function need not have an identity) and
    combined in increasing order. Later phases read them as scalars. Ops on
    scalars stay outside the loops. Recomputing loads is valid because the
    kernel may write memory only in its last phase, or after it: a scalar
    store of the last reductions' results that no block access follows
    (`kl.store(out + pid, kl.sum(x))`) runs after the last loop.

    Kernels that do anything else (other shapes, reductions inside loops or
    to blocks, scans, blocks carried by control flow, other scalar stores,
    memory written before the last phase, a scalar load after a write) are
    left as they are.

    Before (`chunk-size=128`):
    ```mlir
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %v = kiln.load %p : tensor<1024x!kiln.ptr<f32>> -> tensor<1024xf32>
    %s = kiln.reduce(%v) {axis = 0 : i32} : (tensor<1024xf32>) -> f32 { ... }
    ```
    After:
    ```mlir
    %v0 = kiln.load %p0 : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
    %s0 = kiln.reduce(%v0) {axis = 0 : i32} : (tensor<128xf32>) -> f32 { ... }
    %s = scf.for %c = %c128 to %c1024 step %c128 iter_args(%acc = %s0) -> (f32) : i32 {
      %r0 = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
      %r = arith.addi %r0, (splat %c) : tensor<128xi32>
      %v = kiln.load %p : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
      %part = kiln.reduce(%v) {axis = 0 : i32} : (tensor<128xf32>) -> f32 { ... }
      %next = (the combine function of %acc, %part)
      scf.yield %next : f32
    }
    ```
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"128",
           "elements per chunk (a power of two)">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def KilnDecodeFloat8Dots : Pass<"kiln-decode-fp8-dots", "mlir::ModuleOp"> {
  let summary = "Decode the 8-bit float operands of dots to f16";
  let description = [{
    A dot of 8-bit floats (`aFloat8`, `bFloat8`) becomes a dot of f16
    operands decoded from the bytes, for targets without 8-bit float tensor
    cores. f16 holds every e4m3 and e5m2 value, so the result is the same;
    the products are then summed at f16 dots' precision.

    Before:
    ```mlir
    %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>} : tensor<32x32xi8> * tensor<32x32xi8> -> tensor<32x32xf32>
    ```
    After:
    ```mlir
    %a32 = ... integer decode of %a ... : tensor<32x32xf32>
    %a16 = arith.truncf %a32 : tensor<32x32xf32> to tensor<32x32xf16>
    %b16 = ...
    %d = kiln.dot %a16, %b16, %c : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnExpandFloat8Rounding : Pass<"kiln-expand-float8-rounding", "mlir::ModuleOp"> {
  let summary = "Round f32 to 8-bit floats with integer ops";
  let description = [{
    For targets without an instruction that rounds f32 to 8-bit floats
    (the CPU; NVIDIA chips before sm_90, whose lowering otherwise takes
    `kiln.f32_to_float8` to `cvt.rn.satfinite`): each `kiln.f32_to_float8`
    becomes 32-bit integer ops with the same results, round to nearest
    even, saturating to the largest finite value, NaN to the NaN byte.

    Before:
    ```mlir
    %b = kiln.f32_to_float8 %x {format = #kiln.float8<e5m2>} : tensor<128xf32> -> tensor<128xi8>
    ```
    After:
    ```mlir
    %bits = arith.bitcast %x : tensor<128xf32> to tensor<128xi32>
    ... the sign, the rounded normal and subnormal codes, the saturation and the NaN ...
    %b = arith.trunci %code : tensor<128xi32> to tensor<128xi8>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnExpandHistograms : Pass<"kiln-expand-histograms", "mlir::ModuleOp"> {
  let summary = "Expand histograms into a comparison against every bin and a sum";
  let description = [{
    For targets without a histogram lowering of their own: each
    `kiln.histogram` of N values into B bins becomes an N x B block that
    compares every value with every bin (and'ed with the mask), widened to
    i32 and summed along the values. The values are compared as signed
    integers (values narrower than i32 widened to i32, bins widened to i64
    for i64 values), so a value outside `[0, B)` matches no bin.

    Before:
    ```mlir
    %h = kiln.histogram %x : tensor<256xi32> -> tensor<16xi32>
    ```
    After:
    ```mlir
    %bins = kiln.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %row = kiln.expand_dims %bins {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %col = kiln.expand_dims %x {axis = 1 : i32} : tensor<256xi32> -> tensor<256x1xi32>
    %a = kiln.broadcast %col : tensor<256x1xi32> -> tensor<256x16xi32>
    %b = kiln.broadcast %row : tensor<1x16xi32> -> tensor<256x16xi32>
    %hit = arith.cmpi eq, %a, %b : tensor<256x16xi32>
    %one = arith.extui %hit : tensor<256x16xi1> to tensor<256x16xi32>
    %h = kiln.reduce(%one) {axis = 0 : i32} : (tensor<256x16xi32>) -> tensor<16xi32> {
    ^bb0(%p: i32, %q: i32):
      %s = arith.addi %p, %q : i32
      kiln.reduce.return %s : i32
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnMulSumToDot : Pass<"kiln-mul-sum-to-dot", "mlir::ModuleOp"> {
  let summary = "A matrix product written as broadcast products summed over K becomes a dot";
  let description = [{
    `kl.sum(a[:, :, None] * b[None, :, :], axis=1)` with `a` of shape
    [M, K] and `b` of [K, N] (f32 or f64) is `kl.dot(a, b)` with exact
    (`ieee`) products: the same sums, in another order, as any reduction
    may add them. The product block of M x K x N elements is never built,
    which on the GPU leaves the product to the dot lowering and on the CPU
    saves LLVM compiling one vector of M x K x N lanes (a 128 x 32 x 32
    block took over a minute).

    Before:
    ```mlir
    %ae = kiln.expand_dims %a {axis = 2 : i32} : tensor<32x16xf32> -> tensor<32x16x1xf32>
    %ab = kiln.broadcast %ae : tensor<32x16x1xf32> -> tensor<32x16x64xf32>
    %be = kiln.expand_dims %b {axis = 0 : i32} : tensor<16x64xf32> -> tensor<1x16x64xf32>
    %bb = kiln.broadcast %be : tensor<1x16x64xf32> -> tensor<32x16x64xf32>
    %p = arith.mulf %ab, %bb : tensor<32x16x64xf32>
    %s = kiln.reduce(%p) {axis = 1 : i32} : (tensor<32x16x64xf32>) -> tensor<32x64xf32> {
    ^bb0(%x: f32, %y: f32):
      %z = arith.addf %x, %y : f32
      kiln.reduce.return %z : f32
    }
    ```
    After:
    ```mlir
    %zero = arith.constant dense<0.000000e+00> : tensor<32x64xf32>
    %s = kiln.dot %a, %b, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf32> * tensor<16x64xf32> -> tensor<32x64xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnGuardLoopMasks : Pass<"kiln-guard-loop-masks", "mlir::ModuleOp"> {
  let summary = "Apply a loop's select masks only in the iterations where they are not all true";
  let description = [{
    In an `scf.for` that computes a `kiln.dot`, a block `arith.select` whose
    condition is a signed `arith.cmpi` between two integer blocks, one of
    them the induction variable plus a range and the other a range the loop
    does not change (each made of `kiln.splat`, `kiln.make_range`,
    constants, `arith.addi`, `kiln.expand_dims` and `kiln.broadcast` over
    the induction variable and scalars defined outside the loop), is true
    for every element in all iterations up to a bound (or from one) that
    the ranges' ends give, and there its value is its true operand; so is
    one whose condition is an `arith.andi` of such compares, in the
    iterations where each of them is. The select moves into an `scf.if` on
    the induction variable and the bounds, whose other region yields the
    true operand; the ops that compute the mask for that select alone move
    in with it. A bound from above is used only in a loop that starts at a
    constant: one that starts elsewhere is most likely the part on the
    diagonal of a loop split by hand, whose masks are all needed.

    Attention's causal mask `where(offs_m[:, None] >= start_n +
    offs_n[None, :], qk, -inf)` then costs one compare per iteration below
    the diagonal, a mask of keys past the sequence's end one compare per
    iteration before the last block, and the two together (the backward's
    dQ loop) two. The loop stays one loop, with one
    software pipeline over all its key blocks; split at the diagonal into
    two loops, as tutorial 06 writes by hand, each part would start a
    pipeline of its own. Other loops, and selects of other shapes, are
    left alone.

    Before:
    ```mlir
    scf.for %i = %lb to %ub step %s iter_args(%acc = %init) {
      %cols = arith.addi %splat_i, %range : tensor<64xi32>
      %keep = arith.cmpi sge, %rows, %cols : tensor<128x64xi32>
      %x = arith.select %keep, %qk, %minus_inf : tensor<128x64xi1>, tensor<128x64xf32>
      ...
    }
    ```
    After (the mask is all true while `%i` is at most the smallest row
    less the largest key offset from `%i`, here `%row0 - 63`):
    ```mlir
    %bound = arith.addi %c-63, %row0 : i32
    scf.for %i = %lb to %ub step %s iter_args(%acc = %init) {
      %needed = arith.cmpi sgt, %i, %bound : i32
      %x = scf.if %needed -> (tensor<128x64xf32>) {
        %cols = arith.addi %splat_i, %range : tensor<64xi32>
        %keep = arith.cmpi sge, %rows, %cols : tensor<128x64xi32>
        %m = arith.select %keep, %qk, %minus_inf : tensor<128x64xi1>, tensor<128x64xf32>
        scf.yield %m : tensor<128x64xf32>
      } else {
        scf.yield %qk : tensor<128x64xf32>
      }
      ...
    }
    ```
  }];
}

def KilnTensorMapPointerLoads : Pass<"kiln-tensor-map-pointer-loads", "mlir::ModuleOp"> {
  let summary = "Give a loop's pointer loads of rows TMA tensor maps, behind a check";
  let description = [{
    A load in the body of an innermost 32-bit `scf.for` qualifies when its
    2-D block feeds only dots (directly or through a `kiln.trans`) and its
    pointers are `P + offset + i * stride + j` (or `P + offset + i + j *
    stride`, K read transposed) at the first trip and advance by `q *
    stride` a trip, `q` an integer constant: either a loop-carried block
    advanced by that every trip, or a block computed in the body from the
    induction variable. `P` is a kernel parameter aligned to 16 bytes, `i`
    and `j` the block's indices, `offset` and `stride` sums of products of
    scalars defined before the loop, `stride` a product of the kernel's
    integer parameters and a constant that is a multiple of 16 bytes in
    every launch (their `kiln.divisibility`). Its mask, if any, is a
    conjunction of signed comparisons of such affine blocks whose indices
    and induction variable have constant coefficients (`start_n + offs_n <
    N_CTX`). The 2-D row-major map over `P` with `stride` elements a row
    then holds, at row `offset / stride` and column `offset % stride`, the
    block those pointers address, where the division leaves the block's
    columns within one row, the rows of every trip lie in `[0, 2**31 - 1)`
    and `stride` is at most `2**31 - 1`; and where the mask is true over the
    whole block in every trip, the map's load needs none. (Offsets are
    taken as exact integers: a program whose offsets wrap around reads
    outside its arrays anyway.)

    A loop is taken only where every block its body loads qualifies: the
    pipeliner copies a loop's blocks all by the TMA unit or all by threads,
    so a version with some blocks on maps would load the others itself in
    every trip (the attention backward's rows of M and Delta), where the
    loop as it was copies them all ahead.

    Those conditions depend on the launch and the program, so the loop is
    versioned: before it, the program computes them, the first row and
    column of each map, and the maps themselves
    (`kiln.make_tensor_map %P[2**31 - 1, stride] strides [stride]`,
    marked `kiln.guarded`), and an `scf.if` runs either a copy of the loop
    whose loads name their maps, without masks (each map's row carried and
    advanced by `q` a trip, or computed from the induction variable; a
    transposed block loaded as its transpose and transposed back) or the
    loop unchanged; the `scf.if` is marked `kiln.tensor_map_version`.
    kiln-hoist-tensor-maps then makes the maps parameters; a guarded map
    that the TMA unit would refuse is passed empty by the launcher, and the
    check keeps the program off it. Where the loads of the first version
    do not all become TMA copies after all, kiln-gpu-drop-unread-tensor-maps
    keeps only the loop as it was.

    Before:
    ```mlir
    %k0 = kiln.addptr %kbase, %offsets : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    %r = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %k = %k0) -> (...) : i32 {
      %b = kiln.load %k : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
      %d = kiln.dot %a, %b, %acc : ...
      %k1 = kiln.addptr %k, %advance : ...
      scf.yield %d, %k1 : ...
    }
    ```
    After:
    ```mlir
    %map = kiln.make_tensor_map %K[%c2147483647, %stride] strides [%stride] {kiln.guarded} : !kiln.ptr<f16>
    %r = scf.if %fits -> (...) {
      %c = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %k = %k0, %row = %row0) -> (...) : i32 {
        %b = kiln.load %k tensor_map %map[%row, %column0] : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
        ...
        %row1 = arith.addi %row, %c64 : i32
        scf.yield %d, %k1, %row1 : ...
      }
      scf.yield %c#0, %c#1 : ...
    } else {
      %c = scf.for ... // the loop as it was
      scf.yield %c#0, %c#1 : ...
    } {kiln.tensor_map_version}
    ```
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def KilnExpandTensorMapLoads : Pass<"kiln-expand-tensor-map-loads", "mlir::ModuleOp"> {
  let summary = "Read each load that names a map made in the kernel as the TMA unit would";
  let description = [{
    A load that names a `kiln.make_tensor_map` reads, where the TMA unit
    copies it, the box of the map's tensor at its coordinates: element `i`
    of the block is the tensor's element at `coordinates + i`, zero (NaN
    with `nan_padding`, for floats) where that lies outside the tensor's
    shape, whatever the load's own pointers, mask and `other`. This pass
    makes such a load read exactly that through pointers
    (`base + sum of (coordinates + i) * strides`, the last dimension
    contiguous) under the mask of the shape. The CPU backend runs it after
    kiln-tensor-map-pointer-loads (its pipeline's `pointer-tensor-maps`),
    so that the maps that pass makes, and the program's check that picks
    them, are tested where there is no GPU.

    Before:
    ```mlir
    %map = kiln.make_tensor_map %K[%rows, %stride] strides [%stride] : !kiln.ptr<f16>
    %b = kiln.load %k tensor_map %map[%row, %column] : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    ```
    After:
    ```mlir
    // (row + i) * stride + column + j, and 0 <= row + i < rows,
    // 0 <= column + j < stride, as blocks of i64.
    %pointers = kiln.addptr %base, %offsets : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi64>
    %b = kiln.load %pointers, %inside, %zero : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnHoistTensorMaps : Pass<"kiln-hoist-tensor-maps", "mlir::ModuleOp"> {
  let summary = "Make the tensor maps of descriptors made in the kernel kernel parameters";
  let description = [{
    A `kiln.make_tensor_map` whose base is a kernel parameter aligned to 16
    bytes and whose shape and strides are computed from the kernel's
    integer parameters and constants alone (`arith.constant`, `addi`,
    `subi`, `muli`, `extsi`, `extui`, `trunci`), with strides that are
    multiples of 16 bytes for every launch, becomes a new last parameter of
    the kernel (`kiln.tensor_map`), as a host descriptor's tensor map is:
    the launcher computes its operands from the launch's arguments and
    encodes it. How is recorded in the module's `kiln.derived_tensor_maps`,
    one dictionary per map: the parameter (`arg`), the base parameter
    (`base`), the element's bits and whether it is bf16, NaN padding, the
    kernel source position (`loc`), `guarded` where the map is
    `kiln.guarded` (the kernel checks that the TMA unit takes the tensor
    before reading it, so the launcher passes no map instead of refusing
    the launch), and the shape and strides as
    expressions: `["arg", width, index]`, `["const", width, value]`,
    `["sext" | "zext" | "trunc", width, x]`, `["add" | "sub" | "mul",
    width, x, y]`, each of the result's bit width.

    Any other map is dropped: its loads keep their pointers and mask. With
    `hoist=false` (a target without the TMA unit, checked mode) every map
    is dropped.

    Before:
    ```mlir
    func.func @k(%q: !kiln.ptr<f16> {kiln.divisibility = 16 : i64}, %n: i32) attributes {kiln.kernel} {
      %rows = arith.extsi %n : i32 to i64
      %map = kiln.make_tensor_map %q[%rows, %c128] strides [%c128] : !kiln.ptr<f16>
      %a = kiln.load %ptrs, %inside, %zero tensor_map %map[%i, %c0_i32] : ...
    ```
    After:
    ```mlir
    func.func @k(%q: !kiln.ptr<f16> {kiln.divisibility = 16 : i64}, %n: i32,
                 %map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}) attributes {kiln.kernel} {
      %a = kiln.load %ptrs, %inside, %zero tensor_map %map[%i, %c0_i32] : ...
    // The module's kiln.derived_tensor_maps holds {arg = 2, base = 0,
    //   shape = [["sext", 64, ["arg", 32, 1]], ["const", 64, 128]],
    //   strides = [["const", 64, 128]], element_bits = 16, ...}.
    ```
  }];
  let options = [
    Option<"hoist", "hoist", "bool", /*default=*/"true",
           "Make parameters of the maps that allow it (false: drop every map)">,
  ];
}

def KilnHoistBranchLoads : Pass<"kiln-hoist-branch-loads", "mlir::ModuleOp"> {
  let summary = "Start a branch's loads before the branch where that is harmless";
  let description = [{
    A load inside one side of an `scf.if` moves to just before the `scf.if`,
    with the pure ops of that side that compute its pointer, mask and
    `other` from values defined above, when all of these hold:
    - nothing before it in its side orders memory (every op there is pure
      or a plain load), so it reads what it would have read;
    - after the `scf.if`, in the same block, the program stores through the
      same pointers (the same value, or one computed alike by pure ops)
      under the same mask, with only ops without regions, calls or
      assertions between: the addresses are ones it writes on every path,
      so reading them early cannot fault where the program would not;
    - it is not volatile and not a TMA copy.

    The load then need not wait for the branch's condition. In the
    layer-norm backward's critical section (load a counter, branch on it,
    load the partial sums in one branch, store them after), the two loads'
    round trips to memory overlap instead of adding up. On the path that
    did not need it, the load is extra work.

    Before:
    ```mlir
    %n = kiln.load %count : !kiln.ptr<i32> -> i32
    %first = arith.cmpi eq, %n, %c0 : i32
    %sum = scf.if %first -> (tensor<256xf32>) {
      scf.yield %part : tensor<256xf32>
    } else {
      %old = kiln.load %ptrs, %mask : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
      %new = arith.addf %part, %old : tensor<256xf32>
      scf.yield %new : tensor<256xf32>
    }
    kiln.store %ptrs, %sum, %mask : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
    ```
    After:
    ```mlir
    %n = kiln.load %count : !kiln.ptr<i32> -> i32
    %first = arith.cmpi eq, %n, %c0 : i32
    %old = kiln.load %ptrs, %mask : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
    %sum = scf.if %first -> (tensor<256xf32>) {
      scf.yield %part : tensor<256xf32>
    } else {
      %new = arith.addf %part, %old : tensor<256xf32>
      scf.yield %new : tensor<256xf32>
    }
    kiln.store %ptrs, %sum, %mask : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
    ```
  }];
}

#endif // KILN_TRANSFORMS_PASSES
