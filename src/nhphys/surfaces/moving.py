"""Grounds under a prescribed rigid motion: turntables, moving floors.

A :class:`MovingGround` is a surface carried by a rigid motion ``x_space = Q(t) x + d(t)``; the
ground's material point at ``x`` moves at ``V(x) = w x (x - d) + v`` (``w`` the ground's angular
velocity, ``v = dd/dt``). A body rolling on it without slipping moves its material contact point
with the ground's: ``v_body + A (Omega x s) = V(x)``. Energy is then not conserved: the ground
does work through the contact force, which trajectories record in ``work``.

>>> from nhphys.surfaces import Plane
>>> turntable = Plane().moving(rate=1.5)            # about +z through the origin
>>> tilted = Plane().moving(rate=1.0, axis=[0.1, 0, 1.0], center=[0, 0, 0])
>>> conveyor = Plane().moving(velocity=[0.2, 0, 0])

The motions: :class:`SteadyRotation` (a turntable, tilted or not), :class:`UniformTranslation`,
and :class:`PrescribedMotion` (a Python callable ``t -> (Q, d, w, v)``, which steps on the
Python twin). Built-in motions are the identity at ``t = 0``; a prescribed one places the
ground by its value at ``t = 0``, and initial conditions (``ground_point``) are then given in
space. The step's equations are in :mod:`nhphys.twins.rolling` ("Moving grounds").

The step needs the motion's velocities only; the continuous equations that ``Reference``
integrates also need its accelerations, ``dw/dt`` and ``dv/dt`` (:meth:`GroundMotion.acceleration`:
closed forms for the built-in motions; for a prescribed one, its own ``acceleration`` callable
if given, else a finite difference of its velocities).
"""

import numpy as np

from nhphys._validation import as_vector3

__all__ = ["GroundMotion", "MovingGround", "PrescribedMotion", "SteadyRotation",
           "UniformTranslation", "motion_pose"]


class GroundMotion:
    """Base of the ground motions."""

    uses_callable = False

    def build(self, module):  # pragma: no cover - abstract
        """This motion in ``module`` (``nhphys_ext.rolling`` or :mod:`nhphys.twins.rolling`)."""
        raise NotImplementedError

    def acceleration(self, t):  # pragma: no cover - abstract
        """``(dw/dt, dv/dt)`` (3,), (3,) at time ``t``: the rates of the angular velocity ``w``
        and of the translation's velocity ``v = dd/dt`` (space)."""
        raise NotImplementedError


class SteadyRotation(GroundMotion):
    """Rotation at ``rate`` rad/s about ``axis`` (normalised) through ``center``.

    Parameters
    ----------
    rate : float
        Finite; positive turns counter-clockwise seen from the tip of ``axis``.
    axis : array_like (3,)
        Nonzero.
    center : array_like (3,)
        A point on the axis (it stays put).
    """

    def __init__(self, rate, axis=(0.0, 0.0, 1.0), center=(0.0, 0.0, 0.0)):
        rate = np.asarray(rate, dtype=float)
        if rate.shape != () or not np.isfinite(rate):
            raise ValueError(f"SteadyRotation: expected `rate` to be a finite number, got "
                             f"{rate!r}.")
        axis = as_vector3(axis, "axis")
        if np.linalg.norm(axis) == 0:
            raise ValueError("SteadyRotation: expected `axis` to be a nonzero vector.")
        self.rate = float(rate)
        self.axis = axis / np.linalg.norm(axis)
        self._axis_given = axis  # what a scene file writes: normalising twice may move an ulp
        self.center = as_vector3(center, "center")

    def build(self, module):
        return module.SteadyRotation(self.rate, self.axis, self.center)

    def acceleration(self, t):
        """``w`` is constant; ``v = -w x (Q center)`` turns with the table, so
        ``dv/dt = -w x (w x Q center) = w x v``."""
        w, k, c = self.rate * self.axis, self.axis, self.center
        angle = self.rate * t  # Q center by Rodrigues' formula
        Qc = (np.cos(angle) * c + np.sin(angle) * np.cross(k, c)
              + (1.0 - np.cos(angle)) * (k @ c) * k)
        v = -np.cross(w, Qc)
        return np.zeros(3), np.cross(w, v)

    def __repr__(self):
        return (f"SteadyRotation(rate={self.rate}, axis={self.axis.tolist()}, "
                f"center={self.center.tolist()})")


class UniformTranslation(GroundMotion):
    """Translation at a constant ``velocity`` (3,), m/s."""

    def __init__(self, velocity):
        self.velocity = as_vector3(velocity, "velocity")

    def build(self, module):
        return module.UniformTranslation(self.velocity)

    def acceleration(self, t):
        return np.zeros(3), np.zeros(3)

    def __repr__(self):
        return f"UniformTranslation(velocity={self.velocity.tolist()})"


class PrescribedMotion(GroundMotion):
    """A motion given by ``motion(t) -> (Q, d, w, v)``: the rotation (3, 3), translation (3,),
    angular velocity (3,) and ``dd/dt`` (3,) at time ``t``. It runs on the Python twin; every
    value is checked when it is called (``Q`` a rotation, all finite), and a bad one stops the
    run at that step with a ``ValueError`` naming the motion.

    Parameters
    ----------
    motion : callable
        ``t -> (Q, d, w, v)``.
    acceleration : callable, optional
        ``t -> (dw/dt, dv/dt)`` (3,), (3,), for ``Reference`` only (the step needs none).
        Without it :meth:`acceleration` differentiates ``w`` and ``v`` numerically (see there).
    """

    uses_callable = True
    # the finite difference of `acceleration`: a sixth-order central difference, step (s)
    DIFFERENCE_STEP = 5e-3
    _STENCIL = ((1, 45.0 / 60), (2, -9.0 / 60), (3, 1.0 / 60))  # (k, weight of f(t +- k dt))

    def __init__(self, motion, acceleration=None):
        if not callable(motion):
            raise TypeError(f"PrescribedMotion: expected a callable t -> (Q, d, w, v), got "
                            f"{motion!r}.")
        if acceleration is not None and not callable(acceleration):
            raise TypeError(f"PrescribedMotion: expected `acceleration` to be a callable "
                            f"t -> (dw/dt, dv/dt) or None, got {acceleration!r}.")
        self.motion = motion
        self.acceleration_callable = acceleration

    def build(self, module):
        from nhphys.twins import rolling

        return rolling.PrescribedMotion(self.motion)

    def _pair(self, values, t, what):
        try:
            a, b = (np.asarray(x, dtype=float) for x in values)
        except (TypeError, ValueError):
            a = b = None
        if a is None or a.shape != (3,) or b.shape != (3,) \
                or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError(f"PrescribedMotion: expected {what} to give two finite vectors of "
                             f"shape (3,), got {values!r} at t = {t:.6g}.")
        return a, b

    def acceleration(self, t):
        """``(dw/dt, dv/dt)`` at ``t``: the ``acceleration`` callable's value when given, else
        the sixth-order central difference of the motion's ``w`` and ``v`` with step
        ``DIFFERENCE_STEP`` = 5e-3 s (six calls of ``motion``, at ``t +- k 5e-3``, k = 1, 2, 3).
        Its error is about ``(f dt)^6 / 140`` relative for a motion of angular frequency ``f``
        (7e-12 at 2 pi rad/s, 1e-10 at 10 rad/s, 1e-8 at 20 rad/s) plus about 1e-13 of
        rounding: give ``acceleration`` for faster motions, or wherever ``Reference``'s own
        tolerance must rule. The motion is called on both sides of ``t`` (before 0 at the
        start).
        """
        if self.acceleration_callable is not None:
            return self._pair(self.acceleration_callable(t), t, "`acceleration`")
        dw, dv = np.zeros(3), np.zeros(3)
        for k, weight in self._STENCIL:
            for sign in (1, -1):
                out = self.motion(t + sign * k * self.DIFFERENCE_STEP)
                try:
                    w, v = self._pair(out[2:4], t, "the motion")
                except TypeError:
                    raise ValueError(f"PrescribedMotion: expected the callable {self.motion!r} "
                                     f"to return (Q, d, w, v), got {out!r}.") from None
                dw += sign * weight * w
                dv += sign * weight * v
        return dw / self.DIFFERENCE_STEP, dv / self.DIFFERENCE_STEP

    def __repr__(self):
        return f"PrescribedMotion({self.motion!r})"


class MovingGround:
    """A ground surface carried by a :class:`GroundMotion`.

    Parameters
    ----------
    surface : nhphys.surfaces.Surface
        The ground in its own frame (with its normal toward the body, as for a ground at rest).
    motion : GroundMotion
    """

    def __init__(self, surface, motion):
        from nhphys.surfaces.base import Surface

        if not isinstance(surface, Surface):
            raise TypeError(f"Expected `surface` to be an nhphys.surfaces.Surface, got "
                            f"{surface!r}.")
        if not isinstance(motion, GroundMotion):
            raise TypeError(f"Expected `motion` to be a GroundMotion (SteadyRotation, "
                            f"UniformTranslation, PrescribedMotion), got {motion!r}.")
        self.surface = surface
        self.motion = motion

    def pose(self, t):
        """Where the motion has carried the ground at time ``t``: see :func:`motion_pose`."""
        return motion_pose(self.motion, t)

    def __repr__(self):
        return f"MovingGround({self.surface!r}, {self.motion!r})"


def motion_pose(motion, t):
    """The placement ``x_space = Q x + d`` of a ground carried by ``motion`` at time ``t``.

    The values are the step's own (:mod:`nhphys.twins.rolling`'s ``at``): a steady rotation
    gives ``Q = exp(t rate hat(axis))``, ``d = center - Q center``; a uniform translation
    ``Q = I``, ``d = t velocity``; a prescribed motion its callable's value (checked).

    Parameters
    ----------
    motion : GroundMotion
    t : float or array_like (n,)

    Returns
    -------
    Q : ndarray (3, 3), or (n, 3, 3) for an array ``t``
    d : ndarray (3,), or (n, 3)
    """
    from nhphys.twins import rolling

    state = motion.build(rolling)
    times = np.asarray(t, dtype=float)
    poses = [state.at(float(s))[:2] for s in times.ravel()]
    Q = np.array([np.asarray(q, dtype=float) for q, _ in poses]).reshape(times.shape + (3, 3))
    d = np.array([np.asarray(v, dtype=float) for _, v in poses]).reshape(times.shape + (3,))
    return Q, d


def moving(surface, motion=None, *, rate=None, axis=(0.0, 0.0, 1.0), center=(0.0, 0.0, 0.0),
           velocity=None):
    """``surface`` carried by ``motion``, or by a steady rotation (``rate``, ``axis``,
    ``center``), or a uniform translation (``velocity``): exactly one of the three."""
    given = [motion is not None, rate is not None, velocity is not None]
    if sum(given) != 1:
        raise ValueError("Expected exactly one of `motion`, `rate` (a steady rotation) or "
                         "`velocity` (a uniform translation).")
    if rate is not None:
        motion = SteadyRotation(rate, axis, center)
    elif velocity is not None:
        motion = UniformTranslation(velocity)
    elif callable(motion) and not isinstance(motion, GroundMotion):
        motion = PrescribedMotion(motion)
    return MovingGround(surface, motion)
