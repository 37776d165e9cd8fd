// core_step_bench: time of CompliantJoint::update per joint and call (issue target <= 1 us) for
// every built-in actuator in modes 3 (kinematic motors) and 6 (motor dynamics + PID) at a 1 kHz
// world step (one motor sub-step per call with the default max_substep). The link follows a
// 1 Hz sine; inputs are set once. Calls are timed in batches of kBatch with std::chrono::
// steady_clock; the result is the median over batches of the mean ns per call. Prints one JSON
// object: {"cpp_ns_per_step": {"sea_mode3": ..., ...}, "calls": ..., "batch": ...}.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "compliant_actuator_gazebo/compliant_joint.hpp"
#include "compliant_actuator_gazebo/factory.hpp"

namespace {

constexpr int kBatch = 1000;
constexpr int kBatches = 200;
constexpr double kDt = 1e-3;

// A typical mid-range stiffness preset of each model (paper 003 §4.1 soft presets).
double preset_of(const std::string& type) {
  if (type == "qbmove") return 0.2;
  if (type == "bavs") return 0.1;
  if (type == "awas") return 0.02;
  return 0.0;
}

double median_ns_per_call(const std::string& type, int mode) {
  using namespace compliant;
  CompliantJoint joint(make_actuator(type, {}), make_joint_params(mode, {}));
  joint.set_input(Input::StiffnessPreset, preset_of(type));
  joint.set_input(Input::EquilibriumPosition, 0.3);
  joint.reset(0.0, 0.0);
  volatile double sink = 0.0;
  std::vector<double> per_call;
  per_call.reserve(kBatches);
  long k = 0;
  for (int warm = 0; warm < 10 * kBatch; ++warm, ++k) {
    const double t = k * kDt;
    sink = sink + joint.update(t, 0.3 * std::sin(2.0 * M_PI * t), 0.0);
  }
  for (int b = 0; b < kBatches; ++b) {
    // Link positions precomputed so the batch times the joint only.
    double q[kBatch];
    for (int i = 0; i < kBatch; ++i) q[i] = 0.3 * std::sin(2.0 * M_PI * (k + i) * kDt);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i, ++k) sink = sink + joint.update(k * kDt, q[i], 0.0);
    const auto stop = std::chrono::steady_clock::now();
    per_call.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / kBatch);
  }
  std::nth_element(per_call.begin(), per_call.begin() + kBatches / 2, per_call.end());
  return per_call[kBatches / 2];
}

}  // namespace

int main() {
  std::string json = "{\"cpp_ns_per_step\": {";
  bool first = true;
  for (const std::string& type : compliant::actuator_types()) {
    for (int mode : {3, 6}) {
      char entry[128];
      std::snprintf(entry, sizeof entry, "%s\"%s_mode%d\": %.1f", first ? "" : ", ", type.c_str(),
                    mode, median_ns_per_call(type, mode));
      json += entry;
      first = false;
    }
  }
  json += "}, \"calls\": " + std::to_string(kBatch * kBatches) +
          ", \"batch\": " + std::to_string(kBatch) + ", \"world_step_s\": 0.001}";
  std::printf("%s\n", json.c_str());
  return 0;
}
