// Gazebo 11 SystemPlugin: the part of gazebo_ros_api_plugin a sim2real user needs, without
// gazebo_ros (no Debian release packages it). Load it with `gzserver -s
// libsim2real_gazebo_ros_api.so`.
//   * ros::init as node /gazebo (the model plugins then find ROS initialised);
//   * /clock (rosgraph_msgs/Clock), sim time, at most ~pub_clock_frequency per simulated second;
//   * /gazebo/pause_physics, /gazebo/unpause_physics, /gazebo/reset_simulation, /gazebo/reset_world
//     (std_srvs/Empty, gazebo_ros's names) and /gazebo/step_world (sim2real_gazebo/StepWorld:
//     lock-step driving of a paused world, with std_msgs/Float64 inputs and
//     trajectory_msgs/JointTrajectory commands published in-process just before the steps);
//   * the model of the parameter named by SIM2REAL_SPAWN (environment) or ~spawn (URDF or SDF
//     text, e.g. robot_description) inserted when the world is created, as gazebo_ros's
//     spawn_model does at launch.
// The services run one at a time on one thread. step_world publishes its inputs in-process, then
// waits for two rounds of roscpp's poll thread (which delivers publications and reads sockets),
// so they, and the messages read with the request, are in the plugins' queues before the first
// step; it returns once the last step's update has ended: lock-stepped runs are deterministic.
// Errors are one gzerr line; gzserver never stops because of this plugin.
#include <ros/callback_queue.h>
#include <ros/poll_manager.h>
#include <ros/ros.h>
#include <rosgraph_msgs/Clock.h>
#include <sim2real_gazebo/StepWorld.h>
#include <std_msgs/Float64.h>
#include <std_srvs/Empty.h>
#include <trajectory_msgs/JointTrajectory.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <gazebo/common/Events.hh>
#include <gazebo/common/Plugin.hh>
#include <gazebo/physics/physics.hh>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gazebo {

class Sim2RealRosApi : public SystemPlugin {
 public:
  ~Sim2RealRosApi() override {
    update_.reset();
    end_.reset();
    created_.reset();
    poll_listener_.disconnect();
    if (spinner_) spinner_->stop();
    services_.clear();
    nh_.reset();
    if (ros::isInitialized()) ros::shutdown();
  }

  void Load(int argc, char** argv) override {
    if (!ros::isInitialized()) ros::init(argc, argv, "gazebo", ros::init_options::NoSigintHandler);
    if (!ros::master::check()) {
      gzerr << "[sim2real_gazebo_ros_api] no ROS master at " << ros::master::getURI()
            << "; start roscore (or roslaunch) first, ROS_MASTER_URI must name it\n";
      return;
    }
    nh_ = std::make_unique<ros::NodeHandle>("~");  // /gazebo
    nh_->setCallbackQueue(&queue_);
    nh_->param("pub_clock_frequency", clock_rate_, 1000.0);
    const char* spawn = std::getenv("SIM2REAL_SPAWN");
    if (spawn)
      spawn_param_ = spawn;
    else
      nh_->param<std::string>("spawn", spawn_param_, "");
    poll_listener_ = ros::PollManager::instance()->addPollThreadListener([this] {
      {
        std::lock_guard<std::mutex> lock(poll_mutex_);
        ++poll_rounds_;
      }
      poll_done_.notify_all();
    });
    created_ = event::Events::ConnectWorldCreated([this](std::string name) { OnWorld(name); });
  }

 private:
  void OnWorld(const std::string& name) {
    world_ = physics::get_world(name);
    if (!world_ || !nh_) return;
    ros::NodeHandle root;
    root.setCallbackQueue(&queue_);
    clock_pub_ = root.advertise<rosgraph_msgs::Clock>("/clock", 10);
    Empty("pause_physics", [this] { world_->SetPaused(true); });
    Empty("unpause_physics", [this] { world_->SetPaused(false); });
    Empty("reset_simulation", [this] { world_->Reset(); });
    Empty("reset_world", [this] { world_->ResetEntities(physics::Base::MODEL); });
    services_.push_back(nh_->advertiseService<sim2real_gazebo::StepWorld::Request,
                                              sim2real_gazebo::StepWorld::Response>(
        "step_world", [this](sim2real_gazebo::StepWorld::Request& req,
                             sim2real_gazebo::StepWorld::Response& res) {
          if (req.topics.size() != req.values.size() ||
              req.trajectory_topics.size() != req.trajectories.size()) {
            ROS_ERROR(
                "%s/step_world: %zu topics but %zu values, %zu trajectory topics but %zu "
                "trajectories; nothing done",
                nh_->getNamespace().c_str(), req.topics.size(), req.values.size(),
                req.trajectory_topics.size(), req.trajectories.size());
            return false;
          }
          for (size_t i = 0; i < req.topics.size(); ++i)
            Publish<std_msgs::Float64>(inputs_, req.topics[i], Float64(req.values[i]));
          for (size_t i = 0; i < req.trajectories.size(); ++i)
            Publish(trajectories_, req.trajectory_topics[i], req.trajectories[i]);
          if (req.steps > 0) {
            // roscpp delivers publications (intra-process ones too) from its poll thread, at
            // the start of a round: two rounds and they are in the plugins' queues
            AwaitPollRound();
            AwaitPollRound();
            if (!world_->IsPaused()) world_->SetPaused(true);
            const uint64_t target = world_->Iterations() + req.steps;
            world_->Step(req.steps);  // returns once the world has counted the steps
            AwaitUpdateEnd(target);   // and the last one's update has ended
          }
          res.sim_time = world_->SimTime().Double();
          res.iterations = world_->Iterations();
          return true;
        }));
    update_ = event::Events::ConnectWorldUpdateBegin(
        [this](const common::UpdateInfo& info) { PublishClock(info.simTime); });
    // the step's end: its begin callbacks (the plugins taking their inputs) have all run
    end_ = event::Events::ConnectWorldUpdateEnd([this] {
      {
        std::lock_guard<std::mutex> lock(end_mutex_);
        ended_ = world_->Iterations();
      }
      end_done_.notify_all();
    });
    Spawn();
    PublishClock(world_->SimTime(), true);
    // one thread: the services change the world one at a time (a step_world blocks the others)
    spinner_ = std::make_unique<ros::AsyncSpinner>(1, &queue_);
    spinner_->start();
    ROS_INFO("sim2real_gazebo_ros_api: world '%s', /clock at %g Hz of sim time, services in %s",
             name.c_str(), clock_rate_, nh_->getNamespace().c_str());
  }

  template <class F>
  void Empty(const std::string& service, F action) {
    services_.push_back(nh_->advertiseService<std_srvs::Empty::Request, std_srvs::Empty::Response>(
        service, [action](std_srvs::Empty::Request&, std_srvs::Empty::Response&) {
          action();
          return true;
        }));
  }

  // Waits until the world update of iteration `target` has ended (at most 1 s).
  void AwaitUpdateEnd(uint64_t target) {
    std::unique_lock<std::mutex> lock(end_mutex_);
    end_done_.wait_for(lock, std::chrono::seconds(1), [this, target] { return ended_ >= target; });
  }

  static std_msgs::Float64 Float64(double value) {
    std_msgs::Float64 msg;
    msg.data = value;
    return msg;
  }

  // An input published in this process: roscpp's poll thread hands it to the subscriber queues
  // of this process's plugins (an intra-process link, no socket).
  template <class M>
  void Publish(std::map<std::string, ros::Publisher>& publishers, const std::string& topic,
               const M& msg) {
    auto found = publishers.find(topic);
    if (found == publishers.end()) {
      ros::NodeHandle root;
      found = publishers.emplace(topic, root.advertise<M>(topic, 10)).first;
    }
    found->second.publish(msg);
  }

  // Waits until roscpp's poll thread starts a new round (woken at once), i.e. has handed every
  // message it read with this request to its queue; at most 0.5 s.
  void AwaitPollRound() {
    std::unique_lock<std::mutex> lock(poll_mutex_);
    const uint64_t seen = poll_rounds_;
    ros::PollManager::instance()->getPollSet().signal();
    poll_done_.wait_for(lock, std::chrono::milliseconds(500),
                        [this, seen] { return poll_rounds_ > seen; });
  }

  // The model text of parameter ~spawn (a URDF is converted by sdformat, its <gazebo> plugin
  // blocks become model plugins). A missing or empty parameter: one line, nothing inserted.
  void Spawn() {
    if (spawn_param_.empty()) return;
    std::string text;
    if (!ros::param::get(spawn_param_, text) || text.empty()) {
      gzerr << "[sim2real_gazebo_ros_api] ~spawn names parameter '" << spawn_param_
            << "', which holds no model text; nothing spawned\n";
      return;
    }
    world_->InsertModelString(text);
  }

  void PublishClock(const common::Time& time, bool force = false) {
    const double t = time.Double();
    if (!force && clock_rate_ > 0.0 && t - last_clock_ < 1.0 / clock_rate_ - 1e-12 &&
        t >= last_clock_)
      return;
    last_clock_ = t;
    rosgraph_msgs::Clock msg;
    msg.clock.fromSec(t);
    clock_pub_.publish(msg);
  }

  physics::WorldPtr world_;
  std::unique_ptr<ros::NodeHandle> nh_;
  ros::CallbackQueue queue_;
  std::unique_ptr<ros::AsyncSpinner> spinner_;
  std::vector<ros::ServiceServer> services_;
  ros::Publisher clock_pub_;
  std::map<std::string, ros::Publisher> inputs_, trajectories_;  // step_world's, by topic
  double clock_rate_ = 1000.0, last_clock_ = -1.0;
  std::string spawn_param_;
  std::mutex poll_mutex_;
  std::condition_variable poll_done_;
  uint64_t poll_rounds_ = 0;
  boost::signals2::connection poll_listener_;
  std::mutex end_mutex_;
  std::condition_variable end_done_;
  uint64_t ended_ = 0;
  event::ConnectionPtr created_, update_, end_;
};

GZ_REGISTER_SYSTEM_PLUGIN(Sim2RealRosApi)
}  // namespace gazebo
