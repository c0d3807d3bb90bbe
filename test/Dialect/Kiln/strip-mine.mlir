// RUN: kiln-opt %s -split-input-file -kiln-strip-mine='chunk-size=64' | FileCheck %s
// RUN: not kiln-opt %s -split-input-file -kiln-strip-mine='chunk-size=3' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: expected chunk-size to be a power of two, got 3

// An element-wise kernel runs once per chunk of 64 elements; each range is
// offset by the chunk's start.
// CHECK-LABEL: func.func @scale
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[C256:.*]] = arith.constant 256 : i32
// CHECK: %[[C64:.*]] = arith.constant 64 : i32
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C256]] step %[[C64]] : i32 {
// CHECK:   %[[R:.*]] = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK:   %[[S:.*]] = kiln.splat %[[I]] : i32 -> tensor<64xi32>
// CHECK:   %[[OFFS:.*]] = arith.addi %[[R]], %[[S]] : tensor<64xi32>
// CHECK:   kiln.addptr %{{.*}}, %[[OFFS]] : tensor<64x!kiln.ptr<f32>>, tensor<64xi32>
// CHECK:   arith.constant dense<2.000000e+00> : tensor<64xf32>
// CHECK:   kiln.store %{{.*}}, %{{.*}} : tensor<64x!kiln.ptr<f32>>, tensor<64xf32>
// CHECK: }
// CHECK-NEXT: return
func.func @scale(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  %two = arith.constant dense<2.0> : tensor<256xf32>
  %w = arith.mulf %v, %two : tensor<256xf32>
  kiln.store %p, %w : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  return
}

// -----

// Blocks of two shapes: left alone.
// CHECK-LABEL: func.func @two_shapes
// CHECK-NOT: scf.for
func.func @two_shapes(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %e = kiln.expand_dims %r {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
  return
}

// -----

// A scalar store would be repeated per chunk: left alone.
// CHECK-LABEL: func.func @scalar_store
// CHECK-NOT: scf.for
func.func @scalar_store(%x: !kiln.ptr<f32>, %v: f32) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  kiln.store %x, %v : !kiln.ptr<f32>, f32
  return
}

// -----

// Blocks no longer than a chunk: nothing to do.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.for
func.func @small(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  return
}
