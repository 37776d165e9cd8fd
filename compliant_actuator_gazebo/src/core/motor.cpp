// DC motor block (paper 003 §3.1.1): one semi-implicit sub-step of eq. 7 with the friction of
// eq. 8, torque/velocity limits and end stops. See motor.hpp.
#include "compliant_actuator_gazebo/motor.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace compliant {

void validate(const MotorParams& p, const std::string& who) {
  require_nonnegative(who + " inertia", p.inertia, true);
  if (!(p.torque_limit > 0.0)) {  // +inf allowed
    throw std::invalid_argument(who + " torque_limit must be > 0, got " +
                                std::to_string(p.torque_limit));
  }
  if (!(p.velocity_limit > 0.0)) {
    throw std::invalid_argument(who + " velocity_limit must be > 0, got " +
                                std::to_string(p.velocity_limit));
  }
  if (std::isnan(p.position_min) || std::isnan(p.position_max) || p.position_min > p.position_max) {
    throw std::invalid_argument(who + " end stops need position_min <= position_max, got [" +
                                std::to_string(p.position_min) + ", " +
                                std::to_string(p.position_max) + "]");
  }
  validate(p.friction, who);
}

Motor::Motor(const MotorParams& params) : params_(params) {
  validate(params_);
  reset(0.0);
}

void Motor::reset(double position) {
  const double p = std::isfinite(position) ? position : 0.0;
  state_ = MotorState{};
  state_.position = std::clamp(p, params_.position_min, params_.position_max);
  state_.anchor = state_.position;
  friction_ = 0.0;
}

void Motor::step(double motor_torque, double spring_torque, double dt) {
  if (!(dt > 0.0) || !std::isfinite(dt) || !std::isfinite(motor_torque) ||
      !std::isfinite(spring_torque)) {
    return;
  }
  const FrictionParams& f = params_.friction;
  const double J = params_.inertia;
  const double tau_m = std::clamp(motor_torque, -params_.torque_limit, params_.torque_limit);
  const double tau_b = bristle_torque(f, state_.position, state_.anchor);
  // Implicit damping: viscous D plus the Coulomb secant c(v) evaluated at the old velocity.
  const double damping = f.viscous + coulomb_secant(f, state_.velocity);
  double v =
      (state_.velocity + dt / J * (tau_m - spring_torque - tau_b)) / (1.0 + dt * damping / J);
  if (!std::isfinite(v)) v = 0.0;
  v = std::clamp(v, -params_.velocity_limit, params_.velocity_limit);
  double x = state_.position + dt * v;
  if (x <= params_.position_min) {
    x = params_.position_min;
    v = 0.0;  // the stop absorbs the motion
  } else if (x >= params_.position_max) {
    x = params_.position_max;
    v = 0.0;
  }
  state_.position = x;
  state_.velocity = v;
  state_.anchor = bristle_anchor(f, x, state_.anchor);
  state_.torque = tau_m;
  friction_ = damping * v + tau_b;
}

}  // namespace compliant
