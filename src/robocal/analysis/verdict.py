"""Whether to trust a calibration: a verdict (ok / warning / fail) from a list of findings.

Every finding has a code (stable, for scripts and the fleet platform), a level (info, warning,
fail), one plain sentence and its evidence (numbers in SI units). The verdict's level is the worst
of its findings' levels, an info counting as ok; `ok` when there is none. `judge(calibration,
thresholds)` needs no solve beyond the calibration's own; a cross-validation
(robocal.analysis.crossval, `calibrate --crossval`) adds its findings (`crossval_findings`).

Findings and their levels (thresholds: `VerdictConfig`, the problem file's `verdict:` key):

- fail `iteration_limit`: the solver stopped at solver.max_iterations; `stalled`: it stopped
  before the limit without meeting its tolerance. The estimate is where it stopped.
- fail `too_few_residuals`: no more residuals than parameters: the model fits any data exactly.
- fail `implausible_size`: a robot parameter moved more than `max_translation` / `max_rotation`
  from nominal, a size no machined or assembled part is off by.
- `rank_deficient`: directions of the parameters the data do not change along; the calibration
  says nothing about them. info where the priors hold every such direction (MAP's intended use),
  warning where some direction has no prior on any of its parameters (its estimate is arbitrary).
- info `held_at_nominal`: `parameters.select: identifiable` fixed parameters at nominal.
- info `gauge`: a rigid motion of the robot below its root that the data do not see and the task
  does was fixed by keeping the task's reference frame at nominal (robocal.analysis.gauge).
- warning `beyond_prior`: a parameter moved more than `prior_sigmas` prior sigmas from nominal:
  the data and the prior disagree (a too tight prior, or a model or data error).
- warning `no_prior_weak`: a parameter without a prior is weakly determined by the data alone
  (posterior std above `weak_translation` / `weak_rotation`, or undetermined): noise moves it freely.
- warning `misfit`: a measurement's residuals exceed `misfit` times the declared variance
  (model error or a sigma set too small); `small_residuals`: below `small_residuals` times it
  (a sigma set too large: every uncertainty is overstated).
- cross-validation (`crossval_findings`): fail `crossval_worse_than_nominal` (held-out errors of
  the calibrated model above those of the nominal one), warning `crossval_overfit` (held-out rms
  above `crossval_ratio` times the training rms).
- `robocal evaluate --data` (`held_out_verdict`): fail `held_out_worse_than_nominal` per data
  file, and its generalization warnings (`joint_uncertainty`, `extrapolation`) as warnings.

Default thresholds and their reasoning are the field descriptions of `VerdictConfig`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from robocal.problem.schema import VerdictConfig

if TYPE_CHECKING:
    from robocal.analysis.gauge import GaugeFix
    from robocal.analysis.identifiability import Identifiability
    from robocal.problem.build import Problem
    from robocal.solver.map import Solution


class Judged(Protocol):
    """What the verdict reads of a calibration (robocal.calibration.Calibration is one): the
    verdict sits below the workflow that produces it and imports nothing of it."""

    @property
    def problem(self) -> Problem: ...
    @property
    def solution(self) -> Solution: ...
    @property
    def identifiability(self) -> Identifiability: ...
    @property
    def crossval(self) -> dict | None: ...
    @property
    def metrics(self) -> list[dict]: ...
    @property
    def gauge(self) -> GaugeFix | None: ...
    @property
    def held(self) -> tuple[str, ...]: ...
    @property
    def free(self) -> np.ndarray: ...
    def parameters(self) -> list[dict]: ...


Level = Literal["ok", "warning", "fail"]  # of a verdict
LEVELS = ("ok", "warning", "fail")
FindingLevel = Literal["info", "warning", "fail"]  # info: said, but no reason to distrust the result


@dataclass(frozen=True)
class Finding:
    code: str
    level: FindingLevel
    sentence: str
    evidence: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    findings: tuple[Finding, ...] = ()

    @property
    def level(self) -> Level:
        return max(("ok" if f.level == "info" else f.level for f in self.findings), key=LEVELS.index, default="ok")

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def to_dict(self) -> dict:
        """report.json `verdict`: level and findings (code, level, sentence, evidence)."""
        return {"level": self.level, "findings": [asdict(f) for f in self.findings]}

    def at_least(self, level: Level) -> bool:
        """Whether the verdict is `level` or worse (--fail-on)."""
        return LEVELS.index(self.level) >= LEVELS.index(level)


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _length(value: float, unit: str) -> str:
    """mm or deg for reading."""
    return f"{value * 1e3:.3g} mm" if unit == "m" else f"{np.degrees(value):.3g} deg" if unit == "rad" else f"{value:.3g} {unit}"


def solver_findings(cal: Judged) -> list[Finding]:
    s, limit = cal.solution, cal.problem.config.solver.max_iterations
    evidence = {"iterations": s.iterations, "max_iterations": limit, "cost": s.cost}
    out = []
    if not s.converged and s.iterations >= limit:
        out.append(
            Finding(
                "iteration_limit",
                "fail",
                f"the solver stopped after {s.iterations} iterations without converging (solver.max_iterations, "
                "solver.tolerance): the estimate is where it stopped, not a calibration",
                evidence,
            )
        )
    elif not s.converged:
        out.append(
            Finding(
                "stalled",
                "fail",
                f"the solver stalled after {s.iterations} iterations without converging: the estimate is where it stopped, not a calibration",
                evidence,
            )
        )
    residuals = sum(int((mask > 0).sum()) * len(m.row_sigmas()) for m, mask in zip(cal.problem.measurements, s.masks))
    n = cal.identifiability.n_parameters
    if residuals <= n:
        out.append(
            Finding(
                "too_few_residuals",
                "fail",
                f"{residuals} measured residuals for {n} parameters: the model can fit these data exactly "
                "whatever the robot, so the 'removed' figures say nothing; record more samples",
                {"residuals": residuals, "parameters": n},
            )
        )
    return out


def unheld_directions(cal: Judged) -> int:
    """How many directions of the data's kernel no prior holds either: the rank deficiency of the
    prior precision restricted to the kernel, N^T P N (N: orthonormal kernel basis)."""
    basis = cal.identifiability.basis
    if basis is None or basis.shape[1] == 0:
        return 0
    held = basis.T @ (np.asarray(cal.problem.map_problem.prior_sqrt_precision)[cal.free, None] ** 2 * basis)
    w = np.linalg.eigvalsh(held)
    return int((w <= 1e-12 * max(float(w.max()), 1e-300)).sum())


def identifiability_findings(cal: Judged) -> list[Finding]:
    """What the data do not determine: a note where the priors hold it, a warning where nothing does."""
    ident, out = cal.identifiability, []
    if ident.kernel:
        involved = sorted({name for direction in ident.kernel for name in direction}, key=cal.problem.layout.names.index)
        unheld = unheld_directions(cal)
        held_by = "only the priors hold them" if not unheld else f"{unheld} of them no prior holds either: their estimate is arbitrary"
        out.append(
            Finding(
                "rank_deficient",
                "warning" if unheld else "info",
                f"the data do not determine {len(ident.kernel)} direction(s) of the parameters, "
                f"involving {len(involved)} parameters ({_names(involved)}); {held_by}, and this calibration says nothing about them",
                {"rank": ident.rank, "n_parameters": ident.n_parameters, "unheld": unheld, "directions": ident.kernel, "parameters": involved},
            )
        )
    held = list(cal.held)
    if held:
        total = int(cal.problem.model_parameters().sum())  # the robot's parameters, held ones included
        out.append(
            Finding(
                "held_at_nominal",
                "info",
                f"{len(held)} of the robot's {total} parameters held at nominal as not identifiable from these data "
                f"(parameters.select: identifiable): {_names(held)}; their errors stay in the robot",
                {"parameters": held, "n_parameters": total},
            )
        )
    return out


def parameter_findings(cal: Judged, cfg: VerdictConfig) -> list[Finding]:
    """Sizes of the parameter changes (robot model only for plausibility) and their determination."""
    model = cal.problem.model_parameters()[cal.free]  # parameters() lists the free ones
    implausible, beyond, weak = [], [], []
    for p, is_model in zip(cal.parameters(), model):
        change, sigma, std = p["estimate"] - p["nominal"], p["prior_sigma"], p["std"]
        limit = {"m": cfg.max_translation, "rad": cfg.max_rotation}.get(p["unit"])
        if is_model and limit is not None and abs(change) > limit:
            implausible.append({"name": p["name"], "change": change, "unit": p["unit"], "limit": limit})
        if sigma is not None and abs(change) > cfg.prior_sigmas * sigma:
            beyond.append({"name": p["name"], "change": change, "unit": p["unit"], "prior_sigma": sigma, "sigmas": abs(change) / sigma})
        weak_limit = {"m": cfg.weak_translation, "rad": cfg.weak_rotation}.get(p["unit"])
        if is_model and sigma is None and weak_limit is not None and (std is None or std > weak_limit):
            weak.append({"name": p["name"], "std": std, "unit": p["unit"]})
    out = []
    if implausible:
        worst = max(implausible, key=lambda e: abs(e["change"]) / e["limit"])
        out.append(
            Finding(
                "implausible_size",
                "fail",
                f"{len(implausible)} robot parameters moved beyond a plausible size ({_names([e['name'] for e in implausible])}; "
                f"{worst['name']} by {_length(worst['change'], worst['unit'])}): the fit has gone astray or the model is wrong",
                {"parameters": implausible},
            )
        )
    if beyond:
        worst = max(beyond, key=lambda e: e["sigmas"])
        out.append(
            Finding(
                "beyond_prior",
                "warning",
                f"{len(beyond)} parameters moved more than {cfg.prior_sigmas:g} prior sigmas from nominal "
                f"({_names([e['name'] for e in beyond])}; {worst['name']} by {worst['sigmas']:.1f} sigma): the data contradict the prior "
                "(a prior set too tight, or a model or data error)",
                {"parameters": beyond},
            )
        )
    if weak:
        out.append(
            Finding(
                "no_prior_weak",
                "warning",
                f"{len(weak)} robot parameters have no prior and the data alone leave them uncertain "
                f"({_names([e['name'] for e in weak])}): noise moves them freely; give them a prior (priors:)",
                {"parameters": weak},
            )
        )
    return out


def residual_findings(cal: Judged, cfg: VerdictConfig) -> list[Finding]:
    out = []
    for m in cal.metrics:
        fit = m["fit_per_residual"]
        evidence = {"measurement": m["name"], "fit_per_residual": fit, "rms_over_sigma": float(np.sqrt(fit))}
        if fit > cfg.misfit:
            out.append(
                Finding(
                    "misfit",
                    "warning",
                    f"{m['name']}: the calibrated model leaves residuals {np.sqrt(fit):.1f} times the declared sigma: it does not explain "
                    "these data (model error such as joint backlash or elasticity, or a sigma set too small)",
                    evidence,
                )
            )
        elif fit < cfg.small_residuals:
            out.append(
                Finding(
                    "small_residuals",
                    "warning",
                    f"{m['name']}: the residuals are {np.sqrt(fit):.2f} times the declared sigma: the sigma is set too large, "
                    "and every reported uncertainty is overstated",
                    evidence,
                )
            )
    return out


def unstable_parameters(spread: list[dict], cfg: VerdictConfig, most: int = 5) -> list[dict]:
    """The robot parameters whose estimates differ most between the folds of a cross-validation,
    relative to the weak-determination thresholds (those beyond them first), at most `most`."""
    limit = {"m": cfg.weak_translation, "rad": cfg.weak_rotation}
    ranked = sorted((p for p in spread if p["unit"] in limit), key=lambda p: -p["std"] / limit[p["unit"]])
    beyond = [p for p in ranked if p["std"] > limit[p["unit"]]]
    return (beyond or ranked)[:most]


def crossval_findings(cal: Judged, crossval: dict, cfg: VerdictConfig) -> list[Finding]:
    """Findings of a cross-validation (`CrossValidation.report()`): per measurement, held-out rms
    of the calibrated model against the nominal one's and against the training rms."""
    training = {m["name"]: m["after"]["rms"] for m in cal.metrics}
    unstable = unstable_parameters(crossval["spread"], cfg)
    named = ", ".join(f"{p['name']} {_length(p['std'], p['unit'])}" for p in unstable)
    out = []
    for m in crossval["held_out"]:
        before, after, train = m["before"]["rms"], m["after"]["rms"], training[m["name"]]
        evidence = {
            "measurement": m["name"],
            "k": crossval["k"],
            "held_out_before": before,
            "held_out_after": after,
            "training_after": train,
            "unstable": unstable,
        }
        figures = f"held-out rms {after * 1e3:.3g} mm against {before * 1e3:.3g} mm for the nominal robot and {train * 1e3:.3g} mm on the training rows"
        if after > before:
            out.append(
                Finding(
                    "crossval_worse_than_nominal",
                    "fail",
                    f"{m['name']}: on rows it was not fitted to ({crossval['k']}-fold cross-validation) the calibrated model "
                    f"is worse than the nominal one ({figures}): it fits noise; the parameters that change most between folds (std): {named}",
                    evidence,
                )
            )
        elif after > cfg.crossval_ratio * train:
            out.append(
                Finding(
                    "crossval_overfit",
                    "warning",
                    f"{m['name']}: {figures}, more than {cfg.crossval_ratio:g} times the training error: the fit "
                    f"follows the noise of its rows; the parameters that change most between folds (std): {named}",
                    evidence,
                )
            )
    return out


def gauge_findings(cal: Judged) -> list[Finding]:
    """A gauge the estimate was fixed in (robocal.analysis.gauge): what it is and how far the fix moved the estimate."""
    fix = cal.gauge
    if fix is None:
        return []
    angle, shift = float(np.linalg.norm(fix.shift[3:])), float(np.linalg.norm(fix.shift[:3]))
    moved = f" and {shift * 1e3:.3g} mm" if shift > 1e-9 else ""  # a rotation about the root's origin translates nothing
    return [
        Finding(
            "gauge",
            "info",
            f"the data do not see a {fix.gauge.describe()}, and the task does: robocal fixed it by keeping the task's reference frame "
            f"at nominal, which moved the solver's estimate by {np.degrees(angle):.3g} deg{moved}; the true robot's own "
            "component of it is unknown, so the raw task error includes it and the task error modulo the gauge does not (report.json task)",
            {"components": list(fix.gauge.components), "root": fix.gauge.root, "rotation": angle, "translation": shift, "data_change": fix.data_change},
        )
    ]


def held_out_verdict(headline: str, held_out: list[dict], warnings: list[dict]) -> Verdict:
    """The verdict of `robocal evaluate --data` (robocal.evaluation): fail `held_out_worse_than_nominal`
    for each data file the calibrated model predicts worse than the nominal one; each generalization
    warning (`joint_uncertainty`, `extrapolation`) as a warning finding of its kind."""
    findings = [
        Finding(
            "held_out_worse_than_nominal",
            "fail",
            f"{e['data']}: the calibrated model is worse than the nominal one on these held-out data "
            f"({headline} {m['before'][headline] * 1e3:.3f} -> {m['after'][headline] * 1e3:.3f} mm)",
            {"data": e["data"], "before": m["before"][headline], "after": m["after"][headline]},
        )
        for e in held_out
        for m in e["measurements"]
        if m["after"][headline] > m["before"][headline]
    ]
    return Verdict(tuple(findings + [Finding(w["kind"], "warning", w["message"], {"evidence": w["evidence"]}) for w in warnings]))


def judge(cal: Judged, cfg: VerdictConfig | None = None) -> Verdict:
    """The verdict on a calibration from what it holds (no further solve): with a cross-validation
    (`cal.crossval`, from `calibrate --crossval`) its findings too."""
    cfg = cfg or VerdictConfig()
    findings = solver_findings(cal) + identifiability_findings(cal) + gauge_findings(cal) + parameter_findings(cal, cfg) + residual_findings(cal, cfg)
    if cal.crossval is not None:
        findings += crossval_findings(cal, cal.crossval, cfg)
    return Verdict(tuple(findings))
