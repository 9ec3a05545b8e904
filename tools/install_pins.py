"""Install exact pins into the running venv with uv, honouring the machine's pip configuration.

`make setup` and the toolkit venvs call it: ``python tools/install_pins.py [uv pip install arguments]``. uv
does not read pip's configuration, so the package indexes, local wheel folders, constraints, certificate and
timeout that ``pip config list`` shows (files and ``PIP_*`` variables) are passed to it, and it takes the best
match across all indexes, as pip does (a local ``torch-*+cpu`` wheel beside PyPI's CUDA build is chosen the
same way). Nothing is byte-compiled here (the Makefile lets Python write the bytecode of what it imports).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

LISTS = {"extra-index-url": "--extra-index-url", "find-links": "--find-links", "constraint": "--constraint",
         "trusted-host": "--allow-insecure-host"}  # pip keys holding several space-separated values
SCALARS = {"index-url": "--index-url"}
FLAGS = {"no-index": "--no-index"}
ENVIRONMENT = {"cert": "SSL_CERT_FILE", "client-cert": "SSL_CLIENT_CERT", "default-timeout": "UV_HTTP_TIMEOUT",
               "timeout": "UV_HTTP_TIMEOUT", "proxy": "HTTPS_PROXY"}


def pip_settings(python: str) -> dict[str, list[str]]:
    """pip's configured values per key (``pip config list``), ``PIP_*`` variables first, each value once."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True,
                            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}).stdout
    lines = sorted(listed.splitlines(), key=lambda line: not line.startswith(":env:"))
    settings: dict[str, list[str]] = {}
    for line in lines:
        name, _, value = line.partition("=")
        key, value = name.rsplit(".", 1)[-1], value.strip().strip("'\"")
        for item in shlex.split(value) if key in LISTS else [value]:
            if item not in settings.setdefault(key, []):
                settings[key].append(item)
    return settings


def uv_arguments(settings: dict[str, list[str]]) -> tuple[list[str], dict[str, str]]:
    """uv's options and environment for pip ``settings``; a folder or file that does not exist is left out, as pip
    ignores it (with a warning) where uv would stop."""
    def present(item: str) -> bool:
        local = item[len("file://"):] if item.startswith("file://") else item if "://" not in item else None
        return local is None or Path(local).exists()

    options, environment = [], {}
    for key, values in settings.items():
        if key in LISTS:
            options += [part for item in values if present(item) for part in (LISTS[key], item)]
        elif key in SCALARS and values:
            options += [SCALARS[key], values[0]]
        elif key in FLAGS and values and values[0].lower() in ("1", "true", "yes", "on"):
            options.append(FLAGS[key])
        elif key in ENVIRONMENT and values and ENVIRONMENT[key] not in os.environ:
            environment[ENVIRONMENT[key]] = values[0]
    return options, environment


def main(argv: list[str]) -> int:
    # this venv's uv, else the project venv's (a toolkit venv has none; the Makefile puts .venv/bin first on PATH)
    uv = Path(sys.executable).with_name("uv")
    uv = str(uv) if uv.is_file() else shutil.which("uv")
    if uv is None:
        print("error: uv is missing; `make setup` installs it first (pip install uv==<its pin in the Makefile>)",
              file=sys.stderr)
        return 1
    options, environment = uv_arguments(pip_settings(sys.executable))
    command = [uv, "pip", "install", "--quiet", "--python", sys.executable, "--index-strategy",
               "unsafe-best-match", *options, *argv]
    return subprocess.run(command, env={**os.environ, **environment}).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
