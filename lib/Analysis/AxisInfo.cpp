//===- AxisInfo.cpp - Contiguity, divisibility and constancy ---------------===//
//
// Implements the axis-info analysis as a memoized walk up the use-def chains:
// each value's information is derived from its operands' by a rule per op.
// Every rule is conservative: it may under-claim, never over-claim, since
// lowering turns the claims into wide, unpredicated-per-element accesses.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/AxisInfo.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include "llvm/ADT/bit.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kiln;

int64_t mlir::kiln::highestPowerOf2Divisor(int64_t value) {
  if (value == 0)
    return AxisInfo::kMaxDivisibility;
  int64_t divisor = value & -value; // lowest set bit
  return std::min(std::abs(divisor), AxisInfo::kMaxDivisibility);
}

static SmallVector<int64_t> shapeOf(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return SmallVector<int64_t>(tensor.getShape());
  return {1};
}

AxisInfo AxisInfo::unknown(int64_t rank) {
  AxisInfo info;
  info.contiguity.assign(rank, 1);
  info.divisibility.assign(rank, 1);
  info.constancy.assign(rank, 1);
  return info;
}

AxisInfo AxisInfo::constant(int64_t value, ArrayRef<int64_t> shape) {
  AxisInfo info;
  info.contiguity.assign(shape.size(), 1);
  info.divisibility.assign(shape.size(), highestPowerOf2Divisor(value));
  info.constancy.assign(shape.begin(), shape.end());
  info.constantValue = value;
  return info;
}

static int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }

static int64_t capDivisibility(int64_t value) {
  return std::min(value, AxisInfo::kMaxDivisibility);
}

/// Size in bytes of the element a pointer-like type points to (a pointer
/// to pointers holds 64-bit addresses).
static int64_t pointeeBytes(Type ptrLike) {
  Type pointee = getPointeeType(ptrLike);
  if (isa<PointerType>(pointee))
    return 8;
  return std::max<int64_t>(1, pointee.getIntOrFloatBitWidth() / 8);
}

/// The information of a value holding the same addresses as one with
/// information `src` (the pointer casts): consecutive elements of `src`'s
/// runs are `srcStep` bytes apart, and the result's must be `dstStep` bytes
/// apart (an integer's step is 1, a pointer's its pointee's size).
/// Divisibility and constant values are of the address (bytes for pointers,
/// the value for integers), so they carry over, as does constancy. Runs
/// carry over only when the steps agree: a run of f32 pointers is no run of
/// f64 or i8 pointers (their strides differ, no rescaling makes them
/// consecutive), so where the steps differ the facts are dropped to runs of
/// one. Each element then starts a run and the divisibility must hold for
/// each: a run's later elements are the first plus multiples of `srcStep`.
static AxisInfo reinterpretAddresses(AxisInfo src, int64_t srcStep, int64_t dstStep) {
  if (srcStep == dstStep)
    return src;
  for (int64_t d = 0; d < src.getRank(); ++d) {
    if (src.contiguity[d] == 1)
      continue;
    src.contiguity[d] = 1;
    src.divisibility[d] = std::gcd(src.divisibility[d], srcStep);
  }
  return src;
}

AxisInfoAnalysis::AxisInfoAnalysis(Operation *root) { (void)root; }

const AxisInfo &AxisInfoAnalysis::getAxisInfo(Value value) {
  auto it = cache.find(value);
  if (it != cache.end())
    return it->second;
  AxisInfo info = compute(value);
  return cache.try_emplace(value, std::move(info)).first->second;
}

/// Information of a function argument: its declared divisibility (from the
/// JIT's specialization), or a pointer's natural element alignment.
static AxisInfo argumentInfo(BlockArgument arg) {
  SmallVector<int64_t> shape = shapeOf(arg.getType());
  AxisInfo info = AxisInfo::unknown(shape.size());
  auto function = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!function || arg.getOwner() != &function.getFunctionBody().front())
    return info;
  int64_t divisibility = 1;
  if (isa<PointerType>(getElementTypeOrSelf(arg.getType())))
    divisibility = pointeeBytes(arg.getType());
  if (auto attr = function.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                         "kiln.divisibility"))
    divisibility = std::max(divisibility, capDivisibility(attr.getInt()));
  info.divisibility.assign(shape.size(), divisibility);
  return info;
}

/// The divisibility `kiln.assume(value % c == 0)` states for a scalar
/// integer `value`: the largest power of two dividing `c`, or 1.
static int64_t assumedDivisibility(Value value) {
  int64_t best = 1;
  for (Operation *rem : value.getUsers()) {
    if (!isa<arith::RemSIOp, arith::RemUIOp>(rem) || rem->getOperand(0) != value)
      continue;
    APInt divisor;
    if (!matchPattern(rem->getOperand(1), m_ConstantInt(&divisor)))
      continue;
    for (Operation *cmp : rem->getResult(0).getUsers()) {
      auto compare = dyn_cast<arith::CmpIOp>(cmp);
      if (!compare || compare.getPredicate() != arith::CmpIPredicate::eq ||
          !matchPattern(compare.getRhs(), m_Zero()))
        continue;
      for (Operation *user : compare->getUsers())
        if (isa<AssumeOp>(user))
          best = std::max(best, highestPowerOf2Divisor(divisor.getSExtValue()));
    }
  }
  return best;
}

/// Whether a block the program computes may visibly hold negative values: it
/// comes from a range starting below zero, a negative constant or a
/// subtraction of blocks. Scalars are taken to be non-negative unless they
/// are negative constants, as indices from program ids and sizes are (the
/// same assumption Triton makes of every remainder's dividend; proving it
/// would fail on the grouped matmul's `pid % group // group_size`).
static bool mayBeNegative(Value value, unsigned depth = 0) {
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return constant.isNegative();
  if (!isa<RankedTensorType>(value.getType()))
    return false;
  Operation *op = value.getDefiningOp();
  if (!op || depth > 16)
    return true;
  auto mayBe = [&](Value operand) { return mayBeNegative(operand, depth + 1); };
  if (auto range = dyn_cast<MakeRangeOp>(op))
    return range.getStart() < 0;
  if (isa<arith::ExtUIOp, arith::RemUIOp>(op))
    return false;
  if (op->hasTrait<OpTrait::kiln::SameElementValues>() ||
      isa<SplatOp, BroadcastOp, ExpandDimsOp, arith::ExtSIOp, arith::IndexCastOp, AxisHintOp,
          arith::RemSIOp>(op))
    return mayBe(op->getOperand(0));
  if (isa<arith::AddIOp, arith::MulIOp, arith::DivSIOp, arith::MinSIOp>(op))
    return mayBe(op->getOperand(0)) || mayBe(op->getOperand(1));
  if (isa<arith::MaxSIOp, arith::AndIOp>(op))
    return mayBe(op->getOperand(0)) && mayBe(op->getOperand(1));
  if (isa<arith::SelectOp>(op))
    return mayBe(op->getOperand(1)) || mayBe(op->getOperand(2));
  return true;
}

AxisInfo AxisInfoAnalysis::compute(Value value) {
  AxisInfo info = computeFromDefinition(value);
  if (!isa<RankedTensorType>(value.getType()) && value.getType().isInteger())
    info.divisibility[0] = std::max(info.divisibility[0], assumedDivisibility(value));
  return info;
}

AxisInfo AxisInfoAnalysis::computeFromDefinition(Value value) {
  SmallVector<int64_t> shape = shapeOf(value.getType());
  int64_t rank = shape.size();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    // A loop's induction variable is a multiple of what divides both its
    // start and its step.
    if (auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
      if (arg == loop.getInductionVar()) {
        AxisInfo info = AxisInfo::unknown(1);
        info.divisibility[0] = gcd(getAxisInfo(loop.getLowerBound()).divisibility[0],
                                   getAxisInfo(loop.getStep()).divisibility[0]);
        return info;
      }
    if (auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
      if (arg.getOwner() == loop.getBody() && arg.getArgNumber() > 0)
        return computeLoopCarried(loop, arg.getArgNumber() - 1);
    return argumentInfo(arg);
  }

  Operation *op = value.getDefiningOp();
  auto operandInfo = [&](unsigned i) -> AxisInfo {
    return getAxisInfo(op->getOperand(i));
  };

  // A loop's result is its initial value or one the body yields: what
  // holds of the loop-carried value holds of it (the next loop of a split
  // one starts from it).
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return getAxisInfo(loop.getRegionIterArgs()[cast<OpResult>(value).getResultNumber()]);

  // User hints: facts the user guarantees, combined with what is proven.
  if (auto hint = dyn_cast<AxisHintOp>(op)) {
    AxisInfo info = operandInfo(0);
    auto apply = [&](std::optional<ArrayRef<int64_t>> hinted,
                     SmallVector<int64_t> &known, bool boundedByShape) {
      if (!hinted)
        return;
      for (int64_t d = 0; d < rank && d < int64_t(hinted->size()); ++d) {
        int64_t claim = (*hinted)[d];
        if (boundedByShape)
          claim = std::min(claim, shape[d]);
        known[d] = std::max(known[d], capDivisibility(claim));
      }
    };
    apply(hint.getDivisibility(), info.divisibility, /*boundedByShape=*/false);
    apply(hint.getContiguity(), info.contiguity, /*boundedByShape=*/true);
    apply(hint.getConstancy(), info.constancy, /*boundedByShape=*/true);
    return info;
  }

  // Constants.
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    if (auto integer = dyn_cast<IntegerAttr>(constant.getValue()))
      return AxisInfo::constant(integer.getValue().getSExtValue(), shape);
    if (auto splat = dyn_cast<SplatElementsAttr>(constant.getValue()))
      if (splat.getElementType().isInteger())
        return AxisInfo::constant(splat.getSplatValue<APInt>().getSExtValue(),
                                  shape);
    AxisInfo info = AxisInfo::unknown(rank);
    if (isa<SplatElementsAttr>(constant.getValue()))
      info.constancy = shape;
    return info;
  }

  // Block creation and shape changes.
  if (auto range = dyn_cast<MakeRangeOp>(op)) {
    AxisInfo info = AxisInfo::unknown(1);
    info.contiguity[0] = shape[0];
    info.divisibility[0] = highestPowerOf2Divisor(range.getStart());
    return info;
  }
  if (isa<SplatOp>(op)) {
    AxisInfo src = operandInfo(0);
    AxisInfo info = AxisInfo::unknown(rank);
    info.divisibility.assign(rank, src.divisibility[0]);
    info.constancy = shape;
    info.constantValue = src.constantValue;
    return info;
  }
  if (isa<BroadcastOp>(op)) {
    AxisInfo src = operandInfo(0);
    SmallVector<int64_t> srcShape = shapeOf(op->getOperand(0).getType());
    AxisInfo info = src;
    for (int64_t d = 0; d < rank; ++d)
      if (srcShape[d] == 1 && shape[d] != 1) {
        info.contiguity[d] = 1;
        info.constancy[d] = shape[d];
      }
    return info;
  }
  if (auto expand = dyn_cast<ExpandDimsOp>(op)) {
    AxisInfo info = operandInfo(0);
    int64_t axis = expand.getAxis();
    // Along the new dimension of size one every element starts a run, so
    // its divisibility must divide every element: nothing beyond 1 as soon
    // as the source holds consecutive values.
    bool consecutive = llvm::any_of(info.contiguity, [](int64_t c) { return c > 1; });
    int64_t divisibility = consecutive ? 1 : *llvm::min_element(info.divisibility);
    info.contiguity.insert(info.contiguity.begin() + axis, 1);
    info.divisibility.insert(info.divisibility.begin() + axis, divisibility);
    info.constancy.insert(info.constancy.begin() + axis, 1);
    return info;
  }
  if (op->hasTrait<OpTrait::kiln::SameElementValues>() ||
      isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp>(op))
    return operandInfo(0);

  // Pointer casts keep the addresses; what "consecutive" means changes.
  if (isa<PtrToIntOp>(op))
    return reinterpretAddresses(operandInfo(0), pointeeBytes(op->getOperand(0).getType()), 1);
  if (isa<IntToPtrOp>(op))
    return reinterpretAddresses(operandInfo(0), 1, pointeeBytes(value.getType()));
  if (isa<PtrBitcastOp>(op))
    return reinterpretAddresses(operandInfo(0), pointeeBytes(op->getOperand(0).getType()),
                                pointeeBytes(value.getType()));

  // Arithmetic. Operands of these ops have the result's shape.
  auto combineConstancy = [&](const AxisInfo &lhs, const AxisInfo &rhs) {
    SmallVector<int64_t> constancy;
    for (int64_t d = 0; d < rank; ++d)
      constancy.push_back(gcd(lhs.constancy[d], rhs.constancy[d]));
    return constancy;
  };
  auto addLike = [&](const AxisInfo &lhs, const AxisInfo &rhs,
                     int64_t rhsScale, bool subtract) {
    AxisInfo info = AxisInfo::unknown(rank);
    for (int64_t d = 0; d < rank; ++d) {
      // Adding a run-wise constant keeps a run contiguous.
      int64_t contiguity = gcd(lhs.contiguity[d], rhs.constancy[d]);
      if (!subtract)
        contiguity = std::max(contiguity, gcd(lhs.constancy[d], rhs.contiguity[d]));
      info.contiguity[d] = contiguity;
      info.divisibility[d] = gcd(lhs.divisibility[d],
                                 capDivisibility(rhs.divisibility[d] * rhsScale));
    }
    info.constancy = combineConstancy(lhs, rhs);
    if (lhs.constantValue && rhs.constantValue)
      info.constantValue = subtract
                               ? *lhs.constantValue - *rhs.constantValue * rhsScale
                               : *lhs.constantValue + *rhs.constantValue * rhsScale;
    return info;
  };
  if (isa<AddPtrOp>(op))
    return addLike(operandInfo(0), operandInfo(1), pointeeBytes(value.getType()),
                   /*subtract=*/false);
  if (isa<arith::AddIOp>(op))
    return addLike(operandInfo(0), operandInfo(1), 1, /*subtract=*/false);
  if (isa<arith::SubIOp>(op))
    return addLike(operandInfo(0), operandInfo(1), 1, /*subtract=*/true);
  if (isa<arith::MulIOp>(op)) {
    AxisInfo lhs = operandInfo(0), rhs = operandInfo(1);
    AxisInfo info = AxisInfo::unknown(rank);
    for (int64_t d = 0; d < rank; ++d) {
      if (rhs.constantValue == 1)
        info.contiguity[d] = lhs.contiguity[d];
      else if (lhs.constantValue == 1)
        info.contiguity[d] = rhs.contiguity[d];
      // A factor's divisibility speaks for the first element of each of
      // its runs. Where the product keeps no run of it (a run times
      // anything but 1), every product starts a run of its own, and the
      // run's other elements (consecutive integers) are divisible by 1.
      bool productKeepsRuns = info.contiguity[d] > 1;
      int64_t lhsDivisibility =
          lhs.contiguity[d] > 1 && !productKeepsRuns ? 1 : lhs.divisibility[d];
      int64_t rhsDivisibility =
          rhs.contiguity[d] > 1 && !productKeepsRuns ? 1 : rhs.divisibility[d];
      info.divisibility[d] = capDivisibility(lhsDivisibility * rhsDivisibility);
    }
    info.constancy = combineConstancy(lhs, rhs);
    if (lhs.constantValue && rhs.constantValue)
      info.constantValue = *lhs.constantValue * *rhs.constantValue;
    return info;
  }
  if (isa<arith::RemSIOp, arith::RemUIOp>(op)) {
    AxisInfo lhs = operandInfo(0), rhs = operandInfo(1);
    AxisInfo info = AxisInfo::unknown(rank);
    // x % c, c the same along a dimension (a constant, or a splat of a
    // scalar known to be a multiple of g): a run of x wraps where it meets a
    // multiple of g. Runs of x start at multiples of x's divisibility D, so
    // the wraps fall at multiples of gcd(g, D) along the run, which bounds
    // the result's runs. A signed remainder of a negative x wraps one
    // element after each multiple instead (-257, -256, -255 give -1, 0,
    // -255), so it keeps no runs when x may be negative. Where runs start
    // is the result's divisibility.
    bool keepsRuns = !isa<arith::RemSIOp>(op) || !mayBeNegative(op->getOperand(0));
    for (int64_t d = 0; d < rank; ++d) {
      bool uniform = rhs.constantValue ? *rhs.constantValue > 0
                                       : rhs.constancy[d] >= shape[d];
      if (!uniform)
        continue;
      int64_t multiple = rhs.constantValue ? highestPowerOf2Divisor(*rhs.constantValue)
                                           : rhs.divisibility[d];
      info.divisibility[d] = gcd(lhs.divisibility[d], rhs.divisibility[d]);
      if (keepsRuns)
        info.contiguity[d] = gcd(lhs.contiguity[d], gcd(multiple, lhs.divisibility[d]));
    }
    info.constancy = combineConstancy(lhs, rhs);
    return info;
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    AxisInfo lhs = operandInfo(0), rhs = operandInfo(1);
    AxisInfo info = AxisInfo::unknown(rank);
    info.constancy = combineConstancy(lhs, rhs);
    bool ordered = cmp.getPredicate() != arith::CmpIPredicate::eq &&
                   cmp.getPredicate() != arith::CmpIPredicate::ne;
    if (ordered)
      for (int64_t d = 0; d < rank; ++d) {
        // A contiguous run aligned to g compared with a value divisible by g
        // is on one side of it over every aligned chunk of length g.
        int64_t fromLhs = std::min(
            {lhs.contiguity[d], gcd(lhs.divisibility[d], rhs.divisibility[d]),
             rhs.constancy[d]});
        int64_t fromRhs = std::min(
            {rhs.contiguity[d], gcd(rhs.divisibility[d], lhs.divisibility[d]),
             lhs.constancy[d]});
        info.constancy[d] = std::max({info.constancy[d], fromLhs, fromRhs});
      }
    return info;
  }

  // Any other element-wise op is constant wherever all its operands are.
  if (op->hasTrait<OpTrait::Elementwise>() || isa<arith::SelectOp>(op)) {
    AxisInfo info = AxisInfo::unknown(rank);
    info.constancy = shape;
    for (Value operand : op->getOperands()) {
      if (shapeOf(operand.getType()).size() != size_t(rank))
        continue; // a scalar condition of select: constant everywhere
      const AxisInfo &operandInfo = getAxisInfo(operand);
      for (int64_t d = 0; d < rank; ++d)
        info.constancy[d] = gcd(info.constancy[d], operandInfo.constancy[d]);
    }
    return info;
  }
  return AxisInfo::unknown(rank);
}

/// What holds for both `a` and `b`.
static AxisInfo join(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo info = AxisInfo::unknown(a.getRank());
  for (int64_t d = 0; d < a.getRank(); ++d) {
    info.contiguity[d] = gcd(a.contiguity[d], b.contiguity[d]);
    info.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
    info.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
  }
  if (a.constantValue == b.constantValue)
    info.constantValue = a.constantValue;
  return info;
}

static bool isSame(const AxisInfo &a, const AxisInfo &b) {
  return a.contiguity == b.contiguity && a.divisibility == b.divisibility &&
         a.constancy == b.constancy && a.constantValue == b.constantValue;
}

AxisInfo AxisInfoAnalysis::computeLoopCarried(Operation *op, unsigned index) {
  auto loop = cast<scf::ForOp>(op);
  BlockArgument arg = loop.getRegionIterArgs()[index];
  Value yielded = loop.getBody()->getTerminator()->getOperand(index);
  // Information computed inside the body under an assumption about `arg`
  // that turned out wrong is forgotten before the next round.
  auto forgetBody = [&] {
    loop.getBody()->walk([&](Operation *nested) {
      for (Value result : nested->getResults())
        cache.erase(result);
      for (Region &region : nested->getRegions())
        for (Block &block : region)
          for (Value blockArg : block.getArguments())
            cache.erase(blockArg);
    });
  };
  AxisInfo assumed = getAxisInfo(loop.getInitArgs()[index]);
  // Each round can only lose information, so a few rounds reach the fixed
  // point in practice; past them, nothing is claimed.
  for (int round = 0; round < 4; ++round) {
    forgetBody();
    cache[arg] = assumed;
    AxisInfo next = join(assumed, getAxisInfo(yielded));
    if (isSame(next, assumed))
      return assumed;
    assumed = std::move(next);
  }
  forgetBody();
  cache.erase(arg);
  return AxisInfo::unknown(assumed.getRank());
}

int64_t AxisInfoAnalysis::getPtrVectorWidth(Value ptr, int64_t dim,
                                            int64_t maxBytes) {
  const AxisInfo &info = getAxisInfo(ptr);
  int64_t elementBytes = pointeeBytes(ptr.getType());
  int64_t alignedElements = std::max<int64_t>(1, info.divisibility[dim] / elementBytes);
  int64_t width = std::min({info.contiguity[dim], alignedElements,
                            std::max<int64_t>(1, maxBytes / elementBytes)});
  return int64_t(llvm::bit_floor(uint64_t(std::max<int64_t>(1, width))));
}

int64_t AxisInfoAnalysis::getMaskConstancy(Value mask, int64_t dim) {
  return getAxisInfo(mask).constancy[dim];
}

int64_t AxisInfoAnalysis::getAccessWidth(Value ptr, Value mask, int64_t dim,
                                         int64_t elementsPerThread) {
  auto tensor = dyn_cast<RankedTensorType>(ptr.getType());
  if (!tensor)
    return 1;
  int64_t width = std::min<int64_t>(
      getPtrVectorWidth(ptr, dim), std::min<int64_t>(elementsPerThread, tensor.getDimSize(dim)));
  if (mask)
    width = std::min(width, getMaskConstancy(mask, dim));
  return int64_t(llvm::bit_floor(uint64_t(std::max<int64_t>(1, width))));
}
