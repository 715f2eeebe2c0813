#pragma once

// The optimizers a TrainingSession runs on the device, with torch.optim's
// update rules and defaults (Python's popsim.optim): SGD, Adam, AdamW,
// RMSprop and PopTorch's LAMB. Their options chain, as LibTorch's do:
//
//   popsim::Optimizer sgd = popsim::optim::SGD(0.1).momentum(0.9).weightDecay(1e-4);
//   popsim::Optimizer adamw = popsim::optim::AdamW(1e-3).betas(0.9, 0.98);
//
// An invalid value throws popsim::OptionError naming it.

#include <c10/core/ScalarType.h>

#include <map>
#include <string>
#include <vector>

namespace popsim {
class Optimizer;

namespace optim {

namespace detail {

/// The dtypes an optimizer keeps its gradient accumulators and state in
/// (PopTorch's accum_type, velocity_accum_type, first_order_ and
/// second_order_momentum_accum_type): at::kFloat (the default) or at::kHalf.
struct StateTypes {
  c10::ScalarType accumulators = c10::ScalarType::Float;
  c10::ScalarType velocity = c10::ScalarType::Float;
  c10::ScalarType firstOrderMomentum = c10::ScalarType::Float;
  c10::ScalarType secondOrderMomentum = c10::ScalarType::Float;
};

} // namespace detail

/// torch.optim.SGD.
class SGD {
public:
  explicit SGD(double lr = 0.01);
  SGD& momentum(double value);
  SGD& dampening(double value);
  SGD& weightDecay(double value);
  SGD& nesterov(bool enabled);
  /// The gradient accumulators' dtype (at::kFloat or at::kHalf).
  SGD& accumType(c10::ScalarType type);
  /// The momentum buffer's dtype (at::kFloat or at::kHalf).
  SGD& velocityAccumType(c10::ScalarType type);

private:
  friend class popsim::Optimizer;
  double lr_, momentum_ = 0.0, dampening_ = 0.0, weightDecay_ = 0.0;
  bool nesterov_ = false;
  detail::StateTypes types_;
};

namespace detail {

/// The options Adam, AdamW and LAMB share; their defaults differ in weight decay
/// (LAMB refuses amsgrad, which PopTorch's LAMB does not have).
template <typename Derived> class AdamFamily {
public:
  Derived& betas(double beta1, double beta2);
  Derived& eps(double value);
  Derived& weightDecay(double value);
  Derived& amsgrad(bool enabled);
  /// The gradient accumulators' dtype (at::kFloat or at::kHalf).
  Derived& accumType(c10::ScalarType type);
  /// exp_avg's dtype (at::kFloat or at::kHalf).
  Derived& firstOrderMomentumAccumType(c10::ScalarType type);
  /// exp_avg_sq's (and max_exp_avg_sq's) dtype (at::kFloat or at::kHalf).
  Derived& secondOrderMomentumAccumType(c10::ScalarType type);

protected:
  AdamFamily(const char* name, double lr, double weightDecay);

private:
  friend class popsim::Optimizer;
  const char* name_;
  double lr_, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weightDecay_;
  bool amsgrad_ = false;
  StateTypes types_;
};

} // namespace detail

/// torch.optim.RMSprop (and TensorFlow's variant, as PopTorch's use_tf_variant).
class RMSprop {
public:
  explicit RMSprop(double lr = 1e-2);
  RMSprop& alpha(double value);
  RMSprop& eps(double value);
  RMSprop& weightDecay(double value);
  RMSprop& momentum(double value);
  RMSprop& centered(bool enabled);
  /// TensorFlow's RMSprop as PopART computes it: the square average starts at
  /// ones, eps inside the square root, the momentum buffer accumulating lr's step.
  RMSprop& useTfVariant(bool enabled);
  /// The gradient accumulators' dtype (at::kFloat or at::kHalf).
  RMSprop& accumType(c10::ScalarType type);
  /// The momentum buffer's and grad_avg's dtype (at::kFloat or at::kHalf).
  RMSprop& firstOrderMomentumAccumType(c10::ScalarType type);
  /// square_avg's dtype (at::kFloat or at::kHalf).
  RMSprop& secondOrderMomentumAccumType(c10::ScalarType type);

private:
  friend class popsim::Optimizer;
  double lr_, alpha_ = 0.99, eps_ = 1e-8, weightDecay_ = 0.0, momentum_ = 0.0;
  bool centered_ = false, tfVariant_ = false;
  detail::StateTypes types_;
};

/// torch.optim.Adam.
class Adam : public detail::AdamFamily<Adam> {
public:
  explicit Adam(double lr = 1e-3);
};

/// torch.optim.AdamW (decoupled weight decay, 0.01 by default).
class AdamW : public detail::AdamFamily<AdamW> {
public:
  explicit AdamW(double lr = 1e-3);
};

/// PopTorch's LAMB: Adam's moments with a per-parameter trust ratio (weight
/// decay 0.01 by default).
class LAMB : public detail::AdamFamily<LAMB> {
public:
  explicit LAMB(double lr = 1e-3);
  /// Whether the moments are bias-corrected (PopTorch's LAMBNoBias: false).
  LAMB& biasCorrection(bool enabled);
  /// The cap on a parameter's norm in its trust ratio (PopTorch's default
  /// 65500; 0 or more, and 0 makes every update 0).
  LAMB& maxWeightNorm(double norm);

private:
  friend class popsim::Optimizer;
  bool biasCorrection_ = true;
  double maxWeightNorm_ = 65500.0;
};

} // namespace optim

/// One of the optimizers above, training every parameter of the module that
/// requires a gradient (one parameter group).
class Optimizer {
public:
  enum class Kind { SGD, Adam, AdamW, RMSprop, LAMB };
  Optimizer(const optim::SGD& sgd);         ///< NOLINT: implicit, as a value of the variant
  Optimizer(const optim::Adam& adam);       ///< NOLINT
  Optimizer(const optim::AdamW& adamw);     ///< NOLINT
  Optimizer(const optim::RMSprop& rmsprop); ///< NOLINT
  Optimizer(const optim::LAMB& lamb);       ///< NOLINT

  /// Clips each step's gradients by their global 2-norm, as
  /// torch.nn.utils.clip_grad_norm_ (PopTorch's max_grad_norm); 0: none.
  Optimizer& maxGradNorm(double norm);
  double maxGradNorm() const { return maxGradNorm_; }
  /// Loss scaling (PopTorch's loss_scaling): the backward pass starts from
  /// this factor instead of 1, so that small float16 gradients stay
  /// representable, and the update divides it out (1: none). It is compiled
  /// into the program, as Python's is when marked constant
  /// (optimizer.variable_attrs.markAsConstant("loss_scaling")), unless
  /// variableLossScaling() keeps it in device state.
  Optimizer& lossScaling(double factor);
  double lossScaling() const { return lossScaling_; }
  /// Keeps the loss scaling in device state, as Python's optimizers do unless
  /// it is marked constant, so that setOptimizer changes it between calls
  /// without recompiling (a schedule of your own, or backing off after an
  /// overflow).
  Optimizer& variableLossScaling(bool variable = true);
  bool lossScalingIsVariable() const { return variableLossScaling_; }

  Kind kind() const { return kind_; }
  /// The numeric hyper-parameters, by the names Python's optimizers give them
  /// ("lr", "momentum", "beta1", ...): device state, which setOptimizer changes
  /// without recompiling.
  const std::map<std::string, double>& hyperparameters() const { return hyperparameters_; }
  /// The settings that decide which optimizer state exists (compiled in).
  bool momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }
  bool amsgrad() const { return amsgrad_; }
  bool centered() const { return centered_; }
  bool tfVariant() const { return tfVariant_; }
  bool biasCorrection() const { return biasCorrection_; }
  /// Whether the gradient accumulators are float16 (accumType(at::kHalf)).
  bool halfAccumulators() const { return halfAccumulators_; }
  /// The optimizer state kept in float16, by torch.optim's keys ("exp_avg", ...).
  const std::vector<std::string>& halfStateKeys() const { return halfStateKeys_; }

private:
  void takeStateTypes(const optim::detail::StateTypes& types);

  template <typename Derived>
  Optimizer(Kind kind, const optim::detail::AdamFamily<Derived>& options);

  Kind kind_;
  std::map<std::string, double> hyperparameters_;
  bool momentum_ = false, nesterov_ = false, amsgrad_ = false, centered_ = false,
       tfVariant_ = false, biasCorrection_ = true;
  double maxGradNorm_ = 0.0;
  double lossScaling_ = 1.0;
  bool halfAccumulators_ = false;
  std::vector<std::string> halfStateKeys_;
  bool variableLossScaling_ = false;
};

} // namespace popsim
