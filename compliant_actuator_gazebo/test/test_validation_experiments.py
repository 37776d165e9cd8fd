"""The validation experiments in the embedded simulation: the 2-DoF experiments of paper 003 §4.2.2,
the 5-DoF CLIK push of §4.2.3 and the §4.3 ILC on the paper's arm (with spring saturation)."""
import os
import subprocess
import sys

import numpy as np
import pytest
from sim2real_checks import check_conventions

from compliant_actuator_gazebo.experiments.arm_trial import EmbeddedTrial
from compliant_actuator_gazebo.experiments.clik import PushConfig, push_metrics, run_push
from compliant_actuator_gazebo.description import load_description
from compliant_actuator_gazebo.experiments.ilc import IlcConfig, minimum_jerk, run_ilc
from compliant_actuator_gazebo.resources import package_file
from compliant_actuator_gazebo.experiments.two_dof import rest_offset, run_two_dof, sinusoid_figures, step_figures

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")


def test_stiff_two_dof_step_reaches_the_reference_and_soft_stops_in_the_friction_band():
    stiff = step_figures(run_two_dof("step", "stiff", duration=1.5))
    soft = run_two_dof("step", "soft", duration=1.5)
    for figures in stiff.values():
        assert abs(figures["link"].final - 0.8) < 0.08                 # the paper's band
        assert abs(figures["equilibrium"].final - 0.8) < 0.01
    # soft: static friction 0.025 N m holds the link where the spring torque 0.0118 sinh(9 x)
    # is below it, |x| < 0.166 rad; it moves towards the reference but not beyond the band
    final = soft.position[-1]
    assert np.all(final > 0.8 - 0.17) and np.all(final < 0.8 + 1e-3)


def test_eq12_gravity_shrinks_the_soft_link_only():
    soft = sinusoid_figures(run_two_dof("sinusoid", "soft"))
    stiff = sinusoid_figures(run_two_dof("sinusoid", "stiff"))
    for joint in ("joint_1", "joint_2"):
        assert soft[joint].equilibrium_max_error < 0.05 and stiff[joint].equilibrium_max_error < 0.05
        assert stiff[joint].link_max_error < 0.1 < soft[joint].link_max_error
        assert soft[joint].link_amplitude < 0.7 < stiff[joint].link_amplitude


def test_identified_springs_rest_below_the_equilibrium():
    d = load_description(package_file("urdf", "two_dof_paper.urdf.xacro"), {})
    a = d.spec("joint_1").make_joint().actuator()
    assert rest_offset(a, 0.2) == pytest.approx(-0.137, abs=0.005)
    symmetric = load_description(package_file("urdf", "two_dof_paper.urdf.xacro"), {"springs": "default"})
    assert abs(rest_offset(symmetric.spec("joint_1").make_joint().actuator(), 0.6)) < 1e-9


def test_stiff_clik_pushes_the_box_forward_and_further_than_soft():
    config = PushConfig(duration=2.0, hold=0.5, settle=0.5)
    soft, stiff = (push_metrics(run_push(b, config)) for b in ("soft", "stiff"))
    assert stiff.box_displacement_x > 0.03 and abs(stiff.box_displacement_y) < 0.01
    assert stiff.box_displacement_x > soft.box_displacement_x + 0.01
    assert soft.ee_final_error_x > stiff.ee_final_error_x          # the box holds the soft arm back


def test_ilc_on_the_paper_arm_saturates_and_still_decreases():
    d = load_description(package_file("urdf", "two_dof_paper.urdf.xacro"), {"mode": 6})
    trial = EmbeddedTrial(d, ("joint_1", "joint_2"), 0.2)
    t = np.arange(0.0, 22.0, 0.01)
    result = run_ilc(trial, minimum_jerk(np.zeros(2), np.full(2, 0.8), 20.0, t), IlcConfig(max_iterations=4))
    trial.close()
    assert np.all(np.diff(result.max_errors) < 0)
    assert result.max_errors[0] > 0.4 and result.converged_iteration is None
    saturation = np.array(trial.saturation_history)
    assert saturation[-1, 0] > 0.2 and saturation[-1, 1] == 0.0    # joint_1's spring hits its limit


@pytest.mark.parametrize("tool,bad", [("reproduce_two_dof", ["--periods", "0.5"]),
                                      ("reproduce_clik", ["--push", "0"])])
def test_the_tools_follow_the_conventions(tool, bad, tmp_path):
    check_conventions(os.path.join(SCRIPTS, tool), tool, bad, str(tmp_path))


def test_two_dof_quick_run_writes_its_outputs(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(SCRIPTS, "reproduce_two_dof"), "--quick", "--quiet",
                          "--json", str(tmp_path / "a.json"), "--plot", str(tmp_path / "a.png")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "embedded simulation" in out.stdout and (tmp_path / "a.png").stat().st_size > 0
    import json
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["label"] == "embedded simulation (PyBullet)" and len(data["runs"]) == 4
