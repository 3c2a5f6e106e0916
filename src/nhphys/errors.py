"""Exceptions raised while stepping."""


class NewtonError(RuntimeError):
    """A step failed: its Newton solve did not converge, or its contact could not be found.

    Attributes
    ----------
    step : int
        Index of the step that failed (0 is the step leaving the initial state).
    time : float
        Time at the start of that step.
    trajectory : Trajectory or None
        Every frame saved before the failure, when the driver could assemble it (the frames of
        the chunk the failure interrupted included).
    """

    def __init__(self, step: int, time: float, detail: str = "", frames=None):
        self.step = step
        self.time = time
        self._frames = frames
        self._trajectory = None
        msg = f"Newton solve did not converge at step {step} (t = {time:.6g})"
        super().__init__(msg + (f": {detail}" if detail else "."))

    @property
    def trajectory(self):
        return self._trajectory

    @trajectory.setter
    def trajectory(self, traj):
        # the driver assembles the chunks it received; the frames saved in the chunk the failure
        # interrupted travel with the error and are appended here
        frames = self._frames
        if traj is not None and frames is not None and not traj.multibody \
                and set(traj.fields) == set(frames) and len(frames["t"]) \
                and frames["t"][0] > traj.t[-1]:
            parts = [{k: traj[k] for k in traj.fields}, frames]
            traj = type(traj).concatenate(parts, traj.meta, getattr(traj, "static", None))
        self._record(traj)
        self._trajectory = traj

    def _record(self, traj):
        """Note the failure in the trajectory's metadata."""
        if traj is not None:
            traj.meta["failure"] = {"step": self.step, "time": self.time,
                                    "message": self.args[0]}


class RoundingError(NewtonError):
    """Rounding no longer keeps a quantity the scheme conserves exactly (a step too large for the
    numbers it moves, e.g. a disk spun at 1e12 rad/s): the run stops instead of drifting. It is a
    :class:`NewtonError` (same attributes; the frames of the chunk in which the drift was found
    are in ``trajectory``)."""

    def __init__(self, step: int, time: float, detail: str = "", frames=None):
        super().__init__(step, time, detail, frames)
        self.args = (f"Rounding lost a conserved quantity by step {step} (t = {time:.6g}): "
                     f"{detail}",)


class ContactEvent(NewtonError):
    """The contact stopped being one point: the run ends at a contact event.

    Raised by a rolling run when the body's support map reports that its description of the
    contact breaks down (see :mod:`nhphys.shapes`): ``"flat"`` (a disk or a cylinder's end face
    lies flat on the ground), ``"rim-to-side"`` (a cylinder rolls onto its side),
    ``"inner contact"`` (the inner part of a wheel's tube would touch the ground). It is a
    :class:`NewtonError`, so code that catches those catches it too.

    Attributes
    ----------
    event : str
        What happened: ``"flat"``, ``"rim-to-side"`` or ``"inner contact"``.
    step, time : int, float
        The step that would have crossed the event and the time at its start: the last frame
        of ``trajectory``.
    trajectory : Trajectory or None
        Every saved frame up to the event (set by :func:`nhphys.simulate`), with
        ``meta["event"] = {"event", "step", "time", "message"}``.

    Examples
    --------
    >>> try:                                                    # doctest: +SKIP
    ...     traj = nhphys.simulate(system, 5.0, 1e-3, R0=R0, omega0=omega0)
    ... except nhphys.errors.ContactEvent as event:
    ...     traj = event.trajectory  # everything up to the moment the disk fell flat
    """

    def __init__(self, step: int, time: float, event: str, detail: str, frames=None):
        self.event = event
        super().__init__(step, time, detail, frames)
        self.args = (f"Contact event at step {step} (t = {time:.6g}): {detail}",)

    def _record(self, traj):
        if traj is not None:
            traj.meta["event"] = {"event": self.event, "step": self.step, "time": self.time,
                                  "message": self.args[0]}
