//===- TensorMapPointerLoads.cpp - TMA maps for a loop's pointer loads -----===//
//
// Implements kiln-tensor-map-pointer-loads. A loop's load through pointers
// that walk rows of a kernel parameter (`K + offset + offs_n[:, None] *
// stride_tok + offs_d[None, :]`, advanced by `BLOCK_N * stride_tok` a trip)
// reads what a two-dimensional TMA map over that parameter would: rows of
// `stride_tok` elements, the block's first element at the row and column
// that the program's offset divides into. Whether that division is exact,
// and the rows fit the map, depends on the launch's arguments and on the
// program, so the loop is versioned: the program checks before the loop,
// once, and runs either a copy whose loads name the maps or the loop as it
// was. (Pointers the body computes from the induction variable qualify as
// well, and masked loads where the check finds the mask true throughout.)
// The maps' shapes and strides are computed from the arguments alone, so
// kiln-hoist-tensor-maps makes them parameters that the launcher encodes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Analysis/WrittenArguments.h"
#include "kiln/Dialect/Kiln/IR/Dialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <optional>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNTENSORMAPPOINTERLOADS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Ops an offset may nest: pointer arithmetic is a few ops deep.
constexpr unsigned kMaxDepth = 32;

/// The rows of every map this pass makes: row coordinates are i32, and the
/// program checks that its rows lie below this.
constexpr int64_t kMapRows = (int64_t(1) << 31) - 1;

/// The TMA unit copies boxes of at most 256 elements a side.
constexpr int64_t kMaxBoxSide = 256;

/// `k` times the product of `factors`: integer scalars defined before the
/// loop, or its induction variable, each read as a signed 64-bit integer.
struct Term {
  SmallVector<Value, 2> factors;
  int64_t k = 0;
};

/// A sum of terms, one per distinct set of factors (kept sorted by
/// factor), none with k = 0: the canonical form that lets two sums be
/// compared term by term.
struct Sum {
  SmallVector<Term, 2> terms;

  static Sum constant(int64_t k) {
    Sum sum;
    if (k != 0)
      sum.terms.push_back(Term{{}, k});
    return sum;
  }

  static Sum leaf(Value value) {
    Sum sum;
    sum.terms.push_back(Term{{value}, 1});
    return sum;
  }

  bool isZero() const { return terms.empty(); }

  /// The constant this sum is, if it has no factors.
  std::optional<int64_t> asConstant() const {
    if (terms.empty())
      return 0;
    if (terms.size() == 1 && terms[0].factors.empty())
      return terms[0].k;
    return std::nullopt;
  }
};

bool sameFactors(const Term &a, const Term &b) {
  return llvm::equal(a.factors, b.factors);
}

/// Sums of terms, with factors ordered by when this algebra first saw them
/// (so that the code made from a sum is the same from run to run).
class Algebra {
public:
  /// `terms` in canonical form, or nullopt where a coefficient overflows.
  std::optional<Sum> normalize(SmallVector<Term, 2> terms) {
    auto byRank = [&](Value x, Value y) { return rank(x) < rank(y); };
    for (Term &term : terms)
      llvm::sort(term.factors, byRank);
    llvm::sort(terms, [&](const Term &a, const Term &b) {
      return std::lexicographical_compare(a.factors.begin(), a.factors.end(), b.factors.begin(),
                                          b.factors.end(), byRank);
    });
    Sum result;
    for (Term &term : terms) {
      if (!result.terms.empty() && sameFactors(result.terms.back(), term)) {
        int64_t total;
        if (llvm::AddOverflow(result.terms.back().k, term.k, total))
          return std::nullopt;
        result.terms.back().k = total;
        continue;
      }
      result.terms.push_back(term);
    }
    llvm::erase_if(result.terms, [](const Term &term) { return term.k == 0; });
    return result;
  }

  /// a + bSign * b.
  std::optional<Sum> add(const Sum &a, const Sum &b, int64_t bSign = 1) {
    SmallVector<Term, 2> terms(a.terms);
    for (const Term &term : b.terms) {
      int64_t k;
      if (llvm::MulOverflow(term.k, bSign, k))
        return std::nullopt;
      terms.push_back(Term{term.factors, k});
    }
    return normalize(std::move(terms));
  }

  std::optional<Sum> multiply(const Sum &a, const Sum &b) {
    SmallVector<Term, 2> terms;
    for (const Term &x : a.terms)
      for (const Term &y : b.terms) {
        Term product;
        if (llvm::MulOverflow(x.k, y.k, product.k))
          return std::nullopt;
        product.factors.append(x.factors.begin(), x.factors.end());
        product.factors.append(y.factors.begin(), y.factors.end());
        terms.push_back(std::move(product));
      }
    return normalize(std::move(terms));
  }

  /// The integer `q` with `multiple` = q * `unit`, if there is one (`unit`
  /// not zero).
  std::optional<int64_t> quotient(const Sum &multiple, const Sum &unit) {
    if (unit.isZero())
      return std::nullopt;
    if (multiple.isZero())
      return 0;
    const Term &first = unit.terms.front();
    auto match = llvm::find_if(multiple.terms, [&](const Term &t) { return sameFactors(t, first); });
    if (match == multiple.terms.end() || match->k % first.k != 0)
      return std::nullopt;
    int64_t q = match->k / first.k;
    std::optional<Sum> scaled = multiply(unit, Sum::constant(q));
    if (!scaled || scaled->terms.size() != multiple.terms.size())
      return std::nullopt;
    for (auto [x, y] : llvm::zip(scaled->terms, multiple.terms))
      if (!sameFactors(x, y) || x.k != y.k)
        return std::nullopt;
    return q;
  }

private:
  unsigned rank(Value factor) {
    return order.try_emplace(factor, order.size()).first->second;
  }

  llvm::DenseMap<Value, unsigned> order;
};

/// The elements of an integer (or pointer) block as `offset + sum over
/// dimensions d of coefficients[d] * i_d`, i_d the element's index along d.
/// A scalar has no coefficients. For pointers, `base` is the kernel
/// parameter they are offsets from, in elements.
struct Affine {
  BlockArgument base;
  Sum offset;
  SmallVector<Sum, 2> coefficients;

  /// Whether every element is the same (every coefficient zero).
  bool isUniform() const {
    return llvm::all_of(coefficients, [](const Sum &s) { return s.isZero(); });
  }
};

/// A mask's condition `first < second`, and a conjunction of them.
using Condition = std::pair<Affine, Affine>;
using Conditions = SmallVector<Condition, 2>;

/// Writes blocks of a loop as affine functions of their indices.
class AffineWriter {
public:
  AffineWriter(FunctionOpInterface kernel, scf::ForOp loop, Algebra &algebra)
      : kernel(kernel), loop(loop), algebra(algebra) {}

  /// `value` as an affine function, or nullopt where it is not one of
  /// integer scalars defined before the loop and the induction variable
  /// (computed in the loop or not).
  std::optional<Affine> describe(Value value, unsigned depth = 0) {
    if (depth > kMaxDepth)
      return std::nullopt;
    auto block = dyn_cast<RankedTensorType>(value.getType());
    unsigned rank = block ? block.getRank() : 0;
    if (!block && isa<PointerType>(value.getType()) && isKernelArgument(value))
      return Affine{cast<BlockArgument>(value), Sum(), {}};
    if (Operation *op = value.getDefiningOp()) {
      if (auto described = describeOp(op, rank, depth))
        return described;
    }
    // Any other integer scalar is a factor of its own, which the check and
    // the maps compute before the loop: it must be defined there. The
    // loop's induction variable is one too, which the check takes at the
    // first and last trips.
    if (block || !value.getType().isSignlessInteger())
      return std::nullopt;
    if (value != loop.getInductionVar() && loop->isAncestor(value.getParentRegion()->getParentOp()))
      return std::nullopt;
    return Affine{{}, Sum::leaf(value), {}};
  }

  /// The conditions `lhs < rhs` whose conjunction is the mask `value`,
  /// each as affine functions of the mask's indices; nullopt for a mask of
  /// another form.
  std::optional<Conditions> describeMask(Value value, unsigned depth = 0) {
    Operation *op = value.getDefiningOp();
    auto block = dyn_cast<RankedTensorType>(value.getType());
    if (!op || !block || depth > kMaxDepth)
      return std::nullopt;
    if (auto both = dyn_cast<arith::AndIOp>(op)) {
      auto lhs = describeMask(both.getLhs(), depth + 1);
      auto rhs = lhs ? describeMask(both.getRhs(), depth + 1) : std::nullopt;
      if (!rhs)
        return std::nullopt;
      lhs->append(rhs->begin(), rhs->end());
      return lhs;
    }
    if (isa<BroadcastOp, ExpandDimsOp>(op)) {
      auto source = describeMask(op->getOperand(0), depth + 1);
      if (!source)
        return std::nullopt;
      for (auto &[lhs, rhs] : *source)
        for (Affine *side : {&lhs, &rhs})
          if (!reshape(op, *side))
            return std::nullopt;
      return source;
    }
    auto compare = dyn_cast<arith::CmpIOp>(op);
    if (!compare)
      return std::nullopt;
    auto lhs = describe(compare.getLhs(), depth + 1);
    auto rhs = lhs ? describe(compare.getRhs(), depth + 1) : std::nullopt;
    if (!rhs || lhs->base || rhs->base)
      return std::nullopt;
    // As `a < b`: a <= b is a < b + 1 (the integers are taken as exact).
    auto plusOne = [&](Affine x) -> std::optional<Affine> {
      auto offset = algebra.add(x.offset, Sum::constant(1));
      if (!offset)
        return std::nullopt;
      x.offset = *offset;
      return x;
    };
    std::optional<Condition> condition;
    switch (compare.getPredicate()) {
    case arith::CmpIPredicate::slt:
      condition = std::make_pair(*lhs, *rhs);
      break;
    case arith::CmpIPredicate::sgt:
      condition = std::make_pair(*rhs, *lhs);
      break;
    case arith::CmpIPredicate::sle:
      if (auto bound = plusOne(*rhs))
        condition = std::make_pair(*lhs, *bound);
      break;
    case arith::CmpIPredicate::sge:
      if (auto bound = plusOne(*lhs))
        condition = std::make_pair(*rhs, *bound);
      break;
    default:
      break;
    }
    if (!condition)
      return std::nullopt;
    return Conditions{*condition};
  }

  /// Whether `value` is one of the kernel's own arguments.
  bool isKernelArgument(Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &kernel.getFunctionBody().front();
  }

private:
  std::optional<Affine> describeOp(Operation *op, unsigned rank, unsigned depth) {
    if (auto range = dyn_cast<MakeRangeOp>(op))
      return Affine{{}, Sum::constant(range.getStart()), {Sum::constant(1)}};
    if (auto splat = dyn_cast<SplatOp>(op)) {
      auto scalar = describe(splat.getSrc(), depth + 1);
      if (!scalar)
        return std::nullopt;
      scalar->coefficients.assign(rank, Sum());
      return scalar;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      Attribute value = constant.getValue();
      if (auto dense = dyn_cast<SplatElementsAttr>(value))
        if (isa<IntegerType>(dense.getElementType()))
          value = IntegerAttr::get(dense.getElementType(), dense.getSplatValue<APInt>());
      auto integer = dyn_cast<IntegerAttr>(value);
      if (!integer || !isa<IntegerType>(integer.getType()))
        return std::nullopt;
      Affine result{{}, Sum::constant(integer.getValue().getSExtValue()), {}};
      result.coefficients.assign(rank, Sum());
      return result;
    }
    if (isa<BroadcastOp, ExpandDimsOp>(op)) {
      auto source = describe(op->getOperand(0), depth + 1);
      if (!source || !reshape(op, *source))
        return std::nullopt;
      return source;
    }
    if (auto addptr = dyn_cast<AddPtrOp>(op)) {
      auto pointers = describe(addptr.getPtr(), depth + 1);
      auto offsets = pointers ? describe(addptr.getOffset(), depth + 1) : std::nullopt;
      if (!offsets)
        return std::nullopt;
      return combine(*pointers, *offsets, 1);
    }
    // Offsets are taken to be exact: a program whose offsets wrap around
    // reads outside its arrays anyway.
    if (isa<arith::ExtSIOp>(op))
      return describe(op->getOperand(0), depth + 1);
    if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
      auto lhs = describe(op->getOperand(0), depth + 1);
      auto rhs = lhs ? describe(op->getOperand(1), depth + 1) : std::nullopt;
      if (!rhs)
        return std::nullopt;
      if (isa<arith::MulIOp>(op))
        return product(*lhs, *rhs);
      return combine(*lhs, *rhs, isa<arith::AddIOp>(op) ? 1 : -1);
    }
    return std::nullopt;
  }

  /// Makes `x`, a function of the indices of `op`'s operand (a broadcast
  /// or an expand_dims), one of its result's indices.
  static bool reshape(Operation *op, Affine &x) {
    if (auto expand = dyn_cast<ExpandDimsOp>(op)) {
      if (expand.getAxis() > x.coefficients.size())
        return false;
      x.coefficients.insert(x.coefficients.begin() + expand.getAxis(), Sum());
      return true;
    }
    // A dimension of one element has index 0 only: its coefficient is moot.
    auto sourceType = cast<RankedTensorType>(op->getOperand(0).getType());
    for (unsigned d = 0; d < x.coefficients.size(); ++d)
      if (sourceType.getDimSize(d) == 1)
        x.coefficients[d] = Sum();
    return true;
  }

public:
  std::optional<Affine> combine(const Affine &a, const Affine &b, int64_t bSign) {
    if (a.coefficients.size() != b.coefficients.size() || (b.base && (a.base || bSign < 0)))
      return std::nullopt;
    Affine result{a.base ? a.base : b.base, {}, {}};
    auto offset = algebra.add(a.offset, b.offset, bSign);
    if (!offset)
      return std::nullopt;
    result.offset = *offset;
    for (auto [x, y] : llvm::zip(a.coefficients, b.coefficients)) {
      auto sum = algebra.add(x, y, bSign);
      if (!sum)
        return std::nullopt;
      result.coefficients.push_back(*sum);
    }
    return result;
  }

private:
  /// The product of two integer blocks, one of them the same in every
  /// element.
  std::optional<Affine> product(const Affine &a, const Affine &b) {
    if (a.base || b.base || a.coefficients.size() != b.coefficients.size())
      return std::nullopt;
    if (!a.isUniform() && !b.isUniform())
      return std::nullopt;
    const Affine &scale = a.isUniform() ? a : b;
    const Affine &other = a.isUniform() ? b : a;
    Affine result;
    auto offset = algebra.multiply(other.offset, scale.offset);
    if (!offset)
      return std::nullopt;
    result.offset = *offset;
    for (const Sum &coefficient : other.coefficients) {
      auto scaled = algebra.multiply(coefficient, scale.offset);
      if (!scaled)
        return std::nullopt;
      result.coefficients.push_back(*scaled);
    }
    return result;
  }

  FunctionOpInterface kernel;
  scf::ForOp loop;
  Algebra &algebra;
};

/// The largest number of rows a trip (or a step of the induction variable)
/// may move a map's box by: the check's products then fit in 64 bits.
constexpr int64_t kMaxRowsPerStep = int64_t(1) << 20;

/// A condition of a load's mask, `lhs < rhs`, as the check evaluates it:
/// `rhs - lhs` is `offset + perInduction * iv` plus the block's index
/// terms, whose least value over the block is `boxLeast`.
struct Guard {
  Sum offset;
  int64_t perInduction;
  int64_t boxLeast;
};

/// A load of the loop that a tensor map can copy, and what its map and
/// coordinates are made of. Its first element's offset from `base` (in
/// elements) is `offset` plus `rowsPerStep * rowStride` times the trip
/// (pointers carried by the loop) or times the induction variable
/// (pointers computed from it in the body).
struct Candidate {
  LoadOp load;
  /// The parameter the pointers point into.
  BlockArgument base;
  /// The offset's part that does not change in the loop.
  Sum offset;
  /// Elements between rows: the coefficient of the non-contiguous index.
  Sum rowStride;
  int64_t rowsPerStep;
  /// Whether the pointers are carried by the loop (advanced each trip),
  /// else computed from the induction variable.
  bool carried;
  /// Whether the block's dimension 0 is the contiguous one (K read as
  /// [HEAD_DIM, BLOCK_N]): the map's box is then the block transposed.
  bool transposed;
  /// The box: rows and contiguous columns.
  int64_t rows, columns;
  /// The mask's conditions, which must hold over the whole block in every
  /// trip for the map to read what the load reads.
  SmallVector<Guard, 1> guards;
};

/// Whether `sum` has a term with `factor`.
bool mentions(const Sum &sum, Value factor) {
  return llvm::any_of(sum.terms, [&](const Term &term) { return llvm::is_contained(term.factors, factor); });
}

/// `sum` as `invariant + coefficient * iv`: nullopt where a term has `iv`
/// more than once.
std::optional<std::pair<Sum, Sum>> splitInduction(const Sum &sum, Value iv) {
  Sum invariant, coefficient;
  for (const Term &term : sum.terms) {
    auto count = llvm::count(term.factors, iv);
    if (count > 1)
      return std::nullopt;
    if (count == 0) {
      invariant.terms.push_back(term);
      continue;
    }
    Term rest = term;
    rest.factors.erase(llvm::find(rest.factors, iv));
    coefficient.terms.push_back(rest);
  }
  return std::make_pair(invariant, coefficient);
}

/// Whether every user of `value` is a dot, directly or through a transpose:
/// the loads the TMA unit may copy into a dot's shared-memory slots.
bool feedsDots(Value value) {
  return llvm::all_of(value.getUsers(), [](Operation *user) {
    if (isa<DotOp>(user))
      return true;
    if (auto trans = dyn_cast<TransOp>(user))
      return llvm::all_of(trans->getUsers(), [](Operation *u) { return isa<DotOp>(u); });
    return false;
  }) && !value.use_empty();
}

/// The guards of `load`'s mask (none without one), or nullopt where it is
/// not a conjunction of affine comparisons with constant coefficients.
std::optional<SmallVector<Guard>> matchMask(LoadOp load, scf::ForOp loop, AffineWriter &writer) {
  SmallVector<Guard, 1> guards;
  if (!load.getMask())
    return guards;
  auto conditions = writer.describeMask(load.getMask());
  if (!conditions)
    return std::nullopt;
  auto type = cast<RankedTensorType>(load.getType());
  for (auto &[lhs, rhs] : *conditions) {
    auto difference = writer.combine(rhs, lhs, -1);
    if (!difference)
      return std::nullopt;
    Guard guard{{}, 0, 0};
    for (auto [d, coefficient] : llvm::enumerate(difference->coefficients)) {
      std::optional<int64_t> k = coefficient.asConstant();
      if (!k)
        return std::nullopt;
      guard.boxLeast += std::min<int64_t>(0, *k * (type.getDimSize(d) - 1));
    }
    auto split = splitInduction(difference->offset, loop.getInductionVar());
    std::optional<int64_t> perInduction = split ? split->second.asConstant() : std::nullopt;
    if (!perInduction || std::abs(*perInduction) > kMaxRowsPerStep)
      return std::nullopt;
    guard.offset = split->first;
    guard.perInduction = *perInduction;
    guards.push_back(guard);
  }
  return guards;
}

/// The candidate that `load` of `loop` is, if it is one.
std::optional<Candidate> matchLoad(LoadOp load, scf::ForOp loop, FunctionOpInterface kernel,
                                   ArrayRef<unsigned> written, Algebra &algebra) {
  if (load->getBlock() != loop.getBody() || load.getTensorMap() || load.getIsVolatile())
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(load.getType());
  if (!type || type.getRank() != 2 || !feedsDots(load.getResult()))
    return std::nullopt;
  Type element = type.getElementType();
  if (!element.isIntOrFloat())
    return std::nullopt;
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits < 8 || bits > 32 || !llvm::isPowerOf2_32(bits))
    return std::nullopt;
  AffineWriter writer(kernel, loop, algebra);
  Value iv = loop.getInductionVar();
  Candidate candidate{load, {}, {}, {}, 0, false, false, 0, 0, {}};
  // The pointers: carried by the loop and advanced by the same offset
  // everywhere, or computed in the body from the induction variable.
  std::optional<Affine> pointers;
  Sum perStep;
  auto iterArg = dyn_cast<BlockArgument>(load.getPtr());
  if (iterArg && iterArg.getOwner() == loop.getBody()) {
    if (iterArg.getArgNumber() == 0)
      return std::nullopt;
    unsigned index = iterArg.getArgNumber() - 1;
    pointers = writer.describe(loop.getInitArgs()[index]);
    auto next = loop.getYieldedValues()[index].getDefiningOp<AddPtrOp>();
    if (!pointers || !next || next.getPtr() != iterArg)
      return std::nullopt;
    auto advance = writer.describe(next.getOffset());
    if (!advance || advance->base || mentions(advance->offset, iv) ||
        !advance->isUniform())
      return std::nullopt;
    candidate.carried = true;
    candidate.offset = pointers->offset;
    perStep = advance->offset;
  } else {
    pointers = writer.describe(load.getPtr());
    auto split = pointers ? splitInduction(pointers->offset, iv) : std::nullopt;
    if (!split)
      return std::nullopt;
    candidate.offset = split->first;
    perStep = split->second;
  }
  // A parameter the kernel writes is left alone: the TMA unit reads through
  // the async proxy, which the kernel's own stores would have to be fenced
  // against.
  if (!pointers->base || llvm::is_contained(written, pointers->base.getArgNumber()))
    return std::nullopt;
  candidate.base = pointers->base;
  // One dimension is contiguous (coefficient 1), the other the rows.
  const auto &coefficients = pointers->coefficients;
  if (coefficients[1].asConstant() == 1) {
    candidate.rowStride = coefficients[0];
  } else if (coefficients[0].asConstant() == 1) {
    candidate.rowStride = coefficients[1];
    candidate.transposed = true;
  } else {
    return std::nullopt;
  }
  if (mentions(candidate.rowStride, iv))
    return std::nullopt;
  candidate.rows = type.getDimSize(candidate.transposed ? 1 : 0);
  candidate.columns = type.getDimSize(candidate.transposed ? 0 : 1);
  if (candidate.rows > kMaxBoxSide || candidate.columns > kMaxBoxSide ||
      candidate.columns * bits % 128 != 0)
    return std::nullopt;
  auto rowsPerStep = algebra.quotient(perStep, candidate.rowStride);
  if (!rowsPerStep || std::abs(*rowsPerStep) > kMaxRowsPerStep)
    return std::nullopt;
  candidate.rowsPerStep = *rowsPerStep;
  auto guards = matchMask(load, loop, writer);
  if (!guards)
    return std::nullopt;
  candidate.guards = std::move(*guards);
  // The map's stride is computed from the arguments, and the launcher
  // encodes it only where the TMA unit takes it for every launch: the base
  // aligned to 16 bytes and the stride a multiple of 16 bytes.
  if (getKnownZeroBits(kernel, candidate.base.getArgNumber()) < 4)
    return std::nullopt;
  unsigned strideZeroBits = llvm::countr_zero(bits / 8);
  if (candidate.rowStride.terms.size() != 1)
    return std::nullopt;
  const Term &stride = candidate.rowStride.terms.front();
  strideZeroBits += llvm::countr_zero(uint64_t(stride.k));
  for (Value factor : stride.factors) {
    if (!writer.isKernelArgument(factor))
      return std::nullopt;
    strideZeroBits += getKnownZeroBits(kernel, cast<BlockArgument>(factor).getArgNumber());
  }
  if (strideZeroBits < 4)
    return std::nullopt;
  return candidate;
}

/// Computes sums in 64 bits before the loop.
class Materializer {
public:
  Materializer(OpBuilder &builder, Location loc) : builder(builder), loc(loc) {}

  Value constant(int64_t value) {
    return arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), value);
  }

  Value toI64(Value value) {
    if (value.getType().isInteger(64))
      return value;
    return arith::ExtSIOp::create(builder, loc, builder.getI64Type(), value);
  }

  Value sum(const Sum &sum) {
    Value total;
    for (const Term &term : sum.terms) {
      Value product;
      for (Value factor : term.factors)
        product = product ? arith::MulIOp::create(builder, loc, product, toI64(factor)).getResult()
                          : toI64(factor);
      if (!product)
        product = constant(term.k);
      else if (term.k != 1)
        product = arith::MulIOp::create(builder, loc, product, constant(term.k));
      total = total ? arith::AddIOp::create(builder, loc, total, product).getResult() : product;
    }
    return total ? total : constant(0);
  }

  Value cmp(arith::CmpIPredicate predicate, Value a, Value b) {
    return arith::CmpIOp::create(builder, loc, predicate, a, b);
  }

  Value both(Value a, Value b) { return arith::AndIOp::create(builder, loc, a, b); }

private:
  OpBuilder &builder;
  Location loc;
};

/// What the copy of the loop that reads through maps needs of a candidate.
struct Mapped {
  Value map;
  Value row, column; // i32, before the loop
};

/// Versions `loop` on whether its candidates' maps read what their pointers
/// would in this program: the check's result, the maps and the first
/// coordinates are computed before the loop.
void versionLoop(scf::ForOp loop, ArrayRef<Candidate> candidates) {
  Location loc = loop.getLoc();
  OpBuilder builder(loop);
  Materializer make(builder, loc);
  using P = arith::CmpIPredicate;

  // Trips of the loop: the rows the pointers go over depend on them.
  Value lower = make.toI64(loop.getLowerBound());
  Value upper = make.toI64(loop.getUpperBound());
  Value step = make.toI64(loop.getStep());
  Value one = make.constant(1), zero = make.constant(0);
  Value positiveStep = make.cmp(P::sgt, step, zero);
  Value safeStep = arith::SelectOp::create(builder, loc, positiveStep, step, one);
  // (The loop counts in 32 bits: none of this overflows 64.)
  Value span = arith::MaxSIOp::create(builder, loc, arith::SubIOp::create(builder, loc, upper, lower), zero);
  Value trips = arith::DivSIOp::create(
      builder, loc,
      arith::AddIOp::create(builder, loc, span, arith::SubIOp::create(builder, loc, safeStep, one)),
      safeStep);
  Value lastTrip = arith::MaxSIOp::create(
      builder, loc, arith::SubIOp::create(builder, loc, trips, one), zero);
  // The induction variable's last value (its first, where there is no trip).
  Value lastInduction =
      arith::AddIOp::create(builder, loc, lower, arith::MulIOp::create(builder, loc, safeStep, lastTrip));
  Value ok = positiveStep;
  auto times = [&](Value x, int64_t k) -> Value {
    return arith::MulIOp::create(builder, loc, x, make.constant(k));
  };

  SmallVector<Mapped> mapped;
  for (const Candidate &candidate : candidates) {
    Value offset = make.sum(candidate.offset);
    Value stride = make.sum(candidate.rowStride);
    // The map is [kMapRows, stride] with rows `stride` apart: each row holds
    // the columns up to the next, and the box's columns must lie in one.
    Value columns = make.constant(candidate.columns);
    Value strideFits = make.both(make.cmp(P::sge, stride, columns),
                                 make.cmp(P::sle, stride, make.constant(kMapRows)));
    Value safeStride = arith::SelectOp::create(builder, loc, strideFits, stride, one);
    Value row = arith::DivSIOp::create(builder, loc, offset, safeStride);
    Value column = arith::SubIOp::create(
        builder, loc, offset, arith::MulIOp::create(builder, loc, row, safeStride));
    Value columnFits = make.both(
        make.cmp(P::sge, column, zero),
        make.cmp(P::sle, arith::AddIOp::create(builder, loc, column, columns), safeStride));
    // The box's first row in the first and the last trip (rows move the
    // same way every trip), and the box's rows after the further one.
    Value first = row, last;
    if (candidate.carried) {
      last = arith::AddIOp::create(builder, loc, row, times(lastTrip, candidate.rowsPerStep));
    } else {
      first = arith::AddIOp::create(builder, loc, row, times(lower, candidate.rowsPerStep));
      last = arith::AddIOp::create(builder, loc, row, times(lastInduction, candidate.rowsPerStep));
    }
    Value lowest = arith::MinSIOp::create(builder, loc, first, last);
    Value highest = arith::AddIOp::create(builder, loc, arith::MaxSIOp::create(builder, loc, first, last),
                                          make.constant(candidate.rows));
    Value rowsFit = make.both(make.cmp(P::sge, lowest, zero),
                              make.cmp(P::sle, highest, make.constant(kMapRows)));
    ok = make.both(ok, make.both(strideFits, make.both(columnFits, rowsFit)));
    // The mask holds over the whole block in every trip: at the induction
    // variable's first and last values, the least of each condition's
    // difference is positive (it moves the same way every trip).
    for (const Guard &guard : candidate.guards) {
      Value offset = arith::AddIOp::create(builder, loc, make.sum(guard.offset), make.constant(guard.boxLeast));
      Value atFirst = arith::AddIOp::create(builder, loc, offset, times(lower, guard.perInduction));
      Value atLast = arith::AddIOp::create(builder, loc, offset, times(lastInduction, guard.perInduction));
      Value least = arith::MinSIOp::create(builder, loc, atFirst, atLast);
      ok = make.both(ok, make.cmp(P::sgt, least, zero));
    }
    auto map = MakeTensorMapOp::create(builder, loc, candidate.base,
                                       ValueRange{make.constant(kMapRows), stride}, ValueRange{stride},
                                       /*nanPadding=*/nullptr);
    // The launcher may be given arguments for which the TMA unit refuses
    // this map; it then passes no map, and the check above keeps the
    // program off it.
    map->setAttr(kGuardedTensorMapAttr, builder.getUnitAttr());
    Type i32 = builder.getI32Type();
    mapped.push_back(Mapped{map.getResult(), arith::TruncIOp::create(builder, loc, i32, row),
                            arith::TruncIOp::create(builder, loc, i32, column)});
  }

  // The two versions: the copy that reads through the maps, and the loop.
  auto branch = scf::IfOp::create(builder, loc, loop.getResultTypes(), ok, /*withElseRegion=*/true);
  branch->setAttr(kTensorMapVersionAttr, builder.getUnitAttr());
  loop->replaceAllUsesWith(branch.getResults());
  builder.setInsertionPointToStart(&branch.getElseRegion().front());
  loop->moveBefore(builder.getInsertionBlock(), builder.getInsertionPoint());
  scf::YieldOp::create(builder, loc, loop.getResults());
  builder.setInsertionPointToStart(&branch.getThenRegion().front());
  IRMapping mapping;
  auto copy = cast<scf::ForOp>(builder.clone(*loop, mapping));
  scf::YieldOp::create(builder, loc, copy.getResults());

  // The copy carries the row of each map whose pointers the loop carries,
  // advanced as they are.
  SmallVector<Value> firstRows;
  SmallVector<int64_t> carriedSteps;
  for (auto [candidate, m] : llvm::zip(candidates, mapped))
    if (candidate.carried) {
      firstRows.push_back(m.row);
      carriedSteps.push_back(candidate.rowsPerStep);
    }
  if (!firstRows.empty()) {
    IRRewriter rewriter(loop.getContext());
    rewriter.setInsertionPoint(copy);
    FailureOr<LoopLikeOpInterface> replaced = copy.replaceWithAdditionalYields(
        rewriter, firstRows, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &b, Location l, ArrayRef<BlockArgument> rows) {
          SmallVector<Value> next;
          for (auto [row, step] : llvm::zip(rows, carriedSteps))
            next.push_back(arith::AddIOp::create(
                b, l, row, arith::ConstantIntOp::create(b, l, b.getI32Type(), step)));
          return next;
        });
    copy = cast<scf::ForOp>(replaced->getOperation());
  }
  auto carriedRows = copy.getRegionIterArgs().take_back(firstRows.size());
  unsigned nextCarried = 0;
  for (auto [candidate, m] : llvm::zip(candidates, mapped)) {
    LoadOp original = candidate.load;
    auto load = cast<LoadOp>(mapping.lookup(original.getOperation()));
    OpBuilder at(load);
    Location here = load.getLoc();
    // The box's row this trip: carried, or from the induction variable
    // (32-bit arithmetic that wraps: the check bounds the result).
    Value row;
    if (candidate.carried) {
      row = carriedRows[nextCarried++];
    } else {
      Value iv = copy.getInductionVar();
      if (!iv.getType().isInteger(32))
        iv = arith::TruncIOp::create(at, here, at.getI32Type(), iv);
      Value perStep = arith::ConstantIntOp::create(at, here, at.getI32Type(), candidate.rowsPerStep);
      row = arith::AddIOp::create(at, here, m.row, arith::MulIOp::create(at, here, iv, perStep));
    }
    Value pointers = load.getPtr();
    auto type = cast<RankedTensorType>(load.getType());
    Type resultType = type;
    if (candidate.transposed) {
      auto pointerType = cast<RankedTensorType>(pointers.getType());
      pointers = TransOp::create(
          at, here,
          RankedTensorType::get({pointerType.getDimSize(1), pointerType.getDimSize(0)},
                                pointerType.getElementType()),
          pointers, ArrayRef<int32_t>{1, 0});
      resultType = RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType());
    }
    // No mask: the check found it true over the block in every trip.
    Value copied = LoadOp::create(at, here, resultType, pointers, Value(), Value(), m.map,
                                  ValueRange{row, m.column}, load.getCache(), load.getEvict(), false);
    if (candidate.transposed)
      copied = TransOp::create(at, here, type, copied, ArrayRef<int32_t>{1, 0});
    load.getResult().replaceAllUsesWith(copied);
    load.erase();
  }
}

struct KilnTensorMapPointerLoads
    : public kiln::impl::KilnTensorMapPointerLoadsBase<KilnTensorMapPointerLoads> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      // Innermost loops only: versioning an outer one would copy the inner.
      bool innermost = true;
      loop.getBody()->walk([&](scf::ForOp) { innermost = false; });
      if (innermost)
        loops.push_back(loop);
    });
    // The parameters each kernel writes through, found once per kernel.
    llvm::DenseMap<Operation *, std::optional<SmallVector<unsigned>>> written;
    for (scf::ForOp loop : loops) {
      auto kernel = loop->getParentOfType<FunctionOpInterface>();
      // (32-bit trip counts: the check's 64-bit arithmetic cannot overflow.)
      if (!kernel || !kernel->hasAttr("kiln.kernel") || !loop.getInductionVar().getType().isInteger(32))
        continue;
      Algebra algebra;
      SmallVector<Candidate, 2> candidates;
      auto &writes = written[kernel.getOperation()];
      if (!writes)
        writes = writtenKernelArguments(getOperation(), kernel);
      // Every block the loop loads must be a candidate. The pipeliner
      // copies a loop's loads either all by the TMA unit or all by threads
      // (cp.async): a version that copies some of them by TMA loads the
      // others synchronously in every trip, which made the backward's
      // loops (qT, and the rows of M and Delta, not on maps) ten times
      // slower than the loop as it was.
      bool everyBlockMapped = true;
      for (LoadOp load : loop.getBody()->getOps<LoadOp>()) {
        if (auto candidate = matchLoad(load, loop, kernel, *writes, algebra))
          candidates.push_back(*candidate);
        else if (isa<RankedTensorType>(load.getType()))
          everyBlockMapped = false;
      }
      if (!candidates.empty() && everyBlockMapped)
        versionLoop(loop, candidates);
    }
  }
};

} // namespace
