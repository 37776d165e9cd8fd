// The joint torques of panda_sim2real's simulator (controllers.py, friction.py, robot.py step):
// ros_control's effort PID toward the reference, saturated at the effort limits, minus the
// sigmoid joint friction of Gaz et al. (RA-L 2019) when the configuration has it.
#pragma once

#include <optional>

#include "panda_gazebo/joint_trajectory.hpp"

namespace panda_gazebo {

struct PidGains {
  Vector p, i, d, i_clamp;
};

// tau = P e + I + D e_dot with I = clamp(I + Ki e dt, +-i_clamp), e_dot the velocity error; no
// gravity feed-forward (effort_controllers/JointTrajectoryController, franka_gazebo's).
class PidController {
 public:
  explicit PidController(PidGains gains);
  void reset();
  Vector compute(const Vector& position, const Vector& velocity, const Vector& position_ref,
                 const Vector& velocity_ref, double dt);

 private:
  PidGains gains_;
  Vector integral_;
};

// tau_f(qd) = phi1 / (1 + exp(-phi2 (qd + phi3))) - phi1 / (1 + exp(-phi2 phi3)), per joint.
struct SigmoidFriction {
  Vector phi1, phi2, phi3;
  Vector torque(const Vector& velocity) const;
};

// What one physics step applies to the links and what the joint torque sensor reports.
struct JointTorques {
  Vector motor;  // tau_m: the PID's torque, saturated at the effort limits (the reported effort)
  Vector link;   // tau_m - tau_f(qd): what the joints receive
};

// One step of the simulator's joint torques (robot.py SimulatedRobot.step, rigid joints).
JointTorques effort_step(PidController& pid, const std::optional<SigmoidFriction>& friction,
                         const Vector& effort_limit, const Vector& position, const Vector& velocity,
                         const Vector& position_ref, const Vector& velocity_ref, double dt);

}  // namespace panda_gazebo
