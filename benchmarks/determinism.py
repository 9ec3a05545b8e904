"""How far model outputs drift between CPU kernels and thread counts, in float32 and in float64
(the evidence behind the reproduction contract, README "Same numbers on every machine").

Encodes N sentences of the release with the packaged MiniLM (final embedding + hidden layers 2 and 4,
as the role classifier uses them) in this process, and again in a subprocess that simulates another
CPU (``ATEN_CPU_CAPABILITY=avx2``, one thread, MKL and OpenBLAS pinned to AVX2), both in float32 (the
former path) and through ``vqalib.core.encoders.embed`` (float64, rounded). Prints and appends to
benchmarks/results.md: the largest difference before rounding, and how many values differ after it.

    python benchmarks/determinism.py [N]
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OTHER_CPU = {"ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             "OPENBLAS_NUM_THREADS": "1", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell"}


def texts(n: int) -> list[str]:
    from vqalib.papers.vizwiz_lf import loading

    sentences = loading.load_vizwiz_lf().sentences["sentence"].dropna().astype(str)
    return sorted(set(sentences))[:n]


def encode(items: list[str], dtype: str) -> np.ndarray:
    """Unrounded features in ``dtype``: what the rounding in vqalib.core.encoders has to absorb."""
    import torch

    from vqalib.core.encoders import _float64_encoder, packaged_minilm_path

    model = _float64_encoder(packaged_minilm_path())
    model.to(torch.float32 if dtype == "float32" else torch.float64)  # the cached model: float64 again after
    order = np.argsort([len(t) for t in items], kind="stable")
    result = np.zeros((len(items), 3 * 384))
    with torch.inference_mode():
        for start in range(0, len(items), 64):
            rows = order[start:start + 64]
            output = model(model.preprocess([items[i] for i in rows]))
            mask = output["attention_mask"].unsqueeze(-1).to(output["sentence_embedding"].dtype)
            parts = [torch.nn.functional.normalize(output["sentence_embedding"], dim=1)]
            parts += [(output["all_layer_embeddings"][k] * mask).sum(1) / mask.sum(1) for k in (2, 4)]
            result[rows] = torch.cat(parts, dim=1).double().numpy()
    return result


def worker(n: int, folder: str) -> None:
    """In a subprocess: write this environment's float32, float64 and service embeddings."""
    from vqalib.core import encoders

    items = texts(n)
    np.save(Path(folder) / "float32.npy", encode(items, "float32"))
    np.save(Path(folder) / "float64.npy", encode(items, "float64"))  # leaves the shared model in float64
    np.save(Path(folder) / "service.npy", encoders.embed(items, layers=(2, 4), cache_dir=Path(folder) / "cache"))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as here, tempfile.TemporaryDirectory() as there:
        for folder, env in ((here, {}), (there, OTHER_CPU)):
            subprocess.run([sys.executable, __file__, "--worker", str(n), folder], check=True, cwd=ROOT,
                           env={**os.environ, **env}, stdout=subprocess.DEVNULL)
        a = {k: np.load(Path(here) / f"{k}.npy") for k in ("float32", "float64", "service")}
        b = {k: np.load(Path(there) / f"{k}.npy") for k in ("float32", "float64", "service")}
    values = a["service"].size
    lines = [f"float32 (the former path): largest difference {np.abs(a['float32'] - b['float32']).max():.1e}, "
             f"{int((a['float32'] != b['float32']).sum())} of {values} values differ",
             f"float64: largest difference {np.abs(a['float64'] - b['float64']).max():.1e}",
             f"vqalib.core.encoders.embed (float64, rounded to 6 decimals): "
             f"{int((a['service'] != b['service']).sum())} of {values} values differ"]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"\n## {stamp} ({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}): "
            f"determinism, {n} VizWiz-LF sentences, MiniLM final + layers 2, 4, default kernels and threads vs "
            f"{' '.join(f'{k}={v}' for k, v in OTHER_CPU.items())}\n\n")
    text = head + "".join(f"- {line}\n" for line in lines)
    print(text)
    with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as out:
        out.write(text)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), sys.argv[3])
    else:
        main()
