// RUN: kiln-opt %s -split-input-file -kiln-tensor-map-pointer-loads | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-tensor-map-pointer-loads -kiln-hoist-tensor-maps | FileCheck %s --check-prefix=HOIST

// Attention's loop: K read transposed ([HEAD_DIM, BLOCK_N], dimension 0
// contiguous) and V as rows, both from `offset` into a parameter, rows
// `stride` apart, advanced by 64 rows a trip. Each gets a guarded map of
// rows of `stride` elements; the first row and column are the offset
// divided by the stride, and the check (the step, the stride, the column
// and the rows of every trip) picks the copy of the loop that reads through
// the maps, or the loop as it was.
// CHECK-LABEL: func.func @attention
// CHECK: %[[KSTRIDE:.*]] = arith.extsi %arg3 : i32 to i64
// CHECK: %[[KSAFE:.*]] = arith.select %{{.*}}, %[[KSTRIDE]], %c1_i64 : i64
// CHECK: %[[KROW:.*]] = arith.divsi %arg2, %[[KSAFE]] : i64
// CHECK: %[[KMAP:.*]] = kiln.make_tensor_map %arg0[%c2147483647_i64{{.*}}, %[[KSTRIDE]]] strides [%[[KSTRIDE]]] {kiln.guarded} : !kiln.ptr<f16>
// CHECK: %[[KROW32:.*]] = arith.trunci %[[KROW]] : i64 to i32
// CHECK: %[[KCOL32:.*]] = arith.trunci %{{.*}} : i64 to i32
// CHECK: %[[VMAP:.*]] = kiln.make_tensor_map %arg1[
// CHECK-NEXT: %[[VROW32:.*]] = arith.trunci
// CHECK-NEXT: %[[VCOL32:.*]] = arith.trunci
// CHECK-NEXT: scf.if %{{.*}} -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>, tensor<64x64x!kiln.ptr<f16>>) {
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[KPTRS:[a-z0-9]+]] = %{{.*}}, %{{.*}} = %{{.*}}, %[[KROWS:[a-z0-9]+]] = %[[KROW32]], %[[VROWS:[a-z0-9]+]] = %[[VROW32]])
// CHECK: %[[KT:.*]] = kiln.trans %[[KPTRS]] {order = array<i32: 1, 0>} : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
// CHECK: %[[KB:.*]] = kiln.load %[[KT]] tensor_map %[[KMAP]][%[[KROWS]], %[[KCOL32]]] : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
// CHECK: %[[KBT:.*]] = kiln.trans %[[KB]] {order = array<i32: 1, 0>} : tensor<64x64xf16> -> tensor<64x64xf16>
// CHECK: kiln.dot %arg5, %[[KBT]]
// CHECK: kiln.load %{{.*}} tensor_map %[[VMAP]][%[[VROWS]], %[[VCOL32]]] : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
// CHECK: arith.addi %[[KROWS]], %c64_i32{{.*}} : i32
// CHECK: arith.addi %[[VROWS]], %c64_i32{{.*}} : i32
// CHECK: } else {
// CHECK: scf.for
// CHECK-NOT: tensor_map
// CHECK: kiln.load %{{.*}} : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
// CHECK-NOT: tensor_map
// CHECK: } {kiln.tensor_map_version}
// CHECK: return

// The maps become parameters whose recipes say they are guarded: the
// launcher passes an empty map where the TMA unit refuses the tensor.
// HOIST: kiln.derived_tensor_maps = [{arg = 6 : i64, base = 0 : i64, bfloat16 = false, element_bits = 16 : i64, guarded = true,
// HOIST-SAME: shape = {{\[}}["const", 64, 2147483647], ["sext", 64, ["arg", 32, 3]]], strides = {{\[}}["sext", 64, ["arg", 32, 3]]]},
// HOIST-SAME: {arg = 7 : i64, base = 1 : i64,
// HOIST-LABEL: func.func @attention
// HOIST-NOT: kiln.make_tensor_map
func.func @attention(%K: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %V: !kiln.ptr<f16> {kiln.divisibility = 16 : i32},
                %offset: i64, %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32,
                %q: tensor<128x64xf16>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %stride_cols = kiln.splat %stride : i32 -> tensor<1x64xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %col_offsets = arith.muli %cols, %stride_cols : tensor<1x64xi32>
  // V: [BLOCK_N, HEAD_DIM], rows of `stride` elements.
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  // K read transposed: [HEAD_DIM, BLOCK_N], its dimension 0 contiguous.
  %k_base = kiln.addptr %K, %offset : !kiln.ptr<f16>, i64
  %k_splat = kiln.splat %k_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %k_rows = kiln.addptr %k_splat, %rows : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %k_bcast = kiln.broadcast %k_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_s = kiln.broadcast %col_offsets : tensor<1x64xi32> -> tensor<64x64xi32>
  %k0 = kiln.addptr %k_bcast, %cols_s : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %r:3 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %k = %k0, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %kb = kiln.load %k : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %s = kiln.dot %q, %kb, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %p = arith.truncf %s : tensor<128x64xf32> to tensor<128x64xf16>
    %vb = kiln.load %v : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %d = kiln.dot %p, %vb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %step = arith.muli %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %k1 = kiln.addptr %k, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %k1, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>, tensor<64x64x!kiln.ptr<f16>>
  }
  return %r#0 : tensor<128x64xf32>
}

// -----

// A mask that is no signed comparison of affine blocks (here an unsigned
// one): the check could not tell where it holds.
// HOIST-NOT: guarded
// CHECK-LABEL: func.func @masked
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: return
func.func @masked(%V: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %offset: i64, %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32,
                %p: tensor<128x64xf16>, %out: tensor<64x64x!kiln.ptr<f16>>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %bound = kiln.splat %n : i32 -> tensor<64x64xi32>
    %rows_b = kiln.broadcast %rows : tensor<64x1xi32> -> tensor<64x64xi32>
    %inside = arith.cmpi ult, %rows_b, %bound : tensor<64x64xi32>
    %vzero = arith.constant dense<0.0> : tensor<64x64xf16>
    %vb = kiln.load %v, %inside, %vzero : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %d = kiln.dot %p, %vb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %step = arith.muli %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>
  }
  return %r#0 : tensor<128x64xf32>
}

// -----

// A block that no dot reads: it would not be in shared memory, where the
// TMA unit copies.
// HOIST-NOT: guarded
// CHECK-LABEL: func.func @not_a_dot_operand
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: return
func.func @not_a_dot_operand(%V: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %offset: i64, %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32,
                %p: tensor<128x64xf16>, %out: tensor<64x64x!kiln.ptr<f16>>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %vb = kiln.load %v : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    kiln.store %out, %vb : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xf16>
    %d = arith.addf %acc, %acc : tensor<128x64xf32>
    %step = arith.muli %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>
  }
  return %r#0 : tensor<128x64xf32>
}

// -----

// V qualifies, but the loop also loads a row of M that no dot reads: a
// version copying V by the TMA unit would load that row itself in every
// trip, where the loop as it was copies both ahead. The loop stays as it
// is.
// HOIST-NOT: guarded
// CHECK-LABEL: func.func @beside_a_block_off_the_maps
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: return
func.func @beside_a_block_off_the_maps(%V: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %M: !kiln.ptr<f32> {kiln.divisibility = 16 : i32},
                %offset: i64, %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32,
                %p: tensor<128x64xf16>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %m_splat = kiln.splat %M : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %vb = kiln.load %v : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %i_splat = kiln.splat %i : i32 -> tensor<64xi32>
    %m_offsets = arith.addi %i_splat, %range : tensor<64xi32>
    %m_ptrs = kiln.addptr %m_splat, %m_offsets : tensor<64x!kiln.ptr<f32>>, tensor<64xi32>
    %m = kiln.load %m_ptrs : tensor<64x!kiln.ptr<f32>> -> tensor<64xf32>
    %m_row = kiln.expand_dims %m {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %m_block = kiln.broadcast %m_row : tensor<1x64xf32> -> tensor<128x64xf32>
    %d = kiln.dot %p, %vb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %e = arith.addf %d, %m_block : tensor<128x64xf32>
    %step = arith.muli %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %e, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>
  }
  return %r#0 : tensor<128x64xf32>
}

// -----

// Pointers advanced by a number of elements that is not a multiple of the
// row stride: no whole rows a trip.
// HOIST-NOT: guarded
// CHECK-LABEL: func.func @advanced_past_a_row
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: return
func.func @advanced_past_a_row(%V: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %offset: i64, %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32,
                %p: tensor<128x64xf16>, %out: tensor<64x64x!kiln.ptr<f16>>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %vb = kiln.load %v : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %d = kiln.dot %p, %vb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %step = arith.addi %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>
  }
  return %r#0 : tensor<128x64xf32>
}

// -----

// A parameter not known to be aligned to 16 bytes.
// HOIST-NOT: guarded
// CHECK-LABEL: func.func @unaligned_base
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: return
func.func @unaligned_base(%V: !kiln.ptr<f16>, %offset: i64, %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32,
                %p: tensor<128x64xf16>, %out: tensor<64x64x!kiln.ptr<f16>>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %vb = kiln.load %v : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %d = kiln.dot %p, %vb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %step = arith.muli %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>
  }
  return %r#0 : tensor<128x64xf32>
}

// -----

// A row stride not known to be a multiple of 16 bytes.
// HOIST-NOT: guarded
// CHECK-LABEL: func.func @unaligned_stride
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: return
func.func @unaligned_stride(%V: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %offset: i64, %stride: i32, %n: i32,
                %p: tensor<128x64xf16>, %out: tensor<64x64x!kiln.ptr<f16>>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %vb = kiln.load %v : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %d = kiln.dot %p, %vb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %step = arith.muli %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>
  }
  return %r#0 : tensor<128x64xf32>
}

// -----

// A parameter the kernel also writes through: the TMA unit's reads would
// have to be fenced against the kernel's own stores (the async proxy), so
// its loads keep their pointers.
// HOIST-NOT: guarded
// CHECK-LABEL: func.func @written
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: return
func.func @written(%V: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %offset: i64, %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32,
                %p: tensor<128x64xf16>, %out: tensor<64x64x!kiln.ptr<f16>>) -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = kiln.expand_dims %range {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
  %v_base = kiln.addptr %V, %offset : !kiln.ptr<f16>, i64
  %v_splat = kiln.splat %v_base : !kiln.ptr<f16> -> tensor<64x1x!kiln.ptr<f16>>
  %v_rows = kiln.addptr %v_splat, %row_offsets : tensor<64x1x!kiln.ptr<f16>>, tensor<64x1xi32>
  %v_bcast = kiln.broadcast %v_rows : tensor<64x1x!kiln.ptr<f16>> -> tensor<64x64x!kiln.ptr<f16>>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %v0 = kiln.addptr %v_bcast, %cols_b : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero, %v = %v0)
      -> (tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>) : i32 {
    %vb = kiln.load %v : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %d = kiln.dot %p, %vb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %step = arith.muli %c64, %stride : i32
    %advance = kiln.splat %step : i32 -> tensor<64x64xi32>
    %v1 = kiln.addptr %v, %advance : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    scf.yield %d, %v1 : tensor<128x64xf32>, tensor<64x64x!kiln.ptr<f16>>
  }
  %back = kiln.load %v0 : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
  kiln.store %v0, %back : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xf16>
  return %r#0 : tensor<128x64xf32>
}

// -----

// Pointers computed in the body from the induction variable (the
// backward's form: `Q + offset + (start_m + offs_m)[:, None] * stride +
// offs_d[None, :]`), masked to the rows below %n. The row is computed from
// the induction variable in the copy (64 rows a step of 1, here 64), and
// the check requires the mask's least margin over the block, n - (i + 63),
// to be positive at the first and the last trip.
// HOIST: kiln.derived_tensor_maps = [{arg = 5 : i64, base = 0 : i64, bfloat16 = false, element_bits = 16 : i64, guarded = true,
// HOIST-LABEL: func.func @induction
// CHECK-LABEL: func.func @induction
// CHECK: %[[ROW:.*]] = arith.divsi %arg1, %{{.*}} : i64
// CHECK: %[[N:.*]] = arith.extsi %arg3 : i32 to i64
// CHECK: %[[MARGIN:.*]] = arith.addi %[[N]], %c-63_i64 : i64
// CHECK: arith.muli %{{.*}}, %c-1_i64 : i64
// CHECK: %[[LEAST:.*]] = arith.minsi
// CHECK-NEXT: %[[POSITIVE:.*]] = arith.cmpi sgt, %[[LEAST]], %c0_i64 : i64
// CHECK: %[[MAP:.*]] = kiln.make_tensor_map %arg0
// CHECK-NEXT: %[[ROW32:.*]] = arith.trunci %[[ROW]] : i64 to i32
// CHECK-NEXT: %[[COL32:.*]] = arith.trunci
// CHECK: scf.if
// CHECK: scf.for %[[IV:[a-z0-9]+]] = {{.*}} -> (tensor<128x64xf32>) : i32 {
// CHECK: %[[STEP:.*]] = arith.muli %[[IV]], %c1_i32 : i32
// CHECK-NEXT: %[[R:.*]] = arith.addi %[[ROW32]], %[[STEP]] : i32
// CHECK-NEXT: kiln.load %{{.*}} tensor_map %[[MAP]][%[[R]], %[[COL32]]] : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
// CHECK: } else {
// CHECK: kiln.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
// CHECK: } {kiln.tensor_map_version}
func.func @induction(%Q: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %offset: i64,
                     %stride: i32 {kiln.divisibility = 16 : i32}, %n: i32, %p: tensor<128x64xf16>)
    -> tensor<128x64xf32> attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %fzero = arith.constant dense<0.0> : tensor<64x64xf16>
  %range = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %cols = kiln.expand_dims %range {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cols_b = kiln.broadcast %cols : tensor<1x64xi32> -> tensor<64x64xi32>
  %q_base = kiln.addptr %Q, %offset : !kiln.ptr<f16>, i64
  %q_splat = kiln.splat %q_base : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>>
  %bound = kiln.splat %n : i32 -> tensor<64xi32>
  %stride_rows = kiln.splat %stride : i32 -> tensor<64x1xi32>
  %r = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %zero) -> (tensor<128x64xf32>) : i32 {
    %start = kiln.splat %i : i32 -> tensor<64xi32>
    %offs = arith.addi %start, %range : tensor<64xi32>
    %inside1 = arith.cmpi slt, %offs, %bound : tensor<64xi32>
    %inside2 = kiln.expand_dims %inside1 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
    %inside = kiln.broadcast %inside2 : tensor<64x1xi1> -> tensor<64x64xi1>
    %rows = kiln.expand_dims %offs {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %row_offsets = arith.muli %rows, %stride_rows : tensor<64x1xi32>
    %row_b = kiln.broadcast %row_offsets : tensor<64x1xi32> -> tensor<64x64xi32>
    %offsets = arith.addi %row_b, %cols_b : tensor<64x64xi32>
    %ptrs = kiln.addptr %q_splat, %offsets : tensor<64x64x!kiln.ptr<f16>>, tensor<64x64xi32>
    %qb = kiln.load %ptrs, %inside, %fzero : tensor<64x64x!kiln.ptr<f16>> -> tensor<64x64xf16>
    %d = kiln.dot %p, %qb, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  return %r : tensor<128x64xf32>
}
