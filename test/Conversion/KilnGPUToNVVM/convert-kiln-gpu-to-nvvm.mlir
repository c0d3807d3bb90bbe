// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm=maxnreg=40 -kiln-nvvm-erase-needless-barriers | FileCheck %s --check-prefix=MAXNREG

#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A kernel becomes an nvvm.kernel of 128 threads; each thread holds two runs
// of four f32 (1024 = 2 x 512), moved by one 16-byte access per run, under
// the mask's predicate, with `other` moved in first.
// CHECK-LABEL: llvm.func @copy
// CHECK-SAME: %arg0: !llvm.ptr<1> {llvm.align = 16 : i64}
// CHECK-SAME: attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK: nvvm.read.ptx.sreg.tid.x
// With maxnreg set, ptxas may use that many registers per thread at most.
// MAXNREG-LABEL: llvm.func @copy
// MAXNREG-SAME: attributes {nvvm.kernel, nvvm.maxnreg = 40 : i32, nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK: llvm.mlir.constant(dense<[0, 1, 2, 3, 512, 513, 514, 515]> : vector<8xi32>)
// CHECK: llvm.getelementptr %{{.*}}[%{{.*}}] : (vector<8x!llvm.ptr<1>>, vector<8xi32>) -> vector<8x!llvm.ptr<1>>, f32
// CHECK-COUNT-2: "mov.b32 $0, $4;{{.*}}@$9 ld.global.v4.b32 { $0, $1, $2, $3 }, [ $8 + 0 ];", "=r,=r,=r,=r,r,r,r,r,l,b"
// CHECK-COUNT-2: "@$5 st.global.v4.b32 [ $4 + 0 ], { $0, $1, $2, $3 };", "r,r,r,r,l,b"
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @copy(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %y: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b4>
    %ns = kiln.splat %n : i32 -> tensor<1024xi32, #b4>
    %m = arith.cmpi slt, %r, %ns : tensor<1024xi32, #b4>
    %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b4>
    %xp = kiln.addptr %xs, %r : tensor<1024x!kiln.ptr<f32>, #b4>, tensor<1024xi32, #b4>
    %other = arith.constant dense<1.5> : tensor<1024xf32, #b4>
    %v = kiln.load %xp, %m, %other : tensor<1024x!kiln.ptr<f32>, #b4> -> tensor<1024xf32, #b4>
    %ys = kiln.splat %y : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b4>
    %yp = kiln.addptr %ys, %r : tensor<1024x!kiln.ptr<f32>, #b4>, tensor<1024xi32, #b4>
    kiln.store %yp, %v, %m : tensor<1024x!kiln.ptr<f32>, #b4>, tensor<1024xf32, #b4>
    return
  }
}

// -----

#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A bound not known to be a multiple of 16 makes the mask vary inside a run:
// one access per element, each with its own predicate.
// CHECK-LABEL: llvm.func @ragged
// CHECK-COUNT-8: "mov.b32 $0, 0;{{.*}}@$2 ld.global.b32 $0, [ $1 + 0 ];", "=r,l,b"
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @ragged(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32) -> tensor<1024xf32, #b4> attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b4>
    %ns = kiln.splat %n : i32 -> tensor<1024xi32, #b4>
    %m = arith.cmpi slt, %r, %ns : tensor<1024xi32, #b4>
    %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b4>
    %xp = kiln.addptr %xs, %r : tensor<1024x!kiln.ptr<f32>, #b4>, tensor<1024xi32, #b4>
    %v = kiln.load %xp, %m : tensor<1024x!kiln.ptr<f32>, #b4> -> tensor<1024xf32, #b4>
    return %v : tensor<1024xf32, #b4>
  }
}

// -----

#b8 = #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// Eight fp16 are one 16-byte access of four 32-bit words; booleans are bytes.
// CHECK-LABEL: llvm.func @half_and_bool
// CHECK: ld.global.v4.b32 { $0, $1, $2, $3 }
// CHECK: "mov.b16 $0, 0;{{.*}}@$2 ld.global.u8 $0, [ $1 + 0 ];", "=h,l,b"
// CHECK: llvm.trunc %{{.*}} : i16 to i8
// CHECK: llvm.trunc %{{.*}} : i8 to i1
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @half_and_bool(%x: !kiln.ptr<f16> {kiln.divisibility = 16 : i32}, %b: !kiln.ptr<i1>) -> (tensor<256xf16, #b8>, tensor<256xi1, #b8>) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32, #b8>
    %xs = kiln.splat %x : !kiln.ptr<f16> -> tensor<256x!kiln.ptr<f16>, #b8>
    %xp = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f16>, #b8>, tensor<256xi32, #b8>
    %v = kiln.load %xp : tensor<256x!kiln.ptr<f16>, #b8> -> tensor<256xf16, #b8>
    %bs = kiln.splat %b : !kiln.ptr<i1> -> tensor<256x!kiln.ptr<i1>, #b8>
    %bp = kiln.addptr %bs, %r : tensor<256x!kiln.ptr<i1>, #b8>, tensor<256xi32, #b8>
    %w = kiln.load %bp : tensor<256x!kiln.ptr<i1>, #b8> -> tensor<256xi1, #b8>
    return %v, %w : tensor<256xf16, #b8>, tensor<256xi1, #b8>
  }
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// Two f64 are one 16-byte access of two 64-bit words.
// CHECK-LABEL: llvm.func @double_copy
// CHECK: "mov.b64 $0, 0;{{.*}}@$3 ld.global.v2.b64 { $0, $1 }, [ $2 + 0 ];", "=l,=l,l,b"
// CHECK: "@$3 st.global.v2.b64 [ $2 + 0 ], { $0, $1 };", "l,l,l,b"
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @double_copy(%x: !kiln.ptr<f64> {kiln.divisibility = 16 : i32}, %y: !kiln.ptr<f64> {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32, #b2>
    %xs = kiln.splat %x : !kiln.ptr<f64> -> tensor<64x!kiln.ptr<f64>, #b2>
    %xp = kiln.addptr %xs, %r : tensor<64x!kiln.ptr<f64>, #b2>, tensor<64xi32, #b2>
    %v = kiln.load %xp : tensor<64x!kiln.ptr<f64>, #b2> -> tensor<64xf64, #b2>
    %ys = kiln.splat %y : !kiln.ptr<f64> -> tensor<64x!kiln.ptr<f64>, #b2>
    %yp = kiln.addptr %ys, %r : tensor<64x!kiln.ptr<f64>, #b2>, tensor<64xi32, #b2>
    kiln.store %yp, %v : tensor<64x!kiln.ptr<f64>, #b2>, tensor<64xf64, #b2>
    return
  }
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// 32 elements over 128 threads: threads 32..127 hold replicas, and only the
// owners store.
// CHECK-LABEL: llvm.func @replicated
// CHECK: llvm.icmp "ult"
// CHECK: llvm.urem
// CHECK: st.global.b32
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @replicated(%y: !kiln.ptr<f32>) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #b1>
    %ys = kiln.splat %y : !kiln.ptr<f32> -> tensor<32x!kiln.ptr<f32>, #b1>
    %yp = kiln.addptr %ys, %r : tensor<32x!kiln.ptr<f32>, #b1>, tensor<32xi32, #b1>
    %v = arith.sitofp %r : tensor<32xi32, #b1> to tensor<32xf32, #b1>
    kiln.store %yp, %v : tensor<32x!kiln.ptr<f32>, #b1>, tensor<32xf32, #b1>
    return
  }
}

// -----

// A scalar store stands for the program: thread 0 stores it, the others
// would repeat it (and a lagging warp's repeat could land after another
// program's write).
// CHECK-LABEL: llvm.func @scalar_store
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[FIRST:.*]] = llvm.icmp "eq" %[[TID]], %{{.*}} : i32
// CHECK: "@$2 st.global.b32 [ $1 + 0 ], $0;", "r,l,b" %{{.*}}, %{{.*}}, %[[FIRST]]
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @scalar_store(%y: !kiln.ptr<f32>, %v: f32) attributes {kiln.kernel} {
    kiln.store %y, %v : !kiln.ptr<f32>, f32
    return
  }
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [2, 16], warpsPerCTA = [1, 1], order = [1, 0]}>
#s0 = #kiln_gpu.slice<{dim = 0, parent = #b2}>

// expand_dims from a slice passes the thread's values through; broadcast
// repeats each of the thread's two source elements for its two rows.
// CHECK-LABEL: llvm.func @expand_and_broadcast
// CHECK: llvm.mlir.constant(dense<[0, 1]> : vector<2xi32>)
// CHECK: %[[COLS:.*]] = llvm.add %{{.*}}, %{{.*}} : vector<2xi32>
// CHECK-NEXT: %[[ROWS:.*]] = llvm.shufflevector %[[COLS]], %[[COLS]] [0, 1, 0, 1] : vector<2xi32>
// CHECK-NEXT: llvm.return %[[ROWS]] : vector<4xi32>
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @expand_and_broadcast() -> tensor<4x32xi32, #b2> attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #s0>
    %e = kiln.expand_dims %r {axis = 0 : i32} : tensor<32xi32, #s0> -> tensor<1x32xi32, #b2>
    %b = kiln.broadcast %e : tensor<1x32xi32, #b2> -> tensor<4x32xi32, #b2>
    return %b : tensor<4x32xi32, #b2>
  }
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// Math that NVPTX cannot select: f32 exp is libdevice's exp2f (ex2.approx)
// of x * log2(e); f64 exp and every erf call libdevice, one call per
// element; f16 computes in f32 and rounds back. sqrt keeps the upstream
// lowering.
// CHECK-DAG: llvm.func @__nv_erff(f32) -> f32
// CHECK-DAG: llvm.func @__nv_exp(f64) -> f64
// CHECK-DAG: llvm.func @__nv_exp2f(f32) -> f32
// CHECK-LABEL: llvm.func @math
// CHECK: llvm.mlir.constant(1.44269502 : f32) : f32
// CHECK: llvm.fmul %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK-COUNT-2: llvm.call @__nv_exp2f(%{{.*}}) : (f32) -> f32
// CHECK-COUNT-2: llvm.call @__nv_exp(%{{.*}}) : (f64) -> f64
// CHECK: llvm.fpext %{{.*}} : vector<2xf16> to vector<2xf32>
// CHECK-COUNT-2: llvm.call @__nv_erff(%{{.*}}) : (f32) -> f32
// CHECK: llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xf16>
// CHECK: llvm.intr.sqrt(%{{.*}}) : (vector<2xf32>) -> vector<2xf32>
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @math(%a: tensor<64xf32, #b2>, %b: tensor<64xf64, #b2>, %c: tensor<64xf16, #b2>) -> (tensor<64xf32, #b2>, tensor<64xf64, #b2>, tensor<64xf16, #b2>, tensor<64xf32, #b2>) {
    %0 = math.exp %a : tensor<64xf32, #b2>
    %1 = math.exp %b : tensor<64xf64, #b2>
    %2 = math.erf %c : tensor<64xf16, #b2>
    %3 = math.sqrt %a : tensor<64xf32, #b2>
    return %0, %1, %2, %3 : tensor<64xf32, #b2>, tensor<64xf64, #b2>, tensor<64xf16, #b2>, tensor<64xf32, #b2>
  }
}

// -----

#b2 = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>

// kiln.extern_elementwise calls its symbol once per element a thread holds;
// a scalar operand is shared by every call.
// CHECK: llvm.func @__nv_powif(f32, i32) -> f32
// CHECK-LABEL: llvm.func @extern
// CHECK-COUNT-2: llvm.call @__nv_powif(%{{.*}}, %{{.*}}) : (f32, i32) -> f32
// CHECK: llvm.call @__nv_powif(%{{.*}}, %{{.*}}) : (f32, i32) -> f32
module attributes {kiln_gpu.num_warps = 1 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func @extern(%x: tensor<64xf32, #b2>, %n: tensor<64xi32, #b2>, %s: f32, %m: i32) -> (tensor<64xf32, #b2>, f32) {
    %0 = kiln.extern_elementwise "__nv_powif"(%x, %n) : (tensor<64xf32, #b2>, tensor<64xi32, #b2>) -> tensor<64xf32, #b2>
    %1 = kiln.extern_elementwise "__nv_powif"(%s, %m) : (f32, i32) -> f32
    return %0, %1 : tensor<64xf32, #b2>, f32
  }
}

// -----

// A sum of 512 elements on 4 warps: each warp reduces its part by
// shuffles, lane 0 of each stores the warp's partial behind a branch (no
// other thread writes shared memory), a barrier, then every lane reads
// one partial and a butterfly over 4 lanes combines them. No barrier
// before the stores: nothing in the function touched shared memory yet.
#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
// CHECK-LABEL: llvm.func @sum
// CHECK-NOT: nvvm.barrier0
// CHECK-COUNT-5: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.cond_br %{{.*}}, ^[[STORE:.*]], ^[[JOIN:.*]]
// CHECK: ^[[STORE]]:
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: llvm.br ^[[JOIN]]
// CHECK: ^[[JOIN]]:
// CHECK-NEXT: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-2: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.return
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @sum(%x: tensor<512xf32, #b4>, %out: !kiln.ptr<f32>) attributes {kiln.kernel} {
    %s = kiln.reduce(%x) {axis = 0 : i32} : (tensor<512xf32, #b4>) -> f32 {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      kiln.reduce.return %c : f32
    }
    kiln.store %out, %s : !kiln.ptr<f32>, f32
    return
  }
}
