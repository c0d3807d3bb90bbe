// RUN: kiln-opt %s -split-input-file -kiln-gpu-allocate-shared-memory -convert-kiln-gpu-to-nvvm -kiln-nvvm-erase-needless-barriers | FileCheck %s

#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>

// sm_90a, a result in the wgmma accumulator layout: operands stored with
// 16-byte stores (no barrier before them: they are the function's first
// shared-memory accesses), a proxy fence and a barrier, then per k-step of 16 one
// m64n64k16 wgmma (64 rows on one warpgroup), one commit, one wait that
// returns the 32 accumulators. The scratch holds both tiles, B 1024-byte
// aligned after A.
// CHECK: module attributes {{{.*}}kiln_gpu.shared = 8192 : i32
// CHECK-LABEL: llvm.func @wgmma
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier0
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK-NOT: wgmma.mma_async
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @wgmma(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bB>, %c: tensor<64x64xf32, #wg>) -> tensor<64x64xf32, #wg> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #wg>
  return %d : tensor<64x64xf32, #wg>
}
}

// -----

// sm_90a, a dot into zeros (a fresh kl.dot): the first k-step's wgmma
// ignores the accumulators (scale-d 0), which are left undefined rather
// than zeroed; the second accumulates (scale-d 1). The descriptors' start
// fields are shifted and masked once per dot, for B and for A (whose rows
// start at lane 0's warpgroup, shuffled so that ptxas sees one per warp);
// each k-step's descriptor is a 64-bit add to the whole descriptor.
// CHECK: // -----
// CHECK-LABEL: llvm.func @wgmma_into_zeros
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[UNDEF:.*]] = llvm.mlir.undef : f32
// CHECK: llvm.lshr
// CHECK: nvvm.shfl.sync idx
// CHECK: llvm.lshr
// CHECK: %[[A:.*]] = llvm.or %{{.*}}, %{{.*}} : i64
// CHECK-NOT: llvm.lshr
// CHECK: wgmma.mma_async{{.*}}" %[[A]], %{{[0-9]+}}, %[[ZERO]], %[[UNDEF]], %[[UNDEF]],
// CHECK-NOT: llvm.lshr
// CHECK: %[[A1:.*]] = llvm.add %[[A]], %{{.*}} : i64
// CHECK-NOT: llvm.lshr
// CHECK: wgmma.mma_async{{.*}}" %[[A1]], %{{[0-9]+}}, %[[ONE]], %{{[0-9]+}},
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @wgmma_into_zeros(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bB>) -> tensor<64x64xf32, #wg> {
  %zeros = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #wg>
  %d = kiln.dot %a, %b, %zeros {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #wg>
  return %d : tensor<64x64xf32, #wg>
}
}

// -----

// sm_80, mma.sync's layout (warps 2 x 2): per k-step, ldmatrix x4 for A,
// ldmatrix x4 transposed for B (two n-tiles), and 2 x 4 mma.sync per warp.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
// CHECK-LABEL: llvm.func @mma_sync
// CHECK: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32
// CHECK: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
// CHECK-COUNT-8: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @mma_sync(%a: tensor<64x16xbf16, #bA>, %b: tensor<16x64xbf16, #bA>, %c: tensor<64x64xf32, #mma>) -> tensor<64x64xf32, #mma> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x16xbf16, #bA> * tensor<16x64xbf16, #bA> -> tensor<64x64xf32, #mma>
  return %d : tensor<64x64xf32, #mma>
}
}

// -----

// f16 accumulators stay f16 on the tensor cores: mma.sync takes a row's pair
// of columns as one f16x2 register (two per instruction), never extended to
// f32.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
// CHECK-LABEL: llvm.func @mma_sync_f16_acc
// CHECK-NOT: llvm.fpext
// CHECK-COUNT-8: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
// CHECK-NOT: llvm.fptrunc
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @mma_sync_f16_acc(%a: tensor<64x16xf16, #bA>, %b: tensor<16x64xf16, #bA>, %c: tensor<64x64xf16, #mma>) -> tensor<64x64xf16, #mma> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x16xf16, #bA> * tensor<16x64xf16, #bA> -> tensor<64x64xf16, #mma>
  return %d : tensor<64x64xf16, #mma>
}
}

// -----

// wgmma with an f16 accumulator: n / 4 = 16 f16x2 registers per
// instruction, waited for as such.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: llvm.func @wgmma_f16_acc
// CHECK-NOT: llvm.fpext
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16 {$0,$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15}, $16, $17, p, 1, 1, 0, 1;
// CHECK: wgmma.wait_group.sync.aligned 0;", "=r,=r,=r,=r,=r,=r,=r,=r,=r,=r,=r,=r,=r,=r,=r,=r,0,
// CHECK-NOT: llvm.fptrunc
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @wgmma_f16_acc(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bB>, %c: tensor<64x64xf16, #wg>) -> tensor<64x64xf16, #wg> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf16, #wg>
  return %d : tensor<64x64xf16, #wg>
}
}

// -----

// Integer products saturate at the s32 bounds, on mma.sync and on wgmma.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 16], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [2, 2], order = [1, 0]}>
// CHECK-LABEL: llvm.func @mma_sync_s8
// CHECK-COUNT-8: nvvm.mma.sync {{.*}}{intOverflowBehavior = #nvvm.mma_int_overflow<satfinite>, {{.*}}multiplicandAPtxType = #nvvm.mma_type<s8>, multiplicandBPtxType = #nvvm.mma_type<s8>, shape = #nvvm.shape<m = 16, n = 8, k = 32>} : (i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @mma_sync_s8(%a: tensor<64x32xi8, #bA>, %b: tensor<32x64xi8, #bA>, %c: tensor<64x64xi32, #mma>) -> tensor<64x64xi32, #mma> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xi8, #bA> * tensor<32x64xi8, #bA> -> tensor<64x64xi32, #mma>
  return %d : tensor<64x64xi32, #mma>
}
}

// -----

// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 16], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// An fp8 dot promoting every 32 products (K 64: two runs of one k32
// instruction): each run starts from zero (scale-d 0) after a fence, is
// waited for and added to the fp32 accumulator. The second run's fence
// orders its wgmma after the additions that read the partial sums.
// CHECK-LABEL: llvm.func @wgmma_fp8_promoted
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK-COUNT-32: llvm.fadd
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK-COUNT-32: llvm.fadd
// CHECK-NOT: wgmma.mma_async
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @wgmma_fp8_promoted(%a: tensor<64x64xi8, #bA>, %b: tensor<64x64xi8, #bA>, %c: tensor<64x64xf32, #wg>) -> tensor<64x64xf32, #wg> {
  %d = kiln.dot %a, %b, %c {aFloat8 = #kiln.float8<e4m3>, bFloat8 = #kiln.float8<e5m2>, inputPrecision = #kiln.precision<ieee>, maxNumImpreciseAcc = 32 : i32} : tensor<64x64xi8, #bA> * tensor<64x64xi8, #bA> -> tensor<64x64xf32, #wg>
  return %d : tensor<64x64xf32, #wg>
}
}

// -----

// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 16], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: llvm.func @wgmma_s8
// CHECK: wgmma.mma_async.sync.aligned.m64n64k32.satfinite.s32.s8.s8
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @wgmma_s8(%a: tensor<64x32xi8, #bA>, %b: tensor<32x64xi8, #bA>, %c: tensor<64x64xi32, #wg>) -> tensor<64x64xi32, #wg> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<64x32xi8, #bA> * tensor<32x64xi8, #bA> -> tensor<64x64xi32, #wg>
  return %d : tensor<64x64xi32, #wg>
}
}

// -----

// Warps beyond the instruction tiles (16x16 on 4 warps, the layout's warps
// covering 32 columns): each computes the tile whose elements it repeats,
// one mma.sync per k-step.
// CHECK: // -----
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK-LABEL: llvm.func @mma_sync_replicated
// CHECK-COUNT-2: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: mma.sync
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_80>} {
func.func @mma_sync_replicated(%a: tensor<16x32xf16, #bA>, %b: tensor<32x16xf16, #bA>, %c: tensor<16x16xf32, #mma>) -> tensor<16x16xf32, #mma> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<16x32xf16, #bA> * tensor<32x16xf16, #bA> -> tensor<16x16xf32, #mma>
  return %d : tensor<16x16xf32, #mma>
}
}

// -----

// Any other blocked result: FMAs from shared tiles, one per element and k.
// CHECK: // -----
#b = #kiln_gpu.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: llvm.func @fma
// CHECK-NOT: mma
// CHECK-COUNT-64: llvm.intr.fma
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @fma(%a: tensor<32x16xf32, #b>, %b: tensor<16x16xf32, #b>, %c: tensor<32x16xf32, #b>) -> tensor<32x16xf32, #b> {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>} : tensor<32x16xf32, #b> * tensor<16x16xf32, #b> -> tensor<32x16xf32, #b>
  return %d : tensor<32x16xf32, #b>
}
}

// -----

// Asynchronous wgmma dots (kiln_gpu.wgmma_buffer): after its commit, a
// dot waits for the group before its own (the previous dot read the other
// half of the scratch), unless a wait for at most one pending group
// follows at once, which waits for as much; the accumulators stay in
// flight until kiln_gpu.async_dot_wait.
// CHECK-LABEL: llvm.func @async_wgmma
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 1;
#bA = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#bB = #kiln_gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#wg = #kiln_gpu.blocked<{sizePerThread = [1, 2], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
module attributes {kiln_gpu.num_warps = 4 : i32, kiln_gpu.threads_per_warp = 32 : i32, kiln_gpu.target = #kiln_gpu.target<sm_90a>} {
func.func @async_wgmma(%a: tensor<64x32xf16, #bA>, %b: tensor<32x64xf16, #bB>, %c: tensor<64x64xf32, #wg>) -> (tensor<64x64xf32, #wg>, tensor<64x64xf32, #wg>) {
  %d = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>, kiln_gpu.wgmma_buffer = 0 : i32} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #wg>
  %e = kiln.dot %a, %b, %c {inputPrecision = #kiln.precision<ieee>, kiln_gpu.wgmma_buffer = 1 : i32} : tensor<64x32xf16, #bA> * tensor<32x64xf16, #bB> -> tensor<64x64xf32, #wg>
  %dw = kiln_gpu.async_dot_wait %d {pending = 1 : i32} : tensor<64x64xf32, #wg>
  %ew = kiln_gpu.async_dot_wait %e : tensor<64x64xf32, #wg>
  return %dw, %ew : tensor<64x64xf32, #wg>, tensor<64x64xf32, #wg>
}
}
