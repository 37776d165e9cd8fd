// CompliantJoint: the single, table-driven step for operation modes 0-6 (paper 003 §3.1, Fig. 5).
#include "compliant_actuator_gazebo/compliant_joint.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace compliant {
namespace {

// A mode is one row: where the motor position references come from, how the motors move, and
// what produces the link torque. The external torque is added in every mode.
enum class ReferenceSource { None, Inputs, EquilibriumPreset };
enum class MotorModel { None, Kinematic, DynamicTorque, DynamicPid };
enum class LinkTorque { Command, LinkPid, Spring };
struct ModeSpec {
  ReferenceSource references;
  MotorModel motors;
  LinkTorque link;
  std::vector<Input> inputs;
};

const ModeSpec& spec(Mode mode) {
  static const std::array<ModeSpec, 7> table = {{
      {ReferenceSource::None, MotorModel::None, LinkTorque::Command, {Input::TorqueCommand}},
      {ReferenceSource::None, MotorModel::None, LinkTorque::LinkPid, {Input::LinkCommand}},
      {ReferenceSource::Inputs,
       MotorModel::Kinematic,
       LinkTorque::Spring,
       {Input::Reference1, Input::Reference2}},
      {ReferenceSource::EquilibriumPreset,
       MotorModel::Kinematic,
       LinkTorque::Spring,
       {Input::EquilibriumPosition, Input::StiffnessPreset}},
      {ReferenceSource::None,
       MotorModel::DynamicTorque,
       LinkTorque::Spring,
       {Input::Motor1Command, Input::Motor2Command}},
      {ReferenceSource::Inputs,
       MotorModel::DynamicPid,
       LinkTorque::Spring,
       {Input::Reference1, Input::Reference2}},
      {ReferenceSource::EquilibriumPreset,
       MotorModel::DynamicPid,
       LinkTorque::Spring,
       {Input::EquilibriumPosition, Input::StiffnessPreset}},
  }};
  return table[static_cast<int>(mode)];
}

constexpr std::array<const char*, kInputCount> kInputNames = {
    "torque_command",  "link_command",         "reference_1",
    "reference_2",     "equilibrium_position", "stiffness_preset",
    "motor_1_command", "motor_2_command",      "external_torque"};

bool is_dynamic(MotorModel m) {
  return m == MotorModel::DynamicTorque || m == MotorModel::DynamicPid;
}

}  // namespace

const char* input_name(Input input) {
  const int i = static_cast<int>(input);
  if (i < 0 || i >= kInputCount) throw std::invalid_argument("unknown input " + std::to_string(i));
  return kInputNames[i];
}

Input input_from_name(const std::string& name) {
  for (int i = 0; i < kInputCount; ++i) {
    if (name == kInputNames[i]) return static_cast<Input>(i);
  }
  throw std::invalid_argument("unknown input '" + name + "'");
}

Mode mode_from_int(int mode) {
  if (mode < 0 || mode > 6) {
    throw std::invalid_argument("operation mode must be 0..6, got " + std::to_string(mode));
  }
  return static_cast<Mode>(mode);
}

std::vector<Input> mode_inputs(Mode mode) {
  std::vector<Input> inputs = spec(mode_from_int(static_cast<int>(mode))).inputs;
  inputs.push_back(Input::ExternalTorque);
  return inputs;
}

bool has_motor_dynamics(Mode mode) {
  return is_dynamic(spec(mode_from_int(static_cast<int>(mode))).motors);
}

CompliantJoint::CompliantJoint(std::shared_ptr<const Actuator> actuator, const JointParams& params)
    : actuator_(std::move(actuator)), params_(params) {
  if (!actuator_) throw std::invalid_argument("CompliantJoint needs an actuator, got null");
  mode_from_int(static_cast<int>(params_.mode));
  if (actuator_->motors() < 1 || actuator_->motors() > 2) {
    throw std::invalid_argument("actuator '" + actuator_->type() +
                                "' must have 1 or 2 motors, got " +
                                std::to_string(actuator_->motors()));
  }
  require_nonnegative("max_substep", params_.max_substep, true);
  validate(params_.motor1, "motor1");
  validate(params_.motor2, "motor2");
  validate(params_.motor_pid, "pid");
  validate(params_.link_pid, "link_pid");
  motors_ = {Motor(params_.motor1), Motor(params_.motor2)};
  motor_pids_ = {Pid(params_.motor_pid), Pid(params_.motor_pid)};
  link_pid_ = Pid(params_.link_pid);
  reset(0.0, 0.0);
}

int CompliantJoint::dynamic_motors() const {
  return is_dynamic(spec(params_.mode).motors) ? actuator_->motors() : 0;
}

void CompliantJoint::reset(double q, double time) {
  if (!std::isfinite(q) || !std::isfinite(time)) {
    throw std::invalid_argument("CompliantJoint::reset needs finite q and time");
  }
  const MotorReferences rest = actuator_->references(q, input(Input::StiffnessPreset));
  motors_[0].reset(rest.theta1);
  motors_[1].reset(rest.theta2);
  motor_pids_[0].reset(motors_[0].state().position);
  motor_pids_[1].reset(motors_[1].state().position);
  link_pid_.reset(q);
  kinematic_ = position_references();
  kinematic_velocity_ = {};
  first_ = true;
  last_time_ = time;
  last_q_ = q;
  compute_output(q, time);
}

bool CompliantJoint::set_input(Input input, double value) {
  const int i = static_cast<int>(input);
  if (i < 0 || i >= kInputCount) throw std::invalid_argument("unknown input " + std::to_string(i));
  if (!std::isfinite(value)) return false;
  if (input == Input::StiffnessPreset) {
    const double clamped = actuator_->check_preset(value);
    clamped_preset_ = clamped != value;
    value = clamped;
  }
  inputs_[i] = value;
  return true;
}

MotorReferences CompliantJoint::position_references() const {
  switch (spec(params_.mode).references) {
    case ReferenceSource::Inputs:
      return {input(Input::Reference1), input(Input::Reference2)};
    case ReferenceSource::EquilibriumPreset:
      return actuator_->references(input(Input::EquilibriumPosition),
                                   input(Input::StiffnessPreset));
    case ReferenceSource::None:
      break;
  }
  return {0.0, 0.0};
}

double CompliantJoint::update(double time, double q, double qd) {
  if (!std::isfinite(time) || !std::isfinite(q) || !std::isfinite(qd)) {
    throw std::invalid_argument(
        "CompliantJoint::update needs finite time, q and qd, got time=" + std::to_string(time) +
        " q=" + std::to_string(q) + " qd=" + std::to_string(qd));
  }
  const ModeSpec& row = spec(params_.mode);
  // First call, clock reset (dt <= 0) or clock jump (more than kMaxSubsteps sub-steps): compute
  // only and re-synchronise; integrating the jump would mean a huge, meaningless step.
  double dt = first_ ? 0.0 : time - last_time_;
  if (dt > kMaxSubsteps * params_.max_substep) dt = 0.0;
  const MotorReferences refs = position_references();
  const int n_motors = actuator_->motors();

  if (row.motors == MotorModel::Kinematic) {
    // Motor positions follow the references exactly (theta = reference).
    if (dt > 0.0) {
      kinematic_velocity_ = {(refs.theta1 - kinematic_.theta1) / dt,
                             (refs.theta2 - kinematic_.theta2) / dt};
    }
    kinematic_ = refs;
  }
  if (dt > 0.0 && is_dynamic(row.motors)) {
    const int n = static_cast<int>(std::ceil(dt / params_.max_substep - 1e-9));
    const int steps = n < 1 ? 1 : n;
    const double h = dt / steps;
    const double ref[2] = {refs.theta1, refs.theta2};
    const double cmd[2] = {input(Input::Motor1Command), input(Input::Motor2Command)};
    for (int s = 0; s < steps; ++s) {
      // The link moves linearly over dt; the spring of this sub-step sees it at its start.
      const double qs = last_q_ + (q - last_q_) * (static_cast<double>(s) / steps);
      const SpringTorques t =
          actuator_->torques(qs, motors_[0].state().position, motors_[1].state().position);
      const double spring[2] = {t.t1, t.t2};
      for (int m = 0; m < n_motors; ++m) {
        const double tau = row.motors == MotorModel::DynamicPid
                               ? motor_pids_[m].update(ref[m], motors_[m].state().position, h)
                               : cmd[m];
        motors_[m].step(tau, spring[m], h);  // the motor feels -t_m
      }
    }
  }
  if (row.link == LinkTorque::LinkPid) {
    link_pid_.update(input(Input::LinkCommand), q, dt);  // integrates only for dt > 0
  }
  first_ = false;
  last_time_ = time;
  last_q_ = q;
  compute_output(q, time);
  return output_.link_torque;
}

// Outputs of the current state (no integration): one place for every mode.
void CompliantJoint::compute_output(double q, double time) {
  const ModeSpec& row = spec(params_.mode);
  JointOutput out;
  out.time = time;
  const int n_motors = actuator_->motors();
  double theta[2] = {0.0, 0.0};
  if (row.motors == MotorModel::Kinematic) {
    theta[0] = kinematic_.theta1;
    theta[1] = n_motors > 1 ? kinematic_.theta2 : 0.0;
  } else if (is_dynamic(row.motors)) {
    theta[0] = motors_[0].state().position;
    theta[1] = n_motors > 1 ? motors_[1].state().position : 0.0;
  }
  if (row.references != ReferenceSource::None) {
    const MotorReferences refs = position_references();
    out.reference_1 = refs.theta1;
    out.reference_2 = n_motors > 1 ? refs.theta2 : 0.0;
  }
  switch (row.link) {
    case LinkTorque::Command:
      out.link_torque = input(Input::TorqueCommand);
      break;
    case LinkTorque::LinkPid:
      out.link_torque = link_pid_.update(input(Input::LinkCommand), q, 0.0);  // compute only
      out.stiffness = params_.link_pid.p;
      break;
    case LinkTorque::Spring:
      out.spring = actuator_->torques(q, theta[0], theta[1]);
      out.link_torque = out.spring.link();
      out.stiffness = actuator_->stiffness(q, theta[0], theta[1]);
      out.deflection = q - theta[0];
      break;
  }
  if (row.motors == MotorModel::Kinematic) {
    // Kinematic motors: velocity from the last step, torque = the torque holding the spring.
    out.motor1 = MotorState{theta[0], kinematic_velocity_.theta1, theta[0], out.spring.t1};
    if (n_motors > 1) {
      out.motor2 = MotorState{theta[1], kinematic_velocity_.theta2, theta[1], out.spring.t2};
    }
  } else if (is_dynamic(row.motors)) {
    out.motor1 = motors_[0].state();
    if (n_motors > 1) out.motor2 = motors_[1].state();
  }
  out.link_torque += input(Input::ExternalTorque);
  output_ = out;
}

}  // namespace compliant
