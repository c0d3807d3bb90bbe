// RUN: kiln-opt %s -split-input-file -kiln-hoist-branch-loads | FileCheck %s

// The partial sums' load starts before the branch on the counter: the
// store after the branch writes the same addresses on every path.
// CHECK-LABEL: func.func @accumulate
// CHECK:      %[[N:.*]] = kiln.load %arg1 : !kiln.ptr<i32> -> i32
// CHECK:      %[[FIRST:.*]] = arith.cmpi eq, %[[N]]
// CHECK:      %[[OLD:.*]] = kiln.load %[[PTRS:.*]], %[[MASK:.*]] : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
// CHECK-NEXT: %[[SUM:.*]] = scf.if %[[FIRST]]
// CHECK:      } else {
// CHECK-NEXT:   arith.addf %{{.*}}, %[[OLD]]
// CHECK:      kiln.store %[[PTRS]], %[[SUM]], %[[MASK]]
func.func @accumulate(%p: !kiln.ptr<f32>, %count: !kiln.ptr<i32>, %part: tensor<256xf32>, %mask: tensor<256xi1>) {
  %c0 = arith.constant 0 : i32
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %ps = kiln.splat %p : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %ptrs = kiln.addptr %ps, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
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
  return
}

// -----

// The pointers built again inside the branch and after it (as the frontend
// does for `load(p + offs)` and `store(p + offs, ...)`): the load moves out
// with the ops that compute its pointers.
// CHECK-LABEL: func.func @pointers_built_twice
// CHECK:      kiln.splat
// CHECK-NEXT: kiln.addptr
// CHECK-NEXT: kiln.load
// CHECK-NEXT: scf.if
// CHECK-NOT:    kiln.load
// CHECK:      kiln.store
func.func @pointers_built_twice(%p: !kiln.ptr<f32>, %offs: tensor<64xi32>, %c: i1, %z: tensor<64xf32>) {
  %v = scf.if %c -> (tensor<64xf32>) {
    scf.yield %z : tensor<64xf32>
  } else {
    %ps = kiln.splat %p : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>>
    %ptrs = kiln.addptr %ps, %offs : tensor<64x!kiln.ptr<f32>>, tensor<64xi32>
    %a = kiln.load %ptrs : tensor<64x!kiln.ptr<f32>> -> tensor<64xf32>
    scf.yield %a : tensor<64xf32>
  }
  %ps2 = kiln.splat %p : !kiln.ptr<f32> -> tensor<64x!kiln.ptr<f32>>
  %ptrs2 = kiln.addptr %ps2, %offs : tensor<64x!kiln.ptr<f32>>, tensor<64xi32>
  kiln.store %ptrs2, %v : tensor<64x!kiln.ptr<f32>>, tensor<64xf32>
  return
}

// -----

// From the then side too, past pure ops and another plain load.
// CHECK-LABEL: func.func @then_side
// CHECK:      kiln.load %arg1
// CHECK-NEXT: kiln.load %arg0
// CHECK-NEXT: scf.if
func.func @then_side(%p: !kiln.ptr<f32>, %q: !kiln.ptr<f32>, %c: i1) {
  %v = scf.if %c -> (f32) {
    %one = arith.constant 1.0 : f32
    %a = kiln.load %q : !kiln.ptr<f32> -> f32
    %b = kiln.load %p : !kiln.ptr<f32> -> f32
    %s = arith.addf %a, %b : f32
    scf.yield %s : f32
  } else {
    %z = arith.constant 0.0 : f32
    scf.yield %z : f32
  }
  kiln.store %q, %v : !kiln.ptr<f32>, f32
  kiln.store %p, %v : !kiln.ptr<f32>, f32
  return
}

// -----

// Nothing stores to those addresses after the branch: the load could
// fault on a path that never read them. Left in the branch.
// CHECK-LABEL: func.func @no_store_after
// CHECK:      scf.if
// CHECK-NEXT:   kiln.load
func.func @no_store_after(%p: !kiln.ptr<f32>, %q: !kiln.ptr<f32>, %c: i1) {
  %v = scf.if %c -> (f32) {
    %a = kiln.load %p : !kiln.ptr<f32> -> f32
    scf.yield %a : f32
  } else {
    %z = arith.constant 0.0 : f32
    scf.yield %z : f32
  }
  kiln.store %q, %v : !kiln.ptr<f32>, f32
  return
}

// -----

// The store after the branch has another mask: some addresses the load
// reads may not be written. Left in the branch.
// CHECK-LABEL: func.func @other_mask
// CHECK:      scf.if
// CHECK-NEXT:   kiln.load
func.func @other_mask(%ptrs: tensor<64x!kiln.ptr<f32>>, %m1: tensor<64xi1>, %m2: tensor<64xi1>, %c: i1, %z: tensor<64xf32>) {
  %v = scf.if %c -> (tensor<64xf32>) {
    %a = kiln.load %ptrs, %m1 : tensor<64x!kiln.ptr<f32>> -> tensor<64xf32>
    scf.yield %a : tensor<64xf32>
  } else {
    scf.yield %z : tensor<64xf32>
  }
  kiln.store %ptrs, %v, %m2 : tensor<64x!kiln.ptr<f32>>, tensor<64xf32>
  return
}

// -----

// A write before the load in its side (here an atomic, which may alias)
// must stay before it. Left in the branch.
// CHECK-LABEL: func.func @write_before
// CHECK:      scf.if
// CHECK-NEXT:   kiln.atomic_rmw
// CHECK-NEXT:   kiln.load
func.func @write_before(%p: !kiln.ptr<f32>, %count: !kiln.ptr<i32>, %c: i1) {
  %one = arith.constant 1 : i32
  %v = scf.if %c -> (f32) {
    %old = kiln.atomic_rmw add, %count, %one : !kiln.ptr<i32>, i32
    %a = kiln.load %p : !kiln.ptr<f32> -> f32
    scf.yield %a : f32
  } else {
    %z = arith.constant 0.0 : f32
    scf.yield %z : f32
  }
  kiln.store %p, %v : !kiln.ptr<f32>, f32
  return
}

// -----

// A volatile load, and a load whose pointer the branch computes: left.
// CHECK-LABEL: func.func @volatile_and_inner_pointer
// CHECK:      scf.if
// CHECK-NEXT:   kiln.load %arg0 {isVolatile}
// CHECK:      } else {
// CHECK-NEXT:   kiln.addptr
// CHECK-NEXT:   kiln.load
func.func @volatile_and_inner_pointer(%p: !kiln.ptr<f32>, %c: i1, %i: i32) {
  %v = scf.if %c -> (f32) {
    %a = kiln.load %p {isVolatile} : !kiln.ptr<f32> -> f32
    scf.yield %a : f32
  } else {
    %q = kiln.addptr %p, %i : !kiln.ptr<f32>, i32
    %b = kiln.load %q : !kiln.ptr<f32> -> f32
    scf.yield %b : f32
  }
  kiln.store %p, %v : !kiln.ptr<f32>, f32
  return
}

// -----

// A loop between the branch and the store might never end, and the
// program never store: left in the branch.
// CHECK-LABEL: func.func @loop_before_store
// CHECK:      scf.if
// CHECK-NEXT:   kiln.load
func.func @loop_before_store(%p: !kiln.ptr<f32>, %c: i1, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %v = scf.if %c -> (f32) {
    %a = kiln.load %p : !kiln.ptr<f32> -> f32
    scf.yield %a : f32
  } else {
    %z = arith.constant 0.0 : f32
    scf.yield %z : f32
  }
  scf.for %i = %c0 to %n step %c1 : i32 {
  }
  kiln.store %p, %v : !kiln.ptr<f32>, f32
  return
}
