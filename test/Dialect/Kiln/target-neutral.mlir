// The start of every target's pipeline, as the NVIDIA and CPU pipelines run it.
// RUN: kiln-opt %s --kiln-target-neutral | FileCheck %s

// The helper is inlined and, unused, removed; the partial sums' load
// starts before the branch, with the ops that compute its pointers.
// CHECK-NOT: func.func private @pointers
// CHECK-LABEL: func.func public @accumulate
// CHECK:      kiln.load %arg1 : !kiln.ptr<i32> -> i32
// CHECK:      %[[PTRS:.*]] = kiln.addptr
// CHECK-NEXT: %[[OLD:.*]] = kiln.load %[[PTRS]], %arg3 : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
// CHECK-NEXT: scf.if
// CHECK:      arith.addf %arg2, %[[OLD]]
// CHECK:      kiln.store
// CHECK-NOT:  func.call
func.func private @pointers(%p: !kiln.ptr<f32>) -> tensor<256x!kiln.ptr<f32>> {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %ps = kiln.splat %p : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %ptrs = kiln.addptr %ps, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  return %ptrs : tensor<256x!kiln.ptr<f32>>
}

func.func public @accumulate(%p: !kiln.ptr<f32>, %count: !kiln.ptr<i32>, %part: tensor<256xf32>, %mask: tensor<256xi1>) attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %n = kiln.load %count : !kiln.ptr<i32> -> i32
  %first = arith.cmpi eq, %n, %c0 : i32
  %sum = scf.if %first -> (tensor<256xf32>) {
    scf.yield %part : tensor<256xf32>
  } else {
    %ptrs = func.call @pointers(%p) : (!kiln.ptr<f32>) -> tensor<256x!kiln.ptr<f32>>
    %old = kiln.load %ptrs, %mask : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
    %new = arith.addf %part, %old : tensor<256xf32>
    scf.yield %new : tensor<256xf32>
  }
  %ptrs2 = func.call @pointers(%p) : (!kiln.ptr<f32>) -> tensor<256x!kiln.ptr<f32>>
  kiln.store %ptrs2, %sum, %mask : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  return
}
