# The two commands a new user needs: `make serve` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
# CPU build of torch that lies on this machine's disk; never let pip pull a multi-GB CUDA build.
TORCH  := torch==2.13.0

.PHONY: serve test

$(PY):
	python3 -m venv $(VENV)

$(VENV)/.torch: | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install $(TORCH)
	touch $@

$(VENV)/.installed: pyproject.toml $(shell find grammar/native kernels/native -name "*.[ch]") $(VENV)/.torch
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(shell find grammar/native kernels/native -name "*.[ch]") $(VENV)/.torch
	$(PIP) install -e '.[test,ray]'
	touch $@

serve: $(VENV)/.installed
	$(VENV)/bin/formwork serve

test: $(VENV)/.installed-test
	$(PY) -m pytest -q
