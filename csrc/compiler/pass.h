#pragma once

#include "compiler/compiler_options.h"
#include "compiler/ir_dump.h"
#include "compiler/pipeline_tasks.h"
#include "device/ipu_system.h"
#include "ir/graph.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace popsim::compiler {

// What the passes of one compilation share besides the graph: the options
// and system it compiles for, the task layout (an analysis of the nodes'
// placements, recomputed after any pass that changed the graph), where IR
// dumps go and the passes POPSIM_DISABLE_PASSES switches off.
class PassContext {
public:
  PassContext(const CompilerOptions& options, const device::IpuSystemConfig& system)
      : options_(options), system_(system) {}

  const CompilerOptions& options() const { return options_; }
  const TrainingConfig& training() const { return options_.training; }
  const device::IpuSystemConfig& system() const { return system_; }
  bool trainingProgram() const { return options_.program != ProgramKind::Inference; }

  // The tasks of `graph` under its current placements.
  const TaskLayout& layout(const ir::Graph& graph);
  // The graph changed: analyses are recomputed when next asked for.
  void invalidate() { layout_.reset(); }

  IrDump& dump() { return dump_; }
  void setDump(IrDump dump) { dump_ = std::move(dump); }
  const std::set<std::string>& disabled() const { return disabled_; }
  void setDisabled(std::set<std::string> names) { disabled_ = std::move(names); }
  // Whether every pass's result is also printed and parsed back (a test of
  // the IR text on every graph, POPSIM_CHECK_IR_TEXT=1).
  bool checksText() const { return checksText_; }
  void setChecksText(bool check) { checksText_ = check; }

private:
  const CompilerOptions& options_;
  const device::IpuSystemConfig& system_;
  std::optional<TaskLayout> layout_;
  IrDump dump_;
  std::set<std::string> disabled_;
  bool checksText_ = false;
};

// A step of the compiler on the IR graph, in place. A transformation keeps
// the graph valid (the pipeline verifies it after each one that changed it)
// and says whether it changed it; a check only reads the graph and throws
// what is wrong with the model or its options.
class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Returns whether the graph changed.
  virtual bool run(ir::Graph& graph, PassContext& context) = 0;
  virtual bool isCheck() const { return false; }
  // Whether the program stays correct without it, so that
  // POPSIM_DISABLE_PASSES may switch it off (to bisect a problem).
  virtual bool optional() const { return false; }
};

// A pass written as a function of the graph and the context.
class FunctionPass : public Pass {
public:
  using Transform = std::function<bool(ir::Graph&, PassContext&)>;
  FunctionPass(std::string name, Transform transform, bool optional = false)
      : name_(std::move(name)), transform_(std::move(transform)), optional_(optional) {}
  std::string name() const override { return name_; }
  bool run(ir::Graph& graph, PassContext& context) override { return transform_(graph, context); }
  bool optional() const override { return optional_; }

private:
  std::string name_;
  Transform transform_;
  bool optional_;
};

// A check written as a function of the graph and the context.
class CheckPass : public Pass {
public:
  using Check = std::function<void(const ir::Graph&, PassContext&)>;
  CheckPass(std::string name, Check check) : name_(std::move(name)), check_(std::move(check)) {}
  std::string name() const override { return name_; }
  bool run(ir::Graph& graph, PassContext& context) override {
    check_(graph, context);
    return false;
  }
  bool isCheck() const override { return true; }

private:
  std::string name_;
  Check check_;
};

} // namespace popsim::compiler
