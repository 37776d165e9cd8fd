"""The recording launch files as roslaunch resolves them (no master): the root
launch/record_pairs.launch passes publish_rate and split_duration through, the recorder is a
split rosbag record named record_pairs, and the pair runner watches it and ends the launch; the
package's launch files load the configs their arguments name, as mappings."""
import os
import subprocess

from panda_sim2real import (DEFAULT_LIMITS_FILE, DEFAULT_SETTINGS_FILE, DEFAULT_WORK_CYCLE_FILE,
                            REALITY_CONFIG_FILE, GeneratorSettings, JointLimits, WorkCycleSettings)
from sim2real_checks import launch_params, param_mapping as mapping

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOT_LAUNCH = os.path.join(ROOT, "launch", "record_pairs.launch")
LAUNCH = os.path.join(ROOT, "panda_pairs", "launch")


def dump_params(launch: str, *args: str) -> dict:
    return launch_params(os.path.join(LAUNCH, launch), *args)


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


def test_record_pairs_loads_the_configs_its_arguments_name():
    other = os.path.join(os.path.dirname(REALITY_CONFIG_FILE), "individual_b.yaml")
    params = dump_params("record_pairs.launch", f"reality_config:={other}", f"sim_config:={other}")
    for name in ("/real/panda_reality/reality_config", "/sim/panda_sim/config"):
        assert mapping(params, name)["label"] == "reality stand-in (individual B)"


def test_the_pair_runner_gets_its_generator_settings_limits_and_work_cycle_as_mappings():
    params = dump_params("pair_runner.launch", "bag:=/tmp/pairs.bag")
    settings = GeneratorSettings.from_dict(mapping(params, "/pair_runner/generator_config"), "test")
    assert settings == GeneratorSettings.from_yaml(DEFAULT_SETTINGS_FILE)
    assert JointLimits.from_dict(mapping(params, "/pair_runner/limits"), "test") == \
        JointLimits.from_yaml(DEFAULT_LIMITS_FILE)
    assert not any(k.startswith("/pair_runner/work_cycle") for k in params)   # random moves: unused
    params = dump_params("pair_runner.launch", "bag:=/tmp/pairs.bag", "kinds:=task")
    cycle = WorkCycleSettings.from_dict(mapping(params, "/pair_runner/work_cycle"), "test")
    assert cycle.cycle == WorkCycleSettings.from_yaml(DEFAULT_WORK_CYCLE_FILE).cycle
