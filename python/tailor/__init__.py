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


def _arg_error(name, what):
    """A tailor.Error for argument `name`, as the library's own ("name: what")."""
    e = Error(f"{name}: {what}")
    e.source, e.message = name, what
    return e


def _shown(value):
    """`value` in a message: its type and a one-line repr of at most 40 characters."""
    r = repr(value).replace("\n", " ")
    return f"{type(value).__name__} {r if len(r) <= 40 else r[:37] + '...'}"


def _integer(value, name, lo, hi):
    """`value` as an int in lo..hi (a Python or numpy integer, not a bool)."""
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, _np.integer)):
        raise _arg_error(name, f"expected an integer, got {_shown(value)}")
    if not lo <= int(value) <= hi:
        raise _arg_error(name, f"{int(value)} is outside {lo}..{hi}")
    return int(value)


_INT32 = (-2**31, 2**31 - 1)
_INT64 = (-2**63, 2**63 - 1)
_UINT64 = (0, 2**64 - 1)


def _number(value, name):
    """`value` as a float (a Python or numpy real number, not a bool)."""
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, float, _np.integer,
                                                                       _np.floating)):
        raise _arg_error(name, f"expected a number, got {_shown(value)}")
    return float(value)


def _flag(value, name):
    if not isinstance(value, (bool, _np.bool_)):
        raise _arg_error(name, f"expected True or False, got {_shown(value)}")
    return bool(value)


def _text(value, name, optional=False):
    """`value` as a str (None passes through when `optional`)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _arg_error(name, f"expected a string, got {_shown(value)}")
    return value


def _path(value, name, optional=False):
    """`value` (str or os.PathLike) as a str path (None passes through when `optional`)."""
    if value is None and optional:
        return None
    if not isinstance(value, (str, _os.PathLike)):
        raise _arg_error(name, f"expected a path (str or os.PathLike), got {_shown(value)}")
    path = _os.fspath(value)
    if not isinstance(path, str):
        raise _arg_error(name, f"expected a str path, got {_shown(path)}")
    return path


def _texts(value, name, optional=False):
    """A list of str from a list/tuple of str or one comma-separated str."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        return [s.strip() for s in value.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
        raise _arg_error(name, f"expected a list of strings, got {_shown(value)}")
    return list(value)


def _budget(value):
    """A budget ("25%", "4.5bpw", "300MB", or bytes as an int or a str)."""
    if isinstance(value, (int, _np.integer)) and not isinstance(value, (bool, _np.bool_)):
        return str(int(value))
    if not isinstance(value, str):
        raise _arg_error("budget", "expected a string such as '25%', '4.5bpw' or '300MB', or a "
                                   f"byte count, got {_shown(value)}")
    return value


def _triple(value, name):
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise _arg_error(name, f"expected 3 numbers (R, G, B), got {_shown(value)}")
    return [_number(v, name) for v in value]


# compress()'s options: how each is checked (the flags of `tailor compress`).
_COMPRESS_OPTIONS = {
    "solver": _text, "objective": _text, "damage": _text, "uniform": _text, "task": _text,
    "seed": lambda v, n: _integer(v, n, *_UINT64),
    "calib": _path, "ocr_lines": _path, "ocr_keys": _path,
    "report": _flag, "cache": _flag, "gguf": _flag, "guard": _flag,
    "tokenizer": _path,
    "schemes": _texts,
    "min_params": lambda v, n: _integer(v, n, *_INT64),
    "threads": lambda v, n: _integer(v, n, *_INT32),
    "inputs": lambda v, n: _integer(v, n, *_INT32),
    "sequences": lambda v, n: _integer(v, n, *_INT32),
    "length": lambda v, n: _integer(v, n, *_INT32),
    "image_mean": _triple, "image_std": _triple,
}


def _progress(fn):
    if fn is None:
        return None
    if not callable(fn):
        raise _arg_error("progress", "expected a callable (it receives a tailor.ProgressEvent), "
                                     f"got {_shown(fn)}")
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
    measured; `calibration_damage` the written plan run whole on the
    calibration inputs (the uniform guard's figure; NaN when not measured);
    `measured_damage_interval` and `calibration_damage_interval` their 95%
    bootstrap intervals over the inputs as (low, high), NaN for one input;
    `metric` the task metric {"name", "original", "compressed"}
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
    measured_damage_interval: Tuple[float, float]
    calibration_damage: float
    calibration_damage_interval: Tuple[float, float]
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
    return Model(_tailor.load(_path(path, "path")))


def _model(model, name):
    if not isinstance(model, Model):
        raise _arg_error(name, f"expected a tailor.Model (tailor.load), got {_shown(model)}")


def _feeds(feeds, what):
    if not isinstance(feeds, dict):
        raise _arg_error(what, f"expected a dict {{input name: numpy array}}, got {_shown(feeds)}")
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
    _model(model, "model")
    schemes = _texts(schemes, "schemes", optional=True)
    if damage_inputs is not None and not isinstance(damage_inputs, (list, tuple)):
        raise _arg_error("damage_inputs", "expected a list of dicts {input name: numpy array}, "
                         f"got {_shown(damage_inputs)}")
    inputs = None if damage_inputs is None else [_feeds(f, "each damage input")
                                                  for f in damage_inputs]
    handle = _tailor.profile(model._handle, schemes, _path(calib, "calib", optional=True),
                             _text(layers, "layers", optional=True),
                             _integer(min_params, "min_params", *_INT64),
                             _integer(threads, "threads", *_INT32), _flag(cache, "cache"),
                             inputs, _progress(progress))
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
    if not isinstance(profile, Profile):
        raise _arg_error("profile", f"expected a tailor.Profile, got {_shown(profile)}")
    return Plan(_tailor.plan(profile._handle, _budget(budget), _text(solver, "solver"),
                             _text(objective, "objective", optional=True),
                             _integer(seed, "seed", *_UINT64), _number(time_limit, "time_limit"),
                             _integer(threads, "threads", *_INT32)))


def compress(path, budget: str, output, progress: Optional[Callable[[ProgressEvent], None]] = None,
             **options) -> CompressResult:
    """`tailor compress PATH --budget BUDGET -o OUTPUT`: profile (cached),
    plan, rewrite, write, verify; returns what the command prints. Options as
    the command's flags: solver, objective, damage, uniform, seed, calib, task,
    report, schemes (list), min_params, threads, cache, ocr_lines, ocr_keys,
    inputs, sequences, length, image_mean, image_std, gguf, tokenizer, and
    guard (False: --no-guard). `progress` gets a
    ProgressEvent at the start and end of each stage."""
    for key, value in options.items():
        if key in _COMPRESS_OPTIONS:
            options[key] = _COMPRESS_OPTIONS[key](value, key)
    d = _tailor.compress(_path(path, "path"), _budget(budget), _path(output, "output"), options,
                         _progress(progress))
    p, prof, v = Plan(d["plan"]), Profile(d["profile"]), d["verification"]
    return CompressResult(
        kind=d["kind"], out_dir=d["out_dir"], total_bytes=p.total_bytes,
        budget_bytes=p.budget_bytes, dense_bytes=prof.dense_bytes, fixed_bytes=p.fixed_bytes,
        predicted_damage=v["predicted_damage"], measured_damage=v["measured_damage"],
        measured_damage_interval=tuple(v["measured_damage_interval"]),
        calibration_damage=v["calibration_damage"],
        calibration_damage_interval=tuple(v["calibration_damage_interval"]),
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
    _model(model, "model")
    return _tailor.run(model._handle, _feeds(feeds, "feeds"), _text(passes, "passes"),
                       _integer(threads, "threads", *_INT32))


def default_schemes() -> List[str]:
    """The schemes `tailor compress` profiles unless told otherwise."""
    return _tailor.default_schemes()
