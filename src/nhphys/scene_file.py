"""Scene files, what ``nhphys run`` reads: Python scripts that set ``scene = nhphys.Scene(...)``,
and declarative ``.toml`` files (:mod:`nhphys.scenefile`), which run no code."""

import os
import runpy


def load_scene_file(path):
    """The ``scene`` and ``defaults`` (a dict) of a scene file.

    A ``.toml`` file is read as data (:func:`nhphys.scenefile.load_file`: its ``[run]`` table
    is the defaults); any other file is run as a Python script, whose namespace gives them.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file defines no ``scene`` (a :class:`~nhphys.Scene`), or ``defaults`` is not a dict;
        a ``.toml`` file that does not read (:class:`nhphys.scenefile.SceneFileError`).
    """
    from nhphys.scene import Scene

    path = os.fspath(path)
    if path.lower().endswith(".toml"):
        from nhphys.scenefile import load_file

        return load_file(path)
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
    if not scene.defaults:
        scene.defaults = dict(defaults)  # so that the scene writes them with to_toml()
    return scene, defaults
