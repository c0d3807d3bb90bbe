//===- TensorCores.cpp - NVIDIA tensor-core and target choices -------------===//
//
// Reads the chip's capabilities from the module's target (#kiln_gpu.target: sm_XY, with
// an `a` suffix for the architecture-specific features: wgmma is sm_90a's)
// and decides what the tensor cores compute.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVIDIA/TensorCores.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;
using namespace mlir::kiln::nvidia;

/// The module's target, or null when it has none (or `module` is null).
static TargetAttr getTarget(ModuleOp module) {
  return module ? module->getAttrOfType<TargetAttr>(KilnGPUDialect::getTargetAttrName())
                : TargetAttr();
}

int mlir::kiln::nvidia::getComputeCapability(ModuleOp module) {
  TargetAttr target = getTarget(module);
  return target ? int(target.getCapability()) : 0;
}

int mlir::kiln::nvidia::getComputeCapability(StringRef name) {
  std::optional<std::pair<unsigned, bool>> chip = parseChipName(name);
  return chip ? int(chip->first) : 0;
}

bool mlir::kiln::nvidia::hasFloat8Conversions(int capability) { return capability >= 90; }

bool mlir::kiln::nvidia::hasWarpgroupMma(ModuleOp module) {
  TargetAttr target = getTarget(module);
  return target && target.getCapability() == 90 && target.getArchSpecific();
}

bool mlir::kiln::nvidia::hasAsyncCopy(ModuleOp module) {
  return getComputeCapability(module) >= 80;
}

/// The tensor-core operand type of an 8-bit float format.
static NVVM::MMATypes getFloat8MmaType(Float8Format format) {
  return format == Float8Format::e4m3 ? NVVM::MMATypes::e4m3 : NVVM::MMATypes::e5m2;
}

std::optional<TensorCoreOperands> mlir::kiln::nvidia::getTensorCoreOperands(DotOp dot) {
  RankedTensorType aType = dot.getA().getType();
  if (aType.getRank() != 2 && aType.getRank() != 3)
    return std::nullopt;
  Type element = aType.getElementType();
  TensorCoreOperands operands;
  if (element.isF16()) {
    operands.aType = NVVM::MMATypes::f16;
  } else if (element.isBF16()) {
    operands.aType = NVVM::MMATypes::bf16;
  } else if (element.isF32()) {
    InputPrecision precision = dot.getInputPrecision();
    if (precision == InputPrecision::ieee)
      return std::nullopt;
    operands.aType = NVVM::MMATypes::tf32;
    operands.elementBytes = 4;
    operands.split = precision == InputPrecision::tf32x3;
  } else if (dot.hasFloat8Operands()) {
    operands.aType = getFloat8MmaType(*dot.getAFloat8());
    operands.bType = getFloat8MmaType(*dot.getBFloat8());
    operands.elementBytes = 1;
  } else if (element.isInteger(8) && dot.getType().getElementType().isInteger(32)) {
    operands.aType = NVVM::MMATypes::s8;
    operands.elementBytes = 1;
    operands.integer = true;
  } else {
    return std::nullopt;
  }
  if (aType.getShape().back() % operands.instructionK() != 0)
    return std::nullopt;
  if (!dot.hasFloat8Operands())
    operands.bType = operands.aType;
  operands.kMajorB = operands.needsKMajorB();
  return operands;
}

bool mlir::kiln::nvidia::canUseWarpgroupMma(DotOp dot) {
  std::optional<TensorCoreOperands> operands = getTensorCoreOperands(dot);
  if (!operands || dot.getType().getRank() != 2 || operands->split)
    return false;
  return !(operands->integer && dot.getType().getDimSize(1) > 224);
}

bool mlir::kiln::nvidia::readsWgmmaAFromRegisters(DotOp dot, int numWarps,
                                                   int threadsPerWarp) {
  if (getDotTensorCores(dot, numWarps, threadsPerWarp) != TensorCores::wgmma ||
      dot.getA().getDefiningOp<SharedOperandOp>())
    return false;
  RankedTensorType a = dot.getA().getType();
  Type element = a.getElementType();
  if (!element.isF16() && !element.isBF16())
    return false;
  // The accumulator layout of an [M][K] result is the A fragment of an
  // [M][K] operand: the instructions read A in the rows and 8-column groups
  // they leave their accumulators in.
  return a.getEncoding() == getWgmmaAccumulatorLayout(dot.getContext(),
                                                      {a.getDimSize(0), 64}, numWarps,
                                                      threadsPerWarp) &&
         a.getDimSize(1) % 16 == 0;
}

bool mlir::kiln::nvidia::storesAInScratch(DotOp dot, int numWarps, int threadsPerWarp) {
  return !dot.getA().getDefiningOp<SharedOperandOp>() &&
         !readsWgmmaAFromRegisters(dot, numWarps, threadsPerWarp);
}

bool mlir::kiln::nvidia::storesBInScratch(DotOp dot) {
  return !dot.getB().getDefiningOp<SharedOperandOp>();
}

std::optional<TensorCores> mlir::kiln::nvidia::getDotTensorCores(DotOp dot, int numWarps,
                                                              int threadsPerWarp) {
  RankedTensorType type = dot.getType();
  if (!getTensorCoreOperands(dot))
    return std::nullopt;
  if (hasWarpgroupMma(dot->getParentOfType<ModuleOp>()) && canUseWarpgroupMma(dot) &&
      type.getEncoding() ==
          getWgmmaAccumulatorLayout(dot.getContext(), type.getShape(), numWarps, threadsPerWarp))
    return TensorCores::wgmma;
  // mma.sync takes 8-bit floats from sm_89 (PTX 8.4) only: those dots are
  // decoded to f16 unless wgmma computes them.
  if (hasMmaAccumulatorLayout(type, numWarps, threadsPerWarp) && !dot.hasFloat8Operands())
    return TensorCores::mma;
  return std::nullopt;
}
