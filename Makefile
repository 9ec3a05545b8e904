# Accessible-VQA research compendium. `make help` lists the targets.
# The README's two commands, `make reproduce` and `make test`, do all their own set-up.

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(abspath $(BIN)):$(PATH)
# Offline runs, tests and CI: copy data from a local folder instead of downloading, e.g.
#   make test VQALIB_DATA_MIRROR=../shared/data
# (made absolute here, so a test or command that runs in another folder still finds it)
ifneq ($(VQALIB_DATA_MIRROR),)
override VQALIB_DATA_MIRROR := $(abspath $(VQALIB_DATA_MIRROR))
endif
export VQALIB_DATA_MIRROR
export MPLBACKEND := Agg

.PHONY: help setup java data data-gqa reproduce test test-full lmms-env inspect-env bench lab html report check-site clean lock

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{name[NR] = $$1; text[NR] = $$2; \
	  if (length($$1) > width) width = length($$1)} \
	  END {for (i = 1; i <= NR; i++) printf "  make %-" width "s %s\n", name[i], text[i]}'

setup: $(STAMP) java  ## create .venv and install the exact pins of requirements.lock

java:  # METEOR and the PTB tokenizer (pycocoevalcap) run in a JVM
	@command -v java >/dev/null 2>&1 || { echo "error: a Java runtime (8 or later) is needed on the PATH: METEOR and the PTB tokenizer of pycocoevalcap run in it (Debian/Ubuntu: apt-get install default-jre-headless)" >&2; exit 1; }

# uv installs the exact pins (parallel downloads and unpacking: several times faster than pip), with the machine's
# pip configuration (indexes, local wheel folders, constraints) passed on by tools/install_pins.py. Nothing is
# byte-compiled at install time (most of pip's set-up time, for the ~23,000 modules of the pins): every command run
# by make writes the bytecode of what it imports, once, even where PYTHONDONTWRITEBYTECODE is set (this project's
# machines), so about a quarter of the modules is ever compiled, and each only once
unexport PYTHONDONTWRITEBYTECODE
UV_PIN  := uv==0.13.10
INSTALL := $(BIN)/python tools/install_pins.py

$(STAMP): requirements.lock pyproject.toml tools/install_pins.py
	$(PYTHON) -m venv $(VENV)
	date +%s > $(VENV)/.setup-started
	$(BIN)/python -m pip install --quiet "$(UV_PIN)"
	$(INSTALL) -r requirements.lock
	$(INSTALL) --no-deps -e .
	touch $@
	@echo "set-up: the pins of requirements.lock installed in .venv in $$(( $$(date +%s) - $$(cat $(VENV)/.setup-started) )) s"

data: setup  ## fetch and verify the upstream data into data/raw (or copy from $VQALIB_DATA_MIRROR)
	$(BIN)/vqalib fetch

data-gqa: setup  ## online only: download GQA's balanced questions (AFGV's question set) into data/raw/gqa
	$(BIN)/vqalib fetch-gqa

reproduce: data  ## run every notebook in place with papermill and rewrite figures/
	$(BIN)/vqalib reproduce

# two pytest-xdist workers stealing work; the notebooks' model work is done first, once, with every core
# (skipped when `make reproduce` did it), so no two tests compute the same model outputs at once
PYTEST_WORKERS ?= -n 2 --dist worksteal

test: data  ## run the test suite: unit tests and one full notebook run checked against figures/ (tiered)
	$(BIN)/vqalib reproduce --model-work
	$(BIN)/python -m pytest $(PYTEST_WORKERS)

# a toolkit's own venv ($(1)) that sees .venv: its pinned packages only (--no-deps, $(2)); addsitedir, not a bare
# path, so .venv's own .pth files (the editable vqalib) run too
define toolkit_venv
	rm -rf $(1)
	$(PYTHON) -m venv $(1)
	echo "import site; site.addsitedir('$(abspath $(VENV))/lib/python3.11/site-packages')" > $(1)/lib/python3.11/site-packages/vqalib-venv.pth
	$(1)/bin/python tools/install_pins.py --no-deps -r $(2)
	touch $(1)/.installed
endef

LMMS_VENV := build/lmms-venv
LMMS_STAMP := $(LMMS_VENV)/.installed

lmms-env: $(LMMS_STAMP)  ## lmms-eval for the toolkit tests, in its own venv (build/lmms-venv) that sees .venv

# lmms-eval's own pins clash with requirements.lock: its venv gets lmms-eval and what its evaluator imports
# (--no-deps, tests/lmms_eval/requirements.txt) and sees every other package of .venv through a .pth file
$(LMMS_STAMP): $(STAMP) tests/lmms_eval/requirements.txt
	$(call toolkit_venv,$(LMMS_VENV),tests/lmms_eval/requirements.txt)

INSPECT_VENV := build/inspect-venv
INSPECT_STAMP := $(INSPECT_VENV)/.installed

inspect-env: $(INSPECT_STAMP)  ## Inspect AI (reads .eval logs for `vqalib score`; toolkit tests) in build/inspect-venv

# as lmms-env: inspect_ai's own pins clash with requirements.lock (python-dateutil), so its venv gets inspect_ai and
# what its log reader and `inspect eval` import (--no-deps, tests/inspect_eval/requirements.txt) and sees .venv
$(INSPECT_STAMP): $(STAMP) tests/inspect_eval/requirements.txt
	$(call toolkit_venv,$(INSPECT_VENV),tests/inspect_eval/requirements.txt)

test-full: data lmms-env inspect-env  ## slow checks (CI runs them too): notebook smoke runs (the runner hand-off among them), runner runs in subprocesses and on Ray, whole released CommVQA files scored, the classifier refit check, reproduce killed at random moments and on a full disk, lmms-eval's own evaluator, an Inspect AI eval scored; the uninterrupted `vqalib reproduce` runs among them must leave git clean
	# two workers, as `make test`; then the checks that need this checkout to themselves, alone
	$(BIN)/python -m pytest -m "full and not checkout" $(PYTEST_WORKERS)
	$(BIN)/python -m pytest -m "full and checkout"
	# the kill trials' first and last runs are full `vqalib reproduce` runs in place (warm after `make test`): git
	# status must be clean after them; this names every cell that moved, if any
	$(BIN)/vqalib clean
	# the committed fitted artefacts (data/models/: final classifiers, cross-validation results) equal a refit, and
	# the fine-tuned classifier's committed weights give its committed probabilities on the declared sample
	$(BIN)/vqalib classify check

bench: data  ## the benchmarks, appended to benchmarks/results.md: loading, metrics, ratings; then, in fresh clones, cold and warm `make reproduce`, the model-work floor, cold `make test` and `.ci/run` with its step lines (over an hour)
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/ratings_bench.py
	$(BIN)/python benchmarks/fresh_clone.py --bench --ci $(if $(VQALIB_DATA_MIRROR),--mirror $(VQALIB_DATA_MIRROR))

# JupyterLab refuses to start as root unless told (containers, CI, cloud notebooks)
LAB_FLAGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)

lab: data  ## open JupyterLab on the notebooks (as root too)
	$(BIN)/jupyter lab $(LAB_FLAGS) notebooks

html: data  ## build the reviewer site into build/html (offline; index by paper and section), with the leaderboard of every scorecard under scores/
	$(BIN)/vqalib leaderboard --scores scores --out build/leaderboard
	$(BIN)/vqalib site build

site-check/node_modules/.package-lock.json: site-check/package-lock.json
	npm ci --prefix site-check --no-audit --no-fund

report: setup  ## print every paper table, the paper's value beside ours, to build/report.pdf (headless Chromium)
	$(BIN)/vqalib site report

check-site: setup site-check/node_modules/.package-lock.json  ## build the site, audit every page in headless Chromium (axe-core, keyboard walk); SITE_TIMEOUT=SEC raises the per-page time limit's base
	$(BIN)/vqalib site check $(if $(SITE_TIMEOUT),--timeout $(SITE_TIMEOUT))

lock: setup  ## rewrite requirements.lock from the current .venv
	{ sed -n '/^#/p' requirements.lock; $(BIN)/python -m pip freeze --exclude-editable \
	  | grep -v '^uv==' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > requirements.lock.new
	mv requirements.lock.new requirements.lock

clean:  ## remove build outputs and caches (keeps .venv, data/raw and figures/)
	rm -rf build .pytest_cache .cache
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +
