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
    %true = arith.constant true
    kiln_gpu.async_tma_copy %boxed[%c0, %c0], %c0, %true {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
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

// -----

// Loops versioned by kiln-tensor-map-pointer-loads. In @uncopied the
// version that names a map came to have no TMA copy: the loop as it was
// (the else region) replaces the scf.if, and the map, now unread, goes.
// In @copied a TMA copy reads it, and in @fed the copies of a producer
// warpgroup (kiln-gpu-warp-specialize), which the version waits for: both
// versions and the map stay. In @loaded_in_the_loop the version's loop
// copies one block by TMA but loads another itself, which the loop as it
// was copies (here a copy group stands for its copies): the loop as it was stays, and the map goes, box and all.
// CHECK-LABEL: func.func @uncopied
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<64x!kiln.ptr<f16>>, %{{[a-z0-9]+}}: i1) attributes {kiln.kernel}
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: %[[X:.*]] = kiln.load %{{.*}} : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[X]], %[[X]]
// CHECK-NEXT: kiln.store %{{.*}}, %[[Y]]
// CHECK-LABEL: func.func @copied
// CHECK: scf.if %{{.*}} -> (tensor<64xf16>) {
// CHECK: kiln_gpu.async_tma_copy
// CHECK: } else {
// CHECK: } {kiln.tensor_map_version}
// CHECK-LABEL: func.func @fed
// CHECK-SAME: %{{[a-z0-9]+}}: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64})
// CHECK: kiln_gpu.producer
// CHECK: scf.if %{{.*}} -> (tensor<64xf16>) {
// CHECK-NEXT: kiln_gpu.wait_tma_barrier
// CHECK: } else {
// CHECK: } {kiln.tensor_map_version}
module attributes {kiln.derived_tensor_maps = [{arg = 2 : i64, base = 0 : i64}]} {
  func.func @uncopied(%ptrs: tensor<64x!kiln.ptr<f16>>, %fits: i1, %map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64})
      attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %x = scf.if %fits -> (tensor<64xf16>) {
      %mapped = kiln.load %ptrs tensor_map %map[%c0] : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
      scf.yield %mapped : tensor<64xf16>
    } else {
      %loaded = kiln.load %ptrs : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
      scf.yield %loaded : tensor<64xf16>
    } {kiln.tensor_map_version}
    %y = arith.addf %x, %x : tensor<64xf16>
    kiln.store %ptrs, %y : tensor<64x!kiln.ptr<f16>>, tensor<64xf16>
    return
  }
  func.func @copied(%ptrs: tensor<64x!kiln.ptr<f16>>, %fits: i1, %s: i32, %p: i1,
                    %map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}) {
    %c0 = arith.constant 0 : i32
    %x = scf.if %fits -> (tensor<64xf16>) {
      kiln_gpu.async_tma_copy %map[%c0, %c0], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
      %mapped = kiln.load %ptrs : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
      scf.yield %mapped : tensor<64xf16>
    } else {
      %loaded = kiln.load %ptrs : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
      scf.yield %loaded : tensor<64xf16>
    } {kiln.tensor_map_version}
    kiln.store %ptrs, %x : tensor<64x!kiln.ptr<f16>>, tensor<64xf16>
    return
  }
  func.func @fed(%ptrs: tensor<64x!kiln.ptr<f16>>, %fits: i1, %s: i32, %p: i1,
                 %map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}) {
    %c0 = arith.constant 0 : i32
    kiln_gpu.producer attributes {warps = 4 : i32} {
      scf.if %fits {
        kiln_gpu.async_tma_copy %map[%c0, %c0], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>, warp = 4 : i32}
      }
    }
    %x = scf.if %fits -> (tensor<64xf16>) {
      kiln_gpu.wait_tma_barrier %s, %c0 {barriers = 8192 : i64, perThread}
      %mapped = kiln.load %ptrs : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
      scf.yield %mapped : tensor<64xf16>
    } else {
      %loaded = kiln.load %ptrs : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
      scf.yield %loaded : tensor<64xf16>
    } {kiln.tensor_map_version}
    kiln.store %ptrs, %x : tensor<64x!kiln.ptr<f16>>, tensor<64xf16>
    return
  }
}

// -----

// The version's loop copies one block by TMA but loads another itself,
// which the loop as it was copies (here a copy group stands for its
// copies): the loop as it was stays, and the map goes, box and all.
// CHECK-NOT: kiln.derived_tensor_maps
// CHECK-LABEL: func.func @loaded_in_the_loop
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<64x!kiln.ptr<f16>>, %{{[a-z0-9]+}}: i1, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: i1)
// CHECK-NOT: scf.if
// CHECK-NOT: tensor_map
// CHECK: scf.for
// CHECK-NEXT: kiln_gpu.async_commit_group
// CHECK-NEXT: }
// CHECK-NEXT: return
module attributes {kiln.derived_tensor_maps = [{arg = 4 : i64, base = 0 : i64}]} {
  func.func @loaded_in_the_loop(%ptrs: tensor<64x!kiln.ptr<f16>>, %fits: i1, %s: i32, %p: i1,
                                %map: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64, kiln.tensor_map_box = array<i64: 64, 32, 64>})
      attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i32
    %c4 = arith.constant 4 : i32
    %c1 = arith.constant 1 : i32
    scf.if %fits {
      scf.for %i = %c0 to %c4 step %c1 : i32 {
        kiln_gpu.async_tma_copy %map[%c0, %c0], %s, %p {barriers = 8192 : i64, buffer = #kiln_gpu.operand_buffer<operand = 0, tensorCores = #kiln_gpu.tensor_cores<wgmma>, offset = 0, slotBytes = 4096, slots = 2>, tile = tensor<64x32xf16>}
        %other = kiln.load %ptrs : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
        kiln.store %ptrs, %other : tensor<64x!kiln.ptr<f16>>, tensor<64xf16>
      }
    } else {
      scf.for %i = %c0 to %c4 step %c1 : i32 {
        kiln_gpu.async_commit_group
      }
    } {kiln.tensor_map_version}
    return
  }
}
