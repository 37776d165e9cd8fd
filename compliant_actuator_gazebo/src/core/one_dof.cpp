// 1-DoF pendulum on a compliant joint (paper 003 Fig. 8 set-up), semi-implicit Euler.
#include "compliant_actuator_gazebo/one_dof.hpp"

#include <cmath>
#include <stdexcept>

namespace compliant {
namespace {

double total_energy(const CompliantJoint& joint, const OneDofLink& link, double q, double qd) {
  const JointOutput& out = joint.output();
  double e = 0.5 * link.inertia * qd * qd + link.mass_length * link.gravity * (1.0 - std::cos(q));
  if (static_cast<int>(joint.mode()) >= static_cast<int>(Mode::MotorPositions)) {  // spring modes
    e += joint.actuator().energy(q, out.motor1.position, out.motor2.position);
  }
  const int motors = joint.dynamic_motors();
  if (motors >= 1)
    e += 0.5 * joint.params().motor1.inertia * out.motor1.velocity * out.motor1.velocity;
  if (motors >= 2)
    e += 0.5 * joint.params().motor2.inertia * out.motor2.velocity * out.motor2.velocity;
  return e;
}

}  // namespace

OneDofTrace simulate_one_dof(CompliantJoint& joint, const OneDofLink& link, double q0, double qd0,
                             double dt, double duration) {
  if (!(link.inertia > 0.0) || !std::isfinite(link.inertia)) {
    throw std::invalid_argument("OneDofLink inertia must be finite and > 0");
  }
  if (!std::isfinite(link.mass_length) || !std::isfinite(link.damping) ||
      !std::isfinite(link.gravity) || link.damping < 0.0) {
    throw std::invalid_argument("OneDofLink mass_length, gravity must be finite, damping >= 0");
  }
  if (!(dt > 0.0) || !std::isfinite(dt) || !(duration >= 0.0) || !std::isfinite(duration) ||
      !std::isfinite(q0) || !std::isfinite(qd0)) {
    throw std::invalid_argument("simulate_one_dof needs dt > 0, duration >= 0, finite q0, qd0");
  }
  const std::size_t steps = static_cast<std::size_t>(std::llround(duration / dt));
  OneDofTrace trace;
  for (auto* v : {&trace.time, &trace.q, &trace.qd, &trace.link_torque, &trace.energy}) {
    v->reserve(steps + 1);
  }
  const double t0 = joint.output().time;
  double q = q0, qd = qd0;
  double tau = joint.update(t0, q, qd);
  auto record = [&](double t) {
    trace.time.push_back(t);
    trace.q.push_back(q);
    trace.qd.push_back(qd);
    trace.link_torque.push_back(tau);
    trace.energy.push_back(total_energy(joint, link, q, qd));
  };
  record(t0);
  for (std::size_t k = 1; k <= steps; ++k) {
    const double qdd =
        (tau - link.mass_length * link.gravity * std::sin(q) - link.damping * qd) / link.inertia;
    qd += dt * qdd;
    q += dt * qd;
    const double t = t0 + static_cast<double>(k) * dt;
    tau = joint.update(t, q, qd);
    record(t);
  }
  return trace;
}

}  // namespace compliant
