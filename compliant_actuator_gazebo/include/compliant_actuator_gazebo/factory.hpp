// Actuators and joint parameters by name, as written in a robot description's plugin block
// (paper 003 §3.1.3 InitParams(), Fig. 6 panel B: optional tags with defaults).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compliant_actuator_gazebo/actuator.hpp"
#include "compliant_actuator_gazebo/actuator_registry.hpp"
#include "compliant_actuator_gazebo/compliant_joint.hpp"

namespace compliant {

/// {"sea", "qbmove", "bavs", "awas"}, then the types registered since (actuator_registry.hpp),
/// in the order they came.
std::vector<std::string> actuator_types();
/// Parameter names of an actuator type (std::invalid_argument for an unknown type).
std::vector<std::string> actuator_parameter_names(const std::string& type);
/// Parameter names accepted by make_joint_params.
std::vector<std::string> joint_parameter_names();
/// Unknown type, unknown parameter name, non-finite or out-of-domain value ->
/// std::invalid_argument naming the item. Missing parameters take the reference defaults.
std::shared_ptr<Actuator> make_actuator(const std::string& type,
                                        const std::map<std::string, double>& params);
/// mode outside 0..6, unknown name, non-finite or out-of-domain value -> std::invalid_argument.
JointParams make_joint_params(int mode, const std::map<std::string, double>& params);

}  // namespace compliant
