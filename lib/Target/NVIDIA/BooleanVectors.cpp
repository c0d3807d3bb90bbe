//===- BooleanVectors.cpp - Per-lane operations on vectors of i1 ----------===//
//
// See BooleanVectors.h for why the NVPTX translation splits them.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVIDIA/BooleanVectors.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

using namespace llvm;

namespace mlir::kiln::nvidia {
namespace {

bool isBooleanVector(Type *type) {
  auto *vector = dyn_cast<FixedVectorType>(type);
  return vector && vector->getElementType()->isIntegerTy(1);
}

/// Whether `inst` is an operation this pass splits: one whose result, or
/// whose select condition or cast source, is a vector of i1. Anything else
/// that touches such a vector (a phi, a call, a bitcast, an
/// extractelement, which is what the split feeds) stays as it is.
bool splits(const Instruction &inst) {
  if (!isa<FixedVectorType>(inst.getType()))
    return false;
  if (isa<CmpInst>(inst) || isa<BinaryOperator>(inst) ||
      isa<ShuffleVectorInst>(inst))
    return isBooleanVector(inst.getType());
  if (auto *select = dyn_cast<SelectInst>(&inst))
    return isBooleanVector(select->getCondition()->getType()) ||
           isBooleanVector(inst.getType());
  if (auto *conversion = dyn_cast<CastInst>(&inst))
    return (conversion->getOpcode() == Instruction::ZExt ||
            conversion->getOpcode() == Instruction::SExt ||
            conversion->getOpcode() == Instruction::Trunc) &&
           (isBooleanVector(inst.getType()) ||
            isBooleanVector(conversion->getOperand(0)->getType()));
  return false;
}

/// Lane `lane` of `value`: `value` itself when it is a scalar (a select's
/// scalar condition), else an extractelement that InstCombine folds into
/// the scalar the lane was built from.
Value *laneOf(IRBuilder<> &builder, Value *value, unsigned lane) {
  if (!value->getType()->isVectorTy())
    return value;
  return builder.CreateExtractElement(value, builder.getInt64(lane));
}

/// The scalar operation of lane `lane` of `inst`, one of the operations
/// `splits` accepts.
Value *splitLane(IRBuilder<> &builder, Instruction &inst, unsigned lane) {
  Value *result;
  if (auto *shuffle = dyn_cast<ShuffleVectorInst>(&inst)) {
    int source = shuffle->getMaskValue(lane);
    Type *element = cast<FixedVectorType>(inst.getType())->getElementType();
    if (source < 0)
      return PoisonValue::get(element);
    unsigned firstLanes =
        cast<FixedVectorType>(shuffle->getOperand(0)->getType())
            ->getNumElements();
    unsigned index = static_cast<unsigned>(source);
    return index < firstLanes
               ? laneOf(builder, shuffle->getOperand(0), index)
               : laneOf(builder, shuffle->getOperand(1), index - firstLanes);
  }
  if (auto *compare = dyn_cast<CmpInst>(&inst)) {
    result = builder.CreateCmp(compare->getPredicate(),
                               laneOf(builder, compare->getOperand(0), lane),
                               laneOf(builder, compare->getOperand(1), lane));
  } else if (auto *binary = dyn_cast<BinaryOperator>(&inst)) {
    result = builder.CreateBinOp(binary->getOpcode(),
                                 laneOf(builder, binary->getOperand(0), lane),
                                 laneOf(builder, binary->getOperand(1), lane));
  } else if (auto *select = dyn_cast<SelectInst>(&inst)) {
    result =
        builder.CreateSelect(laneOf(builder, select->getCondition(), lane),
                             laneOf(builder, select->getTrueValue(), lane),
                             laneOf(builder, select->getFalseValue(), lane));
  } else {
    auto *conversion = cast<CastInst>(&inst);
    result =
        builder.CreateCast(conversion->getOpcode(),
                           laneOf(builder, conversion->getOperand(0), lane),
                           conversion->getDestTy()->getScalarType());
  }
  // Fast-math flags, nsw/nuw, exact, samesign: what held for the vector
  // holds for each lane. (A folded constant is no instruction.)
  if (auto *scalar = dyn_cast<Instruction>(result))
    scalar->copyIRFlags(&inst);
  return result;
}

} // namespace

PreservedAnalyses SplitBooleanVectorsPass::run(Function &function,
                                               FunctionAnalysisManager &) {
  SmallVector<Instruction *> worklist;
  for (Instruction &inst : instructions(function))
    if (splits(inst))
      worklist.push_back(&inst);
  if (worklist.empty())
    return PreservedAnalyses::all();

  // In program order, so that an operand split earlier is already the
  // insertelement chain whose lanes the next split extracts.
  IRBuilder<> builder(function.getContext());
  for (Instruction *inst : worklist) {
    builder.SetInsertPoint(inst);
    builder.SetCurrentDebugLocation(inst->getDebugLoc());
    auto *type = cast<FixedVectorType>(inst->getType());
    Value *gathered = PoisonValue::get(type);
    for (unsigned lane = 0, lanes = type->getNumElements(); lane < lanes;
         ++lane)
      gathered = builder.CreateInsertElement(
          gathered, splitLane(builder, *inst, lane), builder.getInt64(lane));
    gathered->takeName(inst);
    inst->replaceAllUsesWith(gathered);
    inst->eraseFromParent();
  }
  PreservedAnalyses preserved;
  preserved.preserveSet<CFGAnalyses>();
  return preserved;
}

} // namespace mlir::kiln::nvidia
