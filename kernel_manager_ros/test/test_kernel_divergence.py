"""Roll-outs (eq. 7), divergence detection (§3.1) and the least-squares transfer function."""
import numpy as np
import pytest

from kernel_manager_ros.divergence import divergence, significance_of
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.history import History
from kernel_manager_ros.rollout import roll_out
from kernel_manager_ros.transfer import LinearTransfer
from kernel_manager_ros.transitions import estimate_transitions

W1 = np.array([1.0])


def history(rows) -> History:
    s, a, n = (np.array([r[i] for r in rows], float)[:, None] for i in range(3))
    k = len(rows)
    return History(states=s, actions=a, rewards=np.zeros(k), next_states=n,
                   stamps=np.zeros((k, 1)), next_stamps=np.zeros((k, 1)),
                   episodes=np.zeros(k, int))


def chain(*states):
    return [(a, 0.0, b) for a, b in zip(states, states[1:])]


def test_planted_divergence_is_found_where_it_was_planted():
    # sim: 0 -> 1 -> 2 -> 3 -> 4; phy: 0 -> 1 -> 2 -> 7 -> 8 (diverges after state 2)
    t = estimate_transitions(history(chain(0, 1, 2, 3, 4)), history(chain(0, 1, 2, 7, 8)),
                             W1, 0.1, W1, 0.1)
    rng = np.random.default_rng(0)
    r_sim, r_phy = roll_out(t.sim, 0, rng, 50), roll_out(t.phy, 0, rng, 50)
    assert t.states[r_sim.states, 0].tolist() == [0, 1, 2, 3, 4]
    assert t.states[r_phy.states, 0].tolist() == [0, 1, 2, 7, 8]
    assert r_sim.probs.tolist() == [1.0] * 4
    div = divergence(r_sim, r_phy, t, epsilon_p=0.2)
    assert div is not None
    assert div.step == 2 and t.states[div.state, 0] == 2.0
    assert t.states[div.next_sim, 0] == 3.0 and t.states[div.next_phy, 0] == 7.0
    assert div.distance == pytest.approx(4.0)
    assert div.probability_gap == 1.0 and div.normalised == (0.5, 0.5)


def test_close_successors_are_not_a_divergence():
    # phy ends 0.05 from sim's last state: within epsilon_c = 0.1 -> the same state
    t = estimate_transitions(history(chain(0, 1, 2, 3)), history(chain(0, 1, 2, 3.05)),
                             W1, 0.1, W1, 0.1)
    rng = np.random.default_rng(1)
    assert divergence(roll_out(t.sim, 0, rng, 10), roll_out(t.phy, 0, rng, 10), t, 0.2) is None


def test_equal_branching_is_not_a_divergence_but_unequal_is():
    branch = [(0, 0, 1), (0, 0, 2)] * 10 + [(1, 0, 5), (2, 0, 6)]
    t = estimate_transitions(history(branch), history(branch), W1, 0.1, W1, 0.1)
    rng = np.random.default_rng(2)
    pairs = [(roll_out(t.sim, 0, rng, 5), roll_out(t.phy, 0, rng, 5)) for _ in range(200)]
    assert any(a.states[1] != b.states[1] for a, b in pairs)       # they do draw differently
    assert all(divergence(a, b, t, epsilon_p=0.2) is None for a, b in pairs)
    # phy branches 0.9 / 0.1: drawing the rare sim branch is a divergence (gap 0.4)
    skewed = [(0, 0, 1)] * 9 + [(0, 0, 2)] + [(1, 0, 5), (2, 0, 6)]
    t = estimate_transitions(history(branch), history(skewed), W1, 0.1, W1, 0.1)
    found = [divergence(roll_out(t.sim, 0, rng, 5), roll_out(t.phy, 0, rng, 5), t, 0.2)
             for _ in range(200)]
    gaps = {round(d.probability_gap, 6) for d in found if d is not None}
    assert gaps == {0.4}


def test_rollout_samples_SR_with_its_probabilities():
    rows = [(0, 0, 1)] * 6 + [(0, 0, 2)] * 3 + [(0, 1, 3)]
    t = estimate_transitions(history(rows), history(rows), W1, 0.1, W1, 0.1)
    rng = np.random.default_rng(3)
    firsts = np.array([roll_out(t.sim, 0, rng, 1).states[1] for _ in range(4000)])
    freq = np.bincount(firsts, minlength=4)[1:] / firsts.size
    assert freq == pytest.approx([0.6, 0.3, 0.1], abs=0.03)
    end = roll_out(t.sim, 1, rng, 10)          # state 1 has no successors: ⊥ at once
    assert len(end) == 0 and end.states.tolist() == [1]
    with pytest.raises(KernelError):
        roll_out(t.sim, 99, rng, 10)


def test_least_squares_recovers_a_known_linear_map():
    rng = np.random.default_rng(4)
    slices = {"pos": slice(0, 2), "pitch": slice(2, 3)}
    A_pos = np.array([[0.9, 0.1], [-0.05, 1.02]])
    B_pos = np.array([[0.1, 0.0], [0.02, 0.3]])
    c_pos = np.array([0.5, -0.2])
    s = rng.normal(size=(40, 3))
    a = rng.normal(size=(40, 2))
    nxt = s.copy()
    nxt[:, :2] = s[:, :2] @ A_pos.T + a @ B_pos.T + c_pos
    nxt[:, 2] = 0.5 * s[:, 2] - 0.1 * a[:, 1] + 1.0
    w = np.full(3, 1 / 3)
    f = LinearTransfer.fit(s, a, nxt, slices, w, ridge=0.0)
    pos, pitch = f.blocks
    np.testing.assert_allclose(pos.A, A_pos, atol=1e-8)
    np.testing.assert_allclose(pos.B, B_pos, atol=1e-8)
    np.testing.assert_allclose(pos.c, c_pos, atol=1e-8)
    np.testing.assert_allclose(pitch.A, [[0.5]], atol=1e-8)
    np.testing.assert_allclose(pitch.B, [[0.0, -0.1]], atol=1e-8)
    np.testing.assert_allclose(f.apply(s[3], a[3]), nxt[3], atol=1e-8)
    np.testing.assert_allclose(f.apply_batch(s, a), nxt, atol=1e-8)
    assert not f.is_identity(0.01)


def test_ridge_pulls_toward_identity_and_held_sensors_fit_exactly_identity():
    rng = np.random.default_rng(5)
    slices = {"pos": slice(0, 2)}
    s = rng.normal(size=(3, 2)) * 1e-3           # 3 samples, 5 unknowns per row: needs ridge
    a = rng.normal(size=(3, 1))
    held = LinearTransfer.fit(s, a, s.copy(), slices, np.array([0.5, 0.5]), ridge=1.0)
    assert held.displacement == 0.0 and held.is_identity(0.0)
    np.testing.assert_array_equal(held.blocks[0].A, np.eye(2))
    np.testing.assert_array_equal(held.blocks[0].c, np.zeros(2))
    moved = LinearTransfer.fit(s, a, s + [0.05, 0.0], slices, np.array([0.5, 0.5]), ridge=1.0)
    # a pure shift: the unpenalised intercept carries it, slopes stay at the identity
    np.testing.assert_allclose(moved.blocks[0].A, np.eye(2), atol=1e-9)
    np.testing.assert_allclose(moved.apply(s[0], a[0]), s[0] + [0.05, 0.0], atol=1e-9)
    assert moved.displacement == pytest.approx(0.025)
    assert not moved.is_identity(0.01) and moved.is_identity(0.03)
    assert LinearTransfer.identity(slices, 1).is_identity(0.0)


def test_significance_rejects_a_branch_seen_once_and_keeps_a_frequent_one():
    # state 0 visited once in each history, with different successors: gap 1, no evidence
    t = estimate_transitions(history([(0, 0, 1), (1, 0, 5)]), history([(0, 0, 2), (2, 0, 6)]),
                             W1, 0.1, W1, 0.1)
    rng = np.random.default_rng(4)
    pair = (roll_out(t.sim, 0, rng, 5), roll_out(t.phy, 0, rng, 5))
    assert divergence(*pair, t, epsilon_p=0.5).probability_gap == 1.0     # the paper's rule
    assert divergence(*pair, t, epsilon_p=0.5, significance=0.05) is None
    # twenty visits each: the deployment always goes to 2, the simulation always to 1
    t = estimate_transitions(history([(0, 0, 1)] * 20 + [(1, 0, 5)]),
                             history([(0, 0, 2)] * 20 + [(2, 0, 6)]), W1, 0.1, W1, 0.1)
    pair = (roll_out(t.sim, 0, rng, 5), roll_out(t.phy, 0, rng, 5))
    div = divergence(*pair, t, epsilon_p=0.5, significance=0.05)
    assert div is not None and t.states[div.next_phy, 0] == 2.0
    assert significance_of(t.sim, t.phy, div.state, div.next_phy) < 1e-6
    # 3 of 20 deployment visits branch off (gap 0.15 < epsilon_p): no divergence either way
    t = estimate_transitions(history([(0, 0, 1)] * 20 + [(1, 0, 5)]),
                             history([(0, 0, 1)] * 17 + [(0, 0, 2)] * 3 + [(2, 0, 6)]),
                             W1, 0.1, W1, 0.1)
    assert significance_of(t.sim, t.phy, 0, 1) > 0.05
