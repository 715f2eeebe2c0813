#pragma once

// Where a job's replicas are, from Options.replicationFactor,
// Options.Distributed and Options.inputReplicaGrouping: the one reading of
// them that compiling, the micro-batch split and the replicated runs share.

#include "host/session_options.h"

#include <cstdint>
#include <string>
#include <vector>

namespace popsim::host {

struct Replication {
  int64_t local = 1;     // replicas this process runs (replicationFactor)
  int64_t processes = 1; // processes whose replicas form the job (training across Distributed)
  int64_t first = 0;     // the job's index of this process's first replica
  // Distinct input micro-batches per step (input groups of replicas share
  // theirs), and the one each local replica takes.
  int64_t inputParts = 1;
  std::vector<int64_t> inputPartOf{0};

  // Replicas of the whole job: gradients are summed over all of them.
  int64_t job() const { return local * processes; }
  // What divides a call's batch between replicas, as messages name it.
  std::string inputLabel() const;
  int64_t inputGroupSize() const { return local / inputParts; }
};

// The replicas of a job: replicationFactor in each of the processes for
// training, which sums gradients across all of them; inference replicas are
// this process's own. Throws InvalidOption when the input groups do not
// divide the replicas.
Replication replicationOf(const SessionOptions& options, bool training = true);

// IPUs of each replica's simulated system: Simulator.numIpus counts the IPUs
// of all replicas (as a real system's would), so each gets its share of it;
// unset, a replica has the `ipusUsed` its stages need. Throws InvalidOption
// when numIpus does not hold the replicas.
int64_t ipusPerReplica(const SessionOptions& options, int64_t ipusUsed);

} // namespace popsim::host
