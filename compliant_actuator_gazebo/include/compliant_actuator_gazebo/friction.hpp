// Motor friction (paper 003 §3.1.1, eq. 8): viscous, tanh-smoothed Coulomb and the bristle
// (Dahl-like) model of Hayward and Armstrong (2000) whose stiffness K the reference release
// hard-coded to 1000 (reference sheet); here every term is configurable and can be switched off.
#pragma once

#include <algorithm>
#include <cmath>

#include "compliant_actuator_gazebo/actuator.hpp"

namespace compliant {

struct FrictionParams {
  double viscous = 0.2698;            ///< D [N m s/rad] (applied implicitly by Motor)
  double coulomb = 0.0;               ///< [N m], smoothed by tanh(v / coulomb_velocity)
  double coulomb_velocity = 1e-3;     ///< [rad/s]
  double bristle_stiffness = 1000.0;  ///< K of the bristle/Dahl model [N m/rad] (0: off)
  double bristle_torque = 0.02;       ///< tau_s [N m]: |theta - w| <= tau_s / K
};

/// std::invalid_argument for negative or non-finite values (coulomb_velocity must be > 0).
inline void validate(const FrictionParams& f, const std::string& who = "motor") {
  require_nonnegative(who + " viscous friction", f.viscous);
  require_nonnegative(who + " coulomb friction", f.coulomb);
  require_nonnegative(who + " coulomb_velocity", f.coulomb_velocity, true);
  require_nonnegative(who + " bristle_stiffness", f.bristle_stiffness);
  require_nonnegative(who + " bristle_torque", f.bristle_torque);
}

/// Bristle (Dahl) torque K (theta - w) of eq. 8 for the anchor w.
inline double bristle_torque(const FrictionParams& f, double theta, double anchor) {
  return f.bristle_stiffness > 0.0 ? f.bristle_stiffness * (theta - anchor) : 0.0;
}

/// Anchor update of eq. 8: w follows theta so that |theta - w| <= tau_s / K.
inline double bristle_anchor(const FrictionParams& f, double theta, double anchor) {
  if (f.bristle_stiffness <= 0.0) return theta;
  const double reach = f.bristle_torque / f.bristle_stiffness;
  return std::clamp(anchor, theta - reach, theta + reach);
}

/// Secant damping coefficient c(v) = coulomb tanh(v / v_c) / v >= 0 (limit coulomb / v_c at 0):
/// the Coulomb torque c(v) v, applied implicitly by Motor so that a sharp tanh (small v_c) does
/// not destabilise the sub-step.
inline double coulomb_secant(const FrictionParams& f, double velocity) {
  if (f.coulomb <= 0.0) return 0.0;
  const double x = velocity / f.coulomb_velocity;
  if (std::abs(x) < 1e-8) return f.coulomb / f.coulomb_velocity;
  return f.coulomb * std::tanh(x) / velocity;
}

}  // namespace compliant
