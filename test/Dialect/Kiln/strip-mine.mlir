// RUN: kiln-opt %s -split-input-file -kiln-strip-mine='chunk-size=64' | FileCheck %s
// RUN: not kiln-opt %s -split-input-file -kiln-strip-mine='chunk-size=3' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: expected chunk-size to be a power of two, got 3

// An element-wise kernel runs once per chunk of 64 elements; each range is
// offset by the chunk's start.
// CHECK-LABEL: func.func @scale
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[C256:.*]] = arith.constant 256 : i32
// CHECK: %[[C64:.*]] = arith.constant 64 : i32
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C256]] step %[[C64]] : i32 {
// CHECK:   %[[R:.*]] = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK:   %[[S:.*]] = kiln.splat %[[I]] : i32 -> tensor<64xi32>
// CHECK:   %[[OFFS:.*]] = arith.addi %[[R]], %[[S]] : tensor<64xi32>
// CHECK:   kiln.addptr %{{.*}}, %[[OFFS]] : tensor<64x!kiln.ptr<f32>>, tensor<64xi32>
// CHECK:   arith.constant dense<2.000000e+00> : tensor<64xf32>
// CHECK:   kiln.store %{{.*}}, %{{.*}} : tensor<64x!kiln.ptr<f32>>, tensor<64xf32>
// CHECK: }
// CHECK-NEXT: return
func.func @scale(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  %two = arith.constant dense<2.0> : tensor<256xf32>
  %w = arith.mulf %v, %two : tensor<256xf32>
  kiln.store %p, %w : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  return
}

// -----

// Blocks of two shapes: left alone.
// CHECK-LABEL: func.func @two_shapes
// CHECK-NOT: scf.for
func.func @two_shapes(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %e = kiln.expand_dims %r {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
  return
}

// -----

// A scalar store that reads no reduction would run ahead of the blocks
// of its phase: left alone.
// CHECK-LABEL: func.func @scalar_store
// CHECK-NOT: scf.for
func.func @scalar_store(%x: !kiln.ptr<f32>, %v: f32) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  kiln.store %x, %v : !kiln.ptr<f32>, f32
  return
}

// -----

// A scalar store of the last reduction's result runs after the last loop,
// where it stands in the program: strip-mined.
// CHECK-LABEL: func.func @sum_then_store
// CHECK: %[[SUM:.*]] = scf.for
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: kiln.store %{{.*}}, %[[SUM]] : !kiln.ptr<f32>, f32
// CHECK-NEXT: return
func.func @sum_then_store(%x: !kiln.ptr<f32>, %y: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %p = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %q = kiln.addptr %p, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v = kiln.load %q : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  %s = kiln.reduce(%v) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    kiln.reduce.return %t : f32
  }
  kiln.store %y, %s : !kiln.ptr<f32>, f32
  return
}

// -----

// The same store before a block store: running it after the loop would
// reorder the two (they may write the same address), so left alone.
// CHECK-LABEL: func.func @sum_store_then_block_store
// CHECK-NOT: scf.for
func.func @sum_store_then_block_store(%x: !kiln.ptr<f32>, %y: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %p = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %q = kiln.addptr %p, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v = kiln.load %q : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  %s = kiln.reduce(%v) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    kiln.reduce.return %t : f32
  }
  kiln.store %y, %s : !kiln.ptr<f32>, f32
  %py = kiln.splat %y : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %qy = kiln.addptr %py, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  kiln.store %qy, %v : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  return
}

// -----

// A barrier orders the first store's elements before the second's, which
// may write the same addresses from other positions: left alone.
// CHECK-LABEL: func.func @stores_across_a_barrier
// CHECK-NOT: scf.for
func.func @stores_across_a_barrier(%x: !kiln.ptr<i32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = kiln.splat %x : !kiln.ptr<i32> -> tensor<256x!kiln.ptr<i32>>
  %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<i32>>, tensor<256xi32>
  kiln.store %p, %r : tensor<256x!kiln.ptr<i32>>, tensor<256xi32>
  kiln.debug_barrier
  %c = arith.constant dense<255> : tensor<256xi32>
  %flipped = arith.subi %c, %r : tensor<256xi32>
  %q = kiln.addptr %xs, %flipped : tensor<256x!kiln.ptr<i32>>, tensor<256xi32>
  kiln.store %q, %r : tensor<256x!kiln.ptr<i32>>, tensor<256xi32>
  return
}

// -----

// Blocks no longer than a chunk: nothing to do.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.for
func.func @small(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  return
}

// -----

// Reductions end phases. Each phase's loop computes again the blocks it
// needs of earlier ones and carries its reductions' partial results,
// started from the first chunk's (a combine function need not have an
// identity) and combined in increasing order; later phases read the
// results as scalars.
// CHECK-LABEL: func.func @softmax
// CHECK:      %[[L0:.*]] = kiln.load %{{.*}}, %{{.*}} : tensor<64x!kiln.ptr<f32>> -> tensor<64xf32>
// CHECK:      %[[FIRST:.*]] = kiln.reduce(%[[L0]])
// CHECK:        arith.maximumf
// CHECK:      %[[MAX:.*]] = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[FIRST]]) -> (f32) : i32 {
// CHECK:        %[[R:.*]] = kiln.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK:        %[[S:.*]] = kiln.splat %[[I]] : i32 -> tensor<64xi32>
// CHECK:        arith.addi %[[R]], %[[S]] : tensor<64xi32>
// CHECK:        %[[PART:.*]] = kiln.reduce(%{{.*}})
// CHECK:        %[[NEXT:.*]] = arith.maximumf %[[ACC]], %[[PART]] : f32
// CHECK:        scf.yield %[[NEXT]] : f32
// CHECK:      }
// CHECK:      kiln.splat %[[MAX]] : f32 -> tensor<64xf32>
// CHECK:      math.exp
// CHECK:      %[[SUM:.*]] = scf.for {{.*}} -> (f32) : i32 {
// CHECK:        kiln.load
// CHECK:        math.exp
// CHECK:        arith.addf
// CHECK:      }
// CHECK:      scf.for
// CHECK-NOT:    kiln.reduce
// CHECK:        kiln.load
// CHECK:        kiln.splat %[[MAX]]
// CHECK:        math.exp
// CHECK:        kiln.splat %[[SUM]]
// CHECK:        arith.divf
// CHECK:        kiln.store
// CHECK:      }
// CHECK-NEXT: return
func.func @softmax(%x: !kiln.ptr<f32>, %y: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %ns = kiln.splat %n : i32 -> tensor<256xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<256xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v = kiln.load %p, %m : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  %mx = kiln.reduce(%v) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.maximumf %a, %b : f32
    kiln.reduce.return %c : f32
  }
  %mxs = kiln.splat %mx : f32 -> tensor<256xf32>
  %d = arith.subf %v, %mxs : tensor<256xf32>
  %e = math.exp %d : tensor<256xf32>
  %s = kiln.reduce(%e) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    kiln.reduce.return %c : f32
  }
  %ss = kiln.splat %s : f32 -> tensor<256xf32>
  %o = arith.divf %e, %ss : tensor<256xf32>
  %ys = kiln.splat %y : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %q = kiln.addptr %ys, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  kiln.store %q, %o, %m : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  return
}

// -----

// A reduction of two blocks (a value and its index) carries both partial
// results and combines them with the region's two pairs of arguments.
// CHECK-LABEL: func.func @argmax
// CHECK:      %[[F:.*]]:2 = kiln.reduce
// CHECK:      scf.for {{.*}} iter_args(%[[V:.*]] = %[[F]]#0, %[[I:.*]] = %[[F]]#1) -> (f32, i32) : i32 {
// CHECK:        %[[P:.*]]:2 = kiln.reduce
// CHECK:        %[[GT:.*]] = arith.cmpf ogt, %[[P]]#0, %[[V]] : f32
// CHECK:        %[[NV:.*]] = arith.select %[[GT]], %[[P]]#0, %[[V]] : f32
// CHECK:        %[[NI:.*]] = arith.select %[[GT]], %[[P]]#1, %[[I]] : i32
// CHECK:        scf.yield %[[NV]], %[[NI]] : f32, i32
func.func @argmax(%x: !kiln.ptr<f32>, %out: !kiln.ptr<i32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  %best:2 = kiln.reduce(%v, %r) {axis = 0 : i32} : (tensor<256xf32>, tensor<256xi32>) -> (f32, i32) {
  ^bb0(%av: f32, %ai: i32, %bv: f32, %bi: i32):
    %gt = arith.cmpf ogt, %bv, %av : f32
    %mv = arith.select %gt, %bv, %av : f32
    %mi = arith.select %gt, %bi, %ai : i32
    kiln.reduce.return %mv, %mi : f32, i32
  }
  %is = kiln.splat %best#1 : i32 -> tensor<256xi32>
  %os = kiln.splat %out : !kiln.ptr<i32> -> tensor<256x!kiln.ptr<i32>>
  %q = kiln.addptr %os, %r : tensor<256x!kiln.ptr<i32>>, tensor<256xi32>
  kiln.store %q, %is : tensor<256x!kiln.ptr<i32>>, tensor<256xi32>
  return
}

// -----

// Blocks of earlier phases are loaded again: a store before the last
// phase could change them under the reload. Left alone.
// CHECK-LABEL: func.func @store_before_reduction
// CHECK-NOT: scf.for
func.func @store_before_reduction(%x: !kiln.ptr<f32>) attributes {kiln.kernel} {
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  kiln.store %p, %v : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  %s = kiln.reduce(%v) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    kiln.reduce.return %c : f32
  }
  %ss = kiln.splat %s : f32 -> tensor<256xf32>
  kiln.store %p, %ss : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  return
}

// -----

// A reduction inside a loop: left alone.
// CHECK-LABEL: func.func @reduction_in_a_loop
// CHECK: scf.for
// CHECK-NOT: scf.for
func.func @reduction_in_a_loop(%x: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
    %s = kiln.reduce(%v) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      kiln.reduce.return %c : f32
    }
    %ss = kiln.splat %s : f32 -> tensor<256xf32>
    kiln.store %p, %ss : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  }
  return
}

// -----

// A loop over scalars that holds all the kernel's blocks: its body is
// strip-mined, so the chunk loop runs inside it; scalars stay outside.
// CHECK-LABEL: func.func @blocks_in_a_loop
// CHECK:      %[[K:.*]] = arith.muli
// CHECK:      scf.for %{{.*}} = %{{.*}} to %[[K]]
// CHECK:        scf.for %[[C:.*]] = {{.*}} : i32 {
// CHECK-NEXT:     %[[R:.*]] = kiln.make_range {end = 64 : i32, start = 0 : i32}
// CHECK-NEXT:     %[[S:.*]] = kiln.splat %[[C]]
// CHECK-NEXT:     arith.addi %[[R]], %[[S]]
// CHECK:          kiln.store {{.*}} : tensor<64x!kiln.ptr<f32>>, tensor<64xf32>
func.func @blocks_in_a_loop(%x: !kiln.ptr<f32>, %n: i32) attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %k = arith.muli %n, %n : i32
  scf.for %i = %c0 to %k step %c1 : i32 {
    %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
    %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
    %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
    %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
    %w = arith.addf %v, %v : tensor<256xf32>
    kiln.store %p, %w : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  }
  return
}

// -----

// A loop over blocks with a scalar result, beside other block ops: the
// result would be left in a chunk loop. Left alone.
// CHECK-LABEL: func.func @scalar_out_of_a_block_loop
// CHECK: scf.for
// CHECK-NOT: scf.for
func.func @scalar_out_of_a_block_loop(%x: !kiln.ptr<f32>, %n: i32) -> () attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r0 = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %xs0 = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
  %p0 = kiln.addptr %xs0, %r0 : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
  %v0 = kiln.load %p0 : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
  kiln.store %p0, %v0 : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
  %t = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (i32) : i32 {
    %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
    %xs = kiln.splat %x : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
    %p = kiln.addptr %xs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
    %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
    kiln.store %p, %v : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
    %b = arith.addi %a, %i : i32
    scf.yield %b : i32
  }
  %u = arith.addi %t, %t : i32
  return
}

// -----

// A persistent kernel: a loop over rows holds every block, reductions
// included (and block constants, which canonicalization moves to the entry
// block, count as the loop's). Its body runs in phases; the row loop's
// scalars stay outside the chunk loops, and what it yields is computed
// again there.
// CHECK-LABEL: func.func @rows_in_a_loop
// CHECK:      scf.for %[[ROW:.*]] = {{.*}} iter_args(%[[T:.*]] = {{.*}}) -> (f32) : i32 {
// CHECK:        %[[BASE:.*]] = kiln.addptr %arg0, %[[ROW]]
// CHECK:        kiln.reduce
// CHECK:        %[[SUM:.*]] = scf.for {{.*}} -> (f32) : i32 {
// CHECK:          kiln.splat %[[BASE]]
// CHECK:          kiln.reduce
// CHECK:        }
// CHECK:        %[[NEXT:.*]] = arith.addf %[[T]], %[[SUM]] : f32
// CHECK:        scf.for
// CHECK-NEXT:     %[[TWO:.*]] = arith.constant dense<2.000000e+00> : tensor<64xf32>
// CHECK:          kiln.splat %[[SUM]]
// CHECK:          arith.mulf %{{.*}}, %[[TWO]] : tensor<64xf32>
// CHECK:          kiln.store
// CHECK:        }
// CHECK-NEXT:   scf.yield %[[NEXT]] : f32
func.func @rows_in_a_loop(%x: !kiln.ptr<f32>, %rows: i32) attributes {kiln.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %two = arith.constant dense<2.0> : tensor<256xf32>
  %total = scf.for %row = %c0 to %rows step %c1 iter_args(%t = %zero) -> (f32) : i32 {
    %base = kiln.addptr %x, %row : !kiln.ptr<f32>, i32
    %r = kiln.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
    %bs = kiln.splat %base : !kiln.ptr<f32> -> tensor<256x!kiln.ptr<f32>>
    %p = kiln.addptr %bs, %r : tensor<256x!kiln.ptr<f32>>, tensor<256xi32>
    %v = kiln.load %p : tensor<256x!kiln.ptr<f32>> -> tensor<256xf32>
    %s = kiln.reduce(%v) {axis = 0 : i32} : (tensor<256xf32>) -> f32 {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      kiln.reduce.return %c : f32
    }
    %ss = kiln.splat %s : f32 -> tensor<256xf32>
    %o = arith.divf %v, %ss : tensor<256xf32>
    %o2 = arith.mulf %o, %two : tensor<256xf32>
    kiln.store %p, %o2 : tensor<256x!kiln.ptr<f32>>, tensor<256xf32>
    %next = arith.addf %t, %s : f32
    scf.yield %next : f32
  }
  return
}
