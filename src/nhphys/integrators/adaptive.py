"""Adaptive high-order integration of the continuous equations on a compiled right-hand side,
projected back onto the constraint manifold after every accepted step.

``Adaptive(rtol, atol, method="DOP853")`` integrates a system's continuous equations (those
:class:`~nhphys.integrators.Reference` integrates) with Hairer and Wanner's DOP853 (order 8,
embedded error estimators of orders 5 and 3, step-size control). The right-hand side is a
compiled field: ``SuslovField`` or ``CoordinateField`` of ``nhphys_ext.rhs``, ``RollingField``
of ``nhphys_ext.rolling`` (eq. 29) for a rolling body (their Python twins in
:mod:`nhphys.twins.rhs` and :mod:`nhphys.twins.rolling` with ``backend="python"``).

Two step loops drive it (``Adaptive(loop=...)``):

* ``"compiled"`` (the default for DOP853): the field's own loop, ``field.integrate``, compiled
  together with the field (``nhphys_ext/dop853.pxd``, specified by :mod:`nhphys.twins.dop853`):
  scipy's ``solve_ivp`` DOP853 algorithm step by step, with no Python call per stage and the
  projection below applied after every accepted step. A field call costs 0.05-0.45 us there.
* ``"scipy"``: ``scipy.integrate.ode("dop853")`` (scipy's compiled translation of Hairer's
  Fortran code; ``"DOPRI5"`` selects the order-5 sibling), one Python call of the field per
  stage (0.2-0.65 us a call with the solver's share, against 4-5 us with ``solve_ivp`` and
  0.06-0.3 ms for the systems' numpy ``reference_rhs``); its wrapper cannot change the state
  inside its loop, so the projection is applied at every output time only.

(``benchmarks/bench_work_precision.py`` measures both; BENCHMARKS.md.)

The projection
--------------
Each step of the run (of length ``dt``, the output interval) integrates from the state of the
previous output time to the next. The compiled loop projects every accepted step back onto the
manifold before the next step starts from it (the next step's first stage is reused from the
unprojected point: :mod:`nhphys.twins.dop853` shows that this keeps the order); scipy's loop
projects the state at the end of the interval, before it is saved and the next interval starts
from it.

Suslov (:meth:`nhphys.twins.rhs.SuslovField.project`):

* the orientation ``R`` to the closest rotation (orthogonal factor of its polar decomposition),
  so that ``|R^T R - I|`` is at round-off at every saved frame;
* the body angular velocity ``Omega`` onto the Suslov constraint ``a . Omega = 0`` along
  ``I^-1 a`` (the orthogonal projection in the kinetic-energy metric), so that the constraint
  residual is at round-off at every saved frame.

Rolling body (:meth:`nhphys.twins.rolling.RollingField.project`): the state is that of
``RollingBody.reference_state``, ``(A, z, Omega, W)`` (15,), whose only redundancy is the nine
entries of ``A`` for a rotation: the contact point on the body is slaved to ``A`` and the
ground coordinates ``z`` (``s = S(-A^T n(z))``, the centre at ``a = x(z) - A s``), so the contact
holds by construction, and the centre's velocity is ``V(x) - A (Omega x s)`` (``V`` the
velocity of a moving ground's material point under the contact, zero at rest), so no slip does
too.
The projection replaces ``A`` by the rotation that keeps the body's normal direction
``A^T n / |A^T n|`` (its orthogonal polar factor, then the smallest rotation putting that
direction back on ``n``: :class:`nhphys.twins.rolling.RollingField` explains why the polar
factor alone is not enough) and leaves ``z``, ``Omega`` and ``W`` alone; the frames then have
``|A^T A - I|``, ``|A n_M - n|`` and the slip at round-off. The ground chart of ``z`` is the
one ``reference_state`` chose, kept for the run (as in ``Reference``). A contact event of the
shape met by the field (a disk falling flat) ends the run with a
:class:`~nhphys.errors.ContactEvent` naming the interval it happened in.

With ``Adaptive(conserve_energy=True)`` each projection then also moves the velocities onto the
start's level of the first integral (the energy less the work ``E - W``: kinetic, springs' and
gravity's energy) along its gradient in the kinetic-energy metric, in one exact step
(:mod:`nhphys.twins.rhs`, "Holding the energy"); the level is part of the run's state
(``energy_level``).

The solution of the unprojected equations leaves the manifold only by the size of its global
error (the manifold is invariant), and the projection moves the state by no more than that
distance, so the projected run keeps the solver's order and accuracy (Hairer, Lubich & Wanner,
Geometric Numerical Integration, IV.4); the tests check that it agrees with
:class:`~nhphys.integrators.Reference` to the tolerance. Every output interval restarts the
solver from the projected state, with the step the solver had reached as its first trial
step; short output intervals still cost extra steps (each interval ends on an output time).
Choose ``dt`` no shorter than the frames you need.

Systems: :class:`nhphys.systems.Suslov` with built-in force elements,
:class:`nhphys.systems.RollingBody` with built-in force elements on a ground at rest or under a
built-in motion (a turntable, a moving floor), and the
systems on coordinates (:class:`~nhphys.systems.KnifeEdge`, :class:`~nhphys.systems.VerticalDisk`,
:class:`~nhphys.systems.ContactOscillator`, :class:`~nhphys.systems.RotorSleigh`, a
:class:`~nhphys.systems.ConstrainedMechanicalSystem`) with their built-in force elements;
``Reference`` integrates the others. For the systems on coordinates the state is ``(q, v, W)``
and the projection moves only the velocities, onto ``mu(q) v = 0`` in the mass metric
(:class:`nhphys.twins.rhs.CoordinateField`); a force schedule's kinks are steps of the
solver's error control like any other. The run can be checkpointed and resumed exactly: its
whole state is the projected state of the last output time and the next first trial step.
The compiled loop returns that step with every interval. Scipy's loop watches its accepted
steps (to carry the step over) only in calls of ``advance`` with more than one interval, since
the watch costs 15-25 % of a 300-s single-interval run: there, runs cut into chunks
differently agree to the tolerance, not bit for bit (the driver's chunks, and so its
checkpoints and resumed runs, are the same every time).
"""

import warnings
from dataclasses import dataclass

import numpy as np

from nhphys import _backend
from nhphys.errors import NewtonError
from nhphys.integrators.run import Run
from nhphys.twins import newton as status
from nhphys.twins.newton import INFO_COMMITTED, INFO_STATUS

METHODS = {"DOP853": "dop853", "DOPRI5": "dopri5"}  # method -> scipy.integrate.ode's name
LOOPS = ("auto", "scipy", "compiled")  # whose step loop (Adaptive.loop)
SOLVER_FAILED = status.CODES["NOT_CONVERGED"]  # the status a failed interval records


def field_of(system, backend):
    """The right-hand side of ``system`` for ``backend``, with the backend that evaluates it.

    Suslov bodies with built-in force elements get the ``SuslovField`` of ``nhphys_ext.rhs``
    (or its twin :mod:`nhphys.twins.rhs`); a :class:`~nhphys.systems.RollingBody` with
    built-in force elements on a ground at rest or under a built-in motion (``SteadyRotation``,
    ``UniformTranslation``) the ``RollingField`` of ``nhphys_ext.rolling`` (or its twin
    :mod:`nhphys.twins.rolling`), on the ground chart of its last ``reference_state`` (call
    that first); the systems described by a coordinate model (the knife edge, the vertical
    disk, the contact oscillator, the rotor sleigh, a user's
    :class:`~nhphys.systems.ConstrainedMechanicalSystem`) get ``CoordinateField`` with their
    built-in force elements. A model or a force element that only the twins know (a user's
    model, a Python callable) is evaluated by the twin field.

    Returns
    -------
    field : SuslovField, RollingField or CoordinateField
    used : {"cython", "python"}

    Raises
    ------
    ValueError
        ``system`` has no field (the message names the systems that have one and says to use
        ``Reference``): a rolling body on a ground moved by a ``PrescribedMotion``, a Python
        callable force.
    """
    from nhphys.forces import uses_callables
    from nhphys.systems.constrained import CoordinateSystem
    from nhphys.systems.rolling import RollingBody
    from nhphys.systems.suslov import Suslov
    from nhphys.twins.models import compiled_counterpart

    if isinstance(system, Suslov):
        if uses_callables(system.forces):
            raise ValueError("Adaptive integrates a Suslov body with built-in force elements; "
                             "a Python callable needs Reference().")
        module, used = _backend.choose("rhs", backend)
        return module.SuslovField(system.inertia, system.axis, system.force_set(used),
                                  system.pivot), used
    if isinstance(system, RollingBody):
        if uses_callables(system.forces):
            raise ValueError("Adaptive integrates a RollingBody with built-in force elements; "
                             "a Python callable needs Reference().")
        if getattr(system.motion, "uses_callable", False):
            raise ValueError("Adaptive integrates a RollingBody on a ground at rest, turning "
                             "(SteadyRotation) or translating (UniformTranslation); a "
                             "PrescribedMotion needs Reference().")
        from nhphys.forces import build_force_set

        module, used = _backend.choose("rolling", backend)
        shape = system.contact_shape(module, used)
        ground = system.ground.with_backend(used).kernel
        forces = build_force_set(system.forces, _backend.choose("forces", used)[0])
        motion = None if system.motion is None else system.motion.build(module)
        return module.RollingField(shape, ground, system._reference_chart, system.mass,
                                   system.inertia, system.gravity, system.up,
                                   system.support_shape, forces, motion), used
    if not isinstance(system, CoordinateSystem):
        raise ValueError(f"Adaptive integrates Suslov, RollingBody and the systems on coordinates "
                         f"(KnifeEdge, VerticalDisk, ContactOscillator, RotorSleigh) so far, not "
                         f"{type(system).__name__}; use Reference() for it.")
    if uses_callables(getattr(system, "forces", None) or ()):
        raise ValueError("Adaptive integrates built-in force elements; a Python callable "
                         "needs Reference().")
    module, used = _backend.choose("rhs", backend)
    model = system.coordinates
    if used == "cython":
        model = compiled_counterpart(model, _backend.choose("models", "cython")[0])
        if model is None:  # a model only the twins know: its field is the twin's
            module, used = _backend.choose("rhs", "python")
            model = system.coordinates
    return module.CoordinateField(model, system.body_forces(model, used)), used


class AdaptiveRun(Run):
    """One run of :class:`Adaptive` (see the module docstring).

    Attributes
    ----------
    state : ndarray, shape (12,), (13,), (15,) or (2 n + 1,)
        The field's state at the last output time (projected): ``R.ravel()``, ``Omega`` and,
        with force elements, the work ``W`` (Suslov), ``A.ravel()``, ``z``, ``Omega``, ``W``
        (``RollingBody.reference_state``), or
        ``q``, ``v`` and the work ``W`` (a coordinate model).
    step_guess : ndarray, shape (1,)
        The first trial step of the next interval (from the last interval's accepted steps,
        :meth:`_next_guess`; 0 at the start: the solver's own estimate). Part of the state, so
        a resumed run is identical.
    energy_level : ndarray, shape (1,), or None
        With ``conserve_energy``, the level of the first integral every projection holds
        (the start's), part of the state; else None.
    field : SuslovField, RollingField or CoordinateField
        The right-hand side (compiled or twin), with ``evaluations`` counting its calls.
    """

    state_names = ("state", "step_guess")

    def __init__(self, system, field, state0, dt, backend, scipy_name, rtol, atol, max_steps,
                 compiled=False, conserve_energy=False):
        from scipy.integrate import ode  # imported here: it costs half a second

        self.compiled = compiled  # the field's own DOP853 loop (field.integrate)
        self.tolerances = (rtol, atol, max_steps)
        self.system = system
        self.field = field
        # how a state becomes a frame: the rolling field's own frames, Suslov's R and Omega, or
        # the coordinate model's reference_unpack
        self._kind = ("rolling" if hasattr(field, "frame") else
                      "suslov" if type(field).__name__ == "SuslovField" else "coordinates")
        self.backend = backend
        self.dt = dt
        self.state = np.array(state0, dtype=float)
        field.project(self.state, 0.0)  # the start is on the manifold to round-off too
        # the level of the first integral every projection holds (conserve_energy): part of
        # the state, so that a restored run holds the same level
        self.energy_level = None
        if conserve_energy:
            self.energy_level = np.array([field.energy(self.state, 0.0)])
            self.state_names = (*self.state_names, "energy_level")
        # the first trial step of the next interval (0: the solver's own estimate)
        self.step_guess = np.zeros(1)
        self.solver = ode(field).set_integrator(scipy_name, rtol=rtol, atol=atol,
                                                nsteps=max_steps)
        self.message = ""
        # the time of the last accepted step, the last two steps, and the accepted steps of
        # the current interval
        self._accepted = [0.0, 0.0, 0.0, 0]

    def _record(self, t, y):
        """scipy's ``solout``, called after every accepted step: keeps the last two steps."""
        accepted = self._accepted
        h = t - accepted[0]
        accepted[0] = t
        if h > 0.0:
            accepted[1], accepted[2] = accepted[2], h
            accepted[3] += 1

    def _next_guess(self):
        """The first trial step of the next interval, from the steps of this one: the step
        before the last (the last ends on the output time), doubled when it was the interval's
        first step (our own trial step, accepted: the solver might have taken more)."""
        _, before_last, last, count = self._accepted
        if count <= 1:
            return 2.0 * last
        return 2.0 * before_last if count == 2 else before_last

    def _unpack(self, states, times):
        """Trajectory fields of field states (n, size) at ``times`` (n,)."""
        states = np.asarray(states).reshape(-1, self.state.size)
        if self._kind == "rolling":  # the field's frames (reference_unpack's)
            from nhphys.twins.rolling import FRAME_SIZE, unpack_frames

            frames = np.array([self.field.frame(y, t) for y, t in zip(states, times)])
            return self.system.observables(unpack_frames(frames.reshape(len(states), FRAME_SIZE)))
        if self._kind == "suslov":  # R and Omega (and the work, with force elements)
            saved = {"R": states[:, :9].reshape(-1, 3, 3).copy(), "omega": states[:, 9:12].copy()}
            if states.shape[1] > 12:
                saved["work"] = states[:, 12].copy()
            return self.system.observables(saved)
        return self.system.observables(self.system.reference_unpack(states.copy()))

    def _initial_frame(self):
        return self._unpack(self.state[None], np.array([self.steps_done * self.dt]))

    def _allocate(self, n_saved):
        # the saved states, and their times in the last column
        return np.empty((n_saved, self.state.size + 1))

    def _loop(self, n_steps, save_every, saved, info):
        loop = self._compiled_loop if self.compiled else self._scipy_loop
        if self.energy_level is None:
            return loop(n_steps, save_every, saved, info)
        field = self.field
        field.energy_level = float(self.energy_level[0])  # the run's level (restore)
        before = field.energy_misses
        code = loop(n_steps, save_every, saved, info)
        missed = field.energy_misses - before
        if missed:
            warnings.warn(f"Adaptive(conserve_energy=True): {missed} projections could not "
                          f"reach the energy level (the velocities alone cannot: a body at "
                          f"rest, or too high); the energy was not projected there.",
                          RuntimeWarning, stacklevel=4)
        return code

    def _scipy_loop(self, n_steps, save_every, saved, info):
        """The intervals on ``scipy.integrate.ode`` (module docstring)."""
        solver, field, dt, accepted = self.solver, self.field, self.dt, self._accepted
        # with more than one interval, watch the accepted steps (a Python call a step, 10-20 %
        # of a step's cost here) to restart each interval with the step the solver had reached
        # (else each restart estimates one and grows it again: ~25 extra field calls)
        track = n_steps > 1
        solver.set_solout(self._record if track else None)
        with warnings.catch_warnings():
            # a failure is reported by the run's NewtonError, not by scipy's warning
            warnings.simplefilter("ignore", UserWarning)
            for k in range(n_steps):
                t0 = (self.steps_done + k) * dt
                # scipy's legacy `ode` has no setter for the first step: its integrator reads
                # this attribute when set_initial_value resets it (0: its own estimate)
                solver._integrator.first_step = float(self.step_guess[0])
                solver.set_initial_value(self.state, t0)
                accepted[:] = [t0, 0.0, 0.0, 0]
                if hasattr(field, "status"):
                    field.status = 0  # a contact status of an earlier, recovered interval
                y = solver.integrate(t0 + dt)
                if not solver.successful() or not np.all(np.isfinite(y)):
                    code = solver.get_return_code()
                    self.message = solver._integrator.messages.get(
                        code, f"return code {code}") if not solver.successful() \
                        else "the state is not finite"
                    # a contact event or a singular contact met by the field is the reason
                    reason = getattr(field, "status", 0)
                    info[INFO_STATUS] = reason if reason else SOLVER_FAILED
                    return k + 1
                y = np.array(y, dtype=float)
                reason = field.project(y, t0 + dt)
                if reason:  # the contact failed at the projected state
                    self.message = "the contact failed at the end of the interval"
                    info[INFO_STATUS] = reason
                    return k + 1
                if track:
                    self.step_guess[0] = self._next_guess()
                self.state[:] = y
                info[INFO_COMMITTED] = k + 1
                if (k + 1) % save_every == 0:
                    saved[(k + 1) // save_every - 1, :-1] = y
                    saved[(k + 1) // save_every - 1, -1] = t0 + dt
        return 0

    def _compiled_loop(self, n_steps, save_every, saved, info):
        """The intervals on the field's own DOP853 loop (``field.integrate``: scipy's
        ``solve_ivp`` DOP853 step by step, the field called in C, every accepted step
        projected), each started with the step the previous one ended with."""
        from nhphys.twins.dop853 import SOLVER_MESSAGES

        field, dt = self.field, self.dt
        rtol, atol, max_steps = self.tolerances
        for k in range(n_steps):
            t0 = (self.steps_done + k) * dt
            if hasattr(field, "status"):
                field.status = 0  # a contact status of an earlier, recovered interval
            y = self.state.copy()
            status, code, h_next, _ = field.integrate(y, t0, t0 + dt, rtol, atol,
                                                      float(self.step_guess[0]), max_steps)
            if status or code or not np.all(np.isfinite(y)):
                self.message = SOLVER_MESSAGES.get(code, "the state is not finite")
                info[INFO_STATUS] = status if status else SOLVER_FAILED
                return k + 1
            self.step_guess[0] = h_next
            self.state[:] = y
            info[INFO_COMMITTED] = k + 1
            if (k + 1) % save_every == 0:
                saved[(k + 1) // save_every - 1, :-1] = y
                saved[(k + 1) // save_every - 1, -1] = t0 + dt
        return 0

    def _frames(self, saved, count):
        return self._unpack(saved[:count, :-1], saved[:count, -1])

    def _event(self, reason):
        from nhphys.systems.rolling import event_message

        return event_message(reason, self.system.body.shape)

    def _error(self, reason, step, partial):
        if reason != SOLVER_FAILED:  # the field's: a contact event or a singular contact
            return super()._error(reason, step, partial)
        return NewtonError(step, step * self.dt,
                           f"the adaptive solver failed in this interval: {self.message}",
                           partial)


@dataclass(frozen=True)
class Adaptive:
    """Adaptive DOP853 on a compiled right-hand side, projected onto the manifold after every
    accepted step (module docstring).

    Parameters
    ----------
    rtol, atol : float
        The solver's relative and absolute tolerances, floats in (0, 1). The global error over
        a run grows with its length; tighten them for long runs.
    method : {"DOP853", "DOPRI5"}
        Hairer's order-8 (default) or order-5 Dormand-Prince code.
    max_steps : int
        The most solver steps in one output interval (``dt``) before the run fails with a
        :class:`~nhphys.errors.NewtonError` naming the interval.
    loop : {"auto", "scipy", "compiled"}
        Whose step loop: ``"scipy"`` drives ``scipy.integrate.ode`` (Hairer's code, one Python
        call of the field per stage; the state projected at output times); ``"compiled"``
        the field's own DOP853 loop (``field.integrate``: scipy's ``solve_ivp`` DOP853
        algorithm step by step, :mod:`nhphys.twins.dop853`), where the field is called in C
        and every accepted step is projected, for ``method="DOP853"`` only; ``"auto"`` the
        compiled loop for DOP853, scipy's for DOPRI5.
    conserve_energy : bool
        Also project onto the start's level of the first integral after every accepted step
        (every output time in scipy's loop): the energy less the work ``E - W`` of a Suslov
        body or a rolling body (:mod:`nhphys.twins.rhs`, "Holding the energy"). The energy
        error then stays at round-off over any run, and the order is kept. Not for the systems
        on coordinates (a ``ValueError``).

    Examples
    --------
    >>> import nhphys
    >>> from nhphys.integrators import Adaptive
    >>> top = nhphys.systems.Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1])
    >>> traj = nhphys.simulate(top, 10.0, 0.5, integrator=Adaptive(1e-10, 1e-12),
    ...                        omega=[1.0, 0.5, 0.0])
    >>> float(traj.constraint_residual.max()) < 1e-14
    True
    """

    rtol: float = 1e-10
    atol: float = 1e-12
    method: str = "DOP853"
    max_steps: int = 100_000
    loop: str = "auto"
    conserve_energy: bool = False

    def __post_init__(self):
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0 < value < 1:
                raise ValueError(f"Expected `{name}` to be a number in (0, 1), got {value!r}.")
        if not isinstance(self.method, str) or self.method.upper() not in METHODS:
            raise ValueError(f"Expected `method` to be one of {tuple(METHODS)}, got "
                             f"{self.method!r}.")
        steps = self.max_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"Expected `max_steps` to be an integer >= 1, got {steps!r}.")
        if self.loop not in LOOPS:
            raise ValueError(f"Expected `loop` to be one of {LOOPS}, got {self.loop!r}.")
        if not isinstance(self.conserve_energy, bool):
            raise ValueError(f"Expected `conserve_energy` to be True or False, got "
                             f"{self.conserve_energy!r}.")

    def start(self, system, dt, backend, **initial_conditions):
        """A run of ``system`` from ``initial_conditions`` (those of ``Reference``).

        Raises
        ------
        ValueError
            A system without a compiled field (the message names the supported ones), or a
            Python callable force; bad initial conditions (those of ``Reference``).
        TypeError
            An initial condition the system does not know (the message lists its own).
        """
        from nhphys.integrators.retraction import check_initial_conditions

        from nhphys.systems.rolling import RollingBody

        rolling = isinstance(system, RollingBody)
        if not rolling:  # an unsupported system is refused before its initial conditions
            field, used = field_of(system, backend)
        check_initial_conditions(system, initial_conditions)
        state = np.asarray(system.reference_state(**initial_conditions), dtype=float)
        if rolling:  # after reference_state: the field works on the ground chart it chose
            field, used = field_of(system, backend)
        if type(field).__name__ == "SuslovField":
            state = state[:field.size]  # no work without force elements
        if self.conserve_energy and not hasattr(field, "energy"):
            raise ValueError(f"Adaptive(conserve_energy=True) holds the energy of a Suslov body "
                             f"or a RollingBody so far, not of {type(system).__name__}; use "
                             f"conserve_energy=False.")
        has_loop = self.method.upper() == "DOP853"
        if self.loop == "compiled" and not has_loop:
            raise ValueError(f"Adaptive(loop='compiled') is DOP853; use loop='scipy' for "
                             f"method {self.method!r}.")
        return AdaptiveRun(system, field, state, dt, used,
                           METHODS[self.method.upper()], float(self.rtol), float(self.atol),
                           self.max_steps, compiled=has_loop and self.loop != "scipy",
                           conserve_energy=self.conserve_energy)
