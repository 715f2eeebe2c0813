#include "host/batch_split.h"

#include "common/check.h"
#include "host/replication.h"

namespace popsim::host {

BatchSplit batchSplitOf(const SessionOptions& options) {
  const Replication replication = replicationOf(options);
  BatchSplit split;
  split.deviceIterations = options.deviceIterations;
  split.gradientAccumulation = options.training.gradientAccumulation;
  split.replicaParts = replication.inputParts;
  split.replicaLabel = replication.inputLabel();
  return split;
}

int64_t microBatchesOfACall(const SessionOptions& options, bool training) {
  return options.deviceIterations * options.replicationFactor *
         (training ? options.training.gradientAccumulation : 1);
}

std::string BatchSplit::explanation() const {
  if (gradientAccumulation == 1 && replicaParts == 1) {
    return strCat("deviceIterations (", deviceIterations, "): each call runs ", deviceIterations,
                  " device iteration(s) on micro-batches of equal size");
  }
  std::string product = strCat("deviceIterations (", deviceIterations, ")");
  if (gradientAccumulation > 1)
    product += strCat(" x gradientAccumulation (", gradientAccumulation, ")");
  if (replicaParts > 1) product += strCat(" x ", replicaLabel, " (", replicaParts, ")");
  return strCat(product, " = ", factor(), ": each call runs ", deviceIterations,
                " device iteration(s) of ", gradientAccumulation, " micro-batch(es) on each of ",
                replicaParts, " replica(s), all of equal size");
}

std::string BatchSplit::batchText(int64_t microBatch) const {
  std::string text = strCat("micro-batch ", microBatch, " x deviceIterations ", deviceIterations,
                            " x gradientAccumulation ", gradientAccumulation);
  if (replicaParts > 1) text += strCat(" x ", replicaLabel, " ", replicaParts);
  return text;
}

std::vector<int64_t> BatchSplit::microBatchShape(const std::string& name,
                                                 const std::vector<int64_t>& shape) const {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  // The first words are PopTorch's, which code written for it may match.
  POPSIM_CHECK(
      elements != 0, ErrorKind::InvalidInput, "Zero-sized tensors are unsupported (Got shape ",
      listToString(shape), "): input '", name,
      "' has no elements. popsim, as PopTorch, streams tensors that hold data: give every input at "
      "least one element (a batch of at least one sample per micro-batch), or leave "
      "the empty one out of the model's inputs.");
  if (shape.empty()) {
    // One micro-batch per call: every replica gets the scalar.
    POPSIM_CHECK(factor() == replicaParts, ErrorKind::InvalidInput, "Input '", name,
                 "' is a scalar (0-d tensor), but popsim splits each input along dimension 0 "
                 "into ",
                 explanation(), ". Give it a batch dimension (e.g. ", name, ".expand(", factor(),
                 ")), or use one device iteration and no gradient accumulation.");
    return shape;
  }
  POPSIM_CHECK(shape[0] % factor() == 0, ErrorKind::InvalidInput,
               "Invalid batch dimension: input '", name, "' has ", shape[0],
               " samples in dimension 0, which must be a multiple of ", explanation(), ".");
  std::vector<int64_t> micro = shape;
  micro[0] /= factor();
  return micro;
}

} // namespace popsim::host
