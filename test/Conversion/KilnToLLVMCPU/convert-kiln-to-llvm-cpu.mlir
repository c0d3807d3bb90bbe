// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s
// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu='checked=true' | FileCheck %s --check-prefix=CHECKED

// A contiguous 1-D access is one masked vector access from its first
// address; the grid queries read the six parameters appended to the kernel,
// and an entry function unpacks the parameter slots.
// CHECK: module attributes {kiln_cpu.sites = [{element_bytes = 4 : i32, loc = "{{.*}}.mlir:{{[0-9]+}}:{{[0-9]+}}", param = 0 : i32, store = false}, {element_bytes = 4 : i32, loc = {{.*}}, param = 1 : i32, store = true}]}
// CHECK-LABEL: llvm.func @copy(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[N:.*]]: i32, %[[PID:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32)
// CHECK: llvm.mul %[[PID]]
// CHECK: llvm.intr.masked.load %{{.*}}, %{{.*}}, %{{.*}} {alignment = 16 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xf32>) -> vector<16xf32>
// CHECK: llvm.intr.masked.store %{{.*}}, %{{.*}}, %{{.*}} {alignment = 16 : i32} : vector<16xf32>, vector<16xi1> into !llvm.ptr
// CHECK-LABEL: llvm.func @copy.kiln_entry(
// CHECK-SAME: %[[PARAMS:.*]]: !llvm.ptr, %{{.*}}: i32
// CHECK: llvm.getelementptr %[[PARAMS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.call @copy(
// CHECKED-DAG: llvm.func @__kiln_cpu_bounds() -> !llvm.ptr
// CHECKED-DAG: llvm.func @__kiln_cpu_check(i32, i1, i64)
// CHECKED-LABEL: llvm.func @copy(
// CHECKED: llvm.call @__kiln_cpu_bounds()
// CHECKED: llvm.intr.vector.reduce.or
// CHECKED: llvm.call @__kiln_cpu_check(
// CHECKED: llvm.intr.masked.load
func.func @copy(%x: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %y: !kiln.ptr<f32> {kiln.divisibility = 16 : i32}, %n: i32) attributes {kiln.kernel} {
  %pid = kiln.program_id {axis = 0 : i32} : i32
  %c16 = arith.constant 16 : i32
  %base = arith.muli %pid, %c16 : i32
  %r = kiln.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %bs = kiln.splat %base : i32 -> tensor<16xi32>
  %offs = arith.addi %bs, %r : tensor<16xi32>
  %ns = kiln.splat %n : i32 -> tensor<16xi32>
  %m = arith.cmpi slt, %offs, %ns : tensor<16xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<16x!kiln.ptr<f32>>
  %xp = kiln.addptr %xs, %offs : tensor<16x!kiln.ptr<f32>>, tensor<16xi32>
  %v = kiln.load %xp, %m : tensor<16x!kiln.ptr<f32>> -> tensor<16xf32>
  %ys = kiln.splat %y : !kiln.ptr<f32> -> tensor<16x!kiln.ptr<f32>>
  %yp = kiln.addptr %ys, %offs : tensor<16x!kiln.ptr<f32>>, tensor<16xi32>
  kiln.store %yp, %v, %m : tensor<16x!kiln.ptr<f32>>, tensor<16xf32>
  return
}

// -----

// A strided access gathers; a 2-D block is broadcast with a static shuffle,
// and expand_dims is free.
// CHECK-LABEL: llvm.func @strided_2d
// CHECK: llvm.shufflevector %{{.*}}, %{{.*}} [0, 0, 0, 0, 1, 1, 1, 1] : vector<2xi32>
// CHECK: llvm.intr.masked.gather %{{.*}}, %{{.*}}, %{{.*}} {alignment = 4 : i32} : (vector<8x!llvm.ptr>, vector<8xi1>, vector<8xf32>) -> vector<8xf32>
// CHECK: llvm.intr.masked.scatter
func.func @strided_2d(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 2 : i32} : tensor<2xi32>
  %c = kiln.expand_dims %r {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
  %b = kiln.broadcast %c : tensor<2x1xi32> -> tensor<2x4xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<2x4x!kiln.ptr<f32>>
  %xp = kiln.addptr %xs, %b : tensor<2x4x!kiln.ptr<f32>>, tensor<2x4xi32>
  %v = kiln.load %xp : tensor<2x4x!kiln.ptr<f32>> -> tensor<2x4xf32>
  kiln.store %xp, %v : tensor<2x4x!kiln.ptr<f32>>, tensor<2x4xf32>
  return
}


// -----

// erf has no LLVM intrinsic: it calls the C library per element (f16 in
// f32); kiln.extern_elementwise calls its libdevice name, which the JIT
// resolves to a host version.
// CHECK-DAG: llvm.func @erff(f32) -> f32
// CHECK-DAG: llvm.func @__nv_erfinv(f64) -> f64
// CHECK-LABEL: llvm.func @host_math
// CHECK: llvm.fpext %{{.*}} : vector<4xf16> to vector<4xf32>
// CHECK-COUNT-4: llvm.call @erff(%{{.*}}) : (f32) -> f32
// CHECK: llvm.fptrunc %{{.*}} : vector<4xf32> to vector<4xf16>
// CHECK-COUNT-4: llvm.call @__nv_erfinv(%{{.*}}) : (f64) -> f64
func.func @host_math(%x: tensor<4xf16>, %y: tensor<4xf64>) -> (tensor<4xf16>, tensor<4xf64>) {
  %0 = math.erf %x : tensor<4xf16>
  %1 = kiln.extern_elementwise "__nv_erfinv"(%y) : (tensor<4xf64>) -> tensor<4xf64>
  return %0, %1 : tensor<4xf16>, tensor<4xf64>
}
