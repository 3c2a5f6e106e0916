r"""Python twin of the face friction of ``nhphys_ext.rolling``: the Coulomb force and torque on a
thin disk lying flat on a plane, sliding and spinning on its face.

The model
---------
A thin disk of radius ``R`` lies on a plane (unit normal ``n``) with its centre of mass at the
centre of its face. The plane presses on the face with the uniform pressure
``p_N = N / (pi R^2)``: friction acts in the plane of the face, which holds the centre of mass,
so it has no moment about the in-plane axes, and for a body whose axis is a principal axis of
inertia the spin about it has no gyroscopic moment either; uniform pressure then balances every
moment. Each element ``dA`` of the face at ``r`` (in the plane, from the centre) moves at
``u(r) = v + w n x r`` (``v`` the centre's velocity in the plane, ``w`` the spin about ``n``)
and feels the Coulomb force ``-mu p_N u / |u| dA``. The totals are

    F = -mu p_N \int_D u / |u| dA,        T = n . \int_D r x (-mu p_N u / |u|) dA

(the torque about ``n`` through the centre). Both depend on ``(v, w)`` only through its
direction: scaling the velocities leaves them unchanged.

Reduction to one integral
-------------------------
For ``w != 0`` the velocity field is a rotation about the instantaneous centre
``c = n x v / w`` (``w n x (r - c) = w n x r - w n x c = w n x r + v``): ``u / |u| = sgn(w)
n x e`` with ``e = (r - c) / |r - c|``. In polar coordinates about ``c``, ``r = c + s e(phi)``
with ``e(phi) = cos(phi) e_1 + sin(phi) e_2`` (``(e_1, e_2, n)`` right-handed), and
``r x (n x e) = n (r . e)``, ``r . e = c . e + s``:

    G = \int_D e dA = \int dphi e (s_+^2 - s_-^2) / 2,
    H = \int_D (r . e) dA = \int dphi [(c . e)(s_+^2 - s_-^2) / 2 + (s_+^3 - s_-^3) / 3],
    F = -mu p_N sgn(w) n x G,     T = -mu p_N sgn(w) H,

where the ray from ``c`` along ``e`` is inside the disk for ``s_- < s < s_+``, the roots of
``|c + s e|^2 = R^2``: ``s_+- = -c.e +- sqrt(D)``, ``D = R^2 - |c|^2 + (c.e)^2``.

* ``|c| < R`` (``c`` inside the face): ``s_- = 0`` for every ``phi``; the integrands are smooth
  and periodic in ``phi``, and the trapezoidal rule on ``FACE_POINTS`` equal angles converges
  geometrically, the more slowly the nearer ``c`` is to the rim, where ``sqrt(D)`` has kinks at
  ``c . e = 0``. The angles are measured from ``c``'s direction, which puts those kinks on grid
  points.
* ``|c| >= R``: only the rays within ``psi_max = asin(R/|c|)`` of ``-c`` meet the disk, and
  ``sqrt(D)`` vanishes like a square root at the edges. With ``psi`` the angle from ``-c``,
  ``c . e = -|c| cos(psi)``, ``D = R^2 - |c|^2 sin^2(psi)``, the substitution
  ``|c| sin(psi) = R sin(beta)`` (``beta`` in ``[-pi/2, pi/2]``; ``sqrt(D) = R cos(beta)``,
  ``dpsi = R cos(beta) dbeta / (|c| cos(psi))``) and ``s_+^2 - s_-^2 = -4 (c.e) sqrt(D)``,
  ``s_+^3 - s_-^3 = 2 sqrt(D) (4 (c.e)^2 - |c|^2 + R^2)`` (from ``s_+ + s_- = -2 c.e``,
  ``s_+ s_- = |c|^2 - R^2``) give

      G = \int dbeta e(psi(beta)) 2 R^2 cos^2(beta),
      H = \int dbeta (2/3) R^4 cos^4(beta) / (|c| cos(psi(beta))),

  smooth integrands; the map ``beta -> pi - beta`` leaves them unchanged, so the integral over
  the whole period ``[-pi, pi)`` is twice the one wanted, and the trapezoidal rule on it again
  converges geometrically.

A ring
------
A wheel (a torus of tube radius ``r`` round the circle of radius ``R``) lying flat touches the
plane along its bottom circle, ``r = R e(phi)`` about its centre, with the uniform pressure
``N / (2 pi R)`` per length. With the instantaneous centre ``c`` as above (``|c| = rho``, the
angle measured from ``c``'s direction, ``D = |r - c| = sqrt(R^2 + rho^2 - 2 R rho cos(phi))``),
``u / |u| = sgn(w) n x (r - c) / D``, and the force and torque are one-dimensional integrals:

    F = -(mu N / 2 pi) sgn(w) n x (G c/|c|),     T = -(mu N / 2 pi) sgn(w) H,
    G = \int (R cos(phi) - rho) / D dphi,        H = \int R (R - rho cos(phi)) / D dphi

(the part of ``r - c`` across ``c`` integrates to zero). With ``I_0 = \int dphi / D =
4 K(k) / (R + rho)`` and ``J = \int D dphi = 4 (R + rho) E(k)``, ``k^2 = 4 R rho / (R +
rho)^2`` (complete elliptic integrals of the first and second kind), ``\int cos(phi) / D =
((R^2 + rho^2) I_0 - J) / (2 R rho)``, so

    G = 2 ((R - rho) K(k) - (R + rho) E(k)) / rho,     H = 2 ((R - rho) K(k) + (R + rho) E(k)),

finite at ``rho = R`` (where ``K`` diverges like ``log(1 / |R - rho|)`` and ``(R - rho) K -> 0``:
the centre on the ring; ``G = -4``, ``H = 4 R``). ``K`` and ``E`` come from the
arithmetic-geometric mean (quadratically convergent, to round-off). The closed form is taken for
``rho / R`` within ``RING_CLOSED``; outside, where it cancels (``G`` is ``O(rho)`` as ``rho ->
0``), the trapezoidal rule on ``RING_POINTS`` equal angles, whose integrands are periodic and
analytic in a strip of half width ``|log(rho / R)| >= log 2`` (the error falls like
``2^-RING_POINTS``, far below round-off).
Checks: ``rho = 0`` (a pure spin) gives ``G = 0``, ``H = 2 pi R``, so ``T = -mu N R``, the
largest torque of a ring; ``rho -> infinity`` gives ``F -> -mu N v / |v|``.

Checks of the reduction: with ``v = 0`` (``c = 0``), ``G = 0`` and ``H = 2 pi R^3 / 3``, so
``T = -(2/3) mu N R``; as ``|c| -> infinity`` (pure translation), ``e -> -c/|c|`` and
``G -> -pi R^2 c/|c|``, so ``F -> -mu N v/|v|``. Both convergences slow down as ``|c|``
approaches ``R`` (the instantaneous centre on the rim), where the integrands lose their
smoothness; the test suite measures the error against a two-dimensional adaptive quadrature.
Where ``w = 0`` or ``|c| > TRANSLATION_LIMIT R`` the pure translation's force is used (the
torque there is below ``mu N R R / (4 |c|)``, below ``2.5e-13 mu N R``). At rest
(``v = 0`` and ``w = 0``) the direction is not defined: the force is ``-mu N t`` along a
given unit direction ``t`` (the one the face starts to slide in), or zero without one.
"""

import numpy as np

RING_POINTS = 64  # trapezoidal points of a ring's integrals away from its rim ("A ring")
RING_CLOSED = (0.5, 2.0)  # |c| / R between these: the closed form in elliptic integrals
FACE_POINTS = 256  # trapezoidal points on the period (module docstring)
TRANSLATION_LIMIT = 1e12  # |c| / R above which the motion is a translation


def plane_basis(n):
    """``(e_1, e_2)``: an orthonormal pair with ``(e_1, e_2, n)`` right-handed."""
    e = np.zeros(3)
    e[int(np.argmin(np.abs(n)))] = 1.0
    e1 = np.cross(n, e)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(n, e1)


def face_integrals(c, radius):
    """``(G, H)`` of the module docstring for the instantaneous centre ``c`` (2,), in the
    plane's coordinates: ``G`` (2,), ``H`` a float."""
    R = radius
    size = float(np.sqrt(c[0] * c[0] + c[1] * c[1]))  # as the kernel computes it
    angles = 2.0 * np.pi * np.arange(FACE_POINTS) / FACE_POINTS
    weight = 2.0 * np.pi / FACE_POINTS
    if size < R:
        # angles from c's direction: the integrands' kinks near the rim, where c . e = 0, are
        # then on grid points
        along = np.asarray(c, float) / size if size > 0.0 else np.array([1.0, 0.0])
        across = np.array([-along[1], along[0]])
        e = np.outer(along, np.cos(angles)) + np.outer(across, np.sin(angles))
        ce = c @ e
        s = -ce + np.sqrt(R * R - size * size + ce * ce)
        G = weight * (e * (0.5 * s * s)).sum(axis=1)
        H = weight * (ce * 0.5 * s * s + s ** 3 / 3.0).sum()
        return G, float(H)
    toward = -np.asarray(c, float) / size  # the direction psi = 0, towards the disk
    side = np.array([-toward[1], toward[0]])
    k = R / size
    sin_psi = k * np.sin(angles)
    cos_beta = np.cos(angles)
    # cos^2 psi = (1 - k^2) + k^2 cos^2 beta: no cancellation, and not 0 where cos beta is not
    cos_psi = np.sqrt((1.0 - k) * (1.0 + k) + (k * cos_beta) ** 2)
    e = np.outer(toward, cos_psi) + np.outer(side, sin_psi)
    G = 0.5 * weight * (e * (2.0 * R * R * cos_beta ** 2)).sum(axis=1)
    H = 0.5 * weight * ((2.0 / 3.0) * R ** 4 * cos_beta ** 4 / (size * cos_psi)).sum()
    return G, float(H)


def translation_friction(v, w, radius, limit, hint):
    """``(F, 0.0)`` of a face or ring whose motion is a translation (no spin, or an
    instantaneous centre beyond ``TRANSLATION_LIMIT`` radii): ``-limit`` along the velocity,
    or against the ``hint`` at rest (zero without one); ``None`` for any other motion."""
    speed = float(np.linalg.norm(v))
    if not (w == 0.0 or speed > TRANSLATION_LIMIT * radius * abs(w)):
        return None
    if speed > 0.0:
        return -limit * v / speed, 0.0
    return (np.zeros(3) if hint is None else -limit * np.asarray(hint, float)), 0.0


def face_friction(v, w, n, radius, normal_force, mu, hint=None):
    """The friction on a disk's face sliding on a plane (module docstring).

    Parameters
    ----------
    v : ndarray, shape (3,)
        The centre's velocity (in the plane).
    w : float
        The spin about ``n``.
    n : ndarray, shape (3,)
        The plane's unit normal.
    radius, normal_force, mu : float
    hint : ndarray, shape (3,), optional
        The unit direction a face at rest starts to slide in.

    Returns
    -------
    F : ndarray, shape (3,)
        The friction force (space, in the plane).
    T : float
        Its torque about ``n`` through the centre.
    """
    limit = mu * normal_force
    sliding = translation_friction(v, w, radius, limit, hint)
    if sliding is not None:
        return sliding
    e1, e2 = plane_basis(n)
    c = np.array([-(v @ e2), v @ e1]) / w  # n x v / w in the plane's coordinates
    G, H = face_integrals(c, radius)
    scale = -limit / (np.pi * radius * radius) * np.sign(w)
    G3 = G[0] * e1 + G[1] * e2
    return scale * np.cross(n, G3), scale * H


def elliptic_ke(k_prime):
    """``(K, E)``: the complete elliptic integrals of the first and second kind of the modulus
    ``k = sqrt(1 - k'^2)``, by the arithmetic-geometric mean (``k' > 0``)."""
    a, b = 1.0, float(k_prime)
    total, power = 1.0 - 0.5 * (1.0 - b * b), 0.5  # 1 - sum 2^(n-1) c_n^2, c_0^2 = k^2
    for _ in range(40):
        c = 0.5 * (a - b)
        a, b = 0.5 * (a + b), np.sqrt(a * b)
        power *= 2.0
        total -= power * c * c
        if abs(c) <= 1e-17 * a:
            break
    K = np.pi / (2.0 * a)
    return K, K * total


def ring_integrals(rho, radius):
    """``(G, H)`` of a ring (module docstring, "A ring") for the instantaneous centre at the
    distance ``rho`` from its centre."""
    R = radius
    if RING_CLOSED[0] * R <= rho <= RING_CLOSED[1] * R:
        if rho == R:
            K_term, E = 0.0, 1.0  # (R - rho) K -> 0, E(1) = 1
        else:
            K, E = elliptic_ke(abs(R - rho) / (R + rho))
            K_term = (R - rho) * K
        return 2.0 * (K_term - (R + rho) * E) / rho, 2.0 * (K_term + (R + rho) * E)
    phi = 2.0 * np.pi * np.arange(RING_POINTS) / RING_POINTS
    cos = np.cos(phi)
    D = np.sqrt((R - rho) ** 2 + 2.0 * R * rho * (1.0 - cos))
    weight = 2.0 * np.pi / RING_POINTS
    return (weight * float(np.sum((R * cos - rho) / D)),
            weight * float(np.sum(R * (R - rho * cos) / D)))


def ring_friction(v, w, n, radius, normal_force, mu, hint=None):
    """The friction on a ring (a wheel lying flat) sliding and spinning on a plane (module
    docstring, "A ring"): the arguments and results of :func:`face_friction`."""
    limit = mu * normal_force
    sliding = translation_friction(v, w, radius, limit, hint)
    if sliding is not None:
        return sliding
    c = np.cross(n, v) / w
    rho = float(np.linalg.norm(c))
    G, H = ring_integrals(rho, radius)
    scale = -limit / (2.0 * np.pi) * np.sign(w)
    along = c / rho if rho > 0.0 else np.zeros(3)
    return scale * G * np.cross(n, along), scale * H
