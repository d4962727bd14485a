"""`robocal simulate ...`: calibration data of a perturbed robot, written as a user would record them."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from robocal.errors import RobocalError
from robocal.terminal import err, out, progress_bar

if TYPE_CHECKING:
    from robocal.kinematics.model import Mode

app = typer.Typer(no_args_is_help=True, help="Simulate calibration data of a perturbed robot.")


class Detection(StrEnum):
    geometric = "geometric"
    torque = "torque"


@app.command("contact")
def simulate_contact(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    robot: Annotated[
        Path | None, typer.Option("--robot", help="a hand as URDF with collision geometry on its fingertips (default: the packaged DLR-Hand II)")
    ] = None,
    pairs: Annotated[
        str | None, typer.Option("--pairs", help="with --robot: the body pairs a:b,c:d (links with collision shapes; default every two fingertips)")
    ] = None,
    n_per_pair: Annotated[int, typer.Option("--n-per-pair", min=1, help="contacts per body pair (the DLR-Hand II has 6 fingertip pairs)")] = 50,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the true hand and of the contact search")] = 0,
    translation: Annotated[float, typer.Option("--translation", min=0.0, help="largest error of a DH length (d, a) of the true hand, m")] = 0.005,
    rotation_deg: Annotated[float, typer.Option("--rotation-deg", min=0.0, help="largest error of a DH angle (theta, alpha) of the true hand, deg")] = 5.0,
    detection: Annotated[
        Detection, typer.Option("--detection", help="geometric: exact first touch; torque: joint-torque threshold on a compliant contact")
    ] = Detection.geometric,
    joint_noise: Annotated[float, typer.Option("--joint-noise", min=0.0, help="std of the encoder noise added to the recorded joint values, rad")] = 0.0,
) -> None:
    """Fingertip contacts of a perturbed hand (the paper's contact search), as a problem to calibrate.

    Without --robot, the DLR-Hand II: writes contacts.csv, true.urdf (the true hand), the DH table
    and geometry, and problem.yaml. With --robot HAND.urdf: the fingertips are the links whose
    collision shapes end a finger chain; the true hand is the URDF perturbed in DH terms; writes
    the URDF, hand_dh.yaml, true.urdf, contacts.csv, problem.yaml (the URDF, full joints) and
    problem_dh.yaml (its DH table)."""
    import numpy as np

    from robocal.simulation.contact import dlr_hand_pairs, simulate_dlr_hand
    from robocal.simulation.contact.urdf_hand import hand_bodies, simulate_urdf_hand

    if pairs is not None and robot is None:
        raise RobocalError("--pairs names links of --robot HAND.urdf; the DLR-Hand II has its six fingertip pairs")
    chosen = dlr_hand_pairs() if robot is None else hand_bodies(robot, pairs)[2]
    done: dict = {}
    with progress_bar() as bar:
        task = bar.add_task("contact search", total=len(chosen) * n_per_pair)

        def progress(pair, count, _n):
            done[pair] = count
            bar.update(task, completed=sum(done.values()), description=f"contact search {pair[0]} / {pair[1]}")

        options: dict[str, Any] = dict(
            n_per_pair=n_per_pair, seed=seed, translation=translation, rotation=float(np.deg2rad(rotation_deg)),
            detection=detection.value, joint_noise=joint_noise, progress=progress,
        )  # fmt: skip
        if robot is None:
            dlr = simulate_dlr_hand(out_dir, **options)
            sim, files, seconds, parameters, problems = dlr.sim, dlr.files, dlr.seconds, len(dlr.theta_true), [dlr.problem]
        else:
            hand = simulate_urdf_hand(robot, out_dir, pairs=pairs, **options)
            sim, files, seconds, parameters, problems = hand.sim, hand.files, hand.seconds, len(hand.hand.theta_true), [hand.problem, hand.problem_dh]
    out.print(
        f"true hand: the {parameters} DH parameters of the finger joints perturbed by up to {translation * 1e3:g} mm / {rotation_deg:g} deg (seed {seed})",
        markup=False,
        highlight=False,
    )
    _contact_summary(sim, detection.value, joint_noise)
    out.print(f"wrote {', '.join(str(f) for f in files)} in {seconds:.1f} s", markup=False, highlight=False)
    for problem in problems:
        out.print(
            f"calibrate: robocal calibrate {problem} --out {Path(out_dir) / ('result' if problem.stem == 'problem' else 'result_dh')}",
            markup=False,
            highlight=False,
        )


def _contact_summary(sim, detection: str, joint_noise: float) -> None:
    """The simulated contacts per pair, the failed and rejected drives, and the true distances."""
    import numpy as np
    from rich.table import Table

    from robocal.simulation.contact import FAILURES, REJECTIONS

    table = Table(
        title=f"simulated contacts ({detection} detection, joint noise {joint_noise:g} rad)",
        caption="failed drives (retried): " + " / ".join(FAILURES) + "; planned drives the nominal model rejected: " + " / ".join(REJECTIONS),
    )
    for column in ("pair", "contacts", "failed", "rejected", "mean |d| (m)"):
        table.add_column(column, justify="left" if column == "pair" else "right")
    for row in sim.summary():
        failed, rejected = (" / ".join(str(row[kind].get(r, 0)) for r in reasons) for kind, reasons in (("failures", FAILURES), ("rejections", REJECTIONS)))
        table.add_row(" / ".join(row["pair"]), str(row["contacts"]), failed, rejected, f"{row['mean_abs_distance']:.2e}")
    out.print(table)
    n_failed = sum(sum(f.values()) for f in sim.failures.values())
    n_rejected = sum(sum(r.values()) for r in sim.rejections.values())
    out.print(
        f"{len(sim)} contacts from {len(sim) + n_failed} executed drives ({n_failed} failed and retried); the nominal model rejected {n_rejected} planned drives"
    )
    out.print(
        f"mean |true signed distance| at the recorded joint values: {np.abs(sim.true_distance).mean():.3e} m (max {np.abs(sim.true_distance).max():.3e} m)"
    )
    if detection == "torque":
        depth = -sim.true_distance * 1e3
        out.print(f"penetration at torque detection (mm): mean {depth.mean():.4f}, median {np.median(depth):.4f}, min {depth.min():.4f}, max {depth.max():.4f}")


@app.command("sockets")
def simulate_sockets(
    robot: Annotated[Path, typer.Option("--robot", help="URDF of the robot, with the ball link")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    link: Annotated[str, typer.Option("--link", help="the link whose origin is the ball center")] = "ball_link",
    n_per_socket: Annotated[int, typer.Option("--n-per-socket", min=1, help="configurations per socket (2 sockets per placement, 4 placements)")] = 30,
    translation: Annotated[
        float, typer.Option("--translation", min=0.0, help="largest error of an origin's x, y, z in the true robot, m (also the prior sigma)")
    ] = 0.001,
    rotation_deg: Annotated[
        float, typer.Option("--rotation-deg", min=0.0, help="largest error of an origin's roll, pitch, yaw in the true robot, deg (also the prior sigma)")
    ] = 0.5,
    joint_noise: Annotated[float, typer.Option("--joint-noise", min=0.0, help="std of the encoder noise added to the recorded joint values, rad")] = 1e-4,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the true robot, the configurations and the noise")] = 0,
) -> None:
    """Sphere-in-socket (MUKCa) recordings of a perturbed robot with a ball on its flange, as problems to calibrate.

    Writes nominal.urdf, true.urdf, data/<placement>/hole_0.csv and hole_1.csv, one <placement>.yaml
    per plate placement, and truth.json (socket centers, nominal MAE and joint-noise floor)."""
    import numpy as np
    from rich.table import Table

    from robocal.simulation.sockets import simulate_sockets as run

    with progress_bar() as bar:
        task = bar.add_task("sampling configurations (the first socket compiles)", total=None)

        def progress(done, total, label):
            bar.update(task, completed=done, total=total, description=f"sampled {label}")

        result = run(
            robot,
            out_dir,
            link=link,
            n_per_socket=n_per_socket,
            translation=translation,
            rotation=float(np.deg2rad(rotation_deg)),
            joint_noise=joint_noise,
            seed=seed,
            progress=progress,
        )
    truth = result.truth_json
    out.print(
        f"true robot: the origins of {', '.join(truth['perturbed_joints'])} perturbed by up to {translation * 1e3:g} mm / {rotation_deg:g} deg (seed {seed})"
    )
    table = Table(title=f"simulated sphere-in-socket recordings of '{link}' (joint noise {joint_noise:g} rad)")
    for column in ("placement", "socket 0 (m)", "rows", "nominal MAE (mm)", "noise floor (mm)"):
        table.add_column(column, justify="left" if column == "placement" else "right")
    for name, entry in truth["placements"].items():
        table.add_row(
            name,
            " ".join(f"{v:.3f}" for v in entry["sockets"][0]),
            str(sum(entry["rows"])),
            f"{entry['nominal_mae'] * 1e3:.3f}",
            f"{entry['noise_floor_mae'] * 1e3:.4f}",
        )
    out.print(table)
    out.print(f"wrote {len(result.files)} files to {out_dir} in {result.seconds:.1f} s (truth: {out_dir / 'truth.json'})", markup=False, highlight=False)
    for name, problem in result.problems.items():
        out.print(f"calibrate: robocal calibrate {problem} --out {Path(out_dir) / 'result' / name}", markup=False, highlight=False)


@app.command("base")
def simulate_base(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the sensor noise and the tracking losses")] = 0,
) -> None:
    """A differential-drive base (the KeJia of the platform paper) driven through spins, straight
    lines, circles, S-shapes and one-wheel turns, recorded as a mobile-base calibration records it.

    Writes the motion capture (mocap.c3d, mocap_optitrack.csv, mocap_vicon.csv, on the mocap
    clock), the robot log (robot.mcap, robot_bag/, robot.bag: wheel joint states and the nominal
    odometry, on the robot clock), laser_intervals.csv (scan matching), segments.json and truth.json."""
    import numpy as np
    from rich.table import Table

    from robocal.simulation.base import simulate_base as run

    result = run(out_dir, seed=seed)
    truth = result["truth"]
    table = Table(title=f"simulated mobile base (seed {seed})")
    for column in ("parameter", "unit", "true", "nominal"):
        table.add_column(column, justify="left" if column in ("parameter", "unit") else "right")
    for name, value in truth["true"].items():
        unit = "rad" if name.endswith("yaw") else "s" if name == "clock_offset" else "m"
        table.add_row(name, unit, f"{value:.6g}", f"{truth['nominal'][name]:.6g}")
    out.print(table)
    noise = truth["noise"]
    out.print(
        f"clocks: {truth['clock']}; noise: markers {noise['marker'] * 1e3:g} mm, encoders {noise['ticks_per_rev']} ticks/rev, "
        f"laser {noise['laser_xy'] * 1e3:g} mm / {np.rad2deg(noise['laser_yaw']):g} deg",
        markup=False,
        highlight=False,
    )
    spans = ", ".join(f"{s['name']} {s['start']:.1f}-{s['end']:.1f} s" for s in result["segments"])
    out.print(f"segments (robot clock): {spans}", markup=False, highlight=False)
    out.print(
        f"wrote {len(result['files'])} files to {out_dir} in {result['seconds']:.1f} s ({truth['laser_intervals']} laser intervals)",
        markup=False,
        highlight=False,
    )


@app.command("glove")
def simulate_glove(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the operator's hand and glove, the poses and the vision noise")] = 0,
    poses: Annotated[int, typer.Option("--poses", min=1, help="calibration poses (each shows every fingertip)")] = 60,
    test_poses: Annotated[int, typer.Option("--test-poses", min=1, help="held-out test poses")] = 200,
    noise: Annotated[float, typer.Option("--noise", min=0.0, help="vision noise, std per fingertip coordinate (m)")] = 0.0005,
) -> None:
    """A synthetic operator wearing a 22-sensor data glove (the glove seed's protocol): perturbed
    link lengths, offsets, gains and cross-couplings; raw readings and stereo-camera fingertip
    positions in the hand base frame. Writes calibration.csv, test.csv, truth.json, the nominal
    hand and glove files and problem.yaml (solver: the seed's scaled-SVD least squares)."""
    from robocal.simulation.glove import simulate_glove as run

    result = run(out_dir, seed=seed, n_calibration=poses, n_test=test_poses, noise=noise)
    out.print(
        f"wrote {result.folder}: {poses} calibration and {test_poses} test poses, {len(result.truth)} true parameters (truth.json)",
        markup=False,
        highlight=False,
    )
    out.print(f"calibrate: robocal calibrate {result.problem} --out {result.folder / 'result'}", markup=False, highlight=False)


@app.command("markers")
def simulate_markers(
    robot: Annotated[Path, typer.Option("--robot", help="URDF of your arm")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")],
    link: Annotated[str | None, typer.Option("--link", help="link carrying the marker body (default: the end of the longest chain)")] = None,
    mode: Annotated[str, typer.Option("--mode", help="what to perturb and calibrate on every actuated joint: full, xyzrpy or joint_offsets")] = "full",
    n_train: Annotated[int, typer.Option("--n", min=1, help="training postures")] = 60,
    n_test: Annotated[int, typer.Option("--n-test", min=1, help="held-out postures")] = 30,
    translation: Annotated[float, typer.Option("--translation", min=0.0, help="largest error of a true origin's x, y, z (m)")] = 0.001,
    rotation_deg: Annotated[float, typer.Option("--rotation-deg", min=0.0, help="largest error of a true origin's angles (deg)")] = 0.06,
    offset_deg: Annotated[float, typer.Option("--offset-deg", min=0.0, help="largest error of a true joint zero (deg)")] = 0.3,
    sigma: Annotated[float, typer.Option("--sigma", min=0.0, help="marker noise, std per coordinate (m)")] = 1e-4,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the true robot, the postures and the noise")] = 0,
) -> None:
    """Motion capture of a perturbed copy of your arm, before you record anything: writes robot.urdf,
    true.urdf, train.csv, test.csv, problem.yaml and truth.json (docs/your-robot.md)."""
    import numpy as np

    from robocal.simulation.marker_session import simulate_marker_session

    modes: tuple[Mode, ...] = ("full", "xyzrpy", "joint_offsets")
    chosen = next((m for m in modes if m == mode), None)
    if chosen is None:
        raise RobocalError(f"--mode {mode}: one of full, xyzrpy, joint_offsets")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise RobocalError(f"{out_dir}: exists and is not an empty folder; give a new folder")
    with err.status("simulating the marker session"):
        session = simulate_marker_session(
            out_dir,
            robot,
            link=link,
            mode=chosen,
            n_train=n_train,
            n_test=n_test,
            translation=translation,
            rotation=float(np.deg2rad(rotation_deg)),
            joint_offset=float(np.deg2rad(offset_deg)),
            sigma=sigma,
            seed=seed,
        )
    truth = session.truth
    out.print(
        f"true robot: {len(truth['parameters'])} parameters ({mode} on every actuated joint) perturbed (seed {seed}); markers on '{truth['link']}'",
        markup=False,
        highlight=False,
    )
    out.print("wrote " + ", ".join(str(f) for f in session.files), markup=False, highlight=False)
    out.print(f"next: robocal calibrate {session.problem} --out {out_dir / 'result'}", markup=False, highlight=False)


@app.command("fleet")
def simulate_fleet(
    robot: Annotated[Path, typer.Option("--robot", help="URDF of the arm (it needs a link named 'tool'), e.g. examples/fleet/arm_6r.urdf")],
    units: Annotated[int, typer.Option("--units", min=1, help="units in the batch")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")] = Path("fleet"),
    postures: Annotated[int, typer.Option("--postures", min=1, help="marker postures per unit")] = 40,
    tolerance: Annotated[float, typer.Option("--tolerance", min=0.0, help="manufacturing tolerance of a joint offset, rad (uniform +-)")] = 0.001,
    defect: Annotated[float, typer.Option("--defect", min=0.0, help="a defective unit's slipped joint offset, rad")] = 0.02,
    defect_share: Annotated[float, typer.Option("--defect-share", min=0.0, max=1.0, help="share of defective units")] = 0.03,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 0,
) -> None:
    """A batch of units of one arm, a session folder each (problem.yaml, robot.urdf, markers.csv), and truth.json."""
    from robocal.simulation.fleet import simulate_fleet as run

    if out_dir.exists() and any(out_dir.iterdir()):
        raise RobocalError(f"{out_dir}: exists and is not empty; give a new folder")
    with err.status(f"simulating {units} units"):
        truth = run(out_dir, robot, units, postures=postures, tolerance=tolerance, defect=defect, defect_share=defect_share, seed=seed)
    bad = sum(u["defective"] for u in truth["units"].values())
    out.print(f"wrote {out_dir}: {units} units ({bad} defective), truth.json", markup=False, highlight=False)
    out.print(f"next: robocal fleet init && robocal fleet ingest {out_dir} && robocal fleet run", markup=False, highlight=False)
