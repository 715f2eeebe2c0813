#include "host/session_options.h"

namespace popsim::host {

OutputMode SessionOptions::resolvedOutputMode(bool trainingModel) const {
  if (outputMode != OutputMode::Default) {
    return outputMode;
  }
  return trainingModel ? OutputMode::Final : OutputMode::All;
}

bool SessionOptions::downcastsMixedFloats() const {
  if (precision.halfFloatCasting == HalfFloatCasting::Default) {
    return traceModel;
  }
  return precision.halfFloatCasting == HalfFloatCasting::FloatDowncastToHalf;
}

const char* outputModeName(OutputMode mode) {
  switch (mode) {
  case OutputMode::Final: return "Final";
  case OutputMode::EveryN: return "EveryN";
  case OutputMode::All: return "All";
  case OutputMode::Sum: return "Sum";
  case OutputMode::Default: return "Default";
  }
  return "Default";
}

} // namespace popsim::host
