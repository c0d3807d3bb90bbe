// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu | FileCheck %s
// RUN: kiln-opt %s -split-input-file -convert-kiln-to-llvm-cpu='vector-gathers=false' | FileCheck %s --check-prefix=NOGATHER

// Hosts have no gather or scatter of 8- or 16-bit elements, and LLVM's
// scalarization of one (a branch per lane) takes seconds to compile for a
// thousand lanes. Above 16 lanes such accesses are loops over the lanes
// through stack slots: each lane loads from its address where its mask is
// set and from its own result entry (which holds `other`) where not.

// CHECK-LABEL: llvm.func @gather_f16
// CHECK-NOT: llvm.intr.masked.gather
// CHECK: %[[STACK:.*]] = llvm.intr.stacksave
// CHECK: llvm.store %{{.*}} : vector<64x!llvm.ptr>, !llvm.ptr
// CHECK: llvm.zext %{{.*}} : vector<64xi1> to vector<64xi8>
// CHECK: %[[OUT:.*]] = llvm.alloca %{{.*}} x f16
// CHECK: ^{{.*}}(%[[LANE:.*]]: i64):
// CHECK: %[[OWN:.*]] = llvm.getelementptr %[[OUT]][%[[LANE]]]
// CHECK: %[[SET:.*]] = llvm.icmp "ne"
// CHECK: %[[PTR:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[FROM:.*]] = llvm.select %[[SET]], %[[PTR]], %[[OWN]]
// CHECK: %[[V:.*]] = llvm.load %[[FROM]] {alignment = 2 : i64} : !llvm.ptr -> f16
// CHECK: llvm.store %[[V]], %[[OWN]]
// CHECK: llvm.load %[[OUT]] {alignment = 2 : i64} : !llvm.ptr -> vector<64xf16>
// CHECK: llvm.intr.stackrestore %[[STACK]]
func.func @gather_f16(%p: tensor<64x!kiln.ptr<f16>>, %m: tensor<64xi1>) -> tensor<64xf16> {
  %v = kiln.load %p, %m : tensor<64x!kiln.ptr<f16>> -> tensor<64xf16>
  return %v : tensor<64xf16>
}

// -----

// A scatter stores each lane in lane order; a masked-off lane stores to a
// scratch element.

// CHECK-LABEL: llvm.func @scatter_i8
// CHECK-NOT: llvm.intr.masked.scatter
// CHECK: %[[MASKS:.*]] = llvm.alloca %{{.*}} x i8
// CHECK: %[[VALUES:.*]] = llvm.alloca %{{.*}} x i8
// CHECK: %[[SCRATCH:.*]] = llvm.alloca %{{.*}} x i8
// CHECK: %[[TO:.*]] = llvm.select %{{.*}}, %{{.*}}, %[[SCRATCH]]
// CHECK: %[[V:.*]] = llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> i8
// CHECK: llvm.store %[[V]], %[[TO]] {alignment = 1 : i64} : i8, !llvm.ptr
func.func @scatter_i8(%p: tensor<32x!kiln.ptr<i8>>, %v: tensor<32xi8>, %m: tensor<32xi1>) {
  kiln.store %p, %v, %m : tensor<32x!kiln.ptr<i8>>, tensor<32xi8>
  return
}

// -----

// 32-bit elements, and small blocks of narrow ones, stay LLVM gathers.

// CHECK-LABEL: llvm.func @gathers_kept
// CHECK: llvm.intr.masked.gather %{{.*}} : (vector<64x!llvm.ptr>, vector<64xi1>, vector<64xf32>) -> vector<64xf32>
// CHECK: llvm.intr.masked.gather %{{.*}} : (vector<16x!llvm.ptr>, vector<16xi1>, vector<16xf16>) -> vector<16xf16>

// Without gather instructions (x86-64-v2), wide gathers of any element are
// lane loops too; 16 lanes and fewer stay LLVM gathers.
// NOGATHER-LABEL: llvm.func @gathers_kept
// NOGATHER-NOT: vector<64xf32>) -> vector<64xf32>
// NOGATHER: llvm.intr.stacksave
// NOGATHER: llvm.intr.masked.gather %{{.*}} : (vector<16x!llvm.ptr>, vector<16xi1>, vector<16xf16>) -> vector<16xf16>
func.func @gathers_kept(%p: tensor<64x!kiln.ptr<f32>>, %q: tensor<16x!kiln.ptr<f16>>) -> (tensor<64xf32>, tensor<16xf16>) {
  %v = kiln.load %p : tensor<64x!kiln.ptr<f32>> -> tensor<64xf32>
  %w = kiln.load %q : tensor<16x!kiln.ptr<f16>> -> tensor<16xf16>
  return %v, %w : tensor<64xf32>, tensor<16xf16>
}
