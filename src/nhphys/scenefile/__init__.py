"""Declarative scene files (``.toml``): a scene as data, read without running any code.

A scene file describes what a scene script builds -- grounds, bodies with their shapes, mass and
inertia, contacts, initial conditions, colours -- and the settings of a run, in TOML. Reading
one parses TOML with the standard library (:mod:`tomllib`), checks every field against the
schema (:mod:`nhphys.scenefile.read`), and calls the same constructors a script would; the
only text that becomes mathematics is a surface's expressions, which go through the ``ast``
whitelist of :mod:`nhphys.surfaces.symbolic` (nothing in them is evaluated as Python). So a
scene file from anywhere runs no code: the worst it can do is describe a long run.

Every refusal is a :class:`SceneFileError` (a ``ValueError``) that names the field, in the form
``bodies[2].shape.radius: expected a number > 0, got -1``; malformed TOML names its line and
column. The format, key by key, is in ``docs/scene-files.md``.

>>> import nhphys
>>> scene = nhphys.Scene.from_toml('''
... name = "top"
... [[bodies]]
... name = "top"
... mass = 1.0
... inertia = [1.0, 2.0, 3.0]
... shape = { type = "ellipsoid", semi_axes = [0.3, 0.2, 0.1] }
... contact = { type = "suslov", axis = [0.0, 0.0, 1.0] }
... initial = { omega = [1.0, 0.5, 0.0] }
... ''')
>>> scene.bodies[0].contact
SuslovContact(axis=[0.0, 0.0, 1.0], pivot=[0.0, 0.0, 0.0])
>>> again = nhphys.Scene.from_toml(scene.to_toml())   # the same scene, to the last bit
>>> again.to_toml() == scene.to_toml()
True
>>> try:
...     nhphys.Scene.from_toml('bodies = [{ mass = 1.0 }]')
... except nhphys.scenefile.SceneFileError as exc:  # a ValueError naming the field
...     print(exc)
bodies[0].inertia: missing; a body needs mass, inertia, shape, contact
"""

from nhphys.scenefile.read import (
    FORMAT,
    SceneFileError,
    load,
    load_file,
    loads,
    read_description,
)
from nhphys.scenefile.write import dumps, run_scene_toml, run_toml, scene_to_toml

__all__ = [
    "FORMAT",
    "SceneFileError",
    "dumps",
    "load",
    "load_file",
    "loads",
    "read_description",
    "run_scene_toml",
    "run_toml",
    "scene_to_toml",
]
