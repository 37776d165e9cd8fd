// Joint trajectories as panda_sim2real's simulator executes them (trajectory.py, the
// JointTrajectoryController semantics): validation into the canonical joint order, cubic Hermite
// sampling between knots, and the executor that turns commanded trajectories into a reference.
// The same time parametrisation as panda_sim, so pairs recorded in Gazebo and in PyBullet follow
// the same reference (test_gazebo_core.py compares them through the bindings).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace panda_gazebo {

using Vector = std::vector<double>;

// Relative slack on the velocity limits (trajectory.py LIMIT_TOLERANCE).
constexpr double kLimitTolerance = 1.001;

struct JointLimits {
  std::vector<std::string> joint_names;
  Vector position_min, position_max, velocity, effort;
  size_t dof() const { return joint_names.size(); }
  // std::invalid_argument naming the field unless every vector has one finite entry per joint
  // and position_min < position_max.
  void check() const;
};

// A rejected command: `reason` is one of malformed, non_finite, timing, bounds (the categories
// of sim2real_checks' Guard, one throttled log line per topic and reason).
class TrajectoryRejected : public std::runtime_error {
 public:
  TrajectoryRejected(const std::string& what, std::string reason)
      : std::runtime_error(what), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// Knots in canonical joint order; `times` relative to `start` (absolute; none: on receipt).
struct PlannedTrajectory {
  Vector times;
  std::vector<Vector> positions, velocities;
  std::optional<double> start;

  double duration() const { return times.back(); }
  // Position and velocity `t` seconds after the start: cubic Hermite between knots, held at the
  // first / last knot (at rest) outside [times.front(), times.back()].
  void sample(double t, Vector& position, Vector& velocity) const;
};

// Checks a command and returns it in the limits' joint order, or throws TrajectoryRejected:
// unknown, missing or duplicate names, wrong sizes, NaN/Inf, times not non-negative and strictly
// increasing, positions outside the limits, velocities above them (with kLimitTolerance).
// Empty `velocities` rows (all of them) are estimated from the positions (numpy.gradient) and
// are zero at the first and last knot.
PlannedTrajectory validate_trajectory(const std::vector<std::string>& joint_names,
                                      const Vector& times, const std::vector<Vector>& positions,
                                      const std::vector<Vector>& velocities,
                                      const JointLimits& limits,
                                      std::optional<double> start = std::nullopt);

// Commanded trajectories -> a reference (position, velocity) at any time (trajectory.py
// TrajectoryExecutor): a newer trajectory replaces the older at its start; a first knot after
// t = 0 is reached from the reference at the start.
class TrajectoryExecutor {
 public:
  explicit TrajectoryExecutor(Vector hold) : hold_(std::move(hold)) {}
  // Drops every trajectory and holds `position`.
  void hold(const Vector& position);
  // Holds the reference position at `now` (a rejected command).
  void stop(double now);
  // `trajectory` with its absolute start (`now` if none or <= 0) and the reference at the start
  // prepended when its first knot is after t = 0.
  PlannedTrajectory prepare(const PlannedTrajectory& trajectory, double now) const;
  // prepare() and schedule: active at once if its start has come, else pending.
  PlannedTrajectory command(const PlannedTrajectory& trajectory, double now);
  // The reference at `t`; a pending trajectory whose start has come becomes active.
  void reference(double t, Vector& position, Vector& velocity);
  // The reference at `t` without activating a pending trajectory.
  void peek(double t, Vector& position, Vector& velocity) const;

 private:
  const PlannedTrajectory* plan_at(double t) const;
  Vector hold_;
  std::optional<PlannedTrajectory> active_, pending_;
};

}  // namespace panda_gazebo
