"""The child process of test_example_actuator.py: loading an actuator library changes the
process's registry for good, so the example runs here, not in pytest's process.

Reads {"library", "urdf", "source"} as JSON on stdin: the URDF's plugin block names the library
in <actuatorLibrary> and its actuator "backlash_sea". Prints one JSON object: the registered
types, the block as description.py parsed it (in plugin_block_check's terms), a trace of the
embedded simulation and the one-line messages of bad blocks.
"""
from __future__ import annotations

import json
import sys

import compliant_actuator_gazebo as cag
from compliant_actuator_gazebo.description import DescriptionError, parse_description
from compliant_actuator_gazebo.embedded import EmbeddedSimulation


def _error(text: str, source: str) -> str:
    try:
        parse_description(text, source=source)
    except DescriptionError as exc:
        return str(exc)
    return ""


def main() -> int:
    request = json.load(sys.stdin)
    library, urdf, source = request["library"], request["urdf"], request["source"]
    out: dict = {"types_before": cag.actuator_types()}
    description = parse_description(urdf, source=source)     # loads the library (the tag)
    out["types_after"] = cag.actuator_types()
    out["loaded_again"] = cag.load_actuator_library(library)
    spec = description.compliant[0]
    joint = spec.make_joint()
    joint.reset(0.0, 0.0)
    out["block"] = {"joint": spec.joint, "actuator_type": spec.actuator_type, "mode": spec.mode,
                    "namespace": spec.namespace,
                    "actuator_params": sorted(spec.actuator_params.items()),
                    "joint_params": sorted(spec.joint_params.items()),
                    "torque": joint.update(0.001, 0.1, 0.0)}
    trace = []
    with EmbeddedSimulation(description, physics_rate=1000.0,
                            initial_positions={spec.joint: 0.3},
                            initial_inputs={spec.joint: {"equilibrium_position": 0.0}}) as sim:
        for step in range(40):
            if step == 30:                   # the equilibrium next to the link: the dead zone
                sim.set_input(spec.joint, "equilibrium_position", sim.state(spec.joint).q - 0.05)
                sim.step()
            s = sim.state(spec.joint)
            trace.append({"q": s.q, "theta1": s.output.reference_1, "t1": s.output.spring.t1,
                          "t2": s.output.spring.t2, "stiffness": s.output.stiffness,
                          "link_torque": s.output.link_torque,
                          "energy": spec.actuator.energy(s.q, s.output.reference_1, 0.0)})
            sim.step()
    out["trace"] = trace
    out["errors"] = {
        "unknown": _error(urdf.replace("<actuator>backlash_sea<", "<actuator>magic<"), source),
        "bad_library": _error(urdf.replace(library, library + ".missing"), source),
        "bad_value": _error(urdf.replace("<backlash>0.1<", "<backlash>-1<"), source),
    }
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
