"""Task D-optimal design against brute force: the tracked determinant-lemma terms must give the
same choices and values as recomputing log det(T C T^T) from scratch."""

import itertools

import numpy as np
import pytest

from robocal.analysis.doptimal import TaskDOptimal, TaskMetric


def _direct(blocks, prior, task: TaskMetric, chosen) -> float:
    rows = blocks[list(chosen)].reshape(-1, blocks.shape[-1])
    cov = np.linalg.inv(np.diag(prior) + rows.T @ rows)
    t = task.transform
    return float(np.linalg.slogdet(t @ cov @ t.T)[1])


def _problem(seed, n=40, d=2, p=6, kernel=2):
    rng = np.random.default_rng(seed)
    blocks = rng.normal(size=(n, d, p))
    blocks[: n // 2, :, 0] = 0.0  # half the candidates are blind to parameter 0
    # Task blind to `kernel` directions (like a parallel-axis shift no tip position sees).
    basis = np.linalg.qr(rng.normal(size=(p, p)))[0]
    jac = rng.normal(size=(50, 2, 3, p - kernel)) @ basis[:, kernel:].T
    return blocks, rng.uniform(0.5, 2.0, size=p), TaskMetric.from_jacobians(jac), basis[:, :kernel]


def test_task_metric_kernel_is_the_blind_directions():
    _, _, task, blind = _problem(0)
    assert task.transform.shape == (4, 6) and task.kernel.shape == (6, 2)
    # Same subspace: projecting one basis onto the other loses nothing.
    assert np.allclose(task.kernel @ (task.kernel.T @ blind), blind, atol=1e-10)
    assert np.allclose(task.transform @ blind, 0.0, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_matches_brute_force_at_every_step(seed):
    blocks, prior, task, _ = _problem(seed)
    design = TaskDOptimal(blocks, prior, task).greedy(12)
    chosen = []
    for pick in design.order:
        values = {i: _direct(blocks, prior, task, chosen + [i]) for i in range(len(blocks)) if i not in chosen}
        best = min(values, key=values.get)
        assert values[pick] == pytest.approx(values[best], abs=1e-9)
        chosen.append(int(pick))
    assert design.criterion == pytest.approx(_direct(blocks, prior, task, chosen), abs=1e-9)


def test_full_rank_task_is_classic_bayesian_d_optimality():
    """With M of full rank, U = log det C + const: greedy maximizes log det of the information."""
    blocks, prior, _, _ = _problem(3)
    rng = np.random.default_rng(3)
    task = TaskMetric.from_jacobians(rng.normal(size=(30, 2, 3, 6)))
    assert task.kernel.shape[1] == 0
    design = TaskDOptimal(blocks, prior, task).greedy(8)
    chosen = []

    def info(c):
        return np.linalg.slogdet(np.diag(prior) + blocks[c].reshape(-1, 6).T @ blocks[c].reshape(-1, 6))[1]

    for pick in design.order:
        best = max((i for i in range(len(blocks)) if i not in chosen), key=lambda i: info(chosen + [i]))
        assert info(chosen + [int(pick)]) == pytest.approx(info(chosen + [best]), abs=1e-9)
        chosen.append(int(pick))


def test_detmax_reaches_a_design_no_single_exchange_improves():
    blocks, prior, task, _ = _problem(4, n=25)
    criterion = TaskDOptimal(blocks, prior, task)
    start = criterion.random(6, seed=0)
    design = criterion.detmax(start.order)
    assert len(design.order) == 6 and len(set(design.order.tolist())) == 6
    assert design.criterion <= start.criterion
    chosen = set(design.order.tolist())
    for out in chosen:
        for new in set(range(25)) - chosen:
            assert _direct(blocks, prior, task, (chosen - {out}) | {new}) >= design.criterion - 1e-9


@pytest.mark.parametrize("spare", [0, 1, 3])
def test_detmax_keeps_n_samples_with_few_candidates_to_spare(spare):
    """With fewer than its longest excursion's candidates outside the design, DETMAX still returns
    n distinct samples (an excursion never adds one the design already holds)."""
    blocks, prior, task, _ = _problem(4, n=12)
    criterion = TaskDOptimal(blocks, prior, task)
    design = criterion.detmax(criterion.greedy(12 - spare).order)
    assert len(design.order) == len(set(design.order.tolist())) == 12 - spare
    assert design.criterion == pytest.approx(_direct(blocks, prior, task, design.order), abs=1e-9)


def test_detmax_finds_the_exhaustive_optimum_of_a_small_problem():
    blocks, prior, task, _ = _problem(5, n=12, d=1)
    criterion = TaskDOptimal(blocks, prior, task)
    best = min(_direct(blocks, prior, task, c) for c in itertools.combinations(range(12), 4))
    design = criterion.detmax(criterion.greedy(4).order)
    assert design.criterion == pytest.approx(best, abs=1e-9)
    assert design.criterion <= criterion.greedy(4).criterion + 1e-12


def test_rank_deficient_data_keeps_the_criterion_finite():
    """All candidates blind to parameter 0: the data Jacobian is rank deficient, the prior is not."""
    blocks, prior, task, _ = _problem(6)
    blocks[:, :, 0] = 0.0
    design = TaskDOptimal(blocks, prior, task).greedy(30)
    assert np.isfinite(design.criterion) and np.isfinite(design.predicted_rms)


def test_predicted_rms_is_the_trace_formula():
    blocks, prior, task, _ = _problem(7)
    design = TaskDOptimal(blocks, prior, task).random(10, seed=1)
    rows = blocks[design.order].reshape(-1, 6)
    cov = np.linalg.inv(np.diag(prior) + rows.T @ rows)
    assert design.predicted_rms == pytest.approx(np.sqrt(np.trace(cov @ task.matrix) / task.tips), rel=1e-12)


def test_design_needs_a_prior_everywhere():
    blocks, prior, task, _ = _problem(8)
    prior[2] = 0.0
    with pytest.raises(ValueError, match="prior"):
        TaskDOptimal(blocks, prior, task)
