"""The recording launch files as roslaunch resolves them (no master): the root
launch/record_pairs.launch passes publish_rate and split_duration through, the recorder is a
split rosbag record named record_pairs, and the pair runner watches it and ends the launch."""
import os
import subprocess

from sim2real_checks.launch_testing import launch_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOT_LAUNCH = os.path.join(ROOT, "launch", "record_pairs.launch")


def roslaunch(*args: str) -> str:
    done = subprocess.run(["roslaunch", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_root_launch_passes_the_publish_rate_to_both_robots():
    params = launch_params(ROOT_LAUNCH, "publish_rate:=1000")
    assert params["/sim/panda_sim/publish_rate"] == 1000
    assert params["/real/panda_reality/publish_rate"] == 1000
    runner = {k.split("/")[-1]: v for k, v in params.items() if k.startswith("/pair_runner/")}
    assert runner["recorder"] == "record_pairs" and runner["end_launch"] is True
    assert runner["wait_for_recorder"] is True and runner["stamp_tolerance"] == 0.2


def test_the_recorder_records_split_files_under_the_given_name():
    command = roslaunch("--args", "record_pairs", ROOT_LAUNCH, "bag:=/data/run.bag",
                        "split_duration:=2").split()
    assert os.path.basename(command[0]) == "split_recorder"
    assert command[1:6] == ["-O", "/data/run.bag", "--split", "--duration=2", "/sim/joint_states"]
    assert "/pairs/event" in command and command[-1] == "__name:=record_pairs"
