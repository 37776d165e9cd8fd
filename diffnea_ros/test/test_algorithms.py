"""RNEA, FK, CRBA and forward dynamics against Pinocchio (float64), gradients, dtypes."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from diffnea_ros import algorithms as alg
from diffnea_ros.errors import UrdfError
from diffnea_ros.model import RigidBodyModel
from diffnea_ros.urdf import load_robot

pin = pytest.importorskip("pinocchio")


def _urdfs() -> dict[str, str]:
    import pybullet_data
    import robot_properties_fingers

    data = pybullet_data.getDataPath()
    fingers = os.path.dirname(robot_properties_fingers.__file__)
    return {"panda": os.path.join(data, "franka_panda", "panda.urdf"),
            "iiwa": os.path.join(data, "kuka_iiwa", "model.urdf"),
            "trifinger": os.path.join(fingers, "urdf", "pro", "trifingerpro.urdf")}


URDFS = _urdfs()


@pytest.fixture(scope="module", params=sorted(URDFS))
def robot(request):
    path = URDFS[request.param]
    model = RigidBodyModel.from_urdf(path)
    pmodel = pin.buildModelFromUrdf(path)
    names = [pmodel.names[i] for i in range(1, pmodel.njoints)]
    perm = [model.joint_names.index(n) for n in names]   # ours -> Pinocchio's joint order
    return request.param, model, pmodel, perm


def _states(dof: int, batch: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2.5, 2.5, (batch, dof)), rng.normal(0.0, 1.5, (batch, dof)),
            rng.normal(0.0, 3.0, (batch, dof)))


def test_dynamics_agree_with_pinocchio(robot):
    name, model, pmodel, perm = robot
    data = pmodel.createData()
    q, qd, qdd = _states(model.dof, batch=24)
    t = torch.from_numpy
    no_damping = torch.zeros(model.dof, dtype=torch.float64)
    tau = alg.rnea(model, t(q), t(qd), t(qdd), damping=no_damping).numpy()
    mass = alg.mass_matrix(model, t(q)).numpy()
    qdd_fd = alg.forward_dynamics(model, t(q), t(qd), t(tau), damping=no_damping).numpy()
    for b in range(q.shape[0]):
        qp, qdp, qddp, taup = q[b][perm], qd[b][perm], qdd[b][perm], tau[b][perm]
        np.testing.assert_allclose(taup, pin.rnea(pmodel, data, qp, qdp, qddp), rtol=0, atol=1e-9)
        mp = pin.crba(pmodel, data, qp)
        mp = np.triu(mp) + np.triu(mp, 1).T
        np.testing.assert_allclose(mass[b][np.ix_(perm, perm)], mp, rtol=0, atol=1e-9)
        np.testing.assert_allclose(qdd_fd[b][perm], pin.aba(pmodel, data, qp, qdp, taup),
                                   rtol=0, atol=1e-9)
    np.testing.assert_allclose(qdd_fd, qdd, rtol=0, atol=1e-9)   # FD inverts ID


def test_forward_kinematics_agrees_with_pinocchio(robot):
    name, model, pmodel, perm = robot
    data = pmodel.createData()
    q, _, _ = _states(model.dof, batch=8, seed=1)
    poses = alg.forward_kinematics(model, torch.from_numpy(q)).numpy()
    for b in range(q.shape[0]):
        pin.framesForwardKinematics(pmodel, data, q[b][perm])
        for i, link in enumerate(model.body_names):
            expected = data.oMf[pmodel.getFrameId(link)].homogeneous
            np.testing.assert_allclose(poses[b, i], expected, rtol=0, atol=1e-12)


def test_damping_adds_viscous_torque():
    model = RigidBodyModel.from_urdf(URDFS["iiwa"])
    q, qd, qdd = (torch.from_numpy(x) for x in _states(model.dof, batch=4))
    damping = torch.linspace(0.1, 0.7, model.dof, dtype=torch.float64)
    difference = alg.rnea(model, q, qd, qdd, damping=damping) - alg.rnea(
        model, q, qd, qdd, damping=torch.zeros_like(damping))
    torch.testing.assert_close(difference, damping * qd)


def test_gradients_pass_gradcheck():
    model = RigidBodyModel.from_urdf(URDFS["iiwa"])
    q, qd, qdd = (torch.from_numpy(x).requires_grad_() for x in _states(model.dof, batch=2))
    inertials = model.nominal_inertials()
    mass = inertials.mass.clone().requires_grad_()
    com = inertials.com.clone().requires_grad_()
    inertia = inertials.inertia.clone().requires_grad_()

    def inverse_dynamics(q, qd, qdd, mass, com, inertia):
        return alg.rnea(model, q, qd, qdd, alg.Inertials(mass, com, inertia))

    assert torch.autograd.gradcheck(inverse_dynamics, (q, qd, qdd, mass, com, inertia))
    assert torch.autograd.gradcheck(
        lambda q, mass: alg.mass_matrix(model, q, alg.Inertials(mass, com.detach(), inertia.detach())),
        (q, mass))


def test_float32_and_to_dtype():
    model = RigidBodyModel.from_urdf(URDFS["panda"])
    q, qd, qdd = _states(model.dof, batch=16, seed=3)
    reference = alg.rnea(model, *(torch.from_numpy(x) for x in (q, qd, qdd)))
    single = model.to(torch.float32)
    assert single.axis.dtype == torch.float32 and single.nominal_inertia.dtype == torch.float32
    tau = alg.rnea(single, *(torch.from_numpy(x).float() for x in (q, qd, qdd)))
    assert tau.dtype == torch.float32
    torch.testing.assert_close(tau.double(), reference, rtol=1e-4, atol=1e-3)


def test_unbatched_input_and_shape_errors():
    model = RigidBodyModel.from_urdf(URDFS["iiwa"])
    zero = torch.zeros(model.dof, dtype=torch.float64)
    assert alg.rnea(model, zero, zero, zero).shape == (1, model.dof)
    with pytest.raises(ValueError, match=r"shape \(batch, 7\)"):
        alg.rnea(model, torch.zeros(3, 6, dtype=torch.float64), zero, zero)


SLIDER_URDF = """<robot name="slider">
  <link name="base"/>
  <link name="carriage"><inertial><origin xyz="0.1 0 0" rpy="0.3 0.2 0.1"/><mass value="2.0"/>
    <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.04"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0 0.2 0"/><mass value="1.0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="carriage"/>
    <axis xyz="0 0.6 0.8"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <joint name="turn" type="revolute"><parent link="carriage"/><child link="arm"/>
    <origin xyz="0.3 0 0.1" rpy="0 0.5 0"/><axis xyz="1 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
</robot>"""


def test_prismatic_joint_and_arbitrary_axis():
    """A prismatic joint along a tilted axis under gravity needs m g·axis; a revolute joint
    about a tilted axis agrees with Pinocchio."""
    urdf = SLIDER_URDF
    model = RigidBodyModel.from_urdf(urdf)
    pmodel = pin.buildModelFromXML(urdf)
    data = pmodel.createData()
    q, qd, qdd = _states(2, batch=5, seed=4)
    tau = alg.rnea(model, *(torch.from_numpy(x) for x in (q, qd, qdd))).numpy()
    for b in range(5):
        np.testing.assert_allclose(tau[b], pin.rnea(pmodel, data, q[b], qd[b], qdd[b]), atol=1e-9)
    static = alg.rnea(model, torch.zeros(1, 2, dtype=torch.float64), torch.zeros(1, 2, dtype=torch.float64),
                      torch.zeros(1, 2, dtype=torch.float64))
    assert static[0, 0].item() == pytest.approx(3.0 * 9.81 * 0.8, rel=1e-12)


@pytest.mark.parametrize("text, message", [
    ("<robot name='r'><link name=", "not valid XML"),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='floating'>"
     "<parent link='a'/><child link='b'/></joint></robot>", "type 'floating'"),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'>"
     "<parent link='a'/><child link='c'/></joint></robot>", "unknown links"),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'>"
     "<parent link='a'/><child link='b'/><axis xyz='0 0 0'/></joint></robot>", "zero axis"),
    ("<robot name='r'><link name='a'/></robot>", "no movable joint"),
    ("<robot name='r'><link name='a'><inertial><mass value='nan'/></inertial></link>"
     "<link name='b'/><joint name='j' type='revolute'><parent link='a'/><child link='b'/></joint>"
     "</robot>", "finite"),
    ("<sdf/>", "expected <robot>"),
])
def test_bad_urdf_gives_one_line(text, message):
    with pytest.raises(UrdfError, match=message) as info:
        load_robot(text)
    assert "\n" not in str(info.value)


def test_missing_urdf_file(tmp_path):
    with pytest.raises(UrdfError, match="URDF not found"):
        load_robot(str(tmp_path / "missing.urdf"))


def test_regressor_reproduces_rnea(robot):
    """tau = Y(q, qd, qdd) pi with the nominal standard parameters: the regressor and the RNEA
    share the forward and backward recursions (joint frames, prismatic joints, fixed links)."""
    from diffnea_ros.regressor import regressor, regressor_torque, standard_parameters

    name, model, _, _ = robot
    q, qd, qdd = (torch.from_numpy(x) for x in _states(model.dof, batch=6, seed=5))
    y = regressor(model, q, qd, qdd)
    assert y.shape == (6, model.dof, model.num_bodies, 10)
    tau = alg.rnea(model, q, qd, qdd, damping=torch.zeros(model.dof, dtype=torch.float64))
    torch.testing.assert_close(regressor_torque(y, standard_parameters(model.nominal_inertials())),
                               tau, rtol=0, atol=1e-12)


def test_body_motion_in_link_frames_matches_forward_kinematics():
    """omega of every link (link coordinates) equals the body-frame angular velocity from the
    derivative of the forward kinematics, R^T dR/dt, on a robot whose joint axes are not z."""
    model = RigidBodyModel.from_urdf(URDFS["trifinger"])
    q, qd, _ = (torch.from_numpy(x) for x in _states(model.dof, batch=3, seed=6))
    motion = alg.body_motion(model, q, qd, torch.zeros_like(q))
    step = 1e-6
    poses = [alg.forward_kinematics(model, q + sign * step * qd)[..., :3, :3] for sign in (1, -1)]
    rotation = alg.forward_kinematics(model, q)[..., :3, :3]
    skew = rotation.transpose(-1, -2) @ (poses[0] - poses[1]) / (2 * step)
    omega = torch.stack([skew[..., 2, 1], skew[..., 0, 2], skew[..., 1, 0]], -1)
    torch.testing.assert_close(motion.omega, omega, rtol=0, atol=1e-7)


@pytest.mark.parametrize("urdf", ["slider", "trifinger"])
def test_gradients_with_prismatic_joint_tilted_axes_and_fixed_links(urdf):
    """gradcheck where joint frames are not link frames and fixed links are merged."""
    model = RigidBodyModel.from_urdf(SLIDER_URDF if urdf == "slider" else URDFS[urdf])
    q, qd, qdd = (torch.from_numpy(x).requires_grad_() for x in _states(model.dof, batch=2, seed=7))
    nominal = model.nominal_inertials()
    mass, com, inertia = (x.clone().requires_grad_() for x in (nominal.mass, nominal.com, nominal.inertia))
    assert torch.autograd.gradcheck(
        lambda *x: alg.rnea(model, *x[:3], alg.Inertials(*x[3:])), (q, qd, qdd, mass, com, inertia))


def test_cached_constants_follow_buffer_changes():
    """Constants derived from the model's buffers are rebuilt after an in-place change."""
    model, fresh = (RigidBodyModel.from_urdf(URDFS["panda"]) for _ in range(2))
    q, qd, qdd = (torch.from_numpy(x) for x in _states(model.dof, batch=4, seed=8))
    before = alg.rnea(model, q, qd, qdd)
    for m in (model, fresh):
        with torch.no_grad():
            m.origin_translation[3, 0] += 0.05
            m.gravity[2] = -3.0
    after = alg.rnea(model, q, qd, qdd)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, alg.rnea(fresh, q, qd, qdd), rtol=0, atol=0)


def test_projecting_link_weights_gives_gravity_torques(robot):
    """At rest, each link's force is its weight, f_lin = m a, f_ang = c x m a (a = -g in the
    link frame, from body_motion); carried to the joints it gives the RNEA's gravity torques."""
    name, model, _, _ = robot
    q, _, _ = (torch.from_numpy(x) for x in _states(model.dof, batch=5, seed=9))
    rest = torch.zeros_like(q)
    motion = alg.body_motion(model, q, rest, rest)
    torch.testing.assert_close(motion.alpha, torch.zeros_like(motion.alpha))
    nominal = model.nominal_inertials()
    f_lin = nominal.mass[:, None] * motion.acc                            # (B, nb, 3)
    f_ang = torch.linalg.cross(nominal.com.expand_as(f_lin), f_lin, dim=-1)
    gravity_torque = alg.rnea(model, q, rest, rest, damping=torch.zeros(model.dof, dtype=torch.float64))
    torch.testing.assert_close(alg.project_to_joints(model, motion, f_ang, f_lin), gravity_torque,
                               rtol=0, atol=1e-12)
