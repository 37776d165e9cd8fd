// The four compliance models of the reference sheet (paper 003 §3.3, Fig. 8). Each spring is
// written once as a SpringEval of its deflection; compliant::saturate() applies max_deflection.
#include "compliant_actuator_gazebo/actuators.hpp"

#include <algorithm>
#include <cmath>

namespace compliant {

// ---------------------------------------------------------------- SEA
Sea::Sea(const SeaParams& params) : params_(params) {
  require_nonnegative("sea k", params.k);
  require_nonnegative("sea max_deflection", params.max_deflection, true);
}

SpringEval Sea::spring(double q, double theta1) const {
  const double k = params_.k;
  return saturate(q - theta1, params_.max_deflection,
                  [k](double d) { return SpringEval{k * d, k, 0.5 * k * d * d}; });
}

SpringTorques Sea::torques(double q, double theta1, double) const {
  return {-spring(q, theta1).force, 0.0};
}
double Sea::stiffness(double q, double theta1, double) const { return spring(q, theta1).stiffness; }
double Sea::energy(double q, double theta1, double) const { return spring(q, theta1).energy; }
MotorReferences Sea::references(double equilibrium, double) const { return {equilibrium, 0.0}; }
double Sea::check_preset(double preset) const {
  require_finite("sea stiffness preset", preset);
  return preset;
}

// ---------------------------------------------------------------- qbMove Advanced
QbMove::QbMove(const QbMoveParams& params) : params_(params) {
  require_nonnegative("qbmove k1", params.k1);
  require_nonnegative("qbmove a1", params.a1, true);
  require_nonnegative("qbmove k2", params.k2);
  require_nonnegative("qbmove a2", params.a2, true);
  require_nonnegative("qbmove max_deflection", params.max_deflection, true);
}

namespace {
// U(d) = k/a (cosh(a d) - 1): force k sinh(a d), stiffness a k cosh(a d).
SpringEval sinh_spring(double delta, double k, double a, double max_def) {
  return saturate(delta, max_def, [k, a](double d) {
    // One expm1 for all three, without cancellation near d = 0: with m = e^x - 1,
    // sinh x = (m + m / e^x) / 2 and cosh x - 1 = m^2 / (2 e^x).
    const double m = std::expm1(a * d), e = 1.0 + m;
    const double cosh_minus_1 = 0.5 * m * m / e;
    return SpringEval{k * 0.5 * (m + m / e), a * k * (1.0 + cosh_minus_1), k / a * cosh_minus_1};
  });
}
}  // namespace

// d_i = q - theta_i: the link feels -U_i'(d_i), and -d(-U_i')/dq = U_i''.
SpringEval QbMove::link_spring1(double q, double theta1) const {
  const SpringEval s = sinh_spring(q - theta1, params_.k1, params_.a1, params_.max_deflection);
  return {-s.force, s.stiffness, s.energy};
}
SpringEval QbMove::link_spring2(double q, double theta2) const {
  const SpringEval s = sinh_spring(q - theta2, params_.k2, params_.a2, params_.max_deflection);
  return {-s.force, s.stiffness, s.energy};
}

// ---------------------------------------------------------------- BAVS
Bavs::Bavs(const BavsParams& params) : params_(params) {
  require_nonnegative("bavs a", params.a);
  require_nonnegative("bavs b", params.b);
  require_nonnegative("bavs k", params.k);
  require_nonnegative("bavs ke", params.ke, true);
  require_nonnegative("bavs max_deflection", params.max_deflection, true);
}

namespace {
// Exponential antagonistic spring of deflection d = theta - q with torque on the link
// f(d) = k (c_plus e^{ke d} - c_minus e^{-ke d}) = U'(d), U = k/ke (c_plus e^{ke d} +
// c_minus e^{-ke d} - 2 sqrt(c_plus c_minus)) >= 0, U'' = k ke (c_plus e^{ke d} + c_minus e^{-ke
// d}).
SpringEval exp_spring(double delta, const BavsParams& p, double c_plus, double c_minus) {
  const double floor = 2.0 * std::sqrt(c_plus * c_minus);
  return saturate(delta, p.max_deflection, [&p, c_plus, c_minus, floor](double d) {
    const double e = std::exp(p.ke * d);
    const double ep = c_plus * e, em = c_minus / e;
    return SpringEval{p.k * (ep - em), p.k * p.ke * (ep + em), p.k / p.ke * (ep + em - floor)};
  });
}
}  // namespace

// d_i = theta_i - q, so dd/dq = -1: the link feels U_i'(d_i), and -d(U_i')/dq = U_i''.
SpringEval Bavs::link_spring1(double q, double theta1) const {
  return exp_spring(theta1 - q, params_, params_.b, params_.a);
}
SpringEval Bavs::link_spring2(double q, double theta2) const {
  return exp_spring(theta2 - q, params_, params_.a, params_.b);
}

// ---------------------------------------------------------------- AwAS-II
Awas::Awas(const AwasParams& params) : params_(params) {
  require_nonnegative("awas ks", params.ks);
  require_nonnegative("awas lever_length", params.lever_length, true);
  require_nonnegative("awas r_t", params.r_t, true);
  require_nonnegative("awas max_deflection", params.max_deflection, true);
}

SpringEval Awas::spring(double q, double theta1, double pivot) const {
  const double s = std::clamp(std::isfinite(pivot) ? pivot : 0.0, 0.0, max_pivot());
  const double ratio = params_.lever_length / params_.r_t * s / (params_.lever_length - s);
  const double gain = params_.ks * ratio * ratio;  // Ks C^2
  // U(d) = Ks C^2 sin^2 d: U' = Ks C^2 sin 2d, U'' = 2 Ks C^2 cos 2d.
  return saturate(q - theta1, params_.max_deflection, [gain](double d) {
    const double sd = std::sin(d);
    return SpringEval{gain * std::sin(2.0 * d), 2.0 * gain * std::cos(2.0 * d), gain * sd * sd};
  });
}
SpringTorques Awas::torques(double q, double theta1, double theta2) const {
  return {-spring(q, theta1, theta2).force, 0.0};
}
double Awas::stiffness(double q, double theta1, double theta2) const {
  return spring(q, theta1, theta2).stiffness;
}
double Awas::energy(double q, double theta1, double theta2) const {
  return spring(q, theta1, theta2).energy;
}
MotorReferences Awas::references(double equilibrium, double preset) const {
  return {equilibrium, preset};
}
double Awas::check_preset(double preset) const {
  require_finite("awas stiffness preset (pivot position)", preset);
  return std::clamp(preset, 0.0, max_pivot());
}

}  // namespace compliant
