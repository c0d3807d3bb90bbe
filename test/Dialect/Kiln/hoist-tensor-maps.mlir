// RUN: kiln-opt %s -split-input-file -kiln-hoist-tensor-maps | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-hoist-tensor-maps=hoist=false | FileCheck %s --check-prefix=DROP

// Attention's descriptor: [Z * H * N_CTX, 128] over a parameter, strides
// [128, 1]. Its map becomes the kernel's last parameter, and the module
// records how the launcher computes its shape (in the parameters' own
// widths) and strides.
// CHECK: module attributes {kiln.derived_tensor_maps = [{arg = 4 : i64, base = 0 : i64, bfloat16 = false,
// CHECK-SAME: element_bits = 16 : i64, loc = "{{.*}}hoist-tensor-maps.mlir:{{[0-9]+}}:{{[0-9]+}}", nan = false,
// CHECK-SAME: shape = {{\[}}["sext", 64, ["mul", 32, ["mul", 32, ["arg", 32, 1], ["arg", 32, 2]], ["const", 32, 4096]]], ["const", 64, 128]],
// CHECK-SAME: strides = {{\[}}["const", 64, 128]]}]}
// CHECK-LABEL: func.func @attention
// CHECK-SAME: %[[MAP:[a-z0-9]+]]: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}
// CHECK-NOT: kiln.make_tensor_map
// CHECK: kiln.load %{{.*}}, %{{.*}}, %{{.*}} tensor_map %[[MAP]][
// DROP-NOT: kiln.derived_tensor_maps
// DROP-LABEL: func.func @attention
// DROP-NOT: kiln.tensor_map
// DROP: kiln.load %{{.*}}, %{{.*}}, %{{.*}} :
func.func @attention(%q: !kiln.ptr<f16> {kiln.divisibility = 16 : i64}, %z: i32, %h: i32,
                     %ptrs: tensor<128x128x!kiln.ptr<f16>>) attributes {kiln.kernel} {
  %n_ctx = arith.constant 4096 : i32
  %zh = arith.muli %z, %h : i32
  %rows32 = arith.muli %zh, %n_ctx : i32
  %rows = arith.extsi %rows32 : i32 to i64
  %c128 = arith.constant 128 : i64
  %map = kiln.make_tensor_map %q[%rows, %c128] strides [%c128] : !kiln.ptr<f16>
  %inside = arith.constant dense<true> : tensor<128x128xi1>
  %zero = arith.constant dense<0.0> : tensor<128x128xf16>
  %c0 = arith.constant 0 : i32
  %a = kiln.load %ptrs, %inside, %zero tensor_map %map[%c0, %c0] : tensor<128x128x!kiln.ptr<f16>> -> tensor<128x128xf16>
  kiln.store %ptrs, %a, %inside : tensor<128x128x!kiln.ptr<f16>>, tensor<128x128xf16>
  return
}

// -----

// A base not known to be aligned to 16 bytes (no kiln.divisibility), a
// shape that depends on the program, and a stride of an unknown number of
// elements: the TMA unit might refuse some launch's map, so each is dropped
// and its loads read through their pointers.
// CHECK-NOT: kiln.derived_tensor_maps
// CHECK-LABEL: func.func @not_hoisted
// CHECK-NOT: kiln.make_tensor_map
// CHECK-NOT: tensor_map
// CHECK: return
func.func @not_hoisted(%p: !kiln.ptr<f16>, %q: !kiln.ptr<f16> {kiln.divisibility = 16 : i64}, %n: i64,
                       %ptrs: tensor<64x!kiln.ptr<f16>>) attributes {kiln.kernel} {
  %c64 = arith.constant 64 : i64
  %unaligned = kiln.make_tensor_map %p[%n, %c64] strides [%c64] : !kiln.ptr<f16>
  %pid = kiln.program_id {axis = 0 : i32} : i32
  %pid64 = arith.extsi %pid : i32 to i64
  %per_program = kiln.make_tensor_map %q[%pid64, %c64] strides [%c64] : !kiln.ptr<f16>
  %unknown_stride = kiln.make_tensor_map %q[%n, %c64] strides [%n] : !kiln.ptr<f16>
  %c0 = arith.constant 0 : i32
  %a = kiln.load %ptrs tensor_map %unaligned[%c0] : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
  %b = kiln.load %ptrs tensor_map %per_program[%c0] : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
  %c = kiln.load %ptrs tensor_map %unknown_stride[%c0] : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
  %ab = arith.addf %a, %b : tensor<64xf16>
  %abc = arith.addf %ab, %c : tensor<64xf16>
  kiln.store %ptrs, %abc : tensor<64x!kiln.ptr<f16>>, tensor<64xf16>
  return
}

// -----

// A stride parameter specialized as divisible by 16 elements is a multiple
// of 16 bytes in every launch; a bf16 base with NaN padding says so. A map
// that a loop carries is replaced everywhere by the parameter.
// CHECK: kiln.derived_tensor_maps = [{arg = 3 : i64, base = 0 : i64, bfloat16 = true, element_bits = 16 : i64,
// CHECK-SAME: nan = true, shape = {{\[}}["arg", 64, 1], ["arg", 64, 2]],
// CHECK-SAME: strides = {{\[}}["arg", 64, 2]]}]
// CHECK-LABEL: func.func @strided
// CHECK-SAME: %[[MAP:[a-z0-9]+]]: !kiln.ptr<i8, 0> {kiln.tensor_map = 1 : i64}
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[MAP]])
func.func @strided(%p: !kiln.ptr<bf16> {kiln.divisibility = 16 : i64}, %rows: i64,
                   %stride: i64 {kiln.divisibility = 16 : i64}) attributes {kiln.kernel} {
  %map = kiln.make_tensor_map %p[%rows, %stride] strides [%stride] {nanPadding} : !kiln.ptr<bf16>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%m = %map) -> (!kiln.ptr<i8, 0>) {
    scf.yield %m : !kiln.ptr<i8, 0>
  }
  return
}
