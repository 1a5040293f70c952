"""Pinned real-world corpora for the speed and robustness benchmarks.

The benchmarks must measure code nobody here wrote, and the same code every time, so
each corpus is a pinned wheel from the package registry, downloaded once with
`pip download --no-deps` and unpacked into a cache folder OUTSIDE the repository
(`~/.cache/devlint-bench/`, or `$DEVLINT_BENCH_CACHE`). Wheels are never committed.

Run `python bench/corpora.py` to fetch everything and print file and line counts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

# name -> (distribution on the registry, pinned version). Issues 9 and 10 name these pins.
PINS: dict[str, tuple[str, str]] = {
    "timm": ("timm", "1.0.31"),
    "transformers": ("transformers", "5.24.0"),
    "accelerate": ("accelerate", "1.15.0"),
    "d2l": ("d2l", "1.0.3"),
    "lightning": ("pytorch-lightning", "2.6.6"),
}

# The speed benchmark (issue 9) uses these four; the robustness run (issue 10) all five.
SPEED_CORPORA = ("timm", "transformers", "accelerate", "d2l")
ALL_CORPORA = tuple(PINS)


def cache_dir() -> Path:
    """The cache folder, created on demand; never inside the repository."""
    root = Path(os.environ.get("DEVLINT_BENCH_CACHE", "~/.cache/devlint-bench")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root.resolve()


def loud(message: str) -> None:
    """Print a message that must not be missed (a pin that could not be honoured)."""
    bar = "!" * 78
    print(f"\n{bar}\n!! {message}\n{bar}\n", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Corpus:
    name: str
    dist: str
    version: str  # the version actually used (may differ from the pin, loudly)
    pinned: str
    root: Path  # folder holding the unpacked wheel (hand this to devlint / TorchFix)
    files: tuple[Path, ...]  # every .py file under root, sorted

    @property
    def lines(self) -> int:
        return sum(count_lines(p) for p in self.files)

    @property
    def nbytes(self) -> int:
        return sum(p.stat().st_size for p in self.files)

    def relative_files(self) -> list[str]:
        return [str(p.relative_to(self.root)) for p in self.files]


def count_lines(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _version_key(v: str) -> tuple:
    parts = []
    for piece in re.split(r"[.+-]", v):
        m = re.match(r"(\d+)(.*)", piece)
        if m:
            # a pre-release suffix sorts before the plain release
            parts.append((int(m.group(1)), 0 if m.group(2) else 1, m.group(2)))
        else:
            parts.append((-1, 0, piece))
    return tuple(parts)


def _available_versions(dist: str) -> list[str]:
    """Versions the registry offers, read from pip's own 'from versions:' message."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-d", os.devnull, f"{dist}==0.0.0.0"],
        capture_output=True,
        text=True,
    )
    m = re.search(r"from versions: ([^)]*)\)", proc.stderr)
    if not m:
        return []
    return [v.strip() for v in m.group(1).split(",") if v.strip() and v.strip() != "none"]


def _nearest(pinned: str, versions: list[str]) -> str | None:
    """The highest version not above the pin, else the lowest one above it."""
    finals = [v for v in versions if re.fullmatch(r"[\d.]+", v)] or versions
    below = [v for v in finals if _version_key(v) <= _version_key(pinned)]
    if below:
        return max(below, key=_version_key)
    above = [v for v in finals if _version_key(v) > _version_key(pinned)]
    return min(above, key=_version_key) if above else None


def _find_wheel(wheels: Path, dist: str, version: str) -> Path | None:
    norm = re.sub(r"[-_.]+", "_", dist).lower()
    for whl in sorted(wheels.glob("*.whl")):
        name, _, rest = whl.name.partition("-")
        if re.sub(r"[-_.]+", "_", name).lower() == norm and rest.split("-")[0] == version:
            return whl
    return None


def _download(dist: str, version: str, wheels: Path) -> Path | None:
    existing = _find_wheel(wheels, dist, version)
    if existing:
        return existing
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "-q", "-d", str(wheels), f"{dist}=={version}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return None
    return _find_wheel(wheels, dist, version)


def ensure(name: str) -> Corpus:
    """Download (once) and unpack (once) one corpus; return its files."""
    dist, pinned = PINS[name]
    root_cache = cache_dir()
    wheels = root_cache / "wheels"
    wheels.mkdir(exist_ok=True)
    version = pinned
    whl = _download(dist, pinned, wheels)
    if whl is None:
        # maybe an earlier run already fell back to another version
        earlier = sorted(wheels.glob(re.sub(r"[-_.]+", "_", dist) + "-*.whl"))
        if earlier:
            whl = earlier[-1]
            version = whl.name.split("-")[1]
        else:
            candidate = _nearest(pinned, _available_versions(dist))
            if candidate is None:
                raise RuntimeError(f"{dist}: no version of it could be downloaded")
            whl = _download(dist, candidate, wheels)
            if whl is None:
                raise RuntimeError(f"{dist}=={candidate} could not be downloaded")
            version = candidate
        loud(f"{dist}=={pinned} is not available; using {dist}=={version} instead")
    target = root_cache / "src" / f"{name}-{version}"
    done = target / ".unpacked"
    if not done.exists():
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(whl) as zf:
            zf.extractall(target)
        done.write_text(whl.name + "\n")
    files = tuple(sorted(p for p in target.rglob("*.py") if p.is_file()))
    return Corpus(name=name, dist=dist, version=version, pinned=pinned, root=target, files=files)


def ensure_all(names: tuple[str, ...] | list[str] = ALL_CORPORA) -> list[Corpus]:
    return [ensure(n) for n in names]


def main() -> None:
    print(f"cache: {cache_dir()}")
    print(f"{'corpus':<13} {'version':<10} {'files':>6} {'lines':>10} {'MB':>7}  root")
    for c in ensure_all():
        print(f"{c.name:<13} {c.version:<10} {len(c.files):>6} {c.lines:>10} "
              f"{c.nbytes / 1e6:>7.1f}  {c.root}")


if __name__ == "__main__":
    main()
