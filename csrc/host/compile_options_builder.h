#pragma once

// The one builder of compile options: from a session's options and what the
// model is (its blocks, its training config), the typed
// runtime::CompileOptions every stage reads. Python's executor and the C++
// sessions both call it, so an option means the same in both.

#include "compiler/training/training_config.h"
#include "host/session_options.h"
#include "ir/graph.h"
#include "runtime/compile_options.h"

#include <cstdint>
#include <vector>

namespace popsim::host {

// What compiling needs besides the session's options.
struct CompileInputs {
  // The model's blocks, in the order it enters them.
  std::vector<ir::BlockAnnotation> blocks;
  bool training = false;
  // The program's training config: the optimizer's part for a training model
  // (trainingConfigOf completes it with the session's), for inference only
  // the weights' sharding.
  compiler::TrainingConfig config;
  // The random seed: the session's, or the one the face drew for it.
  uint64_t randomSeed = 0;
  // POPLAR_ENGINE_OPTIONS's stream-callback threads, which override the
  // session's engine options.
  StreamCallbackThreads environmentStreamCallbacks;
  // Threads the host computes with (torch.get_num_threads()), shared out
  // among the IPUs of replicas when threadsPerIpu is unset.
  int64_t hostThreads = 1;
};

// Throws InvalidOption naming the option for what does not fit the model or
// other options: a block the strategy cannot place, numIpus too small for the
// replicas, availableMemoryProportion of an IPU the system lacks, IO tiles
// used but not set aside, sharded accumulators or activations, a phased
// stage on an IPU of the wrong parity, allowOverCapacity without costOnly.
runtime::CompileOptions buildCompileOptions(const SessionOptions& options,
                                            const CompileInputs& inputs);

// The session's part of a training program's config, written into `config`
// (whose optimizer's part the face fills): how a step reduces its gradients
// (the scale, running means), the job's replicas and automatic loss scaling.
void applySessionTraining(const SessionOptions& options, compiler::TrainingConfig& config);

// Whether accumulators hold the running mean of a step's micro-batches'
// gradients (MeanReductionStrategy.Running with a mean and accumulation).
bool runningMean(const SessionOptions& options);

// How a step reads its gradient, accumulated over micro-batches and summed
// over the job's replicas (of every process): the mean over both (the
// default) or the sum (a running mean of the micro-batches is averaged over
// the replicas only).
double gradientScale(const SessionOptions& options);

} // namespace popsim::host
