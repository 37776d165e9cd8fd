// A user's own actuator (issue 20), written against template_actuator.hpp and built outside the
// package's core sources: a linear SEA with backlash. The spring engages only beyond a dead
// zone b of the deflection d = sat(q - theta1):
//   t1 = -k (d - b) for d > b,  0 for |d| <= b,  -k (d + b) for d < -b;  t2 = 0
//   stiffness k outside the dead zone, 0 inside;  energy k (|d| - b)^2 / 2 outside, 0 inside.
// CMakeLists.txt builds it (with the tests) as libcompliant_example_actuator.so; loading that
// library registers "backlash_sea" with the plugin tags k, backlash and max_deflection, and
// test/test_example_actuator.py runs it in a plugin block, the embedded simulation and
// plugin_block_check (the Gazebo plugin's parsing).
#include <string>

#include "compliant_actuator_gazebo/actuator.hpp"
#include "compliant_actuator_gazebo/actuator_registry.hpp"

namespace example {

// 1. Parameters with defaults: the plugin block's optional tags (registered below).
struct BacklashSeaParams {
  double k = 20.0;              ///< spring stiffness [N m/rad]
  double backlash = 0.05;       ///< half-width of the dead zone [rad]
  double max_deflection = 0.8;  ///< [rad]
};

class BacklashSea final : public compliant::Actuator {
 public:
  // 2. Validate in the constructor.
  explicit BacklashSea(const BacklashSeaParams& p = {}) : p_(p) {
    compliant::require_nonnegative("backlash_sea k", p.k);
    compliant::require_nonnegative("backlash_sea backlash", p.backlash);
    compliant::require_nonnegative("backlash_sea max_deflection", p.max_deflection, true);
  }
  std::string type() const override { return "backlash_sea"; }
  int motors() const override { return 1; }

  // 3. The spring law as a function of the deflection; saturate() handles max_deflection.
  compliant::SpringEval spring(double q, double theta1) const {
    return compliant::saturate(q - theta1, p_.max_deflection, [this](double d) {
      const double engaged = d > p_.backlash    ? d - p_.backlash
                             : d < -p_.backlash ? d + p_.backlash
                                                : 0.0;
      return compliant::SpringEval{p_.k * engaged, engaged != 0.0 ? p_.k : 0.0,
                                   0.5 * p_.k * engaged * engaged};
    });
  }
  compliant::SpringTorques torques(double q, double theta1, double) const override {
    return {-spring(q, theta1).force, 0.0};
  }
  double stiffness(double q, double theta1, double) const override {
    return spring(q, theta1).stiffness;
  }
  double energy(double q, double theta1, double) const override { return spring(q, theta1).energy; }
  // 4. The reference map and the preset's domain (no preset: a SEA).
  compliant::MotorReferences references(double equilibrium, double) const override {
    return {equilibrium, 0.0};
  }
  double check_preset(double preset) const override {
    compliant::require_finite("backlash_sea stiffness preset", preset);
    return preset;
  }
  double max_deflection() const override { return p_.max_deflection; }

 private:
  BacklashSeaParams p_;
};

}  // namespace example

// 5. Register it by name, with its plugin tags: <actuator>backlash_sea</actuator> <k>30</k> ...
COMPLIANT_REGISTER_ACTUATOR(example::BacklashSea, example::BacklashSeaParams, "backlash_sea",
                            {"k", &example::BacklashSeaParams::k},
                            {"backlash", &example::BacklashSeaParams::backlash},
                            {"max_deflection", &example::BacklashSeaParams::max_deflection})
