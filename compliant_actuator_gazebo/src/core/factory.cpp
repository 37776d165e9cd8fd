// Actuators and joint parameters by name (paper 003 §3.1.3 InitParams(); Fig. 6 panel B).
// One table per params struct maps each tag name to its field, so names, defaults and
// validation live in one place.
#include "compliant_actuator_gazebo/factory.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "compliant_actuator_gazebo/actuator_registry.hpp"
#include "compliant_actuator_gazebo/actuators.hpp"

namespace compliant {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct ActuatorEntry {
  std::string type;
  std::vector<std::string> names;
  ActuatorMaker make;
};

// The registry: the built-in models first, then the registered ones in the order they came.
// Function-local, so that a registration from another library's static initialiser finds it
// constructed; guarded, so that libraries loaded from several threads do not race.
struct Registry {
  std::mutex mutex;
  std::vector<ActuatorEntry> entries;
  std::vector<std::string> load_errors;  // of detail::register_at_load
};

template <class Model, class P>
ActuatorEntry builtin(const std::string& type, const FieldTable<P>& table) {
  std::vector<std::string> names;
  for (const auto& field : table) names.push_back(field.first);
  return {type, names, [type, table](const std::map<std::string, double>& m) {
            return std::shared_ptr<Actuator>(std::make_shared<Model>(fill_params(type, table, m)));
          }};
}

Registry& registry() {
  static Registry r;
  static const bool seeded = [] {  // tables here: no dependence on the order of static init
    const FieldTable<SeaParams> kSea = {{"k", &SeaParams::k},
                                        {"max_deflection", &SeaParams::max_deflection}};
    const FieldTable<QbMoveParams> kQbMove = {{"k1", &QbMoveParams::k1},
                                              {"a1", &QbMoveParams::a1},
                                              {"k2", &QbMoveParams::k2},
                                              {"a2", &QbMoveParams::a2},
                                              {"max_deflection", &QbMoveParams::max_deflection}};
    const FieldTable<BavsParams> kBavs = {{"a", &BavsParams::a},
                                          {"b", &BavsParams::b},
                                          {"k", &BavsParams::k},
                                          {"ke", &BavsParams::ke},
                                          {"max_deflection", &BavsParams::max_deflection}};
    const FieldTable<AwasParams> kAwas = {{"ks", &AwasParams::ks},
                                          {"lever_length", &AwasParams::lever_length},
                                          {"r_t", &AwasParams::r_t},
                                          {"max_deflection", &AwasParams::max_deflection}};
    r.entries = {builtin<Sea>("sea", kSea), builtin<QbMove>("qbmove", kQbMove),
                 builtin<Bavs>("bavs", kBavs), builtin<Awas>("awas", kAwas)};
    return true;
  }();
  (void)seeded;
  return r;
}

ActuatorEntry entry(const std::string& type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& e : r.entries) {
    if (e.type == type) return e;
  }
  std::vector<std::string> types;
  for (const auto& e : r.entries) types.push_back(e.type);
  throw std::invalid_argument("unknown actuator type '" + type + "' (known: " + join(types) + ")");
}

bool is_lower_identifier(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Joint parameters: the flat tag names of the plugin block mapped onto (nested) JointParams
// fields by setters.
using JointSetter = std::function<void(JointParams&, double)>;
std::vector<std::pair<std::string, JointSetter>> motor_setters(const std::string& prefix,
                                                               MotorParams JointParams::* motor) {
  auto m = [motor](double MotorParams::* f) {
    return JointSetter([motor, f](JointParams& p, double v) { (p.*motor).*f = v; });
  };
  auto fr = [motor](double FrictionParams::* f) {
    return JointSetter([motor, f](JointParams& p, double v) { (p.*motor).friction.*f = v; });
  };
  return {{prefix + "inertia", m(&MotorParams::inertia)},
          {prefix + "viscous", fr(&FrictionParams::viscous)},
          {prefix + "coulomb", fr(&FrictionParams::coulomb)},
          {prefix + "coulomb_velocity", fr(&FrictionParams::coulomb_velocity)},
          {prefix + "bristle_stiffness", fr(&FrictionParams::bristle_stiffness)},
          {prefix + "bristle_torque", fr(&FrictionParams::bristle_torque)},
          {prefix + "torque_limit", m(&MotorParams::torque_limit)},
          {prefix + "velocity_limit", m(&MotorParams::velocity_limit)},
          {prefix + "position_min", m(&MotorParams::position_min)},
          {prefix + "position_max", m(&MotorParams::position_max)}};
}

std::vector<std::pair<std::string, JointSetter>> pid_setters(const std::string& prefix,
                                                             PidGains JointParams::* pid,
                                                             bool integral_limit) {
  auto g = [pid](double PidGains::* f) {
    return JointSetter([pid, f](JointParams& p, double v) { (p.*pid).*f = v; });
  };
  std::vector<std::pair<std::string, JointSetter>> out = {
      {prefix + "p", g(&PidGains::p)},
      {prefix + "i", g(&PidGains::i)},
      {prefix + "d", g(&PidGains::d)},
      {prefix + "filter", g(&PidGains::derivative_filter)},
      {prefix + "output_limit", g(&PidGains::output_limit)}};
  if (integral_limit) out.push_back({prefix + "integral_limit", g(&PidGains::integral_limit)});
  return out;
}

const std::vector<std::pair<std::string, JointSetter>>& joint_setters() {
  static const auto setters = [] {
    std::vector<std::pair<std::string, JointSetter>> all;
    for (auto&& s : motor_setters("motor1_", &JointParams::motor1)) all.push_back(s);
    for (auto&& s : motor_setters("motor2_", &JointParams::motor2)) all.push_back(s);
    for (auto&& s : pid_setters("pid_", &JointParams::motor_pid, true)) all.push_back(s);
    for (auto&& s : pid_setters("link_pid_", &JointParams::link_pid, false)) all.push_back(s);
    all.push_back({"max_substep", [](JointParams& p, double v) { p.max_substep = v; }});
    return all;
  }();
  return setters;
}

}  // namespace

std::vector<std::string> actuator_types() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> types;
  for (const auto& e : r.entries) types.push_back(e.type);
  return types;
}

void register_actuator(const std::string& type, const std::vector<std::string>& parameter_names,
                       ActuatorMaker make) {
  const std::string who = "actuator type '" + type + "'";
  if (!is_lower_identifier(type)) {
    throw std::invalid_argument("cannot register " + who +
                                ": a type name must match [a-z][a-z0-9_]*");
  }
  if (!make) throw std::invalid_argument("cannot register " + who + ": no factory function");
  const std::vector<std::string> joint_names = joint_parameter_names();
  for (std::size_t i = 0; i < parameter_names.size(); ++i) {
    const std::string& name = parameter_names[i];
    const std::string why =
        !is_lower_identifier(name) || name == "joint" || name == "actuator"
            ? "must match [a-z][a-z0-9_]* and not be 'joint' or 'actuator'"
        : std::find(joint_names.begin(), joint_names.end(), name) != joint_names.end()
            ? "is a joint parameter"
        : std::find(parameter_names.begin(), parameter_names.begin() + i, name) !=
                parameter_names.begin() + i
            ? "is given twice"
            : "";
    if (!why.empty()) {
      throw std::invalid_argument("cannot register " + who + ": parameter name '" + name + "' " +
                                  why);
    }
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& e : r.entries) {
    if (e.type == type) {
      throw std::invalid_argument("cannot register " + who + ": already registered");
    }
  }
  r.entries.push_back({type, parameter_names, std::move(make)});
}

namespace detail {
bool register_at_load(const std::function<void()>& registration) noexcept {
  try {
    registration();
    return true;
  } catch (const std::exception& error) {
    try {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      r.load_errors.push_back(error.what());
    } catch (...) {
    }
    return false;
  }
}
}  // namespace detail

std::vector<std::string> load_actuator_library(const std::string& path) {
  static std::mutex loading;  // one library at a time: its errors and types are its own
  std::lock_guard<std::mutex> lock(loading);
  const std::vector<std::string> before = actuator_types();
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mutex);
    r.load_errors.clear();
  }
  if (path.empty()) throw std::invalid_argument("cannot load actuator library '': empty path");
  // Never closed: the registered factories and the actuators they build live in it.
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char* why = dlerror();
    throw std::invalid_argument("cannot load actuator library '" + path +
                                "': " + (why ? why : "unknown dlopen error"));
  }
  std::vector<std::string> errors;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mutex);
    errors.swap(r.load_errors);
  }
  if (!errors.empty()) {
    throw std::invalid_argument("actuator library '" + path + "': " + join(errors));
  }
  const std::vector<std::string> after = actuator_types();
  return std::vector<std::string>(after.begin() + static_cast<long>(before.size()), after.end());
}

std::vector<std::string> actuator_parameter_names(const std::string& type) {
  return entry(type).names;
}

std::vector<std::string> joint_parameter_names() {
  std::vector<std::string> names;
  for (const auto& s : joint_setters()) names.push_back(s.first);
  return names;
}

std::shared_ptr<Actuator> make_actuator(const std::string& type,
                                        const std::map<std::string, double>& params) {
  return entry(type).make(params);
}

JointParams make_joint_params(int mode, const std::map<std::string, double>& params) {
  JointParams p;
  p.mode = mode_from_int(mode);
  for (const auto& [name, value] : params) {
    const JointSetter* setter = nullptr;
    for (const auto& s : joint_setters()) {
      if (s.first == name) setter = &s.second;
    }
    if (setter == nullptr) {
      throw std::invalid_argument("unknown joint parameter '" + name +
                                  "' (known: " + join(joint_parameter_names()) + ")");
    }
    // End stops may be infinite; every other value must be finite.
    const bool stop = name.find("position_m") != std::string::npos;
    if (std::isnan(value) || (!stop && !std::isfinite(value))) {
      throw std::invalid_argument("joint parameter '" + name + "' must be finite, got " +
                                  std::to_string(value));
    }
    (*setter)(p, value);
  }
  validate(p.motor1, "motor1");
  validate(p.motor2, "motor2");
  validate(p.motor_pid, "pid");
  validate(p.link_pid, "link_pid");
  require_nonnegative("max_substep", p.max_substep, true);
  return p;
}

}  // namespace compliant
