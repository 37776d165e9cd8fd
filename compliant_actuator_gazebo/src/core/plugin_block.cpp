// One plugin block -> PluginSettings (plugin_block.hpp): the checks and the one-line messages
// shared by the Gazebo plugin and description.py.
#include "compliant_actuator_gazebo/plugin_block.hpp"

#include <locale.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "compliant_actuator_gazebo/factory.hpp"

namespace compliant {
namespace {

const char* const kRequired[] = {"joint", "actuator", "operationMode"};
const char* const kNamespaceTag = "robotNamespace";
const char* const kLibraryTag = "actuatorLibrary";

bool reserved(const std::string& tag) {
  return tag == kNamespaceTag || tag == kLibraryTag ||
         std::find(std::begin(kRequired), std::end(kRequired), tag) != std::end(kRequired);
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// The text as Python's repr() writes a str of printable ASCII: 'soft', "it's".
std::string quoted(const std::string& text) {
  const char quote =
      text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : text) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + quote;
}

// A value as Python's f"{value:g}" writes it.
std::string format_g(double value) {
  if (std::isnan(value)) return "nan";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// The factory's message on one line.
std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (is_space(c)) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      out += c;
      space = false;
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// <operationMode>: [+-]digits with a value in 0..6; -1 for anything else.
int parse_mode(const std::string& text) {
  std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  if (i == text.size()) return -1;
  long value = 0;
  for (; i < text.size(); ++i) {
    if (!is_digit(text[i])) return -1;
    value = std::min(value * 10 + (text[i] - '0'), 1000L);
  }
  if (text[0] == '-') value = -value;
  return value >= 0 && value <= 6 ? static_cast<int>(value) : -1;
}

// make(values); a factory error names the tag that fails on its own, in document order (or
// gives the factory's message alone when only the combination fails).
template <class Make>
auto build(const Make& make, const std::vector<std::pair<std::string, double>>& values,
           const std::string& where) {
  std::string message;
  try {
    return make(std::map<std::string, double>(values.begin(), values.end()));
  } catch (const std::invalid_argument& error) {
    message = one_line(error.what());
  }
  for (const auto& [tag, value] : values) {
    try {
      make(std::map<std::string, double>{{tag, value}});
    } catch (const std::invalid_argument& error) {
      throw PluginBlockError(where + ": <" + tag + ">" + format_g(value) + "</" + tag +
                             ">: " + one_line(error.what()));
    }
  }
  throw PluginBlockError(where + ": " + message);
}

}  // namespace

std::string trim_text(const std::string& text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && is_space(text[begin])) ++begin;
  while (end > begin && is_space(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

bool is_ros_namespace(const std::string& name) {
  bool segment_start = true;
  for (const char c : name) {
    if (segment_start) {
      if (!is_alpha(c)) return false;
      segment_start = false;
    } else if (c == '/') {
      segment_start = true;
    } else if (!is_alpha(c) && !is_digit(c) && c != '_') {
      return false;
    }
  }
  return !segment_start;
}

bool parse_number(const std::string& input, double* value) {
  const std::string text = trim_text(input);
  std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  std::string word = text.substr(i);
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (word != "inf" && word != "infinity" && word != "nan") {  // [digits][.digits][e[+-]digits]
    std::size_t digits = 0;
    while (i < text.size() && is_digit(text[i])) ++i, ++digits;
    if (i < text.size() && text[i] == '.') {
      ++i;
      while (i < text.size() && is_digit(text[i])) ++i, ++digits;
    }
    if (digits == 0) return false;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
      ++i;
      if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
      if (i == text.size()) return false;
      while (i < text.size() && is_digit(text[i])) ++i;
    }
    if (i != text.size()) return false;
  }
  // strtod in the "C" locale: the decimal point is '.' whatever the process's locale.
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  char* end = nullptr;
  *value = strtod_l(text.c_str(), &end, c_locale);
  return end == text.c_str() + text.size();
}

PluginSettings parse_plugin_block(const std::vector<BlockTag>& tags,
                                  const std::string& default_namespace,
                                  const JointCheck& check_joint, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> values;  // document order
  std::map<std::string, std::string> by_name;
  for (const BlockTag& tag : tags) {
    if (by_name.count(tag.name))
      throw PluginBlockError(where + ": <" + tag.name + "> is given twice");
    if (tag.has_children)
      throw PluginBlockError(where + ": <" + tag.name + "> must hold a value, not elements");
    values.emplace_back(tag.name, trim_text(tag.text));
    by_name[tag.name] = values.back().second;
  }
  for (const char* required : kRequired) {
    if (by_name[required].empty())
      throw PluginBlockError(where + ": missing required element <" + required + ">");
  }
  PluginSettings s;
  s.joint = by_name["joint"];
  s.actuator_type = by_name["actuator"];
  const std::string at = where + " (joint " + quoted(s.joint) + ")";
  if (check_joint) {
    const std::string problem = check_joint(s.joint);
    if (!problem.empty()) throw PluginBlockError(at + ": " + problem);
  }
  if (by_name.count(kLibraryTag)) {  // a user's actuator types (actuator_registry.hpp)
    const std::string& library = by_name[kLibraryTag];
    if (library.empty()) throw PluginBlockError(at + ": <" + kLibraryTag + "> is empty");
    try {
      load_actuator_library(library);
    } catch (const std::invalid_argument& error) {
      throw PluginBlockError(at + ": <" + kLibraryTag + ">: " + one_line(error.what()));
    }
  }
  const std::vector<std::string> types = actuator_types();
  if (std::find(types.begin(), types.end(), s.actuator_type) == types.end()) {
    throw PluginBlockError(at + ": unknown actuator " + quoted(s.actuator_type) +
                           " (known: " + join(types) + ")");
  }
  s.mode = parse_mode(by_name["operationMode"]);
  if (s.mode < 0) {
    throw PluginBlockError(at + ": <operationMode> must be an integer 0..6, got " +
                           quoted(by_name["operationMode"]));
  }
  std::string ns = by_name.count(kNamespaceTag) ? by_name[kNamespaceTag] : "";
  ns.erase(0, std::min(ns.find_first_not_of('/'), ns.size()));
  ns.erase(ns.find_last_not_of('/') + 1);
  s.robot_namespace = ns.empty() ? default_namespace : ns;
  if (!is_ros_namespace(s.robot_namespace)) {
    throw PluginBlockError(at + ": <" + kNamespaceTag + "> " + quoted(s.robot_namespace) +
                           " is not a valid ROS name");
  }

  const std::vector<std::string> own = actuator_parameter_names(s.actuator_type);
  std::set<std::string> other_models;
  for (const auto& type : types) {
    for (const auto& name : actuator_parameter_names(type)) {
      if (std::find(own.begin(), own.end(), name) == own.end()) other_models.insert(name);
    }
  }
  std::vector<std::pair<std::string, double>> actuator_values, joint_values;
  for (const auto& [tag, text] : values) {
    if (reserved(tag)) continue;
    double number = 0.0;
    if (!parse_number(text, &number))
      throw PluginBlockError(at + ": parameter <" + tag + "> is not a number: " + quoted(text));
    if (other_models.count(tag)) {
      std::vector<std::string> sorted = own;
      std::sort(sorted.begin(), sorted.end());
      throw PluginBlockError(at + ": <" + tag + "> is not a parameter of the " + s.actuator_type +
                             " model (its parameters: " + join(sorted) + ")");
    }
    const bool is_actuator = std::find(own.begin(), own.end(), tag) != own.end();
    (is_actuator ? actuator_values : joint_values).emplace_back(tag, number);
  }
  s.actuator_params.insert(actuator_values.begin(), actuator_values.end());
  s.joint_params.insert(joint_values.begin(), joint_values.end());
  const std::string type = s.actuator_type;
  s.actuator = build([&](const auto& p) { return make_actuator(type, p); }, actuator_values, at);
  const int mode = s.mode;
  s.params = build([&](const auto& p) { return make_joint_params(mode, p); }, joint_values, at);
  return s;
}

}  // namespace compliant
