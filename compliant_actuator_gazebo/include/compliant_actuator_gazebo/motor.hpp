// DC motor block (paper 003 §3.1.1, eq. 7-8), reflected to the link:
//   J thdd + D thd + tau_fric = tau_m - tau_spring,
// where tau_spring is the spring torque on the LINK (t1 or t2; the motor feels -tau_spring).
// The release integrated eq. 10 with one explicit Euler step per world step (unstable for
// dt > 2J/(D + Kd) ~ 9.8 ms with its defaults, reference sheet); step() is one semi-implicit
// sub-step instead: viscous and Coulomb damping implicit, spring and bristle explicit.
#pragma once

#include <limits>

#include "compliant_actuator_gazebo/friction.hpp"

namespace compliant {

struct MotorParams {
  double inertia = 0.0233;      ///< J [kg m^2] (reflected to the link)
  double torque_limit = 6.0;    ///< |tau_m| <= torque_limit [N m]
  double velocity_limit = 6.0;  ///< |thd| <= velocity_limit [rad/s]
  double position_min = -std::numeric_limits<double>::infinity();  ///< mechanical end stop
  double position_max = std::numeric_limits<double>::infinity();   ///< mechanical end stop
  FrictionParams friction;
};

/// std::invalid_argument naming the field (inertia > 0, limits > 0, min <= max, ...).
void validate(const MotorParams& p, const std::string& who = "motor");

struct MotorState {
  double position = 0.0, velocity = 0.0;
  double anchor = 0.0;  ///< bristle anchor w of eq. 8
  double torque = 0.0;  ///< applied motor torque after saturation
};

class Motor {
 public:
  explicit Motor(const MotorParams& params = {});
  /// At rest at `position` (clamped into the end stops), bristle relaxed.
  void reset(double position);
  /// One semi-implicit sub-step of length dt (see the header comment). tau_m is saturated,
  /// |thd| <= velocity_limit, an end stop stops the motor (velocity 0). Non-finite arguments or
  /// dt <= 0 leave the state unchanged; the state is never NaN.
  void step(double motor_torque, double spring_torque, double dt);
  /// Friction torque of the last step: viscous + Coulomb + bristle (opposing the motion).
  double friction_torque() const { return friction_; }
  const MotorState& state() const { return state_; }
  const MotorParams& params() const { return params_; }

 private:
  MotorParams params_;
  MotorState state_;
  double friction_ = 0.0;
};

}  // namespace compliant
