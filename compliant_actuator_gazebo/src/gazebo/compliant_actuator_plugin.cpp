// Gazebo 11 ModelPlugin: one compliant joint (paper 003 §3.1, Fig. 4) as a thin shell over the
// simulator-independent core (compliant::CompliantJoint). Plugin block, per-joint topics and
// messages: the package README / reference sheet. All physics lives in the core; this file hands
// the SDF block to the core's parser (plugin_block.hpp, shared with the embedded simulation),
// checks the inputs (input_bounds.hpp), moves numbers between ROS, Gazebo and the core, and never
// crashes the simulator: a configuration error is one gzerr line and the whole model is removed
// (no half-loaded robot).
//
// Timing, as in the embedded simulation (embedded.py): the state at the end of a world step (time
// t) goes to CompliantJoint::update(t, q, qd); its torque is applied during the next step. Inputs
// are taken from this plugin's callback queue at the start of every step, in the world's thread:
// an input that arrived before a step applies during that step (a changed input recomputes the
// torque at the same time, dt = 0), so a lock-stepped run (sim2real_gazebo's step_world) is
// deterministic. States go out at every world iteration that is a multiple of
// round(1 / (publish_rate * step)). Parameters (ROS, read at load): /<robot>/publish_rate [Hz of
// sim time, 100],
// /<robot>/initial_inputs {joint: {input: value}} as compliant_sim's ~initial_inputs.
#include <compliant_actuator_gazebo/Float64Stamped.h>
#include <compliant_actuator_gazebo/LinkState.h>
#include <compliant_actuator_gazebo/MotorState.h>
#include <ros/callback_queue.h>
#include <ros/ros.h>
#include <std_msgs/Float64.h>

#include <array>
#include <atomic>
#include <cmath>
#include <compliant_actuator_gazebo/compliant_joint.hpp>
#include <compliant_actuator_gazebo/input_bounds.hpp>
#include <compliant_actuator_gazebo/plugin_block.hpp>
#include <gazebo/common/Events.hh>
#include <gazebo/common/Plugin.hh>
#include <gazebo/msgs/msgs.hh>
#include <gazebo/physics/physics.hh>
#include <gazebo/transport/transport.hh>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gazebo {
namespace cag = compliant_actuator_gazebo;

class CompliantActuatorPlugin : public ModelPlugin {
 public:
  ~CompliantActuatorPlugin() override {
    begin_.reset();
    end_.reset();
    subscribers_.clear();
    if (nh_) nh_->shutdown();
  }

  void Load(physics::ModelPtr model, sdf::ElementPtr sdf) override {
    model_ = model;
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
      bounds_ = compliant::input_bounds(*settings.actuator, settings.params, joint_->LowerLimit(0),
                                        joint_->UpperLimit(0), joint_->GetEffortLimit(0));
      if (!ros::isInitialized())
        throw std::runtime_error(
            "ROS is not initialised: start gzserver with the system plugin "
            "-s libsim2real_gazebo_ros_api.so (sim2real_gazebo)");
      const std::string robot = "/" + settings.robot_namespace;
      ns_ = robot + "/" + settings.joint;
      ros::param::param(robot + "/publish_rate", publish_rate_, 100.0);
      if (!(publish_rate_ > 0.0))
        throw std::runtime_error(robot + "/publish_rate must be a number > 0, got " +
                                 std::to_string(publish_rate_));
      // states every publish_every_-th world iteration: the rate in whole steps (no drift of a
      // time schedule against Gazebo's nanosecond clock)
      const double step = world_->Physics()->GetMaxStepSize();
      publish_every_ = std::max<uint64_t>(1, std::llround(1.0 / (publish_rate_ * step)));
      InitialInputs(robot + "/initial_inputs/" + settings.joint);
      nh_ = std::make_unique<ros::NodeHandle>(ns_);  // throws for a name ROS refuses
      nh_->setCallbackQueue(&queue_);
      for (int i = 0; i < compliant::kInputCount; ++i) {  // all nine inputs
        const auto input = static_cast<compliant::Input>(i);
        subscribers_.push_back(nh_->subscribe<std_msgs::Float64>(
            compliant::input_name(input), 10,
            [this, input](const std_msgs::Float64::ConstPtr& msg) { OnInput(input, msg->data); }));
      }
      link_pub_ = nh_->advertise<cag::LinkState>("link_state", 100);
      motor_pub_[0] = nh_->advertise<cag::MotorState>("motor_1_state", 100);
      motor_pub_[1] = nh_->advertise<cag::MotorState>("motor_2_state", 100);
      spring_pub_[0] = nh_->advertise<cag::Float64Stamped>("torque_el1_state", 100);
      spring_pub_[1] = nh_->advertise<cag::Float64Stamped>("torque_el2_state", 100);
    } catch (const std::exception& error) {
      subscribers_.clear();
      nh_.reset();
      core_.reset();
      return Fail(Where() + ": " + error.what());
    }
    reset_pending_ = true;  // the core starts at the joint's position on the first step
    begin_ = event::Events::ConnectWorldUpdateBegin(
        [this](const common::UpdateInfo&) { OnStepBegin(); });
    end_ = event::Events::ConnectWorldUpdateEnd([this] { OnStepEnd(); });
    ROS_INFO("%s: %s actuator in operation mode %d, states every %lu steps (%g Hz)", ns_.c_str(),
             settings.actuator_type.c_str(), settings.mode,
             static_cast<unsigned long>(publish_every_),
             1.0 / (publish_every_ * world_->Physics()->GetMaxStepSize()));
  }

  // World reset: restart the core where the joint is, at the current time (next step).
  void Reset() override { reset_pending_ = true; }

 private:
  std::string Where() const {
    return "model '" + model_->GetName() + "', plugin '" + GetHandle() + "'";
  }

  // `why` is one line that names the model and the plugin. The model is removed whole, through
  // the world's request topic (as `gz model -d`), outside this plugin's own call stack.
  void Fail(const std::string& why) {
    gzerr << "[compliant_actuator_plugin] " << why << "; model '" << model_->GetName()
          << "' removed\n";
    transport::NodePtr node(new transport::Node());
    node->Init(model_->GetWorld()->Name());
    transport::PublisherPtr requests = node->Advertise<msgs::Request>("~/request");
    std::unique_ptr<msgs::Request> request(
        msgs::CreateRequest("entity_delete", model_->GetScopedName()));
    requests->Publish(*request);
  }

  // /<robot>/initial_inputs/<joint>/<input>: numbers, checked as a message is.
  void InitialInputs(const std::string& key) {
    std::map<std::string, double> values;
    if (!ros::param::get(key, values)) return;
    for (const auto& [name, value] : values) {
      const compliant::Input input = compliant::input_from_name(name);  // throws for a bad name
      if (!Accept(input, value))
        throw std::runtime_error(key + "/" + name + ": " + std::to_string(value) +
                                 " is not finite or outside its bounds");
    }
  }

  // Stores an input after the checks of compliant_sim: finite, within bounds_ (the last valid
  // value is kept otherwise). Returns false for a rejected value.
  bool Accept(compliant::Input input, double value) {
    const auto& range = bounds_[static_cast<int>(input)];
    if (!std::isfinite(value) || !range.contains(value)) return false;
    if (!core_->set_input(input, value)) return false;
    inputs_changed_ = true;
    return true;
  }

  // One log line per topic (or this joint) and reason and period, as sim2real_checks' Guard:
  // roscpp's ROS_*_THROTTLE keeps one clock per call site, shared by every joint and topic.
  enum Reason { kNonFinite, kBounds, kClamped, kUnused, kFailed, kReasons };
  bool Due(int topic, Reason reason, double period) {
    const ros::WallTime now = ros::WallTime::now();
    ros::WallTime& last = last_log_[topic * kReasons + reason];
    if (!last.isZero() && (now - last).toSec() < period) return false;
    last = now;
    return true;
  }

  // World thread (the queue is called at the start of a step).
  void OnInput(compliant::Input input, double value) {
    const char* name = compliant::input_name(input);
    const int topic = static_cast<int>(input);
    const auto& range = bounds_[topic];
    try {
      if (!std::isfinite(value)) {
        if (Due(topic, kNonFinite, 1.0))
          ROS_ERROR("%s/%s: rejected [non_finite]: %f; the last valid value is kept", ns_.c_str(),
                    name, value);
      } else if (!Accept(input, value)) {
        if (Due(topic, kBounds, 1.0))
          ROS_ERROR("%s/%s: rejected [bounds]: %g outside [%g, %g]; the last valid value is kept",
                    ns_.c_str(), name, value, range.low, range.high);
      } else if (input == compliant::Input::StiffnessPreset && core_->clamped_preset()) {
        if (Due(topic, kClamped, 1.0))
          ROS_WARN("%s/%s: %g is outside the %s model's domain, clamped to %g", ns_.c_str(), name,
                   value, core_->actuator().type().c_str(), core_->input(input));
      } else if (!used_[topic]) {
        if (Due(topic, kUnused, 5.0))
          ROS_WARN("%s/%s: not an input of operation mode %d (stored, unused)", ns_.c_str(), name,
                   static_cast<int>(core_->mode()));
      }
    } catch (const std::exception& error) {  // e.g. a user actuator's check_preset
      if (Due(topic, kFailed, 1.0)) ROS_ERROR("%s/%s: %s", ns_.c_str(), name, error.what());
    }
  }

  // Start of a step: the inputs that arrived, then the torque held during this step.
  void OnStepBegin() {
    queue_.callAvailable();
    if (reset_pending_.exchange(false)) {
      // the state at the step's start: the world's time minus this step
      const double step = world_->Physics()->GetMaxStepSize();
      last_time_ = world_->SimTime().Double() - step;
      Update(last_time_, true);
    } else if (inputs_changed_) {
      Update(last_time_, false);  // same time: only computes, with the new inputs
    }
    inputs_changed_ = false;
    if (torque_ok_) joint_->SetForce(0, torque_);
  }

  // End of a step: the state at time t through the core; published when due.
  void OnStepEnd() {
    last_time_ = world_->SimTime().Double();
    Update(last_time_, false);
    if (world_->Iterations() % publish_every_ == 0) Publish();
  }

  void Update(double time, bool reset) {
    const double q = joint_->Position(0), qd = joint_->GetVelocity(0);
    try {
      if (reset) {
        core_->reset(q, time);
      }
      core_->update(time, q, qd);
      torque_ = core_->output().link_torque;
      torque_ok_ = std::isfinite(torque_);
    } catch (const std::exception& error) {
      torque_ok_ = false;
      if (Due(compliant::kInputCount, kFailed, 1.0))
        ROS_ERROR("%s: %s; no torque applied", ns_.c_str(), error.what());
    }
    q_ = q;
    qd_ = qd;
  }

  static bool Finite(std::initializer_list<double> values) {
    for (double v : values)
      if (!std::isfinite(v)) return false;
    return true;
  }

  // Nothing non-finite leaves the plugin: a state with NaN/Inf is withheld (one throttled line).
  void Publish() {
    const compliant::JointOutput& out = core_->output();
    const ros::Time stamp(last_time_);
    const compliant::MotorState* motors[2] = {&out.motor1, &out.motor2};
    const double springs[2] = {out.spring.t1, out.spring.t2};
    if (!Finite({q_, qd_, out.link_torque, out.stiffness, out.deflection, out.reference_1,
                 out.reference_2, motors[0]->position, motors[0]->velocity, motors[0]->torque,
                 motors[1]->position, motors[1]->velocity, motors[1]->torque, springs[0],
                 springs[1]})) {
      if (Due(compliant::kInputCount, kNonFinite, 1.0))
        ROS_ERROR("%s: a non-finite state was withheld", ns_.c_str());
      return;
    }
    cag::LinkState link;
    link.header.stamp = stamp;
    link.position = q_;
    link.velocity = qd_;
    link.effort = out.link_torque;
    link.stiffness = out.stiffness;
    link.deflection = out.deflection;
    link.reference_1 = out.reference_1;
    link.reference_2 = out.reference_2;
    link_pub_.publish(link);
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

  physics::ModelPtr model_;
  physics::WorldPtr world_;
  physics::JointPtr joint_;
  std::unique_ptr<compliant::CompliantJoint> core_;
  std::array<compliant::InputRange, compliant::kInputCount> bounds_{};
  bool used_[compliant::kInputCount] = {};
  std::string ns_;
  double publish_rate_ = 100.0, last_time_ = 0.0;
  uint64_t publish_every_ = 1;  // world steps per publication
  double torque_ = 0.0, q_ = 0.0, qd_ = 0.0;
  bool torque_ok_ = false, inputs_changed_ = false;
  std::atomic<bool> reset_pending_{false};  // set by Reset() (a service thread)
  std::map<int, ros::WallTime> last_log_;   // Due()
  ros::CallbackQueue queue_;  // declared before nh_: destroyed after the subscriptions
  std::unique_ptr<ros::NodeHandle> nh_;
  std::vector<ros::Subscriber> subscribers_;
  ros::Publisher link_pub_, motor_pub_[2], spring_pub_[2];
  event::ConnectionPtr begin_, end_;
};

GZ_REGISTER_MODEL_PLUGIN(CompliantActuatorPlugin)
}  // namespace gazebo
