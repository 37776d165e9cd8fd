"""What can be checked of the Gazebo plugin without Gazebo (it is compiled only where CMake finds
Gazebo). These are source-level checks, not a compilation: the plugin's topics agree with the
core's input names, the reference sheet and the manager; every field of the state messages is
filled; the headers it includes exist; the SDF elements it reads are the documented ones."""
import os
import re

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.manager import STREAMS

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_PATH = os.path.join(PACKAGE, "src", "gazebo", "compliant_actuator_plugin.cpp")
with open(SOURCE_PATH, encoding="utf-8") as _f:
    SOURCE = re.sub(r"//[^\n]*", "", _f.read())      # code only, comments removed

# Reference sheet / context: the nine inputs and five outputs of NS = /<robot>/<joint>.
INPUTS = ["torque_command", "link_command", "reference_1", "reference_2", "equilibrium_position",
          "stiffness_preset", "motor_1_command", "motor_2_command", "external_torque"]
OUTPUTS = {"link_state": "LinkState", "motor_1_state": "MotorState",
           "motor_2_state": "MotorState", "torque_el1_state": "Float64Stamped",
           "torque_el2_state": "Float64Stamped"}


def msg_fields(name):
    fields = []
    with open(os.path.join(PACKAGE, "msg", f"{name}.msg"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                fields.append(line.split()[1])
    return fields


def test_subscribes_every_core_input_by_its_core_name():
    # the plugin loops over all kInputCount inputs and subscribes compliant::input_name(input),
    # so the topic names are the core's; the core's names are the nine of the reference sheet
    assert re.search(r"for \(int i = 0; i < compliant::kInputCount; \+\+i\)", SOURCE)
    assert re.search(r"subscribe<std_msgs::Float64>\(\s*compliant::input_name\(input\)", SOURCE)
    assert SOURCE.count("subscribe<") == 1
    names = [cag.input_name(cag.Input(i)) for i in range(len(INPUTS))]
    assert names == INPUTS
    assert len(cag.Input.__members__) == len(INPUTS)


def test_publishes_the_five_outputs_with_their_message_types():
    advertised = dict((topic, msg) for msg, topic in
                      re.findall(r'advertise<cag::(\w+)>\("(\w+)"', SOURCE))
    assert advertised == OUTPUTS
    assert SOURCE.count("advertise<") == len(OUTPUTS)
    assert set(STREAMS) <= set(advertised)              # what compliant_manager aggregates


def test_every_message_field_is_filled():
    # the reference release dropped the stiffness; here each field of each state message is set
    for variable, msg in (("link", "LinkState"), ("motor", "MotorState"),
                          ("spring", "Float64Stamped")):
        assert re.search(rf"cag::{msg} {variable};", SOURCE), variable
        assigned = set(re.findall(rf"\b{variable}\.(\w+)(?:\.\w+)* = ", SOURCE))
        assert assigned == set(msg_fields(msg)), (msg, assigned)
        assert re.search(rf"\b{variable}\.header\.stamp = stamp;", SOURCE)
    assert "const ros::Time stamp(time);" in SOURCE          # simulation time, not wall time
    assert "const double time = world_->SimTime().Double();" in SOURCE


def test_included_package_headers_exist():
    includes = re.findall(r"#include <compliant_actuator_gazebo/(\w+)\.(hpp|h)>", SOURCE)
    assert includes
    for name, ext in includes:
        if ext == "hpp":
            assert os.path.isfile(os.path.join(PACKAGE, "include", "compliant_actuator_gazebo",
                                               f"{name}.hpp")), name
        else:                                                # a generated message header
            assert os.path.isfile(os.path.join(PACKAGE, "msg", f"{name}.msg")), name


def test_reads_the_documented_plugin_block():
    # <robotNamespace>, <joint>, <actuator>, <operationMode>; every other child is a parameter
    # handed to the core's factory, which refuses unknown names
    keys = set(re.findall(r'key == "(\w+)"', SOURCE))
    assert keys == {"robotNamespace", "joint", "actuator", "operationMode"}
    for call in ("compliant::actuator_parameter_names(type)", "compliant::make_actuator(",
                 "compliant::make_joint_params(", "ros::isInitialized()",
                 "joint_->SetForce(0, out.link_torque)", "ConnectWorldUpdateBegin(",
                 "GZ_REGISTER_MODEL_PLUGIN(CompliantActuatorPlugin)"):
        assert call in SOURCE, call
    for documented in ("k1", "a1", "k2", "a2", "max_deflection"):
        assert documented in cag.actuator_parameter_names("qbmove")
