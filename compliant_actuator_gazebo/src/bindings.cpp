// Python module compliant_actuator_gazebo._core: the simulator-independent compliant-actuator
// core (paper 003 §3.1; facts and defects: /work/shared/reference/compliant_actuators.md).
//
// No pybind11/numpy.h (Debian's pybind11 2.10 crashes with NumPy 2): scalars cross as floats and
// simulate_one_dof's traces as NumPy arrays built in Python from raw float64 bytes.
// std::invalid_argument -> ValueError (pybind11's standard translation).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compliant_actuator_gazebo/actuator_registry.hpp"
#include "compliant_actuator_gazebo/actuators.hpp"
#include "compliant_actuator_gazebo/compliant_joint.hpp"
#include "compliant_actuator_gazebo/factory.hpp"
#include "compliant_actuator_gazebo/input_bounds.hpp"
#include "compliant_actuator_gazebo/motor.hpp"
#include "compliant_actuator_gazebo/one_dof.hpp"
#include "compliant_actuator_gazebo/pid.hpp"
#include "compliant_actuator_gazebo/plugin_block.hpp"
#include "compliant_actuator_gazebo/template_actuator.hpp"

namespace py = pybind11;
using namespace compliant;

namespace {

std::string num(double v) { return py::repr(py::float_(v)).cast<std::string>(); }

// ------------------------------------------------------------------ params structs of doubles
template <class T>
using Fields = std::vector<std::pair<std::string, double T::*>>;

template <class T>
const Fields<T>& fields();

template <>
const Fields<SeaParams>& fields() {
  static const Fields<SeaParams> f = {{"k", &SeaParams::k},
                                      {"max_deflection", &SeaParams::max_deflection}};
  return f;
}
template <>
const Fields<QbMoveParams>& fields() {
  static const Fields<QbMoveParams> f = {{"k1", &QbMoveParams::k1},
                                         {"a1", &QbMoveParams::a1},
                                         {"k2", &QbMoveParams::k2},
                                         {"a2", &QbMoveParams::a2},
                                         {"max_deflection", &QbMoveParams::max_deflection}};
  return f;
}
template <>
const Fields<BavsParams>& fields() {
  static const Fields<BavsParams> f = {{"a", &BavsParams::a},
                                       {"b", &BavsParams::b},
                                       {"k", &BavsParams::k},
                                       {"ke", &BavsParams::ke},
                                       {"max_deflection", &BavsParams::max_deflection}};
  return f;
}
template <>
const Fields<AwasParams>& fields() {
  static const Fields<AwasParams> f = {{"ks", &AwasParams::ks},
                                       {"lever_length", &AwasParams::lever_length},
                                       {"r_t", &AwasParams::r_t},
                                       {"max_deflection", &AwasParams::max_deflection}};
  return f;
}
template <>
const Fields<TemplateActuatorParams>& fields() {
  static const Fields<TemplateActuatorParams> f = {
      {"k", &TemplateActuatorParams::k},
      {"k3", &TemplateActuatorParams::k3},
      {"max_deflection", &TemplateActuatorParams::max_deflection}};
  return f;
}
template <>
const Fields<FrictionParams>& fields() {
  static const Fields<FrictionParams> f = {
      {"viscous", &FrictionParams::viscous},
      {"coulomb", &FrictionParams::coulomb},
      {"coulomb_velocity", &FrictionParams::coulomb_velocity},
      {"bristle_stiffness", &FrictionParams::bristle_stiffness},
      {"bristle_torque", &FrictionParams::bristle_torque}};
  return f;
}
template <>
const Fields<PidGains>& fields() {
  static const Fields<PidGains> f = {{"p", &PidGains::p},
                                     {"i", &PidGains::i},
                                     {"d", &PidGains::d},
                                     {"derivative_filter", &PidGains::derivative_filter},
                                     {"output_limit", &PidGains::output_limit},
                                     {"integral_limit", &PidGains::integral_limit}};
  return f;
}
template <>
const Fields<OneDofLink>& fields() {
  static const Fields<OneDofLink> f = {{"inertia", &OneDofLink::inertia},
                                       {"mass_length", &OneDofLink::mass_length},
                                       {"damping", &OneDofLink::damping},
                                       {"gravity", &OneDofLink::gravity}};
  return f;
}
template <>
const Fields<MotorState>& fields() {
  static const Fields<MotorState> f = {{"position", &MotorState::position},
                                       {"velocity", &MotorState::velocity},
                                       {"anchor", &MotorState::anchor},
                                       {"torque", &MotorState::torque}};
  return f;
}
template <>
const Fields<SpringTorques>& fields() {
  static const Fields<SpringTorques> f = {{"t1", &SpringTorques::t1}, {"t2", &SpringTorques::t2}};
  return f;
}
template <>
const Fields<MotorReferences>& fields() {
  static const Fields<MotorReferences> f = {{"theta1", &MotorReferences::theta1},
                                            {"theta2", &MotorReferences::theta2}};
  return f;
}

template <class T>
std::string field_list() {
  std::string out;
  const T defaults{};
  for (const auto& [name, member] : fields<T>()) {
    out += (out.empty() ? "" : ", ") + name + "=" + num(defaults.*member);
  }
  return out;
}

template <class T>
std::string repr_fields(const std::string& name, const T& t) {
  std::string out = name + "(";
  bool first = true;
  for (const auto& [field, member] : fields<T>()) {
    out += (first ? "" : ", ") + field + "=" + num(t.*member);
    first = false;
  }
  return out + ")";
}

// Sets fields of t from keyword arguments; an unknown name is a TypeError naming it.
template <class T>
void assign_kwargs(T& t, const std::string& name, const py::kwargs& kwargs) {
  for (auto item : kwargs) {
    const std::string key = item.first.cast<std::string>();
    bool found = false;
    for (const auto& [field, member] : fields<T>()) {
      if (field == key) {
        t.*member = item.second.cast<double>();
        found = true;
      }
    }
    if (!found) {
      throw py::type_error(name + "() got an unexpected keyword argument '" + key +
                           "' (fields: " + field_list<T>() + ")");
    }
  }
}

// A struct of doubles with a keyword constructor (defaults of the reference sheet), read-write
// fields, __repr__ and __eq__.
template <class T>
py::class_<T> bind_struct(py::module_& m, const std::string& name, const std::string& doc) {
  py::class_<T> cls(m, name.c_str(), (doc + "\n\nFields (defaults): " + field_list<T>()).c_str());
  cls.def(py::init([name](const py::kwargs& kwargs) {
            T t{};
            assign_kwargs(t, name, kwargs);
            return t;
          }),
          ("Keyword constructor: " + name + "(" + field_list<T>() + ").").c_str());
  for (const auto& [field, member] : fields<T>()) cls.def_readwrite(field.c_str(), member);
  cls.def("__repr__", [name](const T& t) { return repr_fields(name, t); });
  cls.def("__eq__", [](const T& a, const T& b) {
    for (const auto& [field, member] : fields<T>()) {
      if (!(a.*member == b.*member)) return false;
    }
    return true;
  });
  cls.def(
      "as_dict",
      [](const T& t) {
        py::dict d;
        for (const auto& [field, member] : fields<T>()) d[py::str(field)] = t.*member;
        return d;
      },
      "The fields as a dict.");
  return cls;
}

// ------------------------------------------------------------------ trampoline
// Lets a Python subclass of Actuator serve as a user-defined compliance model (paper 003 §3.1.3).
// torques() may return a SpringTorques or a (t1, t2) tuple; references() a MotorReferences or a
// (theta1, theta2) tuple.
class PyActuator : public Actuator {
 public:
  std::string type() const override { PYBIND11_OVERRIDE_PURE(std::string, Actuator, type); }
  int motors() const override { PYBIND11_OVERRIDE_PURE(int, Actuator, motors); }
  SpringTorques torques(double q, double theta1, double theta2) const override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const Actuator*>(this), "torques");
    if (!f) throw std::runtime_error("Actuator subclass must implement torques()");
    py::object r = f(q, theta1, theta2);
    if (py::isinstance<py::tuple>(r)) {
      auto t = r.cast<std::pair<double, double>>();
      return {t.first, t.second};
    }
    return r.cast<SpringTorques>();
  }
  double stiffness(double q, double theta1, double theta2) const override {
    PYBIND11_OVERRIDE_PURE(double, Actuator, stiffness, q, theta1, theta2);
  }
  double energy(double q, double theta1, double theta2) const override {
    PYBIND11_OVERRIDE_PURE(double, Actuator, energy, q, theta1, theta2);
  }
  MotorReferences references(double equilibrium, double preset) const override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const Actuator*>(this), "references");
    if (!f) throw std::runtime_error("Actuator subclass must implement references()");
    py::object r = f(equilibrium, preset);
    if (py::isinstance<py::tuple>(r)) {
      auto t = r.cast<std::pair<double, double>>();
      return {t.first, t.second};
    }
    return r.cast<MotorReferences>();
  }
  double check_preset(double preset) const override {
    PYBIND11_OVERRIDE_PURE(double, Actuator, check_preset, preset);
  }
  double max_deflection() const override {
    PYBIND11_OVERRIDE_PURE(double, Actuator, max_deflection);
  }
};

// A model class: Model(params) or Model(**fields), plus .params.
template <class Model, class Params>
py::class_<Model, Actuator, std::shared_ptr<Model>> bind_model(py::module_& m,
                                                               const std::string& name,
                                                               const std::string& params_name,
                                                               const std::string& doc) {
  py::class_<Model, Actuator, std::shared_ptr<Model>> cls(m, name.c_str(), doc.c_str());
  cls.def(py::init<const Params&>(), py::arg("params"),
          ("From a " + params_name + "; ValueError for out-of-domain parameters.").c_str())
      .def(py::init([params_name](const py::kwargs& kwargs) {
             Params p{};
             assign_kwargs(p, params_name, kwargs);
             return std::make_shared<Model>(p);
           }),
           ("Keyword constructor: " + name + "(" + field_list<Params>() + ").").c_str())
      .def_property_readonly("params", &Model::params, "The model's parameters (a copy).")
      .def("__repr__",
           [name](const Model& a) { return name + "(" + repr_fields("", a.params()).substr(1); });
  return cls;
}

py::object to_array(const std::vector<double>& v) {
  // Not cached in a static: a py::object destroyed after interpreter finalisation would crash.
  py::object frombuffer = py::module_::import("numpy").attr("frombuffer");
  py::bytes raw(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  return frombuffer(raw, py::str("float64")).attr("copy")();
}

std::string repr_motor_params(const MotorParams& p) {
  return "MotorParams(inertia=" + num(p.inertia) + ", torque_limit=" + num(p.torque_limit) +
         ", velocity_limit=" + num(p.velocity_limit) + ", position_min=" + num(p.position_min) +
         ", position_max=" + num(p.position_max) +
         ", friction=" + repr_fields("FrictionParams", p.friction) + ")";
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "Compliant-actuator core (paper 003 §3.1, reference sheet compliant_actuators.md): "
      "compliance models (SEA, qbMove Advanced, BAVS, AwAS-II, template), DC motor with friction, "
      "PID, and CompliantJoint running operation modes 0-6 with one step function.";

  // ---------------------------------------------------------------- small value types
  bind_struct<SpringTorques>(m, "SpringTorques",
                             "Torques of spring 1 and 2 on the link [N m]; the motors feel -t1, "
                             "-t2; t2 = 0 exactly for one-spring models.")
      .def("link", &SpringTorques::link, "t1 + t2, the elastic torque on the link.");
  bind_struct<MotorReferences>(m, "MotorReferences",
                               "Motor position references (theta2 = pivot [m] for AwAS-II).");

  // ---------------------------------------------------------------- actuators
  py::class_<Actuator, PyActuator, std::shared_ptr<Actuator>>(
      m, "Actuator",
      "Compliance model interface (paper 003 §3.1.3 tauFElastic/eqPres2Refs). Subclass it in "
      "Python to use your own model in a CompliantJoint: implement type, motors, torques, "
      "stiffness, energy, references, check_preset, max_deflection.")
      .def(py::init<>())
      .def("type", &Actuator::type, "Model name: sea | qbmove | bavs | awas | user name.")
      .def("motors", &Actuator::motors, "Number of motors (1 or 2).")
      .def("torques", &Actuator::torques, py::arg("q"), py::arg("theta1"), py::arg("theta2") = 0.0,
           "Spring torques on the link (SpringTorques); the motors feel -t1, -t2.")
      .def("stiffness", &Actuator::stiffness, py::arg("q"), py::arg("theta1"),
           py::arg("theta2") = 0.0, "Analytic stiffness -d tau_link/dq (0 when saturated).")
      .def("energy", &Actuator::energy, py::arg("q"), py::arg("theta1"), py::arg("theta2") = 0.0,
           "Stored elastic energy [J], -dE/dq = tau_link, >= 0.")
      .def("references", &Actuator::references, py::arg("equilibrium"), py::arg("preset"),
           "Reference map (equilibrium, preset) -> MotorReferences (reference sheet table).")
      .def("check_preset", &Actuator::check_preset, py::arg("preset"),
           "The preset clamped into the model's domain; ValueError for NaN/Inf.")
      .def("max_deflection", &Actuator::max_deflection, "Maximum spring deflection [rad].");

  bind_struct<SeaParams>(m, "SeaParams",
                         "SEA parameters (reference sheet): k [N m/rad], "
                         "max_deflection [rad].");
  bind_struct<QbMoveParams>(m, "QbMoveParams",
                            "qbMove Advanced parameters (reference sheet; identified 2-DoF arm "
                            "values in paper 003 §4.3).");
  bind_struct<BavsParams>(m, "BavsParams", "BAVS parameters (reference sheet).");
  bind_struct<AwasParams>(m, "AwasParams",
                          "AwAS-II parameters (reference sheet): ks, lever_length L [m], r_t [m], "
                          "max_deflection [rad].");
  bind_struct<TemplateActuatorParams>(m, "TemplateActuatorParams",
                                      "Parameters of the template (cubic-spring SEA) actuator.");
  bind_model<Sea, SeaParams>(
      m, "Sea", "SeaParams",
      "Linear SEA: t1 = -k sat(q - theta1), sigma = k (paper 003 Fig. 8 i).");
  bind_model<QbMove, QbMoveParams>(
      m, "QbMove", "QbMoveParams",
      "qbMove Advanced: t_i = -k_i sinh(a_i sat(q - theta_i)), theta1,2 = eq +- preset, preset in "
      "[0, max_deflection] (paper 003 Fig. 8 iv).");
  bind_model<Bavs, BavsParams>(
      m, "Bavs", "BavsParams",
      "BAVS: exponential antagonistic springs of d_i = sat(theta_i - q), theta1,2 = eq +- preset, "
      "preset in [0, max_deflection] (paper 003 Fig. 8 iii).");
  bind_model<Awas, AwasParams>(
      m, "Awas", "AwasParams",
      "AwAS-II: t1 = -Ks C^2 sin(2 sat(q - theta1)), C = (L/r_t) s/(L - s), pivot s = theta2 in "
      "[0, L(1-1e-3)] (clamped), t2 = 0; motor 2 moves the pivot and feels no spring reaction "
      "(paper 003 Fig. 8 ii).")
      .def("max_pivot", &Awas::max_pivot, "Largest admissible pivot position L (1 - 1e-3) [m].");
  bind_model<TemplateActuator, TemplateActuatorParams>(
      m, "TemplateActuator", "TemplateActuatorParams",
      "The documented user-actuator template of template_actuator.hpp (paper 003 §3.1.3): an SEA "
      "with a cubic spring t1 = -(k d + k3 d^3).");

  // ---------------------------------------------------------------- motor
  bind_struct<FrictionParams>(m, "FrictionParams",
                              "Motor friction (paper 003 eq. 8): viscous D, tanh-smoothed Coulomb, "
                              "bristle/Dahl with stiffness K (0: off) and torque tau_s.");
  py::class_<MotorParams>(m, "MotorParams",
                          "DC motor parameters reflected to the link (paper 003 §3.1.1; reference "
                          "defaults J 0.0233, tau_max 6, v_max 6, end stops +-inf).")
      .def(py::init([](double inertia, double torque_limit, double velocity_limit,
                       double position_min, double position_max, const FrictionParams& friction) {
             return MotorParams{inertia,      torque_limit, velocity_limit,
                                position_min, position_max, friction};
           }),
           py::arg("inertia") = MotorParams{}.inertia,
           py::arg("torque_limit") = MotorParams{}.torque_limit,
           py::arg("velocity_limit") = MotorParams{}.velocity_limit,
           py::arg("position_min") = MotorParams{}.position_min,
           py::arg("position_max") = MotorParams{}.position_max,
           py::arg("friction") = FrictionParams{}, "Keyword constructor with reference defaults.")
      .def_readwrite("inertia", &MotorParams::inertia)
      .def_readwrite("torque_limit", &MotorParams::torque_limit)
      .def_readwrite("velocity_limit", &MotorParams::velocity_limit)
      .def_readwrite("position_min", &MotorParams::position_min)
      .def_readwrite("position_max", &MotorParams::position_max)
      .def_readwrite("friction", &MotorParams::friction)
      .def("__repr__", &repr_motor_params);
  bind_struct<MotorState>(m, "MotorState",
                          "Motor state: position, velocity, bristle anchor w, applied (saturated) "
                          "torque.");
  py::class_<Motor>(m, "Motor",
                    "DC motor block (paper 003 §3.1.1): semi-implicit sub-step of J thdd + D thd + "
                    "tau_fric = tau_m - tau_spring (viscous and Coulomb implicit), saturations and "
                    "end stops; never NaN.")
      .def(py::init<const MotorParams&>(), py::arg("params") = MotorParams{})
      .def("reset", &Motor::reset, py::arg("position"), "At rest at `position`.")
      .def("step", &Motor::step, py::arg("motor_torque"), py::arg("spring_torque"), py::arg("dt"),
           "One sub-step; spring_torque is the spring's torque on the LINK (the motor feels "
           "minus it).")
      .def("friction_torque", &Motor::friction_torque,
           "Friction of the last step (viscous + Coulomb + bristle).")
      .def("state", &Motor::state, "The MotorState (a copy).")
      .def("params", &Motor::params, "The MotorParams (a copy).")
      .def("__repr__", [](const Motor& mo) {
        return "Motor(" + repr_fields("state=MotorState", mo.state()) +
               ", params=" + repr_motor_params(mo.params()) + ")";
      });

  // ---------------------------------------------------------------- PID
  bind_struct<PidGains>(m, "PidGains",
                        "PID gains (paper 003 §3.1.2 eq. 11): p, i (outside the integral), d (on "
                        "the measurement), derivative_filter time constant [s], output_limit, "
                        "integral_limit on |i * integral|.");
  py::class_<Pid>(m, "Pid",
                  "PID with anti-windup (clamp + conditional integration), filtered derivative on "
                  "the measurement and output limit (fixes of the reference sheet).")
      .def(py::init<const PidGains&>(), py::arg("gains") = PidGains{})
      .def("reset", &Pid::reset, py::arg("measurement") = 0.0)
      .def("update", &Pid::update, py::arg("reference"), py::arg("measurement"), py::arg("dt"),
           "One step; dt <= 0 only computes. ValueError for non-finite input.")
      .def("gains", &Pid::gains)
      .def("integral", &Pid::integral, "integral(e dt), without the gain.")
      .def("derivative", &Pid::derivative, "Filtered d(measurement)/dt.")
      .def("__repr__", [](const Pid& p) {
        return "Pid(" + repr_fields("gains=PidGains", p.gains()) +
               ", integral=" + num(p.integral()) + ", derivative=" + num(p.derivative()) + ")";
      });

  // ---------------------------------------------------------------- joint
  py::enum_<Mode>(m, "Mode", "Operation modes 0-6 of paper 003 §3.1 (Fig. 5).")
      .value("Rigid", Mode::Rigid)
      .value("LinkPid", Mode::LinkPid)
      .value("MotorPositions", Mode::MotorPositions)
      .value("EquilibriumPreset", Mode::EquilibriumPreset)
      .value("MotorTorques", Mode::MotorTorques)
      .value("MotorPid", Mode::MotorPid)
      .value("MotorPidEquilibrium", Mode::MotorPidEquilibrium);
  py::implicitly_convertible<int, Mode>();
  py::enum_<Input>(m, "Input", "Joint inputs; input_name() gives each topic basename.")
      .value("TorqueCommand", Input::TorqueCommand)
      .value("LinkCommand", Input::LinkCommand)
      .value("Reference1", Input::Reference1)
      .value("Reference2", Input::Reference2)
      .value("EquilibriumPosition", Input::EquilibriumPosition)
      .value("StiffnessPreset", Input::StiffnessPreset)
      .value("Motor1Command", Input::Motor1Command)
      .value("Motor2Command", Input::Motor2Command)
      .value("ExternalTorque", Input::ExternalTorque);
  m.def("input_name", &input_name, py::arg("input"), "Topic basename of an input (NS/<name>).");
  m.def("input_from_name", &input_from_name, py::arg("name"),
        "Input of a topic basename; ValueError if unknown.");
  m.def(
      "mode_inputs", [](int mode) { return mode_inputs(mode_from_int(mode)); }, py::arg("mode"),
      "Inputs a mode reads (topic order), ExternalTorque last (accepted in every mode).");
  m.def("mode_from_int", &mode_from_int, py::arg("mode"), "Mode of 0..6; ValueError otherwise.");
  m.def(
      "has_motor_dynamics", [](int mode) { return has_motor_dynamics(mode_from_int(mode)); },
      py::arg("mode"), "True for modes 4, 5, 6.");

  py::class_<JointParams>(
      m, "JointParams",
      "Joint parameters: mode, motor1/motor2 (MotorParams), motor_pid (modes "
      "5, 6; reference P125 D4.5), link_pid (mode 1; P0.8 D0.2), max_substep [s].")
      .def(py::init([](int mode, const MotorParams& motor1, const MotorParams& motor2,
                       const PidGains& motor_pid, const PidGains& link_pid, double max_substep) {
             JointParams p;
             p.mode = mode_from_int(mode);
             p.motor1 = motor1;
             p.motor2 = motor2;
             p.motor_pid = motor_pid;
             p.link_pid = link_pid;
             p.max_substep = max_substep;
             return p;
           }),
           py::arg("mode") = 3, py::arg("motor1") = MotorParams{},
           py::arg("motor2") = MotorParams{}, py::arg("motor_pid") = JointParams{}.motor_pid,
           py::arg("link_pid") = JointParams{}.link_pid,
           py::arg("max_substep") = JointParams{}.max_substep,
           "Keyword constructor with the reference defaults; mode is a Mode or an int 0..6.")
      .def_property(
          "mode", [](const JointParams& p) { return p.mode; },
          [](JointParams& p, int mode) { p.mode = mode_from_int(mode); })
      .def_readwrite("motor1", &JointParams::motor1)
      .def_readwrite("motor2", &JointParams::motor2)
      .def_readwrite("motor_pid", &JointParams::motor_pid)
      .def_readwrite("link_pid", &JointParams::link_pid)
      .def_readwrite("max_substep", &JointParams::max_substep)
      .def("__repr__", [](const JointParams& p) {
        return "JointParams(mode=" + std::to_string(static_cast<int>(p.mode)) +
               ", motor1=" + repr_motor_params(p.motor1) +
               ", motor2=" + repr_motor_params(p.motor2) +
               ", motor_pid=" + repr_fields("PidGains", p.motor_pid) +
               ", link_pid=" + repr_fields("PidGains", p.link_pid) +
               ", max_substep=" + num(p.max_substep) + ")";
      });

  py::class_<JointOutput>(
      m, "JointOutput",
      "Outputs of CompliantJoint: link_torque (incl. external torque), spring "
      "(t1, t2), stiffness, deflection q - theta1, reference_1/2, motor1/2, time.")
      .def(py::init<>())
      .def_readonly("link_torque", &JointOutput::link_torque)
      .def_readonly("spring", &JointOutput::spring)
      .def_readonly("stiffness", &JointOutput::stiffness)
      .def_readonly("deflection", &JointOutput::deflection)
      .def_readonly("reference_1", &JointOutput::reference_1)
      .def_readonly("reference_2", &JointOutput::reference_2)
      .def_readonly("motor1", &JointOutput::motor1)
      .def_readonly("motor2", &JointOutput::motor2)
      .def_readonly("time", &JointOutput::time)
      .def("__repr__", [](const JointOutput& o) {
        return "JointOutput(time=" + num(o.time) + ", link_torque=" + num(o.link_torque) +
               ", spring=" + repr_fields("SpringTorques", o.spring) +
               ", stiffness=" + num(o.stiffness) + ", deflection=" + num(o.deflection) +
               ", reference_1=" + num(o.reference_1) + ", reference_2=" + num(o.reference_2) +
               ", motor1=" + repr_fields("MotorState", o.motor1) +
               ", motor2=" + repr_fields("MotorState", o.motor2) + ")";
      });

  py::class_<CompliantJoint>(
      m, "CompliantJoint",
      "One compliant joint (paper 003 §3.1, Fig. 4-5): model + motors + PID in modes 0-6 with one "
      "table-driven step; external torque in every mode; internal sub-steps of at most "
      "max_substep; first update after reset and dt <= 0 only compute.")
      .def(py::init([](std::shared_ptr<Actuator> actuator, const JointParams& params) {
             return std::make_unique<CompliantJoint>(std::move(actuator), params);
           }),
           py::arg("actuator"), py::arg("params") = JointParams{}, py::keep_alive<1, 2>(),
           "ValueError for invalid parameters.")
      .def("reset", &CompliantJoint::reset, py::arg("q"), py::arg("time") = 0.0,
           "Motors at rest where the link at q is at equilibrium; next update only computes.")
      .def("set_input", &CompliantJoint::set_input, py::arg("input"), py::arg("value"),
           "Store an input; False (old value kept) for NaN/Inf; presets are clamped.")
      .def(
          "set_input",
          [](CompliantJoint& j, const std::string& name, double value) {
            return j.set_input(input_from_name(name), value);
          },
          py::arg("name"), py::arg("value"), "Same, by topic basename (e.g. 'stiffness_preset').")
      .def("input", &CompliantJoint::input, py::arg("input"))
      .def(
          "input",
          [](const CompliantJoint& j, const std::string& name) {
            return j.input(input_from_name(name));
          },
          py::arg("name"))
      .def("update", &CompliantJoint::update, py::arg("time"), py::arg("q"), py::arg("qd") = 0.0,
           "Advance to absolute time with the link at (q, qd); returns the link torque. "
           "ValueError for non-finite input.")
      .def("output", &CompliantJoint::output, "The JointOutput of the last update (a copy).")
      .def("mode", &CompliantJoint::mode)
      .def("params", &CompliantJoint::params, "The JointParams (a copy).")
      .def("actuator", &CompliantJoint::actuator_ptr, "The actuator model.")
      .def("clamped_preset", &CompliantJoint::clamped_preset,
           "True if the last stiffness preset was clamped into the model's domain.")
      .def("dynamic_motors", &CompliantJoint::dynamic_motors,
           "Motors with dynamics in this mode (0 in modes 0-3).")
      .def("__repr__", [](py::object self) {
        const auto& j = self.cast<const CompliantJoint&>();
        return "CompliantJoint(actuator=" + py::repr(self.attr("actuator")()).cast<std::string>() +
               ", mode=" + std::to_string(static_cast<int>(j.mode())) +
               ", time=" + num(j.output().time) + ", link_torque=" + num(j.output().link_torque) +
               ")";
      });

  // ---------------------------------------------------------------- factory
  m.def("actuator_types", &actuator_types,
        "The actuator types: the built-in ones, then those registered since "
        "(load_actuator_library).");
  m.def("load_actuator_library", &load_actuator_library, py::arg("path"),
        "Loads a shared library of user actuators (COMPLIANT_REGISTER_ACTUATOR, "
        "actuator_registry.hpp) and returns the types it registered ([] if loaded before); then "
        "make_actuator and plugin blocks know them. path: a file, or a name searched on "
        "LD_LIBRARY_PATH. ValueError (one line) if it cannot be loaded or a registration fails.");
  m.def("actuator_parameter_names", &actuator_parameter_names, py::arg("type"),
        "Parameter (plugin tag) names of an actuator type.");
  m.def("joint_parameter_names", &joint_parameter_names,
        "Parameter (plugin tag) names of make_joint_params.");
  m.def(
      "make_actuator",
      [](const std::string& type, const std::map<std::string, double>& params) {
        return make_actuator(type, params);
      },
      py::arg("type"), py::arg("params") = std::map<std::string, double>{},
      "Actuator by type and parameter dict; ValueError for unknown type/name or bad value.");
  m.def("make_joint_params", &make_joint_params, py::arg("mode"),
        py::arg("params") = std::map<std::string, double>{},
        "JointParams by mode and parameter dict; ValueError for bad mode/name/value.");

  // ---------------------------------------------------------------- plugin block
  py::class_<BlockTag>(m, "BlockTag",
                       "One child element of a plugin block: name, text, "
                       "has_children (the XML reader's view of it).")
      .def(py::init([](std::string name, std::string text, bool has_children) {
             return BlockTag{std::move(name), std::move(text), has_children};
           }),
           py::arg("name"), py::arg("text") = "", py::arg("has_children") = false)
      .def_readwrite("name", &BlockTag::name)
      .def_readwrite("text", &BlockTag::text)
      .def_readwrite("has_children", &BlockTag::has_children)
      .def("__repr__", [](const BlockTag& t) {
        return "BlockTag(" + py::repr(py::str(t.name)).cast<std::string>() + ", " +
               py::repr(py::str(t.text)).cast<std::string>() +
               (t.has_children ? ", has_children=True)" : ")");
      });
  py::class_<PluginSettings>(m, "PluginSettings",
                             "A valid plugin block (parse_plugin_block): joint, actuator_type, "
                             "mode, robot_namespace, actuator_params, joint_params, and the "
                             "actuator and JointParams built from them.")
      .def_readonly("joint", &PluginSettings::joint)
      .def_readonly("actuator_type", &PluginSettings::actuator_type)
      .def_readonly("mode", &PluginSettings::mode)
      .def_readonly("robot_namespace", &PluginSettings::robot_namespace)
      .def_readonly("actuator_params", &PluginSettings::actuator_params)
      .def_readonly("joint_params", &PluginSettings::joint_params)
      .def_readonly("actuator", &PluginSettings::actuator)
      .def_readonly("params", &PluginSettings::params);
  m.def("parse_plugin_block", &parse_plugin_block, py::arg("tags"), py::arg("default_namespace"),
        py::arg("check_joint") = nullptr, py::arg("where") = "plugin",
        "The one parser of plugin blocks, shared with the Gazebo plugin: a list of BlockTag, "
        "the namespace when the block gives none, check_joint(name) -> '' or why the joint "
        "cannot carry the actuator (None: no check), where (prefix of the messages) -> "
        "PluginSettings; ValueError (one line) for the first problem.");

  m.def(
      "input_bounds",
      [](const Actuator& actuator, const JointParams& params, double lower, double upper,
         double effort) {
        py::dict out;
        const auto bounds = input_bounds(actuator, params, lower, upper, effort);
        for (int i = 0; i < kInputCount; ++i)
          out[input_name(static_cast<Input>(i))] = py::make_tuple(bounds[i].low, bounds[i].high);
        return out;
      },
      py::arg("actuator"), py::arg("params"), py::arg("lower"), py::arg("upper"), py::arg("effort"),
      "The Gazebo plugin's input checks (input_bounds.hpp): {input name: (low, high)} from the "
      "joint's position limits (NaN or infinite: continuous) and effort limit (<= 0: none).");

  // ---------------------------------------------------------------- 1-DoF plant
  bind_struct<OneDofLink>(m, "OneDofLink",
                          "Pendulum link (paper 003 Fig. 8): inertia J, mass_length m l (gravity "
                          "torque -m l g sin q, q = 0 hanging down), damping c, gravity g.");
  m.def(
      "simulate_one_dof",
      [](CompliantJoint& joint, const OneDofLink& link, double q0, double qd0, double dt,
         double duration) {
        const OneDofTrace tr = simulate_one_dof(joint, link, q0, qd0, dt, duration);
        py::dict out;
        out["time"] = to_array(tr.time);
        out["q"] = to_array(tr.q);
        out["qd"] = to_array(tr.qd);
        out["link_torque"] = to_array(tr.link_torque);
        out["energy"] = to_array(tr.energy);
        return out;
      },
      py::arg("joint"), py::arg("link"), py::arg("q0"), py::arg("qd0") = 0.0, py::arg("dt"),
      py::arg("duration"),
      "Semi-implicit Euler of the pendulum on the joint from the joint's current time; returns "
      "a dict of float64 arrays time, q, qd, link_torque, energy (link KE + gravity PE + "
      "elastic + simulated motors' KE).");
}
