// A 1-DoF pendulum link on a compliant joint (paper 003 Fig. 8: 0.2 kg at 0.04 m under gravity),
// for the analytic physics checks and the benchmark:
//   J qdd = tau_joint - m l g sin(q) - c qd,   q = 0 hanging down,
// integrated with semi-implicit (symplectic) Euler, joint.update() once per step.
#pragma once

#include <vector>

#include "compliant_actuator_gazebo/compliant_joint.hpp"

namespace compliant {

struct OneDofLink {
  double inertia = 0.0;      ///< J about the joint axis [kg m^2] (> 0)
  double mass_length = 0.0;  ///< m l [kg m]
  double damping = 0.0;      ///< c [N m s/rad]
  double gravity = 9.81;     ///< [m/s^2]
};

struct OneDofTrace {
  std::vector<double> time, q, qd, link_torque;
  /// link KE + gravity PE m l g (1 - cos q) + elastic energy + KE of the simulated motors
  std::vector<double> energy;
};

/// Runs from the joint's current time (output().time) for `duration` with step dt, starting at
/// (q0, qd0); call joint.reset() first to place the motors. Records every step including t0.
/// std::invalid_argument for inertia <= 0, dt <= 0, non-finite arguments, duration < 0.
OneDofTrace simulate_one_dof(CompliantJoint& joint, const OneDofLink& link, double q0, double qd0,
                             double dt, double duration);

}  // namespace compliant
