#include "compliant_actuator_gazebo/input_bounds.hpp"

#include <algorithm>
#include <cmath>

namespace compliant {

std::array<InputRange, kInputCount> input_bounds(const Actuator& actuator,
                                                 const JointParams& params, double lower,
                                                 double upper, double effort) {
  constexpr double kHuge = 1e300;  // bounds.HUGE: the model clamps it to its preset limits
  InputRange link{lower, upper};
  if (!(std::isfinite(lower) && std::isfinite(upper)) || lower > upper ||
      upper - lower > 2.0 * kContinuousRange)
    link = {-kContinuousRange, kContinuousRange};
  const MotorParams* motors[2] = {&params.motor1, &params.motor2};
  if (!(std::isfinite(effort) && effort > 0.0))
    effort = params.motor1.torque_limit + params.motor2.torque_limit;
  const double deflection = actuator.max_deflection();
  InputRange preset{actuator.check_preset(-kHuge), actuator.check_preset(kHuge)};
  if (preset.high - preset.low > 2.0 * kContinuousRange) preset = {0.0, deflection};
  InputRange motor_range[2];
  for (int k = 0; k < 2; ++k)
    motor_range[k] = {std::max(link.low - deflection, motors[k]->position_min),
                      std::min(link.high + deflection, motors[k]->position_max)};
  if (actuator.type() == "awas") motor_range[1] = preset;
  const double width = preset.high - preset.low;
  std::array<InputRange, kInputCount> out;
  auto set = [&out](Input input, InputRange range) { out[static_cast<int>(input)] = range; };
  set(Input::TorqueCommand, {-effort, effort});
  set(Input::ExternalTorque, {-effort, effort});
  set(Input::LinkCommand, link);
  set(Input::EquilibriumPosition, link);
  set(Input::Reference1, motor_range[0]);
  set(Input::Reference2, motor_range[1]);
  set(Input::StiffnessPreset, {preset.low - width, preset.high + width});
  set(Input::Motor1Command, {-params.motor1.torque_limit, params.motor1.torque_limit});
  set(Input::Motor2Command, {-params.motor2.torque_limit, params.motor2.torque_limit});
  return out;
}

}  // namespace compliant
