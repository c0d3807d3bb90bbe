//===- CompareOpToLLVM.cpp - Integer compares of blocks, one per run -------===//
//
// A block compare lowers to one vector icmp over the elements a thread
// holds, which NVPTX splits into one setp per element. Where the axis-info
// analysis proves the result constant over aligned runs (a mask such as
// `cols < N` with N a multiple of 16 is the same for 16 consecutive
// columns), each element takes the compare of the first element of its run
// instead (a shufflevector), and LLVM drops the compares nobody reads.
//
//===----------------------------------------------------------------------===//

#include "Utility.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpu;

namespace {

/// For each element a thread holds of `type`, the element holding the
/// first value of its run of equal values, when runs of `constancy` are
/// proven; std::nullopt when no two elements of a thread share a run.
std::optional<SmallVector<int32_t>> getRunLeaders(RankedTensorType type,
                                                  ArrayRef<int64_t> constancy) {
  auto layout = dyn_cast_if_present<BlockedEncodingAttr>(type.getEncoding());
  if (!layout || constancy.size() != size_t(type.getRank()))
    return std::nullopt;
  // A thread's elements along a dimension start at a multiple of its
  // run there, so runs of equal values that divide it start at one of its
  // elements.
  SmallVector<int64_t> runs;
  bool shared = false;
  for (unsigned d = 0; d < type.getRank(); ++d) {
    int64_t perThread = std::min<int64_t>(layout.getSizePerThread()[d], type.getDimSize(d));
    runs.push_back(std::gcd(perThread, std::max<int64_t>(constancy[d], 1)));
    shared |= runs.back() > 1;
  }
  if (!shared)
    return std::nullopt;
  SmallVector<SmallVector<int32_t>> offsets = getElementOffsets(layout, type.getShape());
  size_t count = offsets.front().size();
  llvm::DenseMap<SmallVector<int32_t>, int32_t> indexOf;
  auto key = [&](size_t e, bool leader) {
    SmallVector<int32_t> at;
    for (unsigned d = 0; d < type.getRank(); ++d)
      at.push_back(leader ? offsets[d][e] / runs[d] * runs[d] : offsets[d][e]);
    return at;
  };
  for (size_t e = 0; e < count; ++e)
    indexOf.try_emplace(key(e, /*leader=*/false), int32_t(e));
  SmallVector<int32_t> leaders;
  for (size_t e = 0; e < count; ++e) {
    auto it = indexOf.find(key(e, /*leader=*/true));
    if (it == indexOf.end())
      return std::nullopt;
    leaders.push_back(it->second);
  }
  return leaders;
}

struct CmpIOpLowering : public ConvertOpToLLVMPattern<arith::CmpIOp> {
  CmpIOpLowering(const LLVMTypeConverter &converter, const ResultConstancy &constancy)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2), constancy(constancy) {}

  LogicalResult
  matchAndRewrite(arith::CmpIOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    auto known = constancy.find(op);
    if (!type || known == constancy.end())
      return failure();
    std::optional<SmallVector<int32_t>> leaders = getRunLeaders(type, known->second);
    if (!leaders)
      return failure();
    std::optional<LLVM::ICmpPredicate> predicate =
        LLVM::symbolizeICmpPredicate(arith::stringifyCmpIPredicate(op.getPredicate()));
    if (!predicate || !isa<VectorType>(adaptor.getLhs().getType()))
      return failure();
    Location loc = op.getLoc();
    Value compare =
        LLVM::ICmpOp::create(rewriter, loc, *predicate, adaptor.getLhs(), adaptor.getRhs());
    rewriter.replaceOpWithNewOp<LLVM::ShuffleVectorOp>(op, compare, compare, *leaders);
    return success();
  }

  const ResultConstancy &constancy;
};

} // namespace

void mlir::kiln::gpu::populateCompareOpToLLVMPatterns(KilnGPUToNVVMTypeConverter &converter,
                                                      RewritePatternSet &patterns,
                                                      const ResultConstancy &constancy) {
  patterns.add<CmpIOpLowering>(converter, constancy);
}
