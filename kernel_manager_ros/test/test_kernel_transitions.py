"""Quantisation (eq. 8) and the frequentist T, pi, B, P, SR (eqs. 3, 5, 6) on tiny histories."""
import numpy as np
import pytest

from kernel_manager_ros.distance import weighted_l1
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.history import History
from kernel_manager_ros.transitions import estimate_transitions, quantise

W1 = np.array([1.0])


def history(rows, episodes=None) -> History:
    """rows: (s, a, s') scalar triples."""
    s, a, n = (np.array([r[i] for r in rows], float)[:, None] for i in range(3))
    k = len(rows)
    return History(states=s, actions=a, rewards=np.zeros(k), next_states=n,
                   stamps=np.zeros((k, 1)), next_stamps=np.zeros((k, 1)),
                   episodes=np.zeros(k, int) if episodes is None else np.asarray(episodes))


# 0.004 is within epsilon_c = 0.01 of 0: the same state; 1 and 2 are other states.
SIM = history([(0.0, 1, 1.0), (0.004, 1, 1.0), (0.0, 1, 2.0), (0.0, 2, 2.0), (1.0, 1, 2.0)])
PHY = history([(0.0, 1, 2.0), (0.0, 1, 2.0), (1.0, 1, 1.0)])


def shared():
    return estimate_transitions(SIM, PHY, W1, 0.01, W1, 0.1)


def test_shared_representatives_in_order_of_appearance():
    t = shared()
    assert t.states[:, 0].tolist() == [0.0, 1.0, 2.0]
    assert t.actions[:, 0].tolist() == [1.0, 2.0]
    assert t.centroids[0, 0] == pytest.approx(0.004 / 6)   # 5 zeros and 0.004


def test_exact_counts_and_probabilities():
    sim = shared().sim
    nxt, act, prob = sim.successors(0)
    got = {(int(n), int(a)): (float(p), int(c)) for n, a, p, c in
           zip(nxt, act, prob, sim.count[sim.indptr[0]:sim.indptr[1]])}
    # n(0) = 4: (a1 -> 1) twice, (a1 -> 2) once, (a2 -> 2) once
    assert got == {(1, 0): (0.5, 2), (2, 0): (0.25, 1), (2, 1): (0.25, 1)}
    assert sim.transition_probability(0, 0, 1) == pytest.approx(2 / 3)     # T(1|0, a1)
    assert sim.transition_probability(0, 0, 2) == pytest.approx(1 / 3)
    assert sim.transition_probability(0, 1, 2) == pytest.approx(1.0)
    assert sim.transition_probability(2, 0, 0) == 0.0
    actions, pi = sim.policy(0)
    assert actions.tolist() == [0, 1] and pi == pytest.approx([0.75, 0.25])
    assert sim.state_probability(0, 2) == pytest.approx(0.5)              # P(2|0)
    assert sim.state_probability(1, 2) == pytest.approx(1.0)
    assert sim.n_transitions == 4
    assert sim.sources.tolist() == [0, 1]
    assert sorted(sim.samples(int(np.flatnonzero((sim.next_state == 1))[0])).tolist()) == [0, 1]
    rows = [sim.cumprob[sim.indptr[s + 1] - 1] for s in sim.sources]
    assert rows == pytest.approx([1.0, 1.0])


def test_phy_model_and_common_states():
    t = shared()
    assert t.phy.successors(0)[0].tolist() == [2]
    assert t.phy.successors(0)[2].tolist() == [1.0]
    assert t.phy.state_probability(1, 1) == 1.0      # a self-loop
    assert t.common_states().tolist() == [0, 1]


@pytest.mark.parametrize("dims", [1, 3])
def test_quantise_matches_the_eq8_definition(dims):
    rng = np.random.default_rng(dims)
    points = rng.uniform(0, 1, size=(400, dims))
    points[50:60] = points[0]                       # exact duplicates
    w = rng.uniform(0.1, 1.0, dims)
    w /= w.sum()
    eps = 0.08
    labels, leaders = quantise(points, w, eps)
    reps = points[leaders]
    assert (weighted_l1(points, reps[labels], w) <= eps + 1e-12).all()
    pairwise = weighted_l1(reps[:, None, :], reps[None, :, :], w)
    assert (pairwise[~np.eye(len(reps), dtype=bool)] > eps).all()
    assert labels[0] == 0 and (labels[50:60] == 0).all()
    # greedy leader clustering: a point belongs to the first leader (in order) within eps
    for i in rng.choice(len(points), 50, replace=False):
        first = np.flatnonzero(weighted_l1(reps, points[i], w) <= eps)[0]
        assert labels[i] == first


def test_mismatched_and_bad_histories_are_refused():
    two_d = History(states=np.zeros((2, 2)), actions=np.zeros((2, 1)), rewards=np.zeros(2),
                    next_states=np.zeros((2, 2)), stamps=np.zeros((2, 1)),
                    next_stamps=np.zeros((2, 1)), episodes=np.zeros(2, int))
    with pytest.raises(KernelError, match="differ in dimension"):
        estimate_transitions(SIM, two_d, W1, 0.01, W1, 0.1)
    nan = history([(0.0, 1, np.nan)])
    with pytest.raises(KernelError, match="NaN"):
        estimate_transitions(SIM, nan, W1, 0.01, W1, 0.1)
    with pytest.raises(KernelError, match="NaN"):
        quantise(np.array([[np.nan]]), W1, 0.1)
