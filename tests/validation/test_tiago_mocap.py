"""Real data: TIAGo arm with Qualisys motion capture, FIGAROH's held-out protocol v1.

Every held-out cell must be at most FIGAROH's published RMSE + 0.2 mm; our own figures are
pinned (to 0.01 mm) so that a change in the core that moves them is noticed.
"""

import importlib.util

import pytest

from tests.conftest import REPO, shared_path

spec = importlib.util.spec_from_file_location("tiago_validate", REPO / "examples/tiago_mocap/validate.py")
validate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(validate)

OURS = {
    "registration": (3.368, 4.875, 4.576, 4.219),
    "joint_offsets": (2.876, 4.229, 4.094, 3.827),
    "full": (1.640, 3.074, 2.835, 2.444),
}


@pytest.fixture(scope="module")
def table():
    shared_path("data/tiago_mocap/tiago_48_schunk.urdf")
    return validate.rmse_table(tuple(OURS))


@pytest.mark.parametrize("model", list(OURS))
def test_held_out_within_reference(table, model):
    ours, reference = table[model]["rmse_mm"], validate.REFERENCE[model]
    for cell, ref in zip(ours[1:], reference[1:]):
        assert cell <= ref + 0.2
    assert ours == pytest.approx(OURS[model], abs=0.01)


def test_parameter_counts(table):
    # 9 frame/marker unknowns; + 5 arm offsets; full keeps the base set the training data identify.
    assert [table[m]["n_parameters"] for m in OURS] == [9, 14, 31]


def test_floor_explains_held_out_error(table):
    """Repeated postures move 1.2-1.7 mm between sessions: a floor no geometric model removes."""
    for count, rms in table["full"]["floor_mm"]:
        assert count >= 35
        assert 1.0 < rms < 2.0
