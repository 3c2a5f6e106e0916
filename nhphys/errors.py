"""Exceptions raised while stepping."""


class NewtonError(RuntimeError):
    """A step's Newton solve did not converge.

    Attributes
    ----------
    step : int
        Index of the step that failed (0 is the step leaving the initial state).
    time : float
        Time at the start of that step.
    trajectory : Trajectory or None
        Everything computed before the failure, when the driver could assemble it.
    """

    def __init__(self, step: int, time: float, detail: str = ""):
        self.step = step
        self.time = time
        self.trajectory = None
        msg = f"Newton solve did not converge at step {step} (t = {time:.6g})"
        super().__init__(msg + (f": {detail}" if detail else "."))
