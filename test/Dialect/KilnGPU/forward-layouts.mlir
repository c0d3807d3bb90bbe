// RUN: kiln-opt %s -split-input-file -kiln-gpu-forward-layouts -canonicalize -cse | FileCheck %s

#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#b1 = #kiln_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>

// The softmax of an attention loop: the scores, their row maximum, the
// maximum the loop carries and the probabilities that feed the second dot
// all stay in the first dot's layout; the only conversion left is of the
// loop's result for the return, and the carried maximum starts as a
// constant in the slice.
// CHECK-DAG: #[[ACC:.*]] = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-DAG: #[[ROW:.*]] = #kiln_gpu.slice<{dim = 1, parent = #[[ACC]]}>
// CHECK-LABEL: func.func @softmax_loop
// CHECK-NOT: kiln_gpu.convert_layout
// CHECK: arith.constant dense<0xFF800000> : tensor<64xf32, #[[ROW]]>
// CHECK: scf.for {{.*}} -> (tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[ACC]]>)
// CHECK: %[[S:.*]] = kiln.dot {{.*}} -> tensor<64x64xf32, #[[ACC]]>
// CHECK: kiln.reduce(%[[S]]) {axis = 1 : i32} : (tensor<64x64xf32, #[[ACC]]>) -> tensor<64xf32, #[[ROW]]>
// CHECK: math.exp2 {{.*}} : tensor<64x64xf32, #[[ACC]]>
// CHECK: %[[P:.*]] = arith.truncf {{.*}} : tensor<64x64xf32, #[[ACC]]> to tensor<64x64xf16, #[[ACC]]>
// CHECK: kiln.dot %[[P]], {{.*}} : tensor<64x64xf16, #[[ACC]]> * tensor<64x64xf16, #{{.*}}> -> tensor<64x64xf32, #[[ACC]]>
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: kiln_gpu.convert_layout %{{.*}}#0 : tensor<64xf32, #[[ROW]]> -> tensor<64xf32, #{{.*}}>
// CHECK-NEXT: return
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @softmax_loop(%q: tensor<64x64xf16, #b2>, %k: tensor<64x64xf16, #b2>, %v: tensor<64x64xf16, #b2>, %n: index) -> (tensor<64xf32, #b1>, tensor<64x64xf32, #acc>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
  %ninf = arith.constant dense<0xFF800000> : tensor<64xf32, #b1>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%m = %ninf, %o = %zero) -> (tensor<64xf32, #b1>, tensor<64x64xf32, #acc>) {
    %s = kiln.dot %q, %k, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #b2> * tensor<64x64xf16, #b2> -> tensor<64x64xf32, #acc>
    %sc = kiln_gpu.convert_layout %s : tensor<64x64xf32, #acc> -> tensor<64x64xf32, #b2>
    %rowmax = kiln.reduce(%sc) {axis = 1 : i32} : (tensor<64x64xf32, #b2>) -> tensor<64xf32, #kiln_gpu.slice<{dim = 1, parent = #b2}>> {
    ^bb0(%x: f32, %y: f32):
      %mx = arith.maxnumf %x, %y : f32
      kiln.reduce.return %mx : f32
    }
    %rm = kiln_gpu.convert_layout %rowmax : tensor<64xf32, #kiln_gpu.slice<{dim = 1, parent = #b2}>> -> tensor<64xf32, #b1>
    %mnew = arith.maxnumf %m, %rm : tensor<64xf32, #b1>
    %ms = kiln_gpu.convert_layout %mnew : tensor<64xf32, #b1> -> tensor<64xf32, #kiln_gpu.slice<{dim = 1, parent = #b2}>>
    %me = kiln.expand_dims %ms {axis = 1 : i32} : tensor<64xf32, #kiln_gpu.slice<{dim = 1, parent = #b2}>> -> tensor<64x1xf32, #b2>
    %mb = kiln.broadcast %me : tensor<64x1xf32, #b2> -> tensor<64x64xf32, #b2>
    %d = arith.subf %sc, %mb : tensor<64x64xf32, #b2>
    %e = math.exp2 %d : tensor<64x64xf32, #b2>
    %p = arith.truncf %e : tensor<64x64xf32, #b2> to tensor<64x64xf16, #b2>
    %o2 = kiln.dot %p, %v, %o {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #b2> * tensor<64x64xf16, #b2> -> tensor<64x64xf32, #acc>
    scf.yield %mnew, %o2 : tensor<64xf32, #b1>, tensor<64x64xf32, #acc>
  }
  return %r#0, %r#1 : tensor<64xf32, #b1>, tensor<64x64xf32, #acc>
}
}

// -----

// An op that needs its operand's layout (here a store) gets the block
// converted back, after the narrowing truncf: half the bytes move.
// CHECK: // -----
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @narrow_before_converting
// CHECK: %[[T:.*]] = arith.truncf %{{.*}} : tensor<64x64xf32, #[[ACC:.*]]> to tensor<64x64xf16, #[[ACC]]>
// CHECK: %[[C:.*]] = kiln_gpu.convert_layout %[[T]] : tensor<64x64xf16, #[[ACC]]> -> tensor<64x64xf16, #[[B2:.*]]>
// CHECK: kiln.store %{{.*}}, %[[C]] : tensor<64x64x!kiln.ptr<f16>, #[[B2]]>, tensor<64x64xf16, #[[B2]]>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @narrow_before_converting(%x: tensor<64x64xf32, #acc>, %ptrs: tensor<64x64x!kiln.ptr<f16>, #b2>) {
  %c = kiln_gpu.convert_layout %x : tensor<64x64xf32, #acc> -> tensor<64x64xf32, #b2>
  %t = arith.truncf %c : tensor<64x64xf32, #b2> to tensor<64x64xf16, #b2>
  kiln.store %ptrs, %t : tensor<64x64x!kiln.ptr<f16>, #b2>, tensor<64x64xf16, #b2>
  return
}
}

// -----

// Moving the conversion would convert another block of the same size that
// cannot be recomputed (a function argument): nothing changes.
// CHECK: // -----
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @no_gain
// CHECK: %[[C:.*]] = kiln_gpu.convert_layout %arg0
// CHECK: arith.addf %[[C]], %arg1 : tensor<64x64xf32, #{{.*}}>
// CHECK-NOT: kiln_gpu.convert_layout
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @no_gain(%x: tensor<64x64xf32, #acc>, %y: tensor<64x64xf32, #b2>) -> tensor<64x64xf32, #b2> {
  %c = kiln_gpu.convert_layout %x : tensor<64x64xf32, #acc> -> tensor<64x64xf32, #b2>
  %s = arith.addf %c, %y : tensor<64x64xf32, #b2>
  return %s : tensor<64x64xf32, #b2>
}
}

// -----

// A mask applied under an scf.if (the diagonal block of a causal loop
// written by hand): the result takes the dot's layout in both regions,
// the select runs in it, and the block's conversions (the one before the
// branch and the one in it) are gone; only the return's is left.
// CHECK: // -----
#acc = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#b2 = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @masked_in_branch
// CHECK-NOT: kiln_gpu.convert_layout
// CHECK: %[[S:.*]] = kiln.dot {{.*}} -> tensor<64x64xf32, #[[ACC:.*]]>
// CHECK: %[[R:.*]] = scf.if %{{.*}} -> (tensor<64x64xf32, #[[ACC]]>) {
// CHECK-NEXT: %[[M:.*]] = arith.select %{{.*}}, %[[S]], %{{.*}} : tensor<64x64xi1, #[[ACC]]>, tensor<64x64xf32, #[[ACC]]>
// CHECK-NEXT: scf.yield %[[M]] : tensor<64x64xf32, #[[ACC]]>
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[S]] : tensor<64x64xf32, #[[ACC]]>
// CHECK: math.exp2 %[[R]] : tensor<64x64xf32, #[[ACC]]>
// CHECK: kiln_gpu.convert_layout %{{.*}} : tensor<64x64xf32, #[[ACC]]> -> tensor<64x64xf32, #{{.*}}>
// CHECK-NEXT: return
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32} {
func.func @masked_in_branch(%q: tensor<64x64xf16, #b2>, %k: tensor<64x64xf16, #b2>, %keep: tensor<64x64xi1, #acc>, %diagonal: i1) -> tensor<64x64xf32, #b2> {
  %zero = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
  %ninf = arith.constant dense<0xFF800000> : tensor<64x64xf32, #acc>
  %s = kiln.dot %q, %k, %zero {inputPrecision = #kiln.precision<ieee>} : tensor<64x64xf16, #b2> * tensor<64x64xf16, #b2> -> tensor<64x64xf32, #acc>
  %sc = kiln_gpu.convert_layout %s : tensor<64x64xf32, #acc> -> tensor<64x64xf32, #b2>
  %r = scf.if %diagonal -> (tensor<64x64xf32, #b2>) {
    %m = arith.select %keep, %s, %ninf : tensor<64x64xi1, #acc>, tensor<64x64xf32, #acc>
    %mc = kiln_gpu.convert_layout %m : tensor<64x64xf32, #acc> -> tensor<64x64xf32, #b2>
    scf.yield %mc : tensor<64x64xf32, #b2>
  } else {
    scf.yield %sc : tensor<64x64xf32, #b2>
  }
  %e = math.exp2 %r : tensor<64x64xf32, #b2>
  return %e : tensor<64x64xf32, #b2>
}
}
