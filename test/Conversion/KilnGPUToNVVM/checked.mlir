// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm=checked=true -kiln-nvvm-erase-needless-barriers | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s --check-prefix=PLAIN

#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// In checked mode the kernel gains (base, bytes) per pointer parameter and
// the error record. Each 16-byte run is compared with its parameter's
// extent (offset >= 0, offset + 16 <= bytes), a run outside is predicated
// off, and a fault is recorded: compare-and-swap of (parameter << 32) |
// (site + 1) into the record, then an atomic min of the element index.
// CHECK: kiln_gpu.checked_sites = [{element_bytes = 4 : i32, loc = "{{.*}}checked.mlir:{{[0-9]+}}:{{[0-9]+}}", param = 0 : i32, store = false}, {element_bytes = 4 : i32, loc = {{.*}}, param = 1 : i32, store = true}]
// CHECK-LABEL: llvm.func @copy
// CHECK-SAME: %[[X:[^:]*]]: !llvm.ptr<1> {llvm.align = 16 : i64}, %{{[^:]*}}: !llvm.ptr<1> {llvm.align = 16 : i64}, %{{[^:]*}}: i32, %[[XBASE:[^:]*]]: i64, %[[XBYTES:[^:]*]]: i64, %[[YBASE:[^:]*]]: i64, %[[YBYTES:[^:]*]]: i64, %[[RECORD:[^:]*]]: !llvm.ptr<1>)
// CHECK: %[[ADDR:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<1> to i64
// CHECK: %[[OFFSET:.*]] = llvm.sub %[[ADDR]], %[[XBASE]] : i64
// CHECK: llvm.icmp "slt" %[[OFFSET]]
// CHECK: llvm.icmp "sle" %{{.*}}, %[[XBYTES]] : i64
// CHECK: llvm.cond_br %{{.*}}, ^[[REPORT:.*]], ^[[ACCESS:.*]]
// CHECK: ^[[REPORT]]:
// CHECK: %[[KEY:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: llvm.cmpxchg %[[RECORD]], %{{.*}}, %[[KEY]] monotonic monotonic : !llvm.ptr<1>, i64
// CHECK: llvm.atomicrmw min %{{.*}}, %{{.*}} monotonic : !llvm.ptr<1>, i64
// CHECK: ^[[ACCESS]]:
// CHECK-COUNT-2: ld.global.v4.b32
// CHECK: llvm.sub %{{.*}}, %[[YBASE]] : i64
// CHECK: llvm.icmp "sle" %{{.*}}, %[[YBYTES]] : i64
// CHECK: llvm.cond_br
// CHECK: llvm.mlir.constant(4294967298 : i64) : i64
// CHECK: llvm.cmpxchg %[[RECORD]]
// CHECK-COUNT-2: st.global.v4.b32
// Unchecked, the kernel keeps its parameters and has no compare.
// PLAIN-LABEL: llvm.func @copy
// PLAIN-SAME: %{{[^:]*}}: i32)
// PLAIN-NOT: llvm.cmpxchg
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @copy(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %y: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32 {kiln.divisibility = 16 : i32}) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32, #b4>
    %ns = kiln.splat %n : i32 -> tensor<1024xi32, #b4>
    %m = arith.cmpi slt, %r, %ns : tensor<1024xi32, #b4>
    %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b4>
    %xp = kiln.addptr %xs, %r : tensor<1024x!kiln.ptr<f32>, #b4>, tensor<1024xi32, #b4>
    %v = kiln.load %xp, %m : tensor<1024x!kiln.ptr<f32>, #b4> -> tensor<1024xf32, #b4>
    %ys = kiln.splat %y : !kiln.ptr<f32> -> tensor<1024x!kiln.ptr<f32>, #b4>
    %yp = kiln.addptr %ys, %r : tensor<1024x!kiln.ptr<f32>, #b4>, tensor<1024xi32, #b4>
    kiln.store %yp, %v, %m : tensor<1024x!kiln.ptr<f32>, #b4>, tensor<1024xf32, #b4>
    return
  }
}

// -----

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// An atomic is checked element by element, and its predicate narrowed
// before the atom instruction.
// CHECK: kiln_gpu.checked_sites = [{element_bytes = 4 : i32, loc = {{.*}}, param = 0 : i32, store = true}]
// CHECK-LABEL: llvm.func @histogram
// CHECK: llvm.icmp "sle" %{{.*}}, %{{.*}} : i64
// CHECK: llvm.cmpxchg
// CHECK: atom.global.gpu.relaxed.add.u32
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func public @histogram(%bins: !kiln.ptr<i32>) attributes {kiln.kernel} {
    %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32, #b1>
    %bs = kiln.splat %bins : !kiln.ptr<i32> -> tensor<128x!kiln.ptr<i32>, #b1>
    %bp = kiln.addptr %bs, %r : tensor<128x!kiln.ptr<i32>, #b1>, tensor<128xi32, #b1>
    %one = arith.constant dense<1> : tensor<128xi32, #b1>
    %old = kiln.atomic_rmw add, %bp, %one {sem = #kiln.sem<relaxed>, scope = #kiln.scope<gpu>} : tensor<128x!kiln.ptr<i32>, #b1>, tensor<128xi32, #b1>
    return
  }
}

// -----

// Which parameter an access belongs to (lib/Analysis/AccessSites.cpp): a
// pointer carried by a loop, whose initial and yielded values both derive
// from %x, and a select between two pointers into %x are %x's; a select
// between %x and %y, or a loop that starts at %x and moves on to %y, may
// point into either, so those accesses have no parameter and are not
// checked.
// CHECK: kiln_gpu.checked_sites = [{element_bytes = 4 : i32, loc = {{.*}}, param = 0 : i32, store = false}, {element_bytes = 4 : i32, loc = {{.*}}, param = 0 : i32, store = false}]
// CHECK-LABEL: llvm.func @trace
// CHECK-COUNT-2: llvm.cmpxchg
// CHECK-NOT: llvm.cmpxchg
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
  func.func public @trace(%x: !kiln.ptr<f32>, %y: !kiln.ptr<f32>, %c: i1, %n: i32) -> f32 attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.0 : f32
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%p = %x, %acc = %zero) -> (!kiln.ptr<f32>, f32) : i32 {
      %v = kiln.load %p : !kiln.ptr<f32> -> f32
      %s = arith.addf %acc, %v : f32
      %q = kiln.addptr %p, %c1 : !kiln.ptr<f32>, i32
      scf.yield %q, %s : !kiln.ptr<f32>, f32
    }
    %x1 = kiln.addptr %x, %c1 : !kiln.ptr<f32>, i32
    %same = arith.select %c, %x, %x1 : !kiln.ptr<f32>
    %a = kiln.load %same : !kiln.ptr<f32> -> f32
    %either = arith.select %c, %x, %y : !kiln.ptr<f32>
    %b = kiln.load %either : !kiln.ptr<f32> -> f32
    %m:2 = scf.for %i = %c0 to %n step %c1 iter_args(%p = %x, %acc = %zero) -> (!kiln.ptr<f32>, f32) : i32 {
      %v = kiln.load %p : !kiln.ptr<f32> -> f32
      %s = arith.addf %acc, %v : f32
      scf.yield %y, %s : !kiln.ptr<f32>, f32
    }
    %t0 = arith.addf %r#1, %a : f32
    %t1 = arith.addf %t0, %b : f32
    %t2 = arith.addf %t1, %m#1 : f32
    return %t2 : f32
  }
}
