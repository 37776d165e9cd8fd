// The registry of actuator types by name (issue 20): what make_actuator, the plugin block
// (<actuator>NAME</actuator>), the embedded simulation and the Gazebo plugin look a type up in.
// The built-in models (sea, qbmove, bavs, awas) are its first entries (factory.cpp); a user's
// own model, written against template_actuator.hpp, is added from outside the package with
//
//   COMPLIANT_REGISTER_ACTUATOR(MyActuator, MyParams, "my_actuator",
//                               {"k", &MyParams::k}, {"max_deflection", &MyParams::max_deflection})
//
// in a .cpp compiled into a shared library linked against compliant_actuator_core. Loading that
// library registers the type: load_actuator_library(path) (C++, or cag.load_actuator_library in
// Python), or the plugin block's <actuatorLibrary>path</actuatorLibrary>, which both simulators
// read through parse_plugin_block. See test/example_actuator/ and the README, "Your own
// actuator".
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compliant_actuator_gazebo/actuator.hpp"

namespace compliant {

/// Builds an actuator from {parameter name: value}; std::invalid_argument naming the item for
/// an unknown name, a non-finite or an out-of-domain value. Missing parameters take defaults.
using ActuatorMaker =
    std::function<std::shared_ptr<Actuator>(const std::map<std::string, double>& params)>;

/// Adds an actuator type. std::invalid_argument when the type is already registered, when the
/// type or a parameter name is not [a-z][a-z0-9_]* (the plugin block's own tags are camelCase
/// or "joint"/"actuator"), or when a parameter name is a joint parameter (motor1_inertia, ...).
void register_actuator(const std::string& type, const std::vector<std::string>& parameter_names,
                       ActuatorMaker make);

/// Loads a shared library whose static initialisers register actuator types
/// (COMPLIANT_REGISTER_ACTUATOR) and returns the types it added (none when it was loaded
/// before). `path` as dlopen takes it: with a '/' a file, without one a name searched on
/// LD_LIBRARY_PATH (catkin's devel/lib and install lib after sourcing the workspace).
/// std::invalid_argument, one line, when it cannot be loaded or a registration fails.
std::vector<std::string> load_actuator_library(const std::string& path);

/// A params struct of doubles described by (name, field) pairs: the plugin tags of a model.
template <class P>
using FieldTable = std::vector<std::pair<std::string, double P::*>>;

/// The defaults P{} with the named fields set; an unknown name or a non-finite value is
/// std::invalid_argument ("unknown <who> parameter 'x' (known: ...)").
template <class P>
P fill_params(const std::string& who, const FieldTable<P>& table,
              const std::map<std::string, double>& params) {
  P p{};
  for (const auto& [name, value] : params) {
    const auto found = std::find_if(table.begin(), table.end(),
                                    [&name](const auto& entry) { return entry.first == name; });
    if (found == table.end()) {
      std::string known;
      for (const auto& entry : table) known += (known.empty() ? "" : ", ") + entry.first;
      throw std::invalid_argument("unknown " + who + " parameter '" + name + "' (known: " + known +
                                  ")");
    }
    if (!std::isfinite(value)) {
      throw std::invalid_argument(who + " parameter '" + name + "' must be finite, got " +
                                  std::to_string(value));
    }
    p.*(found->second) = value;
  }
  return p;
}

/// Registers Model (constructed from a Params, which validates) under `type` with the plugin
/// tags of `table`.
template <class Model, class Params>
void register_actuator(const std::string& type, const FieldTable<Params>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.first);
  register_actuator(type, names, [type, table](const std::map<std::string, double>& params) {
    return std::shared_ptr<Actuator>(std::make_shared<Model>(fill_params(type, table, params)));
  });
}

namespace detail {
/// Runs a registration from a static initialiser: an error is kept (an exception there would
/// terminate the process) and raised by load_actuator_library for the library being loaded.
/// (A library linked into a program, not loaded by load_actuator_library, has its failed
/// registrations dropped: its type is then simply unknown.)
bool register_at_load(const std::function<void()>& registration) noexcept;
}  // namespace detail

}  // namespace compliant

#define COMPLIANT_REGISTRY_CONCAT2(a, b) a##b
#define COMPLIANT_REGISTRY_CONCAT(a, b) COMPLIANT_REGISTRY_CONCAT2(a, b)
/// At namespace scope in a .cpp: registers Model (constructor from Params) as `type` with the
/// (tag name, &Params::field) pairs that follow, when the library or program is loaded.
#define COMPLIANT_REGISTER_ACTUATOR(Model, Params, type, ...)                                    \
  namespace {                                                                                    \
  const bool COMPLIANT_REGISTRY_CONCAT(compliant_actuator_registered_,                           \
                                       __LINE__) = ::compliant::detail::register_at_load([] {    \
    ::compliant::register_actuator<Model, Params>(type,                                          \
                                                  ::compliant::FieldTable<Params>{__VA_ARGS__}); \
  });                                                                                            \
  }
