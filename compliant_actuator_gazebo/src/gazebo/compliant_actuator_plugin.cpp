// Gazebo classic (9, 11) ModelPlugin: one compliant joint (paper 003 §3.1, Fig. 4) as a thin shell
// over the simulator-independent core (compliant::CompliantJoint). Plugin block, per-joint topics
// and messages: see the package README / reference sheet. All physics lives in the core; this file
// only reads the SDF block, moves numbers between ROS, Gazebo and the core, and never crashes the
// simulator: every configuration error is a gzerr line and the plugin stays inactive.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gazebo/common/Events.hh>
#include <gazebo/common/Plugin.hh>
#include <gazebo/physics/physics.hh>
#include <ros/callback_queue.h>
#include <ros/ros.h>
#include <std_msgs/Float64.h>

#include <compliant_actuator_gazebo/Float64Stamped.h>
#include <compliant_actuator_gazebo/LinkState.h>
#include <compliant_actuator_gazebo/MotorState.h>
#include <compliant_actuator_gazebo/compliant_joint.hpp>
#include <compliant_actuator_gazebo/factory.hpp>

namespace gazebo {
namespace cag = compliant_actuator_gazebo;

class CompliantActuatorPlugin : public ModelPlugin {
 public:
  ~CompliantActuatorPlugin() override {
    update_.reset();
    running_ = false;
    if (queue_thread_.joinable()) queue_thread_.join();
    subscribers_.clear();
    if (nh_) nh_->shutdown();
  }

  void Load(physics::ModelPtr model, sdf::ElementPtr sdf) override {
    std::string robot, joint_name, type;
    double mode = std::nan("");
    std::map<std::string, double> params;
    for (sdf::ElementPtr e = sdf->GetFirstElement(); e; e = e->GetNextElement()) {
      const std::string key = e->GetName(), value = Trim(e->Get<std::string>());
      if (key == "robotNamespace") {
        robot = value.substr(std::min(value.find_first_not_of('/'), value.size()));
        robot = robot.substr(0, robot.find_last_not_of('/') + 1);
      } else if (key == "joint") {
        joint_name = value;
      } else if (key == "actuator") {
        type = value;
      } else {  // <operationMode> or a parameter name of factory.hpp
        double number = 0.0;
        if (!ParseNumber(value, &number))
          return Fail("<" + key + "> is not a finite number: '" + value + "'");
        (key == "operationMode" ? mode : params[key]) = number;
      }
    }
    if (robot.empty()) robot = model->GetName();
    if (joint_name.empty()) return Fail("missing <joint>");
    if (type.empty()) return Fail("missing <actuator> (sea, qbmove, bavs, awas)");
    if (std::isnan(mode)) return Fail("missing <operationMode> (0..6)");
    if (mode != std::floor(mode) || mode < 0 || mode > 6)
      return Fail("<operationMode> must be an integer 0..6");
    joint_ = model->GetJoint(joint_name);
    if (!joint_) return Fail("model '" + model->GetName() + "' has no joint '" + joint_name + "'");
    if (joint_->DOF() != 1) return Fail("joint '" + joint_name + "' must have exactly one axis");
    world_ = model->GetWorld();
    try {
      core_ = MakeCore(type, static_cast<int>(mode), params);
      for (compliant::Input input : compliant::mode_inputs(core_->mode()))
        used_[static_cast<int>(input)] = true;  // ExternalTorque included
      if (!ros::isInitialized())
        throw std::runtime_error("ROS is not initialised: load Gazebo's ROS system plugin "
                                 "libgazebo_ros_api_plugin.so (roslaunch gazebo_ros ...)");
      ns_ = "/" + robot + "/" + joint_name;
      nh_ = std::make_unique<ros::NodeHandle>(ns_);  // throws for a name ROS refuses
      nh_->setCallbackQueue(&queue_);
      for (int i = 0; i < compliant::kInputCount; ++i) {  // all nine inputs
        const auto input = static_cast<compliant::Input>(i);
        subscribers_.push_back(nh_->subscribe<std_msgs::Float64>(
            compliant::input_name(input), 10,
            [this, input](const std_msgs::Float64::ConstPtr& msg) { OnInput(input, msg->data); }));
      }
      link_pub_ = nh_->advertise<cag::LinkState>("link_state", 10);
      motor_pub_[0] = nh_->advertise<cag::MotorState>("motor_1_state", 10);
      motor_pub_[1] = nh_->advertise<cag::MotorState>("motor_2_state", 10);
      spring_pub_[0] = nh_->advertise<cag::Float64Stamped>("torque_el1_state", 10);
      spring_pub_[1] = nh_->advertise<cag::Float64Stamped>("torque_el2_state", 10);
    } catch (const std::exception& error) {
      subscribers_.clear();
      nh_.reset();
      core_.reset();
      return Fail(error.what());
    }
    reset_pending_ = true;  // the core starts at the joint's position on the first update
    running_ = true;
    queue_thread_ = std::thread([this] {
      while (running_ && nh_->ok()) queue_.callAvailable(ros::WallDuration(0.01));
    });
    update_ = event::Events::ConnectWorldUpdateBegin(
        [this](const common::UpdateInfo&) { OnUpdate(); });
    ROS_INFO("%s: %s actuator in operation mode %d", ns_.c_str(), type.c_str(),
             static_cast<int>(mode));
  }

  // World reset: restart the core where the joint is, at the current time (next update).
  void Reset() override { reset_pending_ = true; }

 private:
  void Fail(const std::string& why) {
    gzerr << "[compliant_actuator_plugin] " << GetHandle() << ": " << why
          << "; the plugin is not active\n";
  }

  // One mixed parameter map from the SDF block, split by name (factory.hpp).
  static std::unique_ptr<compliant::CompliantJoint> MakeCore(
      const std::string& type, int mode, const std::map<std::string, double>& params) {
    const std::vector<std::string> names = compliant::actuator_parameter_names(type);
    std::map<std::string, double> actuator_params, joint_params;
    for (const auto& kv : params) {
      const bool is_actuator = std::find(names.begin(), names.end(), kv.first) != names.end();
      (is_actuator ? actuator_params : joint_params).insert(kv);
    }
    return std::make_unique<compliant::CompliantJoint>(
        compliant::make_actuator(type, actuator_params),
        compliant::make_joint_params(mode, joint_params));
  }

  static std::string Trim(const std::string& s) {
    const auto begin = s.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos) return "";
    return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
  }

  static bool ParseNumber(const std::string& text, double* value) {
    char* end = nullptr;
    *value = std::strtod(text.c_str(), &end);
    return !text.empty() && end == text.c_str() + text.size() && std::isfinite(*value);
  }

  // ROS thread: store an input (the core refuses NaN/Inf and clamps presets out of the domain).
  void OnInput(compliant::Input input, double value) {
    const char* name = compliant::input_name(input);
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      if (!core_->set_input(input, value)) {
      ROS_ERROR_THROTTLE(1.0, "%s/%s: rejected non-finite value %f", ns_.c_str(), name, value);
      } else if (input == compliant::Input::StiffnessPreset && core_->clamped_preset()) {
        ROS_WARN_THROTTLE(1.0, "%s/%s: %f is outside the %s model's domain, clamped to %f",
                          ns_.c_str(), name, value, core_->actuator().type().c_str(),
                          core_->input(input));
      } else if (!used_[static_cast<int>(input)]) {
        ROS_WARN_THROTTLE(5.0, "%s/%s: not an input of operation mode %d (stored, unused)",
                          ns_.c_str(), name, static_cast<int>(core_->mode()));
      }
    } catch (const std::exception& error) {  // e.g. a user actuator's check_preset
      ROS_ERROR_THROTTLE(1.0, "%s/%s: %s", ns_.c_str(), name, error.what());
    }
  }

  // Gazebo thread, every world step: core update at the link's state, torque to the joint.
  void OnUpdate() {
    const double time = world_->SimTime().Double();
    const double q = joint_->Position(0), qd = joint_->GetVelocity(0);
    compliant::JointOutput out;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      try {
        // after Load/Reset; a clock jump alone is handled by the core (dt <= 0 re-synchronises)
        if (reset_pending_.exchange(false)) core_->reset(q, time);
        core_->update(time, q, qd);
      } catch (const std::exception& error) {
        ROS_ERROR_THROTTLE(1.0, "%s: %s; no torque applied", ns_.c_str(), error.what());
        return;
      }
      out = core_->output();
    }
    joint_->SetForce(0, out.link_torque);
    const ros::Time stamp(time);
    cag::LinkState link;
    link.header.stamp = stamp;
    link.position = q;
    link.velocity = qd;
    link.effort = out.link_torque;
    link.stiffness = out.stiffness;
    link.deflection = out.deflection;
    link.reference_1 = out.reference_1;
    link.reference_2 = out.reference_2;
    link_pub_.publish(link);
    const compliant::MotorState* motors[2] = {&out.motor1, &out.motor2};
    const double springs[2] = {out.spring.t1, out.spring.t2};
    for (int k = 0; k < 2; ++k) {
      cag::MotorState motor;
      motor.header.stamp = stamp;
      motor.position = motors[k]->position;
      motor.velocity = motors[k]->velocity;
      motor.effort = motors[k]->torque;
      motor_pub_[k].publish(motor);
      cag::Float64Stamped spring;
      spring.header.stamp = stamp;
      spring.data = springs[k];
      spring_pub_[k].publish(spring);
    }
  }

  physics::WorldPtr world_;
  physics::JointPtr joint_;
  std::unique_ptr<compliant::CompliantJoint> core_;
  bool used_[compliant::kInputCount] = {};
  std::string ns_;
  std::mutex mutex_;  // core_ between the ROS queue thread and the Gazebo update
  std::atomic<bool> reset_pending_{false}, running_{false};
  ros::CallbackQueue queue_;  // declared before nh_: destroyed after the subscriptions
  std::unique_ptr<ros::NodeHandle> nh_;
  std::vector<ros::Subscriber> subscribers_;
  ros::Publisher link_pub_, motor_pub_[2], spring_pub_[2];
  std::thread queue_thread_;
  event::ConnectionPtr update_;
};

GZ_REGISTER_MODEL_PLUGIN(CompliantActuatorPlugin)
}  // namespace gazebo
