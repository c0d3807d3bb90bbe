// RUN: kiln-opt %s -split-input-file -kiln-gpu-drop-unread-tensor-maps | FileCheck %s

// Two maps of descriptors made in the kernel, neither read by a TMA copy
// (no box): both parameters go, their loads read through their pointers,
// and the recipes go with them.
// CHECK-NOT: kiln.derived_tensor_maps
// CHECK-LABEL: func.func @copy
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<64x!kiln.ptr<f16>>, %{{[a-z0-9]+}}: i32)
// CHECK-NOT: tensor_map
// CHECK: return
module attributes {kiln.derived_tensor_maps = [{arg = 2 : i64, base = 0 : i64}, {arg = 3 : i64, base = 0 : i64}]} {
  func.func @copy(%ptrs: tensor<64x!kiln.ptr<f16>>, %i: i32, %a: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64},
                  %b: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}) attributes {kiln.kernel} {
    %x = kiln.load %ptrs tensor_map %a[%i] : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
    %y = kiln.load %ptrs tensor_map %b[%i] : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
    %z = arith.addf %x, %y : tensor<64xf16>
    kiln.store %ptrs, %z : tensor<64x!kiln.ptr<f16>>, tensor<64xf16>
    return
  }
}

// -----

// The first map has a box (a TMA copy reads it), the second none, the
// third is carried by a loop: the second goes, and the third's recipe now
// names the parameter before it. A host descriptor's map (no recipe) stays.
// CHECK: kiln.derived_tensor_maps = [{arg = 2 : i64, base = 0 : i64}, {arg = 3 : i64, base = 0 : i64}]
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: %{{[a-z0-9]+}}: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}, %{{[a-z0-9]+}}: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64, kiln.tensor_map_box = array<i64: 64, 64, 128>}, %{{[a-z0-9]+}}: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64})
module attributes {kiln.derived_tensor_maps = [{arg = 2 : i64, base = 0 : i64}, {arg = 3 : i64, base = 0 : i64},
                                               {arg = 4 : i64, base = 0 : i64}]} {
  func.func @mixed(%ptrs: tensor<64x!kiln.ptr<f16>>, %host: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64},
                   %boxed: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64, kiln.tensor_map_box = array<i64: 64, 64, 128>},
                   %unread: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64},
                   %carried: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %x = kiln.load %ptrs tensor_map %unread[%c0] : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
    %lb = arith.constant 0 : index
    %ub = arith.constant 4 : index
    %step = arith.constant 1 : index
    %m = scf.for %k = %lb to %ub step %step iter_args(%map = %carried) -> (!kiln.ptr<i8, 0>) {
      scf.yield %map : !kiln.ptr<i8, 0>
    }
    kiln.store %ptrs, %x : tensor<64x!kiln.ptr<f16>>, tensor<64xf16>
    return
  }
}
