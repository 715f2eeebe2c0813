#include "popsim/memory_report.h"

#include <iomanip>

namespace popsim {

std::ostream& operator<<(std::ostream& out, const MemoryReport& report) {
  constexpr double kMiB = 1024.0 * 1024.0;
  out << report.chip << ", " << report.ipus.size() << " IPU(s)\n";
  const std::ios::fmtflags flags = out.flags();
  const std::streamsize precision = out.precision();
  out << std::fixed << std::setprecision(2);
  for (const IpuMemory& ipu : report.ipus) {
    out << "  IPU" << ipu.ipu << ": " << static_cast<double>(ipu.total) / kMiB << " MiB of "
        << static_cast<double>(ipu.capacity) / kMiB << " MiB"
        << (ipu.fits() ? "" : " (does not fit)") << "\n";
    for (const MemoryCategory& category : ipu.categories) {
      if (category.bytes > 0) {
        out << "    " << std::left << std::setw(24) << category.name << std::right << std::setw(14)
            << category.bytes << " bytes\n";
      }
    }
  }
  out.flags(flags);
  out.precision(precision);
  return out;
}

} // namespace popsim
