// Actuator interface of the compliant-actuator core (paper 003 §3.1.3 "Customizable functions":
// tauFElastic() -> torques()/stiffness(), eqPres2Refs() -> references(), InitParams() -> the
// params struct of each model). Pure models: no state, no time, no simulator.
//
// Conventions (reference sheet /work/shared/reference/compliant_actuators.md):
//   q = link position, theta1/theta2 = motor positions (theta2 = pivot position in metres for
//   AwAS-II), t1/t2 = torques of spring 1/2 on the link; the motors feel -t1, -t2.
//   stiffness sigma = -d tau_link / dq (analytic), energy E with -dE/dq = tau_link.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

namespace compliant {

/// Torques of the two springs on the link [N m]; t2 is exactly 0 for one-spring models.
struct SpringTorques {
  double t1 = 0.0, t2 = 0.0;
  double link() const { return t1 + t2; }
};

/// Motor position references (theta2 = pivot position [m] for AwAS-II).
struct MotorReferences {
  double theta1 = 0.0, theta2 = 0.0;
};

/// A compliance model (paper 003 §3.1.3). Implementations must be thread-compatible const
/// functions of their arguments; see template_actuator.hpp for a complete user example.
class Actuator {
 public:
  virtual ~Actuator() = default;
  /// "sea" | "qbmove" | "bavs" | "awas" | a user name.
  virtual std::string type() const = 0;
  /// Number of motors: 1 (SEA, template) or 2 (qbMove, BAVS, AwAS-II: pivot motor).
  virtual int motors() const = 0;
  /// Spring torques on the link; the motors feel -t1, -t2 (t2 = 0 exactly when unused).
  virtual SpringTorques torques(double q, double theta1, double theta2) const = 0;
  /// -d tau_link / dq, analytic (0 in the saturated region).
  virtual double stiffness(double q, double theta1, double theta2) const = 0;
  /// Stored elastic energy [J]: -dE/dq = tau_link, E >= 0.
  virtual double energy(double q, double theta1, double theta2) const = 0;
  /// The reference map (equilibrium position, stiffness preset) -> motor references.
  virtual MotorReferences references(double equilibrium, double preset) const = 0;
  /// The preset clamped into the model's domain; std::invalid_argument for NaN/Inf.
  virtual double check_preset(double preset) const = 0;
  /// Maximum spring deflection [rad]; beyond it the spring torque stays saturated.
  virtual double max_deflection() const = 0;
};

/// One elastic element as a function of its deflection delta: U(delta) potential,
/// force = U'(delta), stiffness = U''(delta).
struct SpringEval {
  double force = 0.0, stiffness = 0.0, energy = 0.0;
};

/// Saturation shared by all models (reference sheet: "beyond max_def the torque stays at its
/// saturated value"): beyond +-max_def the force is constant, the stiffness 0, and the energy
/// continues linearly, U(delta) = U(+-max_def) + force(+-max_def) (delta -+ max_def), so that
/// -dE/dq = tau still holds everywhere. `element(delta)` evaluates the unsaturated spring.
template <class Element>
inline SpringEval saturate(double delta, double max_def, Element&& element) {
  if (delta > max_def) {
    SpringEval s = element(max_def);
    return {s.force, 0.0, s.energy + s.force * (delta - max_def)};
  }
  if (delta < -max_def) {
    SpringEval s = element(-max_def);
    return {s.force, 0.0, s.energy + s.force * (delta + max_def)};
  }
  return element(delta);
}

/// Throws std::invalid_argument("<what> must be ...") unless `value` is finite and >= 0
/// (or > 0 when `strict`). Used by every params struct's validation.
inline void require_nonnegative(const std::string& what, double value, bool strict = false) {
  if (!std::isfinite(value) || value < 0.0 || (strict && value == 0.0)) {
    throw std::invalid_argument(what + " must be a finite number " + (strict ? "> 0" : ">= 0") +
                                ", got " + std::to_string(value));
  }
}

/// NaN/Inf guard for a preset (check_preset implementations).
inline void require_finite(const std::string& what, double value) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument(what + " must be finite, got " + std::to_string(value));
  }
}

}  // namespace compliant
