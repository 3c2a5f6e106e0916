r"""Python twin of the contact modes of ``nhphys_ext.rolling`` (``modes_run``): a convex body
that rolls on a ground while the ground pushes it and friction holds it, slides where friction
cannot, leaves the ground where the ground would have to pull, flies, and lands with an impact.

Modes and guards
----------------
A body is in one of three modes; each has a guard, a function of the state at the end of a
step that is positive while the mode holds (the third, ``SLIDING``, comes with a finite
friction coefficient ``mu`` and is described in "The sliding step"; a thin disk has a fourth,
``FACE``, described in "Lying flat", and a cylinder two more, ``SIDE`` and ``SIDE_SLIDING``,
described in "Lying on its side"):

* ``ROLLING``: the rolling step of :mod:`nhphys.twins.rolling` (contact and no-slip exact).
  Guard: the normal contact force ``N`` of the continuous model at the state (eq. 29,
  :meth:`nhphys.twins.rolling.RollingField._rates`; the discrete state satisfies the contact
  and the no-slip condition, so ``N`` is a function of it). ``N < 0`` means the ground would
  have to pull: the body lifts off.
* ``FLIGHT``: the free rigid body under gravity. Guard: the gap ``n . (P - x)`` between the
  body and the ground, from the closest-approach pair of the contact solve
  (:func:`nhphys.twins.rolling.contact`). ``gap < 0`` means the body has reached the ground:
  touchdown, and an impact.

The flight step
---------------
The RATTLE step of the free rigid body on SO(3) x R^3, the rolling step with no contact force:
``Pi^-(xi) = Pi`` is solved for ``xi`` (:func:`nhphys.twins.suslov.retraction_step` with the
identity basis), ``A_1 = A tau(xi)``, ``Pi_1 = Pi^+(xi)``, and for the centre of mass the
Stormer-Verlet kick-drift-kick ``p_half = p - h/2 m g k``, ``a_1 = a + h p_half / m``,
``p_1 = p_half - h/2 m g k``. It is symmetric and second order, keeps ``A`` on SO(3), keeps
the angular momentum about the centre of mass in space, ``A Pi``, exactly
(``A_1 Pi_1 = A tau(xi) tau(xi)^T Pi^-(xi) = A Pi``: ``Pi^+ = tau^T Pi^-`` for both
retractions), and moves the centre on the exact parabola (Stormer-Verlet integrates a constant
acceleration exactly), up to rounding.

The sliding step
----------------
A sliding body keeps the gap closed (a holonomic constraint, as in rolling) but its contact
point slips, against a Coulomb force: the contact force is ``N (n - mu t)`` with ``t`` the unit
slip direction, the direction of the contact point's tangential velocity ``u_t``. It is the
rolling step of :mod:`nhphys.twins.rolling` with the no-slip rows replaced by this force law,
the law taken at each end of the step (the symmetric pair of the discrete Lagrange-d'Alembert
principle):

1. first kick with the force at the start, ``N (n_k - mu t_k)`` at ``s_k``, ``t_k`` the start's
   slip direction (known): ``Pi_half = Pi + h/2 N s_k x A_k^T d_k``,
   ``p_half = p + h/2 (N d_k - m g k)``, ``d_k = n_k - mu t_k``;
2. drift of the free body: ``Pi^-(xi) = Pi_half``, ``A_1 = A_k tau(xi)``,
   ``a_1 = a_k + h p_half / m``;
3. the unknowns ``(xi, N)`` (4) solve the momentum relation (3) and ``gap(A_1, a_1) = 0`` (1)
   by Newton, with the Jacobian ``[[dPi^-/dxi, -h/2 s_k x A_k^T d_k],
   [(s_1 x A_1^T n_1)^T J_r(xi), h^2/(2m) n_1 . d_k]]`` (the rolling step's gap row);
4. second kick with the force at the end, ``N' (n_1 - mu t_1)`` at ``s_1``:
   ``Pi_1 = Pi^+(xi) + h/2 N' s_1 x A_1^T d_1``, ``p_1 = p_half + h/2 (N' d_1 - m g k)``. With
   the contact's inverse mass ``K`` (see "The impact") the contact point then moves at
   ``u_1 = u_free + h/2 N' K d_1``, ``u_free`` its velocity after the kick without the
   contact force. ``N'`` closes the normal velocity, ``n_1 . u_1 = 0``, which is linear in
   ``N'`` for a given ``t_1``; and ``t_1`` must be the direction of the slip it leaves,
   ``t_1 = u_1t / |u_1t|``: the implicit Coulomb law at the end (:func:`end_slip`, Newton on
   the tangential slip). Where no slip along the start's direction solves it, the slip stops
   or reverses inside the step; the step then keeps ``t_1 = t_k`` and the guard below locates
   the stop.

Replacing ``h`` by ``-h`` exchanges the two kicks, so the step is symmetric; with no friction
(``mu = 0``) it is RATTLE for the body on the surface. The work of friction is the trapezoidal
rule on the contact force's power at the material contact point,
``h/2 (N d_k . u_k + N' d_1 . u_1)``, added to ``work``. For a ball on a plane (constant
``N = m g`` and a fixed slip direction) the step is exact: the velocities are linear in time.

Being symmetric, the sliding step composes to orders 4, 6 and 8 with fractions whose sub-steps
all stay inside the step (Suzuki's five-stage table for order 4 in place of the triple jump,
which leaves the step; Kahan and Li's for 6 and 8). The first step of a slip is basic at every
order; a whole step in which a non-final sub-step finds the slip stopping is retaken as the
basic step, whose guard shows the stop, which the partial steps (composed again: their
sub-steps end before the stop) then locate. A backward sub-step solves its end's Coulomb law on
the branch that keeps the slip's sense (:func:`composed_step`, :func:`end_slip`).

Guards of sliding: the normal force ``N`` of the continuous sliding model at the state (lift-off),
and ``m g (u_t . t_ref)`` with ``t_ref`` the slip direction at the start of the step (the slip
stops); the guard is the smaller, so the event located is the first. The stop's guard is not
armed in a step that starts from a slip too small to have a direction (``SLIP_FLOOR``), the
first step of a slip: at a slip's onset the needed friction is exactly at the cone's edge, so
the slip grows from zero with zero slope, and its sign in that first step is that of the
round-off; a stop located there would put the body back to rolling at the cone's edge again,
one event after the other. (The end kick's ``N'``
is no guard: a partial step of size ``theta`` fixes the first kick's force only to
``eps / theta^2`` through the gap, and ``N'`` inherits it.) ``N`` makes the gap's second
derivative vanish. With ``u = v + A (Omega x s)`` the velocity of the body's material contact
point, ``u_t`` its tangential part, ``L_H`` the ground's Weingarten map in space and ``S'`` the
support map's derivative, the contact pair moves by ``ds/dt``, ``(I - S' A^T L_H A) ds/dt =
S' (Omega x A^T n + A^T L_H u_t)`` (the rolling contact equation and the slip's part: the
ground point moves at ``dx/dt = u_t + A ds/dt``, the normal turns by ``dn/dt = -L_H dx/dt``),
and ``d2 gap/dt2 = dn/dt . u_t + n . du/dt = 0`` with
``du/dt = dv/dt + A (Omega x (Omega x s) + dOmega/dt x s + Omega x ds/dt)`` and the
Newton-Euler equations under ``N (n - mu t)`` is affine in ``N``:
``N = -c_0 / (n . K (n - mu t))``, ``c_0 = -(L_H dx/dt) . u_t - g n . k + n . A (Omega x
(Omega x s) + Omega x ds/dt + (I^-1 (I Omega x Omega)) x s)``. With a finite ``mu`` the rolling guard is
``mu N - |F_t|``, ``F`` the contact force rolling needs (the continuous model's): it reaches
zero before ``N`` does, so a body that would lift off slides first. At a slip the sliding
starts in the direction ``-F_t / |F_t|`` (the friction that was needed, now at its limit,
opposes it); at a stop the impulse that brings the contact point to rest is applied (it is
round-off small: the slip has stopped) and the body rolls if the friction rolling needs is
inside the cone, else it slides on in the new direction.

Locating a mode change
----------------------
A step of size ``h`` from a state where the guard ``g_0 >= 0`` that ends with ``g(h) < 0``
contains a mode change. The step is a smooth function of its size, so ``g(theta)``, the guard
at the end of the step of size ``theta`` from the same state, is a smooth function on
``[0, h]`` with a sign change; its root ``theta*`` is found by the Illinois variant of false
position (superlinear, and it keeps the bracket), to a bracket of ``LOCATE_TOL h``, from the
bracket ``[0, h]`` with ``g(0) = max(g_0, 0)``. The partial step of the end of the bracket with
the smaller ``|g|`` is taken, the event is applied there, and the rest of the step,
``h - theta*``, is taken in the new mode (in which a further event may be located, up to
``MAX_EVENTS_PER_STEP`` in one step; more is the status ``TOO_MANY_EVENTS``, never a hang).
A composition (order 4, 6, 8) is treated as one step of size ``theta``: every partial step is
the whole composition scaled.

The time of the event is then that of the discrete flow, within round-off: its error is the
method's error in the guard, not the step size. On a flight the step is exact (the parabola),
so the touchdown time is exact to round-off whatever the step.

The impact
----------
At touchdown the contact pair of the touchdown pose gives ``s`` (body, from the centre of
mass), the ground point ``x`` and normal ``n``. An impulse ``P`` (space) at the contact point
changes ``p`` by ``P`` and ``Pi`` by ``s x A^T P``, so the velocity of the body's material
contact point, ``u = v + A (Omega x s)``, changes by ``K P`` with the contact's inverse mass

    K = I_3 / m - A hat(s) I^-1 hat(s) A^T        (symmetric positive definite).

The impact law is the rough one with Newton's restitution ``e``: the normal velocity of the
contact point is reversed and scaled, ``n . u^+ = -e n . u^-``, and its tangential velocity
brought to zero, so ``u^+ = -e (n . u^-) n`` and ``P = K^-1 (u^+ - u^-)``. The kinetic energy
changes by ``P . (u^- + u^+) / 2 <= 0`` (the work of the impulse, the average of the contact
point's velocities before and after), which the run adds to ``work`` so that
``energy - work`` stays constant through impacts.

With ``impact="coulomb"`` the tangential impulse is bounded by the friction cone: the rough
impulse is kept where its tangential part is inside it, ``|P_t| <= mu P_n`` (the contact point
sticks), and otherwise the contact point slides through the impact against the friction
impulse, ``P = lambda (n - mu t)`` with ``t`` the direction of its slip before the impact (the
slip's direction is taken as constant during it) and ``lambda`` from the restitution law,
``n . (u^- + K P) = -e n . u^-``: ``lambda = -(1 + e) n . u^- / (n . K (n - mu t))``. For a
ball, and for any contact whose ``K`` maps ``n`` and the tangent plane to themselves, the slip
keeps its direction and only slows, so this is Coulomb's law exactly and the energy only
decreases; for a contact coupling the two (an eccentric body) the fixed direction is an
approximation and should be checked (``energy_change`` of the events). After a sliding impact
without rebound the body slides on.

The rough law is unilateral: the ground only pushes, ``n . P >= 0``. Where the impulse above
would pull (``n . P < 0``: a contact point whose tangential velocity, coupled to the normal one
through ``K``, cannot be stopped by a push), the law's other branch holds: no normal impulse,
the tangential velocity brought to zero, ``P = T (T^T K T)^-1 (-T^T u^-)`` with ``T`` a tangent
basis (3, 2). The two branches are those of the complementarity ``n . P >= 0``,
``n . u^+ + e n . u^- >= 0``, one of them zero: with the tangential velocity stopped, the normal
velocity is affine in ``n . P`` with the positive slope of the Schur complement of ``K``, so
exactly one branch holds, and where the first pulls the second leaves the contact point
separating, ``n . u^+ > -e n . u^- >= 0``: the body flies on. Its energy changes by
``-u_t^- . (T^T K T)^-1 u_t^- / 2 <= 0``.

After the impact the body flies (``e n . u^+ > 0``, or the unilateral branch) or rolls
(``e = 0``: the contact point is at rest, the rolling mode's start). A touchdown located at a
graze's lowered guard (below) is below the ground by up to ``g |n . k| h^2 / 2``; if the body
flies on from it, it is first put back on the ground (:func:`lift_to_ground`: moved along
``n`` by its depth, the change of its potential energy, ``O(h^2)``, added to ``work`` and to
the event's ``energy_change``). Flying on from below the ground, its guard would start at
the lowered boundary it has just crossed, and the next touchdown would follow at once. Bounces end: an impact whose separation speed
``e |n . u^-|`` is below ``REST_SPEED = g |n . k| |h| / 2``, a bounce whose flight would last
less than one step, is made plastic (``e = 0``), so a bouncing body comes to roll after finitely
many bounces instead of a cascade of ever shorter flights. If the ground cannot hold the body
after a plastic impact (``N < 0`` there: it lands on a slope falling away faster than its
path), it flies on from there. If it also came in below the rest speed, the touchdown is a
graze (:func:`grazes`): no event, no impulse, and the flight's guard is lowered to
``gap + g |n . k| h^2 / 2`` (the depth of a fall from rest for one step) until the gap is
positive again at the end of a step. Without it, a
body that leaves the ground where ``N`` crosses zero, whose gap then grows only as the cube of
the time, could meet the ground again at once by the step's error, and lift off and touch down
in a cascade (a disk rolling on its rim and tumbling fast does). A real touchdown after a graze
is located where the gap reaches minus that depth, and the rolling step's contact closes it.

A lift-off changes no velocity: the state at the located time is the flight's start.

Lying flat
----------
A thin disk whose centre of mass is its centre and whose axis (body z) is a principal axis of
inertia, on a plane (``face`` gives its radius and flat angle), has a fourth mode, ``FACE``:
lying flat on its face. Rolling or sliding, it meets the ``FLAT`` contact event where its
plane comes within its flat angle of the ground's: the support map stops there (the contact is
no longer a point), so the step fails. The partial step at which it fails is located by
bisection on the step's status (:func:`locate_fall`, to ``LOCATE_TOL h``; the state kept is
the last that steps, its axis within twice the flat angle of the normal, else the failure is
a Newton iterate's and ends the run as before), and the disk lands there (:func:`land_flat`):

* it is turned flat about its rim point on the ground, by the smallest rotation taking its
  axis to the normal (the last ``flat_angle`` of the fall, done at once: the centre drops by
  ``R sin(flat_angle)`` and slides by ``R (1 - cos(flat_angle))``), and its centre is put on
  the plane to round-off;
* the velocities out of the plane (the centre's along ``n``, the angular velocity about the
  in-plane axes) are taken out: a plastic impact of the whole face, with restitution 0
  whatever ``e`` is. With ``mu = inf`` the face is rough and no point of it can slide, so the
  disk stops. With a finite ``mu`` the face keeps its motion along the ground, the centre's
  tangential velocity ``v`` and the spin ``w`` about ``n`` (the impact's friction impulse is
  neglected);
* the change of kinetic plus potential energy is the event's ``energy_change`` and goes into
  ``work``, so ``energy - work`` is continuous through the landing.

On its face the disk slides and spins under gravity's tangential part ``m g_t``, the normal
force ``N = m g (n . k)`` (with force elements, their load joins both: :func:`face_state`)
and the Coulomb friction of the whole face under uniform pressure
(:mod:`nhphys.twins.face`: ``F`` and ``T`` as functions of ``(v, w)``, which is why the
centre of mass must be the centre and the axis principal), the planar rigid body

    m dv/dt = F(v, w) + m g_t,      I_a dw/dt = T(v, w),      da/dt = v,      dA/dt = hat(w n) A,

``I_a = e_z . I e_z``. The step (:func:`face_step`) is the explicit trapezoidal rule (Heun)
on ``(v, w)``, ``v_1 = v_0 + h/2 (f(v_0, w_0) + f(v_p, w_p))`` with the Euler predictor
``(v_p, w_p)``, and the trapezoidal rule on the position and the turn about ``n``
(``a_1 = a_0 + h/2 (v_0 + v_1)``, ``A_1 = exp(h/2 (w_0 + w_1) hat(n)) A_0``): second order,
exact where ``F`` and ``T`` are constant (a pure slide decelerates at ``mu g``, a pure spin at
``(4/3) mu g / R`` for the solid disk, a slide down a slope at ``g (sin - mu cos)``). The work of
friction is the trapezoidal rule on its power ``F . v + T w``, with the force of each stage.

The face stops where its velocities vanish. ``F`` and ``T`` depend only on the direction of
``(v, R w)`` and are odd in it, so they jump at the stop. The progress of the velocities from
the step's starting ``(v_0, w_0)`` is the larger of ``m v . v_0`` and ``I_a w w_0``, over those
of the two that were moving (:func:`face_progress`; a slide or a spin below ``FACE_FLOOR`` of
the two together, the round-off of the friction's quadrature, is not moving): positive while
either moves on in its
direction, negative once every one has turned back. A slide that turns back while the spin
goes on (up a slope too steep to hold the disk) is not a stop: its progress stays positive.
Where the predictor's progress is negative, its stage force is that of the mirrored velocities
``(-v_p, -w_p)``: the friction the face had before the stop, carried on, so that the step is a
smooth function of ``h`` through the stop. The guard is the progress at the end of the step;
the stop is located as any other event, and what is left of the motion there is taken out (a
``STICK`` event, ``flat`` to ``flat``): small, but not round-off where the slide and the spin
do not turn back at the same instant of the step (it goes to zero with the step). At rest (velocities exactly
zero) the disk stays where static friction holds it, ``m |g_t| <= mu N``; else it slides from
rest down the slope (the friction at rest opposing ``g_t``). On level ground the sliding and
the spin die out together (Farkas, Bartels, Unger and Wolf, Phys. Rev. Lett. 90, 248302
(2003), for this friction law; the tests measure it), so the one located stop ends both.

Frames of a disk lying flat: ``s`` the face's centre (0 for a disk), ``x`` its point on the plane, ``n``,
``n_M = A^T n``, the gap ``n . (a - x_g)`` (round-off) and ``N``; its contact residual is that
of the gap, its slip speed that of the centre. In flight such a disk may turn flat in the air:
where the support map stops, its closest-approach pair is its lowest rim point over the plane
(:func:`flat_flight_contact`: the unit projection of ``-A^T n`` on its plane, any rim point
where that vanishes), and a touchdown with its axis within its flat angle of the normal is a
landing on its face (:func:`land_flat` at the touchdown's rim point). Any other body still ends
the run at the ``FLAT`` event.

A cylinder standing on an end face (centred, its axis principal) lies flat in the same way:
its face's centre, the contact ``s``, is ``+-L e_z`` from its centre of mass (``L`` its half
length, the end whose outward axis points down; :func:`face_centre`), its centre is ``L``
above the plane, and the face's equations above hold unchanged (the friction acts along the
plane through the axis, which passes through the centre of mass). The pressure on the face is
taken as uniform: the moment of the friction about the centre of mass, which shifts the
pressure towards the leading edge, is neglected, and so is tipping over by it.

A wheel (a torus, ``face`` with its ring flag set: the tube's radius ``r`` is the offset) lies
flat in the same way at its ``INNER_CONTACT`` event (``flat_status``), its centre ``r`` above
the plane and the contact ``s = +-r e_z`` below it: it touches along the circle of its centre
line, so the friction is that of a ring (:func:`nhphys.twins.face.ring_friction`; the largest
torque ``face_torque mu N R`` with ``face_torque`` 1 instead of a face's 2/3), and in flight its
lowest point is its tube's (:func:`lowest_point`). The face's approximations hold for it as
they are: the friction's moment about the centre of mass, ``r`` above the plane, is neglected
(fair where ``mu r`` is small beside ``R``); the holding limits are checked alone; and from
rest under a torque it starts to spin with its centre held. Its contact point ``s`` is the
centre of the circle it touches on, not a material point (the frames' ``x``).

Lying on its side
-----------------
A cylinder (radius ``R``, half length ``L``) whose centre of mass is its centre and whose
inertia is ``diag(I_d, I_d, I_a)`` in its axes, on a plane (``side`` gives ``R``, ``L`` and its
side angle), has two more modes: ``SIDE``, rolling on its side, and ``SIDE_SLIDING``, sliding
on it. Rolling or sliding on its rim, it meets the ``RIM_TO_SIDE`` contact event where its
axis comes within its side angle of the plane; the fall is located by bisection as a fall flat
is (:func:`locate_fall`), and it lands there (:func:`land_side`): it is turned onto its side
about its rim point on the ground, by the smallest rotation taking its axis ``u`` into the
plane, its centre put ``R`` above the plane, and its velocities out of the plane (the centre's
along ``n``, the tilt about ``w = n x u``) taken out: a plastic impact of the whole line it
then touches (:func:`onto_side`; the velocities in space kept through the turn, restitution
and the impact's friction impulse neglected, as for a face). In flight, where the support map stops at ``RIM_TO_SIDE``,
its closest-approach pair is its lowest point (:func:`flat_flight_contact`), and a touchdown
with its axis within its side angle of the plane lands it on its side in the same way.

*Kinematics.* On its side the body's angular velocity is ``Omega = psi' n + phi' u`` (a turn
and a roll; a tilt would lift an end), its centre moves at ``v`` in the plane, and the point of
the line ``a - R n + s u`` slips at ``sigma(s) = v + Omega x (-R n + s u) = v_u u + (v_w +
R phi' + s psi') w``; the slip's numbers ``(a, b, c) = (v_u, v_w + R phi', psi')``
(:func:`side_slip`). The line rolls where ``sigma = 0``: ``v = -R phi' w``, ``psi' = 0``.

*Loads.* Gravity and the force elements (:func:`side_load`, as :func:`face_state` for a face):
``N = m g n . k - n . f`` (not below 0), ``F_t`` the load along the plane, ``tau_u`` and
``tau_n`` its torques about the axis and the normal; rolling resistance opposes the roll,
``-mu_r N phi' u``. The torque about ``w`` (the load's, the friction's ``-R F_u``, and the
moment ``I_a phi' psi'`` the turning axis needs, ``d(I_a phi' u)/dt = I_a phi'' u + I_a phi'
psi' w``) is taken by the line: its pressure then varies along it, but the friction is that of
a uniform pressure (the change of the friction's moment by it is neglected), the pressure is
not checked to stay positive (a cylinder on its side does not tip up onto an end's rim), and a
line pulled off the plane (``N`` at 0) is not lifted off: approximations, as for a face.

*Rolling* (``SIDE``): one degree of freedom. With ``da = -R dphi w`` the virtual work of the
load is ``(tau_u - R F_t . w) dphi`` and the kinetic energy ``(I_a + m R^2) phi'^2 / 2``:

    (I_a + m R^2) phi'' = tau_u - R F_t . w          (:func:`side_roll_rate`)

the axis fixed. The friction this needs is ``F = -m R phi'' w - F_t`` and the moment
``M = -tau_n`` (:func:`side_needed`); the guard (:func:`side_margin`) is the smaller of
``mu N - |F|`` and ``(mu N L/2 - |M|) / (L/2)``, each limit alone (``mu N L / 2`` is the largest
moment the line's friction has, that of a pure turn; the two limits are checked alone, not
against the line's limit surface of force and moment together, which matters only where
force elements need both). Past it the line slips.

*Sliding* (``SIDE_SLIDING``): the friction of the whole line, ``F`` (along the plane) and ``M``
(about the normal through the centre), from :func:`nhphys.twins.side.line_friction`; about the
axis it has the torque ``(-R n) x F``, whose axial part is ``R F . w``. Then

    m dv/dt = F_t + F,     I_a dphi'/dt = tau_u + R F . w,     I_d dpsi'/dt = tau_n + M,

and the friction's power is ``F . v + R (F . w) phi' + M psi' = F_u a + F_w b + M c``, the
integral of ``f(s) . sigma(s)``. A slip below ``SLIP_FLOOR`` of the speed ``|v| + R |phi'| +
L |psi'|`` is a line at rest: it starts to slide with the friction it needs held to the limits
(``mu N`` along the needed force, the moment clipped to ``mu N L / 2``; :func:`side_friction`).

*The steps.* Both are the face's explicit trapezoidal rule (Heun) on the velocities
(:func:`side_roll_step`: on ``phi'``; :func:`side_slide_step`: on ``(v, phi', psi')``, the
predictor's friction taken with the predictor's axes), with the trapezoidal rule on the
position and the turns: ``A_1 = exp(dpsi hat(n)) exp(dphi hat(u_0)) A_0``, which is the exact
flow for constant rates (``d/dt [R_n(psi' t) R_u0(phi' t)] = hat(psi' n + phi' R_n u0) [...]``),
so the axis stays in the plane to round-off; second order, exact where the load and the
friction are constant (a straight slide, a roll down a slope). The work of the friction and of
the elements' non-potential part is the trapezoidal rule on its power.

*Stop.* The guard of sliding (:func:`side_guard`) is the slip's progress along the step's
starting slip (:func:`side_progress`), ``m (a a_0 + b b_0) + I_d c c_0``: negative once the
slip has turned back, as it does through a stop, the friction being carried on past it (where
the predictor's progress is negative, the friction of the mirrored slip, as for a face). At the
located stop what is left of the slip is taken out (:func:`side_stick`), the roll keeping the
angular momentum about the line, ``I_a phi' - m R v . w``, and the cylinder rolls on its side
(or slides on from rest where the line cannot hold it). Frames of a cylinder on its side:
``s = -R A^T n`` (the line's midpoint), its point on the plane, the gap and ``N``.

Force elements
--------------
The force elements of ``forces`` (:mod:`nhphys.twins.forces`) act in every mode, each in the
mode's own discretisation, which is unchanged without them:

* rolling: the rolling step with forces (:mod:`nhphys.twins.rolling`, "Applied forces"); its
  guard reads the continuous model with the forces (``RollingField`` with them);
* flight: the symmetric discrete Lagrange-d'Alembert pair on the free body. The first kick
  takes the wrench at the start, ``p + h/2 f_k``, ``Pi + h/2 tau_k``, the drift is the free
  body's, and the second kick takes the wrench at the end, implicitly in the velocities:
  ``p_1 = alpha (p_half + h/2 (f_c - m g k))``, ``Pi_1 = B^-1 (Pi^+ + h/2 tau_c)``,
  ``alpha = 1 / (1 + h c / (2 m))``, ``B = I + h/2 D I^-1`` (:func:`free_end_kick`). The force
  elements see no contact normal (``NO_CONTACT``): spin friction and rolling resistance act
  on the ground only. A force through the centre of mass keeps ``A Pi``, and a constant one
  gives the exact parabola;
* sliding: the same kicks join the sliding step's; rolling resistance takes each kick's own
  normal force ``N`` (its torque per newton, ``rolling_row``, joins the kick's direction), and
  the end's Coulomb law is solved on ``u_1 = u_free + h/2 N' K (n - mu t_1)`` with the damped
  kick's ``u_free`` and ``K`` (:func:`slide_kick_terms`), ``N'`` settled through rolling
  resistance's damping (:func:`forced_end_slip`). The guard's normal force adds the wrench to
  the continuous model's Newton-Euler equations (:func:`sliding_normal_force`,
  :func:`nhphys.twins.rolling.total_wrench`);
* lying flat: the forces join the face's planar equations (:func:`face_state`);
* impacts are unchanged (a finite force gives no impulse); ``land_flat`` and
  :func:`lift_to_ground` count the elements' potentials with gravity's.

The work of the non-potential elements is the trapezoidal rule on their power, as in the
rolling step, so ``energy - work`` (the potentials in ``energy``) stays the check.

Events
------
Each mode change is a row of ``events`` (``EVENT_SIZE`` numbers, :data:`EVENT_FIELDS`): the
time, the kind (``LIFT_OFF``, ``TOUCHDOWN``, ``SLIP``, ``STICK``, ``FALL_FLAT``,
``FALL_SIDE``), the mode
before and after, the normal impulse
``n . P`` and the change of kinetic energy (0 for a lift-off). Rows are written when the step
that holds them is committed.

Saved frame layout: the frame of :mod:`nhphys.twins.rolling` (``FRAME_SIZE`` numbers; in
flight ``s``, ``x``, ``n``, ``n_M`` and ``gap`` are the closest-approach pair's, the normal force
is 0), then the mode (1): ``MODES_FRAME_SIZE`` numbers.
"""

import numpy as np

from nhphys.twins.face import face_friction, ring_friction
from nhphys.twins.newton import CODES, FLAT, INFO_COMMITTED, INNER_CONTACT, OK, RIM_TO_SIDE
from nhphys.twins.newton import NewtonRule
from nhphys.twins.newton import newton_solve
from nhphys.twins.side import line_friction
from nhphys.twins.so3 import rotation_about
from nhphys.twins.forces import tangent_projector
from nhphys.twins.newton import NOT_CONVERGED, NOT_FINITE, SINGULAR_JACOBIAN
from nhphys.twins.rolling import (
    EXTRAPOLATE,
    FAR_BRANCH,
    FRAME_SIZE,
    DIVERGED,
    SETTLED,
    ROLLING_SWEEPS,
    ROUNDOFF,
    SINGULAR_CONTACT,
    RollingField,
    contact,
    frame,
    ground_geometry,
    hat,
    damped_kick,
    jac_right,
    normal_sweep,
    retract,
    rolling_step,
    start_wrench,
    tangent_basis,
    total_wrench,
)
from nhphys.twins.suslov import (
    EXP,
    cross,
    momentum_minus_jacobian,
    momentum_pair,
    reorthonormalize,
    retraction_step,
)

ROLLING, FLIGHT, SLIDING, FACE, SIDE, SIDE_SLIDING = 0, 1, 2, 3, 4, 5
ROUGH, COULOMB = 0, 1  # the impact laws (module docstring, "The impact")
IMPACT_LAWS = {"rough": ROUGH, "coulomb": COULOMB}
MODE_NAMES = {ROLLING: "rolling", FLIGHT: "flight", SLIDING: "sliding", FACE: "flat",
              SIDE: "side rolling", SIDE_SLIDING: "side sliding"}
LIFT_OFF, TOUCHDOWN, SLIP, STICK, FALL_FLAT, FALL_SIDE = 1, 2, 3, 4, 5, 6
EVENT_NAMES = {LIFT_OFF: "lift-off", TOUCHDOWN: "touchdown", SLIP: "slip", STICK: "stick",
               FALL_FLAT: "fall flat", FALL_SIDE: "fall on side"}
EVENT_FIELDS = ("t", "kind", "mode_before", "mode_after", "impulse", "energy_change")
EVENT_SIZE = len(EVENT_FIELDS)
MODES_FRAME_SIZE = FRAME_SIZE + 1
MAX_EVENTS_PER_STEP = 4
LOCATE_TOL = 4 * np.finfo(float).eps  # the bracket of a located event, relative to the step
LOCATE_ITER = 100
SLIDE_SWEEPS = 50  # at most, for the end kick's slip direction
SLIDE_TOL = 1e-14  # ... settled when it moves less than this
SLIP_FLOOR = 1e-12  # a slip below this (relative to the body's speeds) has no direction
FACE_FLOOR = 1e-9  # a face's slide or spin below this (relative to both) is not moving
TOO_MANY_EVENTS = CODES["TOO_MANY_EVENTS"]
EYE = np.eye(3)
NO_CONTACT = np.zeros(3)  # the normal the force elements see in flight: no spin friction


class Model:
    """What the steps of :func:`modes_run` read (the twin's bundle of its arguments)."""

    def __init__(self, shape, ground, motion, forces, mass, inertia, inertia_inv, gravity, up,
                 support_form, restitution, mu, map_code, newton_tol, max_newton, options,
                 impact=ROUGH, face=(0.0, 0.0), slide_substeps=(1.0,), side=(0.0, 0.0, 0.0)):
        self.shape, self.ground, self.motion, self.forces = shape, ground, motion, forces
        # a cylinder that can lie on its side: its radius (0: none), half length and side angle
        self.side_radius, self.side_length, self.side_angle = (float(x) for x in side)
        # the composition a sliding step takes (composed_step)
        self.slide_substeps = tuple(float(f) for f in slide_substeps)
        # a thin disk that can lie flat: its radius (0: none) and its flat angle
        self.face_radius, self.flat_angle = float(face[0]), float(face[1])
        # ... and the distance of its face from the centre of mass (a cylinder's half length)
        self.face_offset = float(face[2]) if len(face) > 2 else 0.0
        # ... and whether it touches along a ring (a wheel, whose fall is INNER_CONTACT) rather
        # than a face: the friction of a ring, the largest torque mu N R instead of (2/3) mu N R
        self.face_ring = len(face) > 3 and float(face[3]) != 0.0
        self.flat_status = INNER_CONTACT if self.face_ring else FLAT
        self.face_torque = 1.0 if self.face_ring else 2.0 / 3.0
        self.face_inertia = float(inertia[2, 2])  # about the disk's axis, body z
        self.side_inertia = float(inertia[0, 0])  # about a diameter (a cylinder's, body x)
        self.mass, self.gravity = float(mass), float(gravity)
        self.inertia, self.inertia_inv = inertia, inertia_inv
        self.up = up
        self.restitution, self.mu, self.impact = float(restitution), float(mu), int(impact)
        self.map_code, self.newton_tol, self.max_newton = map_code, newton_tol, max_newton
        self.options = int(options)
        self.weight = self.mass * self.gravity * np.asarray(up, dtype=float)
        self.forced = forces is not None and not forces.empty
        self.field = RollingField(shape, ground, 0, mass, inertia, gravity, up, support_form,
                                  forces=forces if self.forced else None)


def flight_step(model, h, state):
    """One flight step of size ``h`` from ``state`` (the dict of :func:`modes_run`):
    ``(status, new_state, contact)``, the contact being the closest-approach pair of the end
    pose (its ``gap`` is the guard)."""
    m = model.mass
    Pi_half, p_start = state["Pi"], state["p"]
    if model.forced:  # the first half kick of the applied forces (no contact: no spin friction)
        p_start, kick_const, _, power = start_wrench(model.forces, h, m, model.inertia_inv,
                                                     dict(state, n=NO_CONTACT))
        Pi_half = Pi_half + kick_const
    xi0 = h * (model.inertia_inv @ Pi_half)
    st, xi, Pi1, _ = retraction_step(model.inertia, EYE, Pi_half, xi0, h, model.map_code,
                                     model.newton_tol, model.max_newton)
    if st:
        return st, None, None
    A1 = reorthonormalize(state["A"] @ retract(xi, model.map_code))
    half_weight = 0.5 * h * model.weight
    p_half = p_start - half_weight
    a1 = state["a"] + (h / m) * p_half
    st, c = contact(model.shape, model.ground, A1, a1, state["chart"], state["z"],
                    model.newton_tol, model.max_newton)
    if st == model.flat_status and model.face_radius > 0.0:  # (a disk, a wheel) flat in the air
        st, c = OK, flat_flight_contact(model, A1, a1, state["chart"], state["z"])
    elif st == RIM_TO_SIDE and model.side_radius > 0.0:  # a cylinder level in the air
        st, c = OK, flat_flight_contact(model, A1, a1, state["chart"], state["z"])
    if st:
        return st, None, None
    p1, work = p_half - half_weight, state["work"]
    if model.forced:
        try:
            kick = free_end_kick(model, h, state["t"] + h, A1, a1, p_half, Pi1, NO_CONTACT,
                                 state["p"] / m, model.inertia_inv @ state["Pi"])
        except np.linalg.LinAlgError:  # B singular (damping in a backward sub-step)
            return SINGULAR_JACOBIAN, None, None
        Pi1, p1 = kick.Pi, kick.p
        work = work + 0.5 * h * (power[0] + kick.power)
    new = dict(state, A=A1, a=a1, Pi=Pi1, p=p1, s=c.s, n=c.n.copy(),
               chart=c.chart, z=c.z, t=state["t"] + h, normal_force=0.0, work=work)
    return OK, new, c


class EndKick:
    """What the second half kick of the applied forces needs and gives (:func:`free_end_kick`,
    :func:`end_kick_terms`): ``alpha``, ``B`` (3, 3), the end wrench's ``f_c``, ``tau_c``,
    ``f_app``, ``tau_app``, ``D``, ``drag``, and the results ``Pi``, ``p``, ``power``."""

    __slots__ = ("alpha", "B", "G", "f_c", "tau_c", "f_app", "tau_app", "D", "drag", "Pi", "p",
                 "power")


def end_wrench(model, h, t1, A1, a1, n, v_start, omega_start, normal=0.0):
    """The applied forces at the end of a step, and the implicit kick's matrices
    (:mod:`nhphys.twins.rolling`, "Applied forces", 4'): with drag ``c`` and the damping ``D``
    (body; rolling resistance ``mu normal P_t`` added for the normal force ``normal``),
    ``alpha = 1 / (1 + h c / (2 m))``, ``B = I + h/2 D I^-1`` and ``G = I^-1 B^-1``, so that a kick
    ``p_1 = p + h/2 (f - c p_1 / m)``, ``Pi_1 = Pi + h/2 (tau - D I^-1 Pi_1)`` is
    ``p_1 = alpha (p + h/2 f)``, ``Pi_1 = B^-1 (Pi + h/2 tau)``: an :class:`EndKick`."""
    k = EndKick()
    f_pot, tau_pot, k.f_app, k.tau_app, D, k.drag = model.forces.wrench(t1, A1, a1, n, v_start,
                                                                       omega_start)
    if model.forces.rolling and normal:
        D = D + (model.forces.rolling * normal) * tangent_projector(A1, n)
    k.D = D
    k.f_c, k.tau_c = f_pot + k.f_app, tau_pot + k.tau_app
    k.alpha = 1.0 / (1.0 + 0.5 * h * k.drag / model.mass)
    k.B, k.G = damped_kick(h, D, model.inertia_inv)
    return k


def end_power(model, k):
    """The power of the non-potential elements at the end of the kick ``k`` (its ``Pi``,
    ``p``): ``(f_app - c v) . v + (tau_app - D Omega) . Omega``."""
    v, omega = k.p / model.mass, model.inertia_inv @ k.Pi
    return (k.f_app - k.drag * v) @ v + (k.tau_app - k.D @ omega) @ omega


def free_end_kick(model, h, t1, A1, a1, p_half, pi_end, n, v_start, omega_start):
    """The second half kick of a body with no contact force (flight): an :class:`EndKick` with
    ``Pi = B^-1 (Pi^+ + h/2 tau_c)``, ``p = alpha (p_half + h/2 (f_c - m g k))`` and the end's
    ``power``."""
    k = end_wrench(model, h, t1, A1, a1, n, v_start, omega_start)
    k.Pi = np.linalg.solve(k.B, pi_end + 0.5 * h * k.tau_c)
    k.p = k.alpha * (p_half + 0.5 * h * (k.f_c - model.weight))
    k.power = end_power(model, k)
    return k


def flat_flight_contact(model, A, a, chart, z):
    """The closest-approach pair of a thin disk (or a centred cylinder) in flight over a plane
    at any attitude, flat (or level) included (module docstring, "Lying flat"): its lowest rim
    point ``s = R w`` (of the lower end, ``+-L e_z`` from the centre, for a cylinder), ``w`` the
    unit projection of ``-A^T n`` on the disk's plane (body x where that projection vanishes:
    the disk is flat and every rim point is lowest), and the point below it."""
    x0, J, _, n, _ = ground_geometry(model.ground, int(chart), z)
    c = FaceContact()
    c.s = lowest_point(model, A, n)
    P = a + A @ c.s
    c.gap = float(n @ (P - x0))
    c.x = P - c.gap * n
    c.chart, c.z = int(chart), np.asarray(z, float) + J.T @ (c.x - x0)  # a plane's chart
    c.n, c.n_M, c.Sp = n.copy(), A.T @ n, np.zeros((3, 3))
    return c


def lowest_point(model, A, n):
    """The body point (3,) of a disk, cylinder or wheel that can lie flat that is lowest over a
    plane of normal ``n``: with ``w`` the unit projection of ``d = -A^T n`` on its plane (body x
    where that vanishes), the rim point ``R w`` of a disk, of the lower end of a cylinder
    (``+-L e_z`` from the centre), or the point ``R w + r d / |d|`` of a wheel's tube."""
    d = -A.T @ n
    perp = np.hypot(d[0], d[1])
    w = np.array([d[0] / perp, d[1] / perp, 0.0]) if perp > 0.0 else np.array([1.0, 0.0, 0.0])
    if model.face_ring:
        return model.face_radius * w + model.face_offset * d / np.linalg.norm(d)
    return model.face_radius * w + face_centre(model, A, n)


def space_omega(model, state):
    """The body's angular velocity in space (3,): ``A I^-1 Pi``."""
    return state["A"] @ (model.inertia_inv @ state["Pi"])


def contact_velocity(model, state, s=None):
    """The velocity (3,) of the body's material point at ``s`` (the state's contact point)."""
    s = state["s"] if s is None else s
    return state["p"] / model.mass + state["A"] @ cross(model.inertia_inv @ state["Pi"], s)


def tangential(u, n):
    return u - (n @ u) * n


def slipping(model, state):
    """``(slips, u_t)``: whether the contact point's tangential velocity ``u_t`` (3,) is large
    enough to have a direction (above ``SLIP_FLOOR`` of the body's speeds)."""
    u_t = tangential(contact_velocity(model, state), state["n"])
    size = np.linalg.norm(u_t)
    speed = (np.linalg.norm(state["p"]) / model.mass
             + np.linalg.norm(model.inertia_inv @ state["Pi"]) * np.linalg.norm(state["s"]))
    return bool(size > SLIP_FLOOR * speed and size > 0.0), u_t


def slip_direction(model, state):
    """The unit slip direction (3,) of a sliding state: its contact point's tangential
    velocity, or the stored ``slip`` where that is too small to have a direction (the start
    of a slip)."""
    slips, u_t = slipping(model, state)
    return u_t / np.linalg.norm(u_t) if slips else state["slip"]


def sliding_step(model, h, state):
    """One sliding step of size ``h`` (module docstring, "The sliding step"):
    ``(status, new_state, contact)``."""
    m, g, up, mu = model.mass, model.gravity, model.up, model.mu
    A, a, Pi, p, s_k, n_k = (state[k] for k in ("A", "a", "Pi", "p", "s", "n"))
    I, Iinv = model.inertia, model.inertia_inv
    t_k = slip_direction(model, state)
    d_k = n_k - mu * t_k  # the first kick's force per newton of normal force
    weight = model.weight
    kick_dir = 0.5 * h * cross(s_k, A.T @ d_k)  # Pi_half = Pi + kick_dir N + kick_const
    p_start, kick_const = p, np.zeros(3)
    if model.forced:  # the applied forces' first half kick; rolling resistance is per newton
        # of the normal force N (= n_k . N d_k), as the contact's own torque is
        p_start, kick_const, rolling_row, power_start = start_wrench(model.forces, h, m, Iinv,
                                                                     state)
        kick_dir = kick_dir + 0.5 * h * rolling_row
    c2 = h * h / (2 * m)
    warm = {"chart": state["chart"], "z": state["z"].copy()}
    at = {}

    def pose(x):
        A1 = A @ retract(x[:3], model.map_code)
        a1 = a + (h / m) * (p_start + 0.5 * h * (x[3] * d_k - weight))
        return A1, a1

    def residual(x):
        A1, a1 = pose(x)
        st, c1 = contact(model.shape, model.ground, A1, a1, warm["chart"], warm["z"],
                         model.newton_tol, model.max_newton)
        if st:
            return st, None, None
        warm.update(chart=c1.chart, z=c1.z)
        pi_minus, _ = momentum_pair(x[:3], I, h, model.map_code)
        kick = kick_dir * x[3] + kick_const
        E = np.concatenate([pi_minus - Pi - kick, [c1.gap]])
        momentum = np.abs(pi_minus).max() + np.abs(Pi).max() + np.abs(kick).max()
        gap = np.abs(c1.x).max() + np.abs(c1.s).max()
        at.update(A1=A1, c1=c1)
        return OK, E, np.array([momentum] * 3 + [gap])

    def jacobian(x):
        A1, c1 = at["A1"], at["c1"]
        jac = np.zeros((4, 4))
        jac[:3, :3] = momentum_minus_jacobian(x[:3], I, h, model.map_code)
        jac[:3, 3] = -kick_dir
        jac[3, :3] = cross(c1.s, A1.T @ c1.n) @ jac_right(x[:3], model.map_code)
        jac[3, 3] = c2 * (c1.n @ d_k)
        return OK, jac

    xi0 = h * (Iinv @ Pi)
    N0 = m * g * abs(n_k @ up)  # (not the last step's force: a run's frames must not depend
    # on where it was cut into calls, as a checkpoint cuts it)
    x = np.concatenate([xi0, [N0]])
    floor = np.array([np.linalg.norm(xi0) + 1e-15 * abs(h) / model.newton_tol] * 3
                     + [abs(N0) + m * g])
    with np.errstate(invalid="ignore", over="ignore"):
        st = newton_solve(residual, jacobian, x, floor,
                          NewtonRule(model.newton_tol, ROUNDOFF, model.max_newton))
    if st == OK and model.map_code == EXP and np.linalg.norm(x[:3]) >= np.pi:
        st = FAR_BRANCH
    if st:
        return st, None, None
    xi, N = x[:3], x[3]
    A1 = reorthonormalize(A @ retract(xi, model.map_code))
    p_half = p_start + 0.5 * h * (N * d_k - weight)
    a1 = a + (h / m) * p_half
    st, c1 = contact(model.shape, model.ground, A1, a1, warm["chart"], warm["z"],
                     model.newton_tol, model.max_newton)
    if st:
        return st, None, None
    _, pi_end = momentum_pair(xi, I, h, model.map_code)
    s1, n1 = c1.s, c1.n
    # the end kick F' = N' (n_1 - mu t_1): N' makes the contact point's normal velocity zero
    # and t_1 is the direction of the slip it leaves (module docstring, "The sliding step")
    work = state["work"]
    if not model.forced:
        u_free, K = slide_kick_terms(model, h, A1, s1, p_half, pi_end, None)
        t1, N1, u1, found = end_slip(model, h, u_free, K, n1, t_k)
        d1 = n1 - mu * t1
        Pi1 = pi_end + 0.5 * h * N1 * cross(s1, A1.T @ d1)
        p1 = p_half + 0.5 * h * (N1 * d1 - weight)
    else:
        st, t1, N1, found, kick = forced_end_slip(model, h, state, A1, a1, c1, N, p_half,
                                                  pi_end, t_k)
        if st:
            return st, None, None
        d1 = n1 - mu * t1
        Pi1, p1 = kick.Pi, kick.p
        work = work + 0.5 * h * (power_start[0] + power_start[1] * N + kick.power)
    u_k = contact_velocity(model, state, s_k)
    new = dict(state, A=A1, a=a1, Pi=Pi1, p=p1, s=s1, n=n1.copy(), chart=c1.chart, z=c1.z,
               t=state["t"] + h, slip=t1, normal_force=0.5 * (N + N1), slip_kept=not found)
    u1 = contact_velocity(model, new)
    new["work"] = work + 0.5 * h * (N * (d_k @ u_k) + N1 * (d1 @ u1))
    return OK, new, c1


def slide_kick_terms(model, h, A1, s1, p_half, pi_end, kick):
    """``(u_free (3,), K (3, 3))`` of a sliding step's end kick: the contact point's velocity
    after the kick without the contact force, and how it changes per unit of that force,
    ``u_1 = u_free + h/2 K F'``. With no force elements (``kick`` ``None``), ``K`` is the
    contact's inverse mass; with them (``kick`` the :class:`EndKick` of the end's wrench),
    ``p_1 = alpha (p_half + h/2 (F' + f_c - m g k))`` and
    ``Omega_1 = G (Pi^+ + h/2 (s x A^T F' + tau_c))`` give
    ``u_free = alpha/m (p_half + h/2 (f_c - m g k)) + A (G (Pi^+ + h/2 tau_c)) x s`` and
    ``K = alpha/m I - A hat(s) G hat(s) A^T`` (symmetric: ``G = (I + h/2 D)^-1``, ``D``
    symmetric)."""
    m, S1 = model.mass, hat(s1)
    if kick is None:
        K = EYE / m - A1 @ S1 @ model.inertia_inv @ S1 @ A1.T
        u_free = (p_half / m - 0.5 * h * model.gravity * model.up
                  + A1 @ cross(model.inertia_inv @ pi_end, s1))
        return u_free, K
    K = (kick.alpha / m) * EYE - A1 @ S1 @ kick.G @ S1 @ A1.T
    u_free = ((kick.alpha / m) * (p_half + 0.5 * h * (kick.f_c - model.weight))
              + A1 @ cross(kick.G @ (pi_end + 0.5 * h * kick.tau_c), s1))
    return u_free, K


def forced_end_slip(model, h, state, A1, a1, c1, N, p_half, pi_end, t_k):
    """The sliding step's end kick with applied forces: ``(status, t_1, N', found, kick)``,
    ``kick`` the :class:`EndKick` with the end's ``Pi``, ``p`` and ``power``.

    The damping ``D`` of the end's wrench holds rolling resistance's ``mu N' P_t``, with ``N'``
    the kick's own normal force (``n_1 . N' d_1 = N'``): the Coulomb law at the end
    (:func:`end_slip`) is solved for ``N'`` fixed, ``N'`` updated from its solution, and so on
    from the first kick's ``N`` until ``N'`` is settled, as the rolling step's end kick settles
    its own (:func:`nhphys.twins.rolling.end_kick`). The first solve chooses the branch: where
    it finds a slip, the later ones start from its direction; where it finds none (the slip
    stops inside the step), they keep the start's direction. (At the onset of a slip both are
    near, and solves from the start's direction can land on either, one sweep after the
    other.)"""
    m, mu, n1, s1 = model.mass, model.mu, c1.n, c1.s
    t1 = state["t"] + h
    v_start, omega_start = state["p"] / m, model.inertia_inv @ state["Pi"]
    normal, last_change = N, np.inf
    scale_floor = np.linalg.norm(model.weight)
    t_start, fixed = None, False
    for sweep in range(ROLLING_SWEEPS):
        try:
            kick = end_wrench(model, h, t1, A1, a1, n1, v_start, omega_start, normal)
        except np.linalg.LinAlgError:
            return SINGULAR_JACOBIAN, None, None, None, None
        u_free, K = slide_kick_terms(model, h, A1, s1, p_half, pi_end, kick)
        t_1, N1, _, found = end_slip(model, h, u_free, K, n1, t_k, t_start, fixed)
        if sweep == 0:  # the branch, for the sweeps after this one
            t_start, fixed = (t_1, False) if found else (None, True)
        elif found != (not fixed):  # a later solve left the branch: no settled N'
            return NOT_CONVERGED, None, None, None, None
        else:
            t_start = t_1 if found else None
        if not np.isfinite(N1):
            return NOT_FINITE, None, None, None, None
        if not model.forces.rolling:
            break
        verdict, last_change = normal_sweep(N1, normal, last_change, scale_floor)
        if verdict == SETTLED:
            break
        if verdict == DIVERGED:
            return NOT_CONVERGED, None, None, None, None
        normal = N1
    else:
        return NOT_CONVERGED, None, None, None, None
    d1 = n1 - mu * t_1
    kick.Pi = np.linalg.solve(kick.B, pi_end + 0.5 * h * (N1 * cross(s1, A1.T @ d1)
                                                          + kick.tau_c))
    kick.p = kick.alpha * (p_half + 0.5 * h * (N1 * d1 - model.weight + kick.f_c))
    kick.power = end_power(model, kick)
    return OK, t_1, N1, found, kick


def end_slip(model, h, u_free, K, n1, t_k, t_start=None, fixed=False):
    """The sliding step's end kick: ``(t_1, N', u_1, found)``, the slip direction (3,), the
    normal force and the contact point's velocity (3,) at the end, and whether a slip along
    the start's direction was found (module docstring, "The sliding step").

    With ``u_free`` (3,) and ``K`` (3, 3) of :func:`slide_kick_terms` (the contact's inverse
    mass at the end pose when there are no force elements), the kick ``F' = N' (n - mu
    t_1)`` leaves the contact point at ``u_1 = u_free + h/2 N' K (n - mu t_1)``; ``n . u_1 = 0``
    gives ``N'(t_1)``, and the slip ``w = T^T u_1`` (``T`` a tangent basis) must point along
    ``t_1 = T w / |w|``: Newton on ``w`` (2 unknowns), from the start's direction carried to
    the new tangent plane. Where it finds no slip along that direction (the slip reverses or
    stops inside the step) the start's direction is kept, and the guard locates the stop.

    A backward sub-step (``h < 0``, inside a composition) has the friction kick add
    ``beta = |h|/2 mu N' |K_t|`` along ``t_1``: where the slip is smaller than ``beta`` the
    law has two solutions, ``t_1`` along the free slip ``u_free_t`` and against it (for an
    isotropic ``K_t``: ``(|w| - beta) t_1 = u_free_t``). The one that keeps the slip's sense
    is the one with ``t_1 . t_k > 0``, and its Newton starts there: from ``u_free_t``'s
    direction, signed to point along ``t_k``. Forward, the solution is unique (``(|w| + beta)
    t_1 = u_free_t``) and the Newton starts from ``t_k``.

    ``t_start`` (3,), if given, is the Newton's start instead (a solution of a nearby law, on
    the branch already chosen); with ``fixed`` the start's direction is kept without a solve
    (``found`` False), as where no slip along it was found (:func:`forced_end_slip`).
    """
    mu = model.mu
    b = K @ n1
    a_nn, c_n = n1 @ b, n1 @ u_free
    T = tangent_basis(n1)
    t0 = tangential(t_k, n1)
    t0 = t0 / np.linalg.norm(t0)

    def at(t):
        N1 = -c_n / (0.5 * h * (a_nn - mu * (b @ t)))
        return N1, u_free + (0.5 * h * N1) * (K @ (n1 - mu * t))

    if fixed:
        N1, u1 = at(t0)
        return t0, N1, u1, False
    start = t0
    free_t = tangential(u_free, n1)
    if t_start is not None:
        start = t_start
    elif h < 0.0 and np.linalg.norm(free_t) > 0.0:  # the branch that keeps the slip's sense
        start = free_t / np.linalg.norm(free_t) * (1.0 if free_t @ t0 >= 0.0 else -1.0)
    N1, u1 = at(start)
    w = T.T @ u1
    found = False
    for _ in range(SLIDE_SWEEPS):
        size = np.linalg.norm(w)
        if not size > 0.0:
            break
        t = T @ w / size
        N1, u1 = at(t)
        residual = w - T.T @ u1
        dN = (N1 * mu / (a_nn - mu * (b @ t))) * b
        du_dt = 0.5 * h * (np.outer(K @ (n1 - mu * t), dN) - mu * N1 * K)
        jac = np.eye(2) - T.T @ du_dt @ (EYE - np.outer(t, t)) @ T / size
        try:
            dw = np.linalg.solve(jac, -residual)
        except np.linalg.LinAlgError:
            break
        w = w + dw
        if np.abs(dw).max() <= SLIDE_TOL * max(np.abs(w).max(), np.abs(u_free).max()):
            size = np.linalg.norm(w)
            found = size > 0.0 and (T @ w) @ t0 > 0.0
            break
    t1 = T @ w / size if found else t0
    N1, u1 = at(t1)
    return t1, N1, u1, found


class FaceLoad:
    """What acts on a disk lying flat besides its face's friction (:func:`face_state`): the
    normal force ``N``, the tangential acceleration ``g_t`` (3,) of gravity and the applied
    forces, their torque ``tau_n`` about the normal, and the non-potential part of their
    wrench, ``f_np`` (3,) and ``tau_np`` (about the normal), whose power ``f_np . v + tau_np w``
    goes into ``work``."""

    __slots__ = ("N", "g_t", "tau_n", "f_np", "tau_np")


def face_state(model, state, v=None, w=None):
    """``(v, w, load)`` of a disk lying flat: the centre's velocity (3,), the spin about the
    plane's normal, and the :class:`FaceLoad` at the state's time and pose (at the velocities
    ``v``, ``w`` if given, else the state's).

    The applied forces ``f`` (space, at the centre) and torque ``tau`` (body) of the force
    elements (spin friction about ``n`` included; rolling resistance has no rolling to resist)
    act with gravity: ``N = m g n . k - n . f`` (not below 0: a face pulled off the plane has
    no friction, and is not lifted off), ``g_t = -g P k + P f / m`` with ``P`` the projection
    on the plane, ``tau_n = n . A tau``. Their out-of-plane torque is taken by the face.
    From rest, a face that friction cannot hold starts to slide along ``g_t`` where
    ``m |g_t| > mu N`` (against the friction of the slide alone, whatever the torque), else
    to spin, against the friction of a spin, its centre held by static friction
    (:func:`face_rates`)."""
    n = state["n"]
    if v is None:
        v = state["p"] / model.mass
        w = float(n @ space_omega(model, state))
    load = FaceLoad()
    load.N = model.mass * model.gravity * float(n @ model.up)
    load.g_t = -model.gravity * tangential(model.up, n)
    load.tau_n, load.f_np, load.tau_np = 0.0, np.zeros(3), 0.0
    if model.forced:
        A = state["A"]
        omega = w * (A.T @ n)
        f_pot, tau_pot, f_app, tau_app, D, drag = model.forces.wrench(state["t"], A, state["a"],
                                                                      n, v, omega)
        load.f_np, tau_np = f_app - drag * v, tau_app - D @ omega
        f = f_pot + load.f_np
        load.N = max(load.N - float(n @ f), 0.0)
        load.g_t = load.g_t + tangential(f, n) / model.mass
        load.tau_n = float(n @ (A @ (tau_pot + tau_np)))
        load.tau_np = float(n @ (A @ tau_np))
    return v, w, load


def face_holds(model, state):
    """Whether static friction holds a disk lying flat at rest: ``m |g_t| <= mu N`` and, with
    a torque about the normal, ``|tau_n| <= face_torque mu N R`` (the largest friction torque
    of a face under uniform pressure, ``face_torque`` 2/3, or of a ring, 1; each limit alone,
    not their combination)."""
    _, _, load = face_state(model, state)
    limit = model.mu * load.N
    return bool(model.mass * np.linalg.norm(load.g_t) <= limit
                and abs(load.tau_n) <= model.face_torque * model.face_radius * limit)


def face_rates(model, v, w, n, load):
    """``(dv/dt (3,), dw/dt, F (3,), T)`` of a disk sliding on its face at the velocities of
    the friction ``(v, w)`` under ``load`` (a :class:`FaceLoad`; module docstring, "Lying
    flat")."""
    hint = None
    at_rest = not np.any(v) and w == 0.0
    slides = model.mass * np.linalg.norm(load.g_t) > model.mu * load.N
    if at_rest and slides:
        hint = load.g_t / np.linalg.norm(load.g_t)  # from rest: it starts to slide that way
    if at_rest and not slides and load.tau_n != 0.0:
        # from rest, held against sliding but not against the torque: it starts to spin
        # against the friction of a spin, static friction holding its centre
        F, T = -model.mass * load.g_t, -np.sign(load.tau_n) * model.face_torque * (
            model.face_radius * model.mu * load.N)
    else:
        friction = ring_friction if model.face_ring else face_friction
        F, T = friction(v, w, n, model.face_radius, load.N, model.mu, hint)
    return (F / model.mass + load.g_t, (T + load.tau_n) / model.face_inertia, F, T)


def face_step(model, h, state):
    """One step of size ``h`` of a disk lying flat (module docstring, "Lying flat"):
    ``(status, new_state, contact)``."""
    n = state["n"]
    v0, w0, load0 = face_state(model, state)
    new = dict(state, t=state["t"] + h, normal_force=load0.N, face_ref=(v0, w0))
    if not np.any(v0) and w0 == 0.0 and face_holds(model, state):
        return OK, new, face_contact(model, new)  # at rest, held by static friction
    dv0, dw0, F0, T0 = face_rates(model, v0, w0, n, load0)
    v_p, w_p = v0 + h * dv0, w0 + h * dw0
    # through a stop the friction is continued as it was before it: where the predictor has
    # reversed (every velocity that was moving), that of the mirrored velocities (the step is
    # then a smooth function of h, and the guard locates the stop)
    sign = -1.0 if face_progress(model, v_p, w_p, v0, w0) < 0.0 else 1.0
    load1 = load0
    if model.forced:  # the applied forces at the predictor's time, pose and velocities
        stage = dict(state, t=state["t"] + h, a=state["a"] + h * v0,
                     A=rotation_about(n, h * w0) @ state["A"])
        _, _, load1 = face_state(model, stage, v_p, w_p)
    fv, fw = sign * v_p, sign * w_p
    if not np.any(fv) and fw == 0.0:  # the predictor stops exactly: the friction just before
        fv, fw = v0, w0
    dv1, dw1, F1, T1 = face_rates(model, fv, fw, n, load1)
    v1 = v0 + 0.5 * h * (dv0 + dv1)
    w1 = w0 + 0.5 * h * (dw0 + dw1)
    turn = rotation_about(n, 0.5 * h * (w0 + w1))
    A1 = reorthonormalize(turn @ state["A"])
    a1 = state["a"] + 0.5 * h * (v0 + v1)
    # the work of the friction and of the applied forces' non-potential part: the
    # trapezoidal rule, with the force of each stage
    power0 = F0 @ v0 + T0 * w0 + load0.f_np @ v0 + load0.tau_np * w0
    power1 = F1 @ v1 + T1 * w1 + load1.f_np @ v1 + load1.tau_np * w1
    new.update(A=A1, a=a1, p=model.mass * v1,
               Pi=model.inertia @ (w1 * (A1.T @ n)),
               work=state["work"] + 0.5 * h * (power0 + power1))
    return OK, new, face_contact(model, new)


class FaceContact:
    """The contact of a disk lying flat, as a frame reads it: the face's centre ``s = 0`` (the
    centre of mass), its point ``x`` on the plane, ``n``, ``n_M = A^T n`` and the gap."""

    __slots__ = ("chart", "z", "s", "Sp", "n_M", "x", "n", "gap")


def face_centre(model, A, n):
    """The centre (3,) of the face a body lies on (or would land on), from its centre of mass
    in the body frame: ``0`` for a disk, ``+-L e_z`` for a cylinder of half length ``L`` (the
    end whose outward axis points down, along ``-A^T n``)."""
    down = -(A.T @ n)[2]
    return np.array([0.0, 0.0, model.face_offset if down > 0.0 else -model.face_offset])


def face_contact(model, state):
    return plane_contact(model, state, face_centre(model, state["A"], state["n"]))


def plane_contact(model, state, s):
    """The contact of a body lying on a plane at its body point ``s`` (a face's centre, a
    side's midpoint), as a frame reads it: ``s``, its point ``x`` on the plane, ``n``,
    ``n_M = A^T n`` and the gap."""
    c = FaceContact()
    x_g = ground_geometry(model.ground, int(state["chart"]), state["z"])[0]
    n, A = state["n"], state["A"]
    c.s = s
    P = state["a"] + A @ c.s
    c.chart, c.z, c.n = state["chart"], state["z"], n.copy()
    c.gap = float(n @ (P - x_g))
    c.x = P - c.gap * n
    c.Sp, c.n_M = np.zeros((3, 3)), A.T @ n
    return c


def face_progress(model, v, w, v0, w0):
    """How the velocities ``(v, w)`` still move on from ``(v0, w0)``: the larger of
    ``m v . v_0`` and ``I_a w w_0`` over the velocities that were moving, each above
    ``FACE_FLOOR`` of ``|v_0| + R |w_0|`` (``inf`` if none was). Negative once every one of
    them has turned back: the face has stopped.

    A ring takes their sum instead, ``m v . v_0 + I_a w w_0``: negative once the motion has
    turned back as a whole. Its slide, near the end, can turn back within a step while a spin
    too small to matter goes on; with the larger part, the step's friction would then be
    taken half forwards and half backwards, the slide held at a speed friction cannot stop,
    and the stop met late (the disk's slide and spin die out together, so it does not meet
    this)."""
    speed, turn = np.linalg.norm(v0), model.face_radius * abs(w0)
    parts = []
    if speed > FACE_FLOOR * (speed + turn):
        parts.append(model.mass * (v @ v0))
    if turn > FACE_FLOOR * (speed + turn):
        parts.append(model.face_inertia * w * w0)
    if not parts:
        return np.inf
    return sum(parts) if model.face_ring else max(parts)


def face_guard(model, state):
    """The guard of a disk sliding on its face: :func:`face_progress` of its velocities from
    those at the start of the step (``inf`` at rest)."""
    v0, w0 = state.get("face_ref", (np.zeros(3), 0.0))
    v, w, _ = face_state(model, state)
    return face_progress(model, v, w, v0, w0)


def lands_flat(model, state):
    """Whether a body whose step met the ``FLAT`` contact event can go on lying flat: a thin
    centred disk (``face_radius > 0``) whose axis is within twice its flat angle of the
    ground's normal."""
    if model.face_radius <= 0.0:
        return False
    axis = state["A"][:, 2]
    return abs(axis @ state["n"]) >= np.cos(2.0 * model.flat_angle)


def flattening(A, n):
    """The smallest rotation (3, 3) that turns a disk's axis (body z, ``A[:, 2]``, or its
    opposite, whichever is nearer) onto the normal ``n``."""
    return smallest_rotation(A[:, 2] * np.sign(A[:, 2] @ n), n)


def smallest_rotation(a, b):
    """The smallest rotation (3, 3) that turns the unit vector ``a`` onto the direction of
    ``b``: about ``a x b`` by the angle between them (the identity where they are parallel)."""
    k = cross(a, b)
    if not np.any(k):
        return EYE
    return rotation_about(k / np.linalg.norm(k), np.arctan2(np.linalg.norm(k), a @ b))


def turn_about_contact(state, turn):
    """``(A_1, a_1)``: the body of ``state`` turned by ``turn`` (3, 3) about its contact point
    (``s``, its rim point on the ground at a fall): the last of a fall done at once."""
    A, a = state["A"], state["a"]
    x_rim = a + A @ state["s"]
    return reorthonormalize(turn @ A), x_rim + turn @ (a - x_rim)


def land_flat(model, state):
    """The landing of a disk falling flat (module docstring, "Lying flat"):
    ``(new_state, normal_impulse, energy_change)``."""
    A, a, n, m = state["A"], state["a"], state["n"], model.mass
    A1, a1 = turn_about_contact(state, flattening(A, n))
    x_g = ground_geometry(model.ground, int(state["chart"]), state["z"])[0]
    s_face = face_centre(model, A1, n)
    a1 = a1 - (n @ (a1 + A1 @ s_face - x_g)) * n
    v0 = state["p"] / m
    if np.isfinite(model.mu):  # the face slides on: its motion in the plane is kept
        v1 = tangential(v0, n)
        w1 = float(n @ space_omega(model, state))
    else:  # a rough face: no point of it can move on the plane
        v1, w1 = np.zeros(3), 0.0
    new = dict(state, A=A1, a=a1, p=m * v1, Pi=model.inertia @ (w1 * (A1.T @ n)),
               s=s_face, normal_force=0.0, face_ref=(v1, w1))
    before = kinetic_energy(model, state) + potential_energy(model, A, a)
    after = kinetic_energy(model, new) + potential_energy(model, A1, a1)
    new["work"] = state["work"] + (after - before)
    return new, float(n @ (new["p"] - state["p"])), after - before


# -- lying on its side ------------------------------------------------------------------------

class SideLoad:
    """What acts on a cylinder lying on its side besides its line's friction
    (:func:`side_load`): the normal force ``N``, the tangential force ``F_t`` (3,) of gravity
    and the applied forces, their torques ``tau_u`` about the axis and ``tau_n`` about the
    normal, and the non-potential part of their wrench, ``f_np`` and ``tau_np`` (3,, space),
    whose power goes into ``work``."""

    __slots__ = ("N", "F_t", "tau_u", "tau_n", "f_np", "tau_np")

    def power(self, v, omega):
        """The non-potential elements' power at the velocities ``v``, ``omega`` (space)."""
        return float(self.f_np @ v + self.tau_np @ omega)


def side_axes(A, n):
    """``(u, w)``: a cylinder's axis (body z) in space and the direction ``w = n x u`` it
    rolls in."""
    u = A[:, 2]
    return u, cross(n, u)


def side_velocities(model, state):
    """``(v, psi, phi)``: the centre's velocity (3,), the turn about the normal and the roll
    about the axis of a cylinder on its side."""
    omega = space_omega(model, state)
    return state["p"] / model.mass, float(state["n"] @ omega), float(state["A"][:, 2] @ omega)


def side_slip(model, v, psi, phi, u, w):
    """``(a, b, c)`` (3,): the line's slip (:mod:`nhphys.twins.side`): its midpoint's along the
    axis and across it, and the turn."""
    return np.array([float(v @ u), float(v @ w) + model.side_radius * phi, psi])


def side_load(model, t, A, a, n, v, psi, phi):
    """The :class:`SideLoad` on a cylinder on its side at ``(t, A, a)`` moving at ``v``,
    ``psi``, ``phi`` (module docstring, "Lying on its side"): gravity, and the force
    elements' force (at the centre) and torque, with rolling resistance against the roll,
    ``-mu_r N phi u``. ``N = m g n . k - n . f``, not below 0. Their torque about ``w`` is taken
    by the line."""
    u = A[:, 2]
    load = SideLoad()
    load.N = model.mass * model.gravity * float(n @ model.up)
    load.F_t = -model.mass * model.gravity * tangential(model.up, n)
    load.tau_u = load.tau_n = 0.0
    load.f_np, load.tau_np = np.zeros(3), np.zeros(3)
    if model.forced:
        omega = psi * n + phi * u
        f_pot, tau_pot, f_app, tau_app, D, drag = model.forces.wrench(t, A, a, n, v,
                                                                      A.T @ omega)
        load.f_np = f_app - drag * v
        f = f_pot + load.f_np
        load.N = max(load.N - float(n @ f), 0.0)
        load.tau_np = A @ (tau_app - D @ (A.T @ omega))
        if model.forces.rolling:
            load.tau_np = load.tau_np - (model.forces.rolling * load.N * phi) * u
        tau = A @ tau_pot + load.tau_np
        load.F_t = load.F_t + tangential(f, n)
        load.tau_u, load.tau_n = float(u @ tau), float(n @ tau)
    return load


def side_roll_rate(model, load, w):
    """``phi''`` of a cylinder rolling on its side: ``(tau_u - R F_t . w) / (I_a + m R^2)``."""
    R = model.side_radius
    return (load.tau_u - R * float(load.F_t @ w)) / (model.face_inertia + model.mass * R * R)


def side_needed(model, load, w):
    """``(F (3,), M)``: the friction a cylinder rolling on its side needs: ``m dv/dt - F_t``
    with ``dv/dt = -R phi'' w``, and the moment ``-tau_n`` that keeps it from turning."""
    acc = side_roll_rate(model, load, w)
    return -model.mass * model.side_radius * acc * w - load.F_t, -load.tau_n


def side_margin(model, state):
    """The guard of a cylinder rolling on its side, in newtons: the smaller of ``mu N - |F|``
    and ``(mu N L / 2 - |M|) / (L / 2)`` for the friction ``(F, M)`` it needs (``inf`` for
    ``mu = inf``)."""
    if not np.isfinite(model.mu):
        return np.inf
    A, n = state["A"], state["n"]
    u, w = side_axes(A, n)
    _, _, phi = side_velocities(model, state)
    load = side_load(model, state["t"], A, state["a"], n, -model.side_radius * phi * w, 0.0,
                     phi)
    F, M = side_needed(model, load, w)
    limit = model.mu * load.N
    half = 0.5 * model.side_length
    return min(limit - float(np.linalg.norm(F)), (half * limit - abs(M)) / half)


def side_speed(model, v, psi, phi):
    """The speed of a cylinder on its side, ``|v| + R |phi'| + L |psi'|``: what its line's slip
    is measured against."""
    return (float(np.linalg.norm(v)) + model.side_radius * abs(phi)
            + model.side_length * abs(psi))


def side_friction(model, slip, speed, u, w, load):
    """``(F (3,), M)``: the line's friction at the slip ``(a, b, c)``. A slip not above
    ``SLIP_FLOOR`` of the cylinder's ``speed`` is a line at rest, which starts to slide with
    the friction it needs held to its limits: ``mu N`` along the needed force, the needed
    moment within ``mu N L / 2``."""
    L = model.side_length
    scale = abs(slip[0]) + abs(slip[1]) + L * abs(slip[2])
    if not scale > SLIP_FLOOR * speed:
        F, M = side_needed(model, load, w)
        limit = model.mu * load.N
        size = float(np.linalg.norm(F))
        if size > limit:
            F = (limit / size) * F
        return F, float(np.clip(M, -0.5 * L * limit, 0.5 * L * limit))
    F_u, F_w, M = line_friction(slip[0], slip[1], slip[2], L, load.N, model.mu)
    return F_u * u + F_w * w, M


def side_progress(model, slip, slip0):
    """How the slip ``(a, b, c)`` still moves on along ``slip0`` (the step's start's): ``m a
    a_0 + m b b_0 + I_d c c_0`` (``inf`` where ``slip0`` is zero, a line at rest). Negative
    once the slip has turned back against its start's, as it does through a stop (the
    friction carried on past it), the guard's sign change."""
    if not np.any(slip0):
        return np.inf
    return (model.mass * (slip[0] * slip0[0] + slip[1] * slip0[1])
            + model.side_inertia * slip[2] * slip0[2])


def side_state_slip(model, state):
    """The slip (3,) of a cylinder on its side at ``state``."""
    u, w = side_axes(state["A"], state["n"])
    v, psi, phi = side_velocities(model, state)
    return side_slip(model, v, psi, phi, u, w)


def side_guard(model, state):
    """The guard of a cylinder sliding on its side: :func:`side_progress` of its slip from
    that at the start of the step."""
    return side_progress(model, side_state_slip(model, state),
                         state.get("side_ref", np.zeros(3)))


def side_roll_step(model, h, state):
    """One step of size ``h`` of a cylinder rolling on its side (module docstring, "Lying on
    its side"): ``(status, new_state, contact)``."""
    A, a, n, t, R = state["A"], state["a"], state["n"], state["t"], model.side_radius
    u, w = side_axes(A, n)
    _, _, phi0 = side_velocities(model, state)
    v0 = -R * phi0 * w
    load0 = side_load(model, t, A, a, n, v0, 0.0, phi0)
    acc0 = side_roll_rate(model, load0, w)
    load1 = load0
    if model.forced:  # the forces at the predictor's time, pose and velocities
        phi_p = phi0 + h * acc0
        load1 = side_load(model, t + h, rotation_about(u, h * phi0) @ A, a - (R * h * phi0) * w,
                          n, -R * phi_p * w, 0.0, phi_p)
    acc1 = side_roll_rate(model, load1, w)
    phi1 = phi0 + 0.5 * h * (acc0 + acc1)
    turn = 0.5 * h * (phi0 + phi1)
    A1 = reorthonormalize(rotation_about(u, turn) @ A)
    v1 = -R * phi1 * w
    power = load0.power(v0, phi0 * u) + load1.power(v1, phi1 * u)
    new = dict(state, t=t + h, A=A1, a=a - (R * turn) * w, p=model.mass * v1,
               Pi=model.inertia @ (phi1 * (A1.T @ u)), normal_force=load0.N,
               work=state["work"] + 0.5 * h * power)
    c = side_contact(model, new)
    new["s"] = c.s
    return OK, new, c


def side_slide_step(model, h, state):
    """One step of size ``h`` of a cylinder sliding on its side (module docstring, "Lying on
    its side"): ``(status, new_state, contact)``."""
    A, a, n, t = state["A"], state["a"], state["n"], state["t"]
    m, R, Ia, Id = model.mass, model.side_radius, model.face_inertia, model.side_inertia
    u0, w0 = side_axes(A, n)
    v0, psi0, phi0 = side_velocities(model, state)
    v0 = tangential(v0, n)
    slip0 = side_slip(model, v0, psi0, phi0, u0, w0)
    if not (np.abs(slip0[:2]).sum() + model.side_length * abs(slip0[2])
            > SLIP_FLOOR * side_speed(model, v0, psi0, phi0)):
        slip0 = np.zeros(3)  # a line at rest (its round-off has no direction)
    load0 = side_load(model, t, A, a, n, v0, psi0, phi0)

    def rates(load, F, M, w):
        return (load.F_t + F) / m, (load.tau_u + R * float(F @ w)) / Ia, (load.tau_n + M) / Id

    F0, M0 = side_friction(model, slip0, side_speed(model, v0, psi0, phi0), u0, w0, load0)
    dv0, dphi0, dpsi0 = rates(load0, F0, M0, w0)
    v_p, phi_p, psi_p = v0 + h * dv0, phi0 + h * dphi0, psi0 + h * dpsi0
    A_p = rotation_about(n, h * psi0) @ rotation_about(u0, h * phi0) @ A
    u_p, w_p = side_axes(A_p, n)
    slip_p = side_slip(model, v_p, psi_p, phi_p, u_p, w_p)
    # through a stop the friction is continued as it was before it (as on a face)
    sign = -1.0 if side_progress(model, slip_p, slip0) < 0.0 else 1.0
    load1 = load0
    if model.forced:
        load1 = side_load(model, t + h, A_p, a + h * v0, n, v_p, psi_p, phi_p)
    slip_f = sign * slip_p
    if not np.any(slip_f):
        slip_f = slip0
    F1, M1 = side_friction(model, slip_f, side_speed(model, v_p, psi_p, phi_p), u_p, w_p,
                           load1)
    dv1, dphi1, dpsi1 = rates(load1, F1, M1, w_p)
    v1 = v0 + 0.5 * h * (dv0 + dv1)
    phi1 = phi0 + 0.5 * h * (dphi0 + dphi1)
    psi1 = psi0 + 0.5 * h * (dpsi0 + dpsi1)
    A1 = reorthonormalize(rotation_about(n, 0.5 * h * (psi0 + psi1))
                          @ rotation_about(u0, 0.5 * h * (phi0 + phi1)) @ A)
    u1 = A1[:, 2]
    omega0, omega1 = psi0 * n + phi0 * u0, psi1 * n + phi1 * u1
    # the work of the friction (its power F . v + R F_w phi' + M psi') and of the forces'
    # non-potential part: the trapezoidal rule, with the force of each stage
    power0 = float(F0 @ v0) + R * float(F0 @ w0) * phi0 + M0 * psi0 + load0.power(v0, omega0)
    power1 = float(F1 @ v1) + R * float(F1 @ w_p) * phi1 + M1 * psi1 + load1.power(v1, omega1)
    new = dict(state, t=t + h, A=A1, a=a + 0.5 * h * (v0 + v1), p=m * v1,
               Pi=model.inertia @ (A1.T @ omega1), normal_force=load0.N, side_ref=slip0,
               work=state["work"] + 0.5 * h * (power0 + power1))
    c = side_contact(model, new)
    new["s"] = c.s
    return OK, new, c


def side_contact(model, state):
    """The contact of a cylinder on its side, as a frame reads it: the midpoint of its line,
    ``s = -R A^T n`` (:func:`plane_contact`)."""
    return plane_contact(model, state, -model.side_radius * (state["A"].T @ state["n"]))


def lands_on_side(model, state):
    """Whether a body whose step met the ``RIM_TO_SIDE`` contact event can go on lying on its
    side: a centred cylinder (``side_radius > 0``) whose axis is within twice its side angle
    of the ground's plane."""
    if model.side_radius <= 0.0:
        return False
    return abs(state["A"][:, 2] @ state["n"]) <= np.sin(2.0 * model.side_angle)


def onto_side(model, state, rough, omega):
    """``(new_state, mode)``: a cylinder's velocities made those of one on its side, its axis
    ``u`` in the plane: of the centre's velocity and the angular velocity ``omega`` (3,, space)
    the parts along the plane and about ``n`` and ``u`` are kept (the velocities out of the
    plane taken out); on a ``rough`` line the motion is then brought to rolling, the roll
    keeping the angular momentum about the line, ``I_a phi' - m R v . w`` (mode ``SIDE``), else
    it slides (mode ``SIDE_SLIDING``), or rolls where its line does not slip (below
    ``SLIP_FLOOR`` of its speed)."""
    A, n, m, R, Ia = state["A"], state["n"], model.mass, model.side_radius, model.face_inertia
    u, w = side_axes(A, n)
    v = tangential(state["p"] / m, n)
    psi, phi = float(n @ omega), float(u @ omega)
    slip = side_slip(model, v, psi, phi, u, w)
    slips = (np.abs(slip[:2]).sum() + model.side_length * abs(slip[2])
             > SLIP_FLOOR * side_speed(model, v, psi, phi))
    mode = SIDE_SLIDING if slips else SIDE
    if rough:
        phi = (Ia * phi - m * R * float(v @ w)) / (Ia + m * R * R)
        v, psi, mode = -R * phi * w, 0.0, SIDE
    new = dict(state, p=m * v, Pi=model.inertia @ (A.T @ (psi * n + phi * u)),
               side_ref=np.zeros(3))
    return new, mode


def land_side(model, state):
    """The landing of a cylinder falling onto its side (module docstring, "Lying on its
    side"): ``(new_state, mode, normal_impulse, energy_change)``."""
    A, a, n = state["A"], state["a"], state["n"]
    A1, a1 = turn_about_contact(state, smallest_rotation(A[:, 2], tangential(A[:, 2], n)))
    x_g = ground_geometry(model.ground, int(state["chart"]), state["z"])[0]
    a1 = a1 - (float(n @ (a1 - x_g)) - model.side_radius) * n
    # the turn onto the side is a correction of the pose: the velocities in space are kept
    new, mode = onto_side(model, dict(state, A=A1, a=a1), not np.isfinite(model.mu),
                          space_omega(model, state))
    new.update(s=-model.side_radius * (A1.T @ n), normal_force=0.0)
    before = kinetic_energy(model, state) + potential_energy(model, A, a)
    after = kinetic_energy(model, new) + potential_energy(model, A1, a1)
    new["work"] = state["work"] + (after - before)
    return new, mode, float(n @ (new["p"] - state["p"])), after - before


def side_stick(model, state):
    """A cylinder whose line has stopped slipping, brought to rolling on its side (what is
    left of its slip taken out, the roll keeping the angular momentum about the line):
    ``(new_state, mode, energy_change)``, the mode ``SIDE`` where static friction holds the
    line, else ``SIDE_SLIDING`` from rest."""
    new, _ = onto_side(model, state, True,
                       space_omega(model, state))
    change = kinetic_energy(model, new) - kinetic_energy(model, state)
    new["work"] = state["work"] + change
    return new, (SIDE if side_margin(model, new) >= 0.0 else SIDE_SLIDING), change


def composed_step(model, mode, state, h, substeps):
    """A whole step of size ``h`` in ``mode``: the sub-steps ``h * substeps`` one after another;
    ``(status, new_state, contact)``. A sliding step's end state keeps the slip direction of
    its start, ``slip_ref``, which its guard reads, and whether the slip had a direction of
    its own there, ``slip_armed`` (a step that starts a slip from rest cannot stop it: see
    "The sliding step").

    Sliding takes the model's ``slide_substeps``, a composition of the same order whose
    sub-steps all reach times inside the step
    (:data:`nhphys.integrators.coefficients.SLIDING_COMPOSITIONS`: Suzuki's five-stage table for
    order 4, Kahan and Li's for 6 and 8). A sub-step that ends before the step's start would
    take a slip that has just started back through zero and turn it around (the triple jump
    reaches -0.35 of the step); one that ends after the step's end would run a slip that
    stops inside the step past its stop. Inside the step, a slip that starts or stops at the
    step's ends keeps its sign at every sub-step, so the composition of a partial step is a
    smooth function of its size, as the location needs. A disk lying flat always takes the
    basic step."""
    c = None
    ref = slip_direction(model, state) if mode == SLIDING else None
    armed = mode == SLIDING and slipping(model, state)[0]
    if mode == SLIDING:
        substeps = model.slide_substeps if armed else (1.0,)
    if mode in (FACE, SIDE, SIDE_SLIDING):
        substeps = (1.0,)
    begin = state
    j = 0
    while j < len(substeps):
        size = h * substeps[j]
        if mode == FACE:
            st, state, c = face_step(model, size, state)
        elif mode == SIDE:
            st, state, c = side_roll_step(model, size, state)
        elif mode == SIDE_SLIDING:
            st, state, c = side_slide_step(model, size, state)
        elif mode == FLIGHT:
            st, state, c = flight_step(model, size, state)
        elif mode == SLIDING:
            st, state, c = sliding_step(model, size, state)
        else:
            start = dict(state, xi=size * (model.inertia_inv @ state["Pi"]), guess=None)
            st, state, c = rolling_step(
                model.shape, model.ground, model.motion, model.forces, model.mass,
                model.inertia, model.inertia_inv, model.gravity, model.up, size, model.map_code,
                model.newton_tol, model.max_newton, start,
                options=model.options & ~EXTRAPOLATE)
            if st == OK:
                state["slip"] = start["slip"]
        if st:
            return st, None, None
        if mode == SLIDING and j < len(substeps) - 1 and state["slip_kept"]:
            # the slip stops inside the step before its last sub-step: the basic step instead
            state, substeps, j = begin, (1.0,), 0
            continue
        j += 1
    if ref is not None:
        state = dict(state, slip_ref=ref, slip_armed=armed)
    return OK, state, c


def contact_force(model, state):
    """``(status, N, F)``: the continuous rolling model's normal and contact force (space)."""
    field = model.field
    field.chart = int(state["chart"])
    y = np.concatenate([state["A"].ravel(), state["z"], model.inertia_inv @ state["Pi"], [0.0]])
    result = field._rates(state["t"], y, extras=True)
    if result[0] != OK:
        return result[0], 0.0, None
    return OK, result[2][5], result[2][6]


def normal_force(model, state):
    """``(status, N)``: the continuous model's normal contact force at a rolling ``state``."""
    st, N, _ = contact_force(model, state)
    return st, N


def friction_margin(model, state):
    """``(status, g)``: the rolling guard, ``N`` without friction (``mu = inf``), else
    ``mu N - |F_t|`` (the needed friction inside the Coulomb cone); and the direction a slip
    starts in, ``-F_t / |F_t|`` (``None`` for ``mu = inf``)."""
    st, N, F = contact_force(model, state)
    if st or not np.isfinite(model.mu):
        return st, N, None
    F_t = tangential(F, state["n"])
    size = np.linalg.norm(F_t)
    return OK, model.mu * N - size, (-F_t / size if size > 0.0 else None)


def sliding_normal_force(model, state):
    """``(status, N)``: the normal force of the continuous sliding model at ``state``
    (module docstring, "The sliding step": the gap's second derivative vanishes)."""
    m, Iinv, A = model.mass, model.inertia_inv, state["A"]
    _, J, _, n, W = ground_geometry(model.ground, int(state["chart"]), state["z"])
    An = A.T @ n
    st, s, Sp, _ = model.shape.support(-An)
    if st:
        return st, 0.0
    LH = J @ W @ np.linalg.solve(J.T @ J, J.T)
    omega = Iinv @ state["Pi"]
    u = state["p"] / m + A @ cross(omega, s)
    u_t = tangential(u, n)
    try:
        s_dot = np.linalg.solve(EYE - Sp @ A.T @ LH @ A, Sp @ (cross(omega, An) + A.T @ LH @ u_t))
    except np.linalg.LinAlgError:
        return SINGULAR_CONTACT, 0.0
    x_dot = u_t + A @ s_dot
    d = n - model.mu * slip_direction(model, dict(state, s=s, n=n))
    S = hat(s)
    K = EYE / m - A @ S @ Iinv @ S @ A.T
    wdot0 = Iinv @ cross(model.inertia @ omega, omega)
    c0 = (-(LH @ x_dot) @ u_t - model.gravity * (n @ model.up)
          + n @ (A @ (cross(omega, cross(omega, s)) + cross(omega, s_dot) + cross(wdot0, s))))
    per_N = n @ K @ d
    if model.forced:
        f, tau, rolling_row, _ = total_wrench(model.forces, state["t"], A, state["a"], n,
                                              state["p"] / m, omega)
        c0 += n @ f / m + n @ (A @ cross(Iinv @ tau, s))
        per_N += n @ (A @ cross(Iinv @ rolling_row, s))
    return OK, -c0 / per_N


def slide_guards(model, state):
    """``(status, N, s)``: the sliding guards at a state, in newtons: the continuous sliding
    model's normal force and ``m g`` times the slip velocity along the step's starting slip
    direction ``slip_ref``."""
    st, N = sliding_normal_force(model, state)
    if not state.get("slip_armed", True):  # a slip just started: it cannot stop in this step
        return st, N, np.inf
    u_t = tangential(contact_velocity(model, state), state["n"])
    return st, N, model.mass * model.gravity * (u_t @ state["slip_ref"])


def guard(model, mode, state, c):
    """``(status, g)``: the guard of ``mode`` at ``state`` (its contact ``c``)."""
    if mode == FLIGHT:  # lowered by a graze's depth (module docstring, "The impact")
        return OK, c.gap + state.get("graze", 0.0)
    if mode == FACE:
        return OK, face_guard(model, state)
    if mode == SIDE:
        return OK, side_margin(model, state)
    if mode == SIDE_SLIDING:
        return OK, side_guard(model, state)
    if mode == SLIDING:
        st, N, slip = slide_guards(model, state)
        return st, min(N, slip)
    st, g, _ = friction_margin(model, state)
    return st, g


def potential_energy(model, A, a):
    """Gravity's potential and the force elements' (springs, fields) at the pose ``(A, a)``."""
    V = model.mass * model.gravity * (model.up @ a)
    return V + model.forces.potential(A, a) if model.forced else V


def kinetic_energy(model, state):
    return 0.5 * (state["p"] @ state["p"]) / model.mass + 0.5 * (
        state["Pi"] @ (model.inertia_inv @ state["Pi"]))


def locate(evaluate, g0, h, g_end):
    """The root of ``g`` on ``[0, h]`` by the Illinois method (module docstring).

    ``evaluate(theta) -> (status, g, result)``; ``g0 >= 0`` the guard at 0 and ``g_end < 0``
    at ``h``. Returns ``(status, theta, result)`` at the end of the final bracket with the
    smaller ``|g|`` (``result`` the evaluation there, ``None`` for ``theta = 0``).
    """
    lo, g_lo, r_lo = 0.0, max(g0, 0.0), None
    hi, g_hi, r_hi = h, g_end, "end"
    side = 0
    for _ in range(LOCATE_ITER):
        if abs(hi - lo) <= LOCATE_TOL * abs(h):
            break
        theta = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        if not (min(lo, hi) < theta < max(lo, hi)):
            theta = 0.5 * (lo + hi)
        st, g, result = evaluate(theta)
        if st:
            return st, None, None
        if g >= 0.0:
            lo, g_lo, r_lo = theta, g, result
            if side == 1:
                g_hi *= 0.5
            side = 1
        else:
            hi, g_hi, r_hi = theta, g, result
            if side == -1:
                g_lo *= 0.5
            side = -1
        if g == 0.0:
            break
    if r_lo is not None and abs(g_lo) <= abs(g_hi):
        return OK, lo, r_lo
    return OK, hi, r_hi


def contact_mass(model, A, s):
    """The contact's inverse mass ``K = I_3 / m - A hat(s) I^-1 hat(s) A^T`` (3, 3): an impulse
    ``P`` at the body point ``s`` changes that point's velocity by ``K P``."""
    S = hat(s)
    return EYE / model.mass - A @ S @ model.inertia_inv @ S @ A.T


def apply_impulse(model, state, c, P):
    """``state`` after the impulse ``P`` (3,) (space) at the contact ``c``, and the change of
    kinetic energy (added to ``work``): ``(new_state, energy_change)``."""
    A, s = state["A"], c.s
    new = dict(state, p=state["p"] + P, Pi=state["Pi"] + cross(s, A.T @ P), s=c.s,
               n=c.n.copy(), chart=c.chart, z=c.z)
    change = kinetic_energy(model, new) - kinetic_energy(model, state)
    new["work"] = state["work"] + change
    return new, change


def impulse_to(model, state, c, target):
    """The impulse ``P`` (space) at the contact point that brings its velocity to ``target``
    (3,), applied: ``(new_state, P, energy_change)`` (module docstring, "The impact")."""
    u = contact_velocity(model, state, c.s)
    P = np.linalg.solve(contact_mass(model, state["A"], c.s), target - u)
    new, change = apply_impulse(model, state, c, P)
    return new, P, change


def settle(model, state):
    """The mode of a body just put in rolling contact (after an impact or a stick): rolling,
    sliding (the needed friction is outside the cone: ``slip`` the direction it starts in),
    or flight (the ground would pull)."""
    state["F"] = model.mass * model.gravity * model.up
    state["normal_force"] = 0.0
    st, g, direction = friction_margin(model, state)
    if st != OK or g >= 0.0:
        return ROLLING
    st, N = normal_force(model, state)
    if N <= 0.0:  # the ground cannot hold it there: it flies on
        return FLIGHT
    state["slip"] = direction
    return SLIDING


def lift_to_ground(model, state, c):
    """``(new_state, energy_change)``: a body that flies on from an impact below the ground
    (``c.gap < 0``) moved along ``n`` by ``-c.gap`` onto it, the change of its potential energy
    added to ``work`` (module docstring, "The impact")."""
    a = state["a"] - c.gap * c.n
    change = potential_energy(model, state["A"], a) - potential_energy(model, state["A"],
                                                                       state["a"])
    return dict(state, a=a, work=state["work"] + change), change


def grazes(model, state, c, h):
    """Whether the touchdown at ``state`` (its contact ``c``) is a graze (module docstring,
    "The impact"): it comes in below the rest speed, and its (plastic) impact would leave the
    body in flight, the ground unable to hold it."""
    un = min(c.n @ contact_velocity(model, state, c.s), 0.0)
    rest_speed = 0.5 * model.gravity * abs(c.n @ model.up) * abs(h)
    if -un > rest_speed:
        return False
    _, after, _, _ = impact(model, dict(state), c, h)
    return after == FLIGHT


def impact(model, state, c, h):
    """The impact at the touchdown ``state`` (its contact ``c``; module docstring, "The
    impact"): ``(new_state, mode_after, normal_impulse, energy_change)``."""
    n = c.n
    u = contact_velocity(model, state, c.s)
    un = min(n @ u, 0.0)  # approaching (a positive value is the round-off of a graze)
    rest_speed = 0.5 * model.gravity * abs(n @ model.up) * abs(h)
    e = model.restitution if model.restitution * -un > rest_speed else 0.0
    K = contact_mass(model, state["A"], c.s)
    P = np.linalg.solve(K, -e * un * n - u)  # the rough impulse
    sliding = pulls = False
    if model.impact == ROUGH and n @ P < 0.0:
        # the ground would have to pull: the rough law's other branch, no normal impulse and
        # the tangential velocity stopped, which leaves the contact point separating
        T = tangent_basis(n)
        P = T @ np.linalg.solve(T.T @ K @ T, -(T.T @ u))
        pulls = True
    if model.impact == COULOMB:
        P_n = n @ P
        P_t = tangential(P, n)
        u_t = tangential(u, n)
        if np.linalg.norm(P_t) > model.mu * P_n and np.linalg.norm(u_t) > 0.0:
            # outside the cone: the contact point slides through the impact, against the
            # friction impulse mu P_n along its slip before it; P_n from the restitution law
            t = u_t / np.linalg.norm(u_t)
            d = n - model.mu * t
            P = (-(1.0 + e) * un / (n @ K @ d)) * d
            sliding = True
    new, change = apply_impulse(model, state, c, P)
    if e > 0.0 or pulls:
        mode = FLIGHT
    elif sliding:  # it lands sliding (or flies on, where the ground cannot hold it)
        slips, u_t = slipping(model, new)
        new["slip"] = u_t / np.linalg.norm(u_t) if slips else t
        new["F"] = model.mass * model.gravity * model.up
        st, N = sliding_normal_force(model, new)
        mode = FLIGHT if st == OK and N <= 0.0 else SLIDING
    else:
        mode = settle(model, new)
    new["normal_force"] = 0.0
    return new, mode, n @ P, change


def locate_fall(model, mode, state, h, substeps, event=FLAT):
    """The partial step in which a disk reaches its flat angle (``event`` ``FLAT``), or a
    cylinder its side angle (``RIM_TO_SIDE``), by bisection on the step's status (module
    docstring, "Lying flat"): ``(status, theta, state at theta)``."""
    lo, hi, at_lo = 0.0, h, state
    for _ in range(LOCATE_ITER):
        if abs(hi - lo) <= LOCATE_TOL * abs(h):
            break
        theta = 0.5 * (lo + hi)
        st, new, _ = composed_step(model, mode, state, theta, substeps)
        if st == event:
            hi = theta
        elif st:
            return st, None, None
        else:
            lo, at_lo = theta, new
    lands = lands_on_side if event == RIM_TO_SIDE else lands_flat
    if not lands(model, at_lo):  # a Newton iterate met the event, not the body
        return event, None, None
    return OK, lo, at_lo


def modes_step(model, mode, state, h, substeps, events):
    """One step of size ``h`` with its mode changes: ``(status, mode, new_state, contact)``;
    the events found are appended to ``events`` (a list of rows)."""
    t_end = state["t"] + h
    remaining = h
    while True:
        st, new, c = composed_step(model, mode, state, remaining, substeps)
        if st == model.flat_status and mode in (ROLLING, SLIDING) and model.face_radius > 0.0:
            if len(events) >= MAX_EVENTS_PER_STEP:
                return TOO_MANY_EVENTS, mode, None, None
            st, theta, state = locate_fall(model, mode, state, remaining, substeps,
                                           model.flat_status)
            if st:
                return st, mode, None, None
            before = mode
            state, impulse, change = land_flat(model, state)
            mode, c = FACE, face_contact(model, state)
            events.append([state["t"], FALL_FLAT, before, mode, impulse, change])
            remaining = remaining - theta
            if abs(remaining) <= LOCATE_TOL * abs(h):
                break
            continue
        if st == RIM_TO_SIDE and mode in (ROLLING, SLIDING) and model.side_radius > 0.0:
            if len(events) >= MAX_EVENTS_PER_STEP:
                return TOO_MANY_EVENTS, mode, None, None
            st, theta, state = locate_fall(model, mode, state, remaining, substeps,
                                           RIM_TO_SIDE)
            if st:
                return st, mode, None, None
            before = mode
            state, mode, impulse, change = land_side(model, state)
            c = side_contact(model, state)
            events.append([state["t"], FALL_SIDE, before, mode, impulse, change])
            remaining = remaining - theta
            if abs(remaining) <= LOCATE_TOL * abs(h):
                break
            continue
        if st:
            return st, mode, None, None
        st, g_end = guard(model, mode, new, c)
        if st:
            return st, mode, None, None
        if g_end >= 0.0:
            state = new
            break
        if len(events) >= MAX_EVENTS_PER_STEP:
            return TOO_MANY_EVENTS, mode, None, None
        if mode == FLIGHT:
            g0 = state.get("gap", 0.0) + state.get("graze", 0.0)
        elif mode == FACE:  # the velocities against themselves
            v, w, _ = face_state(model, state)
            g0 = face_progress(model, v, w, v, w)
        elif mode == SIDE_SLIDING:  # the slip against itself
            slip = side_state_slip(model, state)
            g0 = side_progress(model, slip, slip)
        elif mode == SIDE:
            g0 = side_margin(model, state)
        elif mode == SLIDING:  # the slip along its own direction is its size
            st, N = sliding_normal_force(model, state)
            if st:
                return st, mode, None, None
            u_t = tangential(contact_velocity(model, state), state["n"])
            g0 = min(N, model.mass * model.gravity * np.linalg.norm(u_t))
        else:
            st, g0, _ = friction_margin(model, state)
            if st:
                return st, mode, None, None

        def evaluate(theta, state=state, mode=mode):
            st, s1, c1 = composed_step(model, mode, state, theta, substeps)
            if st:
                return st, None, None
            st, g = guard(model, mode, s1, c1)
            return st, g, (s1, c1)

        st, theta, result = locate(evaluate, g0, remaining, g_end)
        if st:
            return st, mode, None, None
        state, c = (new, c) if result == "end" else result
        remaining = remaining - theta
        before, impulse, change = mode, 0.0, 0.0
        if mode == FLIGHT and not state.get("graze", 0.0) and grazes(model, state, c, h):
            # no event: it flies on (once: a second touchdown before the gap is positive
            # again is an impact, so that the events bound the loop)
            depth = 0.5 * model.gravity * abs(c.n @ model.up) * h * h
            state = dict(state, gap=c.gap, graze=depth)
            if abs(remaining) <= LOCATE_TOL * abs(h):
                break
            continue
        if mode == FLIGHT and model.face_radius > 0.0 and abs(
                state["A"][:, 2] @ c.n) >= np.cos(model.flat_angle):  # it lands on its face
            state, impulse, change = land_flat(model, dict(state, s=c.s, n=c.n.copy()))
            mode, c, kind = FACE, face_contact(model, state), TOUCHDOWN
        elif mode == FLIGHT and model.side_radius > 0.0 and abs(
                state["A"][:, 2] @ c.n) <= np.sin(model.side_angle):  # it lands on its side
            state, mode, impulse, change = land_side(
                model, dict(state, s=c.s, n=c.n.copy(), chart=c.chart, z=c.z))
            c, kind = side_contact(model, state), TOUCHDOWN
        elif mode == FLIGHT:
            state, mode, impulse, change = impact(model, state, c, h)
            kind = TOUCHDOWN
            if mode == FLIGHT and c.gap < 0.0:  # it flies on from below the ground: put
                # back on it (module docstring, "The impact")
                state, lifted = lift_to_ground(model, state, c)
                c.gap = 0.0  # (its point on the ground is where the body now touches it)
                change += lifted
        elif mode == FACE:  # the face has stopped sliding: what is left of its motion is
            # taken out; static friction holds it or it slides on from rest
            before_energy = kinetic_energy(model, state)
            state = dict(state, p=np.zeros(3), Pi=np.zeros(3), face_ref=(np.zeros(3), 0.0))
            change = -before_energy
            state["work"] = state["work"] + change
            impulse, kind = 0.0, STICK
        elif mode == SIDE_SLIDING:  # the line has stopped slipping: it rolls on its side
            state, mode, change = side_stick(model, state)
            impulse, kind = 0.0, STICK
        elif mode == SIDE:  # the needed friction left the line's limits: it starts to slide
            mode, kind = SIDE_SLIDING, SLIP
        elif mode == SLIDING and np.subtract(*slide_guards(model, state)[1:]) <= 0.0:
            state, mode, kind = dict(state, normal_force=0.0), FLIGHT, LIFT_OFF
        elif mode == SLIDING:  # the slip has stopped: the contact point is brought to rest
            state, P, change = impulse_to(model, state, c, np.zeros(3))
            impulse, kind = c.n @ P, STICK
            mode = settle(model, state)
        else:
            st, N = normal_force(model, state)
            if st:
                return st, mode, None, None
            _, _, direction = friction_margin(model, state)
            if N <= 0.0 or direction is None:  # lift-off: the velocities carry on in flight
                state, mode, kind = dict(state, normal_force=0.0), FLIGHT, LIFT_OFF
            else:  # the needed friction left the cone: the slip starts against it
                state, mode, kind = dict(state, slip=direction), SLIDING, SLIP
        state["gap"] = 0.0
        state["graze"] = 0.0
        events.append([state["t"], kind, before, mode, impulse, change])
        if abs(remaining) <= LOCATE_TOL * abs(h):
            break
    state = dict(state, t=t_end, gap=c.gap)
    if mode != FLIGHT or c.gap >= 0.0:  # clear of the ground again: the guard is the gap
        state["graze"] = 0.0
    return OK, mode, state, c


def modes_run(shape, ground, motion, forces, mass, inertia, inertia_inv, gravity, up,
              support_form, restitution, mu, impact_law, face, h, substeps, slide_substeps,
              n_steps, save_every, map_code,
              newton_tol, max_newton, options, A, a, Pi, p, s, n, F, slip, chart, z, clock, mode,
              out, events, n_events, info, side=(0.0, 0.0, 0.0)):
    """Advance ``n_steps`` steps through mode changes, saving every ``save_every``-th frame.

    Parameters
    ----------
    shape, ground, motion, forces, mass, inertia, inertia_inv, gravity, up
        As for :func:`nhphys.twins.rolling.rolling_run` (a ground at rest; the force elements
        act in every mode: module docstring, "Force elements").
    support_form : bool
        The shape is a support-function shape (the continuous normal force's contact equation).
    restitution : float
        Newton's coefficient ``e`` in [0, 1] of the rough impact.
    mu : float
        Coulomb's friction coefficient, >= 0 (``inf``: the contact never slides).
    impact_law : int
        ``ROUGH`` or ``COULOMB`` (module docstring, "The impact").
    face : ndarray (2,), (3,) or (4,)
        The radius, the flat angle, the height of the centre of mass over the plane it lies on
        (0 for a disk, a cylinder's half length, a wheel's tube radius; 0 if left out) and
        the ring flag (1 for a wheel, whose fall is ``INNER_CONTACT``; 0 if left out) of a
        centred disk, cylinder or wheel that goes on lying flat when it falls flat (module
        docstring, "Lying flat"); a radius of 0 for any other body, whose ``FLAT`` (or
        ``INNER_CONTACT``) contact event ends the run.
    h : float
    substeps : ndarray (k,)
    slide_substeps : ndarray (j,)
        The composition a sliding step takes, of the order of ``substeps`` with its sub-steps
        inside the step (:data:`nhphys.integrators.coefficients.SLIDING_COMPOSITIONS`).
    n_steps, save_every, map_code, max_newton, options : int
    newton_tol : float
    A (3, 3), a (3,), Pi (3,), p (3,), s (3,), n (3,), F (3,) : ndarray   # IN/OUT state
    slip (3,) : ndarray                      # IN/OUT the slip direction where the slip is
                                             # too small to give it (the start of a slip)
    chart (1,) intp, z (2,) : ndarray        # IN/OUT the contact's (in flight: the closest
                                             # approach's) ground chart coordinates
    clock (4,) : ndarray                     # IN/OUT the time, the work (of the impacts and
                                             # of friction), the gap (the flight guard at
                                             # the start of the next step) and the depth of a
                                             # graze (0 without one)
    mode (1,) intp : ndarray                 # IN/OUT ROLLING, FLIGHT, SLIDING, FACE, SIDE
                                             # or SIDE_SLIDING
    out : ndarray (n_steps // save_every, MODES_FRAME_SIZE)    # OUT
    events : ndarray (MAX_EVENTS_PER_STEP n_steps, EVENT_SIZE)  # OUT, the mode changes
    n_events : ndarray (1,) intp             # OUT, how many rows of ``events`` are written
    info : ndarray (3,) intp                 # OUT as for rolling_run
    side : ndarray (3,)                      # IN the radius, half length and side angle of
                                             # a centred cylinder that goes on lying on its
                                             # side (module docstring, "Lying on its side");
                                             # a radius of 0 for any other body, whose
                                             # RIM_TO_SIDE contact event ends the run

    Returns
    -------
    int
        0 on success, ``k + 1`` if step ``k`` failed (``info[0]`` tells why; the IN/OUT arrays
        then hold the state at its start, and the events of the committed steps are written).
    """
    model = Model(shape, ground, motion, forces, mass, inertia, inertia_inv, gravity, up,
                  support_form, restitution, mu, map_code, newton_tol, max_newton, options,
                  impact_law, face, slide_substeps, side)
    state = {"A": A.copy(), "a": a.copy(), "Pi": Pi.copy(), "p": p.copy(), "s": s.copy(),
             "n": n.copy(), "F": F.copy(), "slip": slip.copy(), "xi": np.zeros(3),
             "chart": int(chart[0]), "z": z.copy(), "t": float(clock[0]),
             "work": float(clock[1]), "gap": float(clock[2]),
             "graze": float(clock[3]) if len(clock) > 3 else 0.0}
    current = int(mode[0])
    info[0] = OK
    info[INFO_COMMITTED] = 0
    n_events[0] = 0
    t0 = state["t"]
    for k in range(n_steps):
        found = []
        start = dict(state, t=t0 + k * h)
        st, current_new, new, c = modes_step(model, current, start, h, substeps, found)
        if st:
            info[0] = st
            return k + 1
        state, current = dict(new, t=t0 + (k + 1) * h), current_new
        for row in found:
            events[n_events[0]] = row
            n_events[0] += 1
        A[:], a[:], Pi[:], p[:], s[:] = state["A"], state["a"], state["Pi"], state["p"], state["s"]
        n[:], F[:], z[:], slip[:] = state["n"], state["F"], state["z"], state["slip"]
        chart[0], mode[0] = state["chart"], current
        clock[0], clock[1], clock[2] = state["t"], state["work"], state["gap"]
        if len(clock) > 3:
            clock[3] = state.get("graze", 0.0)
        if (k + 1) % save_every == 0:
            out[(k + 1) // save_every - 1] = np.concatenate([frame(state, c), [current]])
        info[INFO_COMMITTED] = k + 1
    return 0
