"""The Chaplygin sleigh carrying a rotor (nhphys.systems.RotorSleigh), a system added as one
coordinate model and its twin: closed forms (the plain sleigh with inertia I_s when the rotor
is free, I_s + I_r when it is locked), the rotor's conserved momentum, energy, constraints,
order, and kernel against twin for every integrator."""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import DLA, Composition, Newmark, Reference, Retraction
from nhphys.systems import KnifeEdge, RotorSleigh

MASS, INERTIA, ROTOR, OFFSET = 1.0, 0.4, 0.1, 0.5
FREE = RotorSleigh(MASS, INERTIA, ROTOR, OFFSET)
LOCKED = RotorSleigh(MASS, INERTIA, ROTOR, OFFSET, locked=True)
FREE_IC = {"position": [0.2, -0.1], "heading": 0.3, "phi": 0.4, "velocity": 0.1,
           "turning_rate": 1.0, "spin": 2.0}
LOCKED_IC = {"position": [0.2, -0.1], "heading": 0.3, "phi": 0.4, "velocity": 0.1,
             "turning_rate": 1.0}
CASES = {"free": (FREE, FREE_IC), "locked": (LOCKED, LOCKED_IC)}

INTEGRATORS = [
    Retraction("exp"), Retraction("cayley"), Newmark(0.0, 0.0, 0.5), Newmark(0.25, 0.25, 0.5),
    Newmark(0.5, 0.5, 0.5, "average"), DLA("midpoint"),
    Composition.symmetric(Newmark(0.0, 0.0, 0.0)),
]


def slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


def test_model_is_the_lagrangian():
    # the coordinate model's mass matrix is the Hessian of the kinetic energy
    # 1/2 m |dC/dt|^2 + 1/2 I_s omega^2 + 1/2 I_r (omega + phi_dot)^2, and the group inertia
    # that of l(xi) with dC/dt = v e + (w + a omega) e_perp
    rng = np.random.default_rng(3)
    model = FREE.coordinates
    for _ in range(5):
        dq = rng.normal(size=4)
        kinetic = 0.5 * MASS * (dq[0] ** 2 + dq[1] ** 2) + 0.5 * INERTIA * dq[2] ** 2 \
            + 0.5 * ROTOR * (dq[2] + dq[3]) ** 2
        assert abs(0.5 * dq @ model.mass_matrix @ dq - kinetic) < 1e-14
        xi = rng.normal(size=4)
        v, w, omega, phi_dot = xi
        reduced = 0.5 * MASS * (v ** 2 + (w + OFFSET * omega) ** 2) + 0.5 * INERTIA * omega ** 2 \
            + 0.5 * ROTOR * (omega + phi_dot) ** 2
        assert abs(0.5 * xi @ model.group_inertia @ xi - reduced) < 1e-14
        # and the two descriptions are one: the maps between them keep the kinetic energy
        q, qd = model.from_group(rng.normal(size=(1, 4)), xi[None])
        assert abs(0.5 * qd[0] @ model.mass_matrix @ qd[0] - reduced) < 1e-14
        _, xi_back = model.to_group(q, qd)
        np.testing.assert_allclose(xi_back[0], xi, atol=1e-14)


@pytest.mark.parametrize("case", CASES)
def test_closed_form_solves_the_continuous_equations(case):
    # the closed form (tanh/sech and the Gudermannian, derived in the module docstring) against
    # DOP853 on the coordinate model's equations
    system, ic = CASES[case]
    traj = nhphys.simulate(system, 20.0, 0.1, integrator=Reference(), **ic)
    exact = system.closed_form(traj.t, **ic)
    np.testing.assert_allclose(traj.velocity, exact["velocity"], atol=1e-9)
    np.testing.assert_allclose(traj.turning_rate, exact["turning_rate"], atol=1e-9)
    np.testing.assert_allclose(traj.pose[:, 2], exact["heading"], atol=1e-9)
    np.testing.assert_allclose(traj.phi, exact["phi"], atol=1e-9)
    # with the rotor free the sleigh turns as the plain sleigh of inertia I_s, locked as the
    # one of inertia I_s + I_r: the closed form KnifeEdge documents
    plain = KnifeEdge(MASS, INERTIA + (ROTOR if case == "locked" else 0.0), OFFSET)
    v, w = plain.sleigh_closed_form(traj.t, 0.1, 1.0)  # (velocity, turning rate)
    np.testing.assert_allclose(traj.velocity, v, atol=1e-9)
    np.testing.assert_allclose(traj.turning_rate, w, atol=1e-9)
    # and the rotor does change the motion: locked it turns more slowly than free
    other = KnifeEdge(MASS, INERTIA + (0.0 if case == "locked" else ROTOR), OFFSET)
    assert np.abs(other.sleigh_closed_form(traj.t, 0.1, 1.0)[1] - w).max() > 1e-2


@pytest.mark.parametrize("integrator", INTEGRATORS, ids=repr)
@pytest.mark.parametrize("case", CASES)
def test_matches_the_plain_sleigh_closed_form(case, integrator, backend):
    # h = 1e-3 over 20 s, the accuracy class of the plain sleigh (tests/test_knife_edge.py)
    system, ic = CASES[case]
    traj = nhphys.simulate(system, 20.0, 1e-3, integrator=integrator, save_every=10,
                           backend=backend, **ic)
    exact = system.closed_form(traj.t, **ic)
    assert np.abs(traj.velocity - exact["velocity"]).max() < 1e-6
    assert np.abs(traj.turning_rate - exact["turning_rate"]).max() < 1e-6
    assert np.abs(traj.pose[:, 2] - exact["heading"]).max() < 1e-6
    assert np.abs(traj.phi - exact["phi"]).max() < 1e-6
    assert traj.constraint_residual.max() < 1e-13
    np.testing.assert_array_equal(traj.omega[:, 2], traj.turning_rate)  # body axes: z normal
    assert not traj.omega[:, :2].any()
    # energy: bounded second-order error (measured max 1.1e-7, Retraction('cayley'))
    assert np.abs(traj.energy - traj.energy[0]).max() < 2e-7
    if case == "locked":  # the rotor turns with the sleigh (phi_dot at round-off of omega)
        assert np.abs(traj.spin).max() < 1e-16 and np.abs(traj.phi - 0.4).max() < 1e-15
        return
    # sigma = I_r (omega + phi_dot) is conserved to round-off (phi is cyclic and free) while
    # omega and phi_dot each change by order 1. The Newmark family and the retraction carry it
    # exactly (measured drift <= 8e-15 over 2 10^4 steps); DLA reads the velocity off position
    # differences over h, so its sigma carries |phi| eps / h of round-off (|phi| reaches 60)
    assert np.ptp(traj.turning_rate) > 0.5 and np.ptp(traj.spin) > 0.5
    drift = np.abs(traj.rotor_momentum - ROTOR * (1.0 + 2.0)).max()
    if isinstance(integrator, DLA):
        assert drift < 64 * np.finfo(float).eps * ROTOR * np.abs(traj.phi).max() / 1e-3
    else:
        assert drift < 1e-13


@pytest.mark.parametrize("integrator,order", [
    (Retraction("exp"), 2), (Retraction("cayley"), 2), (Newmark(0.0, 0.0, 0.5), 2),
    (DLA("midpoint"), 2), (Composition.symmetric(Newmark(0.0, 0.0, 0.0)), 2),
    (Newmark(0.0, 0.0, 0.0), 1),
], ids=repr)
@pytest.mark.parametrize("case", CASES)
def test_measured_order(case, integrator, order, backend):
    system, ic = CASES[case]
    hs = [0.04, 0.02, 0.01, 0.005]
    errors = []
    for h in hs:
        traj = nhphys.simulate(system, 4.0, h, integrator=integrator, backend=backend, **ic)
        exact = system.closed_form(traj.t[-1:], **ic)
        errors.append(abs(traj.velocity[-1] - exact["velocity"][0])
                      + abs(traj.turning_rate[-1] - exact["turning_rate"][0])
                      + abs(traj.pose[-1, 2] - exact["heading"][0])
                      + abs(traj.phi[-1] - exact["phi"][0]))
    assert abs(slope(hs, errors) - order) < 0.15


KERNEL_INTEGRATORS = [
    Retraction("exp"), Retraction("cayley"), Newmark(0.0, 0.0, 0.0),
    Newmark(0.25, 0.1, 0.6, "average"), DLA("trapezoidal", 0.3, "average"),
    Composition([(Newmark(0.0, 0.0, 0.0), 0.5), (DLA("midpoint"), 0.25),
                 (Newmark(0.5, 0.5, 0.5), 0.25)]),
]


@pytest.mark.parity
@pytest.mark.parametrize("integrator", KERNEL_INTEGRATORS, ids=repr)
@pytest.mark.parametrize("case", CASES)
def test_kernel_matches_twin(case, integrator):
    # 10^4 steps: the same Newton iterations and the same trajectory to 1e-10 of each field's
    # size (the sleigh runs ~30 units from the origin; DLA's velocities carry |q| eps / h)
    system, ic = CASES[case]
    runs = [integrator.start(system, 1e-3, b, **ic) for b in ("python", "cython")]
    frames = [run.advance(10_000, 50) for run in runs]
    assert [run.backend for run in runs] == ["python", "cython"]
    for field in frames[0]:
        size = max(1.0, np.abs(frames[0][field]).max())
        np.testing.assert_allclose(frames[0][field], frames[1][field], rtol=0,
                                   atol=1e-10 * size, err_msg=field)
    assert runs[0].newton_evaluations == runs[1].newton_evaluations


@pytest.mark.parametrize("kwargs,error,match", [
    ({"mass": -1.0}, ValueError, "`mass`"),
    ({"inertia": 0.0}, ValueError, "`inertia`"),
    ({"rotor_inertia": -0.1}, ValueError, "`rotor_inertia`"),
    ({"offset": np.inf}, ValueError, "`offset`"),
    ({"locked": "yes"}, TypeError, "`locked`"),
])
def test_bad_parameters(kwargs, error, match):
    args = {"mass": MASS, "inertia": INERTIA, "rotor_inertia": ROTOR, "offset": OFFSET}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        RotorSleigh(**args)


def test_bad_initial_conditions():
    with pytest.raises(ValueError, match="`spin` = 0 with the rotor locked"):
        nhphys.simulate(LOCKED, 1.0, 0.1, velocity=1.0, spin=1.0)
    with pytest.raises(ValueError, match="`position`"):
        nhphys.simulate(FREE, 1.0, 0.1, position=[0.0, 1.0, 0.0])
    with pytest.raises(TypeError, match="`spin`"):
        nhphys.simulate(FREE, 1.0, 0.1, spin="fast")
