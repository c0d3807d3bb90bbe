// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s --check-prefix=FOLD

#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#b4 = #kiln_gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// CHECK-LABEL: func.func @convert
// FOLD-LABEL: func.func @convert
func.func @convert(%a: tensor<1024xf32, #b1>) -> (tensor<1024xf32, #b4>, tensor<1024xf32, #b1>) {
  // CHECK: kiln_gpu.convert_layout %{{.*}} : tensor<1024xf32, #{{.*}}> -> tensor<1024xf32, #{{.*}}>
  // FOLD: %[[C:.*]] = kiln_gpu.convert_layout
  %b = kiln_gpu.convert_layout %a : tensor<1024xf32, #b1> -> tensor<1024xf32, #b4>
  // A conversion to the same layout folds away.
  // FOLD: return %[[C]], %arg0
  %c = kiln_gpu.convert_layout %a : tensor<1024xf32, #b1> -> tensor<1024xf32, #b1>
  return %b, %c : tensor<1024xf32, #b4>, tensor<1024xf32, #b1>
}

#b2 = #kiln_gpu.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// A conversion of a conversion converts the original block once, and not at
// all where that is its own layout.
// FOLD-LABEL: func.func @convert_chain
func.func @convert_chain(%a: tensor<1024xf32, #b1>) -> (tensor<1024xf32, #b4>, tensor<1024xf32, #b1>) {
  // FOLD: %[[C:.*]] = kiln_gpu.convert_layout %arg0 : tensor<1024xf32, #{{.*}}> -> tensor<1024xf32, #[[B4:.*]]>
  // FOLD-NOT: kiln_gpu.convert_layout
  // FOLD: return %[[C]], %arg0
  %b = kiln_gpu.convert_layout %a : tensor<1024xf32, #b1> -> tensor<1024xf32, #b2>
  %c = kiln_gpu.convert_layout %b : tensor<1024xf32, #b2> -> tensor<1024xf32, #b4>
  %d = kiln_gpu.convert_layout %b : tensor<1024xf32, #b2> -> tensor<1024xf32, #b1>
  return %c, %d : tensor<1024xf32, #b4>, tensor<1024xf32, #b1>
}

// -----

// The target and the tensor cores are typed attributes that print as they
// parse.
// CHECK: module attributes {kiln_gpu.target = #kiln_gpu.target<sm_90a>}
// CHECK: func.func @typed_attributes() attributes {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>, target = #kiln_gpu.target<sm_80>}
// FOLD-LABEL: func.func @typed_attributes
module attributes {kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
  func.func @typed_attributes() attributes {buffer = #kiln_gpu.operand_buffer<operand = 1, tensorCores = #kiln_gpu.tensor_cores<mma>, offset = 0, slotBytes = 4096, slots = 2>, target = #kiln_gpu.target<sm_80>} {
    return
  }
}
