// Template: how to add your own compliant actuator (paper 003 §3.1.3, "Customizable functions").
//
// The release's template asked users to derive a Gazebo plugin and fill in tauFElastic(),
// eqPres2Refs() and InitParams(). Here a model is a small pure class: derive from
// compliant::Actuator, write the spring law once as a SpringEval (force, stiffness, energy as
// functions of the deflection), let compliant::saturate() handle max_deflection, and pass the
// model to CompliantJoint -- motors, PID, modes 0-6 and the ROS/Gazebo/PyBullet front ends come for
// free once the model is registered by name (step 6, actuator_registry.hpp). This header is
// compiled into the Python module as cag.TemplateActuator and checked by test/test_core_models.py
// (analytic stiffness and energy against finite differences), so it cannot rot.
//
// The example: an SEA with a hardening cubic spring, t1 = -(k d + k3 d^3), d = sat(q - theta1).
#pragma once

#include <algorithm>
#include <string>

#include "compliant_actuator_gazebo/actuator.hpp"

namespace compliant {

// 1. Parameters with defaults (these become the plugin block's optional tags, see step 6).
struct TemplateActuatorParams {
  double k = 10.0;              ///< linear stiffness [N m/rad]
  double k3 = 50.0;             ///< cubic stiffness [N m/rad^3]
  double max_deflection = 0.8;  ///< [rad]
};

class TemplateActuator final : public Actuator {
 public:
  // 2. Validate in the constructor: bad parameters are a clear error, never a NaN later.
  explicit TemplateActuator(const TemplateActuatorParams& p = {}) : p_(p) {
    require_nonnegative("template k", p.k);
    require_nonnegative("template k3", p.k3);
    require_nonnegative("template max_deflection", p.max_deflection, true);
  }
  std::string type() const override { return "template"; }
  int motors() const override { return 1; }

  // 3. The spring law (tauFElastic): force, stiffness and energy of the deflection.
  SpringEval spring(double q, double theta1) const {
    return saturate(q - theta1, p_.max_deflection, [this](double d) {
      return SpringEval{p_.k * d + p_.k3 * d * d * d,                        // U'(d)
                        p_.k + 3.0 * p_.k3 * d * d,                          // U''(d)
                        0.5 * p_.k * d * d + 0.25 * p_.k3 * d * d * d * d};  // U(d)
    });
  }
  // With d = q - theta1, tau = -U'(d), sigma = U''(d), E = U(d). t2 stays exactly 0.
  SpringTorques torques(double q, double theta1, double) const override {
    return {-spring(q, theta1).force, 0.0};
  }
  double stiffness(double q, double theta1, double) const override {
    return spring(q, theta1).stiffness;
  }
  double energy(double q, double theta1, double) const override { return spring(q, theta1).energy; }
  // 4. The reference map (eqPres2Refs) and the preset's domain (unused here).
  MotorReferences references(double equilibrium, double) const override {
    return {equilibrium, 0.0};
  }
  double check_preset(double preset) const override {
    require_finite("template stiffness preset", preset);
    return preset;
  }
  double max_deflection() const override { return p_.max_deflection; }
  const TemplateActuatorParams& params() const { return p_; }

 private:
  TemplateActuatorParams p_;
};

// 5. Use it: CompliantJoint joint(std::make_shared<TemplateActuator>(), JointParams{});
//    joint.set_input(Input::EquilibriumPosition, 0.5); double tau = joint.update(t, q, qd);
//
// 6. Give it a name for the plugin block, the embedded simulation and the Gazebo plugin, without
//    editing this package: in a .cpp of your own package (not in a header),
//      #include "compliant_actuator_gazebo/actuator_registry.hpp"
//      COMPLIANT_REGISTER_ACTUATOR(MyActuator, MyParams, "my_actuator",
//                                  {"k", &MyParams::k}, {"k3", &MyParams::k3},
//                                  {"max_deflection", &MyParams::max_deflection})
//    build it as a SHARED library linked against compliant_actuator_core, and name the library
//    in the block: <actuator>my_actuator</actuator> <actuatorLibrary>libmy.so</actuatorLibrary>
//    (or cag.load_actuator_library("libmy.so") in Python). A complete example:
//    test/example_actuator/backlash_sea.cpp. (TemplateActuator itself is not registered.)

}  // namespace compliant
