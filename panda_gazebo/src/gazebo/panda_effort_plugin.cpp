// Gazebo 11 ModelPlugin: the Panda as panda_sim2real's simulator runs it (panda_sim, robot.py),
// in Gazebo's physics: per joint an effort PID toward the commanded trajectory's reference, with
// panda_sim's time parametrisation and command validation (the core, joint_trajectory.hpp and
// effort_control.hpp), and panda_sim's topics. franka_gazebo and paper 000 §IV run the Panda
// this way; ros_control and gazebo_ros are in no Debian release, so this plugin is our own.
//
// Topics, in the plugin block's <robotNamespace> (default sim):
//   publishes joint_states (sensor_msgs/JointState: position, velocity, effort = the applied
//     joint torque plus the configured sensor offset) and right after each of them
//     joint_trajectory_controller/reference (the reference followed at that time), every
//     round(1 / (publish_rate * step)) steps, stamped with the sim time; label (latched)
//   subscribes joint_trajectory_controller/command (trajectory_msgs/JointTrajectory; a rejected
//     one: one line per reason and second, and the arm holds its current reference) and
//     set_joint_state (sensor_msgs/JointState of every joint by name: positions and optional
//     velocities set at once, as panda_sim's).
// Parameters (ROS, read at load, under <robotNamespace>/<parameters>, default sim/gazebo; written
// by panda_sim2real's gazebo_model.py from the simulator's configuration): joint_names,
// position_min, position_max, velocity, effort, initial_positions, p, i, d, i_clamp, optional
// friction_phi1/2/3, torque_offset, latency [s], publish_rate [Hz], label.
// Timing, as robot.py: at a step's start (time t) the state and the reference at t - latency give
// the torque held during the step; the state at its end is published (stamp t + step). Messages
// are taken from this plugin's queue at the start of every step, in the world's thread, so a
// lock-stepped run (sim2real_gazebo's step_world) is deterministic. A bad configuration is one
// gzerr line and the model is removed; nothing non-finite is ever published.
#include <ros/callback_queue.h>
#include <ros/ros.h>
#include <sensor_msgs/JointState.h>
#include <std_msgs/String.h>
#include <trajectory_msgs/JointTrajectory.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <gazebo/common/Events.hh>
#include <gazebo/common/Plugin.hh>
#include <gazebo/msgs/msgs.hh>
#include <gazebo/physics/physics.hh>
#include <gazebo/transport/transport.hh>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "panda_gazebo/effort_control.hpp"
#include "panda_gazebo/joint_trajectory.hpp"

namespace gazebo {
namespace pg = panda_gazebo;

class PandaEffortPlugin : public ModelPlugin {
 public:
  ~PandaEffortPlugin() override {
    begin_.reset();
    end_.reset();
    command_sub_.shutdown();
    set_state_sub_.shutdown();
    if (nh_) nh_->shutdown();
  }

  void Load(physics::ModelPtr model, sdf::ElementPtr sdf) override {
    model_ = model;
    world_ = model->GetWorld();
    const std::string ns =
        sdf->HasElement("robotNamespace") ? sdf->Get<std::string>("robotNamespace") : "sim";
    const std::string params =
        sdf->HasElement("parameters") ? sdf->Get<std::string>("parameters") : "gazebo";
    try {
      if (!ros::isInitialized())
        throw std::runtime_error(
            "ROS is not initialised: start gzserver with the system plugin "
            "-s libsim2real_gazebo_ros_api.so (sim2real_gazebo)");
      nh_ = std::make_unique<ros::NodeHandle>("/" + ns);  // throws for a name ROS refuses
      params_ = std::make_unique<ros::NodeHandle>(*nh_, params);
      ReadParameters(*params_);
      for (const std::string& name : limits_.joint_names) {
        physics::JointPtr joint = model->GetJoint(name);
        if (!joint) throw std::runtime_error("the model has no joint '" + name + "'");
        if (joint->DOF() != 1) throw std::runtime_error("joint '" + name + "' is not 1-DoF");
        joints_.push_back(joint);
      }
    } catch (const std::exception& error) {
      params_.reset();
      nh_.reset();
      return Fail(error.what());
    }
    dt_ = world_->Physics()->GetMaxStepSize();
    publish_every_ = std::max<uint64_t>(1, std::llround(1.0 / (publish_rate_ * dt_)));
    nh_->setCallbackQueue(&queue_);
    states_pub_ = nh_->advertise<sensor_msgs::JointState>("joint_states", 1000);
    reference_pub_ =
        nh_->advertise<sensor_msgs::JointState>("joint_trajectory_controller/reference", 1000);
    label_pub_ = nh_->advertise<std_msgs::String>("label", 1, true);
    std_msgs::String label;
    label.data = label_;
    label_pub_.publish(label);
    command_sub_ = nh_->subscribe<trajectory_msgs::JointTrajectory>(
        "joint_trajectory_controller/command", 10,
        [this](const trajectory_msgs::JointTrajectory::ConstPtr& msg) { OnCommand(*msg); });
    set_state_sub_ = nh_->subscribe<sensor_msgs::JointState>(
        "set_joint_state", 10,
        [this](const sensor_msgs::JointState::ConstPtr& msg) { OnSetState(*msg); });
    reset_pending_ = true;  // the arm is put at initial_positions at the first step
    begin_ = event::Events::ConnectWorldUpdateBegin(
        [this](const common::UpdateInfo&) { OnStepBegin(); });
    end_ = event::Events::ConnectWorldUpdateEnd([this] { OnStepEnd(); });
    ROS_INFO(
        "%s: Panda effort PID on %zu joints, physics %g Hz, joint_states every %lu steps "
        "(%g Hz), label '%s'",
        nh_->getNamespace().c_str(), joints_.size(), 1.0 / dt_,
        static_cast<unsigned long>(publish_every_), 1.0 / (publish_every_ * dt_), label_.c_str());
  }

  // World reset: back to initial_positions (read again) at rest, holding them (next step).
  void Reset() override { reset_pending_ = true; }

 private:
  void Fail(const std::string& why) {
    gzerr << "[panda_effort_plugin] model '" << model_->GetName() << "', plugin '" << GetHandle()
          << "': " << why << "; model removed\n";
    transport::NodePtr node(new transport::Node());
    node->Init(world_->Name());
    transport::PublisherPtr requests = node->Advertise<msgs::Request>("~/request");
    std::unique_ptr<msgs::Request> request(
        msgs::CreateRequest("entity_delete", model_->GetScopedName()));
    requests->Publish(*request);
  }

  static pg::Vector Numbers(const ros::NodeHandle& nh, const std::string& key, size_t size,
                            bool required = true, bool nonnegative = false) {
    pg::Vector values;
    if (!nh.getParam(key, values)) {
      if (required || nh.hasParam(key))
        throw std::runtime_error("parameter " + nh.resolveName(key) +
                                 " is missing or not a list of numbers");
      return pg::Vector(size, 0.0);
    }
    if (values.size() != size ||
        !std::all_of(values.begin(), values.end(), [nonnegative](double v) {
          return std::isfinite(v) && (!nonnegative || v >= 0.0);
        }))
      throw std::runtime_error("parameter " + nh.resolveName(key) + " must hold " +
                               std::to_string(size) + " finite numbers" +
                               (nonnegative ? " >= 0" : ""));
    return values;
  }

  // A number (default `fallback` when absent; present but not a number: an error).
  static double Number(const ros::NodeHandle& nh, const std::string& key, double fallback) {
    if (!nh.hasParam(key)) return fallback;
    double value = 0.0;
    if (!nh.getParam(key, value))
      throw std::runtime_error("parameter " + nh.resolveName(key) + " is not a number");
    return value;
  }

  void ReadParameters(const ros::NodeHandle& nh) {
    if (!nh.getParam("joint_names", limits_.joint_names))
      throw std::runtime_error("parameter " + nh.resolveName("joint_names") +
                               " is missing: the model's parameters were not written "
                               "(panda_sim2real gazebo_model.py)");
    const size_t n = limits_.joint_names.size();
    limits_.position_min = Numbers(nh, "position_min", n);
    limits_.position_max = Numbers(nh, "position_max", n);
    limits_.velocity = Numbers(nh, "velocity", n, true, true);
    limits_.effort = Numbers(nh, "effort", n, true, true);
    try {
      limits_.check();
    } catch (const std::invalid_argument& error) {
      throw std::runtime_error(std::string("joint limits: ") + error.what());
    }
    initial_ = Numbers(nh, "initial_positions", n);
    pid_.emplace(pg::PidGains{Numbers(nh, "p", n, true, true), Numbers(nh, "i", n, true, true),
                              Numbers(nh, "d", n, true, true),
                              Numbers(nh, "i_clamp", n, true, true)});
    if (nh.hasParam("friction_phi1"))
      friction_ =
          pg::SigmoidFriction{Numbers(nh, "friction_phi1", n), Numbers(nh, "friction_phi2", n),
                              Numbers(nh, "friction_phi3", n)};
    offset_ = Numbers(nh, "torque_offset", n, false);
    latency_ = Number(nh, "latency", 0.0);
    publish_rate_ = Number(nh, "publish_rate", 100.0);
    label_ = "Gazebo 11 simulation";
    if (nh.hasParam("label") && !nh.getParam("label", label_))
      throw std::runtime_error("parameter " + nh.resolveName("label") + " is not a string");
    if (!(std::isfinite(latency_) && latency_ >= 0.0))
      throw std::runtime_error("parameter latency must be a finite number >= 0");
    if (!(std::isfinite(publish_rate_) && publish_rate_ > 0.0))
      throw std::runtime_error("parameter publish_rate must be a finite number > 0");
    executor_.emplace(initial_);
  }

  // One log line per topic and reason and second (sim2real_checks' Guard).
  bool Due(const std::string& key) {
    const ros::WallTime now = ros::WallTime::now();
    ros::WallTime& last = last_log_[key];
    if (!last.isZero() && (now - last).toSec() < 1.0) return false;
    last = now;
    return true;
  }

  // World thread, at a step's start (time now_).
  void OnCommand(const trajectory_msgs::JointTrajectory& msg) {
    pg::Vector times;
    std::vector<pg::Vector> positions, velocities;
    for (const auto& point : msg.points) {
      times.push_back(point.time_from_start.toSec());
      positions.push_back(point.positions);
      velocities.push_back(point.velocities);
    }
    const double stamp = msg.header.stamp.toSec();
    try {
      executor_->command(
          pg::validate_trajectory(msg.joint_names, times, positions, velocities, limits_,
                                  stamp > 0.0 ? std::optional<double>(stamp) : std::nullopt),
          now_);
    } catch (const pg::TrajectoryRejected& error) {
      executor_->stop(now_ - latency_);
      if (Due("command/" + error.reason()))
        ROS_ERROR(
            "%s/joint_trajectory_controller/command: rejected [%s]: %s; the arm holds "
            "its current reference",
            nh_->getNamespace().c_str(), error.reason().c_str(), error.what());
    }
  }

  void RejectState(const std::string& reason, const std::string& why) {
    if (Due("set_joint_state/" + reason))
      ROS_ERROR("%s/set_joint_state: rejected [%s]: %s", nh_->getNamespace().c_str(),
                reason.c_str(), why.c_str());
  }

  // Every joint by name; positions within the limits, velocities (none: at rest) within them.
  void OnSetState(const sensor_msgs::JointState& msg) {
    const size_t n = limits_.dof();
    if (msg.name.size() != n || msg.position.size() != n ||
        !(msg.velocity.empty() || msg.velocity.size() == n))
      return RejectState("malformed", "expected " + std::to_string(n) +
                                          " names and positions (and velocities or none)");
    pg::Vector q(n), qd(n, 0.0);
    for (size_t j = 0; j < n; ++j) {
      const auto at = std::find(msg.name.begin(), msg.name.end(), limits_.joint_names[j]);
      if (at == msg.name.end()) return RejectState("malformed", "no " + limits_.joint_names[j]);
      const size_t k = at - msg.name.begin();
      q[j] = msg.position[k];
      if (!msg.velocity.empty()) qd[j] = msg.velocity[k];
      if (!std::isfinite(q[j]) || !std::isfinite(qd[j]))
        return RejectState("non_finite", limits_.joint_names[j] + " is NaN or Inf");
      if (q[j] < limits_.position_min[j] || q[j] > limits_.position_max[j] ||
          std::abs(qd[j]) > limits_.velocity[j] * pg::kLimitTolerance)
        return RejectState("bounds", limits_.joint_names[j] + " is outside its limits");
    }
    SetJoints(q, qd);
  }

  void SetJoints(const pg::Vector& q, const pg::Vector& qd) {
    for (size_t j = 0; j < joints_.size(); ++j) {
      joints_[j]->SetPosition(0, q[j], true);
      joints_[j]->SetVelocity(0, qd[j]);
    }
  }

  void OnStepBegin() {
    now_ = world_->SimTime().Double() - dt_;  // the time at this step's start
    if (reset_pending_.exchange(false)) {
      try {
        initial_ = Numbers(*params_, "initial_positions", initial_.size());  // throws if bad
      } catch (const std::exception& error) {
        ROS_ERROR("%s; the arm goes back to the former initial positions", error.what());
      }
      SetJoints(initial_, pg::Vector(initial_.size(), 0.0));
      executor_->hold(initial_);
      pid_->reset();
      steps_ = 0;
    }
    queue_.callAvailable();
    const size_t n = joints_.size();
    pg::Vector q(n), qd(n), q_ref, qd_ref;
    for (size_t j = 0; j < n; ++j) {
      q[j] = joints_[j]->Position(0);
      qd[j] = joints_[j]->GetVelocity(0);
    }
    executor_->reference(now_ - latency_, q_ref, qd_ref);
    pg::JointTorques tau =
        pg::effort_step(*pid_, friction_, limits_.effort, q, qd, q_ref, qd_ref, dt_);
    const auto finite = [](const pg::Vector& v) {
      return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
    };
    if (!finite(tau.link) || !finite(tau.motor)) {  // a diverged state: no NaN into the physics
      if (Due("torque/non_finite"))
        ROS_ERROR("%s: the joint state is not finite; no torque applied, the PID reset",
                  nh_->getNamespace().c_str());
      pid_->reset();
      tau.link.assign(n, 0.0);
      tau.motor.assign(n, 0.0);
    }
    for (size_t j = 0; j < n; ++j) joints_[j]->SetForce(0, tau.link[j]);
    effort_ = tau.motor;
  }

  void OnStepEnd() {
    if (++steps_ % publish_every_ != 0) return;
    const double t = world_->SimTime().Double();
    const size_t n = joints_.size();
    sensor_msgs::JointState state, reference;
    state.header.stamp.fromSec(t);
    state.name = limits_.joint_names;
    state.position.resize(n);
    state.velocity.resize(n);
    state.effort.resize(n);
    for (size_t j = 0; j < n; ++j) {
      state.position[j] = joints_[j]->Position(0);
      state.velocity[j] = joints_[j]->GetVelocity(0);
      state.effort[j] = effort_[j] + offset_[j];
    }
    reference.header = state.header;
    reference.name = state.name;
    executor_->peek(t - latency_, reference.position, reference.velocity);  // as robot.py's
    for (const auto* values : {&state.position, &state.velocity, &state.effort, &reference.position,
                               &reference.velocity}) {
      if (!std::all_of(values->begin(), values->end(), [](double v) { return std::isfinite(v); })) {
        if (Due("joint_states/non_finite"))
          ROS_ERROR("%s/joint_states: a non-finite state was withheld",
                    nh_->getNamespace().c_str());
        return;
      }
    }
    states_pub_.publish(state);
    reference_pub_.publish(reference);
  }

  physics::ModelPtr model_;
  physics::WorldPtr world_;
  std::vector<physics::JointPtr> joints_;
  pg::JointLimits limits_;
  pg::Vector initial_, offset_, effort_;
  std::optional<pg::PidController> pid_;
  std::optional<pg::SigmoidFriction> friction_;
  std::optional<pg::TrajectoryExecutor> executor_;
  double dt_ = 0.001, now_ = 0.0, latency_ = 0.0, publish_rate_ = 100.0;
  std::string label_;
  uint64_t publish_every_ = 10, steps_ = 0;
  std::atomic<bool> reset_pending_{false};
  std::map<std::string, ros::WallTime> last_log_;
  ros::CallbackQueue queue_;  // declared before nh_: destroyed after the subscriptions
  std::unique_ptr<ros::NodeHandle> nh_, params_;
  ros::Publisher states_pub_, reference_pub_, label_pub_;
  ros::Subscriber command_sub_, set_state_sub_;
  event::ConnectionPtr begin_, end_;
};

GZ_REGISTER_MODEL_PLUGIN(PandaEffortPlugin)
}  // namespace gazebo
