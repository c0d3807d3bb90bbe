//===- KilnGPUToNVVM.cpp - Lower kiln_gpu kernels to LLVM and NVVM ---------===//
//
// Implements convert-kiln-gpu-to-nvvm: structured control flow becomes
// branches, each block value becomes the vector of elements one thread
// holds, element-wise arith and math apply to those vectors unchanged (via
// the upstream lowerings), and kiln ops lower per thread from their layouts.
// Kernels become `llvm.func` with `nvvm.kernel` and their required CTA size.
// Shared memory is placed before (kiln-gpu-allocate-shared-memory), and
// needless barriers are erased after (kiln-nvvm-erase-needless-barriers).
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/KilnGPU/Analysis/AccessWidth.h"
#include "kiln/Conversion/LLVMCommon/ElementwiseCall.h"
#include "kiln/Conversion/LLVMCommon/Patterns.h"
#include "kiln/Conversion/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/bit.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_CONVERTKILNGPUTONVVM
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

/// Turns the frontend's kernel markers into NVVM's: `kiln.kernel` becomes
/// `nvvm.kernel` with the required CTA size; argument divisibility becomes
/// LLVM alignment on pointers; a TMA tensor map (`kiln.tensor_map`) is
/// passed by value, 128 bytes aligned to 64, and read where it lies in the
/// parameter space (`nvvm.grid_constant`), as cp.async.bulk.tensor needs.
/// A positive `maxnreg` caps a kernel's registers per thread (`.maxnreg`).
static void markKernels(ModuleOp module, int threadsPerCTA, int maxnreg) {
  MLIRContext *context = module.getContext();
  module.walk([&](LLVM::LLVMFuncOp function) {
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      function.removeArgAttr(i, StringAttr::get(context, kTensorMapBoxAttr));
      if (function.getArgAttr(i, "kiln.tensor_map")) {
        function.removeArgAttr(i, StringAttr::get(context, "kiln.tensor_map"));
        function.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                            TypeAttr::get(LLVM::LLVMArrayType::get(
                                IntegerType::get(context, 8), 128)));
        function.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                            IntegerAttr::get(IntegerType::get(context, 64), 64));
        function.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                            UnitAttr::get(context));
      }
      auto divisibility =
          function.getArgAttrOfType<IntegerAttr>(i, "kiln.divisibility");
      if (!divisibility)
        continue;
      function.removeArgAttr(i, StringAttr::get(context, "kiln.divisibility"));
      if (isa<LLVM::LLVMPointerType>(function.getArgumentTypes()[i]))
        function.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                            IntegerAttr::get(IntegerType::get(context, 64),
                                             divisibility.getInt()));
    }
    if (!function->hasAttr("kiln.kernel"))
      return;
    function->removeAttr("kiln.kernel");
    function->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(),
                      UnitAttr::get(context));
    function->setAttr(NVVM::NVVMDialect::getReqntidAttrName(),
                      DenseI32ArrayAttr::get(context, {threadsPerCTA, 1, 1}));
    if (maxnreg > 0)
      function->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                        IntegerAttr::get(IntegerType::get(context, 32), maxnreg));
  });
}

/// The first file:line:col inside `loc` (through fused, named and call-site
/// locations), or null.
static FileLineColLoc findFilePosition(Location loc) {
  return loc->findInstanceOf<FileLineColLoc>();
}

/// Rewrites each location to what the debug-info scope pass that follows
/// can read: a file:line:col, or a call site whose callee and caller are
/// both file:line:col (the innermost callee position and the outermost
/// caller position of nested inlining, or fusion). That pass dereferences
/// those parts unchecked, and inlining plus folding nest and fuse them.
static void normalizeLocations(ModuleOp module) {
  module.walk([](Operation *op) {
    Location loc = op->getLoc();
    auto callSite = dyn_cast<CallSiteLoc>(loc);
    if (!callSite) {
      if (isa<FileLineColLoc, UnknownLoc>(loc))
        return;
      if (FileLineColLoc position = findFilePosition(loc))
        op->setLoc(position);
      return;
    }
    Location caller = callSite.getCaller();
    while (auto nested = dyn_cast<CallSiteLoc>(caller))
      caller = nested.getCaller();
    FileLineColLoc calleePosition = findFilePosition(callSite.getCallee());
    FileLineColLoc callerPosition = findFilePosition(caller);
    if (calleePosition && callerPosition)
      op->setLoc(CallSiteLoc::get(calleePosition, callerPosition));
    else if (calleePosition || callerPosition)
      op->setLoc(calleePosition ? calleePosition : callerPosition);
    else
      op->setLoc(UnknownLoc::get(op->getContext()));
  });
}

/// Branches each warp-specialized kernel (one with a kiln_gpu.producer)
/// between its producer warps, which run the region and return, and its
/// consumer warps, which run the rest; with the register counts set, each
/// side first moves registers to the other (setmaxnreg). Only the first
/// producer warp runs the region: the others have nothing to issue. Returns
/// the producer warps of the module's kernels (0 if none). Runs on
/// structured control flow, before it becomes branches.
///
/// The counts assume the registers a thread starts with are all that the
/// CTA's threads may share (ptxas gives a kernel with setmaxnreg that
/// many): the consumers take exactly what the producers give back. Under a
/// `maxnreg` cap a thread starts with fewer, the consumers would wait for
/// registers no one gives, so the registers stay where they are.
static int32_t branchProducerWarps(ModuleOp module, const LaunchShape &launch, int maxnreg) {
  SmallVector<ProducerOp> producers;
  module.walk([&](ProducerOp producer) { producers.push_back(producer); });
  int32_t producerWarps = 0;
  for (ProducerOp producer : producers) {
    producerWarps = std::max<int32_t>(producerWarps, producer.getWarps());
    Location loc = producer.getLoc();
    Block *entry = producer->getBlock();
    Region *body = entry->getParent();
    Block *consumer = entry->splitBlock(producer);
    auto *warpgroup = new Block(), *issuer = new Block(), *idle = new Block();
    body->getBlocks().insertAfter(Region::iterator(entry), warpgroup);
    body->getBlocks().insertAfter(Region::iterator(warpgroup), issuer);
    body->getBlocks().insertAfter(Region::iterator(issuer), idle);
    OpBuilder builder(module.getContext());
    auto threads = [&](int64_t warps) {
      return arith::ConstantIntOp::create(builder, loc, warps * launch.threadsPerWarp, 32);
    };

    builder.setInsertionPointToEnd(entry);
    Value tid = NVVM::ThreadIdXOp::create(builder, loc, builder.getI32Type());
    Value isProducer = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::uge, tid,
                                             threads(launch.numWarps));
    cf::CondBranchOp::create(builder, loc, isProducer, warpgroup, consumer);

    builder.setInsertionPointToEnd(warpgroup);
    bool movesRegisters = maxnreg <= 0;
    if (std::optional<uint32_t> registers = producer.getProducerRegisters(); registers && movesRegisters)
      NVVM::SetMaxRegisterOp::create(builder, loc, *registers, NVVM::SetMaxRegisterAction::decrease);
    Value issues = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, tid,
                                         threads(launch.numWarps + 1));
    cf::CondBranchOp::create(builder, loc, issues, issuer, idle);

    issuer->getOperations().splice(issuer->end(), producer.getBody().front().getOperations());
    builder.setInsertionPointToEnd(issuer);
    func::ReturnOp::create(builder, loc);
    builder.setInsertionPointToEnd(idle);
    func::ReturnOp::create(builder, loc);

    builder.setInsertionPointToStart(consumer);
    if (std::optional<uint32_t> registers = producer.getConsumerRegisters(); registers && movesRegisters)
      NVVM::SetMaxRegisterOp::create(builder, loc, *registers, NVVM::SetMaxRegisterAction::increase);
    producer.erase();
  }
  if (producerWarps)
    module->setAttr(KilnGPUDialect::getProducerWarpsAttrName(),
                    IntegerAttr::get(IntegerType::get(module.getContext(), 32), producerWarps));
  return producerWarps;
}

namespace {

struct ConvertKilnGPUToNVVM
    : public kiln::impl::ConvertKilnGPUToNVVMBase<ConvertKilnGPUToNVVM> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    LaunchShape launch{getNumWarps(module), getThreadsPerWarp(module)};

    // Where the scratch and the pipeline slots lie in shared memory
    // (kiln-gpu-allocate-shared-memory decided it, by liveness, while
    // loops still delimited where the slots are live).
    auto shared = module->getAttrOfType<IntegerAttr>(KilnGPUDialect::getSharedAttrName());
    if (!shared) {
      module.emitError() << "expects the module attribute '"
                         << KilnGPUDialect::getSharedAttrName()
                         << "' (bytes of shared memory): run "
                            "kiln-gpu-allocate-shared-memory first";
      return signalPassFailure();
    }
    // A constant block whose elements differ has no per-thread lowering.
    // Refused before converting: MLIR's arith lowering, tried after the
    // splat pattern, would build an llvm.mlir.constant of the wrong length.
    WalkResult constants = module.walk([](arith::ConstantOp op) {
      auto tensor = dyn_cast<RankedTensorType>(op.getType());
      if (!tensor || !getThreadLayout(tensor) || isa<SplatElementsAttr>(op.getValue()))
        return WalkResult::advance();
      op.emitError("expected a splat constant block; other constant blocks "
                   "are not supported by this lowering");
      return WalkResult::interrupt();
    });
    if (constants.wasInterrupted())
      return signalPassFailure();
    int64_t pipelineStart = 0;
    if (auto offset = module->getAttrOfType<IntegerAttr>(
            KilnGPUDialect::getPipelineOffsetAttrName()))
      pipelineStart = offset.getInt();

    // Decide access widths on the unconverted IR, where the analysis can
    // still see block types, kiln ops and loops (a loop's induction
    // variable is only known to be a multiple of its step while it is an
    // scf.for's).
    AxisInfoAnalysis axisInfo(module);
    AccessWidths widths;
    ResultConstancy constancy;
    module.walk([&](Operation *op) {
      if (auto compare = dyn_cast<arith::CmpIOp>(op);
          compare && isa<RankedTensorType>(compare.getType()))
        constancy[op] = axisInfo.getAxisInfo(compare.getResult()).constancy;
      if (auto load = dyn_cast<LoadOp>(op))
        widths[op] = getAccessWidth(axisInfo, load.getPtr(), load.getMask());
      else if (auto store = dyn_cast<StoreOp>(op))
        widths[op] = getAccessWidth(axisInfo, store.getPtr(), store.getMask());
      else if (auto copy = dyn_cast<AsyncCopyOp>(op))
        widths[op] = getAccessWidth(axisInfo, copy.getPtr(), copy.getMask());
      else if (auto blockCopy = dyn_cast<AsyncCopyBlockOp>(op))
        widths[op] = getAccessWidth(axisInfo, blockCopy.getPtr(), blockCopy.getMask());
    });

    // Checked mode finds each access's parameter on the structured IR too.
    AccessChecks checks;
    if (checked && failed(addCheckedParameters(module, checks)))
      return signalPassFailure();

    declareScratch(module, shared.getInt());

    // Then a warp-specialized kernel's producer warps branch off, and
    // structured control flow becomes branches: the type conversion below
    // only sees block arguments and branch operands.
    int32_t producerWarps = branchProducerWarps(module, launch, maxnreg);
    if (failed(convertStructuredControlFlow(module)))
      return signalPassFailure();

    KilnGPUToNVVMTypeConverter converter(context);
    RewritePatternSet patterns(context);
    populateBlockOpToLLVMPatterns(converter, patterns, launch);
    populateMemoryOpToLLVMPatterns(converter, patterns, widths, launch, checks);
    populateReduceScanOpToLLVMPatterns(converter, patterns, launch);
    populateAtomicOpToLLVMPatterns(converter, patterns, launch, checks);
    populateDebugOpToLLVMPatterns(converter, patterns, launch);
    populateShapeOpToLLVMPatterns(converter, patterns, launch);
    populateDotOpToLLVMPatterns(converter, patterns, launch, widths, pipelineStart);
    populateCompareOpToLLVMPatterns(converter, patterns, constancy);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    populateMathToLibdevicePatterns(converter, patterns);
    populateExternElementwiseToLLVMPatterns(converter, patterns);
    populateInlineAsmToLLVMPatterns(converter, patterns);
    populateFloat8ConversionToLLVMPatterns(converter, patterns);
    populateWarpgroupTurnsToLLVMPatterns(converter, patterns, launch);
    populateMathToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*context);
    target.addLegalDialect<NVVM::NVVMDialect>();
    target.addLegalOp<ModuleOp>();
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    markKernels(module, (launch.numWarps + producerWarps) * launch.threadsPerWarp, maxnreg);
    normalizeLocations(module);
  }
};

} // namespace
