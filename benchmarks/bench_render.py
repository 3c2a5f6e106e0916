"""Rendering speed: where the time of one off-screen frame goes, for 1, 2 and 100 bodies.

For each bundled scene the run is simulated (timed), then frames are drawn off screen as
``nhphys.viz.render`` draws them, timing separately the Python side (moving every body's actor
by its ``user_matrix``, rebuilding the contact trails, the text) and VTK's render plus the
read-back of the image. The claim checked: with many bodies the frame time is VTK's rendering,
not Python work per body.

Run ``python benchmarks/bench_render.py [--frames N] [--size WxH]``; prints a Markdown table.
"""

import argparse
import os
import runpy
import time
import nhphys.scenes

SCENE_DIR = os.path.dirname(nhphys.scenes.__file__)  # the bundled scenes, installed with nhphys
SCENES = ("suslov_top", "bowl", "marbles")


def measure(name, frames, size):
    from nhphys.viz._pyvista import pyvista
    from nhphys.viz.view import SceneView, readout

    namespace = runpy.run_path(os.path.join(SCENE_DIR, f"{name}.py"), run_name="bench")
    scene, defaults = namespace["scene"], namespace.get("defaults", {})
    dt = defaults.get("dt", 0.01)
    t_final = defaults.get("t_final", 4.0)
    start = time.perf_counter()
    traj = scene.simulate(t_final, dt, progress=False)
    simulate_s = time.perf_counter() - start
    steps = round(t_final / dt) * len(scene.bodies)
    shown = traj.resample(frames / t_final)
    positions, rotations = shown.body_poses()
    contact = shown.contact_point

    pv = pyvista(off_screen=True)
    start = time.perf_counter()
    plotter = pv.Plotter(off_screen=True, window_size=list(size))
    view = SceneView(scene.display(), plotter)
    view.frame_camera(positions)
    plotter.enable_anti_aliasing("msaa", multi_samples=4)
    plotter.screenshot(return_img=True)
    setup_s = time.perf_counter() - start
    python_s = poses_s = render_s = 0.0
    for i in range(len(shown)):
        a = time.perf_counter()
        view.set_poses(positions[i], rotations[i])
        b = time.perf_counter()
        view.set_trails(contact[:i + 1])
        view.set_text(readout(shown.t[i], shown.energy[i], shown.energy[0],
                              shown.constraint_residual[i]))
        c = time.perf_counter()
        plotter.render()
        plotter.screenshot(return_img=True)
        d = time.perf_counter()
        poses_s += b - a
        python_s += c - a
        render_s += d - c
    plotter.close()
    n = len(shown)
    return {"scene": name, "bodies": len(scene.bodies), "steps": steps,
            "simulate_s": simulate_s, "setup_s": setup_s, "frames": n,
            "poses_ms": 1000 * poses_s / n, "python_ms": 1000 * python_s / n,
            "render_ms": 1000 * render_s / n}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--size", default="480x360")
    args = parser.parse_args(argv)
    size = tuple(int(v) for v in args.size.split("x"))
    rows = [measure(name, args.frames, size) for name in SCENES]
    print(f"Off screen (VTK EGL), {size[0]}x{size[1]}, {args.frames} frames per scene.\n")
    print("| scene | bodies | simulate (body-steps/s) | set-up | move actors | all Python "
          "per frame | VTK render + read-back | Python share |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        share = r["python_ms"] / (r["python_ms"] + r["render_ms"])
        print(f"| {r['scene']} | {r['bodies']} | {r['steps'] / r['simulate_s']:,.0f} | "
              f"{r['setup_s']:.2f} s | {r['poses_ms']:.2f} ms | {r['python_ms']:.2f} ms | "
              f"{r['render_ms']:.1f} ms | {100 * share:.1f} % |")
    many = rows[-1]
    print(f"\nPer body, moving the actors costs {1000 * many['poses_ms'] / many['bodies']:.1f} us "
          f"a frame ({many['bodies']} bodies).")
    return rows


if __name__ == "__main__":
    main()
