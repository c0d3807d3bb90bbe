// RUN: kiln-opt %s -split-input-file -kiln-gpu-accelerate-matmul -canonicalize | FileCheck %s

#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
#bC = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>

// An f16 dot in a loop on sm_90a: the result takes the wgmma accumulator
// layout (all warps along the rows), the loop carries it (the zeros are
// recomputed there), and the store takes it directly with recomputed
// pointers.
// CHECK-DAG: #[[MMA:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @loop
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #[[MMA]]>
// CHECK: %[[R:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (tensor<64x64xf32, #[[MMA]]>)
// CHECK: %[[D:.*]] = kiln.dot %{{.*}}, %{{.*}}, %[[ACC]] {{.*}} -> tensor<64x64xf32, #[[MMA]]>
// CHECK: scf.yield %[[D]] : tensor<64x64xf32, #[[MMA]]>
// CHECK-NOT: kiln_gpu.convert_layout
// CHECK: kiln.store %{{.*}}, %[[R]] : tensor<64x64x!kiln.ptr<f32>, #[[MMA]]>, tensor<64x64xf32, #[[MMA]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @loop(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bB>, %p: !kiln.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #bC>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x64xf32, #bC>) : i32 {
    %d = kiln.dot %a, %b, %acc {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #bC>
    scf.yield %d : tensor<64x64xf32, #bC>
  }
  %ps = kiln.splat %p : !kiln.ptr<f32> -> tensor<64x64x!kiln.ptr<f32>, #bC>
  kiln.store %ps, %r : tensor<64x64x!kiln.ptr<f32>, #bC>, tensor<64x64xf32, #bC>
  return
}
}

// -----

// Stored to contiguous, aligned addresses, the result converts back (after
// the element-wise truncation, in fp16) to the layout that stores 16 bytes
// at a time: from the accumulator's pairs of columns, each store would need
// its own address and mask.
// CHECK-DAG: #[[ROWS:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[ACC:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @epilogue
// CHECK: %[[D:.*]] = kiln.dot {{.*}} -> tensor<64x64xf32, #[[ACC]]>
// CHECK: %[[H:.*]] = arith.truncf %[[D]] : tensor<64x64xf32, #[[ACC]]> to tensor<64x64xf16, #[[ACC]]>
// CHECK: %[[C:.*]] = kiln_gpu.convert_layout %[[H]] : tensor<64x64xf16, #[[ACC]]> -> tensor<64x64xf16, #[[ROWS]]>
// CHECK: kiln.store %{{.*}}, %[[C]] : tensor<64x64x!kiln.ptr<f16>, #[[ROWS]]>
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
#bC = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @epilogue(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bB>, %p: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}) {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #bC>
  %d = kiln.dot %a, %b, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #bC>
  %h = arith.truncf %d : tensor<64x64xf32, #bC> to tensor<64x64xf16, #bC>
  %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #kiln_gpu.slice<{dim = 1, parent = #bC}>>
  %c = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #kiln_gpu.slice<{dim = 0, parent = #bC}>>
  %re = kiln.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #kiln_gpu.slice<{dim = 1, parent = #bC}>> -> tensor<64x1xi32, #bC>
  %ce = kiln.expand_dims %c {axis = 0 : i32} : tensor<64xi32, #kiln_gpu.slice<{dim = 0, parent = #bC}>> -> tensor<1x64xi32, #bC>
  %stride = arith.constant dense<64> : tensor<64x1xi32, #bC>
  %rs = arith.muli %re, %stride : tensor<64x1xi32, #bC>
  %rb = kiln.broadcast %rs : tensor<64x1xi32, #bC> -> tensor<64x64xi32, #bC>
  %cb = kiln.broadcast %ce : tensor<1x64xi32, #bC> -> tensor<64x64xi32, #bC>
  %off = arith.addi %rb, %cb : tensor<64x64xi32, #bC>
  %ps = kiln.splat %p : !kiln.ptr<f16> -> tensor<64x64x!kiln.ptr<f16>, #bC>
  %ptr = kiln.addptr %ps, %off : tensor<64x64x!kiln.ptr<f16>, #bC>, tensor<64x64xi32, #bC>
  kiln.store %ptr, %h : tensor<64x64x!kiln.ptr<f16>, #bC>, tensor<64x64xf16, #bC>
  return
}
}

// -----

// The same dot on sm_80: mma.sync's layout, warps split 2 x 2.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bC = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK: #[[MMA2:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
// CHECK-LABEL: func.func @sm80
// CHECK: kiln.dot {{.*}} -> tensor<64x64xf32, #[[MMA2]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @sm80(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bA>, %c: tensor<64x64xf32, #bC>) -> tensor<64x64xf32, #bC> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bA> -> tensor<64x64xf32, #bC>
  return %d : tensor<64x64xf32, #bC>
}
}

// -----

// On sm_80 with 8 warps, a 128x256 result: the warps split 2 x 4.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>
#bC = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [8, 1], order = [1, 0]}>
// CHECK: #[[MMA8:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 4], order = [1, 0]}>
// CHECK-LABEL: func.func @eight_warps
// CHECK: kiln.dot {{.*}} -> tensor<128x256xf32, #[[MMA8]]>
module attributes {kiln_gpu.num_warps = 8 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @eight_warps(%a: tensor<128x32xbf16, #bA>, %b: tensor<32x256xbf16, #bA>, %c: tensor<128x256xf32, #bC>) -> tensor<128x256xf32, #bC> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<128x32xbf16, #bA> * tensor<32x256xbf16, #bA> -> tensor<128x256xf32, #bC>
  return %d : tensor<128x256xf32, #bC>
}
}

// -----

// A 16x16 result has two 16x8 instruction tiles for 4 warps: warps 2 and 3
// repeat them (the layout's warps cover 32 columns and wrap around).
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK: #[[MMAR:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK-LABEL: func.func @replicated_warps
// CHECK: kiln.dot {{.*}} -> tensor<16x16xf32, #[[MMAR]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @replicated_warps(%a: tensor<16x16xf16, #bA>, %b: tensor<16x16xf16, #bA>, %c: tensor<16x16xf32, #bA>) -> tensor<16x16xf32, #bA> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x16xf16, #bA> * tensor<16x16xf16, #bA> -> tensor<16x16xf32, #bA>
  return %d : tensor<16x16xf32, #bA>
}
}

// -----

// f32 operands multiplied exactly (ieee) keep their blocked layout: FMAs.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @fp32_ieee
// CHECK-NOT: kiln_gpu.convert_layout
// CHECK: kiln.dot {{.*}} -> tensor<32x32xf32, #{{.*}}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @fp32_ieee(%a: tensor<32x32xf32, #bA>, %c: tensor<32x32xf32, #bA>) -> tensor<32x32xf32, #bA> {
  %d = kiln.dot %a, %a, %c {inputPrecision = #kiln.precision<ieee>} : tensor<32x32xf32, #bA> * tensor<32x32xf32, #bA> -> tensor<32x32xf32, #bA>
  return %d : tensor<32x32xf32, #bA>
}
}

// -----

// tf32 and int8 take the tensor cores: wgmma on sm_90a where the block
// tiles by it, except tf32x3 (its operands are split in registers) and
// int8 with N over 224 (wgmma's s8 shapes stop there), which take mma.sync.
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[WG:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[MMA:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
// CHECK-LABEL: func.func @tf32
// CHECK: kiln.dot {{.*}} -> tensor<128x128xf32, #[[WG]]>
// CHECK-LABEL: func.func @tf32x3
// CHECK: kiln.dot {{.*}} -> tensor<128x128xf32, #[[MMA]]>
// CHECK-LABEL: func.func @int8
// CHECK: kiln.dot {{.*}} -> tensor<128x128xi32, #[[WG]]>
// CHECK-LABEL: func.func @int8_wide
// CHECK: kiln.dot {{.*}} -> tensor<128x256xi32, #[[MMA]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @tf32(%a: tensor<128x32xf32, #bA>, %b: tensor<32x128xf32, #bA>, %c: tensor<128x128xf32, #bA>) -> tensor<128x128xf32, #bA> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<tf32>} : tensor<128x32xf32, #bA> * tensor<32x128xf32, #bA> -> tensor<128x128xf32, #bA>
  return %d : tensor<128x128xf32, #bA>
}
func.func @tf32x3(%a: tensor<128x32xf32, #bA>, %b: tensor<32x128xf32, #bA>, %c: tensor<128x128xf32, #bA>) -> tensor<128x128xf32, #bA> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<tf32x3>} : tensor<128x32xf32, #bA> * tensor<32x128xf32, #bA> -> tensor<128x128xf32, #bA>
  return %d : tensor<128x128xf32, #bA>
}
func.func @int8(%a: tensor<128x32xi8, #bA>, %b: tensor<32x128xi8, #bA>, %c: tensor<128x128xi32, #bA>) -> tensor<128x128xi32, #bA> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<128x32xi8, #bA> * tensor<32x128xi8, #bA> -> tensor<128x128xi32, #bA>
  return %d : tensor<128x128xi32, #bA>
}
func.func @int8_wide(%a: tensor<128x32xi8, #bA>, %b: tensor<32x256xi8, #bA>, %c: tensor<128x256xi32, #bA>) -> tensor<128x256xi32, #bA> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<128x32xi8, #bA> * tensor<32x256xi8, #bA> -> tensor<128x256xi32, #bA>
  return %d : tensor<128x256xi32, #bA>
}
}

// -----

// 8-bit floats keep their bytes where wgmma computes the dot, also one
// that promotes within its K (maxNumImpreciseAcc under K); elsewhere they
// are decoded to f16, as on sm_80 (mma.sync takes 8-bit floats from sm_89).
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[WG:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @fp8
// CHECK-NOT: arith.truncf
// CHECK: kiln.dot {{.*}}aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>{{.*}} : tensor<128x32xi8, #{{.*}}> * tensor<32x128xi8, #{{.*}}> -> tensor<128x128xf32, #[[WG]]>
// CHECK-LABEL: func.func @fp8_promoting
// CHECK-NOT: arith.truncf
// CHECK: kiln.dot {{.*}}maxNumImpreciseAcc = 16 : i32{{.*}} : tensor<128x32xi8, #{{.*}}> * tensor<32x128xi8, #{{.*}}> -> tensor<128x128xf32, #[[WG]]>
// CHECK-LABEL: func.func @fp8_narrow
// CHECK-NOT: arith.truncf
// CHECK: kiln.dot {{.*}} : tensor<128x32xi8, #{{.*}}> * tensor<32x32xi8, #{{.*}}> -> tensor<128x32xf32, #[[WG]]>
// CHECK-LABEL: func.func @fp8_n48
// CHECK: arith.truncf
// CHECK: kiln.dot {{.*}} : tensor<128x32xf16, #{{.*}}> * tensor<32x48xf16, #{{.*}}> -> tensor<128x48xf32, #{{.*}}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @fp8(%a: tensor<128x32xi8, #bA>, %b: tensor<32x128xi8, #bA>, %c: tensor<128x128xf32, #bA>) -> tensor<128x128xf32, #bA> {
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<128x32xi8, #bA> * tensor<32x128xi8, #bA> -> tensor<128x128xf32, #bA>
  return %d : tensor<128x128xf32, #bA>
}
func.func @fp8_promoting(%a: tensor<128x32xi8, #bA>, %b: tensor<32x128xi8, #bA>, %c: tensor<128x128xf32, #bA>) -> tensor<128x128xf32, #bA> {
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 16 : i32} : tensor<128x32xi8, #bA> * tensor<32x128xi8, #bA> -> tensor<128x128xf32, #bA>
  return %d : tensor<128x128xf32, #bA>
}
// N = 32: one block of B, K-major (8-bit B always is).
func.func @fp8_narrow(%a: tensor<128x32xi8, #bA>, %b: tensor<32x32xi8, #bA>, %c: tensor<128x32xf32, #bA>) -> tensor<128x32xf32, #bA> {
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e4m3>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<128x32xi8, #bA> * tensor<32x32xi8, #bA> -> tensor<128x32xf32, #bA>
  return %d : tensor<128x32xf32, #bA>
}
// N = 48: wgmma's N-major blocks are 16, 32 or a multiple of 64 columns.
func.func @fp8_n48(%a: tensor<128x32xi8, #bA>, %b: tensor<32x48xi8, #bA>, %c: tensor<128x48xf32, #bA>) -> tensor<128x48xf32, #bA> {
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e4m3>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<128x32xi8, #bA> * tensor<32x48xi8, #bA> -> tensor<128x48xf32, #bA>
  return %d : tensor<128x48xf32, #bA>
}
}

// -----

// CHECK-LABEL: func.func @fp8_sm80
// CHECK: arith.truncf
// CHECK: kiln.dot {{.*}} : tensor<128x32xf16, #{{.*}}> * tensor<32x128xf16, #{{.*}}> -> tensor<128x128xf32, #{{.*}}>
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @fp8_sm80(%a: tensor<128x32xi8, #bA>, %b: tensor<32x128xi8, #bA>, %c: tensor<128x128xf32, #bA>) -> tensor<128x128xf32, #bA> {
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e5m2>, bFloat8 = #kiln.float8<e5m2>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<128x32xi8, #bA> * tensor<32x128xi8, #bA> -> tensor<128x128xf32, #bA>
  return %d : tensor<128x128xf32, #bA>
}
}

// -----

// A batched dot takes the mma.sync layout with the batch repeating slowest,
// also on sm_90a.
#b3 = #kiln_gpu.blocked<{sizePerThread = [1, 1, 4], threadsPerWarp = [1, 8, 4], warpsPerCTA = [1, 4, 1], order = [2, 1, 0]}>
// CHECK: #[[MMA3:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 1, 2], threadsPerWarp = [1, 8, 4], warpsPerCTA = [1, 2, 2], order = [2, 1, 0]}>
// CHECK-LABEL: func.func @batched
// CHECK: kiln.dot {{.*}} -> tensor<4x32x16xf32, #[[MMA3]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @batched(%a: tensor<4x32x64xf16, #b3>, %b: tensor<4x64x16xf16, #b3>, %c: tensor<4x32x16xf32, #b3>) -> tensor<4x32x16xf32, #b3> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<4x32x64xf16, #b3> * tensor<4x64x16xf16, #b3> -> tensor<4x32x16xf32, #b3>
  return %d : tensor<4x32x16xf32, #b3>
}
}
