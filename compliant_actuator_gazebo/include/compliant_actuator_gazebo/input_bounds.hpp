// The values each of a compliant joint's nine inputs accepts (issue 18's bounds), from the joint's
// settings and the simulator's joint limits: the checks of the Gazebo plugin. bounds.py computes
// the same for compliant_sim and compliant_manager (test_input_bounds.py compares the two).
#pragma once

#include <array>

#include "compliant_actuator_gazebo/actuator.hpp"
#include "compliant_actuator_gazebo/compliant_joint.hpp"

namespace compliant {

/// |q| [rad] of a joint without position limits (a continuous joint), as bounds.CONTINUOUS_RANGE.
constexpr double kContinuousRange = 1000.0;

struct InputRange {
  double low = 0.0, high = 0.0;
  bool contains(double value) const { return value >= low && value <= high; }
};

/// Per input (index static_cast<int>(Input)): torque_command and external_torque within
/// +-effort (effort <= 0 or not finite: the motors' torque limits summed); link_command and
/// equilibrium_position within [lower, upper] (a range wider than +-kContinuousRange, or none:
/// +-kContinuousRange); reference_1/2 within that range widened by the spring's maximum
/// deflection and clipped to the motor's end stops (an AwAS-II's motor 2 moves the pivot: its
/// preset domain); motor_1/2_command within +-the motor's torque limit; stiffness_preset within
/// its domain widened by the domain's width (a model without a preset: [0, max deflection]).
std::array<InputRange, kInputCount> input_bounds(const Actuator& actuator,
                                                 const JointParams& params, double lower,
                                                 double upper, double effort);

}  // namespace compliant
