// One compliant-actuated joint (paper 003 §3.1, Fig. 4-5): compliance model + up to two motors +
// PID, in the seven operation modes. The release had seven copy-pasted per-mode update functions
// that disagreed on the order of steps (reference sheet); here a mode is one row of a table
// (reference source, motor model, link-torque source) and update() is the single step function.
#pragma once

#include <array>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "compliant_actuator_gazebo/actuator.hpp"
#include "compliant_actuator_gazebo/motor.hpp"
#include "compliant_actuator_gazebo/pid.hpp"

namespace compliant {

enum class Mode : int {
  Rigid = 0,               ///< link torque = torque_command
  LinkPid = 1,             ///< link torque = link PID(link_command, q)
  MotorPositions = 2,      ///< spring with motor positions = reference_1/2 (kinematic motors)
  EquilibriumPreset = 3,   ///< spring with motor positions = map(equilibrium, preset)
  MotorTorques = 4,        ///< motor dynamics driven by motor_1/2_command
  MotorPid = 5,            ///< motor dynamics + PID to reference_1/2
  MotorPidEquilibrium = 6  ///< motor dynamics + PID to map(equilibrium, preset)
};

enum class Input : int {
  TorqueCommand,
  LinkCommand,
  Reference1,
  Reference2,
  EquilibriumPosition,
  StiffnessPreset,
  Motor1Command,
  Motor2Command,
  ExternalTorque
};
constexpr int kInputCount = 9;
/// Longest world step integrated: kMaxSubsteps * max_substep (10 s by default); a longer dt is a
/// clock jump (see CompliantJoint::update).
constexpr int kMaxSubsteps = 10000;

/// Topic basename of an input (NS/<name>), e.g. "equilibrium_position".
const char* input_name(Input input);
/// The Input of a topic basename; std::invalid_argument for an unknown name.
Input input_from_name(const std::string& name);
/// The inputs a mode reads, in topic order, ExternalTorque last (it is accepted in every mode).
std::vector<Input> mode_inputs(Mode mode);
/// Mode of 0..6; std::invalid_argument otherwise.
Mode mode_from_int(int mode);
/// True for the modes with motor dynamics (4, 5, 6).
bool has_motor_dynamics(Mode mode);

struct JointParams {
  Mode mode = Mode::EquilibriumPreset;
  MotorParams motor1, motor2;
  PidGains motor_pid{125.0, 0.0, 4.5, 0.002, 6.0, 1.0};  ///< on motor position (modes 5, 6)
  PidGains link_pid{0.8,
                    0.0,
                    0.2,
                    0.002,
                    std::numeric_limits<double>::infinity(),
                    std::numeric_limits<double>::infinity()};  ///< on link position (mode 1)
  double max_substep = 1e-3;                                   ///< internal motor sub-step [s]
};

struct JointOutput {
  double link_torque = 0.0;  ///< total torque on the link, external torque included
  SpringTorques spring;      ///< t1, t2 on the link (0 in modes 0, 1)
  double stiffness = 0.0;    ///< -d tau/dq: model stiffness (2-6), link PID p (1), 0 (0)
  double deflection = 0.0;   ///< q - theta1 (modes 2-6), 0 otherwise
  double reference_1 = 0.0, reference_2 = 0.0;  ///< motor position references in use (2,3,5,6)
  MotorState motor1, motor2;                    ///< zero where a motor is not simulated
  double time = 0.0;
};

class CompliantJoint {
 public:
  /// std::invalid_argument for a null actuator or invalid params (names the field).
  CompliantJoint(std::shared_ptr<const Actuator> actuator, const JointParams& params);

  /// Motors at rest where the link at q is at equilibrium (references(q, stiffness preset)),
  /// PIDs cleared, the next update() only computes. Inputs are kept.
  void reset(double q, double time = 0.0);

  /// Stores an input; false (old value kept) for NaN/Inf. A stiffness preset outside the model's
  /// domain is clamped (check_preset), returns true, and clamped_preset() becomes true.
  bool set_input(Input input, double value);
  double input(Input input) const { return inputs_[static_cast<int>(input)]; }

  /// Advances to absolute `time` with the link at (q, qd) and returns output().link_torque.
  /// The first call after reset, dt = time - last_time <= 0 (a clock reset) and a clock jump
  /// dt > kMaxSubsteps * max_substep only compute and re-synchronise; otherwise the motors are
  /// integrated over dt in ceil(dt / max_substep) semi-implicit sub-steps with the link
  /// interpolated linearly from its previous to its current position (the spring of sub-step i
  /// sees the link at the start of the sub-step, which makes the link/motor pair a symplectic
  /// Euler scheme at one sub-step per world step). The motor PIDs run at the sub-step rate (a
  /// motor driver's inner loop), the link PID once per world step. Non-finite time, q or qd ->
  /// std::invalid_argument.
  double update(double time, double q, double qd);

  const JointOutput& output() const { return output_; }
  Mode mode() const { return params_.mode; }
  const JointParams& params() const { return params_; }
  const Actuator& actuator() const { return *actuator_; }
  std::shared_ptr<const Actuator> actuator_ptr() const { return actuator_; }
  bool clamped_preset() const { return clamped_preset_; }
  /// Motors simulated in the current mode (0 in modes 0-3, actuator().motors() in 4-6).
  int dynamic_motors() const;

 private:
  MotorReferences position_references() const;
  void compute_output(double q, double time);

  std::shared_ptr<const Actuator> actuator_;
  JointParams params_;
  std::array<double, kInputCount> inputs_{};
  std::array<Motor, 2> motors_;
  std::array<Pid, 2> motor_pids_;
  Pid link_pid_;
  JointOutput output_;
  MotorReferences kinematic_{};           // motor positions of the kinematic modes 2, 3
  MotorReferences kinematic_velocity_{};  // their finite-difference velocities
  double last_time_ = 0.0, last_q_ = 0.0;
  bool first_ = true, clamped_preset_ = false;
};

}  // namespace compliant
