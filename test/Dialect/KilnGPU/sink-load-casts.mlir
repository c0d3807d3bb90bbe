// RUN: kiln-opt %s -split-input-file -kiln-gpu-sink-load-casts | FileCheck %s

#l = #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// Layer norm's last pass over a row: the three loads issue back to back,
// each conversion right before its first use; the store stays last.
// CHECK-LABEL: func.func @row
// CHECK: %[[X:.*]] = kiln.load %arg0
// CHECK-NEXT: %[[W:.*]] = kiln.load %arg1
// CHECK-NEXT: %[[B:.*]] = kiln.load %arg2
// CHECK-NEXT: %[[XF:.*]] = arith.extf %[[X]]
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[XF]], %arg4
// CHECK-NEXT: %[[WF:.*]] = arith.extf %[[W]]
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[D]], %[[WF]]
// CHECK-NEXT: %[[BF:.*]] = arith.extf %[[B]]
// CHECK-NEXT: %[[Z:.*]] = arith.addf %[[Y]], %[[BF]]
// CHECK-NEXT: %[[H:.*]] = arith.truncf %[[Z]]
// CHECK-NEXT: kiln.store %arg3, %[[H]]
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @row(%xp: tensor<1024x!kiln.ptr<f16>, #l>, %wp: tensor<1024x!kiln.ptr<f16>, #l>,
               %bp: tensor<1024x!kiln.ptr<f16>, #l>, %yp: tensor<1024x!kiln.ptr<f16>, #l>,
               %mean: tensor<1024xf32, #l>) {
  %x = kiln.load %xp : tensor<1024x!kiln.ptr<f16>, #l> -> tensor<1024xf16, #l>
  %xf = arith.extf %x : tensor<1024xf16, #l> to tensor<1024xf32, #l>
  %w = kiln.load %wp : tensor<1024x!kiln.ptr<f16>, #l> -> tensor<1024xf16, #l>
  %wf = arith.extf %w : tensor<1024xf16, #l> to tensor<1024xf32, #l>
  %b = kiln.load %bp : tensor<1024x!kiln.ptr<f16>, #l> -> tensor<1024xf16, #l>
  %bf = arith.extf %b : tensor<1024xf16, #l> to tensor<1024xf32, #l>
  %d = arith.subf %xf, %mean : tensor<1024xf32, #l>
  %y = arith.mulf %d, %wf : tensor<1024xf32, #l>
  %z = arith.addf %y, %bf : tensor<1024xf32, #l>
  %h = arith.truncf %z : tensor<1024xf32, #l> to tensor<1024xf16, #l>
  kiln.store %yp, %h : tensor<1024x!kiln.ptr<f16>, #l>, tensor<1024xf16, #l>
  return
}
}

// -----

#l = #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A chain of casts moves whole, in order, before its first use; a cast of
// a value that is not loaded stays; a cast used inside a loop moves to just
// before the loop.
// CHECK-LABEL: func.func @chains
// CHECK: %[[A:.*]] = kiln.load %arg0
// CHECK-NEXT: %[[C:.*]] = kiln.load %arg1
// CHECK-NEXT: %[[N:.*]] = arith.sitofp %arg2
// CHECK-NEXT: %[[I:.*]] = arith.extsi %[[A]]
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[I]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[F]], %[[N]]
// CHECK-NEXT: %[[CF:.*]] = arith.extf %[[C]]
// CHECK-NEXT: scf.for
// CHECK-NEXT: arith.addf %[[CF]], %[[S]]
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @chains(%ap: tensor<1024x!kiln.ptr<i16>, #l>, %cp: tensor<1024x!kiln.ptr<f16>, #l>,
                  %n: tensor<1024xi32, #l>, %out: tensor<1024x!kiln.ptr<f32>, #l>, %ub: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %a = kiln.load %ap : tensor<1024x!kiln.ptr<i16>, #l> -> tensor<1024xi16, #l>
  %i = arith.extsi %a : tensor<1024xi16, #l> to tensor<1024xi32, #l>
  %f = arith.sitofp %i : tensor<1024xi32, #l> to tensor<1024xf32, #l>
  %c = kiln.load %cp : tensor<1024x!kiln.ptr<f16>, #l> -> tensor<1024xf16, #l>
  %cf = arith.extf %c : tensor<1024xf16, #l> to tensor<1024xf32, #l>
  %nf = arith.sitofp %n : tensor<1024xi32, #l> to tensor<1024xf32, #l>
  %s = arith.addf %f, %nf : tensor<1024xf32, #l>
  scf.for %k = %c0 to %ub step %c1 : i32 {
    %t = arith.addf %cf, %s : tensor<1024xf32, #l>
    kiln.store %out, %t : tensor<1024x!kiln.ptr<f32>, #l>, tensor<1024xf32, #l>
  }
  return
}
}

// -----

#l = #kiln_gpu.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A cast used in another block stays where it is.
// CHECK-LABEL: func.func @other_block
// CHECK: %[[A:.*]] = kiln.load %arg0
// CHECK-NEXT: %[[F:.*]] = arith.extf %[[A]]
// CHECK-NEXT: %[[B:.*]] = kiln.load %arg1
// CHECK-NEXT: cf.br ^bb1
// CHECK: kiln.store %arg2, %[[F]]
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @other_block(%ap: tensor<1024x!kiln.ptr<f16>, #l>, %bp: tensor<1024x!kiln.ptr<f16>, #l>,
                       %out: tensor<1024x!kiln.ptr<f32>, #l>) {
  %a = kiln.load %ap : tensor<1024x!kiln.ptr<f16>, #l> -> tensor<1024xf16, #l>
  %f = arith.extf %a : tensor<1024xf16, #l> to tensor<1024xf32, #l>
  %b = kiln.load %bp : tensor<1024x!kiln.ptr<f16>, #l> -> tensor<1024xf16, #l>
  cf.br ^bb1
^bb1:
  kiln.store %out, %f : tensor<1024x!kiln.ptr<f32>, #l>, tensor<1024xf32, #l>
  %bf = arith.extf %b : tensor<1024xf16, #l> to tensor<1024xf32, #l>
  kiln.store %out, %bf : tensor<1024x!kiln.ptr<f32>, #l>, tensor<1024xf32, #l>
  return
}
}
