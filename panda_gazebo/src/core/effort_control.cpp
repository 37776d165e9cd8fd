#include "panda_gazebo/effort_control.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace panda_gazebo {

PidController::PidController(PidGains gains) : gains_(std::move(gains)) {
  const size_t n = gains_.p.size();
  if (gains_.i.size() != n || gains_.d.size() != n || gains_.i_clamp.size() != n)
    throw std::invalid_argument("PID gains p, i, d and i_clamp must have one entry per joint");
  integral_.assign(n, 0.0);
}

void PidController::reset() { std::fill(integral_.begin(), integral_.end(), 0.0); }

Vector PidController::compute(const Vector& position, const Vector& velocity,
                              const Vector& position_ref, const Vector& velocity_ref, double dt) {
  const PidGains& g = gains_;
  Vector tau(position.size());
  for (size_t j = 0; j < position.size(); ++j) {
    const double error = position_ref[j] - position[j];
    integral_[j] = std::clamp(integral_[j] + g.i[j] * error * dt, -g.i_clamp[j], g.i_clamp[j]);
    tau[j] = g.p[j] * error + integral_[j] + g.d[j] * (velocity_ref[j] - velocity[j]);
  }
  return tau;
}

Vector SigmoidFriction::torque(const Vector& velocity) const {
  Vector tau(velocity.size());
  for (size_t j = 0; j < velocity.size(); ++j) {
    const double moving = phi1[j] / (1.0 + std::exp(-phi2[j] * (velocity[j] + phi3[j])));
    const double at_rest = phi1[j] / (1.0 + std::exp(-phi2[j] * phi3[j]));
    tau[j] = moving - at_rest;
  }
  return tau;
}

JointTorques effort_step(PidController& pid, const std::optional<SigmoidFriction>& friction,
                         const Vector& effort_limit, const Vector& position, const Vector& velocity,
                         const Vector& position_ref, const Vector& velocity_ref, double dt) {
  JointTorques out;
  out.motor = pid.compute(position, velocity, position_ref, velocity_ref, dt);
  for (size_t j = 0; j < out.motor.size(); ++j)
    out.motor[j] = std::clamp(out.motor[j], -effort_limit[j], effort_limit[j]);
  out.link = out.motor;
  if (friction) {
    const Vector tau_f = friction->torque(velocity);
    for (size_t j = 0; j < out.link.size(); ++j) out.link[j] -= tau_f[j];
  }
  return out;
}

}  // namespace panda_gazebo
