// The four compliance models of paper 003 §3.3 / Fig. 8 with the reference sheet's equations and
// defaults (/work/shared/reference/compliant_actuators.md): SEA, qbMove Advanced, BAVS, AwAS-II.
// Each params struct carries the sheet's defaults and is validated by the model's constructor
// (std::invalid_argument with a one-line message).
#pragma once

#include <algorithm>
#include <string>

#include "compliant_actuator_gazebo/actuator.hpp"

namespace compliant {

/// Linear series elastic actuator: d = sat(q - theta1), t1 = -k d, sigma = k, E = k d^2 / 2.
struct SeaParams {
  double k = 10.0;              ///< spring stiffness [N m/rad]
  double max_deflection = 0.8;  ///< [rad]
};

class Sea final : public Actuator {
 public:
  explicit Sea(const SeaParams& params = {});
  std::string type() const override { return "sea"; }
  int motors() const override { return 1; }
  SpringTorques torques(double q, double theta1, double theta2) const override;
  double stiffness(double q, double theta1, double theta2) const override;
  double energy(double q, double theta1, double theta2) const override;
  /// theta1 = equilibrium; the preset is unused (theta2 = 0).
  MotorReferences references(double equilibrium, double preset) const override;
  /// Unused by the SEA: any finite value is returned unchanged.
  double check_preset(double preset) const override;
  double max_deflection() const override { return params_.max_deflection; }
  const SeaParams& params() const { return params_; }

 private:
  SpringEval spring(double q, double theta1) const;
  SeaParams params_;
};

/// Agonistic-antagonistic actuators (qbMove Advanced, BAVS; paper 003 §3.1.3, Fig. 3 C): two
/// springs between the link and motors 1 and 2, theta1 = eq + preset, theta2 = eq - preset, the
/// preset (co-contraction) in [0, max_deflection]. A model only gives its two springs, each as
/// seen from the link (force = its torque on the link, stiffness = -d force / dq, energy).
class AntagonisticActuator : public Actuator {
 public:
  int motors() const final { return 2; }
  SpringTorques torques(double q, double theta1, double theta2) const final {
    return {link_spring1(q, theta1).force, link_spring2(q, theta2).force};
  }
  double stiffness(double q, double theta1, double theta2) const final {
    return link_spring1(q, theta1).stiffness + link_spring2(q, theta2).stiffness;
  }
  double energy(double q, double theta1, double theta2) const final {
    return link_spring1(q, theta1).energy + link_spring2(q, theta2).energy;
  }
  MotorReferences references(double equilibrium, double preset) const final {
    return {equilibrium + preset, equilibrium - preset};
  }
  double check_preset(double preset) const final {
    require_finite(type() + " stiffness preset", preset);
    return std::clamp(preset, 0.0, max_deflection());
  }

 protected:
  virtual SpringEval link_spring1(double q, double theta1) const = 0;
  virtual SpringEval link_spring2(double q, double theta2) const = 0;
};

/// qbMove Advanced (agonistic-antagonistic VSA): d_i = sat(q - theta_i),
/// t_i = -k_i sinh(a_i d_i), sigma = sum a_i k_i cosh(a_i d_i), E_i = k_i/a_i (cosh(a_i d_i) - 1).
struct QbMoveParams {
  double k1 = 0.0019, a1 = 8.9992;  ///< spring 1: [N m], [1/rad]
  double k2 = 0.0019, a2 = 8.9992;  ///< spring 2
  double max_deflection = 0.8;      ///< [rad]
};

class QbMove final : public AntagonisticActuator {
 public:
  explicit QbMove(const QbMoveParams& params = {});
  std::string type() const override { return "qbmove"; }
  double max_deflection() const override { return params_.max_deflection; }
  const QbMoveParams& params() const { return params_; }

 private:
  SpringEval link_spring1(double q, double theta1) const override;
  SpringEval link_spring2(double q, double theta2) const override;
  QbMoveParams params_;
};

/// BAVS (bidirectional antagonistic VSA): with d_i = sat(theta_i - q),
/// t1 = k (b e^{ke d1} - a e^{-ke d1}), t2 = k (a e^{ke d2} - b e^{-ke d2}),
/// sigma = k ke [(b e^{ke d1} + a e^{-ke d1}) + (a e^{ke d2} + b e^{-ke d2})] (unsaturated terms),
/// E_i = k/ke (b e^{ke d1} + a e^{-ke d1} - 2 sqrt(ab)) (and mirrored for spring 2): each spring's
/// energy is 0 at its own unloaded length (the springs are pre-loaded at d_i = 0 by design).
struct BavsParams {
  double a = 1.21e-6, b = 2.38e-6;  ///< [-]
  double k = 1.6e5;                 ///< [N m]
  double ke = 8.71;                 ///< [1/rad]
  double max_deflection = 0.27;     ///< [rad]
};

class Bavs final : public AntagonisticActuator {
 public:
  explicit Bavs(const BavsParams& params = {});
  std::string type() const override { return "bavs"; }
  double max_deflection() const override { return params_.max_deflection; }
  const BavsParams& params() const { return params_; }

 private:
  SpringEval link_spring1(double q, double theta1) const override;
  SpringEval link_spring2(double q, double theta2) const override;
  BavsParams params_;
};

/// AwAS-II (VSA with adjustable lever): theta2 is the pivot position sigma_p [m],
/// C = (L / r_t) sigma_p / (L - sigma_p), d = sat(q - theta1), t1 = -Ks C^2 sin(2d) (= -2 Ks C^2
/// sin d cos d), t2 = 0, sigma = 2 Ks C^2 cos(2d), E = Ks C^2 sin^2 d. The pivot is clamped into
/// [0, L (1 - 1e-3)] everywhere (also inside torques()), so the singularity at L is never reached.
/// Motor 2 positions the pivot; it feels no spring reaction (t2 = 0): the lever mechanism is
/// assumed non-backdrivable.
struct AwasParams {
  double ks = 10.0;             ///< spring constant [N/m] as in the sheet
  double lever_length = 0.05;   ///< L [m]
  double r_t = 0.015;           ///< r_t [m]
  double max_deflection = 0.3;  ///< [rad]
};

class Awas final : public Actuator {
 public:
  explicit Awas(const AwasParams& params = {});
  std::string type() const override { return "awas"; }
  int motors() const override { return 2; }
  SpringTorques torques(double q, double theta1, double theta2) const override;
  double stiffness(double q, double theta1, double theta2) const override;
  double energy(double q, double theta1, double theta2) const override;
  /// theta1 = eq, theta2 (pivot) = preset.
  MotorReferences references(double equilibrium, double preset) const override;
  /// Pivot domain [0, L): clamped into [0, L (1 - 1e-3)].
  double check_preset(double preset) const override;
  double max_deflection() const override { return params_.max_deflection; }
  const AwasParams& params() const { return params_; }
  /// Largest admissible pivot position, L (1 - 1e-3).
  double max_pivot() const { return params_.lever_length * (1.0 - 1e-3); }

 private:
  SpringEval spring(double q, double theta1, double pivot) const;
  AwasParams params_;
};

}  // namespace compliant
