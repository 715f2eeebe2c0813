// popsim-opt: the compiler's passes on an IR file (see tools/opt_driver.h).

#include "tools/opt_driver.h"

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::vector<std::string> arguments(argv + 1, argv + argc);
  return popsim::tools::runOpt(arguments, std::cout, std::cerr);
}
