"""`trialtui.toml`: the frozen benchmark's settings, with defaults a kernel engineer expects."""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_NAME = "trialtui.toml"

DTYPES = ("float32", "float16", "bfloat16")
DTYPE_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "half": "float16"}
# KernelBench's per-dtype tolerances, used as both atol and rtol.
DEFAULT_TOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
BASELINE_KINDS = ("eager", "compile")
PROFILE_WHEN = ("auto", "always", "never")
BUSY_POLICIES = ("queue", "latest", "restart")


LIMIT_KEYS = ("address_space_mb", "file_size_mb", "open_files", "processes", "sandbox")


@dataclass
class Limits:
    """`[limits]`: what a job process may use. 0 turns a limit off.

    The address-space limit applies only to jobs that see no GPU: the CUDA driver reserves virtual
    ranges far larger than any real memory use, so a limit there breaks every GPU job. The CPU-time
    limit is not a setting: it follows the job's timeout (timeout × cores), a backstop for the
    supervisor's wall clock. `processes` counts tasks (threads too) beyond those the user already runs.
    """

    address_space_mb: int = 32768
    file_size_mb: int = 4096
    open_files: int = 4096
    processes: int = 4096
    sandbox: bool = False


EXECUTOR_KEYS = ("url", "python", "workdir", "identity", "known_hosts", "models", "connect_timeout_s")
EXECUTOR_MODELS = ("any", "every")


@dataclass
class ExecutorSettings:
    """`[executor]`: where jobs run (docs/SCALING.md). `--executor` on the command line wins over `url`.

    `python` is the interpreter on an SSH host (with trialtui and its runner installed there);
    `workdir` the folder under which that host keeps job directories (a temporary one by default,
    removed when the connection ends); `identity` and `known_hosts` override OpenSSH's defaults.
    `models = "every"` benchmarks each trial on every GPU model of a Ray cluster.
    """

    url: str = "local"
    python: str = "python3"
    workdir: str = ""
    identity: str = ""
    known_hosts: str = ""
    models: str = "any"
    connect_timeout_s: float = 30.0


GENERALIZE_KEYS = ("budget_s", "fixed")


@dataclass
class GeneralizeSettings:
    """`[generalize]`: the held-out check at finalize (core/heldout.py). `budget_s` bounds its run (0 turns it
    off); `fixed` names sizes a candidate may rely on (the problem defines them), which are never varied."""

    budget_s: float = 30.0
    fixed: list[str] = field(default_factory=list)


class ConfigError(ValueError):
    """A trialtui.toml that cannot be used; the message names the key."""


@dataclass
class Config:
    dtype: str = "float32"
    seeds: int = 5
    atol: float | None = None
    rtol: float | None = None
    allow_tf32: bool = False
    arch: list[str] = field(default_factory=lambda: ["sm_90"])
    test_sizes: list[dict[str, Any]] = field(default_factory=list)
    bench_sizes: list[dict[str, Any]] = field(default_factory=list)
    baselines: list[str] = field(default_factory=lambda: ["eager"])
    max_trials: int = 30
    target_speedup: float = 1.5
    sol_target: float = 0.8
    plateau_trials: int = 2
    exclude: list[str] = field(default_factory=list)
    validate_timeout_s: float = 60.0
    bench_timeout_s: float = 120.0
    profile_when: str = "auto"
    quiet_ms: int = 150
    busy: str = "queue"
    rerun_interrupted: bool = True  # on start, trials a dead session interrupted run again
    limits: Limits = field(default_factory=Limits)
    executor: ExecutorSettings = field(default_factory=ExecutorSettings)
    generalize: GeneralizeSettings = field(default_factory=GeneralizeSettings)

    @property
    def tolerance(self) -> tuple[float, float]:
        """(atol, rtol): explicit values win over the dtype default."""
        default = DEFAULT_TOL[self.dtype]
        return (
            self.atol if self.atol is not None else default,
            self.rtol if self.rtol is not None else default,
        )

    @property
    def primary_baseline(self) -> str:
        return self.baselines[0]

    @property
    def sm(self) -> int:
        """Compute capability of the first target arch as an int, e.g. 90."""
        return int(self.arch[0].removeprefix("sm_").rstrip("a"))


def _sizes(value: Any, key: str) -> list[dict[str, Any]]:
    """A table is one case; an array of tables is several."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return list(value)
    raise ConfigError(f"{key} must be a table or an array of tables, got {value!r}")


def parse_config(data: dict[str, Any]) -> Config:
    """Build a Config from parsed TOML, rejecting unknown keys and bad values with clear messages."""
    cfg = Config()
    data = dict(data)
    profile = data.pop("profile", {}) or {}
    watch = data.pop("watch", {}) or {}
    cfg.limits = parse_limits(data.pop("limits", {}) or {})
    cfg.executor = parse_executor(data.pop("executor", {}) or {})
    cfg.generalize = parse_generalize(data.pop("generalize", {}) or {})
    if "when" in profile:
        cfg.profile_when = profile.pop("when")
    if profile:
        raise unknown_keys(profile, ["when"], "[profile]")
    for key in ("quiet_ms", "busy", "rerun_interrupted"):
        if key in watch:
            setattr(cfg, key, watch.pop(key))
    if watch:
        raise unknown_keys(watch, ["quiet_ms", "busy", "rerun_interrupted"], "[watch]")
    unknown = [key for key in data if key not in Config.__dataclass_fields__]
    if unknown:
        raise unknown_keys(unknown, [*Config.__dataclass_fields__, *SECTIONS], CONFIG_NAME)
    for key, value in data.items():
        if key in ("test_sizes", "bench_sizes"):
            setattr(cfg, key, _sizes(value, key))
        elif key == "arch":
            cfg.arch = [a.strip() for a in value.split(",")] if isinstance(value, str) else list(value)
        elif key == "baselines":
            cfg.baselines = [value] if isinstance(value, str) else list(value)
        else:
            setattr(cfg, key, value)
    cfg.dtype = DTYPE_ALIASES.get(cfg.dtype, cfg.dtype)
    _check(cfg)
    return cfg


SECTIONS = ("profile", "watch", "limits", "executor", "generalize")


def unknown_keys(keys: Any, known: list[str], where: str) -> ConfigError:
    """Every unknown key at once, each with the known one it is closest to (a typo is the usual cause)."""
    named = []
    for key in sorted(keys):
        close = difflib.get_close_matches(key, known, n=1)
        named.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ConfigError(f"unknown key{'s' if len(named) > 1 else ''} in {where}: {', '.join(named)}")


def parse_limits(table: Any) -> Limits:
    if not isinstance(table, dict):
        raise ConfigError(f"[limits] must be a table, got {table!r}")
    unknown = sorted(set(table) - set(LIMIT_KEYS))
    if unknown:
        raise ConfigError(f"unknown key(s) in [limits]: {', '.join(unknown)} (known: {', '.join(LIMIT_KEYS)})")
    limits = Limits(**table)
    for key in LIMIT_KEYS[:-1]:
        value = getattr(limits, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"limits.{key} must be a whole number, 0 for no limit, got {value!r}")
    if not isinstance(limits.sandbox, bool):
        raise ConfigError(f"limits.sandbox must be true or false, got {limits.sandbox!r}")
    return limits


def parse_executor(table: Any) -> ExecutorSettings:
    if not isinstance(table, dict):
        raise ConfigError(f"[executor] must be a table, got {table!r}")
    unknown = sorted(set(table) - set(EXECUTOR_KEYS))
    if unknown:
        raise ConfigError(f"unknown key(s) in [executor]: {', '.join(unknown)} (known: {', '.join(EXECUTOR_KEYS)})")
    settings = ExecutorSettings(**table)
    for key in EXECUTOR_KEYS[:-2]:
        if not isinstance(getattr(settings, key), str):
            raise ConfigError(f"executor.{key} must be a string, got {getattr(settings, key)!r}")
    if settings.models not in EXECUTOR_MODELS:
        raise ConfigError(f"executor.models must be one of {', '.join(EXECUTOR_MODELS)}, got {settings.models!r}")
    timeout = settings.connect_timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"executor.connect_timeout_s must be a positive number, got {timeout!r}")
    return settings


def parse_generalize(table: Any) -> GeneralizeSettings:
    if not isinstance(table, dict):
        raise ConfigError(f"[generalize] must be a table, got {table!r}")
    unknown = sorted(set(table) - set(GENERALIZE_KEYS))
    if unknown:
        raise ConfigError(f"unknown key(s) in [generalize]: {', '.join(unknown)} (known: {', '.join(GENERALIZE_KEYS)})")
    settings = GeneralizeSettings(**table)
    budget = settings.budget_s
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget < 0:
        raise ConfigError(f"generalize.budget_s must be a number of seconds, 0 to turn the check off, got {budget!r}")
    if not isinstance(settings.fixed, list) or not all(isinstance(name, str) for name in settings.fixed):
        raise ConfigError(f"generalize.fixed must be a list of size names, got {settings.fixed!r}")
    return settings


def _check(cfg: Config) -> None:
    if cfg.dtype not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {cfg.dtype!r}")
    if not isinstance(cfg.seeds, int) or cfg.seeds < 1:
        raise ConfigError(f"seeds must be a positive integer, got {cfg.seeds!r}")
    bad = [b for b in cfg.baselines if b not in BASELINE_KINDS]
    if bad or not cfg.baselines:
        raise ConfigError(f"baselines must be drawn from {', '.join(BASELINE_KINDS)}, got {cfg.baselines!r}")
    if cfg.profile_when not in PROFILE_WHEN:
        raise ConfigError(f"profile.when must be one of {', '.join(PROFILE_WHEN)}")
    if cfg.busy not in BUSY_POLICIES:
        raise ConfigError(f"watch.busy must be one of {', '.join(BUSY_POLICIES)}")
    if not isinstance(cfg.rerun_interrupted, bool):
        raise ConfigError(f"watch.rerun_interrupted must be true or false, got {cfg.rerun_interrupted!r}")
    for arch in cfg.arch:
        if not arch.startswith("sm_") or not arch[3:].rstrip("a").isdigit():
            raise ConfigError(f"arch must look like sm_90 or sm_80, got {arch!r}")
    if cfg.max_trials < 1:
        raise ConfigError("max_trials must be at least 1")
    target, sol = cfg.target_speedup, cfg.sol_target
    if not _number(target) or target <= 0:
        raise ConfigError(f"target_speedup must be a positive number (1.5: 1.5× the baseline), got {target!r}")
    if not _number(sol) or not 0 < sol <= 1:
        raise ConfigError(f"sol_target must be a fraction of speed-of-light, above 0 and at most 1, got {sol!r}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_config(problem_dir: Path) -> Config:
    path = Path(problem_dir) / CONFIG_NAME
    if not path.exists():
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path.name}: {exc}") from exc
    return parse_config(data)
