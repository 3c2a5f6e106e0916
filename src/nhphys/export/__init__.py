"""Export of trajectories: NPZ and CSV, ParaView time series (``.pvd``), USD for Blender.

* :func:`to_npz` / :func:`to_csv`: :meth:`Trajectory.save` and :meth:`Trajectory.to_csv`;
* :func:`to_pvd`: a ParaView collection, either one mesh file per body per frame (``mode="mesh"``)
  or one file of body poses per frame (``mode="transform"``: points at the centres of mass with
  ``rotation`` and ``quaternion`` arrays, for glyphs);
* :func:`to_usd`: a USD stage with every body an ``Xform`` whose transform is time-sampled, and
  its mesh (needs the optional extra ``usd``: ``pip install "nhphys[usd]"``, i.e. ``usd-core``).

Every writer writes under temporary names and renames when complete.
"""

from nhphys.export.paraview import to_pvd
from nhphys.export.usd import to_usd


def to_npz(trajectory, path):
    """Write ``trajectory`` losslessly to an ``.npz`` file (see :meth:`Trajectory.save`)."""
    return trajectory.save(path)


def to_csv(trajectory, path):
    """One row per body per frame: ``t, body, x, y, z, qw, qx, qy, qz``."""
    return trajectory.to_csv(path)


__all__ = ["to_npz", "to_csv", "to_pvd", "to_usd"]
