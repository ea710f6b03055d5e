"""tailor from Python: load, profile, plan, compress and run models (docs/python.md).

    import tailor
    model = tailor.load("models/ch_PP-OCRv4_rec_infer.onnx")
    prof = tailor.profile(model, schemes=["int8", "int4-g32"])
    plan = tailor.plan(prof, budget="30%")
    outputs = tailor.run(model, {"x": x})          # numpy in, numpy out

Every call is the C++ library the `tailor` command runs (tailor._tailor); a
failure is a tailor.Error whose str() is the command's one-line message.
Long calls release the GIL; `progress` callbacks receive a ProgressEvent.
"""

import os as _os

# As the `tailor` command does (tools/tailor/main.cpp): idle OpenMP threads
# sleep instead of spinning, and OpenBLAS starts no pool of its own (tailor
# runs every BLAS call serially). Effective only when this package loads the
# libraries first; a value the user set is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import math as _math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as _np

from . import _tailor
from ._tailor import Error

__all__ = [
    "Error", "load", "profile", "read_profile", "plan", "compress", "run", "default_schemes",
    "Model", "Layer", "Candidate", "LayerProfile", "Profile", "PlanChoice", "Plan",
    "CompressResult", "ProgressEvent",
]


@dataclass(frozen=True)
class ProgressEvent:
    """One progress report. `stage`: "profile", "output damage", or a compress
    stage ("load", "profile", "plan", "rewrite", "verify", ...); `done` and
    `total` count layers where the stage counts them (else None); `message` is
    the line `tailor` prints for it."""
    stage: str
    done: Optional[int]
    total: Optional[int]
    message: str


def _progress(fn):
    if fn is None:
        return None
    if not callable(fn):
        raise TypeError("progress must be callable (it receives a tailor.ProgressEvent)")
    return lambda e: fn(ProgressEvent(*e))


@dataclass(frozen=True)
class Layer:
    """A weight with an [out, in] view (DESIGN.md, "Weight orientation"):
    `op` is the op type of its first consumer (None in a weights-only file such
    as a llama2.c checkpoint), `shape` the stored shape, `shape_out_in` the
    view the schemes see, `numel` its elements, `layout` how it is stored."""
    name: str
    op: Optional[str]
    shape: Tuple[int, ...]
    shape_out_in: Tuple[int, int]
    numel: int
    dtype: str
    layout: str


class Model:
    """A model file loaded by tailor.load (weights memory-mapped)."""

    def __init__(self, handle):
        self._handle = handle

    @property
    def path(self) -> str:
        return self._handle.path

    @property
    def format(self) -> str:
        """"onnx", "safetensors", "gguf" or "llama2c"."""
        return self._handle.format

    def layers(self) -> List[Layer]:
        """Every weight with an [out, in] view, in the model's weight order."""
        return [Layer(**d) for d in self._handle.layers()]

    def run(self, feeds, passes="all", threads=0):
        """tailor.run(self, feeds, ...)."""
        return run(self, feeds, passes=passes, threads=threads)

    def __repr__(self):
        return f"tailor.Model({self.path!r}, format={self.format!r})"


@dataclass(frozen=True)
class Candidate:
    """One way to store one layer, measured (DESIGN.md, "Scheme semantics"):
    `bytes` every stored byte, `rel_error` ‖W − Ŵ‖/‖W‖ of the stored factors,
    `macs` multiply-accumulates per input row; `rel_error_activation` and
    `output_damage` (D(ℓ, c) in the profile's output_metric) are None where not
    measured."""
    label: str
    bytes: int
    rel_error: float
    macs: int
    params: int
    encode_seconds: float
    rel_error_activation: Optional[float]
    output_damage: Optional[float]


@dataclass(frozen=True)
class LayerProfile:
    """A profiled layer and its candidates. The numpy properties hold one
    entry per candidate, in `candidates` order."""
    name: str
    shape_out_in: Tuple[int, int]
    numel: int
    dense_bytes: int
    kept_dense: Optional[str]
    candidates: Tuple[Candidate, ...]

    @property
    def labels(self) -> List[str]:
        return [c.label for c in self.candidates]

    @property
    def bytes(self) -> _np.ndarray:
        """int64 [candidates]: stored bytes."""
        return _np.array([c.bytes for c in self.candidates], dtype=_np.int64)

    @property
    def rel_error(self) -> _np.ndarray:
        """float64 [candidates]: relative weight error."""
        return _np.array([c.rel_error for c in self.candidates], dtype=_np.float64)

    @property
    def macs(self) -> _np.ndarray:
        """int64 [candidates]: multiply-accumulates per input row."""
        return _np.array([c.macs for c in self.candidates], dtype=_np.int64)

    @property
    def output_damage(self) -> _np.ndarray:
        """float64 [candidates]: output damage, NaN where not measured."""
        return _np.array([_math.nan if c.output_damage is None else c.output_damage
                          for c in self.candidates], dtype=_np.float64)

    def candidate(self, label: str) -> Candidate:
        for c in self.candidates:
            if c.label == label:
                return c
        raise KeyError(f"{self.name}: no candidate {label!r} (has {', '.join(self.labels)})")


class Profile:
    """A model's profile (what `tailor profile` writes as profile.json): every
    planned layer with its candidates; `dense_bytes` is the base of a "25%"
    budget, `fixed_bytes` what is not planned."""

    def __init__(self, handle):
        self._handle = handle
        d = handle.to_dict()
        self.model: str = d["model"]
        self.dense_bytes: int = d["dense_bytes"]
        self.fixed_bytes: int = d["fixed_bytes"]
        self.output_metric: Optional[str] = d["output_metric"]
        self.calibration: Optional[str] = d["calibration"]
        self.layers: List[LayerProfile] = [
            LayerProfile(name=l["name"], shape_out_in=l["shape_out_in"], numel=l["numel"],
                         dense_bytes=l["dense_bytes"], kept_dense=l["kept_dense"],
                         candidates=tuple(Candidate(**c) for c in l["candidates"]))
            for l in d["layers"]]

    def layer(self, name: str) -> LayerProfile:
        for l in self.layers:
            if l.name == name:
                return l
        raise KeyError(f"no profiled layer {name!r}")

    def to_json(self) -> str:
        """profile.json's text (docs/formats.md)."""
        return self._handle.to_json()

    def save(self, path: str) -> None:
        """Writes profile.json (readable by `tailor plan` and tailor.read_profile)."""
        self._handle.save(path)

    def __repr__(self):
        return f"tailor.Profile({self.model!r}, {len(self.layers)} layers)"


@dataclass(frozen=True)
class PlanChoice:
    layer: str
    label: str
    rel_error: float
    bytes: int


class Plan:
    """One candidate per layer under a budget. `choices` maps layer → label;
    `objective` is the value the solver minimised (`objective_name` says
    which: numel, sum, activation or output); `total_bytes` counts the whole
    model (fixed bytes included); `lower_bound` is a certified bound on the
    optimum (None when unknown)."""

    def __init__(self, handle):
        self._handle = handle
        d = handle.to_dict()
        self.model: str = d["model"]
        self.solver: str = d["solver"]
        self.objective_name: str = d["objective_name"]
        self.objective: float = d["objective"]
        self.budget_bytes: int = d["budget_bytes"]
        self.fixed_bytes: int = d["fixed_bytes"]
        self.total_bytes: int = d["total_bytes"]
        self.seed: int = d["seed"]
        self.lower_bound: Optional[float] = d["lower_bound"]
        self.gap: float = d["gap"]
        self.proven_optimal: bool = d["proven_optimal"]
        self.seconds: float = d["seconds"]
        self.nodes: int = d["nodes"]
        self.layers: List[PlanChoice] = [PlanChoice(**c) for c in d["choices"]]
        self.choices: Dict[str, str] = {c.layer: c.label for c in self.layers}

    def to_json(self) -> str:
        """plan.json's text (docs/formats.md)."""
        return self._handle.to_json()

    def save(self, path: str) -> None:
        """Writes plan.json."""
        self._handle.save(path)

    def __repr__(self):
        return (f"tailor.Plan({self.solver}, {self.objective_name} {self.objective:.6g}, "
                f"{self.total_bytes} of {self.budget_bytes} bytes)")


@dataclass
class CompressResult:
    """What `tailor compress` prints. `total_bytes` of the whole model under
    the plan; `predicted_damage` (Σ per-layer output damage) and
    `measured_damage` (of the whole compressed model on the verification
    inputs) in `damage_metric` ("kl" nats or "relative_error"), NaN when not
    measured; `metric` the task metric {"name", "original", "compressed"}
    (OCR character accuracy, saliency IoU) or None; `kld` a llama's KL /
    top-1 statistics or None; `files` the written files' bytes by name."""
    kind: str
    out_dir: str
    total_bytes: int
    budget_bytes: int
    dense_bytes: int
    fixed_bytes: int
    predicted_damage: float
    measured_damage: float
    damage_metric: Optional[str]
    predicted_error: float
    measured_error: float
    metric: Optional[dict]
    outputs: List[dict]
    kld: Optional[dict]
    ocr: Optional[dict]
    saliency: Optional[dict]
    rewrites: Dict[str, str]
    files: Dict[str, int]
    seconds: float
    plan: Plan
    profile: Profile
    details: dict = field(repr=False)

    def as_dict(self) -> dict:
        """The numbers as one dict (plan and profile as their JSON text)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "details"}
        d["plan"] = self.plan.to_json()
        d["profile"] = self.profile.to_json()
        return d


def load(path) -> Model:
    """Loads a model as `tailor profile` reads it: ONNX, safetensors (file or
    HF folder), GGUF or a llama2.c .bin. Raises tailor.Error naming the file."""
    return Model(_tailor.load(_os.fspath(path)))


def _feeds(feeds, what):
    if not isinstance(feeds, dict):
        raise TypeError(f"{what} must be a dict {{input name: numpy array}}")
    out = {}
    for name, value in feeds.items():
        a = _np.ascontiguousarray(value)
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        out[str(name)] = a
    return out


def profile(model: Model, schemes: Optional[Sequence[str]] = None, calib=None,
            progress: Optional[Callable[[ProgressEvent], None]] = None, *,
            layers: Optional[str] = None, min_params: int = 4096, threads: int = 0,
            cache: bool = False, damage_inputs: Optional[Sequence[dict]] = None) -> Profile:
    """Measures every layer of `model` under every applicable scheme, as
    `tailor profile` does. `schemes`: labels or families (None: the whole
    catalog); `calib`: safetensors of per-layer mean x² vectors (activation-
    aware error); `layers`: a regex of weight names; `cache`: reuse/store the
    profile cache. `damage_inputs`: a list of {input: array} calibration
    inputs; every candidate's output damage is then measured on them (ONNX).
    `progress` gets a ProgressEvent per layer done."""
    if isinstance(schemes, str):
        schemes = [s.strip() for s in schemes.split(",")]
    inputs = None if damage_inputs is None else [_feeds(f, "each damage input")
                                                  for f in damage_inputs]
    handle = _tailor.profile(model._handle, None if schemes is None else list(schemes),
                             None if calib is None else _os.fspath(calib), layers, min_params,
                             threads, cache, inputs, _progress(progress))
    return Profile(handle)


def read_profile(path) -> Profile:
    """Reads a profile.json (`tailor profile -o`); tailor.Error when malformed."""
    return Profile(_tailor.read_profile(_os.fspath(path)))


def plan(profile: Profile, budget: str = "25%", solver: str = "exact", *,
         objective: Optional[str] = None, seed: int = 0, time_limit: float = 0,
         threads: int = 0) -> Plan:
    """Chooses one candidate per layer within `budget` ("25%" of the dense
    f32 bytes, "4.5bpw", "300MB", bytes), as `tailor plan` does. `solver`:
    exact, greedy, cem, dado or gumbel. `objective`: numel, sum, activation or
    output (default: output when the profile has output damage, else numel)."""
    return Plan(_tailor.plan(profile._handle, str(budget), solver, objective, seed, time_limit,
                             threads))


def compress(path, budget: str, output, progress: Optional[Callable[[ProgressEvent], None]] = None,
             **options) -> CompressResult:
    """`tailor compress PATH --budget BUDGET -o OUTPUT`: profile (cached),
    plan, rewrite, write, verify; returns what the command prints. Options as
    the command's flags: solver, objective, uniform, seed, calib, task,
    report, schemes (list), min_params, threads, cache, ocr_lines, ocr_keys,
    inputs, sequences, length, image_mean, image_std. `progress` gets a
    ProgressEvent at the start and end of each stage."""
    if "schemes" in options and isinstance(options["schemes"], str):
        options["schemes"] = [s.strip() for s in options["schemes"].split(",")]
    for key in ("calib", "ocr_lines", "ocr_keys"):
        if key in options:
            options[key] = _os.fspath(options[key])
    d = _tailor.compress(_os.fspath(path), str(budget), _os.fspath(output), options,
                         _progress(progress))
    p, prof, v = Plan(d["plan"]), Profile(d["profile"]), d["verification"]
    return CompressResult(
        kind=d["kind"], out_dir=d["out_dir"], total_bytes=p.total_bytes,
        budget_bytes=p.budget_bytes, dense_bytes=prof.dense_bytes, fixed_bytes=p.fixed_bytes,
        predicted_damage=v["predicted_damage"], measured_damage=v["measured_damage"],
        damage_metric=v["damage_metric"], predicted_error=v["predicted_error"],
        measured_error=v["measured_error"], metric=v["metric"], outputs=v["outputs"],
        kld=d["kld"], ocr=d["ocr"], saliency=v["saliency"], rewrites=d["rewrites"],
        files=d["files"], seconds=d["seconds"], plan=p, profile=prof, details=d)


def run(model: Model, feeds: Dict[str, _np.ndarray], *, passes: str = "all",
        threads: int = 0) -> Dict[str, _np.ndarray]:
    """Runs `model` with tailor's runtime, as `tailor run` does: `feeds` maps
    every graph input to an array of its declared dtype and shape (a decoder's
    KV-cache pasts may be omitted: fed empty). Returns every output by name, in
    graph order, as numpy arrays over tailor's own buffers (no copy; an output
    that is a model constant is read-only). Raises tailor.Error naming the
    input or node."""
    return _tailor.run(model._handle, _feeds(feeds, "feeds"), passes, threads)


def default_schemes() -> List[str]:
    """The schemes `tailor compress` profiles unless told otherwise."""
    return _tailor.default_schemes()
