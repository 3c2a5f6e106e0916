"""A step too large for the numbers it moves stops the run instead of drifting silently."""

import numpy as np
import pytest

import nhphys
from nhphys.errors import NewtonError, RoundingError
from nhphys.integrators import Retraction
from nhphys.systems import VerticalDisk


def disk():
    return VerticalDisk(mass=1.0, radius=0.5, inertia_diametral=0.0625, inertia_axial=0.125)


def test_the_vertical_disk_keeps_its_rates_to_round_off_up_to_extreme_spins(backend):
    # the scheme conserves the turning rate and the spin exactly: at 1e9 rad/s (1e7 rad a step)
    # rounding still keeps them to 1e-13
    traj = nhphys.simulate(disk(), 1.0, 1e-2, Retraction("exp"), backend=backend,
                           turning_rate=0.7, spin=1e9)
    assert np.ptp(traj.turning_rate) <= 1e-13
    assert np.ptp(traj.spin) <= 1e-13 * 1e9


def test_a_spin_that_rounding_cannot_follow_stops_the_run_with_its_frames(backend):
    # at 1e12 rad/s a step turns the disk by 1e10 rad, and the turning rate drifts by ~5e-7
    with pytest.raises(RoundingError, match="lost the conserved turning rate") as err:
        nhphys.simulate(disk(), 1.0, 1e-2, Retraction("exp"), backend=backend,
                        turning_rate=0.7, spin=1e12)
    assert isinstance(err.value, NewtonError)  # code catching failed steps catches it
    assert len(err.value.trajectory) == 101  # every frame computed is kept
    assert err.value.trajectory.meta["failure"]["step"] == 100
