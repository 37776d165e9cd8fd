// Actuators and joint parameters by name (paper 003 §3.1.3 InitParams(); Fig. 6 panel B).
// One table per params struct maps each tag name to its field, so names, defaults and
// validation live in one place.
#include "compliant_actuator_gazebo/factory.hpp"

#include <cmath>
#include <functional>
#include <stdexcept>
#include <utility>

#include "compliant_actuator_gazebo/actuators.hpp"

namespace compliant {
namespace {

template <class P>
using FieldTable = std::vector<std::pair<std::string, double P::*>>;

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

template <class P>
std::vector<std::string> names_of(const FieldTable<P>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.first);
  return names;
}

// Writes the map into p's fields; unknown names and non-finite values are errors.
template <class P>
P fill(const std::string& who, const FieldTable<P>& table,
       const std::map<std::string, double>& params) {
  P p{};
  for (const auto& [name, value] : params) {
    bool found = false;
    for (const auto& [field_name, field] : table) {
      if (field_name == name) {
        if (!std::isfinite(value)) {
          throw std::invalid_argument(who + " parameter '" + name + "' must be finite, got " +
                                      std::to_string(value));
        }
        p.*field = value;
        found = true;
        break;
      }
    }
    if (!found) {
      throw std::invalid_argument("unknown " + who + " parameter '" + name + "' (known: " +
                                  join(names_of(table)) + ")");
    }
  }
  return p;
}

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

struct ActuatorEntry {
  std::string type;
  std::vector<std::string> names;
  std::function<std::shared_ptr<Actuator>(const std::map<std::string, double>&)> make;
};

const std::vector<ActuatorEntry>& registry() {
  static const std::vector<ActuatorEntry> entries = {
      {"sea", names_of(kSea),
       [](const auto& m) { return std::make_shared<Sea>(fill("sea", kSea, m)); }},
      {"qbmove", names_of(kQbMove),
       [](const auto& m) { return std::make_shared<QbMove>(fill("qbmove", kQbMove, m)); }},
      {"bavs", names_of(kBavs),
       [](const auto& m) { return std::make_shared<Bavs>(fill("bavs", kBavs, m)); }},
      {"awas", names_of(kAwas),
       [](const auto& m) { return std::make_shared<Awas>(fill("awas", kAwas, m)); }},
  };
  return entries;
}

const ActuatorEntry& entry(const std::string& type) {
  for (const auto& e : registry()) {
    if (e.type == type) return e;
  }
  throw std::invalid_argument("unknown actuator type '" + type + "' (known: " +
                              join(actuator_types()) + ")");
}

// Joint parameters: the flat tag names of the plugin block mapped onto (nested) JointParams
// fields by setters.
using JointSetter = std::function<void(JointParams&, double)>;
std::vector<std::pair<std::string, JointSetter>> motor_setters(const std::string& prefix,
                                                               MotorParams JointParams::*motor) {
  auto m = [motor](double MotorParams::*f) {
    return JointSetter([motor, f](JointParams& p, double v) { (p.*motor).*f = v; });
  };
  auto fr = [motor](double FrictionParams::*f) {
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
                                                             PidGains JointParams::*pid,
                                                             bool integral_limit) {
  auto g = [pid](double PidGains::*f) {
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
  std::vector<std::string> types;
  for (const auto& e : registry()) types.push_back(e.type);
  return types;
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
      throw std::invalid_argument("unknown joint parameter '" + name + "' (known: " +
                                  join(joint_parameter_names()) + ")");
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
