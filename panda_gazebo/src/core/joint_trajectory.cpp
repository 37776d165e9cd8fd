#include "panda_gazebo/joint_trajectory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace panda_gazebo {
namespace {

std::string format(const char* fmt, double a, double b = 0.0, double c = 0.0) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), fmt, a, b, c);
  return buffer;
}

std::string join(const std::vector<std::string>& names) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << "'" << names[i] << "'";
  out << "]";
  return out.str();
}

bool finite(const Vector& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// Rows of one per joint, or none at all (std::nullopt); anything else is malformed.
std::optional<std::vector<Vector>> matrix(const std::vector<Vector>& rows, size_t points,
                                          size_t dof, const char* what) {
  if (std::all_of(rows.begin(), rows.end(), [](const Vector& r) { return r.empty(); }))
    return std::nullopt;
  if (rows.size() != points ||
      std::any_of(rows.begin(), rows.end(), [dof](const Vector& r) { return r.size() != dof; }))
    throw TrajectoryRejected("every point needs " + std::to_string(dof) + " " + what + " (or none)",
                             "malformed");
  return rows;
}

}  // namespace

void JointLimits::check() const {
  const size_t n = dof();
  if (n == 0) throw std::invalid_argument("joint_names is empty");
  const std::pair<const char*, const Vector*> fields[] = {{"position_min", &position_min},
                                                          {"position_max", &position_max},
                                                          {"velocity", &velocity},
                                                          {"effort", &effort}};
  for (const auto& [name, values] : fields) {
    if (values->size() != n || !finite(*values))
      throw std::invalid_argument(std::string(name) + " must hold " + std::to_string(n) +
                                  " finite numbers");
  }
  for (size_t j = 0; j < n; ++j)
    if (!(position_min[j] < position_max[j]))
      throw std::invalid_argument("position_min must be below position_max (" + joint_names[j] +
                                  ")");
}

void PlannedTrajectory::sample(double t, Vector& position, Vector& velocity) const {
  const size_t dof = positions.front().size();
  velocity.assign(dof, 0.0);
  if (t <= times.front()) {
    position = positions.front();
    return;
  }
  if (t >= times.back()) {
    position = positions.back();
    return;
  }
  const size_t k = std::upper_bound(times.begin(), times.end(), t) - times.begin() - 1;
  const double h = times[k + 1] - times[k];
  const double s = (t - times[k]) / h, s2 = s * s, s3 = s2 * s;
  position.assign(dof, 0.0);
  for (size_t j = 0; j < dof; ++j) {
    const double p0 = positions[k][j], p1 = positions[k + 1][j];
    const double m0 = velocities[k][j] * h, m1 = velocities[k + 1][j] * h;
    position[j] = (2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * m0 + (-2 * s3 + 3 * s2) * p1 +
                  (s3 - s2) * m1;
    velocity[j] = ((6 * s2 - 6 * s) * p0 + (3 * s2 - 4 * s + 1) * m0 + (-6 * s2 + 6 * s) * p1 +
                   (3 * s2 - 2 * s) * m1) /
                  h;
  }
}

PlannedTrajectory validate_trajectory(const std::vector<std::string>& names, const Vector& times,
                                      const std::vector<Vector>& positions,
                                      const std::vector<Vector>& velocities,
                                      const JointLimits& limits, std::optional<double> start) {
  const std::vector<std::string>& expected = limits.joint_names;
  const size_t dof = expected.size();
  if (names.size() != dof)
    throw TrajectoryRejected("expected " + std::to_string(dof) + " joints, got " +
                                 std::to_string(names.size()) + ": " + join(names),
                             "malformed");
  std::vector<std::string> unknown;
  for (const auto& n : names)
    if (std::find(expected.begin(), expected.end(), n) == expected.end()) unknown.push_back(n);
  if (!unknown.empty())
    throw TrajectoryRejected(
        "unknown joint names " + join(unknown) + "; expected " + join(expected), "malformed");
  std::vector<std::string> sorted(names);
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw TrajectoryRejected("duplicate joint names in " + join(names), "malformed");
  if (times.empty()) throw TrajectoryRejected("trajectory has no points", "malformed");
  std::vector<size_t> order(dof);
  for (size_t j = 0; j < dof; ++j)
    order[j] = std::find(names.begin(), names.end(), expected[j]) - names.begin();
  const size_t n = times.size();
  const auto pos = matrix(positions, n, dof, "positions");
  if (!pos) throw TrajectoryRejected("every point needs one position per joint", "malformed");
  const auto vel = matrix(velocities, n, dof, "velocities");
  bool ok = finite(times);
  for (const auto& row : *pos) ok = ok && finite(row);
  if (vel)
    for (const auto& row : *vel) ok = ok && finite(row);
  if (!ok) throw TrajectoryRejected("trajectory contains NaN or Inf", "non_finite");
  if (times[0] < 0)
    throw TrajectoryRejected("time_from_start must be non-negative and strictly increasing",
                             "timing");
  for (size_t k = 1; k < n; ++k)
    if (!(times[k] - times[k - 1] > 0))
      throw TrajectoryRejected("time_from_start must be non-negative and strictly increasing",
                               "timing");
  PlannedTrajectory out{times, std::vector<Vector>(n, Vector(dof)),
                        std::vector<Vector>(n, Vector(dof, 0.0)), start};
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < dof; ++j) out.positions[k][j] = (*pos)[k][order[j]];
  if (vel) {
    for (size_t k = 0; k < n; ++k)
      for (size_t j = 0; j < dof; ++j) out.velocities[k][j] = (*vel)[k][order[j]];
  } else {
    // numpy.gradient's second-order interior differences on uneven spacing; the ends at rest
    for (size_t k = 1; k + 1 < n; ++k) {
      const double hs = times[k] - times[k - 1], hd = times[k + 1] - times[k];
      for (size_t j = 0; j < dof; ++j)
        out.velocities[k][j] =
            (hs * hs * out.positions[k + 1][j] + (hd * hd - hs * hs) * out.positions[k][j] -
             hd * hd * out.positions[k - 1][j]) /
            (hs * hd * (hd + hs));
    }
  }
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < dof; ++j) {
      const double q = out.positions[k][j];
      if (!(q >= limits.position_min[j] && q <= limits.position_max[j]))
        throw TrajectoryRejected("point " + std::to_string(k) + ": " + expected[j] + " = " +
                                     format("%.4g rad is outside [%.4f, %.4f]", q,
                                            limits.position_min[j], limits.position_max[j]),
                                 "bounds");
    }
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < dof; ++j) {
      const double v = out.velocities[k][j];
      if (std::abs(v) > limits.velocity[j] * kLimitTolerance)
        throw TrajectoryRejected(
            "point " + std::to_string(k) + ": " + expected[j] +
                format(" velocity %.4g rad/s exceeds %.3f", v, limits.velocity[j]),
            "bounds");
    }
  return out;
}

void TrajectoryExecutor::hold(const Vector& position) {
  hold_ = position;
  active_.reset();
  pending_.reset();
}

void TrajectoryExecutor::stop(double now) {
  Vector q, qd;
  reference(now, q, qd);
  hold(q);
}

PlannedTrajectory TrajectoryExecutor::prepare(const PlannedTrajectory& trajectory,
                                              double now) const {
  const double start = !trajectory.start || *trajectory.start <= 0.0 ? now : *trajectory.start;
  PlannedTrajectory out = trajectory;
  out.start = start;
  if (trajectory.times.front() > 0.0) {
    Vector q0, qd0;
    peek(start, q0, qd0);
    out.times.insert(out.times.begin(), 0.0);
    out.positions.insert(out.positions.begin(), q0);
    out.velocities.insert(out.velocities.begin(), qd0);
  }
  return out;
}

PlannedTrajectory TrajectoryExecutor::command(const PlannedTrajectory& trajectory, double now) {
  PlannedTrajectory prepared = prepare(trajectory, now);
  if (*prepared.start <= now) {
    active_ = prepared;
    pending_.reset();
  } else {
    pending_ = prepared;
  }
  return prepared;
}

const PlannedTrajectory* TrajectoryExecutor::plan_at(double t) const {
  if (pending_ && t >= *pending_->start) return &*pending_;
  return active_ ? &*active_ : nullptr;
}

void TrajectoryExecutor::reference(double t, Vector& position, Vector& velocity) {
  if (pending_ && t >= *pending_->start) {
    active_ = std::move(pending_);
    pending_.reset();
  }
  peek(t, position, velocity);
}

void TrajectoryExecutor::peek(double t, Vector& position, Vector& velocity) const {
  const PlannedTrajectory* plan = plan_at(t);
  if (!plan) {
    position = hold_;
    velocity.assign(hold_.size(), 0.0);
    return;
  }
  plan->sample(t - *plan->start, position, velocity);
}

}  // namespace panda_gazebo
