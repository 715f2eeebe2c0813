#include "host/replication.h"

#include "common/check.h"

namespace popsim::host {
namespace {

const char* groupTypeName(CommGroupType type) {
  switch (type) {
  case CommGroupType::All: return "All";
  case CommGroupType::Consecutive: return "Consecutive";
  case CommGroupType::Orthogonal: return "Orthogonal";
  case CommGroupType::Ungrouped: return "Ungrouped";
  }
  return "Ungrouped";
}

} // namespace

std::string Replication::inputLabel() const {
  return inputParts == local ? "replicationFactor" : "input groups of replicas";
}

Replication replicationOf(const SessionOptions& options, bool training) {
  Replication replication;
  replication.local = options.replicationFactor;
  replication.processes = training ? options.distributed.numProcesses : 1;
  replication.first =
      replication.processes > 1 ? options.distributed.processId * replication.local : 0;
  const CommGroupType type = options.inputReplicaGrouping.type;
  int64_t size = options.inputReplicaGrouping.size;
  if (type == CommGroupType::Ungrouped) {
    size = 1;
  } else if (type == CommGroupType::All) {
    size = replication.local;
  }
  POPSIM_CHECK_OPTION(size > 0 && replication.local % size == 0, "inputReplicaGrouping",
                      "inputReplicaGrouping(", size, ", ", groupTypeName(type), "): groups of ",
                      size, " replicas do not divide replicationFactor (", replication.local,
                      "). Choose a group size that divides it.");
  replication.inputParts = replication.local / size;
  replication.inputPartOf.clear();
  for (int64_t replica = 0; replica < replication.local; ++replica) {
    replication.inputPartOf.push_back(
        type == CommGroupType::Orthogonal ? replica % replication.inputParts : replica / size);
  }
  return replication;
}

int64_t ipusPerReplica(const SessionOptions& options, int64_t ipusUsed) {
  const int64_t replicas = options.replicationFactor;
  if (!options.simulator.numIpus.has_value()) {
    return ipusUsed;
  }
  const int64_t total = *options.simulator.numIpus;
  if (replicas == 1) {
    return total; // the compiler checks that the stages fit
  }
  POPSIM_CHECK_OPTION(total % replicas == 0 && total / replicas >= ipusUsed, "Simulator.numIpus",
                      "Simulator.numIpus(", total, ") must hold replicationFactor (", replicas,
                      ") replicas of the model, which uses ", ipusUsed,
                      " IPU(s) each: set it to a multiple of ", replicas, " that is at least ",
                      replicas * ipusUsed, ", or leave it unset.");
  return total / replicas;
}

} // namespace popsim::host
