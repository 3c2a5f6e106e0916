"""Scene files: Python scripts that set ``scene = nhphys.Scene(...)`` (what ``nhphys run`` reads)."""

import os
import runpy


def load_scene_file(path):
    """Run a scene file and return its namespace's ``scene`` and ``defaults`` (a dict).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file defines no ``scene`` (a :class:`~nhphys.Scene`), or ``defaults`` is not a dict.
    """
    from nhphys.scene import Scene

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No scene file {path!r}.")
    namespace = runpy.run_path(path, run_name="nhphys_scene")
    scene = namespace.get("scene")
    if not isinstance(scene, Scene):
        raise ValueError(
            f"Expected {path} to define `scene = nhphys.Scene(...)`, got "
            f"{'no `scene`' if scene is None else type(scene).__name__}."
        )
    defaults = namespace.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ValueError(f"Expected `defaults` in {path} to be a dict, got {defaults!r}.")
    return scene, defaults
