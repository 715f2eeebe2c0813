#include "popsim/version.h"

namespace popsim {

const char* version() { return POPSIM_VERSION_STRING; }

} // namespace popsim
