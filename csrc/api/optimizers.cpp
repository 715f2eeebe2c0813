// popsim::optim's optimizers (include/popsim/optim.h): torch.optim's
// defaults and argument checks.
#include "popsim/optim.h"

#include "popsim/errors.h"

#include "api/error_classes.h"
#include "api/optimizer_kind.h"
#include "common/strings.h"

#include <string>

namespace popsim {
namespace {

double checked(const char* optimizer, const char* name, double value, double low,
               bool lowIncluded = true, double high = -1.0) {
  const bool aboveLow = lowIncluded ? value >= low : value > low;
  const bool belowHigh = high < 0.0 || value < high;
  if (!aboveLow || !belowHigh) {
    api::refuseOption(
        strCat(optimizer, ".", name),
        strCat("popsim::optim::", optimizer, ": invalid ", name, " ", value, " (expected ",
               high < 0.0 ? strCat(lowIncluded ? ">= " : "> ", low) : std::string("in [0, 1)"),
               ")."));
  }
  return value;
}

// A state or accumulator dtype, which must be float32 or float16 (as Python's).
c10::ScalarType checkedStateType(const char* optimizer, const char* setter, const char* argument,
                                 c10::ScalarType type) {
  if (type != c10::ScalarType::Float && type != c10::ScalarType::Half) {
    api::refuseOption(strCat(optimizer, ".", argument),
                      strCat("popsim::optim::", optimizer, "::", setter, "(", c10::toString(type),
                             "): popsim keeps optimizer state and accumulators in at::kFloat or "
                             "at::kHalf."));
  }
  return type;
}

} // namespace

namespace optim {

SGD::SGD(double lr) : lr_(checked("SGD", "lr", lr, 0.0)) {}
SGD& SGD::momentum(double value) {
  momentum_ = checked("SGD", "momentum", value, 0.0);
  return *this;
}
SGD& SGD::dampening(double value) {
  dampening_ = value;
  return *this;
}
SGD& SGD::weightDecay(double value) {
  weightDecay_ = checked("SGD", "weight_decay", value, 0.0);
  return *this;
}
SGD& SGD::nesterov(bool enabled) {
  nesterov_ = enabled;
  return *this;
}
SGD& SGD::accumType(c10::ScalarType type) {
  types_.accumulators = checkedStateType("SGD", "accumType", "accum_type", type);
  return *this;
}
SGD& SGD::velocityAccumType(c10::ScalarType type) {
  types_.velocity = checkedStateType("SGD", "velocityAccumType", "velocity_accum_type", type);
  return *this;
}

RMSprop::RMSprop(double lr) : lr_(checked("RMSprop", "lr", lr, 0.0)) {}
RMSprop& RMSprop::alpha(double value) {
  alpha_ = checked("RMSprop", "alpha", value, 0.0);
  return *this;
}
RMSprop& RMSprop::eps(double value) {
  eps_ = checked("RMSprop", "eps", value, 0.0);
  return *this;
}
RMSprop& RMSprop::weightDecay(double value) {
  weightDecay_ = checked("RMSprop", "weight_decay", value, 0.0);
  return *this;
}
RMSprop& RMSprop::momentum(double value) {
  momentum_ = checked("RMSprop", "momentum", value, 0.0);
  return *this;
}
RMSprop& RMSprop::centered(bool enabled) {
  centered_ = enabled;
  return *this;
}
RMSprop& RMSprop::useTfVariant(bool enabled) {
  tfVariant_ = enabled;
  return *this;
}
RMSprop& RMSprop::accumType(c10::ScalarType type) {
  types_.accumulators = checkedStateType("RMSprop", "accumType", "accum_type", type);
  return *this;
}
RMSprop& RMSprop::firstOrderMomentumAccumType(c10::ScalarType type) {
  types_.firstOrderMomentum = checkedStateType("RMSprop", "firstOrderMomentumAccumType",
                                               "first_order_momentum_accum_type", type);
  return *this;
}
RMSprop& RMSprop::secondOrderMomentumAccumType(c10::ScalarType type) {
  types_.secondOrderMomentum = checkedStateType("RMSprop", "secondOrderMomentumAccumType",
                                                "second_order_momentum_accum_type", type);
  return *this;
}

namespace detail {

template <typename Derived>
AdamFamily<Derived>::AdamFamily(const char* name, double lr, double weightDecay)
    : name_(name), lr_(checked(name, "lr", lr, 0.0)),
      weightDecay_(checked(name, "weight_decay", weightDecay, 0.0)) {}

template <typename Derived> Derived& AdamFamily<Derived>::betas(double beta1, double beta2) {
  beta1_ = checked(name_, "beta1", beta1, 0.0, true, 1.0);
  beta2_ = checked(name_, "beta2", beta2, 0.0, true, 1.0);
  return static_cast<Derived&>(*this);
}

template <typename Derived> Derived& AdamFamily<Derived>::eps(double value) {
  eps_ = checked(name_, "eps", value, 0.0);
  return static_cast<Derived&>(*this);
}

template <typename Derived> Derived& AdamFamily<Derived>::weightDecay(double value) {
  weightDecay_ = checked(name_, "weight_decay", value, 0.0);
  return static_cast<Derived&>(*this);
}

template <typename Derived> Derived& AdamFamily<Derived>::amsgrad(bool enabled) {
  amsgrad_ = enabled;
  return static_cast<Derived&>(*this);
}

template <typename Derived> Derived& AdamFamily<Derived>::accumType(c10::ScalarType type) {
  types_.accumulators = checkedStateType(name_, "accumType", "accum_type", type);
  return static_cast<Derived&>(*this);
}

template <typename Derived>
Derived& AdamFamily<Derived>::firstOrderMomentumAccumType(c10::ScalarType type) {
  types_.firstOrderMomentum = checkedStateType(name_, "firstOrderMomentumAccumType",
                                               "first_order_momentum_accum_type", type);
  return static_cast<Derived&>(*this);
}

template <typename Derived>
Derived& AdamFamily<Derived>::secondOrderMomentumAccumType(c10::ScalarType type) {
  types_.secondOrderMomentum = checkedStateType(name_, "secondOrderMomentumAccumType",
                                                "second_order_momentum_accum_type", type);
  return static_cast<Derived&>(*this);
}

template class AdamFamily<Adam>;
template class AdamFamily<AdamW>;
template class AdamFamily<LAMB>;

} // namespace detail

Adam::Adam(double lr) : AdamFamily("Adam", lr, 0.0) {}
AdamW::AdamW(double lr) : AdamFamily("AdamW", lr, 1e-2) {}
LAMB::LAMB(double lr) : AdamFamily("LAMB", lr, 1e-2) {}
LAMB& LAMB::biasCorrection(bool enabled) {
  biasCorrection_ = enabled;
  return *this;
}
LAMB& LAMB::maxWeightNorm(double norm) {
  maxWeightNorm_ = checked("LAMB", "max_weight_norm", norm, 0.0);
  return *this;
}

} // namespace optim

Optimizer::Optimizer(const optim::SGD& sgd)
    : kind_(Kind::SGD), hyperparameters_({{"lr", sgd.lr_},
                                          {"momentum", sgd.momentum_},
                                          {"dampening", sgd.dampening_},
                                          {"weight_decay", sgd.weightDecay_}}),
      momentum_(sgd.momentum_ != 0.0), nesterov_(sgd.nesterov_) {
  takeStateTypes(sgd.types_);
  if (nesterov_ && (sgd.momentum_ <= 0.0 || sgd.dampening_ != 0.0)) {
    api::refuseOption("SGD.nesterov",
                      "popsim::optim::SGD: Nesterov momentum requires a momentum and zero "
                      "dampening.");
  }
}

template <typename Derived>
Optimizer::Optimizer(Kind kind, const optim::detail::AdamFamily<Derived>& options)
    : kind_(kind), hyperparameters_({{"lr", options.lr_},
                                     {"beta1", options.beta1_},
                                     {"beta2", options.beta2_},
                                     {"eps", options.eps_},
                                     {"weight_decay", options.weightDecay_}}),
      amsgrad_(options.amsgrad_) {
  takeStateTypes(options.types_);
}

Optimizer::Optimizer(const optim::Adam& adam) : Optimizer(Kind::Adam, adam) {}
Optimizer::Optimizer(const optim::AdamW& adamw) : Optimizer(Kind::AdamW, adamw) {}

Optimizer::Optimizer(const optim::RMSprop& rmsprop)
    : kind_(Kind::RMSprop), hyperparameters_({{"lr", rmsprop.lr_},
                                              {"alpha", rmsprop.alpha_},
                                              {"eps", rmsprop.eps_},
                                              {"weight_decay", rmsprop.weightDecay_},
                                              {"momentum", rmsprop.momentum_}}),
      momentum_(rmsprop.momentum_ > 0.0), centered_(rmsprop.centered_),
      tfVariant_(rmsprop.tfVariant_) {
  takeStateTypes(rmsprop.types_);
}

void Optimizer::takeStateTypes(const optim::detail::StateTypes& types) {
  halfAccumulators_ = types.accumulators == c10::ScalarType::Half;
  const std::pair<c10::ScalarType, compiler::StateTypeArgument> typed[] = {
      {types.velocity, compiler::StateTypeArgument::Velocity},
      {types.firstOrderMomentum, compiler::StateTypeArgument::FirstOrderMomentum},
      {types.secondOrderMomentum, compiler::StateTypeArgument::SecondOrderMomentum}};
  halfStateKeys_.clear();
  for (const auto& [type, argument] : typed) {
    if (type != c10::ScalarType::Half) continue;
    for (const std::string& key : compiler::stateKeysTypedBy(api::compilerKindOf(kind_), argument))
      halfStateKeys_.push_back(key);
  }
}

Optimizer::Optimizer(const optim::LAMB& lamb) : Optimizer(Kind::LAMB, lamb) {
  if (amsgrad_) {
    api::refuseOption("LAMB.amsgrad", "popsim::optim::LAMB has no amsgrad variant (PopTorch's "
                                      "LAMB has none); leave amsgrad off.");
  }
  hyperparameters_["max_weight_norm"] = lamb.maxWeightNorm_;
  biasCorrection_ = lamb.biasCorrection_;
}

Optimizer& Optimizer::lossScaling(double factor) {
  if (!(factor > 0.0)) {
    api::refuseOption(
        "loss_scaling",
        strCat("Optimizer::lossScaling expects a positive factor (1 for none), got ", factor, "."));
  }
  lossScaling_ = factor;
  return *this;
}

Optimizer& Optimizer::variableLossScaling(bool variable) {
  variableLossScaling_ = variable;
  return *this;
}

Optimizer& Optimizer::maxGradNorm(double norm) {
  if (!(norm >= 0.0)) {
    api::refuseOption(
        "max_grad_norm",
        strCat("Optimizer::maxGradNorm expects a positive norm (0 for no clipping), got ", norm,
               "."));
  }
  maxGradNorm_ = norm;
  return *this;
}

namespace api {

compiler::OptimizerKind compilerKindOf(Optimizer::Kind kind) {
  switch (kind) {
  case Optimizer::Kind::SGD: return compiler::OptimizerKind::Sgd;
  case Optimizer::Kind::Adam: return compiler::OptimizerKind::Adam;
  case Optimizer::Kind::AdamW: return compiler::OptimizerKind::AdamW;
  case Optimizer::Kind::RMSprop: return compiler::OptimizerKind::Rmsprop;
  case Optimizer::Kind::LAMB: return compiler::OptimizerKind::Lamb;
  }
  return compiler::OptimizerKind::Sgd;
}

} // namespace api

} // namespace popsim
