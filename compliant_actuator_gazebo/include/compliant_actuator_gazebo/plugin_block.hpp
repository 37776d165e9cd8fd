// The <plugin filename="libcompliant_actuator_plugin.so"> block of a robot description (paper
// 003 §3.1, Fig. 6 panel B) turned into one joint's actuator settings. The one parser of the
// Gazebo plugin (its SDF children) and of the embedded simulation (description.py, through the
// bindings); no Gazebo, ROS or XML library: the caller hands over the block's child elements.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "compliant_actuator_gazebo/actuator.hpp"
#include "compliant_actuator_gazebo/compliant_joint.hpp"

namespace compliant {

/// One child element of a plugin block, as the XML reader gives it.
struct BlockTag {
  std::string name;           // <name>
  std::string text;           // its text, untrimmed ("" for <name/>)
  bool has_children = false;  // <k1><value>1</value></k1> is refused
};

/// A valid block: <joint>, <actuator>, <operationMode>, the robot namespace and the parameters,
/// split by name (factory.hpp) and already built by make_actuator / make_joint_params.
struct PluginSettings {
  std::string joint;
  std::string actuator_type;
  int mode = 0;
  std::string robot_namespace;  // without '/' at either end
  std::map<std::string, double> actuator_params;
  std::map<std::string, double> joint_params;
  std::shared_ptr<Actuator> actuator;
  JointParams params;
};

/// An unusable block; what() is one line, "<where>: <why>" or "<where> (joint '<j>'): <why>".
class PluginBlockError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The simulator's verdict on the joint a block names: "" when it can carry a compliant
/// actuator, otherwise why not (e.g. "the URDF has no joint 'j9'").
using JointCheck = std::function<std::string(const std::string& joint)>;

/// Parses and validates one block, in this order: each child once and holding a value; the
/// required <joint>, <actuator>, <operationMode> present and not empty; the joint
/// (check_joint); the optional <actuatorLibrary> loaded (load_actuator_library: the shared
/// library of a user's actuator types); the actuator type (built-in or registered); the mode (an
/// integer 0..6); <robotNamespace> (default default_namespace, '/' at either end dropped) a ROS
/// name; every other child a number (inf and nan are read; the factory decides) named as a
/// parameter of this actuator type or of the joint; then the factory's checks, naming the tag that
/// fails on its own. PluginBlockError (one line, prefixed by where) for the first problem.
PluginSettings parse_plugin_block(const std::vector<BlockTag>& tags,
                                  const std::string& default_namespace,
                                  const JointCheck& check_joint, const std::string& where);

/// A ROS graph name of segments [A-Za-z][A-Za-z0-9_]* joined by '/' (no leading '/').
bool is_ros_namespace(const std::string& name);
/// The text without leading and trailing white space.
std::string trim_text(const std::string& text);
/// The whole text (white space around allowed) as a decimal number, "inf" or "nan"
/// (either case, signed); false otherwise (hexadecimal included). Independent of the locale.
bool parse_number(const std::string& text, double* value);

}  // namespace compliant
