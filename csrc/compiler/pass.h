#pragma once

#include "ir/graph.h"

#include <functional>
#include <string>
#include <utility>

namespace popsim::compiler {

// A transformation of the IR graph in place. Passes keep the graph valid; the
// pass manager verifies it after each one.
class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual void run(ir::Graph& graph) = 0;
};

// A pass that calls a transformation written as a function, with the
// arguments it was built with bound in.
class FunctionPass : public Pass {
public:
  FunctionPass(std::string name, std::function<void(ir::Graph&)> transform)
      : name_(std::move(name)), transform_(std::move(transform)) {}
  std::string name() const override { return name_; }
  void run(ir::Graph& graph) override { transform_(graph); }

private:
  std::string name_;
  std::function<void(ir::Graph&)> transform_;
};

} // namespace popsim::compiler
