// panda_gazebo._core: the plugin's core (joint_trajectory.hpp, effort_control.hpp) for Python, so
// that the tests check it against panda_sim2real's simulator (test_gazebo_core.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "panda_gazebo/effort_control.hpp"
#include "panda_gazebo/joint_trajectory.hpp"

namespace py = pybind11;
namespace pg = panda_gazebo;

PYBIND11_MODULE(_core, m) {
  m.doc() = "The Panda Gazebo plugin's trajectory and effort core";
  m.attr("LIMIT_TOLERANCE") = pg::kLimitTolerance;
  py::class_<pg::JointLimits>(m, "JointLimits")
      .def(py::init([](std::vector<std::string> names, pg::Vector lo, pg::Vector hi,
                       pg::Vector velocity, pg::Vector effort) {
             pg::JointLimits limits{std::move(names), std::move(lo), std::move(hi),
                                    std::move(velocity), std::move(effort)};
             limits.check();
             return limits;
           }),
           py::arg("joint_names"), py::arg("position_min"), py::arg("position_max"),
           py::arg("velocity"), py::arg("effort"));
  py::class_<pg::PlannedTrajectory>(m, "PlannedTrajectory")
      .def(py::init<pg::Vector, std::vector<pg::Vector>, std::vector<pg::Vector>,
                    std::optional<double>>(),
           py::arg("times"), py::arg("positions"), py::arg("velocities"),
           py::arg("start") = std::nullopt)
      .def_readonly("times", &pg::PlannedTrajectory::times)
      .def_readonly("positions", &pg::PlannedTrajectory::positions)
      .def_readonly("velocities", &pg::PlannedTrajectory::velocities)
      .def_readonly("start", &pg::PlannedTrajectory::start)
      .def("sample", [](const pg::PlannedTrajectory& self, double t) {
        pg::Vector q, qd;
        self.sample(t, q, qd);
        return py::make_tuple(q, qd);
      });
  // (reason, message) of a rejected command, or the validated trajectory
  m.def(
      "validate_trajectory",
      [](const std::vector<std::string>& names, const pg::Vector& times,
         const std::vector<pg::Vector>& positions, const std::vector<pg::Vector>& velocities,
         const pg::JointLimits& limits, std::optional<double> start) -> py::object {
        try {
          return py::cast(
              pg::validate_trajectory(names, times, positions, velocities, limits, start));
        } catch (const pg::TrajectoryRejected& error) {
          return py::make_tuple(error.reason(), std::string(error.what()));
        }
      },
      py::arg("joint_names"), py::arg("times"), py::arg("positions"), py::arg("velocities"),
      py::arg("limits"), py::arg("start") = std::nullopt);
  py::class_<pg::TrajectoryExecutor>(m, "TrajectoryExecutor")
      .def(py::init<pg::Vector>(), py::arg("hold"))
      .def("hold", &pg::TrajectoryExecutor::hold)
      .def("stop", &pg::TrajectoryExecutor::stop)
      .def("command", &pg::TrajectoryExecutor::command)
      .def("reference", [](pg::TrajectoryExecutor& self, double t) {
        pg::Vector q, qd;
        self.reference(t, q, qd);
        return py::make_tuple(q, qd);
      });
  py::class_<pg::PidController>(m, "PidController")
      .def(py::init([](pg::Vector p, pg::Vector i, pg::Vector d, pg::Vector i_clamp) {
             return pg::PidController(pg::PidGains{p, i, d, i_clamp});
           }),
           py::arg("p"), py::arg("i"), py::arg("d"), py::arg("i_clamp"))
      .def("reset", &pg::PidController::reset);
  py::class_<pg::SigmoidFriction>(m, "SigmoidFriction")
      .def(py::init<pg::Vector, pg::Vector, pg::Vector>(), py::arg("phi1"), py::arg("phi2"),
           py::arg("phi3"))
      .def("torque", &pg::SigmoidFriction::torque);
  m.def(
      "effort_step",
      [](pg::PidController& pid, std::optional<pg::SigmoidFriction> friction,
         const pg::Vector& effort, const pg::Vector& q, const pg::Vector& qd,
         const pg::Vector& q_ref, const pg::Vector& qd_ref, double dt) {
        const pg::JointTorques tau =
            pg::effort_step(pid, friction, effort, q, qd, q_ref, qd_ref, dt);
        return py::make_tuple(tau.motor, tau.link);
      },
      py::arg("pid"), py::arg("friction"), py::arg("effort"), py::arg("q"), py::arg("qd"),
      py::arg("q_ref"), py::arg("qd_ref"), py::arg("dt"));
}
