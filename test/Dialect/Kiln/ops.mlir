// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @vector_add
func.func @vector_add(%x: !kiln.ptr<f32>, %out: !kiln.ptr<f32, 1>, %n: i32) attributes {kiln.kernel} {
  // CHECK: kiln.program_id {axis = 0 : i32} : i32
  %pid = kiln.program_id {axis = 0 : i32} : i32
  // CHECK: kiln.num_programs {axis = 1 : i32} : i32
  %np = kiln.num_programs {axis = 1 : i32} : i32
  // CHECK: %[[R:.*]] = kiln.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
  %r = kiln.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  // CHECK: %[[N:.*]] = kiln.splat %{{.*}} : i32 -> tensor<128xi32>
  %ns = kiln.splat %n : i32 -> tensor<128xi32>
  // CHECK: %[[M:.*]] = arith.cmpi slt, %[[R]], %[[N]]
  %m = arith.cmpi slt, %r, %ns : tensor<128xi32>
  // CHECK: %[[XS:.*]] = kiln.splat %{{.*}} : !kiln.ptr<f32> -> tensor<128x!kiln.ptr<f32>>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<128x!kiln.ptr<f32>>
  // CHECK: %[[P:.*]] = kiln.addptr %[[XS]], %[[R]] : tensor<128x!kiln.ptr<f32>>, tensor<128xi32>
  %p = kiln.addptr %xs, %r : tensor<128x!kiln.ptr<f32>>, tensor<128xi32>
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  // CHECK: %[[V:.*]] = kiln.load %[[P]], %[[M]], %{{.*}} {cache = #kiln.cache<cg>, evict = #kiln.evict<evict_first>, isVolatile} : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  %v = kiln.load %p, %m, %zero {cache = #kiln.cache<cg>, evict = #kiln.evict<evict_first>, isVolatile} : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  // CHECK: kiln.load %[[P]] : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  %w = kiln.load %p : tensor<128x!kiln.ptr<f32>> -> tensor<128xf32>
  // CHECK: kiln.store %{{.*}}, %[[V]], %[[M]] : tensor<128x!kiln.ptr<f32>>, tensor<128xf32>
  kiln.store %p, %v, %m : tensor<128x!kiln.ptr<f32>>, tensor<128xf32>
  // CHECK: kiln.store %{{.*}}, %{{.*}} : !kiln.ptr<f32>, f32
  %s = kiln.load %x : !kiln.ptr<f32> -> f32
  kiln.store %out, %s : !kiln.ptr<f32>, f32
  // CHECK: kiln.expand_dims %[[R]] {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  %e = kiln.expand_dims %r {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
  // CHECK: kiln.broadcast %{{.*}} : tensor<1x128xi32> -> tensor<4x128xi32>
  %b = kiln.broadcast %e : tensor<1x128xi32> -> tensor<4x128xi32>
  return
}

// CHECK-LABEL: func @extern_elementwise
// CHECK: kiln.extern_elementwise "__nv_powf"(%{{.*}}, %{{.*}}) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
// CHECK: kiln.extern_elementwise "__nv_isnand"(%{{.*}}) : (f64) -> i32
func.func @extern_elementwise(%x: tensor<128xf32>, %s: f64) -> (tensor<128xf32>, i32) {
  %p = kiln.extern_elementwise "__nv_powf"(%x, %x) : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %n = kiln.extern_elementwise "__nv_isnand"(%s) : (f64) -> i32
  return %p, %n : tensor<128xf32>, i32
}
