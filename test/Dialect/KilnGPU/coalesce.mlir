// RUN: kiln-opt %s -split-input-file -kiln-gpu-coalesce | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-gpu-coalesce -kiln-gpu-match-shape-layouts -canonicalize | FileCheck %s --check-prefix=MATCHED

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// 16-byte-aligned, contiguous f32 accesses: four elements (16 bytes) per thread.
// CHECK: #[[B4:.*]] = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: func.func @aligned_f32
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @aligned_f32(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) {
  %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b1>
  %p = kiln.addptr %xs, %r : tensor<1024x!kiln.ptr<f32>, #b1>, tensor<1024xi32, #b1>
  // CHECK: kiln.load %{{.*}} : tensor<1024x!kiln.ptr<f32>, #[[B4]]> -> tensor<1024xf32, #[[B4]]>
  %v = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #b1> -> tensor<1024xf32, #b1>
  kiln.store %p, %v : tensor<1024x!kiln.ptr<f32>, #b1>, tensor<1024xf32, #b1>
  return
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// fp16: eight elements make 16 bytes.
// CHECK: #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @aligned_f16(%x: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}) {
  %r = kiln.make_range {start = 0 : i32, end = 2048 : i32} : tensor<2048xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f16> -> tensor<2048x!kiln.ptr<f16>, #b1>
  %p = kiln.addptr %xs, %r : tensor<2048x!kiln.ptr<f16>, #b1>, tensor<2048xi32, #b1>
  %v = kiln.load %p : tensor<2048x!kiln.ptr<f16>, #b1> -> tensor<2048xf16, #b1>
  return
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Without an alignment proof a pointer is only element-aligned: one element.
// CHECK: #[[B1:.*]] = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: func.func @unaligned
// CHECK: kiln.load %{{.*}} : tensor<1024x!kiln.ptr<f32>, #[[B1]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @unaligned(%x: !kiln.ptr<f32>) {
  %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b1>
  %p = kiln.addptr %xs, %r : tensor<1024x!kiln.ptr<f32>, #b1>, tensor<1024xi32, #b1>
  %v = kiln.load %p : tensor<1024x!kiln.ptr<f32>, #b1> -> tensor<1024xf32, #b1>
  return
}
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A block with fewer elements than threads cannot give a thread more than one.
// CHECK: #[[S1:.*]] = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: func.func @small_block
// CHECK: kiln.load %{{.*}} : tensor<64x!kiln.ptr<f32>, #[[S1]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @small_block(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}) {
  %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #b1>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>, #b1>
  %p = kiln.addptr %xs, %r : tensor<64x!kiln.ptr<f32>, #b1>, tensor<64xi32, #b1>
  %v = kiln.load %p : tensor<64x!kiln.ptr<f32>, #b1> -> tensor<64xf32, #b1>
  return
}
}

// -----

// A column-major f16 block (contiguous down its 64 rows, columns 16-byte
// aligned apart): eight elements per thread run down the columns.
// CHECK: #[[COL:.*]] = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
// CHECK-LABEL: func.func @column_major
// CHECK: kiln.load %{{.*}} : tensor<64x32x!kiln.ptr<f16>, #[[COL]]> -> tensor<64x32xf16, #[[COL]]>
#blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @column_major(%arg0: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %arg1: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #blocked>
    %1 = kiln.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #blocked>
    %2 = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #blocked> -> tensor<64x1xi32, #blocked1>
    %3 = kiln.expand_dims %1 {axis = 0 : i32} : tensor<32xi32, #blocked> -> tensor<1x32xi32, #blocked2>
    %4 = kiln.splat %arg1 : i32 -> tensor<1x32xi32, #blocked2>
    %5 = arith.muli %3, %4 : tensor<1x32xi32, #blocked2>
    %6 = kiln.broadcast %2 : tensor<64x1xi32, #blocked1> -> tensor<64x32xi32, #blocked2>
    %7 = kiln.broadcast %5 : tensor<1x32xi32, #blocked2> -> tensor<64x32xi32, #blocked2>
    %8 = arith.addi %6, %7 : tensor<64x32xi32, #blocked2>
    %9 = kiln.splat %arg0 : !kiln.ptr<f16> -> tensor<64x32x!kiln.ptr<f16>, #blocked2>
    %10 = kiln.addptr %9, %8 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xi32, #blocked2>
    %11 = kiln.load %10 : tensor<64x32x!kiln.ptr<f16>, #blocked2> -> tensor<64x32xf16, #blocked2>
    kiln.store %10, %11 : tensor<64x32x!kiln.ptr<f16>, #blocked2>, tensor<64x32xf16, #blocked2>
    return
  }
}


// -----

// A block loaded row-major and stored column-major (both 16-byte aligned):
// the shape's layout runs along the rows, as the load's pointers do; the
// store gets its own layout down the columns, its value converted and its
// pointers recomputed there, so that it too moves 16 bytes at a time.
// CHECK-DAG: #[[ROW:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[COL:.*]] = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
// CHECK-LABEL: func.func @transposing_copy
// CHECK: %[[V:.*]] = kiln.load %{{.*}} : tensor<64x64x!kiln.ptr<f16>, #[[ROW]]> -> tensor<64x64xf16, #[[ROW]]>
// CHECK: %[[C:.*]] = kiln_gpu.convert_layout %[[V]] : tensor<64x64xf16, #[[ROW]]> -> tensor<64x64xf16, #[[COL]]>
// CHECK: kiln.store %{{.*}}, %[[C]] : tensor<64x64x!kiln.ptr<f16>, #[[COL]]>, tensor<64x64xf16, #[[COL]]>
// The conversion stays through kiln-gpu-match-shape-layouts, which drops
// those that do not widen a store.
// MATCHED-LABEL: func.func @transposing_copy
// MATCHED: %[[C:.*]] = kiln_gpu.convert_layout
// MATCHED: kiln.store %{{.*}}, %[[C]]
#blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @transposing_copy(%x: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %z: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #blocked>
    %c64 = arith.constant dense<64> : tensor<64x64xi32, #blocked2>
    %rows = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #blocked> -> tensor<64x1xi32, #blocked1>
    %cols = kiln.expand_dims %0 {axis = 0 : i32} : tensor<64xi32, #blocked> -> tensor<1x64xi32, #blocked2>
    %r = kiln.broadcast %rows : tensor<64x1xi32, #blocked1> -> tensor<64x64xi32, #blocked2>
    %c = kiln.broadcast %cols : tensor<1x64xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
    %rowMajor = arith.muli %r, %c64 : tensor<64x64xi32, #blocked2>
    %xOffsets = arith.addi %rowMajor, %c : tensor<64x64xi32, #blocked2>
    %colMajor = arith.muli %c, %c64 : tensor<64x64xi32, #blocked2>
    %zOffsets = arith.addi %colMajor, %r : tensor<64x64xi32, #blocked2>
    %xs = kiln.splat %x : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %xp = kiln.addptr %xs, %xOffsets : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %zs = kiln.splat %z : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %zp = kiln.addptr %zs, %zOffsets : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %v = kiln.load %xp : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
    kiln.store %zp, %v : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xf16, #blocked2>
    return
  }
}

// -----

// Two loads of one shape, one row-major and one column-major (attention's
// Q and transposed K): the shape's layout runs along the rows; the
// column-major load gets its own layout down the columns, its pointers
// recomputed there, and its block converted to the shape's layout.
// CHECK-DAG: #[[ROW:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[COL:.*]] = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
// CHECK-LABEL: func.func @row_and_column_loads
// CHECK: kiln.load %{{.*}} : tensor<64x64x!kiln.ptr<f16>, #[[ROW]]> -> tensor<64x64xf16, #[[ROW]]>
// CHECK: %[[K:.*]] = kiln.load %{{.*}} : tensor<64x64x!kiln.ptr<f16>, #[[COL]]> -> tensor<64x64xf16, #[[COL]]>
// CHECK: kiln_gpu.convert_layout %[[K]] : tensor<64x64xf16, #[[COL]]> -> tensor<64x64xf16, #[[ROW]]>
#blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @row_and_column_loads(%x: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %y: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}) -> (tensor<64x64xf16, #blocked2>, tensor<64x64xf16, #blocked2>) attributes {kiln.kernel} {
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #blocked>
    %c64 = arith.constant dense<64> : tensor<64x64xi32, #blocked2>
    %rows = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #blocked> -> tensor<64x1xi32, #blocked1>
    %cols = kiln.expand_dims %0 {axis = 0 : i32} : tensor<64xi32, #blocked> -> tensor<1x64xi32, #blocked2>
    %r = kiln.broadcast %rows : tensor<64x1xi32, #blocked1> -> tensor<64x64xi32, #blocked2>
    %c = kiln.broadcast %cols : tensor<1x64xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
    %rowMajor = arith.muli %r, %c64 : tensor<64x64xi32, #blocked2>
    %xOffsets = arith.addi %rowMajor, %c : tensor<64x64xi32, #blocked2>
    %colMajor = arith.muli %c, %c64 : tensor<64x64xi32, #blocked2>
    %yOffsets = arith.addi %colMajor, %r : tensor<64x64xi32, #blocked2>
    %xs = kiln.splat %x : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %xp = kiln.addptr %xs, %xOffsets : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %ys = kiln.splat %y : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %yp = kiln.addptr %ys, %yOffsets : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %q = kiln.load %xp : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
    %k = kiln.load %yp : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
    return %q, %k : tensor<64x64xf16, #blocked2>, tensor<64x64xf16, #blocked2>
  }
}

// -----

// The column-major load's pointers are carried by a loop that advances
// them: the loop carries them in the load's own layout (its initial value
// and step recomputed there), so that nothing is converted per iteration.
// CHECK-DAG: #[[COL:.*]] = #kiln_gpu.blocked<{sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>
// CHECK-LABEL: func.func @carried_column_pointers
// CHECK: scf.for {{.*}} iter_args(%[[P:.*]] = %{{.*}}) -> (tensor<64x64x!kiln.ptr<f16>, #[[COL]]>)
// CHECK-NEXT: kiln.load %[[P]] : tensor<64x64x!kiln.ptr<f16>, #[[COL]]>
// CHECK-NOT: kiln_gpu.convert_layout {{.*}}!kiln.ptr
// CHECK: kiln.addptr %[[P]], %{{.*}} : tensor<64x64x!kiln.ptr<f16>, #[[COL]]>
#blocked = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @carried_column_pointers(%x: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %y: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %n: i32) -> tensor<64x64xf16, #blocked2> attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %0 = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #blocked>
    %c64 = arith.constant dense<64> : tensor<64x64xi32, #blocked2>
    %rows = kiln.expand_dims %0 {axis = 1 : i32} : tensor<64xi32, #blocked> -> tensor<64x1xi32, #blocked1>
    %cols = kiln.expand_dims %0 {axis = 0 : i32} : tensor<64xi32, #blocked> -> tensor<1x64xi32, #blocked2>
    %r = kiln.broadcast %rows : tensor<64x1xi32, #blocked1> -> tensor<64x64xi32, #blocked2>
    %c = kiln.broadcast %cols : tensor<1x64xi32, #blocked2> -> tensor<64x64xi32, #blocked2>
    %rowMajor = arith.muli %r, %c64 : tensor<64x64xi32, #blocked2>
    %xOffsets = arith.addi %rowMajor, %c : tensor<64x64xi32, #blocked2>
    %colMajor = arith.muli %c, %c64 : tensor<64x64xi32, #blocked2>
    %yOffsets = arith.addi %colMajor, %r : tensor<64x64xi32, #blocked2>
    %xs = kiln.splat %x : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %xp = kiln.addptr %xs, %xOffsets : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %q = kiln.load %xp : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
    %ys = kiln.splat %y : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>, #blocked2>
    %yp = kiln.addptr %ys, %yOffsets : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
    %step = arith.constant dense<4096> : tensor<64x64xi32, #blocked2>
    %last = scf.for %i = %c0 to %n step %c1 iter_args(%p = %yp) -> (tensor<64x64x!kiln.ptr<f16>, #blocked2>) : i32 {
      %k = kiln.load %p : tensor<64x64x!kiln.ptr<f16>, #blocked2> -> tensor<64x64xf16, #blocked2>
      %next = kiln.addptr %p, %step : tensor<64x64x!kiln.ptr<f16>, #blocked2>, tensor<64x64xi32, #blocked2>
      scf.yield %next : tensor<64x64x!kiln.ptr<f16>, #blocked2>
    }
    return %q : tensor<64x64xf16, #blocked2>
  }
}
