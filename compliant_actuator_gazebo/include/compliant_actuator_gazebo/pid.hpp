// PID block (paper 003 §3.1.2, eq. 11) without the release's defects (reference sheet: gain
// inside the integral, no anti-windup, no derivative filter, no output limit):
//   u = sat( p e + i * integral(e dt) - d * D_f[dm/dt] ),   e = reference - measurement,
// with the derivative on the measurement (no kick on reference steps) through a first-order
// filter of time constant `derivative_filter`, the integral gain applied OUTSIDE the integral
// (the state is integral(e dt); gains are fixed per Pid, so there is no history rescaling), and
// anti-windup by clamping |i * integral| <= integral_limit plus conditional integration (the
// integral is frozen while the output is saturated in the direction of the error).
#pragma once

#include <limits>
#include <string>

namespace compliant {

struct PidGains {
  double p = 0.0, i = 0.0, d = 0.0;
  double derivative_filter = 0.0;  ///< time constant [s] of the derivative filter (0: none)
  double output_limit = std::numeric_limits<double>::infinity();    ///< |u| <= output_limit
  double integral_limit = std::numeric_limits<double>::infinity();  ///< |i * integral| <= limit
};

/// std::invalid_argument naming the field (gains >= 0, limits > 0 / >= 0, filter >= 0).
void validate(const PidGains& g, const std::string& who = "pid");

class Pid {
 public:
  explicit Pid(const PidGains& gains = {});
  /// Zero integral and derivative; the next derivative is taken from `measurement`.
  void reset(double measurement = 0.0);
  /// One controller step of length dt; dt <= 0 only computes the output from the current state.
  /// Non-finite arguments -> std::invalid_argument.
  double update(double reference, double measurement, double dt);
  const PidGains& gains() const { return gains_; }
  double integral() const { return integral_; }      ///< integral(e dt) (without the gain)
  double derivative() const { return derivative_; }  ///< filtered d(measurement)/dt

 private:
  PidGains gains_;
  double integral_ = 0.0, derivative_ = 0.0, last_measurement_ = 0.0;
};

}  // namespace compliant
