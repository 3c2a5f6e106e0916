"""The bundled scenes: runnable scripts, each defining ``scene`` (see ``nhphys list``).

Run one with ``python -m nhphys.scenes.NAME`` or ``nhphys run NAME`` from any folder. They are
scripts, not a library: importing this package imports none of them.
"""
