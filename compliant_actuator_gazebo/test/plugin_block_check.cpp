// plugin_block_check: the Gazebo plugin's block parsing without Gazebo. Reads plugin blocks on
// stdin as the plugin's Load() collects them from the SDF (one BlockTag per child element),
// calls compliant::parse_plugin_block as the plugin does, builds the core the plugin would run
// and steps it once; prints one line per block. Driven by test/test_plugin_block.py, which feeds
// it every block of the example robots and bad variants of them and compares each line with
// description.py (the embedded simulation's path through the bindings). A block's
// <actuatorLibrary> is loaded by the parser, as in the plugin (test/test_example_actuator.py).
//
// Input, tab-separated lines (text with \\, \t, \n, \r escaped):
//   joint <name> <problem>         the joint check's answer for <name> ("" = usable); unlisted
//                                  joints: "model has no joint '<name>'"
//   block <default namespace> <where>
//   tag <name> <text> <0|1 has children>
//   end                            -> one output line for the block
// Output: "ok\t<joint>\t<actuator>\t<mode>\t<namespace>\t<k=v,...>\t<k=v,...>\t<link torque>"
// (values %.17g; the torque after reset(0, 0) and update(0.001, 0.1, 0)) or "error\t<message>".
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "compliant_actuator_gazebo/compliant_joint.hpp"
#include "compliant_actuator_gazebo/plugin_block.hpp"

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) fields.push_back(field);
  if (!line.empty() && line.back() == '\t') fields.emplace_back();
  return fields;
}

std::string unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char c = text[++i];
    out += c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c;
  }
  return out;
}

std::string number(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

std::string pairs(const std::map<std::string, double>& values) {
  std::string out;
  for (const auto& [name, value] : values)
    out += (out.empty() ? "" : ",") + name + "=" + number(value);
  return out;
}

}  // namespace

int main() {
  std::map<std::string, std::string> joints;  // name -> the check's answer
  std::vector<compliant::BlockTag> tags;
  std::string default_namespace, where, line;
  int blocks = 0;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> f = split_tabs(line);
    if (f.empty()) continue;
    if (f[0] == "joint" && f.size() == 3) {
      joints[unescape(f[1])] = unescape(f[2]);
    } else if (f[0] == "block" && f.size() == 3) {
      tags.clear();
      default_namespace = unescape(f[1]);
      where = unescape(f[2]);
    } else if (f[0] == "tag" && f.size() == 4) {
      tags.push_back({unescape(f[1]), unescape(f[2]), f[3] == "1"});
    } else if (f[0] == "end") {
      ++blocks;
      try {
        // the stand-in for the plugin's check of the Gazebo model's joint
        const auto check = [&joints](const std::string& name) -> std::string {
          const auto found = joints.find(name);
          return found == joints.end() ? "model has no joint '" + name + "'" : found->second;
        };
        const compliant::PluginSettings s =
            compliant::parse_plugin_block(tags, default_namespace, check, where);
        auto core = std::make_unique<compliant::CompliantJoint>(s.actuator, s.params);
        core->reset(0.0, 0.0);
        const double torque = core->update(0.001, 0.1, 0.0);
        std::cout << "ok\t" << s.joint << '\t' << s.actuator_type << '\t' << s.mode << '\t'
                  << s.robot_namespace << '\t' << pairs(s.actuator_params) << '\t'
                  << pairs(s.joint_params) << '\t' << number(torque) << '\n';
      } catch (const compliant::PluginBlockError& error) {
        std::cout << "error\t" << error.what() << '\n';
      }
    } else {
      std::cerr << "plugin_block_check: bad input line: " << line << '\n';
      return 2;
    }
  }
  return blocks > 0 ? 0 : 2;
}
