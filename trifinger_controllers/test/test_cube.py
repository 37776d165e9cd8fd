"""Quaternion helpers and cube geometry against scipy's Rotation and move_cube."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from trifinger_simulation.tasks import move_cube

from trifinger_controllers import cube
from trifinger_controllers.types import CubePose

RNG = np.random.default_rng(0)
Q = Rotation.random(200, random_state=1).as_quat()
P = Rotation.random(200, random_state=2).as_quat()
V = RNG.normal(size=(200, 3))


def same_rotation(a, b, atol=1e-12):
    """Quaternions equal up to sign."""
    return np.allclose(a, b, atol=atol) or np.allclose(a, -b, atol=atol)


def test_multiply_and_conjugate():
    expected = (Rotation.from_quat(Q) * Rotation.from_quat(P)).as_quat()
    product = cube.multiply(Q, P)
    for a, b in zip(product, expected):
        assert same_rotation(a, b)
    np.testing.assert_allclose(cube.multiply(Q, cube.conjugate(Q)), np.tile([0, 0, 0, 1.0], (200, 1)),
                               atol=1e-12)


def test_rotate_and_matrices():
    np.testing.assert_allclose(cube.rotate(Q, V), Rotation.from_quat(Q).apply(V), atol=1e-12)
    np.testing.assert_allclose(cube.to_matrix(Q), Rotation.from_quat(Q).as_matrix(), atol=1e-12)
    back = cube.from_matrix(Rotation.from_quat(Q).as_matrix())
    assert np.all(back[:, 3] >= 0)
    for a, b in zip(back, Q):
        assert same_rotation(a, b, atol=1e-10)
    # 180 degree rotations (w = 0) are the hard case for naive conversions
    half_turns = cube.from_axis_angle(V, np.full(200, np.pi))
    for a, b in zip(cube.from_matrix(cube.to_matrix(half_turns)), half_turns):
        assert same_rotation(a, b, atol=1e-10)
    assert cube.from_matrix(np.eye(3)).shape == (4,)


def test_axis_angle_and_rotation_vectors():
    rotvec = Rotation.from_quat(Q).as_rotvec()
    np.testing.assert_allclose(cube.to_rotation_vector(Q), rotvec, atol=1e-10)
    for a, b in zip(cube.from_rotation_vector(rotvec), Q):
        assert same_rotation(a, b, atol=1e-10)
    axis, angle = cube.to_axis_angle(Q)
    np.testing.assert_allclose(angle, Rotation.from_quat(Q).magnitude(), atol=1e-12)
    np.testing.assert_allclose(cube.from_rotation_vector(np.zeros(3)), [0, 0, 0, 1])
    axis0, angle0 = cube.to_axis_angle(np.array([0, 0, 0, 1.0]))
    assert angle0 == 0 and np.allclose(axis0, [0, 0, 1])


def test_relative_rotation_and_angle():
    rel = cube.relative_rotation_vector(Q, P)
    expected = (Rotation.from_quat(P) * Rotation.from_quat(Q).inv()).as_rotvec()
    np.testing.assert_allclose(rel, expected, atol=1e-10)
    np.testing.assert_allclose(cube.angle_between(Q, P),
                               (Rotation.from_quat(Q).inv() * Rotation.from_quat(P)).magnitude(),
                               atol=1e-10)
    np.testing.assert_allclose(cube.angle_between(Q, -Q), 0.0, atol=1e-7)


def test_yaw():
    angles = RNG.uniform(-np.pi, np.pi, 50)
    np.testing.assert_allclose(cube.yaw(cube.from_yaw(angles)), angles, atol=1e-12)
    np.testing.assert_allclose(cube.from_yaw(angles),
                               Rotation.from_euler("z", angles[:, None]).as_quat(), atol=1e-12)


def test_corners_match_move_cube_and_faces():
    for q in Q[:20]:
        pose = CubePose(RNG.normal(size=3), q)
        np.testing.assert_allclose(cube.corners(pose),
                                   move_cube.get_cube_corner_positions(move_cube.Pose(pose.position, q)),
                                   atol=1e-12)
        centres, normals = cube.faces(pose)
        np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0)
        np.testing.assert_allclose(centres - pose.position, normals * cube.HALF_WIDTH, atol=1e-12)
        back = cube.to_cube_frame(pose, centres)
        np.testing.assert_allclose(back, cube.FACE_CENTRES, atol=1e-12)
        np.testing.assert_allclose(normals[cube.OPPOSITE_FACE], -normals, atol=1e-12)


def test_resting_orientations():
    flat = CubePose(np.array([0, 0, cube.HALF_WIDTH]), np.array([0, 0, 0, 1.0]))
    assert cube.up_face(flat.orientation) == 4 and cube.down_face(flat.orientation) == 5
    assert abs(cube.lowest_point(flat)) < 1e-12
    for q in Q:
        rest = cube.nearest_resting_orientation(q)
        # a face is flat: its normal is exactly vertical
        assert np.isclose(np.max(cube.rotate(rest, cube.FACE_NORMALS)[:, 2]), 1.0, atol=1e-12)
        # and the rotation is the minimal one (the tilt of the most upward face)
        tilt = np.arccos(np.max(cube.rotate(q, cube.FACE_NORMALS)[:, 2]))
        assert np.isclose(cube.angle_between(q, rest), tilt, atol=1e-9)
        assert tilt <= np.arccos(1 / np.sqrt(3)) + 1e-12


def test_zero_quaternion_rejected():
    with pytest.raises(ValueError):
        cube.normalize(np.zeros(4))


def test_points_near_surface_counts_points_within_the_distance_of_the_faces():
    pose = CubePose(np.array([0.1, 0.0, cube.HALF_WIDTH]), cube.from_yaw(0.7))
    inside = pose.position
    on_face = cube.to_world(pose, np.array([[cube.HALF_WIDTH + 0.01, 0.0, 0.0]]))[0]
    far = cube.to_world(pose, np.array([[0.0, cube.HALF_WIDTH + 0.05, 0.0]]))[0]
    points = np.stack([inside, on_face, far])
    assert cube.points_near_surface(pose, points, 0.02) == 2
    assert cube.points_near_surface(pose, points, 0.005) == 1
    assert cube.points_near_surface(pose, points, 0.06) == 3
