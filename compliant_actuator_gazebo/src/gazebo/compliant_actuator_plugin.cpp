// Gazebo classic (9, 11) ModelPlugin: one compliant joint (paper 003 §3.1, Fig. 4) as a thin shell
// over the simulator-independent core (compliant::CompliantJoint). Plugin block, per-joint topics
// and messages: see the package README / reference sheet. All physics lives in the core; this file
// only hands the SDF block to the core's parser (plugin_block.hpp, shared with the embedded
// simulation), moves numbers between ROS, Gazebo and the core, and never crashes the simulator:
// every configuration error is a gzerr line and the plugin stays inactive.
#include <compliant_actuator_gazebo/Float64Stamped.h>
#include <compliant_actuator_gazebo/LinkState.h>
#include <compliant_actuator_gazebo/MotorState.h>
#include <ros/callback_queue.h>
#include <ros/ros.h>
#include <std_msgs/Float64.h>

#include <atomic>
#include <compliant_actuator_gazebo/compliant_joint.hpp>
#include <compliant_actuator_gazebo/plugin_block.hpp>
#include <gazebo/common/Events.hh>
#include <gazebo/common/Plugin.hh>
#include <gazebo/physics/physics.hh>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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
    // The block's children, parsed and validated by the core's parse_plugin_block (the parser
    // of description.py too, so both simulators accept and refuse the same blocks).
    std::vector<compliant::BlockTag> tags;
    for (sdf::ElementPtr e = sdf->GetFirstElement(); e; e = e->GetNextElement())
      tags.push_back({e->GetName(), e->Get<std::string>(), e->GetFirstElement() != nullptr});
    compliant::PluginSettings settings;
    try {
      settings = compliant::parse_plugin_block(
          tags, model->GetName(),
          [&model](const std::string& name) -> std::string {
            const physics::JointPtr joint = model->GetJoint(name);
            if (!joint) return "model '" + model->GetName() + "' has no joint '" + name + "'";
            if (joint->DOF() != 1 || !joint->HasType(physics::Base::HINGE_JOINT))
              return "joint '" + name + "' is not revolute; a compliant actuator drives a " +
                     "revolute or continuous joint";
            return "";
          },
          Where());
    } catch (const compliant::PluginBlockError& error) {
      return Fail(error.what());
    }
    joint_ = model->GetJoint(settings.joint);
    world_ = model->GetWorld();
    try {
      core_ = std::make_unique<compliant::CompliantJoint>(settings.actuator, settings.params);
      for (compliant::Input input : compliant::mode_inputs(core_->mode()))
        used_[static_cast<int>(input)] = true;  // ExternalTorque included
      if (!ros::isInitialized())
        throw std::runtime_error(
            "ROS is not initialised: load Gazebo's ROS system plugin "
            "libgazebo_ros_api_plugin.so (roslaunch gazebo_ros ...)");
      ns_ = "/" + settings.robot_namespace + "/" + settings.joint;
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
      return Fail(Where() + ": " + error.what());
    }
    reset_pending_ = true;  // the core starts at the joint's position on the first update
    running_ = true;
    queue_thread_ = std::thread([this] {
      while (running_ && nh_->ok()) queue_.callAvailable(ros::WallDuration(0.01));
    });
    update_ =
        event::Events::ConnectWorldUpdateBegin([this](const common::UpdateInfo&) { OnUpdate(); });
    ROS_INFO("%s: %s actuator in operation mode %d", ns_.c_str(), settings.actuator_type.c_str(),
             settings.mode);
  }

  // World reset: restart the core where the joint is, at the current time (next update).
  void Reset() override { reset_pending_ = true; }

 private:
  std::string Where() const { return "plugin '" + GetHandle() + "'"; }

  // `why` is one line that names the plugin (Where()).
  void Fail(const std::string& why) {
    gzerr << "[compliant_actuator_plugin] " << why << "; the plugin is not active\n";
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
