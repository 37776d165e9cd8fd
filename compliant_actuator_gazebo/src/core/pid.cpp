// PID block (paper 003 §3.1.2, eq. 11) with anti-windup, filtered derivative on the
// measurement and output limits. See pid.hpp.
#include "compliant_actuator_gazebo/pid.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "compliant_actuator_gazebo/actuator.hpp"

namespace compliant {

void validate(const PidGains& g, const std::string& who) {
  require_nonnegative(who + " p", g.p);
  require_nonnegative(who + " i", g.i);
  require_nonnegative(who + " d", g.d);
  require_nonnegative(who + " derivative_filter", g.derivative_filter);
  if (!(g.output_limit > 0.0)) {
    throw std::invalid_argument(who + " output_limit must be > 0, got " +
                                std::to_string(g.output_limit));
  }
  if (!(g.integral_limit >= 0.0)) {
    throw std::invalid_argument(who + " integral_limit must be >= 0, got " +
                                std::to_string(g.integral_limit));
  }
}

Pid::Pid(const PidGains& gains) : gains_(gains) { validate(gains_); }

void Pid::reset(double measurement) {
  integral_ = 0.0;
  derivative_ = 0.0;
  last_measurement_ = std::isfinite(measurement) ? measurement : 0.0;
}

double Pid::update(double reference, double measurement, double dt) {
  if (!std::isfinite(reference) || !std::isfinite(measurement) || std::isnan(dt)) {
    throw std::invalid_argument("pid update needs finite reference, measurement and dt");
  }
  const double error = reference - measurement;
  const double limit = gains_.output_limit;
  if (dt > 0.0 && std::isfinite(dt)) {
    // Derivative on the measurement through a first-order filter (backward Euler, stable for
    // every dt): D_f += dt / (T_f + dt) (raw - D_f).
    const double raw = (measurement - last_measurement_) / dt;
    derivative_ += dt / (gains_.derivative_filter + dt) * (raw - derivative_);
    last_measurement_ = measurement;
    // Conditional integration: integrate unless the output is already saturated in the direction
    // the error would push it; then clamp |i * integral| <= integral_limit.
    const double unsat = gains_.p * error + gains_.i * integral_ - gains_.d * derivative_;
    const bool saturated = std::abs(unsat) >= limit && unsat * error > 0.0;
    if (gains_.i > 0.0 && !saturated) {
      integral_ += error * dt;
      if (std::isfinite(gains_.integral_limit)) {
        const double bound = gains_.integral_limit / gains_.i;
        integral_ = std::clamp(integral_, -bound, bound);
      }
    }
  }
  const double u = gains_.p * error + gains_.i * integral_ - gains_.d * derivative_;
  return std::clamp(u, -limit, limit);
}

}  // namespace compliant
