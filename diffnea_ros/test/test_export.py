"""URDF/YAML export of identified parameters (export.py), checked by parsing the result again
with Pinocchio and with diffnea_ros.urdf."""
import os
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pybullet_data
import pytest
import yaml

from diffnea_ros.errors import ConsistencyError, DiffneaError, UrdfError
from diffnea_ros.export import export_urdf, export_yaml, write_identified, write_text_atomic
from diffnea_ros.urdf import load_robot

IIWA = os.path.join(pybullet_data.getDataPath(), "kuka_iiwa/model.urdf")

SMALL = """<?xml version="1.0"?>
<robot name="two">
  <!-- kept comment -->
  <link name="base"/>
  <joint name="a" type="revolute">
    <parent link="base"/><child link="l1"/>
    <axis xyz="0 1 0"/>
    <limit effort="10" lower="-1" upper="1" velocity="1"/>
    <dynamics damping="0.2" friction="0.1"/>
  </joint>
  <link name="l1">
    <inertial>
      <origin xyz="0 0 0.1" rpy="0.3 0.2 0.1"/>
      <mass value="1"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/>
    </inertial>
  </link>
  <joint name="b" type="prismatic">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.2"/>
    <axis xyz="1 0 0"/>
    <limit effort="10" lower="-1" upper="1" velocity="1"/>
  </joint>
  <link name="l2"><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
</robot>
"""


@pytest.fixture(scope="module")
def iiwa_text():
    with open(IIWA, encoding="utf-8") as f:
        return f.read()


def random_inertial(rng):
    a = rng.normal(size=(3, 3))
    inertia = a @ a.T / 10 + 0.01 * np.eye(3)
    return float(rng.uniform(0.5, 5.0)), rng.normal(scale=0.1, size=3), inertia


def urdf_inertial(text, link):
    """(mass, com, inertia) as written in the URDF text, parsed with float()."""
    inertial = ET.fromstring(text).find(f"link[@name='{link}']/inertial")
    i = inertial.find("inertia").attrib
    inertia = np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]],
                        [i["ixz"], i["iyz"], i["izz"]]], dtype=float)
    com = np.array(inertial.find("origin").get("xyz").split(), dtype=float)
    return float(inertial.find("mass").get("value")), com, inertia


def assert_same_inertial(got, expected, exact=True):
    assert_equal = (np.testing.assert_array_equal if exact else
                    lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-17))
    for a, b in zip(got, expected):
        assert_equal(np.asarray(a), np.asarray(b))


def test_iiwa_round_trip_through_pinocchio(iiwa_text):
    rng = np.random.default_rng(0)
    new = {"lbr_iiwa_link_2": random_inertial(rng), "lbr_iiwa_link_5": random_inertial(rng)}
    new["lbr_iiwa_link_5"] = (0.1 + 0.2, *new["lbr_iiwa_link_5"][1:])  # 0.30000000000000004
    damping = {"lbr_iiwa_joint_3": 0.123456789012345678, "lbr_iiwa_joint_7": 1e-7}
    friction = {"lbr_iiwa_joint_4": 0.3}
    out = export_urdf(iiwa_text, new, damping, friction)
    for link, inertial in new.items():  # the text holds the float64 values exactly
        assert_same_inertial(urdf_inertial(out, link), inertial)
    before, after = pin.buildModelFromXML(iiwa_text), pin.buildModelFromXML(out)
    assert after.nq == before.nq == 7
    for j in range(1, 8):
        link = f"lbr_iiwa_link_{j}"
        got = after.inertias[j]
        got = (got.mass, got.lever, got.inertia)
        if link in new:  # Pinocchio adds the body to a zero inertia: m c / m, a few ulp off
            assert_same_inertial(got, new[link], exact=False)
        else:
            old = before.inertias[j]
            assert_same_inertial(got, (old.mass, old.lever, old.inertia))
    assert after.inertias[5].mass == 0.1 + 0.2
    np.testing.assert_array_equal(after.damping, [0.5, 0.5, damping["lbr_iiwa_joint_3"], 0.5,
                                                  0.5, 0.5, 1e-7])
    np.testing.assert_array_equal(after.friction, [0, 0, 0, 0.3, 0, 0, 0])
    # diffnea_ros.urdf reads back exactly the same values
    bodies = {b.name: b for b in load_robot(out).bodies}
    for link, inertial in new.items():
        assert_same_inertial((bodies[link].mass, bodies[link].com, bodies[link].inertia), inertial)


def test_everything_else_is_left_as_it_was(iiwa_text):
    rng = np.random.default_rng(1)
    out = export_urdf(iiwa_text, {"lbr_iiwa_link_3": random_inertial(rng)},
                      {"lbr_iiwa_joint_1": 0.7})
    original, exported = ET.fromstring(iiwa_text), ET.fromstring(out)
    for old, new in zip(original, exported):
        name = old.get("name")
        assert new.get("name") == name and new.tag == old.tag
        if name not in ("lbr_iiwa_link_3", "lbr_iiwa_joint_1"):
            assert ET.tostring(new) == ET.tostring(old), name
    link3 = exported.find("link[@name='lbr_iiwa_link_3']")
    assert [c.tag for c in link3] == ["inertial", "visual", "collision"]
    assert "LICENSE" in out  # comments kept


def test_rotated_inertial_and_missing_inertial_and_kept_dynamics_attributes():
    rng = np.random.default_rng(2)
    new = {"l1": random_inertial(rng), "l2": random_inertial(rng)}
    out = export_urdf(SMALL, new, damping={"a": 0.05}, friction={"b": 0.25})
    model = pin.buildModelFromXML(out)
    for j, link in ((1, "l1"), (2, "l2")):  # rpy of the old inertial does not rotate the new one
        assert_same_inertial(urdf_inertial(out, link), new[link])
        got = model.inertias[j]
        assert_same_inertial((got.mass, got.lever, got.inertia), new[link], exact=False)
    root = ET.fromstring(out)
    assert root.find("link[@name='l1']/inertial/origin").get("rpy") == "0 0 0"
    assert root.find("joint[@name='a']/dynamics").attrib == {"damping": "0.05", "friction": "0.1"}
    assert root.find("joint[@name='b']/dynamics").attrib == {"friction": "0.25"}
    assert [c.tag for c in root.find("link[@name='l2']")] == ["inertial", "visual"]
    assert "kept comment" in out


def test_bad_names_and_values():
    good = (1.0, np.zeros(3), np.eye(3))
    with pytest.raises(UrdfError, match="no link named nope"):
        export_urdf(SMALL, {"nope": good})
    with pytest.raises(UrdfError, match="no joint named c"):
        export_urdf(SMALL, {}, damping={"c": 0.1})
    with pytest.raises(UrdfError, match="not valid XML"):
        export_urdf("<robot><link name='x'></robot>", {})
    with pytest.raises(UrdfError, match="expected <robot>"):
        export_urdf("<sdf/>", {})
    with pytest.raises(ConsistencyError, match="mass of link l1 is nan"):
        export_urdf(SMALL, {"l1": (float("nan"), np.zeros(3), np.eye(3))})
    with pytest.raises(ConsistencyError, match="not symmetric"):
        export_urdf(SMALL, {"l1": (1.0, np.zeros(3), np.triu(np.ones((3, 3))))})
    with pytest.raises(DiffneaError, match="com must be"):
        export_urdf(SMALL, {"l1": (1.0, np.zeros(2), np.eye(3))})


def test_yaml_export_round_trips_the_numbers():
    rng = np.random.default_rng(3)
    links = {"l1": random_inertial(rng), "l2": random_inertial(rng)}
    friction = {"a": (0.54615, 5.1181, 0.039533), "b": np.array([0.87224, 9.0657, -0.025882])}
    meta = {"parametrisation": "cov", "data": "reality stand-in: bag x.bag",
            "nmse_before": np.array([0.5, 0.25]), "nmse_after": [np.float64(0.01), 0.02],
            "consistent": np.bool_(True)}
    doc = yaml.safe_load(export_yaml(links, {"a": 0.1, "b": np.float32(0.5)}, friction, meta))
    for name, (mass, com, inertia) in links.items():
        entry = doc["links"][name]
        assert entry["mass"] == mass and entry["com"] == com.tolist()
        assert entry["inertia"] == {"ixx": inertia[0, 0], "ixy": inertia[0, 1],
                                    "ixz": inertia[0, 2], "iyy": inertia[1, 1],
                                    "iyz": inertia[1, 2], "izz": inertia[2, 2]}
    assert doc["joints"] == ["a", "b"] and doc["damping"] == [0.1, 0.5]
    assert doc["friction"] == {"phi1": [0.54615, 0.87224], "phi2": [5.1181, 9.0657],
                               "phi3": [0.039533, -0.025882]}
    assert doc["metadata"] == {"parametrisation": "cov", "data": "reality stand-in: bag x.bag",
                               "nmse_before": [0.5, 0.25], "nmse_after": [0.01, 0.02],
                               "consistent": True}
    with pytest.raises(DiffneaError, match="different joints"):
        export_yaml(links, {"a": 0.1}, {"b": (1, 2, 3)})
    with pytest.raises(DiffneaError, match="phi1, phi2, phi3"):
        export_yaml(links, friction={"a": (1, 2)})


def test_write_text_atomic(tmp_path):
    path = tmp_path / "out.urdf"
    write_text_atomic(str(path), "first")
    write_text_atomic(str(path), "second")
    assert path.read_text() == "second" and os.listdir(tmp_path) == ["out.urdf"]
    with pytest.raises(DiffneaError, match="cannot write"):
        write_text_atomic(str(tmp_path / "no" / "dir.urdf"), "x")


def test_the_yaml_holds_the_torque_offsets_found(tmp_path):
    """Everything identification learnt reaches the YAML beside the URDF (issue 38)."""
    links, damping = {"l1": (2.0, np.zeros(3), np.eye(3))}, {"a": 0.1, "b": 0.2}
    offset = {"a": 0.25, "b": -0.125}
    _, path = write_identified(str(tmp_path / "m.urdf"), None, SMALL, links, damping,
                               torque_offset=offset)
    written = yaml.safe_load(open(path))
    assert written["joints"] == ["a", "b"] and written["torque_offset"] == [0.25, -0.125]
    with pytest.raises(DiffneaError, match="torque offset"):
        export_yaml(links, damping, None, None, {"a": 0.1})
    with pytest.raises(DiffneaError, match="torque offset of joint a"):
        export_yaml(links, damping, None, None, {"a": float("nan"), "b": 0.0})


def test_write_identified_is_the_two_exports_at_checked_paths(tmp_path):
    """The writer of `identify` and the node: export_urdf + export_yaml, byte for byte."""
    links, damping = {"l1": (2.0, np.zeros(3), np.eye(3))}, {"a": 0.1, "b": 0.2}
    friction = {"a": (1, 2, 3), "b": (4, 5, 6)}
    urdf, yaml_path = write_identified(str(tmp_path / "m.urdf"), None, SMALL, links, damping, friction,
                                       {"source": "test"})
    assert (urdf, yaml_path) == (str(tmp_path / "m.urdf"), str(tmp_path / "m.yaml"))
    assert (tmp_path / "m.urdf").read_text() == export_urdf(SMALL, links, damping)
    assert (tmp_path / "m.yaml").read_text() == export_yaml(links, damping, friction, {"source": "test"})
    # bad paths: one line, nothing written; make_folders creates both folders
    for path, expected in (("m.yaml", "must end in .urdf"), (str(tmp_path / "no" / "m.urdf"), "does not exist")):
        with pytest.raises(DiffneaError, match=expected):
            write_identified(path, None, SMALL, links, damping)
    with pytest.raises(DiffneaError, match="does not exist"):
        write_identified(str(tmp_path / "n.urdf"), str(tmp_path / "no" / "n.yaml"), SMALL, links, damping)
    assert sorted(os.listdir(tmp_path)) == ["m.urdf", "m.yaml"]
    written = write_identified(str(tmp_path / "a" / "m.urdf"), str(tmp_path / "b" / "p.yaml"), SMALL, links,
                               damping, make_folders=True)
    assert written == (str(tmp_path / "a" / "m.urdf"), str(tmp_path / "b" / "p.yaml"))
    assert (tmp_path / "b" / "p.yaml").read_text() == export_yaml(links, damping)


def test_joints_not_named_get_no_dynamics_element():
    text = """<robot name="two"><link name="a"/><link name="b"/><link name="c"/>
      <joint name="j1" type="revolute"><parent link="a"/><child link="b"/></joint>
      <joint name="j2" type="fixed"><parent link="b"/><child link="c"/></joint></robot>"""
    out = ET.fromstring(export_urdf(text, {}, damping={"j1": 0.25}))
    assert out.find("joint[@name='j1']/dynamics").get("damping") == "0.25"
    assert out.find("joint[@name='j2']/dynamics") is None   # PyBullet refuses an empty one


def test_pybullet_runs_the_exported_dynamics(iiwa_text, tmp_path):
    """The loop back into the simulator: PyBullet's inverse dynamics on the exported URDF equals
    our RNEA with the exported (non-diagonal, off-origin) inertials."""
    import pybullet
    import torch

    from diffnea_ros.algorithms import rnea
    from diffnea_ros.model import RigidBodyModel

    rng = np.random.default_rng(3)

    def consistent_inertial():   # PyBullet zeroes an inertia that violates the triangle inequality
        rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        a, b = rng.uniform(0.01, 0.1, 2)
        moments = np.array([a, b, rng.uniform(abs(a - b), a + b)])
        return (float(rng.uniform(0.5, 5.0)), rng.normal(scale=0.1, size=3),
                rotation @ np.diag(moments) @ rotation.T)

    links = {f"lbr_iiwa_link_{i}": consistent_inertial() for i in range(1, 8)}
    root = ET.fromstring(iiwa_text)
    for link in root.iter("link"):   # meshes are relative to pybullet_data: drop the geometry
        for tag in ("visual", "collision"):
            for child in link.findall(tag):
                link.remove(child)
    path = tmp_path / "iiwa_exported.urdf"
    path.write_text(export_urdf(ET.tostring(root, encoding="unicode"), links))
    model = RigidBodyModel.from_urdf(str(path))
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(path), useFixedBase=True, physicsClientId=client,
                                 flags=pybullet.URDF_USE_INERTIA_FROM_FILE)
        pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
        for _ in range(5):
            q, qd, qdd = (rng.uniform(-1.5, 1.5, 7) for _ in range(3))
            expected = pybullet.calculateInverseDynamics(body, list(q), list(qd), list(qdd),
                                                         physicsClientId=client)
            tau = rnea(model, *(torch.from_numpy(x)[None] for x in (q, qd, qdd)),
                       damping=torch.zeros(7, dtype=torch.float64))[0].numpy()
            np.testing.assert_allclose(tau, expected, rtol=0, atol=1e-6)
    finally:
        pybullet.disconnect(client)
