// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s

#b2 = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// One run of the text per element a thread holds (packed_element = 1); a
// pure text has no side effects.
// CHECK-LABEL: llvm.func @shift
// CHECK-COUNT-2: llvm.inline_asm asm_dialect = att "shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r" %{{.*}}, %{{.*}}, %{{.*}} : (i32, i32, i32) -> i32
// CHECK-NOT: llvm.inline_asm
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @shift(%x: tensor<64xi32, #b2>, %y: tensor<64xi32, #b2>, %s: tensor<64xi32, #b2>) -> tensor<64xi32, #b2> {
    %z = kiln.elementwise_inline_asm "shf.l.wrap.b32 $0, $1, $2, $3;" "=r,r,r,r"(%x, %y, %s) {packed_element = 1 : i32, pure = true} : (tensor<64xi32, #b2>, tensor<64xi32, #b2>, tensor<64xi32, #b2>) -> tensor<64xi32, #b2>
    return %z : tensor<64xi32, #b2>
  }
}

// -----

#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// Four i8 per run travel packed in one 32-bit register, both ways.
// CHECK-LABEL: llvm.func @packed
// CHECK: %[[IN:.*]] = llvm.bitcast %{{.*}} : vector<4xi8> to i32
// CHECK: %[[OUT:.*]] = llvm.inline_asm asm_dialect = att "and.b32 $0, $1, 0x1F1F1F1F;", "=r,r" %[[IN]] : (i32) -> i32
// CHECK: llvm.bitcast %[[OUT]] : i32 to vector<4xi8>
// CHECK-NOT: llvm.inline_asm
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @packed(%x: tensor<128xi8, #b4>) -> tensor<128xi8, #b4> {
    %y = kiln.elementwise_inline_asm "and.b32 $0, $1, 0x1F1F1F1F;" "=r,r"(%x) {packed_element = 4 : i32, pure = true} : (tensor<128xi8, #b4>) -> tensor<128xi8, #b4>
    return %y : tensor<128xi8, #b4>
  }
}

// -----

#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// Several results: one register per 32-bit element of each, in result
// order, returned as a struct; the i8 operand fills one register, the f32
// one four.
// CHECK-LABEL: llvm.func @outputs
// CHECK: %[[ASM:.*]] = llvm.inline_asm asm_dialect = att "max.f32 $4, $4, $9;", "=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r" %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (i32, f32, f32, f32, f32) -> !llvm.struct<(i32, i32, i32, i32, f32, f32, f32, f32)>
// CHECK: llvm.extractvalue %[[ASM]][0]
// CHECK: llvm.extractvalue %[[ASM]][7]
// CHECK-NOT: llvm.inline_asm
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @outputs(%a: tensor<128xi8, #b4>, %b: tensor<128xf32, #b4>) -> (tensor<128xi32, #b4>, tensor<128xf32, #b4>) {
    %c, %d = kiln.elementwise_inline_asm "max.f32 $4, $4, $9;" "=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r"(%a, %b) {packed_element = 4 : i32, pure = true} : (tensor<128xi8, #b4>, tensor<128xf32, #b4>) -> (tensor<128xi32, #b4>, tensor<128xf32, #b4>)
    return %c, %d : tensor<128xi32, #b4>, tensor<128xf32, #b4>
  }
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// Pointers travel as 64-bit integers; an impure text keeps its side
// effects.
// CHECK-LABEL: llvm.func @pointers
// CHECK-COUNT-2: llvm.ptrtoint %{{.*}} : !llvm.ptr<1> to i64
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "ld.global.b8 $0, [$1];", "=r,l" %{{.*}} : (i64) -> i8
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "ld.global.b8 $0, [$1];", "=r,l" %{{.*}} : (i64) -> i8
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @pointers(%p: tensor<64x!kiln.ptr<i8>, #b2>) -> tensor<64xi8, #b2> {
    %y = kiln.elementwise_inline_asm "ld.global.b8 $0, [$1];" "=r,l"(%p) {packed_element = 1 : i32, pure = false} : (tensor<64x!kiln.ptr<i8>, #b2>) -> tensor<64xi8, #b2>
    return %y : tensor<64xi8, #b2>
  }
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// A thread holding fewer elements than a run takes repeats its last one;
// only the results of its own elements are kept.
// CHECK-LABEL: llvm.func @short_run
// CHECK: %[[E0:.*]] = llvm.extractelement %arg0[%{{.*}} : i32] : vector<2xi8>
// CHECK: %[[E1:.*]] = llvm.extractelement %arg0[%{{.*}} : i32] : vector<2xi8>
// CHECK: llvm.insertelement %[[E0]]
// CHECK: llvm.insertelement %[[E1]]
// CHECK: llvm.insertelement %[[E1]]
// CHECK: llvm.insertelement %[[E1]]
// CHECK: llvm.bitcast %{{.*}} : vector<4xi8> to i32
// CHECK: llvm.inline_asm
// CHECK-NOT: llvm.inline_asm
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @short_run(%x: tensor<64xi8, #b2>) -> tensor<64xi8, #b2> {
    %y = kiln.elementwise_inline_asm "shl.b32 $0, $1, 3;" "=r,r"(%x) {packed_element = 4 : i32, pure = true} : (tensor<64xi8, #b2>) -> tensor<64xi8, #b2>
    return %y : tensor<64xi8, #b2>
  }
}

// -----

// Without operands the text runs once per thread, for a scalar.
// CHECK-LABEL: llvm.func @timer
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "mov.u64 $0, %globaltimer;", "=l"  : () -> i64
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @timer() -> i64 {
    %t = kiln.elementwise_inline_asm "mov.u64 $0, %globaltimer;" "=l"() {packed_element = 1 : i32, pure = false} : () -> i64
    return %t : i64
  }
}
